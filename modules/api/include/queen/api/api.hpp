// queen/api/api.hpp — the Queen v1 HTTP API (docs/http-api.md) on an http::Router:
// ApiOptions and register_routes(). JSON and crypto stay inside src/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "queen/api/backend.hpp"
#include "queen/auth/auth.hpp"
#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"
#include "queen/http/router.hpp"

namespace queen::api {

/// A valid tenant name: 1-64 characters of [A-Za-z0-9._-].
[[nodiscard]] bool is_tenant_name(std::string_view name) noexcept;

/// Limits and defaults of the API layer (on top of http::ServerOptions, which bounds the body
/// size and the headers). Every limit violation is a 400 with `{"error": "..."}` and nothing is
/// submitted.
struct ApiOptions {
    /// Request bodies the API parses (POST bodies beyond it: 413). The server's own limit
    /// (http::ServerOptions::body_size_bytes_max) applies first.
    std::uint64_t json_body_bytes_max = 16u << 20;
    /// Nesting depth of request JSON (arrays and objects); deeper: 400. Bounds recursion when
    /// payloads are re-serialized.
    std::uint32_t json_depth_max = 64;
    /// One message payload (its compact JSON text) and one trace `data`; beyond: 400.
    std::uint64_t payload_bytes_max = 4u << 20;
    std::uint32_t push_items_max = 10'000;              ///< items of one push; beyond: 400
    std::uint32_t ack_items_max = 10'000;               ///< acknowledgments of one batch ack
    std::uint32_t transaction_operations_max = 10'000;  ///< push items + acks of one transaction
    std::uint32_t pop_batch_max = 10'000;               ///< `batch` of a pop; beyond: 400
    std::uint32_t pop_partitions_max = 1'000;           ///< `partitions` of a pop; beyond: 400
    std::uint32_t pop_batch_default = 1;           ///< `batch` when absent (DEFAULT_BATCH_SIZE)
    std::int64_t pop_timeout_ms_default = 30'000;  ///< `timeout` when absent (DEFAULT_TIMEOUT)
    /// Long polls wait at most this long whatever `timeout` says (larger values are clamped).
    std::int64_t pop_timeout_ms_max = 600'000;
    /// `subscriptionMode` of pops that send none: "" or "all" (from the beginning) or "new".
    std::string pop_subscription_mode_default;
    std::int64_t lease_extend_seconds_default = 60;  ///< `seconds` of a lease extend
    std::int64_t lease_extend_seconds_max = 86'400;  ///< beyond: 400
    std::uint32_t listing_limit_max = 10'000;        ///< `limit` of paged listings; beyond: 400
    std::size_t name_bytes_max = 256;  ///< queue, partition, group and transaction id names
    /// A queue's encryptionEnabled flag is looked up once and reused this long by pushes
    /// (configure and delete through this API drop it at once; 0 = look up on every push).
    std::int64_t queue_flags_cache_ms = 1000;
    /// AES-256-GCM key for queues with encryptionEnabled, as 64 hex digits; empty = no key
    /// (pushes to such queues then fail with 500). The node supplies it (from its settings,
    /// QUEEN_ENCRYPTION_KEY or its key file; docs/security.md); this module reads no
    /// environment and no files.
    std::string encryption_key_hex;
    std::string tenant_header = "X-Queen-Tenant";  ///< names the tenant of a request
    std::string default_tenant = "default";        ///< the tenant of requests without the header

    /// Checks every limit is > 0 and ordered (defaults within maxima), the subscription mode
    /// default, the key (empty or 64 hex digits) and the tenant names.
    /// Errors: Errc::invalid_argument naming the field and the value (never the key itself).
    [[nodiscard]] Status validate() const;
};

/// Where the API takes unpredictable bytes from: AES-GCM nonces and the transactionIds it
/// generates for items that have none. Thread-safety: fill() may be called from any thread.
class RandomSource {
public:
    virtual ~RandomSource() = default;
    /// Fills `size` bytes at `data`. Must not fail (an implementation that cannot produce
    /// randomness asserts: a repeated GCM nonce would break encryption).
    virtual void fill(std::uint8_t* data, std::size_t size) = 0;
};

/// The process-wide cryptographic source (OpenSSL RAND_bytes). Thread-safe.
[[nodiscard]] RandomSource& system_random();

/// A short public name of an encryption key: the first 8 bytes of SHA-256 over the 32 key bytes,
/// as 16 lower-case hex digits. Nodes that print the same fingerprint hold the same key; the key
/// cannot be recovered from it. Errors: Errc::invalid_argument when `key_hex` is not 64 hex
/// digits (the message never contains the key).
[[nodiscard]] Result<std::string> encryption_key_fingerprint(std::string_view key_hex);

/// Registers every endpoint of the Queen v1 API (docs/http-api.md, minus the
/// PostgreSQL-only ones; docs/http-api.md lists them) on `router`. Handlers parse and validate
/// the request, turn it into an engine::Command, submit it through `backend` and format the
/// result; bad input answers 4xx `{"error": "..."}` before anything is submitted. Backend
/// errors map to: busy, not_leader, poisoned, cancelled -> 503; not_found (unknown tenant) ->
/// 404; anything else -> 500.
///
/// `options` must pass validate() (asserted). `backend`, `logger` and `random` must outlive the
/// router; the options are copied. Handlers never block: writes complete when the backend
/// applied them, reads once Backend::when_readable() says the state holds what was answered
/// (then on the request's I/O thread), long polls park through Backend::wait_for_change.
void register_routes(http::Router& router, Backend& backend, const ApiOptions& options,
                     Logger& logger, RandomSource& random);

/// As above with system_random().
void register_routes(http::Router& router, Backend& backend, const ApiOptions& options,
                     Logger& logger);

/// What a route needs of a caller's token (docs/security.md, "Roles per route").
struct Access {
    auth::Role role = auth::Role::admin;
    /// The route acts on the whole node or cluster (cluster members, tenants, shared state):
    /// the grant must cover every tenant ("*"). Else it must cover the request's tenant.
    bool is_cluster_wide = false;
};

/// The access route (`method`, `path`) needs, `path` as the router matches it (the decoded
/// segments joined by '/', never the raw target); nullopt for the public ones (GET /health, /ready,
/// /metrics, /metrics/prometheus). Reads are read, pops and every other data change write;
/// configure, deletes of queues and groups, seeks, subscription changes, maintenance, stats
/// refresh and streams admin are admin; the cluster and tenant routes admin over every tenant.
/// A path no rule names needs write (read for a GET): a new route is never public by accident.
[[nodiscard]] std::optional<Access> required_access(http::Method method, std::string_view path);

/// `handler` behind bearer tokens: a request whose route is not public must carry an
/// `Authorization` header that `authenticator` (its current Authenticator) accepts (else 401 with
/// its reason and `WWW-Authenticate: Bearer`), and the grant must allow the route's role on the
/// request's tenant (`options.tenant_header`, else `options.default_tenant`; else 403 "Insufficient
/// permissions"). Refused requests reach nothing. An accepted one carries the token's subject in
/// `request.auth_subject` (pushes stamp it on their messages as `producerSub`). `now_s` gives
/// Unix seconds for `exp`/`nbf`.
[[nodiscard]] http::Handler with_authentication(
    http::Handler handler, std::shared_ptr<auth::ReloadableAuthenticator> authenticator,
    const ApiOptions& options, Logger& logger, std::function<std::int64_t()> now_s);

}  // namespace queen::api
