// modules/raft/sim/simulation.cpp — the simulator's driver: the swarm configuration drawn from
// the seed, setup, the event loop and dispatch, Ready processing (persist, send, apply, compact).
#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include "simulation_impl.hpp"

namespace queen::raft::sim {
namespace detail {

Simulation::Simulation(const SimConfig& config)
    : config_(config),
      rng_(config.seed),
      quiet_rng_(mix(config.seed, 0x717569657363ULL)),
      source_rng_(mix(config.seed, 0x736f75726365ULL)) {
    draw_swarm();
}

SimResult Simulation::run() {
    SimResult result;
    try {
        setup();
        const Micros fault_end = config_.fault_phase_ms * ms;
        const Micros end = fault_end + config_.heal_phase_ms * ms;
        bool healed = false;
        while (!queue_.empty()) {
            Event event = queue_.top();
            queue_.pop();
            now_ = event.time;
            if (!healed && now_ >= fault_end) {
                heal_everything();
                healed = true;
            }
            if (now_ >= end) {
                break;
            }
            handle(event);
            events_ += 1;
            if (healed && events_ % 64 == 0 && is_converged()) {
                break;
            }
        }
        if (!healed) {
            heal_everything();
        }
        if (config_.is_damage && !is_converged()) {
            result.is_stalled = true;  // see SimConfig::is_damage
        } else {
            check_final();
        }
    } catch (const Failure& failure) {
        result.is_ok = false;
        result.failure = failure.what;
    }
    result.events = events_;
    result.trace_hash = trace_hash_;
    result.committed = ledger_.size();
    result.acked_writes = acked_writes_;
    result.reads = reads_done_;
    result.leaders = leaders_.size();
    result.crashes = crashes_;
    result.snapshots_installed = snapshots_installed_;
    result.conf_changes = conf_changes_;
    result.transfers = transfers_;
    result.damages = damages_;
    result.quiesces = quiesces_;
    result.wakes = wakes_;
    result.entries_from_source = entries_from_source_;
    return result;
}

void Simulation::draw_swarm() {
    drop_p_ = rng_.unit() * 0.2;
    duplicate_p_ = rng_.unit() * 0.1;
    delay_min_ = rng_.between(100, 2000);
    delay_max_ = delay_min_ + rng_.between(0, 30 * ms);
    disk_latency_max_ = rng_.between(100, 15 * ms);
    fault_interval_ = rng_.between(50, 600) * ms;
    crash_after_vote_p_ = rng_.unit() * 0.4;
    damage_p_ = config_.is_damage ? rng_.unit() * 0.5 : 0;
    compact_every_ = rng_.between(5, 60);
    chunk_bytes_ = rng_.between(16, 512);
    client_count_ = rng_.between(2, 5);
    read_p_ = rng_.unit() * 0.4;
    // The defaults most of the time, but also the bare algorithm.
    is_pre_vote_ = rng_.chance(0.8);
    is_check_quorum_ = rng_.chance(0.8);
    is_quiescence_ = quiet_rng_.chance(0.5);
    quiesce_p_ = 0.1 + quiet_rng_.unit() * 0.9;
    detect_p_ = 0.05 + quiet_rng_.unit() * 0.45;
    false_wake_p_ = quiet_rng_.unit() * 0.01;
    // Half the seeds give raft an entry source; its log keeps nothing past a compaction now and
    // then, a few entries, or many (a lagging peer then mostly catches up by appends).
    is_entry_source_ = source_rng_.chance(0.5);
    if (config_.is_entry_source.has_value()) {
        is_entry_source_ = *config_.is_entry_source;
    }
    const std::uint64_t retain_kind = source_rng_.below(3);
    retain_max_ = retain_kind == 0   ? 0
                  : retain_kind == 1 ? source_rng_.between(1, 20)
                                     : source_rng_.between(20, 400);
}

void Simulation::setup() {
    std::vector<NodeId> voters;
    for (std::uint32_t i = 1; i <= config_.nodes; ++i) {
        voters.push_back(NodeId{i});
    }
    const RestoreState boot = bootstrap_state(voters);
    // The ledger starts with the bootstrap entries every founder holds.
    for (const Entry& e : boot.entries) {
        ledger_append(e);
    }
    StateMachine founder_sm;
    for (const Entry& e : boot.entries) {
        founder_sm.hash = mix(founder_sm.hash, entry_hash(e));
        founder_sm.applied = e.index;
    }
    for (const NodeId id : voters) {
        SimNode& n = create_node(id);
        n.disk.durable.hard_state = boot.hard_state;
        n.disk.durable.entries = boot.entries;
        n.initial_sm = founder_sm;
        n.initial_applied = boot.applied;
        start(n);
    }
    next_node_id_ = config_.nodes + 1;
    for (std::uint64_t c = 1; c <= client_count_; ++c) {
        Client client;
        client.id = c;
        clients_[c] = client;
        schedule(Event{now_ + rng_.between(1, 50) * ms, 0, EventKind::client, {}, 0, c, {}});
    }
    schedule(Event{fault_interval_, 0, EventKind::fault, {}, 0, 0, {}});
}

SimNode& Simulation::create_node(NodeId id) {
    SimNode& n = nodes_[id];
    n.id = id;
    n.rng = std::make_unique<Rng>(mix(config_.seed, id.value()));
    n.tick_interval = rng_.between(9 * ms, 11 * ms);  // clock skew between nodes
    return n;
}

Options Simulation::node_options(NodeId id) const {
    Options o;
    o.id = id;
    o.snapshot_chunk_bytes_max = chunk_bytes_;
    o.inflight_appends_max = 8;
    o.append_entries_max = 16;
    o.pre_vote = is_pre_vote_;
    o.check_quorum = is_check_quorum_;
    return o;
}

void Simulation::start(SimNode& n) {
    n.incarnation += 1;
    n.is_up = true;
    n.is_sync_pending = false;
    n.paused_until = 0;
    n.pending_reads.clear();
    n.pending_writes.clear();
    const DiskImage& image = n.disk.durable;
    n.disk.cache = image;  // what a power loss or damage left is all a read sees now
    n.sm = image.snapshot.meta.index > LogIndex{0} ? StateMachine::decode(image.snapshot.data)
                                                   : n.initial_sm;
    RestoreState state{image.hard_state, image.snapshot, image.entries, n.sm.applied,
                       image.is_recovering};
    if (is_entry_source_ && !n.source) {
        // Entries raft reads below its memory are committed (it applied them): each must be the
        // ledger's entry at its index.
        n.source = std::make_unique<DiskSource>(n.disk, [this, id = n.id](const Entry& e) {
            entries_from_source_ += 1;
            if (e.index.value() == 0 || e.index.value() > ledger_.size() ||
                ledger_[e.index.value() - 1] != entry_hash(e)) {
                fail("entry source: node " + std::to_string(id.value()) + " served entry " +
                     std::to_string(e.index.value()) + " that is not the committed one");
            }
        });
    }
    auto opened = RawNode::open(node_options(n.id), std::move(state), *n.rng,
                                NullLogger::instance(), n.source.get());
    if (!opened) {
        fail("node " + std::to_string(n.id.value()) +
             " cannot restart: " + opened.error().message());
    }
    n.raw.emplace(std::move(opened).value());
    const NodeStatus s = n.raw->status();
    n.last_role = s.role;
    n.checked_commit = s.hard_state.commit;
    trace([&](std::ostream& o) {
        o << "start " << n.id << " term=" << s.hard_state.term << " vote=" << s.hard_state.vote
          << " commit=" << s.hard_state.commit << " snapshot=" << s.snapshot.index
          << " last=" << s.last_index << " applied=" << n.sm.applied;
    });
    check_vote_durable_on_restart(n, s.hard_state);
    schedule(
        Event{now_ + rng_.below(n.tick_interval), 0, EventKind::tick, n.id, n.incarnation, 0, {}});
    pump(n);
}

void Simulation::handle(const Event& event) {
    if (is_healing_ && (event.kind == EventKind::fault || event.kind == EventKind::restart)) {
        return;  // the fault schedule ended with the heal
    }
    if (event.kind == EventKind::fault) {
        note(event.kind, {}, 0, 0, 0);
        run_fault();
        schedule(Event{now_ + rng_.between(fault_interval_ / 2, fault_interval_ * 3 / 2),
                       0,
                       EventKind::fault,
                       {},
                       0,
                       0,
                       {}});
        return;
    }
    if (event.kind == EventKind::client) {
        note(event.kind, {}, event.client, 0, 0);
        run_client(clients_.at(event.client));
        return;
    }
    auto found = nodes_.find(event.node);
    if (found == nodes_.end()) {
        return;
    }
    SimNode& n = found->second;
    if (n.is_retired) {
        return;
    }
    if (event.kind == EventKind::restart) {
        if (!n.is_up) {
            note(event.kind, n.id, 0, 0, 0);
            trace([&](std::ostream& o) { o << "restart " << n.id; });
            start(n);
            after_event(n);
        }
        return;
    }
    if (!n.is_up) {
        return;
    }
    if (n.paused_until > now_) {
        // SIGSTOP: nothing runs; the event waits for the node to resume.
        Event later = event;
        later.time = n.paused_until + rng_.below(100);
        schedule(std::move(later));
        return;
    }
    switch (event.kind) {
        case EventKind::tick:
            if (event.incarnation != n.incarnation) {
                return;
            }
            note(event.kind, n.id, 0, 0, 0);
            if (is_quiescence_) {
                run_node_layer(n);
            }
            n.raw->tick();
            schedule(Event{now_ + n.tick_interval, 0, EventKind::tick, n.id, n.incarnation, 0, {}});
            break;
        case EventKind::deliver: {
            const Message& m = event.message;
            note(event.kind, n.id, mix(static_cast<std::uint64_t>(m.type), m.from.value()),
                 mix(m.term.value(), m.index.value()), m.entries.size());
            trace([&](std::ostream& o) {
                o << "deliver " << m.from << "->" << m.to << " " << message_type_name(m.type)
                  << " term=" << m.term << " index=" << m.index << " commit=" << m.commit
                  << " entries=" << m.entries.size() << (m.reject ? " reject" : "");
            });
            transfers_ += m.type == MessageType::timeout_now ? 1 : 0;
            n.raw->step(m);
            break;
        }
        case EventKind::sync_done:
            if (event.incarnation != n.incarnation || !n.is_sync_pending) {
                return;
            }
            note(event.kind, n.id, 0, 0, 0);
            finish_ready(n);
            break;
        case EventKind::unpause: note(event.kind, n.id, 0, 0, 0); break;
        default: break;
    }
    pump(n);
    after_event(n);
}

void Simulation::pump(SimNode& n) {
    while (n.is_up && !n.is_sync_pending && n.raw->has_ready()) {
        const bool was_quiet_leader = n.raw->is_quiescent() && n.raw->role() == Role::leader;
        Ready rd = n.raw->ready();
        observe(n);
        if (was_quiet_leader) {
            // A quiet leader sends nothing but its quiesce messages: anything else wakes it.
            for (const auto* list : {&rd.messages, &rd.messages_after_persist}) {
                for (const Message& m : *list) {
                    if (m.type != MessageType::quiesce) {
                        fail("quiescence: quiet leader " + std::to_string(n.id.value()) +
                             " sends " + std::string(message_type_name(m.type)));
                    }
                }
            }
        }
        if (rd.snapshot.has_value()) {
            n.disk.write(PendingWrite{PendingWrite::Kind::snapshot, {}, *rd.snapshot, {}});
        }
        if (!rd.entries.empty()) {
            check_log_matching(n, rd.entries);
            n.disk.write(PendingWrite{PendingWrite::Kind::entries, {}, {}, rd.entries});
        }
        if (rd.hard_state.has_value()) {
            n.disk.write(PendingWrite{PendingWrite::Kind::hard_state, *rd.hard_state, {}, {}});
        }
        for (Message& m : rd.messages) {
            transmit(n, std::move(m));
        }
        rd.messages.clear();
        n.outstanding = std::move(rd);
        n.is_sync_pending = true;
        if (n.outstanding.must_sync) {
            schedule(Event{now_ + rng_.between(50, disk_latency_max_),
                           0,
                           EventKind::sync_done,
                           n.id,
                           n.incarnation,
                           0,
                           {}});
            return;
        }
        finish_ready(n);
    }
}

void Simulation::finish_ready(SimNode& n) {
    if (n.outstanding.must_sync) {
        n.disk.sync();
    }
    n.is_sync_pending = false;
    Ready rd = std::move(n.outstanding);
    n.outstanding = Ready{};
    for (Message& m : rd.messages_after_persist) {
        transmit(n, std::move(m));
    }
    observe(n);
    if (rd.snapshot.has_value()) {
        StateMachine restored = StateMachine::decode(rd.snapshot->data);
        if (restored.applied != rd.snapshot->meta.index) {
            fail("snapshot data/meta mismatch on node " + std::to_string(n.id.value()));
        }
        check_ledger_prefix(n, restored.applied, restored.hash, "snapshot restore");
        snapshots_installed_ += 1;
        n.sm = restored;
    }
    for (const Entry& e : rd.committed_entries) {
        apply(n, e);
    }
    for (const ReadState& rs : rd.read_states) {
        ByteReader r(rs.context);
        const std::uint64_t read_id = r.varint();
        auto found = n.pending_reads.find(read_id);
        if (found != n.pending_reads.end()) {
            found->second.index = rs.index;
            found->second.has_index = true;
        }
    }
    n.raw->advance();
    serve_reads(n);
    maybe_compact(n);
}

void Simulation::apply(SimNode& n, const Entry& e) {
    if (e.index != n.sm.applied.next()) {
        fail("node " + std::to_string(n.id.value()) + " applies " +
             std::to_string(e.index.value()) + " after " + std::to_string(n.sm.applied.value()));
    }
    n.sm.hash = mix(n.sm.hash, entry_hash(e));
    n.sm.applied = e.index;
    check_ledger_prefix(n, e.index, n.sm.hash, "apply");
    if (e.type != EntryType::normal) {
        return;
    }
    const auto command = decode_command(e.data);
    if (!command.has_value()) {
        return;  // a leader's no-op
    }
    std::uint64_t& last = n.sm.sessions[command->client];
    if (command->seq == last + 1) {
        last = command->seq;
        n.sm.effects += 1;
    } else if (command->seq > last + 1) {
        fail("exactly-once: client " + std::to_string(command->client) + " seq " +
             std::to_string(command->seq) + " applied after " + std::to_string(last) + " on node " +
             std::to_string(n.id.value()) + " (a committed command was lost)");
    }
    // A duplicate (seq <= last) is not applied again but still answers its retry.
    auto waiting = n.pending_writes.find(command->client);
    if (waiting != n.pending_writes.end() && waiting->second <= last) {
        n.pending_writes.erase(waiting);
        complete_write(command->client, command->seq, e.index);
    }
}

void Simulation::after_event(SimNode& n) {
    if (n.is_up) {
        observe(n);
        // The node caught up: its "log was damaged" marker goes (a durable write; late is safe).
        if (n.disk.durable.is_recovering && !n.raw->status().is_recovering) {
            n.disk.durable.is_recovering = false;
            trace([&](std::ostream& o) { o << "recovered " << n.id; });
        }
    }
    run_crash_plan();
}

// What `queen serve`'s node layer is to do with quiescence, at each tick of a node: quiesce an
// idle leader instead of ticking it, and wake a quiet group when the node it depends on (the
// leader's; on a leader, any peer's) looks gone: down, paused, cut off towards this node
// (after a detection delay: detect_p_ per tick), or restarted since it last saw it (a new
// connection: at once). Now and then it is wrong (false_wake_p_).
void Simulation::run_node_layer(SimNode& n) {
    std::vector<NodeId> restarted;
    for (auto& [id, peer] : nodes_) {
        if (id != n.id && peer.is_up) {
            std::uint64_t& seen = n.peer_incarnations[id];
            if (seen != 0 && seen != peer.incarnation) {
                restarted.push_back(id);
            }
            seen = peer.incarnation;
        }
    }
    if (!n.raw->is_quiescent()) {
        if (n.raw->can_quiesce() && quiet_rng_.chance(quiesce_p_)) {
            (void)n.raw->quiesce();
            quiesces_ += 1;
            note(EventKind::tick, n.id, 1, 0, 0);
            trace([&](std::ostream& o) { o << "quiesce " << n.id; });
        }
        return;
    }
    const NodeStatus s = n.raw->status();
    auto looks_gone = [&](NodeId id) {
        auto found = nodes_.find(id);
        if (found == nodes_.end()) {
            return false;
        }
        const SimNode& peer = found->second;
        return !peer.is_up || peer.is_retired || peer.paused_until > now_ ||
               blocked_.count({id, n.id}) != 0;
    };
    bool is_restarted = false;
    bool is_gone = false;
    std::vector<NodeId> watched;
    if (s.role == Role::leader) {
        watched = s.conf_state.voters;
        watched.insert(watched.end(), s.conf_state.learners.begin(), s.conf_state.learners.end());
    } else if (s.leader != no_node) {
        watched.push_back(s.leader);
    }
    for (const NodeId id : watched) {
        if (id == n.id) {
            continue;
        }
        is_restarted =
            is_restarted || std::find(restarted.begin(), restarted.end(), id) != restarted.end();
        is_gone = is_gone || looks_gone(id);
    }
    if (is_restarted || (is_gone && quiet_rng_.chance(detect_p_)) ||
        quiet_rng_.chance(false_wake_p_)) {
        n.raw->wake();
        wakes_ += 1;
        note(EventKind::tick, n.id, 2, 0, 0);
        trace([&](std::ostream& o) {
            o << "wake " << n.id
              << (is_restarted ? " peer-restarted"
                  : is_gone    ? " peer-gone"
                               : "");
        });
    }
}

void Simulation::maybe_compact(SimNode& n) {
    const NodeStatus s = n.raw->status();
    if (n.sm.applied != s.applied || s.applied <= s.snapshot.index) {
        return;
    }
    if (is_entry_source_) {
        // At random points (about every compact_every_ applies): raft's memory lets go at any
        // time, the log keeps what it keeps.
        if (!source_rng_.chance(1.0 / static_cast<double>(compact_every_))) {
            return;
        }
    } else if (s.applied.value() < s.snapshot.index.value() + compact_every_) {
        return;
    }
    Bytes data = n.sm.encode();
    if (n.raw->compact(s.applied, data).has_value()) {
        PendingWrite w{PendingWrite::Kind::compact, {}, n.raw->snapshot(), {}};
        w.retain = retain_max_ == 0 ? 0 : source_rng_.below(retain_max_ + 1);
        n.disk.write(std::move(w));
    }
}

}  // namespace detail

// An assertion inside raft (or the simulator) becomes a reported failure with its seed instead
// of an abort, so `raft_sim` can print the replay line.
struct AssertionFailure {
    std::string what;
};
void throw_on_assert(const AssertionInfo& info) {
    throw AssertionFailure{std::string("assertion failed at ") + info.file + ":" +
                           std::to_string(info.line) + ": " + info.expression + ": " +
                           info.message};
}

SimResult run_simulation(const SimConfig& config) {
    const AssertHandler previous = set_assert_handler(&throw_on_assert);
    SimResult result;
    try {
        detail::Simulation simulation(config);
        result = simulation.run();
    } catch (const AssertionFailure& failure) {
        result.is_ok = false;
        result.failure = failure.what;
    }
    set_assert_handler(previous);
    return result;
}

}  // namespace queen::raft::sim
