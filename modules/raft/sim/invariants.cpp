// modules/raft/sim/invariants.cpp — the invariant checks: election safety, vote durability,
// log matching, the committed ledger, leader completeness, state-machine safety, convergence.
#include <algorithm>
#include <sstream>
#include <utility>

#include "simulation_impl.hpp"

namespace queen::raft::sim::detail {

void Simulation::observe(SimNode& n) {
    const NodeStatus s = n.raw->status();
    if (s.role == Role::leader) {
        auto [it, inserted] = leaders_.emplace(s.hard_state.term, n.id);
        if (!inserted && it->second != n.id) {
            fail("election safety: nodes " + std::to_string(it->second.value()) + " and " +
                 std::to_string(n.id.value()) + " both lead term " +
                 std::to_string(s.hard_state.term.value()));
        }
        if (n.last_role != Role::leader) {
            check_leader_completeness(n, s);
        }
    }
    n.last_role = s.role;
    observe_commit(n, s);
}

// `commit_term`: the term of the node that first reported the entry committed (its leader
// committed it in that term or earlier).
void Simulation::ledger_append(const Entry& e, Term commit_term) {
    ledger_commit_term_.push_back(commit_term);
    const std::uint64_t h = entry_hash(e);
    ledger_.push_back(h);
    ledger_prefix_.push_back(mix(ledger_prefix_.empty() ? 0 : ledger_prefix_.back(), h));
}

void Simulation::observe_commit(SimNode& n, const NodeStatus& s) {
    const LogIndex commit = s.hard_state.commit;
    if (commit <= n.checked_commit) {
        return;
    }
    for (LogIndex i = std::max(n.checked_commit.next(), s.first_index); i <= commit; i = i.next()) {
        auto entries = n.raw->entries(i, i.next());
        if (!entries.has_value() || entries->empty()) {
            fail("node " + std::to_string(n.id.value()) + " committed " +
                 std::to_string(i.value()) + " but cannot read it");
        }
        const std::uint64_t h = entry_hash(entries->front());
        if (i.value() <= ledger_.size()) {
            if (ledger_[i.value() - 1] != h) {
                fail("committed entry changed: index " + std::to_string(i.value()) + " on node " +
                     std::to_string(n.id.value()) + " differs from the ledger");
            }
        } else if (i.value() == ledger_.size() + 1) {
            ledger_append(entries->front(), s.hard_state.term);
            conf_changes_ += entries->front().type == EntryType::conf_change ? 1 : 0;
        } else {
            fail("ledger gap: node " + std::to_string(n.id.value()) + " committed " +
                 std::to_string(i.value()) + " beyond ledger " + std::to_string(ledger_.size()));
        }
    }
    n.checked_commit = commit;
}

void Simulation::check_ledger_prefix(const SimNode& n, LogIndex index, std::uint64_t hash,
                                     const char* where) {
    if (index.value() == 0) {
        return;
    }
    if (index.value() > ledger_.size()) {
        fail(std::string("state machine safety (") + where + "): node " +
             std::to_string(n.id.value()) + " applied " + std::to_string(index.value()) +
             " beyond the committed ledger " + std::to_string(ledger_.size()));
    }
    if (ledger_prefix_[index.value() - 1] != hash) {
        fail(std::string("state machine safety (") + where + "): node " +
             std::to_string(n.id.value()) + " state at " + std::to_string(index.value()) +
             " differs from the ledger");
    }
}

// A leader of term T holds every entry committed in a term before T. (A late leader of an
// old term, elected by delayed votes, need not hold what later terms committed.)
void Simulation::check_leader_completeness(SimNode& n, const NodeStatus& s) {
    std::uint64_t required = 0;
    for (std::uint64_t i = ledger_.size(); i > 0; --i) {
        if (ledger_commit_term_[i - 1] < s.hard_state.term) {
            required = i;
            break;
        }
    }
    if (s.last_index.value() < required) {
        fail("leader completeness: node " + std::to_string(n.id.value()) + " leads term " +
             std::to_string(s.hard_state.term.value()) + " with last index " +
             std::to_string(s.last_index.value()) + " < committed " + std::to_string(required));
    }
    for (std::uint64_t i = std::max<std::uint64_t>(s.first_index.value(), 1); i <= required; ++i) {
        auto entries = n.raw->entries(LogIndex{i}, LogIndex{i + 1});
        if (!entries.has_value() || entry_hash(entries->front()) != ledger_[i - 1]) {
            fail("leader completeness: new leader " + std::to_string(n.id.value()) +
                 " lacks committed entry " + std::to_string(i));
        }
    }
}

// Log matching, by induction: every (index, term) names one entry with one predecessor term.
void Simulation::check_log_matching(SimNode& n, const std::vector<Entry>& entries) {
    for (const Entry& e : entries) {
        auto prev = n.raw->term_at(e.index.prev());
        const std::uint64_t prev_term = prev.has_value() ? prev.value().value() : UINT64_MAX;
        const auto key = std::make_pair(e.index.value(), e.term.value());
        const auto value = std::make_pair(entry_hash(e), prev_term);
        auto [it, inserted] = log_matching_.emplace(key, value);
        if (inserted) {
            continue;
        }
        const bool same_entry = it->second.first == value.first;
        const bool same_prev = it->second.second == value.second ||
                               it->second.second == UINT64_MAX || prev_term == UINT64_MAX;
        if (!same_entry || !same_prev) {
            fail("log matching: node " + std::to_string(n.id.value()) + " holds a different " +
                 "entry (or predecessor) at index " + std::to_string(e.index.value()) + " term " +
                 std::to_string(e.term.value()));
        }
    }
}

void Simulation::record_vote(const SimNode& n, const Message& m) {
    const auto key = std::make_pair(n.id.value(), m.term.value());
    auto [it, inserted] = votes_.emplace(key, m.to);
    if (!inserted && it->second != m.to) {
        fail("vote durability: node " + std::to_string(n.id.value()) + " voted for " +
             std::to_string(it->second.value()) + " and " + std::to_string(m.to.value()) +
             " in term " + std::to_string(m.term.value()));
    }
    std::uint64_t& highest = highest_vote_term_[n.id.value()];
    highest = std::max(highest, m.term.value());
}

void Simulation::check_vote_durable_on_restart(const SimNode& n, const HardState& hs) {
    auto found = highest_vote_term_.find(n.id.value());
    if (found == highest_vote_term_.end()) {
        return;
    }
    if (hs.term.value() < found->second) {
        fail("vote durability: node " + std::to_string(n.id.value()) + " restarted in term " +
             std::to_string(hs.term.value()) + " after voting in term " +
             std::to_string(found->second));
    }
    if (hs.term.value() == found->second) {
        const NodeId voted = votes_.at({n.id.value(), found->second});
        if (hs.vote != voted) {
            fail("vote durability: node " + std::to_string(n.id.value()) + " restarted with vote " +
                 std::to_string(hs.vote.value()) + " in term " + std::to_string(hs.term.value()) +
                 " but had voted for " + std::to_string(voted.value()));
        }
    }
}

bool Simulation::is_converged() {
    auto leader = current_leader();
    if (!leader) {
        return false;
    }
    for (const auto& [id, c] : clients_) {
        if (c.is_busy) {
            return false;
        }
    }
    SimNode& l = nodes_.at(*leader);
    const NodeStatus ls = l.raw->status();
    if (ls.hard_state.commit != ls.last_index) {
        return false;
    }
    for (const NodeId id : ls.conf_state.voters) {
        auto found = nodes_.find(id);
        if (found == nodes_.end() || !found->second.is_up) {
            return false;
        }
        SimNode& n = found->second;
        if (n.sm.applied != ls.last_index || n.is_sync_pending) {
            return false;
        }
    }
    return true;
}

void Simulation::check_final() {
    if (!is_converged()) {
        std::ostringstream why;
        auto leader = current_leader();
        why << "liveness: no convergence after healing (leader=" << (leader ? leader->value() : 0)
            << " ledger=" << ledger_.size();
        for (auto& [id, n] : nodes_) {
            if (!n.is_retired && n.is_up) {
                const NodeStatus s = n.raw->status();
                why << " [" << id << " " << role_name(s.role) << " t=" << s.hard_state.term
                    << " c=" << s.hard_state.commit << " a=" << n.sm.applied
                    << " l=" << s.last_index << " v=" << s.conf_state.voters.size() << "]";
            }
        }
        for (const auto& [cid, c] : clients_) {
            if (c.is_busy) {
                why << " client" << cid << (c.is_read ? " read" : " write") << " pending";
            }
        }
        why << ")";
        fail(why.str());
    }
    // Durability and exactly-once: every acknowledged write is in every member's state.
    SimNode& l = nodes_.at(*current_leader());
    for (const NodeId id : l.raw->status().conf_state.voters) {
        const SimNode& n = nodes_.at(id);
        std::uint64_t total = 0;
        for (const auto& [client, seq] : n.sm.sessions) {
            total += seq;
        }
        if (total != n.sm.effects) {
            fail("exactly-once: node " + std::to_string(id.value()) + " applied " +
                 std::to_string(n.sm.effects) + " effects for " + std::to_string(total) +
                 " distinct commands");
        }
        for (const auto& [client, seq] : acked_) {
            auto found = n.sm.sessions.find(client);
            if (found == n.sm.sessions.end() || found->second < seq) {
                fail("durability: acknowledged write client=" + std::to_string(client) + " seq=" +
                     std::to_string(seq) + " missing on node " + std::to_string(id.value()));
            }
        }
    }
}

}  // namespace queen::raft::sim::detail
