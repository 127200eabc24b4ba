// modules/raft/sim/simulation_impl.hpp — private to the simulator's sources: the simulated node,
// disk, client and event types, and the Simulation class with its parts grouped by file.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "queen/core/logger.hpp"
#include "queen/core/rng.hpp"
#include "queen/raft/codec.hpp"
#include "queen/raft/raw_node.hpp"
#include "simulation.hpp"

namespace queen::raft::sim::detail {

using Micros = std::uint64_t;
constexpr Micros ms = 1000;

inline std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}
inline std::uint64_t hash_bytes(const Bytes& data) {
    std::uint64_t h = 1469598103934665603ULL;
    for (const Byte b : data) {
        h = (h ^ b) * 1099511628211ULL;
    }
    return h;
}
inline std::uint64_t entry_hash(const Entry& e) {
    return mix(mix(mix(e.term.value(), e.index.value()), static_cast<std::uint64_t>(e.type)),
               hash_bytes(e.data));
}

// A client command: client id, sequence number, payload word.
struct Command {
    std::uint64_t client = 0;
    std::uint64_t seq = 0;
};
Bytes encode_command(const Command& c);
std::optional<Command> decode_command(const Bytes& data);

// The replicated state machine: sessions for exactly-once, a digest of everything applied.
struct StateMachine {
    LogIndex applied;
    std::uint64_t hash = 0;  // rolling over every applied entry: equals the ledger prefix hash
    std::map<std::uint64_t, std::uint64_t> sessions;  // client -> last applied seq
    std::uint64_t effects = 0;                        // commands applied (not deduplicated)

    Bytes encode() const;
    static StateMachine decode(const Bytes& data);
};

struct DiskImage {
    HardState hard_state;
    Snapshot snapshot;
    std::vector<Entry> entries;  // after snapshot.meta.index, contiguous
    bool is_recovering = false;  // the node's durable "log was damaged" marker
    // Entries a compaction dropped from raft that the log still holds (seeds with an entry
    // source): contiguous, ending at snapshot.meta.index; a received snapshot clears them.
    std::vector<Entry> retained;
};

// One write that reached the page cache (hard state, snapshot, entries or a compaction).
struct PendingWrite {
    enum class Kind { hard_state, snapshot, entries, compact } kind = Kind::hard_state;
    HardState hard_state;
    Snapshot snapshot;
    std::vector<Entry> entries;
    std::uint64_t retain = 0;  // compact: how many of the dropped entries the log keeps
};

struct Disk {
    DiskImage durable;
    DiskImage cache;  // what reads see: durable plus the pending writes (the page cache)
    std::vector<PendingWrite> pending;

    void write(PendingWrite w);
    void sync();
    void power_loss(Rng& rng);  // see disk.cpp
    // Storage damage found at restart: a synced suffix of the log is lost (see disk.cpp).
    bool damage(Rng& rng, LogIndex applied);  // false when nothing could be cut
    // Process kill: the page cache survives.
    void kill() { sync(); }
};

// The node's log as raft's EntrySource: the entries compaction dropped from raft's memory that
// the log still holds (DiskImage::retained, read through the page cache). `served` sees every
// entry handed out (the simulator checks it against the committed ledger).
class DiskSource final : public EntrySource {
public:
    DiskSource(const Disk& disk, std::function<void(const Entry&)> served)
        : disk_(disk), served_(std::move(served)) {}
    Result<std::vector<Entry>> entries(LogIndex low, LogIndex high,
                                       std::uint64_t max_bytes) override;
    Result<Term> term(LogIndex index) override;

private:
    const Entry* find(LogIndex index) const;
    const Disk& disk_;
    std::function<void(const Entry&)> served_;
};

struct PendingRead {
    std::uint64_t client = 0;
    LogIndex index;
    bool has_index = false;
};

struct SimNode {
    NodeId id;
    std::unique_ptr<Rng> rng;
    Disk disk;
    std::unique_ptr<DiskSource> source;  // seeds with an entry source; outlives raw
    std::optional<RawNode> raw;
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
    // The node layer's view of its peers (quiescence): the incarnation it last connected to.
    std::map<NodeId, std::uint64_t> peer_incarnations;
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
    explicit Simulation(const SimConfig& config);
    SimResult run();

private:
    // ---- tracing and scheduling (used by every part) -----------------------------------
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
    void schedule(Event event) {
        event.seq = ++event_seq_;
        queue_.push(std::move(event));
    }

    // ---- the driver: setup, event dispatch, ready processing (simulation.cpp) ----------
    void draw_swarm();
    void setup();
    SimNode& create_node(NodeId id);
    Options node_options(NodeId id) const;
    void start(SimNode& n);
    void handle(const Event& event);
    void pump(SimNode& n);
    void finish_ready(SimNode& n);
    void apply(SimNode& n, const Entry& e);
    void after_event(SimNode& n);
    void maybe_compact(SimNode& n);
    void run_node_layer(SimNode& n);

    // ---- the network model and the fault schedule (faults.cpp) -------------------------
    void transmit(SimNode& from, Message m);
    void schedule_crash(NodeId id, Micros at, bool power_loss);
    void crash(SimNode& n, bool power_loss);
    void run_crash_plan();
    std::optional<NodeId> current_leader();
    void run_fault();
    void change_membership();
    void retire_removed();
    void heal_everything();

    // ---- invariant checks (invariants.cpp) ---------------------------------------------
    void observe(SimNode& n);
    void ledger_append(const Entry& e, Term commit_term = Term{0});
    void observe_commit(SimNode& n, const NodeStatus& s);
    void check_ledger_prefix(const SimNode& n, LogIndex index, std::uint64_t hash,
                             const char* where);
    void check_leader_completeness(SimNode& n, const NodeStatus& s);
    void check_log_matching(SimNode& n, const std::vector<Entry>& entries);
    void record_vote(const SimNode& n, const Message& m);
    void check_vote_durable_on_restart(const SimNode& n, const HardState& hs);
    bool is_converged();
    void check_final();

    // ---- clients (clients.cpp) ---------------------------------------------------------
    std::vector<NodeId> up_members();
    NodeId pick_target(const Client& c);
    void run_client(Client& c);
    Micros think_time();  // between a client's operations
    void complete_write(std::uint64_t client, std::uint64_t seq, LogIndex index);
    void serve_reads(SimNode& n);

    SimConfig config_;
    Rng rng_;
    // Quiescence decisions draw from their own stream: a seed without quiescence replays as it
    // did before quiescence existed.
    Rng quiet_rng_;
    Micros now_ = 0;
    std::uint64_t events_ = 0;
    std::uint64_t event_seq_ = 0;
    std::uint64_t trace_hash_ = 0;
    std::priority_queue<Event, std::vector<Event>, EventLater> queue_;
    std::map<NodeId, SimNode> nodes_;
    std::map<std::uint64_t, Client> clients_;
    std::set<std::pair<NodeId, NodeId>> blocked_;
    std::uint64_t next_node_id_ = 0;
    /// Nodes whose removal was proposed, with the index of the proposal.
    std::map<NodeId, LogIndex> removing_;
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
    double damage_p_ = 0;
    std::uint64_t damages_ = 0;  // a crash also damages the log (one node recovering at a time)
    std::uint64_t compact_every_ = 0;
    std::uint64_t chunk_bytes_ = 0;
    std::uint64_t client_count_ = 0;
    double read_p_ = 0;
    bool is_pre_vote_ = true;
    bool is_check_quorum_ = true;
    bool is_quiescence_ = false;  // the node layer quiesces idle leaders and wakes as in node
    double quiesce_p_ = 0;        // per tick, when a leader can_quiesce()
    double detect_p_ = 0;         // per tick, when a quiet node's peer is unreachable
    double false_wake_p_ = 0;     // per tick: the node layer wrongly believes a peer is gone
    std::uint64_t quiesces_ = 0;
    std::uint64_t wakes_ = 0;
    // Entry source: raft reads entries below its memory from the node's log, which keeps up to
    // retain_max_ of them past each compaction; compactions come at random points. Its own
    // stream, so a seed without it replays as it did before it existed.
    Rng source_rng_;
    bool is_entry_source_ = false;
    std::uint64_t retain_max_ = 0;
    std::uint64_t entries_from_source_ = 0;

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

}  // namespace queen::raft::sim::detail
