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
    /// Transactions only (push() refuses them): the message becomes visible `delay_ms` after
    /// the transaction commits, or at `visible_at_ms` (epoch ms); a timer delivers it then.
    /// At most one of the two; 0 = at once.
    std::int64_t delay_ms = 0;
    std::int64_t visible_at_ms = 0;
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

/// A lock grant as a transaction names it: the lock and the fencing token of the grant (see
/// LockGrant::guard()).
struct LockGuard {
    std::string name;
    std::uint64_t token = 0;
};

/// Pushes inside a transaction are not deduplicated: an existing (partition, transactionId)
/// aborts the whole transaction.
struct TransactionPush {
    std::vector<PushItem> items;
};

/// kv.set: stores `value_json` under (bucket, key); also the request of Client::kv_put().
struct KvSet {
    std::string bucket;
    std::string key;
    std::string value_json = "null";  ///< any JSON text
    /// Only if the key's current version is this; 0: only if the key does not exist.
    std::optional<std::uint64_t> expected_version;
    std::int64_t ttl_ms = 0;  ///< > 0: the key expires ttl_ms after the write; 0: never
};

/// kv.delete: deletes (bucket, key); also the request of Client::kv_delete(). Deleting an
/// absent key succeeds (deleted false).
struct KvDelete {
    std::string bucket;
    std::string key;
    std::optional<std::uint64_t> expected_version;  ///< only if it matches (0: only if absent)
};

/// kv.check: a precondition that writes nothing: (bucket, key) has version `expected_version`
/// (0: the key does not exist). A mismatch rolls the transaction back (Errc::conflict).
struct KvCheck {
    std::string bucket;
    std::string key;
    std::uint64_t expected_version = 0;
};

/// timer.set: a timer that pushes a message (payload_json to queue/partition) at `at_ms`, or
/// `delay_ms` after it is set, then every `interval_ms` until `end_at_ms`; also the request of
/// Client::timer_set(). An existing id is a conflict unless `is_replace`.
struct TimerSet {
    std::string id;  ///< 1..256 bytes; ids starting with "~delay." are the server's
    std::string queue;
    std::string partition;  ///< empty: the Default partition
    std::string payload_json = "null";
    std::string transaction_id;  ///< of the delivered message; empty: none sent
    std::string trace_id;        ///< of the delivered message; empty: none sent
    std::int64_t at_ms = 0;      ///< epoch ms of the first firing; 0: delay_ms after the set
    std::int64_t delay_ms = 0;
    std::int64_t interval_ms = 0;  ///< 0: fires once; else at least 10
    std::int64_t end_at_ms = 0;    ///< repeating: no firing after this (epoch ms); 0: none
    bool is_replace = false;
};

/// timer.cancel: deletes timer `id` (cancelled false when there was none).
struct TimerCancel {
    std::string id;
};

/// lock.release: ends the grant `token` of lock `name` (a stale token is a conflict).
struct LockRelease {
    std::string name;
    std::uint64_t token = 0;
};

using TransactionOperation = std::variant<TransactionPush, Ack, KvSet, KvDelete, KvCheck, TimerSet,
                                          TimerCancel, LockRelease>;

/// A transaction's next pop (TransactionRequest::next): once every operation committed, the same
/// log entry pops up to `batch` messages of `queue`, as GET /api/v1/pop/queue/:queue[/partition/
/// :partition] would, but never waiting. A worker's whole loop (ack, state, push, reminder, take
/// the next message) is then one request.
struct NextPop {
    std::string queue;
    std::string partition;       ///< empty: any partition
    std::string consumer_group;  ///< empty: the queue-mode group
    std::int64_t batch = 1;      ///< 1..the broker's pop batch limit
};

struct TransactionRequest {
    std::vector<TransactionOperation> operations;  ///< executed in order, all or nothing
    std::vector<std::string> required_leases;  ///< sent like the JS client; the server ignores it
    /// Lock grants that must be current for the transaction to commit (else it is rolled back:
    /// Errc::conflict). Guard k travels as the "lock" of operation k, which the broker checks
    /// just before that operation runs: a single guard is checked before anything is applied.
    /// A transaction that releases a guarded lock releases it after the guard's operation. At
    /// most one guard per operation.
    std::vector<LockGuard> guards;
    /// Sent as "next": the pop the broker runs after the operations, in the same entry; its
    /// messages come back in TransactionResult::next. A refused transaction pops nothing.
    std::optional<NextPop> next;
};

/// One per operation the broker ran, in order; a push of n items counts as n operations.
struct TransactionOperationResult {
    std::int64_t index = 0;  ///< the broker's operation index
    /// "push", "ack", "kv.set", "kv.delete", "kv.check", "timer.set", "timer.cancel",
    /// "lock.release"
    std::string type;
    bool is_success = false;
    std::string transaction_id;  ///< push, ack
    std::string message_id;      ///< push (not delayed)
    std::string partition_id;    ///< push (not delayed)
    std::string queue_name;      ///< push
    std::string error;           ///< push, ack
    bool is_dlq = false;         ///< ack
    std::uint64_t version = 0;   ///< kv.set: the new version; kv.check: the checked one
    bool is_deleted = false;     ///< kv.delete: a live key was deleted
    std::string timer_id;        ///< timer.set, timer.cancel, delayed push (the server's id)
    std::string due_at;          ///< timer.set: the first firing (ISO-8601)
    std::string visible_at;      ///< delayed push: when the message appears (ISO-8601)
    bool is_replaced = false;    ///< timer.set: an existing timer was replaced
    bool is_cancelled = false;   ///< timer.cancel: the timer existed
};

struct TransactionResult {
    std::string transaction_id;
    std::vector<TransactionOperationResult> results;
    /// Set by read_transaction_answer() when it returns an error for a rolled-back
    /// transaction: the failing operation (the broker's index) when the answer said, and why.
    /// `results` then holds the operations before it.
    std::optional<std::int64_t> failed_index;
    std::string error;
    /// The answer's "next": the messages TransactionRequest::next popped, read like a pop answer
    /// (empty messages: nothing was there). std::nullopt when the answer has none: no next pop
    /// was asked for, the transaction was refused, or the broker predates `next` (it ignores the
    /// member and pops nothing). Reading another answer into the same result reuses its storage.
    std::optional<PopResult> next;
};

// ---- KV, locks and timers (docs/http-api.md) ----

/// One key as GET /api/v1/kv/:bucket/:key and the bucket listing answer it.
struct KvEntry {
    std::string bucket;
    std::string key;
    std::string value_json;  ///< the stored JSON text, byte for byte as the server sent it
    std::uint64_t version = 0;
    std::string updated_at;  ///< ISO-8601
    std::string expires_at;  ///< ISO-8601; empty: never
};

/// GET /api/v1/kv/:bucket?prefix=&after=&limit=.
struct KvListQuery {
    std::string bucket;
    std::string prefix;
    std::string after;  ///< the previous page's next_after; empty: from the first key
    std::int64_t limit = 100;
};

/// Keys in byte order.
struct KvPage {
    std::string bucket;
    std::vector<KvEntry> entries;
    std::string next_after;  ///< empty: this is the last page
};

struct KvBucket {
    std::string bucket;
    std::int64_t keys = 0;
};

/// A current lock grant (POST .../acquire, .../renew, GET /api/v1/locks/:name).
struct LockGrant {
    std::string name;
    std::string owner;
    std::uint64_t token = 0;  ///< fencing token: grows with every grant of the lock
    std::string acquired_at;  ///< ISO-8601
    std::string expires_at;   ///< ISO-8601
    /// (name, token), for TransactionRequest::guards and lock_release.
    [[nodiscard]] LockGuard guard() const { return LockGuard{name, token}; }
};

/// Locks in name order.
struct LockPage {
    std::vector<LockGrant> locks;
    std::string next_after;  ///< empty: this is the last page
};

/// The answer to POST /api/v1/timers.
struct TimerSetResult {
    std::string id;
    std::string due_at;  ///< the first firing, ISO-8601
    bool is_replaced = false;
};

/// A pending timer (GET /api/v1/timers/:id and the listing).
struct TimerInfo {
    std::string id;
    std::string due_at;  ///< its next firing, ISO-8601
    std::int64_t interval_ms = 0;
    std::string end_at;  ///< empty: none
    std::int64_t fired = 0;
    std::string created_at;
    std::string queue;
    std::string partition;
    std::string transaction_id;
    std::string trace_id;
    std::string payload_json;  ///< byte for byte as the server sent it
};

/// Timers in id order.
struct TimerPage {
    std::vector<TimerInfo> timers;
    std::string next_after;  ///< empty: this is the last page
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
