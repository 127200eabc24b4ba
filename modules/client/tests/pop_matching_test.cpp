// client/tests/pop_matching_test.cpp — a pop (and a consumer) that names no queue pops a
// namespace and/or task through GET /api/v1/pop, as the official clients do; each message keeps
// the queue its answer names.
#include <nlohmann/json.hpp>

#include "queen/client/consumer.hpp"
#include "queen/client/errc.hpp"
#include "queen/client/protocol.hpp"
#include "queen/testing/catch.hpp"
#include "test_server.hpp"

namespace {

using nlohmann::json;
using namespace queen::client;
using queen::client::testing::json_reply;
using queen::client::testing::no_content_reply;
using queen::client::testing::RecordedRequest;
using queen::client::testing::TestServer;

TEST_CASE("client: a pop without a queue builds GET /api/v1/pop with its namespace and task",
          "[client][protocol][pop]") {
    PopRequest pop;
    pop.namespace_name = "billing";
    pop.task = "send mail";
    pop.batch = 5;
    pop.consumer_group = "g";
    pop.partitions = 3;
    OwnedRequest out;
    REQUIRE(build_pop(pop, 5'000, out));
    CHECK(out.method == "GET");
    CHECK(out.target ==
          "/api/v1/pop?namespace=billing&task=send%20mail&batch=5&wait=false&timeout=30000"
          "&consumerGroup=g&partitions=3");
    pop.task.clear();
    REQUIRE(build_pop(pop, 5'000, out));
    CHECK(out.target.starts_with("/api/v1/pop?namespace=billing&batch=5&"));
    pop.namespace_name.clear();
    pop.task = "t";
    REQUIRE(build_pop(pop, 5'000, out));
    CHECK(out.target.starts_with("/api/v1/pop?task=t&batch=5&"));
    // A queue wins: its route, and namespace/task are not sent.
    pop.queue = "q";
    REQUIRE(build_pop(pop, 5'000, out));
    CHECK(out.target.starts_with("/api/v1/pop/queue/q?batch=5&"));
    CHECK(out.target.find("task=") == std::string::npos);
    // Neither a queue nor a namespace or task; a partition without a queue.
    PopRequest nothing;
    const auto refused = build_pop(nothing, 5'000, out);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().is(Errc::invalid_argument));
    PopRequest partition_only;
    partition_only.task = "t";
    partition_only.partition = "p";
    REQUIRE_FALSE(build_pop(partition_only, 5'000, out));
}

TEST_CASE("client: each popped message names its own queue, else the answer's",
          "[client][protocol][pop]") {
    PopRequest pop;
    pop.namespace_name = "ns";
    const HttpRequest request{"GET", "/api/v1/pop?namespace=ns", "", false, true, 0};
    HttpResponse response;
    response.status = 200;
    response.body = json{
        {"success", true},
        {"queue", "ns.jobs"},
        {"partition", "Default"},
        {"partitionId", "pid"},
        {"leaseId", "L"},
        {"consumerGroup", "__QUEUE_MODE__"},
        {"messages",
         {{{"id", "m1"},
           {"transactionId", "t1"},
           {"data", 1},
           {"createdAt", "c"},
           {"partitionId", "pid"},
           {"partition", "Default"},
           {"leaseId", "L"},
           {"consumerGroup", "__QUEUE_MODE__"},
           {"queue", "ns.jobs"},
           {"retryCount", 0}},
          {{"id", "m2"}, {"transactionId", "t2"}, {"data", 2}}}},
        {"partitionsClaimed",
         1}}.dump();
    PopResult result;
    REQUIRE(read_pop_answer(request, response, pop, result));
    CHECK(result.queue == "ns.jobs");
    REQUIRE(result.messages.size() == 2);
    CHECK(result.messages[0].queue == "ns.jobs");
    CHECK(result.messages[0].retry_count == 0);
    CHECK(result.messages[1].queue == "ns.jobs");  // from the answer
    CHECK(result.messages[1].partition_id == "pid");
    // A 204 leaves no queue from an earlier answer.
    HttpResponse empty;
    empty.status = 204;
    REQUIRE(read_pop_answer(request, empty, pop, result));
    CHECK(result.messages.empty());
    CHECK(result.queue.empty());
}

TEST_CASE("client: a consumer that names no queue pops its namespace", "[client][consumer]") {
    TestServer server;
    std::atomic<int> pops{0};
    server.set_handler([&](const RecordedRequest& request) {
        if (request.target.starts_with("/api/v1/pop?")) {
            if (pops++ > 0) {
                return no_content_reply();
            }
            return json_reply(
                200,
                json{{"success", true},
                     {"queue", "work.a"},
                     {"partition", "Default"},
                     {"partitionId", "pid"},
                     {"leaseId", "L"},
                     {"consumerGroup", "__QUEUE_MODE__"},
                     {"messages", {{{"id", "m1"}, {"transactionId", "t1"}, {"data", {{"n", 1}}}}}}}
                    .dump());
        }
        if (request.target == "/api/v1/ack") {
            return json_reply(200, R"([{"index":0,"success":true,"dlq":false}])");
        }
        return json_reply(404, R"({"error":"no route"})");
    });
    ClientOptions options;
    options.endpoint = Endpoint{"127.0.0.1", server.port()};
    options.retry_attempts = 0;
    Client client{options};
    ConsumerOptions consume;
    consume.pop.namespace_name = "work";
    consume.pop.is_wait = false;
    consume.idle_backoff_ms = 1;
    consume.messages_max = 1;
    std::vector<std::string> queues;
    Consumer consumer{client, consume, [&](std::span<const Message> messages) {
                          for (const Message& m : messages) {
                              queues.push_back(m.queue);
                          }
                          return queen::Status{};
                      }};
    auto stats = consumer.run();
    REQUIRE(stats);
    CHECK(stats->messages == 1);
    CHECK(queues == std::vector<std::string>{"work.a"});
    const auto requests = server.requests();
    REQUIRE_FALSE(requests.empty());
    CHECK(requests[0].target.starts_with("/api/v1/pop?namespace=work&"));
}

}  // namespace
