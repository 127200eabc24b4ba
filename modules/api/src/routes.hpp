// api/src/routes.hpp — the route groups register_routes() composes; each file owns one group.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "context.hpp"
#include "queen/http/router.hpp"

namespace queen::api::detail {

// The HTTP types every route file speaks in.
using http::Request;
using http::Responder;
using http::Response;

/// The order of the route files' counters and gauges: each is a lone value.
inline constexpr auto relaxed = std::memory_order_relaxed;

using ApiHandler = std::function<void(Context& context, const ContextPtr& shared,
                                      http::Request& request, http::Responder responder)>;

/// Wraps an API handler for the router: counts the request and keeps the context alive.
[[nodiscard]] http::Handler make_handler(const ContextPtr& context, ApiHandler handler);

/// Resolves the tenant or answers 400; returns false when it answered.
[[nodiscard]] bool resolve_tenant(Context& context, const http::Request& request,
                                  const http::Responder& responder, std::string& tenant);

/// configure, push, ack, ack/batch, transaction, lease extend, traces (POST).
void register_data_routes(http::Router& router, const ContextPtr& context);
/// The two pop routes with long polling.
void register_pop_routes(http::Router& router, const ContextPtr& context);
/// Resources (queues, namespaces, tasks, overview, queue delete).
void register_resource_routes(http::Router& router, const ContextPtr& context);
/// Messages, dlq, traces (GET).
void register_message_routes(http::Router& router, const ContextPtr& context);
/// Status and analytics.
void register_status_routes(http::Router& router, const ContextPtr& context);
/// Consumer groups (listing, delete, subscription, seek).
void register_group_routes(http::Router& router, const ContextPtr& context);
/// System (maintenance modes, shared state).
void register_system_routes(http::Router& router, const ContextPtr& context);
/// Cluster administration (leadership transfer).
void register_cluster_routes(http::Router& router, const ContextPtr& context);
/// The tenant catalogue (list, create, delete) and the rebalance of preferred leaders.
void register_tenant_routes(http::Router& router, const ContextPtr& context);
/// The members of the cluster (list, add, remove).
void register_member_routes(http::Router& router, const ContextPtr& context);
/// KV buckets, locks and timers (state_routes.cpp).
void register_state_routes(http::Router& router, const ContextPtr& context);
/// The Queen v1 streams endpoints: queries, cycle, state/get (streams_routes.cpp).
void register_streams_routes(http::Router& router, const ContextPtr& context);
/// The stream queries for operators: list, show, reset, delete (streams_admin_routes.cpp).
void register_streams_admin_routes(http::Router& router, const ContextPtr& context);

/// The consumer group the runners of the stream query `query_name` pop its source queue with.
[[nodiscard]] std::string stream_group(std::string_view query_name);

/// The streams of one tenant as /metrics/prometheus shows them. Read without walking any rows.
struct StreamMetrics {
    std::uint64_t queries = 0;
    /// Rows of the tenant's row table: live rows and rows of cleared epochs that Due entries
    /// have not deleted yet.
    std::uint64_t state_rows = 0;
    std::vector<std::pair<std::string, std::uint64_t>> lags;  ///< (query name, lag) by name
};
/// Reads them now (no when_readable: a scrape shows the applied state). Errors: the backend's
/// and the store's.
[[nodiscard]] Result<StreamMetrics> read_stream_metrics(Context& context, std::string_view tenant);

/// /health, /ready, /metrics, /metrics/prometheus.
void register_health_routes(http::Router& router, const ContextPtr& context);

}  // namespace queen::api::detail
