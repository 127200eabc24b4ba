// client/tests/consumer_test.cpp — the consume loop against a scripted broker: acks, nacks, each
// mode, server auto-ack, lease renewal, stop during a long poll, fatal errors.
#include "queen/client/consumer.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "queen/testing/catch.hpp"
#include "test_server.hpp"

namespace {

using nlohmann::json;
using namespace queen::client;
using queen::client::testing::json_reply;
using queen::client::testing::no_content_reply;
using queen::client::testing::RecordedRequest;
using queen::client::testing::Reply;
using queen::client::testing::TestServer;

// A broker that delivers `batches` (pop bodies) in order, then 204s; answers acks with success
// (dlq when `is_dlq`), and lease extends with success.
struct ScriptedBroker {
    std::vector<std::string> batches;
    bool is_dlq = false;
    std::atomic<std::size_t> next{0};

    Reply answer(const RecordedRequest& request) {
        if (request.target.starts_with("/api/v1/pop/")) {
            const std::size_t index = next++;
            return index < batches.size() ? json_reply(200, batches[index]) : no_content_reply();
        }
        if (request.target == "/api/v1/ack" || request.target == "/api/v1/ack/batch") {
            const json body = json::parse(request.body);
            const std::size_t count =
                body.contains("acknowledgments") ? body["acknowledgments"].size() : 1;
            json results = json::array();
            for (std::size_t i = 0; i < count; ++i) {
                results.push_back({{"index", i}, {"success", true}, {"dlq", is_dlq}});
            }
            return json_reply(200, results.dump());
        }
        if (request.target.find("/extend") != std::string::npos) {
            return json_reply(200, R"([{"index":0,"success":true,"expiresAt":"x"}])");
        }
        return json_reply(404, R"({"error":"no route"})");
    }
};

std::string batch_body(const std::string& lease, std::initializer_list<std::string> ids) {
    json messages = json::array();
    for (const auto& id : ids) {
        messages.push_back({{"id", "m-" + id},
                            {"transactionId", id},
                            {"partitionId", "pid"},
                            {"partition", "Default"},
                            {"data", {{"id", id}}},
                            {"leaseId", lease},
                            {"consumerGroup", "__QUEUE_MODE__"},
                            {"createdAt", "c"}});
    }
    return json{{"success", true},      {"queue", "q"},     {"partition", "Default"},
                {"partitionId", "pid"}, {"leaseId", lease}, {"consumerGroup", "__QUEUE_MODE__"},
                {"messages", messages}}
        .dump();
}

ClientOptions options_for(const TestServer& server) {
    ClientOptions options;
    options.endpoint = Endpoint{"127.0.0.1", server.port()};
    options.retry_attempts = 0;
    options.id_seed = 7;
    return options;
}

std::vector<json> ack_bodies(const TestServer& server) {
    std::vector<json> bodies;
    for (const auto& request : server.requests()) {
        if (request.target.starts_with("/api/v1/ack")) {
            bodies.push_back(json::parse(request.body));
        }
    }
    return bodies;
}

ConsumerOptions consumer_options(std::uint64_t messages_max) {
    ConsumerOptions options;
    options.pop.queue = "q";
    options.pop.batch = 10;
    options.pop.is_wait = false;
    options.idle_backoff_ms = 1;
    options.messages_max = messages_max;
    return options;
}

}  // namespace

TEST_CASE("client: consumer acks a handled batch as completed", "[client][consumer]") {
    TestServer server;
    ScriptedBroker broker;
    broker.batches = {batch_body("L1", {"a", "b"}), batch_body("L2", {"c"})};
    server.set_handler([&](const RecordedRequest& r) { return broker.answer(r); });
    Client client{options_for(server)};
    std::vector<std::string> seen;
    Consumer consumer{client, consumer_options(3), [&](std::span<const Message> messages) {
                          for (const auto& m : messages) {
                              seen.push_back(json::parse(m.data_json)["id"]);
                          }
                          return queen::Status{};
                      }};
    auto stats = consumer.run();
    REQUIRE(stats);
    CHECK(seen == std::vector<std::string>{"a", "b", "c"});
    CHECK(stats->messages == 3);
    CHECK(stats->messages_failed == 0);
    CHECK(stats->pops == 2);
    const auto acks = ack_bodies(server);
    REQUIRE(acks.size() == 2);
    REQUIRE(acks[0]["acknowledgments"].size() == 2);
    CHECK(acks[0]["acknowledgments"][0]["transactionId"] == "a");
    CHECK(acks[0]["acknowledgments"][0]["status"] == "completed");
    CHECK(acks[0]["acknowledgments"][0]["leaseId"] == "L1");
    CHECK(acks[0]["consumerGroup"] == "__QUEUE_MODE__");
    CHECK(acks[1]["transactionId"] == "c");  // a single message uses /api/v1/ack
    CHECK(acks[1]["leaseId"] == "L2");
}

TEST_CASE("client: consumer nacks a failed batch with the handler's error", "[client][consumer]") {
    TestServer server;
    ScriptedBroker broker;
    broker.batches = {batch_body("L1", {"a", "b"})};
    server.set_handler([&](const RecordedRequest& r) { return broker.answer(r); });
    Client client{options_for(server)};
    SECTION("an Error") {
        Consumer consumer{client, consumer_options(2), [](std::span<const Message>) {
                              return queen::Status{queen::Error{queen::Errc::internal, "db down"}};
                          }};
        auto stats = consumer.run();
        REQUIRE(stats);
        CHECK(stats->messages_failed == 2);
    }
    SECTION("an exception") {
        Consumer consumer{
            client, consumer_options(2),
            [](std::span<const Message>) -> queen::Status { throw std::runtime_error("db down"); }};
        REQUIRE(consumer.run());
    }
    const auto acks = ack_bodies(server);
    REQUIRE(acks.size() == 1);
    for (const auto& ack : acks[0]["acknowledgments"]) {
        CHECK(ack["status"] == "failed");
        CHECK(ack["error"].get<std::string>().find("db down") != std::string::npos);
    }
}

TEST_CASE("client: consumer in each mode acks one by one and leaves the rest after a retry",
          "[client][consumer]") {
    TestServer server;
    ScriptedBroker broker;
    broker.batches = {batch_body("L1", {"a", "b", "c"})};
    server.set_handler([&](const RecordedRequest& r) { return broker.answer(r); });
    Client client{options_for(server)};
    std::vector<std::string> handled;
    ConsumerOptions options = consumer_options(0);
    options.is_each = true;
    Consumer consumer{client, options, [&](std::span<const Message> messages) {
                          REQUIRE(messages.size() == 1);
                          handled.push_back(messages[0].transaction_id);
                          if (messages[0].transaction_id == "b") {
                              return queen::Status{queen::Error{queen::Errc::internal, "bad b"}};
                          }
                          return queen::Status{};
                      }};
    std::thread stopper([&] {
        // After the batch, the next pops are empty: stop once one of them was seen.
        server.wait_until([](const std::vector<RecordedRequest>& requests) {
            int pops = 0;
            for (const auto& r : requests) {
                pops += r.target.starts_with("/api/v1/pop/") ? 1 : 0;
            }
            return pops >= 2;
        });
        consumer.stop();
    });
    auto stats = consumer.run();
    stopper.join();
    REQUIRE(stats);
    // "c" is not handled: the failed ack of "b" released the lease, the server redelivers it.
    CHECK(handled == std::vector<std::string>{"a", "b"});
    const auto acks = ack_bodies(server);
    REQUIRE(acks.size() == 2);
    CHECK(acks[0]["transactionId"] == "a");
    CHECK(acks[0]["status"] == "completed");
    CHECK(acks[1]["transactionId"] == "b");
    CHECK(acks[1]["status"] == "failed");
    CHECK(acks[1]["error"] == "bad b");
}

TEST_CASE("client: consumer sends no acks when the server auto-acked", "[client][consumer]") {
    TestServer server;
    ScriptedBroker broker;
    broker.batches = {batch_body("", {"a"})};
    server.set_handler([&](const RecordedRequest& r) { return broker.answer(r); });
    Client client{options_for(server)};
    ConsumerOptions options = consumer_options(1);
    options.pop.is_auto_ack = true;
    Consumer consumer{client, options, [](std::span<const Message>) { return queen::Status{}; }};
    REQUIRE(consumer.run());
    CHECK(ack_bodies(server).empty());
    CHECK(server.requests().front().target.find("autoAck=true") != std::string::npos);
}

TEST_CASE("client: consumer renews the lease while a long handler runs", "[client][consumer]") {
    TestServer server;
    ScriptedBroker broker;
    broker.batches = {batch_body("L-long", {"a"})};
    server.set_handler([&](const RecordedRequest& r) { return broker.answer(r); });
    Client client{options_for(server)};
    ConsumerOptions options = consumer_options(1);
    options.renew_lease_interval_ms = 1;
    options.renew_lease_seconds = 30;
    Consumer consumer{client, options, [&](std::span<const Message>) {
                          // Hold the batch until two renewals reached the server.
                          server.wait_until([](const std::vector<RecordedRequest>& requests) {
                              int extends = 0;
                              for (const auto& r : requests) {
                                  extends += r.target == "/api/v1/lease/L-long/extend" ? 1 : 0;
                              }
                              return extends >= 2;
                          });
                          return queen::Status{};
                      }};
    auto stats = consumer.run();
    REQUIRE(stats);
    CHECK(stats->lease_renewals >= 2);
    for (const auto& request : server.requests()) {
        if (request.target.find("/extend") != std::string::npos) {
            CHECK(json::parse(request.body) == json{{"seconds", 30}});
        }
    }
}

TEST_CASE("client: consumer stop() ends a parked long poll", "[client][consumer]") {
    TestServer server;
    server.reply_always(Reply{"", false, true});  // pops never answer
    Client client{options_for(server)};
    ConsumerOptions options = consumer_options(0);
    options.pop.is_wait = true;
    options.pop.timeout_ms = 30'000;
    Consumer consumer{client, options, [](std::span<const Message>) { return queen::Status{}; }};
    std::thread stopper([&] {
        server.wait_for_requests(1);
        consumer.stop();
    });
    auto stats = consumer.run();
    stopper.join();
    REQUIRE(stats);
    CHECK(stats->pops == 0);
    CHECK(server.requests().front().target ==
          "/api/v1/pop/queue/q?batch=10&wait=true&timeout=30000");
}

TEST_CASE("client: consumer ends with the error of a non-retryable pop failure",
          "[client][consumer]") {
    TestServer server;
    server.reply_always(json_reply(400, R"({"error":"bad queue"})"));
    Client client{options_for(server)};
    Consumer consumer{client, consumer_options(0),
                      [](std::span<const Message>) { return queen::Status{}; }};
    auto stats = consumer.run();
    REQUIRE_FALSE(stats);
    CHECK(http_status_of(stats.error()) == 400);
    CHECK(stats.error().context.find("bad queue") != std::string::npos);
}

TEST_CASE("client: consumer does not spin on a server that answers long polls at once",
          "[client][consumer]") {
    TestServer server;
    server.reply_always(no_content_reply());  // e.g. pop maintenance: 204 without waiting
    Client client{options_for(server)};
    ConsumerOptions options = consumer_options(0);
    options.pop.is_wait = true;
    options.idle_backoff_ms = 3'600'000;  // only stop() can end this pause
    Consumer consumer{client, options, [](std::span<const Message>) { return queen::Status{}; }};
    std::thread stopper([&] {
        server.wait_for_requests(2);
        // Let the consumer take in the second answer, then it must be pausing, not polling.
        while (consumer.stats().empty_pops < 2) {
            std::this_thread::yield();
        }
        consumer.stop();
    });
    auto stats = consumer.run();
    stopper.join();
    REQUIRE(stats);
    // The first empty long poll is retried at once, the second one pauses until stop().
    CHECK(stats->empty_pops == 2);
    CHECK(server.requests().size() == 2);
}
