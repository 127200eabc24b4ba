// modules/raft/src/raw_node.cpp — the raft state machine behind RawNode (etcd-io/raft shape):
// elections with pre-vote and check-quorum, pipelined replication with flow control, ReadIndex,
// chunked snapshots, one-at-a-time membership change and leadership transfer.
#include "queen/raft/raw_node.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <utility>

#include "queen/raft/codec.hpp"
#include "queen/raft/errc.hpp"

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

namespace {

enum class ProgressState : std::uint8_t { probe, replicate, snapshot };

// The leader's view of one peer (etcd tracker.Progress, simplified).
struct Progress {
    LogIndex match;
    LogIndex next;
    ProgressState state = ProgressState::probe;
    bool is_probe_sent = false;  // probe/snapshot: one message in flight, wait for an answer
    bool is_learner = false;
    bool is_recent_active = false;
    std::deque<LogIndex> inflights;  // replicate: last index of each unacknowledged append
    LogIndex pending_snapshot;       // snapshot: index of the snapshot being sent
    std::uint64_t snapshot_offset = 0;

    void become_probe() {
        // After a snapshot, continue after it; otherwise retry right after the match.
        if (state == ProgressState::snapshot) {
            next = LogIndex{std::max(match.value(), pending_snapshot.value()) + 1};
        } else {
            next = match.next();
        }
        state = ProgressState::probe;
        is_probe_sent = false;
        inflights.clear();
        pending_snapshot = LogIndex{0};
        snapshot_offset = 0;
    }
    void become_replicate() {
        state = ProgressState::replicate;
        next = match.next();
        is_probe_sent = false;
        inflights.clear();
    }
    void become_snapshot(LogIndex snapshot_index) {
        state = ProgressState::snapshot;
        is_probe_sent = false;
        inflights.clear();
        pending_snapshot = snapshot_index;
        snapshot_offset = 0;
    }
    // A successful append response up to `index`. Returns true if match moved.
    bool maybe_update(LogIndex index) {
        bool updated = false;
        if (match < index) {
            match = index;
            updated = true;
            is_probe_sent = false;
        }
        if (next < index.next()) {
            next = index.next();
        }
        while (!inflights.empty() && inflights.front() <= index) {
            inflights.pop_front();
        }
        return updated;
    }
    // A rejection of the append after `rejected`; `hint` is where the follower may match.
    bool maybe_decrease(LogIndex rejected, LogIndex hint) {
        if (state == ProgressState::replicate) {
            if (rejected <= match) {
                return false;  // stale
            }
            next = match.next();
            return true;
        }
        if (next.prev() != rejected) {
            return false;  // stale: not the probe we are waiting for
        }
        next = LogIndex{std::max(std::min(rejected.value(), hint.value() + 1), match.value() + 1)};
        is_probe_sent = false;
        return true;
    }
    [[nodiscard]] bool is_paused(std::uint32_t inflight_max) const {
        switch (state) {
            case ProgressState::probe: return is_probe_sent;
            case ProgressState::replicate: return inflights.size() >= inflight_max;
            case ProgressState::snapshot: return true;
        }
        return true;
    }
};

const char* state_name(ProgressState state) {
    switch (state) {
        case ProgressState::probe: return "probe";
        case ProgressState::replicate: return "replicate";
        case ProgressState::snapshot: return "snapshot";
    }
    return "?";
}

struct PendingRead {
    Bytes context;
    LogIndex index;
    NodeId from;  // this node for local reads
    std::vector<NodeId> acks;
};

bool contains(const std::vector<NodeId>& ids, NodeId id) {
    return std::binary_search(ids.begin(), ids.end(), id);
}
void insert_sorted(std::vector<NodeId>& ids, NodeId id) {
    auto at = std::lower_bound(ids.begin(), ids.end(), id);
    if (at == ids.end() || *at != id) {
        ids.insert(at, id);
    }
}
void erase_sorted(std::vector<NodeId>& ids, NodeId id) {
    auto at = std::lower_bound(ids.begin(), ids.end(), id);
    if (at != ids.end() && *at == id) {
        ids.erase(at);
    }
}

}  // namespace

struct RawNode::Impl {
    Options options;
    Rng& rng;
    Logger& logger;
    NodeId id;

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
    std::uint64_t uncommitted_bytes = 0;
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
    void truncate_from(LogIndex index) {
        QUEEN_ASSERT(index > commit, "truncating committed entries: index=", index.value(),
                     " commit=", commit.value());
        QUEEN_ASSERT(index >= first_index(), "truncating below the snapshot");
        while (!log.empty() && log.back().index >= index) {
            log.pop_back();
        }
        stable = std::min(stable, index.prev());
        persist_handed = std::min(persist_handed, index.prev());
    }
    // Appends entries that follow a matching prefix, truncating at the first conflict.
    void append_after_match(const std::vector<Entry>& entries) {
        for (std::size_t i = 0; i < entries.size(); ++i) {
            const Entry& entry = entries[i];
            if (entry.index <= snapshot.meta.index) {
                continue;
            }
            const auto existing = term_of(entry.index);
            if (existing.has_value() && *existing == entry.term) {
                continue;
            }
            if (existing.has_value()) {
                QUEEN_LOG(logger, Level::debug, "raft.log_conflict",
                          "node=" << id << " index=" << entry.index
                                  << " existing_term=" << *existing << " new_term=" << entry.term);
                truncate_from(entry.index);
            }
            QUEEN_ASSERT(entry.index == last_index().next(), "append leaves a gap");
            log.insert(log.end(), entries.begin() + static_cast<std::ptrdiff_t>(i), entries.end());
            return;
        }
    }
    // etcd findConflictByTerm: the largest index <= `index` whose term is <= `log_term`.
    [[nodiscard]] std::pair<LogIndex, Term> find_conflict_by_term(LogIndex index,
                                                                  Term log_term) const {
        LogIndex at = std::min(index, last_index());
        while (true) {
            const auto t = term_of(at);
            if (!t.has_value()) {
                return {at, Term{0}};
            }
            if (*t <= log_term || at == snapshot.meta.index) {
                return {at, *t};
            }
            at = at.prev();
        }
    }
    [[nodiscard]] ConfState conf_at(LogIndex index) const {
        ConfState result = snapshot.meta.conf_state;
        for (const auto& [at, state] : conf_history) {
            if (at <= index) {
                result = state;
            }
        }
        return result;
    }

    // ---- membership helpers ------------------------------------------------------------
    [[nodiscard]] bool is_voter(NodeId node) const { return contains(conf.voters, node); }
    [[nodiscard]] bool is_promotable() const { return is_voter(id); }
    [[nodiscard]] std::size_t quorum() const { return conf.voters.size() / 2 + 1; }

    // ---- sending -----------------------------------------------------------------------
    void send(Message message) {
        message.from = id;
        if (message.term == Term{0}) {
            message.term = term;
        }
        // The leader replicates in parallel with its own persistence: these depend only on its
        // term, which was durable before it could win the election. Everything else (votes,
        // append responses, ...) depends on state this Ready persists.
        const bool is_leader_traffic =
            role == Role::leader &&
            (message.type == MessageType::append || message.type == MessageType::heartbeat ||
             message.type == MessageType::snapshot || message.type == MessageType::timeout_now ||
             message.type == MessageType::read_index_response);
        const bool is_vote_grant =
            message.type == MessageType::request_vote_response && !message.reject;
        if (is_leader_traffic || (mutation_skip_vote_fsync && is_vote_grant)) {
            messages.push_back(std::move(message));
        } else {
            messages_after_persist.push_back(std::move(message));
        }
    }

    // ---- role changes ------------------------------------------------------------------
    void reset_randomized_timeout() {
        randomized_election_timeout =
            options.election_ticks + static_cast<std::uint32_t>(rng.below(options.election_ticks));
    }
    void reset(Term new_term) {
        if (term != new_term) {
            term = new_term;
            vote = no_node;
        }
        leader = no_node;
        election_elapsed = 0;
        heartbeat_elapsed = 0;
        reset_randomized_timeout();
        votes.clear();
        transferee = no_node;
        pending_reads.clear();
        reads_before_commit.clear();
        uncommitted_bytes = 0;
        needs_broadcast = false;
        needs_commit_broadcast = false;
        progress.clear();
    }
    void become_follower(Term new_term, NodeId new_leader) {
        reset(new_term);
        role = Role::follower;
        leader = new_leader;
        QUEEN_LOG(logger, Level::info, "raft.became_follower",
                  "node=" << id << " term=" << term << " leader=" << leader);
    }
    void become_pre_candidate() {
        QUEEN_ASSERT(role != Role::leader, "leader cannot become pre-candidate");
        // Pre-vote changes neither term nor vote: a failed pre-election disturbs nobody.
        votes.clear();
        leader = no_node;
        role = Role::pre_candidate;
        QUEEN_LOG(logger, Level::info, "raft.became_pre_candidate",
                  "node=" << id << " term=" << term);
    }
    void become_candidate() {
        QUEEN_ASSERT(role != Role::leader, "leader cannot become candidate");
        reset(term.next());
        vote = id;
        role = Role::candidate;
        QUEEN_LOG(logger, Level::info, "raft.became_candidate", "node=" << id << " term=" << term);
    }
    void add_progress(NodeId node, bool is_learner) {
        Progress pr;
        pr.next = last_index().next();
        pr.match = node == id ? stable : LogIndex{0};
        pr.is_learner = is_learner;
        pr.is_recent_active = true;
        progress[node] = std::move(pr);
    }
    void become_leader() {
        QUEEN_ASSERT(role == Role::candidate, "only a candidate becomes leader");
        reset(term);
        role = Role::leader;
        leader = id;
        for (const NodeId node : conf.voters) {
            add_progress(node, false);
        }
        for (const NodeId node : conf.learners) {
            add_progress(node, true);
        }
        if (auto self = progress.find(id); self != progress.end()) {
            self->second.become_replicate();
        }
        // No conf change until this term's first entry is applied (the single-server change
        // fix: a new leader must commit in its term before changing membership).
        pending_conf_index = last_index();
        QUEEN_LOG(logger, Level::info, "raft.became_leader", "node=" << id << " term=" << term);
        append_local(EntryType::normal, Bytes{});
    }
    LogIndex append_local(EntryType type, Bytes data) {
        const LogIndex index = last_index().next();
        uncommitted_bytes += data.size();
        log.push_back(Entry{term, index, type, std::move(data)});
        needs_broadcast = true;
        // A single voter commits once its own write is durable (advance()).
        return index;
    }

    // ---- elections ---------------------------------------------------------------------
    void start_campaign(bool is_pre_vote, bool is_transfer) {
        if (!is_promotable()) {
            return;
        }
        Term vote_term;
        MessageType type;
        if (is_pre_vote) {
            become_pre_candidate();
            vote_term = term.next();
            type = MessageType::request_pre_vote;
        } else {
            become_candidate();
            vote_term = term;
            type = MessageType::request_vote;
        }
        if (poll(id, true) == Outcome::won) {
            if (is_pre_vote) {
                start_campaign(false, is_transfer);
            } else {
                become_leader();
            }
            return;
        }
        for (const NodeId node : conf.voters) {
            if (node == id) {
                continue;
            }
            Message m;
            m.type = type;
            m.to = node;
            m.term = vote_term;
            m.index = last_index();
            m.log_term = last_term();
            m.is_transfer = is_transfer;
            send(std::move(m));
        }
    }
    enum class Outcome { pending, won, lost };
    Outcome poll(NodeId from, bool granted) {
        votes.emplace(from, granted);
        std::size_t granted_count = 0;
        std::size_t rejected_count = 0;
        for (const auto& [node, is_granted] : votes) {
            if (!is_voter(node)) {
                continue;
            }
            (is_granted ? granted_count : rejected_count) += 1;
        }
        if (granted_count >= quorum()) {
            return Outcome::won;
        }
        if (rejected_count >= quorum()) {
            return Outcome::lost;
        }
        return Outcome::pending;
    }

    // ---- ticking -----------------------------------------------------------------------
    void tick() {
        if (role == Role::leader) {
            tick_leader();
        } else {
            election_elapsed += 1;
            if (is_promotable() && election_elapsed >= randomized_election_timeout) {
                election_elapsed = 0;
                start_campaign(options.pre_vote, false);
            }
        }
    }
    void tick_leader() {
        heartbeat_elapsed += 1;
        election_elapsed += 1;
        if (election_elapsed >= options.election_ticks) {
            election_elapsed = 0;
            if (options.check_quorum && !is_quorum_active()) {
                QUEEN_LOG(logger, Level::warn, "raft.stepped_down",
                          "node=" << id << " term=" << term << " reason=no_active_quorum");
                become_follower(term, no_node);
                return;
            }
            if (transferee != no_node) {
                QUEEN_LOG(logger, Level::info, "raft.transfer_aborted",
                          "node=" << id << " target=" << transferee << " reason=timeout");
                transferee = no_node;
            }
        }
        if (heartbeat_elapsed >= options.heartbeat_ticks) {
            heartbeat_elapsed = 0;
            broadcast_heartbeat();
        }
    }
    bool is_quorum_active() {
        std::size_t active = 0;
        for (auto& [node, pr] : progress) {
            if (node == id) {
                if (is_voter(node)) {
                    active += 1;
                }
                continue;
            }
            if (pr.is_recent_active && is_voter(node)) {
                active += 1;
            }
            pr.is_recent_active = false;
        }
        return active >= quorum();
    }

    // ---- replication (leader) ----------------------------------------------------------
    void send_snapshot_chunk(NodeId to, Progress& pr) {
        const std::uint64_t size = snapshot.data.size();
        const std::uint64_t offset = std::min(pr.snapshot_offset, size);
        const std::uint64_t length = std::min(options.snapshot_chunk_bytes_max, size - offset);
        Message m;
        m.type = MessageType::snapshot;
        m.to = to;
        m.snapshot = snapshot.meta;
        m.snapshot_offset = offset;
        m.snapshot_size = size;
        m.is_last_chunk = offset + length == size;
        const auto begin = snapshot.data.begin() + static_cast<std::ptrdiff_t>(offset);
        m.snapshot_chunk.assign(begin, begin + static_cast<std::ptrdiff_t>(length));
        m.commit = commit;
        pr.is_probe_sent = true;
        send(std::move(m));
    }
    // Sends the next append (or snapshot chunk) to `to`. Returns true if something was sent.
    bool maybe_send_append(NodeId to, bool send_if_empty) {
        auto found = progress.find(to);
        if (found == progress.end() || to == id) {
            return false;
        }
        Progress& pr = found->second;
        if (pr.is_paused(options.inflight_appends_max)) {
            return false;
        }
        const LogIndex prev = pr.next.prev();
        const auto prev_term = term_of(prev);
        if (!prev_term.has_value()) {
            // The entries this peer needs are compacted: send the snapshot, chunk by chunk.
            pr.become_snapshot(snapshot.meta.index);
            QUEEN_LOG(logger, Level::info, "raft.sending_snapshot",
                      "node=" << id << " to=" << to << " index=" << snapshot.meta.index
                              << " bytes=" << snapshot.data.size());
            send_snapshot_chunk(to, pr);
            return true;
        }
        Message m;
        m.type = MessageType::append;
        m.to = to;
        m.index = prev;
        m.log_term = *prev_term;
        m.commit = commit;
        std::uint64_t bytes = 0;
        for (LogIndex i = pr.next; i <= last_index(); i = i.next()) {
            const Entry& entry = entry_at(i);
            if (!m.entries.empty() && (m.entries.size() >= options.append_entries_max ||
                                       bytes + entry.data.size() > options.append_bytes_max)) {
                break;
            }
            bytes += entry.data.size();
            m.entries.push_back(entry);
        }
        if (m.entries.empty() && !send_if_empty) {
            return false;
        }
        if (!m.entries.empty()) {
            const LogIndex last = m.entries.back().index;
            if (pr.state == ProgressState::replicate) {
                pr.next = last.next();
                pr.inflights.push_back(last);
            } else {
                pr.is_probe_sent = true;
            }
        } else if (pr.state == ProgressState::probe) {
            pr.is_probe_sent = true;
        }
        send(std::move(m));
        return true;
    }
    void broadcast_append(bool send_if_empty) {
        for (auto& [node, pr] : progress) {
            if (node != id) {
                maybe_send_append(node, send_if_empty);
            }
        }
    }
    void broadcast_heartbeat() {
        const Bytes context = pending_reads.empty() ? Bytes{} : pending_reads.back().context;
        for (auto& [node, pr] : progress) {
            if (node == id) {
                continue;
            }
            Message m;
            m.type = MessageType::heartbeat;
            m.to = node;
            m.commit = std::min(pr.match, commit);  // never past what the peer is known to hold
            m.context = context;
            send(std::move(m));
        }
    }
    bool maybe_commit() {
        std::vector<LogIndex> matches;
        for (const auto& [node, pr] : progress) {
            if (is_voter(node)) {
                matches.push_back(node == id ? stable : pr.match);
            }
        }
        if (matches.empty()) {
            return false;
        }
        std::sort(matches.begin(), matches.end(), std::greater<>());
        // The highest index held durably by a quorum (the mutation build trusts one node).
        const LogIndex candidate =
            mutation_ack_before_majority ? matches.front() : matches[quorum() - 1];
        // Raft 5.4.2: only entries of the current term are committed by counting replicas.
        if (candidate > commit && term_of(candidate) == term) {
            commit_to(candidate);
            return true;
        }
        return false;
    }
    void commit_to(LogIndex index) {
        if (index <= commit) {
            return;
        }
        QUEEN_ASSERT(index <= last_index(), "commit beyond the last index");
        if (role == Role::leader) {
            std::uint64_t released = 0;
            for (LogIndex i = std::max(commit.next(), first_index()); i <= index; i = i.next()) {
                released += entry_at(i).data.size();
            }
            uncommitted_bytes = released > uncommitted_bytes ? 0 : uncommitted_bytes - released;
            needs_commit_broadcast = true;
        }
        commit = index;
        if (role == Role::leader && !reads_before_commit.empty() && term_of(commit) == term) {
            std::deque<PendingRead> waiting;
            waiting.swap(reads_before_commit);
            for (PendingRead& read : waiting) {
                start_read(std::move(read.context), read.from);
            }
        }
    }

    // ---- reads -------------------------------------------------------------------------
    void release_read(PendingRead read) {
        if (read.from == id) {
            read_states.push_back(ReadState{read.index, std::move(read.context)});
            return;
        }
        Message m;
        m.type = MessageType::read_index_response;
        m.to = read.from;
        m.index = read.index;
        m.context = std::move(read.context);
        send(std::move(m));
    }
    void start_read(Bytes context, NodeId from) {
        if (term_of(commit) != term) {
            // Our commit index is only known to be current once we commit in our term.
            if (reads_before_commit.size() < options.pending_reads_max) {
                reads_before_commit.push_back(PendingRead{std::move(context), commit, from, {}});
            }
            return;
        }
        PendingRead read{std::move(context), commit, from, {id}};
        if (quorum() <= 1 || options.read_lease_based) {
            release_read(std::move(read));
            return;
        }
        if (pending_reads.size() >= options.pending_reads_max) {
            return;  // the requester times out and retries
        }
        pending_reads.push_back(std::move(read));
        broadcast_heartbeat();
    }
    void ack_read(NodeId from, const Bytes& context) {
        if (context.empty()) {
            return;
        }
        auto found = std::find_if(pending_reads.begin(), pending_reads.end(),
                                  [&](const PendingRead& r) { return r.context == context; });
        if (found == pending_reads.end()) {
            return;
        }
        if (std::find(found->acks.begin(), found->acks.end(), from) == found->acks.end()) {
            found->acks.push_back(from);
        }
        std::size_t voter_acks = 0;
        for (const NodeId node : found->acks) {
            voter_acks += is_voter(node) ? 1 : 0;
        }
        if (voter_acks < quorum()) {
            return;
        }
        // A quorum confirmed leadership after this read started, so every earlier read too.
        const auto end = found + 1;
        std::vector<PendingRead> done(std::make_move_iterator(pending_reads.begin()),
                                      std::make_move_iterator(end));
        pending_reads.erase(pending_reads.begin(), end);
        for (PendingRead& read : done) {
            release_read(std::move(read));
        }
    }

    // ---- stepping ----------------------------------------------------------------------
    void step(const Message& m) {
        if (m.to != id || m.from == id || m.from == no_node) {
            return;
        }
        const bool is_vote_request =
            m.type == MessageType::request_vote || m.type == MessageType::request_pre_vote;
        if (m.term > term) {
            if (is_vote_request) {
                const bool in_lease = options.check_quorum && leader != no_node &&
                                      election_elapsed < options.election_ticks;
                if (!m.is_transfer && in_lease) {
                    QUEEN_LOG(logger, Level::info, "raft.vote_ignored_in_lease",
                              "node=" << id << " term=" << term << " from=" << m.from
                                      << " msg_term=" << m.term << " leader=" << leader);
                    return;
                }
            }
            if (m.type == MessageType::request_pre_vote) {
                // Never change term on a pre-vote request.
            } else if (m.type == MessageType::request_pre_vote_response && !m.reject) {
                // Granted pre-votes carry the future term; the candidate bumps on a quorum.
            } else if (m.type == MessageType::append || m.type == MessageType::heartbeat ||
                       m.type == MessageType::snapshot) {
                become_follower(m.term, m.from);
            } else {
                become_follower(m.term, no_node);
            }
        } else if (m.term < term) {
            if ((options.check_quorum || options.pre_vote) &&
                (m.type == MessageType::append || m.type == MessageType::heartbeat)) {
                // A stale leader learns the new term from this and steps down.
                Message r;
                r.type = MessageType::append_response;
                r.to = m.from;
                send(std::move(r));
            } else if (m.type == MessageType::request_pre_vote) {
                Message r;
                r.type = MessageType::request_pre_vote_response;
                r.to = m.from;
                r.reject = true;
                send(std::move(r));
            }
            return;
        }

        if (is_vote_request) {
            handle_vote_request(m);
            return;
        }
        switch (role) {
            case Role::leader: step_leader(m); break;
            case Role::candidate:
            case Role::pre_candidate: step_candidate(m); break;
            case Role::follower: step_follower(m); break;
        }
    }
    void handle_vote_request(const Message& m) {
        const bool is_pre = m.type == MessageType::request_pre_vote;
        const bool can_vote =
            vote == m.from || (vote == no_node && leader == no_node) || (is_pre && m.term > term);
        Message r;
        r.type =
            is_pre ? MessageType::request_pre_vote_response : MessageType::request_vote_response;
        r.to = m.from;
        if (can_vote && is_up_to_date(m.index, m.log_term)) {
            r.term = m.term;  // for pre-votes: the future term being asked about
            QUEEN_LOG(
                logger, Level::debug, "raft.vote_granted",
                "node=" << id << " term=" << term << " candidate=" << m.from << " pre=" << is_pre);
            if (!is_pre) {
                election_elapsed = 0;
                vote = m.from;
            }
        } else {
            r.reject = true;
            QUEEN_LOG(
                logger, Level::debug, "raft.vote_rejected",
                "node=" << id << " term=" << term << " candidate=" << m.from << " pre=" << is_pre);
        }
        send(std::move(r));
    }
    void step_candidate(const Message& m) {
        const MessageType response_type = role == Role::pre_candidate
                                              ? MessageType::request_pre_vote_response
                                              : MessageType::request_vote_response;
        switch (m.type) {
            case MessageType::append:
                become_follower(m.term, m.from);
                handle_append(m);
                return;
            case MessageType::heartbeat:
                become_follower(m.term, m.from);
                handle_heartbeat(m);
                return;
            case MessageType::snapshot:
                become_follower(m.term, m.from);
                handle_snapshot(m);
                return;
            default: break;
        }
        if (m.type != response_type) {
            return;
        }
        switch (poll(m.from, !m.reject)) {
            case Outcome::won:
                if (role == Role::pre_candidate) {
                    start_campaign(false, false);
                } else {
                    become_leader();
                    broadcast_append(true);
                }
                break;
            case Outcome::lost: become_follower(term, no_node); break;
            case Outcome::pending: break;
        }
    }
    void step_follower(const Message& m) {
        switch (m.type) {
            case MessageType::append:
                election_elapsed = 0;
                leader = m.from;
                handle_append(m);
                break;
            case MessageType::heartbeat:
                election_elapsed = 0;
                leader = m.from;
                handle_heartbeat(m);
                break;
            case MessageType::snapshot:
                election_elapsed = 0;
                leader = m.from;
                handle_snapshot(m);
                break;
            case MessageType::timeout_now:
                QUEEN_LOG(logger, Level::info, "raft.transfer_campaign",
                          "node=" << id << " term=" << term << " from=" << m.from);
                // A transfer skips pre-vote: the old leader asked for it.
                start_campaign(false, true);
                break;
            case MessageType::read_index_response:
                if (!m.reject) {
                    read_states.push_back(ReadState{m.index, m.context});
                }
                break;
            default: break;
        }
    }
    void step_leader(const Message& m) {
        auto found = progress.find(m.from);
        switch (m.type) {
            case MessageType::append_response: {
                if (found == progress.end()) {
                    return;
                }
                Progress& pr = found->second;
                pr.is_recent_active = true;
                if (m.reject) {
                    LogIndex hint = m.reject_hint;
                    if (m.log_term > Term{0}) {
                        hint = find_conflict_by_term(m.reject_hint, m.log_term).first;
                    }
                    if (pr.maybe_decrease(m.index, hint)) {
                        if (pr.state == ProgressState::replicate) {
                            pr.become_probe();
                        }
                        maybe_send_append(m.from, true);
                    }
                    return;
                }
                if (pr.maybe_update(m.index)) {
                    if (pr.state == ProgressState::probe) {
                        pr.become_replicate();
                    } else if (pr.state == ProgressState::snapshot &&
                               pr.match >= pr.pending_snapshot) {
                        pr.become_probe();
                        pr.become_replicate();
                    }
                    // A moved commit is announced by the next ready() (one message per peer).
                    maybe_commit();
                    while (maybe_send_append(m.from, false)) {
                    }
                    if (m.from == transferee && pr.match == last_index()) {
                        send_timeout_now(m.from);
                    }
                }
                return;
            }
            case MessageType::heartbeat_response: {
                if (found == progress.end()) {
                    return;
                }
                Progress& pr = found->second;
                pr.is_recent_active = true;
                pr.is_probe_sent = pr.state == ProgressState::snapshot ? pr.is_probe_sent : false;
                if (pr.state == ProgressState::snapshot) {
                    // Chunks may be lost: resend the one the follower is waiting for.
                    if (pr.pending_snapshot != snapshot.meta.index) {
                        pr.become_snapshot(snapshot.meta.index);
                    }
                    send_snapshot_chunk(m.from, pr);
                } else if (pr.match < last_index() || pr.match < commit) {
                    // Appends or their acks may have been lost: with a full window, free one
                    // slot so an (empty) append goes out and the answer re-syncs match.
                    if (pr.state == ProgressState::replicate &&
                        pr.inflights.size() >= options.inflight_appends_max) {
                        pr.inflights.pop_front();
                    }
                    maybe_send_append(m.from, true);
                }
                ack_read(m.from, m.context);
                return;
            }
            case MessageType::snapshot_response: {
                if (found == progress.end()) {
                    return;
                }
                Progress& pr = found->second;
                pr.is_recent_active = true;
                if (pr.state != ProgressState::snapshot) {
                    return;
                }
                if (pr.pending_snapshot != snapshot.meta.index) {
                    pr.become_snapshot(snapshot.meta.index);  // we compacted again: restart
                } else if (m.snapshot.index == pr.pending_snapshot &&
                           m.snapshot.term == snapshot.meta.term) {
                    pr.snapshot_offset = m.snapshot_offset;
                } else {
                    pr.snapshot_offset = 0;
                }
                if (pr.snapshot_offset < snapshot.data.size() || snapshot.data.empty()) {
                    send_snapshot_chunk(m.from, pr);
                }
                return;
            }
            case MessageType::transfer_leader: handle_transfer(m.from); return;
            case MessageType::read_index: {
                if (found == progress.end()) {
                    return;
                }
                start_read(m.context, m.from);
                return;
            }
            default: return;
        }
    }
    void send_timeout_now(NodeId to) {
        Message m;
        m.type = MessageType::timeout_now;
        m.to = to;
        send(std::move(m));
        QUEEN_LOG(logger, Level::info, "raft.transfer_timeout_now",
                  "node=" << id << " term=" << term << " target=" << to);
    }
    void handle_transfer(NodeId target) {
        if (target == id || !is_voter(target) || progress.count(target) == 0) {
            return;
        }
        if (transferee == target) {
            return;
        }
        transferee = target;
        election_elapsed = 0;  // the transfer must finish within one election timeout
        QUEEN_LOG(logger, Level::info, "raft.transfer_started",
                  "node=" << id << " term=" << term << " target=" << target);
        if (progress[target].match == last_index()) {
            send_timeout_now(target);
        } else {
            maybe_send_append(target, true);
        }
    }

    // ---- follower handlers -------------------------------------------------------------
    void handle_append(const Message& m) {
        Message r;
        r.type = MessageType::append_response;
        r.to = m.from;
        if (m.index < commit) {
            r.index = commit;
            send(std::move(r));
            return;
        }
        if (matches(m.index, m.log_term)) {
            append_after_match(m.entries);
            const LogIndex last_new{m.index.value() + m.entries.size()};
            commit_to(std::min(m.commit, last_new));
            r.index = last_new;
            send(std::move(r));
            return;
        }
        const auto [hint_index, hint_term] =
            find_conflict_by_term(std::min(m.index, last_index()), m.log_term);
        r.reject = true;
        r.index = m.index;
        r.reject_hint = hint_index;
        r.log_term = hint_term;
        QUEEN_LOG(
            logger, Level::debug, "raft.append_rejected",
            "node=" << id << " term=" << term << " index=" << m.index << " hint=" << hint_index);
        send(std::move(r));
    }
    void handle_heartbeat(const Message& m) {
        commit_to(std::min(m.commit, last_index()));
        Message r;
        r.type = MessageType::heartbeat_response;
        r.to = m.from;
        r.context = m.context;
        send(std::move(r));
    }
    void reply_snapshot(NodeId to, const SnapshotMeta& meta, std::uint64_t offset, bool reject) {
        Message r;
        r.type = MessageType::snapshot_response;
        r.to = to;
        r.snapshot = meta;
        r.snapshot_offset = offset;
        r.reject = reject;
        send(std::move(r));
    }
    void handle_snapshot(const Message& m) {
        const SnapshotMeta& meta = m.snapshot;
        if (meta.index <= commit) {
            Message r;
            r.type = MessageType::append_response;
            r.to = m.from;
            r.index = commit;
            send(std::move(r));
            return;
        }
        if (m.snapshot_size > options.snapshot_bytes_max) {
            QUEEN_LOG(logger, Level::error, "raft.snapshot_too_large",
                      "node=" << id << " bytes=" << m.snapshot_size);
            return;
        }
        if (m.snapshot_offset == 0) {
            receiving_meta = meta;
            receiving_data.clear();
            is_receiving = true;
        } else if (!is_receiving || !(receiving_meta == meta)) {
            reply_snapshot(m.from, meta, 0, true);
            return;
        }
        if (m.snapshot_offset != receiving_data.size()) {
            reply_snapshot(m.from, meta, receiving_data.size(), true);
            return;
        }
        receiving_data.insert(receiving_data.end(), m.snapshot_chunk.begin(),
                              m.snapshot_chunk.end());
        if (!m.is_last_chunk) {
            reply_snapshot(m.from, meta, receiving_data.size(), false);
            return;
        }
        if (receiving_data.size() != m.snapshot_size) {
            is_receiving = false;
            receiving_data.clear();
            reply_snapshot(m.from, meta, 0, true);
            return;
        }
        is_receiving = false;
        Bytes data;
        data.swap(receiving_data);
        Message r;
        r.type = MessageType::append_response;
        r.to = m.from;
        if (restore(meta, std::move(data))) {
            r.index = last_index();
        } else {
            r.index = commit;
        }
        send(std::move(r));
    }
    // Installs a snapshot received from the leader. False when the log already holds it.
    bool restore(const SnapshotMeta& meta, Bytes data) {
        if (meta.index <= commit) {
            return false;
        }
        if (matches(meta.index, meta.term)) {
            // Our log already contains the snapshot's last entry: just move the commit.
            commit_to(meta.index);
            return false;
        }
        QUEEN_LOG(logger, Level::info, "raft.snapshot_restored",
                  "node=" << id << " term=" << term << " index=" << meta.index
                          << " snapshot_term=" << meta.term << " bytes=" << data.size());
        log.clear();
        snapshot.meta = meta;
        snapshot.data = std::move(data);
        commit = meta.index;
        stable = std::min(stable, meta.index);
        persist_handed = meta.index;
        apply_handed = std::max(apply_handed, meta.index);
        conf = meta.conf_state;
        conf_history.clear();
        restore_pending = snapshot;
        return true;
    }

    // ---- membership --------------------------------------------------------------------
    Status validate_conf_change(const ConfChange& change) const {
        const bool voter = is_voter(change.node_id);
        const bool learner = contains(conf.learners, change.node_id);
        auto invalid = [&](const char* why) {
            return Error{Errc::invalid_conf_change, std::string("conf change for node ") +
                                                        std::to_string(change.node_id.value()) +
                                                        ": " + why};
        };
        switch (change.type) {
            case ConfChangeType::add_voter:
                if (voter) {
                    return invalid("already a voter");
                }
                break;
            case ConfChangeType::add_learner:
                if (voter) {
                    return invalid("a voter cannot be demoted");
                }
                if (learner) {
                    return invalid("already a learner");
                }
                break;
            case ConfChangeType::remove_node:
                if (!voter && !learner) {
                    return invalid("not a member");
                }
                if (voter && conf.voters.size() == 1) {
                    return invalid("cannot remove the last voter");
                }
                break;
        }
        return {};
    }
    void apply_conf_change(LogIndex index, const ConfChange& change) {
        switch (change.type) {
            case ConfChangeType::add_voter:
                erase_sorted(conf.learners, change.node_id);
                insert_sorted(conf.voters, change.node_id);
                break;
            case ConfChangeType::add_learner:
                if (!is_voter(change.node_id)) {
                    insert_sorted(conf.learners, change.node_id);
                }
                break;
            case ConfChangeType::remove_node:
                if (conf.voters.size() > 1 || !is_voter(change.node_id)) {
                    erase_sorted(conf.voters, change.node_id);
                }
                erase_sorted(conf.learners, change.node_id);
                break;
        }
        conf_history.emplace_back(index, conf);
        QUEEN_LOG(logger, Level::info, "raft.conf_applied",
                  "node=" << id << " index=" << index << " voters=" << conf.voters.size()
                          << " learners=" << conf.learners.size()
                          << " change=" << static_cast<int>(change.type) << ":" << change.node_id);
        if (role != Role::leader) {
            return;
        }
        if (!is_voter(id) && !contains(conf.learners, id)) {
            QUEEN_LOG(logger, Level::info, "raft.stepped_down",
                      "node=" << id << " term=" << term << " reason=removed");
            become_follower(term, no_node);
            return;
        }
        for (auto it = progress.begin(); it != progress.end();) {
            const bool member = is_voter(it->first) || contains(conf.learners, it->first);
            it = member ? std::next(it) : progress.erase(it);
        }
        for (const NodeId node : conf.voters) {
            if (progress.count(node) == 0) {
                add_progress(node, false);
            }
            progress[node].is_learner = false;
        }
        for (const NodeId node : conf.learners) {
            if (progress.count(node) == 0) {
                add_progress(node, true);
            }
        }
        if (transferee != no_node && !is_voter(transferee)) {
            transferee = no_node;
        }
        maybe_commit();
        needs_commit_broadcast = true;  // probe new peers and announce the new quorum's commit
    }

    // ---- Ready -------------------------------------------------------------------------
    [[nodiscard]] HardState hard_state() const { return HardState{term, vote, commit}; }
    [[nodiscard]] LogIndex apply_limit() const { return std::min(commit, stable); }
    [[nodiscard]] bool has_ready() const {
        if (is_ready_outstanding) {
            return false;
        }
        return persist_handed < last_index() || !(hard_state() == handed_hard_state) ||
               restore_pending.has_value() || apply_handed < apply_limit() || !messages.empty() ||
               !messages_after_persist.empty() || !read_states.empty() ||
               (role == Role::leader && (needs_broadcast || needs_commit_broadcast));
    }
    Ready make_ready() {
        QUEEN_ASSERT(!is_ready_outstanding, "ready() called twice without advance()");
        if (role == Role::leader && (needs_broadcast || needs_commit_broadcast)) {
            broadcast_append(needs_commit_broadcast);
            needs_broadcast = false;
            needs_commit_broadcast = false;
        }
        Ready rd;
        outstanding = Outstanding{};
        if (restore_pending.has_value()) {
            outstanding.snapshot_index = restore_pending->meta.index;
            rd.snapshot = std::move(restore_pending);
            restore_pending.reset();
            rd.must_sync = true;
        }
        rd.entries.reserve(last_index().value() - persist_handed.value());
        for (LogIndex i = persist_handed.next(); i <= last_index(); i = i.next()) {
            rd.entries.push_back(entry_at(i));
        }
        if (!rd.entries.empty()) {
            outstanding.has_entries = true;
            outstanding.last_entry_index = rd.entries.back().index;
            outstanding.last_entry_term = rd.entries.back().term;
            persist_handed = rd.entries.back().index;
            rd.must_sync = true;
        }
        const HardState current = hard_state();
        if (!(current == handed_hard_state)) {
            HardState persisted = current;
            if (mutation_forget_vote) {
                persisted.vote = no_node;
            }
            rd.must_sync = rd.must_sync || current.term != handed_hard_state.term ||
                           current.vote != handed_hard_state.vote;
            rd.hard_state = persisted;
            handed_hard_state = current;
        }
        std::uint64_t bytes = 0;
        const LogIndex limit = apply_limit();
        for (LogIndex i = std::max(apply_handed.next(), first_index()); i <= limit; i = i.next()) {
            const Entry& entry = entry_at(i);
            if (!rd.committed_entries.empty() &&
                bytes + entry.data.size() > options.apply_bytes_max) {
                break;
            }
            bytes += entry.data.size();
            if (entry.type == EntryType::conf_change) {
                auto change = decode_conf_change(entry.data);
                if (change.has_value()) {
                    outstanding.conf_changes.emplace_back(entry.index, change.value());
                }
            }
            rd.committed_entries.push_back(entry);
            apply_handed = entry.index;
        }
        outstanding.committed_last = apply_handed;
        rd.messages.swap(messages);
        rd.messages_after_persist.swap(messages_after_persist);
        rd.read_states.swap(read_states);
        is_ready_outstanding = true;
        return rd;
    }
    void advance() {
        QUEEN_ASSERT(is_ready_outstanding, "advance() without an outstanding ready()");
        is_ready_outstanding = false;
        if (outstanding.snapshot_index.has_value() &&
            *outstanding.snapshot_index == snapshot.meta.index) {
            stable = std::max(stable, snapshot.meta.index);
            applied = std::max(applied, snapshot.meta.index);
        }
        if (outstanding.has_entries &&
            matches(outstanding.last_entry_index, outstanding.last_entry_term)) {
            stable = std::max(stable, outstanding.last_entry_index);
        }
        for (const auto& [index, change] : outstanding.conf_changes) {
            if (index > snapshot.meta.index || conf_history.empty()) {
                apply_conf_change(index, change);
            }
        }
        applied = std::max(applied, outstanding.committed_last);
        if (role == Role::leader) {
            auto self = progress.find(id);
            if (self != progress.end()) {
                self->second.match = stable;
                self->second.next = last_index().next();
            }
            if (maybe_commit()) {
                needs_commit_broadcast = true;
            }
        }
    }
};

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

Result<RawNode> RawNode::open(const Options& options, RestoreState state, Rng& rng,
                              Logger& logger) {
    QUEEN_TRY(options.validate());
    auto impl = std::make_unique<Impl>(options, rng, logger);
    Impl& r = *impl;
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
    if (target == r.id) {
        Message m;
        m.type = MessageType::transfer_leader;
        m.to = r.leader;
        r.send(std::move(m));
        return {};
    }
    return Error{Errc::not_leader, "transfer_leadership: ask the leader or the target"};
}

void RawNode::campaign() {
    Impl& r = *impl_;
    if (r.role == Role::leader) {
        return;
    }
    r.start_campaign(r.options.pre_vote, false);
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
    QUEEN_LOG(r.logger, Level::info, "raft.compacted",
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
    return s;
}

std::vector<PeerProgress> RawNode::progress() const {
    std::vector<PeerProgress> rows;
    for (const auto& [node, pr] : impl_->progress) {
        rows.push_back(PeerProgress{node, pr.match, pr.next, state_name(pr.state), pr.is_learner,
                                    pr.is_recent_active, pr.inflights.size()});
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
