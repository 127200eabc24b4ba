// queues/src/candidates.cpp — the pop index: per-(queue, group) ready and deferred partitions.
#include <algorithm>

#include "apply.hpp"

namespace queen::queues::detail {

void make_ready(GroupCandidates& gc, PartitionId pid) {
    if (auto it = gc.deferred_due.find(pid); it != gc.deferred_due.end()) {
        gc.deferred.erase({it->second, pid});
        gc.deferred_due.erase(it);
    }
    gc.ready.insert(pid);
}

void make_idle(GroupCandidates& gc, PartitionId pid) {
    if (auto it = gc.deferred_due.find(pid); it != gc.deferred_due.end()) {
        gc.deferred.erase({it->second, pid});
        gc.deferred_due.erase(it);
    }
    gc.ready.erase(pid);
}

void defer(GroupCandidates& gc, PartitionId pid, std::int64_t due_ms) {
    make_idle(gc, pid);
    gc.deferred.emplace(due_ms, pid);
    gc.deferred_due.emplace(pid, due_ms);
}

void promote_due(GroupCandidates& gc, std::int64_t now_ms) {
    while (!gc.deferred.empty() && gc.deferred.begin()->first <= now_ms) {
        const PartitionId pid = gc.deferred.begin()->second;
        gc.deferred.erase(gc.deferred.begin());
        gc.deferred_due.erase(pid);
        gc.ready.insert(pid);
    }
}

void mark_ready(State& s, QueueId qid, GroupId gid, PartitionId pid) {
    auto q = s.queues.find(qid);
    if (q == s.queues.end()) {
        return;
    }
    if (gid.value() == 0) {
        for (auto& [group, gc] : q->second.groups) {
            make_ready(gc, pid);
        }
    } else if (auto g = q->second.groups.find(gid); g != q->second.groups.end()) {
        make_ready(g->second, pid);
    }
}

void mark_idle(State& s, QueueId qid, GroupId gid, PartitionId pid) {
    auto q = s.queues.find(qid);
    if (q == s.queues.end()) {
        return;
    }
    if (auto g = q->second.groups.find(gid); g != q->second.groups.end()) {
        make_idle(g->second, pid);
    }
}

Result<std::vector<PartitionId>> partitions_with_messages(const State& s, const store::Txn& txn,
                                                          QueueId qid) {
    const QueueMem& q = s.queues.at(qid);
    std::vector<PartitionId> pids;
    if (q.partition_count * 8 >= s.partitions.size()) {
        for (std::uint64_t index = 1; index < s.partitions.size(); ++index) {  // index = id
            const PartitionMem& mem = s.partitions[index];
            if (mem.queue == qid && mem.message_count > 0) {
                pids.emplace_back(index);
            }
        }
        return pids;
    }
    pids.reserve(q.partition_count);
    QUEEN_TRY(auto cursor, txn.cursor(s.tables.partition_names));
    const auto prefix = detail::queue_key(qid);
    QUEEN_TRY(auto entry, cursor.seek(prefix.span()));
    while (entry && detail::has_prefix(entry->key, prefix.span())) {
        QUEEN_TRY(auto pid, detail::decode_id<PartitionId>(entry->value));
        if (s.partition(pid).message_count > 0) {
            pids.push_back(pid);
        }
        QUEEN_TRY(entry, cursor.next());
    }
    std::sort(pids.begin(), pids.end());
    return pids;
}

Result<void> reseed_candidates(State& s, const store::Txn& txn, QueueId qid, GroupId gid) {
    auto q = s.queues.find(qid);
    if (q == s.queues.end()) {
        return {};
    }
    auto g = q->second.groups.find(gid);
    if (g == q->second.groups.end()) {
        return {};
    }
    QUEEN_TRY(const auto pids, partitions_with_messages(s, txn, qid));
    for (const PartitionId pid : pids) {
        make_ready(g->second, pid);
    }
    return {};
}

}  // namespace queen::queues::detail

namespace queen::queues {

std::optional<TimestampMs> QueueState::next_due(std::optional<TimestampMs> after) const {
    std::optional<TimestampMs> due;
    for (const auto& [qid, q] : state_->queues) {
        for (const auto& [gid, gc] : q.groups) {
            // The first (due, partition) later than `after`: every partition of due `after`
            // sorts before (after + 1, 0).
            const auto first = after ? gc.deferred.lower_bound({after->value() + 1, PartitionId{0}})
                                     : gc.deferred.begin();
            if (first != gc.deferred.end()) {
                const TimestampMs t{first->first};
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

}  // namespace queen::queues
