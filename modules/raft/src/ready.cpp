// modules/raft/src/ready.cpp — the Ready contract: which messages wait for persistence,
// what a Ready hands out (entries, hard state, snapshot, committed entries), and advance().
#include <algorithm>
#include <utility>

#include "raw_node_impl.hpp"

namespace queen::raft {

void RawNode::Impl::send(Message message) {
    message.from = id;
    if (message.type == MessageType::append_response ||
        message.type == MessageType::heartbeat_response ||
        message.type == MessageType::snapshot_response) {
        message.is_recovering = is_recovering;
    }
    if (message.type == MessageType::append_response ||
        message.type == MessageType::heartbeat_response) {
        message.commit = commit;  // lets the leader see when the group may go quiet
    }
    if (message.term == Term{0}) {
        message.term = term;
    }
    // The leader replicates in parallel with its own persistence: these depend only on its
    // term, which was durable before it could win the election. Everything else (votes,
    // append responses, ...) depends on state this Ready persists.
    const bool is_leader_traffic =
        role == Role::leader &&
        (message.type == MessageType::append || message.type == MessageType::heartbeat ||
         message.type == MessageType::snapshot || message.type == MessageType::timeout_now ||
         message.type == MessageType::read_index_response || message.type == MessageType::quiesce);
    const bool is_vote_grant =
        message.type == MessageType::request_vote_response && !message.reject;
    if (is_leader_traffic || (detail::mutation_skip_vote_fsync && is_vote_grant)) {
        messages.push_back(std::move(message));
    } else {
        messages_after_persist.push_back(std::move(message));
    }
}

bool RawNode::Impl::has_ready() const {
    if (is_ready_outstanding) {
        return false;
    }
    return persist_handed < last_index() || !(hard_state() == handed_hard_state) ||
           restore_pending.has_value() || apply_handed < apply_limit() || !messages.empty() ||
           !messages_after_persist.empty() || !read_states.empty() ||
           (role == Role::leader && (needs_broadcast || needs_commit_broadcast));
}

Ready RawNode::Impl::make_ready() {
    QUEEN_ASSERT(!is_ready_outstanding, "ready() called twice without advance()");
    if (role == Role::leader && (needs_broadcast || needs_commit_broadcast)) {
        broadcast_append(needs_commit_broadcast);
        needs_broadcast = false;
        needs_commit_broadcast = false;
    }
    Ready rd;
    outstanding = Outstanding{};
    if (restore_pending.has_value()) {
        outstanding.snapshot_index = restore_pending->meta.index;
        rd.snapshot = std::move(restore_pending);
        restore_pending.reset();
        rd.must_sync = true;
    }
    rd.entries.reserve(last_index().value() - persist_handed.value());
    for (LogIndex i = persist_handed.next(); i <= last_index(); i = i.next()) {
        rd.entries.push_back(entry_at(i));
    }
    if (!rd.entries.empty()) {
        outstanding.has_entries = true;
        outstanding.last_entry_index = rd.entries.back().index;
        outstanding.last_entry_term = rd.entries.back().term;
        persist_handed = rd.entries.back().index;
        rd.must_sync = true;
    }
    const HardState current = hard_state();
    if (!(current == handed_hard_state)) {
        HardState persisted = current;
        if (detail::mutation_forget_vote) {
            persisted.vote = no_node;
        }
        rd.must_sync = rd.must_sync || current.term != handed_hard_state.term ||
                       current.vote != handed_hard_state.vote;
        rd.hard_state = persisted;
        handed_hard_state = current;
    }
    std::uint64_t bytes = 0;
    const LogIndex limit = apply_limit();
    for (LogIndex i = std::max(apply_handed.next(), first_index()); i <= limit; i = i.next()) {
        const Entry& entry = entry_at(i);
        if (!rd.committed_entries.empty() && bytes + entry.data.size() > options.apply_bytes_max) {
            break;
        }
        bytes += entry.data.size();
        if (entry.type == EntryType::conf_change) {
            auto change = decode_conf_change(entry.data);
            if (change.has_value()) {
                outstanding.conf_changes.emplace_back(entry.index, change.value());
            }
        }
        rd.committed_entries.push_back(entry);
        apply_handed = entry.index;
    }
    outstanding.committed_last = apply_handed;
    rd.messages.swap(messages);
    rd.messages_after_persist.swap(messages_after_persist);
    rd.read_states.swap(read_states);
    is_ready_outstanding = true;
    return rd;
}

void RawNode::Impl::advance() {
    QUEEN_ASSERT(is_ready_outstanding, "advance() without an outstanding ready()");
    is_ready_outstanding = false;
    if (outstanding.snapshot_index.has_value() &&
        *outstanding.snapshot_index == snapshot.meta.index) {
        stable = std::max(stable, snapshot.meta.index);
        applied = std::max(applied, snapshot.meta.index);
    }
    if (outstanding.has_entries &&
        matches(outstanding.last_entry_index, outstanding.last_entry_term)) {
        stable = std::max(stable, outstanding.last_entry_index);
    }
    for (const auto& [index, change] : outstanding.conf_changes) {
        if (index > snapshot.meta.index || conf_history.empty()) {
            apply_conf_change(index, change);
        }
    }
    applied = std::max(applied, outstanding.committed_last);
    if (role == Role::leader) {
        auto self = progress.find(id);
        if (self != progress.end()) {
            self->second.match = stable;
            self->second.next = last_index().next();
        }
        if (maybe_commit()) {
            needs_commit_broadcast = true;
        }
    }
}

}  // namespace queen::raft
