// modules/raft/src/election.cpp — elections and voting: role changes, pre-vote and vote
// campaigns, counting votes, election and heartbeat ticks, check-quorum, granting votes.
#include <utility>

#include "raw_node_impl.hpp"

namespace queen::raft {

void RawNode::Impl::reset_randomized_timeout() {
    randomized_election_timeout =
        options.election_ticks + static_cast<std::uint32_t>(rng.below(options.election_ticks));
}

void RawNode::Impl::reset(Term new_term) {
    if (term != new_term) {
        term = new_term;
        vote = no_node;
    }
    leader = no_node;
    election_elapsed = 0;
    heartbeat_elapsed = 0;
    reset_randomized_timeout();
    votes.clear();
    transferee = no_node;
    pending_reads.clear();
    reads_before_commit.clear();
    uncommitted_bytes = 0;
    needs_broadcast = false;
    needs_commit_broadcast = false;
    progress.clear();
    is_quiescent = false;
    is_lease_unconfirmed = false;
}

void RawNode::Impl::become_follower(Term new_term, NodeId new_leader) {
    reset(new_term);
    role = Role::follower;
    leader = new_leader;
    QUEEN_LOG(logger, Level::info, "raft.became_follower",
              "node=" << id << " term=" << term << " leader=" << leader);
}

void RawNode::Impl::become_pre_candidate() {
    QUEEN_ASSERT(role != Role::leader, "leader cannot become pre-candidate");
    // Pre-vote changes neither term nor vote: a failed pre-election disturbs nobody.
    votes.clear();
    is_quiescent = false;
    leader = no_node;
    role = Role::pre_candidate;
    QUEEN_LOG(logger, Level::info, "raft.became_pre_candidate", "node=" << id << " term=" << term);
}

void RawNode::Impl::become_candidate() {
    QUEEN_ASSERT(role != Role::leader, "leader cannot become candidate");
    reset(term.next());
    vote = id;
    role = Role::candidate;
    QUEEN_LOG(logger, Level::info, "raft.became_candidate", "node=" << id << " term=" << term);
}

void RawNode::Impl::add_progress(NodeId node, bool is_learner) {
    Progress pr;
    pr.next = last_index().next();
    pr.match = node == id ? stable : LogIndex{0};
    pr.is_learner = is_learner;
    pr.is_recent_active = true;
    progress[node] = std::move(pr);
}

void RawNode::Impl::become_leader() {
    QUEEN_ASSERT(role == Role::candidate, "only a candidate becomes leader");
    reset(term);
    role = Role::leader;
    leader = id;
    for (const NodeId node : conf.voters) {
        add_progress(node, false);
    }
    for (const NodeId node : conf.learners) {
        add_progress(node, true);
    }
    if (auto self = progress.find(id); self != progress.end()) {
        self->second.become_replicate();
    }
    // No conf change until this term's first entry is applied (the single-server change
    // fix: a new leader must commit in its term before changing membership).
    pending_conf_index = last_index();
    QUEEN_LOG(logger, Level::info, "raft.became_leader", "node=" << id << " term=" << term);
    append_local(EntryType::normal, Bytes{});
}

void RawNode::Impl::start_campaign(bool is_pre_vote, bool is_transfer) {
    if (!is_promotable()) {
        return;
    }
    Term vote_term;
    MessageType type;
    if (is_pre_vote) {
        become_pre_candidate();
        vote_term = term.next();
        type = MessageType::request_pre_vote;
    } else {
        become_candidate();
        vote_term = term;
        type = MessageType::request_vote;
    }
    if (poll(id, true) == Outcome::won) {
        if (is_pre_vote) {
            start_campaign(false, is_transfer);
        } else {
            become_leader();
        }
        return;
    }
    for (const NodeId node : conf.voters) {
        if (node == id) {
            continue;
        }
        Message m;
        m.type = type;
        m.to = node;
        m.term = vote_term;
        m.index = last_index();
        m.log_term = last_term();
        m.is_transfer = is_transfer;
        send(std::move(m));
    }
}

RawNode::Impl::Outcome RawNode::Impl::poll(NodeId from, bool granted) {
    votes.emplace(from, granted);
    std::size_t granted_count = 0;
    std::size_t rejected_count = 0;
    for (const auto& [node, is_granted] : votes) {
        if (!is_voter(node)) {
            continue;
        }
        (is_granted ? granted_count : rejected_count) += 1;
    }
    if (granted_count >= quorum()) {
        return Outcome::won;
    }
    if (rejected_count >= quorum()) {
        return Outcome::lost;
    }
    return Outcome::pending;
}

void RawNode::Impl::tick() {
    if (is_quiescent) {
        return;  // a quiet group counts nothing: no heartbeats, check-quorum or elections
    }
    if (role == Role::leader) {
        tick_leader();
    } else {
        election_elapsed += 1;
        if (is_promotable() && election_elapsed >= randomized_election_timeout) {
            election_elapsed = 0;
            start_campaign(options.pre_vote, false);
        }
    }
}

void RawNode::Impl::tick_leader() {
    heartbeat_elapsed += 1;
    election_elapsed += 1;
    if (election_elapsed >= options.election_ticks) {
        election_elapsed = 0;
        if (options.check_quorum && !is_quorum_active()) {
            QUEEN_LOG(logger, Level::warn, "raft.stepped_down",
                      "node=" << id << " term=" << term << " reason=no_active_quorum");
            become_follower(term, no_node);
            return;
        }
        if (transferee != no_node) {
            QUEEN_LOG(logger, Level::info, "raft.transfer_aborted",
                      "node=" << id << " target=" << transferee << " reason=timeout");
            transferee = no_node;
        }
    }
    if (heartbeat_elapsed >= options.heartbeat_ticks) {
        heartbeat_elapsed = 0;
        broadcast_heartbeat();
    }
}

bool RawNode::Impl::is_quorum_active() {
    std::size_t active = 0;
    for (auto& [node, pr] : progress) {
        if (node == id) {
            if (is_voter(node)) {
                active += 1;
            }
            continue;
        }
        if (pr.is_recent_active && is_voter(node)) {
            active += 1;
        }
        pr.is_recent_active = false;
    }
    return active >= quorum();
}

void RawNode::Impl::handle_vote_request(const Message& m) {
    const bool is_pre = m.type == MessageType::request_pre_vote;
    // A recovering node may have lost entries it acknowledged: its vote could elect a leader
    // without an entry that was committed counting that acknowledgement.
    const bool can_vote =
        (!is_recovering || detail::mutation_ignore_recovery) &&
        (vote == m.from || (vote == no_node && leader == no_node) || (is_pre && m.term > term));
    Message r;
    r.type = is_pre ? MessageType::request_pre_vote_response : MessageType::request_vote_response;
    r.to = m.from;
    if (can_vote && is_up_to_date(m.index, m.log_term)) {
        r.term = m.term;  // for pre-votes: the future term being asked about
        QUEEN_LOG(
            logger, Level::debug, "raft.vote_granted",
            "node=" << id << " term=" << term << " candidate=" << m.from << " pre=" << is_pre);
        if (!is_pre) {
            election_elapsed = 0;
            vote = m.from;
        }
    } else {
        r.reject = true;
        QUEEN_LOG(
            logger, Level::debug, "raft.vote_rejected",
            "node=" << id << " term=" << term << " candidate=" << m.from << " pre=" << is_pre);
    }
    send(std::move(r));
}

void RawNode::Impl::step_candidate(const Message& m) {
    const MessageType response_type = role == Role::pre_candidate
                                          ? MessageType::request_pre_vote_response
                                          : MessageType::request_vote_response;
    switch (m.type) {
        case MessageType::append:
            become_follower(m.term, m.from);
            handle_append(m);
            return;
        case MessageType::heartbeat:
            become_follower(m.term, m.from);
            handle_heartbeat(m);
            return;
        case MessageType::snapshot:
            become_follower(m.term, m.from);
            handle_snapshot(m);
            return;
        case MessageType::quiesce:
            become_follower(m.term, m.from);
            handle_quiesce(m);
            return;
        default: break;
    }
    if (m.type != response_type) {
        return;
    }
    switch (poll(m.from, !m.reject)) {
        case Outcome::won:
            if (role == Role::pre_candidate) {
                start_campaign(false, false);
            } else {
                become_leader();
                broadcast_append(true);
            }
            break;
        case Outcome::lost: become_follower(term, no_node); break;
        case Outcome::pending: break;
    }
}

}  // namespace queen::raft
