// api/src/parse.hpp — request JSON and query strings -> queue commands. Pure functions: every
// check of spec section 4 happens here, so a bad request never reaches the log.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "queen/api/api.hpp"
#include "queen/core/result.hpp"
#include "queen/http/request.hpp"
#include "queen/queues/types.hpp"

namespace queen::api::detail {

// Every parse_* returns Errc::invalid_argument with the client-facing message as the context
// (spec wording where the spec has one), and never anything else.

/// A fresh random UUID (version 4) from `random`, lowercase 8-4-4-4-12.
[[nodiscard]] std::string random_uuid(RandomSource& random);
/// A fresh time-ordered UUID (version 7: `now_ms` in the first 48 bits, then random), the form
/// the official JS client gives transactionIds. The server gives one to each pushed item without
/// a transactionId: ids that grow with time keep the dedupe index's inserts at its end.
[[nodiscard]] std::string time_uuid(RandomSource& random, std::int64_t now_ms);

/// POST /api/v1/configure (spec 4.1). Options must have their JSON types (integers, booleans);
/// negative durations and counts are refused.
[[nodiscard]] Result<queues::ConfigureQueue> parse_configure(const nlohmann::json& body,
                                                             const ApiOptions& options);

/// A push as parsed: the command plus, per item, whether the client named its transactionId
/// (the `buffered` answer echoes only client-supplied ids).
struct ParsedPush {
    queues::Push push;
    std::vector<bool> has_client_transaction_id;
};

/// POST /api/v1/push (spec 4.2). Items get a time_uuid(random, now_ms) transactionId when they
/// have none, and their payload as compact JSON text (plaintext; encryption happens later).
[[nodiscard]] Result<ParsedPush> parse_push(const nlohmann::json& body, const ApiOptions& options,
                                            RandomSource& random, std::int64_t now_ms);

/// The fast path of parse_push, over the raw body: for a plain valid push the same result as
/// parse_body + parse_push, without a DOM (payloads keep their JSON text minus the whitespace
/// between tokens, so numbers and escapes stay as the client wrote them). nullopt for anything
/// else (invalid JSON, a wrong type, a limit crossed, a repeated or escaped key, ...): the
/// caller then takes the slow path, which gives the exact error. Never throws.
[[nodiscard]] std::optional<ParsedPush> parse_push_fast(std::string_view body,
                                                        const ApiOptions& options,
                                                        RandomSource& random, std::int64_t now_ms);

/// The fast path of parse_ack (is_batch = false) and parse_ack_batch (true) over the raw body,
/// with the same contract as parse_push_fast: the slow path's result, or nullopt to take it.
[[nodiscard]] std::optional<queues::Ack> parse_ack_fast(std::string_view body, bool is_batch,
                                                        const ApiOptions& options);

/// The fast path of parse_transaction over the raw body, with the contract of parse_push_fast.
[[nodiscard]] std::optional<queues::Transaction> parse_transaction_fast(std::string_view body,
                                                                        const ApiOptions& options,
                                                                        RandomSource& random,
                                                                        std::int64_t now_ms);

/// The long-poll part of a pop request.
struct PopWait {
    bool is_enabled = false;
    std::int64_t timeout_ms = 0;
};

/// GET /api/v1/pop/queue/:queue[/partition/:partition] (spec 4.3), and GET /api/v1/pop (no
/// `queue` route parameter): the queues of the `namespace` and/or `task` query parameters (400
/// without either). `request.params` holds the route parameters; `wait` receives the long-poll
/// settings (not part of the command).
[[nodiscard]] Result<queues::Pop> parse_pop(const http::Request& request, bool has_partition,
                                            const ApiOptions& options, PopWait& wait);

/// POST /api/v1/ack (spec 4.4): a batch of one.
[[nodiscard]] Result<queues::Ack> parse_ack(const nlohmann::json& body, const ApiOptions& options);
/// POST /api/v1/ack/batch (spec 4.5). An empty array gives an empty command (answer `[]`).
[[nodiscard]] Result<queues::Ack> parse_ack_batch(const nlohmann::json& body,
                                                  const ApiOptions& options);

/// POST /api/v1/transaction (spec 4.6). Push ops with `items` become one operation per item;
/// a push op without `items` is one flat item.
[[nodiscard]] Result<queues::Transaction> parse_transaction(const nlohmann::json& body,
                                                            const ApiOptions& options,
                                                            RandomSource& random,
                                                            std::int64_t now_ms);

/// POST /api/v1/lease/:leaseId/extend (spec 4.7).
[[nodiscard]] Result<queues::ExtendLease> parse_extend_lease(std::string_view lease_text,
                                                             const nlohmann::json& body,
                                                             const ApiOptions& options);

/// POST /api/v1/traces (spec 4.8).
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
/// true only for "true" or "1" (spec section 1); absent -> `fallback`.
[[nodiscard]] bool query_boolean(const http::Request& request, std::string_view name,
                                 bool fallback);

}  // namespace queen::api::detail
