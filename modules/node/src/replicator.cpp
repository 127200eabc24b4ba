// modules/node/src/replicator.cpp — a tenant's raft member over its log and hard state file.
#include "replicator.hpp"

#include <algorithm>
#include <deque>
#include <utility>

#include "data_dir.hpp"
#include "entry.hpp"
#include "queen/raft/errc.hpp"

namespace queen::node::detail {
namespace {
/// True when `self` is the only member of `conf` (its one voter, no learner).
bool is_alone(const raft::ConfState& conf, NodeId self) {
    return conf.voters.size() == 1 && conf.voters.front() == self && conf.learners.empty();
}

/// The tenant's log as raft's entry source: a leader reads the entries compact_memory() dropped
/// from raft's memory back from disk (the log is the raft log: a record per entry, with its
/// term), so a follower behind the memory catches up by appends while the log still holds them
/// (until the checkpoint's drop_prefix); below that, a snapshot. Called under the replicator's
/// lock on the thread driving raft; each read is bounded by raft's append_bytes_max.
class LogEntrySource final : public raft::EntrySource {
public:
    explicit LogEntrySource(log::Log& log) : log_(log) {}

    Result<std::vector<raft::Entry>> entries(LogIndex low, LogIndex high,
                                             std::uint64_t max_bytes) override {
        auto read = log_.read(low, high, max_bytes);
        if (!read) {
            return unavailable(low, read.error());
        }
        std::vector<raft::Entry> out;
        out.reserve(read->size());
        std::uint64_t bytes = 0;
        for (log::Record& record : *read) {
            // The log stops after the record that reaches max_bytes; raft wants it before.
            if (!out.empty() && bytes + record.payload.size() > max_bytes) {
                break;
            }
            bytes += record.payload.size();
            out.push_back(raft::Entry{record.term, record.index, entry_type_of(record.type),
                                      std::move(record.payload)});
        }
        entries_total_.fetch_add(out.size(), std::memory_order_relaxed);
        bytes_total_.fetch_add(bytes, std::memory_order_relaxed);
        return out;
    }

    Result<Term> term(LogIndex index) override {
        auto term = log_.term_at(index);
        if (!term) {
            return unavailable(index.next(), term.error());
        }
        return *term;
    }

    [[nodiscard]] std::uint64_t entries_total() const noexcept {
        return entries_total_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] std::uint64_t bytes_total() const noexcept {
        return bytes_total_.load(std::memory_order_relaxed);
    }

private:
    /// Below the log's first index (its prefix was dropped): compacted, raft sends a snapshot;
    /// any other failure is unavailable (raft logs it and sends a snapshot too).
    Error unavailable(LogIndex low, const Error& error) const {
        if (error.is(Errc::out_of_range) && low < log_.first_index()) {
            return Error{raft::Errc::compacted, "tenant log: " + error.message()};
        }
        return Error{raft::Errc::unavailable, "tenant log: " + error.message()};
    }

    log::Log& log_;
    std::atomic<std::uint64_t> entries_total_{0};
    std::atomic<std::uint64_t> bytes_total_{0};
};
}  // namespace

struct Replicator::Impl {
    Impl(log::Log& l, log::HardStateFile h, ReplicatorEvents e, const Clock& c, Logger& g,
         std::uint64_t seed)
        : log(l), hard_state(std::move(h)), events(std::move(e)), clock(c), logger(g), rng(seed) {}

    log::Log& log;
    log::HardStateFile hard_state;
    ReplicatorEvents events;
    const Clock& clock;
    Logger& logger;
    Rng rng;

    mutable std::mutex mutex;
    std::condition_variable idle;      // no Ready outstanding (stop() waits for it)
    LogEntrySource entry_source{log};  // raft's; declared before `node`, which uses it
    std::optional<raft::RawNode> node;
    bool is_outstanding = false;         // a Ready's entries are being made durable
    std::optional<raft::Ready> pending;  // that Ready: the rest of it runs once durable
    std::optional<Error> failure;
    bool is_stopping = false;
    bool is_single_voter = false;
    bool is_membership_changing = false;  // the outstanding Ready commits a membership entry
    NodeId self;
    bool is_recovering = false;  // the marker file exists
    std::filesystem::path recovering_marker;
    bool is_leader = false;  // as of the last Ready taken
    std::uint64_t leader_changes = 0;
    NodeId known_leader;
    std::int64_t last_stamp_ms = 0;
    std::atomic<std::uint64_t> committed{0};
    std::atomic<bool> quiet{false};  // node->is_quiescent() as of the last Locked section
    std::atomic<std::uint64_t> messages_sent{0};
    std::uint32_t quiesce_ticks = 0;       // 0: never quiesce
    std::uint32_t idle_ticks = 0;          // ticks in a row at which the leader could quiesce
    std::vector<log::RecordView> records;  // scratch for appends

    // ReadIndex: at most one round in flight; reads arriving meanwhile wait for the next one.
    struct ReadRound {
        std::uint64_t context = 0;
        std::uint64_t started_tick = 0;
        std::vector<ReadIndexed> waiting;
    };
    std::optional<ReadRound> read_in_flight;
    std::vector<ReadIndexed> reads_next;
    std::uint64_t next_read_context = 1;
    std::uint64_t ticks = 0;
    std::uint32_t election_ticks = 10;
    std::uint64_t leader_wait_ticks = 0;
    std::optional<std::uint64_t> reads_waiting_since;  // reads_next waits for a leader
    // Reads whose outcome is known. They run once the lock is released (Locked): a read's
    // continuation may propose, or answer a client whose next request proposes at once.
    std::vector<std::pair<ReadIndexed, Result<LogIndex>>> finished_reads;

    /// The lock every member but the const getters takes; when released, runs the reads that
    /// finished while it was held.
    struct Locked {
        explicit Locked(Impl& impl) : r(impl), lock(impl.mutex) {}
        ~Locked() {
            r.quiet.store(r.node && r.node->is_quiescent(), std::memory_order_relaxed);
            std::vector<std::pair<ReadIndexed, Result<LogIndex>>> done;
            done.swap(r.finished_reads);
            lock.unlock();
            for (auto& [read, outcome] : done) {
                read(outcome);
            }
        }
        Locked(const Locked&) = delete;
        Locked& operator=(const Locked&) = delete;
        Impl& r;
        std::unique_lock<std::mutex> lock;
    };

    /// Starts a round for reads_next when none is in flight. Locked.
    void start_read_round();
    /// Ends the round in flight: each of its reads gets `outcome`. Locked.
    void end_read_round(const Result<LogIndex>& outcome);
    /// Fails every waiting read with `error`. Locked.
    void fail_reads(const Error& error);

    /// Takes and runs Readies until one waits for the disk or a snapshot install, or nothing
    /// is left. Locked.
    void process();
    /// Hands a Ready's committed entries over and writes its entries (finish() runs when they
    /// are durable) or, without entries, finishes it. Locked.
    void persist(raft::Ready& ready);
    /// The part of a Ready that follows durability: hard state, messages, advance. Locked.
    void finish(raft::Ready& ready);
    /// The log's append of the outstanding Ready is durable (writer thread).
    void on_durable(const Status& status);
    void send(std::vector<raft::Message>& messages);
    /// At a tick: quiesces the group when it has been idle for quiesce_ticks ticks and no
    /// member is in `nodes_gone`; true when it did (the tick is not counted). Locked.
    bool quiesce_if_idle(std::span<const NodeId> nodes_gone);
    /// `node` is a voter or learner of the group. Locked.
    bool is_member(NodeId node) const;
    /// Drops applied entries from raft's memory that no peer can still need from it.
    void compact_memory();
    /// Counts entries raft now holds in memory (a Ready's new entries).
    void note_held(const std::vector<raft::Entry>& entries);
    // Entries raft holds in memory above its snapshot: (index, payload bytes), in index order.
    std::deque<std::pair<std::uint64_t, std::uint64_t>> held;
    std::uint64_t held_bytes = 0;
    std::uint64_t memory_bytes_max = 64u << 20;
    void fail(const Error& error);
};

void Replicator::Impl::fail(const Error& error) {
    if (failure) {
        return;
    }
    failure = error;
    fail_reads(Error{Errc::poisoned, error.message()});
    is_outstanding = false;
    pending.reset();
    idle.notify_all();
    events.failed(error);
}

void Replicator::Impl::send(std::vector<raft::Message>& messages) {
    if (events.send) {
        for (const raft::Message& message : messages) {
            events.send(message);
        }
        messages_sent.fetch_add(messages.size(), std::memory_order_relaxed);
    }
}

bool Replicator::Impl::is_member(NodeId id) const {
    const raft::NodeStatus status = node->status();
    const auto& voters = status.conf_state.voters;
    const auto& learners = status.conf_state.learners;
    return std::find(voters.begin(), voters.end(), id) != voters.end() ||
           std::find(learners.begin(), learners.end(), id) != learners.end();
}

bool Replicator::Impl::quiesce_if_idle(std::span<const NodeId> nodes_gone) {
    // can_quiesce() holds only on an idle leader (nothing unsent, unapplied, no read, no
    // transfer, every peer caught up and told the commit): cheap and false elsewhere.
    if (quiesce_ticks == 0 || is_outstanding || !reads_next.empty() || read_in_flight ||
        !node->can_quiesce()) {
        idle_ticks = 0;
        return false;
    }
    // A leader that believes a peer's node gone keeps check-quorum running (raft.md 8).
    for (const NodeId gone : nodes_gone) {
        if (is_member(gone)) {
            idle_ticks = 0;
            return false;
        }
    }
    if (++idle_ticks < quiesce_ticks) {
        return false;
    }
    idle_ticks = 0;
    return node->quiesce();
}

void Replicator::Impl::start_read_round() {
    if (read_in_flight || reads_next.empty()) {
        return;
    }
    if (node->leader() == raft::no_node) {
        // An election: the reads wait for its outcome (tick() fails them after
        // leader_wait_ticks).
        if (!reads_waiting_since) {
            reads_waiting_since = ticks;
        }
        return;
    }
    reads_waiting_since.reset();
    ReadRound round;
    round.context = next_read_context++;
    round.started_tick = ticks;
    round.waiting.swap(reads_next);
    Bytes context;
    ByteWriter(context).fixed<std::uint64_t>(round.context);
    if (auto started = node->read_index(std::move(context)); !started) {
        const Error error{Errc::not_leader, "read: " + started.error().message()};
        for (ReadIndexed& done : round.waiting) {
            done(error);
        }
        return;
    }
    read_in_flight = std::move(round);
}

void Replicator::Impl::end_read_round(const Result<LogIndex>& outcome) {
    if (!read_in_flight) {
        return;
    }
    std::vector<ReadIndexed> waiting;
    waiting.swap(read_in_flight->waiting);
    read_in_flight.reset();
    for (ReadIndexed& done : waiting) {
        finished_reads.emplace_back(std::move(done), outcome);
    }
}

void Replicator::Impl::fail_reads(const Error& error) {
    end_read_round(error);
    for (ReadIndexed& done : reads_next) {
        finished_reads.emplace_back(std::move(done), error);
    }
    reads_next.clear();
}

void Replicator::Impl::note_held(const std::vector<raft::Entry>& entries) {
    if (entries.empty()) {
        return;
    }
    // Entries from entries.front() on replace what memory held there (a new leader's suffix).
    while (!held.empty() && held.back().first >= entries.front().index.value()) {
        held_bytes -= held.back().second;
        held.pop_back();
    }
    for (const raft::Entry& entry : entries) {
        held.emplace_back(entry.index.value(), entry.data.size());
        held_bytes += entry.data.size();
    }
}

void Replicator::Impl::compact_memory() {
    const LogIndex applied{committed.load(std::memory_order_relaxed)};
    LogIndex through = applied;
    if (!is_single_voter) {
        // A leader keeps what its slowest peer has not matched; a follower keeps a margin in
        // case it leads later (a peer further behind gets a snapshot).
        constexpr std::uint64_t follower_margin = 4096;
        if (is_leader) {
            for (const raft::PeerProgress& peer : node->progress()) {
                through = std::min(through, peer.match);
            }
        } else {
            through =
                LogIndex{through.value() > follower_margin ? through.value() - follower_margin : 0};
        }
        // Whatever a peer may need, applied entries beyond memory_bytes_max go: a peer that far
        // behind gets them read back from the log (LogEntrySource) or, once the log dropped
        // them too, a snapshot, rather than the leader running out of memory while it is away.
        std::uint64_t bytes = held_bytes;
        for (const auto& [index, size] : held) {
            if (bytes <= memory_bytes_max || index > applied.value()) {
                break;
            }
            bytes -= size;
            through = std::max(through, LogIndex{index});
        }
    }
    if (through > node->snapshot().meta.index) {
        (void)node->compact(through, {});
        while (!held.empty() && held.front().first <= through.value()) {
            held_bytes -= held.front().second;
            held.pop_front();
        }
    }
}

void Replicator::Impl::process() {
    while (!failure && !is_outstanding && node->has_ready()) {
        raft::Ready ready = node->ready();
        if (!is_single_voter) {
            is_leader = node->role() == raft::Role::leader;
            if (node->leader() != known_leader) {
                known_leader = node->leader();
                // A read round asked of the former leader gets no answer: its reads join the
                // next round, which the new leader confirms (they waited for an election
                // timeout and more otherwise: tick() gives a round two).
                if (read_in_flight) {
                    reads_next.insert(reads_next.begin(),
                                      std::make_move_iterator(read_in_flight->waiting.begin()),
                                      std::make_move_iterator(read_in_flight->waiting.end()));
                    read_in_flight.reset();
                }
                if (known_leader != raft::no_node) {
                    ++leader_changes;
                    QUEEN_LOG(logger, Level::info, "raft.leader",
                              "group=" << log.directory().parent_path().filename().string()
                                       << " leader=" << known_leader << " term=" << node->term());
                }
            }
        }
        send(ready.messages);
        for (const raft::ReadState& state : ready.read_states) {
            ByteReader reader(state.context);
            const auto context = reader.fixed<std::uint64_t>();
            if (reader.ok() && read_in_flight && read_in_flight->context == context) {
                end_read_round(state.index);
            }
        }
        start_read_round();
        if (ready.snapshot) {
            if (!events.install_snapshot) {
                fail(Error{Errc::internal,
                           "raft snapshot received: this member cannot install one"});
                return;
            }
            // raft dropped its log for the snapshot: so does the memory account.
            held.clear();
            held_bytes = 0;
            committed.store(ready.snapshot->meta.index.value(), std::memory_order_release);
            const raft::SnapshotMeta meta = ready.snapshot->meta;
            is_outstanding = true;
            pending.emplace(std::move(ready));
            events.install_snapshot(meta);  // the rest of this Ready runs once installed
            break;
        }
        persist(ready);
    }
    if (is_recovering && !failure && !node->status().is_recovering) {
        // Caught up: the marker goes (durably), so a restart votes again.
        if (auto removed = remove_file_durably(recovering_marker); !removed) {
            fail(removed.error());
            return;
        }
        is_recovering = false;
        QUEEN_LOG(logger, Level::info, "raft.recovered",
                  "group=" << log.directory().parent_path().filename().string()
                           << " commit=" << committed.load());
    }
    if (!is_outstanding) {
        idle.notify_all();
    }
}

void Replicator::Impl::persist(raft::Ready& ready) {
    // Committed entries are durable here already: hand them over first, in order.
    if (!ready.committed_entries.empty()) {
        committed.store(ready.committed_entries.back().index.value(), std::memory_order_release);
        is_membership_changing = std::any_of(
            ready.committed_entries.begin(), ready.committed_entries.end(),
            [](const raft::Entry& e) { return e.type == raft::EntryType::conf_change; });
        events.committed(ready.committed_entries);
    }
    if (ready.entries.empty()) {
        finish(ready);
        return;
    }
    note_held(ready.entries);
    const LogIndex first = ready.entries.front().index;
    if (first <= log.last_index()) {
        // A new leader overwrote our uncommitted suffix (a node of a group of several).
        if (auto cut = log.truncate_suffix(LogIndex{first.value() - 1}); !cut) {
            fail(cut.error());
            return;
        }
    }
    // Every stamp written to the log counts (another leader's too): a new leader never
    // stamps below them.
    records.clear();
    for (const raft::Entry& entry : ready.entries) {
        records.push_back(
            log::RecordView{entry.term, entry.index, record_type_of(entry.type), entry.data});
        if (entry.data.size() >= entry_header_size) {
            if (auto view = decode_entry(entry.data)) {
                last_stamp_ms = std::max(last_stamp_ms, view->timestamp.value());
            }
        }
    }
    is_outstanding = true;
    pending.emplace(std::move(ready));
    // Blocks only when the log's pending bytes are full, which raft's uncommitted bytes
    // limit (below the log's) keeps from happening on the leader.
    auto appended = log.append(records, [this](const Status& status) { on_durable(status); });
    if (!appended) {
        fail(appended.error());
        return;
    }
}

void Replicator::Impl::finish(raft::Ready& ready) {
    if (ready.hard_state) {
        const log::HardState saved = hard_state.current();
        if (ready.hard_state->term != saved.term || ready.hard_state->vote != saved.vote) {
            // The commit index alone is a hint: it is saved only with a term or vote change.
            auto done = hard_state.save(log::HardState{
                ready.hard_state->term, ready.hard_state->vote, ready.hard_state->commit});
            if (!done) {
                fail(done.error());
                return;
            }
        }
    }
    send(ready.messages_after_persist);
    node->advance();
    if (is_membership_changing) {
        // The fast path of a group of this node alone holds only while it is alone.
        is_membership_changing = false;
        is_single_voter = is_alone(node->status().conf_state, self);
    }
    // Applied entries stay in the log on disk; raft's memory keeps only what peers may need.
    compact_memory();
}

void Replicator::Impl::on_durable(const Status& status) {
    Locked lock(*this);
    if (failure) {
        return;
    }
    if (!status) {
        fail(status.error());
        return;
    }
    QUEEN_ASSERT(is_outstanding && pending, "a durable report without an outstanding Ready");
    raft::Ready ready = std::move(*pending);
    pending.reset();
    is_outstanding = false;
    finish(ready);
    if (is_single_voter || is_leader || !events.wake) {
        process();  // a leader never truncates its log: its next Ready runs here
        return;
    }
    if (node->has_ready()) {
        events.wake();
    }
    idle.notify_all();  // stop() may wait for this append (and then runs the rest itself)
}

Replicator::Replicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Replicator::~Replicator() {
    stop();
}

Result<std::unique_ptr<Replicator>> Replicator::open(log::Log& log, ReplicatorStart start,
                                                     ReplicatorEvents events, const Clock& clock,
                                                     Logger& logger) {
    QUEEN_TRY(auto hard_state, log::HardStateFile::open(log.directory()));
    const log::HardState saved = hard_state.current();
    // Seeded from the node id and the wall clock: election timeouts differ between nodes.
    const auto seed = static_cast<std::uint64_t>(clock.wall_ms()) ^ (start.self.value() << 48);
    auto impl =
        std::make_unique<Impl>(log, std::move(hard_state), std::move(events), clock, logger, seed);
    // The newest stamp in the log (a new leader never stamps below it): the last entries are
    // read back until one carries a command (no-ops and membership entries carry none).
    for (LogIndex at = log.last_index(); at >= log.first_index() && at > LogIndex{0};
         at = LogIndex{at.value() - 1}) {
        QUEEN_TRY(auto read, log.read(at, at.next()));
        if (read.front().type == record_type_command && !read.front().payload.empty()) {
            QUEEN_TRY(auto view, decode_entry(read.front().payload));
            impl->last_stamp_ms = view.timestamp.value();
            break;
        }
    }

    raft::RestoreState restore;
    // The tenant's state is the snapshot: everything up to `applied` is in it. A state ahead
    // of the log (an installed snapshot whose entries the log has not received again) starts
    // raft from the log's end: the leader sends the rest, and the tenant skips what it holds.
    const LogIndex base = std::min(start.applied, log.last_index());
    QUEEN_TRY(const Term base_term, log.term_at(base));
    restore.snapshot.meta.index = base;
    restore.snapshot.meta.term = base_term;
    std::sort(start.conf_state.voters.begin(), start.conf_state.voters.end());
    std::sort(start.conf_state.learners.begin(), start.conf_state.learners.end());
    restore.snapshot.meta.conf_state = start.conf_state;
    restore.applied = base;
    restore.is_recovering = start.is_recovering;
    impl->is_recovering = start.is_recovering;
    impl->recovering_marker = start.recovering_marker;
    restore.hard_state = raft::HardState{saved.term, saved.vote, std::max(saved.commit, base)};
    LogIndex next = base.next();
    while (next <= log.last_index()) {
        QUEEN_TRY(auto read, log.read(next, log.last_index().next()));
        for (log::Record& record : read) {
            raft::Entry entry;
            entry.term = record.term;
            entry.index = record.index;
            entry.type = entry_type_of(record.type);
            entry.data = std::move(record.payload);
            restore.entries.push_back(std::move(entry));
        }
        next = read.back().index.next();
    }
    impl->note_held(restore.entries);
    impl->memory_bytes_max = start.memory_bytes_max;
    raft::Options options;
    options.id = start.self;
    options.election_ticks = start.election_ticks;
    options.heartbeat_ticks = start.heartbeat_ticks;
    impl->election_ticks = start.election_ticks;
    impl->leader_wait_ticks = start.leader_wait_ticks;
    impl->quiesce_ticks = start.quiesce_ticks;
    // Below the log's pending bytes, so appending a leader's Ready never blocks on them.
    options.uncommitted_bytes_max = std::max<std::uint64_t>(1, start.log_pending_bytes_max / 2);
    QUEEN_TRY(auto node, raft::RawNode::open(options, std::move(restore), impl->rng, logger,
                                             &impl->entry_source));
    impl->node.emplace(std::move(node));
    impl->self = start.self;
    impl->is_single_voter = is_alone(start.conf_state, start.self);
    impl->committed.store(impl->node->status().hard_state.commit.value());
    std::unique_ptr<Replicator> replicator(new Replicator(std::move(impl)));
    Impl& r = *replicator->impl_;
    {
        Impl::Locked lock(r);
        if (r.is_single_voter) {
            r.node->campaign();  // alone: wins at once, and its no-op commits the old tail
        }
        r.process();
        if (r.failure) {
            return *r.failure;
        }
    }
    return replicator;
}

Status Replicator::propose(Bytes& payload, const Proposed& proposed) {
    Impl& r = *impl_;
    Impl::Locked lock(r);
    if (r.failure) {
        return Error{Errc::poisoned, r.failure->message()};
    }
    if (r.is_stopping) {
        return Error{Errc::cancelled, "the replicator is stopping"};
    }
    if (r.node->role() != raft::Role::leader) {
        return Error{raft::Errc::not_leader,
                     r.node->leader() == raft::no_node
                         ? std::string("no leader (election in progress)")
                         : "node " + std::to_string(r.node->leader().value()) + " leads"};
    }
    if (r.node->is_transferring()) {
        // Checked here: raft's propose() takes the payload even when it refuses it.
        return Error{raft::Errc::transferring, "transferring leadership"};
    }
    if (payload.size() >= entry_header_size) {
        r.last_stamp_ms = std::max(r.last_stamp_ms, r.clock.wall_ms());
        store_le<std::int64_t>(payload.data() + 1, r.last_stamp_ms);
    }
    QUEEN_TRY(const LogIndex index, r.node->propose(std::move(payload)));
    proposed(index, r.node->term());
    r.process();
    return {};
}

void Replicator::snapshot_installed(const Status& status) {
    Impl& r = *impl_;
    Impl::Locked lock(r);
    if (r.failure) {
        return;
    }
    QUEEN_ASSERT(r.is_outstanding && r.pending && r.pending->snapshot,
                 "snapshot_installed() without a snapshot being installed");
    if (!status) {
        if (status.error().is(Errc::cancelled)) {
            // Stopping: nothing more is taken; the snapshot comes again after a restart.
            r.failure = status.error();
            r.is_outstanding = false;
            r.pending.reset();
            r.fail_reads(Error{Errc::cancelled, "the tenant is stopping"});
            r.idle.notify_all();
            return;
        }
        r.fail(status.error());
        return;
    }
    raft::Ready ready = std::move(*r.pending);
    r.pending.reset();
    r.is_outstanding = false;
    ready.snapshot.reset();
    r.persist(ready);
    r.process();
}

Result<LogIndex> Replicator::propose_conf_change(const raft::ConfChange& change) {
    Impl& r = *impl_;
    Impl::Locked lock(r);
    if (r.failure) {
        return Error{Errc::poisoned, r.failure->message()};
    }
    QUEEN_TRY(const LogIndex index, r.node->propose_conf_change(change));
    r.process();
    return index;
}

Status Replicator::transfer_leadership(NodeId target) {
    Impl& r = *impl_;
    Impl::Locked lock(r);
    if (r.failure) {
        return Error{Errc::poisoned, r.failure->message()};
    }
    QUEEN_TRY(r.node->transfer_leadership(target));
    r.process();
    return {};
}

void Replicator::step(const raft::Message& message) {
    Impl& r = *impl_;
    Impl::Locked lock(r);
    if (r.failure) {
        return;
    }
    r.node->step(message);
    r.process();
}

void Replicator::tick(std::span<const NodeId> nodes_gone) {
    Impl& r = *impl_;
    Impl::Locked lock(r);
    if (r.failure) {
        return;
    }
    if (r.node->is_quiescent()) {
        return;  // raft counts no ticks; nothing waits (a read or a proposal wakes the group)
    }
    if (r.quiesce_if_idle(nodes_gone)) {
        r.process();  // sends the `quiesce` messages
        return;
    }
    r.node->tick();
    ++r.ticks;
    // A round no leader confirmed (leadership lost, messages dropped): fail it, so its readers
    // retry, and start the next.
    if (r.read_in_flight && r.ticks - r.read_in_flight->started_tick > 2u * r.election_ticks) {
        r.end_read_round(Error{Errc::not_leader, "no leader confirmed the read in time; retry"});
    }
    r.start_read_round();  // the next round, or reads that waited for a leader once one is known
    if (r.reads_waiting_since && r.ticks - *r.reads_waiting_since > r.leader_wait_ticks) {
        r.reads_waiting_since.reset();
        r.fail_reads(Error{Errc::not_leader, "no leader was elected in time for the read"});
    }
    r.process();
}

bool Replicator::wake_for(NodeId node) {
    Impl& r = *impl_;
    Impl::Locked lock(r);
    if (r.failure || !r.node->is_quiescent() || (node != raft::no_node && !r.is_member(node))) {
        return false;
    }
    r.node->wake();
    r.idle_ticks = 0;
    r.process();  // a leader heartbeats at once
    return true;
}

bool Replicator::is_quiet() const noexcept {
    return impl_->quiet.load(std::memory_order_relaxed);
}

std::uint64_t Replicator::messages_sent() const noexcept {
    return impl_->messages_sent.load(std::memory_order_relaxed);
}

std::uint64_t Replicator::entries_from_log() const noexcept {
    return impl_->entry_source.entries_total();
}

std::uint64_t Replicator::entry_bytes_from_log() const noexcept {
    return impl_->entry_source.bytes_total();
}

void Replicator::read_index(ReadIndexed done) {
    Impl& r = *impl_;
    Impl::Locked lock(r);
    if (r.failure) {
        r.finished_reads.emplace_back(std::move(done), Error{Errc::poisoned, r.failure->message()});
        return;
    }
    if (r.reads_next.size() >= 65'536) {
        r.finished_reads.emplace_back(
            std::move(done),
            Error{Errc::busy, "too many reads wait for a read point; retry later"});
        return;
    }
    r.reads_next.push_back(std::move(done));
    r.start_read_round();
    r.process();
}

void Replicator::run_pending() {
    Impl& r = *impl_;
    Impl::Locked lock(r);
    if (!r.failure) {
        r.process();
    }
}

LogIndex Replicator::committed_index() const {
    return LogIndex{impl_->committed.load(std::memory_order_acquire)};
}

raft::NodeStatus Replicator::status() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->node->status();
}

std::vector<std::pair<NodeId, std::uint64_t>> Replicator::follower_lag() const {
    std::lock_guard lock(impl_->mutex);
    std::vector<std::pair<NodeId, std::uint64_t>> lag;
    if (impl_->node->role() != raft::Role::leader) {
        return lag;
    }
    const raft::NodeStatus status = impl_->node->status();
    const LogIndex last = status.last_index;
    for (const raft::PeerProgress& peer : impl_->node->progress()) {
        if (peer.id != status.id) {
            lag.emplace_back(peer.id, last.value() - std::min(last.value(), peer.match.value()));
        }
    }
    return lag;
}

bool Replicator::is_peer_current(NodeId peer, std::uint64_t lag_max) const {
    std::lock_guard lock(impl_->mutex);
    if (impl_->node->role() != raft::Role::leader) {
        return false;
    }
    const LogIndex last = impl_->node->status().last_index;
    for (const raft::PeerProgress& progress : impl_->node->progress()) {
        if (progress.id == peer) {
            // A quiet leader saw every peer caught up when it quiesced, and is woken when a
            // peer's node is gone; its activity flags are from before the quiet period.
            return (progress.is_recent_active || impl_->node->is_quiescent()) &&
                   progress.state == "replicate" &&
                   last.value() - std::min(last.value(), progress.match.value()) <= lag_max;
        }
    }
    return false;
}

std::size_t Replicator::reads_waiting_for_leader() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->reads_waiting_since ? impl_->reads_next.size() : 0;
}

bool Replicator::is_transferring() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->node->is_transferring();
}

NodeId Replicator::leader() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->node->leader();
}

std::uint64_t Replicator::leader_changes() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->leader_changes;
}

void Replicator::stop() {
    if (!impl_) {
        return;
    }
    Impl& r = *impl_;
    Impl::Locked lock(r);
    r.is_stopping = true;
    // Runs what a follower left for the ticker too (which may be stopped already).
    while (!r.failure && (r.is_outstanding || r.node->has_ready())) {
        if (r.is_outstanding) {
            r.idle.wait(lock.lock);
        } else {
            r.process();
        }
    }
}

}  // namespace queen::node::detail
