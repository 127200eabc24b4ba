// modules/raft/tests/raw_node_test.cpp — the RawNode contract: what must be persisted before
// which messages, durability-based commit, proposals and conf changes on the leader only.
#include "queen/raft/raw_node.hpp"

#include "queen/raft/codec.hpp"
#include "queen/raft/errc.hpp"
#include "queen/testing/catch.hpp"

using namespace queen;
using namespace queen::raft;

namespace {

Options options_for(std::uint64_t id) {
    Options options;
    options.id = NodeId{id};
    return options;
}

RawNode open_node(std::uint64_t id, RestoreState state, Rng& rng) {
    auto node = RawNode::open(options_for(id), std::move(state), rng, NullLogger::instance());
    REQUIRE(node.has_value());
    return std::move(node).value();
}

void drain(RawNode& node) {
    while (node.has_ready()) {
        (void)node.ready();
        node.advance();
    }
}

}  // namespace

TEST_CASE("raft: options are validated", "[raft][options]") {
    Options options;
    CHECK_FALSE(options.validate().has_value());  // id 0
    options.id = NodeId{1};
    CHECK(options.validate().has_value());
    options.read_lease_based = true;
    options.check_quorum = false;
    CHECK(options.validate().error().is(queen::Errc::invalid_argument));
    options = options_for(1);
    options.heartbeat_ticks = options.election_ticks;
    CHECK_FALSE(options.validate().has_value());
}

TEST_CASE("raft: a single voter commits only after its own write is durable", "[raft][node]") {
    Rng rng(1);
    RawNode node = open_node(1, bootstrap_state({NodeId{1}}), rng);
    node.campaign();
    REQUIRE(node.status().role == Role::leader);
    Ready rd = node.ready();
    REQUIRE(rd.hard_state.has_value());
    CHECK(rd.hard_state->vote == NodeId{1});
    CHECK(rd.must_sync);
    REQUIRE(rd.entries.size() == 1);  // the no-op of the new term
    CHECK(rd.committed_entries.empty());
    const LogIndex noop = rd.entries.back().index;
    node.advance();
    CHECK(node.status().hard_state.commit == noop);

    auto index = node.propose(Bytes{42});
    REQUIRE(index.has_value());
    Ready second = node.ready();
    REQUIRE(second.entries.size() == 1);
    // The no-op, durable in the previous Ready, is now applied; the proposal is not committed.
    REQUIRE(second.committed_entries.size() == 1);
    CHECK(second.committed_entries[0].index == noop);
    node.advance();
    Ready third = node.ready();
    REQUIRE(third.committed_entries.size() == 1);
    CHECK(third.committed_entries[0].index == index.value());
    CHECK(third.committed_entries[0].data == Bytes{42});
    node.advance();
}

TEST_CASE("raft: votes and append responses wait for persistence, leader appends do not",
          "[raft][node]") {
    Rng rng(2);
    RawNode follower = open_node(2, bootstrap_state({NodeId{1}, NodeId{2}, NodeId{3}}), rng);
    Message vote;
    vote.type = MessageType::request_vote;
    vote.from = NodeId{1};
    vote.to = NodeId{2};
    vote.term = Term{2};
    vote.index = LogIndex{3};
    vote.log_term = Term{1};
    follower.step(vote);
    Ready rd = follower.ready();
    REQUIRE(rd.hard_state.has_value());
    CHECK(rd.hard_state->term == Term{2});
    CHECK(rd.hard_state->vote == NodeId{1});
    CHECK(rd.must_sync);
    CHECK(rd.messages.empty());
    REQUIRE(rd.messages_after_persist.size() == 1);
    CHECK(rd.messages_after_persist[0].type == MessageType::request_vote_response);
    CHECK_FALSE(rd.messages_after_persist[0].reject);
    follower.advance();

    // A second candidate in the same term is refused.
    vote.from = NodeId{3};
    follower.step(vote);
    Ready second = follower.ready();
    REQUIRE(second.messages_after_persist.size() == 1);
    CHECK(second.messages_after_persist[0].reject);
    follower.advance();

    // The leader of a 3-node group sends appends at once and commits on a durable quorum.
    Rng leader_rng(3);
    RawNode leader = open_node(1, bootstrap_state({NodeId{1}, NodeId{2}, NodeId{3}}), leader_rng);
    leader.campaign();
    Ready campaign = leader.ready();
    CHECK(campaign.messages.empty());
    CHECK(campaign.messages_after_persist.size() == 2);  // pre-votes
    leader.advance();
    for (std::uint64_t peer : {2u, 3u}) {
        Message grant;
        grant.type = MessageType::request_pre_vote_response;
        grant.from = NodeId{peer};
        grant.to = NodeId{1};
        grant.term = Term{2};
        leader.step(grant);
    }
    Ready votes = leader.ready();
    leader.advance();
    Message grant;
    grant.type = MessageType::request_vote_response;
    grant.from = NodeId{2};
    grant.to = NodeId{1};
    grant.term = Term{2};
    leader.step(grant);
    REQUIRE(leader.status().role == Role::leader);
    Ready appends = leader.ready();
    REQUIRE(appends.messages.size() == 2);
    CHECK(appends.messages[0].type == MessageType::append);
    const LogIndex noop = appends.entries.back().index;
    // A follower acknowledging before the leader's own write is durable commits (2 of 3).
    Message ack;
    ack.type = MessageType::append_response;
    ack.from = NodeId{2};
    ack.to = NodeId{1};
    ack.term = Term{2};
    ack.index = noop;
    leader.step(ack);
    CHECK(leader.status().hard_state.commit < noop);  // the leader itself is not durable yet
    leader.advance();
    CHECK(leader.status().hard_state.commit == noop);
}

TEST_CASE("raft: proposals and conf changes are refused where they cannot succeed",
          "[raft][node]") {
    Rng rng(4);
    RawNode follower = open_node(2, bootstrap_state({NodeId{1}, NodeId{2}}), rng);
    CHECK(follower.propose(Bytes{1}).error().is(raft::Errc::not_leader));
    CHECK(follower.read_index(Bytes{1}).error().is(raft::Errc::not_leader));

    Rng rng1(5);
    RawNode single = open_node(1, bootstrap_state({NodeId{1}}), rng1);
    single.campaign();
    drain(single);
    CHECK(single.propose_conf_change({ConfChangeType::add_voter, NodeId{1}})
              .error()
              .is(raft::Errc::invalid_conf_change));
    CHECK(single.propose_conf_change({ConfChangeType::remove_node, NodeId{1}})
              .error()
              .is(raft::Errc::invalid_conf_change));
    REQUIRE(single.propose_conf_change({ConfChangeType::add_learner, NodeId{2}}).has_value());
    CHECK(single.propose_conf_change({ConfChangeType::add_voter, NodeId{3}})
              .error()
              .is(raft::Errc::busy));
    drain(single);
    CHECK(single.status().conf_state.learners == std::vector<NodeId>{NodeId{2}});
    REQUIRE(single.propose_conf_change({ConfChangeType::add_voter, NodeId{2}}).has_value());
    drain(single);
    // The new voter has not acknowledged anything: nothing new commits without it.
    CHECK(single.status().conf_state.voters == std::vector<NodeId>{NodeId{1}, NodeId{2}});
    auto index = single.propose(Bytes{7});
    REQUIRE(index.has_value());
    drain(single);
    CHECK(single.status().hard_state.commit < index.value());
}

TEST_CASE("raft: compaction bounds and restart from durable state", "[raft][node]") {
    Rng rng(6);
    RestoreState boot = bootstrap_state({NodeId{1}});
    RawNode node = open_node(1, boot, rng);
    node.campaign();
    drain(node);
    REQUIRE(node.propose(Bytes{1}).has_value());
    drain(node);
    const NodeStatus status = node.status();
    CHECK(node.compact(status.applied.next(), Bytes{}).error().is(raft::Errc::unavailable));
    REQUIRE(node.compact(status.applied, Bytes{5}).has_value());
    CHECK(node.compact(status.applied, Bytes{}).error().is(raft::Errc::compacted));
    CHECK(node.term_at(LogIndex{1}).error().is(raft::Errc::compacted));
    CHECK(node.snapshot().meta.conf_state.voters == std::vector<NodeId>{NodeId{1}});

    RestoreState restored;
    restored.hard_state = status.hard_state;
    restored.snapshot = node.snapshot();
    restored.applied = status.applied;
    Rng rng2(7);
    RawNode again = open_node(1, restored, rng2);
    CHECK(again.status().hard_state.term == status.hard_state.term);
    CHECK(again.status().hard_state.vote == NodeId{1});
    CHECK(again.status().conf_state.voters == std::vector<NodeId>{NodeId{1}});
    CHECK(again.status().role == Role::follower);

    RestoreState gap;
    gap.entries.push_back(Entry{Term{1}, LogIndex{2}, EntryType::normal, {}});
    Rng rng3(8);
    CHECK(RawNode::open(options_for(1), gap, rng3, NullLogger::instance())
              .error()
              .is(queen::Errc::invalid_argument));
}

TEST_CASE("raft: reads wait for the leader's first commit, lease reads answer at once",
          "[raft][node][read]") {
    for (const bool lease : {false, true}) {
        INFO("lease=" << lease);
        Options options = options_for(1);
        options.read_lease_based = lease;
        Rng rng(9);
        auto opened = RawNode::open(options, bootstrap_state({NodeId{1}, NodeId{2}, NodeId{3}}),
                                    rng, NullLogger::instance());
        REQUIRE(opened.has_value());
        RawNode leader = std::move(opened).value();
        leader.campaign();
        (void)leader.ready();
        leader.advance();
        for (std::uint64_t peer : {2u, 3u}) {
            Message grant;
            grant.type = MessageType::request_pre_vote_response;
            grant.from = NodeId{peer};
            grant.to = NodeId{1};
            grant.term = Term{2};
            leader.step(grant);
        }
        (void)leader.ready();
        leader.advance();
        Message vote;
        vote.type = MessageType::request_vote_response;
        vote.from = NodeId{2};
        vote.to = NodeId{1};
        vote.term = Term{2};
        leader.step(vote);
        REQUIRE(leader.status().role == Role::leader);
        // No entry of term 2 is committed yet: the read must wait.
        REQUIRE(leader.read_index(Bytes{'r'}).has_value());
        Ready rd = leader.ready();
        CHECK(rd.read_states.empty());
        const LogIndex noop = rd.entries.back().index;
        leader.advance();
        Message ack;
        ack.type = MessageType::append_response;
        ack.from = NodeId{2};
        ack.to = NodeId{1};
        ack.term = Term{2};
        ack.index = noop;
        leader.step(ack);
        REQUIRE(leader.status().hard_state.commit == noop);
        Ready after_commit = leader.ready();
        leader.advance();
        if (lease) {
            REQUIRE(after_commit.read_states.size() == 1);
            CHECK(after_commit.read_states[0].index == noop);
            continue;
        }
        // ReadIndex: a heartbeat round carrying the context must be acknowledged by a quorum.
        CHECK(after_commit.read_states.empty());
        bool has_context_heartbeat = false;
        for (const Message& m : after_commit.messages) {
            has_context_heartbeat |= m.type == MessageType::heartbeat && m.context == Bytes{'r'};
        }
        CHECK(has_context_heartbeat);
        Message echo;
        echo.type = MessageType::heartbeat_response;
        echo.from = NodeId{3};
        echo.to = NodeId{1};
        echo.term = Term{2};
        echo.context = Bytes{'r'};
        leader.step(echo);
        Ready confirmed = leader.ready();
        REQUIRE(confirmed.read_states.size() == 1);
        CHECK(confirmed.read_states[0].index == noop);
        CHECK(confirmed.read_states[0].context == Bytes{'r'});
        leader.advance();
    }
}

TEST_CASE("raft: an idle single voter goes quiet, a proposal wakes it", "[raft][node]") {
    Rng rng(1);
    RawNode node = open_node(1, bootstrap_state({NodeId{1}}), rng);
    CHECK_FALSE(node.can_quiesce());  // a follower never may
    CHECK_FALSE(node.quiesce());
    node.wake();  // not quiet: nothing happens
    node.campaign();
    REQUIRE(node.status().role == Role::leader);
    CHECK_FALSE(node.can_quiesce());  // its no-op is neither durable nor committed yet
    (void)node.ready();
    CHECK_FALSE(node.can_quiesce());  // a Ready is outstanding
    node.advance();
    drain(node);
    REQUIRE(node.can_quiesce());
    REQUIRE(node.quiesce());
    CHECK(node.is_quiescent());
    CHECK(node.status().is_quiescent);
    CHECK_FALSE(node.can_quiesce());  // already quiet
    CHECK_FALSE(node.has_ready());    // no peer: nothing to send
    for (int i = 0; i < 100; ++i) {
        node.tick();
    }
    CHECK_FALSE(node.has_ready());
    CHECK(node.status().role == Role::leader);
    REQUIRE(node.propose(Bytes{1}).has_value());
    CHECK_FALSE(node.is_quiescent());
    drain(node);
    CHECK(node.can_quiesce());
}
