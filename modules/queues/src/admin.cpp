// queues/src/admin.cpp — ConfigureQueue, DeleteQueue, SetMaintenance (buffer drain), AddTrace.
#include <algorithm>

#include "apply.hpp"
#include "queen/core/assert.hpp"

namespace queen::queues {

using detail::PartitionMem;
using detail::PushMemo;
using detail::State;

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
    QueueId qid;
    if (auto found = find_queue(s, command.queue)) {
        qid = *found;
        const auto key = detail::queue_key(qid);
        QUEEN_TRY(auto record,
                  detail::get_record(txn, s.tables.queues, key.span(), detail::decode_queue));
        QUEEN_ASSERT(record.has_value(), "queue in memory but not in LMDB: ", command.queue);
        record->namespace_name = command.namespace_name;
        record->task = command.task;
        record->options = command.options;
        QUEEN_TRY(put(s, txn, s.tables.queues, key.span(), detail::encode(*record)));
        detail::QueueMem& q = s.queues.at(qid);
        q.namespace_name = command.namespace_name;
        q.task = command.task;
        q.options = command.options;
    } else {
        QUEEN_TRY(qid, create_queue(s, txn, command.queue, command.namespace_name, command.task,
                                    command.options, now));
    }
    PartitionId pid;
    QUEEN_TRY(pid, get_or_create_partition(s, txn, qid, default_partition_name, now));
    // Options such as windowBuffer or leaseTime change who is deliverable when.
    for (auto& [gid, gc] : s.queues.at(qid).groups) {
        QUEEN_TRY(reseed_candidates(s, txn, qid, gid));
    }
    QUEEN_TRY(flush_partitions(s, txn));
    result.queue_id = qid;
    result.default_partition = pid;
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
    const QueueId qid = *found;
    QUEEN_TRY(auto pids, queue_partitions(s, txn, qid));
    for (const PartitionId pid : pids) {
        const auto prefix = detail::partition_key(pid);
        QUEEN_TRY(delete_partition_ids(s, txn, pid));
        QUEEN_TRY(detail::erase_partition_blocks(txn, s.tables, pid, s.partition(pid).tail));
        QUEEN_TRY(delete_prefix(s, txn, s.tables.traces, prefix.span()));
        QUEEN_TRY(delete_prefix(s, txn, s.tables.cursors, prefix.span()));
        QUEEN_TRY(txn.del(s.tables.partitions, prefix.span()));
        s.partition(pid) = PartitionMem{};  // flush_partitions skips it
    }
    QUEEN_TRY(delete_prefix(s, txn, s.tables.partition_names, detail::queue_key(qid).span()));
    QUEEN_TRY(delete_prefix(s, txn, s.tables.group_queues, detail::queue_key(qid).span()));
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.dlq));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            QUEEN_TRY(auto record, detail::decode_dlq(entry->value));
            if (record.queue == qid) {
                QUEEN_TRY(cursor.del());
                QUEEN_TRY(entry, cursor.next());  // after del(): the entry that followed it
                continue;
            }
            QUEEN_TRY(entry, cursor.next());
        }
    }
    QUEEN_TRY(txn.del(s.tables.queues, detail::queue_key(qid).span()));
    QUEEN_TRY(txn.del(s.tables.queue_names, detail::name_key(command.queue).span()));
    // Lease index entries of the deleted partitions go stale; drop them.
    for (auto it = s.leases.begin(); it != s.leases.end();) {
        auto& pairs = it->second;
        pairs.erase(std::remove_if(pairs.begin(), pairs.end(),
                                   [&](const auto& pair) { return !s.has_partition(pair.first); }),
                    pairs.end());
        it = pairs.empty() ? s.leases.erase(it) : std::next(it);
    }
    s.queue_ids.erase(command.queue);
    s.queues.erase(qid);
    s.partition_cache.clear();
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
                add_wakeup(s, q.name);
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

Result<AddTraceResult> QueueState::apply(store::WriteTxn& txn, const AddTrace& command,
                                         TimestampMs now) {
    QUEEN_TRY(flush_pending(*state_, txn));
    State& s = *state_;
    AddTraceResult result;
    if (!s.has_partition(command.partition)) {
        return result;
    }
    QUEEN_TRY(const auto found, detail::find_txid(txn, s.tables.transaction_ids, command.partition,
                                                  command.transaction_id));
    if (!found) {
        return result;
    }
    const Sequence seq = *found;
    if (command.group.empty() || command.group.size() > s.options.group_name_bytes_max) {
        return Error{queen::Errc::invalid_argument, "trace: bad consumerGroup length"};
    }
    GroupId gid;
    QUEEN_TRY(gid, get_or_create_group(s, txn, command.group));
    const TraceEntryId id = s.meta.next_trace_id;
    s.meta.next_trace_id = id.next();
    QUEEN_TRY(save_meta(s, txn));
    detail::TraceRecord record{gid, command.event_type, command.names, command.data, now};
    QUEEN_TRY(put(s, txn, s.tables.traces, detail::trace_key(command.partition, seq, id).span(),
                  detail::encode(record)));
    result.found = true;
    result.trace_id = id;
    return result;
}

}  // namespace queen::queues
