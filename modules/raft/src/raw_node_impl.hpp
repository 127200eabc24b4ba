// modules/raft/src/raw_node_impl.hpp — private to raft's sources: RawNode::Impl (one member's
// state, the log helpers every part uses, its operations grouped by the file that defines them).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "progress.hpp"
#include "queen/raft/codec.hpp"
#include "queen/raft/errc.hpp"
#include "queen/raft/raw_node.hpp"

namespace queen::raft::detail {

// Test-the-tester builds (modules/raft/CMakeLists.txt) define exactly one of these to break raft
// on purpose; the simulator must catch each. Never defined in a product build.
#if defined(QUEEN_RAFT_MUTATION_SKIP_VOTE_FSYNC)
inline constexpr bool mutation_skip_vote_fsync = true;
#else
inline constexpr bool mutation_skip_vote_fsync = false;
#endif
#if defined(QUEEN_RAFT_MUTATION_ACK_BEFORE_MAJORITY)
inline constexpr bool mutation_ack_before_majority = true;
#else
inline constexpr bool mutation_ack_before_majority = false;
#endif
#if defined(QUEEN_RAFT_MUTATION_FORGET_VOTE)
inline constexpr bool mutation_forget_vote = true;
#else
inline constexpr bool mutation_forget_vote = false;
#endif
#if defined(QUEEN_RAFT_MUTATION_IGNORE_RECOVERY)
inline constexpr bool mutation_ignore_recovery = true;
#else
inline constexpr bool mutation_ignore_recovery = false;
#endif

struct PendingRead {
    Bytes context;
    LogIndex index;
    NodeId from;  // this node for local reads
    std::vector<NodeId> acks;
};

inline bool contains(const std::vector<NodeId>& ids, NodeId id) {
    return std::binary_search(ids.begin(), ids.end(), id);
}
inline void insert_sorted(std::vector<NodeId>& ids, NodeId id) {
    auto at = std::lower_bound(ids.begin(), ids.end(), id);
    if (at == ids.end() || *at != id) {
        ids.insert(at, id);
    }
}
inline void erase_sorted(std::vector<NodeId>& ids, NodeId id) {
    auto at = std::lower_bound(ids.begin(), ids.end(), id);
    if (at != ids.end() && *at == id) {
        ids.erase(at);
    }
}

}  // namespace queen::raft::detail

namespace queen::raft {

struct RawNode::Impl {
    using Progress = detail::Progress;
    using ProgressState = detail::ProgressState;
    using PendingRead = detail::PendingRead;

    Options options;
    Rng& rng;
    Logger& logger;
    NodeId id;
    // Entries below the memory (compact()), for a leader's appends; may be null.
    EntrySource* source = nullptr;
    /// Appends in flight to a peer that catches up from `source` (maybe_send_append).
    static constexpr std::uint32_t source_inflight_appends_max = 4;
    // The source holds nothing at or below this index: a snapshot from a leader replaced the
    // caller's log up to it (until that Ready is written, the log there is the old one).
    LogIndex source_floor;

    Term term;
    NodeId vote = no_node;
    Role role = Role::follower;
    NodeId leader = no_node;

    // The log: snapshot + entries after it. log.front().index == snapshot.meta.index + 1.
    Snapshot snapshot;
    std::deque<Entry> log;
    LogIndex commit;
    LogIndex applied;         // advanced: the caller applied everything up to here
    LogIndex apply_handed;    // handed out in committed_entries (>= applied)
    LogIndex stable;          // durable on this node
    LogIndex persist_handed;  // handed out in Ready::entries (>= stable, <= last)

    ConfState conf;                                            // applied membership
    std::vector<std::pair<LogIndex, ConfState>> conf_history;  // conf after the change at index
    LogIndex pending_conf_index;

    std::map<NodeId, Progress> progress;
    std::map<NodeId, bool> votes;
    std::uint32_t election_elapsed = 0;
    std::uint32_t heartbeat_elapsed = 0;
    std::uint32_t randomized_election_timeout = 0;
    NodeId transferee = no_node;
    // Protocol-aware recovery (RestoreState::is_recovering): no votes, no campaigns until
    // commit reaches recovery_index, which the leader names (0: not known yet).
    bool is_recovering = false;
    LogIndex recovery_index;
    std::uint64_t uncommitted_bytes = 0;
    // Quiescence (quiescence.cpp): a quiet leader sends no heartbeats and counts no ticks, a
    // quiet follower counts no election ticks (and stays in the leader's lease).
    bool is_quiescent = false;
    // A leader woken from quiescence serves no lease read until a quorum answered it after the
    // wake: while it was quiet, nothing told it that it still led.
    bool is_lease_unconfirmed = false;
    bool needs_broadcast = false;         // new entries to replicate
    bool needs_commit_broadcast = false;  // commit moved: tell followers even without entries

    std::deque<PendingRead> pending_reads;
    std::deque<PendingRead> reads_before_commit;  // leader has not committed in its term yet
    std::vector<ReadState> read_states;

    // Snapshot being received (follower).
    SnapshotMeta receiving_meta;
    Bytes receiving_data;
    bool is_receiving = false;

    // Ready bookkeeping.
    std::vector<Message> messages;
    std::vector<Message> messages_after_persist;
    HardState handed_hard_state;
    std::optional<Snapshot> restore_pending;
    bool is_ready_outstanding = false;
    struct Outstanding {
        LogIndex last_entry_index;
        Term last_entry_term;
        bool has_entries = false;
        std::optional<LogIndex> snapshot_index;
        LogIndex committed_last;
        std::vector<std::pair<LogIndex, ConfChange>> conf_changes;
    } outstanding;

    Impl(const Options& opts, Rng& random, Logger& sink)
        : options(opts), rng(random), logger(sink), id(opts.id) {}

    // ---- log helpers -------------------------------------------------------------------
    [[nodiscard]] LogIndex first_index() const { return snapshot.meta.index.next(); }
    [[nodiscard]] LogIndex last_index() const {
        return log.empty() ? snapshot.meta.index : log.back().index;
    }
    [[nodiscard]] Term last_term() const {
        return log.empty() ? snapshot.meta.term : log.back().term;
    }
    // Term at index, or nullopt when compacted or beyond the end.
    [[nodiscard]] std::optional<Term> term_of(LogIndex index) const {
        if (index == snapshot.meta.index) {
            return snapshot.meta.term;
        }
        if (index < snapshot.meta.index || index > last_index()) {
            return std::nullopt;
        }
        return log[index.value() - first_index().value()].term;
    }
    [[nodiscard]] const Entry& entry_at(LogIndex index) const {
        QUEEN_ASSERT(index >= first_index(), "entry_at below the log");
        QUEEN_ASSERT(index <= last_index(), "entry_at above the log");
        return log[index.value() - first_index().value()];
    }
    [[nodiscard]] bool matches(LogIndex index, Term log_term) const {
        const auto t = term_of(index);
        return t.has_value() && *t == log_term;
    }
    [[nodiscard]] bool is_up_to_date(LogIndex index, Term log_term) const {
        return log_term > last_term() || (log_term == last_term() && index >= last_index());
    }

    // ---- membership helpers ------------------------------------------------------------
    [[nodiscard]] bool is_voter(NodeId node) const { return detail::contains(conf.voters, node); }
    [[nodiscard]] bool is_promotable() const {
        return is_voter(id) && (!is_recovering || detail::mutation_ignore_recovery);
    }
    /// Follower: takes a leader's recovery_index and ends the recovery once commit reaches it.
    void note_recovery(const Message& m);
    /// Leader: tracks whether `pr`'s node is recovering (from its responses).
    void note_peer_recovery(Progress& pr, const Message& m);
    [[nodiscard]] std::size_t quorum() const { return conf.voters.size() / 2 + 1; }

    // ---- Ready state -------------------------------------------------------------------
    [[nodiscard]] HardState hard_state() const { return HardState{term, vote, commit}; }
    [[nodiscard]] LogIndex apply_limit() const { return std::min(commit, stable); }

    // ---- elections and voting (election.cpp) -------------------------------------------
    enum class Outcome { pending, won, lost };
    void reset_randomized_timeout();
    void reset(Term new_term);
    void become_follower(Term new_term, NodeId new_leader);
    void become_pre_candidate();
    void become_candidate();
    void add_progress(NodeId node, bool is_learner);
    void become_leader();
    void start_campaign(bool is_pre_vote, bool is_transfer);
    Outcome poll(NodeId from, bool granted);
    void tick();
    void tick_leader();
    bool is_quorum_active();
    void handle_vote_request(const Message& m);
    void step_candidate(const Message& m);

    // ---- log replication and append handling (replication.cpp) -------------------------
    void truncate_from(LogIndex index);
    void append_after_match(const std::vector<Entry>& entries);
    [[nodiscard]] std::pair<LogIndex, Term> find_conflict_by_term(LogIndex index,
                                                                  Term log_term) const;
    LogIndex append_local(EntryType type, Bytes data);
    /// Term at `index` from memory, or else (below the memory) from the source; nullopt when
    /// neither has it.
    std::optional<Term> term_with_source(LogIndex index);
    /// Appends to `m.entries` the source's entries from `low` (below the memory) within the
    /// append limits; false when the source cannot serve `low` (the peer needs a snapshot).
    bool append_from_source(LogIndex low, Message& m, std::uint64_t& bytes);
    void start_snapshot(NodeId to, Progress& pr);
    /// The appends `pr` may have in flight: inflight_appends_max, or fewer while it catches up
    /// from the entry source (a read of the caller's log on the thread driving raft).
    [[nodiscard]] std::uint32_t inflight_limit(const Progress& pr) const;
    bool maybe_send_append(NodeId to, bool send_if_empty);
    void broadcast_append(bool send_if_empty);
    void broadcast_heartbeat();
    bool maybe_commit();
    void commit_to(LogIndex index);
    void handle_append(const Message& m);
    void handle_heartbeat(const Message& m);

    // ---- snapshots: sending, receiving, restoring (snapshot.cpp) -----------------------
    void send_snapshot_chunk(NodeId to, Progress& pr);
    void reply_snapshot(NodeId to, const SnapshotMeta& meta, std::uint64_t offset, bool reject);
    void handle_snapshot(const Message& m);
    bool restore(const SnapshotMeta& meta, Bytes data);

    // ---- ReadIndex (read_index.cpp) ----------------------------------------------------
    void release_read(PendingRead read);
    void start_read(Bytes context, NodeId from);
    void ack_read(NodeId from, const Bytes& context);

    // ---- membership changes and leadership transfer (membership.cpp) -------------------
    [[nodiscard]] ConfState conf_at(LogIndex index) const;
    void send_timeout_now(NodeId to);
    void handle_transfer(NodeId target);
    Status validate_conf_change(const ConfChange& change) const;
    void apply_conf_change(LogIndex index, const ConfChange& change);

    // ---- quiescence (quiescence.cpp) ---------------------------------------------------
    [[nodiscard]] bool can_quiesce() const;
    bool quiesce();
    /// Leaves quiescence (no-op when not quiet): counts ticks again; a leader heartbeats now
    /// unless `send_heartbeat` is false (the caller's own messages reach every peer at once).
    void unquiesce(bool send_heartbeat = true);
    /// The caller believes the leader's node (on a leader: a peer's node) is gone.
    void wake();
    void handle_quiesce(const Message& m);
    /// Leader: a peer's response reported its commit; it answered after a wake (lease).
    void note_peer_response(Progress& pr, const Message& m);

    // ---- message dispatch by role (step.cpp) -------------------------------------------
    void step(const Message& m);
    void step_message(const Message& m);
    void step_follower(const Message& m);
    void step_leader(const Message& m);

    // ---- Ready: sending, handing out, advance (ready.cpp) ------------------------------
    void send(Message message);
    [[nodiscard]] bool has_ready() const;
    Ready make_ready();
    void advance();
};

}  // namespace queen::raft
