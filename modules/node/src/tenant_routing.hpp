// modules/node/src/tenant_routing.hpp — API requests for a tenant this node does not host go to
// a node that does.
//
// A tenant lives on its replicas only (catalogue.hpp), but a client may send any request to any
// node. The node's HTTP handler is therefore the API router wrapped by route_by_tenant(): a
// request under /api/ for a tenant that the catalogue places on other nodes only is handed whole
// to one of them (RequestForwarder, request_forward.hpp) and the answer is relayed to the client:
// status, headers, body, long polls and disconnects included. Everything else runs here.
//
// The tenant of a request is the tenant header's (X-Queen-Tenant by default), else the default
// tenant, exactly as the API reads it. Every node is a replica of the default tenant.
//
// Which replica: the first of the tenant's replicas (the preferred leader first) that this node
// has a connection to. Any replica can serve a request: a follower hands writes to its leader
// and serves reads once it has caught up with it. When no replica is connected the preferred one
// is tried (the forward then fails with 503 + Retry-After: 1).
//
// How long the origin waits: forward_timeout_ms (cluster.forward_timeout_ms), plus, for a
// request that asks to wait (`wait=true`, a long poll), its `timeout` parameter (the API's
// default when absent), at most the API's longest long poll.
//
// Never forwarded, served here instead:
//   - requests outside /api/ (health, readiness, metrics, the dashboard are this node's);
//   - requests carrying X-Queen-Forwarded-From: a peer forwarded them already. Forwarding once
//     more could loop while two nodes' catalogues differ; the API answers here (a tenant this
//     node does not host: 503 naming its replicas, and the client retries);
//   - a tenant header that is not a valid name (the API answers 400);
//   - a tenant the catalogue does not know (the API answers 404);
//   - a tenant this node is a replica of (served here; 503 + Retry-After while it still opens).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "catalogue.hpp"
#include "queen/core/ids.hpp"
#include "queen/http/request.hpp"
#include "queen/http/router.hpp"

namespace queen::node::detail {

class Cluster;
class RequestForwarder;
class TenantManager;

struct TenantRoutingOptions {
    std::string tenant_header = "X-Queen-Tenant";  ///< the API's tenant_header
    std::string default_tenant = "default";        ///< the API's default_tenant
    std::int64_t forward_timeout_ms = 5'000;       ///< cluster.forward_timeout_ms
    std::int64_t pop_timeout_ms_default = 30'000;  ///< the API's pop_timeout_ms_default
    std::int64_t pop_timeout_ms_max = 600'000;     ///< the API's pop_timeout_ms_max
};

/// Where a request goes when it is forwarded.
struct ForwardTarget {
    NodeId node;
    std::chrono::milliseconds timeout{0};
};

/// The decision of route_by_tenant() for one request, without side effects: nullopt serves it
/// here. `placement_of` looks a tenant up in the catalogue (nullopt: no such tenant),
/// `is_hosted` says whether it is open here, `is_connected` whether a peer link is up.
[[nodiscard]] std::optional<ForwardTarget> forward_target(
    const http::Request& request, NodeId self, const TenantRoutingOptions& options,
    const std::function<bool(const std::string&)>& is_hosted,
    const std::function<std::optional<TenantPlacement>(const std::string&)>& placement_of,
    const std::function<bool(NodeId)>& is_connected);

/// `local` (the API router), wrapped: requests forward_target() picks a node for go there
/// through `forwarder`; the rest run `local`. `tenants`, `cluster` and `forwarder` must outlive
/// the handler's use (the HTTP server stops first).
[[nodiscard]] http::Handler route_by_tenant(http::Handler local, const TenantManager& tenants,
                                            const Cluster& cluster,
                                            std::shared_ptr<RequestForwarder> forwarder,
                                            TenantRoutingOptions options);

}  // namespace queen::node::detail
