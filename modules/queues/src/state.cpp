// queues/src/state.cpp — QueueState: open/rebuild, the apply functions and the memory index.
#include <algorithm>
#include <sstream>

#include "messages.hpp"
#include "queen/core/assert.hpp"
#include "state.hpp"

namespace queen::queues {

using detail::CursorRecord;
using detail::GroupCandidates;
using detail::MessageRecord;
using detail::PartitionMem;
using detail::QueueMem;
using detail::State;

namespace {

constexpr std::string_view meta_state_key = "state";

// ------------------------------------------------------------------------------------------
// Journaled storage writes. Outside an atomic entry they go straight to the txn.

Result<void> put(State& s, store::WriteTxn& txn, store::Table table, ByteSpan key, ByteSpan value) {
    if (s.journal.is_active) {
        QUEEN_TRY(auto old, txn.get(table, key));
        s.journal.record(table, key, old);
    }
    return txn.put(table, key, value);
}

/// put() for a key whose current value the caller just read (`old`; std::nullopt = absent): an
/// atomic entry journals it without reading it again.
Result<void> put_over(State& s, store::WriteTxn& txn, store::Table table, ByteSpan key,
                      ByteSpan value, std::optional<ByteSpan> old) {
    if (s.journal.is_active) {
        s.journal.record(table, key, old);
    }
    return txn.put(table, key, value);
}

/// Stores `value` unless `key` is present (one B-tree descent); returns the stored value when
/// it is (nothing written; the span is valid until the next write of the txn).
Result<std::optional<ByteSpan>> put_if_absent(State& s, store::WriteTxn& txn, store::Table table,
                                              ByteSpan key, ByteSpan value) {
    QUEEN_TRY(auto existing, txn.put_if_absent(table, key, value));
    if (!existing && s.journal.is_active) {
        s.journal.record(table, key, std::nullopt);
    }
    return existing;
}

Result<void> save_meta(State& s, store::WriteTxn& txn) {
    detail::encode_into(s.meta_scratch, s.meta);
    QUEEN_TRY(put(s, txn, s.tables.meta, as_bytes(meta_state_key), s.meta_scratch));
    s.is_meta_dirty = false;
    return {};
}

/// The immutable part of partition `pid`'s record (from the cache, else read from LMDB and
/// cached); nullptr when there is no such record. The pointer is valid until the cache changes.
Result<const detail::PartitionInfo*> partition_info(State& s, const store::Txn& txn,
                                                    std::uint64_t pid) {
    if (const detail::PartitionInfo* info = s.partition_cache.find(pid); info != nullptr) {
        return info;
    }
    QUEEN_TRY(auto record, detail::get_record(txn, s.tables.partitions,
                                              detail::partition_key(PartitionId{pid}).span(),
                                              detail::decode_partition));
    if (!record) {
        return nullptr;
    }
    return &s.partition_cache.add_info(
        pid, detail::PartitionInfo{record->queue, std::move(record->name), record->created_at});
}

/// Journals the old value of a partition's memory entry before its first change in an entry.
PartitionMem& touch_partition(State& s, std::uint64_t pid) {
    QUEEN_ASSERT(pid < s.partitions.size(), "partition id out of range: ", pid);
    if (s.journal.is_active && pid < s.journal.partitions_size &&
        s.journal.partitions_saved.insert(pid).second) {
        s.journal.partitions.emplace_back(pid, s.partitions[pid]);
    }
    s.dirty_partitions.insert(pid);
    return s.partitions[pid];
}

void touch_queue_count(State& s, std::uint32_t qid) {
    if (s.journal.is_active && !s.journal.queue_counts.contains(qid)) {
        const QueueMem& q = s.queues.at(qid);
        s.journal.queue_counts.emplace(qid, std::make_pair(q.message_count, q.partition_count));
    }
}

void encode_partition(Bytes& out, const detail::PartitionInfo& info, const PartitionMem& mem) {
    detail::encode_partition_into(out, info.queue, info.name, info.created_at, mem.first_sequence,
                                  mem.last_sequence, TimestampMs{mem.last_created_ms},
                                  mem.message_count);
}

/// Writes the mutable fields of every partition changed by this apply into its record.
/// Every apply ends with this flush, so a partition's record always equals its immutable info
/// plus its memory entry as of the last apply: inside an atomic entry (which flushes once, at
/// its end) the old value of a partition that existed before the entry is that info plus the
/// memory entry the journal saved, and is journaled without reading LMDB.
Result<void> flush_partitions(State& s, store::WriteTxn& txn) {
    for (const std::uint64_t pid : s.dirty_partitions) {
        const PartitionMem& mem = s.partitions[pid];
        if (mem.queue.value() == 0) {
            continue;
        }
        const auto key = detail::partition_key(PartitionId{pid});
        QUEEN_TRY(const detail::PartitionInfo* info, partition_info(s, txn, pid));
        QUEEN_ASSERT(info != nullptr, "partition in memory but not in LMDB: ", pid);
        encode_partition(s.scratch, *info, mem);
        if (!s.journal.is_active) {
            QUEEN_TRY(txn.put(s.tables.partitions, key.span(), s.scratch));
            continue;
        }
        const auto& saved = s.journal.partitions;
        const auto old = std::find_if(saved.begin(), saved.end(),
                                      [&](const auto& entry) { return entry.first == pid; });
        if (old == saved.end()) {
            QUEEN_TRY(put(s, txn, s.tables.partitions, key.span(), s.scratch));
            continue;
        }
        encode_partition(s.old_scratch, *info, old->second);
        QUEEN_TRY(put_over(s, txn, s.tables.partitions, key.span(), s.scratch, s.old_scratch));
    }
    s.dirty_partitions.clear();
    return {};
}

// ------------------------------------------------------------------------------------------
// Candidate sets.

void make_ready(GroupCandidates& gc, std::uint64_t pid) {
    if (auto it = gc.deferred_due.find(pid); it != gc.deferred_due.end()) {
        gc.deferred.erase({it->second, pid});
        gc.deferred_due.erase(it);
    }
    gc.ready.insert(pid);
}

void make_idle(GroupCandidates& gc, std::uint64_t pid) {
    if (auto it = gc.deferred_due.find(pid); it != gc.deferred_due.end()) {
        gc.deferred.erase({it->second, pid});
        gc.deferred_due.erase(it);
    }
    gc.ready.erase(pid);
}

void defer(GroupCandidates& gc, std::uint64_t pid, std::int64_t due_ms) {
    make_idle(gc, pid);
    gc.deferred.emplace(due_ms, pid);
    gc.deferred_due.emplace(pid, due_ms);
}

void promote_due(GroupCandidates& gc, std::int64_t now_ms) {
    while (!gc.deferred.empty() && gc.deferred.begin()->first <= now_ms) {
        const std::uint64_t pid = gc.deferred.begin()->second;
        gc.deferred.erase(gc.deferred.begin());
        gc.deferred_due.erase(pid);
        gc.ready.insert(pid);
    }
}

/// A partition of `qid` may have become deliverable for `gid` (or every group when gid = 0).
void mark_ready(State& s, std::uint32_t qid, std::uint32_t gid, std::uint64_t pid) {
    auto q = s.queues.find(qid);
    if (q == s.queues.end()) {
        return;
    }
    if (gid == 0) {
        for (auto& [group, gc] : q->second.groups) {
            make_ready(gc, pid);
        }
    } else if (auto g = q->second.groups.find(gid); g != q->second.groups.end()) {
        make_ready(g->second, pid);
    }
}

/// Partition `pid` of `qid` has nothing deliverable for group `gid` (a non-zero id).
void mark_idle(State& s, std::uint32_t qid, std::uint32_t gid, std::uint64_t pid) {
    auto q = s.queues.find(qid);
    if (q == s.queues.end()) {
        return;
    }
    if (auto g = q->second.groups.find(gid); g != q->second.groups.end()) {
        make_idle(g->second, pid);
    }
}

// ------------------------------------------------------------------------------------------
// Lookups.

std::string derive_namespace(std::string_view queue) {
    return std::string(queue.substr(0, queue.find('.')));
}
std::string derive_task(std::string_view queue) {
    const auto first = queue.find('.');
    if (first == std::string_view::npos) {
        return {};
    }
    const auto rest = queue.substr(first + 1);
    return std::string(rest.substr(0, rest.find('.')));
}

std::optional<std::uint32_t> find_queue(const State& s, std::string_view name) {
    auto it = s.queue_ids.find(name);
    if (it == s.queue_ids.end()) {
        return std::nullopt;
    }
    return it->second;
}

Result<std::uint32_t> create_queue(State& s, store::WriteTxn& txn, std::string_view name,
                                   std::string namespace_name, std::string task,
                                   const QueueOptions& options, TimestampMs now) {
    const std::uint32_t qid = s.meta.next_queue_id++;
    detail::QueueRecord record{std::string(name), std::move(namespace_name), std::move(task), now,
                               options};
    QUEEN_TRY(put(s, txn, s.tables.queues, detail::queue_key(QueueId{qid}).span(),
                  detail::encode(record)));
    QUEEN_TRY(
        put(s, txn, s.tables.queue_names, detail::name_key(name).span(), detail::encode_u64(qid)));
    QUEEN_TRY(save_meta(s, txn));
    QueueMem mem;
    mem.name = std::string(name);
    mem.options = options;
    s.queues.emplace(qid, std::move(mem));
    s.queue_ids.emplace(std::string(name), qid);
    if (s.journal.is_active) {
        s.journal.created_queues.push_back(qid);
    }
    return qid;
}

/// The id of partition `name` of queue `qid` (from the cache, else from LMDB's name index and
/// cached); std::nullopt when there is none.
Result<std::optional<std::uint64_t>> find_partition(State& s, const store::Txn& txn,
                                                    std::uint32_t qid, std::string_view name) {
    if (const std::uint64_t cached = s.partition_cache.find(qid, name); cached != 0) {
        QUEEN_ASSERT(cached < s.partitions.size() && s.partitions[cached].queue.value() == qid,
                     "partition cache names a partition of another queue: ", cached);
        return std::optional<std::uint64_t>{cached};
    }
    QUEEN_TRY(auto raw, txn.get(s.tables.partition_names,
                                detail::partition_name_key(QueueId{qid}, name).span()));
    if (!raw) {
        return std::optional<std::uint64_t>{};
    }
    QUEEN_TRY(auto pid, detail::decode_u64(*raw));
    s.partition_cache.add_name(qid, name, pid);
    return std::optional<std::uint64_t>{pid};
}

Result<std::uint64_t> get_or_create_partition(State& s, store::WriteTxn& txn, std::uint32_t qid,
                                              std::string_view name, TimestampMs now) {
    QUEEN_TRY(auto found, find_partition(s, txn, qid, name));
    if (found) {
        return *found;
    }
    const std::uint64_t pid = s.meta.next_partition_id++;
    QUEEN_ASSERT(pid < (std::uint64_t{1} << 48), "partition ids exhausted");
    detail::PartitionRecord record;
    record.queue = QueueId{qid};
    record.name = std::string(name);
    record.created_at = now;
    QUEEN_TRY(put(s, txn, s.tables.partitions, detail::partition_key(PartitionId{pid}).span(),
                  detail::encode(record)));
    QUEEN_TRY(put(s, txn, s.tables.partition_names,
                  detail::partition_name_key(QueueId{qid}, name).span(), detail::encode_u64(pid)));
    QUEEN_TRY(save_meta(s, txn));
    if (s.partitions.size() <= pid) {
        s.partitions.resize(pid + 1);
    }
    s.partitions[pid] = PartitionMem{QueueId{qid}, 0, 1, 0, 0, 0};
    s.partition_cache.add(pid, detail::PartitionInfo{QueueId{qid}, std::string(name), now});
    touch_queue_count(s, qid);
    s.queues.at(qid).partition_count++;
    return pid;
}

Result<std::uint32_t> get_or_create_group(State& s, store::WriteTxn& txn, std::string_view name) {
    if (auto it = s.group_ids.find(name); it != s.group_ids.end()) {
        return it->second;
    }
    const std::uint32_t gid = s.meta.next_group_id++;
    QUEEN_TRY(put(s, txn, s.tables.groups, detail::name_key(name).span(), detail::encode_u64(gid)));
    QUEEN_TRY(put(s, txn, s.tables.group_names, detail::group_name_key(GroupId{gid}).span(),
                  Bytes(name.begin(), name.end())));
    QUEEN_TRY(save_meta(s, txn));
    s.group_ids.emplace(std::string(name), gid);
    if (s.journal.is_active) {
        s.journal.created_groups.emplace_back(name);
    }
    return gid;
}

Result<std::optional<CursorRecord>> read_cursor(const State& s, const store::Txn& txn,
                                                std::uint64_t pid, std::uint32_t gid) {
    return detail::get_record(txn, s.tables.cursors,
                              detail::cursor_key(PartitionId{pid}, GroupId{gid}).span(),
                              detail::decode_cursor);
}

Result<void> write_cursor(State& s, store::WriteTxn& txn, std::uint64_t pid, std::uint32_t gid,
                          const CursorRecord& record) {
    detail::encode_into(s.scratch, record);
    return put(s, txn, s.tables.cursors, detail::cursor_key(PartitionId{pid}, GroupId{gid}).span(),
               s.scratch);
}

Result<std::optional<MessageRecord>> read_message(const State& s, const store::Txn& txn,
                                                  std::uint64_t pid, std::uint64_t seq) {
    return detail::read_message(txn, s.tables.messages, pid, seq);
}

/// The first live sequence of `pid` at or after `from` (last + 1 when none).
Result<std::uint64_t> next_live_sequence(const State& s, const store::Txn& txn, std::uint64_t pid,
                                         std::uint64_t from) {
    QUEEN_TRY(auto scan, detail::MessageScan::open(txn, s.tables.messages, pid, from));
    QUEEN_TRY(auto next, scan.next());
    return next ? next->sequence : s.partitions[pid].last_sequence + 1;
}

Result<std::string> partition_name(State& s, const store::Txn& txn, std::uint64_t pid) {
    QUEEN_TRY(const detail::PartitionInfo* info, partition_info(s, txn, pid));
    return info != nullptr ? info->name : std::string();
}

const detail::SubscriptionRecord* find_subscription(const State& s, std::uint32_t gid,
                                                    std::uint32_t qid, std::uint64_t pid) {
    if (auto it = s.subscriptions.find({gid, qid, pid}); it != s.subscriptions.end()) {
        return &it->second;
    }
    if (auto it = s.subscriptions.find({gid, qid, 0}); it != s.subscriptions.end()) {
        return &it->second;
    }
    return nullptr;
}

/// The first stored sequence >= `from` whose message was created at or after `ts_ms`
/// (last + 1 when none).
Result<std::uint64_t> first_sequence_from(const State& s, const store::Txn& txn, std::uint64_t pid,
                                          std::uint64_t from, std::int64_t ts_ms) {
    QUEEN_TRY(auto scan, detail::MessageScan::open(txn, s.tables.messages, pid, from));
    QUEEN_TRY(auto stored, scan.next());
    while (stored) {
        QUEEN_TRY(auto message, detail::decode_message(stored->record));
        if (message.created_at.value() >= ts_ms) {
            return stored->sequence;
        }
        QUEEN_TRY(stored, scan.next());
    }
    return s.partitions[pid].last_sequence + 1;
}

void release_lease_index(State& s, std::uint64_t lease_id, std::uint64_t pid, std::uint32_t gid) {
    if (lease_id == 0) {
        return;
    }
    if (s.journal.is_active) {
        // Dropped when the entry commits (end_atomic); a rollback keeps the pair.
        s.journal.released_leases.emplace_back(lease_id, pid, gid);
        return;
    }
    auto it = s.leases.find(lease_id);
    if (it == s.leases.end()) {
        return;
    }
    auto& pairs = it->second;
    pairs.erase(std::remove(pairs.begin(), pairs.end(), std::make_pair(pid, gid)), pairs.end());
    if (pairs.empty()) {
        s.leases.erase(it);
    }
}

std::int64_t lease_ms(const QueueOptions& options) {
    return (options.lease_time_s > 0 ? options.lease_time_s : 60) * 1000;
}

// ------------------------------------------------------------------------------------------
// Pop of one partition.

struct PartitionTake {
    std::vector<PoppedMessage> messages;
};

/// Checks (pid, gid) against LMDB at `now`, moves its candidate entry, and takes up to `budget`
/// messages under `lease` (0 = autoAck). Returns the messages taken (none = not deliverable).
Result<PartitionTake> take_partition(State& s, store::WriteTxn& txn, std::uint32_t qid,
                                     std::uint32_t gid, GroupCandidates& gc, std::uint64_t pid,
                                     std::int64_t now_ms, std::uint32_t budget,
                                     std::uint64_t& lease, bool auto_ack) {
    PartitionTake take;
    // A candidate may name a partition a rolled-back transaction created (gone, or its id
    // reused by another queue): drop it.
    if (pid >= s.partitions.size() || s.partitions[pid].queue.value() != qid) {
        make_idle(gc, pid);
        return take;
    }
    const PartitionMem& mem = s.partitions[pid];
    if (mem.queue.value() != qid) {
        make_idle(gc, pid);
        return take;
    }
    const QueueOptions& options = s.queues.at(qid).options;
    QUEEN_TRY(auto cursor, read_cursor(s, txn, pid, gid));
    if (cursor && cursor->is_leased(now_ms)) {
        defer(gc, pid, cursor->lease_expires_ms);
        return take;
    }
    if (cursor && cursor->not_before_ms > now_ms) {
        defer(gc, pid, cursor->not_before_ms);
        return take;
    }
    if (mem.message_count == 0) {
        make_idle(gc, pid);
        return take;
    }
    if (options.window_buffer_s > 0 &&
        mem.last_created_ms + options.window_buffer_s * 1000 > now_ms) {
        defer(gc, pid, mem.last_created_ms + options.window_buffer_s * 1000);
        return take;
    }
    std::uint64_t from = 0;
    const bool had_cursor = cursor.has_value();
    if (cursor) {
        from = cursor->consumed + 1;
    } else if (const auto* sub = find_subscription(s, gid, qid, pid); sub != nullptr) {
        QUEEN_TRY(from,
                  first_sequence_from(s, txn, pid, mem.first_sequence, sub->timestamp.value()));
    } else {
        from = mem.first_sequence;
    }
    CursorRecord record = cursor.value_or(CursorRecord{});
    if (!had_cursor) {
        // The subscription start becomes a cursor only when something is delivered: nothing is
        // written for a partition that was merely examined, because which stale candidates get
        // examined depends on the memory cache, and LMDB must not.
        record.consumed = from - 1;
    }
    if (from > mem.last_sequence) {
        make_idle(gc, pid);
        return take;
    }
    std::string name;
    QUEEN_TRY(name, partition_name(s, txn, pid));
    const std::int64_t delay_ms = options.delayed_processing_s * 1000;
    std::int64_t delayed_until = 0;
    take.messages.reserve(
        static_cast<std::size_t>(std::min<std::uint64_t>(budget, mem.last_sequence - from + 1)));
    QUEEN_TRY(auto scan, detail::MessageScan::open(txn, s.tables.messages, pid, from));
    QUEEN_TRY(auto stored, scan.next());
    while (stored && take.messages.size() < budget) {
        QUEEN_TRY(auto message, detail::decode_message(stored->record));
        if (delay_ms > 0 && message.created_at.value() + delay_ms > now_ms) {
            delayed_until = message.created_at.value() + delay_ms;
            break;
        }
        const std::uint64_t seq = stored->sequence;
        PoppedMessage out;
        out.id = MessageId{PartitionId{pid}, Sequence{seq}};
        out.transaction_id = std::move(message.transaction_id);
        out.trace_id = std::move(message.trace_id);
        out.producer_sub = std::move(message.producer_sub);
        out.payload = std::move(message.payload);
        out.is_encrypted = message.is_encrypted;
        out.created_at = message.created_at;
        out.partition = name;
        out.retry_count = record.batch_retry_count;
        take.messages.push_back(std::move(out));
        if (take.messages.size() == budget) {
            break;
        }
        QUEEN_TRY(stored, scan.next());
    }
    if (take.messages.empty()) {
        if (delayed_until > 0) {
            defer(gc, pid, delayed_until);
        } else {
            make_idle(gc, pid);
        }
        return take;
    }
    const std::uint64_t last_taken = take.messages.back().id.sequence.value();
    release_lease_index(s, record.lease_id, pid, gid);
    if (auto_ack) {
        record.consumed = last_taken;
        record.total_consumed += take.messages.size();
        record.last_consumed_ms = now_ms;
        record.lease_id = 0;
        record.lease_expires_ms = 0;
        record.batch_size = 0;
        record.acked_count = 0;
        if (last_taken < mem.last_sequence) {
            make_ready(gc, pid);
        } else {
            make_idle(gc, pid);
        }
    } else {
        if (lease == 0) {
            lease = s.meta.next_lease_id++;
            s.is_meta_dirty = true;  // one meta write per batch, not per pop
        }
        record.lease_id = lease;
        record.lease_expires_ms = now_ms + lease_ms(options);
        record.batch_size = static_cast<std::uint32_t>(take.messages.size());
        record.acked_count = 0;
        s.leases[lease].emplace_back(pid, gid);
        defer(gc, pid, record.lease_expires_ms);
    }
    QUEEN_TRY(write_cursor(s, txn, pid, gid, record));
    return take;
}

/// Every partition of `qid` that has messages, in id order. A queue that holds a good share of
/// all partitions is read from the memory mirror (one sequential pass); a small one from its
/// name index in LMDB, then sorted. The candidate sets take them in this order, so no insert
/// searches the tree: with 10,000,000 partitions the name-index walk with searched inserts held
/// the applier for seconds on a group's first pop.
Result<std::vector<std::uint64_t>> partitions_with_messages(const State& s, const store::Txn& txn,
                                                            std::uint32_t qid) {
    const QueueMem& q = s.queues.at(qid);
    std::vector<std::uint64_t> pids;
    if (q.partition_count * 8 >= s.partitions.size()) {
        for (std::uint64_t pid = 1; pid < s.partitions.size(); ++pid) {
            const PartitionMem& mem = s.partitions[pid];
            if (mem.queue.value() == qid && mem.message_count > 0) {
                pids.push_back(pid);
            }
        }
        return pids;
    }
    pids.reserve(q.partition_count);
    QUEEN_TRY(auto cursor, txn.cursor(s.tables.partition_names));
    const auto prefix = detail::queue_key(QueueId{qid});
    QUEEN_TRY(auto entry, cursor.seek(prefix.span()));
    while (entry && detail::has_prefix(entry->key, prefix.span())) {
        QUEEN_TRY(auto pid, detail::decode_u64(entry->value));
        if (s.partitions[pid].message_count > 0) {
            pids.push_back(pid);
        }
        QUEEN_TRY(entry, cursor.next());
    }
    std::sort(pids.begin(), pids.end());
    return pids;
}

/// The candidates of (qid, gid), created on the group's first pop on the queue: every
/// partition with messages, minus those the cursors say are consumed or leased.
Result<GroupCandidates*> group_candidates(State& s, store::WriteTxn& txn, std::uint32_t qid,
                                          std::uint32_t gid, TimestampMs now, bool& created) {
    QueueMem& q = s.queues.at(qid);
    created = false;
    if (auto it = q.groups.find(gid); it != q.groups.end()) {
        return &it->second;
    }
    created = true;
    GroupCandidates gc;
    QUEEN_TRY(const auto pids, partitions_with_messages(s, txn, qid));
    for (const std::uint64_t pid : pids) {
        gc.ready.insert(gc.ready.end(), pid);
    }
    detail::GroupQueueRecord record{0, now};
    QUEEN_TRY(put(s, txn, s.tables.group_queues,
                  detail::group_queue_key(QueueId{qid}, GroupId{gid}).span(),
                  detail::encode(record)));
    return &q.groups.emplace(gid, std::move(gc)).first->second;
}

/// Re-seeds the candidates of (qid, gid) with every partition that has messages (after a seek
/// or a subscription change moved where the group starts).
Result<void> reseed_candidates(State& s, const store::Txn& txn, std::uint32_t qid,
                               std::uint32_t gid) {
    auto q = s.queues.find(qid);
    if (q == s.queues.end()) {
        return {};
    }
    auto g = q->second.groups.find(gid);
    if (g == q->second.groups.end()) {
        return {};
    }
    QUEEN_TRY(const auto pids, partitions_with_messages(s, txn, qid));
    for (const std::uint64_t pid : pids) {
        make_ready(g->second, pid);
    }
    return {};
}

/// Partition ids of one queue in name order.
Result<std::vector<std::uint64_t>> queue_partitions(const State& s, const store::Txn& txn,
                                                    std::uint32_t qid) {
    std::vector<std::uint64_t> out;
    QUEEN_TRY(auto cursor, txn.cursor(s.tables.partition_names));
    const auto prefix = detail::queue_key(QueueId{qid});
    QUEEN_TRY(auto entry, cursor.seek(prefix.span()));
    while (entry && detail::has_prefix(entry->key, prefix.span())) {
        QUEEN_TRY(auto pid, detail::decode_u64(entry->value));
        out.push_back(pid);
        QUEEN_TRY(entry, cursor.next());
    }
    return out;
}

// ------------------------------------------------------------------------------------------
// Push of one item.

/// Writes one block of the pushes (one insert): a lone record is stored as it is (format 1),
/// more as a block (format 2). The block restarts empty after them.
Result<void> write_block(State& s, store::WriteTxn& txn, detail::BlockBuilder& block) {
    if (block.count() == 0) {
        return {};
    }
    const auto key = detail::message_key(PartitionId{block.partition()}, block.first());
    const ByteSpan value = block.count() == 1 ? block.single() : block.value();
    // Sequences only grow, so the key is new: an insert, which inside a transaction also
    // spares the journal a read of the old value.
    QUEEN_TRY(auto clash, put_if_absent(s, txn, s.tables.messages, key.span(), value));
    if (clash) {
        return Error{queen::Errc::corruption, "queues: message " + std::to_string(block.first()) +
                                                  " of partition " +
                                                  std::to_string(block.partition()) +
                                                  " exists beyond the partition's last sequence"};
    }
    block.start(block.partition(), block.first() + block.count());
    return {};
}

/// The (queue, partition) pairs the items of one apply pushed to: a push request names a few
/// of them over and over (a producer spreading a batch over its partitions), and this saves a
/// partition-name lookup in LMDB per item, and the candidate and wakeup bookkeeping after the
/// first item of each pair. Valid for one apply call: nothing in a push or a transaction
/// deletes queues or partitions or makes a partition idle, and a rolled-back transaction
/// returns from its apply.
class PushMemo {
public:
    struct Pair {
        std::string queue;
        std::string partition;
        std::uint32_t qid = 0;
        std::uint64_t pid = 0;
        bool is_marked_ready = false;  ///< marked ready for every group by this apply
        bool has_wakeup = false;       ///< a wakeup for it is pending
        std::size_t block = detail::PendingBlocks::none;  ///< its pending block, once looked up
    };
    static constexpr std::size_t pairs_max = 16;
    /// A block is written when the next record would take it past this many bytes.
    static constexpr std::size_t block_bytes_max = 64 * 1024;

    /// The pair of `item`, or nullptr when not memoized.
    Pair* find(const PushItem& item) noexcept {
        for (Pair& pair : pairs_) {
            if (pair.partition == item.partition && pair.queue == item.queue) {
                return &pair;
            }
        }
        return nullptr;
    }
    /// Memoizes a pair (replacing the oldest one when full).
    Pair& add(const PushItem& item, std::uint32_t qid, std::uint64_t pid) {
        Pair* slot = nullptr;
        if (pairs_.size() < pairs_max) {
            slot = &pairs_.emplace_back();
        } else {
            slot = &pairs_[victim_];
            victim_ = (victim_ + 1) % pairs_max;
        }
        slot->queue.assign(item.queue);
        slot->partition.assign(item.partition);
        slot->qid = qid;
        slot->pid = pid;
        slot->is_marked_ready = false;
        slot->has_wakeup = false;
        slot->block = detail::PendingBlocks::none;
        return *slot;
    }

    /// Adds the message `item` pushed at `now` as sequence `seq` to the block of `pair`'s
    /// partition (in the state's pending blocks, which an earlier push of the batch may have
    /// started).
    Result<void> append(State& s, store::WriteTxn& txn, Pair& pair, std::uint64_t seq,
                        TimestampMs now, const PushItem& item) {
        if (pair.block == detail::PendingBlocks::none) {
            pair.block = s.pending_blocks.find(pair.pid);
            if (pair.block == detail::PendingBlocks::none) {
                pair.block = s.pending_blocks.start(pair.pid, seq);
            }
        }
        detail::BlockBuilder& block = s.pending_blocks.at(pair.block);
        QUEEN_ASSERT(block.first() + block.count() == seq, "a block's sequences are consecutive");
        if (block.count() > 0 &&
            block.bytes() + detail::message_record_size(now, item) > block_bytes_max) {
            QUEEN_TRY(write_block(s, txn, block));
        }
        block.add_message(now, item);
        return {};
    }

    /// Forgets the pairs' block indexes (the pending blocks were written).
    void forget_blocks() noexcept {
        for (Pair& pair : pairs_) {
            pair.block = detail::PendingBlocks::none;
        }
    }

private:
    std::vector<Pair> pairs_;
    std::size_t victim_ = 0;
};

/// Writes the pushes' pending message blocks (one q.messages insert each); a transaction's push
/// op calls it before its next op.
Result<void> flush_blocks(State& s, store::WriteTxn& txn) {
    if (s.pending_blocks.empty()) {
        return {};
    }
    return s.pending_blocks.flush(
        [&](detail::BlockBuilder& block) { return write_block(s, txn, block); });
}

/// Writes what the pushes of the batch left in memory: their message blocks and the records of
/// the partitions they changed (once per batch, not per push). The batch's end calls it, and so
/// does every command but Push before it reads, deletes or journals anything.
Result<void> flush_pending(State& s, store::WriteTxn& txn) {
    QUEEN_TRY(flush_blocks(s, txn));
    return flush_partitions(s, txn);
}

/// Pushes one item; its answer goes into `result` (every field is assigned, so a reused
/// result keeps its strings' storage).
Result<void> push_item_into(State& s, store::WriteTxn& txn, const PushItem& item, TimestampMs now,
                            bool is_transaction, PushMemo& memo, PushItemResult& result) {
    result.message_id = MessageId{};
    result.error.clear();
    result.transaction_id = item.transaction_id;
    result.queue = item.queue;
    result.partition = item.partition;
    result.trace_id = item.trace_id;
    result.status = PushStatus::failed;
    if (item.queue.size() > s.options.queue_name_bytes_max) {
        result.error = "queue name is longer than " +
                       std::to_string(s.options.queue_name_bytes_max) + " bytes";
        return {};
    }
    if (item.partition.size() > s.options.partition_name_bytes_max) {
        result.error = "partition name is longer than " +
                       std::to_string(s.options.partition_name_bytes_max) + " bytes";
        return {};
    }
    if (item.transaction_id.empty() ||
        item.transaction_id.size() > s.options.transaction_id_bytes_max) {
        result.error = "transactionId must be 1 to " +
                       std::to_string(s.options.transaction_id_bytes_max) + " bytes";
        return {};
    }
    if (s.meta.push_maintenance && !is_transaction) {
        const std::uint64_t id = s.meta.next_buffer_id++;
        QUEEN_TRY(save_meta(s, txn));
        QUEEN_TRY(
            put(s, txn, s.tables.buffer, detail::sequence_key(id).span(), detail::encode(item)));
        result.status = PushStatus::buffered;
        return {};
    }
    PushMemo::Pair* pair = memo.find(item);
    if (pair == nullptr) {
        std::uint32_t found_qid = 0;
        if (auto found = find_queue(s, item.queue)) {
            found_qid = *found;
        } else {
            QUEEN_TRY(found_qid, create_queue(s, txn, item.queue, derive_namespace(item.queue),
                                              derive_task(item.queue), QueueOptions{}, now));
        }
        std::uint64_t found_pid = 0;
        QUEEN_TRY(found_pid, get_or_create_partition(s, txn, found_qid, item.partition, now));
        pair = &memo.add(item, found_qid, found_pid);
    }
    const std::uint32_t qid = pair->qid;
    const std::uint64_t pid = pair->pid;
    const auto txid = detail::txid_key(PartitionId{pid}, item.transaction_id);
    QueueMem& q = s.queues.at(qid);
    const bool is_full =
        q.options.max_size > 0 && q.message_count >= static_cast<std::uint64_t>(q.options.max_size);
    const std::uint64_t seq = s.partitions[pid].last_sequence + 1;
    // The dedupe check: a duplicate is reported before a full queue is.
    std::optional<ByteSpan> existing;
    if (is_full) {
        QUEEN_TRY(existing, txn.get(s.tables.transaction_ids, txid.span()));
    } else {
        // One descent checks and claims the transaction id; the message follows below.
        const auto seq_value = detail::encode_u64_fixed(seq);
        QUEEN_TRY(existing,
                  put_if_absent(s, txn, s.tables.transaction_ids, txid.span(), seq_value));
    }
    if (existing) {
        QUEEN_TRY(auto existing_seq, detail::decode_u64(*existing));
        result.status = PushStatus::duplicate;
        result.message_id = MessageId{PartitionId{pid}, Sequence{existing_seq}};
        return {};
    }
    if (is_full) {
        result.error = "queue '" + item.queue + "' is full: maxSize is " +
                       std::to_string(q.options.max_size) + " messages";
        return {};
    }
    PartitionMem& mem = touch_partition(s, pid);
    QUEEN_TRY(memo.append(s, txn, *pair, seq, now, item));
    if (mem.message_count == 0) {
        mem.first_sequence = seq;
    }
    mem.last_sequence = seq;
    mem.last_created_ms = now.value();
    mem.message_count++;
    touch_queue_count(s, qid);
    q.message_count++;
    if (!pair->is_marked_ready) {
        mark_ready(s, qid, 0, pid);
        pair->is_marked_ready = true;
    }
    // One wakeup per partition and apply (take_wakeups would drop the copies anyway).
    if (!pair->has_wakeup) {
        s.wakeups.push_back({item.queue, item.partition});
        pair->has_wakeup = true;
    }
    result.status = PushStatus::queued;
    result.message_id = MessageId{PartitionId{pid}, Sequence{seq}};
    return {};
}

Result<PushItemResult> push_item(State& s, store::WriteTxn& txn, const PushItem& item,
                                 TimestampMs now, bool is_transaction, PushMemo& memo) {
    PushItemResult result;
    QUEEN_TRY(push_item_into(s, txn, item, now, is_transaction, memo, result));
    // Alone: what follows may read the message (an ack in the same transaction).
    QUEEN_TRY(flush_blocks(s, txn));
    memo.forget_blocks();
    return result;
}

// ------------------------------------------------------------------------------------------
// Ack of one item.

struct AckContext {
    bool is_transaction = false;
    std::string failure;  ///< set when a transaction must abort
};

/// What the items of one Ack apply share (they come sorted by partition, group, sequence):
/// the last partition's name, and its cursor record, written back once per (partition, group)
/// instead of once per item. Not used inside an atomic entry (its writes must be journaled in
/// order).
class AckMemo {
public:
    /// The name of partition `pid` (read from LMDB on a change of partition).
    Result<std::string_view> partition_name(State& s, const store::Txn& txn, std::uint64_t pid);
    /// The cursor of (pid, gid), from memory when it is the memoized pair; writes the previous
    /// pair's record first when it changed.
    Result<std::optional<CursorRecord>> read_cursor(State& s, store::WriteTxn& txn,
                                                    std::uint64_t pid, std::uint32_t gid);
    /// Records the new cursor of the memoized pair (read_cursor was called for it).
    void write_cursor(std::uint64_t pid, std::uint32_t gid, const CursorRecord& record);
    /// Writes the memoized cursor if it changed. Call before the apply returns.
    Result<void> flush(State& s, store::WriteTxn& txn);

private:
    std::uint64_t name_pid_ = 0;
    std::string name_;
    std::uint64_t cursor_pid_ = 0;  ///< 0 = no cursor memoized
    std::uint32_t cursor_gid_ = 0;
    std::optional<CursorRecord> cursor_;
    bool is_dirty_ = false;
};

Result<void> add_to_dlq(State& s, store::WriteTxn& txn, std::uint32_t qid, std::uint64_t pid,
                        std::uint64_t seq, std::uint32_t gid, std::string error,
                        std::uint32_t retry_count, MessageRecord message, TimestampMs now) {
    detail::DlqRecord record{QueueId{qid},     PartitionId{pid}, seq, GroupId{gid},
                             std::move(error), retry_count,      now, std::move(message)};
    const std::uint64_t id = s.meta.next_dlq_id++;
    QUEEN_TRY(save_meta(s, txn));
    return put(s, txn, s.tables.dlq, detail::sequence_key(id).span(), detail::encode(record));
}

Result<std::string_view> AckMemo::partition_name(State& s, const store::Txn& txn,
                                                 std::uint64_t pid) {
    if (name_pid_ != pid) {
        QUEEN_TRY(name_, queues::partition_name(s, txn, pid));
        name_pid_ = pid;
    }
    return std::string_view(name_);
}

Result<std::optional<CursorRecord>> AckMemo::read_cursor(State& s, store::WriteTxn& txn,
                                                         std::uint64_t pid, std::uint32_t gid) {
    if (cursor_pid_ != pid || cursor_gid_ != gid) {
        QUEEN_TRY(flush(s, txn));
        QUEEN_TRY(cursor_, queues::read_cursor(s, txn, pid, gid));
        cursor_pid_ = pid;
        cursor_gid_ = gid;
    }
    return cursor_;
}

void AckMemo::write_cursor(std::uint64_t pid, std::uint32_t gid, const CursorRecord& record) {
    QUEEN_ASSERT(pid == cursor_pid_ && gid == cursor_gid_, "AckMemo: write of an unread cursor");
    cursor_ = record;
    is_dirty_ = true;
}

Result<void> AckMemo::flush(State& s, store::WriteTxn& txn) {
    if (is_dirty_) {
        QUEEN_TRY(queues::write_cursor(s, txn, cursor_pid_, cursor_gid_, *cursor_));
        is_dirty_ = false;
    }
    return {};
}

/// Acks one item. `found_seq` is the item's sequence looked up by transaction id (0: no such
/// message; sequences start at 1). `memo` (may be null, and is inside an atomic entry) carries
/// lookups across the items of one Ack apply.
Result<AckItemResult> ack_item(State& s, store::WriteTxn& txn, const AckItem& item,
                               std::uint64_t found_seq, TimestampMs now, AckContext& context,
                               AckMemo* memo) {
    const std::int64_t now_ms = now.value();
    AckItemResult result;
    result.transaction_id = item.transaction_id;
    const std::uint64_t pid = item.partition.value();
    if (pid == 0 || pid >= s.partitions.size() || s.partitions[pid].queue.value() == 0) {
        result.error = "Message not found";
        context.failure = "Message not found: " + item.transaction_id;
        return result;
    }
    const std::uint32_t qid = s.partitions[pid].queue.value();
    if (found_seq == 0) {
        result.error = "Message not found";
        context.failure = "Message not found: " + item.transaction_id;
        return result;
    }
    const std::uint64_t seq = found_seq;
    QueueMem& q = s.queues.at(qid);
    result.queue = q.name;
    if (memo != nullptr) {
        QUEEN_TRY(auto name, memo->partition_name(s, txn, pid));
        result.partition.assign(name);
    } else {
        QUEEN_TRY(result.partition, partition_name(s, txn, pid));
    }
    if (item.status == AckStatus::unknown) {
        context.failure = "Unknown ack status";
        return result;  // success false, error null (spec 5.7)
    }
    if (item.group.size() > s.options.group_name_bytes_max) {
        result.error = "consumerGroup is too long";
        context.failure = result.error;
        return result;
    }
    std::uint32_t gid = 0;
    QUEEN_TRY(gid, get_or_create_group(s, txn, item.group));
    std::optional<CursorRecord> cursor;
    const auto cursor_key = detail::cursor_key(PartitionId{pid}, GroupId{gid});
    std::optional<Bytes> cursor_old;  // the journal's old value (atomic entries only)
    if (memo != nullptr) {
        QUEEN_TRY(cursor, memo->read_cursor(s, txn, pid, gid));
    } else {
        QUEEN_TRY(auto raw, txn.get(s.tables.cursors, cursor_key.span()));
        if (raw) {
            if (s.journal.is_active) {
                cursor_old.emplace(raw->begin(), raw->end());
            }
            QUEEN_TRY(cursor, detail::decode_cursor(*raw));
        }
    }
    CursorRecord record = cursor.value_or(CursorRecord{});
    const bool is_leased = record.is_leased(now_ms);
    if (item.lease.value() != 0) {
        const bool is_same_failed_batch = item.status == AckStatus::failed &&
                                          record.last_failed_lease == item.lease.value() &&
                                          !context.is_transaction;
        if (is_same_failed_batch) {
            result.success = true;  // the batch's failure was already counted (spec 5.7)
            result.lease_released = LeaseReleased::yes;
            return result;
        }
        if (!is_leased || record.lease_id != item.lease.value()) {
            result.error = "Invalid or expired lease";
            context.failure = "Invalid or expired lease";
            return result;
        }
    }
    bool released = false;
    auto release = [&] {
        release_lease_index(s, record.lease_id, pid, gid);
        record.lease_id = 0;
        record.lease_expires_ms = 0;
        released = true;
    };
    auto consume = [&] {
        if (seq > record.consumed) {
            record.consumed = seq;
        }
        record.total_consumed++;
        record.last_consumed_ms = now_ms;
        if (is_leased) {
            record.acked_count++;
            if (record.acked_count >= record.batch_size) {
                release();
            }
        }
    };
    const QueueOptions& options = q.options;
    bool to_dlq = false;
    std::string dlq_error;
    switch (item.status) {
        case AckStatus::completed:
            consume();
            if (released) {
                record.batch_retry_count = 0;
            }
            break;
        case AckStatus::failed:
            if (context.is_transaction) {
                to_dlq = true;
                dlq_error = item.has_error ? item.error : "Unknown error";
                break;
            }
            if (record.batch_retry_count < options.retry_limit) {
                record.batch_retry_count++;
                if (is_leased) {
                    record.last_failed_lease = record.lease_id;
                    release();
                }
                record.not_before_ms = now_ms + std::max<std::int64_t>(options.retry_delay_ms, 0);
            } else {
                to_dlq = true;
                dlq_error = item.has_error ? item.error : "Retries exhausted";
            }
            break;
        case AckStatus::dlq:
            to_dlq = true;
            dlq_error = item.has_error
                            ? item.error
                            : (context.is_transaction ? "Unknown error" : "Moved to DLQ");
            break;
        case AckStatus::retry:
            if (context.is_transaction) {
                context.failure = "Unsupported ack status in a transaction: retry";
                return result;
            }
            if (is_leased) {
                release();
            }
            break;
        case AckStatus::unknown: QUEEN_UNREACHABLE();
    }
    if (to_dlq) {
        QUEEN_TRY(auto message, read_message(s, txn, pid, seq));
        if (message) {
            QUEEN_TRY(add_to_dlq(s, txn, qid, pid, seq, gid, dlq_error,
                                 context.is_transaction ? 0 : record.batch_retry_count,
                                 std::move(*message), now));
        }
        result.dlq = true;
        consume();
        if (context.is_transaction && !released && is_leased) {
            release();
        }
    }
    if (memo != nullptr) {
        memo->write_cursor(pid, gid, record);
    } else {
        detail::encode_into(s.scratch, record);
        QUEEN_TRY(put_over(s, txn, s.tables.cursors, cursor_key.span(), s.scratch,
                           cursor_old ? std::optional<ByteSpan>(*cursor_old) : std::nullopt));
    }
    if (released) {
        // Released with nothing after the cursor: no candidate until a push marks it again.
        // Keeping it would leave one stale entry per ack, and once a drain of millions of
        // single-message partitions wrapped around, one pop walked them all in one apply
        // (seconds). Inside an atomic entry a rollback may restore the lease, so there it stays
        // a candidate (stale is safe: pop checks).
        if (!s.journal.is_active && record.consumed >= s.partitions[pid].last_sequence) {
            mark_idle(s, qid, gid, pid);
        } else {
            mark_ready(s, qid, gid, pid);
        }
        s.wakeups.push_back({q.name, result.partition});
    }
    result.success = true;
    result.lease_released = released ? LeaseReleased::yes : LeaseReleased::no;
    return result;
}

/// ack_item that looks the item's sequence up by its transaction id.
Result<AckItemResult> ack_item_by_id(State& s, store::WriteTxn& txn, const AckItem& item,
                                     TimestampMs now, AckContext& context) {
    QUEEN_TRY(auto raw_seq, txn.get(s.tables.transaction_ids,
                                    detail::txid_key(item.partition, item.transaction_id).span()));
    if (!raw_seq) {
        return ack_item(s, txn, item, 0, now, context, nullptr);
    }
    QUEEN_TRY(const std::uint64_t seq, detail::decode_u64(*raw_seq));
    return ack_item(s, txn, item, seq, now, context, nullptr);
}

// ------------------------------------------------------------------------------------------
// Atomic entries.

void begin_atomic(State& s) {
    QUEEN_ASSERT(!s.journal.is_active, "atomic entries do not nest");
    s.journal.reset();
    s.journal.is_active = true;
    s.journal.meta = s.meta;
    s.journal.partitions_size = s.partitions.size();
    s.journal.wakeups_size = s.wakeups.size();
}

void end_atomic(State& s) {
    QUEEN_ASSERT(s.journal.is_active, "end_atomic without begin_atomic");
    s.journal.is_active = false;  // the releases below go to the index now
    for (const auto& [lease_id, pid, gid] : s.journal.released_leases) {
        release_lease_index(s, lease_id, pid, gid);
    }
    s.journal.reset();
}

Result<void> rollback_atomic(State& s, store::WriteTxn& txn) {
    QUEEN_ASSERT(s.journal.is_active, "rollback_atomic without begin_atomic");
    detail::Journal& journal = s.journal;
    journal.is_active = false;
    // LMDB first (newest undo first); memory is restored even if LMDB fails (the caller then
    // aborts the txn and rebuilds anyway).
    auto restored = [&]() -> Result<void> {
        for (std::size_t i = journal.store_size; i-- > 0;) {
            const detail::Journal::StoreUndo& undo = journal.store[i];
            if (undo.has_old_value) {
                QUEEN_TRY(txn.put(undo.table, undo.key, undo.old_value));
            } else {
                QUEEN_TRY(txn.del(undo.table, undo.key));
            }
        }
        return {};
    }();
    s.meta = journal.meta;
    // LMDB's record may now be older than memory (a pop's counter the entry's save_meta wrote
    // and the undo took back): the batch's end writes it again.
    s.is_meta_dirty = true;
    for (auto it = journal.partitions.rbegin(); it != journal.partitions.rend(); ++it) {
        s.partitions[it->first] = it->second;
    }
    s.partitions.resize(journal.partitions_size);
    for (const auto& [qid, counts] : journal.queue_counts) {
        if (auto q = s.queues.find(qid); q != s.queues.end()) {
            q->second.message_count = counts.first;
            q->second.partition_count = counts.second;
        }
    }
    for (const std::uint32_t qid : journal.created_queues) {
        if (auto q = s.queues.find(qid); q != s.queues.end()) {
            s.queue_ids.erase(q->second.name);
            s.queues.erase(q);
        }
    }
    for (const auto& name : journal.created_groups) {
        s.group_ids.erase(name);
    }
    s.wakeups.resize(journal.wakeups_size);
    s.dirty_partitions.clear();
    // Partition and queue ids the entry created are free again: another name may get them.
    s.partition_cache.clear();
    journal.reset();
    return restored;
}

// ------------------------------------------------------------------------------------------
// Deletion helpers (never inside an atomic entry).

/// Deletes every key of `table` that starts with `prefix`; returns how many.
Result<std::uint64_t> delete_prefix(State& s, store::WriteTxn& txn, store::Table table,
                                    ByteSpan prefix) {
    QUEEN_ASSERT(!s.journal.is_active, "bulk deletes are not journaled");
    std::uint64_t count = 0;
    QUEEN_TRY(auto cursor, txn.cursor(table));
    QUEEN_TRY(auto entry, cursor.seek(prefix));
    while (entry && detail::has_prefix(entry->key, prefix)) {
        QUEEN_TRY(cursor.del());
        ++count;
        QUEEN_TRY(entry, cursor.next());  // after del(): the entry that followed it
    }
    return count;
}

/// Deletes the oldest messages of `pid` while `keep(seq, created_ms)` is false, at most
/// `budget`; returns how many were deleted.
template <class Keep>
Result<std::uint64_t> delete_oldest(State& s, store::WriteTxn& txn, std::uint64_t pid,
                                    std::uint64_t budget, Keep keep) {
    PartitionMem& mem = s.partitions[pid];
    std::uint64_t deleted = 0;
    if (mem.message_count == 0 || budget == 0) {
        return deleted;
    }
    QUEEN_ASSERT(!s.journal.is_active, "message deletes are not journaled");
    QUEEN_TRY(auto scan,
              detail::MessageScan::open(txn, s.tables.messages, pid, mem.first_sequence));
    std::vector<std::pair<std::uint64_t, std::string>> doomed;
    std::vector<std::uint64_t> doomed_sequences;
    QUEEN_TRY(auto stored, scan.next());
    while (stored && doomed.size() < budget) {
        QUEEN_TRY(auto message, detail::decode_message(stored->record));
        if (keep(stored->sequence, message.created_at.value())) {
            break;
        }
        doomed.emplace_back(stored->sequence, std::move(message.transaction_id));
        doomed_sequences.push_back(stored->sequence);
        QUEEN_TRY(stored, scan.next());
    }
    if (doomed.empty()) {
        return deleted;
    }
    PartitionMem& changed = touch_partition(s, pid);
    QUEEN_TRY(detail::erase_messages(txn, s.tables.messages, pid, doomed_sequences, s.scratch));
    for (const auto& [seq, txid] : doomed) {
        QUEEN_TRY(
            txn.del(s.tables.transaction_ids, detail::txid_key(PartitionId{pid}, txid).span()));
        QUEEN_TRY(delete_prefix(s, txn, s.tables.traces,
                                detail::message_key(PartitionId{pid}, seq).span()));
        ++deleted;
    }
    changed.message_count -= deleted;
    changed.first_sequence = doomed.back().first + 1;
    if (changed.message_count > 0) {
        // The next stored message (holes from single deletes are skipped).
        QUEEN_TRY(changed.first_sequence, next_live_sequence(s, txn, pid, changed.first_sequence));
    } else {
        changed.first_sequence = changed.last_sequence + 1;
    }
    s.queues.at(changed.queue.value()).message_count -= deleted;
    return deleted;
}

}  // namespace

// ==========================================================================================

Result<void> Options::validate() const {
    const auto check = [](std::size_t value, std::size_t max, const char* name) -> Result<void> {
        if (value == 0 || value > max) {
            return Error{queen::Errc::invalid_argument, std::string("queues options: ") + name +
                                                            " = " + std::to_string(value) +
                                                            " (1.." + std::to_string(max) + ")"};
        }
        return {};
    };
    // Keys are name + 8 or 4 bytes of ids, and LMDB keys hold 511 bytes.
    QUEEN_TRY(check(queue_name_bytes_max, 500, "queue_name_bytes_max"));
    QUEEN_TRY(check(partition_name_bytes_max, 500, "partition_name_bytes_max"));
    QUEEN_TRY(check(transaction_id_bytes_max, 500, "transaction_id_bytes_max"));
    QUEEN_TRY(check(group_name_bytes_max, 500, "group_name_bytes_max"));
    QUEEN_TRY(check(pop_batch_max, 1'000'000, "pop_batch_max"));
    QUEEN_TRY(check(pop_partitions_max, 1'000'000, "pop_partitions_max"));
    return {};
}

QueueState::QueueState(std::unique_ptr<detail::State> state) noexcept : state_(std::move(state)) {}
QueueState::QueueState(QueueState&&) noexcept = default;
QueueState& QueueState::operator=(QueueState&&) noexcept = default;
QueueState::~QueueState() = default;

const Tables& QueueState::tables() const noexcept {
    return state_->tables;
}

Result<QueueState> QueueState::open(store::Env& env, const Options& options) {
    QUEEN_TRY(options.validate());
    auto state = std::make_unique<detail::State>();
    state->options = options;
    Tables& t = state->tables;
    const std::pair<store::Table*, const char*> names[] = {
        {&t.meta, "q.meta"},
        {&t.queues, "q.queues"},
        {&t.queue_names, "q.queue_names"},
        {&t.partitions, "q.partitions"},
        {&t.partition_names, "q.partition_names"},
        {&t.messages, "q.messages"},
        {&t.transaction_ids, "q.txids"},
        {&t.groups, "q.groups"},
        {&t.group_names, "q.group_names"},
        {&t.cursors, "q.cursors"},
        {&t.group_queues, "q.group_queues"},
        {&t.subscriptions, "q.subscriptions"},
        {&t.dlq, "q.dlq"},
        {&t.buffer, "q.buffer"},
        {&t.traces, "q.traces"},
    };
    for (const auto& [table, name] : names) {
        // open_table may report map_full after growing the map: try again once grown.
        for (int attempt = 0;; ++attempt) {
            auto opened = env.open_table(name);
            if (opened) {
                *table = *opened;
                break;
            }
            if (!opened.error().is(store::Errc::map_full) || attempt > 8) {
                return std::move(opened).error();
            }
        }
    }
    QueueState queues(std::move(state));
    QUEEN_TRY(auto txn, env.begin_read());
    QUEEN_TRY(queues.rebuild(txn));
    return queues;
}

Result<void> QueueState::rebuild(const store::Txn& txn) {
    State& s = *state_;
    const Tables tables = s.tables;
    const Options options = s.options;
    s = State{};
    s.tables = tables;
    s.options = options;
    QUEEN_TRY(auto meta, detail::get_record(txn, s.tables.meta, as_bytes(meta_state_key),
                                            detail::decode_meta));
    s.meta = meta.value_or(detail::MetaRecord{});
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.queues));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            store::KeyReader key(entry->key);
            const std::uint32_t qid = key.u32be();
            QUEEN_TRY(auto record, detail::decode_queue(entry->value));
            QueueMem mem;
            mem.name = record.name;
            mem.options = record.options;
            s.queue_ids.emplace(record.name, qid);
            s.queues.emplace(qid, std::move(mem));
            QUEEN_TRY(entry, cursor.next());
        }
    }
    s.partitions.assign(s.meta.next_partition_id, PartitionMem{});
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.partitions));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            store::KeyReader key(entry->key);
            const std::uint64_t pid = key.u64be();
            QUEEN_TRY(auto record, detail::decode_partition(entry->value));
            if (pid >= s.partitions.size() || !s.queues.contains(record.queue.value())) {
                return Error{queen::Errc::corruption,
                             "queues: partition " + std::to_string(pid) + " out of place"};
            }
            s.partitions[pid] = PartitionMem{record.queue,
                                             0,
                                             record.first_sequence,
                                             record.last_sequence,
                                             record.last_created_at.value(),
                                             record.message_count};
            QueueMem& q = s.queues.at(record.queue.value());
            q.partition_count++;
            q.message_count += record.message_count;
            QUEEN_TRY(entry, cursor.next());
        }
    }
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.groups));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            QUEEN_TRY(auto gid, detail::decode_u64(entry->value));
            s.group_ids.emplace(std::string(detail::name_from_key(entry->key)),
                                static_cast<std::uint32_t>(gid));
            QUEEN_TRY(entry, cursor.next());
        }
    }
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.subscriptions));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            store::KeyReader key(entry->key);
            const std::uint32_t gid = key.u32be();
            const std::uint32_t qid = key.u32be();
            const std::uint64_t pid = key.u64be();
            QUEEN_TRY(auto record, detail::decode_subscription(entry->value));
            s.subscriptions.emplace(std::make_tuple(gid, qid, pid), record);
            QUEEN_TRY(entry, cursor.next());
        }
    }
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.group_queues));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            store::KeyReader key(entry->key);
            const std::uint32_t qid = key.u32be();
            const std::uint32_t gid = key.u32be();
            QUEEN_TRY(auto record, detail::decode_group_queue(entry->value));
            auto q = s.queues.find(qid);
            if (q != s.queues.end()) {
                GroupCandidates& gc = q->second.groups[gid];
                gc.round_robin_position = record.round_robin_position;
            }
            QUEEN_TRY(entry, cursor.next());
        }
    }
    // Seed candidates: every partition with messages for every group of its queue; the cursor
    // pass below then drops consumed ones and defers leased ones.
    for (std::uint64_t pid = 1; pid < s.partitions.size(); ++pid) {
        const PartitionMem& mem = s.partitions[pid];
        if (mem.queue.value() == 0 || mem.message_count == 0) {
            continue;
        }
        for (auto& [gid, gc] : s.queues.at(mem.queue.value()).groups) {
            gc.ready.insert(pid);
        }
    }
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.cursors));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            store::KeyReader key(entry->key);
            const std::uint64_t pid = key.u64be();
            const std::uint32_t gid = key.u32be();
            QUEEN_TRY(auto record, detail::decode_cursor(entry->value));
            if (pid < s.partitions.size() && s.partitions[pid].queue.value() != 0) {
                const PartitionMem& mem = s.partitions[pid];
                if (record.lease_id != 0) {
                    s.leases[record.lease_id].emplace_back(pid, gid);
                }
                auto& groups = s.queues.at(mem.queue.value()).groups;
                if (auto g = groups.find(gid); g != groups.end()) {
                    if (record.lease_id != 0) {
                        defer(g->second, pid, record.lease_expires_ms);
                    } else if (record.not_before_ms > 0 && record.consumed < mem.last_sequence) {
                        defer(g->second, pid, record.not_before_ms);
                    } else if (record.consumed >= mem.last_sequence) {
                        make_idle(g->second, pid);
                    }
                }
            }
            QUEEN_TRY(entry, cursor.next());
        }
    }
    return {};
}

// ------------------------------------------------------------------------------------------

Result<ConfigureResult> QueueState::apply(store::WriteTxn& txn, const ConfigureQueue& command,
                                          TimestampMs now) {
    // Pushes earlier in the batch leave pending message blocks: written before anything else.
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    ConfigureResult result;
    result.queue = command.queue;
    result.namespace_name = command.namespace_name;
    result.task = command.task;
    result.options = command.options;
    if (command.queue.size() > s.options.queue_name_bytes_max) {
        return Error{queen::Errc::invalid_argument,
                     "configure: queue name is longer than " +
                         std::to_string(s.options.queue_name_bytes_max) + " bytes"};
    }
    std::uint32_t qid = 0;
    if (auto found = find_queue(s, command.queue)) {
        qid = *found;
        const auto key = detail::queue_key(QueueId{qid});
        QUEEN_TRY(auto record,
                  detail::get_record(txn, s.tables.queues, key.span(), detail::decode_queue));
        QUEEN_ASSERT(record.has_value(), "queue in memory but not in LMDB: ", command.queue);
        record->namespace_name = command.namespace_name;
        record->task = command.task;
        record->options = command.options;
        QUEEN_TRY(put(s, txn, s.tables.queues, key.span(), detail::encode(*record)));
        s.queues.at(qid).options = command.options;
    } else {
        QUEEN_TRY(qid, create_queue(s, txn, command.queue, command.namespace_name, command.task,
                                    command.options, now));
    }
    std::uint64_t pid = 0;
    QUEEN_TRY(pid, get_or_create_partition(s, txn, qid, default_partition_name, now));
    // Options such as windowBuffer or leaseTime change who is deliverable when.
    for (auto& [gid, gc] : s.queues.at(qid).groups) {
        QUEEN_TRY(reseed_candidates(s, txn, qid, gid));
    }
    QUEEN_TRY(flush_partitions(s, txn));
    result.queue_id = QueueId{qid};
    result.default_partition = PartitionId{pid};
    return result;
}

Result<PushResult> QueueState::apply(store::WriteTxn& txn, const Push& command, TimestampMs now) {
    State& s = *state_;
    PushResult result;
    result.items.reserve(command.items.size());
    PushMemo memo;
    for (const auto& item : command.items) {
        QUEEN_TRY(push_item_into(s, txn, item, now, false, memo, result.items.emplace_back()));
    }
    // The messages stay in the pending blocks, which the next pushes of the batch may extend,
    // and the changed partitions' records wait for the batch's end too (flush_pending).
    return result;
}

Result<PopResult> QueueState::apply(store::WriteTxn& txn, const Pop& command, TimestampMs now) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    const std::int64_t now_ms = now.value();
    PopResult result;
    result.queue = command.queue;
    result.group = command.group;
    if (s.meta.pop_maintenance) {
        result.outcome = PopResult::Outcome::paused;
        return result;
    }
    if (command.group.empty() || command.group.size() > s.options.group_name_bytes_max) {
        return Error{queen::Errc::invalid_argument,
                     "pop: consumerGroup must be 1 to " +
                         std::to_string(s.options.group_name_bytes_max) + " bytes"};
    }
    const std::uint32_t batch =
        std::clamp<std::uint32_t>(command.batch, 1, s.options.pop_batch_max);
    const std::uint32_t partitions_max =
        command.has_partition
            ? 1
            : std::clamp<std::uint32_t>(command.partitions, 1, s.options.pop_partitions_max);
    const auto qid_found = find_queue(s, command.queue);
    if (!qid_found) {
        return result;
    }
    const std::uint32_t qid = *qid_found;
    std::optional<std::uint64_t> only_pid;
    if (command.has_partition) {
        QUEEN_TRY(only_pid, find_partition(s, txn, qid, command.partition));
        if (!only_pid) {
            return result;
        }
    }
    std::uint32_t gid = 0;
    QUEEN_TRY(gid, get_or_create_group(s, txn, command.group));
    bool created = false;
    GroupCandidates* gc = nullptr;
    QUEEN_TRY(gc, group_candidates(s, txn, qid, gid, now, created));
    // Subscription start of a brand-new named group (spec 5.8).
    const bool wants_start = command.subscription_from != SubscriptionFrom::none ||
                             command.subscription_mode == SubscriptionMode::new_only;
    if (command.group != queue_mode_group && wants_start) {
        const std::uint64_t scope = only_pid.value_or(0);
        bool is_new = created && find_subscription(s, gid, qid, scope) == nullptr;
        if (only_pid && !created && find_subscription(s, gid, qid, *only_pid) == nullptr) {
            QUEEN_TRY(auto cursor, read_cursor(s, txn, *only_pid, gid));
            is_new = !cursor.has_value();
        }
        if (is_new) {
            detail::SubscriptionRecord sub;
            sub.created_at = now;
            if (command.subscription_from == SubscriptionFrom::timestamp) {
                sub.mode = SubscriptionMode::all;
                sub.timestamp = command.subscription_from_ms;
            } else {
                sub.mode = SubscriptionMode::new_only;
                sub.timestamp = now;
            }
            QUEEN_TRY(
                put(s, txn, s.tables.subscriptions,
                    detail::subscription_key(GroupId{gid}, QueueId{qid}, PartitionId{scope}).span(),
                    detail::encode(sub)));
            s.subscriptions[{gid, qid, scope}] = sub;
            if (sub.mode == SubscriptionMode::new_only) {
                // "From now" means after every message already in the log, including ones
                // stamped with this same millisecond: bootstrap a cursor at the current tail of
                // every existing partition (spec 5.8). Later partitions start at their head.
                std::vector<std::uint64_t> pids;
                if (only_pid) {
                    pids.push_back(*only_pid);
                } else {
                    QUEEN_TRY(pids, queue_partitions(s, txn, qid));
                }
                for (const std::uint64_t pid : pids) {
                    const PartitionMem& mem = s.partitions[pid];
                    if (mem.last_sequence == 0) {
                        continue;
                    }
                    QUEEN_TRY(auto cursor, read_cursor(s, txn, pid, gid));
                    if (!cursor) {
                        CursorRecord record;
                        record.consumed = mem.last_sequence;
                        QUEEN_TRY(write_cursor(s, txn, pid, gid, record));
                    }
                }
            }
        }
    }
    std::uint64_t lease = 0;
    std::uint32_t budget = batch;
    auto claim = [&](std::uint64_t pid) -> Result<bool> {
        QUEEN_TRY(auto take, take_partition(s, txn, qid, gid, *gc, pid, now_ms, budget, lease,
                                            command.auto_ack));
        if (take.messages.empty()) {
            return false;
        }
        budget -= static_cast<std::uint32_t>(take.messages.size());
        result.partitions_claimed++;
        if (result.messages.empty()) {
            result.messages = std::move(take.messages);
        } else {
            for (auto& message : take.messages) {
                result.messages.push_back(std::move(message));
            }
        }
        return true;
    };
    if (only_pid) {
        QUEEN_TRY(claim(*only_pid));
    } else {
        promote_due(*gc, now_ms);
        const std::uint64_t start = gc->round_robin_position;
        std::uint64_t position = start;
        std::uint64_t last_claimed = 0;
        bool wrapped = false;
        while (budget > 0 && result.partitions_claimed < partitions_max) {
            auto it = gc->ready.upper_bound(position);
            if (wrapped && (it == gc->ready.end() || *it > start)) {
                break;
            }
            if (it == gc->ready.end()) {
                if (wrapped) {
                    break;
                }
                wrapped = true;
                position = 0;
                continue;
            }
            const std::uint64_t pid = *it;
            position = pid;
            QUEEN_TRY(const bool claimed, claim(pid));
            if (claimed) {
                last_claimed = pid;
            }
        }
        if (last_claimed != 0 && last_claimed != gc->round_robin_position) {
            gc->round_robin_position = last_claimed;
            const auto key = detail::group_queue_key(QueueId{qid}, GroupId{gid});
            QUEEN_TRY(auto record, detail::get_record(txn, s.tables.group_queues, key.span(),
                                                      detail::decode_group_queue));
            detail::GroupQueueRecord updated = record.value_or(detail::GroupQueueRecord{0, now});
            updated.round_robin_position = last_claimed;
            QUEEN_TRY(put(s, txn, s.tables.group_queues, key.span(), detail::encode(updated)));
        }
    }
    if (!result.messages.empty()) {
        result.outcome = PopResult::Outcome::delivered;
        result.lease = LeaseId{lease};
        if (lease != 0) {
            result.lease_expires_at = TimestampMs{now_ms + lease_ms(s.queues.at(qid).options)};
        }
    }
    return result;
}

Result<AckResult> QueueState::apply(store::WriteTxn& txn, const Ack& command, TimestampMs now) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    AckResult result;
    // Acks of one request apply in message order per partition (spec 4.5); the results keep
    // the request's order.
    std::vector<std::size_t> order(command.items.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        order[i] = i;
    }
    // The sequences, looked up through one cursor: the ids of one popped batch sit side by side
    // in q.txids, so most lookups stay in the leaf of the one before instead of descending from
    // the root (LMDB checks the cursor's leaf first).
    std::vector<std::uint64_t> sequences(command.items.size(), UINT64_MAX);
    {
        QUEEN_TRY(auto ids, txn.cursor(s.tables.transaction_ids));
        for (std::size_t i = 0; i < command.items.size(); ++i) {
            const auto& item = command.items[i];
            QUEEN_TRY(auto found,
                      ids.find(detail::txid_key(item.partition, item.transaction_id).span()));
            if (found) {
                QUEEN_TRY(sequences[i], detail::decode_u64(found->value));
            }
        }
    }
    const auto before = [&](std::size_t a, std::size_t b) {
        const auto& x = command.items[a];
        const auto& y = command.items[b];
        return std::tie(x.partition, x.group, sequences[a]) <
               std::tie(y.partition, y.group, sequences[b]);
    };
    // Acks of one popped batch usually come in its order already.
    if (!std::is_sorted(order.begin(), order.end(), before)) {
        std::stable_sort(order.begin(), order.end(), before);
    }
    result.items.resize(command.items.size());
    AckMemo memo;
    for (const std::size_t i : order) {
        AckContext context;
        const std::uint64_t seq = sequences[i] == UINT64_MAX ? 0 : sequences[i];
        QUEEN_TRY(result.items[i], ack_item(s, txn, command.items[i], seq, now, context, &memo));
    }
    QUEEN_TRY(memo.flush(s, txn));
    QUEEN_TRY(flush_partitions(s, txn));
    return result;
}

Result<ExtendLeaseResult> QueueState::apply(store::WriteTxn& txn, const ExtendLease& command,
                                            TimestampMs now) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    const std::int64_t now_ms = now.value();
    ExtendLeaseResult result;
    result.lease = command.lease;
    auto it = s.leases.find(command.lease.value());
    if (command.lease.value() == 0 || it == s.leases.end()) {
        result.error = "Lease not found";
        return result;
    }
    const std::int64_t wanted_ms = now_ms + std::max<std::int64_t>(command.seconds, 0) * 1000;
    bool any_active = false;
    bool any_held = false;
    std::int64_t expires_ms = 0;
    const auto pairs = it->second;  // copy: the loop may not change the map, but stay safe
    for (const auto& [pid, gid] : pairs) {
        QUEEN_TRY(auto cursor, read_cursor(s, txn, pid, gid));
        if (!cursor || cursor->lease_id != command.lease.value()) {
            continue;
        }
        any_held = true;
        if (!cursor->is_leased(now_ms)) {
            continue;
        }
        any_active = true;
        cursor->lease_expires_ms = std::max(cursor->lease_expires_ms, wanted_ms);
        expires_ms = std::max(expires_ms, cursor->lease_expires_ms);
        QUEEN_TRY(write_cursor(s, txn, pid, gid, *cursor));
        auto& groups = s.queues.at(s.partitions[pid].queue.value()).groups;
        if (auto g = groups.find(gid); g != groups.end()) {
            defer(g->second, pid, cursor->lease_expires_ms);
        }
    }
    if (!any_held) {
        result.error = "Lease not found";
    } else if (!any_active) {
        result.error = "Lease already expired";
    } else {
        result.success = true;
        result.expires_at = TimestampMs{expires_ms};
    }
    return result;
}

Result<TransactionResult> QueueState::apply(store::WriteTxn& txn, const Transaction& command,
                                            TimestampMs now) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    TransactionResult result;
    if (command.ops.empty()) {
        result.error = "operations array cannot be empty";
        return result;
    }
    begin_atomic(s);
    std::string failure;
    PushMemo memo;
    for (const auto& op : command.ops) {
        TransactionOpResult one;
        one.kind = op.kind;
        if (op.kind == TransactionOp::Kind::push) {
            auto pushed = push_item(s, txn, op.push, now, true, memo);
            if (!pushed) {
                (void)rollback_atomic(s, txn);
                return std::move(pushed).error();
            }
            one.transaction_id = op.push.transaction_id;
            one.queue = op.push.queue;
            one.message_id = pushed->message_id;
            if (pushed->status == PushStatus::queued) {
                one.success = true;
            } else if (pushed->status == PushStatus::duplicate) {
                failure = "Duplicate transactionId '" + op.push.transaction_id +
                          "' in partition '" + op.push.partition + "' of queue '" + op.push.queue +
                          "'";
            } else {
                failure = pushed->error;
            }
        } else {
            AckContext context;
            context.is_transaction = true;
            auto acked = ack_item_by_id(s, txn, op.ack, now, context);
            if (!acked) {
                (void)rollback_atomic(s, txn);
                return std::move(acked).error();
            }
            one.transaction_id = op.ack.transaction_id;
            one.success = acked->success;
            one.dlq = acked->dlq;
            one.error = acked->error;
            if (!acked->success) {
                failure = context.failure.empty() ? "Ack failed" : context.failure;
            }
        }
        if (!failure.empty()) {
            break;
        }
        result.results.push_back(std::move(one));
    }
    if (!failure.empty()) {
        QUEEN_TRY(rollback_atomic(s, txn));
        result.success = false;
        result.error = std::move(failure);
        return result;
    }
    auto flushed = flush_partitions(s, txn);
    if (!flushed) {
        (void)rollback_atomic(s, txn);
        return std::move(flushed).error();
    }
    end_atomic(s);
    result.success = true;
    return result;
}

Result<DeleteQueueResult> QueueState::apply(store::WriteTxn& txn, const DeleteQueue& command,
                                            TimestampMs /*now*/) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    DeleteQueueResult result;
    const auto found = find_queue(s, command.queue);
    if (!found) {
        return result;
    }
    result.existed = true;
    const std::uint32_t qid = *found;
    QUEEN_TRY(auto pids, queue_partitions(s, txn, qid));
    for (const std::uint64_t pid : pids) {
        const auto prefix = detail::partition_key(PartitionId{pid});
        QUEEN_TRY(delete_prefix(s, txn, s.tables.messages, prefix.span()));
        QUEEN_TRY(delete_prefix(s, txn, s.tables.transaction_ids, prefix.span()));
        QUEEN_TRY(delete_prefix(s, txn, s.tables.traces, prefix.span()));
        QUEEN_TRY(delete_prefix(s, txn, s.tables.cursors, prefix.span()));
        QUEEN_TRY(txn.del(s.tables.partitions, prefix.span()));
        s.partitions[pid] = PartitionMem{};
        s.dirty_partitions.erase(pid);
    }
    QUEEN_TRY(
        delete_prefix(s, txn, s.tables.partition_names, detail::queue_key(QueueId{qid}).span()));
    QUEEN_TRY(delete_prefix(s, txn, s.tables.group_queues, detail::queue_key(QueueId{qid}).span()));
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.dlq));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            QUEEN_TRY(auto record, detail::decode_dlq(entry->value));
            if (record.queue.value() == qid) {
                QUEEN_TRY(cursor.del());
                QUEEN_TRY(entry, cursor.next());  // after del(): the entry that followed it
                continue;
            }
            QUEEN_TRY(entry, cursor.next());
        }
    }
    QUEEN_TRY(txn.del(s.tables.queues, detail::queue_key(QueueId{qid}).span()));
    QUEEN_TRY(txn.del(s.tables.queue_names, detail::name_key(command.queue).span()));
    // Lease index entries of the deleted partitions go stale; drop them.
    for (auto it = s.leases.begin(); it != s.leases.end();) {
        auto& pairs = it->second;
        pairs.erase(std::remove_if(pairs.begin(), pairs.end(),
                                   [&](const auto& pair) {
                                       return s.partitions[pair.first].queue.value() == 0;
                                   }),
                    pairs.end());
        it = pairs.empty() ? s.leases.erase(it) : std::next(it);
    }
    s.queue_ids.erase(command.queue);
    s.queues.erase(qid);
    s.partition_cache.clear();
    return result;
}

Result<DeleteGroupResult> QueueState::apply(store::WriteTxn& txn, const DeleteGroup& command,
                                            TimestampMs /*now*/) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    DeleteGroupResult result;
    auto g = s.group_ids.find(command.group);
    if (g == s.group_ids.end()) {
        result.metadata_deleted = command.delete_metadata;
        return result;
    }
    const std::uint32_t gid = g->second;
    std::vector<std::uint32_t> qids;
    if (command.queue.empty()) {
        for (const auto& [qid, q] : s.queues) {
            qids.push_back(qid);
        }
    } else if (auto found = find_queue(s, command.queue)) {
        qids.push_back(*found);
    }
    for (const std::uint32_t qid : qids) {
        QUEEN_TRY(auto pids, queue_partitions(s, txn, qid));
        for (const std::uint64_t pid : pids) {
            const auto key = detail::cursor_key(PartitionId{pid}, GroupId{gid});
            QUEEN_TRY(auto cursor, read_cursor(s, txn, pid, gid));
            if (cursor) {
                release_lease_index(s, cursor->lease_id, pid, gid);
                QUEEN_TRY(txn.del(s.tables.cursors, key.span()));
                result.deleted_partitions++;
            }
        }
        QUEEN_TRY(txn.del(s.tables.group_queues,
                          detail::group_queue_key(QueueId{qid}, GroupId{gid}).span()));
        s.queues.at(qid).groups.erase(gid);
        s.wakeups.push_back({s.queues.at(qid).name, std::string()});
    }
    if (command.delete_metadata) {
        for (auto it = s.subscriptions.begin(); it != s.subscriptions.end();) {
            const auto [sub_gid, sub_qid, sub_pid] = it->first;
            const bool matches = sub_gid == gid && (command.queue.empty() ||
                                                    (!qids.empty() && sub_qid == qids.front()));
            if (matches) {
                QUEEN_TRY(txn.del(s.tables.subscriptions,
                                  detail::subscription_key(GroupId{sub_gid}, QueueId{sub_qid},
                                                           PartitionId{sub_pid})
                                      .span()));
                it = s.subscriptions.erase(it);
            } else {
                ++it;
            }
        }
    }
    result.metadata_deleted = command.delete_metadata;
    return result;
}

Result<UpdateSubscriptionResult> QueueState::apply(store::WriteTxn& txn,
                                                   const UpdateSubscription& command,
                                                   TimestampMs /*now*/) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    UpdateSubscriptionResult result;
    auto g = s.group_ids.find(command.group);
    if (g == s.group_ids.end()) {
        return result;
    }
    const std::uint32_t gid = g->second;
    std::set<std::uint32_t> touched;
    for (auto& [key, sub] : s.subscriptions) {
        const auto [sub_gid, sub_qid, sub_pid] = key;
        if (sub_gid != gid) {
            continue;
        }
        sub.timestamp = command.timestamp;
        QUEEN_TRY(
            put(s, txn, s.tables.subscriptions,
                detail::subscription_key(GroupId{sub_gid}, QueueId{sub_qid}, PartitionId{sub_pid})
                    .span(),
                detail::encode(sub)));
        touched.insert(sub_qid);
        result.rows_updated++;
    }
    for (const std::uint32_t qid : touched) {
        QUEEN_TRY(reseed_candidates(s, txn, qid, gid));
    }
    return result;
}

Result<SeekGroupResult> QueueState::apply(store::WriteTxn& txn, const SeekGroup& command,
                                          TimestampMs /*now*/) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    SeekGroupResult result;
    auto g = s.group_ids.find(command.group);
    const auto found = find_queue(s, command.queue);
    if (g == s.group_ids.end() || !found) {
        return result;
    }
    const std::uint32_t gid = g->second;
    const std::uint32_t qid = *found;
    QUEEN_TRY(auto pids, queue_partitions(s, txn, qid));
    for (const std::uint64_t pid : pids) {
        QUEEN_TRY(auto cursor, read_cursor(s, txn, pid, gid));
        if (!cursor) {
            continue;
        }
        const PartitionMem& mem = s.partitions[pid];
        release_lease_index(s, cursor->lease_id, pid, gid);
        cursor->lease_id = 0;
        cursor->lease_expires_ms = 0;
        cursor->not_before_ms = 0;
        cursor->acked_count = 0;
        cursor->batch_size = 0;
        result.partitions_updated++;
        if (command.to_end) {
            cursor->consumed = mem.last_sequence;
        } else {
            // The newest message created at or before the timestamp; none = nothing consumed.
            QUEEN_TRY(auto after, first_sequence_from(s, txn, pid, mem.first_sequence,
                                                      command.timestamp.value() + 1));
            if (after <= mem.first_sequence) {
                QUEEN_TRY(txn.del(s.tables.cursors,
                                  detail::cursor_key(PartitionId{pid}, GroupId{gid}).span()));
                continue;
            }
            cursor->consumed = after - 1;
        }
        QUEEN_TRY(write_cursor(s, txn, pid, gid, *cursor));
    }
    QUEEN_TRY(reseed_candidates(s, txn, qid, gid));
    s.wakeups.push_back({command.queue, std::string()});
    return result;
}

Result<SeekPartitionResult> QueueState::apply(store::WriteTxn& txn, const SeekPartition& command,
                                              TimestampMs /*now*/) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    SeekPartitionResult result;
    const auto found = find_queue(s, command.queue);
    if (!found) {
        return result;
    }
    QUEEN_TRY(auto pid, find_partition(s, txn, *found, command.partition));
    if (!pid) {
        return result;
    }
    result.found = true;
    std::uint32_t gid = 0;
    QUEEN_TRY(gid, get_or_create_group(s, txn, command.group));
    QUEEN_TRY(auto cursor, read_cursor(s, txn, *pid, gid));
    CursorRecord record = cursor.value_or(CursorRecord{});
    release_lease_index(s, record.lease_id, *pid, gid);
    record.lease_id = 0;
    record.lease_expires_ms = 0;
    record.not_before_ms = 0;
    record.consumed = s.partitions[*pid].last_sequence;
    QUEEN_TRY(write_cursor(s, txn, *pid, gid, record));
    auto& groups = s.queues.at(*found).groups;
    if (auto gc = groups.find(gid); gc != groups.end()) {
        make_idle(gc->second, *pid);
    }
    result.updated = true;
    result.cursor = MessageId{PartitionId{*pid}, Sequence{record.consumed}};
    return result;
}

Result<MaintenanceResult> QueueState::apply(store::WriteTxn& txn, const SetMaintenance& command,
                                            TimestampMs now) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    MaintenanceResult result;
    if (command.mode == SetMaintenance::Mode::pop) {
        s.meta.pop_maintenance = command.enabled;
        if (!command.enabled) {
            for (const auto& [qid, q] : s.queues) {
                s.wakeups.push_back({q.name, std::string()});
            }
        }
    } else {
        const bool was_enabled = s.meta.push_maintenance;
        s.meta.push_maintenance = command.enabled;
        if (was_enabled && !command.enabled) {
            // Drain: every buffered push, in arrival order, deduplicated like any push.
            QUEEN_TRY(auto cursor, txn.cursor(s.tables.buffer));
            QUEEN_TRY(auto entry, cursor.first());
            std::vector<PushItem> items;
            while (entry) {
                QUEEN_TRY(auto item, detail::decode_push_item(entry->value));
                items.push_back(std::move(item));
                QUEEN_TRY(entry, cursor.next());
            }
            QUEEN_TRY(txn.clear(s.tables.buffer));
            PushMemo memo;
            for (const auto& item : items) {
                QUEEN_TRY(auto pushed, push_item(s, txn, item, now, false, memo));
                (void)pushed;
                result.drained_messages++;
            }
            QUEEN_TRY(flush_partitions(s, txn));
        }
    }
    QUEEN_TRY(save_meta(s, txn));
    result.push_enabled = s.meta.push_maintenance;
    result.pop_enabled = s.meta.pop_maintenance;
    QUEEN_TRY(auto stats, txn.stats(s.tables.buffer));
    result.buffered_messages = stats.entries;
    return result;
}

Result<SweepResult> QueueState::apply(store::WriteTxn& txn, const Sweep& command, TimestampMs now) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    const std::int64_t now_ms = now.value();
    SweepResult result;
    std::uint64_t budget = command.messages_max;
    std::vector<std::uint32_t> qids;
    for (const auto& [qid, q] : s.queues) {
        qids.push_back(qid);
    }
    for (const std::uint32_t qid : qids) {
        const QueueOptions options = s.queues.at(qid).options;
        const bool has_retention = options.retention_enabled && options.retention_s > 0;
        const bool has_completed = options.retention_enabled && options.completed_retention_s > 0;
        const bool has_ttl = options.ttl_s > 0;
        const bool has_max_wait = options.max_wait_time_s > 0;
        if (!has_retention && !has_completed && !has_ttl && !has_max_wait) {
            continue;
        }
        std::vector<std::uint32_t> gids;
        for (const auto& [gid, gc] : s.queues.at(qid).groups) {
            gids.push_back(gid);
        }
        QUEEN_TRY(auto pids, queue_partitions(s, txn, qid));
        for (const std::uint64_t pid : pids) {
            if (budget == 0) {
                result.is_complete = false;
                break;
            }
            auto run = [&](std::int64_t age_s, std::uint64_t max_seq,
                           std::uint64_t& counter) -> Result<void> {
                const std::int64_t cutoff = now_ms - age_s * 1000;
                QUEEN_TRY(auto n, delete_oldest(s, txn, pid, budget,
                                                [&](std::uint64_t seq, std::int64_t created) {
                                                    return seq > max_seq || created > cutoff;
                                                }));
                counter += n;
                budget -= n;
                return {};
            };
            if (has_retention) {
                QUEEN_TRY(run(options.retention_s, UINT64_MAX, result.retention_deleted));
            }
            if (has_max_wait) {
                QUEEN_TRY(run(options.max_wait_time_s, UINT64_MAX, result.evicted));
            }
            if (has_ttl) {
                QUEEN_TRY(run(options.ttl_s, UINT64_MAX, result.ttl_deleted));
            }
            if (has_completed) {
                // Only what every group with a cursor on the partition has passed.
                std::uint64_t min_consumed = UINT64_MAX;
                bool any = false;
                for (const std::uint32_t gid : gids) {
                    QUEEN_TRY(auto cursor, read_cursor(s, txn, pid, gid));
                    if (cursor) {
                        any = true;
                        min_consumed = std::min(min_consumed, cursor->consumed);
                    }
                }
                if (any) {
                    QUEEN_TRY(
                        run(options.completed_retention_s, min_consumed, result.completed_deleted));
                }
            }
        }
    }
    QUEEN_TRY(flush_partitions(s, txn));
    return result;
}

Result<DeleteMessageResult> QueueState::apply(store::WriteTxn& txn, const DeleteMessage& command,
                                              TimestampMs /*now*/) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    DeleteMessageResult result;
    const std::uint64_t pid = command.partition.value();
    if (pid == 0 || pid >= s.partitions.size() || s.partitions[pid].queue.value() == 0) {
        return result;
    }
    const auto txid = detail::txid_key(command.partition, command.transaction_id);
    QUEEN_TRY(auto raw, txn.get(s.tables.transaction_ids, txid.span()));
    if (!raw) {
        return result;
    }
    QUEEN_TRY(const std::uint64_t seq, detail::decode_u64(*raw));
    QUEEN_ASSERT(!s.journal.is_active, "message deletes are not journaled");
    QUEEN_TRY(txn.del(s.tables.transaction_ids, txid.span()));
    const std::uint64_t doomed[] = {seq};
    QUEEN_TRY(detail::erase_messages(txn, s.tables.messages, pid, doomed, s.scratch));
    QUEEN_TRY(
        delete_prefix(s, txn, s.tables.traces, detail::message_key(command.partition, seq).span()));
    PartitionMem& mem = touch_partition(s, pid);
    mem.message_count--;
    s.queues.at(mem.queue.value()).message_count--;
    if (mem.message_count == 0) {
        mem.first_sequence = mem.last_sequence + 1;
    } else if (seq == mem.first_sequence) {
        QUEEN_TRY(mem.first_sequence, next_live_sequence(s, txn, pid, seq));
        QUEEN_ASSERT(mem.first_sequence <= mem.last_sequence,
                     "message count says more messages follow");
    }
    QUEEN_TRY(flush_partitions(s, txn));
    result.found = true;
    return result;
}

Result<AddTraceResult> QueueState::apply(store::WriteTxn& txn, const AddTrace& command,
                                         TimestampMs now) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    AddTraceResult result;
    const std::uint64_t pid = command.partition.value();
    if (pid == 0 || pid >= s.partitions.size() || s.partitions[pid].queue.value() == 0) {
        return result;
    }
    QUEEN_TRY(auto raw,
              txn.get(s.tables.transaction_ids,
                      detail::txid_key(command.partition, command.transaction_id).span()));
    if (!raw) {
        return result;
    }
    QUEEN_TRY(const std::uint64_t seq, detail::decode_u64(*raw));
    if (command.group.empty() || command.group.size() > s.options.group_name_bytes_max) {
        return Error{queen::Errc::invalid_argument, "trace: bad consumerGroup length"};
    }
    std::uint32_t gid = 0;
    QUEEN_TRY(gid, get_or_create_group(s, txn, command.group));
    const std::uint64_t id = s.meta.next_trace_id++;
    QUEEN_TRY(save_meta(s, txn));
    detail::TraceRecord record{GroupId{gid}, command.event_type, command.names, command.data, now};
    QUEEN_TRY(put(s, txn, s.tables.traces, detail::trace_key(command.partition, seq, id).span(),
                  detail::encode(record)));
    result.found = true;
    result.trace_id = id;
    return result;
}

Result<void> QueueState::end_batch(store::WriteTxn& txn) {
    QUEEN_TRY(flush_pending(*state_, txn));
    if (state_->is_meta_dirty) {
        QUEEN_TRY(save_meta(*state_, txn));
    }
    return {};
}

std::vector<Wakeup> QueueState::take_wakeups() {
    std::vector<Wakeup> out = std::move(state_->wakeups);
    state_->wakeups.clear();
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::optional<TimestampMs> QueueState::next_due() const {
    std::optional<TimestampMs> due;
    for (const auto& [qid, q] : state_->queues) {
        for (const auto& [gid, gc] : q.groups) {
            if (!gc.deferred.empty()) {
                const TimestampMs t{gc.deferred.begin()->first};
                if (!due || t < *due) {
                    due = t;
                }
            }
        }
    }
    return due;
}

std::vector<std::string> QueueState::queues_due(TimestampMs now) const {
    std::vector<std::string> out;
    for (const auto& [qid, q] : state_->queues) {
        for (const auto& [gid, gc] : q.groups) {
            if (!gc.deferred.empty() && gc.deferred.begin()->first <= now.value()) {
                out.push_back(q.name);
                break;
            }
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

QueueState::IndexStats QueueState::index_stats() const {
    IndexStats stats;
    const State& s = *state_;
    stats.queues = s.queues.size();
    for (std::size_t pid = 0; pid < s.partitions.size(); ++pid) {
        stats.partitions += s.partitions[pid].queue.value() != 0 ? 1 : 0;
    }
    for (const auto& [qid, q] : s.queues) {
        for (const auto& [gid, gc] : q.groups) {
            stats.ready_entries += gc.ready.size();
            stats.deferred_entries += gc.deferred.size();
        }
    }
    stats.active_leases = s.leases.size();
    stats.partition_bytes = s.partitions.capacity() * sizeof(PartitionMem);
    return stats;
}

std::string QueueState::debug_dump_index() const {
    const State& s = *state_;
    std::ostringstream out;
    out << "meta " << s.meta.next_queue_id << ' ' << s.meta.next_partition_id << ' '
        << s.meta.next_group_id << ' ' << s.meta.next_lease_id << ' ' << s.meta.next_dlq_id << ' '
        << s.meta.push_maintenance << s.meta.pop_maintenance << '\n';
    for (const auto& [qid, q] : s.queues) {
        out << "queue " << qid << ' ' << q.name << " messages=" << q.message_count
            << " partitions=" << q.partition_count << '\n';
        for (const auto& [gid, gc] : q.groups) {
            out << "  group " << gid << " rr=" << gc.round_robin_position << '\n';
        }
    }
    for (std::size_t pid = 1; pid < s.partitions.size(); ++pid) {
        const auto& m = s.partitions[pid];
        if (m.queue.value() != 0) {
            out << "partition " << pid << " q=" << m.queue.value() << " [" << m.first_sequence
                << ',' << m.last_sequence << "] n=" << m.message_count
                << " last=" << m.last_created_ms << '\n';
        }
    }
    for (const auto& [key, sub] : s.subscriptions) {
        out << "sub " << std::get<0>(key) << ' ' << std::get<1>(key) << ' ' << std::get<2>(key)
            << ' ' << static_cast<int>(sub.mode) << ' ' << sub.timestamp.value() << '\n';
    }
    return out.str();
}

}  // namespace queen::queues
