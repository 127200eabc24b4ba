// queues/src/transaction.cpp — atomic entries: journaled pushes and acks, rollback of the journal.
#include "apply.hpp"
#include "queen/core/assert.hpp"

namespace queen::queues {

using detail::AckContext;
using detail::PushMemo;
using detail::State;

namespace detail {
namespace {

void begin_atomic(State& s) {
    QUEEN_ASSERT(!s.journal.is_active, "atomic entries do not nest");
    s.journal.reset();
    s.journal.is_active = true;
    s.journal.meta = s.meta;
    s.journal.blocks_leaf_fill = s.blocks_leaf_fill;
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
    auto restored = journal.store.rollback(txn);
    s.meta = journal.meta;
    s.blocks_leaf_fill = journal.blocks_leaf_fill;
    // LMDB's record may now be older than memory (a pop's counter the entry's save_meta wrote
    // and the undo took back): the batch's end writes it again.
    s.is_meta_dirty = true;
    for (auto it = journal.partitions.rbegin(); it != journal.partitions.rend(); ++it) {
        s.partition(it->first) = it->second;
    }
    s.partitions.resize(journal.partitions_size);
    for (const auto& [qid, counts] : journal.queue_counts) {
        if (auto q = s.queues.find(qid); q != s.queues.end()) {
            q->second.message_count = counts.first;
            q->second.partition_count = counts.second;
        }
    }
    for (const QueueId qid : journal.created_queues) {
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

}  // namespace
}  // namespace detail

Result<void> QueueState::begin_atomic(store::WriteTxn& txn) {
    QUEEN_TRY(flush_pending(*state_, txn));
    detail::begin_atomic(*state_);
    state_->atomic_memo = PushMemo{};
    return {};
}

Result<PushItemResult> QueueState::push_atomic(store::WriteTxn& txn, const PushItem& item,
                                               TimestampMs now) {
    QUEEN_ASSERT(state_->journal.is_active, "push_atomic outside begin_atomic");
    return push_item(*state_, txn, item, now, true, state_->atomic_memo);
}

Result<AtomicAck> QueueState::ack_atomic(store::WriteTxn& txn, const AckItem& item, TimestampMs now,
                                         LeaseRelease release) {
    QUEEN_ASSERT(state_->journal.is_active, "ack_atomic outside begin_atomic");
    AckContext context;
    context.is_transaction = true;
    context.release = release;
    QUEEN_TRY(auto acked, ack_item_by_id(*state_, txn, item, now, context));
    AtomicAck out;
    if (!acked.success) {
        out.failure = context.failure.empty() ? "Ack failed" : std::move(context.failure);
    }
    out.item = std::move(acked);
    return out;
}

Result<void> QueueState::commit_atomic(store::WriteTxn& txn) {
    QUEEN_ASSERT(state_->journal.is_active, "commit_atomic outside begin_atomic");
    QUEEN_TRY(flush_partitions(*state_, txn));
    detail::end_atomic(*state_);
    return {};
}

Result<void> QueueState::rollback_atomic(store::WriteTxn& txn) {
    return detail::rollback_atomic(*state_, txn);
}

}  // namespace queen::queues
