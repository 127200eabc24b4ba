// queues/src/groups.cpp — consumer groups: DeleteGroup, UpdateSubscription, SeekGroup/Partition.
#include <set>

#include "apply.hpp"

namespace queen::queues {

using detail::CursorRecord;
using detail::PartitionMem;
using detail::State;

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
    const GroupId gid = g->second;
    std::vector<QueueId> qids;
    if (command.queue.empty()) {
        for (const auto& [qid, q] : s.queues) {
            qids.push_back(qid);
        }
    } else if (auto found = find_queue(s, command.queue)) {
        qids.push_back(*found);
    }
    for (const QueueId qid : qids) {
        QUEEN_TRY(auto pids, queue_partitions(s, txn, qid));
        for (const PartitionId pid : pids) {
            const auto key = detail::cursor_key(pid, gid);
            QUEEN_TRY(auto cursor, read_cursor(s, txn, pid, gid));
            if (cursor) {
                release_lease_index(s, cursor->lease_id, pid, gid);
                QUEEN_TRY(txn.del(s.tables.cursors, key.span()));
                result.deleted_partitions++;
            }
        }
        QUEEN_TRY(txn.del(s.tables.group_queues, detail::group_queue_key(qid, gid).span()));
        s.queues.at(qid).groups.erase(gid);
        add_wakeup(s, s.queues.at(qid).name);
    }
    if (command.delete_metadata) {
        for (auto it = s.subscriptions.begin(); it != s.subscriptions.end();) {
            const auto [sub_gid, sub_qid, sub_pid] = it->first;
            const bool matches = sub_gid == gid && (command.queue.empty() ||
                                                    (!qids.empty() && sub_qid == qids.front()));
            if (matches) {
                QUEEN_TRY(txn.del(s.tables.subscriptions,
                                  detail::subscription_key(sub_gid, sub_qid, sub_pid).span()));
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
    const GroupId gid = g->second;
    std::set<QueueId> touched;
    for (auto& [key, sub] : s.subscriptions) {
        const auto [sub_gid, sub_qid, sub_pid] = key;
        if (sub_gid != gid) {
            continue;
        }
        sub.timestamp = command.timestamp;
        QUEEN_TRY(put(s, txn, s.tables.subscriptions,
                      detail::subscription_key(sub_gid, sub_qid, sub_pid).span(),
                      detail::encode(sub)));
        touched.insert(sub_qid);
        result.rows_updated++;
    }
    for (const QueueId qid : touched) {
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
    const GroupId gid = g->second;
    const QueueId qid = *found;
    QUEEN_TRY(auto pids, queue_partitions(s, txn, qid));
    for (const PartitionId pid : pids) {
        QUEEN_TRY(auto cursor, read_cursor(s, txn, pid, gid));
        if (!cursor) {
            continue;
        }
        const PartitionMem& mem = s.partition(pid);
        release_lease_index(s, cursor->lease_id, pid, gid);
        cursor->lease_id = LeaseId{0};
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
                QUEEN_TRY(txn.del(s.tables.cursors, detail::cursor_key(pid, gid).span()));
                continue;
            }
            cursor->consumed = after.prev();
        }
        QUEEN_TRY(write_cursor(s, txn, pid, gid, *cursor));
    }
    QUEEN_TRY(reseed_candidates(s, txn, qid, gid));
    add_wakeup(s, command.queue);
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
    GroupId gid;
    QUEEN_TRY(gid, get_or_create_group(s, txn, command.group));
    QUEEN_TRY(auto cursor, read_cursor(s, txn, *pid, gid));
    CursorRecord record = cursor.value_or(CursorRecord{});
    release_lease_index(s, record.lease_id, *pid, gid);
    record.lease_id = LeaseId{0};
    record.lease_expires_ms = 0;
    record.not_before_ms = 0;
    record.consumed = s.partition(*pid).last_sequence;
    QUEEN_TRY(write_cursor(s, txn, *pid, gid, record));
    auto& groups = s.queues.at(*found).groups;
    if (auto gc = groups.find(gid); gc != groups.end()) {
        make_idle(gc->second, *pid);
    }
    result.updated = true;
    result.cursor = MessageId{*pid, record.consumed};
    result.cursor_created_at = TimestampMs{s.partition(*pid).last_created_ms};
    return result;
}

}  // namespace queen::queues
