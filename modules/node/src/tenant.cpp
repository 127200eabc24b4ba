// modules/node/src/tenant.cpp — the write path of one tenant: batch, log, commit, apply, answer.
#include "tenant.hpp"

#include <algorithm>
#include <chrono>
#include <limits>

#include "data_dir.hpp"
#include "entry.hpp"
#include "queen/core/thread_name.hpp"
#include "queen/queues/queries.hpp"
#include "queen/raft/codec.hpp"
#include "queen/raft/errc.hpp"

namespace queen::node::detail {

Tenant::Tenant(std::string name, const NodeConfig& config, Logger& logger, const Clock& clock,
               Waiters& waiters)
    : name_(std::move(name)),
      config_(config),
      logger_(logger),
      clock_(clock),
      waiters_(waiters),
      disk_(config.node.data_dir, config.node.disk_reserve_bytes, clock) {}

Result<std::unique_ptr<Tenant>> Tenant::open(std::string name, const std::filesystem::path& dir,
                                             const NodeConfig& config, Logger& logger,
                                             const Clock& clock, Waiters& waiters, Cluster* cluster,
                                             TenantGroup group) {
    std::unique_ptr<Tenant> tenant(new Tenant(std::move(name), config, logger, clock, waiters));
    tenant->dir_ = dir;
    if (cluster == nullptr) {
        group.founders = {NodeId{config.node.id}};
    }
    // A snapshot install a crash interrupted is finished first (snapshot.hpp): its state
    // replaces ours before anything opens it.
    QUEEN_TRY(const std::optional<InstallMeta> install, pending_install(dir));
    if (install) {
        QUEEN_LOG(logger, Level::warn, "tenant.snapshot_install_resumed",
                  "tenant=" << tenant->name_ << " index=" << install->index);
        QUEEN_TRY(move_installed_state(dir));
    }
    // The state first: what it has applied was acknowledged, so the log's recovery may not cut
    // it (a bit flipped in a synced record is refused, not taken for a torn write). In a group
    // the state may be ahead of the log (a snapshot), and a cut tail is protocol-aware
    // recovery's business (below).
    tenant->engine_options_.store = config.store;
    const std::int64_t opening_ns = clock.monotonic_ns();
    QUEEN_TRY(auto engine, engine::Engine::open(dir / "state", tenant->engine_options_));
    if (const auto migrated = engine.queue_state().migration()) {
        // elapsed_ms: opening the state, the migration included.
        QUEEN_LOG(logger, Level::info, "tenant.state_migrated",
                  "tenant=" << tenant->name_ << " from_layout=" << int{migrated->from}
                            << " to_layout=" << int{migrated->to} << " ids_moved="
                            << migrated->ids_moved << " blocks_moved=" << migrated->blocks_moved
                            << " elapsed_ms=" << (clock.monotonic_ns() - opening_ns) / 1'000'000);
    }
    tenant->engine_ = std::make_unique<engine::Engine>(std::move(engine));
    QUEEN_TRY(tenant->load_system_records(group));
    tenant->group_ = std::move(group);
    log::RecoveryReport report;
    log::Environment environment;
    environment.clock = &clock;
    environment.logger = &logger;
    auto opened = log::Log::open(dir / "log", config.log, environment, &report,
                                 cluster ? LogIndex{0} : tenant->engine_->applied_index());
    const bool has_peers = cluster != nullptr && tenant->conf_state_.voters.size() > 1;
    if (!opened && opened.error().is(Errc::corruption) && report.damaged_from && has_peers) {
        // Repair from the peers (docs/cluster.md, "A damaged log"): the damaged record and every
        // later one are cut and come back from the leader. The marker goes first: until it has
        // caught up this node votes for nobody, since the cut may drop entries it acknowledged.
        const LogIndex cut_from = *report.damaged_from;
        QUEEN_LOG(logger, Level::error, "tenant.log_damage_repairing",
                  "tenant=" << tenant->name_ << " cut_from=" << cut_from.value() << " error=\""
                            << opened.error().message()
                            << "\" note=\"the dropped entries come back from the leader\"");
        QUEEN_TRY(write_file_durably(dir / "raft_recovering", "recovering\n"));
        QUEEN_TRY(const log::CutReport cut, log::cut_log(dir / "log", cut_from, config.log, true));
        QUEEN_LOG(logger, Level::warn, "tenant.log_damage_repaired",
                  "tenant=" << tenant->name_ << " first_dropped=" << cut.first_dropped.value()
                            << " last_dropped=" << cut.last_dropped.value()
                            << " records_dropped=" << cut.records_dropped);
        opened = log::Log::open(dir / "log", config.log, environment, &report, LogIndex{0});
    }
    if (!opened && opened.error().is(Errc::corruption)) {
        Error refused = std::move(opened).error();
        refused.context =
            "tenant " + tenant->name_ + ": " + refused.context +
            (has_peers ? ". This node is a cluster member: after the cut it rejoins "
                         "recovering (the repair leaves tenants/" +
                             tenant->name_ +
                             "/raft_recovering), votes for nobody and gets the dropped "
                             "entries back from the leader"
                       : ". No other replica holds this tenant: the cut loses what it "
                         "drops; if the state "
                         "already applied it the tenant then refuses to start (state "
                         "ahead of the log): restore a backup instead");
        return refused;
    }
    QUEEN_TRY(tenant->log_, std::move(opened));
    if (install) {
        QUEEN_TRY(tenant->log_->reset(install->index, install->term));
    }
    QUEEN_TRY(finish_install(dir));  // also drops a download cut short
    if (report.tail_truncated) {
        QUEEN_LOG(logger, Level::warn, "tenant.log_tail_truncated",
                  "tenant=" << tenant->name_ << " segment=" << report.truncated_segment.string()
                            << " offset=" << report.truncated_at_offset
                            << " bytes_cut=" << report.bytes_cut << " detail=\""
                            << report.truncation_detail << "\"");
    }
    tenant->log_dir_ = dir / "log";
    // Alone, every entry in the durable log was committed (this node was its only voter); in a
    // group, raft learns what is committed from the leader.
    QUEEN_TRY(tenant->replay(
        cluster ? tenant->engine_->applied_index() : tenant->log_->last_index(), cluster));
    ReplicatorStart start;
    start.self = NodeId{config.node.id};
    start.conf_state.voters = {start.self};
    if (cluster != nullptr) {
        // Protocol-aware recovery (docs/raft.md section 1): a log that lost records may have
        // lost entries this node acknowledged; it must not vote as if it had not.
        start.recovering_marker = dir / "raft_recovering";
        start.is_recovering =
            report.tail_truncated || std::filesystem::exists(start.recovering_marker);
        if (start.is_recovering) {
            QUEEN_LOG(logger, Level::warn, "tenant.raft_recovering",
                      "tenant=" << tenant->name_ << " reason=\""
                                << (report.tail_truncated ? "the log's tail was cut"
                                                          : "an earlier recovery")
                                << "\" note=\"no votes until caught up with the leader\"");
            QUEEN_TRY(write_file_durably(start.recovering_marker, "recovering\n"));
        }
        start.conf_state = tenant->conf_state_;
        start.election_ticks = cluster->options().election_ticks;
        start.heartbeat_ticks = cluster->options().heartbeat_ticks;
        start.quiesce_ticks = cluster->options().quiesce_ticks;
        start.memory_bytes_max = cluster->options().raft_memory_bytes_max;
        start.leader_wait_ticks = cluster->options().leader_wait_ms /
                                  std::max<std::uint32_t>(1, cluster->options().tick_ms);
    }
    start.applied = tenant->engine_->applied_index();
    start.log_pending_bytes_max = config.log.pending_bytes_max;
    ReplicatorEvents events;
    events.committed = [t = tenant.get()](std::vector<raft::Entry>& entries) {
        t->on_committed(entries);
    };
    events.failed = [t = tenant.get()](const Error& error) {
        t->poison(prefixed(error, t->name_));
    };
    if (cluster != nullptr) {
        events.send = [cluster, t = tenant.get()](const raft::Message& message) {
            cluster->send(t->name_, message);
        };
        events.wake = [cluster, t = tenant.get()] { cluster->wake(t->name_); };
        events.install_snapshot = [t = tenant.get()](const raft::SnapshotMeta& meta) {
            t->on_install_snapshot(meta);
        };
        Tenant* t = tenant.get();
        t->snapshot_source_ = std::make_unique<SnapshotSource>(
            dir / snapshot_out_dir,
            [t](const std::filesystem::path& to) -> Status {
                std::shared_lock engine_lock(t->engine_mutex_);
                if (!t->engine_) {
                    return Error{Errc::poisoned, "tenant " + t->name_ + " has no state"};
                }
                return t->engine_->env().copy_to(to, true);
            },
            [t] {
                // What a copy holds: the state's last LMDB commit, not the applier's open txn.
                std::shared_lock engine_lock(t->engine_mutex_);
                return t->engine_ ? t->engine_->applied_index() : LogIndex{0};
            },
            [cluster, t](NodeId to, ByteSpan body) {
                (void)cluster->send_tenant_frame(to, frame_type_snapshot_chunk, t->name_, body);
            },
            clock, logger);
        t->snapshot_receiver_ = std::make_unique<SnapshotReceiver>(
            NodeId{config.node.id},
            [cluster, t](NodeId to, ByteSpan body) {
                return cluster->send_tenant_frame(to, frame_type_snapshot_request, t->name_, body);
            },
            clock, logger);
    }
    QUEEN_TRY(tenant->replicator_,
              Replicator::open(*tenant->log_, std::move(start), std::move(events), clock, logger));
    if (cluster != nullptr) {
        tenant->cluster_ = cluster;
        cluster->attach(
            tenant->name_, *tenant->replicator_, [t = tenant.get()] { t->on_tick(); },
            [t = tenant.get()](NodeId from, std::uint8_t type, ByteSpan body) {
                if (type == frame_type_snapshot_request) {
                    t->snapshot_source_->on_request(from, body);
                } else {
                    t->snapshot_receiver_->on_chunk(from, body);
                }
            });
    }
    tenant->publish_catalogue();
    tenant->applier_ = std::thread([t = tenant.get()] { t->run_applier(); });
    tenant->maintenance_ = std::thread([t = tenant.get()] { t->run_maintenance(); });
    QUEEN_LOG(logger, Level::info, "tenant.opened",
              "tenant=" << tenant->name_ << " applied_index=" << tenant->applied_index_.load()
                        << " log_first=" << tenant->log_->first_index().value()
                        << " log_last=" << tenant->log_->last_index().value());
    return tenant;
}

Status Tenant::replay(LogIndex last, bool may_state_lead) {
    const LogIndex applied = engine_->applied_index();
    if (log_->last_index() < applied && !may_state_lead) {
        return Error{Errc::corruption, "tenant " + name_ + ": the state has applied index " +
                                           std::to_string(applied.value()) +
                                           " but the log ends at " +
                                           std::to_string(log_->last_index().value())};
    }
    if (applied.next() < log_->first_index() && last >= log_->first_index()) {
        return Error{Errc::corruption, "tenant " + name_ + ": the log starts at " +
                                           std::to_string(log_->first_index().value()) +
                                           " but the state has only applied up to " +
                                           std::to_string(applied.value())};
    }
    std::uint64_t replayed = 0;
    LogIndex next = applied.next();
    while (next <= last) {
        // At most a writer batch's bytes at a time, as the applier takes them: the tail since
        // the last checkpoint can be large, and one read of all of it stayed in RAM.
        QUEEN_TRY(auto records, log_->read(next, last.next(), config_.tenant.batch_bytes_max));
        std::vector<raft::Entry> batch;  // holds the bytes the engine entries view
        batch.reserve(records.size());
        for (auto& record : records) {
            batch.push_back(raft::Entry{record.term, record.index, entry_type_of(record.type),
                                        std::move(record.payload)});
        }
        std::vector<engine::Entry> entries;
        entries.reserve(batch.size());
        system_scratch_.clear();
        for (const raft::Entry& entry : batch) {
            std::optional<Error> ignored;  // nobody waits for these answers
            QUEEN_TRY(auto translated, engine_entry(entry, ignored));
            entries.push_back(translated);
        }
        QUEEN_TRY(auto outcome, engine_->apply(entries));
        (void)outcome;
        system_scratch_.clear();
        replayed += records.size();
        next = records.back().index.next();
    }
    applied_index_.store(engine_->applied_index().value());
    QUEEN_TRY(refresh_due());
    answered_through_ = engine_->applied_index();
    visible_through_ = answered_through_;
    if (replayed > 0) {
        QUEEN_LOG(logger_, Level::info, "tenant.replayed",
                  "tenant=" << name_ << " entries=" << replayed);
    }
    return {};
}

Tenant::~Tenant() {
    (void)stop();
}

namespace {

/// Commands that make the state bigger: refused first when the disk runs low (DiskSpace).
bool adds_data(const engine::CommandBody& body) {
    return std::holds_alternative<queues::Push>(body) ||
           std::holds_alternative<engine::Transaction>(body) ||
           std::holds_alternative<queues::AddTrace>(body) ||
           std::holds_alternative<engine::StreamCycle>(body);
}

}  // namespace

std::optional<Error> Tenant::disk_refusal(ByteSpan payload) {
    const Room room = disk_.room();
    if (room == Room::plenty) {
        if (is_disk_low_logged_.load(std::memory_order_relaxed) &&
            is_disk_low_logged_.exchange(false)) {
            QUEEN_LOG(logger_, Level::info, "tenant.disk_ok",
                      "tenant=" << name_ << " free_bytes=" << disk_.free_bytes());
        }
        return std::nullopt;
    }
    if (room == Room::low) {
        // Decoded only while the disk is low: what does this command add?
        const auto entry = decode_entry(payload);
        const auto command =
            entry ? engine::decode_command(entry->command) : Result<engine::Command>(entry.error());
        if (!command || !adds_data(command->body)) {
            return std::nullopt;  // catalogue records and the like: small, let them through
        }
    }
    disk_refusals_total_.fetch_add(1, std::memory_order_relaxed);
    if (!is_disk_low_logged_.exchange(true)) {
        QUEEN_LOG(logger_, Level::warn, "tenant.disk_full",
                  "tenant=" << name_ << " free_bytes=" << disk_.free_bytes()
                            << " reserve_bytes=" << disk_.reserve_bytes());
    }
    return disk_.refusal(room);
}

void Tenant::submit(engine::Command command, api::Backend::Completion done) {
    Bytes payload;
    encode_entry_header(payload, TimestampMs{0});  // the replicator stamps it
    engine::encode_command_into(command, payload);
    // Internal proposals (no `done`: sweeps) are the leader's own business: never forwarded.
    const bool may_forward = static_cast<bool>(done);
    submit_payload(std::move(payload), std::move(done), may_forward);
}

void Tenant::submit_payload(Bytes payload, api::Backend::Completion done, bool may_forward) {
    std::unique_lock lock(mutex_);
    std::optional<Error> refused;
    if (poison_) {
        refused = Error{Errc::poisoned, poison_->message()};
    } else if (stopping_) {
        refused = Error{Errc::cancelled, "tenant " + name_ + " is shutting down"};
    } else if (in_flight_.size() >= config_.tenant.proposals_max) {
        proposals_rejected_total_.fetch_add(1, std::memory_order_relaxed);
        refused = Error{Errc::busy, "tenant " + name_ + " has " +
                                        std::to_string(config_.tenant.proposals_max) +
                                        " commands in flight; retry later"};
    }
    lock.unlock();
    if (!refused && done) {
        // A client's write, not the tenant's own (sweeps free space).
        refused = disk_refusal(payload);
    }
    if (refused) {
        if (done) {
            done(std::move(*refused));
        }
        return;
    }
    // The replicator's lock orders the proposals: it registers each (under it, in log order)
    // before any Ready can report it committed.
    auto proposed = replicator_->propose(payload, [&](LogIndex index, Term term) {
        std::lock_guard registered(mutex_);
        in_flight_.push_back(InFlight{index, term, clock_.monotonic_ns(), std::move(done)});
    });
    if (proposed) {
        return;
    }
    const Error& error = proposed.error();
    if (error.is(raft::Errc::busy) || error.is(Errc::busy)) {
        proposals_rejected_total_.fetch_add(1, std::memory_order_relaxed);
        if (done) {
            done(Error{Errc::busy, "tenant " + name_ + ": " + error.message()});
        }
    } else if (error.is(raft::Errc::not_leader) || error.is(raft::Errc::transferring)) {
        const NodeId leader = replicator_->leader();
        if (may_forward && cluster_ != nullptr && leader != raft::no_node &&
            leader != NodeId{config_.node.id} && error.is(raft::Errc::not_leader)) {
            forwarded_total_.fetch_add(1, std::memory_order_relaxed);
            cluster_->forward(leader, name_, payload, std::move(done));
            return;
        }
        if (may_forward && cluster_ != nullptr &&
            (leader == raft::no_node || error.is(raft::Errc::transferring)) &&
            config_.cluster.leader_wait_ms > 0) {
            // An election or a leadership transfer: wait for its outcome (on_tick) rather than
            // fail at once.
            std::unique_lock parked(mutex_);
            if (parked_.size() < config_.tenant.proposals_max && !stopping_) {
                parked_.push_back(
                    Parked{std::move(payload), std::move(done),
                           clock_.monotonic_ns() +
                               std::int64_t{config_.cluster.leader_wait_ms} * 1'000'000});
                return;
            }
        }
        if (done) {
            done(Error{Errc::not_leader, "tenant " + name_ + ": " + error.context});
        }
    } else if (error.is(Errc::poisoned) || error.is(Errc::cancelled)) {
        if (done) {
            done(prefixed(error, name_));
        }
    } else {
        const Error failure = prefixed(error, name_);
        poison(failure);
        if (done) {
            done(Error{Errc::poisoned, failure.message()});
        }
    }
}

void Tenant::note_commit_latency(std::int64_t latency_ns) {
    const double seconds = static_cast<double>(latency_ns) / 1e9;
    std::size_t bucket = 0;
    while (bucket < std::size(latency_bounds_s) && seconds > latency_bounds_s[bucket]) {
        ++bucket;
    }
    commit_latency_buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
    commit_latency_ns_total_.fetch_add(
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, latency_ns)),
        std::memory_order_relaxed);
}

void Tenant::on_tick() {
    const NodeId leader = replicator_->leader();  // not under the tenant's lock (lock order)
    if (leader != ticked_leader_) {
        // Forwards to a former leader get no answer: fail them now (outcome unknown).
        if (ticked_leader_ != raft::no_node && cluster_ != nullptr) {
            cluster_->abandon_forwards(name_, ticked_leader_);
        }
        ticked_leader_ = leader;
        std::lock_guard lock(placement_mutex_);
        is_membership_settled_ = false;  // a new leader here looks at the membership again
    }
    if (leader == NodeId{config_.node.id}) {
        lead_placement();
    }
    {
        std::lock_guard lock(mutex_);
        if (parked_.empty()) {
            return;
        }
    }
    // A leader handing its leadership over takes no writes until the transfer ends.
    const bool is_settled = leader != raft::no_node &&
                            (leader != NodeId{config_.node.id} || !replicator_->is_transferring());
    std::deque<Parked> retry;
    std::vector<api::Backend::Completion> expired;
    {
        std::lock_guard lock(mutex_);
        if (is_settled || stopping_) {
            retry.swap(parked_);
        } else {
            const std::int64_t now = clock_.monotonic_ns();
            while (!parked_.empty() && parked_.front().deadline_ns <= now) {
                expired.push_back(std::move(parked_.front().done));
                parked_.pop_front();
            }
        }
    }
    for (Parked& parked : retry) {
        submit_payload(std::move(parked.payload), std::move(parked.done), true);
    }
    for (auto& done : expired) {
        done(Error{Errc::not_leader, "tenant " + name_ +
                                         ": no leader could take the write within " +
                                         std::to_string(config_.cluster.leader_wait_ms) +
                                         " ms (cluster.leader_wait_ms: an election or a "
                                         "leadership transfer)"});
    }
}

void Tenant::on_committed(std::vector<raft::Entry>& entries) {
    std::unique_lock lock(mutex_);
    for (raft::Entry& entry : entries) {
        committed_.push_back(std::move(entry));
    }
    if (is_applier_waiting_) {
        is_applier_waiting_ = false;
        lock.unlock();
        committed_ready_.notify_one();
    }
}

void Tenant::when_readable(api::Backend::ReadReady ready) {
    if (cluster_ == nullptr) {
        // Alone, the state is the truth: the read waits for the commit of everything answered
        // so far (answers leave before their LMDB commit), so it never misses a write its
        // client was told about.
        LogIndex target;
        {
            std::lock_guard lock(mutex_);
            target = answered_through_;
        }
        wait_visible(target, std::move(ready));
        return;
    }
    // In a group the read waits for a read point the leader confirmed (ReadIndex): everything
    // committed anywhere before the read started, this node's answers included.
    replicator_->read_index([this, ready = std::move(ready)](Result<LogIndex> index) mutable {
        if (!index) {
            ready(prefixed(index.error(), name_));
            return;
        }
        wait_visible(*index, std::move(ready));
    });
}

void Tenant::wait_visible(LogIndex target, api::Backend::ReadReady ready) {
    std::unique_lock lock(mutex_);
    if (poison_) {
        const Error error{Errc::poisoned, poison_->message()};
        lock.unlock();
        ready(error);
        return;
    }
    if (visible_through_ >= target) {
        lock.unlock();
        ready({});
        return;
    }
    if (is_applier_done_) {
        lock.unlock();
        ready(Error{Errc::cancelled, "tenant " + name_ + " is shutting down"});
        return;
    }
    if (waiting_reads_.size() >= config_.tenant.reads_waiting_max) {
        lock.unlock();
        ready(Error{Errc::busy, "tenant " + name_ + " has " +
                                    std::to_string(config_.tenant.reads_waiting_max) +
                                    " reads waiting; retry later"});
        return;
    }
    // In index order (read points from different rounds may arrive out of order).
    auto at = std::upper_bound(
        waiting_reads_.begin(), waiting_reads_.end(), target,
        [](LogIndex index, const WaitingRead& read) { return index < read.index; });
    waiting_reads_.insert(at, WaitingRead{target, std::move(ready)});
    lock.unlock();
    committed_ready_.notify_one();  // an idle applier commits now
}

Status Tenant::read(const std::function<void(const engine::Engine&)>& read) const {
    {
        std::lock_guard lock(mutex_);
        if (poison_) {
            return Error{Errc::poisoned, poison_->message()};
        }
    }
    // Never waits: while a snapshot's state is swapped in, reads are refused (retry).
    std::shared_lock engine_lock(engine_mutex_, std::defer_lock);
    if (is_installing_.load(std::memory_order_acquire) || !engine_lock.try_lock() || !engine_) {
        return Error{Errc::busy, "tenant " + name_ +
                                     ": its state is being replaced by the leader's snapshot; "
                                     "retry"};
    }
    read(*engine_);
    return {};
}

std::size_t Tenant::uncommitted_entries() const {
    return engine_ ? engine_->uncommitted().entries : 0;
}

void Tenant::run_applier() {
    set_thread_name("applier");
    std::vector<Applying> ready;
    std::vector<api::Backend::Completion> lost;
    std::unique_lock lock(mutex_);
    while (true) {
        // Proposals left when nothing more can commit: poisoned, or stopped.
        const auto is_hopeless = [&] {
            return committed_.empty() && !in_flight_.empty() &&
                   (poison_.has_value() || is_replicator_stopped_);
        };
        const auto has_work = [&] {
            return !committed_.empty() || is_hopeless() || install_job_.has_value() ||
                   (stopping_ && is_replicator_stopped_ && in_flight_.empty());
        };
        while (!has_work()) {
            if (uncommitted_entries() > 0) {
                // Idle with applied entries not committed to LMDB: commit them when a reader
                // waits or their time is up, and meanwhile take more work into the same txn.
                const std::int64_t wait_ns = commit_wait_ns();
                if (wait_ns <= 0 || !waiting_reads_.empty() || stopping_ || poison_) {
                    lock.unlock();
                    commit_state();
                    lock.lock();
                    continue;
                }
                is_applier_waiting_ = true;
                committed_ready_.wait_for(lock, std::chrono::nanoseconds(wait_ns));
                is_applier_waiting_ = false;
                continue;
            }
            is_applier_waiting_ = true;
            committed_ready_.wait(lock);
        }
        is_applier_waiting_ = false;
        if (install_job_) {
            const InstallMeta meta = *install_job_;
            install_job_.reset();
            lock.unlock();
            Status swapped = swap_in_snapshot(meta);
            lock.lock();
            install_result_ = std::move(swapped);
            install_done_.notify_all();
            continue;
        }
        if (committed_.empty()) {
            if (in_flight_.empty()) {
                break;  // stopping, and everything proposed was answered
            }
            const Error error = poison_ ? Error{Errc::poisoned, poison_->message()}
                                        : Error{Errc::cancelled, "tenant " + name_ + " stopped"};
            std::deque<InFlight> failed;
            failed.swap(in_flight_);
            lock.unlock();
            for (InFlight& entry : failed) {
                if (entry.done) {
                    entry.done(error);
                }
            }
            lock.lock();
            continue;
        }
        // Take the committed entries at the front (bounded): one LMDB txn applies them all.
        // Each answers the proposal registered at its index when the terms match; a proposal
        // whose index another leader's entry took was lost with the leadership.
        ready.clear();
        lost.clear();
        std::uint64_t bytes = 0;
        while (!committed_.empty() && ready.size() < config_.tenant.batch_entries_max &&
               (ready.empty() ||
                bytes + committed_.front().data.size() <= config_.tenant.batch_bytes_max)) {
            Applying applying{std::move(committed_.front()), {}};
            committed_.pop_front();
            while (!in_flight_.empty() && in_flight_.front().index <= applying.entry.index) {
                InFlight& proposal = in_flight_.front();
                if (proposal.index == applying.entry.index &&
                    proposal.term == applying.entry.term) {
                    applying.done = std::move(proposal.done);
                    note_commit_latency(clock_.monotonic_ns() - proposal.proposed_ns);
                } else if (proposal.done) {
                    lost.push_back(std::move(proposal.done));
                }
                in_flight_.pop_front();
            }
            bytes += applying.entry.data.size();
            ready.push_back(std::move(applying));
        }
        const bool is_poisoned = poison_.has_value();
        lock.unlock();
        for (auto& done : lost) {
            done(Error{Errc::not_leader,
                       "tenant " + name_ +
                           ": leadership changed before the command committed; it was not "
                           "applied, retry"});
        }
        apply_ready(ready, is_poisoned);
        lock.lock();
        const engine::UncommittedStats pending =
            engine_ ? engine_->uncommitted() : engine::UncommittedStats{};
        if (pending.entries > 0 && (!waiting_reads_.empty() || commit_wait_ns() <= 0 ||
                                    pending.bytes >= config_.tenant.state_commit_bytes)) {
            lock.unlock();
            commit_state();
            lock.lock();
        }
    }
    lock.unlock();
    commit_state();
}

std::int64_t Tenant::commit_wait_ns() const {
    const std::int64_t interval_ns = config_.tenant.state_commit_interval_us * 1000;
    return interval_ns - (clock_.monotonic_ns() - uncommitted_since_ns_);
}

void Tenant::commit_state() {
    if (!engine_) {
        return;  // poisoned by a failed snapshot install
    }
    if (engine_->uncommitted().entries > 0) {
        if (auto committed = engine_->commit(); !committed) {
            // The answers left already and the entries are in the log: fail-stop, and a
            // restart replays them.
            poison(prefixed(committed.error(), name_));
            return;
        }
        state_commits_total_.fetch_add(1, std::memory_order_relaxed);
    }
    publish_visible();
}

void Tenant::publish_visible() {
    // The engine also commits by itself when its txn reaches entries_per_txn_max.
    const LogIndex visible{engine_->applied_index()};
    std::vector<api::Backend::ReadReady> satisfied;
    {
        std::lock_guard lock(mutex_);
        if (visible <= visible_through_) {
            return;
        }
        visible_through_ = visible;
        while (!waiting_reads_.empty() && waiting_reads_.front().index <= visible) {
            satisfied.push_back(std::move(waiting_reads_.front().ready));
            waiting_reads_.pop_front();
        }
    }
    for (auto& ready : satisfied) {
        ready({});
    }
}

void Tenant::fail_reads(const Error& error) {
    std::deque<WaitingRead> failed;
    {
        std::lock_guard lock(mutex_);
        failed.swap(waiting_reads_);
    }
    for (WaitingRead& read : failed) {
        read.ready(error);
    }
}

void Tenant::apply_ready(std::vector<Applying>& ready, bool is_poisoned) {
    std::optional<Error> failure;
    if (is_poisoned || !engine_) {
        failure = Error{Errc::poisoned, "tenant " + name_ + " is poisoned"};
    }
    // An installed snapshot's state already holds the first entries the log received again.
    const LogIndex held{applied_index_.load(std::memory_order_acquire)};
    if (!failure && !ready.empty() && ready.front().entry.index <= held) {
        auto first_new = std::find_if(ready.begin(), ready.end(), [&](const Applying& applying) {
            return applying.entry.index > held;
        });
        for (auto it = ready.begin(); it != first_new; ++it) {
            if (it->done) {
                it->done(Error{Errc::not_leader, "tenant " + name_ +
                                                     ": the state was replaced by a snapshot "
                                                     "before the command applied; retry"});
            }
        }
        ready.erase(ready.begin(), first_new);
        if (ready.empty()) {
            return;
        }
    }
    engine::ApplyOutcome outcome;
    std::size_t answered = 0;  // entries of `ready` answered so far (in order)
    if (!failure) {
        entries_.clear();
        system_scratch_.clear();
        answers_.assign(ready.size(), std::nullopt);
        for (std::size_t i = 0; i < ready.size(); ++i) {
            auto decoded = engine_entry(ready[i].entry, answers_[i]);
            if (!decoded) {
                failure = prefixed(decoded.error(), name_);
                break;
            }
            entries_.push_back(*decoded);
        }
    }
    if (!failure) {
        // The entries are durable in the log, so their answers leave before LMDB's commit (and
        // its fdatasync): replay after a crash or a failed commit gives the same results. Reads
        // wait for the commit (when_readable()), so a client never reads older state than it
        // was told.
        if (engine_->uncommitted().entries == 0) {
            uncommitted_since_ns_ = clock_.monotonic_ns();
        }
        auto applied = engine_->apply_uncommitted(
            entries_, [&](std::size_t first, std::span<engine::CommandResult> results) {
                QUEEN_ASSERT(first == answered, "results are handed over in order, once");
                {
                    std::lock_guard lock(mutex_);
                    answered_through_ = ready[first + results.size() - 1].entry.index;
                }
                // A catalogue operation's client reads the catalogue it changed.
                publish_catalogue();
                for (std::size_t i = 0; i < results.size(); ++i) {
                    Applying& entry = ready[first + i];
                    if (!entry.done) {
                        continue;
                    }
                    if (auto& answer = answers_[first + i]) {
                        entry.done(std::move(*answer));  // a catalogue operation that failed
                    } else {
                        entry.done(std::move(results[i]));
                    }
                }
                answered = first + results.size();
            });
        if (applied) {
            outcome = std::move(*applied);
            QUEEN_ASSERT(answered == entries_.size(), "one result per applied entry");
            applied_index_.store(entries_.back().index.value(), std::memory_order_release);
            entries_applied_total_.fetch_add(entries_.size(), std::memory_order_relaxed);
            apply_batches_total_.fetch_add(1, std::memory_order_relaxed);
            publish_visible();
            publish_catalogue();
        } else {
            failure = prefixed(applied.error(), name_);
        }
    }
    if (failure) {
        poison(*failure);
        const Error answer{Errc::poisoned, failure->message()};
        for (std::size_t i = answered; i < ready.size(); ++i) {
            if (ready[i].done) {
                ready[i].done(answer);
            }
        }
        return;
    }
    std::string last_queue;
    for (const auto& wakeup : outcome.wakeups) {
        if (wakeup.queue != last_queue) {  // sorted: one wake per queue
            waiters_.wake(name_, wakeup.queue);
            last_queue = wakeup.queue;
        }
    }
    if (auto due = outcome.next_due) {
        // The earliest deferred partition stays the earliest until a pop takes it. Once its
        // time was announced (every parked pop woken) and the log's clock has passed it, it is
        // not armed again: the pops it woke would report it once more and be woken again, a
        // loop of pop entries for as long as nobody pops that queue. The next one after it is.
        // (By the log's clock, not the wall's: a pop stamped before a due time by a leader whose
        // clock lags still gets its wake-up.)
        std::int64_t announced = 0;
        {
            std::lock_guard lock(mutex_);
            announced = announced_due_ms_;
        }
        const std::int64_t after =
            entries_.empty() ? 0 : std::min(announced, entries_.back().timestamp.value());
        if (due->value() <= after) {
            due = engine_->next_due(TimestampMs{after});
        }
        if (due) {
            std::lock_guard lock(mutex_);
            if (!next_due_wall_ms_ || due->value() < *next_due_wall_ms_) {
                next_due_wall_ms_ = due->value();
                maintenance_wakeup_.notify_one();
            }
        }
    }
    if (outcome.is_due_changed) {
        std::lock_guard lock(mutex_);
        due_wall_ms_ =
            outcome.due_at ? std::optional<std::int64_t>(outcome.due_at->value()) : std::nullopt;
        due_proposed_at_ms_ = 0;  // a new due time (or the last Due applied): propose again
        maintenance_wakeup_.notify_one();
    }
}

Status Tenant::refresh_due() {
    QUEEN_TRY(auto due, engine_->due_at());
    std::lock_guard lock(mutex_);
    due_wall_ms_ = due ? std::optional<std::int64_t>(due->value()) : std::nullopt;
    due_proposed_at_ms_ = 0;
    maintenance_wakeup_.notify_one();
    return {};
}

void Tenant::run_maintenance() {
    set_thread_name("maintenance");
    const std::int64_t sweep_interval = config_.tenant.sweep_interval_ms;
    const std::int64_t sync_interval = config_.tenant.state_sync_interval_ms;
    const std::int64_t writeback_interval = config_.tenant.state_writeback_interval_ms;
    constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();
    std::int64_t next_sweep = clock_.monotonic_ns() / 1'000'000 + sweep_interval;
    std::int64_t next_sync = clock_.monotonic_ns() / 1'000'000 + sync_interval;
    std::int64_t next_writeback =
        writeback_interval > 0 ? clock_.monotonic_ns() / 1'000'000 + writeback_interval : never;
    // The applied index at the last writeback: an idle tenant has nothing to write back, and
    // looks again only at its next checkpoint (a thousand idle tenants would wake ten thousand
    // times a second otherwise).
    std::uint64_t written_back_through = 0;
    std::unique_lock lock(mutex_);
    while (!stopping_ && !poison_) {
        const std::int64_t now = clock_.monotonic_ns() / 1'000'000;
        std::int64_t wait_ms = std::min({next_sweep, next_sync, next_writeback}) - now;
        if (next_due_wall_ms_) {
            wait_ms = std::min(wait_ms, *next_due_wall_ms_ - clock_.wall_ms() + 1);
        }
        // A Due entry once its time has come; after proposing one, again only if its entry
        // has not been applied within due_retry_ms (dropped: this node is not the leader).
        constexpr std::int64_t due_retry_ms = 250;
        std::optional<std::int64_t> propose_due_at;
        if (due_wall_ms_) {
            propose_due_at = due_proposed_at_ms_ == 0
                                 ? *due_wall_ms_
                                 : std::max(*due_wall_ms_, due_proposed_at_ms_ + due_retry_ms);
            wait_ms = std::min(wait_ms, *propose_due_at - clock_.wall_ms());
        }
        if (wait_ms > 0) {
            maintenance_wakeup_.wait_for(lock, std::chrono::milliseconds(wait_ms));
            continue;
        }
        if (next_due_wall_ms_ && *next_due_wall_ms_ <= clock_.wall_ms()) {
            // A lease expired or a delayed message became visible: parked pops retry.
            announced_due_ms_ = std::max(announced_due_ms_, *next_due_wall_ms_);
            next_due_wall_ms_.reset();
            lock.unlock();
            waiters_.wake_tenant(name_);
            lock.lock();
            continue;
        }
        if (propose_due_at && *propose_due_at <= clock_.wall_ms()) {
            due_proposed_at_ms_ = clock_.wall_ms();
            lock.unlock();
            engine::Command due;
            due.body = engine::Due{};
            submit(std::move(due), {});
            lock.lock();
            continue;
        }
        if (now >= next_sweep) {
            next_sweep = now + sweep_interval;
            lock.unlock();
            // A tenant without a queue a sweep acts on proposes none: an idle group stays quiet.
            // (A read error proposes it: the sweep's apply then reports what is wrong.)
            auto swept = engine_->read([](const queues::Tables& tables, const store::Txn& txn) {
                return queues::has_swept_queue(tables, txn);
            });
            if (!swept || *swept) {
                engine::Command sweep;
                sweep.body = queues::Sweep{};
                submit(std::move(sweep), {});
            }
            lock.lock();
            continue;
        }
        if (now >= next_writeback && now < next_sync) {
            const std::uint64_t applied = applied_index_.load(std::memory_order_acquire);
            if (applied == written_back_through) {
                next_writeback = next_sync;
                continue;
            }
            written_back_through = applied;
            next_writeback = now + writeback_interval;
            lock.unlock();
            // Spreads LMDB's disk writes between checkpoints; a failure here is reported by
            // the next checkpoint's fdatasync, which poisons.
            {
                std::shared_lock engine_lock(engine_mutex_);
                if (engine_) {
                    (void)engine_->start_writeback();
                }
            }
            lock.lock();
            continue;
        }
        if (now >= next_sync) {
            next_sync = now + sync_interval;
            if (writeback_interval > 0) {
                next_writeback = now + writeback_interval;
            }
            // Nothing applied since the last checkpoint made everything durable: no checkpoint
            // (and the log was compacted after that one).
            if (applied_index_.load(std::memory_order_acquire) ==
                durable_index_.load(std::memory_order_relaxed)) {
                continue;
            }
            lock.unlock();
            // The engine reports the applied index LMDB now holds durably: the log below it may
            // go (keeping log_retain_entries for lagging readers), never above it.
            const std::int64_t started_ns = clock_.monotonic_ns();
            std::shared_lock engine_lock(engine_mutex_);
            auto synced =
                engine_ ? engine_->sync() : Result<LogIndex>(Error{Errc::poisoned, "no state"});
            engine_lock.unlock();
            const std::uint64_t durable = synced ? synced->value() : 0;
            if (synced) {
                checkpoints_total_.fetch_add(1, std::memory_order_relaxed);
                checkpoint_ns_total_.fetch_add(
                    static_cast<std::uint64_t>(clock_.monotonic_ns() - started_ns),
                    std::memory_order_relaxed);
                durable_index_.store(durable, std::memory_order_relaxed);
            }
            if (!synced) {
                poison(prefixed(synced.error(), name_));
            } else if (durable > config_.tenant.log_retain_entries) {
                // Never past the log's end: after a snapshot the state may lead the log.
                const LogIndex first_kept =
                    std::min(LogIndex{durable - config_.tenant.log_retain_entries + 1},
                             log_->last_index().next());
                if (first_kept > log_->first_index()) {
                    // The log is the raft log: its prefix goes once the state holds it durably
                    // (raft's memory already let go of applied entries).
                    if (auto compacted = log_->drop_prefix(first_kept); !compacted) {
                        poison(prefixed(compacted.error(), name_));
                    }
                }
            }
            lock.lock();
        }
    }
}

void Tenant::poison(const Error& error) {
    {
        std::lock_guard lock(mutex_);
        if (poison_) {
            return;
        }
        poison_ = error;
    }
    QUEEN_LOG(logger_, Level::error, "tenant.poisoned",
              "tenant=" << name_ << " error=\"" << error.message() << "\"");
    // Commands already in the log are answered by the applier as their commits are reported;
    // the rest never commit here, and the applier answers them once it wakes (is_hopeless).
    maintenance_wakeup_.notify_all();
    committed_ready_.notify_all();
    fail_reads(Error{Errc::poisoned, error.message()});
}

Status Tenant::stop() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ && !applier_.joinable()) {
            return {};
        }
        stopping_ = true;
    }
    if (cluster_ != nullptr) {
        cluster_->detach(name_);
    }
    // A snapshot download stops (a restart gets the snapshot again).
    if (snapshot_receiver_) {
        snapshot_receiver_->cancel();
    }
    installer_wakeup_.notify_all();
    // Everything proposed becomes durable and its commit is handed over; then nothing more.
    if (replicator_) {
        replicator_->stop();
    }
    if (installer_.joinable()) {
        installer_.join();
    }
    if (snapshot_source_) {
        snapshot_source_->stop();
    }
    std::deque<Parked> parked;
    {
        std::lock_guard lock(mutex_);
        is_replicator_stopped_ = true;
        parked.swap(parked_);
    }
    for (Parked& waiting : parked) {
        waiting.done(Error{Errc::cancelled, "tenant " + name_ + " is shutting down"});
    }
    committed_ready_.notify_all();
    maintenance_wakeup_.notify_all();
    if (applier_.joinable()) {
        applier_.join();  // it answers every command in flight first and commits them
    }
    {
        std::lock_guard lock(mutex_);
        is_applier_done_ = true;
    }
    // Its last commit made everything answered readable, unless it failed (poisoned).
    fail_reads(Error{Errc::cancelled, "tenant " + name_ + " stopped"});
    if (maintenance_.joinable()) {
        maintenance_.join();
    }
    Status result;
    if (engine_) {  // every other thread is gone
        if (auto synced = engine_->sync(); !synced) {
            result = synced.error();
        }
    }
    if (log_) {
        if (auto closed = log_->close(); !closed && result) {
            result = closed;
        }
    }
    std::lock_guard lock(mutex_);
    if (poison_ && result) {
        result = Error{Errc::poisoned, poison_->message()};
    }
    return result;
}

}  // namespace queen::node::detail
