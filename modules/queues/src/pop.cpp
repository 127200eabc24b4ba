// queues/src/pop.cpp — Pop (candidate selection, lease grant, subscription start), ExtendLease.
#include <algorithm>
#include <optional>
#include <vector>

#include "apply.hpp"
#include "queen/core/assert.hpp"

namespace queen::queues {

using detail::CursorRecord;
using detail::GroupCandidates;
using detail::PartitionMem;
using detail::QueueMem;
using detail::State;

namespace {

const detail::SubscriptionRecord* find_subscription(const State& s, GroupId gid, QueueId qid,
                                                    PartitionId pid) {
    if (auto it = s.subscriptions.find({gid, qid, pid}); it != s.subscriptions.end()) {
        return &it->second;
    }
    if (auto it = s.subscriptions.find({gid, qid, PartitionId{0}}); it != s.subscriptions.end()) {
        return &it->second;
    }
    return nullptr;
}

std::int64_t lease_ms(const QueueOptions& options) {
    return (options.lease_time_s > 0 ? options.lease_time_s : 60) * 1000;
}

struct PartitionTake {
    std::vector<PoppedMessage> messages;
};

/// Checks (pid, gid) against LMDB at `now`, moves its candidate entry, and takes up to `budget`
/// messages under `lease` (0 = autoAck). Returns the messages taken (none = not deliverable).
Result<PartitionTake> take_partition(State& s, store::WriteTxn& txn, QueueId qid, GroupId gid,
                                     GroupCandidates& gc, PartitionId pid, std::int64_t now_ms,
                                     std::uint32_t budget, LeaseId& lease, bool auto_ack) {
    PartitionTake take;
    // A candidate may name a partition a rolled-back transaction created (gone, or its id
    // reused by another queue): drop it.
    if (pid.value() >= s.partitions.size() || s.partition(pid).queue != qid) {
        make_idle(gc, pid);
        return take;
    }
    const PartitionMem& mem = s.partition(pid);
    if (mem.queue != qid) {
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
    Sequence from;
    const bool had_cursor = cursor.has_value();
    if (cursor) {
        from = cursor->consumed.next();
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
        record.consumed = from.prev();
    }
    if (from > mem.last_sequence) {
        make_idle(gc, pid);
        return take;
    }
    std::string name;
    QUEEN_TRY(name, partition_name(s, txn, pid));
    const std::int64_t delay_ms = options.delayed_processing_s * 1000;
    std::int64_t delayed_until = 0;
    take.messages.reserve(static_cast<std::size_t>(
        std::min<std::uint64_t>(budget, mem.last_sequence.value() - from.value() + 1)));
    QUEEN_TRY(auto scan,
              detail::MessageScan::open(txn, s.tables, pid, s.partition(pid).tail, from));
    QUEEN_TRY(auto stored, scan.next());
    while (stored && take.messages.size() < budget) {
        QUEEN_TRY(auto message, detail::decode_message(stored->record));
        if (delay_ms > 0 && message.created_at.value() + delay_ms > now_ms) {
            delayed_until = message.created_at.value() + delay_ms;
            break;
        }
        PoppedMessage out;
        out.id = MessageId{pid, stored->sequence};
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
    const Sequence last_taken = take.messages.back().id.sequence;
    release_lease_index(s, record.lease_id, pid, gid);
    if (auto_ack) {
        record.consumed = last_taken;
        record.total_consumed += take.messages.size();
        record.last_consumed_ms = now_ms;
        record.lease_id = LeaseId{0};
        record.lease_expires_ms = 0;
        record.batch_size = 0;
        record.acked_count = 0;
        if (last_taken < mem.last_sequence) {
            make_ready(gc, pid);
        } else {
            make_idle(gc, pid);
        }
    } else {
        if (lease.value() == 0) {
            lease = s.meta.next_lease_id;
            s.meta.next_lease_id = lease.next();
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

/// The candidates of (qid, gid), created on the group's first pop on the queue: every
/// partition with messages, minus those the cursors say are consumed or leased.
Result<GroupCandidates*> group_candidates(State& s, store::WriteTxn& txn, QueueId qid, GroupId gid,
                                          TimestampMs now, bool& created) {
    QueueMem& q = s.queues.at(qid);
    created = false;
    if (auto it = q.groups.find(gid); it != q.groups.end()) {
        return &it->second;
    }
    created = true;
    GroupCandidates gc;
    s.index_candidates(gc, qid, gid);
    QUEEN_TRY(const auto pids, partitions_with_messages(s, txn, qid));
    for (const PartitionId pid : pids) {
        gc.ready.insert(pid);
    }
    detail::GroupQueueRecord record{PartitionId{0}, now};
    QUEEN_TRY(put(s, txn, s.tables.group_queues, detail::group_queue_key(qid, gid).span(),
                  detail::encode(record)));
    return &q.groups.emplace(gid, std::move(gc)).first->second;
}

/// Readies queue `qid` for group `gid`'s pop: its candidates (created on the group's first pop
/// on the queue) and, for a new named group that asks for one, its subscription start (spec
/// 5.8). `only_pid` limits the subscription to one partition (the partition route).
Result<GroupCandidates*> prepare_queue(State& s, store::WriteTxn& txn, QueueId qid, GroupId gid,
                                       const Pop& command, std::optional<PartitionId> only_pid,
                                       TimestampMs now) {
    bool created = false;
    GroupCandidates* gc = nullptr;
    QUEEN_TRY(gc, group_candidates(s, txn, qid, gid, now, created));
    const bool wants_start = command.subscription_from != SubscriptionFrom::none ||
                             command.subscription_mode == SubscriptionMode::new_only;
    if (command.group == queue_mode_group || !wants_start) {
        return gc;
    }
    const PartitionId scope = only_pid.value_or(PartitionId{0});
    bool is_new = created && find_subscription(s, gid, qid, scope) == nullptr;
    if (only_pid && !created && find_subscription(s, gid, qid, *only_pid) == nullptr) {
        QUEEN_TRY(auto cursor, read_cursor(s, txn, *only_pid, gid));
        is_new = !cursor.has_value();
    }
    if (!is_new) {
        return gc;
    }
    detail::SubscriptionRecord sub;
    sub.created_at = now;
    if (command.subscription_from == SubscriptionFrom::timestamp) {
        sub.mode = SubscriptionMode::all;
        sub.timestamp = command.subscription_from_ms;
    } else {
        sub.mode = SubscriptionMode::new_only;
        sub.timestamp = now;
    }
    QUEEN_TRY(put(s, txn, s.tables.subscriptions, detail::subscription_key(gid, qid, scope).span(),
                  detail::encode(sub)));
    s.subscriptions[{gid, qid, scope}] = sub;
    if (sub.mode == SubscriptionMode::new_only) {
        // "From now" means after every message already in the log, including ones stamped with
        // this same millisecond: bootstrap a cursor at the current tail of every existing
        // partition (docs/http-api.md, subscriptions). Later partitions start at their head.
        std::vector<PartitionId> pids;
        if (only_pid) {
            pids.push_back(*only_pid);
        } else {
            QUEEN_TRY(pids, queue_partitions(s, txn, qid));
        }
        for (const PartitionId pid : pids) {
            const PartitionMem& mem = s.partition(pid);
            if (mem.last_sequence.value() == 0) {
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
    return gc;
}

/// Takes up to `batch` messages of queue `qid` for group `gid` (from `only_pid`, or from up to
/// `partitions_max` partitions in round-robin order) into `result`, under one lease unless
/// autoAck; `result` stays empty when nothing is deliverable.
Result<void> claim_from_queue(State& s, store::WriteTxn& txn, QueueId qid, GroupId gid,
                              GroupCandidates& gc, const Pop& command,
                              std::optional<PartitionId> only_pid, std::uint32_t batch,
                              std::uint32_t partitions_max, TimestampMs now, PopResult& result) {
    const std::int64_t now_ms = now.value();
    LeaseId lease;
    std::uint32_t budget = batch;
    auto claim = [&](PartitionId pid) -> Result<bool> {
        QUEEN_TRY(auto take, take_partition(s, txn, qid, gid, gc, pid, now_ms, budget, lease,
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
        promote_due(gc, now_ms);
        const PartitionId start = gc.round_robin_position;
        PartitionId position = start;
        PartitionId last_claimed;
        bool wrapped = false;
        while (budget > 0 && result.partitions_claimed < partitions_max) {
            const std::optional<PartitionId> next = gc.ready.next_after(position);
            if (wrapped && (!next || *next > start)) {
                break;
            }
            if (!next) {
                if (wrapped) {
                    break;
                }
                wrapped = true;
                position = PartitionId{0};
                continue;
            }
            const PartitionId pid = *next;
            position = pid;
            QUEEN_TRY(const bool claimed, claim(pid));
            if (claimed) {
                last_claimed = pid;
            }
        }
        if (last_claimed.value() != 0 && last_claimed != gc.round_robin_position) {
            gc.round_robin_position = last_claimed;
            const auto key = detail::group_queue_key(qid, gid);
            QUEEN_TRY(auto record, detail::get_record(txn, s.tables.group_queues, key.span(),
                                                      detail::decode_group_queue));
            detail::GroupQueueRecord updated =
                record.value_or(detail::GroupQueueRecord{PartitionId{0}, now});
            updated.round_robin_position = last_claimed;
            QUEEN_TRY(put(s, txn, s.tables.group_queues, key.span(), detail::encode(updated)));
        }
    }
    if (!result.messages.empty()) {
        result.outcome = PopResult::Outcome::delivered;
        result.queue = s.queues.at(qid).name;
        result.lease = lease;
        if (lease.value() != 0) {
            result.lease_expires_at = TimestampMs{now_ms + lease_ms(s.queues.at(qid).options)};
        }
    }
    return {};
}

/// Whether queue `q` is served by a pop naming `namespace_name` and `task` ("" = any).
bool matches(const QueueMem& q, const Pop& command) {
    return (command.namespace_name.empty() || q.namespace_name == command.namespace_name) &&
           (command.task.empty() || q.task == command.task);
}

/// The pop of a namespace and/or task: the matching queues by priority (higher first), then
/// name. Each is readied for the group (so its subscription starts with the group's first such
/// pop), then the first that delivers anything answers alone.
Result<void> pop_matching(State& s, store::WriteTxn& txn, const Pop& command, std::uint32_t batch,
                          std::uint32_t partitions_max, TimestampMs now, PopResult& result) {
    s.has_matching_pops = true;
    std::vector<QueueId> order;
    for (const auto& [qid, q] : s.queues) {
        if (matches(q, command)) {
            order.push_back(qid);
        }
    }
    if (order.empty()) {
        return {};
    }
    std::sort(order.begin(), order.end(), [&s](QueueId a, QueueId b) {
        const QueueMem& x = s.queues.at(a);
        const QueueMem& y = s.queues.at(b);
        if (x.options.priority != y.options.priority) {
            return x.options.priority > y.options.priority;
        }
        return x.name < y.name;
    });
    GroupId gid;
    QUEEN_TRY(gid, get_or_create_group(s, txn, command.group));
    std::vector<GroupCandidates*> candidates;
    candidates.reserve(order.size());
    for (const QueueId qid : order) {
        QUEEN_TRY(auto* gc, prepare_queue(s, txn, qid, gid, command, std::nullopt, now));
        candidates.push_back(gc);
    }
    for (std::size_t i = 0; i < order.size() && result.messages.empty(); ++i) {
        QUEEN_TRY(claim_from_queue(s, txn, order[i], gid, *candidates[i], command, std::nullopt,
                                   batch, partitions_max, now, result));
    }
    return {};
}

}  // namespace

Result<PopResult> QueueState::apply(store::WriteTxn& txn, const Pop& command, TimestampMs now) {
    QUEEN_TRY(flush_pushes_caching_cursors(*state_, txn));
    State& s = *state_;
    PopResult result;
    result.queue = command.queue;
    result.group = command.group;
    const bool is_matching =
        command.queue.empty() && (!command.namespace_name.empty() || !command.task.empty());
    if (s.meta.pop_maintenance) {
        result.outcome = PopResult::Outcome::paused;
        return result;
    }
    if (command.group.empty() || command.group.size() > s.options.group_name_bytes_max) {
        return Error{queen::Errc::invalid_argument,
                     "pop: consumerGroup must be 1 to " +
                         std::to_string(s.options.group_name_bytes_max) + " bytes"};
    }
    if (is_matching && command.has_partition) {
        return Error{queen::Errc::invalid_argument,
                     "pop: a partition can only be popped from a named queue"};
    }
    const std::uint32_t batch =
        std::clamp<std::uint32_t>(command.batch, 1, s.options.pop_batch_max);
    const std::uint32_t partitions_max =
        command.has_partition
            ? 1
            : std::clamp<std::uint32_t>(command.partitions, 1, s.options.pop_partitions_max);
    if (is_matching) {
        QUEEN_TRY(pop_matching(s, txn, command, batch, partitions_max, now, result));
        return result;
    }
    const auto qid_found = find_queue(s, command.queue);
    if (!qid_found) {
        return result;
    }
    const QueueId qid = *qid_found;
    std::optional<PartitionId> only_pid;
    if (command.has_partition) {
        QUEEN_TRY(only_pid, find_partition(s, txn, qid, command.partition));
        if (!only_pid) {
            return result;
        }
    }
    GroupId gid;
    QUEEN_TRY(gid, get_or_create_group(s, txn, command.group));
    GroupCandidates* gc = nullptr;
    QUEEN_TRY(gc, prepare_queue(s, txn, qid, gid, command, only_pid, now));
    QUEEN_TRY(claim_from_queue(s, txn, qid, gid, *gc, command, only_pid, batch, partitions_max, now,
                               result));
    return result;
}

Result<ExtendLeaseResult> QueueState::apply(store::WriteTxn& txn, const ExtendLease& command,
                                            TimestampMs now) {
    QUEEN_TRY(flush_pushes_caching_cursors(*state_, txn));
    State& s = *state_;
    const std::int64_t now_ms = now.value();
    ExtendLeaseResult result;
    result.lease = command.lease;
    auto it = s.leases.find(command.lease);
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
        if (!cursor || cursor->lease_id != command.lease) {
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
        auto& groups = s.queues.at(s.partition(pid).queue).groups;
        if (auto g = groups.find(gid); g != groups.end()) {
            detail::defer(g->second, pid, cursor->lease_expires_ms);
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

}  // namespace queen::queues
