// queues/src/transaction.cpp — Transaction: atomic pushes and acks, rollback of the journal.
#include "apply.hpp"
#include "queen/core/assert.hpp"

namespace queen::queues {

using detail::AckContext;
using detail::PushMemo;
using detail::State;

namespace {

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
    auto restored = journal.store.rollback(txn);
    s.meta = journal.meta;
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
            one.created_at = pushed->created_at;
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

}  // namespace queen::queues
