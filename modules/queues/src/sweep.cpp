// queues/src/sweep.cpp — removing messages: Sweep (retention, TTL, maxWait) and DeleteMessage.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "apply.hpp"
#include "queen/core/assert.hpp"

namespace queen::queues {

using detail::PartitionMem;
using detail::State;

namespace {

/// The first live sequence of `pid` at or after `from` (last + 1 when none).
Result<Sequence> next_live_sequence(const State& s, const store::Txn& txn, PartitionId pid,
                                    Sequence from) {
    QUEEN_TRY(auto scan,
              detail::MessageScan::open(txn, s.tables, pid, s.partition(pid).tail, from));
    QUEEN_TRY(auto next, scan.next());
    return next ? next->sequence : s.partition(pid).last_sequence.next();
}

/// Deletes the oldest messages of `pid` while `keep(seq, created_ms)` is false, at most
/// `budget`; returns how many were deleted.
template <class Keep>
Result<std::uint64_t> delete_oldest(State& s, store::WriteTxn& txn, PartitionId pid,
                                    std::uint64_t budget, Keep keep) {
    PartitionMem& mem = s.partition(pid);
    std::uint64_t deleted = 0;
    if (mem.message_count == 0 || budget == 0) {
        return deleted;
    }
    QUEEN_ASSERT(!s.journal.is_active, "message deletes are not journaled");
    QUEEN_TRY(auto scan, detail::MessageScan::open(txn, s.tables, pid, s.partition(pid).tail,
                                                   mem.first_sequence));
    std::vector<std::pair<Sequence, std::string>> doomed;
    std::vector<Sequence> doomed_sequences;
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
    QUEEN_TRY(
        detail::erase_messages(txn, s.tables, pid, changed.tail, doomed_sequences, s.scratch));
    for (const auto& [seq, txid] : doomed) {
        QUEEN_TRY(txn.del(s.tables.transaction_ids, detail::txid_key(pid, txid).span()));
        QUEEN_TRY(delete_prefix(s, txn, s.tables.traces, detail::message_key(pid, seq).span()));
        ++deleted;
    }
    changed.message_count -= deleted;
    changed.first_sequence = doomed.back().first.next();
    if (changed.message_count > 0) {
        // The next stored message (holes from single deletes are skipped).
        QUEEN_TRY(changed.first_sequence, next_live_sequence(s, txn, pid, changed.first_sequence));
    } else {
        changed.first_sequence = changed.last_sequence.next();
    }
    s.queues.at(changed.queue).message_count -= deleted;
    return deleted;
}

}  // namespace

Result<SweepResult> QueueState::apply(store::WriteTxn& txn, const Sweep& command, TimestampMs now) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    const std::int64_t now_ms = now.value();
    SweepResult result;
    constexpr Sequence any_sequence{UINT64_MAX};  // no sequence bound
    std::uint64_t budget = command.messages_max;
    std::vector<QueueId> qids;
    for (const auto& [qid, q] : s.queues) {
        qids.push_back(qid);
    }
    for (const QueueId qid : qids) {
        const QueueOptions options = s.queues.at(qid).options;
        const bool has_retention = options.is_retention_enabled && options.retention_s > 0;
        const bool has_completed =
            options.is_retention_enabled && options.completed_retention_s > 0;
        const bool has_ttl = options.ttl_s > 0;
        const bool has_max_wait = options.max_wait_time_s > 0;
        if (!is_swept(options)) {
            continue;
        }
        std::vector<GroupId> gids;
        for (const auto& [gid, gc] : s.queues.at(qid).groups) {
            gids.push_back(gid);
        }
        QUEEN_TRY(auto pids, queue_partitions(s, txn, qid));
        for (const PartitionId pid : pids) {
            if (budget == 0) {
                result.is_complete = false;
                break;
            }
            auto run = [&](std::int64_t age_s, Sequence max_seq,
                           std::uint64_t& counter) -> Result<void> {
                const std::int64_t cutoff = now_ms - age_s * 1000;
                QUEEN_TRY(auto n, delete_oldest(s, txn, pid, budget,
                                                [&](Sequence seq, std::int64_t created) {
                                                    return seq > max_seq || created > cutoff;
                                                }));
                counter += n;
                budget -= n;
                return {};
            };
            if (has_retention) {
                QUEEN_TRY(run(options.retention_s, any_sequence, result.retention_deleted));
            }
            if (has_max_wait) {
                QUEEN_TRY(run(options.max_wait_time_s, any_sequence, result.evicted));
            }
            if (has_ttl) {
                QUEEN_TRY(run(options.ttl_s, any_sequence, result.ttl_deleted));
            }
            if (has_completed) {
                // Only what every group with a cursor on the partition has passed.
                Sequence min_consumed = any_sequence;
                bool any = false;
                for (const GroupId gid : gids) {
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
    const PartitionId pid = command.partition;
    if (!s.has_partition(pid)) {
        return result;
    }
    const auto txid = detail::txid_key(command.partition, command.transaction_id);
    QUEEN_TRY(const auto found, detail::find_txid(txn, s.tables.transaction_ids, command.partition,
                                                  command.transaction_id));
    if (!found) {
        return result;
    }
    const Sequence seq = *found;
    QUEEN_ASSERT(!s.journal.is_active, "message deletes are not journaled");
    QUEEN_TRY(txn.del(s.tables.transaction_ids, txid.span()));
    const Sequence doomed[] = {seq};
    PartitionMem& mem = touch_partition(s, pid);
    QUEEN_TRY(detail::erase_messages(txn, s.tables, pid, mem.tail, doomed, s.scratch));
    QUEEN_TRY(
        delete_prefix(s, txn, s.tables.traces, detail::message_key(command.partition, seq).span()));
    mem.message_count--;
    s.queues.at(mem.queue).message_count--;
    if (mem.message_count == 0) {
        mem.first_sequence = mem.last_sequence.next();
    } else if (seq == mem.first_sequence) {
        QUEEN_TRY(mem.first_sequence, next_live_sequence(s, txn, pid, seq));
        QUEEN_ASSERT(mem.first_sequence <= mem.last_sequence,
                     "message count says more messages follow");
    }
    QUEEN_TRY(flush_partitions(s, txn));
    result.found = true;
    return result;
}

}  // namespace queen::queues
