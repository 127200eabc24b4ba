// client/tests/streams_test.cpp — the StreamRunner (queen/client/streams.hpp) against the
// in-memory broker of streams_fake_broker.hpp: known totals of tumbling, sliding and session
// windows; late events dropped, corrected and sent to a side queue; the idle flush (processing
// and event time, and partitions only the admin route names); a runner thrown away, a cycle whose
// answer is lost, 503s and a throwing step, each resumed with every sink message exactly once;
// two partitions apart; the 409 of a changed chain and the fence of a reset; windowless chains.
#include "queen/client/streams.hpp"

#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "queen/testing/catch.hpp"
#include "streams_fake_broker.hpp"

namespace {

using namespace queen::client;
using namespace std::chrono_literals;
using testing::FakeStreamsBroker;
using Json = nlohmann::json;

ClientOptions options_of(const FakeStreamsBroker& broker) {
    ClientOptions options;
    options.endpoint = broker.endpoint();
    options.retry_attempts = 0;
    return options;
}

StreamRunnerOptions quick() {
    StreamRunnerOptions options;
    options.pop_timeout_ms = 0;
    options.idle_flush_ms = 0;
    options.retry_delay_ms = 1;
    return options;
}

std::string event(const std::string& user, std::int64_t ts, double amount) {
    return Json{{"user", user}, {"ts", ts}, {"amount", amount}}.dump();
}

/// step() until a pop brings nothing; every step must succeed.
void drain(StreamRunner& runner) {
    for (int i = 0; i < 1'000; ++i) {
        auto stepped = runner.step();
        REQUIRE(stepped);
        if (*stepped == 0) {
            return;
        }
    }
    FAIL("the source never drained");
}

/// One step() that must succeed: the messages it popped.
std::size_t stepped(StreamRunner& runner) {
    auto result = runner.step();
    REQUIRE(result);
    return *result;
}

/// The window results of a sink: (key, windowStart, windowEnd, is correction) -> value.
using Totals = std::map<std::tuple<std::string, std::int64_t, std::int64_t, bool>, double>;
Totals totals_of(const std::vector<testing::SinkMessage>& sink) {
    Totals totals;
    for (const auto& message : sink) {
        const Json payload = Json::parse(message.payload_json);
        const auto id = std::make_tuple(
            payload.at("key").get<std::string>(), payload.at("windowStart").get<std::int64_t>(),
            payload.at("windowEnd").get<std::int64_t>(), payload.at("correction").get<bool>());
        REQUIRE_FALSE(totals.contains(id));  // every window's result once
        totals[id] = payload.at("value").get<double>();
    }
    return totals;
}

Stream sum_per_user(WindowSpec spec) {
    return Stream::from("events")
        .named("totals")
        .key_by_field("user")
        .event_time_field("ts")
        .window(spec)
        .aggregate_field(Aggregation::sum(), "amount")
        .to_queue("sums");
}

}  // namespace

TEST_CASE("streams: a tumbling sum over known input gives known totals", "[client][streams]") {
    FakeStreamsBroker broker;
    Client client{options_of(broker)};
    for (const auto& [user, ts, amount] :
         std::vector<std::tuple<std::string, std::int64_t, double>>{{"a", 1'000, 5},
                                                                    {"b", 30'000, 2},
                                                                    {"a", 20'000, 7},
                                                                    {"a", 61'000, 1},
                                                                    {"a", 125'000, 0}}) {
        broker.push("events", "p1", event(user, ts, amount));
    }
    auto options = quick();
    options.batch = 2;  // three cycles
    StreamRunner runner{client, sum_per_user(WindowSpec::tumbling(60s)), options};
    drain(runner);
    CHECK(totals_of(broker.sink("sums")) == Totals{{{"a", 0, 60'000, false}, 12.0},
                                                   {{"b", 0, 60'000, false}, 2.0},
                                                   {{"a", 60'000, 120'000, false}, 1.0}});
    for (const auto& message : broker.sink("sums")) {
        CHECK(message.partition == "p1");  // the source partition's name
    }
    // The closed windows' rows went in their cycles; the open one, the watermark and the
    // partition's name stay.
    const auto rows = broker.rows("totals", "p1");
    CHECK(rows.size() == 3);
    CHECK(rows.contains("w:a:120000"));
    CHECK(Json::parse(rows.at("m")).at("watermark") == 125'000);
    CHECK(Json::parse(rows.at("p")).at("partition") == "p1");
    const auto metrics = runner.metrics();
    CHECK(metrics.cycles == 3);
    CHECK(metrics.messages == 5);
    CHECK(metrics.acked == 5);
    CHECK(metrics.emitted == 3);
    CHECK(metrics.cycles_failed == 0);
    CHECK(broker.pending("events", "streams.totals") == 0);
}

TEST_CASE("streams: sliding and session windows", "[client][streams]") {
    FakeStreamsBroker broker;
    Client client{options_of(broker)};
    SECTION("sliding 10 s every 5 s, count") {
        for (const std::int64_t ts : {1'000, 6'000, 12'000, 40'000}) {
            broker.push("events", "p1", event("k", ts, 1));
        }
        StreamRunner runner{client,
                            Stream::from("events")
                                .named("slide")
                                .key_by_field("user")
                                .event_time_field("ts")
                                .window(WindowSpec::sliding(10s, 5s))
                                .aggregate(Aggregation::count())
                                .to_queue("counts"),
                            quick()};
        drain(runner);
        CHECK(totals_of(broker.sink("counts")) == Totals{{{"k", -5'000, 5'000, false}, 1.0},
                                                         {{"k", 0, 10'000, false}, 2.0},
                                                         {{"k", 5'000, 15'000, false}, 2.0},
                                                         {{"k", 10'000, 20'000, false}, 1.0}});
    }
    SECTION("session with a 10 s gap, sum, events in single-message cycles") {
        for (const auto& [ts, amount] : std::vector<std::pair<std::int64_t, double>>{
                 {0, 1}, {5'000, 2}, {30'000, 4}, {35'000, 8}, {100'000, 0}}) {
            broker.push("events", "p1", event("k", ts, amount));
        }
        auto options = quick();
        options.batch = 1;
        StreamRunner runner{client, sum_per_user(WindowSpec::session(10s)), options};
        drain(runner);
        CHECK(totals_of(broker.sink("sums")) ==
              Totals{{{"k", 0, 15'000, false}, 3.0}, {{"k", 30'000, 45'000, false}, 12.0}});
        CHECK(runner.metrics().cycles == 5);
    }
}

TEST_CASE("streams: late events dropped, corrected or sent to a side queue", "[client][streams]") {
    FakeStreamsBroker broker;
    Client client{options_of(broker)};
    // Window [0, 10 s) closes at the event of 25 s; the event of 3 s comes after it.
    for (const auto& [ts, amount] :
         std::vector<std::pair<std::int64_t, double>>{{5'000, 1}, {25'000, 1}, {3'000, 10}}) {
        broker.push("events", "p1", event("k", ts, amount));
    }
    auto spec = WindowSpec::tumbling(10s);
    auto options = quick();
    options.batch = 1;
    SECTION("drop") {
        StreamRunner runner{client, sum_per_user(spec), options};
        drain(runner);
        CHECK(totals_of(broker.sink("sums")) == Totals{{{"k", 0, 10'000, false}, 1.0}});
        CHECK(runner.metrics().dropped == 1);
    }
    SECTION("correction") {
        spec.late = LatePolicy::correction;
        StreamRunner runner{client, sum_per_user(spec), options};
        drain(runner);
        CHECK(totals_of(broker.sink("sums")) ==
              Totals{{{"k", 0, 10'000, false}, 1.0}, {{"k", 0, 10'000, true}, 10.0}});
        CHECK(runner.metrics().late == 1);
    }
    SECTION("side output to its own queue") {
        spec.late = LatePolicy::side_output;
        StreamRunner runner{client, sum_per_user(spec).late_to_queue("late"), options};
        drain(runner);
        CHECK(totals_of(broker.sink("sums")) == Totals{{{"k", 0, 10'000, false}, 1.0}});
        const auto late = broker.sink("late");
        REQUIRE(late.size() == 1);
        const Json payload = Json::parse(late[0].payload_json);
        CHECK(payload.at("late") == true);
        CHECK(payload.at("eventTime") == 3'000);
        CHECK(payload.at("value") == 10.0);
        CHECK(payload.at("watermark") == 25'000);
    }
    SECTION("allowed lateness keeps a window open for a late-arriving event") {
        spec.allowed_lateness_ms = 30'000;  // the watermark stays below 10 s: nothing is late
        StreamRunner runner{client, sum_per_user(spec), options};
        drain(runner);
        CHECK(broker.sink("sums").empty());
        broker.push("events", "p1", event("k", 45'000, 0));  // watermark 15 s: [0, 10 s) closes
        drain(runner);
        CHECK(totals_of(broker.sink("sums")) == Totals{{{"k", 0, 10'000, false}, 11.0}});
    }
}

TEST_CASE("streams: the idle flush closes quiet partitions' windows", "[client][streams]") {
    FakeStreamsBroker broker;
    Client client{options_of(broker)};
    queen::ManualClock clock;
    auto options = quick();
    options.idle_flush_ms = 1'000;
    SECTION("processing time: the clock closes the window, nothing closing sends nothing") {
        auto spec = WindowSpec::tumbling(10s);
        spec.time = WindowTime::processing;
        clock.advance_ms(10'000 - clock.wall_ms() % 10'000);  // at a window's start
        for (int i = 0; i < 3; ++i) {
            broker.push("events", "p1", event("k", 0, 1));
        }
        StreamRunner runner{client,
                            Stream::from("events")
                                .named("proc")
                                .window(spec)
                                .aggregate(Aggregation::count())
                                .to_queue("counts"),
                            options, clock};
        REQUIRE(stepped(runner) == 3);
        clock.advance_ms(5'000);
        REQUIRE(stepped(runner) == 0);  // a flush with nothing to close
        CHECK(runner.metrics().cycles == 1);
        CHECK(broker.sink("counts").empty());
        clock.advance_ms(5'000);
        // The flush cycle (no ack) is applied and its answer lost: the repeat is refused by the
        // "p" row's check, whose token is the one the lost cycle wrote, so the runner counts it
        // committed (a repeat that got through would find its push deduplicated).
        broker.lose_answers = 1;
        REQUIRE(stepped(runner) == 0);
        CHECK(broker.cycles_applied == 2);
        CHECK(broker.cycles_refused == 1);
        CHECK(runner.metrics().state_changes == 0);
        const auto sink = broker.sink("counts");
        REQUIRE(sink.size() == 1);
        const Json payload = Json::parse(sink[0].payload_json);
        CHECK(payload.at("key") == "p1");  // no key_by: the partition's name
        CHECK(payload.at("count") == 3);
        CHECK(runner.metrics().idle_flush_cycles == 1);
        CHECK(broker.rows("proc", "p1").count("m") == 1);
    }
    SECTION("event time, and a new process that knows the partition only from the admin route") {
        const std::int64_t now = clock.wall_ms();
        broker.push("events", "p1", event("a", now - 50'000, 4));
        broker.push("events", "p2", event("b", now - 50'000, 6));
        auto spec = WindowSpec::tumbling(60s);
        {
            StreamRunner runner{client, sum_per_user(spec), options, clock};
            drain(runner);
        }
        CHECK(broker.sink("sums").empty());
        clock.advance_ms(60'000);
        broker.has_admin_route = true;
        StreamRunner fresh{client, sum_per_user(spec), options, clock};
        REQUIRE(fresh.flush_idle());
        const auto sink = broker.sink("sums");
        REQUIRE(sink.size() == 2);
        std::map<std::string, double> by_partition;
        for (const auto& message : sink) {
            by_partition[message.partition] = Json::parse(message.payload_json).at("value");
        }
        CHECK(by_partition == std::map<std::string, double>{{"p1", 4.0}, {"p2", 6.0}});
        CHECK(fresh.metrics().restores == 2);
    }
}

TEST_CASE("streams: crashes, lost answers and 503s resume with every result exactly once",
          "[client][streams]") {
    FakeStreamsBroker broker;
    Client client{options_of(broker)};
    // 40 events of 3 users over 4 windows of 10 s, then one that closes them all.
    Totals expected;
    for (int i = 0; i < 40; ++i) {
        const std::string user = std::string(1, static_cast<char>('a' + i % 3));
        const std::int64_t ts = i * 1'000;
        broker.push("events", "p1", event(user, ts, i));
        expected[{user, ts / 10'000 * 10'000, ts / 10'000 * 10'000 + 10'000, false}] += i;
    }
    broker.push("events", "p1", event("z", 100'000, 0));
    auto options = quick();
    options.batch = 3;
    const auto spec = WindowSpec::tumbling(10s);
    SECTION("a runner thrown away after some cycles") {
        {
            StreamRunner first{client, sum_per_user(spec), options};
            for (int i = 0; i < 5; ++i) {
                REQUIRE(stepped(first) == 3);
            }
        }
        broker.expire_leases();
        StreamRunner second{client, sum_per_user(spec), options};
        drain(second);
        CHECK(second.metrics().restores == 1);
    }
    SECTION("a runner that dies between its window update and its cycle") {
        {
            int calls = 0;
            StreamRunner first{client, sum_per_user(spec).for_each([&](const StreamOutput&) {
                                   if (++calls == 2) {
                                       throw std::runtime_error("crash");
                                   }
                               }),
                               options};
            queen::Result<std::size_t> crashed = std::size_t{0};
            for (int i = 0; i < 20 && crashed; ++i) {
                crashed = first.step();
            }
            REQUIRE_FALSE(crashed);
            CHECK(crashed.error().is(Errc::rejected));
            CHECK(crashed.error().message().find("crash") != std::string::npos);
        }
        broker.expire_leases();  // the batch it held comes back
        StreamRunner second{client, sum_per_user(spec), options};
        drain(second);
    }
    SECTION("cycles whose answers are lost, and 503s") {
        StreamRunner runner{client, sum_per_user(spec), options};
        REQUIRE(runner.step());
        broker.lose_answers = 2;  // applied; the repeat is refused by its ack
        broker.fail_before = 2;   // then two 503s the runner retries
        drain(runner);
        const auto metrics = runner.metrics();
        CHECK(metrics.cycles_failed == 2);
        CHECK(metrics.retries >= 4);
        CHECK(metrics.restores == 3);
        CHECK(broker.cycles_refused == 2);
    }
    CHECK(totals_of(broker.sink("sums")) == expected);
    CHECK(broker.sink("sums").size() == expected.size());
    CHECK(broker.pending("events", "streams.totals") == 0);
}

TEST_CASE("streams: two partitions are windowed apart", "[client][streams]") {
    FakeStreamsBroker broker;
    Client client{options_of(broker)};
    broker.push("events", "p1", event("k", 1'000, 1));
    broker.push("events", "p2", event("k", 2'000, 100));
    broker.push("events", "p1", event("k", 15'000, 0));  // closes p1's window only
    StreamRunner runner{client, sum_per_user(WindowSpec::tumbling(10s)), quick()};
    REQUIRE(stepped(runner) == 3);  // one pop of both partitions, a cycle each
    CHECK(runner.metrics().cycles == 2);
    auto sink = broker.sink("sums");
    REQUIRE(sink.size() == 1);
    CHECK(sink[0].partition == "p1");
    CHECK(Json::parse(sink[0].payload_json).at("value") == 1.0);
    CHECK(broker.rows("totals", "p2").contains("w:k:0"));
    broker.push("events", "p2", event("k", 30'000, 0));
    drain(runner);
    sink = broker.sink("sums");
    REQUIRE(sink.size() == 2);
    CHECK(sink[1].partition == "p2");
    CHECK(Json::parse(sink[1].payload_json).at("value") == 100.0);
    // Different partitions' results of the same key and window are different messages.
    CHECK(sink[0].transaction_id != sink[1].transaction_id);
}

TEST_CASE("streams: a changed chain is a 409 unless reset, and a reset fences the old runner",
          "[client][streams]") {
    FakeStreamsBroker broker;
    Client client{options_of(broker)};
    const auto spec = WindowSpec::tumbling(10s);
    StreamRunner old_runner{client, sum_per_user(spec).version("1"), quick()};
    auto registered = old_runner.start();
    REQUIRE(registered);
    CHECK(registered->is_fresh);
    StreamRunner same{client, sum_per_user(spec).version("1"), quick()};
    auto again = same.start();
    REQUIRE(again);
    CHECK_FALSE(again->is_fresh);
    CHECK(again->query_id == registered->query_id);

    StreamRunner changed{client, sum_per_user(WindowSpec::tumbling(20s)).version("1"), quick()};
    auto refused = changed.start();
    REQUIRE_FALSE(refused);
    CHECK(refused.error().is(Errc::conflict));
    CHECK(refused.error().message().find("config_hash mismatch") != std::string::npos);

    auto options = quick();
    options.is_reset = true;
    StreamRunner reset{client, sum_per_user(spec).version("2"), options};
    auto wiped = reset.start();
    REQUIRE(wiped);
    CHECK(wiped->is_reset);
    broker.push("events", "p1", event("k", 1'000, 1));
    auto fenced = old_runner.step();
    REQUIRE_FALSE(fenced);
    CHECK(fenced.error().is(Errc::conflict));
    CHECK(broker.cycles_applied == 0);
}

TEST_CASE(
    "streams: after a clear the runner's cycle is refused, it registers again and goes "
    "on from empty state with new result ids",
    "[client][streams]") {
    FakeStreamsBroker broker;
    Client client{options_of(broker)};
    StreamRunner runner{client, sum_per_user(WindowSpec::tumbling(10s)), quick()};
    broker.push("events", "p1", event("k", 1'000, 1));
    broker.push("events", "p1", event("k", 12'000, 2));  // closes [0, 10 s): 1
    drain(runner);
    broker.clear("totals");
    // The open window [10 s, 20 s) held 2 in the runner's memory: it must not come back.
    broker.push("events", "p1", event("k", 13'000, 5));
    broker.push("events", "p1", event("k", 21'000, 0));  // closes [10 s, 20 s)
    CHECK(stepped(runner) == 2);                         // refused: another epoch
    CHECK(runner.metrics().epoch_changes == 1);
    CHECK(broker.cycles_refused == 1);
    broker.expire_leases();  // the refused cycle's ack released nothing
    drain(runner);
    const Totals totals = totals_of(broker.sink("sums"));
    CHECK(totals == Totals{{{"k", 0, 10'000, false}, 1}, {{"k", 10'000, 20'000, false}, 5}});
    CHECK(runner.metrics().epoch_changes == 1);
}

TEST_CASE(
    "streams: two runners of one query hand a partition back and forth without losing "
    "counts",
    "[client][streams]") {
    FakeStreamsBroker broker;
    Client client{options_of(broker)};
    const auto spec = WindowSpec::tumbling(10s);
    StreamRunner a{client, sum_per_user(spec), quick()};
    StreamRunner b{client, sum_per_user(spec), quick()};
    broker.push("events", "p1", event("k", 1'000, 1));
    CHECK(stepped(a) == 1);  // a holds [0, 10 s) = 1 in memory
    broker.push("events", "p1", event("k", 2'000, 2));
    CHECK(stepped(b) == 1);  // b reads the rows: 1 + 2
    broker.push("events", "p1", event("k", 3'000, 4));
    broker.push("events", "p1", event("k", 12'000, 0));  // closes [0, 10 s)
    // a's memory misses b's cycle: its cycle is refused by the "p" row's check, it restores the
    // partition and redoes the batch under the same lease.
    CHECK(stepped(a) == 2);
    CHECK(a.metrics().state_changes == 1);
    CHECK(broker.cycles_refused == 1);
    CHECK(totals_of(broker.sink("sums")) == Totals{{{"k", 0, 10'000, false}, 7}});
    CHECK(broker.pending("events", "streams.totals") == 0);
    // And back to b, whose memory misses a's cycle.
    broker.push("events", "p1", event("k", 25'000, 1));
    CHECK(stepped(b) == 1);
    CHECK(b.metrics().state_changes == 1);
    CHECK(totals_of(broker.sink("sums")) ==
          Totals{{{"k", 0, 10'000, false}, 7}, {{"k", 10'000, 20'000, false}, 0}});
}

TEST_CASE("streams: a windowless chain maps, filters and flat-maps into the sink once",
          "[client][streams]") {
    FakeStreamsBroker broker;
    Client client{options_of(broker)};
    for (int i = 0; i < 6; ++i) {
        broker.push("words", "p1", Json{{"n", i}, {"text", "a b"}}.dump());
    }
    std::vector<StreamOutput> seen;
    auto stream =
        Stream::from("words")
            .filter([](std::string_view e) { return Json::parse(e).at("n") != 3; })
            .flat_map([](std::string_view e) {
                const Json in = Json::parse(e);
                return std::vector<std::string>{Json{{"n", in.at("n")}, {"part", 0}}.dump(),
                                                Json{{"n", in.at("n")}, {"part", 1}}.dump()};
            })
            .map([](std::string_view e) {
                Json in = Json::parse(e);
                in["seen"] = true;
                return in.dump();
            })
            .to_queue("out")
            .for_each([&](const StreamOutput& output) { seen.push_back(output); },
                      CallbackDelivery::after_commit);
    auto options = quick();
    options.batch = 2;
    StreamRunner runner{client, stream, options};
    broker.lose_answers = 1;  // the first cycle's pushes are redone with the same ids
    drain(runner);
    const auto out = broker.sink("out");
    REQUIRE(out.size() == 10);
    std::vector<int> ns;
    for (const auto& message : out) {
        const Json payload = Json::parse(message.payload_json);
        CHECK(payload.at("seen") == true);
        ns.push_back(payload.at("n").get<int>() * 10 + payload.at("part").get<int>());
    }
    CHECK(ns == std::vector<int>{0, 1, 10, 11, 20, 21, 40, 41, 50, 51});
    // after_commit: the lost answer's outputs never reached the callback (at most once).
    CHECK(seen.size() == 6);
    CHECK(runner.metrics().cycles_failed == 1);
}

TEST_CASE("streams: config_hash follows the chain's structure, validate() names the problem",
          "[client][streams]") {
    const auto spec = WindowSpec::tumbling(10s);
    const auto hash = sum_per_user(spec).config_hash();
    CHECK(hash.size() == 16);
    CHECK(sum_per_user(spec).config_hash() == hash);
    CHECK(sum_per_user(spec).to_queue("elsewhere").config_hash() == hash);  // sinks are not
    CHECK(sum_per_user(spec).version("2").config_hash() != hash);
    CHECK(sum_per_user(WindowSpec::tumbling(20s)).config_hash() != hash);
    CHECK(sum_per_user(spec).aggregate_field(Aggregation::max(), "amount").config_hash() != hash);
    CHECK(sum_per_user(spec).key_by_field("other").config_hash() != hash);
    auto late = spec;
    late.late = LatePolicy::correction;
    CHECK(sum_per_user(late).config_hash() != hash);

    const auto refused = [](const Stream& stream, const std::string& words) {
        const auto status = stream.validate();
        REQUIRE_FALSE(status);
        CHECK(status.error().is(Errc::invalid_argument));
        CHECK_THAT(status.error().message(), Catch::Contains(words));
    };
    refused(Stream::from("events"), "sink");
    refused(Stream::from("").to_queue("x"), "source");
    refused(Stream::from("e").window(spec).aggregate(Aggregation::sum()).to_queue("x"), "value");
    refused(Stream::from("e").aggregate(Aggregation::count()).to_queue("x"), "window");
    refused(sum_per_user(spec).late_to_queue("late"), "side_output");
    auto processing = spec;
    processing.time = WindowTime::processing;
    refused(sum_per_user(processing), "event-time");
    refused(Stream::from("e").window(WindowSpec::tumbling(0ms)).to_queue("x"), "size");
    CHECK(sum_per_user(spec).validate());
}

TEST_CASE("streams: a throwing step stops the runner without a cycle, the batch comes back",
          "[client][streams]") {
    FakeStreamsBroker broker;
    Client client{options_of(broker)};
    broker.push("events", "p1", R"({"n":1})");
    StreamRunner failing{
        client,
        Stream::from("events")
            .named("q")
            .map([](std::string_view) -> std::string { throw std::runtime_error("bad event"); })
            .to_queue("out"),
        quick()};
    const auto stepped = failing.step();
    REQUIRE_FALSE(stepped);
    CHECK(stepped.error().is(Errc::rejected));
    CHECK_THAT(stepped.error().message(), Catch::Contains("map threw: bad event"));
    CHECK(broker.cycles_applied == 0);
    broker.expire_leases();
    auto options = quick();
    options.is_reset = true;  // the chain changed: a new hash
    StreamRunner fixed{client, Stream::from("events").named("q").to_queue("out"), options};
    drain(fixed);
    REQUIRE(broker.sink("out").size() == 1);
    CHECK(broker.sink("out")[0].payload_json == R"({"n":1})");
}

TEST_CASE(
    "streams: a NaN value or an event time out of range stops the runner, a time field "
    "out of range falls back to createdAt",
    "[client][streams]") {
    FakeStreamsBroker broker;
    Client client{options_of(broker)};
    broker.push("events", "p1", R"({"user":"k","ts":1e300,"amount":1})", 5'000);
    const auto spec = WindowSpec::tumbling(10s);
    StreamRunner nan{
        client,
        Stream::from("events")
            .named("q")
            .key_by_field("user")
            .window(spec)
            .aggregate(Aggregation::sum(), [](std::string_view) { return std::nan(""); })
            .to_queue("out"),
        quick()};
    auto refused = nan.step();
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message(), Catch::Contains("not a finite number"));
    broker.expire_leases();
    StreamRunner far{client,
                     Stream::from("events")
                         .named("q2")
                         .key_by_field("user")
                         .event_time([](std::string_view) { return INT64_MIN; })
                         .window(spec)
                         .aggregate_field(Aggregation::sum(), "amount")
                         .to_queue("out"),
                     quick()};
    refused = far.step();
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message(), Catch::Contains("outside the window engine"));
    CHECK(broker.cycles_applied == 0);
    broker.expire_leases();
    // ts 1e300 is not a time: the message's createdAt (5 s) puts it in [0, 10 s).
    StreamRunner fallback{client, sum_per_user(spec), quick()};
    drain(fallback);
    const auto rows = broker.rows("totals", "p1");
    CHECK(rows.contains("w:k:0"));
}

TEST_CASE("streams: run_for runs the loop and returns, run_until ends on a stop",
          "[client][streams]") {
    FakeStreamsBroker broker;
    Client client{options_of(broker)};
    broker.push("events", "p1", R"({"n":1})");
    auto options = quick();
    options.pop_timeout_ms = 10;
    StreamRunner runner{client, Stream::from("events").to_queue("out"), options};
    REQUIRE(runner.run_for(100ms));
    CHECK(broker.sink("out").size() == 1);
    CHECK(runner.metrics().pops >= 1);
    std::stop_source stop;
    stop.request_stop();
    REQUIRE(runner.run_until(stop.get_token()));  // returns at once
}
