// api/src/parse_state.hpp — requests of the KV, lock and timer routes (docs/http-api.md, KV,
// locks, timers) -> engine commands. Pure functions, like parse.hpp: every check happens here,
// so a bad request never reaches the log. The writes become the same transaction operations
// POST /api/v1/transaction takes (parse_extended_operation), so there is one write path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "queen/api/api.hpp"
#include "queen/core/result.hpp"
#include "queen/engine/transaction.hpp"
#include "queen/http/request.hpp"

namespace queen::api::detail {

// Every parse_* returns Errc::invalid_argument with the client-facing message as the context,
// and never anything else.

/// The limits the API checks before submitting (the engine's defaults; it checks them again).
[[nodiscard]] const kv::Options& kv_limits() noexcept;
[[nodiscard]] const locks::Options& lock_limits() noexcept;
[[nodiscard]] const timers::Options& timer_limits() noexcept;

/// The default `limit` of the KV, lock and timer listings.
inline constexpr std::int64_t state_listing_limit_default = 100;

/// Route parameter `param` of `request` as a name: 1..`bytes_max` bytes of UTF-8 without NUL.
/// `what` names it in the message ("bucket", "key", "lock name", "timer id").
[[nodiscard]] Result<std::string> parse_path_name(const http::Request& request,
                                                  std::string_view param, std::string_view what,
                                                  std::size_t bytes_max);

/// The version precondition of a KV write: query `expectedVersion` (an integer >= 0), or header
/// `If-Match` (a version, in double quotes or not), or `If-None-Match: *` (= 0: the key must
/// not exist); nullopt when none is given. More than one of them, or another form -> 400.
[[nodiscard]] Result<std::optional<std::uint64_t>> parse_expected_version(
    const http::Request& request);

/// The TTL of a KV write: query `ttlMs` or header `X-Queen-TTL-Ms`, 0..kv ttl_ms_max (0 = none,
/// also when absent); both -> 400.
[[nodiscard]] Result<std::int64_t> parse_kv_ttl(const http::Request& request);

/// PUT /api/v1/kv/:bucket/:key: a transaction of one kv.set. The body is the value: any JSON,
/// stored as its compact text (empty -> 400 "Empty request body"; over json_body_bytes_max ->
/// Errc::out_of_range, 413). Bucket and key come from the route parameters.
[[nodiscard]] Result<engine::Transaction> parse_kv_put(const http::Request& request,
                                                       const ApiOptions& options);
/// DELETE /api/v1/kv/:bucket/:key: a transaction of one kv.delete (the body is ignored).
[[nodiscard]] Result<engine::Transaction> parse_kv_delete(const http::Request& request);

/// GET /api/v1/kv/:bucket.
struct KvListQuery {
    std::string bucket;
    std::string prefix;
    std::string after;
    std::uint32_t limit = 0;  ///< 1..kv list_limit_max
};
[[nodiscard]] Result<KvListQuery> parse_kv_list(const http::Request& request);

/// `after` (a name, at most `after_bytes_max` bytes) and `limit` (1..`limit_max`, default
/// state_listing_limit_default) of the lock and timer listings.
struct ListQuery {
    std::string after;
    std::uint32_t limit = 0;
};
[[nodiscard]] Result<ListQuery> parse_list_query(const http::Request& request,
                                                 std::size_t after_bytes_max,
                                                 std::uint32_t limit_max);

/// POST /api/v1/locks/:name/acquire: {"owner" (required), "ttlMs" (default 30000, within
/// locks::Options), "waitMs" (default 0, at most pop_timeout_ms_max)}. Other fields -> 400.
struct LockAcquire {
    engine::LockCommand command;
    std::int64_t wait_ms = 0;
};
[[nodiscard]] Result<LockAcquire> parse_lock_acquire(std::string_view name,
                                                     const nlohmann::json& body,
                                                     const ApiOptions& options);
/// POST /api/v1/locks/:name/renew: {"token" (required), "ttlMs" (default 30000)}.
[[nodiscard]] Result<engine::LockCommand> parse_lock_renew(std::string_view name,
                                                           const nlohmann::json& body);
/// POST /api/v1/locks/:name/release: {"token" (required)} -> a transaction of one
/// lock.release.
[[nodiscard]] Result<engine::Transaction> parse_lock_release(std::string_view name,
                                                             const nlohmann::json& body);

/// POST /api/v1/timers: the timer.set operation object (parse_extended_operation; a "type" other
/// than "timer.set" or an unknown field -> 400) -> a transaction of that one operation.
[[nodiscard]] Result<engine::Transaction> parse_timer_set(const nlohmann::json& body,
                                                          const ApiOptions& options);
/// DELETE /api/v1/timers/:id -> a transaction of one timer.cancel (ids of the server's delayed
/// pushes -> 400).
[[nodiscard]] Result<engine::Transaction> parse_timer_cancel(const http::Request& request,
                                                             const ApiOptions& options);

}  // namespace queen::api::detail
