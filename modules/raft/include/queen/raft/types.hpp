// queen/raft/types.hpp — the values raft exchanges with its caller: entries, hard state,
// configurations, snapshots, messages and the Ready batch. Plain data, no behaviour.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"

namespace queen::raft {

/// NodeId{0} means "nobody" (no vote, no known leader).
inline constexpr NodeId no_node{0};

/// What a log entry carries. Stored as one byte in the entry encoding: values are stable.
enum class EntryType : std::uint8_t {
    normal = 0,       ///< opaque application data (empty data: the leader's no-op of a new term)
    conf_change = 1,  ///< data is an encoded ConfChange; takes effect when applied
};

/// One log entry. `data` is opaque to raft except for conf_change entries.
struct Entry {
    Term term;
    LogIndex index;
    EntryType type = EntryType::normal;
    Bytes data;
    friend bool operator==(const Entry&, const Entry&) = default;
};

/// What must be durable before any message of the same Ready in messages_after_persist is sent.
struct HardState {
    Term term;
    NodeId vote = no_node;
    LogIndex commit;  ///< a hint: may lag after a crash; never needs its own fsync
    friend bool operator==(const HardState&, const HardState&) = default;
};

/// The membership: voters decide elections and commits; learners only receive the log.
/// Both lists are sorted and disjoint.
struct ConfState {
    std::vector<NodeId> voters;
    std::vector<NodeId> learners;
    friend bool operator==(const ConfState&, const ConfState&) = default;
};

/// One membership step (one server at a time).
enum class ConfChangeType : std::uint8_t {
    add_voter = 0,    ///< a new voter, or a learner promoted to voter
    add_learner = 1,  ///< a new learner (a voter cannot be demoted)
    remove_node = 2,  ///< removes a voter or learner
};

struct ConfChange {
    ConfChangeType type = ConfChangeType::add_voter;
    NodeId node_id;
    friend bool operator==(const ConfChange&, const ConfChange&) = default;
};

/// Describes a snapshot: the last index and term it covers and the membership at that index.
struct SnapshotMeta {
    LogIndex index;
    Term term;
    ConfState conf_state;
    friend bool operator==(const SnapshotMeta&, const SnapshotMeta&) = default;
};

/// A whole snapshot: metadata plus the application's opaque state bytes.
struct Snapshot {
    SnapshotMeta meta;
    Bytes data;
    friend bool operator==(const Snapshot&, const Snapshot&) = default;
};

/// Message types. Stored as one byte in the message encoding: values are stable.
enum class MessageType : std::uint8_t {
    append = 1,           ///< AppendEntries (also the probe and catch-up carrier)
    append_response = 2,  ///< reject/accept of append or of a completed snapshot
    request_vote = 3,
    request_vote_response = 4,
    request_pre_vote = 5,
    request_pre_vote_response = 6,
    heartbeat = 7,  ///< carries commit and the ReadIndex context
    heartbeat_response = 8,
    snapshot = 9,              ///< one InstallSnapshot chunk
    snapshot_response = 10,    ///< acknowledges or rejects a chunk (offset in `index`)
    timeout_now = 11,          ///< leadership transfer: campaign now
    read_index = 12,           ///< follower -> leader: confirm leadership for a read
    read_index_response = 13,  ///< leader -> follower: the read index (0 with reject: failed)
    transfer_leader = 14,      ///< follower -> leader: transfer to `index` (0: to `from`)
    /// leader -> follower: the group is quiet (RawNode::quiesce); `index`/`log_term` name the
    /// leader's last entry, `commit` its commit. Sent only to peers whose responses report
    /// their commit (nodes that know this type).
    quiesce = 15,
};

/// A short stable name ("append", "request_vote", ...), for traces and logging.
[[nodiscard]] std::string_view message_type_name(MessageType type) noexcept;

/// One message between nodes. Fields not used by a type stay zero/empty (see docs/raft.md).
struct Message {
    MessageType type = MessageType::append;
    NodeId from;
    NodeId to;
    Term term;       ///< the sender's term (pre-vote: the term it would campaign in)
    Term log_term;   ///< append: term at `index`; votes: last log term; reject: term at hint
    LogIndex index;  ///< append: previous index; votes: last index; responses: see docs
    /// append, heartbeat, snapshot, quiesce: the leader's commit (heartbeat: capped at the
    /// peer's match); append_response, heartbeat_response: the sender's commit (0 from nodes
    /// that predate quiescence: the leader then never quiesces the group).
    LogIndex commit;
    LogIndex reject_hint;  ///< append_response with reject: where the follower's log may match
    bool reject = false;
    bool is_transfer = false;    ///< votes: campaign caused by leadership transfer (skips lease)
    bool is_last_chunk = false;  ///< snapshot: this chunk completes the snapshot
    /// Responses: the sender lost part of its durable log and votes for nobody until it holds
    /// `recovery_index` as committed (protocol-aware recovery, docs/raft.md section 1).
    bool is_recovering = false;
    /// Leader to a recovering follower: the leader's last index when it first heard so; every
    /// entry that may have been committed with the follower's lost acknowledgements is at or
    /// below it. 0 elsewhere.
    LogIndex recovery_index;
    std::vector<Entry> entries;         ///< append only
    Bytes context;                      ///< heartbeats and read_index: the read request context
    SnapshotMeta snapshot;              ///< snapshot chunk: which snapshot
    std::uint64_t snapshot_offset = 0;  ///< snapshot chunk: offset of `snapshot_chunk`
    std::uint64_t snapshot_size = 0;    ///< snapshot chunk: total size of the data
    Bytes snapshot_chunk;
    friend bool operator==(const Message&, const Message&) = default;
};

/// A confirmed linearizable read point: serve the read once applied index >= index.
struct ReadState {
    LogIndex index;
    Bytes context;
    friend bool operator==(const ReadState&, const ReadState&) = default;
};

enum class Role : std::uint8_t { follower = 0, pre_candidate, candidate, leader };
[[nodiscard]] std::string_view role_name(Role role) noexcept;

/// One batch of work for the caller, returned by RawNode::ready(). Process it in this order:
///  1. write `snapshot` (if any), then `entries` (entries[0].index and up replace what the log
///     held there), then `hard_state` (if any), and make them durable when `must_sync`;
///     `messages` may be sent before or while writing (the leader persists in parallel);
///  2. only after step 1 is durable, send `messages_after_persist`;
///  3. apply `committed_entries` in order (all are already durable locally), serve
///     `read_states` whose index is applied;
///  4. call RawNode::advance().
struct Ready {
    std::optional<HardState> hard_state;   ///< changed since the last Ready
    std::optional<Snapshot> snapshot;      ///< received from the leader: persist, then restore
    std::vector<Entry> entries;            ///< to append to the durable log
    std::vector<Entry> committed_entries;  ///< to apply
    std::vector<Message> messages;         ///< may be sent at once
    std::vector<Message> messages_after_persist;  ///< send only after step 1 is durable
    std::vector<ReadState> read_states;
    bool must_sync = false;  ///< step 1 needs an fsync (term, vote or entries changed)
};

/// A read-only view of a node for drivers, tests and the simulator.
struct NodeStatus {
    NodeId id;
    Role role = Role::follower;
    NodeId leader = no_node;
    HardState hard_state;
    LogIndex first_index;  ///< first entry still held (snapshot index + 1)
    LogIndex last_index;
    LogIndex stable_index;  ///< last index known durable on this node
    LogIndex applied;       ///< last index handed out to apply and advanced
    SnapshotMeta snapshot;  ///< the newest snapshot this node holds
    ConfState conf_state;   ///< the applied membership
    NodeId transferee = no_node;
    /// Restarted with a damaged log and not caught up yet: it does not vote or campaign.
    bool is_recovering = false;
    /// The group is quiet on this node (RawNode::quiesce, RawNode::is_quiescent).
    bool is_quiescent = false;
};

}  // namespace queen::raft
