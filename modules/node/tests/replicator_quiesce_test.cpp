// modules/node/tests/replicator_quiesce_test.cpp — quiescence through the replicator: three
// members over real logs, their messages routed by the test (ticks driven by the test, no
// clock): an idle group goes quiet and then sends nothing, a proposal wakes it, a leader does
// not quiesce while a member's node is gone, and the followers of a quiet leader whose node is
// declared gone wake and elect a new leader.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "entry.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "replicator.hpp"

namespace {

using queen::Bytes;
using queen::LogIndex;
using queen::NodeId;
using queen::Term;
using queen::node::detail::Replicator;
using queen::node::detail::ReplicatorEvents;
using queen::node::detail::ReplicatorStart;

constexpr std::uint32_t election_ticks = 10;
constexpr std::uint32_t quiesce_ticks = 5;

/// Three members of one group; the test routes their messages and ticks them.
class Group {
public:
    Group() {
        for (std::size_t i = 0; i < members_.size(); ++i) {
            Member& m = members_[i];
            m.id = NodeId{i + 1};
            auto log = queen::log::Log::open(dir_.path() / std::to_string(i + 1) / "log",
                                             queen::log::Options{});
            REQUIRE(log.has_value());
            m.log = std::move(*log);
        }
        for (Member& m : members_) {
            ReplicatorStart start;
            start.self = m.id;
            start.conf_state.voters = {NodeId{1}, NodeId{2}, NodeId{3}};
            start.election_ticks = election_ticks;
            start.heartbeat_ticks = 1;
            start.quiesce_ticks = quiesce_ticks;
            ReplicatorEvents events;
            events.committed = [this, &m](std::vector<queen::raft::Entry>& entries) {
                std::lock_guard lock(mutex_);
                m.committed = entries.back().index;
                changed_.notify_all();
            };
            events.failed = [this](const queen::Error&) { failed_ = true; };
            events.send = [this](const queen::raft::Message& message) {
                std::lock_guard lock(mutex_);
                queue_.push_back(message);
                changed_.notify_all();
            };
            events.wake = [this, &m] {
                std::lock_guard lock(mutex_);
                woken_.insert(m.id.value());
                changed_.notify_all();
            };
            auto replicator =
                Replicator::open(*m.log, start, std::move(events), queen::SystemClock::instance(),
                                 queen::NullLogger::instance());
            REQUIRE(replicator.has_value());
            m.replicator = std::move(*replicator);
        }
    }
    ~Group() {
        CHECK_FALSE(failed_.load());
        for (Member& m : members_) {
            m.replicator->stop();
        }
        deliver();
        for (Member& m : members_) {
            m.replicator.reset();
            (void)m.log->close();
        }
    }

    Replicator& at(NodeId id) { return *members_[id.value() - 1].replicator; }
    /// Messages to or from a node that is down are lost.
    void set_down(NodeId id, bool is_down) {
        std::lock_guard lock(mutex_);
        members_[id.value() - 1].is_down = is_down;
    }
    [[nodiscard]] LogIndex committed(NodeId id) {
        std::lock_guard lock(mutex_);
        return members_[id.value() - 1].committed;
    }
    /// Messages every member sent since it opened.
    [[nodiscard]] std::uint64_t messages_sent() {
        std::uint64_t total = 0;
        for (Member& m : members_) {
            total += m.replicator->messages_sent();
        }
        return total;
    }

    /// Delivers the queued messages and runs the Readies left for another thread, until none
    /// is left (a log's durable append may queue more later: tick() waits briefly for it).
    void deliver() {
        for (;;) {
            std::deque<queen::raft::Message> messages;
            std::set<std::uint64_t> woken;
            {
                std::lock_guard lock(mutex_);
                messages.swap(queue_);
                woken.swap(woken_);
            }
            if (messages.empty() && woken.empty()) {
                return;
            }
            for (const std::uint64_t id : woken) {
                members_[id - 1].replicator->run_pending();
            }
            for (const queen::raft::Message& message : messages) {
                bool is_lost = false;
                {
                    std::lock_guard lock(mutex_);
                    is_lost = members_[message.from.value() - 1].is_down ||
                              members_[message.to.value() - 1].is_down;
                }
                if (!is_lost) {
                    members_[message.to.value() - 1].replicator->step(message);
                }
            }
        }
    }

    /// One tick of every member that is up (`gone`: the nodes its caller believes gone), then
    /// the messages it caused (and those of appends that become durable meanwhile).
    void tick(const std::vector<NodeId>& gone = {}) {
        deliver();
        for (Member& m : members_) {
            if (!is_down(m.id)) {
                m.replicator->tick(gone);
            }
        }
        deliver();
        // Appends become durable on the logs' writer threads, which then send or wake: a
        // short wait for that keeps the run close to one where the disk is instant (the
        // outcome does not depend on it: raft resends what is late).
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, std::chrono::milliseconds(2),
                          [&] { return !queue_.empty() || !woken_.empty(); });
    }

    /// Ticks until `done()` (at most `ticks_max` ticks); returns whether it came.
    template <typename Done>
    bool tick_until(Done done, int ticks_max = 2'000, const std::vector<NodeId>& gone = {}) {
        for (int t = 0; t < ticks_max; ++t) {
            deliver();
            if (done()) {
                return true;
            }
            tick(gone);
        }
        deliver();
        return done();
    }

    [[nodiscard]] NodeId leader_among(const std::vector<NodeId>& ids) {
        for (const NodeId id : ids) {
            const auto status = at(id).status();
            if (status.role == queen::raft::Role::leader) {
                bool agreed = true;
                for (const NodeId other : ids) {
                    agreed = agreed && at(other).leader() == id;
                }
                if (agreed) {
                    return id;
                }
            }
        }
        return NodeId{0};
    }

    [[nodiscard]] bool all_quiet() {
        return std::all_of(members_.begin(), members_.end(),
                           [](const Member& m) { return m.replicator->is_quiet(); });
    }

private:
    bool is_down(NodeId id) {
        std::lock_guard lock(mutex_);
        return members_[id.value() - 1].is_down;
    }

    struct Member {
        NodeId id;
        std::unique_ptr<queen::log::Log> log;
        std::unique_ptr<Replicator> replicator;
        LogIndex committed;
        bool is_down = false;
    };
    queen::testing::TempDir dir_;
    std::array<Member, 3> members_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<queen::raft::Message> queue_;
    std::set<std::uint64_t> woken_;
    std::atomic<bool> failed_{false};
};

const std::vector<NodeId> everyone = {NodeId{1}, NodeId{2}, NodeId{3}};

LogIndex propose(Replicator& replicator, std::uint8_t tag) {
    Bytes payload;
    queen::node::detail::encode_entry_header(payload, queen::TimestampMs{0});
    payload.push_back(tag);
    LogIndex index;
    REQUIRE(replicator.propose(payload, [&](LogIndex at, Term) { index = at; }).has_value());
    return index;
}

/// Elects a leader and lets the group go quiet; returns the leader.
NodeId quiet_group(Group& group) {
    NodeId leader;
    REQUIRE(group.tick_until([&] { return (leader = group.leader_among(everyone)) != NodeId{0}; }));
    REQUIRE(group.tick_until([&] { return group.all_quiet(); }));
    return leader;
}

}  // namespace

TEST_CASE("replicator quiescence: an idle group goes quiet, sends nothing, and a proposal wakes it",
          "[node][replicator][quiesce]") {
    Group group;
    const NodeId leader = quiet_group(group);
    CHECK(group.at(leader).status().is_quiescent);

    // Quiet: many election timeouts of ticks, no message, nobody campaigns.
    const std::uint64_t sent = group.messages_sent();
    const Term term = group.at(leader).status().hard_state.term;
    for (std::uint32_t t = 0; t < 5 * election_ticks; ++t) {
        group.tick();
    }
    CHECK(group.messages_sent() == sent);
    CHECK(group.all_quiet());
    CHECK(group.at(leader).status().hard_state.term == term);
    CHECK(group.leader_among(everyone) == leader);

    // A proposal wakes the leader; its append wakes the followers; everyone commits it; then
    // the group goes quiet again.
    const LogIndex index = propose(group.at(leader), 1);
    CHECK_FALSE(group.at(leader).is_quiet());
    REQUIRE(group.tick_until([&] {
        return std::all_of(everyone.begin(), everyone.end(),
                           [&](NodeId id) { return group.committed(id) >= index; });
    }));
    CHECK(group.messages_sent() > sent);
    REQUIRE(group.tick_until([&] { return group.all_quiet(); }));
    CHECK(group.leader_among(everyone) == leader);
    CHECK(group.at(leader).status().hard_state.term == term);
}

TEST_CASE("replicator quiescence: a leader does not quiesce while a member's node is gone",
          "[node][replicator][quiesce]") {
    Group group;
    NodeId leader;
    REQUIRE(group.tick_until([&] { return (leader = group.leader_among(everyone)) != NodeId{0}; }));
    const NodeId other = leader == NodeId{1} ? NodeId{2} : NodeId{1};
    // Every member up and caught up, but the caller believes `other`'s node gone: no quiet.
    for (std::uint32_t t = 0; t < 5 * election_ticks; ++t) {
        group.tick({other});
    }
    CHECK_FALSE(group.at(leader).is_quiet());
    // A node that is not a member of the group changes nothing.
    REQUIRE(group.tick_until([&] { return group.all_quiet(); }, 2'000, {NodeId{9}}));
    CHECK_FALSE(group.at(leader).wake_for(NodeId{9}));
    CHECK(group.all_quiet());
}

TEST_CASE(
    "replicator quiescence: the followers of a quiet leader whose node is gone wake and elect "
    "a new leader",
    "[node][replicator][quiesce]") {
    Group group;
    const NodeId old_leader = quiet_group(group);
    std::vector<NodeId> rest;
    for (const NodeId id : everyone) {
        if (id != old_leader) {
            rest.push_back(id);
        }
    }
    group.set_down(old_leader, true);
    // Without a wake-up the quiet followers never time out: the leader is silent on purpose.
    for (std::uint32_t t = 0; t < 5 * election_ticks; ++t) {
        group.tick();
    }
    CHECK(group.leader_among(rest) == NodeId{0});
    for (const NodeId id : rest) {
        CHECK(group.at(id).is_quiet());
        CHECK(group.at(id).leader() == old_leader);
    }

    // The node layer declares the leader's node gone: the followers wake and elect one of
    // them, which does not quiesce while the old leader's node is gone.
    for (const NodeId id : rest) {
        CHECK(group.at(id).wake_for(old_leader));
    }
    NodeId leader;
    REQUIRE(group.tick_until([&] { return (leader = group.leader_among(rest)) != NodeId{0}; },
                             2'000, {old_leader}));
    const LogIndex index = propose(group.at(leader), 2);
    REQUIRE(group.tick_until(
        [&] {
            return std::all_of(rest.begin(), rest.end(),
                               [&](NodeId id) { return group.committed(id) >= index; });
        },
        2'000, {old_leader}));
    for (std::uint32_t t = 0; t < 3 * election_ticks; ++t) {
        group.tick({old_leader});
    }
    CHECK_FALSE(group.at(leader).is_quiet());

    // The old leader's node returns: it learns the new term, and the whole group goes quiet.
    group.set_down(old_leader, false);
    REQUIRE(group.tick_until(
        [&] { return group.all_quiet() && group.committed(old_leader) >= index; }));
    CHECK(group.leader_among(everyone) == leader);
}
