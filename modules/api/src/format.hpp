// api/src/format.hpp — command results -> the response JSON of docs/http-api.md, data plane (exact
// field names, snake_case ones included). Pure functions.
#pragma once

#include <string>
#include <vector>

#include "crypto.hpp"
#include "json.hpp"
#include "queen/core/result.hpp"
#include "queen/engine/transaction.hpp"
#include "queen/queues/types.hpp"

namespace queen::api::detail {

/// The JSON text of a stored payload: decrypted when `is_encrypted`. Errors:
/// Errc::unsupported (encrypted but `cipher` is null: no key configured), Errc::corruption
/// (authentication failed: wrong key or altered data), Errc::internal (OpenSSL failed).
[[nodiscard]] Result<std::string> payload_json(ByteSpan payload, bool is_encrypted,
                                               const PayloadCipher* cipher);

/// The error sentence for a message that needs the key this server does not have.
[[nodiscard]] std::string missing_key_message(std::string_view what);

/// Writes queues::format_uuid(kind, high, low) as a string value, formatted in place (no
/// temporary string). `high` fits 48 bits (asserted).
void write_uuid(JsonWriter& out, queues::UuidKind kind, std::uint64_t high, std::uint64_t low);
/// The message id text of queues::format_message_id(id, created_at) as a string value,
/// formatted in place.
void write_message_id(JsonWriter& out, queues::MessageId id, TimestampMs created_at);
/// The partition id text of queues::format_partition_id as a string value.
inline void write_partition_id(JsonWriter& out, queues::PartitionId id) {
    write_uuid(out, queues::UuidKind::partition, 0, id.value());
}

/// 200 body of POST /api/v1/configure (docs/http-api.md, configure).
[[nodiscard]] std::string format_configure(const queues::ConfigureResult& result);
/// The 15 options as the `options` object (shared with the status endpoints), in table order.
void write_queue_options(JsonWriter& out, const queues::QueueOptions& options);
/// `"key":value` of one option's value.
inline void write_queue_option(JsonWriter& out, std::string_view key, std::int64_t value) {
    out.key(key).number(value);
}
inline void write_queue_option(JsonWriter& out, std::string_view key, bool value) {
    out.key(key).boolean(value);
}
/// Writes the options named by `members` (members of QueueOptions), in that order, as fields of
/// the object `out` is in, under their JSON keys: the partial views of the status and message
/// endpoints.
template <class... T>
void write_queue_option_fields(JsonWriter& out, const queues::QueueOptions& options,
                               T queues::QueueOptions::*... members) {
    (write_queue_option(out, queue_option_key(members), options.*members), ...);
}

/// 201 body of POST /api/v1/push (docs/http-api.md, push), one element per item in order, `index`
/// 0-based.
[[nodiscard]] std::string format_push(const queues::PushResult& result,
                                      const std::vector<bool>& has_client_transaction_id);

/// 200 body of a pop that delivered messages (docs/http-api.md, pop). Errors: as payload_json.
[[nodiscard]] Result<std::string> format_pop(const queues::PopResult& result,
                                             const PayloadCipher* cipher);

/// 200 body of POST /api/v1/ack and /api/v1/ack/batch (docs/http-api.md, ack): an array in input
/// order.
[[nodiscard]] std::string format_ack(const queues::AckResult& result);

/// 200 body of POST /api/v1/transaction (docs/http-api.md, transaction); `transaction_uuid` names
/// this call; `next_pop`, when not empty, is the "next" member (format_pop of result.next).
[[nodiscard]] std::string format_transaction(const engine::TransactionResult& result,
                                             std::string_view transaction_uuid,
                                             std::string_view next_pop = {});
/// The status of a transaction's answer: 200 when it committed and when a push or ack failed
/// (the Queen v1 answer, success false), 409 for a KV version or lock guard conflict, 400 for a
/// limit.
[[nodiscard]] int transaction_status(const engine::TransactionResult& result) noexcept;
/// "operation", "conflict", "invalid" (the answer's `reason`).
[[nodiscard]] std::string_view transaction_failure_name(
    engine::TransactionFailure failure) noexcept;

/// 200 body of POST /api/v1/lease/:leaseId/extend (docs/http-api.md, lease extend): a one-element
/// array.
[[nodiscard]] std::string format_extend_lease(const queues::ExtendLeaseResult& result,
                                              std::string_view lease_text);

}  // namespace queen::api::detail
