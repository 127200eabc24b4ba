// api/src/format.cpp — command results -> spec section 4 response bodies.
#include "format.hpp"

#include "json.hpp"

namespace queen::api::detail {

std::string missing_key_message(std::string_view what) {
    return std::string(what) +
           " needs payload encryption, but this server has no encryption key: set "
           "QUEEN_ENCRYPTION_KEY (64 hex digits) or [api] encryption_key_hex and restart";
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

void write_queue_options(JsonWriter& out, const queues::QueueOptions& o) {
    out.begin_object()
        .field("priority", o.priority)
        .field("leaseTime", o.lease_time_s)
        .field("retryLimit", o.retry_limit)
        .field("retryDelay", o.retry_delay_ms)
        .field("maxSize", o.max_size)
        .field("ttl", o.ttl_s)
        .field("deadLetterQueue", o.dead_letter_queue)
        .field("dlqAfterMaxRetries", o.dlq_after_max_retries)
        .field("delayedProcessing", o.delayed_processing_s)
        .field("windowBuffer", o.window_buffer_s)
        .field("retentionSeconds", o.retention_s)
        .field("completedRetentionSeconds", o.completed_retention_s)
        .field("retentionEnabled", o.retention_enabled)
        .field("encryptionEnabled", o.encryption_enabled)
        .field("maxWaitTimeSeconds", o.max_wait_time_s)
        .end_object();
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
    JsonWriter out;
    out.begin_array();
    for (std::size_t i = 0; i < result.items.size(); ++i) {
        const queues::PushItemResult& item = result.items[i];
        out.begin_object().field("index", i);
        switch (item.status) {
            case queues::PushStatus::queued:
                out.field("transaction_id", item.transaction_id)
                    .field("status", "queued")
                    .field("message_id", queues::format_message_id(item.message_id))
                    .field("partition_id", queues::format_partition_id(item.message_id.partition))
                    .field_or_null("trace_id", item.trace_id)
                    .field("queueName", item.queue);
                break;
            case queues::PushStatus::duplicate:
                out.field("transaction_id", item.transaction_id)
                    .field("status", "duplicate")
                    .field("message_id", queues::format_message_id(item.message_id))
                    .field("queueName", item.queue);
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
    const std::string lease =
        result.lease == queues::LeaseId{0} ? std::string() : queues::format_lease_id(result.lease);
    const queues::PoppedMessage* first = result.messages.empty() ? nullptr : &result.messages[0];
    // Messages of a pop mostly share one partition: its id text is made once.
    std::string partition_id =
        first != nullptr ? queues::format_partition_id(first->id.partition) : std::string();
    queues::PartitionId partition_of_id =
        first != nullptr ? first->id.partition : queues::PartitionId{};
    std::size_t capacity = 512;
    for (const queues::PoppedMessage& message : result.messages) {
        capacity += 512 + message.payload.size() + message.transaction_id.size() +
                    message.partition.size() + result.group.size();
    }
    JsonWriter out(capacity);
    out.begin_object()
        .field("success", true)
        .field("queue", result.queue)
        .field("partition", first != nullptr ? first->partition : std::string())
        .field("partitionId", partition_id)
        .field("leaseId", lease)
        .field("consumerGroup", result.group);
    if (result.lease != queues::LeaseId{0} && result.lease_expires_at.value() > 0) {
        out.key("leaseExpiresAt").iso_time(result.lease_expires_at.value(), false);
    } else {
        out.null_field("leaseExpiresAt");
    }
    out.key("messages").begin_array();
    for (const queues::PoppedMessage& message : result.messages) {
        QUEEN_TRY(const std::string data,
                  payload_json(message.payload, message.is_encrypted, cipher));
        out.begin_object()
            .field("id", queues::format_message_id(message.id))
            .field("transactionId", message.transaction_id)
            .field_or_null("traceId", message.trace_id)
            .key("data")
            .raw(data)
            .field_or_null("producerSub", message.producer_sub)
            .key("createdAt")
            .iso_time(message.created_at.value(), true);
        if (message.id.partition != partition_of_id) {
            partition_id = queues::format_partition_id(message.id.partition);
            partition_of_id = message.id.partition;
        }
        out.field("partitionId", partition_id)
            .field("partition", message.partition)
            .field("leaseId", lease)
            .field("consumerGroup", result.group)
            .field("retryCount", message.retry_count)
            .end_object();
    }
    out.end_array().field("partitionsClaimed", result.partitions_claimed).end_object();
    return out.take();
}

std::string format_ack(const queues::AckResult& result) {
    JsonWriter out;
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

std::string format_transaction(const queues::TransactionResult& result,
                               std::string_view transaction_uuid) {
    JsonWriter out(128 + 256 * result.results.size());
    out.begin_object().field("transactionId", transaction_uuid).field("success", result.success);
    if (!result.success) {
        out.field("error", result.error.empty() ? std::string("Transaction failed") : result.error);
    }
    out.key("results").begin_array();
    for (std::size_t i = 0; i < result.results.size(); ++i) {
        const queues::TransactionOpResult& op = result.results[i];
        out.begin_object().field("index", i);
        if (op.kind == queues::TransactionOp::Kind::push) {
            out.field("type", "push")
                .field("success", op.success)
                .field("transactionId", op.transaction_id);
            if (op.success) {
                out.field("messageId", queues::format_message_id(op.message_id))
                    .field("partitionId", queues::format_partition_id(op.message_id.partition));
            }
            out.field("queueName", op.queue);
            if (!op.error.empty()) {
                out.field("error", op.error);
            }
        } else {
            out.field("type", "ack")
                .field("success", op.success)
                .field("transactionId", op.transaction_id)
                .field_or_null("error", op.error)
                .field("dlq", op.dlq);
        }
        out.end_object();
    }
    out.end_array().end_object();
    return out.take();
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
