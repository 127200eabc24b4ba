// queen/raft/raw_node.hpp — Raft as a pure state machine: step(), tick(), propose(), ready(),
// advance(). No sockets, files, clocks, threads or unordered iteration inside.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"
#include "queen/core/rng.hpp"
#include "queen/raft/errc.hpp"
#include "queen/raft/options.hpp"
#include "queen/raft/types.hpp"

namespace queen::raft {

/// What a node loaded from its durable storage at start. A brand-new cluster member starts from
/// `snapshot.meta.index == 0` whose conf_state is the bootstrap membership (empty for a node that
/// will be added later by a conf change).
struct RestoreState {
    HardState hard_state;
    Snapshot snapshot;           ///< the newest durable snapshot (index 0: the bootstrap one)
    std::vector<Entry> entries;  ///< the durable log after snapshot.meta.index, contiguous
    LogIndex applied;            ///< the state machine durably holds everything up to here
    /// The durable log lost records at recovery (a damaged suffix was cut), or an earlier
    /// recovery did and the node has not caught up since (NodeStatus::is_recovering was still
    /// true when it stopped). Entries it acknowledged may be gone, so until it holds everything
    /// the leader may have committed with those acknowledgements it grants no vote and never
    /// campaigns; the caller keeps a durable marker for this and clears it once
    /// status().is_recovering is false.
    bool is_recovering = false;
};

/// The durable state every founding member of a new group starts from (etcd's bootstrap): a log
/// of one committed and applied add_voter conf_change entry per voter, at term 1, indexes 1..n
/// (so the application's applied index starts at n). Every
/// founder must be given the same `voters` (sorted order is used). A node that joins later
/// starts from a default RestoreState{} and learns the membership from the leader's log or
/// snapshot. Precondition: voters is not empty and has no 0 or duplicate.
[[nodiscard]] RestoreState bootstrap_state(std::vector<NodeId> voters);

/// Where a leader reads log entries it no longer holds in memory (etcd's Storage.Entries and
/// Storage.Term): the caller's durable log, which usually keeps entries longer than the caller
/// keeps them in raft (compact()). A follower that fell behind the leader's memory then catches
/// up by appends read from it instead of a whole snapshot. Raft asks only for entries below its
/// first in-memory index and above the last snapshot it received from a leader (restore: the
/// caller's log was replaced there), that is for committed entries this node wrote to its log;
/// the source must hold them as written or say Errc::compacted.
///
/// Synchronous: raft calls it inside step() / tick() / propose() on the thread that drives the
/// node, so it must be deterministic for the simulator and quick for the node (bounded by
/// max_bytes). It must outlive the RawNode it is given to.
class EntrySource {
public:
    virtual ~EntrySource() = default;
    /// Entries in [low, high), in index order from `low`: all of them, or a prefix that stops
    /// before an entry that would take the data bytes past `max_bytes` (at least one entry,
    /// even a larger one). Errors: Errc::compacted (the source no longer holds `low`: the peer
    /// gets a snapshot), Errc::unavailable (anything else: a read failed; the peer gets a
    /// snapshot too, and raft logs it).
    [[nodiscard]] virtual Result<std::vector<Entry>> entries(LogIndex low, LogIndex high,
                                                             std::uint64_t max_bytes) = 0;
    /// Term of the entry at `index`. Errors: as entries().
    [[nodiscard]] virtual Result<Term> term(LogIndex index) = 0;
};

/// Replication state of one peer as the leader sees it (for status and tests).
struct PeerProgress {
    NodeId id;
    LogIndex match;
    LogIndex next;
    std::string state;  ///< "probe", "replicate" or "snapshot"
    bool is_learner = false;
    bool is_recent_active = false;
    std::size_t inflight_count = 0;
};

/// One member of one raft group. Single-threaded: the caller serialises every call.
///
/// The driving loop (see Ready for the persistence contract):
///   tick() every tick interval; step(m) for every message received; propose(...) for writes;
///   while (has_ready()) { Ready rd = ready(); persist; send; apply; advance(); }
/// At most one Ready is outstanding: between ready() and advance() the caller may still call
/// step/tick/propose (the persist may be asynchronous), but not ready() again.
class RawNode {
public:
    /// Builds a node from its durable state. `source` (may be null: a peer behind the memory
    /// always gets a snapshot) serves the entries compact() dropped from memory; it must
    /// outlive the node.
    /// Errors: queen::Errc::invalid_argument (bad options, entries not contiguous after the
    /// snapshot, applied beyond the log or commit).
    [[nodiscard]] static Result<RawNode> open(const Options& options, RestoreState state, Rng& rng,
                                              Logger& logger, EntrySource* source = nullptr);
    RawNode(RawNode&&) noexcept;
    RawNode& operator=(RawNode&&) noexcept;
    ~RawNode();

    /// Advances logical time by one tick (elections, heartbeats, check-quorum, transfer timeout).
    /// Does nothing while the group is quiet on this node (is_quiescent()).
    void tick();

    /// Feeds one message from a peer. Messages for another node, from stale terms or of
    /// unknown purpose are ignored (raft tolerates loss, duplication and reordering).
    void step(const Message& message);

    /// Appends `data` as a normal entry (leader only). It is replicated by the next ready();
    /// proposals made before one ready() travel in one batch. Returns the entry's index; it is
    /// committed once a Ready hands it out in committed_entries (at that same index and term).
    /// Errors: Errc::not_leader, Errc::transferring, Errc::busy (uncommitted_bytes_max).
    [[nodiscard]] Result<LogIndex> propose(Bytes data);

    /// Proposes one membership change (leader only). Only one change may be pending: a new one
    /// is refused until the previous one is applied. It takes effect when applied.
    /// Errors: Errc::not_leader, Errc::transferring, Errc::busy (a change is pending),
    /// Errc::invalid_conf_change (adding a member twice, demoting a voter, removing a
    /// non-member or the last voter).
    [[nodiscard]] Result<LogIndex> propose_conf_change(const ConfChange& change);

    /// Requests a linearizable read point. `context` identifies the request and must be unique
    /// among pending reads. The answer arrives as a ReadState in a later Ready (possibly never,
    /// if leadership is lost: the caller times out and retries).
    /// Errors: Errc::not_leader (no leader known), Errc::busy (pending_reads_max).
    [[nodiscard]] queen::Status read_index(Bytes context);

    /// Asks the leader to hand leadership to `target` (a voter). On a follower the request is
    /// forwarded to the known leader (a transfer_leader message naming `target`), whatever
    /// node `target` is; a leader asked for itself does nothing. Proposals fail with
    /// Errc::transferring meanwhile; the transfer is abandoned after an election timeout.
    /// Errors: Errc::not_leader (no leader known), Errc::invalid_conf_change (target not a voter).
    [[nodiscard]] queen::Status transfer_leadership(NodeId target);

    /// Starts an election now (pre-vote first when enabled). Ignored on a non-voter or leader.
    void campaign();

    // ---- Quiescence: an idle group sends nothing and counts no ticks ----------------------
    //
    // Meant for many groups per node: the caller (the node layer) keeps one liveness signal
    // per peer node instead of raft's heartbeats per group, and tells quiet groups when a peer
    // node is gone. The protocol (docs/raft.md, "Quiescence"):
    //  - Leader: when can_quiesce(), quiesce() queues one `quiesce` message per peer (the last
    //    index, its term and the commit) and the leader goes quiet: tick() does nothing (no
    //    heartbeats, no check-quorum, no transfer timeout).
    //  - Follower (or learner): on a `quiesce` from its leader it checks that it holds exactly
    //    that last entry and that everything is committed, and goes quiet without answering:
    //    tick() does nothing, so it never campaigns, and it stays in the leader's lease (with
    //    check_quorum it ignores (pre-)vote requests, as it does within an election timeout of
    //    hearing from a leader). If its log differs it answers like to an append (the leader
    //    repairs it); if it is recovering, like to a heartbeat; either way it stays awake.
    //  - Waking, on this node only: a leader wakes on propose, propose_conf_change, read_index,
    //    transfer_leadership, wake(), a (pre-)vote request (ignored or not), and any message it
    //    has to answer or act on (a rejection, a forwarded read or transfer; not a late
    //    acknowledgement); it then counts ticks again, starts check-quorum over (only answers
    //    after the wake count; lease reads wait for a quorum of them) and heartbeats at once
    //    (for a proposal or read, the append or read round is that message). A follower wakes
    //    on any append, heartbeat or snapshot from the leader, on a term change, a campaign,
    //    read_index, transfer_leadership and wake(), and on a (pre-)vote request from its
    //    leader itself (a node that campaigns no longer leads: it restarted), which also ends
    //    the lease as wake() does. Becoming follower, candidate or leader always ends
    //    quiescence.
    //  - Liveness is the caller's job while quiet: if the leader's node dies, nothing in raft
    //    notices. The caller calls wake() on the quiet followers when it believes the leader's
    //    node is gone; they forget the leader (its lease ends: they grant (pre-)votes at once)
    //    and campaign after an election timeout unless the leader speaks again. A message lost
    //    on the way (the `quiesce`, or a wake-up) costs at most one election timeout: a follower
    //    left awake times out and pre-campaigns, which wakes the leader, whose heartbeat brings
    //    it back; without check_quorum such a follower may win an election instead (safe,
    //    disruptive), so quiescence is meant to run with check_quorum (the default).
    //  - Mixed versions: responses carry the sender's commit; the leader quiesces only when
    //    every peer reported the current commit, so a node that predates quiescence (which
    //    reports 0) keeps its group awake and never receives a `quiesce` (codec.hpp).

    /// True on a leader, not quiet, with nothing to do: no Ready outstanding and has_ready()
    /// false (nothing unsent, unwritten or unapplied), its whole log durable, committed and
    /// applied in its term, every voter and learner's match at the last index and its reported
    /// commit at the commit (no peer recovering), no pending ReadIndex request, no leadership
    /// transfer, no conf change pending. False on every other node.
    [[nodiscard]] bool can_quiesce() const;
    /// Leader: when can_quiesce(), sends the `quiesce` messages (next Ready) and goes quiet;
    /// returns true. Otherwise does nothing and returns false. The caller should not quiesce a
    /// group while it believes a peer's node is gone: a quiet leader runs no check-quorum, so
    /// one cut off from its peers steps down only once work (or wake()) wakes it.
    bool quiesce();
    /// The caller believes the leader's node is gone (on a leader: that a peer's node is, so
    /// check-quorum should run again). A quiet follower forgets its leader and counts election
    /// ticks again; a quiet leader wakes as described above. Does nothing on a node that is
    /// not quiet (its own timers already run).
    void wake();
    /// The group is quiet on this node (also NodeStatus::is_quiescent).
    [[nodiscard]] bool is_quiescent() const noexcept;

    /// Compacts the log: the caller has durably snapshotted its state machine at `index`
    /// (data = that snapshot, used for InstallSnapshot). Entries up to `index` are dropped from
    /// memory; a peer that needs them gets them from the EntrySource, or else the snapshot.
    /// Errors: Errc::compacted (index <= current snapshot), Errc::unavailable (index > applied).
    [[nodiscard]] queen::Status compact(LogIndex index, Bytes data);

    /// True when ready() has work and no Ready is outstanding.
    [[nodiscard]] bool has_ready() const;
    /// Takes the pending work. Precondition: has_ready() (asserts otherwise).
    [[nodiscard]] Ready ready();
    /// Acknowledges the outstanding Ready: its writes are durable, its messages sent, its
    /// committed entries applied. Conf changes among them take effect here.
    void advance();

    [[nodiscard]] NodeStatus status() const;
    /// The parts of status() a hot path needs, without its copies.
    [[nodiscard]] Role role() const noexcept;
    [[nodiscard]] NodeId leader() const noexcept;
    [[nodiscard]] Term term() const noexcept;
    /// Leader only: a leadership transfer runs (proposals fail with Errc::transferring).
    [[nodiscard]] bool is_transferring() const noexcept;
    /// Leader only: one row per peer; empty elsewhere.
    [[nodiscard]] std::vector<PeerProgress> progress() const;
    /// Term of the entry at `index` (the snapshot index included), from memory (never the
    /// EntrySource). Errors: Errc::compacted, Errc::unavailable.
    [[nodiscard]] Result<Term> term_at(LogIndex index) const;
    /// Entries in [low, high), from memory. Errors: Errc::compacted, Errc::unavailable.
    [[nodiscard]] Result<std::vector<Entry>> entries(LogIndex low, LogIndex high) const;
    /// The newest snapshot this node holds (meta and data).
    [[nodiscard]] const Snapshot& snapshot() const;

private:
    struct Impl;
    explicit RawNode(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace queen::raft
