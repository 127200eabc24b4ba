// modules/raft/src/replication.cpp — log replication: the leader's appends, heartbeats and
// commit by quorum; the follower's append and heartbeat handling, conflict truncation.
#include <algorithm>
#include <functional>
#include <utility>

#include "raw_node_impl.hpp"

namespace queen::raft {

void RawNode::Impl::truncate_from(LogIndex index) {
    QUEEN_ASSERT(index > commit, "truncating committed entries: index=", index.value(),
                 " commit=", commit.value());
    QUEEN_ASSERT(index >= first_index(), "truncating below the snapshot");
    while (!log.empty() && log.back().index >= index) {
        log.pop_back();
    }
    stable = std::min(stable, index.prev());
    persist_handed = std::min(persist_handed, index.prev());
}

// Appends entries that follow a matching prefix, truncating at the first conflict.
void RawNode::Impl::append_after_match(const std::vector<Entry>& entries) {
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const Entry& entry = entries[i];
        if (entry.index <= snapshot.meta.index) {
            continue;
        }
        const auto existing = term_of(entry.index);
        if (existing.has_value() && *existing == entry.term) {
            continue;
        }
        if (existing.has_value()) {
            QUEEN_LOG(logger, Level::debug, "raft.log_conflict",
                      "node=" << id << " index=" << entry.index << " existing_term=" << *existing
                              << " new_term=" << entry.term);
            truncate_from(entry.index);
        }
        QUEEN_ASSERT(entry.index == last_index().next(), "append leaves a gap");
        log.insert(log.end(), entries.begin() + static_cast<std::ptrdiff_t>(i), entries.end());
        return;
    }
}

// etcd findConflictByTerm: the largest index <= `index` whose term is <= `log_term`.
std::pair<LogIndex, Term> RawNode::Impl::find_conflict_by_term(LogIndex index,
                                                               Term log_term) const {
    LogIndex at = std::min(index, last_index());
    while (true) {
        const auto t = term_of(at);
        if (!t.has_value()) {
            return {at, Term{0}};
        }
        if (*t <= log_term || at == snapshot.meta.index) {
            return {at, *t};
        }
        at = at.prev();
    }
}

LogIndex RawNode::Impl::append_local(EntryType type, Bytes data) {
    const LogIndex index = last_index().next();
    uncommitted_bytes += data.size();
    log.push_back(Entry{term, index, type, std::move(data)});
    needs_broadcast = true;
    // A single voter commits once its own write is durable (advance()).
    return index;
}

std::optional<Term> RawNode::Impl::term_with_source(LogIndex index) {
    if (const auto in_memory = term_of(index); in_memory.has_value()) {
        return in_memory;
    }
    if (source == nullptr || index >= snapshot.meta.index || index <= source_floor) {
        return std::nullopt;
    }
    auto found = source->term(index);
    if (!found) {
        if (!found.error().is(Errc::compacted)) {
            QUEEN_LOG(logger, Level::warn, "raft.entry_source_failed",
                      "node=" << id << " index=" << index << " error=\"" << found.error().message()
                              << "\"");
        }
        return std::nullopt;
    }
    return *found;
}

bool RawNode::Impl::append_from_source(LogIndex low, Message& m, std::uint64_t& bytes) {
    if (source == nullptr || low <= source_floor) {
        return false;
    }
    // Never more than one append's worth, and only what memory no longer holds.
    const LogIndex high{std::min(first_index().value(), low.value() + options.append_entries_max)};
    auto read = source->entries(low, high, options.append_bytes_max);
    if (!read) {
        if (!read.error().is(Errc::compacted)) {
            QUEEN_LOG(logger, Level::warn, "raft.entry_source_failed",
                      "node=" << id << " low=" << low << " high=" << high << " error=\""
                              << read.error().message() << "\"");
        }
        return false;
    }
    // Checked, not trusted: a gap or an entry from elsewhere would corrupt the peer's log.
    LogIndex expected = low;
    for (Entry& entry : *read) {
        if (entry.index != expected || entry.index >= high) {
            QUEEN_LOG(logger, Level::error, "raft.entry_source_failed",
                      "node=" << id << " low=" << low << " high=" << high << " error=\"entry "
                              << entry.index << " where " << expected << " was expected\"");
            m.entries.clear();
            bytes = 0;
            return false;
        }
        if (!m.entries.empty() && bytes + entry.data.size() > options.append_bytes_max) {
            break;  // the per-message limit holds whatever the source returned
        }
        bytes += entry.data.size();
        m.entries.push_back(std::move(entry));
        expected = expected.next();
    }
    if (m.entries.empty()) {
        QUEEN_LOG(
            logger, Level::error, "raft.entry_source_failed",
            "node=" << id << " low=" << low << " high=" << high << " error=\"no entry returned\"");
        return false;
    }
    return true;
}

void RawNode::Impl::start_snapshot(NodeId to, Progress& pr) {
    pr.become_snapshot(snapshot.meta.index);
    QUEEN_LOG(logger, Level::info, "raft.sending_snapshot",
              "node=" << id << " to=" << to << " index=" << snapshot.meta.index
                      << " bytes=" << snapshot.data.size());
    send_snapshot_chunk(to, pr);
}

std::uint32_t RawNode::Impl::inflight_limit(const Progress& pr) const {
    // Entries read back from the entry source are a read of the caller's log on the thread
    // driving raft (for a node, the peer transport's, shared by every group): a peer that
    // catches up from it gets a few appends in flight, not inflight_appends_max, so one step
    // reads at most that many appends' worth (each acknowledgement then reads one more).
    if (source != nullptr && pr.next < first_index()) {
        return std::min(source_inflight_appends_max, options.inflight_appends_max);
    }
    return options.inflight_appends_max;
}

// Sends the next append (or snapshot chunk) to `to`. Returns true if something was sent.
// Entries come from memory, or from the entry source below it; a snapshot only when neither
// holds what the peer needs.
bool RawNode::Impl::maybe_send_append(NodeId to, bool send_if_empty) {
    auto found = progress.find(to);
    if (found == progress.end() || to == id) {
        return false;
    }
    Progress& pr = found->second;
    if (pr.is_paused(inflight_limit(pr))) {
        return false;
    }
    const LogIndex prev = pr.next.prev();
    const auto prev_term = term_with_source(prev);
    if (!prev_term.has_value()) {
        // The entries this peer needs are compacted: send the snapshot, chunk by chunk.
        start_snapshot(to, pr);
        return true;
    }
    Message m;
    m.type = MessageType::append;
    m.to = to;
    m.index = prev;
    m.log_term = *prev_term;
    m.commit = commit;
    m.recovery_index = pr.recovery_index;
    std::uint64_t bytes = 0;
    LogIndex from = pr.next;
    if (from < first_index()) {
        if (!append_from_source(from, m, bytes)) {
            start_snapshot(to, pr);
            return true;
        }
        from = m.entries.back().index.next();
    }
    // Memory continues where the source stopped (only when it reached the memory: no gap).
    for (LogIndex i = from; from >= first_index() && i <= last_index(); i = i.next()) {
        const Entry& entry = entry_at(i);
        if (!m.entries.empty() && (m.entries.size() >= options.append_entries_max ||
                                   bytes + entry.data.size() > options.append_bytes_max)) {
            break;
        }
        bytes += entry.data.size();
        m.entries.push_back(entry);
    }
    if (m.entries.empty() && !send_if_empty) {
        return false;
    }
    if (!m.entries.empty()) {
        const LogIndex last = m.entries.back().index;
        if (pr.state == ProgressState::replicate) {
            pr.next = last.next();
            pr.inflights.push_back(last);
        } else {
            pr.is_probe_sent = true;
        }
    } else if (pr.state == ProgressState::probe) {
        pr.is_probe_sent = true;
    }
    send(std::move(m));
    return true;
}

void RawNode::Impl::broadcast_append(bool send_if_empty) {
    for (auto& [node, pr] : progress) {
        if (node != id) {
            maybe_send_append(node, send_if_empty);
        }
    }
}

void RawNode::Impl::broadcast_heartbeat() {
    const Bytes context = pending_reads.empty() ? Bytes{} : pending_reads.back().context;
    for (auto& [node, pr] : progress) {
        if (node == id) {
            continue;
        }
        Message m;
        m.type = MessageType::heartbeat;
        m.to = node;
        m.commit = std::min(pr.match, commit);  // never past what the peer is known to hold
        m.recovery_index = pr.recovery_index;
        m.context = context;
        send(std::move(m));
    }
}

bool RawNode::Impl::maybe_commit() {
    std::vector<LogIndex> matches;
    for (const auto& [node, pr] : progress) {
        if (is_voter(node)) {
            matches.push_back(node == id ? stable : pr.match);
        }
    }
    if (matches.empty()) {
        return false;
    }
    std::sort(matches.begin(), matches.end(), std::greater<>());
    // The highest index held durably by a quorum (the mutation build trusts one node).
    const LogIndex candidate =
        detail::mutation_ack_before_majority ? matches.front() : matches[quorum() - 1];
    // Raft 5.4.2: only entries of the current term are committed by counting replicas.
    if (candidate > commit && term_of(candidate) == term) {
        commit_to(candidate);
        return true;
    }
    return false;
}

void RawNode::Impl::commit_to(LogIndex index) {
    if (index <= commit) {
        return;
    }
    QUEEN_ASSERT(index <= last_index(), "commit beyond the last index");
    if (role == Role::leader) {
        std::uint64_t released = 0;
        for (LogIndex i = std::max(commit.next(), first_index()); i <= index; i = i.next()) {
            released += entry_at(i).data.size();
        }
        uncommitted_bytes = released > uncommitted_bytes ? 0 : uncommitted_bytes - released;
        needs_commit_broadcast = true;
    }
    commit = index;
    if (role == Role::leader && !reads_before_commit.empty() && term_of(commit) == term) {
        std::deque<PendingRead> waiting;
        waiting.swap(reads_before_commit);
        for (PendingRead& read : waiting) {
            start_read(std::move(read.context), read.from);
        }
    }
}

void RawNode::Impl::note_recovery(const Message& m) {
    if (!is_recovering) {
        return;
    }
    recovery_index = std::max(recovery_index, m.recovery_index);
    if (recovery_index > LogIndex{0} && commit >= recovery_index) {
        is_recovering = false;
        QUEEN_LOG(logger, Level::info, "raft.recovered",
                  "node=" << id << " term=" << term << " commit=" << commit
                          << " recovery_index=" << recovery_index);
    }
}

void RawNode::Impl::note_peer_recovery(Progress& pr, const Message& m) {
    if (!m.is_recovering) {
        pr.recovery_index = LogIndex{0};
        return;
    }
    // Where the node's log ends, as far as this response tells: a recovering node's heartbeat
    // response carries its last index, a rejection its hint (at or below its last index).
    LogIndex held = pr.match;
    if (m.type == MessageType::heartbeat_response) {
        held = m.index;
    } else if (m.type == MessageType::append_response && m.reject) {
        held = m.reject_hint;
    }
    if (pr.recovery_index > LogIndex{0} && held >= pr.match) {
        return;
    }
    // Everything the node may have acknowledged and lost, and that we may have committed
    // counting it, is in our log now: entries it acknowledged to us or to an earlier leader that
    // were committed (leader completeness), and our stale match for it (<= last).
    pr.recovery_index = std::max(pr.recovery_index, last_index());
    // Our match may name entries it no longer holds: left as is, we would never send them again.
    pr.forget_match(last_index());
    QUEEN_LOG(logger, Level::info, "raft.peer_recovering",
              "node=" << id << " peer=" << m.from << " recovery_index=" << pr.recovery_index);
}

void RawNode::Impl::handle_append(const Message& m) {
    Message r;
    r.type = MessageType::append_response;
    r.to = m.from;
    if (m.index < commit) {
        r.index = commit;
        send(std::move(r));
        return;
    }
    if (matches(m.index, m.log_term)) {
        append_after_match(m.entries);
        const LogIndex last_new{m.index.value() + m.entries.size()};
        commit_to(std::min(m.commit, last_new));
        note_recovery(m);
        r.index = last_new;
        send(std::move(r));
        return;
    }
    const auto [hint_index, hint_term] =
        find_conflict_by_term(std::min(m.index, last_index()), m.log_term);
    r.reject = true;
    r.index = m.index;
    r.reject_hint = hint_index;
    r.log_term = hint_term;
    QUEEN_LOG(logger, Level::debug, "raft.append_rejected",
              "node=" << id << " term=" << term << " index=" << m.index << " hint=" << hint_index);
    send(std::move(r));
}

void RawNode::Impl::handle_heartbeat(const Message& m) {
    commit_to(std::min(m.commit, last_index()));
    note_recovery(m);
    Message r;
    r.type = MessageType::heartbeat_response;
    r.to = m.from;
    if (is_recovering) {
        r.index = last_index();  // lets the leader see that its match for us is void
    }
    r.context = m.context;
    send(std::move(r));
}

}  // namespace queen::raft
