// modules/node/src/replicator.hpp — one tenant's raft group member: proposals in, committed
// entries out, its log and hard state on disk.
//
// The tenant's log (queen::log::Log) is the raft log: one record per raft entry, with the entry's
// term and index. Record types: record_type_command for normal entries (the envelope of
// entry.hpp; an empty payload is the no-op a new leader appends), record_type_conf_change for
// membership entries. Term and vote live in the hard state file next to the segments
// (queen/log/hard_state.hpp), saved only when they change and only after the entries written
// before them are durable, so the file is never ahead of the log it covers.
//
// Raft keeps applied entries in memory only while a peer may need them (memory_bytes_max); a
// leader reads older ones back from the log (raft::EntrySource) for a peer behind that, so a
// peer needs a snapshot only once the log's checkpoint dropped them too.
//
// There is no driver thread: the Ready of the raft state machine is taken by whichever thread
// changed it (a proposing I/O thread, the transport thread with a peer's message, the ticker,
// or the log's writer thread when an append became durable; a follower's Ready, which may
// truncate the log, is left to the ticker), under the replicator's lock. Entries go to the log's
// group commit (one fdatasync for everything pending); when they are durable the writer thread's
// callback acknowledges the Ready, which commits them (one voter) and hands them to the tenant in
// the next Ready. So a one-node group costs what the local log cost: one fdatasync per group, no
// extra thread hop.
//
// Quiescence (docs/raft.md section 8): a leader whose group has had nothing to do for
// ReplicatorStart::quiesce_ticks ticks in a row quiesces it instead of ticking, unless the
// caller names one of the group's nodes as gone (tick()). A quiet group sends nothing and
// ignores ticks (is_quiet(), a lock-free hint, lets the caller skip it); work wakes it, and the
// caller's node-level liveness wakes it (wake_for()) when a member's node is gone or restarted.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "queen/core/clock.hpp"
#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"
#include "queen/core/rng.hpp"
#include "queen/log/hard_state.hpp"
#include "queen/log/log.hpp"
#include "queen/raft/raw_node.hpp"

namespace queen::node::detail {

/// What the replicator tells its tenant. Both run under the replicator's lock, on the thread
/// that took the Ready: they may take the tenant's lock but must not call the replicator.
struct ReplicatorEvents {
    /// Committed entries, in index order, each exactly once; the tenant applies them (its own
    /// proposals and, on a follower, the leader's). The entries may be moved from.
    std::function<void(std::vector<raft::Entry>& entries)> committed;
    /// The log or the hard state failed (fail-stop): nothing proposed after this commits.
    std::function<void(const Error& error)> failed;
    /// Sends a message to a peer (never blocks). Empty for a group of this node alone.
    std::function<void(const raft::Message& message)> send;
    /// Asks for run_pending() on another thread: a follower's next Ready may truncate the log,
    /// which the log writer's thread (where a durable append is reported) must not do.
    std::function<void()> wake;
    /// The leader sent a snapshot at `meta` (this member was too far behind its log): the
    /// tenant replaces its state by the leader's (snapshot.hpp), resets the log to start after
    /// meta.index, and then calls Replicator::snapshot_installed(). Until then this member
    /// takes no Ready (it still steps and ticks). Empty: a snapshot poisons the member.
    std::function<void(const raft::SnapshotMeta& meta)> install_snapshot;
};

/// Where the member starts from. The tenant replays what it knows committed before opening.
struct ReplicatorStart {
    NodeId self;
    /// The membership at `applied` (the tenant keeps it in its state: a system record written
    /// with each membership entry), or the group's founding voters. Empty: this node waits to be
    /// added by a leader (its first message brings the log or a snapshot).
    raft::ConfState conf_state;
    /// Everything up to here is applied by the tenant (its state holds it). In a group of
    /// several nodes the state may be ahead of the log (an installed snapshot's state covers
    /// entries the log has not received again yet): raft then starts from the log's end.
    LogIndex applied;
    /// The log's Options::pending_bytes_max: raft keeps its uncommitted bytes below half of it.
    std::uint64_t log_pending_bytes_max = 64u << 20;
    /// The log lost records at recovery, or an earlier run had not caught up since: the member
    /// votes for nobody and never campaigns until it holds everything the leader may have
    /// committed with its lost acknowledgements (raft::RestoreState::is_recovering). While it
    /// recovers, `recovering_marker` exists (the tenant created it durably); the replicator
    /// removes it once caught up.
    bool is_recovering = false;
    std::filesystem::path recovering_marker;
    /// Raft's timing (raft::Options), in ticks of the caller's tick().
    std::uint32_t election_ticks = 10;
    std::uint32_t heartbeat_ticks = 1;
    /// Applied entries raft keeps in memory for peers (groups of several nodes), in payload
    /// bytes at most; a peer further behind gets them read back from the log while it still
    /// holds them (raft::EntrySource), and a snapshot after that.
    std::uint64_t memory_bytes_max = 64u << 20;
    /// A read that finds no leader (an election) waits this many ticks for one.
    std::uint64_t leader_wait_ticks = 0;
    /// A leader quiesces its group after this many ticks in a row at which raft could
    /// (raft::RawNode::can_quiesce) and no member's node was named gone; 0: never.
    std::uint32_t quiesce_ticks = 0;
};

/// One member of one tenant's raft group. Thread-safety: every member from any thread.
class Replicator {
public:
    /// Reads the hard state file in the log's directory and starts the member on `log`, whose
    /// entries above `start.applied` it holds in memory until they are applied. A group whose
    /// only voter is this node elects itself at once. The log must outlive the replicator.
    /// Errors: the hard state file's (Errc::corruption, Errc::io), the log's reads, raft's
    /// (queen::Errc::invalid_argument).
    [[nodiscard]] static Result<std::unique_ptr<Replicator>> open(log::Log& log,
                                                                  ReplicatorStart start,
                                                                  ReplicatorEvents events,
                                                                  const Clock& clock,
                                                                  Logger& logger);
    ~Replicator();
    Replicator(const Replicator&) = delete;
    Replicator& operator=(const Replicator&) = delete;

    /// Called under the replicator's lock once `payload` has its index and term, before any
    /// Ready can hand it out as committed (the tenant registers the proposal there).
    using Proposed = std::function<void(LogIndex index, Term term)>;
    /// Stamps the envelope in `payload` (entry.hpp) with the leader's time, never below any
    /// stamp in the log (a new leader continues from its last entry's), and proposes it.
    /// Never blocks on the disk. `payload` is taken (moved from) only when this member leads.
    /// Errors: raft::Errc::not_leader, raft::Errc::transferring,
    /// Errc::busy (raft's uncommitted bytes limit), Errc::poisoned (the log or hard state
    /// failed), Errc::cancelled (stopping).
    [[nodiscard]] Status propose(Bytes& payload, const Proposed& proposed);

    /// Called with a linearizable read point: once the state has applied through it, a read
    /// sees every write committed before read_index() was called (ReadIndex: the leader's
    /// commit index, confirmed by a quorum of heartbeats). Runs once the replicator's lock is
    /// released, on the thread that learned the outcome (maybe the caller's, before
    /// read_index() returns): it may call back into the replicator (propose, read again).
    /// Errors: Errc::not_leader (no leader elected within leader_wait_ticks, or none confirmed
    /// the read within two election timeouts; retry), Errc::busy (too many reads wait).
    using ReadIndexed = std::function<void(Result<LogIndex> index)>;
    /// Asks for a read point (groups of several nodes; alone, the applied state is current).
    /// Reads that arrive while one round is in flight share the next round.
    void read_index(ReadIndexed done);

    /// Hands the leadership to `target` (a voter): the leader brings it up to date and tells it
    /// to campaign; on a follower the request goes to the leader. Proposals fail with
    /// raft::Errc::transferring meanwhile; a transfer that does not finish within an election
    /// timeout is abandoned. Errors: raft::Errc::not_leader (no leader known),
    /// raft::Errc::invalid_conf_change (target is not a voter), Errc::poisoned.
    [[nodiscard]] Status transfer_leadership(NodeId target);

    /// Proposes one membership change (leader only; one at a time: raft refuses a second
    /// until the first is applied). Errors: raft::Errc::not_leader, raft::Errc::transferring,
    /// raft::Errc::busy, raft::Errc::invalid_conf_change, Errc::poisoned.
    [[nodiscard]] Result<LogIndex> propose_conf_change(const raft::ConfChange& change);

    /// The install events.install_snapshot asked for is done (the state and the log hold the
    /// snapshot) or failed: an error poisons the member, except Errc::cancelled (stopping).
    void snapshot_installed(const Status& status);

    /// A message from a peer of this group.
    void step(const raft::Message& message);
    /// Advances raft's clock by one tick (elections, heartbeats), or quiesces an idle group
    /// (leader, see quiesce_ticks). `nodes_gone`: the nodes the caller believes gone (closed
    /// connection, no node heartbeat, sorted or not); a leader whose group has one of them
    /// does not quiesce (docs/raft.md section 8).
    void tick(std::span<const NodeId> nodes_gone = {});
    /// The caller believes `node`'s node is gone or restarted: if this member is quiet and
    /// `node` is a member of its group (raft::no_node: whatever the members), it wakes
    /// (raft::RawNode::wake: a follower forgets its leader and counts election ticks again; a
    /// leader heartbeats and runs check-quorum again). Returns true when it woke.
    bool wake_for(NodeId node);
    /// The group is quiet on this member (as of the last call that changed it). Lock-free: a
    /// hint for a caller deciding whether to tick.
    [[nodiscard]] bool is_quiet() const noexcept;
    /// Raft messages this member handed to ReplicatorEvents::send since it opened. Lock-free.
    [[nodiscard]] std::uint64_t messages_sent() const noexcept;
    /// Entries (and their payload bytes) this member, leading, read back from its log for
    /// peers behind raft's memory (raft::EntrySource) since it opened. Lock-free.
    [[nodiscard]] std::uint64_t entries_from_log() const noexcept;
    [[nodiscard]] std::uint64_t entry_bytes_from_log() const noexcept;
    /// Runs the Readies left for another thread (ReplicatorEvents::wake).
    void run_pending();

    /// The highest index known committed.
    [[nodiscard]] LogIndex committed_index() const;
    /// Current term, leader (0: none known) and whether this member leads.
    [[nodiscard]] raft::NodeStatus status() const;
    /// Leader only: entries each peer lacks (last index - its match), by peer; empty elsewhere.
    [[nodiscard]] std::vector<std::pair<NodeId, std::uint64_t>> follower_lag() const;
    /// Leader only: `peer` answered within the last election timeout (or the group is quiet),
    /// takes appends (not probed, not sent a snapshot) and lags at most `lag_max` entries;
    /// false elsewhere.
    [[nodiscard]] bool is_peer_current(NodeId peer, std::uint64_t lag_max) const;
    /// Reads waiting for an election's outcome (no leader known).
    [[nodiscard]] std::size_t reads_waiting_for_leader() const;
    /// This member leads and hands its leadership over (proposals are refused meanwhile).
    [[nodiscard]] bool is_transferring() const;
    /// The leader this member knows (0: none).
    [[nodiscard]] NodeId leader() const;
    /// How often a new leader became known to this member (groups of several nodes).
    [[nodiscard]] std::uint64_t leader_changes() const;
    /// Refuses new proposals and waits until everything proposed is durable and every
    /// committed entry was handed over. Idempotent.
    void stop();

private:
    struct Impl;
    explicit Replicator(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace queen::node::detail
