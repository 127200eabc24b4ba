// modules/raft/tests/interaction_env.hpp — an etcd-style data-driven harness: text commands
// drive in-memory raft nodes; the output (events and messages) is compared with testdata files.
#pragma once

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "queen/core/logger.hpp"
#include "queen/core/rng.hpp"
#include "queen/raft/codec.hpp"
#include "queen/raft/errc.hpp"
#include "queen/raft/raw_node.hpp"

namespace queen::raft::testing {

/// Collects log events as "event fields" lines.
class CaptureLogger final : public Logger {
public:
    explicit CaptureLogger(std::ostringstream& out) : out_(out) { set_level(Level::info); }
    void write(Level, std::string_view event, std::string_view fields, const char*, int) override {
        out_ << event << " " << fields << "\n";
    }

private:
    std::ostringstream& out_;
};

inline std::string describe(const Message& m) {
    std::ostringstream out;
    out << m.from << "->" << m.to << " " << message_type_name(m.type) << " term=" << m.term;
    switch (m.type) {
        case MessageType::append:
            out << " index=" << m.index << " log_term=" << m.log_term << " commit=" << m.commit
                << " entries=[";
            for (std::size_t i = 0; i < m.entries.size(); ++i) {
                const Entry& e = m.entries[i];
                out << (i ? " " : "") << e.term << "/" << e.index;
                if (e.type == EntryType::conf_change) {
                    out << ":conf";
                } else if (!e.data.empty()) {
                    out << ":" << as_chars(e.data);
                }
            }
            out << "]";
            if (m.recovery_index > LogIndex{0}) {
                out << " recovery_index=" << m.recovery_index;
            }
            break;
        case MessageType::append_response:
            out << " index=" << m.index;
            if (m.reject) {
                out << " reject hint=" << m.reject_hint << " log_term=" << m.log_term;
            }
            out << (m.is_recovering ? " recovering" : "");
            break;
        case MessageType::heartbeat_response:
            if (m.is_recovering) {
                out << " recovering last=" << m.index;
            }
            break;
        case MessageType::request_vote:
        case MessageType::request_pre_vote:
            out << " index=" << m.index << " log_term=" << m.log_term
                << (m.is_transfer ? " transfer" : "");
            break;
        case MessageType::request_vote_response:
        case MessageType::request_pre_vote_response:
            out << (m.reject ? " reject" : " grant");
            break;
        case MessageType::heartbeat:
            out << " commit=" << m.commit;
            if (m.recovery_index > LogIndex{0}) {
                out << " recovery_index=" << m.recovery_index;
            }
            if (!m.context.empty()) {
                out << " ctx=" << as_chars(m.context);
            }
            break;
        case MessageType::snapshot:
            out << " snap=" << m.snapshot.index << "/" << m.snapshot.term
                << " offset=" << m.snapshot_offset << " size=" << m.snapshot_size
                << (m.is_last_chunk ? " last" : "");
            break;
        case MessageType::snapshot_response:
            out << " snap=" << m.snapshot.index << " offset=" << m.snapshot_offset
                << (m.reject ? " reject" : "");
            break;
        case MessageType::quiesce:
            out << " index=" << m.index << " log_term=" << m.log_term << " commit=" << m.commit;
            break;
        case MessageType::read_index_response: out << " index=" << m.index; break;
        case MessageType::transfer_leader:
            if (m.index > LogIndex{0}) {
                out << " target=" << m.index;
            }
            break;
        default: break;
    }
    return out.str();
}

inline std::string ids_text(const std::vector<NodeId>& ids) {
    std::ostringstream out;
    out << "(";
    for (std::size_t i = 0; i < ids.size(); ++i) {
        out << (i ? " " : "") << ids[i];
    }
    out << ")";
    return out.str();
}

/// The in-memory cluster the scenario commands act on. Persistence is synchronous: every
/// Ready is durable when processed, so crash/restart loses only volatile state.
class InteractionEnv {
public:
    struct Disk {
        HardState hard_state;
        Snapshot snapshot;
        std::vector<Entry> entries;
        LogIndex applied;
        std::vector<std::string> state;  // applied normal entries (the "state machine")
        bool is_recovering = false;      // restarted with a damaged log, not caught up yet
        // Entries `compact` dropped from raft's memory that the log on disk still holds
        // (add-nodes source=true); `compact-source` drops them (the log's own compaction).
        std::vector<Entry> retained;
    };
    /// The node's log on disk as an EntrySource: `retained`, then the entries after the
    /// snapshot. Each call is printed, so a scenario shows what came from the disk.
    class DiskSource final : public EntrySource {
    public:
        DiskSource(NodeId id, const Disk& disk, std::ostringstream& out)
            : id_(id), disk_(disk), out_(out) {}
        Result<std::vector<Entry>> entries(LogIndex low, LogIndex high,
                                           std::uint64_t max_bytes) override {
            std::vector<Entry> found;
            std::uint64_t bytes = 0;
            for (LogIndex i = low; i < high; i = i.next()) {
                const Entry* entry = find(i);
                if (entry == nullptr) {
                    break;
                }
                if (!found.empty() && bytes + entry->data.size() > max_bytes) {
                    break;
                }
                bytes += entry->data.size();
                found.push_back(*entry);
            }
            out_ << "source " << id_ << ": entries [" << low << ", " << high
                 << ") max_bytes=" << max_bytes;
            if (found.empty()) {
                out_ << " compacted\n";
                return Error{Errc::compacted, "source: compacted"};
            }
            out_ << " -> " << found.front().index << ".." << found.back().index << "\n";
            return found;
        }
        Result<Term> term(LogIndex index) override {
            const Entry* entry = find(index);
            out_ << "source " << id_ << ": term " << index;
            if (entry == nullptr) {
                out_ << " compacted\n";
                return Error{Errc::compacted, "source: compacted"};
            }
            out_ << " -> " << entry->term << "\n";
            return entry->term;
        }

    private:
        const Entry* find(LogIndex index) const {
            for (const auto* list : {&disk_.retained, &disk_.entries}) {
                for (const Entry& e : *list) {
                    if (e.index == index) {
                        return &e;
                    }
                }
            }
            return nullptr;
        }
        NodeId id_;
        const Disk& disk_;
        std::ostringstream& out_;
    };
    struct Node {
        std::unique_ptr<Rng> rng;
        Disk disk;
        std::unique_ptr<DiskSource> source;  // outlives raw (declared before it)
        std::optional<RawNode> raw;
        Options options;
    };

    std::string run(const std::string& command, const std::vector<std::string>& args) {
        out_.str("");
        out_.clear();
        if (command == "add-nodes") {
            add_nodes(args);
        } else if (command == "campaign") {
            node(arg_id(args, 0)).raw->campaign();
        } else if (command == "propose") {
            print_error(node(arg_id(args, 0)).raw->propose(to_bytes(args.at(1))));
        } else if (command == "propose-conf-change") {
            propose_conf_change(args);
        } else if (command == "tick-heartbeat") {
            node(arg_id(args, 0)).raw->tick();
        } else if (command == "tick-election") {
            tick_election(arg_id(args, 0));
        } else if (command == "stabilize") {
            stabilize();
        } else if (command == "partition") {
            partition(args);
        } else if (command == "heal") {
            groups_.clear();
            out_ << "healed\n";
        } else if (command == "crash") {
            node(arg_id(args, 0)).raw.reset();
            inbox_.erase(std::remove_if(inbox_.begin(), inbox_.end(),
                                        [&](const Message& m) { return m.to == arg_id(args, 0); }),
                         inbox_.end());
            out_ << "crashed " << arg_id(args, 0) << "\n";
        } else if (command == "restart") {
            restart(arg_id(args, 0), option_value(args, "damaged-from"));
        } else if (command == "wipe") {
            wipe(arg_id(args, 0));
        } else if (command == "transfer") {
            auto status = node(arg_id(args, 0)).raw->transfer_leadership(arg_id(args, 1));
            print_status(status);
        } else if (command == "compact") {
            compact(arg_id(args, 0), LogIndex{std::stoull(args.at(1))});
        } else if (command == "compact-source") {
            const LogIndex through{std::stoull(args.at(1))};
            std::erase_if(node(arg_id(args, 0)).disk.retained,
                          [&](const Entry& e) { return e.index <= through; });
        } else if (command == "read-index") {
            print_status(node(arg_id(args, 0)).raw->read_index(to_bytes(args.at(1))));
        } else if (command == "can-quiesce") {
            out_ << (node(arg_id(args, 0)).raw->can_quiesce() ? "true" : "false") << "\n";
        } else if (command == "quiesce") {
            out_ << (node(arg_id(args, 0)).raw->quiesce() ? "quiesced" : "refused") << "\n";
        } else if (command == "wake") {
            node(arg_id(args, 0)).raw->wake();
        } else if (command == "status") {
            status(arg_id(args, 0));
        } else if (command == "raft-log") {
            raft_log(arg_id(args, 0));
        } else if (command == "state") {
            const Disk& d = node(arg_id(args, 0)).disk;
            out_ << "applied=" << d.applied << " state=[";
            for (std::size_t i = 0; i < d.state.size(); ++i) {
                out_ << (i ? " " : "") << d.state[i];
            }
            out_ << "]\n";
        } else {
            out_ << "unknown command " << command << "\n";
        }
        std::string text = out_.str();
        if (text.empty()) {
            text = "ok\n";
        }
        return text;
    }

private:
    static Bytes to_bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }
    static NodeId arg_id(const std::vector<std::string>& args, std::size_t i) {
        return NodeId{std::stoull(args.at(i))};
    }
    Node& node(NodeId id) {
        auto found = nodes_.find(id);
        QUEEN_ASSERT(found != nodes_.end(), "no node ", id.value());
        QUEEN_ASSERT(found->second.raw.has_value() || true, "node crashed");
        return found->second;
    }
    void print_status(const queen::Status& status) {
        if (!status) {
            out_ << "error: " << status.error().message() << "\n";
        }
    }
    template <class T>
    void print_error(const Result<T>& result) {
        if (!result) {
            out_ << "error: " << result.error().message() << "\n";
        }
    }
    static std::optional<std::string> option_value(const std::vector<std::string>& args,
                                                   const std::string& key) {
        for (const std::string& a : args) {
            if (a.rfind(key + "=", 0) == 0) {
                return a.substr(key.size() + 1);
            }
        }
        return std::nullopt;
    }
    void add_nodes(const std::vector<std::string>& args) {
        const std::size_t count = std::stoull(args.at(0));
        ConfState conf;
        if (auto voters = option_value(args, "voters")) {
            std::stringstream in(*voters);
            std::string item;
            while (std::getline(in, item, ',')) {
                conf.voters.push_back(NodeId{std::stoull(item)});
            }
            std::sort(conf.voters.begin(), conf.voters.end());
        }
        Options options;
        options.pre_vote = option_value(args, "prevote").value_or("true") == "true";
        options.check_quorum = option_value(args, "checkquorum").value_or("true") == "true";
        options.read_lease_based = option_value(args, "lease").value_or("false") == "true";
        options.snapshot_chunk_bytes_max = std::stoull(option_value(args, "chunk").value_or("8"));
        options.append_entries_max = static_cast<std::uint32_t>(
            std::stoull(option_value(args, "append-max").value_or("256")));
        const bool has_source = option_value(args, "source").value_or("false") == "true";
        for (std::size_t i = 0; i < count; ++i) {
            const NodeId id{nodes_.size() + 1};
            Node& n = nodes_[id];
            n.rng = std::make_unique<Rng>(id.value());
            n.options = options;
            n.options.id = id;
            if (has_source) {
                n.source = std::make_unique<DiskSource>(id, n.disk, out_);
            }
            if (!conf.voters.empty()) {
                RestoreState boot = bootstrap_state(conf.voters);
                n.disk.hard_state = boot.hard_state;
                n.disk.entries = boot.entries;
                n.disk.applied = boot.applied;
            }
            open(id);
            out_ << "added " << id << " voters=" << ids_text(conf.voters) << "\n";
        }
    }
    void open(NodeId id) {
        Node& n = nodes_.at(id);
        RestoreState state{n.disk.hard_state, n.disk.snapshot, n.disk.entries, n.disk.applied,
                           n.disk.is_recovering};
        auto opened = RawNode::open(n.options, std::move(state), *n.rng, logger_, n.source.get());
        QUEEN_ASSERT(opened.has_value(), opened.error().message());
        n.raw.emplace(std::move(opened).value());
    }
    /// `damaged_from`: the log's recovery found a bad record at that index and cut it and
    /// everything after it; the node restarts recovering.
    void restart(NodeId id, const std::optional<std::string>& damaged_from = std::nullopt) {
        Node& n = nodes_.at(id);
        // The state machine is rebuilt from the snapshot and replays the log from there.
        n.disk.state = decode_state(n.disk.snapshot.data);
        n.disk.applied = n.disk.snapshot.meta.index;
        if (damaged_from) {
            const LogIndex cut{std::stoull(*damaged_from)};
            std::erase_if(n.disk.entries, [&](const Entry& e) { return e.index >= cut; });
            n.disk.is_recovering = true;
        }
        open(id);
        out_ << "restarted " << id << (damaged_from ? " recovering" : "") << "\n";
    }
    /// The node's data directory is replaced by an empty one under the same id (lost disk): it
    /// crashes and starts again from a default RestoreState whose snapshot conf state is the
    /// group's voters (what `queen serve` does from its static peer list). Log, hard state and
    /// state machine are gone; the other nodes still hold their match for it.
    void wipe(NodeId id) {
        ConfState conf;
        for (auto& [other, n] : nodes_) {
            if (n.raw.has_value()) {
                conf = n.raw->status().conf_state;
                break;
            }
        }
        Node& n = nodes_.at(id);
        n.raw.reset();
        inbox_.erase(std::remove_if(inbox_.begin(), inbox_.end(),
                                    [&](const Message& m) { return m.to == id; }),
                     inbox_.end());
        n.disk = Disk{};
        n.disk.snapshot.meta.conf_state = conf;
        open(id);
        out_ << "wiped " << id << " voters=" << ids_text(conf.voters) << "\n";
    }
    void propose_conf_change(const std::vector<std::string>& args) {
        ConfChange change;
        const std::string& kind = args.at(1);
        if (kind == "add-voter") {
            change.type = ConfChangeType::add_voter;
        } else if (kind == "add-learner") {
            change.type = ConfChangeType::add_learner;
        } else {
            change.type = ConfChangeType::remove_node;
        }
        change.node_id = arg_id(args, 2);
        print_error(node(arg_id(args, 0)).raw->propose_conf_change(change));
    }
    void tick_election(NodeId id) {
        RawNode& raw = *node(id).raw;
        const Role before = raw.status().role;
        const std::uint32_t ticks = node(id).options.election_ticks;
        const std::uint32_t limit = before == Role::leader ? ticks : 2 * ticks;
        for (std::uint32_t i = 0; i < limit; ++i) {
            raw.tick();
            if (raw.status().role != before) {
                break;
            }
        }
    }
    void partition(const std::vector<std::string>& args) {
        groups_.clear();
        int group = 0;
        for (const std::string& a : args) {
            if (a == "|") {
                group += 1;
            } else {
                groups_[NodeId{std::stoull(a)}] = group;
            }
        }
        out_ << "partitioned";
        for (const std::string& a : args) {
            out_ << " " << a;
        }
        out_ << "\n";
    }
    bool is_connected(NodeId a, NodeId b) const {
        auto ga = groups_.find(a);
        auto gb = groups_.find(b);
        const int group_a = ga == groups_.end() ? -1 : ga->second;
        const int group_b = gb == groups_.end() ? -1 : gb->second;
        return group_a == group_b;
    }
    static std::string encode_state(const std::vector<std::string>& state) {
        std::string text;
        for (const std::string& s : state) {
            text += s + ",";
        }
        return text;
    }
    static std::vector<std::string> decode_state(const Bytes& data) {
        std::vector<std::string> state;
        std::string item;
        for (const Byte b : data) {
            if (b == ',') {
                state.push_back(item);
                item.clear();
            } else {
                item.push_back(static_cast<char>(b));
            }
        }
        return state;
    }
    void compact(NodeId id, LogIndex index) {
        Node& n = node(id);
        QUEEN_ASSERT(index == n.disk.applied, "compact at the applied index in scenarios");
        const std::string text = encode_state(n.disk.state);
        auto status = n.raw->compact(index, to_bytes(text));
        print_status(status);
        if (status) {
            n.disk.snapshot = n.raw->snapshot();
            for (const Entry& e : n.disk.entries) {
                if (n.source && e.index <= index) {
                    n.disk.retained.push_back(e);
                }
            }
            std::erase_if(n.disk.entries, [&](const Entry& e) { return e.index <= index; });
        }
    }
    // Persists, sends and applies one Ready of node `id`; false when it had none.
    bool process_ready(NodeId id) {
        Node& n = nodes_.at(id);
        if (!n.raw.has_value() || !n.raw->has_ready()) {
            return false;
        }
        Ready rd = n.raw->ready();
        if (rd.snapshot.has_value()) {
            n.disk.snapshot = *rd.snapshot;
            n.disk.entries.clear();
            n.disk.retained.clear();
            n.disk.state = decode_state(rd.snapshot->data);
            n.disk.applied = rd.snapshot->meta.index;
        }
        if (!rd.entries.empty()) {
            const LogIndex first = rd.entries.front().index;
            std::erase_if(n.disk.entries, [&](const Entry& e) { return e.index >= first; });
            n.disk.entries.insert(n.disk.entries.end(), rd.entries.begin(), rd.entries.end());
        }
        if (rd.hard_state.has_value()) {
            n.disk.hard_state = *rd.hard_state;
        }
        for (Message& m : rd.messages) {
            route(std::move(m));
        }
        for (Message& m : rd.messages_after_persist) {
            route(std::move(m));
        }
        for (const Entry& e : rd.committed_entries) {
            if (e.type == EntryType::normal && !e.data.empty()) {
                n.disk.state.emplace_back(as_chars(e.data));
            }
            n.disk.applied = e.index;
        }
        for (const ReadState& rs : rd.read_states) {
            out_ << "read_state node=" << id << " index=" << rs.index
                 << " ctx=" << as_chars(rs.context) << "\n";
        }
        n.raw->advance();
        return true;
    }
    void route(Message m) {
        if (!is_connected(m.from, m.to)) {
            return;
        }
        auto target = nodes_.find(m.to);
        if (target == nodes_.end() || !target->second.raw.has_value()) {
            return;
        }
        // Every message crosses the codec, as it would on the wire.
        Bytes wire;
        encode_message(m, wire);
        auto decoded = decode_message(wire);
        QUEEN_ASSERT(decoded.has_value() && decoded.value() == m, "codec round trip");
        inbox_.push_back(std::move(decoded).value());
    }
    void stabilize() {
        for (int round = 0; round < 1000; ++round) {
            bool any = false;
            for (auto& [id, n] : nodes_) {
                while (process_ready(id)) {
                    any = true;
                }
            }
            std::deque<Message> batch;
            batch.swap(inbox_);
            for (Message& m : batch) {
                any = true;
                auto target = nodes_.find(m.to);
                if (target == nodes_.end() || !target->second.raw.has_value()) {
                    continue;
                }
                out_ << describe(m) << "\n";
                target->second.raw->step(m);
            }
            if (!any) {
                return;
            }
        }
        out_ << "stabilize: did not settle\n";
    }
    void status(NodeId id) {
        Node& n = node(id);
        if (!n.raw.has_value()) {
            out_ << id << " crashed\n";
            return;
        }
        const NodeStatus s = n.raw->status();
        out_ << id << " " << role_name(s.role) << " term=" << s.hard_state.term
             << " vote=" << s.hard_state.vote << " leader=" << s.leader
             << " commit=" << s.hard_state.commit << " applied=" << s.applied
             << " first=" << s.first_index << " last=" << s.last_index
             << " snapshot=" << s.snapshot.index << " voters=" << ids_text(s.conf_state.voters)
             << " learners=" << ids_text(s.conf_state.learners)
             << (s.is_recovering ? " recovering" : "") << (s.is_quiescent ? " quiescent" : "")
             << "\n";
        for (const PeerProgress& p : n.raw->progress()) {
            out_ << "  peer " << p.id << " match=" << p.match << " next=" << p.next << " "
                 << p.state << (p.is_learner ? " learner" : "") << "\n";
        }
    }
    void raft_log(NodeId id) {
        auto s = node(id).raw->status();
        auto entries = node(id).raw->entries(s.first_index, s.last_index.next());
        if (entries->empty()) {
            out_ << "log is empty (snapshot " << s.snapshot.index << ")\n";
        }
        for (const Entry& e : entries.value()) {
            out_ << e.term << "/" << e.index << " "
                 << (e.type == EntryType::conf_change ? "conf" : "normal");
            if (e.type == EntryType::normal && !e.data.empty()) {
                out_ << " " << as_chars(e.data);
            }
            out_ << "\n";
        }
    }

    std::ostringstream out_;
    CaptureLogger logger_{out_};
    std::map<NodeId, Node> nodes_;
    std::map<NodeId, int> groups_;
    std::deque<Message> inbox_;
};

}  // namespace queen::raft::testing
