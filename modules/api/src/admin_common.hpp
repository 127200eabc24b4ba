// api/src/admin_common.hpp — helpers shared by the admin route files (docs/http-api.md, admin).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "context.hpp"
#include "queen/http/router.hpp"

namespace queen::api::detail {

/// The tenant whose raft group holds the cluster catalogue (tenants, members); it cannot be
/// deleted. Catalogue reads wait for its state (when_readable).
inline constexpr std::string_view catalogue_tenant = "default";

/// What a request to the cluster catalogue named, for the messages of its errors.
struct CatalogueSubject {
    std::string exists;   ///< the 409 message: "tenant 'acme' exists already"
    std::string unknown;  ///< the 404 message: "unknown tenant 'acme'"
    /// How the backend's words name it ("'acme'"): words that do not are added to the message
    /// after ": " (words that do would repeat it). Empty: the backend's words are always added.
    std::string mention;
};

/// The subject of a request about the whole catalogue (a listing, a rebalance).
[[nodiscard]] CatalogueSubject whole_catalogue();

/// A backend error of a catalogue read or change (tenants, members, rebalance) as a response:
/// already_exists 409 and not_found 404 with the subject's message, unsupported 501 with the
/// backend's; the rest as error_response() for the catalogue tenant: invalid_argument 400;
/// busy, not_leader, cancelled, timeout 503 with Retry-After: 1; poisoned 503.
[[nodiscard]] http::Response catalogue_error(Context& context, const Error& error,
                                             const CatalogueSubject& subject);

/// A handler body that reads state: returns the response or an error to map.
using ReadFn =
    std::function<Result<http::Response>(Context&, const std::string& tenant, http::Request&)>;

/// Wraps a read for the router: resolves the tenant, runs `fn` once the tenant's state is readable
/// (when_readable, on the request's I/O thread) and answers its response, or the error it returned
/// mapped to a status.
[[nodiscard]] http::Handler read_handler(const ContextPtr& context, ReadFn fn);

/// Errc::invalid_argument with `message` (answers 400).
[[nodiscard]] Error bad(std::string message);

/// `limit` and `offset` of a listing.
struct Page {
    std::uint64_t limit = 0;
    std::uint64_t offset = 0;
};

/// The `limit` (default `limit_default`, at most ApiOptions::listing_limit_max) and `offset` query
/// values.
[[nodiscard]] Result<Page> page_of(const Context& context, const http::Request& request,
                                   std::uint64_t limit_default);
/// Writes "pagination": {"limit", "offset"}.
void write_pagination(JsonWriter& out, const Page& page);

/// ISO-8601 of `at`, or "" for 0 (written as null by field_or_null).
[[nodiscard]] std::string iso_or_empty(TimestampMs at);
/// The backend's wall clock.
[[nodiscard]] TimestampMs wall_now(const Context& context);
/// A path parameter, or "" when the route has none of that name.
[[nodiscard]] std::string param(const http::Request& request, std::string_view name);

/// One queue of a listing: id, name, labels, priority, partitions and message counts.
void write_queue_summary(JsonWriter& out, const queues::QueueSummary& q);
/// Every queue of the tenant with its counts now.
[[nodiscard]] Result<std::vector<queues::QueueSummary>> read_queues(Context& context,
                                                                    const std::string& tenant);
/// One queue with its partitions, or nullopt when there is none of that name.
[[nodiscard]] Result<std::optional<queues::QueueDetail>> read_queue(Context& context,
                                                                    const std::string& tenant,
                                                                    const std::string& name);

/// Message counts by state.
struct Totals {
    std::uint64_t total = 0;
    std::uint64_t pending = 0;
    std::uint64_t processing = 0;
    std::uint64_t completed = 0;
    std::uint64_t failed = 0;
    std::uint64_t dead_letter = 0;
};

/// Writes `t` as an object with the documented names.
void write_totals(JsonWriter& out, const Totals& t);
/// The counts of one partition.
[[nodiscard]] Totals partition_totals(const queues::PartitionSummary& p);

/// The cursors of `group` (every group when empty), with their lags now.
[[nodiscard]] Result<std::vector<queues::GroupCursorInfo>> read_cursors(Context& context,
                                                                        const std::string& tenant,
                                                                        const std::string& group);
/// Seconds since the oldest message a cursor has not consumed; 0 when it is not behind.
[[nodiscard]] std::int64_t time_lag_seconds(const queues::GroupCursorInfo& c, TimestampMs now);

/// A message's state for `group`: dead_letter, completed, processing or pending.
[[nodiscard]] std::string message_status(const queues::MessageDetail& m, const std::string& group);

/// The request body as a JSON object, or answers 400 (with the parse error) and gives nullopt.
[[nodiscard]] std::optional<nlohmann::json> json_or_reply(Context& context,
                                                          const http::Request& request,
                                                          const http::Responder& responder,
                                                          const std::string& tenant);

}  // namespace queen::api::detail
