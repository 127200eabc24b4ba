// queues/src/apply.hpp — the helpers the apply files share, grouped by the file defining them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"
#include "queen/queues/queues.hpp"
#include "queen/store/txn.hpp"
#include "state.hpp"

namespace queen::queues::detail {

// The apply functions (namespace queen::queues) call these unqualified: argument-dependent
// lookup finds them through their detail-type arguments (State, GroupCandidates).

/// The key of the meta record in q.meta.
inline constexpr std::string_view meta_state_key = "state";
/// The q.meta key of State::blocks_leaf_fill (a varint), written with the "state" record.
inline constexpr std::string_view meta_leaf_fill_key = "blocks.leaf_fill";

// ------------------------------------------------------------------------------------------
// state.cpp: journaled storage writes. Inside an atomic entry (s.journal.is_active) each
// records the old value for rollback_atomic; outside one it goes straight to the txn.

Result<void> put(State& s, store::WriteTxn& txn, store::Table table, ByteSpan key, ByteSpan value);

/// put() for a key whose current value the caller just read (`old`; std::nullopt = absent): an
/// atomic entry journals it without reading it again.
Result<void> put_over(State& s, store::WriteTxn& txn, store::Table table, ByteSpan key,
                      ByteSpan value, std::optional<ByteSpan> old);

/// Appends `key`, which must sort after every key of `table` (PutFlags::append: LMDB fills the
/// last page instead of splitting it in the middle); journaled as absent before.
Result<void> append_new(State& s, store::WriteTxn& txn, store::Table table, ByteSpan key,
                        ByteSpan value);

/// Stores `value` unless `key` is present (one B-tree descent); returns the stored value when
/// it is (nothing written; the span is valid until the next write of the txn).
Result<std::optional<ByteSpan>> put_if_absent(State& s, store::WriteTxn& txn, store::Table table,
                                              ByteSpan key, ByteSpan value);
/// put_if_absent into q.ids, whose keys mostly arrive in ascending order (UUIDv7 transaction
/// ids): a key after the table's last (State::ids_last) is appended (PutFlags::append: the
/// last leaf fills up before a new one starts; LMDB splits a leaf in the middle for any other
/// insert, so ascending inserts would leave every leaf about half full), any other goes
/// through put_if_absent.
Result<std::optional<ByteSpan>> put_transaction_id(State& s, store::WriteTxn& txn, ByteSpan key,
                                                   ByteSpan value);

/// Names `queue` in the wakeups of the apply (its parked pops retry), unless the last one
/// added names it already (a push or ack batch on one queue adds one; take_wakeups() sorts and
/// drops the other repeats).
inline void add_wakeup(State& s, std::string_view queue) {
    if (s.wakeups.empty() || s.wakeups.back().queue != queue) {
        s.wakeups.push_back(Wakeup{std::string(queue)});
    }
}

/// Writes the meta record (id counters, maintenance flags); it is no longer dirty after.
Result<void> save_meta(State& s, store::WriteTxn& txn);

/// Journals the old value of a partition's memory entry before its first change in an entry.
PartitionMem& touch_partition(State& s, PartitionId pid);

/// Journals the counts of queue `qid` before their first change in an entry.
void touch_queue_count(State& s, QueueId qid);

/// Writes the mutable fields of every partition changed by this apply into its record.
/// Every apply ends with this flush, so a partition's record always equals its immutable info
/// plus its memory entry as of the last apply: inside an atomic entry (which flushes once, at
/// its end) the old value of a partition that existed before the entry is that info plus the
/// memory entry the journal saved, and is journaled without reading LMDB.
Result<void> flush_partitions(State& s, store::WriteTxn& txn);

/// Deletes every key of `table` that starts with `prefix`; returns how many. Never inside an
/// atomic entry (not journaled).
Result<std::uint64_t> delete_prefix(State& s, store::WriteTxn& txn, store::Table table,
                                    ByteSpan prefix);

/// Deletes the "q.ids" entries of every message stored in partition `pid` (the ids of a partition
/// being deleted whole). Never inside an atomic entry.
Result<void> delete_partition_ids(State& s, store::WriteTxn& txn, PartitionId pid);

// ------------------------------------------------------------------------------------------
// state.cpp: lookups of queues, partitions, groups and cursors; the lease index.

std::optional<QueueId> find_queue(const State& s, std::string_view name);

Result<QueueId> create_queue(State& s, store::WriteTxn& txn, std::string_view name,
                             std::string namespace_name, std::string task,
                             const QueueOptions& options, TimestampMs now);

/// The id of partition `name` of queue `qid` (from the cache, else from LMDB's name index and
/// cached); std::nullopt when there is none.
Result<std::optional<PartitionId>> find_partition(State& s, const store::Txn& txn, QueueId qid,
                                                  std::string_view name);

Result<PartitionId> get_or_create_partition(State& s, store::WriteTxn& txn, QueueId qid,
                                            std::string_view name, TimestampMs now);

Result<GroupId> get_or_create_group(State& s, store::WriteTxn& txn, std::string_view name);

Result<std::optional<CursorRecord>> read_cursor(const State& s, const store::Txn& txn,
                                                PartitionId pid, GroupId gid);

/// The cursor of (pid, gid) and its write: through the cursor cache (State::cursor_cache)
/// outside atomic entries, straight to LMDB (journaled) inside them.
Result<void> write_cursor(State& s, store::WriteTxn& txn, PartitionId pid, GroupId gid,
                          const CursorRecord& record);

/// Writes the cursor cache's dirty records to LMDB and empties it; with `is_kept` (the txn's
/// commit) and while cursors are cached, keeps its records, clean, for the next txn.
Result<void> flush_cursors(State& s, store::WriteTxn& txn, bool is_kept = false);

/// The name of partition `pid` (empty when there is no such partition).
Result<std::string> partition_name(State& s, const store::Txn& txn, PartitionId pid);

/// The first stored sequence >= `from` whose message was created at or after `ts_ms`
/// (last + 1 when none).
Result<Sequence> first_sequence_from(const State& s, const store::Txn& txn, PartitionId pid,
                                     Sequence from, std::int64_t ts_ms);

/// Partition ids of one queue in name order.
Result<std::vector<PartitionId>> queue_partitions(const State& s, const store::Txn& txn,
                                                  QueueId qid);

/// Drops (pid, gid) from the lease index entry of `lease_id` (0: nothing to drop); inside an
/// atomic entry, only when the entry commits.
void release_lease_index(State& s, LeaseId lease_id, PartitionId pid, GroupId gid);

// ------------------------------------------------------------------------------------------
// candidates.cpp: the candidate sets of the pop index.

/// Puts `pid` in the ready set (out of the deferred one).
void make_ready(GroupCandidates& gc, PartitionId pid);
/// Takes `pid` out of both sets.
void make_idle(GroupCandidates& gc, PartitionId pid);
/// Puts `pid` in the deferred set, due at `due_ms` (out of the ready one).
void defer(GroupCandidates& gc, PartitionId pid, std::int64_t due_ms);
/// Moves the deferred partitions due at or before `now_ms` to the ready set.
void promote_due(GroupCandidates& gc, std::int64_t now_ms);

/// A partition of `qid` may have become deliverable for `gid` (or every group when gid = 0).
void mark_ready(State& s, QueueId qid, GroupId gid, PartitionId pid);

/// Partition `pid` of `qid` has nothing deliverable for group `gid` (a non-zero id).
void mark_idle(State& s, QueueId qid, GroupId gid, PartitionId pid);

/// Every partition of `qid` that has messages, in id order. A queue that holds a good share of
/// all partitions is read from the memory mirror (one sequential pass); a small one from its
/// name index in LMDB, then sorted. The candidate sets take them in this order, so no insert
/// searches the tree: with 10,000,000 partitions the name-index walk with searched inserts held
/// the applier for seconds on a group's first pop.
Result<std::vector<PartitionId>> partitions_with_messages(const State& s, const store::Txn& txn,
                                                          QueueId qid);

/// Re-seeds the candidates of (qid, gid) with every partition that has messages (after a seek
/// or a subscription change moved where the group starts).
Result<void> reseed_candidates(State& s, const store::Txn& txn, QueueId qid, GroupId gid);

// ------------------------------------------------------------------------------------------
// push.cpp: pushes of one item and the blocks they leave pending.

/// Writes the message blocks the pushes of the batch left in memory. The batch's end calls it,
/// and so do Pop, Ack and ExtendLease (flush_pushes_caching_cursors) before they read anything.
Result<void> flush_blocks(State& s, store::WriteTxn& txn);

/// flush_blocks(), then the records of the partitions whose memory entries changed (pushes,
/// sweeps; once per txn or per other command, not per push or batch).
Result<void> flush_pushes(State& s, store::WriteTxn& txn);

/// flush_pushes() and flush_cursors(), and the cursors are read and written in LMDB until the
/// next flush_pushes_caching_cursors(): every command but Push, Pop, Ack and ExtendLease calls it
/// before it reads, deletes or journals anything.
Result<void> flush_pending(State& s, store::WriteTxn& txn);

/// flush_blocks(), and the cursors are read and written through the cursor cache: what Pop, Ack
/// and ExtendLease call first (the partition records stay dirty until the commit).
Result<void> flush_pushes_caching_cursors(State& s, store::WriteTxn& txn);

/// Pushes one item and writes its message at once (what follows may read it: an ack in the
/// same transaction). A Transaction's push ops and the drain of the maintenance buffer use it.
Result<PushItemResult> push_item(State& s, store::WriteTxn& txn, const PushItem& item,
                                 TimestampMs now, bool is_transaction, PushMemo& memo);

// ------------------------------------------------------------------------------------------
// ack.cpp: acks of one item.

struct AckContext {
    bool is_transaction = false;
    LeaseRelease release = LeaseRelease::by_count;  ///< atomic entries only
    std::string failure;                            ///< set when a transaction must abort
};

/// Acks one item, looking its sequence up by its transaction id (a Transaction's ack ops).
Result<AckItemResult> ack_item_by_id(State& s, store::WriteTxn& txn, const AckItem& item,
                                     TimestampMs now, AckContext& context);

}  // namespace queen::queues::detail
