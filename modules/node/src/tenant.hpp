// modules/node/src/tenant.hpp — one tenant on this node: its log, its engine, and the threads of
// the write path (batch -> log append -> durable -> apply -> answer).
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "catalogue.hpp"
#include "cluster.hpp"
#include "disk_space.hpp"
#include "queen/api/backend.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/logger.hpp"
#include "queen/engine/command.hpp"
#include "queen/engine/engine.hpp"
#include "queen/log/log.hpp"
#include "queen/node/config.hpp"
#include "queen/raft/types.hpp"
#include "replicator.hpp"
#include "snapshot.hpp"
#include "waiters.hpp"

namespace queen::node::detail {

/// What a tenant's raft group is, beyond its name.
struct TenantGroup {
    /// The voters the group was founded with: the membership before its log holds any
    /// membership entry (later the state keeps it: system record raft_conf_record_key). Empty
    /// in a cluster: this node joins the group (it is not a founder): it starts with no
    /// membership and waits for the group's leader to add it. Alone: ignored (this node).
    std::vector<NodeId> founders;
    /// The default tenant: it replicates the cluster catalogue (catalogue.hpp), whose
    /// operations only it applies; others refuse them.
    bool holds_catalogue = false;
    /// The catalogue before its first operation (holds_catalogue).
    std::vector<Member> founding_members;
    /// Called with the catalogue once at open and after each change (holds_catalogue), on the
    /// thread that applied it (open's, the applier's): it must not call the tenant back nor
    /// block.
    std::function<void(const Catalogue&)> on_catalogue;
};

/// The system record (engine::PutSystem) holding a group's raft membership as of the state's
/// applied index: raft's encoded SnapshotMeta (the index and term of the membership entry).
inline constexpr std::string_view raft_conf_record_key = "raft.conf";

/// `error` with the tenant's name in front of its context.
inline Error prefixed(const Error& error, const std::string& tenant) {
    return Error{error.code, "tenant " + tenant + ": " + error.context};
}

/// A tenant: owns its Log and Engine (tenant.cpp: open, write path, apply, maintenance, stop;
/// tenant_snapshot.cpp: snapshot installs; tenant_metrics.cpp: health and metric samples;
/// tenant_group.cpp: membership and catalogue records, placement). Thread-safety: every public
/// member from any thread.
class Tenant {
public:
    /// Opens <dir>/log and <dir>/state, replays the log from the engine's applied_index + 1 and
    /// starts the threads. With `cluster` (which must outlive the tenant) the tenant is a raft
    /// group over the cluster's voters; without, this node is its only voter. Errors: log and
    /// engine open errors; Errc::corruption when the log no longer holds applied_index + 1 or ends
    /// before applied_index.
    [[nodiscard]] static Result<std::unique_ptr<Tenant>> open(
        std::string name, const std::filesystem::path& dir, const NodeConfig& config,
        Logger& logger, const Clock& clock, Waiters& waiters, Cluster* cluster = nullptr,
        TenantGroup group = {});
    ~Tenant();
    Tenant(const Tenant&) = delete;
    Tenant& operator=(const Tenant&) = delete;

    /// Proposes `command` to the tenant's raft group on the calling thread (the replicator
    /// stamps it with the leader's time; never blocking: the log's group commit batches
    /// concurrent submits into one fdatasync); `done` runs on the applier thread after apply,
    /// or with an error: Errc::busy when proposals_max commands are in flight or raft's
    /// uncommitted bytes are full, Errc::poisoned, Errc::cancelled (stopping),
    /// raft::Errc::not_leader. An error found before the proposal is given on this thread.
    void submit(engine::Command command, api::Backend::Completion done);

    /// submit() of a command already in its entry envelope (entry.hpp), e.g. one a follower
    /// forwarded. `may_forward`: a follower sends it on to the leader it knows (through the
    /// cluster) instead of answering Errc::not_leader.
    void submit_payload(Bytes payload, api::Backend::Completion done, bool may_forward);

    /// Calls `ready` once everything answered before this call is readable: the applier answers
    /// before its LMDB commit, so a read may have to wait for that commit (at most one, which
    /// a waiting read brings forward). Never blocks: `ready` runs at once on the calling
    /// thread when the state already holds it, else on the applier thread after the commit
    /// (it must not block). Errors given to `ready`: Errc::poisoned, Errc::cancelled (stopped
    /// before the commit), Errc::busy (tenant.reads_waiting_max reads wait already).
    /// In a cluster `ready` waits instead for a read point the leader confirmed (ReadIndex),
    /// so a read on any node sees every write committed before it started; errors also
    /// Errc::not_leader (no leader confirmed it; retry). `ready` may then run on the thread
    /// that confirmed it.
    void when_readable(api::Backend::ReadReady ready);

    /// Runs `read` on the engine now, over the last LMDB commit (never waits).
    /// Errors: Errc::poisoned.
    [[nodiscard]] Status read(const std::function<void(const engine::Engine&)>& read) const;

    [[nodiscard]] api::TenantHealth health() const;
    /// Appends this tenant's metric samples.
    void collect_metrics(std::vector<api::MetricSample>& samples,
                         std::vector<api::HistogramSample>& histograms) const;

    /// Stops taking commands, finishes what is in flight, syncs the state and closes. Idempotent.
    [[nodiscard]] Status stop();

    [[nodiscard]] const std::string& name() const noexcept { return name_; }

    /// Proposes a catalogue operation (the default tenant only; a follower forwards it to the
    /// leader); `done` gets engine::PutSystemResult once applied, or the operation's error
    /// (apply_op()) or submit()'s.
    void submit_catalogue_op(const CatalogueOp& op, api::Backend::Completion done);

    /// The catalogue's placement of this tenant (TenantManager, after each catalogue change):
    /// `replicas`, the members its raft group should have (its leader adds and removes members
    /// one at a time until the group has them: lead_membership()), and `preferred`, the node
    /// the leader hands its leadership to when it is another voter (raft::no_node: none).
    void set_placement(std::vector<NodeId> replicas, NodeId preferred);

    /// Hands the tenant's leadership to `target` (Replicator::transfer_leadership).
    [[nodiscard]] Status transfer_leadership(NodeId target) {
        return replicator_->transfer_leadership(target);
    }

private:
    /// A command proposed and not yet answered, in log order.
    struct InFlight {
        LogIndex index;
        Term term;                      // a committed entry of another term replaced it
        std::int64_t proposed_ns = 0;   // monotonic, for the commit latency
        api::Backend::Completion done;  // empty for internal proposals (sweeps)
    };
    /// A committed entry taken for apply, with the answer of its proposal (when it is ours).
    struct Applying {
        raft::Entry entry;
        api::Backend::Completion done;
    };

    Tenant(std::string name, const NodeConfig& config, Logger& logger, const Clock& clock,
           Waiters& waiters);
    /// Applies the log's entries above the state's applied index through `last` (committed:
    /// replay at start). `may_state_lead`: the state may be ahead of the log's end (a group of
    /// several nodes after a snapshot install); alone that is corruption.
    [[nodiscard]] Status replay(LogIndex last, bool may_state_lead);
    /// The replicator's committed entries, in order (under its lock, any thread).
    void on_committed(std::vector<raft::Entry>& entries);
    void run_applier();
    /// Applier: how long the entries applied but not committed to LMDB may still wait for
    /// more to share their commit (<= 0: commit now).
    [[nodiscard]] std::int64_t commit_wait_ns() const;
    /// Applier: commits the entries applied so far to LMDB, which makes them readable.
    void commit_state();
    /// Applier: moves visible_through_ to the engine's committed index and calls the reads it
    /// satisfies.
    void publish_visible();
    /// Applier: counts one proposal's commit latency.
    void note_commit_latency(std::int64_t latency_ns);
    /// Cluster ticker: resubmits the writes parked while no leader was known, once one is,
    /// and fails those that waited cluster.leader_wait_ms.
    void on_tick();
    /// Cluster ticker, on the leader: proposes the catalogue's bootstrap (default tenant, once),
    /// brings the group's membership in line with the placement (lead_membership()) and hands
    /// the leadership to the preferred leader when it is another node.
    void lead_placement();
    /// Cluster ticker, on the leader: one membership change towards the placement's replicas,
    /// in this order so the group never has fewer up-to-date voters than it needs: a replica
    /// missing from the group joins as a learner; a learner the placement wants becomes a
    /// voter once it is within transfer_lag_max entries; then a member the placement dropped
    /// is removed (this node first hands its leadership to an up-to-date voter). True when the
    /// membership is not the placement's yet (lead_placement() then moves no leader).
    bool lead_membership(std::int64_t now);
    /// How often the leader retries a placement step (a transfer, a bootstrap).
    [[nodiscard]] std::int64_t placement_retry_ns() const;
    /// A node is handed the leadership, or made a voter, only within this many entries of the
    /// leader: writes wait while a transfer runs.
    static constexpr std::uint64_t transfer_lag_max = 1024;
    /// Calls `ready` once LMDB holds `target` (at once when it does).
    void wait_visible(LogIndex target, api::Backend::ReadReady ready);
    /// Calls every waiting read with `error` (poisoned or stopped).
    void fail_reads(const Error& error);
    /// The engine's view of a committed entry (applier, or open's replay): a membership entry
    /// and a catalogue operation become the system record they change (its bytes kept in
    /// system_scratch_ until the engine applied it); a catalogue operation that fails becomes a
    /// no-op whose answer is `answer`. Errors: Errc::corruption (an undecodable envelope or
    /// membership entry).
    [[nodiscard]] Result<engine::Entry> engine_entry(const raft::Entry& entry,
                                                     std::optional<Error>& answer);
    /// Reads the membership and the catalogue from the state (open, after a snapshot swap).
    [[nodiscard]] Status load_system_records(const TenantGroup& group);
    /// Applier: tells on_catalogue about a catalogue the last apply changed.
    void publish_catalogue();
    /// Applier: applies `ready` in one engine call (or fails it all) and answers every entry.
    void apply_ready(std::vector<Applying>& ready, bool is_poisoned);
    void run_maintenance();
    /// Replicator event (under its lock): the leader sent a snapshot at `meta`; the installer
    /// thread takes it from here.
    void on_install_snapshot(const raft::SnapshotMeta& meta);
    /// The installer thread: pulls each snapshot's state from the leader (install_snapshot())
    /// and reports to the replicator.
    void run_installer();
    /// Installer: pulls the state (unless this node's already holds the snapshot), commits
    /// the download and has the applier swap it in. Errors: Errc::cancelled (stopping), the
    /// download's and the swap's.
    [[nodiscard]] Status install_snapshot(const raft::SnapshotMeta& meta);
    /// Applier: replaces the engine by snapshot.install's state (when it has one) and resets
    /// the log to start after the snapshot; then the install is finished.
    [[nodiscard]] Status swap_in_snapshot(const InstallMeta& meta);
    /// Entries the applier has not applied yet in its open LMDB txn (0 without an engine).
    [[nodiscard]] std::size_t uncommitted_entries() const;
    void poison(const Error& error);
    /// The disk-full refusal of a client write of `payload` (an entry envelope), if any; logs
    /// the first refusal (tenant.disk_full) and the return of space (tenant.disk_ok).
    [[nodiscard]] std::optional<Error> disk_refusal(ByteSpan payload);
    void fail_all(const Error& error);

    std::string name_;
    NodeConfig config_;
    Logger& logger_;
    const Clock& clock_;
    Waiters& waiters_;
    DiskSpace disk_;  ///< node.disk_reserve_bytes against the data directory's free space
    std::atomic<std::uint64_t> disk_refusals_total_{0};
    std::atomic<bool> is_disk_low_logged_{false};
    std::unique_ptr<log::Log> log_;
    std::unique_ptr<Replicator> replicator_;
    Cluster* cluster_ = nullptr;
    // The applier owns the engine; other threads (reads, maintenance, health, a snapshot copy)
    // use it under engine_mutex_ shared, which the applier takes exclusively only to swap in
    // an installed snapshot's state (readers are refused meanwhile: is_installing_).
    std::unique_ptr<engine::Engine> engine_;
    engine::Options engine_options_;
    mutable std::shared_mutex engine_mutex_;
    std::atomic<bool> is_installing_{false};
    std::atomic<bool> is_catching_up_{false};  // a snapshot is being pulled or installed
    std::filesystem::path dir_;
    std::filesystem::path log_dir_;
    // Snapshots (groups of several nodes): the leader's copies, the follower's downloads.
    std::unique_ptr<SnapshotSource> snapshot_source_;
    std::unique_ptr<SnapshotReceiver> snapshot_receiver_;

    mutable std::mutex mutex_;
    // the applier: commits reported, a reader waits for its LMDB commit, or stopping
    mutable std::condition_variable committed_ready_;
    std::condition_variable maintenance_wakeup_;
    std::deque<InFlight> in_flight_;     // proposed, in log order, awaiting commit then apply
    std::deque<raft::Entry> committed_;  // committed, in log order, awaiting apply
    LogIndex answered_through_;          // highest index whose answer was handed out
    LogIndex visible_through_;           // highest index committed to LMDB (readable)
    /// A read waiting for visible_through_ to reach `index` (answered_through_ when it came).
    struct WaitingRead {
        LogIndex index;
        api::Backend::ReadReady ready;
    };
    std::deque<WaitingRead> waiting_reads_;  // in index order
    /// A client's write that came while no leader was known (an election).
    struct Parked {
        Bytes payload;
        api::Backend::Completion done;
        std::int64_t deadline_ns = 0;
    };
    std::deque<Parked> parked_;  // in arrival order
    NodeId ticked_leader_;       // the leader at the last on_tick (ticker thread only)
    std::optional<Error> poison_;
    std::optional<raft::SnapshotMeta> snapshot_job_;  // for the installer thread
    std::condition_variable installer_wakeup_;
    std::optional<InstallMeta> install_job_;  // for the applier: swap in the download
    std::optional<Status> install_result_;    // the applier's answer to install_job_
    std::condition_variable install_done_;
    bool stopping_ = false;
    bool is_applier_done_ = false;  // stop() joined the applier: nothing becomes readable
    bool is_applier_waiting_ = false;
    bool is_replicator_stopped_ = false;  // nothing more will be committed
    std::optional<std::int64_t> next_due_wall_ms_;
    /// The latest next_due_wall_ms_ the maintenance thread has woken the parked pops for.
    std::int64_t announced_due_ms_ = 0;
    /// When a Due entry has work (a timer due, a KV key or lock grant expiring): the
    /// maintenance thread proposes one once the wall clock passes it (the leader's proposal
    /// commits; a follower's is dropped). due_proposed_at_ms_: the wall time of the last such
    /// proposal, so it is not repeated before its entry can have been applied.
    std::optional<std::int64_t> due_wall_ms_;
    std::int64_t due_proposed_at_ms_ = 0;

    /// Reads when a Due entry next has work from the engine's committed state (at open and
    /// after a snapshot install). Errors: storage errors.
    [[nodiscard]] Status refresh_due();

    std::vector<engine::Entry> entries_;  // applier scratch
    // The node's records in the state (applier; open's replay before it): the membership as of
    // the last applied entry, the catalogue (default tenant), the bytes of the system records
    // of the batch being applied, and the answers of its failed catalogue operations.
    TenantGroup group_;
    raft::ConfState conf_state_;
    std::optional<Catalogue> catalogue_;
    bool is_catalogue_changed_ = false;
    std::vector<Bytes> system_scratch_;
    std::vector<std::optional<Error>> answers_;
    std::atomic<std::uint64_t> catalogue_version_{0};
    std::atomic<std::uint64_t> preferred_leader_{0};
    mutable std::mutex placement_mutex_;
    std::vector<NodeId> placement_replicas_;  // guarded by placement_mutex_ (empty: unknown)
    // The group's membership matched placement_replicas_ when this node, leading, last looked
    // (guarded by placement_mutex_; a new placement or leader clears it).
    bool is_membership_settled_ = false;
    std::int64_t membership_asked_ns_ = 0;   // ticker: the last membership change proposed
    std::int64_t transfer_asked_ns_ = 0;     // ticker: the last preferred-leader transfer asked
    std::int64_t bootstrap_asked_ns_ = 0;    // ticker: the last bootstrap proposal
    std::int64_t uncommitted_since_ns_ = 0;  // applier: first apply of the open LMDB txn

    std::atomic<std::uint64_t> applied_index_{0};
    std::atomic<std::uint64_t> entries_applied_total_{0};
    std::atomic<std::uint64_t> proposals_rejected_total_{0};
    std::atomic<std::uint64_t> forwarded_total_{0};
    /// The Prometheus bounds of the tenant's latency histograms (log fdatasync, raft commit).
    static constexpr double latency_bounds_s[] = {
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
    /// Commit latency of this node's proposals (proposed -> committed entry taken for apply),
    /// in the buckets of latency_bounds_s (the last one is +Inf).
    std::array<std::atomic<std::uint64_t>, std::size(latency_bounds_s) + 1>
        commit_latency_buckets_{};
    std::atomic<std::uint64_t> commit_latency_ns_total_{0};
    std::atomic<std::uint64_t> apply_batches_total_{0};
    std::atomic<std::uint64_t> state_commits_total_{0};
    // LMDB checkpoints (Engine::sync) of the maintenance thread, their time, and the applied
    // index the last one made durable.
    std::atomic<std::uint64_t> checkpoints_total_{0};
    std::atomic<std::uint64_t> checkpoint_ns_total_{0};
    std::atomic<std::uint64_t> durable_index_{0};
    std::atomic<std::uint64_t> snapshots_installed_total_{0};
    std::atomic<std::uint64_t> snapshot_bytes_received_total_{0};

    std::thread applier_;
    std::thread maintenance_;
    std::thread installer_;  // started with the first snapshot
};

}  // namespace queen::node::detail
