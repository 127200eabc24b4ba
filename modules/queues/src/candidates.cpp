// queues/src/candidates.cpp — the pop index: per-(queue, group) ready and deferred partitions.
#include <algorithm>

#include "apply.hpp"

namespace queen::queues::detail {

namespace {

/// Drops (due, pid) of `gc` from the tenant's index.
void unindex(GroupCandidates& gc, std::int64_t due_ms, PartitionId pid) {
    if (gc.due_index != nullptr) {
        gc.due_index->erase({due_ms, gc.queue, gc.group, pid});
    }
}

}  // namespace

void make_ready(GroupCandidates& gc, PartitionId pid) {
    if (gc.ready.contains(pid)) {
        return;  // ready and deferred are disjoint: nothing to move
    }
    if (auto it = gc.deferred_due.find(pid); it != gc.deferred_due.end()) {
        unindex(gc, it->second, pid);
        gc.deferred.erase({it->second, pid});
        gc.deferred_due.erase(it);
    }
    gc.ready.insert(pid);
}

void make_idle(GroupCandidates& gc, PartitionId pid) {
    if (auto it = gc.deferred_due.find(pid); it != gc.deferred_due.end()) {
        unindex(gc, it->second, pid);
        gc.deferred.erase({it->second, pid});
        gc.deferred_due.erase(it);
    }
    gc.ready.erase(pid);
}

void defer(GroupCandidates& gc, PartitionId pid, std::int64_t due_ms) {
    make_idle(gc, pid);
    gc.deferred.emplace(due_ms, pid);
    gc.deferred_due.emplace(pid, due_ms);
    if (gc.due_index != nullptr) {
        gc.due_index->emplace(due_ms, gc.queue, gc.group, pid);
    }
}

void promote_due(GroupCandidates& gc, std::int64_t now_ms) {
    while (!gc.deferred.empty() && gc.deferred.begin()->first <= now_ms) {
        const auto [due_ms, pid] = *gc.deferred.begin();
        unindex(gc, due_ms, pid);
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

namespace {

/// True when (due, qid, gid, pid) of the index is still deferred there (not left behind by a
/// queue or group erased whole).
bool is_indexed_live(const detail::State& s, std::int64_t due_ms, QueueId qid, GroupId gid,
                     PartitionId pid) {
    const auto q = s.queues.find(qid);
    if (q == s.queues.end()) {
        return false;
    }
    const auto g = q->second.groups.find(gid);
    if (g == q->second.groups.end()) {
        return false;
    }
    const auto due = g->second.deferred_due.find(pid);
    return due != g->second.deferred_due.end() && due->second == due_ms;
}

}  // namespace

std::optional<TimestampMs> QueueState::next_due(std::optional<TimestampMs> after) const {
    detail::DueIndex& index = *state_->due_index;
    // The first (due, ...) later than `after`: every entry of due `after` sorts before
    // (after + 1, 0, 0, 0).
    auto it = after
                  ? index.lower_bound({after->value() + 1, QueueId{0}, GroupId{0}, PartitionId{0}})
                  : index.begin();
    while (it != index.end()) {
        const auto& [due_ms, qid, gid, pid] = *it;
        if (is_indexed_live(*state_, due_ms, qid, gid, pid)) {
            return TimestampMs{due_ms};
        }
        it = index.erase(it);
    }
    return std::nullopt;
}

std::vector<std::string> QueueState::queues_due(TimestampMs now) const {
    std::vector<std::string> out;
    const detail::DueIndex& index = *state_->due_index;
    for (auto it = index.begin(); it != index.end() && std::get<0>(*it) <= now.value(); ++it) {
        const auto& [due_ms, qid, gid, pid] = *it;
        if (is_indexed_live(*state_, due_ms, qid, gid, pid)) {
            out.push_back(state_->queues.at(qid).name);
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

}  // namespace queen::queues
