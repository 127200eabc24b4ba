// queen/queues/types.hpp — the queue data model: ids, the 15 queue options, the commands the queue
// state machine applies and the results it returns. Plain values; no storage, no JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/queue_options.hpp"
#include "queen/core/small_string.hpp"

namespace queen::queues {

/// Dense ids, assigned in order by apply (so every replica assigns the same ones). 0 = none.
using QueueId = StrongInt<struct QueueIdTag, std::uint32_t>;
using PartitionId = StrongInt<struct PartitionIdTag, std::uint64_t>;
using GroupId = StrongInt<struct GroupIdTag, std::uint32_t>;
using LeaseId = StrongInt<struct LeaseIdTag, std::uint64_t>;
/// Position of a message inside its partition: 1, 2, 3, ... in push order (FIFO).
using Sequence = StrongInt<struct SequenceTag, std::uint64_t>;
/// Rows numbered from 1 by their counters in the meta record: a dead-lettered message, a push
/// held back by push maintenance, a trace event.
using DlqEntryId = StrongInt<struct DlqEntryIdTag, std::uint64_t>;
using BufferedPushId = StrongInt<struct BufferedPushIdTag, std::uint64_t>;
using TraceEntryId = StrongInt<struct TraceEntryIdTag, std::uint64_t>;

/// The implicit consumer group of plain queue consumption (docs/http-api.md, the implicit group).
inline constexpr std::string_view queue_mode_group = "__QUEUE_MODE__";
/// The partition a push without a partition name goes to.
inline constexpr std::string_view default_partition_name = "Default";

/// A message is named by its partition and its sequence there; the HTTP layer prints it, with
/// the message's createdAt, as a UUIDv7 (see format_message_id).
struct MessageId {
    PartitionId partition;
    Sequence sequence;
    friend bool operator==(const MessageId&, const MessageId&) = default;
};

/// The 15 options of docs/http-api.md, configure: one table in queen/core/queue_options.hpp
/// (members, JSON keys, defaults, ranges) serves the broker, the client and the CLI.
using queen::QueueOptions;

// ---------------------------------------------------------------------------------------------
// Commands (one log entry holds one command, or a transaction of push/ack operations).

/// POST /api/v1/configure: create or fully overwrite a queue's options; creates `Default`.
struct ConfigureQueue {
    std::string queue;
    std::string namespace_name;
    std::string task;
    QueueOptions options;
};

/// One message to push. `transaction_id` must be non-empty: the edge generates one when the
/// client sent none, so the entry is deterministic.
struct PushItem {
    std::string queue;
    std::string partition{default_partition_name};
    SmallString transaction_id;
    std::string trace_id;      ///< empty = none
    std::string producer_sub;  ///< empty = none
    Bytes payload;             ///< opaque (JSON text, possibly encrypted)
    bool is_encrypted = false;
};

/// POST /api/v1/push. Items are stored in order; duplicates per (partition, transaction_id) are
/// reported, not stored (also within the batch).
struct Push {
    std::vector<PushItem> items;
};

enum class SubscriptionMode : std::uint8_t { all = 0, new_only = 1 };
enum class SubscriptionFrom : std::uint8_t { none = 0, now = 1, timestamp = 2 };

/// GET /api/v1/pop/queue/:queue[/partition/:partition], and GET /api/v1/pop?namespace=&task=:
/// an empty `queue` with a non-empty namespace_name and/or task pops from the queues whose
/// namespace and task match (QueueState::apply says which one).
struct Pop {
    std::string queue;
    bool has_partition = false;  ///< the partition route
    std::string partition;
    std::string group{queue_mode_group};
    std::uint32_t batch = 1;       ///< >= 1
    std::uint32_t partitions = 1;  ///< >= 1; forced to 1 on the partition route
    bool auto_ack = false;
    SubscriptionMode subscription_mode = SubscriptionMode::all;
    SubscriptionFrom subscription_from = SubscriptionFrom::none;
    TimestampMs subscription_from_ms{0};  ///< with SubscriptionFrom::timestamp
    std::string namespace_name;           ///< with an empty queue: "" = any namespace
    std::string task;                     ///< with an empty queue: "" = any task
};

enum class AckStatus : std::uint8_t { completed = 0, failed = 1, dlq = 2, retry = 3, unknown = 4 };

/// One acknowledgement. `lease` 0 = not given (no lease check).
struct AckItem {
    PartitionId partition;
    SmallString transaction_id;
    AckStatus status = AckStatus::completed;
    bool has_error = false;
    std::string error;
    LeaseId lease;
    std::string group{queue_mode_group};
};

/// POST /api/v1/ack and /api/v1/ack/batch (a single ack is a batch of one).
struct Ack {
    std::vector<AckItem> items;
};

/// POST /api/v1/lease/:leaseId/extend.
struct ExtendLease {
    LeaseId lease;
    std::int64_t seconds = 60;
};

/// DELETE /api/v1/resources/queues/:queue.
struct DeleteQueue {
    std::string queue;
};

/// DELETE /api/v1/consumer-groups/:group[/queues/:queue]. Empty `queue` = every queue.
struct DeleteGroup {
    std::string group;
    std::string queue;
    bool delete_metadata = true;
};

/// POST /api/v1/consumer-groups/:group/subscription.
struct UpdateSubscription {
    std::string group;
    TimestampMs timestamp{0};
};

/// POST /api/v1/consumer-groups/:group/queues/:queue/seek.
struct SeekGroup {
    std::string group;
    std::string queue;
    bool to_end = false;
    TimestampMs timestamp{0};  ///< when !to_end
};

/// POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek (to end).
struct SeekPartition {
    std::string group;
    std::string queue;
    std::string partition;
};

/// POST /api/v1/system/maintenance[/pop].
struct SetMaintenance {
    enum class Mode : std::uint8_t { push = 0, pop = 1 } mode = Mode::push;
    bool enabled = false;
};

/// Background retention, completed retention, ttl and maxWaitTimeSeconds eviction, judged at the
/// entry's time. The leader proposes it periodically.
struct Sweep {
    std::uint32_t messages_max = 100'000;  ///< bound on deletions per entry; the rest waits
};
/// Whether a Sweep acts on a queue with these options: retention, completed retention, ttl or
/// maxWaitTimeSeconds. A Sweep leaves the other queues alone.
[[nodiscard]] constexpr bool is_swept(const QueueOptions& options) noexcept {
    return (options.is_retention_enabled &&
            (options.retention_s > 0 || options.completed_retention_s > 0)) ||
           options.ttl_s > 0 || options.max_wait_time_s > 0;
}

/// DELETE /api/v1/messages/:partitionId/:transactionId.
struct DeleteMessage {
    PartitionId partition;
    std::string transaction_id;
};

/// POST /api/v1/traces: an event attached to a message.
struct AddTrace {
    PartitionId partition;
    std::string transaction_id;
    std::string group{queue_mode_group};
    std::string event_type{"info"};
    std::vector<std::string> names;
    Bytes data;  ///< opaque JSON text
};

// ---------------------------------------------------------------------------------------------
// Results.

struct ConfigureResult {
    QueueId queue_id;
    PartitionId default_partition;
    std::string queue;
    std::string namespace_name;
    std::string task;
    QueueOptions options;
};

enum class PushStatus : std::uint8_t { queued = 0, duplicate = 1, buffered = 2, failed = 3 };

struct PushItemResult {
    PushStatus status = PushStatus::queued;
    SmallString transaction_id;
    MessageId message_id;       ///< queued: the new message; duplicate: the existing one
    TimestampMs created_at{0};  ///< createdAt of that message (the time in its id)
    std::string queue;
    std::string partition;
    std::string trace_id;
    std::string error;  ///< failed: why (e.g. maxSize reached)
};

struct PushResult {
    std::vector<PushItemResult> items;
};

struct PoppedMessage {
    MessageId id;
    SmallString transaction_id;
    std::string trace_id;
    std::string producer_sub;
    Bytes payload;
    bool is_encrypted = false;
    TimestampMs created_at{0};
    std::string partition;
    std::uint32_t retry_count = 0;  ///< batch retries so far on this partition and group
};

struct PopResult {
    enum class Outcome : std::uint8_t {
        delivered = 0,
        empty = 1,
        paused = 2
    } outcome = Outcome::empty;
    std::string queue;
    std::string group;
    LeaseId lease;  ///< 0 with autoAck or when empty
    TimestampMs lease_expires_at{0};
    std::uint32_t partitions_claimed = 0;
    std::vector<PoppedMessage> messages;
};

enum class LeaseReleased : std::uint8_t { unknown = 0, no = 1, yes = 2 };

struct AckItemResult {
    SmallString transaction_id;
    bool success = false;
    std::string error;  ///< empty = null
    std::string queue;  ///< empty when the message was not found
    std::string partition;
    LeaseReleased lease_released = LeaseReleased::unknown;
    bool dlq = false;
};

struct AckResult {
    std::vector<AckItemResult> items;
};

struct ExtendLeaseResult {
    LeaseId lease;
    bool success = false;
    std::string error;
    TimestampMs expires_at{0};  ///< 0 = null
};

/// When an ack of an atomic entry releases its partition's lease (QueueState::ack_atomic).
enum class LeaseRelease : std::uint8_t {
    /// As every ack: once the lease's batch is all acked (its acked count reaches the batch
    /// size), or at once for a failed or dead-lettered message.
    by_count = 0,
    /// At once, however many messages of the batch are left: they are delivered again from the
    /// cursor, in order, by the next pop (a streams cycle with release_lease, the default).
    always = 1,
    /// Never for a completed message (the lease runs out and the rest of the batch is
    /// redelivered: a streams cycle with release_lease false); a failed or dead-lettered one
    /// still releases it.
    never = 2,
};

/// One ack of an atomic entry (QueueState::ack_atomic).
struct AtomicAck {
    AckItemResult item;
    std::string failure;  ///< non-empty: why the entry must roll back
};

struct DeleteQueueResult {
    bool existed = false;
};

struct DeleteGroupResult {
    std::uint64_t deleted_partitions = 0;  ///< cursor rows removed
    bool metadata_deleted = false;
};

struct UpdateSubscriptionResult {
    std::uint64_t rows_updated = 0;
};

struct SeekGroupResult {
    std::uint64_t partitions_updated = 0;
};

struct SeekPartitionResult {
    bool found = false;  ///< queue and partition exist
    bool updated = false;
    MessageId cursor;                  ///< where the cursor now is (sequence 0 = before everything)
    TimestampMs cursor_created_at{0};  ///< createdAt of the message `cursor` names
};

struct MaintenanceResult {
    bool push_enabled = false;
    bool pop_enabled = false;
    std::uint64_t buffered_messages = 0;  ///< still waiting (0 right after push maintenance ends)
    std::uint64_t drained_messages = 0;   ///< buffered pushes applied by this command
};

struct SweepResult {
    std::uint64_t retention_deleted = 0;
    std::uint64_t completed_deleted = 0;
    std::uint64_t ttl_deleted = 0;
    std::uint64_t evicted = 0;
    bool is_complete = true;  ///< false when messages_max stopped it early
};

struct DeleteMessageResult {
    bool found = false;
};

struct AddTraceResult {
    bool found = false;
    TraceEntryId trace_id{0};
};

// ---------------------------------------------------------------------------------------------
// Identifiers as text.

/// Kinds of the server's own UUID-shaped ids. 3 named message ids until they became UUIDv7
/// (format_message_id); it is not reused.
enum class UuidKind : std::uint8_t { queue = 1, partition = 2, lease = 4, trace = 5 };

/// Formats a (kind, high, low) triple as a UUID-shaped string, 8-4-4-4-12 lowercase hex. The
/// version nibble is 8 (custom) so these never collide with client UUIDs in logs.
std::string format_uuid(UuidKind kind, std::uint64_t high, std::uint64_t low);
/// Parses a string made by format_uuid with the same kind. Returns false on anything else.
bool parse_uuid(std::string_view text, UuidKind kind, std::uint64_t& high, std::uint64_t& low);

inline std::string format_partition_id(PartitionId id) {
    return format_uuid(UuidKind::partition, 0, id.value());
}
inline std::string format_queue_id(QueueId id) {
    return format_uuid(UuidKind::queue, 0, id.value());
}
inline std::string format_lease_id(LeaseId id) {
    return format_uuid(UuidKind::lease, 0, id.value());
}

/// Bits of the partition id and of the sequence in a message id (together the 74 bits a
/// UUIDv7 leaves after its time, version and variant).
inline constexpr unsigned message_id_partition_bits = 40;
inline constexpr unsigned message_id_sequence_bits = 34;

/// A message id's 128 bits, most significant first: `high` holds bits 127-64, `low` 63-0.
struct MessageUuid {
    std::uint64_t high = 0;
    std::uint64_t low = 0;
    friend auto operator<=>(const MessageUuid&, const MessageUuid&) = default;
};

/// The UUIDv7 (RFC 9562) of message `id` created at `created_at`: the Unix ms time in the top
/// 48 bits (clamped to 0 .. 2^48 - 1), version 7, the low 40 bits of the partition id (12
/// bits, the variant 0b10, 28 bits), the low 34 bits of the sequence. Ids therefore sort by
/// createdAt, then partition, then sequence; they depend only on what the log entry stored, so
/// every replica prints the same id. Two messages share an id only when they were created in
/// the same ms in partitions whose ids agree in their low 40 bits, with sequences agreeing in
/// their low 34 bits (docs/engine.md).
MessageUuid message_uuid(MessageId id, TimestampMs created_at) noexcept;
/// message_uuid as text, 8-4-4-4-12 lowercase hex (text order = id order).
std::string format_message_id(MessageId id, TimestampMs created_at);

/// PartitionId{0} (never assigned) when `text` is not a partition id.
PartitionId parse_partition_id(std::string_view text);
/// LeaseId{UINT64_MAX} (never assigned, never matches) when `text` is not a lease id; LeaseId{0}
/// for the empty string (no lease given).
LeaseId parse_lease_id(std::string_view text);

}  // namespace queen::queues
