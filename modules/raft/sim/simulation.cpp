// modules/raft/sim/simulation.cpp — the simulated cluster: nodes with a page-cache/durable disk
// model, a lossy reordering network, clients with retries, a swarm fault schedule, and the
// invariant checks (election safety, vote durability, log matching, committed ledger, leader
// completeness, state-machine safety, exactly-once, read safety, convergence).
#include "simulation.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "queen/core/logger.hpp"
#include "queen/core/rng.hpp"
#include "queen/raft/codec.hpp"
#include "queen/raft/raw_node.hpp"

namespace queen::raft::sim {
namespace {

using Micros = std::uint64_t;
constexpr Micros ms = 1000;

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}
std::uint64_t hash_bytes(const Bytes& data) {
    std::uint64_t h = 1469598103934665603ULL;
    for (const Byte b : data) {
        h = (h ^ b) * 1099511628211ULL;
    }
    return h;
}
std::uint64_t entry_hash(const Entry& e) {
    return mix(mix(mix(e.term.value(), e.index.value()), static_cast<std::uint64_t>(e.type)),
               hash_bytes(e.data));
}

// A client command: client id, sequence number, payload word.
struct Command {
    std::uint64_t client = 0;
    std::uint64_t seq = 0;
};
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

// The replicated state machine: sessions for exactly-once, a digest of everything applied.
struct StateMachine {
    LogIndex applied;
    std::uint64_t hash = 0;  // rolling over every applied entry: equals the ledger prefix hash
    std::map<std::uint64_t, std::uint64_t> sessions;  // client -> last applied seq
    std::uint64_t effects = 0;                        // commands applied (not deduplicated)

    Bytes encode() const {
        Bytes out;
        ByteWriter w(out);
        w.varint(applied.value());
        w.fixed<std::uint64_t>(hash);
        w.varint(effects);
        w.varint(sessions.size());
        for (const auto& [client, seq] : sessions) {
            w.varint(client);
            w.varint(seq);
        }
        return out;
    }
    static StateMachine decode(const Bytes& data) {
        StateMachine sm;
        ByteReader r(data);
        sm.applied = LogIndex{r.varint()};
        sm.hash = r.fixed<std::uint64_t>();
        sm.effects = r.varint();
        const std::uint64_t count = r.varint();
        for (std::uint64_t i = 0; i < count && r.ok(); ++i) {
            const std::uint64_t client = r.varint();
            sm.sessions[client] = r.varint();
        }
        QUEEN_ASSERT(r.ok() && r.at_end(), "sim snapshot decodes");
        return sm;
    }
};

struct DiskImage {
    HardState hard_state;
    Snapshot snapshot;
    std::vector<Entry> entries;  // after snapshot.meta.index, contiguous
};

// One write that reached the page cache (hard state, snapshot, entries or a compaction).
struct PendingWrite {
    enum class Kind { hard_state, snapshot, entries, compact } kind = Kind::hard_state;
    HardState hard_state;
    Snapshot snapshot;
    std::vector<Entry> entries;
};

void apply_write(DiskImage& image, const PendingWrite& w) {
    switch (w.kind) {
        case PendingWrite::Kind::hard_state: image.hard_state = w.hard_state; break;
        case PendingWrite::Kind::snapshot:
            image.snapshot = w.snapshot;
            image.entries.clear();
            break;
        case PendingWrite::Kind::compact:
            if (w.snapshot.meta.index > image.snapshot.meta.index) {
                std::erase_if(image.entries,
                              [&](const Entry& e) { return e.index <= w.snapshot.meta.index; });
                image.snapshot = w.snapshot;
            }
            break;
        case PendingWrite::Kind::entries: {
            if (w.entries.empty()) {
                break;
            }
            const LogIndex first = w.entries.front().index;
            std::erase_if(image.entries, [&](const Entry& e) { return e.index >= first; });
            const LogIndex last =
                image.entries.empty() ? image.snapshot.meta.index : image.entries.back().index;
            QUEEN_ASSERT(first <= last.next(), "sim disk: entries write leaves a gap");
            for (const Entry& e : w.entries) {
                if (e.index > image.snapshot.meta.index) {
                    image.entries.push_back(e);
                }
            }
            break;
        }
    }
}

struct Disk {
    DiskImage durable;
    std::vector<PendingWrite> pending;

    void write(PendingWrite w) { pending.push_back(std::move(w)); }
    void sync() {
        for (const PendingWrite& w : pending) {
            apply_write(durable, w);
        }
        pending.clear();
    }
    // Power loss: the log is one ordered file (DESIGN: one WAL per node), so a random prefix of
    // the unsynced writes survives; the first lost write may be torn (a prefix of its records
    // survives, as CRC recovery leaves it). The hard state is never durable ahead of the entries
    // written before it: that is the ordering contract of Ready (docs/raft.md).
    void power_loss(Rng& rng) {
        const std::size_t kept = rng.below(pending.size() + 1);
        for (std::size_t i = 0; i < kept; ++i) {
            apply_write(durable, pending[i]);
        }
        if (kept < pending.size() && pending[kept].kind == PendingWrite::Kind::entries &&
            rng.chance(0.5)) {
            PendingWrite torn = pending[kept];
            torn.entries.resize(rng.below(torn.entries.size() + 1));
            apply_write(durable, torn);
        }
        pending.clear();
    }
    // Process kill: the page cache survives.
    void kill() { sync(); }
};

struct PendingRead {
    std::uint64_t client = 0;
    LogIndex index;
    bool has_index = false;
};

struct SimNode {
    NodeId id;
    std::unique_ptr<Rng> rng;
    std::optional<RawNode> raw;
    Disk disk;
    StateMachine sm;
    StateMachine initial_sm;  // what the state machine holds before any snapshot
    LogIndex initial_applied;
    bool is_up = false;
    bool is_retired = false;
    bool is_sync_pending = false;
    Micros paused_until = 0;
    std::uint64_t incarnation = 0;
    Micros tick_interval = 10 * ms;
    Ready outstanding;
    std::map<std::uint64_t, std::uint64_t> pending_writes;  // client -> seq proposed here
    std::map<std::uint64_t, PendingRead> pending_reads;     // read context id -> read
    Role last_role = Role::follower;
    LogIndex checked_commit;
};

struct Client {
    std::uint64_t id = 0;
    std::uint64_t seq = 0;  // current (or last) command
    bool is_busy = false;
    bool is_read = false;
    std::uint64_t read_id = 0;
    LogIndex read_floor;  // every write acked before the read began is at or below this index
    Micros deadline = 0;
    NodeId target;
};

enum class EventKind : std::uint8_t { tick, deliver, sync_done, fault, client, restart, unpause };

struct Event {
    Micros time = 0;
    std::uint64_t seq = 0;
    EventKind kind = EventKind::tick;
    NodeId node;
    std::uint64_t incarnation = 0;
    std::uint64_t client = 0;
    Message message;
};
struct EventLater {
    bool operator()(const Event& a, const Event& b) const {
        return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
};

struct Failure {
    std::string what;
};

class Simulation {
public:
    explicit Simulation(const SimConfig& config) : config_(config), rng_(config.seed) {
        draw_swarm();
    }

    SimResult run() {
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
            check_final();
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
        return result;
    }

private:
    // ---- configuration drawn from the seed (swarm testing) -------------------------------
    void draw_swarm() {
        drop_p_ = rng_.unit() * 0.2;
        duplicate_p_ = rng_.unit() * 0.1;
        delay_min_ = rng_.between(100, 2000);
        delay_max_ = delay_min_ + rng_.between(0, 30 * ms);
        disk_latency_max_ = rng_.between(100, 15 * ms);
        fault_interval_ = rng_.between(50, 600) * ms;
        crash_after_vote_p_ = rng_.unit() * 0.4;
        compact_every_ = rng_.between(5, 60);
        chunk_bytes_ = rng_.between(16, 512);
        client_count_ = rng_.between(2, 5);
        read_p_ = rng_.unit() * 0.4;
        // The defaults most of the time, but also the bare algorithm.
        is_pre_vote_ = rng_.chance(0.8);
        is_check_quorum_ = rng_.chance(0.8);
    }

    // ---- tracing -------------------------------------------------------------------------
    void note(EventKind kind, NodeId node, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
        trace_hash_ = mix(
            mix(mix(mix(mix(trace_hash_, now_), static_cast<std::uint64_t>(kind)), node.value()),
                a),
            mix(b, c));
    }
    template <class F>
    void trace(F&& describe) {
        if (config_.trace) {
            std::ostringstream out;
            out << now_ / 1000 << "." << (now_ % 1000) / 100 << "ms ";
            describe(out);
            config_.trace(out.str());
        }
    }
    [[noreturn]] void fail(const std::string& what) {
        std::ostringstream out;
        out << "t=" << now_ / 1000 << "ms event=" << events_ << ": " << what;
        trace([&](std::ostream& o) { o << "FAIL " << what; });
        throw Failure{out.str()};
    }

    // ---- setup ---------------------------------------------------------------------------
    void setup() {
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
    SimNode& create_node(NodeId id) {
        SimNode& n = nodes_[id];
        n.id = id;
        n.rng = std::make_unique<Rng>(mix(config_.seed, id.value()));
        n.tick_interval = rng_.between(9 * ms, 11 * ms);  // clock skew between nodes
        return n;
    }
    Options node_options(NodeId id) const {
        Options o;
        o.id = id;
        o.snapshot_chunk_bytes_max = chunk_bytes_;
        o.inflight_appends_max = 8;
        o.append_entries_max = 16;
        o.pre_vote = is_pre_vote_;
        o.check_quorum = is_check_quorum_;
        return o;
    }
    void start(SimNode& n) {
        n.incarnation += 1;
        n.is_up = true;
        n.is_sync_pending = false;
        n.paused_until = 0;
        n.pending_reads.clear();
        n.pending_writes.clear();
        const DiskImage& image = n.disk.durable;
        n.sm = image.snapshot.meta.index > LogIndex{0} ? StateMachine::decode(image.snapshot.data)
                                                       : n.initial_sm;
        RestoreState state{image.hard_state, image.snapshot, image.entries, n.sm.applied};
        auto opened =
            RawNode::open(node_options(n.id), std::move(state), *n.rng, NullLogger::instance());
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
        schedule(Event{
            now_ + rng_.below(n.tick_interval), 0, EventKind::tick, n.id, n.incarnation, 0, {}});
        pump(n);
    }
    void schedule(Event event) {
        event.seq = ++event_seq_;
        queue_.push(std::move(event));
    }

    // ---- event dispatch ------------------------------------------------------------------
    void handle(const Event& event) {
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
                n.raw->tick();
                schedule(
                    Event{now_ + n.tick_interval, 0, EventKind::tick, n.id, n.incarnation, 0, {}});
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

    // ---- ready processing ----------------------------------------------------------------
    void pump(SimNode& n) {
        while (n.is_up && !n.is_sync_pending && n.raw->has_ready()) {
            Ready rd = n.raw->ready();
            observe(n);
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
    void finish_ready(SimNode& n) {
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
    void apply(SimNode& n, const Entry& e) {
        if (e.index != n.sm.applied.next()) {
            fail("node " + std::to_string(n.id.value()) + " applies " +
                 std::to_string(e.index.value()) + " after " +
                 std::to_string(n.sm.applied.value()));
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
                 std::to_string(command->seq) + " applied after " + std::to_string(last) +
                 " on node " + std::to_string(n.id.value()) + " (a committed command was lost)");
        }
        // A duplicate (seq <= last) is not applied again but still answers its retry.
        auto waiting = n.pending_writes.find(command->client);
        if (waiting != n.pending_writes.end() && waiting->second <= last) {
            n.pending_writes.erase(waiting);
            complete_write(command->client, command->seq, e.index);
        }
    }

    // ---- network -------------------------------------------------------------------------
    void transmit(SimNode& from, Message m) {
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
    void schedule_crash(NodeId id, Micros at, bool power_loss) {
        crash_plan_.push_back({at, id, power_loss});
    }

    // ---- invariants ----------------------------------------------------------------------
    void observe(SimNode& n) {
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
    void after_event(SimNode& n) {
        if (n.is_up) {
            observe(n);
        }
        run_crash_plan();
    }
    // `commit_term`: the term of the node that first reported the entry committed (its leader
    // committed it in that term or earlier).
    void ledger_append(const Entry& e, Term commit_term = Term{0}) {
        ledger_commit_term_.push_back(commit_term);
        const std::uint64_t h = entry_hash(e);
        ledger_.push_back(h);
        ledger_prefix_.push_back(mix(ledger_prefix_.empty() ? 0 : ledger_prefix_.back(), h));
    }
    void observe_commit(SimNode& n, const NodeStatus& s) {
        const LogIndex commit = s.hard_state.commit;
        if (commit <= n.checked_commit) {
            return;
        }
        for (LogIndex i = std::max(n.checked_commit.next(), s.first_index); i <= commit;
             i = i.next()) {
            auto entries = n.raw->entries(i, i.next());
            if (!entries.has_value() || entries->empty()) {
                fail("node " + std::to_string(n.id.value()) + " committed " +
                     std::to_string(i.value()) + " but cannot read it");
            }
            const std::uint64_t h = entry_hash(entries->front());
            if (i.value() <= ledger_.size()) {
                if (ledger_[i.value() - 1] != h) {
                    fail("committed entry changed: index " + std::to_string(i.value()) +
                         " on node " + std::to_string(n.id.value()) + " differs from the ledger");
                }
            } else if (i.value() == ledger_.size() + 1) {
                ledger_append(entries->front(), s.hard_state.term);
                conf_changes_ += entries->front().type == EntryType::conf_change ? 1 : 0;
            } else {
                fail("ledger gap: node " + std::to_string(n.id.value()) + " committed " +
                     std::to_string(i.value()) + " beyond ledger " +
                     std::to_string(ledger_.size()));
            }
        }
        n.checked_commit = commit;
    }
    void check_ledger_prefix(const SimNode& n, LogIndex index, std::uint64_t hash,
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
    void check_leader_completeness(SimNode& n, const NodeStatus& s) {
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
        for (std::uint64_t i = std::max<std::uint64_t>(s.first_index.value(), 1); i <= required;
             ++i) {
            auto entries = n.raw->entries(LogIndex{i}, LogIndex{i + 1});
            if (!entries.has_value() || entry_hash(entries->front()) != ledger_[i - 1]) {
                fail("leader completeness: new leader " + std::to_string(n.id.value()) +
                     " lacks committed entry " + std::to_string(i));
            }
        }
    }
    // Log matching, by induction: every (index, term) names one entry with one predecessor term.
    void check_log_matching(SimNode& n, const std::vector<Entry>& entries) {
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
                     "entry (or predecessor) at index " + std::to_string(e.index.value()) +
                     " term " + std::to_string(e.term.value()));
            }
        }
    }
    void record_vote(const SimNode& n, const Message& m) {
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
    void check_vote_durable_on_restart(const SimNode& n, const HardState& hs) {
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
                fail("vote durability: node " + std::to_string(n.id.value()) +
                     " restarted with vote " + std::to_string(hs.vote.value()) + " in term " +
                     std::to_string(hs.term.value()) + " but had voted for " +
                     std::to_string(voted.value()));
            }
        }
    }

    // ---- clients -------------------------------------------------------------------------
    std::vector<NodeId> up_members() {
        std::vector<NodeId> ids;
        for (auto& [id, n] : nodes_) {
            if (n.is_up && !n.is_retired) {
                ids.push_back(id);
            }
        }
        return ids;
    }
    NodeId pick_target(const Client& c) {
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
    void run_client(Client& c) {
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
    void complete_write(std::uint64_t client, std::uint64_t seq, LogIndex index) {
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
        schedule(Event{now_ + rng_.between(1, 30) * ms, 0, EventKind::client, {}, 0, client, {}});
    }
    void serve_reads(SimNode& n) {
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
                schedule(
                    Event{now_ + rng_.between(1, 30) * ms, 0, EventKind::client, {}, 0, c.id, {}});
            }
            it = n.pending_reads.erase(it);
        }
    }

    // ---- faults --------------------------------------------------------------------------
    void maybe_compact(SimNode& n) {
        const NodeStatus s = n.raw->status();
        if (s.applied.value() < s.snapshot.index.value() + compact_every_ ||
            n.sm.applied != s.applied) {
            return;
        }
        Bytes data = n.sm.encode();
        if (n.raw->compact(s.applied, data).has_value()) {
            n.disk.write(PendingWrite{PendingWrite::Kind::compact, {}, n.raw->snapshot(), {}});
        }
    }
    void crash(SimNode& n, bool power_loss) {
        trace([&](std::ostream& o) {
            o << "crash " << n.id << (power_loss ? " power-loss" : " kill");
        });
        note(EventKind::restart, n.id, power_loss ? 1 : 2, 0, 0);
        crashes_ += 1;
        if (power_loss) {
            n.disk.power_loss(*n.rng);
        } else {
            n.disk.kill();
        }
        n.raw.reset();
        n.is_up = false;
        n.is_sync_pending = false;
        n.outstanding = Ready{};
        n.pending_reads.clear();
        n.pending_writes.clear();
        schedule(Event{now_ + rng_.between(20, 1500) * ms, 0, EventKind::restart, n.id, 0, 0, {}});
    }
    void run_crash_plan() {
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
    std::optional<NodeId> current_leader() {
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
    void run_fault() {
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
    void change_membership() {
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
            change = ConfChange{ConfChangeType::remove_node,
                                conf.voters[rng_.below(conf.voters.size())]};
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
            removing_.insert(change.node_id);
        }
        pump(l);
        after_event(l);
    }
    void retire_removed() {
        auto leader = current_leader();
        if (!leader) {
            return;
        }
        const ConfState conf = nodes_.at(*leader).raw->status().conf_state;
        for (auto it = removing_.begin(); it != removing_.end();) {
            const bool member = std::binary_search(conf.voters.begin(), conf.voters.end(), *it) ||
                                std::binary_search(conf.learners.begin(), conf.learners.end(), *it);
            if (!member) {
                SimNode& n = nodes_.at(*it);
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

    // ---- the end: heal and converge --------------------------------------------------------
    void heal_everything() {
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
    bool is_converged() {
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
    void check_final() {
        if (!is_converged()) {
            std::ostringstream why;
            auto leader = current_leader();
            why << "liveness: no convergence after healing (leader="
                << (leader ? leader->value() : 0) << " ledger=" << ledger_.size();
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
                    fail("durability: acknowledged write client=" + std::to_string(client) +
                         " seq=" + std::to_string(seq) + " missing on node " +
                         std::to_string(id.value()));
                }
            }
        }
    }

    SimConfig config_;
    Rng rng_;
    Micros now_ = 0;
    std::uint64_t events_ = 0;
    std::uint64_t event_seq_ = 0;
    std::uint64_t trace_hash_ = 0;
    std::priority_queue<Event, std::vector<Event>, EventLater> queue_;
    std::map<NodeId, SimNode> nodes_;
    std::map<std::uint64_t, Client> clients_;
    std::set<std::pair<NodeId, NodeId>> blocked_;
    std::uint64_t next_node_id_ = 0;
    std::set<NodeId> removing_;
    bool is_healing_ = false;
    std::vector<std::tuple<Micros, NodeId, bool>> crash_plan_;
    std::vector<std::tuple<Micros, NodeId, bool>> pending_crashes_;

    // Swarm parameters.
    double drop_p_ = 0;
    double duplicate_p_ = 0;
    Micros delay_min_ = 0;
    Micros delay_max_ = 0;
    Micros disk_latency_max_ = 0;
    Micros fault_interval_ = 0;
    double crash_after_vote_p_ = 0;
    std::uint64_t compact_every_ = 0;
    std::uint64_t chunk_bytes_ = 0;
    std::uint64_t client_count_ = 0;
    double read_p_ = 0;
    bool is_pre_vote_ = true;
    bool is_check_quorum_ = true;

    // Invariant state.
    std::map<Term, NodeId> leaders_;
    std::vector<std::uint64_t> ledger_;
    std::vector<std::uint64_t> ledger_prefix_;
    std::vector<Term> ledger_commit_term_;
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::pair<std::uint64_t, std::uint64_t>>
        log_matching_;
    std::map<std::pair<std::uint64_t, std::uint64_t>, NodeId> votes_;
    std::map<std::uint64_t, std::uint64_t> highest_vote_term_;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> acked_;
    std::uint64_t acked_writes_ = 0;
    std::uint64_t acked_index_max_ = 0;
    std::uint64_t read_ids_ = 0;
    std::uint64_t reads_done_ = 0;
    std::uint64_t crashes_ = 0;
    std::uint64_t snapshots_installed_ = 0;
    std::uint64_t conf_changes_ = 0;
    std::uint64_t transfers_ = 0;
};

}  // namespace

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
        Simulation simulation(config);
        result = simulation.run();
    } catch (const AssertionFailure& failure) {
        result.is_ok = false;
        result.failure = failure.what;
    }
    set_assert_handler(previous);
    return result;
}

}  // namespace queen::raft::sim
