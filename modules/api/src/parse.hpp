// api/src/parse.hpp — request JSON and query strings -> queue commands. Pure functions: every
// check of docs/http-api.md, data plane happens here, so a bad request never reaches the log.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "object_view.hpp"
#include "queen/api/api.hpp"
#include "queen/core/result.hpp"
#include "queen/engine/transaction.hpp"
#include "queen/http/request.hpp"
#include "queen/queues/types.hpp"

namespace queen::api::detail {

// Every parse_* returns Errc::invalid_argument with the client-facing message as the context
// (the official server's wording where it has one), and never anything else. The bodies of the hot
// routes (push, ack, ack batch, transaction) are read from their raw text by the core reader; the
// others are nlohmann DOMs (parse_body).

/// The one rule for the names of queues, partitions, consumer groups, namespaces and tasks, on
/// every route (docs/http-api.md, "Names"): 1 to options.name_bytes_max bytes of UTF-8, no
/// control characters (U+0000-U+001F, U+007F), no '/', not "." or "..". Errors:
/// Errc::invalid_argument "<what> must not be empty", "... is longer than N bytes", "... must not
/// contain control characters", "... must not contain '/'", "... must be UTF-8", "... must not be
/// '.' or '..'". Such names stay addressable in a URL path segment, a file name and a log line.
[[nodiscard]] Status check_name(std::string_view value, std::string_view what,
                                const ApiOptions& options);

/// The length limit alone (options.name_bytes_max), for what clients choose freely and never
/// appears as a path segment of its own kind: transactionId, eventType, trace names.
[[nodiscard]] Status check_id_length(std::string_view value, std::string_view what,
                                     const ApiOptions& options);

/// Route parameter `param` of `request` under check_name (`what` names it in the message).
[[nodiscard]] Result<std::string> name_param(const http::Request& request, std::string_view param,
                                             std::string_view what, const ApiOptions& options);

/// Query parameter `key` of `request`: "" when absent or empty (no filter), else under
/// check_name.
[[nodiscard]] Result<std::string> name_query(const http::Request& request, std::string_view key,
                                             const ApiOptions& options);

/// True when `text` is valid UTF-8 (names from a path segment are percent-decoded bytes).
[[nodiscard]] bool is_utf8(std::string_view text) noexcept;

/// A fresh random UUID (version 4) from `random`, lowercase 8-4-4-4-12.
[[nodiscard]] std::string random_uuid(RandomSource& random);
/// A fresh time-ordered UUID (version 7: `now_ms` in the first 48 bits, then random), the form
/// the official JS client gives transactionIds. The server gives one to each pushed item without
/// a transactionId: ids that grow with time keep the dedupe index's inserts at its end.
[[nodiscard]] std::string time_uuid(RandomSource& random, std::int64_t now_ms);

/// POST /api/v1/configure (docs/http-api.md, configure). Options must have their JSON types
/// (integers, booleans); negative durations and counts are refused.
[[nodiscard]] Result<queues::ConfigureQueue> parse_configure(const nlohmann::json& body,
                                                             const ApiOptions& options);

/// A push as parsed: the command plus, per item, whether the client named its transactionId
/// (the `buffered` answer echoes only client-supplied ids).
struct ParsedPush {
    queues::Push push;
    std::vector<bool> has_client_transaction_id;
};

/// POST /api/v1/push (docs/http-api.md, push), read from the raw body in one pass (parse_fast.cpp).
/// Items get a time_uuid(random, now_ms) transactionId when they have none, and their payload as
/// its JSON text without the whitespace between tokens (numbers and escapes stay as the client
/// wrote them; plaintext: encryption happens later). The payload limit applies to that text.
[[nodiscard]] Result<ParsedPush> parse_push(std::string_view body, const ApiOptions& options,
                                            RandomSource& random, std::int64_t now_ms);

/// The push items of `array`, the JSON text of an array of push items (a member of a body read
/// as a DOM, e.g. a streams cycle's push_items written again by dump_json): each item as
/// parse_push reads it, the same checks and words, transactionIds given the same way. `name`
/// names the array in its own errors (not an array, more than push_items_max entries).
[[nodiscard]] Result<ParsedPush> parse_push_array(std::string_view array, std::string_view name,
                                                  const ApiOptions& options, RandomSource& random,
                                                  std::int64_t now_ms);

/// The long-poll part of a pop request.
struct PopWait {
    bool is_enabled = false;
    std::int64_t timeout_ms = 0;
};

/// GET /api/v1/pop/queue/:queue[/partition/:partition] (docs/http-api.md, pop), and GET /api/v1/pop
/// (no `queue` route parameter): the queues of the `namespace` and/or `task` query parameters (400
/// without either). `request.params` holds the route parameters; `wait` receives the long-poll
/// settings (not part of the command).
[[nodiscard]] Result<queues::Pop> parse_pop(const http::Request& request, bool has_partition,
                                            const ApiOptions& options, PopWait& wait);

/// POST /api/v1/ack (docs/http-api.md, ack): a batch of one. Read as parse_push is.
[[nodiscard]] Result<queues::Ack> parse_ack(std::string_view body, const ApiOptions& options);
/// POST /api/v1/ack/batch (docs/http-api.md, ack batch). An empty array gives an empty command
/// (answer `[]`).
[[nodiscard]] Result<queues::Ack> parse_ack_batch(std::string_view body, const ApiOptions& options);

/// The operation kind of a transaction `type` beyond push and ack ("kv.set", "kv.delete",
/// "kv.check", "timer.set", "timer.cancel", "lock.release"), or nullopt.
[[nodiscard]] std::optional<engine::TransactionOp::Kind> extended_operation_kind(
    std::string_view type) noexcept;
/// The `type` text of an operation kind ("push", "ack", "kv.set", ...).
[[nodiscard]] std::string_view operation_type_name(engine::TransactionOp::Kind kind) noexcept;
/// Reads an operation of such a kind from its JSON object (docs/transactions.md): kv.* take
/// bucket, key, expectedVersion (kv.check: required), and kv.set value and ttlMs; timer.set
/// id, queue, partition, payload, transactionId, traceId, at | delayMs, intervalMs, endAt,
/// replace; timer.cancel id; lock.release name and token. Any may carry "lock": {name, token},
/// the operation's guard. Each of these readers takes a DOM (the routes) or the raw members the
/// streaming transaction reader walked (object_view.hpp): one rule, two views.
[[nodiscard]] Status parse_extended_operation(const nlohmann::json& object,
                                              engine::TransactionOp::Kind kind,
                                              const ApiOptions& options,
                                              engine::TransactionOp& out);
[[nodiscard]] Status parse_extended_operation(const RawObject& object,
                                              engine::TransactionOp::Kind kind,
                                              const ApiOptions& options,
                                              engine::TransactionOp& out);
/// A required string member of `object`: 1..max bytes without NUL. Errors: "<name> is
/// required", "must be a string", "must not be empty", "is longer than N bytes", "must not
/// contain NUL characters".
[[nodiscard]] Result<std::string> required_string(const nlohmann::json& object,
                                                  std::string_view name, std::size_t max);
/// A required fencing token member "token": an integer >= 1. Errors: "token is required", the
/// integer_field words.
[[nodiscard]] Result<FencingToken> required_token(const nlohmann::json& object);
/// Reads {"name": ..., "token": ...} (a guard, a lock release).
[[nodiscard]] Result<locks::Guard> parse_lock_grant(const nlohmann::json& object);
[[nodiscard]] Result<locks::Guard> parse_lock_grant(const RawObject& object);
/// Reads the delay of a pushed message: "delayMs" (from the entry's time) or "visibleAt" (an
/// ISO 8601 time or epoch milliseconds) into out.delay_ms / out.at.
[[nodiscard]] Status parse_push_delay(const nlohmann::json& object, engine::TimerOp& out);
[[nodiscard]] Status parse_push_delay(const RawObject& object, engine::TimerOp& out);

/// A transaction's "next" (docs/transactions.md, next): {"queue", "partition", "consumerGroup",
/// "batch"}; the pop the entry makes once its operations committed. Errors name "next".
[[nodiscard]] Result<queues::Pop> parse_next_pop(const nlohmann::json& object,
                                                 const ApiOptions& options);
[[nodiscard]] Result<queues::Pop> parse_next_pop(const RawObject& object,
                                                 const ApiOptions& options);
/// The subscription mode a pop names ("new" or "new-only": new_only; anything else: all).
[[nodiscard]] queues::SubscriptionMode subscription_mode_named(std::string_view mode) noexcept;

/// POST /api/v1/transaction (docs/http-api.md, transaction), read as parse_push is. Push ops with
/// `items` become one operation per item; a push op without `items` is one flat item.
[[nodiscard]] Result<engine::Transaction> parse_transaction(std::string_view body,
                                                            const ApiOptions& options,
                                                            RandomSource& random,
                                                            std::int64_t now_ms);

/// POST /api/v1/lease/:leaseId/extend (docs/http-api.md, lease extend).
[[nodiscard]] Result<queues::ExtendLease> parse_extend_lease(std::string_view lease_text,
                                                             const nlohmann::json& body,
                                                             const ApiOptions& options);

/// POST /api/v1/traces (docs/http-api.md, traces).
[[nodiscard]] Result<queues::AddTrace> parse_trace(const nlohmann::json& body,
                                                   const ApiOptions& options);

/// "completed"/"success" -> completed, "failed", "dlq", "retry"; anything else -> unknown.
[[nodiscard]] queues::AckStatus parse_ack_status(std::string_view text) noexcept;

/// A partitionId given by a client: Errc::invalid_argument "<field> must be a UUID" when it is
/// not UUID-shaped; a UUID that is not one of ours gives PartitionId{0} (matches nothing).
[[nodiscard]] Result<queues::PartitionId> parse_client_partition_id(std::string_view text,
                                                                    std::string_view field);

/// A consumer group name: null, absent and "" mean __QUEUE_MODE__.
[[nodiscard]] Result<std::string> parse_group(const nlohmann::json& object, std::string_view key,
                                              const ApiOptions& options);

/// Query-string helpers: an absent (or empty) parameter gives `fallback`; a malformed or
/// out-of-range one is Errc::invalid_argument "<name> must be an integer between min and max".
[[nodiscard]] Result<std::int64_t> query_integer(const http::Request& request,
                                                 std::string_view name, std::int64_t fallback,
                                                 std::int64_t min, std::int64_t max);

}  // namespace queen::api::detail
