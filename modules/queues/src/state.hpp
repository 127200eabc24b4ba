// queues/src/state.hpp — the private state of QueueState: table handles, the memory index and
// the undo journal of an atomic (transaction) entry.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "messages.hpp"
#include "queen/core/chunked_array.hpp"
#include "queen/queues/queues.hpp"
#include "queen/store/undo.hpp"
#include "records.hpp"

namespace queen::queues::detail {

/// One partition in memory: 48 bytes, indexed by partition id in a dense vector. Everything
/// else about a partition (name, creation time) stays in LMDB.
struct PartitionMem {
    QueueId queue;  ///< 0 = no such partition (never assigned or deleted)
    std::uint32_t unused = 0;
    Sequence first_sequence{1};
    Sequence last_sequence{0};
    std::int64_t last_created_ms = 0;
    std::uint64_t message_count = 0;
    std::uint64_t tail = 0;  ///< position of its newest block in q.blocks, 0 = none
};
static_assert(sizeof(PartitionMem) == 48, "PartitionMem grew: update docs/engine.md");

/// An ordered set of partition ids kept as 64-id bitmap words in a map keyed by id / 64: a
/// queue's partitions have near ids (ids are handed out in creation order), so 10,000 ready
/// partitions are ~160 map nodes, not 10,000. Every push marks its partitions ready: a
/// std::set<PartitionId> of 10,000 spent 5 % of the applier's time there (issue 26).
class PartitionSet {
public:
    /// Adds `pid`; false when it was there already.
    bool insert(PartitionId pid) {
        std::uint64_t& word = words_[pid.value() >> 6];
        const std::uint64_t bit = std::uint64_t{1} << (pid.value() & 63);
        if ((word & bit) != 0) {
            return false;
        }
        word |= bit;
        ++size_;
        return true;
    }

    /// Removes `pid`; false when it was not there.
    bool erase(PartitionId pid) {
        auto it = words_.find(pid.value() >> 6);
        const std::uint64_t bit = std::uint64_t{1} << (pid.value() & 63);
        if (it == words_.end() || (it->second & bit) == 0) {
            return false;
        }
        it->second &= ~bit;
        --size_;
        if (it->second == 0) {
            words_.erase(it);
        }
        return true;
    }

    [[nodiscard]] bool contains(PartitionId pid) const {
        auto it = words_.find(pid.value() >> 6);
        return it != words_.end() && (it->second >> (pid.value() & 63) & 1) != 0;
    }

    /// The smallest id greater than `pid`, if any.
    [[nodiscard]] std::optional<PartitionId> next_after(PartitionId pid) const {
        if (pid.value() == UINT64_MAX) {
            return std::nullopt;
        }
        const std::uint64_t from = pid.value() + 1;
        auto it = words_.lower_bound(from >> 6);
        if (it != words_.end() && it->first == from >> 6) {
            const std::uint64_t rest = it->second & (~std::uint64_t{0} << (from & 63));
            if (rest != 0) {
                return PartitionId{(it->first << 6) |
                                   static_cast<std::uint64_t>(std::countr_zero(rest))};
            }
            ++it;
        }
        if (it == words_.end()) {
            return std::nullopt;
        }
        return PartitionId{(it->first << 6) |
                           static_cast<std::uint64_t>(std::countr_zero(it->second))};
    }

    [[nodiscard]] std::size_t size() const { return size_; }
    [[nodiscard]] bool empty() const { return size_ == 0; }

private:
    std::map<std::uint64_t, std::uint64_t> words_;  ///< id / 64 -> bit (id % 64), never 0
    std::size_t size_ = 0;
};

/// Candidate partitions of one (queue, group). Invariant: every partition that is deliverable
/// to the group at time t is in `ready` or in `deferred` with a due time <= t. Entries may be
/// stale (not deliverable): pop checks against LMDB and moves them. Pop order is a function of
/// LMDB state only (smallest deliverable id after round_robin_position, wrapping), so replicas
/// and restarts choose the same partitions whatever the cache holds.
/// Every deferred (due ms, queue, group, partition) of the tenant, in due order: next_due()
/// and queues_due() read it in O(log n) instead of walking every queue and group (a tenant
/// of 5,000 queues spent a third of its CPU there). The candidate functions (candidates.cpp)
/// keep it; a queue or group erased whole leaves its entries behind, which next_due() drops
/// when it meets them.
using DueIndex = std::set<std::tuple<std::int64_t, QueueId, GroupId, PartitionId>>;

struct GroupCandidates {
    PartitionId round_robin_position;
    PartitionSet ready;
    std::set<std::pair<std::int64_t, PartitionId>> deferred;     ///< (due ms, partition)
    std::unordered_map<PartitionId, std::int64_t> deferred_due;  ///< lookup only
    /// The tenant's index of deferred partitions and this (queue, group)'s place in it: set by
    /// whoever creates the candidates (null: not indexed, for tests of these functions alone).
    DueIndex* due_index = nullptr;
    QueueId queue{0};
    GroupId group{0};
};

struct QueueMem {
    std::string name;
    std::string namespace_name;  ///< what namespace/task pops match (as in the queue record)
    std::string task;
    QueueOptions options;
    std::uint64_t message_count = 0;
    std::uint64_t partition_count = 0;
    std::map<GroupId, GroupCandidates> groups;
};

/// The immutable part of a partition's LMDB record (what PartitionMem does not mirror).
struct PartitionInfo {
    QueueId queue;
    std::string name;
    TimestampMs created_at{0};
};

/// Transparent string hash: the name maps are searched with string_views (no temporary
/// std::string per lookup).
struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const noexcept {
        return std::hash<std::string_view>{}(name);
    }
};
template <class Id>
using NameIds = std::unordered_map<std::string, Id, NameHash, std::equal_to<>>;

/// A bounded cache of LMDB facts that never change while a partition id means the same
/// partition: its PartitionInfo by id, and its id by (queue, name). It spares the pop, ack and
/// push paths a B-tree read of the partition record or of the name index per command, and the
/// partition flush the read before its write. It holds exactly what LMDB holds, so no decision
/// depends on whether an entry is present. clear() whenever an id may stop meaning what it
/// meant (a deleted queue, a rolled-back entry that created partitions; rebuild starts empty);
/// it also clears itself when entries_max is reached (memory stays bounded whatever the number
/// of partitions).
class PartitionCache {
public:
    static constexpr std::size_t entries_max = 65536;

    /// The info of partition `pid`, or nullptr when not cached.
    [[nodiscard]] const PartitionInfo* find(PartitionId pid) const {
        auto it = by_id_.find(pid);
        return it == by_id_.end() ? nullptr : &it->second;
    }
    /// The id of partition `name` of queue `qid`, or 0 when not cached.
    [[nodiscard]] PartitionId find(QueueId qid, std::string_view name) const {
        auto q = by_name_.find(qid);
        if (q == by_name_.end()) {
            return PartitionId{0};
        }
        auto it = q->second.find(name);
        return it == q->second.end() ? PartitionId{0} : it->second;
    }
    /// Caches what LMDB says of `pid` (both ways); returns the cached info.
    const PartitionInfo& add(PartitionId pid, PartitionInfo info) {
        const PartitionInfo& cached = add_info(pid, std::move(info));
        by_name_[cached.queue].insert_or_assign(cached.name, pid);
        return cached;
    }
    /// Caches what LMDB says of `pid` for lookups by id only: a pop or an ack that read the
    /// record does not index its name (a 1M-partition drain sees each partition once).
    const PartitionInfo& add_info(PartitionId pid, PartitionInfo info) {
        if (size_ >= entries_max) {
            clear();
        }
        auto [it, is_new] = by_id_.insert_or_assign(pid, std::move(info));
        if (is_new) {
            ++size_;
        }
        return it->second;
    }
    /// Caches that partition `name` of `qid` has id `pid` (the name index only).
    void add_name(QueueId qid, std::string_view name, PartitionId pid) {
        if (size_ >= entries_max) {
            clear();
        }
        auto& names = by_name_[qid];
        if (auto it = names.find(name); it != names.end()) {
            it->second = pid;
            return;
        }
        names.emplace(std::string(name), pid);
        ++size_;
    }
    void clear() noexcept {
        by_id_.clear();
        by_name_.clear();
        size_ = 0;
    }

private:
    std::unordered_map<PartitionId, PartitionInfo> by_id_;
    std::unordered_map<QueueId, NameIds<PartitionId>> by_name_;
    std::size_t size_ = 0;  ///< insertions since the last clear (bounds both maps)
};

/// Undo records of the entry being applied atomically. It lives as long as the State and is
/// reset() between entries, keeping its buffers: an entry's journal allocates nothing once the
/// earlier ones have grown it.
struct Journal {
    bool is_active = false;
    MetaRecord meta;
    std::uint32_t blocks_leaf_fill = 0;
    std::size_t partitions_size = 0;
    std::size_t wakeups_size = 0;
    std::vector<std::pair<PartitionId, PartitionMem>> partitions;  ///< first old value each
    std::set<PartitionId> partitions_saved;
    std::vector<QueueId> created_queues;
    std::vector<std::string> created_groups;
    std::map<QueueId, std::pair<std::uint64_t, std::uint64_t>> queue_counts;  ///< old
    /// The old values of the LMDB keys the entry wrote.
    store::UndoLog store;
    /// Lease index entries (lease, partition, group) the entry released: dropped from
    /// State::leases when it commits, kept when it rolls back.
    std::vector<std::tuple<LeaseId, PartitionId, GroupId>> released_leases;

    /// Records that `key` of `table` held `old` (std::nullopt: absent) before the entry wrote it.
    void record(store::Table table, ByteSpan key, std::optional<ByteSpan> old) {
        store.record(table, key, old);
    }
    /// Forgets the entry (inactive, nothing recorded), keeping the buffers.
    void reset() {
        is_active = false;
        meta = MetaRecord{};
        partitions_size = 0;
        wakeups_size = 0;
        partitions.clear();
        partitions_saved.clear();
        created_queues.clear();
        created_groups.clear();
        queue_counts.clear();
        store.clear();
        released_leases.clear();
    }
};

/// The (queue, partition) pairs the items of one apply pushed to: a push request names a few
/// of them over and over (a producer spreading a batch over its partitions), and this saves a
/// partition-name lookup in LMDB per item, and the candidate and wakeup bookkeeping after the
/// first item of each pair. Valid for one apply call or one atomic entry: nothing in a push
/// or a transaction deletes queues or partitions or makes a partition idle, and an atomic
/// entry starts a fresh one (QueueState::begin_atomic).
class PushMemo {
public:
    struct Pair {
        std::string queue;
        std::string partition;
        QueueId qid;
        PartitionId pid;
        bool is_marked_ready = false;  ///< marked ready for every group by this apply
        std::size_t block = detail::PendingBlocks::none;  ///< its pending block, once looked up
    };
    static constexpr std::size_t pairs_max = 16;
    /// A block is written when the next record would take its records past this many bytes:
    /// with its header (at most block_header_bytes_max) it then stays inside LMDB's inline
    /// limit for 4 KiB pages, two to a page. Blocks are appended, so LMDB fills its leaves
    /// (a block over the limit would take whole 4 KiB overflow pages: a 2.5 KiB one wastes
    /// 1.5 KiB). A record larger than this is a block alone.
    static constexpr std::size_t block_bytes_max = 2022 - block_header_bytes_max;

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
    Pair& add(const PushItem& item, QueueId qid, PartitionId pid) {
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
        slot->block = detail::PendingBlocks::none;
        return *slot;
    }

    /// Adds the message `item` pushed at `now` as sequence `seq` to the block of `pair`'s
    /// partition (in the state's pending blocks, which an earlier push of the batch may have
    /// started).
    Result<void> append(State& s, store::WriteTxn& txn, Pair& pair, Sequence seq, TimestampMs now,
                        const PushItem& item);

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

/// The cursor records that Pop, Ack and ExtendLease read or wrote (outside atomic entries),
/// written back by flush_cursors(): at the txn's commit (QueueState::before_commit, which keeps
/// them, clean, for the next txn), before an atomic entry, before every other command (they read
/// or write cursors in LMDB: the cache forgets everything then), and when it holds entries_max
/// records. An aborted txn rebuilds the State, the cache with it. A pop and the ack of its
/// batch in the same txn then write the partition's cursor once instead of twice, and read it
/// from memory. It holds what the txn would hold: no decision depends on whether a record is in
/// it, and LMDB holds the same bytes at every commit.
class CursorCache {
public:
    static constexpr std::size_t entries_max = 65536;
    struct Entry {
        std::optional<CursorRecord> record;  ///< std::nullopt: LMDB has no such cursor
        bool is_dirty = false;
    };
    /// The cached entry of (pid, gid), or nullptr.
    Entry* find(PartitionId pid, GroupId gid) {
        auto it = entries_.find(key(pid, gid));
        return it == entries_.end() ? nullptr : &it->second;
    }
    Entry& put(PartitionId pid, GroupId gid, std::optional<CursorRecord> record, bool is_dirty) {
        const Key k = key(pid, gid);
        Entry& entry = entries_[k];
        entry.record = std::move(record);
        if (is_dirty && !entry.is_dirty) {
            entry.is_dirty = true;
            dirty_.push_back(k);
        }
        return entry;
    }
    [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
    [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
    /// Calls write(pid, gid, record) for each dirty entry, in key order (so the writes, and what
    /// an error leaves undone, do not depend on the hash map), then forgets them all, or with
    /// `is_kept` keeps them all, clean (what the commit that follows leaves in LMDB: the next
    /// txn reads the cursors of busy partitions from memory).
    template <class Write>
    Result<void> flush(Write&& write, bool is_kept = false) {
        std::sort(dirty_.begin(), dirty_.end(), [](const Key& a, const Key& b) {
            return a.pid != b.pid ? a.pid < b.pid : a.gid < b.gid;
        });
        for (const Key& k : dirty_) {
            Entry& entry = entries_.at(k);
            if (entry.record) {
                QUEEN_TRY(write(PartitionId{k.pid}, GroupId{k.gid}, *entry.record));
            }
            entry.is_dirty = false;
        }
        dirty_.clear();
        if (!is_kept) {
            entries_.clear();
        }
        return {};
    }
    void clear() noexcept {
        entries_.clear();
        dirty_.clear();
    }

private:
    struct Key {
        std::uint64_t pid;
        std::uint32_t gid;
        friend bool operator==(const Key&, const Key&) = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const noexcept {
            return std::hash<std::uint64_t>{}(k.pid * 0x9E3779B97F4A7C15ULL ^ k.gid);
        }
    };
    static Key key(PartitionId pid, GroupId gid) noexcept { return Key{pid.value(), gid.value()}; }
    std::unordered_map<Key, Entry, KeyHash> entries_;
    std::vector<Key> dirty_;  ///< the entries with is_dirty, each once
};

struct State {
    Options options;
    Tables tables;
    MetaRecord meta;
    /// `meta` changed since it was last written (a pop's lease counter): written at the end of
    /// the apply batch (QueueState::end_batch) or by the next save_meta, whichever comes first.
    bool is_meta_dirty = false;
    /// How full q.blocks' last leaf is, as the block appends tell (block_leaf_fill_after);
    /// block_leaf_bytes when unknown (the next block starts a new leaf). Saved with the meta
    /// record (q.meta "blocks.leaf_fill"), so a reopened or replayed state orders its blocks
    /// as this one does.
    std::uint32_t blocks_leaf_fill = detail::block_leaf_bytes;
    Bytes block_scratch;  ///< a split block's head (write_block)
    /// The greatest key q.ids held when last looked (read at the first push, then each appended
    /// key; empty for an empty table): deletes and rolled-back appends leave it above the real
    /// last key, which only sends a key in between down the B-tree instead of appending it
    /// (put_transaction_id).
    std::optional<Bytes> ids_last;
    /// By partition id; index 0 unused. Chunked: growing to millions never copies it.
    // 4,096 partitions (192 KiB) per chunk: an idle tenant holds one chunk, not 2.5 MiB.
    ChunkedArray<PartitionMem, 12> partitions{1};
    /// The memory entry of partition `pid` (which must be below partitions.size()).
    PartitionMem& partition(PartitionId pid) { return partitions[pid.value()]; }
    const PartitionMem& partition(PartitionId pid) const { return partitions[pid.value()]; }
    /// True when `pid` names an existing partition.
    [[nodiscard]] bool has_partition(PartitionId pid) const {
        return pid.value() != 0 && pid.value() < partitions.size() &&
               partitions[pid.value()].queue.value() != 0;
    }
    std::map<QueueId, QueueMem> queues;
    /// See DueIndex; on the heap so the candidates' pointers survive a move of the State.
    /// next_due() (const) drops the stale entries it meets: the pointer is const, not the index.
    std::unique_ptr<DueIndex> due_index = std::make_unique<DueIndex>();
    /// Indexes `gc`, the candidates of (qid, gid) just created.
    void index_candidates(GroupCandidates& gc, QueueId qid, GroupId gid) const {
        gc.due_index = due_index.get();
        gc.queue = qid;
        gc.group = gid;
    }
    NameIds<QueueId> queue_ids;  ///< lookup only
    NameIds<GroupId> group_ids;  ///< lookup only
    /// lease id -> (partition, group) it was granted on; may hold stale pairs (checked against
    /// the cursor record before use). Lookup only.
    std::unordered_map<LeaseId, std::vector<std::pair<PartitionId, GroupId>>> leases;
    std::map<std::tuple<GroupId, QueueId, PartitionId>, SubscriptionRecord> subscriptions;
    /// Partitions whose memory entry changed since their records were last written (with
    /// repeats: flush_partitions sorts them and writes each once).
    std::vector<PartitionId> dirty_partitions;
    PartitionCache partition_cache;
    std::vector<Wakeup> wakeups;
    Journal journal;
    /// The push memo of the atomic entry being applied (QueueState::begin_atomic).
    PushMemo atomic_memo;
    /// Reused encode buffer of the record being written (its capacity survives across puts;
    /// the bytes are dead once the put returned).
    Bytes scratch;
    /// Reused encode buffer of the meta record.
    Bytes meta_scratch;
    /// Reused encode buffer of an old value the journal records without reading it.
    Bytes old_scratch;
    /// The message blocks the pushes of the current apply batch are building.
    PendingBlocks pending_blocks;
    /// See CursorCache; mutable: read_cursor() fills it on a miss.
    mutable CursorCache cursor_cache;
    /// Cursor reads and writes go through cursor_cache: set by Pop, Ack and ExtendLease, cleared
    /// by flush_pending() (every other command then reads and writes LMDB, where it may also
    /// delete cursors, which the cache would not see).
    bool is_caching_cursors = false;
    /// A pop naming a namespace or task (not a queue) ran since open: take_wakeups() adds the
    /// wait keys of such pops (matching_wait_key) for each woken queue. Not state: kept across
    /// rebuild(), never written.
    bool has_matching_pops = false;
    /// What open() migrated (QueueState::migration()); kept across rebuild().
    std::optional<QueueState::LayoutMigration> migration;
};

}  // namespace queen::queues::detail
