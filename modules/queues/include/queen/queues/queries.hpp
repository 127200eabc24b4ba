// queen/queues/queries.hpp — read-only queries over the queue tables (docs/http-api.md, admin):
// they use only a Txn (any thread, a ReadTxn snapshot), never the applier's memory index.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "queen/core/result.hpp"
#include "queen/queues/types.hpp"
#include "queen/store/txn.hpp"

namespace queen::queues {

/// The LMDB tables of the queue state machine (layouts in docs/engine.md).
struct Tables {
    store::Table meta;             ///< "q.meta": counters and maintenance flags
    store::Table queues;           ///< "q.queues": u32be queue id -> QueueRecord
    store::Table queue_names;      ///< "q.queue_names": name -> u32 queue id
    store::Table partitions;       ///< "q.partitions": u64be partition id -> PartitionRecord
    store::Table partition_names;  ///< "q.partition_names": u32be queue + name -> u64 id
    store::Table messages;         ///< "q.blocks": u64be position -> block of one partition
    store::Table message_index;    ///< "q.block_index": u64be partition + u64be last -> position
    store::Table transaction_ids;  ///< "q.ids": transaction id + partition -> varint seq
    store::Table groups;           ///< "q.groups": name -> u32 group id
    store::Table group_names;      ///< "q.group_names": u32be group id -> name
    store::Table cursors;          ///< "q.cursors": u64be partition + u32be group -> CursorRecord
    store::Table group_queues;     ///< "q.group_queues": u32be queue + u32be group -> GroupQueue
    store::Table subscriptions;    ///< "q.subscriptions": u32be group + u32be queue + u64be part.
    store::Table dlq;              ///< "q.dlq": u64be dlq id -> DlqRecord
    store::Table buffer;           ///< "q.buffer": u64be buffer id -> PushItem (maintenance)
    store::Table traces;           ///< "q.traces": u64be partition + u64be seq + u64be id -> trace
};

/// The name of Tables::messages in the LMDB file.
inline constexpr std::string_view blocks_table_name = "q.blocks";

/// Checks one q.blocks value: its format and header, and from format 4 on its checksum (older
/// blocks have none). What `queen inspect state --verify` and every read of a block check.
/// Errors: Errc::corruption saying what is wrong.
[[nodiscard]] Status verify_block(ByteSpan value);

struct QueueSummary {
    QueueId id;
    std::string name;
    std::string namespace_name;
    std::string task;
    TimestampMs created_at{0};
    QueueOptions options;
    std::uint64_t partitions = 0;
    std::uint64_t messages = 0;    ///< stored
    std::uint64_t pending = 0;     ///< not yet consumed by __QUEUE_MODE__
    std::uint64_t processing = 0;  ///< pending under an active __QUEUE_MODE__ lease
    std::uint64_t dead_letter = 0;
};

struct PartitionSummary {
    PartitionId id;
    std::string name;
    TimestampMs created_at{0};
    std::uint64_t messages = 0;
    std::uint64_t pending = 0;     ///< for __QUEUE_MODE__
    std::uint64_t processing = 0;  ///< pending under an active __QUEUE_MODE__ lease
    std::uint64_t completed = 0;   ///< stored and consumed by __QUEUE_MODE__
    Sequence last_sequence;
    TimestampMs oldest_at{0};  ///< 0 = no message
    TimestampMs newest_at{0};
    TimestampMs lease_expires_at{0};  ///< __QUEUE_MODE__ lease, 0 = none active
};

struct QueueDetail {
    QueueSummary queue;
    std::vector<PartitionSummary> partitions;  ///< by name
};

struct DlqEntry {
    MessageId id;
    std::string transaction_id;
    std::string queue;
    std::string partition;
    std::string group;
    std::string error;
    std::uint32_t retry_count = 0;
    Bytes payload;
    bool is_encrypted = false;
    std::string trace_id;
    std::string producer_sub;
    TimestampMs created_at{0};
    TimestampMs failed_at{0};
};

struct GroupCursorInfo {
    std::string group;
    std::string queue;
    std::string partition;
    PartitionId partition_id;
    Sequence consumed;  ///< 0 = nothing consumed
    std::uint64_t total_consumed = 0;
    TimestampMs last_consumed_at{0};
    LeaseId lease;
    TimestampMs lease_expires_at{0};
    bool is_lease_active = false;
    std::uint64_t offset_lag = 0;         ///< stored messages after the cursor
    TimestampMs oldest_unconsumed_at{0};  ///< 0 = none
};

struct SubscriptionInfo {
    std::string group;
    std::string queue;
    PartitionId partition;  ///< 0 = every partition of the queue
    SubscriptionMode mode = SubscriptionMode::all;
    TimestampMs timestamp{0};
    TimestampMs created_at{0};
};

struct MessageDetail {
    MessageId id;
    std::string transaction_id;
    std::string queue;
    std::string partition;
    std::string namespace_name;
    std::string task;
    std::string trace_id;
    std::string producer_sub;
    Bytes payload;
    bool is_encrypted = false;
    TimestampMs created_at{0};
    QueueOptions options;
    bool is_dead_letter = false;
    std::string error;  ///< DLQ error, if any
    std::uint32_t retry_count = 0;
    std::vector<GroupCursorInfo> groups;  ///< cursor state of every group on the partition
};

struct TraceEvent {
    std::uint64_t id = 0;
    std::string group;
    std::string event_type;
    std::vector<std::string> names;
    Bytes data;
    TimestampMs created_at{0};
};

/// A trace event with the message it belongs to (traces by name).
struct TraceHit {
    TraceEvent event;
    MessageId message;
    std::string transaction_id;
    std::string queue;
    std::string partition;
    Bytes payload;
    bool is_encrypted = false;
};

struct TraceNameInfo {
    std::string name;
    std::uint64_t trace_count = 0;
    std::uint64_t message_count = 0;
    TimestampMs last_seen{0};
};

struct MaintenanceState {
    bool push_enabled = false;
    bool pop_enabled = false;
    std::uint64_t buffered_messages = 0;
};

/// Whether any queue has options a Sweep acts on (is_swept): without one, a Sweep entry would
/// change nothing, and the leader does not propose it. Reads the queue records only.
/// Errors: as list_queues.
[[nodiscard]] Result<bool> has_swept_queue(const Tables& tables, const store::Txn& txn);

/// Every queue, newest first. Errors: store errors; Errc::corruption (undecodable record).
[[nodiscard]] Result<std::vector<QueueSummary>> list_queues(const Tables& tables,
                                                            const store::Txn& txn, TimestampMs now);
/// One queue with its partitions, std::nullopt when unknown. Errors: as list_queues.
[[nodiscard]] Result<std::optional<QueueDetail>> get_queue(const Tables& tables,
                                                           const store::Txn& txn,
                                                           std::string_view queue, TimestampMs now);
/// The options of one queue, std::nullopt when unknown. Reads the queue record only (O(1) in
/// the number of partitions): for hot paths such as the encryption check of a push.
/// Errors: as list_queues.
[[nodiscard]] Result<std::optional<QueueOptions>> get_queue_options(const Tables& tables,
                                                                    const store::Txn& txn,
                                                                    std::string_view queue);
/// DLQ entries, newest failure first, filtered by queue and group (empty = any), skipping
/// `offset` matches and returning at most `limit`; `total` gets the number of matches (whatever
/// limit and offset are). Errors: as list_queues.
[[nodiscard]] Result<std::vector<DlqEntry>> list_dlq(const Tables& tables, const store::Txn& txn,
                                                     std::string_view queue, std::string_view group,
                                                     std::uint64_t limit, std::uint64_t offset,
                                                     std::uint64_t& total);
/// list_dlq without the total. Errors: as list_queues.
[[nodiscard]] inline Result<std::vector<DlqEntry>> list_dlq(
    const Tables& tables, const store::Txn& txn, std::string_view queue, std::string_view group,
    std::uint64_t limit, std::uint64_t offset) {
    std::uint64_t total = 0;
    return list_dlq(tables, txn, queue, group, limit, offset, total);
}
/// One message by (partition, transaction id), std::nullopt when unknown. Errors: as above.
[[nodiscard]] Result<std::optional<MessageDetail>> get_message(const Tables& tables,
                                                               const store::Txn& txn,
                                                               PartitionId partition,
                                                               std::string_view transaction_id,
                                                               TimestampMs now);
/// The createdAt of message `id`, std::nullopt when it is not stored (never was, or deleted).
/// Errors: as above.
[[nodiscard]] Result<std::optional<TimestampMs>> message_created_at(const Tables& tables,
                                                                    const store::Txn& txn,
                                                                    MessageId id);
/// Stored messages of a queue (optionally one partition), newest first, paged. Payloads are
/// left empty. Errors: as above.
[[nodiscard]] Result<std::vector<MessageDetail>> list_messages(
    const Tables& tables, const store::Txn& txn, std::string_view queue, std::string_view partition,
    std::uint64_t limit, std::uint64_t offset);
/// Cursor rows of every group (empty `group`) or one group, ordered by queue, group, partition.
/// Errors: as above.
[[nodiscard]] Result<std::vector<GroupCursorInfo>> list_group_cursors(const Tables& tables,
                                                                      const store::Txn& txn,
                                                                      std::string_view group,
                                                                      TimestampMs now);
/// Messages of `queue` the consumer group `group` has not consumed yet: summed over the
/// queue's partitions, the stored messages after the group's cursor, and every stored message
/// of a partition the group has no cursor on (a group that never popped it starts at its
/// head; a group that subscribed 'new' counts that history too until its first pop there).
/// 0 for an unknown queue. O(partitions of the queue) point reads, no message read: the lag of
/// one stream query (`queen admin streams`, its metric), not a scan of every cursor.
/// Errors: as above.
[[nodiscard]] Result<std::uint64_t> group_lag(const Tables& tables, const store::Txn& txn,
                                              std::string_view queue, std::string_view group);
/// (group, queue) pairs that have popped, as "group\0queue" sorted. Errors: as above.
[[nodiscard]] Result<std::vector<std::pair<std::string, std::string>>> list_group_queues(
    const Tables& tables, const store::Txn& txn);
/// Stored subscriptions. Errors: as above.
[[nodiscard]] Result<std::vector<SubscriptionInfo>> list_subscriptions(const Tables& tables,
                                                                       const store::Txn& txn);
/// Trace events of one message, oldest first. Errors: as above.
[[nodiscard]] Result<std::vector<TraceEvent>> list_traces(const Tables& tables,
                                                          const store::Txn& txn,
                                                          PartitionId partition,
                                                          std::string_view transaction_id);
/// Trace events carrying `name`, newest first, paged; `total` gets the number of matches.
/// Errors: as above.
[[nodiscard]] Result<std::vector<TraceHit>> list_traces_by_name(
    const Tables& tables, const store::Txn& txn, std::string_view name, std::uint64_t limit,
    std::uint64_t offset, std::uint64_t& total);
/// Every trace name with counts, most recently seen first, paged; `total` gets the number of
/// names. Errors: as above.
[[nodiscard]] Result<std::vector<TraceNameInfo>> list_trace_names(const Tables& tables,
                                                                  const store::Txn& txn,
                                                                  std::uint64_t limit,
                                                                  std::uint64_t offset,
                                                                  std::uint64_t& total);
/// Maintenance flags and the number of buffered pushes. Errors: as above.
[[nodiscard]] Result<MaintenanceState> get_maintenance(const Tables& tables, const store::Txn& txn);

}  // namespace queen::queues
