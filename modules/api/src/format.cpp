// api/src/format.cpp — command results -> docs/http-api.md, data plane response bodies.
#include "format.hpp"

#include "parse.hpp"

#include <array>

#include "json.hpp"
#include "queen/core/assert.hpp"
#include "queen/core/hex.hpp"

namespace queen::api::detail {

void write_uuid(JsonWriter& out, queues::UuidKind kind, std::uint64_t high, std::uint64_t low) {
    // The layout of queues::format_uuid: high (48 bits, 12 digits) | '8' | kind | "00" | low
    // (64 bits, 16 digits), dashes after digits 8, 12, 16 and 20.
    QUEEN_ASSERT(high < (std::uint64_t{1} << 48), "uuid high part over 48 bits: ", high);
    static constexpr char digits[] = "0123456789abcdef";
    char* at = out.string_slot(36);
    put_hex(at, high >> 16, 4);  // digits 1-8
    at[8] = '-';
    put_hex(at + 9, high, 2);  // digits 9-12
    at[13] = '-';
    at[14] = '8';
    at[15] = digits[static_cast<unsigned>(kind) & 0xf];
    at[16] = '0';
    at[17] = '0';
    at[18] = '-';
    put_hex(at + 19, low >> 48, 2);  // digits 17-20
    at[23] = '-';
    put_hex(at + 24, low, 6);  // digits 21-32
}

void write_message_id(JsonWriter& out, queues::MessageId id, TimestampMs created_at) {
    const queues::MessageUuid uuid = queues::message_uuid(id, created_at);
    char* at = out.string_slot(36);
    put_hex(at, uuid.high >> 32, 4);  // digits 1-8
    at[8] = '-';
    put_hex(at + 9, uuid.high >> 16, 2);  // digits 9-12
    at[13] = '-';
    put_hex(at + 14, uuid.high, 2);  // digits 13-16
    at[18] = '-';
    put_hex(at + 19, uuid.low >> 48, 2);  // digits 17-20
    at[23] = '-';
    put_hex(at + 24, uuid.low, 6);  // digits 21-32
}

std::string missing_key_message(std::string_view what) {
    return std::string(what) +
           " needs payload encryption, but this node runs without an encryption key "
           "(security.payload_encryption = false): set it to true and restart "
           "(docs/security.md)";
}

Result<std::string> payload_json(ByteSpan payload, bool is_encrypted, const PayloadCipher* cipher) {
    if (!is_encrypted) {
        return std::string(as_chars(payload));
    }
    if (cipher == nullptr) {
        return Error{Errc::unsupported, missing_key_message("an encrypted message")};
    }
    QUEEN_TRY(Bytes plain, cipher->decrypt(payload));
    return std::string(as_chars(plain));
}

void write_queue_options(JsonWriter& out, const queues::QueueOptions& options) {
    out.begin_object();
    for_each_queue_option(
        [&](const auto& option) { write_queue_option(out, option.key, options.*option.member); });
    out.end_object();
}

std::string format_configure(const queues::ConfigureResult& result) {
    JsonWriter out;
    out.begin_object()
        .field("configured", true)
        .field("queueId", queues::format_queue_id(result.queue_id))
        .field("partitionId", queues::format_partition_id(result.default_partition))
        .field("queue", result.queue)
        .field("namespace", result.namespace_name)
        .field("task", result.task)
        .key("options");
    write_queue_options(out, result.options);
    out.end_object();
    return out.take();
}

std::string format_push(const queues::PushResult& result,
                        const std::vector<bool>& has_client_transaction_id) {
    // A queued item is ~200 bytes plus its strings: one allocation for the whole answer.
    std::size_t capacity = 16;
    for (const queues::PushItemResult& item : result.items) {
        capacity += 224 + item.transaction_id.size() + item.queue.size() + item.trace_id.size() +
                    item.partition.size() + item.error.size();
    }
    JsonWriter out(capacity);
    out.begin_array();
    for (std::size_t i = 0; i < result.items.size(); ++i) {
        const queues::PushItemResult& item = result.items[i];
        out.begin_object().field("index", i);
        switch (item.status) {
            case queues::PushStatus::queued:
                out.field("transaction_id", item.transaction_id)
                    .field("status", "queued")
                    .key("message_id");
                write_message_id(out, item.message_id, item.created_at);
                out.key("partition_id");
                write_partition_id(out, item.message_id.partition);
                out.field_or_null("trace_id", item.trace_id).field("queueName", item.queue);
                break;
            case queues::PushStatus::duplicate:
                out.field("transaction_id", item.transaction_id)
                    .field("status", "duplicate")
                    .key("message_id");
                write_message_id(out, item.message_id, item.created_at);
                out.field("queueName", item.queue);
                break;
            case queues::PushStatus::buffered:
                out.field("status", "buffered")
                    .field("queue", item.queue)
                    .field("partition", item.partition);
                if (i < has_client_transaction_id.size() && has_client_transaction_id[i]) {
                    out.field("transactionId", item.transaction_id);
                }
                break;
            case queues::PushStatus::failed:
                out.field("transaction_id", item.transaction_id)
                    .field("status", "failed")
                    .field("error", item.error)
                    .field("queueName", item.queue);
                break;
        }
        out.end_object();
    }
    out.end_array();
    return out.take();
}

Result<std::string> format_pop(const queues::PopResult& result, const PayloadCipher* cipher) {
    // The lease id text, "" without a lease (written in place like the other ids).
    const auto write_lease = [&result](JsonWriter& out) {
        if (result.lease == queues::LeaseId{0}) {
            out.string("");
        } else {
            write_uuid(out, queues::UuidKind::lease, 0, result.lease.value());
        }
    };
    const queues::PoppedMessage* first = result.messages.empty() ? nullptr : &result.messages[0];
    // A message takes ~320 bytes besides its strings (three ids, a time, the keys): one
    // allocation for the usual answer, without zero-filling much more than it uses.
    std::size_t capacity = 512 + result.queue.size() + result.group.size();
    for (const queues::PoppedMessage& message : result.messages) {
        capacity += 330 + message.payload.size() + message.transaction_id.size() +
                    message.trace_id.size() + message.producer_sub.size() +
                    message.partition.size() + result.group.size() + result.queue.size();
    }
    JsonWriter out(capacity);
    out.begin_object()
        .field("success", true)
        .field("queue", result.queue)
        .field("partition", first != nullptr ? std::string_view(first->partition) : "")
        .key("partitionId");
    if (first != nullptr) {
        write_partition_id(out, first->id.partition);
    } else {
        out.string("");
    }
    out.key("leaseId");
    write_lease(out);
    out.field("consumerGroup", result.group);
    if (result.lease != queues::LeaseId{0} && result.lease_expires_at.value() > 0) {
        out.key("leaseExpiresAt").iso_time(result.lease_expires_at.value(), false);
    } else {
        out.null_field("leaseExpiresAt");
    }
    out.key("messages").begin_array();
    // partitionId, partition, leaseId, consumerGroup and queue are the same for every message
    // of one partition: written for the first message of a partition (a pop's messages share
    // one), copied from there for the others.
    std::size_t shared_from = 0;
    std::size_t shared_size = 0;
    const queues::PoppedMessage* shared_source = nullptr;
    for (const queues::PoppedMessage& message : result.messages) {
        out.begin_object().key("id");
        write_message_id(out, message.id, message.created_at);
        out.field("transactionId", message.transaction_id)
            .field_or_null("traceId", message.trace_id)
            .key("data");
        if (message.is_encrypted) {
            QUEEN_TRY(const std::string data, payload_json(message.payload, true, cipher));
            out.raw(data);
        } else {
            out.raw(as_chars(message.payload));  // the stored JSON text as it is
        }
        out.field_or_null("producerSub", message.producer_sub)
            .key("createdAt")
            .iso_time(message.created_at.value(), true);
        if (shared_source != nullptr && message.id.partition == shared_source->id.partition &&
            message.partition == shared_source->partition) {
            out.copy_items(shared_from, shared_size);
        } else {
            shared_from = out.text().size() + 1;  // after the comma key() writes first
            out.key("partitionId");
            write_partition_id(out, message.id.partition);
            out.field("partition", message.partition).key("leaseId");
            write_lease(out);
            out.field("consumerGroup", result.group).field("queue", result.queue);
            shared_size = out.text().size() - shared_from;
            shared_source = &message;
        }
        out.field("retryCount", message.retry_count).end_object();
    }
    out.end_array().field("partitionsClaimed", result.partitions_claimed).end_object();
    return out.take();
}

std::string format_ack(const queues::AckResult& result) {
    std::size_t capacity = 16;
    for (const queues::AckItemResult& item : result.items) {
        capacity += 160 + item.transaction_id.size() + item.error.size() + item.queue.size() +
                    item.partition.size();
    }
    JsonWriter out(capacity);
    out.begin_array();
    for (std::size_t i = 0; i < result.items.size(); ++i) {
        const queues::AckItemResult& item = result.items[i];
        out.begin_object()
            .field("index", i)
            .field("transactionId", item.transaction_id)
            .field("success", item.success)
            .field_or_null("error", item.error)
            .field_or_null("queueName", item.queue)
            .field_or_null("partitionName", item.partition)
            .key("leaseReleased");
        switch (item.lease_released) {
            case queues::LeaseReleased::unknown: out.null(); break;
            case queues::LeaseReleased::no: out.boolean(false); break;
            case queues::LeaseReleased::yes: out.boolean(true); break;
        }
        out.field("dlq", item.dlq).end_object();
    }
    out.end_array();
    return out.take();
}

std::string format_transaction(const engine::TransactionResult& result,
                               std::string_view transaction_uuid, std::string_view next_pop) {
    using Kind = engine::TransactionOp::Kind;
    JsonWriter out(128 + 256 * result.results.size());
    out.begin_object().field("transactionId", transaction_uuid).field("success", result.success);
    if (!result.success) {
        out.field("error", result.error.empty() ? std::string("Transaction failed") : result.error);
        if (result.failure != engine::TransactionFailure::none) {
            out.field("failedIndex", result.failed_op)
                .field("reason", transaction_failure_name(result.failure));
        }
    }
    // Queen v1: on failure, the results of the operations before the failing one.
    const std::size_t listed = result.success
                                   ? result.results.size()
                                   : std::min<std::size_t>(result.results.size(), result.failed_op);
    out.key("results").begin_array();
    for (std::size_t i = 0; i < listed; ++i) {
        const engine::TransactionOpResult& op = result.results[i];
        out.begin_object().field("index", i).field("type", operation_type_name(op.kind));
        out.field("success", op.success);
        switch (op.kind) {
            case Kind::push:
                out.field("transactionId", op.transaction_id);
                if (!op.timer_id.empty()) {  // delayed: a timer delivers it
                    out.field("timerId", op.timer_id)
                        .field("visibleAt", format_iso_ms(op.due_at.value()));
                } else if (op.success) {
                    out.key("messageId");
                    write_message_id(out, op.message_id, op.created_at);
                    out.key("partitionId");
                    write_partition_id(out, op.message_id.partition);
                }
                out.field("queueName", op.queue);
                if (!op.error.empty()) {
                    out.field("error", op.error);
                }
                break;
            case Kind::ack:
                out.field("transactionId", op.transaction_id)
                    .field_or_null("error", op.error)
                    .field("dlq", op.dlq);
                break;
            case Kind::kv_set:
            case Kind::kv_check: out.field("version", op.version); break;
            case Kind::kv_delete: out.field("deleted", op.existed); break;
            case Kind::timer_set:
                out.field("timerId", op.timer_id)
                    .field("dueAt", format_iso_ms(op.due_at.value()))
                    .field("replaced", op.existed);
                break;
            case Kind::timer_cancel:
                out.field("timerId", op.timer_id).field("cancelled", op.existed);
                break;
            case Kind::lock_release: break;
        }
        out.end_object();
    }
    out.end_array();
    if (!next_pop.empty()) {
        out.key("next").raw(next_pop);
    }
    out.end_object();
    return out.take();
}

int transaction_status(const engine::TransactionResult& result) noexcept {
    switch (result.failure) {
        case engine::TransactionFailure::conflict: return 409;
        case engine::TransactionFailure::invalid: return 400;
        default: return 200;  // success, and the Queen v1 answer to a failed push or ack
    }
}

std::string_view transaction_failure_name(engine::TransactionFailure failure) noexcept {
    switch (failure) {
        case engine::TransactionFailure::none: return "none";
        case engine::TransactionFailure::operation: return "operation";
        case engine::TransactionFailure::conflict: return "conflict";
        case engine::TransactionFailure::invalid: return "invalid";
    }
    return "unknown";
}

std::string format_extend_lease(const queues::ExtendLeaseResult& result,
                                std::string_view lease_text) {
    JsonWriter out;
    out.begin_array()
        .begin_object()
        .field("index", 0)
        .field("leaseId", lease_text)
        .field("success", result.success)
        .field_or_null("error", result.error);
    if (result.expires_at.value() != 0) {
        out.field("expiresAt", format_iso_ms(result.expires_at.value()));
    } else {
        out.null_field("expiresAt");
    }
    out.end_object().end_array();
    return out.take();
}

}  // namespace queen::api::detail
