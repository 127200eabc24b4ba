// client/tests/streams_e2e_test.cpp — hidden end-to-end checks of the StreamRunner against a
// running broker's /streams/v1 routes:
//   QUEEN_E2E_URL=http://127.0.0.1:6632 client_tests "[.streams-e2e]"
// (tests/integration/test_streams_client.py runs them). Queues and queries are named after the
// seed.
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "queen/client/client.hpp"
#include "queen/client/streams.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "test_helpers.hpp"

namespace {

using namespace queen::client;
using namespace std::chrono_literals;
using Json = nlohmann::json;

using queen::client::testing::connect_or_skip;

/// Names of this seed and case (each case registers its own queries).
std::string prefix(const std::string& test) {
    const auto seed = queen::testing::seed_from_env();
    UNSCOPED_INFO("seed=" << seed);
    return "s" + std::to_string(seed % 1'000'000'000) + "-" + test + "-";
}

void configure(Client& client, const std::string& queue, std::int64_t lease_time_s = 30) {
    ConfigureRequest request;
    request.queue = queue;
    request.options.lease_time_s = lease_time_s;
    REQUIRE(client.configure(request));
}

void push(Client& client, const std::string& queue, const std::string& partition,
          const std::vector<std::string>& payloads) {
    std::vector<PushItem> items;
    for (const auto& payload : payloads) {
        PushItem item;
        item.queue = queue;
        item.partition = partition;
        item.payload_json = payload;
        items.push_back(item);
    }
    auto pushed = client.push(items);
    REQUIRE(pushed);
    for (const auto& result : *pushed) {
        REQUIRE(result.status == PushStatus::queued);
    }
}

std::string event(const std::string& user, std::int64_t ts, double amount) {
    return Json{{"user", user}, {"ts", ts}, {"amount", amount}}.dump();
}

/// Every message of `queue` (queue mode, acked), as (partition, payload).
std::vector<std::pair<std::string, Json>> take_all(Client& client, const std::string& queue) {
    std::vector<std::pair<std::string, Json>> out;
    PopRequest pop;
    pop.queue = queue;
    pop.batch = 500;
    pop.partitions = 10;
    for (;;) {
        auto batch = client.pop(pop);
        REQUIRE(batch);
        if (batch->messages.empty()) {
            return out;
        }
        std::vector<Ack> acks;
        for (const auto& message : batch->messages) {
            out.emplace_back(message.partition, Json::parse(message.data_json));
            acks.push_back(Ack::of(message));
        }
        REQUIRE(client.ack_batch(acks, batch->consumer_group));
    }
}

using Totals = std::map<std::tuple<std::string, std::string, std::int64_t>, double>;

/// (partition, key, windowStart) -> value of the window results, each required once.
Totals totals_of(const std::vector<std::pair<std::string, Json>>& messages) {
    Totals totals;
    for (const auto& [partition, payload] : messages) {
        const auto id = std::make_tuple(partition, payload.at("key").get<std::string>(),
                                        payload.at("windowStart").get<std::int64_t>());
        REQUIRE_FALSE(totals.contains(id));
        totals[id] = payload.at("value").get<double>();
    }
    return totals;
}

StreamRunnerOptions quick() {
    StreamRunnerOptions options;
    options.pop_timeout_ms = 0;
    options.idle_flush_ms = 0;
    return options;
}

void drain(StreamRunner& runner) {
    for (int i = 0; i < 1'000; ++i) {
        auto stepped = runner.step();
        INFO((stepped ? std::string{} : stepped.error().message()));
        REQUIRE(stepped);
        if (*stepped == 0) {
            return;
        }
    }
    FAIL("the source never drained");
}

Stream sums(const std::string& p, WindowSpec spec) {
    return Stream::from(p + "events")
        .named(p + "totals")
        .key_by_field("user")
        .event_time_field("ts")
        .window(spec)
        .aggregate_field(Aggregation::sum(), "amount")
        .to_queue(p + "sums");
}

}  // namespace

TEST_CASE(
    "streams e2e: tumbling sums of two partitions, a runner thrown away and one that dies "
    "before its cycle, every result once",
    "[.streams-e2e][client]") {
    auto client = connect_or_skip();
    if (!client) {
        WARN("QUEEN_E2E_URL is not set: skipped");
        return;
    }
    const std::string p = prefix("once");
    configure(*client, p + "events", 1);  // a dead runner's lease runs out in 1 s
    configure(*client, p + "sums");
    Totals expected;
    for (const std::string partition : {"east", "west"}) {
        std::vector<std::string> payloads;
        for (int i = 0; i < 30; ++i) {
            const std::string user = i % 2 == 0 ? "ann" : "bob";
            const std::int64_t ts = i * 1'000;
            const double amount = partition == "east" ? i : 100 + i;
            payloads.push_back(event(user, ts, amount));
            expected[{partition, user, ts / 10'000 * 10'000}] += amount;
        }
        payloads.push_back(event("zed", 100'000, 0));  // closes the three windows
        push(*client, p + "events", partition, payloads);
    }
    auto options = quick();
    options.batch = 4;
    const auto spec = WindowSpec::tumbling(10s);
    {
        StreamRunner first{*client, sums(p, spec), options};
        for (int i = 0; i < 3; ++i) {
            REQUIRE(first.step());
        }
        CHECK(first.metrics().cycles >= 3);
    }
    {
        int outputs = 0;
        StreamRunner dying{*client, sums(p, spec).for_each([&](const StreamOutput&) {
                               if (++outputs == 1) {
                                   throw std::runtime_error("died before the cycle");
                               }
                           }),
                           options};
        queen::Result<std::size_t> stepped = std::size_t{0};
        for (int i = 0; i < 50 && stepped; ++i) {
            stepped = dying.step();
        }
        REQUIRE_FALSE(stepped);
        CHECK(stepped.error().is(Errc::rejected));
    }
    auto resume = options;
    resume.pop_timeout_ms = 3'000;  // the dead runner's batch comes back when its lease runs out
    StreamRunner last{*client, sums(p, spec), resume};
    std::vector<std::pair<std::string, Json>> results;
    for (int i = 0; i < 200 && results.size() < expected.size(); ++i) {
        REQUIRE(last.step());
        auto taken = take_all(*client, p + "sums");
        results.insert(results.end(), taken.begin(), taken.end());
    }
    CHECK(totals_of(results) == expected);
    CHECK(results.size() == expected.size());
    // The state holds each partition's open window of "zed", its watermark and name.
    for (const std::string partition : {"east", "west"}) {
        auto detail = client->get_queue(p + "events");
        REQUIRE(detail);
        std::string partition_id;
        for (const auto& entry : detail->partitions) {
            partition_id = entry.name == partition ? entry.id : partition_id;
        }
        auto rows = client->post_json(
            "/streams/v1/state/get",
            Json{{"query_id", last.query_id()}, {"partition_id", partition_id}}.dump());
        REQUIRE(rows);
        INFO(partition_id << " " << *rows);
        std::vector<std::string> keys;
        const Json answer = Json::parse(*rows);
        for (const auto& row : answer.at("rows")) {
            keys.push_back(row.at("key"));
        }
        CHECK(keys == std::vector<std::string>{"m", "p", "w:zed:100000"});
    }
}

TEST_CASE("streams e2e: late events as corrections, sessions, and the idle flush by the clock",
          "[.streams-e2e][client]") {
    auto client = connect_or_skip();
    if (!client) {
        WARN("QUEEN_E2E_URL is not set: skipped");
        return;
    }
    const std::string p = prefix("late");
    configure(*client, p + "events");
    push(*client, p + "events", "a",
         {event("k", 5'000, 1), event("k", 25'000, 1), event("k", 3'000, 10)});
    auto spec = WindowSpec::tumbling(10s);
    spec.late = LatePolicy::correction;
    auto options = quick();
    options.batch = 1;
    StreamRunner late{*client, sums(p, spec), options};
    drain(late);
    const auto corrected = take_all(*client, p + "sums");
    REQUIRE(corrected.size() == 2);
    CHECK(corrected[0].second.at("value") == 1.0);
    CHECK(corrected[0].second.at("correction") == false);
    CHECK(corrected[1].second.at("value") == 10.0);
    CHECK(corrected[1].second.at("correction") == true);

    // Sessions of 10 s over event times long past: the idle flush closes them by the clock.
    push(*client, p + "clicks", "a",
         {event("ann", 0, 1), event("ann", 4'000, 2), event("ann", 60'000, 4)});
    StreamRunner sessions{*client,
                          Stream::from(p + "clicks")
                              .key_by_field("user")
                              .event_time_field("ts")
                              .window(WindowSpec::session(10s))
                              .aggregate_field(Aggregation::sum(), "amount")
                              .to_queue(p + "sessions"),
                          quick()};
    drain(sessions);
    const auto before = take_all(*client, p + "sessions");
    REQUIRE(before.size() == 1);  // the later event closed the first session
    CHECK(before[0].second.at("windowEnd") == 14'000);
    CHECK(before[0].second.at("value") == 3.0);
    REQUIRE(sessions.flush_idle());
    const auto flushed = take_all(*client, p + "sessions");
    REQUIRE(flushed.size() == 1);
    CHECK(flushed[0].second.at("windowStart") == 60'000);
    CHECK(flushed[0].second.at("value") == 4.0);
    CHECK(sessions.metrics().idle_flush_cycles == 1);
}

TEST_CASE("streams e2e: a changed chain is a 409 unless reset, and the reset fences the old runner",
          "[.streams-e2e][client]") {
    auto client = connect_or_skip();
    if (!client) {
        WARN("QUEEN_E2E_URL is not set: skipped");
        return;
    }
    const std::string p = prefix("reset");
    configure(*client, p + "events");
    StreamRunner old_runner{*client, sums(p, WindowSpec::tumbling(10s)), quick()};
    auto registered = old_runner.start();
    REQUIRE(registered);
    CHECK(registered->is_fresh);
    StreamRunner changed{*client, sums(p, WindowSpec::tumbling(20s)), quick()};
    auto refused = changed.start();
    REQUIRE_FALSE(refused);
    CHECK(refused.error().is(Errc::conflict));
    CHECK_THAT(refused.error().message(), Catch::Contains("config_hash mismatch"));
    auto options = quick();
    options.is_reset = true;
    StreamRunner reset{*client, sums(p, WindowSpec::tumbling(20s)), options};
    auto wiped = reset.start();
    REQUIRE(wiped);
    CHECK(wiped->is_reset);
    CHECK(wiped->query_id == registered->query_id);
    push(*client, p + "events", "a", {event("k", 1'000, 1), event("k", 50'000, 1)});
    auto fenced = old_runner.step();
    REQUIRE_FALSE(fenced);
    CHECK(fenced.error().is(Errc::conflict));
    CHECK(take_all(*client, p + "sums").empty());  // the refused cycle pushed nothing
}
