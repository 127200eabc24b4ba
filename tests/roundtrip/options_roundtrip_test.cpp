// tests/roundtrip/options_roundtrip_test.cpp — every queue option through the whole path: the
// client's configure request -> HTTP parse -> engine command codec -> apply into LMDB (queue
// record codec) -> result codec -> HTTP answer -> the client's reading of it; and back out of
// LMDB through GET /api/v1/resources/queues/:queue -> HTTP answer -> the client's reader.
// The broker side is the api module's test harness (its Router over a real Engine), the client
// side a real queen::client::Client talking to a recording server that replays those answers.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness.hpp"
#include "queen/client/client.hpp"
#include "queen/core/queue_options.hpp"
#include "queen/testing/catch.hpp"
#include "test_server.hpp"

namespace {

using queen::QueueOptions;

/// Every option away from its default, each to a different value (booleans flipped).
QueueOptions all_changed() {
    QueueOptions options;
    std::int64_t step = 0;
    queen::for_each_queue_option([&](const auto& option) {
        ++step;
        if constexpr (std::is_same_v<decltype(option.default_value), bool>) {
            options.*option.member = !option.default_value;
        } else {
            options.*option.member = option.default_value + 11 * step;
        }
    });
    return options;
}

/// The defaults with only option number `index` (table order) changed as in all_changed().
QueueOptions one_changed(std::size_t index) {
    const QueueOptions changed = all_changed();
    QueueOptions options;
    std::size_t at = 0;
    queen::for_each_queue_option([&](const auto& option) {
        if (at++ == index) {
            options.*option.member = changed.*option.member;
        }
    });
    return options;
}

/// Configures `queue` with `sent` through the client and the broker, checks the echo the client
/// reads, then reads the queue back out of LMDB and checks what the client reads of that.
void round_trip(queen::api::testing::Harness& broker, const std::string& queue,
                const QueueOptions& sent) {
    queen::client::testing::TestServer wire;
    queen::client::ClientOptions client_options;
    client_options.endpoint = queen::client::Endpoint{"127.0.0.1", wire.port()};
    client_options.retry_attempts = 0;
    queen::client::Client client{client_options};
    queen::client::ConfigureRequest request;
    request.queue = queue;
    request.options = sent;

    // 1. What the client sends (the wire answers a placeholder this time).
    wire.reply_always(queen::client::testing::json_reply(200, R"({"configured":true})"));
    REQUIRE(client.configure(request));
    const auto recorded = wire.last_request();
    CHECK(recorded.method == "POST");
    CHECK(recorded.target == "/api/v1/configure");
    CHECK(nlohmann::json::parse(recorded.body)["options"].size() == queen::queue_option_count);

    // 2. The broker: parse, engine command codec, apply (LMDB record), result codec, answer.
    const auto answer = broker.post_raw("/api/v1/configure", recorded.body);
    INFO("answer: " << answer.body);
    REQUIRE(answer.status == 200);

    // 3. The client reads the broker's answer (it sends the same request again).
    wire.reply_always(queen::client::testing::json_reply(answer.status, answer.body));
    auto configured = client.configure(request);
    REQUIRE(configured);
    CHECK(wire.last_request().body == recorded.body);
    CHECK(configured->is_configured);
    CHECK(configured->queue == queue);
    CHECK(configured->options == sent);

    // 4. Out of LMDB (the queue record codec), formatted, read by the client.
    const auto detail = broker.get("/api/v1/resources/queues/" + queue);
    REQUIRE(detail.status == 200);
    const nlohmann::json stored = detail.json()["options"];
    CHECK(stored.size() == queen::queue_option_count);
    auto read_back = queen::client::parse_queue_options(stored.dump());
    REQUIRE(read_back);
    CHECK(*read_back == sent);
}

}  // namespace

TEST_CASE("options: every queue option survives client -> HTTP -> engine -> LMDB -> client",
          "[options][roundtrip]") {
    queen::api::testing::Harness broker;
    SECTION("all defaults") {
        round_trip(broker, "defaults", QueueOptions{});
    }
    SECTION("every option changed") {
        REQUIRE_FALSE(all_changed() == QueueOptions{});
        round_trip(broker, "changed", all_changed());
    }
    SECTION("each option alone changed") {
        for (std::size_t i = 0; i < queen::queue_option_count; ++i) {
            INFO("option " << i);
            REQUIRE_FALSE(one_changed(i) == QueueOptions{});
            round_trip(broker, "one-" + std::to_string(i), one_changed(i));
        }
    }
}

TEST_CASE("options: a configure without options stores and shows the table's defaults",
          "[options][roundtrip]") {
    queen::api::testing::Harness broker;
    REQUIRE(broker.post_raw("/api/v1/configure", R"({"queue":"bare"})").status == 200);
    const auto detail = broker.get("/api/v1/resources/queues/bare");
    REQUIRE(detail.status == 200);
    auto options = queen::client::parse_queue_options(detail.json()["options"].dump());
    REQUIRE(options);
    CHECK(*options == QueueOptions{});
    CHECK(options->ttl_s == 0);
}
