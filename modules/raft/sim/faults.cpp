// modules/raft/sim/faults.cpp — the network model (loss, duplication, delay, partitions) and
// the fault schedule: crashes and power loss, pauses, transfers, campaigns, membership, the heal.
#include <algorithm>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "simulation_impl.hpp"

namespace queen::raft::sim::detail {

void Simulation::transmit(SimNode& from, Message m) {
    if (m.type == MessageType::request_vote_response && !m.reject) {
        record_vote(from, m);
        if (rng_.chance(crash_after_vote_p_)) {
            // Buggify: lose power right after a vote, when durability matters most.
            schedule_crash(from.id, now_ + rng_.below(disk_latency_max_), true);
        }
    }
    Bytes wire;
    encode_message(m, wire);
    auto decoded = decode_message(wire);
    if (!decoded.has_value() || !(decoded.value() == m)) {
        fail("codec round trip failed for " + std::string(message_type_name(m.type)));
    }
    if (blocked_.count({m.from, m.to}) != 0 || rng_.chance(drop_p_)) {
        return;
    }
    const int copies = rng_.chance(duplicate_p_) ? 2 : 1;
    for (int i = 0; i < copies; ++i) {
        const Micros delay = rng_.between(delay_min_, delay_max_);
        schedule(Event{now_ + delay, 0, EventKind::deliver, m.to, 0, 0, m});
    }
}

void Simulation::schedule_crash(NodeId id, Micros at, bool power_loss) {
    crash_plan_.push_back({at, id, power_loss});
}

void Simulation::crash(SimNode& n, bool power_loss) {
    trace(
        [&](std::ostream& o) { o << "crash " << n.id << (power_loss ? " power-loss" : " kill"); });
    note(EventKind::restart, n.id, power_loss ? 1 : 2, 0, 0);
    crashes_ += 1;
    if (power_loss) {
        n.disk.power_loss(*n.rng);
    } else {
        n.disk.kill();
    }
    const bool is_other_recovering = std::any_of(nodes_.begin(), nodes_.end(), [&](const auto& kv) {
        return kv.first != n.id && kv.second.disk.durable.is_recovering;
    });
    if (!is_other_recovering && rng_.chance(damage_p_)) {
        // What the state machine durably holds: its snapshot, or the bootstrap entries.
        const LogIndex applied = n.disk.durable.snapshot.meta.index > LogIndex{0}
                                     ? n.disk.durable.snapshot.meta.index
                                     : n.initial_sm.applied;
        if (n.disk.damage(*n.rng, applied)) {
            damages_ += 1;
            trace([&](std::ostream& o) {
                o << "damage " << n.id << " log cut to " << n.disk.durable.entries.size()
                  << " entries";
            });
        }
    }
    n.raw.reset();
    n.is_up = false;
    n.is_sync_pending = false;
    n.outstanding = Ready{};
    n.pending_reads.clear();
    n.pending_writes.clear();
    schedule(Event{now_ + rng_.between(20, 1500) * ms, 0, EventKind::restart, n.id, 0, 0, {}});
}

void Simulation::run_crash_plan() {
    while (!crash_plan_.empty()) {
        auto [at, id, power_loss] = crash_plan_.back();
        crash_plan_.pop_back();
        if (is_healing_) {
            continue;
        }
        // Planned crashes happen "at" a time; model them as the next fault of that node.
        auto found = nodes_.find(id);
        if (found != nodes_.end() && found->second.is_up && !found->second.is_retired) {
            pending_crashes_.push_back({at, id, power_loss});
        }
    }
    for (auto it = pending_crashes_.begin(); it != pending_crashes_.end();) {
        if (std::get<0>(*it) <= now_) {
            auto found = nodes_.find(std::get<1>(*it));
            if (found != nodes_.end() && found->second.is_up && !is_healing_) {
                crash(found->second, std::get<2>(*it));
            }
            it = pending_crashes_.erase(it);
        } else {
            ++it;
        }
    }
}

std::optional<NodeId> Simulation::current_leader() {
    std::optional<NodeId> best;
    Term best_term;
    for (auto& [id, n] : nodes_) {
        if (n.is_up && !n.is_retired) {
            const NodeStatus s = n.raw->status();
            if (s.role == Role::leader && (!best || s.hard_state.term > best_term)) {
                best = id;
                best_term = s.hard_state.term;
            }
        }
    }
    return best;
}

void Simulation::run_fault() {
    retire_removed();
    const auto ids = up_members();
    const std::uint64_t choice = rng_.below(100);
    if (choice < 15) {
        // Partition: random halves, isolated leader, one-way, or a bridge.
        blocked_.clear();
        std::vector<NodeId> all;
        for (auto& [id, n] : nodes_) {
            if (!n.is_retired) {
                all.push_back(id);
            }
        }
        const std::uint64_t shape = rng_.below(4);
        auto block_both = [&](NodeId a, NodeId b) {
            blocked_.insert({a, b});
            blocked_.insert({b, a});
        };
        if (shape == 0 && all.size() >= 2) {
            std::set<NodeId> side;
            const std::uint64_t count = rng_.between(1, all.size() / 2);
            while (side.size() < count) {
                side.insert(all[rng_.below(all.size())]);
            }
            for (NodeId a : all) {
                for (NodeId b : all) {
                    if (side.count(a) != side.count(b)) {
                        block_both(a, b);
                    }
                }
            }
        } else if (shape == 1) {
            if (auto leader = current_leader()) {
                for (NodeId b : all) {
                    if (b != *leader) {
                        block_both(*leader, b);
                    }
                }
            }
        } else if (shape == 2 && all.size() >= 2) {
            const NodeId a = all[rng_.below(all.size())];
            const NodeId b = all[rng_.below(all.size())];
            if (a != b) {
                blocked_.insert({a, b});
            }
        } else if (all.size() >= 3) {
            const NodeId bridge = all[rng_.below(all.size())];
            std::vector<NodeId> left;
            std::vector<NodeId> right;
            for (NodeId x : all) {
                if (x != bridge) {
                    (rng_.chance(0.5) ? left : right).push_back(x);
                }
            }
            for (NodeId a : left) {
                for (NodeId b : right) {
                    block_both(a, b);
                }
            }
        }
        trace([&](std::ostream& o) {
            o << "partition shape=" << shape << " cuts=" << blocked_.size();
        });
    } else if (choice < 30) {
        blocked_.clear();
        trace([&](std::ostream& o) { o << "heal network"; });
    } else if (choice < 45 && !ids.empty()) {
        crash(nodes_.at(ids[rng_.below(ids.size())]), rng_.chance(0.6));
    } else if (choice < 52 && !ids.empty()) {
        SimNode& n = nodes_.at(ids[rng_.below(ids.size())]);
        n.paused_until = now_ + rng_.between(10, 800) * ms;
        trace([&](std::ostream& o) {
            o << "pause " << n.id << " until " << n.paused_until / 1000 << "ms";
        });
    } else if (choice < 62) {
        if (auto leader = current_leader()) {
            SimNode& l = nodes_.at(*leader);
            const auto voters = l.raw->status().conf_state.voters;
            const NodeId target = voters[rng_.below(voters.size())];
            trace([&](std::ostream& o) { o << "transfer " << *leader << " -> " << target; });
            (void)l.raw->transfer_leadership(target);
            pump(l);
            after_event(l);
        }
    } else if (choice < 75) {
        change_membership();
    } else if (choice < 85 && !ids.empty()) {
        SimNode& n = nodes_.at(ids[rng_.below(ids.size())]);
        trace([&](std::ostream& o) { o << "campaign " << n.id; });
        n.raw->campaign();
        pump(n);
        after_event(n);
    }
    // else: a quiet period.
}

void Simulation::change_membership() {
    auto leader = current_leader();
    if (!leader) {
        return;
    }
    SimNode& l = nodes_.at(*leader);
    const ConfState conf = l.raw->status().conf_state;
    ConfChange change;
    if (!conf.learners.empty()) {
        change = ConfChange{ConfChangeType::add_voter, conf.learners.front()};
    } else if (conf.voters.size() > config_.nodes) {
        change =
            ConfChange{ConfChangeType::remove_node, conf.voters[rng_.below(conf.voters.size())]};
    } else {
        if (nodes_.size() > config_.nodes + 6) {
            return;  // bound the number of nodes a seed creates
        }
        const NodeId fresh{next_node_id_++};
        SimNode& n = create_node(fresh);
        n.initial_sm = StateMachine{};
        start(n);
        change = ConfChange{ConfChangeType::add_learner, fresh};
    }
    auto proposed = l.raw->propose_conf_change(change);
    trace([&](std::ostream& o) {
        o << "conf change " << static_cast<int>(change.type) << ":" << change.node_id
          << (proposed.has_value() ? " proposed" : " refused");
    });
    if (proposed.has_value() && change.type == ConfChangeType::remove_node) {
        removing_[change.node_id] = proposed.value();
    }
    pump(l);
    after_event(l);
}

void Simulation::retire_removed() {
    auto leader = current_leader();
    if (!leader) {
        return;
    }
    // The applied membership of whoever claims to lead: that may be a stale leader which never
    // saw the node join. Only a node that applied up to the removal's index has applied the join
    // (committed before the removal was proposed), so only then does "not a member" mean that a
    // removal was committed and the node may be shut down.
    const NodeStatus status = nodes_.at(*leader).raw->status();
    const ConfState& conf = status.conf_state;
    for (auto it = removing_.begin(); it != removing_.end();) {
        const NodeId id = it->first;
        const bool member = std::binary_search(conf.voters.begin(), conf.voters.end(), id) ||
                            std::binary_search(conf.learners.begin(), conf.learners.end(), id);
        if (!member && status.applied >= it->second) {
            SimNode& n = nodes_.at(id);
            trace([&](std::ostream& o) { o << "retire " << n.id; });
            n.is_retired = true;
            n.raw.reset();
            n.is_up = false;
            it = removing_.erase(it);
        } else {
            ++it;
        }
    }
}

void Simulation::heal_everything() {
    is_healing_ = true;
    blocked_.clear();
    drop_p_ = 0;
    duplicate_p_ = 0;
    pending_crashes_.clear();
    trace([&](std::ostream& o) { o << "heal everything"; });
    for (auto& [id, n] : nodes_) {
        if (n.is_retired) {
            continue;
        }
        n.paused_until = 0;
        if (!n.is_up) {
            start(n);
        }
    }
    // Stop the fault schedule: drop future fault and restart events.
    std::vector<Event> keep;
    while (!queue_.empty()) {
        Event e = queue_.top();
        queue_.pop();
        if (e.kind != EventKind::fault && e.kind != EventKind::restart) {
            keep.push_back(std::move(e));
        }
    }
    for (Event& e : keep) {
        queue_.push(std::move(e));
    }
}

}  // namespace queen::raft::sim::detail
