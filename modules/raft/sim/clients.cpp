// modules/raft/sim/clients.cpp — the simulated clients: writes with retries (exactly-once by
// session), ReadIndex reads, their acknowledgements, and the encoding of their commands.
#include <utility>
#include <vector>

#include "simulation_impl.hpp"

namespace queen::raft::sim::detail {

Bytes encode_command(const Command& c) {
    Bytes out;
    ByteWriter w(out);
    w.varint(c.client);
    w.varint(c.seq);
    return out;
}
std::optional<Command> decode_command(const Bytes& data) {
    if (data.empty()) {
        return std::nullopt;
    }
    ByteReader r(data);
    Command c;
    c.client = r.varint();
    c.seq = r.varint();
    if (!r.ok()) {
        return std::nullopt;
    }
    return c;
}

std::vector<NodeId> Simulation::up_members() {
    std::vector<NodeId> ids;
    for (auto& [id, n] : nodes_) {
        if (n.is_up && !n.is_retired) {
            ids.push_back(id);
        }
    }
    return ids;
}

NodeId Simulation::pick_target(const Client& c) {
    // Prefer a node that believes it leads; otherwise any node (it may redirect).
    std::vector<NodeId> leaders;
    for (auto& [id, n] : nodes_) {
        if (n.is_up && !n.is_retired && n.raw->status().role == Role::leader) {
            leaders.push_back(id);
        }
    }
    if (!leaders.empty() && rng_.chance(0.8)) {
        return leaders[rng_.below(leaders.size())];
    }
    const auto ids = up_members();
    return ids.empty() ? c.target : ids[rng_.below(ids.size())];
}

void Simulation::run_client(Client& c) {
    const Micros timeout = 300 * ms;
    if (c.is_busy && now_ < c.deadline) {
        schedule(Event{c.deadline, 0, EventKind::client, {}, 0, c.id, {}});
        return;
    }
    if (!c.is_busy && is_healing_) {
        return;  // the liveness phase only finishes what is pending
    }
    if (!c.is_busy) {
        // A new operation.
        c.is_busy = true;
        c.is_read = rng_.chance(read_p_);
        if (c.is_read) {
            c.read_id = ++read_ids_;
            c.read_floor = LogIndex{acked_index_max_};
        } else {
            c.seq += 1;
        }
    }
    // (Re)send: retries keep the same seq, so the state machine deduplicates them.
    c.target = pick_target(c);
    c.deadline = now_ + timeout;
    auto found = nodes_.find(c.target);
    if (found != nodes_.end() && found->second.is_up && !found->second.is_retired &&
        found->second.paused_until <= now_) {
        SimNode& n = found->second;
        if (c.is_read) {
            Bytes context;
            ByteWriter(context).varint(c.read_id);
            if (n.raw->read_index(std::move(context)).has_value()) {
                n.pending_reads[c.read_id] = PendingRead{c.id, LogIndex{0}, false};
            }
        } else if (n.raw->propose(encode_command(Command{c.id, c.seq})).has_value()) {
            n.pending_writes[c.id] = c.seq;
        }
        pump(n);
        after_event(n);
    }
    schedule(Event{c.deadline, 0, EventKind::client, {}, 0, c.id, {}});
}

Micros Simulation::think_time() {
    Micros pause = rng_.between(1, 30) * ms;
    // With quiescence, clients sometimes pause long enough for the group to go quiet.
    if (is_quiescence_ && quiet_rng_.chance(0.2)) {
        pause += quiet_rng_.between(50, 800) * ms;
    }
    return pause;
}

void Simulation::complete_write(std::uint64_t client, std::uint64_t seq, LogIndex index) {
    Client& c = clients_.at(client);
    if (!c.is_busy || c.is_read || c.seq != seq) {
        return;  // a late answer to an earlier attempt
    }
    c.is_busy = false;
    acked_writes_ += 1;
    acked_.emplace_back(client, seq);
    acked_index_max_ = std::max(acked_index_max_, index.value());
    trace([&](std::ostream& o) {
        o << "ack client=" << client << " seq=" << seq << " index=" << index;
    });
    schedule(Event{now_ + think_time(), 0, EventKind::client, {}, 0, client, {}});
}

void Simulation::serve_reads(SimNode& n) {
    for (auto it = n.pending_reads.begin(); it != n.pending_reads.end();) {
        const PendingRead& read = it->second;
        if (!read.has_index || n.sm.applied < read.index) {
            ++it;
            continue;
        }
        Client& c = clients_.at(read.client);
        if (c.is_busy && c.is_read && c.read_id == it->first) {
            // The state served is the one at n.sm.applied: it must hold every write
            // acknowledged before the read began.
            if (n.sm.applied < c.read_floor) {
                fail("read safety: node " + std::to_string(n.id.value()) + " served read " +
                     std::to_string(c.read_id) + " at index " +
                     std::to_string(n.sm.applied.value()) + " < acked write at " +
                     std::to_string(c.read_floor.value()));
            }
            c.is_busy = false;
            reads_done_ += 1;
            schedule(Event{now_ + think_time(), 0, EventKind::client, {}, 0, c.id, {}});
        }
        it = n.pending_reads.erase(it);
    }
}

}  // namespace queen::raft::sim::detail
