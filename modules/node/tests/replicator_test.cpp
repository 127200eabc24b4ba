// modules/node/tests/replicator_test.cpp — a tenant's raft member over a real log and hard state
// file: committed entries come out once and in order, the hard state follows the log, and a
// restart that lost the hard state (or part of the log) loses nothing committed.
#include "replicator.hpp"

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <vector>

#include "entry.hpp"
#include "queen/log/hard_state.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace {

using queen::Bytes;
using queen::LogIndex;
using queen::NodeId;
using queen::Term;
using queen::node::detail::Replicator;
using queen::node::detail::ReplicatorEvents;
using queen::node::detail::ReplicatorStart;

/// Collects what a replicator hands over.
struct Sink {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<queen::raft::Entry> committed;
    std::vector<queen::Error> failures;

    ReplicatorEvents events() {
        ReplicatorEvents events;
        events.committed = [this](std::vector<queen::raft::Entry>& entries) {
            std::lock_guard lock(mutex);
            for (auto& entry : entries) {
                committed.push_back(std::move(entry));
            }
            changed.notify_all();
        };
        events.failed = [this](const queen::Error& error) {
            std::lock_guard lock(mutex);
            failures.push_back(error);
            changed.notify_all();
        };
        return events;
    }
    /// Waits until an entry at `index` or above was handed over.
    void wait_for(LogIndex index) {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] {
            return !failures.empty() || (!committed.empty() && committed.back().index >= index);
        });
    }
};

Bytes command_payload(std::uint8_t tag) {
    Bytes payload;
    queen::node::detail::encode_entry_header(payload, queen::TimestampMs{0});
    payload.push_back(tag);
    return payload;
}

ReplicatorStart alone(LogIndex applied = LogIndex{0}) {
    ReplicatorStart start;
    start.self = NodeId{1};
    start.conf_state.voters = {NodeId{1}};
    start.applied = applied;
    return start;
}

std::unique_ptr<queen::log::Log> open_log(const std::filesystem::path& dir) {
    auto log = queen::log::Log::open(dir, queen::log::Options{});
    REQUIRE(log.has_value());
    return std::move(*log);
}

/// A replicator of a group of this node alone, on `log`, reporting to `sink`.
std::unique_ptr<Replicator> open_alone(queen::log::Log& log, Sink& sink,
                                       LogIndex applied = LogIndex{0}) {
    auto replicator =
        Replicator::open(log, alone(applied), sink.events(), queen::SystemClock::instance(),
                         queen::NullLogger::instance());
    REQUIRE(replicator.has_value());
    return std::move(*replicator);
}

LogIndex propose(Replicator& replicator, std::uint8_t tag) {
    LogIndex index;
    Bytes payload = command_payload(tag);
    REQUIRE(replicator.propose(payload, [&](LogIndex at, Term) { index = at; }).has_value());
    return index;
}

}  // namespace

TEST_CASE("replicator: alone, proposals commit in order once durable, the term grows per start",
          "[node][replicator]") {
    queen::testing::TempDir dir;
    const auto log_dir = dir.path() / "log";
    LogIndex last;
    {
        auto log = open_log(log_dir);
        Sink sink;
        auto replicator = open_alone(*log, sink);
        for (std::uint8_t tag = 1; tag <= 20; ++tag) {
            last = propose(*replicator, tag);
        }
        sink.wait_for(last);
        replicator->stop();
        REQUIRE(sink.failures.empty());
        // The leader's no-op of term 1, then the 20 proposals, each once, in order, stamped.
        REQUIRE(sink.committed.size() == 21);
        CHECK(sink.committed.front().data.empty());
        std::int64_t previous = 0;
        for (std::size_t i = 0; i < sink.committed.size(); ++i) {
            CHECK(sink.committed[i].index == LogIndex{i + 1});
            if (i > 0) {
                auto view = queen::node::detail::decode_entry(sink.committed[i].data);
                REQUIRE(view.has_value());
                CHECK(view->command[0] == i);
                CHECK(view->timestamp.value() >= previous);
                previous = view->timestamp.value();
            }
        }
        // The hard state covers the log: term 1, this node's vote.
        auto saved = queen::log::read_hard_state(log_dir);
        REQUIRE(saved.has_value());
        REQUIRE(saved->has_value());
        CHECK((*saved)->term == Term{1});
        CHECK((*saved)->vote == NodeId{1});
        REQUIRE(log->close().has_value());
    }
    // A restart from a state that applied everything: a new term, nothing handed over again
    // but the new no-op.
    auto log = open_log(log_dir);
    Sink sink;
    auto replicator = open_alone(*log, sink, last);
    sink.wait_for(last.next());
    replicator->stop();
    REQUIRE(sink.committed.size() == 1);
    CHECK(sink.committed[0].index == last.next());
    CHECK(sink.committed[0].term == Term{2});
    CHECK(replicator->status().hard_state.term == Term{2});
    REQUIRE(log->close().has_value());
}

TEST_CASE(
    "replicator: a lost hard state is rebuilt from the log's newest term, nothing "
    "committed is lost",
    "[node][replicator]") {
    queen::testing::TempDir dir;
    const auto log_dir = dir.path() / "log";
    LogIndex last;
    for (int start = 0; start < 2; ++start) {  // two terms in the log
        auto log = open_log(log_dir);
        Sink sink;
        auto replicator = open_alone(*log, sink);
        last = propose(*replicator, 7);
        sink.wait_for(last);
        replicator->stop();
        REQUIRE(log->close().has_value());
    }
    // The hard state file is gone (a save that never reached the disk): the log says term 2.
    std::filesystem::remove(log_dir / queen::log::hard_state_file_name);
    auto log = open_log(log_dir);
    REQUIRE(log->last_term() == Term{2});
    Sink sink;
    auto replicator = open_alone(*log, sink);
    const LogIndex next = propose(*replicator, 8);
    sink.wait_for(next);
    replicator->stop();
    REQUIRE(sink.failures.empty());
    // Everything from index 1 is handed over again (applied was 0), then the new term's no-op
    // and the new proposal, each once and in order; the new term is above every term in the log.
    REQUIRE(sink.committed.size() == next.value());
    for (std::size_t i = 0; i < sink.committed.size(); ++i) {
        CHECK(sink.committed[i].index == LogIndex{i + 1});
    }
    CHECK(sink.committed.back().term == Term{3});
    CHECK(sink.committed[next.value() - 2].data.empty());  // the no-op of term 3
    REQUIRE(log->close().has_value());
}
