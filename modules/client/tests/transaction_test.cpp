// client/tests/transaction_test.cpp — TransactionBuilder and the transaction wire: the exact
// body every operation kind and guard is written as, the requests refused before sending, and the
// reading of answers with KV, timer and lock results, of rollbacks (200), conflicts (409) and
// invalid transactions (400), directly and through a Client against the recording server.
#include "queen/client/transaction.hpp"

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "queen/client/client.hpp"
#include "queen/client/protocol.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "test_server.hpp"

namespace {

using nlohmann::json;
using namespace queen::client;
using namespace std::chrono_literals;
using queen::client::testing::json_reply;
using queen::client::testing::TestServer;

/// Generated transactionIds "gen-1", "gen-2", ...
class CountingIds final : public IdSource {
public:
    void append_uuid_v7(std::string& out) override { out += "gen-" + std::to_string(++count_); }

private:
    int count_ = 0;
};

const HttpRequest transaction_request{"POST", "/api/v1/transaction", "", true, false, 0};

HttpResponse response_of(int status, std::string body) {
    HttpResponse response;
    response.status = status;
    response.body = std::move(body);
    return response;
}

json body_of(const TransactionRequest& request) {
    CountingIds ids;
    OwnedRequest out;
    const auto built = build_transaction(request, true, ids, out);
    INFO((built ? std::string{} : built.error().message()));
    REQUIRE(built);
    CHECK(out.method == "POST");
    CHECK(out.target == "/api/v1/transaction");
    CHECK_FALSE(out.is_idempotent);
    return json::parse(out.body);
}

Message popped_message() {
    Message message;
    message.transaction_id = "in-1";
    message.partition_id = "pid-1";
    message.lease_id = "lease-1";
    message.consumer_group = "workers";
    message.data_json = R"({"order":17})";
    return message;
}

/// An answer in the broker's shape (api format_transaction) for the builder in the first test.
const char* const committed_answer = R"({"transactionId":"tx-9","success":true,"results":[
 {"index":0,"type":"ack","success":true,"transactionId":"in-1","error":null,"dlq":false},
 {"index":1,"type":"kv.set","success":true,"version":41},
 {"index":2,"type":"push","success":true,"transactionId":"gen-1","messageId":"m-1",
  "partitionId":"p-1","queueName":"shipping"},
 {"index":3,"type":"push","success":true,"transactionId":"gen-2","timerId":"~delay.41.3",
  "visibleAt":"2026-01-01T00:00:05.000Z","queueName":"shipping"},
 {"index":4,"type":"timer.set","success":true,"timerId":"remind-17",
  "dueAt":"2026-01-01T00:05:00.000Z","replaced":false},
 {"index":5,"type":"kv.check","success":true,"version":7},
 {"index":6,"type":"kv.delete","success":true,"deleted":true},
 {"index":7,"type":"timer.cancel","success":true,"timerId":"old","cancelled":true},
 {"index":8,"type":"lock.release","success":true}]})";

}  // namespace

TEST_CASE("client: the transaction builder writes every operation kind in order, with its guard",
          "[client][transaction]") {
    LockGrant lock;
    lock.name = "orders/17";
    lock.owner = "worker-a";
    lock.token = 41;
    TransactionBuilder tx;
    tx.ack(popped_message())
        .kv_set("orders", "17", R"({"state":"shipped"})", 3, 60s)
        .queue("shipping", "eu")
        .push(R"({"ship":17})")
        .push("[1]", 5s)
        .timer("remind-17", 5min, "reminders", R"({"id":17})")
        .kv_check("stock", "widget", 7)
        .kv_delete("carts", "17")
        .timer_cancel("old")
        .lock_release(lock)
        .guard(lock);
    REQUIRE(tx.problem().empty());
    const json expected = json::parse(R"({"operations":[
        {"type":"ack","transactionId":"in-1","partitionId":"pid-1","status":"completed",
         "error":null,"consumerGroup":"workers","leaseId":"lease-1",
         "lock":{"name":"orders/17","token":41}},
        {"type":"kv.set","bucket":"orders","key":"17","value":{"state":"shipped"},
         "expectedVersion":3,"ttlMs":60000},
        {"type":"push","items":[{"queue":"shipping","partition":"eu","payload":{"ship":17},
         "transactionId":"gen-1"}]},
        {"type":"push","items":[{"queue":"shipping","partition":"eu","payload":[1],
         "transactionId":"gen-2","delayMs":5000}]},
        {"type":"timer.set","id":"remind-17","queue":"reminders","payload":{"id":17},
         "delayMs":300000},
        {"type":"kv.check","bucket":"stock","key":"widget","expectedVersion":7},
        {"type":"kv.delete","bucket":"carts","key":"17"},
        {"type":"timer.cancel","id":"old"},
        {"type":"lock.release","name":"orders/17","token":41}],
        "requiredLeases":[]})");
    CHECK(body_of(tx.request()) == expected);

    SECTION("the answer gives each operation's result") {
        TransactionResult result;
        REQUIRE(read_transaction_answer(transaction_request, response_of(200, committed_answer),
                                        result));
        CHECK(result.transaction_id == "tx-9");
        CHECK_FALSE(result.failed_index.has_value());
        REQUIRE(result.results.size() == 9);
        const auto& r = result.results;
        CHECK((r[0].type == "ack" && r[0].is_success && r[0].transaction_id == "in-1"));
        CHECK((r[1].type == "kv.set" && r[1].version == 41));
        CHECK((r[2].message_id == "m-1" && r[2].partition_id == "p-1"));
        CHECK(r[2].queue_name == "shipping");
        CHECK((r[3].timer_id == "~delay.41.3" && r[3].visible_at == "2026-01-01T00:00:05.000Z"));
        CHECK(r[3].message_id.empty());
        CHECK((r[4].timer_id == "remind-17" && r[4].due_at == "2026-01-01T00:05:00.000Z"));
        CHECK_FALSE(r[4].is_replaced);
        CHECK((r[5].type == "kv.check" && r[5].version == 7));
        CHECK((r[6].type == "kv.delete" && r[6].is_deleted));
        CHECK((r[7].timer_id == "old" && r[7].is_cancelled));
        CHECK((r[8].type == "lock.release" && r[8].is_success && r[8].index == 8));
    }
}

TEST_CASE("client: every field of the KV, timer and push operations is sent when set",
          "[client][transaction]") {
    TransactionRequest request;
    TimerSet timer;
    timer.id = "tick";
    timer.queue = "q";
    timer.partition = "p";
    timer.payload_json = "null";
    timer.transaction_id = "t-1";
    timer.trace_id = "tr-1";
    timer.at_ms = 1'800'000'000'000;
    timer.interval_ms = 60'000;
    timer.end_at_ms = 1'900'000'000'000;
    timer.is_replace = true;
    PushItem visible;
    visible.queue = "q";
    visible.payload_json = "1";
    visible.transaction_id = "own";
    visible.trace_id = "trace";
    visible.visible_at_ms = 1'800'000'000'000;
    request.operations = {timer, KvSet{"b", "k", "\"text\"", 0, 0},
                          KvDelete{"b", "k", std::uint64_t{9}}, TransactionPush{{visible}}};
    request.guards = {{"first", 1}, {"second", 2}};
    request.required_leases = {"lease-1"};
    const json body = body_of(request);
    CHECK(body["operations"][0] == json::parse(R"({"type":"timer.set","id":"tick","queue":"q",
        "partition":"p","payload":null,"transactionId":"t-1","traceId":"tr-1","at":1800000000000,
        "intervalMs":60000,"endAt":1900000000000,"replace":true,
        "lock":{"name":"first","token":1}})"));
    // expectedVersion 0 means "must not exist" and is sent; ttl 0 is not.
    CHECK(body["operations"][1] == json::parse(R"({"type":"kv.set","bucket":"b","key":"k",
        "value":"text","expectedVersion":0,"lock":{"name":"second","token":2}})"));
    CHECK(body["operations"][2] == json::parse(R"({"type":"kv.delete","bucket":"b","key":"k",
        "expectedVersion":9})"));
    CHECK(body["operations"][3]["items"][0] ==
          json::parse(R"({"queue":"q","partition":"Default","payload":1,"transactionId":"own",
        "traceId":"trace","visibleAt":1800000000000})"));
    CHECK(body["requiredLeases"] == json::array({"lease-1"}));
}

TEST_CASE("client: pushes follow the current queue and partition; an item keeps its own",
          "[client][transaction]") {
    PushItem own;
    own.queue = "elsewhere";
    own.partition = "x";
    own.payload_json = "3";
    TransactionBuilder tx;
    tx.queue("a").push("1").partition("p2").push("2").push(own).queue("b").push("4");
    const json body = body_of(tx.request());
    REQUIRE(body["operations"].size() == 4);
    const auto target = [&](std::size_t k) {
        const json& item = body["operations"][k]["items"][0];
        return item["queue"].get<std::string>() + "/" + item["partition"].get<std::string>() + "=" +
               item["payload"].dump();
    };
    CHECK(target(0) == "a/Default=1");
    CHECK(target(1) == "a/p2=2");
    CHECK(target(2) == "elsewhere/x=3");
    CHECK(target(3) == "b/Default=4");
}

TEST_CASE("client: a builder's mistakes and bad requests are refused before anything is sent",
          "[client][transaction]") {
    TestServer server;
    ClientOptions options;
    options.endpoint = Endpoint{"127.0.0.1", server.port()};
    options.retry_attempts = 0;
    Client client{options};
    const auto refused = [&](const TransactionBuilder& tx, const std::string& why) {
        auto result = tx.commit();
        REQUIRE_FALSE(result);
        CHECK(result.error().is(Errc::invalid_argument));
        INFO(result.error().context);
        CHECK(result.error().context.find(why) != std::string::npos);
    };
    refused(client.transaction().push("1"), "push before any queue()");
    refused(client.transaction().queue("q").push("{not json"), "not JSON");
    refused(client.transaction().kv_set("b", "k", "nope"), "kv.set value is not JSON");
    refused(client.transaction().kv_set("b", "k", "1", std::nullopt, -1ms), "negative ttl");
    refused(client.transaction().timer("t", 1s, "q", "{"), "timer.set payload is not JSON");
    refused(client.transaction().timer("", 1s, "q", "1"), "needs an id");
    refused(client.transaction().timer("t", 1s, "", "1"), "needs a queue");
    refused(client.transaction().timer("t", -1s, "q", "1"), "must not be negative");
    refused(client.transaction().queue("q").push("1", -1ms), "negative delay");
    refused(client.transaction().guard(LockGuard{"l", 1}), "no operations");
    refused(client.transaction()
                .kv_check("b", "k", 1)
                .guard(LockGuard{"l", 1})
                .guard(LockGuard{"m", 2}),
            "2 guards for 1 operations");
    refused(TransactionBuilder{}.kv_check("b", "k", 1), "no client");
    TimerSet both;
    both.id = "t";
    both.queue = "q";
    both.at_ms = 1;
    both.delay_ms = 1;
    refused(client.transaction().timer(both), "not both");
    PushItem twice;
    twice.queue = "q";
    twice.payload_json = "1";
    twice.delay_ms = 1;
    twice.visible_at_ms = 1;
    refused(client.transaction().push(twice), "both delay_ms and visible_at_ms");
    CHECK(server.requests().empty());

    SECTION("push() takes no delays: they need a transaction") {
        PushItem delayed;
        delayed.queue = "q";
        delayed.delay_ms = 10;
        std::vector<PushItem> items{delayed};
        auto pushed = client.push(items);
        REQUIRE_FALSE(pushed);
        CHECK(pushed.error().is(Errc::invalid_argument));
        CHECK(server.requests().empty());
    }
}

TEST_CASE("client: rolled-back, conflicting and invalid transactions are distinct errors",
          "[client][transaction]") {
    TransactionResult result;
    SECTION("200 success false: rejected (a push or ack failed)") {
        auto read = read_transaction_answer(
            transaction_request,
            response_of(200, R"({"transactionId":"t","success":false,"error":"Message not found",
                "failedIndex":1,"reason":"operation","results":[{"index":0,"type":"kv.set",
                "success":true,"version":5}]})"),
            result);
        REQUIRE_FALSE(read);
        CHECK(read.error().is(Errc::rejected));
        CHECK(read.error().context.find("at operation 1: Message not found") != std::string::npos);
        CHECK(result.failed_index == 1);
        CHECK(result.error == "Message not found");
        REQUIRE(result.results.size() == 1);
        CHECK(result.results[0].version == 5);
    }
    SECTION("409: conflict, with the failing operation") {
        auto read = read_transaction_answer(
            transaction_request,
            response_of(409, R"({"transactionId":"t","success":false,"error":"version 3 != 4",
                "failedIndex":0,"reason":"conflict","results":[]})"),
            result);
        REQUIRE_FALSE(read);
        CHECK(read.error().is(Errc::conflict));
        CHECK(http_status_of(read.error()) == 0);
        CHECK(read.error().context.find("at operation 0: version 3 != 4") != std::string::npos);
        CHECK(result.failed_index == 0);
    }
    SECTION("409 without a transaction answer: still a conflict") {
        auto read = read_transaction_answer(transaction_request,
                                            response_of(409, R"({"error":"held"})"), result);
        REQUIRE_FALSE(read);
        CHECK(read.error().is(Errc::conflict));
        CHECK(read.error().context.find("held") != std::string::npos);
    }
    SECTION("400: the HTTP error, with the answer's reason") {
        auto read = read_transaction_answer(
            transaction_request,
            response_of(400, R"({"transactionId":"t","success":false,"error":"ttlMs too large",
                "failedIndex":2,"reason":"invalid","results":[]})"),
            result);
        REQUIRE_FALSE(read);
        CHECK(http_status_of(read.error()) == 400);
        CHECK(read.error().context.find("ttlMs too large") != std::string::npos);
        CHECK(result.failed_index == 2);
        auto plain = read_transaction_answer(
            transaction_request, response_of(400, R"({"error":"Unknown operation type"})"), result);
        REQUIRE_FALSE(plain);
        CHECK(http_status_of(plain.error()) == 400);
        CHECK(plain.error().context.find("Unknown operation type") != std::string::npos);
    }
    SECTION("other statuses stay HTTP errors; a garbled 2xx is a bad response") {
        auto read = read_transaction_answer(transaction_request,
                                            response_of(500, "{\"error\":\"x\"}"), result);
        CHECK(http_status_of(read.error()) == 500);
        read = read_transaction_answer(transaction_request, response_of(200, "{\"results\":[}"),
                                       result);
        CHECK(read.error().is(Errc::bad_response));
    }
}

TEST_CASE("client: operation results read the same in any member order and spacing",
          "[client][transaction]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    TransactionResult expected;
    REQUIRE(
        read_transaction_answer(transaction_request, response_of(200, committed_answer), expected));
    const json answer = json::parse(committed_answer);
    for (int round = 0; round < 200; ++round) {
        // Shuffle the members of every result object and put random spaces between tokens.
        std::string text = "{\"results\":[";
        for (std::size_t k = 0; k < answer["results"].size(); ++k) {
            std::vector<std::pair<std::string, json>> members;
            for (const auto& [key, value] : answer["results"][k].items()) {
                members.emplace_back(key, value);
            }
            for (std::size_t i = members.size(); i > 1; --i) {
                std::swap(members[i - 1], members[rng.below(i)]);
            }
            text += k == 0 ? "{" : ", {";
            for (std::size_t i = 0; i < members.size(); ++i) {
                text += (i == 0              ? ""
                         : rng.below(2) == 0 ? ","
                                             : " ,\n ") +
                        json(members[i].first).dump() + (rng.below(2) == 0 ? ":" : " : ") +
                        members[i].second.dump();
            }
            text += rng.below(2) == 0 ? "}" : " }";
        }
        text += "], \"success\": true, \"transactionId\": \"tx-9\"}";
        TransactionResult result;
        INFO(text);
        REQUIRE(read_transaction_answer(transaction_request, response_of(200, text), result));
        REQUIRE(result.results.size() == expected.results.size());
        CHECK(result.transaction_id == "tx-9");
        for (std::size_t k = 0; k < result.results.size(); ++k) {
            const auto& a = result.results[k];
            const auto& b = expected.results[k];
            CHECK(a.index == b.index);
            CHECK(a.type == b.type);
            CHECK(a.is_success == b.is_success);
            CHECK(a.transaction_id == b.transaction_id);
            CHECK(a.message_id == b.message_id);
            CHECK(a.version == b.version);
            CHECK(a.is_deleted == b.is_deleted);
            CHECK(a.timer_id == b.timer_id);
            CHECK(a.due_at == b.due_at);
            CHECK(a.visible_at == b.visible_at);
            CHECK(a.is_cancelled == b.is_cancelled);
        }
    }
}

TEST_CASE("client: commit sends the builder's transaction once and reads its results",
          "[client][transaction]") {
    TestServer server;
    ClientOptions options;
    options.endpoint = Endpoint{"127.0.0.1", server.port()};
    options.retry_attempts = 2;
    options.retry_delay_ms = 1;
    Client client{options};
    SECTION("committed") {
        server.reply_always(json_reply(200, R"({"transactionId":"tx","success":true,"results":[
            {"index":0,"type":"kv.set","success":true,"version":12},
            {"index":1,"type":"timer.set","success":true,"timerId":"t","dueAt":"2026-01-01T00:00:00.000Z","replaced":true}]})"));
        auto done = client.transaction()
                        .kv_set("b", "k", "1")
                        .timer("t", 1s, "q", "2")
                        .guard(LockGuard{"l", 3})
                        .commit();
        REQUIRE(done);
        REQUIRE(done->results.size() == 2);
        CHECK(done->results[0].version == 12);
        CHECK(done->results[1].is_replaced);
        REQUIRE(server.requests().size() == 1);
        const json body = json::parse(server.last_request().body);
        CHECK(body["operations"][0]["lock"] == json{{"name", "l"}, {"token", 3}});
        CHECK_FALSE(body["operations"][1].contains("lock"));
    }
    SECTION("a 409 is a conflict and is not retried") {
        server.reply_always(json_reply(409, R"({"transactionId":"tx","success":false,
            "error":"lock guard \"l\" token 3 is not the current grant","failedIndex":0,
            "reason":"conflict","results":[]})"));
        auto done = client.transaction().kv_set("b", "k", "1").guard(LockGuard{"l", 3}).commit();
        REQUIRE_FALSE(done);
        CHECK(done.error().is(Errc::conflict));
        CHECK(done.error().context.find("not the current grant") != std::string::npos);
        CHECK(server.requests().size() == 1);

        PopRequest pop;
        pop.queue = "q";
        server.set_handler([](const auto& request) {
            if (request.target == "/api/v1/transaction") {
                return json_reply(409, R"({"success":false,"error":"exists","failedIndex":0,
                    "reason":"conflict","results":[]})");
            }
            return queen::client::testing::no_content_reply();
        });
        auto both = client.transaction_then_pop(
            client.transaction().timer("t", 1s, "q", "1").request(), pop);
        REQUIRE_FALSE(both.transaction);
        CHECK(both.transaction.error().is(Errc::conflict));
        REQUIRE(both.pop);
        CHECK(both.pop->messages.empty());
    }
    SECTION("a 400 stays the HTTP error") {
        server.reply_always(json_reply(400, R"({"error":"intervalMs must be 0 or at least 10"})"));
        auto done = client.transaction().timer("t", 1s, "q", "1").commit();
        REQUIRE_FALSE(done);
        CHECK(http_status_of(done.error()) == 400);
        CHECK(server.requests().size() == 1);
    }
}
