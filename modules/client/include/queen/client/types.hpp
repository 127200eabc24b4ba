// queen/client/types.hpp — requests and results of the Queen v1 HTTP API as plain structs. JSON
// payloads travel as JSON text (std::string); no JSON library appears here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "queen/core/queue_options.hpp"

namespace queen::client {

/// The implicit consumer group of plain queue consumption.
inline constexpr std::string_view queue_mode_group = "__QUEUE_MODE__";
/// The partition used when none is named.
inline constexpr std::string_view default_partition = "Default";

// ---- configure (docs/http-api.md, configure) ----

/// The 15 queue options: the broker's own struct and defaults (the one table of
/// queen/core/queue_options.hpp). configure() sends all of them: a configure call overwrites
/// every option (it is not a merge), and an option left at its default asks for exactly what
/// the broker gives a queue configured without it.
using queen::QueueOptions;

struct ConfigureRequest {
    std::string queue;
    std::optional<std::string> namespace_name;  ///< sent as null when absent
    std::optional<std::string> task;
    QueueOptions options;
};

struct ConfigureResult {
    bool is_configured = false;
    std::string queue_id;
    std::string partition_id;  ///< of the Default partition
    std::string queue;
    std::string namespace_name;
    std::string task;
    QueueOptions options;  ///< as echoed by the server
};

// ---- push (docs/http-api.md, push) ----

struct PushItem {
    std::string queue;
    std::string partition{default_partition};
    std::string payload_json = "null";  ///< any JSON text: object, array, scalar, null
    /// Idempotency key, unique per partition. Empty: the client generates a UUIDv7, so retries
    /// of the same push are deduplicated by the server.
    std::string transaction_id;
    std::string trace_id;  ///< a UUID, or empty for none
};

enum class PushStatus { queued, duplicate, buffered, failed };
[[nodiscard]] std::string_view to_string(PushStatus status) noexcept;

/// One result per pushed item, in item order.
struct PushResult {
    PushStatus status = PushStatus::failed;
    std::string message_id;  ///< queued: the new id; duplicate: the existing message's id
    std::string transaction_id;
    std::string partition_id;  ///< queued only
    std::string trace_id;
    std::string queue_name;
    std::string error;  ///< failed only
};

// ---- pop (docs/http-api.md, pop) ----

struct PopRequest {
    /// Empty: pop from the queues of `namespace_name` and/or `task` (GET /api/v1/pop), as the
    /// official clients do for a consumer that names no queue; the answer names the queue.
    std::string queue;
    std::string partition;       ///< empty: any partition (the wildcard route); needs a queue
    std::string namespace_name;  ///< without a queue: the queues of this namespace ("" = any)
    std::string task;            ///< without a queue: the queues of this task ("" = any)
    std::int64_t batch = 1;
    bool is_wait = false;  ///< long-poll until a message arrives or timeout_ms passes
    std::int64_t timeout_ms = 30'000;
    std::string consumer_group;     ///< empty: the queue-mode group
    std::int64_t partitions = 1;    ///< wildcard only: claim up to N partitions under one lease
    bool is_auto_ack = false;       ///< server-side ack on delivery (lease_id comes back empty)
    std::string subscription_mode;  ///< "all", "new" (or "new-only"); empty: server default
    std::string subscription_from;  ///< "now" or an ISO-8601 time; empty: none
};

struct Message {
    std::string id;
    std::string transaction_id;
    std::string trace_id;   ///< empty when null
    std::string data_json;  ///< the pushed payload as JSON text
    std::string producer_sub;
    std::string created_at;
    std::string partition_id;
    std::string partition;
    std::string lease_id;  ///< empty with server auto-ack
    std::string consumer_group;
    std::string queue;  ///< the message's own `queue` when sent (Queen does), else the answer's
    std::int64_t retry_count = 0;  ///< 0 when the server does not send it (0.15 did not)
};

/// Empty messages means nothing was delivered (HTTP 204).
struct PopResult {
    std::string queue;
    std::string partition;  ///< first claimed partition; each Message names its own
    std::string partition_id;
    std::string lease_id;
    std::string consumer_group;
    std::string lease_expires_at;  ///< when the server sends it (Queen does)
    std::int64_t partitions_claimed = 0;
    std::vector<Message> messages;
    /// Not part of the answer: messages an earlier, larger answer read into this result held,
    /// kept with their strings' storage so reading the next answers into it does not allocate
    /// per message (read_pop_answer moves them between here and `messages`).
    std::vector<Message> spare_messages;
};

// ---- ack (docs/http-api.md, ack, ack batch, ack failures) ----

enum class AckStatus { completed, failed, dlq, retry };
[[nodiscard]] std::string_view to_string(AckStatus status) noexcept;

struct Ack {
    std::string transaction_id;
    std::string partition_id;
    AckStatus status = AckStatus::completed;
    std::string error;           ///< stored as the DLQ error message; empty: null
    std::string lease_id;        ///< checked by the server when not empty
    std::string consumer_group;  ///< empty: the queue-mode group

    /// The ack of a popped message: its ids, lease and group.
    [[nodiscard]] static Ack of(const Message& message, AckStatus status = AckStatus::completed,
                                std::string error = {});
};

struct AckResult {
    std::string transaction_id;
    bool is_success = false;
    std::string error;  ///< e.g. "Message not found", "Invalid or expired lease"
    std::string queue_name;
    std::string partition_name;
    std::optional<bool> is_lease_released;
    bool is_dlq = false;
};

// ---- lease (docs/http-api.md, lease extend) ----

struct LeaseExtendResult {
    std::string lease_id;
    bool is_success = false;
    std::string error;  ///< "Lease not found", "Lease already expired", ...
    std::string expires_at;
};

// ---- transaction (docs/http-api.md, transaction) ----

/// Pushes inside a transaction are not deduplicated: an existing (partition, transactionId)
/// aborts the whole transaction.
struct TransactionPush {
    std::vector<PushItem> items;
};
using TransactionOperation = std::variant<TransactionPush, Ack>;

struct TransactionRequest {
    std::vector<TransactionOperation> operations;  ///< executed in order, all or nothing
    std::vector<std::string> required_leases;  ///< sent like the JS client; the server ignores it
};

struct TransactionOperationResult {
    std::string type;  ///< "push" or "ack"
    bool is_success = false;
    std::string transaction_id;
    std::string message_id;    ///< push
    std::string partition_id;  ///< push
    std::string queue_name;    ///< push
    std::string error;         ///< ack
    bool is_dlq = false;       ///< ack
};

struct TransactionResult {
    std::string transaction_id;
    std::vector<TransactionOperationResult> results;
};

// ---- traces (docs/http-api.md, traces) ----

struct TraceEvent {
    std::string transaction_id;
    std::string partition_id;
    std::string consumer_group;  ///< empty: the queue-mode group
    std::string event_type = "info";
    std::vector<std::string> trace_names;
    std::string data_json = "{}";
};

// ---- resources, messages and DLQ (docs/http-api.md, resources, messages) ----

struct MessageCounts {
    std::int64_t total = 0;
    std::int64_t pending = 0;
    std::int64_t processing = 0;
    std::int64_t completed = 0;
    std::int64_t failed = 0;
    std::int64_t dead_letter = 0;
};

struct QueueSummary {
    std::string id;
    std::string name;
    std::string namespace_name;
    std::string task;
    std::string created_at;
    std::int64_t partitions = 0;
    MessageCounts messages;  ///< total, pending, processing
};

struct PartitionDetail {
    std::string id;
    std::string name;
    std::string created_at;
    MessageCounts stats;
    std::string oldest_message;  ///< as the server sent it (a time, or JSON text); empty for null
    std::string newest_message;
};

struct QueueDetail {
    std::string id;
    std::string name;
    std::string namespace_name;
    std::string task;
    std::string created_at;
    std::vector<PartitionDetail> partitions;
    MessageCounts totals;
};

struct DeleteQueueResult {
    bool is_deleted = false;
    std::string queue;
    bool is_existed = false;
};

struct DlqQuery {
    std::string queue;
    std::string consumer_group;
    std::string partition;  ///< sent like the JS client (the 0.15 server ignored it)
    std::string from;
    std::string to;
    std::int64_t limit = 100;
    std::int64_t offset = 0;
};

struct DlqMessage {
    std::string id;
    std::string transaction_id;
    std::string partition_id;
    std::string queue;
    std::string partition;
    std::string consumer_group;
    std::string error_message;
    std::int64_t retry_count = 0;
    std::string data_json;
    std::string producer_sub;
    std::string created_at;
    std::string failed_at;
};

struct DlqPage {
    std::vector<DlqMessage> messages;  ///< newest failure first
    std::int64_t limit = 0;
    std::int64_t offset = 0;
};

struct MessagesQuery {
    std::string queue;
    std::string partition;
    std::string namespace_name;  ///< sent as `ns`
    std::string task;
    std::string status;  ///< pending | processing | completed | dead_letter
    std::string from;
    std::string to;
    std::int64_t limit = 200;
    std::int64_t offset = 0;
};

struct MessageSummary {
    std::string id;
    std::string transaction_id;
    std::string partition_id;
    std::string queue_path;
    std::string queue;
    std::string partition;
    std::string namespace_name;
    std::string task;
    std::string status;
    std::string trace_id;
    std::string created_at;
    std::string lease_expires_at;
};

// ---- consumer groups (docs/http-api.md, consumer groups) ----

struct ConsumerGroupSummary {
    std::string name;
    std::string queue_name;
    std::vector<std::string> topics;
    std::int64_t members = 0;
    std::int64_t partitions_with_lag = 0;
    std::int64_t max_time_lag_s = 0;
    std::string state;  ///< Stable | Lagging | Dead
    std::string subscription_mode;
    std::string subscription_timestamp;
    std::string subscription_created_at;
};

struct DeleteConsumerGroupResult {
    std::string consumer_group;
    std::string queue_name;  ///< only for the per-queue delete
    std::int64_t deleted_partitions = 0;
    bool is_metadata_deleted = false;
};

struct SubscriptionUpdateResult {
    std::string consumer_group;
    std::string new_timestamp;
    std::int64_t rows_updated = 0;
};

/// Where seek() moves a group's cursors: to the newest message, or to a time.
struct SeekTarget {
    bool is_to_end = false;
    std::string timestamp;  ///< ISO-8601, used when !is_to_end
};

struct SeekResult {
    std::string consumer_group;
    std::string queue_name;
    bool is_seek_to_end = false;
    std::string target_timestamp;
    std::int64_t partitions_updated = 0;
};

struct PartitionSeekResult {
    std::string consumer_group;
    std::string queue_name;
    std::string partition_name;
    bool is_updated = false;
    std::string cursor_moved_to;
};

// ---- system (docs/http-api.md, admin and health) ----

struct MaintenanceStatus {
    bool is_push_maintenance = false;
    bool is_pop_maintenance = false;
    std::int64_t buffered_messages = 0;
};

struct Health {
    int http_status = 0;  ///< 200 healthy, 503 unhealthy
    bool is_healthy = false;
    std::string status;  ///< the body's "status"
    std::string json;    ///< the whole body
};

}  // namespace queen::client
