// modules/raft/src/membership.cpp — membership: validating and applying one-at-a-time conf
// changes (the leader's progress follows them), the conf at an index, leadership transfer.
#include <iterator>
#include <string>
#include <utility>

#include "raw_node_impl.hpp"

namespace queen::raft {

ConfState RawNode::Impl::conf_at(LogIndex index) const {
    ConfState result = snapshot.meta.conf_state;
    for (const auto& [at, state] : conf_history) {
        if (at <= index) {
            result = state;
        }
    }
    return result;
}

Status RawNode::Impl::validate_conf_change(const ConfChange& change) const {
    const bool voter = is_voter(change.node_id);
    const bool learner = detail::contains(conf.learners, change.node_id);
    auto invalid = [&](const char* why) {
        return Error{Errc::invalid_conf_change, std::string("conf change for node ") +
                                                    std::to_string(change.node_id.value()) + ": " +
                                                    why};
    };
    switch (change.type) {
        case ConfChangeType::add_voter:
            if (voter) {
                return invalid("already a voter");
            }
            break;
        case ConfChangeType::add_learner:
            if (voter) {
                return invalid("a voter cannot be demoted");
            }
            if (learner) {
                return invalid("already a learner");
            }
            break;
        case ConfChangeType::remove_node:
            if (!voter && !learner) {
                return invalid("not a member");
            }
            if (voter && conf.voters.size() == 1) {
                return invalid("cannot remove the last voter");
            }
            break;
    }
    return {};
}

void RawNode::Impl::apply_conf_change(LogIndex index, const ConfChange& change) {
    switch (change.type) {
        case ConfChangeType::add_voter:
            detail::erase_sorted(conf.learners, change.node_id);
            detail::insert_sorted(conf.voters, change.node_id);
            break;
        case ConfChangeType::add_learner:
            if (!is_voter(change.node_id)) {
                detail::insert_sorted(conf.learners, change.node_id);
            }
            break;
        case ConfChangeType::remove_node:
            if (conf.voters.size() > 1 || !is_voter(change.node_id)) {
                detail::erase_sorted(conf.voters, change.node_id);
            }
            detail::erase_sorted(conf.learners, change.node_id);
            break;
    }
    conf_history.emplace_back(index, conf);
    QUEEN_LOG(logger, Level::info, "raft.conf_applied",
              "node=" << id << " index=" << index << " voters=" << conf.voters.size()
                      << " learners=" << conf.learners.size()
                      << " change=" << static_cast<int>(change.type) << ":" << change.node_id);
    if (role != Role::leader) {
        return;
    }
    if (!is_voter(id) && !detail::contains(conf.learners, id)) {
        QUEEN_LOG(logger, Level::info, "raft.stepped_down",
                  "node=" << id << " term=" << term << " reason=removed");
        become_follower(term, no_node);
        return;
    }
    for (auto it = progress.begin(); it != progress.end();) {
        const bool member = is_voter(it->first) || detail::contains(conf.learners, it->first);
        it = member ? std::next(it) : progress.erase(it);
    }
    for (const NodeId node : conf.voters) {
        if (progress.count(node) == 0) {
            add_progress(node, false);
        }
        progress[node].is_learner = false;
    }
    for (const NodeId node : conf.learners) {
        if (progress.count(node) == 0) {
            add_progress(node, true);
        }
    }
    if (transferee != no_node && !is_voter(transferee)) {
        transferee = no_node;
    }
    maybe_commit();
    needs_commit_broadcast = true;  // probe new peers and announce the new quorum's commit
}

void RawNode::Impl::send_timeout_now(NodeId to) {
    Message m;
    m.type = MessageType::timeout_now;
    m.to = to;
    send(std::move(m));
    QUEEN_LOG(logger, Level::info, "raft.transfer_timeout_now",
              "node=" << id << " term=" << term << " target=" << to);
}

void RawNode::Impl::handle_transfer(NodeId target) {
    if (target == id || !is_voter(target) || progress.count(target) == 0) {
        return;
    }
    if (transferee == target) {
        return;
    }
    unquiesce();
    transferee = target;
    election_elapsed = 0;  // the transfer must finish within one election timeout
    QUEEN_LOG(logger, Level::info, "raft.transfer_started",
              "node=" << id << " term=" << term << " target=" << target);
    if (progress[target].match == last_index()) {
        send_timeout_now(target);
    } else {
        maybe_send_append(target, true);
    }
}

}  // namespace queen::raft
