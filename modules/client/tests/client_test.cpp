// client/tests/client_test.cpp — every API call: the request on the wire, and the parsing of the
// spec's answers (canned, from a recording test server), errors and retries.
#include "queen/client/client.hpp"

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "test_server.hpp"

namespace {

using nlohmann::json;
using namespace queen::client;
using queen::client::testing::json_reply;
using queen::client::testing::no_content_reply;
using queen::client::testing::RecordedRequest;
using queen::client::testing::Reply;
using queen::client::testing::TestServer;

ClientOptions options_for(const TestServer& server) {
    ClientOptions options;
    options.endpoint = Endpoint{"127.0.0.1", server.port()};
    options.retry_attempts = 2;
    options.retry_delay_ms = 1;
    options.id_seed = 42;
    return options;
}

json body_of(const RecordedRequest& request) {
    return json::parse(request.body);
}

const std::regex uuid_v7_pattern{
    "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"};

}  // namespace

TEST_CASE("client: configure sends all 15 options and parses the echo", "[client][api]") {
    TestServer server;
    server.reply_always(
        json_reply(200, R"({"configured":true,"queueId":"q-uuid","partitionId":"p-uuid",
        "queue":"orders","namespace":"shop","task":"",
        "options":{"priority":2,"leaseTime":10,"retryLimit":5,"retryDelay":250,"maxSize":100,
        "ttl":60,"deadLetterQueue":true,"dlqAfterMaxRetries":true,"delayedProcessing":1,
        "windowBuffer":2,"retentionSeconds":30,"completedRetentionSeconds":40,
        "retentionEnabled":true,"encryptionEnabled":true,"maxWaitTimeSeconds":50}})"));
    Client client{options_for(server)};
    ConfigureRequest request;
    request.queue = "orders";
    request.namespace_name = "shop";
    request.options = QueueOptions{.lease_time_s = 10,
                                   .retry_limit = 5,
                                   .retry_delay_ms = 250,
                                   .max_size = 100,
                                   .ttl_s = 60,
                                   .priority = 2,
                                   .is_dead_letter_queue = true,
                                   .is_dlq_after_max_retries = true,
                                   .delayed_processing_s = 1,
                                   .window_buffer_s = 2,
                                   .is_retention_enabled = true,
                                   .retention_s = 30,
                                   .completed_retention_s = 40,
                                   .is_encryption_enabled = true,
                                   .max_wait_time_s = 50};
    auto result = client.configure(request);
    REQUIRE(result);
    CHECK(result->is_configured);
    CHECK(result->queue_id == "q-uuid");
    CHECK(result->partition_id == "p-uuid");
    CHECK(result->queue == "orders");
    CHECK(result->namespace_name == "shop");
    CHECK(result->options == request.options);

    const auto recorded = server.last_request();
    CHECK(recorded.method == "POST");
    CHECK(recorded.target == "/api/v1/configure");
    const json body = body_of(recorded);
    CHECK(body["queue"] == "orders");
    CHECK(body["namespace"] == "shop");
    CHECK(body["task"].is_null());
    const json expected_options = {{"leaseTime", 10},
                                   {"retryLimit", 5},
                                   {"retryDelay", 250},
                                   {"maxSize", 100},
                                   {"ttl", 60},
                                   {"priority", 2},
                                   {"deadLetterQueue", true},
                                   {"dlqAfterMaxRetries", true},
                                   {"delayedProcessing", 1},
                                   {"windowBuffer", 2},
                                   {"retentionSeconds", 30},
                                   {"completedRetentionSeconds", 40},
                                   {"retentionEnabled", true},
                                   {"encryptionEnabled", true},
                                   {"maxWaitTimeSeconds", 50}};
    CHECK(body["options"] == expected_options);
}

TEST_CASE("client: push builds items like the JS client and sorts results by status",
          "[client][api][push]") {
    TestServer server;
    server.reply_always(json_reply(201, R"([
        {"index":0,"transaction_id":"t-1","status":"queued","message_id":"m-1","partition_id":"p-1","trace_id":null,"queueName":"q"},
        {"index":1,"transaction_id":"t-2","status":"duplicate","message_id":"m-0","queueName":"q"},
        {"status":"buffered","queue":"q","partition":"Default"},
        {"status":"failed","error":"File buffer write failed"}])"));
    Client client{options_for(server)};
    std::vector<PushItem> items(4);
    for (auto& item : items) {
        item.queue = "q";
    }
    items[0].payload_json = R"({"order":1,"text":"caf\u00e9 \"x\""})";
    items[0].transaction_id = "t-1";
    items[1].partition = "p/with space";
    items[1].payload_json = "[1,2]";
    items[1].trace_id = "0b7e7c1e-6d6a-4c1b-9b7c-2f1e8e1c9a11";
    items[2].payload_json = R"("text")";
    items[3].payload_json = "null";
    auto results = client.push(items);
    REQUIRE(results);
    REQUIRE(results->size() == 4);
    CHECK((*results)[0].status == PushStatus::queued);
    CHECK((*results)[0].message_id == "m-1");
    CHECK((*results)[0].partition_id == "p-1");
    CHECK((*results)[0].transaction_id == "t-1");
    CHECK((*results)[0].trace_id.empty());
    CHECK((*results)[1].status == PushStatus::duplicate);
    CHECK((*results)[1].message_id == "m-0");
    CHECK((*results)[2].status == PushStatus::buffered);
    CHECK((*results)[2].queue_name == "q");
    CHECK((*results)[3].status == PushStatus::failed);
    CHECK((*results)[3].error == "File buffer write failed");

    const auto recorded = server.last_request();
    CHECK(recorded.method == "POST");
    CHECK(recorded.target == "/api/v1/push");
    const json body = body_of(recorded);
    REQUIRE(body["items"].size() == 4);
    const json& sent = body["items"];
    CHECK(sent[0]["queue"] == "q");
    CHECK(sent[0]["partition"] == "Default");
    CHECK(sent[0]["payload"] == json::parse(items[0].payload_json));
    CHECK(sent[0]["transactionId"] == "t-1");
    CHECK_FALSE(sent[0].contains("traceId"));
    CHECK(sent[1]["partition"] == "p/with space");
    CHECK(sent[1]["payload"] == json::array({1, 2}));
    CHECK(sent[1]["traceId"] == items[1].trace_id);
    CHECK(sent[2]["payload"] == "text");
    CHECK(sent[3]["payload"].is_null());
    // Items without a transactionId get distinct generated UUIDv7s.
    const std::string generated_1 = sent[1]["transactionId"];
    const std::string generated_2 = sent[2]["transactionId"];
    CHECK(std::regex_match(generated_1, uuid_v7_pattern));
    CHECK(std::regex_match(generated_2, uuid_v7_pattern));
    CHECK(generated_1 != generated_2);
}

TEST_CASE("client: push rejects bad payloads locally and checks the result count",
          "[client][api][push]") {
    TestServer server;
    Client client{options_for(server)};
    SECTION("invalid payload JSON: no request") {
        std::vector<PushItem> items(1);
        items[0].queue = "q";
        items[0].payload_json = "{not json";
        auto results = client.push(items);
        REQUIRE_FALSE(results);
        CHECK(results.error().is(Errc::invalid_argument));
        CHECK(server.requests().empty());
    }
    SECTION("empty batch: no request") {
        auto results = client.push(std::span<const PushItem>{});
        REQUIRE(results);
        CHECK(results->empty());
        CHECK(server.requests().empty());
    }
    SECTION("wrong number of results") {
        server.reply_always(json_reply(201, "[]"));
        std::vector<PushItem> items(2);
        items[0].queue = items[1].queue = "q";
        auto results = client.push(items);
        REQUIRE_FALSE(results);
        CHECK(results.error().is(Errc::bad_response));
    }
}

TEST_CASE("client: generated transaction ids are well-formed and unique", "[client][api]") {
    TestServer server;
    Client client{options_for(server)};
    std::set<std::string> seen;
    for (int i = 0; i < 10'000; ++i) {
        const std::string id = client.generate_uuid_v7();
        REQUIRE(std::regex_match(id, uuid_v7_pattern));
        seen.insert(id);
    }
    CHECK(seen.size() == 10'000);
}

TEST_CASE("client: pop builds the wildcard and partition routes with every parameter",
          "[client][api][pop]") {
    TestServer server;
    server.reply_always(no_content_reply());
    Client client{options_for(server)};
    SECTION("wildcard with all options") {
        PopRequest request;
        request.queue = "orders q";
        request.batch = 10;
        request.is_wait = true;
        request.timeout_ms = 1000;
        request.consumer_group = "analytics";
        request.partitions = 3;
        request.is_auto_ack = true;
        request.subscription_mode = "new";
        request.subscription_from = "2025-01-01T00:00:00.000Z";
        auto result = client.pop(request);
        REQUIRE(result);
        CHECK(result->messages.empty());
        CHECK(server.last_request().method == "GET");
        CHECK(server.last_request().target ==
              "/api/v1/pop/queue/orders%20q?batch=10&wait=true&timeout=1000"
              "&consumerGroup=analytics&partitions=3&autoAck=true&subscriptionMode=new"
              "&subscriptionFrom=2025-01-01T00%3A00%3A00.000Z");
    }
    SECTION("one partition, defaults") {
        PopRequest request;
        request.queue = "orders";
        request.partition = "p-1";
        request.partitions = 4;  // ignored on the partition route
        REQUIRE(client.pop(request));
        CHECK(server.last_request().target ==
              "/api/v1/pop/queue/orders/partition/p-1?batch=1&wait=false&timeout=30000");
    }
    SECTION("bad arguments") {
        PopRequest request;
        request.queue = "orders";
        request.batch = 0;
        auto result = client.pop(request);
        REQUIRE_FALSE(result);
        CHECK(result.error().is(Errc::invalid_argument));
        CHECK(server.requests().empty());
    }
}

TEST_CASE("client: pop parses messages of several partitions under one lease",
          "[client][api][pop]") {
    TestServer server;
    server.reply_always(json_reply(200, R"({"success":true,"queue":"orders","partition":"p1",
        "partitionId":"pid-1","leaseId":"lease-7","consumerGroup":"g","partitionsClaimed":2,
        "leaseExpiresAt":"2025-01-01T00:05:00.000Z",
        "messages":[
          {"id":"m1","transactionId":"t1","traceId":null,"data":{"n":1},"producerSub":null,
           "createdAt":"2025-01-01T00:00:00.000001Z","partitionId":"pid-1","partition":"p1",
           "leaseId":"lease-7","consumerGroup":"g"},
          {"id":"m2","transactionId":"t2","traceId":"tr-2","data":[1,"x"],"producerSub":"alice",
           "createdAt":"2025-01-01T00:00:00.000002Z","partitionId":"pid-2","partition":"p2",
           "leaseId":"lease-7","consumerGroup":"g","retryCount":2}]})"));
    Client client{options_for(server)};
    PopRequest request;
    request.queue = "orders";
    request.batch = 2;
    request.partitions = 2;
    auto result = client.pop(request);
    REQUIRE(result);
    CHECK(result->queue == "orders");
    CHECK(result->lease_id == "lease-7");
    CHECK(result->partitions_claimed == 2);
    REQUIRE(result->messages.size() == 2);
    const Message& first = result->messages[0];
    CHECK(first.id == "m1");
    CHECK(first.transaction_id == "t1");
    CHECK(first.trace_id.empty());
    CHECK(json::parse(first.data_json) == json{{"n", 1}});
    CHECK(first.partition_id == "pid-1");
    CHECK(first.created_at == "2025-01-01T00:00:00.000001Z");
    const Message& second = result->messages[1];
    CHECK(second.partition == "p2");
    CHECK(second.partition_id == "pid-2");
    CHECK(second.trace_id == "tr-2");
    CHECK(second.producer_sub == "alice");
    CHECK(json::parse(second.data_json) == json::array({1, "x"}));
    CHECK(second.queue == "orders");
    CHECK(second.retry_count == 2);
    CHECK(first.retry_count == 0);
    CHECK(result->lease_expires_at == "2025-01-01T00:05:00.000Z");

    const Ack ack = Ack::of(second, AckStatus::failed, "boom");
    CHECK(ack.transaction_id == "t2");
    CHECK(ack.partition_id == "pid-2");
    CHECK(ack.lease_id == "lease-7");
    CHECK(ack.consumer_group == "g");
}

TEST_CASE("client: pop maps a 200 that reports a failure to rejected", "[client][api][pop]") {
    TestServer server;
    server.reply_always(json_reply(200, R"({"success":false,"error":"db down"})"));
    Client client{options_for(server)};
    PopRequest request;
    request.queue = "q";
    auto result = client.pop(request);
    REQUIRE_FALSE(result);
    CHECK(result.error().is(Errc::rejected));
    CHECK(result.error().context.find("db down") != std::string::npos);
}

TEST_CASE("client: ack and batch ack send the documented fields and parse the array answers",
          "[client][api][ack]") {
    TestServer server;
    Client client{options_for(server)};
    SECTION("single") {
        server.reply_always(json_reply(200, R"([{"index":0,"transactionId":"t1","success":false,
            "error":"Invalid or expired lease","queueName":"q","partitionName":"p",
            "leaseReleased":null,"dlq":false}])"));
        Ack ack;
        ack.transaction_id = "t1";
        ack.partition_id = "pid";
        ack.status = AckStatus::failed;
        ack.error = "handler threw";
        ack.lease_id = "lease-1";
        auto result = client.ack(ack);
        REQUIRE(result);
        CHECK_FALSE(result->is_success);
        CHECK(result->error == "Invalid or expired lease");
        CHECK(result->queue_name == "q");
        CHECK(result->partition_name == "p");
        CHECK_FALSE(result->is_lease_released.has_value());
        const json body = body_of(server.last_request());
        CHECK(server.last_request().target == "/api/v1/ack");
        CHECK(body == json{{"transactionId", "t1"},
                           {"partitionId", "pid"},
                           {"status", "failed"},
                           {"error", "handler threw"},
                           {"consumerGroup", nullptr},
                           {"leaseId", "lease-1"}});
    }
    SECTION("batch") {
        server.reply_always(json_reply(200, R"([
            {"index":0,"transactionId":"a","success":true,"error":null,"leaseReleased":false,"dlq":false},
            {"index":1,"transactionId":"b","success":true,"error":null,"leaseReleased":true,"dlq":true}])"));
        std::vector<Ack> acks(2);
        acks[0].transaction_id = "a";
        acks[0].partition_id = "p1";
        acks[1].transaction_id = "b";
        acks[1].partition_id = "p2";
        acks[1].status = AckStatus::dlq;
        auto results = client.ack_batch(acks, "g");
        REQUIRE(results);
        REQUIRE(results->size() == 2);
        CHECK((*results)[0].is_success);
        CHECK((*results)[0].is_lease_released == false);
        CHECK((*results)[1].is_dlq);
        CHECK((*results)[1].is_lease_released == true);
        const json body = body_of(server.last_request());
        CHECK(server.last_request().target == "/api/v1/ack/batch");
        CHECK(body["consumerGroup"] == "g");
        REQUIRE(body["acknowledgments"].size() == 2);
        CHECK(body["acknowledgments"][0]["status"] == "completed");
        CHECK(body["acknowledgments"][0]["error"].is_null());
        CHECK_FALSE(body["acknowledgments"][0].contains("leaseId"));
        CHECK(body["acknowledgments"][1]["status"] == "dlq");
        CHECK(body["acknowledgments"][1]["partitionId"] == "p2");
    }
    SECTION("empty batch: no request") {
        auto results = client.ack_batch(std::span<const Ack>{}, "");
        REQUIRE(results);
        CHECK(results->empty());
        CHECK(server.requests().empty());
    }
    SECTION("a DB error object is rejected") {
        server.reply_always(json_reply(200, R"({"success":false,"error":"deadlock"})"));
        Ack ack;
        ack.transaction_id = "t";
        ack.partition_id = "p";
        auto result = client.ack(ack);
        REQUIRE_FALSE(result);
        CHECK(result.error().is(Errc::rejected));
    }
}

TEST_CASE("client: lease extend posts seconds to the lease route", "[client][api][lease]") {
    TestServer server;
    server.reply_always(json_reply(200, R"([{"index":0,"leaseId":"l-1","success":true,"error":null,
        "expiresAt":"2025-01-01T00:05:00.000Z"}])"));
    Client client{options_for(server)};
    auto result = client.extend_lease("l-1", 120);
    REQUIRE(result);
    CHECK(result->is_success);
    CHECK(result->lease_id == "l-1");
    CHECK(result->expires_at == "2025-01-01T00:05:00.000Z");
    CHECK(server.last_request().target == "/api/v1/lease/l-1/extend");
    CHECK(body_of(server.last_request()) == json{{"seconds", 120}});
    REQUIRE(client.extend_lease("l-1"));
    CHECK(body_of(server.last_request()) == json::object());
    CHECK(client.extend_lease("").error().is(Errc::invalid_argument));
}

TEST_CASE("client: transaction sends ordered operations, a rollback is rejected",
          "[client][api][transaction]") {
    TestServer server;
    Client client{options_for(server)};
    TransactionRequest request;
    TransactionPush push;
    push.items.resize(1);
    push.items[0].queue = "out";
    push.items[0].payload_json = R"({"v":2})";
    push.items[0].transaction_id = "out-1";
    Ack ack;
    ack.transaction_id = "in-1";
    ack.partition_id = "pid";
    ack.consumer_group = "g";
    request.operations = {push, ack};
    request.required_leases = {"lease-1"};
    SECTION("committed") {
        server.reply_always(json_reply(200, R"({"transactionId":"tx-1","success":true,"results":[
            {"index":0,"type":"push","success":true,"transactionId":"out-1","messageId":"m9","partitionId":"p9","queueName":"out"},
            {"index":1,"type":"ack","success":true,"transactionId":"in-1","error":null,"dlq":false}]})"));
        auto result = client.transaction(request);
        REQUIRE(result);
        CHECK(result->transaction_id == "tx-1");
        REQUIRE(result->results.size() == 2);
        CHECK(result->results[0].type == "push");
        CHECK(result->results[0].message_id == "m9");
        CHECK(result->results[1].type == "ack");
        CHECK(result->results[1].is_success);
        const json body = body_of(server.last_request());
        CHECK(server.last_request().target == "/api/v1/transaction");
        REQUIRE(body["operations"].size() == 2);
        CHECK(body["operations"][0]["type"] == "push");
        CHECK(body["operations"][0]["items"][0]["queue"] == "out");
        CHECK(body["operations"][0]["items"][0]["payload"] == json{{"v", 2}});
        CHECK(body["operations"][0]["items"][0]["transactionId"] == "out-1");
        CHECK(body["operations"][1]["type"] == "ack");
        CHECK(body["operations"][1]["transactionId"] == "in-1");
        CHECK(body["operations"][1]["partitionId"] == "pid");
        CHECK(body["operations"][1]["status"] == "completed");
        CHECK(body["operations"][1]["consumerGroup"] == "g");
        CHECK(body["requiredLeases"] == json::array({"lease-1"}));
    }
    SECTION("rolled back") {
        server.reply_always(json_reply(200, R"({"transactionId":"tx-2","success":false,
            "error":"Message not found","results":[]})"));
        auto result = client.transaction(request);
        REQUIRE_FALSE(result);
        CHECK(result.error().is(Errc::rejected));
        CHECK(result.error().context.find("Message not found") != std::string::npos);
    }
    SECTION("never retried, even on 5xx") {
        server.reply_always(json_reply(500, R"({"error":"boom"})"));
        auto result = client.transaction(request);
        REQUIRE_FALSE(result);
        CHECK(http_status_of(result.error()) == 500);
        CHECK(server.requests().size() == 1);
    }
    SECTION("no operations") {
        CHECK(client.transaction({}).error().is(Errc::invalid_argument));
    }
}

TEST_CASE("client: trace events are posted with names and data", "[client][api]") {
    TestServer server;
    server.reply_always(json_reply(201, R"({"success":true,"traceId":"trace-1"})"));
    Client client{options_for(server)};
    TraceEvent event;
    event.transaction_id = "t";
    event.partition_id = "p";
    event.trace_names = {"order-flow"};
    event.data_json = R"({"step":"charged"})";
    auto id = client.trace(event);
    REQUIRE(id);
    CHECK(*id == "trace-1");
    const json body = body_of(server.last_request());
    CHECK(server.last_request().target == "/api/v1/traces");
    CHECK(body["traceNames"] == json::array({"order-flow"}));
    CHECK(body["eventType"] == "info");
    CHECK(body["data"] == json{{"step", "charged"}});
    CHECK(body["consumerGroup"].is_null());
}

TEST_CASE("client: queue resources: delete, list, detail", "[client][api][admin]") {
    TestServer server;
    Client client{options_for(server)};
    SECTION("delete") {
        server.reply_always(json_reply(200, R"({"deleted":true,"queue":"a b","existed":false})"));
        auto result = client.delete_queue("a b");
        REQUIRE(result);
        CHECK(result->is_deleted);
        CHECK_FALSE(result->is_existed);
        CHECK(server.last_request().method == "DELETE");
        CHECK(server.last_request().target == "/api/v1/resources/queues/a%20b");
    }
    SECTION("list") {
        server.reply_always(json_reply(200, R"({"queues":[{"id":"1","name":"q1","namespace":"ns",
            "task":"t","createdAt":"2025-01-01T00:00:00.000Z","partitions":3,
            "messages":{"total":10,"pending":4,"processing":1}}]})"));
        auto result = client.list_queues();
        REQUIRE(result);
        REQUIRE(result->size() == 1);
        CHECK((*result)[0].name == "q1");
        CHECK((*result)[0].partitions == 3);
        CHECK((*result)[0].messages.total == 10);
        CHECK((*result)[0].messages.pending == 4);
        CHECK((*result)[0].messages.processing == 1);
        CHECK(server.last_request().target == "/api/v1/resources/queues");
    }
    SECTION("detail") {
        server.reply_always(json_reply(200, R"({"id":"1","name":"q1","namespace":"","task":"",
            "createdAt":"x","partitions":[{"id":"p1","name":"Default","createdAt":"y",
            "stats":{"total":5,"pending":1,"processing":1,"completed":2,"failed":0,"deadLetter":1},
            "oldestMessage":"2025-01-01T00:00:00.000Z","newestMessage":null}],
            "totals":{"total":5,"pending":1,"processing":1,"completed":2,"failed":0,"deadLetter":1}})"));
        auto result = client.get_queue("q1");
        REQUIRE(result);
        REQUIRE(result->partitions.size() == 1);
        CHECK(result->partitions[0].name == "Default");
        CHECK(result->partitions[0].stats.completed == 2);
        CHECK(result->partitions[0].stats.dead_letter == 1);
        CHECK(result->partitions[0].oldest_message == "2025-01-01T00:00:00.000Z");
        CHECK(result->partitions[0].newest_message.empty());
        CHECK(result->totals.total == 5);
    }
    SECTION("unknown queue is HTTP 404 with the server's message, not retried") {
        server.reply_always(json_reply(404, R"({"error":"Queue not found"})"));
        auto result = client.get_queue("nope");
        REQUIRE_FALSE(result);
        CHECK(http_status_of(result.error()) == 404);
        CHECK(result.error().context == "GET /api/v1/resources/queues/nope: Queue not found");
        CHECK(server.requests().size() == 1);
    }
}

TEST_CASE("client: DLQ paging and message listings", "[client][api][admin]") {
    TestServer server;
    Client client{options_for(server)};
    SECTION("dlq") {
        server.reply_always(json_reply(200, R"({"messages":[{"id":"m1","transactionId":"t1",
            "partitionId":"p","queue":"q","partition":"Default","consumerGroup":"__QUEUE_MODE__",
            "errorMessage":"boom","retryCount":1,"data":{"x":1},"producerSub":null,
            "createdAt":"c","failedAt":"f"}],"pagination":{"limit":10,"offset":20}})"));
        DlqQuery query;
        query.queue = "q";
        query.consumer_group = "g";
        query.limit = 10;
        query.offset = 20;
        auto page = client.dlq(query);
        REQUIRE(page);
        CHECK(server.last_request().target ==
              "/api/v1/dlq?queue=q&consumerGroup=g&limit=10&offset=20");
        CHECK(page->limit == 10);
        CHECK(page->offset == 20);
        REQUIRE(page->messages.size() == 1);
        CHECK(page->messages[0].error_message == "boom");
        CHECK(page->messages[0].retry_count == 1);
        CHECK(json::parse(page->messages[0].data_json) == json{{"x", 1}});
        CHECK(page->messages[0].failed_at == "f");
    }
    SECTION("messages") {
        server.reply_always(json_reply(200, R"({"messages":[{"id":"m","transactionId":"t",
            "partitionId":"p","queuePath":"q/Default","queue":"q","partition":"Default",
            "namespace":"","task":"","status":"pending","traceId":null,"createdAt":"c",
            "leaseExpiresAt":null}],"mode":{"type":"queue"}})"));
        MessagesQuery query;
        query.queue = "q";
        query.status = "pending";
        query.namespace_name = "ns";
        auto messages = client.list_messages(query);
        REQUIRE(messages);
        REQUIRE(messages->size() == 1);
        CHECK((*messages)[0].queue_path == "q/Default");
        CHECK((*messages)[0].status == "pending");
        CHECK(server.last_request().target ==
              "/api/v1/messages?queue=q&ns=ns&status=pending&limit=200&offset=0");
    }
}

TEST_CASE("client: consumer group listing, delete, subscription and seeks",
          "[client][api][admin]") {
    TestServer server;
    Client client{options_for(server)};
    SECTION("list") {
        server.reply_always(json_reply(200, R"([{"name":"g","topics":["q"],"queueName":"q",
            "members":2,"partitionsWithLag":1,"totalLag":null,"maxTimeLag":12,"state":"Lagging",
            "subscriptionMode":"new","subscriptionTimestamp":"ts","subscriptionCreatedAt":"c"}])"));
        auto groups = client.list_consumer_groups();
        REQUIRE(groups);
        REQUIRE(groups->size() == 1);
        CHECK((*groups)[0].topics == std::vector<std::string>{"q"});
        CHECK((*groups)[0].members == 2);
        CHECK((*groups)[0].max_time_lag_s == 12);
        CHECK((*groups)[0].state == "Lagging");
        CHECK((*groups)[0].subscription_mode == "new");
    }
    SECTION("delete everywhere and for one queue") {
        server.reply_always(json_reply(200, R"({"success":true,"consumerGroup":"g","queueName":"q",
            "deletedPartitions":3,"metadataDeleted":false})"));
        auto all = client.delete_consumer_group("g", false);
        REQUIRE(all);
        CHECK(all->deleted_partitions == 3);
        CHECK(server.last_request().method == "DELETE");
        CHECK(server.last_request().target == "/api/v1/consumer-groups/g?deleteMetadata=false");
        auto one = client.delete_consumer_group_for_queue("g", "q");
        REQUIRE(one);
        CHECK(one->queue_name == "q");
        CHECK(server.last_request().target ==
              "/api/v1/consumer-groups/g/queues/q?deleteMetadata=true");
    }
    SECTION("subscription timestamp") {
        server.reply_always(json_reply(200, R"({"success":true,"consumerGroup":"g",
            "newTimestamp":"2025-01-01T00:00:00.000Z","rowsUpdated":2})"));
        auto result = client.update_subscription_timestamp("g", "2025-01-01T00:00:00.000Z");
        REQUIRE(result);
        CHECK(result->rows_updated == 2);
        CHECK(server.last_request().target == "/api/v1/consumer-groups/g/subscription");
        CHECK(body_of(server.last_request()) ==
              json{{"subscriptionTimestamp", "2025-01-01T00:00:00.000Z"}});
    }
    SECTION("seek to end, to a time, one partition") {
        server.reply_always(json_reply(200, R"({"success":true,"consumerGroup":"g","queueName":"q",
            "seekToEnd":true,"targetTimestamp":null,"partitionsUpdated":4,"partitionName":"p",
            "updated":true,"cursorMovedTo":"m-9"})"));
        auto to_end = client.seek("g", "q", SeekTarget{true, ""});
        REQUIRE(to_end);
        CHECK(to_end->partitions_updated == 4);
        CHECK(to_end->is_seek_to_end);
        CHECK(server.last_request().target == "/api/v1/consumer-groups/g/queues/q/seek");
        CHECK(body_of(server.last_request()) == json{{"toEnd", true}});
        REQUIRE(client.seek("g", "q", SeekTarget{false, "2025-01-01T00:00:00Z"}));
        CHECK(body_of(server.last_request()) == json{{"timestamp", "2025-01-01T00:00:00Z"}});
        CHECK(client.seek("g", "q", SeekTarget{}).error().is(Errc::invalid_argument));
        auto partition = client.seek_partition_to_end("g", "q", "p");
        REQUIRE(partition);
        CHECK(partition->is_updated);
        CHECK(partition->cursor_moved_to == "m-9");
        CHECK(server.last_request().target ==
              "/api/v1/consumer-groups/g/queues/q/partitions/p/seek");
    }
    SECTION("a 500 with success:false is an HTTP error carrying the message") {
        server.reply_always(json_reply(500, R"({"success":false,"error":"Partition not found"})"));
        auto result = client.seek_partition_to_end("g", "q", "zzz");
        REQUIRE_FALSE(result);
        CHECK(http_status_of(result.error()) == 500);
        CHECK(result.error().context.find("Partition not found") != std::string::npos);
    }
}

TEST_CASE("client: maintenance, health and raw JSON reads", "[client][api][admin]") {
    TestServer server;
    Client client{options_for(server)};
    SECTION("maintenance") {
        server.set_handler([](const RecordedRequest& request) {
            if (request.method == "GET") {
                return json_reply(200, R"({"maintenanceMode":true,"popMaintenanceMode":false,
                    "bufferedMessages":7,"bufferHealthy":true})");
            }
            return json_reply(200, R"({"popMaintenanceMode":true,"message":"on"})");
        });
        auto status = client.maintenance();
        REQUIRE(status);
        CHECK(status->is_push_maintenance);
        CHECK(status->buffered_messages == 7);
        auto changed = client.set_maintenance(true, true);
        REQUIRE(changed);
        CHECK(changed->is_pop_maintenance);
        CHECK(changed->is_push_maintenance);  // read back from GET
        const auto requests = server.requests();
        REQUIRE(requests.size() == 3);
        CHECK(requests[1].target == "/api/v1/system/maintenance/pop");
        CHECK(json::parse(requests[1].body) == json{{"enabled", true}});
    }
    SECTION("health 200 and 503") {
        server.reply_always(json_reply(200, R"({"status":"healthy","database":"connected"})"));
        auto healthy = client.health();
        REQUIRE(healthy);
        CHECK(healthy->is_healthy);
        CHECK(healthy->http_status == 200);
        server.reply_always(json_reply(503, R"({"status":"unhealthy"})"));
        auto unhealthy = client.health();
        REQUIRE(unhealthy);
        CHECK_FALSE(unhealthy->is_healthy);
        CHECK(unhealthy->http_status == 503);
        CHECK(server.requests().size() == 2);  // a probe is not retried
    }
    SECTION("get_json") {
        server.reply_always(json_reply(200, R"({"uptime":1})"));
        auto body = client.get_json("/metrics");
        REQUIRE(body);
        CHECK(json::parse(*body) == json{{"uptime", 1}});
    }
    SECTION("post_json: the body of a 2xx answer; an error answer is not retried") {
        server.reply_always(json_reply(202, R"({"transferring":true})"));
        auto body = client.post_json("/api/v1/system/cluster/transfer-leader", R"({"to":2})");
        REQUIRE(body);
        CHECK(json::parse(*body) == json{{"transferring", true}});
        server.reply_always(json_reply(503, R"({"error":"no leader"})"));
        auto refused = client.post_json("/api/v1/system/cluster/transfer-leader", R"({"to":2})");
        REQUIRE_FALSE(refused);
        CHECK(http_status_of(refused.error()) == 503);
        const auto requests = server.requests();
        REQUIRE(requests.size() == 2);
        CHECK(requests[0].method == "POST");
        CHECK(json::parse(requests[0].body) == json{{"to", 2}});
    }
}

TEST_CASE("client: error mapping and retries follow the JS client", "[client][errors]") {
    TestServer server;
    Client client{options_for(server)};  // 2 retries, 1 ms base delay
    SECTION("4xx with {error}: not retried, status and message kept") {
        server.reply_always(json_reply(400, R"({"error":"queue is required"})"));
        auto result = client.configure(ConfigureRequest{});
        REQUIRE_FALSE(result);
        CHECK(http_status_of(result.error()) == 400);
        CHECK_FALSE(is_retryable(result.error()));
        CHECK(result.error().context == "POST /api/v1/configure: queue is required");
        CHECK(server.requests().size() == 1);
    }
    SECTION("5xx: retried, then the last error") {
        server.reply_always(json_reply(503, "upstream sad"));
        auto result = client.list_queues();
        REQUIRE_FALSE(result);
        CHECK(http_status_of(result.error()) == 503);
        CHECK(result.error().context.find("HTTP 503: upstream sad") != std::string::npos);
        CHECK(server.requests().size() == 3);
    }
    SECTION("5xx then success") {
        server.set_handler([](const RecordedRequest&) {
            static std::atomic<int> calls{0};
            return calls++ == 0 ? json_reply(500, R"({"error":"transient"})")
                                : json_reply(200, R"({"queues":[]})");
        });
        auto result = client.list_queues();
        REQUIRE(result);
        CHECK(result->empty());
        CHECK(server.requests().size() == 2);
    }
    SECTION("garbage in a 200") {
        server.reply_always(json_reply(200, "<html>"));
        auto result = client.list_queues();
        REQUIRE_FALSE(result);
        CHECK(result.error().is(Errc::bad_response));
    }
    SECTION("wrong shape in a 200") {
        server.reply_always(json_reply(200, R"({"queues":7})"));
        auto result = client.list_queues();
        REQUIRE_FALSE(result);
        CHECK(result.error().is(Errc::bad_response));
    }
    SECTION("close() cancels a pending retry wait") {
        ClientOptions options = options_for(server);
        options.retry_delay_ms = 3'600'000;
        Client slow{options};
        server.reply_always(json_reply(500, "{}"));
        std::thread closer([&] {
            server.wait_for_requests(1);
            slow.close();
        });
        auto result = slow.list_queues();
        closer.join();
        REQUIRE_FALSE(result);
        CHECK(result.error().is(Errc::cancelled));
    }
}

TEST_CASE("client: calls share keep-alive connections across threads", "[client][pool]") {
    TestServer server;
    server.reply_always(json_reply(201, R"([{"status":"queued","message_id":"m"}])"));
    ClientOptions options = options_for(server);
    options.connections_max = 3;
    Client client{options};
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 6; ++t) {
        threads.emplace_back([&] {
            PushItem item;
            item.queue = "q";
            item.payload_json = R"({"n":1})";
            for (int i = 0; i < 100; ++i) {
                auto result = client.push(std::span<const PushItem>{&item, 1});
                if (!result || (*result)[0].status != PushStatus::queued) {
                    ++failures;
                }
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    CHECK(failures == 0);
    CHECK(server.requests().size() == 600);
    CHECK(client.connects_total() <= 3);
    CHECK(server.connections_accepted() <= 3);
}

TEST_CASE("client: pop_into reuses one result and resets what the next answer leaves out",
          "[client][api][pop]") {
    TestServer server;
    int call = 0;
    server.set_handler([&call](const RecordedRequest&) {
        ++call;
        if (call == 1) {
            return json_reply(200, R"({"queue":"q","partition":"p1","partitionId":"pid-1",
                "leaseId":"lease-1","consumerGroup":"g","partitionsClaimed":1,"messages":[
                {"id":"m1","transactionId":"t1","traceId":"tr-1","data":{"a":1},"retryCount":3,
                 "producerSub":"alice","leaseId":"own-lease"},
                {"id":"m2","transactionId":"t2","data":"two"}]})");
        }
        if (call == 2) {
            // One message, without trace, retry count, lease or producer, and no
            // partitionsClaimed: none of the first answer's values may survive.
            return json_reply(200, R"({"queue":"q","partitionId":"pid-9","leaseId":"lease-9",
                "messages":[{"id":"m3","transactionId":"t3","data":null}]})");
        }
        return no_content_reply();
    });
    Client client{options_for(server)};
    PopRequest request;
    request.queue = "q";
    PopResult result;
    REQUIRE(client.pop_into(request, result));
    REQUIRE(result.messages.size() == 2);
    CHECK(result.messages[0].lease_id == "own-lease");
    CHECK(result.messages[1].lease_id == "lease-1");  // from the answer
    CHECK(result.messages[1].data_json == R"("two")");
    REQUIRE(client.pop_into(request, result));
    REQUIRE(result.messages.size() == 1);
    const Message& message = result.messages[0];
    CHECK(message.id == "m3");
    CHECK(message.transaction_id == "t3");
    CHECK(message.trace_id.empty());
    CHECK(message.retry_count == 0);
    CHECK(message.producer_sub.empty());
    CHECK(message.data_json == "null");
    CHECK(message.lease_id == "lease-9");
    CHECK(message.partition_id == "pid-9");
    CHECK(message.consumer_group.empty());
    CHECK(result.partition.empty());
    CHECK(result.partitions_claimed == 1);      // one message, no count in the answer
    REQUIRE(client.pop_into(request, result));  // 204: nothing delivered
    CHECK(result.messages.empty());
    CHECK(result.lease_id.empty());
    CHECK(result.partitions_claimed == 0);
}

TEST_CASE("client: push_into reuses one results vector across pushes", "[client][api][push]") {
    TestServer server;
    int call = 0;
    server.set_handler([&call](const RecordedRequest&) {
        ++call;
        if (call == 1) {
            return json_reply(201, R"([
                {"index":0,"transaction_id":"a","status":"queued","message_id":"m-a",
                 "partition_id":"p-a","trace_id":"tr-a","queueName":"q"},
                {"index":1,"transaction_id":"b","status":"failed","error":"full"}])");
        }
        return json_reply(201, R"([{"index":0,"transactionId":"c","status":"duplicate"}])");
    });
    Client client{options_for(server)};
    std::vector<PushItem> items(2);
    items[0].queue = items[1].queue = "q";
    std::vector<PushResult> results;
    REQUIRE(client.push_into(items, results));
    REQUIRE(results.size() == 2);
    CHECK(results[0].status == PushStatus::queued);
    CHECK(results[0].message_id == "m-a");
    CHECK(results[1].status == PushStatus::failed);
    CHECK(results[1].error == "full");
    items.resize(1);
    REQUIRE(client.push_into(items, results));
    REQUIRE(results.size() == 1);
    CHECK(results[0].status == PushStatus::duplicate);
    CHECK(results[0].transaction_id == "c");
    CHECK(results[0].message_id.empty());
    CHECK(results[0].partition_id.empty());
    CHECK(results[0].trace_id.empty());
    CHECK(results[0].queue_name.empty());
    REQUIRE(client.push_into(std::span<const PushItem>{}, results));
    CHECK(results.empty());
}

TEST_CASE("client: answers the one-pass reader rejects are bad_response", "[client][api]") {
    TestServer server;
    Client client{options_for(server)};
    PopRequest pop;
    pop.queue = "q";
    std::vector<PushItem> items(1);
    items[0].queue = "q";
    const std::pair<const char*, const char*> pops[] = {
        {"trailing junk", R"({"messages":[]} x)"},
        {"missing comma", R"({"queue":"q" "messages":[]})"},
        {"trailing comma", R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p"},]})"},
        {"message not an object", R"({"messages":[1]})"},
        {"bad string", "{\"messages\":[{\"id\":\"\x01\"}]}"},
        {"unterminated", R"({"messages":[{"id":"m")"},
        {"no ids", R"({"messages":[{"id":"m"}]})"},
        {"no messages", R"({"queue":"q"})"},
        {"not an object", R"([1,2])"},
    };
    for (const auto& [name, body] : pops) {
        INFO(name);
        server.reply_always(json_reply(200, body));
        auto result = client.pop(pop);
        REQUIRE_FALSE(result);
        CHECK(result.error().is(Errc::bad_response));
    }
    const std::pair<const char*, const char*> pushes[] = {
        {"trailing junk", R"([{"status":"queued"}]])"},
        {"no status", R"([{"message_id":"m"}])"},
        {"status not a string", R"([{"status":1}])"},
        {"element not an object", R"(["queued"])"},
        {"escaped key", R"([{"st\u0061tus":"queued","x":[1,{"y":null}]}, ])"},
    };
    for (const auto& [name, body] : pushes) {
        INFO(name);
        server.reply_always(json_reply(201, body));
        auto result = client.push(items);
        REQUIRE_FALSE(result);
        CHECK(result.error().is(Errc::bad_response));
    }
    // An escaped key is decoded: this one is a status.
    server.reply_always(json_reply(201, R"([{"st\u0061tus":"queued","x":[1,{"y":null}]}])"));
    auto pushed = client.push(items);
    REQUIRE(pushed);
    CHECK((*pushed)[0].status == PushStatus::queued);
}

TEST_CASE("client: pop answers with random strings decode like nlohmann, and corrupt ones fail",
          "[client][api][pop]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    // Plain ASCII takes the cursor's fast path; quotes, backslashes, control characters and
    // UTF-8 take the full scanner.
    const std::vector<std::string> pieces = {"a",
                                             "Z",
                                             "0",
                                             "-",
                                             " ",
                                             "~",
                                             "\x7f",
                                             "\"",
                                             "\\",
                                             "\n",
                                             "\t",
                                             "\x01",
                                             "\xc3\xa9",
                                             "\xe2\x82\xac",
                                             "\xf0\x9f\x98\x80",
                                             "/"};
    const auto random_text = [&] {
        std::string text;
        // Up to 40 pieces: long enough that the fast path reads whole words before a special
        // byte at any offset.
        for (std::uint64_t n = rng.below(40); n > 0; --n) {
            text += pieces[rng.below(pieces.size())];
        }
        return text;
    };
    TestServer server;
    Client client{options_for(server)};
    PopRequest request;
    request.queue = "q";
    for (int round = 0; round < 200; ++round) {
        INFO("round=" << round);
        json answer = {{"queue", "q"}, {"leaseId", random_text()}, {"messages", json::array()}};
        const std::uint64_t count = 1 + rng.below(3);
        for (std::uint64_t i = 0; i < count; ++i) {
            answer["messages"].push_back({{"id", random_text()},
                                          {"transactionId", "t" + random_text()},
                                          {"partitionId", "p" + random_text()},
                                          {random_text(), random_text()},
                                          {"data", {{"k", random_text()}}}});
        }
        const bool is_ascii = rng.below(2) == 0;
        std::string body = answer.dump(rng.below(2) == 0 ? -1 : 1, ' ', is_ascii);
        server.reply_always(json_reply(200, body));
        auto result = client.pop(request);
        REQUIRE(result);
        REQUIRE(result->messages.size() == count);
        for (std::uint64_t i = 0; i < count; ++i) {
            const json& expected = answer["messages"][i];
            const Message& message = result->messages[i];
            CHECK(message.id == expected["id"].get<std::string>());
            CHECK(message.transaction_id == expected["transactionId"].get<std::string>());
            CHECK(message.partition_id == expected["partitionId"].get<std::string>());
            CHECK(json::parse(message.data_json) == expected["data"]);
        }
        // One byte changed: whenever nlohmann rejects the text, so does the client.
        const std::size_t at = rng.below(body.size());
        body[at] = static_cast<char>(rng.below(256));
        server.reply_always(json_reply(200, body));
        auto corrupt = client.pop(request);
        if (!json::accept(body)) {
            REQUIRE_FALSE(corrupt);
            CHECK(corrupt.error().is(Errc::bad_response));
        }
    }
}
