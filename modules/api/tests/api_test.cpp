// api/tests/api_test.cpp — every endpoint through the Router over a real engine: shapes and
// statuses of the spec, bad input answered 4xx with nothing submitted, long polls, encryption.
#include <set>

#include "harness.hpp"
#include "queen/queues/queries.hpp"

namespace queen::api::testing {
namespace {

using http::Method;
using nlohmann::json;

const char* const key_hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

json configure_body(std::string_view queue, json options) {
    return {{"queue", queue}, {"namespace", nullptr}, {"task", nullptr}, {"options", options}};
}

// Pops with the given query and checks 200; returns the body.
json pop_ok(Harness& h, std::string_view target) {
    const Reply reply = h.get(target);
    INFO(target << " -> " << reply.status << " " << reply.body);
    REQUIRE(reply.status == 200);
    return reply.json();
}

void require_empty_pop(Harness& h, std::string_view target) {
    const Reply reply = h.get(target);
    INFO(target << " -> " << reply.body);
    REQUIRE(reply.status == 204);
    REQUIRE(reply.body.empty());
}

json ack(Harness& h, const json& message, std::string_view status, json extra = json::object()) {
    json body = {{"transactionId", message["transactionId"]},
                 {"partitionId", message["partitionId"]},
                 {"status", status},
                 {"leaseId", message["leaseId"]}};
    for (auto& [key, value] : extra.items()) {
        body[key] = value;
    }
    const Reply reply = h.post("/api/v1/ack", body);
    REQUIRE(reply.status == 200);
    const json result = reply.json();
    REQUIRE(result.is_array());
    REQUIRE(result.size() == 1);
    return result[0];
}

TEST_CASE("api: configure echoes all 15 options with their types", "[api][configure]") {
    Harness h;
    const json options = {{"leaseTime", 30},
                          {"retryLimit", 2},
                          {"retryDelay", 500},
                          {"maxSize", 1000},
                          {"ttl", 7200},
                          {"priority", 5},
                          {"deadLetterQueue", true},
                          {"dlqAfterMaxRetries", true},
                          {"delayedProcessing", 0},
                          {"windowBuffer", 0},
                          {"retentionSeconds", 60},
                          {"completedRetentionSeconds", 30},
                          {"retentionEnabled", true},
                          {"encryptionEnabled", false},
                          {"maxWaitTimeSeconds", 90}};
    const Reply reply = h.post(
        "/api/v1/configure",
        {{"queue", "orders"}, {"namespace", "shop"}, {"task", "billing"}, {"options", options}});
    REQUIRE(reply.status == 200);
    const json body = reply.json();
    CHECK(body["configured"] == true);
    CHECK(body["queue"] == "orders");
    CHECK(body["namespace"] == "shop");
    CHECK(body["task"] == "billing");
    CHECK(body["queueId"].is_string());
    CHECK(body["partitionId"].get<std::string>().size() == 36);
    REQUIRE(body["options"].size() == 15);
    for (auto& [key, value] : options.items()) {
        INFO(key);
        CHECK(body["options"][key] == value);
        CHECK(body["options"][key].is_boolean() == value.is_boolean());
        CHECK(body["options"][key].is_number_integer() == value.is_number_integer());
    }

    SECTION("configure is a full overwrite: missing options take their defaults") {
        const json again = h.post("/api/v1/configure", {{"queue", "orders"}}).json();
        CHECK(again["options"]["leaseTime"] == 300);
        CHECK(again["options"]["retryLimit"] == 3);
        CHECK(again["options"]["retentionEnabled"] == false);
        CHECK(again["namespace"] == "");
    }
    SECTION("the queue is listed with its Default partition") {
        const json detail = h.get("/api/v1/resources/queues/orders").json();
        CHECK(detail["name"] == "orders");
        REQUIRE(detail["partitions"].size() == 1);
        CHECK(detail["partitions"][0]["name"] == "Default");
        CHECK(detail["partitions"][0]["id"] == body["partitionId"]);
    }
}

TEST_CASE("api: configure rejects bad input with 400 and submits nothing", "[api][configure]") {
    Harness h;
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "Empty request body"},
        {"{", "Invalid JSON"},
        {"[]", "queue is required"},
        {R"({"queue": 5})", "queue is required"},
        {R"({"options": {}})", "queue is required"},
        {R"({"queue": "q", "options": 3})", "options must be an object"},
        {R"({"queue": "q", "options": {"leaseTime": "300"}})", "leaseTime must be an integer"},
        {R"({"queue": "q", "options": {"leaseTime": 1.5}})", "leaseTime must be an integer"},
        {R"({"queue": "q", "options": {"retryLimit": -1}})", "retryLimit must be between"},
        {R"({"queue": "q", "options": {"ttl": 1e300}})", "ttl must be an integer"},
        {R"({"queue": "q", "options": {"encryptionEnabled": "yes"}})",
         "encryptionEnabled must be a boolean"},
        {"{\"queue\": \"" + std::string(300, 'x') + "\"}", "longer than 256 bytes"},
    };
    for (const auto& [body, message] : cases) {
        INFO(body);
        const Reply reply = h.post_raw("/api/v1/configure", body);
        CHECK(reply.status == 400);
        CHECK_THAT(reply.json()["error"].get<std::string>(), Catch::Contains(message));
    }
    CHECK(h.backend.submitted() == 0);
    SECTION("a JavaScript-style 300.0 is an integer") {
        const Reply reply =
            h.post_raw("/api/v1/configure", R"({"queue": "q", "options": {"leaseTime": 300.0}})");
        REQUIRE(reply.status == 200);
        CHECK(reply.json()["options"]["leaseTime"] == 300);
    }
}

TEST_CASE("api: push answers the spec shape with snake_case ids and dedupes", "[api][push]") {
    Harness h;
    const Reply first = h.post(
        "/api/v1/push",
        {{"items",
          {{{"queue", "q"}, {"partition", "p1"}, {"payload", {{"n", 1}}}, {"transactionId", "a"}},
           {{"queue", "q"},
            {"payload", "text"},
            {"traceId", "0b9e4c1a-6b1f-4c5e-9d3a-1f2e3d4c5b6a"}},
           {{"queue", "q"}, {"partition", "p1"}, {"payload", 2}, {"transactionId", "a"}}}}});
    REQUIRE(first.status == 201);
    const json results = first.json();
    REQUIRE(results.size() == 3);
    CHECK(results[0]["index"] == 0);
    CHECK(results[0]["status"] == "queued");
    CHECK(results[0]["transaction_id"] == "a");
    CHECK(results[0]["message_id"].get<std::string>().size() == 36);
    CHECK(results[0]["partition_id"].get<std::string>().size() == 36);
    CHECK(results[0]["trace_id"].is_null());
    CHECK(results[0]["queueName"] == "q");
    CHECK(results[1]["status"] == "queued");
    CHECK(results[1]["trace_id"] == "0b9e4c1a-6b1f-4c5e-9d3a-1f2e3d4c5b6a");
    // Generated at the edge: a time-ordered v7 UUID, like the JS client gives.
    const std::string generated = results[1]["transaction_id"];
    REQUIRE(generated.size() == 36);
    CHECK(generated[14] == '7');
    CHECK(results[2]["index"] == 2);
    CHECK(results[2]["status"] == "duplicate");
    CHECK(results[2]["message_id"] == results[0]["message_id"]);

    SECTION("a later push of the same id on the same partition is a duplicate") {
        const json again = h.push("q", "p1", {});
        const Reply reply = h.post(
            "/api/v1/push", {{"items",
                              {{{"queue", "q"}, {"partition", "p1"}, {"transactionId", "a"}},
                               {{"queue", "q"}, {"partition", "p2"}, {"transactionId", "a"}}}}});
        const json second = reply.json();
        CHECK(second[0]["status"] == "duplicate");
        CHECK(second[0]["message_id"] == results[0]["message_id"]);
        CHECK(second[1]["status"] == "queued");  // same id, another partition
    }
    SECTION("payloads round-trip with their JSON types, missing payload is null") {
        const Reply reply = h.post(
            "/api/v1/push", {{"items",
                              {{{"queue", "types"}, {"payload", json::array({1, "two", nullptr})}},
                               {{"queue", "types"}, {"payload", json::object()}},
                               {{"queue", "types"}, {"payload", false}},
                               {{"queue", "types"}}}}});
        REQUIRE(reply.status == 201);
        const json popped = pop_ok(h, "/api/v1/pop/queue/types?batch=10");
        REQUIRE(popped["messages"].size() == 4);
        CHECK(popped["messages"][0]["data"] == json::array({1, "two", nullptr}));
        CHECK(popped["messages"][1]["data"] == json::object());
        CHECK(popped["messages"][2]["data"] == false);
        CHECK(popped["messages"][3]["data"].is_null());
    }
}

TEST_CASE("api: bad pushes answer 400 and submit nothing", "[api][push]") {
    ApiOptions options;
    options.push_items_max = 5;
    options.payload_bytes_max = 1024;
    options.json_depth_max = 16;
    Harness h(options);
    const std::string deep = std::string(100, '[') + std::string(100, ']');
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "Empty request body"},
        {"   ", "Empty request body"},
        {"{\"items\": [", "Invalid JSON"},
        {"\xff\xfe", "Invalid JSON"},
        {R"({"items": {}})", "items array is required"},
        {R"({})", "items array is required"},
        {R"({"items": [1]})", "Each item must be an object"},
        {R"({"items": [{"payload": 1}]})", "Queue must be a string"},
        {R"({"items": [{"queue": 1}]})", "Queue must be a string"},
        {R"({"items": [{"queue": "q", "partition": 3}]})", "Partition must be a string"},
        {R"({"items": [{"queue": "q", "transactionId": 3}]})", "TransactionId must be a string"},
        {R"({"items": [{"queue": "q", "traceId": 3}]})", "TraceId must be a string"},
        {R"({"items": [{"queue": "q", "traceId": "not-a-uuid"}]})", "TraceId must be a UUID"},
        {R"({"items": [{"queue":"q"},{"queue":"q"},{"queue":"q"},{"queue":"q"},{"queue":"q"},{"queue":"q"}]})",
         "more than the limit of 5"},
        {"{\"items\": [{\"queue\": \"q\", \"payload\": \"" + std::string(2000, 'x') + "\"}]}",
         "payload is"},
        {"{\"items\": [{\"queue\": \"q\", \"payload\": " + deep + "}]}", "nested deeper"},
        // One bad item rejects the whole request, including the good ones before it.
        {R"({"items": [{"queue": "q"}, {"queue": "q", "partition": false}]})",
         "Partition must be a string"},
    };
    for (const auto& [body, message] : cases) {
        INFO(body.substr(0, 120));
        const Reply reply = h.post_raw("/api/v1/push", body);
        CHECK(reply.status == 400);
        CHECK_THAT(reply.json()["error"].get<std::string>(), Catch::Contains(message));
    }
    CHECK(h.backend.submitted() == 0);
    CHECK(h.get("/api/v1/resources/queues").json()["queues"].empty());

    SECTION("an empty items array answers 201 [] without a log entry") {
        const Reply reply = h.post_raw("/api/v1/push", R"({"items": []})");
        CHECK(reply.status == 201);
        CHECK(reply.body == "[]");
        CHECK(h.backend.submitted() == 0);
    }
    SECTION("a body over json_body_bytes_max is 413") {
        ApiOptions small;
        small.json_body_bytes_max = 64;
        small.payload_bytes_max = 64;
        Harness tiny(small);
        const Reply reply =
            tiny.post_raw("/api/v1/push", "{\"items\": [{\"queue\": \"q\", \"payload\": \"" +
                                              std::string(100, 'x') + "\"}]}");
        CHECK(reply.status == 413);
        CHECK(tiny.backend.submitted() == 0);
    }
}

TEST_CASE("api: pop answers the spec shape, FIFO, and 204 with no body", "[api][pop]") {
    Harness h;
    require_empty_pop(h, "/api/v1/pop/queue/nothing?wait=false");
    h.push("q", "Default", {json{{"n", 1}}, json{{"n", 2}}, json{{"n", 3}}});
    const json body = pop_ok(h, "/api/v1/pop/queue/q?batch=2&wait=false");
    CHECK(body["success"] == true);
    CHECK(body["queue"] == "q");
    CHECK(body["partition"] == "Default");
    CHECK(body["consumerGroup"] == "__QUEUE_MODE__");
    CHECK(body["partitionsClaimed"] == 1);
    const std::string lease = body["leaseId"];
    CHECK(lease.size() == 36);
    REQUIRE(body["messages"].size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        const json& m = body["messages"][i];
        CHECK(m["data"]["n"] == static_cast<int>(i + 1));
        CHECK(m["leaseId"] == lease);
        CHECK(m["partition"] == "Default");
        CHECK(m["partitionId"] == body["partitionId"]);
        CHECK(m["consumerGroup"] == "__QUEUE_MODE__");
        CHECK(m["id"].get<std::string>().size() == 36);
        CHECK(m["transactionId"].is_string());
        CHECK(m["traceId"].is_null());
        CHECK(m["producerSub"].is_null());
        CHECK(m["retryCount"] == 0);
        // Microsecond ISO time: 2023-11-14T22:13:20.000000Z
        const std::string created = m["createdAt"];
        CHECK(created.size() == 27);
        CHECK(created.back() == 'Z');
    }
    // The partition is leased for this group: nothing more until the lease ends.
    require_empty_pop(h, "/api/v1/pop/queue/q?wait=false");
    require_empty_pop(h, "/api/v1/pop/queue/q/partition/Default?wait=false");
    // Another group gets everything (fan-out).
    const json other = pop_ok(h, "/api/v1/pop/queue/q?batch=10&consumerGroup=g2");
    CHECK(other["consumerGroup"] == "g2");
    CHECK(other["messages"].size() == 3);

    SECTION("acking the batch releases the lease and the next pop continues in order") {
        for (const json& m : body["messages"]) {
            const json result = ack(h, m, "completed");
            CHECK(result["success"] == true);
        }
        const json next = pop_ok(h, "/api/v1/pop/queue/q/partition/Default");
        REQUIRE(next["messages"].size() == 1);
        CHECK(next["messages"][0]["data"]["n"] == 3);
    }
    SECTION("autoAck consumes on delivery with an empty leaseId") {
        const json auto_body =
            pop_ok(h, "/api/v1/pop/queue/q?batch=10&consumerGroup=g3&autoAck=true");
        CHECK(auto_body["leaseId"] == "");
        CHECK(auto_body["messages"].size() == 3);
        require_empty_pop(h, "/api/v1/pop/queue/q?consumerGroup=g3");
    }
}

TEST_CASE("api: pop with partitions=N claims several partitions under one lease", "[api][pop]") {
    Harness h;
    for (int p = 0; p < 5; ++p) {
        h.push("multi", "p" + std::to_string(p), {json(p * 10), json(p * 10 + 1)});
    }
    const json one = pop_ok(h, "/api/v1/pop/queue/multi?batch=100&consumerGroup=a");
    CHECK(one["messages"].size() == 2);  // default: one partition
    const json many = pop_ok(h, "/api/v1/pop/queue/multi?batch=10&partitions=3&consumerGroup=b");
    CHECK(many["partitionsClaimed"] == 3);
    CHECK(many["messages"].size() == 6);
    std::set<std::string> leases;
    std::set<std::string> partitions;
    for (const json& m : many["messages"]) {
        leases.insert(m["leaseId"].get<std::string>());
        partitions.insert(m["partition"].get<std::string>());
    }
    CHECK(leases.size() == 1);
    CHECK(partitions.size() == 3);
    const json capped = pop_ok(h, "/api/v1/pop/queue/multi?batch=3&partitions=5&consumerGroup=c");
    CHECK(capped["messages"].size() == 3);
}

TEST_CASE("api: pop query validation answers 400 and submits nothing", "[api][pop]") {
    Harness h;
    for (const char* target :
         {"/api/v1/pop/queue/q?batch=0", "/api/v1/pop/queue/q?batch=abc",
          "/api/v1/pop/queue/q?batch=10001", "/api/v1/pop/queue/q?batch=-1",
          "/api/v1/pop/queue/q?partitions=1001", "/api/v1/pop/queue/q?timeout=-5",
          "/api/v1/pop/queue/q?timeout=1x", "/api/v1/pop/queue/q?subscriptionFrom=yesterday"}) {
        INFO(target);
        const Reply reply = h.get(target);
        CHECK(reply.status == 400);
        CHECK(reply.json()["error"].is_string());
    }
    CHECK(h.backend.submitted() == 0);
    // Unknown routes and methods.
    CHECK(h.get("/api/v1/pop/queue").status == 404);
    CHECK(h.call(Method::put, "/api/v1/push").status == 405);
}

TEST_CASE("api: ack statuses, retries and the DLQ with real paging", "[api][ack][dlq]") {
    Harness h;
    REQUIRE(
        h.post("/api/v1/configure", configure_body("work", {{"retryLimit", 1}, {"retryDelay", 0}}))
            .status == 200);
    h.push("work", "Default", {json{{"job", 1}}});

    // Attempt 1 fails: lease released, redelivered.
    json popped = pop_ok(h, "/api/v1/pop/queue/work");
    json result = ack(h, popped["messages"][0], "failed", {{"error", "boom 1"}});
    CHECK(result["success"] == true);
    CHECK(result["dlq"] == false);
    CHECK(result["index"] == 0);
    CHECK(result["queueName"] == "work");
    CHECK(result["partitionName"] == "Default");
    // Attempt 2 fails: retries exhausted, dead-lettered.
    popped = pop_ok(h, "/api/v1/pop/queue/work");
    CHECK(popped["messages"][0]["data"]["job"] == 1);
    result = ack(h, popped["messages"][0], "failed", {{"error", "boom 2"}});
    CHECK(result["success"] == true);
    CHECK(result["dlq"] == true);
    require_empty_pop(h, "/api/v1/pop/queue/work");

    const json dlq = h.get("/api/v1/dlq?queue=work").json();
    REQUIRE(dlq["messages"].size() == 1);
    const json& entry = dlq["messages"][0];
    CHECK(entry["queue"] == "work");
    CHECK(entry["partition"] == "Default");
    CHECK(entry["consumerGroup"] == "__QUEUE_MODE__");
    CHECK_THAT(entry["errorMessage"].get<std::string>(), Catch::Contains("boom 2"));
    CHECK(entry["data"]["job"] == 1);
    CHECK(entry["transactionId"] == popped["messages"][0]["transactionId"]);
    CHECK(entry["failedAt"].is_string());
    CHECK(dlq["pagination"]["limit"] == 100);
    CHECK(dlq["pagination"]["offset"] == 0);

    SECTION("dlq status dead-letters at once; limit and offset page") {
        h.push("work", "Default", {json(1), json(2), json(3)});
        for (int i = 0; i < 3; ++i) {
            const json m = pop_ok(h, "/api/v1/pop/queue/work")["messages"][0];
            CHECK(ack(h, m, "dlq", {{"error", "bad " + std::to_string(i)}})["dlq"] == true);
        }
        const json page1 = h.get("/api/v1/dlq?queue=work&limit=2").json();
        REQUIRE(page1["messages"].size() == 2);
        CHECK(page1["messages"][0]["errorMessage"] == "bad 2");  // newest failure first
        const json page2 = h.get("/api/v1/dlq?queue=work&limit=2&offset=2").json();
        REQUIRE(page2["messages"].size() == 2);
        CHECK(page2["messages"][0]["errorMessage"] == "bad 0");
        CHECK(h.get("/api/v1/dlq?queue=work&limit=2&offset=4").json()["messages"].empty());
        CHECK(h.get("/api/v1/dlq?queue=work&limit=x").status == 400);
        CHECK(h.get("/api/v1/dlq?queue=other").json()["messages"].empty());
    }
}

TEST_CASE("api: ack responses, batch ack and ack input errors", "[api][ack]") {
    Harness h;
    h.push("q", "Default", {json(1), json(2)});
    const json popped = pop_ok(h, "/api/v1/pop/queue/q?batch=2");
    const json& m0 = popped["messages"][0];
    const json& m1 = popped["messages"][1];

    SECTION("unknown message and foreign lease are 200 with success:false") {
        const json missing = ack(h,
                                 json{{"transactionId", "nope"},
                                      {"partitionId", m0["partitionId"]},
                                      {"leaseId", m0["leaseId"]}},
                                 "completed");
        CHECK(missing["success"] == false);
        CHECK(missing["error"] == "Message not found");
        json foreign = m0;
        foreign["leaseId"] = "00000000-0000-8400-0000-000000000999";
        const json stale = ack(h, foreign, "completed");
        CHECK(stale["success"] == false);
        CHECK(stale["error"] == "Invalid or expired lease");
    }
    SECTION("batch ack answers an array in input order") {
        const Reply reply = h.post("/api/v1/ack/batch", {{"acknowledgments",
                                                          {{{"transactionId", m0["transactionId"]},
                                                            {"partitionId", m0["partitionId"]},
                                                            {"status", "completed"},
                                                            {"leaseId", m0["leaseId"]}},
                                                           {{"transactionId", m1["transactionId"]},
                                                            {"partitionId", m1["partitionId"]},
                                                            {"status", "success"},
                                                            {"leaseId", m1["leaseId"]}}}},
                                                         {"consumerGroup", nullptr}});
        REQUIRE(reply.status == 200);
        const json results = reply.json();
        REQUIRE(results.size() == 2);
        CHECK(results[0]["index"] == 0);
        CHECK(results[1]["index"] == 1);
        CHECK(results[0]["success"] == true);
        CHECK(results[1]["success"] == true);
        CHECK(results[1]["leaseReleased"] == true);
        require_empty_pop(h, "/api/v1/pop/queue/q");
    }
    SECTION("an empty batch answers 200 []") {
        const Reply reply = h.post("/api/v1/ack/batch", {{"acknowledgments", json::array()}});
        CHECK(reply.status == 200);
        CHECK(reply.body == "[]");
    }
    SECTION("bad acks are 400 and change nothing") {
        const std::uint64_t before = h.backend.submitted();
        const std::vector<std::pair<json, std::string>> singles = {
            {json{{"partitionId", m0["partitionId"]}}, "transactionId is required"},
            {json{{"transactionId", 5}, {"partitionId", m0["partitionId"]}},
             "transactionId is required"},
            {json{{"transactionId", "t"}}, "partitionId is required to ensure message uniqueness"},
            {json{{"transactionId", "t"}, {"partitionId", "zzz"}}, "partitionId must be a UUID"},
            {json{{"transactionId", "t"}, {"partitionId", m0["partitionId"]}, {"status", 1}},
             "status must be a string"},
            {json{{"transactionId", "t"}, {"partitionId", m0["partitionId"]}, {"error", 1}},
             "error must be a string or null"},
        };
        for (const auto& [body, message] : singles) {
            INFO(body.dump());
            const Reply reply = h.post("/api/v1/ack", body);
            CHECK(reply.status == 400);
            CHECK_THAT(reply.json()["error"].get<std::string>(), Catch::Contains(message));
        }
        const std::vector<std::pair<json, std::string>> batches = {
            {json::object(), "acknowledgments array is required"},
            {json{{"acknowledgments", {{{"partitionId", m0["partitionId"]}}}}},
             "Each acknowledgment must have a valid transactionId string"},
            {json{{"acknowledgments", {{{"transactionId", "t"}}}}},
             "Each acknowledgment must have a valid partitionId string"},
        };
        for (const auto& [body, message] : batches) {
            INFO(body.dump());
            const Reply reply = h.post("/api/v1/ack/batch", body);
            CHECK(reply.status == 400);
            CHECK_THAT(reply.json()["error"].get<std::string>(), Catch::Contains(message));
        }
        CHECK(h.backend.submitted() == before);
        // The lease is still held: nothing was acked.
        require_empty_pop(h, "/api/v1/pop/queue/q");
    }
}

TEST_CASE("api: lease expiry redelivers and lease extend keeps it", "[api][lease]") {
    Harness h;
    REQUIRE(h.post("/api/v1/configure", configure_body("l", {{"leaseTime", 10}})).status == 200);
    h.push("l", "Default", {json("x")});
    const json first = pop_ok(h, "/api/v1/pop/queue/l");
    const std::string lease = first["leaseId"];

    const Reply extended = h.post("/api/v1/lease/" + lease + "/extend", {{"seconds", 60}});
    REQUIRE(extended.status == 200);
    const json result = extended.json();
    REQUIRE(result.is_array());
    CHECK(result[0]["index"] == 0);
    CHECK(result[0]["leaseId"] == lease);
    CHECK(result[0]["success"] == true);
    CHECK(result[0]["error"].is_null());
    CHECK(result[0]["expiresAt"].is_string());

    h.backend.advance(30'000);  // past the original 10 s, inside the extension
    require_empty_pop(h, "/api/v1/pop/queue/l");
    h.backend.advance(40'000);  // past the extension
    const json again = pop_ok(h, "/api/v1/pop/queue/l");
    CHECK(again["messages"][0]["transactionId"] == first["messages"][0]["transactionId"]);
    CHECK(again["leaseId"] != lease);

    const json expired = h.post("/api/v1/lease/" + lease + "/extend", json::object()).json();
    CHECK(expired[0]["success"] == false);
    CHECK(expired[0]["expiresAt"].is_null());
    const json unknown = h.post("/api/v1/lease/not-a-lease/extend", json::object()).json();
    CHECK(unknown[0]["success"] == false);
    // No body is {} (the official Python client renews without one); a bad body is still 400.
    const Reply no_body = h.post_raw("/api/v1/lease/" + lease + "/extend", "");
    REQUIRE(no_body.status == 200);
    CHECK(no_body.json()[0]["success"] == false);  // that lease expired above
    CHECK(h.post_raw("/api/v1/lease/" + lease + "/extend", "{").status == 400);
    CHECK(h.post("/api/v1/lease/" + lease + "/extend", {{"seconds", 0}}).status == 400);
    CHECK(h.post("/api/v1/lease/" + lease + "/extend", {{"seconds", "5"}}).status == 400);
}

TEST_CASE("api: a lease extend without a body renews a live lease", "[api][lease]") {
    Harness h;
    REQUIRE(h.post("/api/v1/configure", configure_body("l", {{"leaseTime", 10}})).status == 200);
    h.push("l", "Default", {json("x")});
    const json first = pop_ok(h, "/api/v1/pop/queue/l");
    const std::string lease = first["leaseId"];
    for (const char* body : {"", " \r\n"}) {
        INFO("body: '" << body << "'");
        const Reply renewed = h.post_raw("/api/v1/lease/" + lease + "/extend", body);
        REQUIRE(renewed.status == 200);
        CHECK(renewed.json()[0]["success"] == true);
        CHECK(renewed.json()[0]["expiresAt"].is_string());
    }
}

TEST_CASE("api: transactions commit atomically and roll back", "[api][transaction]") {
    Harness h;
    h.push("in", "Default", {json{{"step", 1}}});
    const json popped = pop_ok(h, "/api/v1/pop/queue/in");
    const json& m = popped["messages"][0];

    SECTION("push + ack commit together") {
        const Reply reply = h.post(
            "/api/v1/transaction",
            {{"operations",
              {{{"type", "ack"},
                {"transactionId", m["transactionId"]},
                {"partitionId", m["partitionId"]},
                {"status", "completed"}},
               {{"type", "push"},
                {"items", {{{"queue", "out"}, {"partition", "p"}, {"payload", {{"step", 2}}}}}}}}},
             {"requiredLeases", {m["leaseId"]}}});
        REQUIRE(reply.status == 200);
        const json body = reply.json();
        CHECK(body["success"] == true);
        CHECK(body["transactionId"].get<std::string>().size() == 36);
        REQUIRE(body["results"].size() == 2);
        CHECK(body["results"][0]["type"] == "ack");
        CHECK(body["results"][0]["success"] == true);
        CHECK(body["results"][0]["dlq"] == false);
        CHECK(body["results"][1]["type"] == "push");
        CHECK(body["results"][1]["index"] == 1);
        CHECK(body["results"][1]["messageId"].is_string());
        CHECK(body["results"][1]["partitionId"].is_string());
        CHECK(body["results"][1]["queueName"] == "out");
        const json out = pop_ok(h, "/api/v1/pop/queue/out");
        CHECK(out["messages"][0]["data"]["step"] == 2);
        require_empty_pop(h, "/api/v1/pop/queue/in");
    }
    SECTION("a failing operation rolls everything back") {
        const Reply reply =
            h.post("/api/v1/transaction",
                   {{"operations",
                     {{{"type", "push"}, {"queue", "out"}, {"payload", {{"flat", true}}}},
                      {{"type", "ack"},
                       {"transactionId", m["transactionId"]},
                       {"partitionId", m["partitionId"]}},
                      {{"type", "ack"},
                       {"transactionId", "does-not-exist"},
                       {"partitionId", m["partitionId"]}}}}});
        REQUIRE(reply.status == 200);
        const json body = reply.json();
        CHECK(body["success"] == false);
        CHECK(body["error"].is_string());
        require_empty_pop(h, "/api/v1/pop/queue/out?wait=false");
        // The ack was rolled back: the message comes back after the lease (300 s).
        h.backend.advance(301'000);
        CHECK(pop_ok(h, "/api/v1/pop/queue/in")["messages"][0]["transactionId"] ==
              m["transactionId"]);
    }
    SECTION("malformed transactions are 400 and submit nothing") {
        const std::uint64_t before = h.backend.submitted();
        const std::vector<std::pair<std::string, std::string>> cases = {
            {R"({})", "operations array required"},
            {R"({"operations": {}})", "operations array required"},
            {R"({"operations": []})", "operations array cannot be empty"},
            {R"({"operations": [{"type": "pop"}]})", "Unknown operation type: pop"},
            {R"({"operations": [5]})", "Each operation must be an object"},
            {R"({"operations": [{"type": "push", "items": [{"queue": 1}]}]})",
             "Queue must be a string"},
            {R"({"operations": [{"type": "ack", "partitionId": "x"}]})",
             "ack operation needs a transactionId"},
        };
        for (const auto& [body, message] : cases) {
            INFO(body);
            const Reply reply = h.post_raw("/api/v1/transaction", body);
            CHECK(reply.status == 400);
            CHECK_THAT(reply.json()["error"].get<std::string>(), Catch::Contains(message));
        }
        CHECK(h.backend.submitted() == before);
    }
}

TEST_CASE("api: a long poll is woken by a push, not by polling", "[api][pop][longpoll]") {
    Harness h;
    auto pending = h.start(Method::get, "/api/v1/pop/queue/lp?wait=true&timeout=30000");
    REQUIRE_FALSE(pending.reply->is_done);
    CHECK(h.backend.waiting() == 1);
    const std::uint64_t submitted = h.backend.submitted();
    // A push to another queue does not wake it.
    h.push("other", "Default", {json(0)});
    CHECK_FALSE(pending.reply->is_done);
    CHECK(h.backend.submitted() == submitted + 1);  // no pop retried
    h.push("lp", "Default", {json{{"hello", "world"}}});
    REQUIRE(pending.reply->is_done);
    CHECK(pending.reply->status == 200);
    CHECK(pending.reply->json()["messages"][0]["data"]["hello"] == "world");
    CHECK(h.backend.waiting() == 0);
}

TEST_CASE("api: a long poll answers 204 at its deadline", "[api][pop][longpoll]") {
    Harness h;
    auto pending = h.start(Method::get, "/api/v1/pop/queue/lp?wait=true&timeout=1000");
    REQUIRE_FALSE(pending.reply->is_done);
    h.backend.advance(999);
    CHECK_FALSE(pending.reply->is_done);
    h.backend.advance(1);
    REQUIRE(pending.reply->is_done);
    CHECK(pending.reply->status == 204);
    CHECK(pending.reply->body.empty());
    CHECK(h.backend.waiting() == 0);

    SECTION("timeouts beyond pop_timeout_ms_max are clamped") {
        ApiOptions options;
        options.pop_timeout_ms_max = 5000;
        options.pop_timeout_ms_default = 5000;
        Harness clamped(options);
        auto poll = clamped.start(Method::get, "/api/v1/pop/queue/lp?wait=true&timeout=999999");
        clamped.backend.advance(5000);
        REQUIRE(poll.reply->is_done);
        CHECK(poll.reply->status == 204);
    }
}

TEST_CASE("api: a long poll whose client disconnects stops waiting", "[api][pop][longpoll]") {
    Harness h;
    auto pending = h.start(Method::get, "/api/v1/pop/queue/lp?wait=true&timeout=30000");
    REQUIRE(h.backend.waiting() == 1);
    http::Responder::cancel(pending.responder);
    CHECK(h.backend.waiting() == 0);
    const std::uint64_t submitted = h.backend.submitted();
    h.push("lp", "Default", {json(1)});
    CHECK(h.backend.submitted() == submitted + 1);  // the push only: no pop for the gone client
    CHECK_FALSE(pending.reply->is_done);
    // The message is still there for the next consumer.
    CHECK(pop_ok(h, "/api/v1/pop/queue/lp")["messages"].size() == 1);
}

TEST_CASE("api: a long poll is woken when a lease expires", "[api][pop][longpoll]") {
    Harness h;
    REQUIRE(h.post("/api/v1/configure", configure_body("exp", {{"leaseTime", 5}})).status == 200);
    h.push("exp", "Default", {json(1)});
    const json first = pop_ok(h, "/api/v1/pop/queue/exp");
    auto pending = h.start(Method::get, "/api/v1/pop/queue/exp?wait=true&timeout=60000");
    REQUIRE_FALSE(pending.reply->is_done);
    h.backend.advance(6000);
    REQUIRE(pending.reply->is_done);
    CHECK(pending.reply->status == 200);
    CHECK(pending.reply->json()["messages"][0]["transactionId"] ==
          first["messages"][0]["transactionId"]);
}

TEST_CASE("api: encrypted queues store ciphertext and pop plaintext", "[api][encryption]") {
    ApiOptions options;
    options.encryption_key_hex = key_hex;
    Harness h(options);
    REQUIRE(h.post("/api/v1/configure", configure_body("secret", {{"encryptionEnabled", true}}))
                .status == 200);
    const json secret = {{"card", "4111-1111-1111-1111"}, {"n", 42}};
    const json pushed = h.push("secret", "Default", {secret});
    const std::string partition_id = pushed[0]["partition_id"];
    const std::string transaction_id = pushed[0]["transaction_id"];

    // At rest: the stored payload is not the plaintext and is flagged encrypted.
    const queues::MessageDetail detail = h.stored_message(partition_id, transaction_id);
    CHECK(detail.is_encrypted);
    const std::string raw(detail.payload.begin(), detail.payload.end());
    CHECK(raw.find("4111") == std::string::npos);
    CHECK(raw != secret.dump());
    CHECK(detail.payload.size() == secret.dump().size() + 28);  // nonce 12 + tag 16

    const json popped = pop_ok(h, "/api/v1/pop/queue/secret");
    CHECK(popped["messages"][0]["data"] == secret);
    const json message = h.get("/api/v1/messages/" + partition_id + "/" + transaction_id).json();
    CHECK(message["payload"] == secret);
    CHECK(message["isEncrypted"] == true);

    SECTION("two pushes of one payload have different ciphertexts (fresh nonces)") {
        const json again = h.push("secret", "Default", {secret});
        const queues::MessageDetail second =
            h.stored_message(partition_id, again[0]["transaction_id"].get<std::string>());
        CHECK(second.payload != detail.payload);
    }
    SECTION("transactions encrypt their pushes too") {
        const Reply reply = h.post(
            "/api/v1/transaction",
            {{"operations",
              {{{"type", "push"}, {"items", {{{"queue", "secret"}, {"payload", secret}}}}}}}});
        REQUIRE(reply.json()["success"] == true);
        CHECK(h.get("/api/v1/resources/queues/secret").json()["totals"]["total"] == 2);
    }
}

TEST_CASE("api: an encrypted queue without a key fails clearly and stores nothing",
          "[api][encryption]") {
    Harness h;  // no key
    REQUIRE(h.post("/api/v1/configure", configure_body("secret", {{"encryptionEnabled", true}}))
                .status == 200);
    const std::uint64_t before = h.backend.submitted();
    const Reply reply =
        h.post("/api/v1/push", {{"items", {{{"queue", "secret"}, {"payload", "x"}}}}});
    CHECK(reply.status == 500);
    CHECK_THAT(reply.json()["error"].get<std::string>(),
               Catch::Contains("secret") && Catch::Contains("security.payload_encryption"));
    CHECK(h.backend.submitted() == before);
    // Plain queues still work.
    CHECK(h.push("plain", "Default", {json(1)})[0]["status"] == "queued");
}

TEST_CASE("api: consumer groups, subscription modes, seek and delete", "[api][groups]") {
    Harness h;
    h.push("events", "Default", {json(1), json(2), json(3), json(4), json(5)});

    // `new` skips history; `all` (default) reads it.
    require_empty_pop(h, "/api/v1/pop/queue/events?consumerGroup=fresh&subscriptionMode=new");
    CHECK(pop_ok(h, "/api/v1/pop/queue/events?consumerGroup=old&batch=10")["messages"].size() == 5);
    h.push("events", "Default", {json(6)});
    const json fresh = pop_ok(h, "/api/v1/pop/queue/events?consumerGroup=fresh&batch=10");
    REQUIRE(fresh["messages"].size() == 1);
    CHECK(fresh["messages"][0]["data"] == 6);

    const json groups = h.get("/api/v1/consumer-groups").json();
    REQUIRE(groups.is_array());
    bool has_fresh = false;
    for (const json& g : groups) {
        CHECK(g["topics"].is_array());
        CHECK(g["queueName"] == "events");
        CHECK(g["state"].is_string());
        has_fresh = has_fresh || g["name"] == "fresh";
    }
    CHECK(has_fresh);
    const json detail = h.get("/api/v1/consumer-groups/old").json();
    REQUIRE(detail.contains("events"));
    CHECK(detail["events"]["partitions"][0]["partition"] == "Default");
    CHECK(detail["events"]["partitions"][0]["leaseActive"] == true);
    CHECK(h.get("/api/v1/consumer-groups/nobody").json() == json::object());
    CHECK(h.get("/api/v1/consumer-groups/lagging?minLagSeconds=0").json().is_array());

    SECTION("seek to end skips, seek to a timestamp replays") {
        const Reply to_end =
            h.post("/api/v1/consumer-groups/old/queues/events/seek", {{"toEnd", true}});
        REQUIRE(to_end.status == 200);
        CHECK(to_end.json()["success"] == true);
        CHECK(to_end.json()["seekToEnd"] == true);
        CHECK(to_end.json()["targetTimestamp"].is_null());
        require_empty_pop(h, "/api/v1/pop/queue/events?consumerGroup=old");
        const Reply back = h.post("/api/v1/consumer-groups/old/queues/events/seek",
                                  {{"timestamp", "2000-01-01T00:00:00.000Z"}});
        REQUIRE(back.status == 200);
        CHECK(back.json()["partitionsUpdated"] == 1);
        CHECK(pop_ok(h, "/api/v1/pop/queue/events?consumerGroup=old&batch=10")["messages"].size() ==
              6);
        CHECK(h.post("/api/v1/consumer-groups/old/queues/events/seek", json::object()).status ==
              400);
        CHECK(h.post("/api/v1/consumer-groups/old/queues/events/seek", {{"timestamp", "soon"}})
                  .status == 400);
    }
    SECTION("partition seek to end, unknown partition is 404") {
        const Reply seek =
            h.post_raw("/api/v1/consumer-groups/old/queues/events/partitions/Default/seek", "");
        REQUIRE(seek.status == 200);
        CHECK(seek.json()["partitionName"] == "Default");
        CHECK(seek.json()["cursorMovedTo"].is_string());
        const Reply missing =
            h.post_raw("/api/v1/consumer-groups/old/queues/events/partitions/Nope/seek", "");
        CHECK(missing.status == 404);
        CHECK(missing.json()["success"] == false);
    }
    SECTION("delete a group: it starts again from the beginning") {
        const Reply deleted = h.del("/api/v1/consumer-groups/old?deleteMetadata=true");
        REQUIRE(deleted.status == 200);
        CHECK(deleted.json()["success"] == true);
        CHECK(deleted.json()["consumerGroup"] == "old");
        CHECK(deleted.json()["deletedPartitions"] == 1);
        CHECK(pop_ok(h, "/api/v1/pop/queue/events?consumerGroup=old&batch=10")["messages"].size() ==
              6);
        const Reply for_queue = h.del("/api/v1/consumer-groups/old/queues/events");
        REQUIRE(for_queue.status == 200);
        CHECK(for_queue.json()["queueName"] == "events");
    }
    SECTION("subscription timestamp update") {
        const Reply updated = h.post("/api/v1/consumer-groups/fresh/subscription",
                                     {{"subscriptionTimestamp", "2030-01-01T00:00:00Z"}});
        REQUIRE(updated.status == 200);
        CHECK(updated.json()["newTimestamp"] == "2030-01-01T00:00:00.000Z");
        const Reply missing = h.post("/api/v1/consumer-groups/fresh/subscription", json::object());
        CHECK(missing.status == 400);
        CHECK(missing.json()["error"] == "Missing subscriptionTimestamp in request body");
    }
}

TEST_CASE("api: subscriptionFrom=now and a timestamp start a new group there", "[api][groups]") {
    Harness h;
    h.push("s", "Default", {json(1), json(2)});
    require_empty_pop(h, "/api/v1/pop/queue/s?consumerGroup=now&subscriptionFrom=now");
    h.backend.advance(1000);
    h.push("s", "Default", {json(3)});
    const json later = pop_ok(h, "/api/v1/pop/queue/s?consumerGroup=now&batch=10");
    REQUIRE(later["messages"].size() == 1);
    CHECK(later["messages"][0]["data"] == 3);
    const json all = pop_ok(
        h, "/api/v1/pop/queue/s?consumerGroup=ts&batch=10&subscriptionFrom=2000-01-01T00:00:00Z");
    CHECK(all["messages"].size() == 3);
}

TEST_CASE("api: push maintenance buffers pushes and delivers them after", "[api][maintenance]") {
    Harness h;
    const Reply on = h.post("/api/v1/system/maintenance", {{"enabled", true}});
    REQUIRE(on.status == 200);
    CHECK(on.json()["maintenanceMode"] == true);
    const Reply pushed =
        h.post("/api/v1/push", {{"items",
                                 {{{"queue", "m"}, {"payload", 1}, {"transactionId", "t1"}},
                                  {{"queue", "m"}, {"payload", 2}}}}});
    REQUIRE(pushed.status == 201);
    const json results = pushed.json();
    CHECK(results[0]["status"] == "buffered");
    CHECK(results[0]["queue"] == "m");
    CHECK(results[0]["partition"] == "Default");
    CHECK(results[0]["transactionId"] == "t1");
    CHECK_FALSE(results[1].contains("transactionId"));
    CHECK(h.get("/api/v1/system/maintenance").json()["bufferedMessages"] == 2);
    require_empty_pop(h, "/api/v1/pop/queue/m");

    const Reply off = h.post("/api/v1/system/maintenance", {{"enabled", false}});
    REQUIRE(off.status == 200);
    CHECK(off.json()["maintenanceMode"] == false);
    CHECK(h.get("/api/v1/system/maintenance").json()["bufferedMessages"] == 0);
    const json popped = pop_ok(h, "/api/v1/pop/queue/m?batch=10");
    REQUIRE(popped["messages"].size() == 2);
    CHECK(popped["messages"][0]["data"] == 1);
    CHECK(popped["messages"][1]["data"] == 2);

    SECTION("pop maintenance answers 204 at once, even for long polls") {
        h.push("m", "Default", {json(3)});
        REQUIRE(h.post("/api/v1/system/maintenance/pop", {{"enabled", true}})
                    .json()["popMaintenanceMode"] == true);
        CHECK(h.get("/api/v1/system/maintenance/pop").json()["popMaintenanceMode"] == true);
        auto poll = h.start(Method::get, "/api/v1/pop/queue/m?consumerGroup=x&wait=true");
        REQUIRE(poll.reply->is_done);
        CHECK(poll.reply->status == 204);
        REQUIRE(h.post("/api/v1/system/maintenance/pop", {{"enabled", false}}).status == 200);
        CHECK(pop_ok(h, "/api/v1/pop/queue/m?consumerGroup=x&batch=10")["messages"].size() == 3);
    }
    CHECK(h.post("/api/v1/system/maintenance", {{"enabled", "yes"}}).status == 400);
    CHECK(h.post("/api/v1/system/maintenance", json::object()).json()["error"] ==
          "enabled (boolean) is required");
}

TEST_CASE("api: traces are recorded and listed per message", "[api][traces]") {
    Harness h;
    const json pushed = h.push("t", "Default", {json(1)});
    const Reply added = h.post("/api/v1/traces", {{"transactionId", pushed[0]["transaction_id"]},
                                                  {"partitionId", pushed[0]["partition_id"]},
                                                  {"traceNames", {"order-1", "checkout"}},
                                                  {"eventType", "step"},
                                                  {"data", {{"text", "hello"}}}});
    REQUIRE(added.status == 201);
    CHECK(added.json()["success"] == true);
    CHECK(added.json()["traceId"].is_string());
    const json traces = h.get("/api/v1/traces/" + pushed[0]["partition_id"].get<std::string>() +
                              "/" + pushed[0]["transaction_id"].get<std::string>())
                            .json();
    REQUIRE(traces["traces"].size() == 1);
    CHECK(traces["traces"][0]["event_type"] == "step");
    CHECK(traces["traces"][0]["data"]["text"] == "hello");
    CHECK(traces["traces"][0]["trace_names"] == json::array({"order-1", "checkout"}));
    CHECK(traces["traces"][0]["consumer_group"] == "__QUEUE_MODE__");

    const Reply missing = h.post(
        "/api/v1/traces",
        {{"transactionId", "nope"}, {"partitionId", pushed[0]["partition_id"]}, {"data", 1}});
    CHECK(missing.status == 404);
    CHECK(missing.json()["success"] == false);
    CHECK(h.post("/api/v1/traces", {{"transactionId", "x"}}).json()["error"] ==
          "transactionId and partitionId are required");
    CHECK(h.post("/api/v1/traces",
                 {{"transactionId", "x"}, {"partitionId", pushed[0]["partition_id"]}})
              .json()["error"] == "data is required");
}

TEST_CASE("api: resources, messages and status listings", "[api][admin]") {
    Harness h;
    REQUIRE(h.post("/api/v1/configure",
                   {{"queue", "shop.orders"}, {"namespace", "shop"}, {"task", "orders"}})
                .status == 200);
    const json pushed = h.push("shop.orders", "eu", {json{{"a", 1}}, json{{"a", 2}}});
    h.push("plain", "Default", {json(1)});

    const json queues_list = h.get("/api/v1/resources/queues").json();
    REQUIRE(queues_list["queues"].size() == 2);
    for (const json& q : queues_list["queues"]) {
        CHECK(q["id"].is_string());
        CHECK(q["partitions"].is_number());
        CHECK(q["messages"]["total"].is_number());
        CHECK(q["messages"]["pending"].is_number());
        CHECK(q["messages"]["processing"].is_number());
    }
    const json detail = h.get("/api/v1/resources/queues/shop.orders").json();
    CHECK(detail["totals"]["total"] == 2);
    CHECK(h.get("/api/v1/resources/queues/none").status == 404);
    CHECK(h.get("/api/v1/resources/queues/none").json()["error"] == "Queue not found");
    const json namespaces = h.get("/api/v1/resources/namespaces").json();
    CHECK(namespaces["namespaces"].is_array());
    CHECK(h.get("/api/v1/resources/tasks").json()["tasks"].is_array());
    const json overview = h.get("/api/v1/resources/overview").json();
    CHECK(overview["queues"] == 2);
    CHECK(overview["messages"]["total"] == 3);
    CHECK(overview["lag"]["time"].contains("median"));

    const json messages = h.get("/api/v1/messages?queue=shop.orders").json();
    REQUIRE(messages["messages"].size() == 2);
    CHECK(messages["messages"][0]["queuePath"] == "shop.orders/eu");
    CHECK(messages["messages"][0]["status"] == "pending");
    CHECK(messages["mode"]["type"].is_string());
    CHECK(h.get("/api/v1/messages?limit=1").json()["messages"].size() == 1);
    CHECK(h.get("/api/v1/messages?status=weird").status == 400);
    const std::string pid = pushed[0]["partition_id"];
    const std::string tid = pushed[0]["transaction_id"];
    const json message = h.get("/api/v1/messages/" + pid + "/" + tid).json();
    CHECK(message["payload"]["a"] == 1);
    CHECK(message["queueConfig"]["leaseTime"] == 300);
    CHECK(h.get("/api/v1/messages/" + pid + "/missing").status == 404);
    CHECK(h.get("/api/v1/messages/not-a-uuid/x").status == 400);

    const json deleted = h.del("/api/v1/messages/" + pid + "/" + tid).json();
    CHECK(deleted["success"] == true);
    CHECK(deleted["message"] == "Message deleted successfully");
    CHECK(h.del("/api/v1/messages/" + pid + "/" + tid).json()["success"] == false);

    const json status_queues = h.get("/api/v1/status/queues?limit=1").json();
    CHECK(status_queues["queues"].size() == 1);
    CHECK(status_queues["pagination"]["limit"] == 1);
    const json status_queue = h.get("/api/v1/status/queues/shop.orders").json();
    CHECK(status_queue["queue"]["config"]["leaseTime"] == 300);
    REQUIRE(status_queue["partitions"].size() == 2);  // Default (from configure) and eu
    CHECK(status_queue["partitions"][1]["name"] == "eu");
    CHECK(status_queue["partitions"][1]["messages"]["total"] == 1);  // one was deleted above
    CHECK(h.get("/api/v1/status/queues/none").status == 404);
    CHECK(h.get("/api/v1/status/queues/shop.orders/messages").json().is_array());
    CHECK(h.get("/api/v1/status").json()["messages"]["total"].is_number());
    CHECK(h.get("/api/v1/status/analytics").json()["dataPoints"].is_array());
    CHECK(h.get("/api/v1/status/buffers").json()["pending"] == 0);
    for (const char* path : {"/api/v1/analytics/system-metrics", "/api/v1/analytics/worker-metrics",
                             "/api/v1/analytics/queue-lag", "/api/v1/analytics/queue-ops",
                             "/api/v1/analytics/queue-parked-replicas",
                             "/api/v1/analytics/retention", "/api/v1/system/shared-state"}) {
        INFO(path);
        CHECK(h.get(path).status == 200);
    }
    CHECK(h.post("/api/v1/stats/refresh", json::object()).status == 200);

    const json removed = h.del("/api/v1/resources/queues/plain").json();
    CHECK(removed["deleted"] == true);
    CHECK(removed["existed"] == true);
    CHECK(h.del("/api/v1/resources/queues/plain").json()["existed"] == false);
}

TEST_CASE("api: tenants, backend errors and health", "[api][health]") {
    Harness h;
    const Reply unknown =
        h.call(Method::get, "/api/v1/resources/queues", {}, {{"X-Queen-Tenant", "acme"}});
    CHECK(unknown.status == 404);
    CHECK_THAT(unknown.json()["error"].get<std::string>(), Catch::Contains("acme"));
    const Reply invalid = h.call(Method::post, "/api/v1/push", R"({"items": []})",
                                 {{"x-queen-tenant", "bad tenant!"}});
    CHECK(invalid.status == 400);

    h.backend.fail_with(Error{Errc::busy, "4096 proposals waiting"});
    const Reply busy = h.post("/api/v1/push", {{"items", {{{"queue", "q"}}}}});
    CHECK(busy.status == 503);
    CHECK_THAT(busy.json()["error"].get<std::string>(), Catch::Contains("busy"));
    h.backend.fail_with(Error{Errc::not_leader, "leader is node 2 at 10.0.0.2:6632"});
    const Reply follower = h.get("/api/v1/pop/queue/q");
    CHECK(follower.status == 503);
    CHECK_THAT(follower.json()["error"].get<std::string>(), Catch::Contains("node 2"));
    h.backend.fail_with(Error{Errc::poisoned, "fdatasync failed: EIO"});
    CHECK(h.post("/api/v1/configure", {{"queue", "q"}}).status == 503);
    h.backend.fail_with(std::nullopt);

    const json health = h.get("/health").json();
    CHECK(health["status"] == "healthy");
    CHECK(h.get("/ready").status == 200);
    const json metrics = h.get("/metrics").json();
    CHECK(metrics["requests"]["total"].get<int>() > 0);
    CHECK(metrics["memory"].contains("rss"));
    h.push("q", "Default", {json(1)});
    const Reply prometheus = h.get("/metrics/prometheus");
    CHECK(prometheus.status == 200);
    CHECK(prometheus.content_type == "text/plain; version=0.0.4; charset=utf-8");
    CHECK_THAT(
        prometheus.body,
        Catch::Contains("# TYPE queen_push_messages_total counter") &&
            Catch::Contains("queen_push_messages_total 1\n") &&
            Catch::Contains("queen_queue_pending_messages{tenant=\"default\",queue=\"q\"} 1") &&
            Catch::Contains("queen_fsync_latency_seconds_bucket{le=\"+Inf\"} 6") &&
            Catch::Contains("queen_log_appends_total{tenant=\"default\"}"));

    h.backend.set_poisoned(true);
    CHECK(h.get("/health").status == 503);
    CHECK(h.get("/health").json()["status"] == "unhealthy");
    CHECK(h.get("/ready").status == 503);
}

TEST_CASE("api: random garbage bodies get an answer, errors as JSON", "[api][fuzz]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    Harness h;
    const std::vector<std::string> routes = {"/api/v1/push",      "/api/v1/ack",
                                             "/api/v1/ack/batch", "/api/v1/transaction",
                                             "/api/v1/configure", "/api/v1/traces"};
    const std::string alphabet = "{}[]\",:0123456789.eE+-truefalsnl \\u\x01\xff";
    for (int i = 0; i < 500; ++i) {
        std::string body;
        const std::uint64_t length = rng.below(64);
        for (std::uint64_t j = 0; j < length; ++j) {
            body.push_back(alphabet[rng.below(alphabet.size())]);
        }
        const std::string& route = routes[rng.below(routes.size())];
        const Reply reply = h.post_raw(route, body);
        INFO(route << " " << body);
        CHECK(reply.status >= 200);
        if (reply.status >= 400) {
            CHECK(reply.json()["error"].is_string());
        }
    }
}

}  // namespace
}  // namespace queen::api::testing

namespace queen::api::testing {
namespace {

using nlohmann::json;

TEST_CASE("api: a parked long poll with autoAck and batch is woken by a push", "[api][longpoll]") {
    Harness h;
    auto pending = h.start(http::Method::get,
                           "/api/v1/pop/queue/work?wait=true&timeout=600000&autoAck=true&batch=3");
    REQUIRE_FALSE(pending.reply->is_done);
    h.push("work", "p1", {nlohmann::json(1)});
    REQUIRE(pending.reply->is_done);
    CHECK(pending.reply->status == 200);
}
TEST_CASE("api: a read route waits for the state without a thread and answers once it is readable",
          "[api][reads]") {
    Harness h;
    h.push("orders", "p1", {json{{"n", 1}}});
    h.backend.defer_reads(true);
    auto pending = h.start(http::Method::get, "/api/v1/resources/queues");
    // The handler returned; the answer waits for the backend's readiness, not a blocked thread.
    CHECK_FALSE(pending.reply->is_done);
    CHECK(h.backend.deferred_reads() == 1);
    h.backend.release_reads();
    REQUIRE(pending.reply->is_done);
    CHECK(pending.reply->status == 200);
    CHECK(pending.reply->json()["queues"][0]["name"] == "orders");

    SECTION("a backend error while waiting answers that error") {
        auto failed = h.start(http::Method::get, "/api/v1/resources/queues");
        CHECK_FALSE(failed.reply->is_done);
        h.backend.release_reads(Error{Errc::busy, "too many reads waiting"});
        REQUIRE(failed.reply->is_done);
        CHECK(failed.reply->status == 503);
    }
}

TEST_CASE("api: a push to a queue whose flags are not cached waits for the state, then encrypts",
          "[api][encryption][reads]") {
    ApiOptions options;
    options.encryption_key_hex = key_hex;
    Harness h(options);
    REQUIRE(h.post("/api/v1/configure", configure_body("secret", {{"encryptionEnabled", true}}))
                .status == 200);
    h.backend.defer_reads(true);
    const json secret = {{"card", "4111-1111-1111-1111"}};
    const json items = {{{"queue", "secret"}, {"partition", "Default"}, {"payload", secret}}};
    auto pending = h.start(http::Method::post, "/api/v1/push", json{{"items", items}}.dump());
    CHECK_FALSE(pending.reply->is_done);
    h.backend.release_reads();
    REQUIRE(pending.reply->is_done);
    REQUIRE(pending.reply->status == 201);
    const std::string partition_id = pending.reply->json()[0]["partition_id"];
    const std::string transaction_id = pending.reply->json()[0]["transaction_id"];
    CHECK(h.stored_message(partition_id, transaction_id).is_encrypted);
    // The flag is cached now: the next push to the queue does not wait.
    auto second = h.start(http::Method::post, "/api/v1/push", json{{"items", items}}.dump());
    CHECK(second.reply->is_done);
    CHECK(h.backend.deferred_reads() == 0);
}

}  // namespace
}  // namespace queen::api::testing
