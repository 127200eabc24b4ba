// modules/raft/src/quiescence.cpp — quiescence: an idle group stops its heartbeats and election
// ticks. When a leader may go quiet, the quiesce message, a follower's check of it, waking up.
#include <algorithm>
#include <utility>

#include "raw_node_impl.hpp"

namespace queen::raft {

bool RawNode::Impl::can_quiesce() const {
    if (role != Role::leader || is_quiescent || is_ready_outstanding || has_ready()) {
        return false;  // has_ready(): something unsent, unwritten or unapplied
    }
    if (transferee != no_node || !pending_reads.empty() || !reads_before_commit.empty()) {
        return false;
    }
    const LogIndex last = last_index();
    if (stable != last || commit != last || applied != commit || term_of(commit) != term ||
        pending_conf_index > applied) {
        return false;
    }
    for (const auto& [node, pr] : progress) {
        if (node == id) {
            continue;
        }
        // Every voter and learner holds the whole log and said it knows it is committed.
        if (pr.match != last || pr.commit < commit || pr.recovery_index > LogIndex{0}) {
            return false;
        }
    }
    return true;
}

bool RawNode::Impl::quiesce() {
    if (!can_quiesce()) {
        return false;
    }
    is_quiescent = true;
    election_elapsed = 0;
    heartbeat_elapsed = 0;
    for (const auto& [node, pr] : progress) {
        if (node == id) {
            continue;
        }
        Message m;
        m.type = MessageType::quiesce;
        m.to = node;
        m.index = last_index();
        m.log_term = last_term();
        m.commit = commit;
        send(std::move(m));
    }
    QUEEN_LOG(logger, Level::debug, "raft.quiesced",
              "node=" << id << " term=" << term << " index=" << last_index());
    return true;
}

void RawNode::Impl::unquiesce(bool send_heartbeat) {
    if (!is_quiescent) {
        return;
    }
    is_quiescent = false;
    election_elapsed = 0;
    heartbeat_elapsed = 0;
    QUEEN_LOG(logger, Level::debug, "raft.unquiesced",
              "node=" << id << " term=" << term << " role=" << role_name(role));
    if (role != Role::leader) {
        return;
    }
    // Check-quorum starts over: only answers from now on count (the flags are from before the
    // quiet period), and lease reads wait for a quorum of them.
    for (auto& [node, pr] : progress) {
        if (node != id) {
            pr.is_recent_active = false;
        }
    }
    is_lease_unconfirmed = true;
    if (send_heartbeat) {
        broadcast_heartbeat();
    }
}

void RawNode::Impl::wake() {
    if (!is_quiescent) {
        return;
    }
    QUEEN_LOG(
        logger, Level::info, "raft.woken",
        "node=" << id << " term=" << term << " role=" << role_name(role) << " leader=" << leader);
    if (role != Role::leader) {
        // The caller says the leader's node is gone: its lease ends now (etcd's ForgetLeader),
        // so this node grants (pre-)votes at once and campaigns after its election timeout
        // unless the leader speaks again.
        leader = no_node;
    }
    unquiesce();
}

void RawNode::Impl::handle_quiesce(const Message& m) {
    if (!matches(m.index, m.log_term) || last_index() != m.index) {
        // Our log is not the leader's (lost, damaged, or the message is stale): answer as to an
        // empty append after the leader's last entry, whose rejection hint lets the leader
        // repair us, and stay awake.
        is_quiescent = false;
        handle_append(m);
        return;
    }
    commit_to(std::min(m.commit, m.index));
    note_recovery(m);
    if (is_recovering || commit != m.index) {
        is_quiescent = false;
        handle_heartbeat(m);  // the answer tells the leader why (a recovering node's last index)
        return;
    }
    if (!is_quiescent) {
        QUEEN_LOG(
            logger, Level::debug, "raft.quiesced",
            "node=" << id << " term=" << term << " leader=" << m.from << " index=" << m.index);
    }
    is_quiescent = true;  // no answer: the group is silent from here
}

void RawNode::Impl::note_peer_response(Progress& pr, const Message& m) {
    pr.is_recent_active = true;
    pr.commit = std::max(pr.commit, m.commit);
    if (!is_lease_unconfirmed) {
        return;
    }
    std::size_t active = 0;
    for (const auto& [node, peer] : progress) {
        if (is_voter(node) && (node == id || peer.is_recent_active)) {
            active += 1;
        }
    }
    if (active >= quorum()) {
        is_lease_unconfirmed = false;
    }
}

}  // namespace queen::raft
