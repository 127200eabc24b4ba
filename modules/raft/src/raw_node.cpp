// modules/raft/src/raw_node.cpp — RawNode's public calls (open, propose, read_index, compact,
// ready, status, ...), bootstrap_state and Options::validate; the state machine is RawNode::Impl.
#include "queen/raft/raw_node.hpp"

#include <algorithm>
#include <utility>

#include "raw_node_impl.hpp"

namespace queen::raft {

Status Options::validate() const {
    auto bad = [](const char* field) {
        return Error{queen::Errc::invalid_argument, std::string("raft options: ") + field};
    };
    if (id == no_node) {
        return bad("id must not be 0");
    }
    if (election_ticks < 2) {
        return bad("election_ticks must be >= 2");
    }
    if (heartbeat_ticks == 0 || heartbeat_ticks >= election_ticks) {
        return bad("heartbeat_ticks must be in [1, election_ticks)");
    }
    if (read_lease_based && !check_quorum) {
        return bad("read_lease_based requires check_quorum");
    }
    if (inflight_appends_max == 0 || append_entries_max == 0 || append_bytes_max == 0) {
        return bad("inflight_appends_max, append_entries_max and append_bytes_max must be > 0");
    }
    if (uncommitted_bytes_max == 0 || apply_bytes_max == 0 || snapshot_chunk_bytes_max == 0 ||
        snapshot_bytes_max == 0 || pending_reads_max == 0) {
        return bad("byte and count limits must be > 0");
    }
    return {};
}

RestoreState bootstrap_state(std::vector<NodeId> voters) {
    QUEEN_ASSERT(!voters.empty(), "bootstrap needs at least one voter");
    std::sort(voters.begin(), voters.end());
    QUEEN_ASSERT(std::adjacent_find(voters.begin(), voters.end()) == voters.end(),
                 "bootstrap voters must be unique");
    RestoreState state;
    for (const NodeId voter : voters) {
        QUEEN_ASSERT(voter != no_node, "node id 0 is reserved");
        Entry entry;
        entry.term = Term{1};
        entry.index = LogIndex{state.entries.size() + 1};
        entry.type = EntryType::conf_change;
        encode_conf_change(ConfChange{ConfChangeType::add_voter, voter}, entry.data);
        state.entries.push_back(std::move(entry));
    }
    state.hard_state = HardState{Term{1}, no_node, LogIndex{state.entries.size()}};
    // The membership entries carry no application data: they count as applied from the start.
    state.applied = LogIndex{state.entries.size()};
    return state;
}

// ---- RawNode ----------------------------------------------------------------------------

RawNode::RawNode(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RawNode::RawNode(RawNode&&) noexcept = default;
RawNode& RawNode::operator=(RawNode&&) noexcept = default;
RawNode::~RawNode() = default;

Result<RawNode> RawNode::open(const Options& options, RestoreState state, Rng& rng, Logger& logger,
                              EntrySource* source) {
    QUEEN_TRY(options.validate());
    auto impl = std::make_unique<Impl>(options, rng, logger);
    Impl& r = *impl;
    r.source = source;
    r.snapshot = std::move(state.snapshot);
    LogIndex expected = r.snapshot.meta.index.next();
    for (Entry& entry : state.entries) {
        if (entry.index != expected) {
            return Error{queen::Errc::invalid_argument,
                         "raft restore: entries not contiguous at index " +
                             std::to_string(entry.index.value())};
        }
        expected = expected.next();
        r.log.push_back(std::move(entry));
    }
    r.term = state.hard_state.term;
    r.vote = state.hard_state.vote;
    if (r.last_term() > r.term) {
        // Entries of a newer term reached the disk but the hard state did not: adopt the term
        // (no vote: a vote is always durable before it is sent, so none was sent in it).
        r.term = r.last_term();
        r.vote = no_node;
    }
    r.commit = std::max(std::min(state.hard_state.commit, r.last_index()), r.snapshot.meta.index);
    if (state.applied > r.commit) {
        return Error{queen::Errc::invalid_argument, "raft restore: applied beyond commit"};
    }
    r.applied = std::max(state.applied, r.snapshot.meta.index);
    r.apply_handed = r.applied;
    r.stable = r.last_index();
    r.persist_handed = r.last_index();
    r.conf = r.snapshot.meta.conf_state;
    for (LogIndex i = r.first_index(); i <= r.applied; i = i.next()) {
        const Entry& entry = r.entry_at(i);
        if (entry.type == EntryType::conf_change) {
            auto change = decode_conf_change(entry.data);
            if (change.has_value()) {
                r.apply_conf_change(i, change.value());
            }
        }
    }
    r.handed_hard_state = HardState{state.hard_state.term, state.hard_state.vote, r.commit};
    r.become_follower(r.term, no_node);
    r.is_recovering = state.is_recovering;
    if (r.is_recovering) {
        QUEEN_LOG(logger, Level::warn, "raft.recovering",
                  "node=" << r.id << " last_index=" << r.last_index()
                          << " reason=damaged_log (no votes until caught up)");
    }
    return RawNode(std::move(impl));
}

void RawNode::tick() {
    impl_->tick();
}
void RawNode::step(const Message& message) {
    impl_->step(message);
}

Result<LogIndex> RawNode::propose(Bytes data) {
    Impl& r = *impl_;
    if (r.role != Role::leader) {
        return Error{Errc::not_leader, "propose: leader is " + std::to_string(r.leader.value())};
    }
    if (r.transferee != no_node) {
        return Error{Errc::transferring, "propose: transferring leadership"};
    }
    if (r.uncommitted_bytes + data.size() > r.options.uncommitted_bytes_max &&
        r.uncommitted_bytes > 0) {
        return Error{Errc::busy, "propose: uncommitted_bytes_max reached"};
    }
    r.unquiesce(false);  // the append goes to every peer with the next Ready
    return r.append_local(EntryType::normal, std::move(data));
}

Result<LogIndex> RawNode::propose_conf_change(const ConfChange& change) {
    Impl& r = *impl_;
    if (r.role != Role::leader) {
        return Error{Errc::not_leader, "propose_conf_change: not the leader"};
    }
    if (r.transferee != no_node) {
        return Error{Errc::transferring, "propose_conf_change: transferring leadership"};
    }
    if (r.pending_conf_index > r.applied) {
        return Error{Errc::busy, "propose_conf_change: a change is pending"};
    }
    QUEEN_TRY(r.validate_conf_change(change));
    r.unquiesce(false);
    Bytes data;
    encode_conf_change(change, data);
    const LogIndex index = r.append_local(EntryType::conf_change, std::move(data));
    r.pending_conf_index = index;
    return index;
}

Status RawNode::read_index(Bytes context) {
    Impl& r = *impl_;
    if (r.role == Role::leader) {
        if (r.pending_reads.size() + r.reads_before_commit.size() >= r.options.pending_reads_max) {
            return Error{Errc::busy, "read_index: pending_reads_max reached"};
        }
        r.start_read(std::move(context), r.id);
        return {};
    }
    if (r.leader == no_node) {
        return Error{Errc::not_leader, "read_index: no leader known"};
    }
    r.unquiesce();  // count election ticks again: the leader must answer
    Message m;
    m.type = MessageType::read_index;
    m.to = r.leader;
    m.context = std::move(context);
    r.send(std::move(m));
    return {};
}

Status RawNode::transfer_leadership(NodeId target) {
    Impl& r = *impl_;
    if (!r.is_voter(target)) {
        return Error{Errc::invalid_conf_change, "transfer_leadership: target is not a voter"};
    }
    if (r.role == Role::leader) {
        r.handle_transfer(target);
        return {};
    }
    if (r.leader == no_node) {
        return Error{Errc::not_leader, "transfer_leadership: no leader known"};
    }
    r.unquiesce();
    // The leader reads the target from `index` (0: the sender itself, as older nodes send it).
    Message m;
    m.type = MessageType::transfer_leader;
    m.to = r.leader;
    m.index = target == r.id ? LogIndex{0} : LogIndex{target.value()};
    r.send(std::move(m));
    return {};
}

void RawNode::campaign() {
    Impl& r = *impl_;
    if (r.role == Role::leader) {
        return;
    }
    r.start_campaign(r.options.pre_vote, false);
}

bool RawNode::can_quiesce() const {
    return impl_->can_quiesce();
}
bool RawNode::quiesce() {
    return impl_->quiesce();
}
void RawNode::wake() {
    impl_->wake();
}
bool RawNode::is_quiescent() const noexcept {
    return impl_->is_quiescent;
}

Status RawNode::compact(LogIndex index, Bytes data) {
    Impl& r = *impl_;
    if (index <= r.snapshot.meta.index) {
        return Error{Errc::compacted, "compact: at or below the snapshot"};
    }
    if (index > r.applied) {
        return Error{Errc::unavailable, "compact: beyond the applied index"};
    }
    SnapshotMeta meta{index, *r.term_of(index), r.conf_at(index)};
    while (!r.log.empty() && r.log.front().index <= index) {
        r.log.pop_front();
    }
    std::erase_if(r.conf_history, [&](const auto& change) { return change.first <= index; });
    r.snapshot = Snapshot{std::move(meta), std::move(data)};
    QUEEN_LOG(r.logger, Level::debug, "raft.compacted",
              "node=" << r.id << " index=" << index << " bytes=" << r.snapshot.data.size());
    return {};
}

bool RawNode::has_ready() const {
    return impl_->has_ready();
}
Ready RawNode::ready() {
    return impl_->make_ready();
}
void RawNode::advance() {
    impl_->advance();
}

Role RawNode::role() const noexcept {
    return impl_->role;
}
NodeId RawNode::leader() const noexcept {
    return impl_->leader;
}
bool RawNode::is_transferring() const noexcept {
    return impl_->transferee != no_node;
}
Term RawNode::term() const noexcept {
    return impl_->term;
}

NodeStatus RawNode::status() const {
    const Impl& r = *impl_;
    NodeStatus s;
    s.id = r.id;
    s.role = r.role;
    s.leader = r.leader;
    s.hard_state = r.hard_state();
    s.first_index = r.first_index();
    s.last_index = r.last_index();
    s.stable_index = r.stable;
    s.applied = r.applied;
    s.snapshot = r.snapshot.meta;
    s.conf_state = r.conf;
    s.transferee = r.transferee;
    s.is_recovering = r.is_recovering;
    s.is_quiescent = r.is_quiescent;
    return s;
}

std::vector<PeerProgress> RawNode::progress() const {
    std::vector<PeerProgress> rows;
    for (const auto& [node, pr] : impl_->progress) {
        rows.push_back(PeerProgress{node, pr.match, pr.next, detail::state_name(pr.state),
                                    pr.is_learner, pr.is_recent_active, pr.inflights.size()});
    }
    return rows;
}

Result<Term> RawNode::term_at(LogIndex index) const {
    if (index < impl_->snapshot.meta.index) {
        return Error{Errc::compacted, "term_at: compacted"};
    }
    auto t = impl_->term_of(index);
    if (!t.has_value()) {
        return Error{Errc::unavailable, "term_at: beyond the last index"};
    }
    return *t;
}

Result<std::vector<Entry>> RawNode::entries(LogIndex low, LogIndex high) const {
    const Impl& r = *impl_;
    if (low < r.first_index()) {
        return Error{Errc::compacted, "entries: compacted"};
    }
    if (high > r.last_index().next() || high < low) {
        return Error{Errc::unavailable, "entries: beyond the last index"};
    }
    std::vector<Entry> out;
    for (LogIndex i = low; i < high; i = i.next()) {
        out.push_back(r.entry_at(i));
    }
    return out;
}

const Snapshot& RawNode::snapshot() const {
    return impl_->snapshot;
}

}  // namespace queen::raft
