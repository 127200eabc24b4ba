// modules/raft/src/step.cpp — message dispatch: the term rules every message passes, then
// what a follower and a leader do with each message type (a candidate's: election.cpp).
#include "raw_node_impl.hpp"

namespace queen::raft {

void RawNode::Impl::step(const Message& m) {
    if (m.to != id || m.from == id || m.from == no_node) {
        return;
    }
    if (!is_quiescent || role != Role::leader) {
        step_message(m);
        return;
    }
    // A quiet leader stays quiet through what needs no answer (a late acknowledgement); it
    // wakes when a message makes it send anything, and on any (pre-)vote request even when it
    // ignores it: the candidate lost track of it, and heartbeats bring it back.
    const std::size_t queued = messages.size() + messages_after_persist.size();
    step_message(m);
    const bool is_vote_request =
        m.type == MessageType::request_vote || m.type == MessageType::request_pre_vote;
    if (is_vote_request || messages.size() + messages_after_persist.size() != queued) {
        unquiesce();
    }
}

void RawNode::Impl::step_message(const Message& m) {
    const bool is_vote_request =
        m.type == MessageType::request_vote || m.type == MessageType::request_pre_vote;
    if (is_vote_request && is_quiescent && role == Role::follower && m.from == leader) {
        // The leader we stay quiet for campaigns: it no longer leads (it restarted), so its
        // lease is over. Wake as if told its node was gone, and answer as raft does.
        wake();
    }
    if (m.term > term) {
        if (is_vote_request) {
            const bool in_lease = options.check_quorum && leader != no_node &&
                                  election_elapsed < options.election_ticks;
            if (!m.is_transfer && in_lease) {
                QUEEN_LOG(logger, Level::info, "raft.vote_ignored_in_lease",
                          "node=" << id << " term=" << term << " from=" << m.from
                                  << " msg_term=" << m.term << " leader=" << leader);
                return;
            }
        }
        if (m.type == MessageType::request_pre_vote) {
            // Never change term on a pre-vote request.
        } else if (m.type == MessageType::request_pre_vote_response && !m.reject) {
            // Granted pre-votes carry the future term; the candidate bumps on a quorum.
        } else if (m.type == MessageType::append || m.type == MessageType::heartbeat ||
                   m.type == MessageType::snapshot || m.type == MessageType::quiesce) {
            become_follower(m.term, m.from);
        } else {
            become_follower(m.term, no_node);
        }
    } else if (m.term < term) {
        if ((options.check_quorum || options.pre_vote) &&
            (m.type == MessageType::append || m.type == MessageType::heartbeat ||
             m.type == MessageType::quiesce)) {
            // A stale leader learns the new term from this and steps down.
            Message r;
            r.type = MessageType::append_response;
            r.to = m.from;
            send(std::move(r));
        } else if (m.type == MessageType::request_pre_vote) {
            Message r;
            r.type = MessageType::request_pre_vote_response;
            r.to = m.from;
            r.reject = true;
            send(std::move(r));
        }
        return;
    }

    if (is_vote_request) {
        handle_vote_request(m);
        return;
    }
    switch (role) {
        case Role::leader: step_leader(m); break;
        case Role::candidate:
        case Role::pre_candidate: step_candidate(m); break;
        case Role::follower: step_follower(m); break;
    }
}

void RawNode::Impl::step_follower(const Message& m) {
    switch (m.type) {
        case MessageType::append:
            election_elapsed = 0;
            leader = m.from;
            is_quiescent = false;  // the leader is awake: so are we
            handle_append(m);
            break;
        case MessageType::heartbeat:
            election_elapsed = 0;
            leader = m.from;
            is_quiescent = false;
            handle_heartbeat(m);
            break;
        case MessageType::snapshot:
            election_elapsed = 0;
            leader = m.from;
            is_quiescent = false;
            handle_snapshot(m);
            break;
        case MessageType::quiesce:
            election_elapsed = 0;
            leader = m.from;
            handle_quiesce(m);
            break;
        case MessageType::timeout_now:
            QUEEN_LOG(logger, Level::info, "raft.transfer_campaign",
                      "node=" << id << " term=" << term << " from=" << m.from);
            // A transfer skips pre-vote: the old leader asked for it.
            start_campaign(false, true);
            break;
        case MessageType::read_index_response:
            if (!m.reject) {
                read_states.push_back(ReadState{m.index, m.context});
            }
            break;
        default: break;
    }
}

void RawNode::Impl::step_leader(const Message& m) {
    auto found = progress.find(m.from);
    switch (m.type) {
        case MessageType::append_response: {
            if (found == progress.end()) {
                return;
            }
            Progress& pr = found->second;
            note_peer_recovery(pr, m);
            note_peer_response(pr, m);
            if (m.reject) {
                LogIndex hint = m.reject_hint;
                if (m.log_term > Term{0}) {
                    hint = find_conflict_by_term(m.reject_hint, m.log_term).first;
                }
                if (hint < pr.match) {
                    // The follower's log ends (or differs) below what it acknowledged: it lost
                    // its log (a data directory replaced under the same id). What we knew it
                    // holds is void: probe from where it says it ends (raft's own decrease
                    // never goes below the match, and would retry there forever).
                    QUEEN_LOG(logger, Level::warn, "raft.peer_log_lost",
                              "node=" << id << " peer=" << m.from << " match=" << pr.match
                                      << " hint=" << hint);
                    pr.forget_match(hint);
                    maybe_send_append(m.from, true);
                    return;
                }
                if (pr.maybe_decrease(m.index, hint)) {
                    if (pr.state == ProgressState::replicate) {
                        pr.become_probe();
                    }
                    maybe_send_append(m.from, true);
                }
                return;
            }
            if (pr.maybe_update(m.index)) {
                if (pr.state == ProgressState::probe) {
                    pr.become_replicate();
                } else if (pr.state == ProgressState::snapshot && pr.match >= pr.pending_snapshot) {
                    pr.become_probe();
                    pr.become_replicate();
                }
                // A moved commit is announced by the next ready() (one message per peer).
                maybe_commit();
                while (maybe_send_append(m.from, false)) {
                }
                if (m.from == transferee && pr.match == last_index()) {
                    send_timeout_now(m.from);
                }
            }
            return;
        }
        case MessageType::heartbeat_response: {
            if (found == progress.end()) {
                return;
            }
            Progress& pr = found->second;
            note_peer_recovery(pr, m);
            note_peer_response(pr, m);
            pr.is_probe_sent = pr.state == ProgressState::snapshot ? pr.is_probe_sent : false;
            if (pr.state == ProgressState::snapshot) {
                // Chunks may be lost: resend the one the follower is waiting for.
                if (pr.pending_snapshot != snapshot.meta.index) {
                    pr.become_snapshot(snapshot.meta.index);
                }
                send_snapshot_chunk(m.from, pr);
            } else if (pr.match < last_index() || pr.match < commit) {
                // Appends or their acks may have been lost: with a full window, free one
                // slot so an (empty) append goes out and the answer re-syncs match.
                if (pr.state == ProgressState::replicate &&
                    pr.inflights.size() >= inflight_limit(pr)) {
                    pr.inflights.pop_front();
                }
                maybe_send_append(m.from, true);
            }
            ack_read(m.from, m.context);
            return;
        }
        case MessageType::snapshot_response: {
            if (found == progress.end()) {
                return;
            }
            Progress& pr = found->second;
            pr.is_recent_active = true;
            if (pr.state != ProgressState::snapshot) {
                return;
            }
            if (pr.pending_snapshot != snapshot.meta.index) {
                pr.become_snapshot(snapshot.meta.index);  // we compacted again: restart
            } else if (m.snapshot.index == pr.pending_snapshot &&
                       m.snapshot.term == snapshot.meta.term) {
                pr.snapshot_offset = m.snapshot_offset;
            } else {
                pr.snapshot_offset = 0;
            }
            if (pr.snapshot_offset < snapshot.data.size() || snapshot.data.empty()) {
                send_snapshot_chunk(m.from, pr);
            }
            return;
        }
        case MessageType::transfer_leader:
            // A voter asks for itself (index 0) or forwards a request for another voter.
            handle_transfer(m.index == LogIndex{0} ? m.from : NodeId{m.index.value()});
            return;
        case MessageType::read_index: {
            if (found == progress.end()) {
                return;
            }
            start_read(m.context, m.from);
            return;
        }
        default: return;
    }
}

}  // namespace queen::raft
