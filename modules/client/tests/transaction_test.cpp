// client/tests/transaction_test.cpp — TransactionBuilder and the transaction wire: the exact
// body every operation kind and guard is written as, the requests refused before sending, and the
// reading of answers with KV, timer and lock results, of rollbacks (200), conflicts (409) and
// invalid transactions (400), directly and through a Client against the recording server.
#include "queen/client/transaction.hpp"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
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

/// A pop answer in the broker's shape (api format_pop_answer): what GET /api/v1/pop answers and
/// what a committed transaction's "next" holds.
const char* const popped_answer = R"({"success":true,"queue":"orders","partition":"p-7",
 "partitionId":"00000000-0000-8200-0000-000000000007","leaseId":"lease-9",
 "consumerGroup":"__QUEUE_MODE__","leaseExpiresAt":"2026-01-01T00:05:00.000Z","messages":[
 {"id":"m-1","transactionId":"in-2","traceId":null,"data":{"order":18, "lines":[1,2]},
  "producerSub":null,"createdAt":"2026-01-01T00:00:00.001000Z",
  "partitionId":"00000000-0000-8200-0000-000000000007","partition":"p-7","leaseId":"lease-9",
  "consumerGroup":"__QUEUE_MODE__","queue":"orders","retryCount":0},
 {"id":"m-2","transactionId":"in-3","traceId":"tr-3","data":"x\u00e9",
  "producerSub":"svc","createdAt":"2026-01-01T00:00:00.002000Z",
  "partitionId":"00000000-0000-8200-0000-000000000007","partition":"p-7","leaseId":"lease-9",
  "consumerGroup":"__QUEUE_MODE__","queue":"orders","retryCount":2}],"partitionsClaimed":1})";

/// A committed transaction's answer carrying `next` (JSON text) after its results.
std::string committed_with_next(const std::string& next) {
    return R"({"transactionId":"tx-10","success":true,"results":[
        {"index":0,"type":"ack","success":true,"transactionId":"in-1","error":null,"dlq":false}],
        "next":)" +
           next + "}";
}

/// Every field of two pop results, for "reads the same".
void check_same_pop(const PopResult& a, const PopResult& b) {
    CHECK(a.queue == b.queue);
    CHECK(a.partition == b.partition);
    CHECK(a.partition_id == b.partition_id);
    CHECK(a.lease_id == b.lease_id);
    CHECK(a.consumer_group == b.consumer_group);
    CHECK(a.lease_expires_at == b.lease_expires_at);
    CHECK(a.partitions_claimed == b.partitions_claimed);
    REQUIRE(a.messages.size() == b.messages.size());
    for (std::size_t i = 0; i < a.messages.size(); ++i) {
        const Message& x = a.messages[i];
        const Message& y = b.messages[i];
        CHECK(x.id == y.id);
        CHECK(x.transaction_id == y.transaction_id);
        CHECK(x.trace_id == y.trace_id);
        CHECK(x.data_json == y.data_json);
        CHECK(x.producer_sub == y.producer_sub);
        CHECK(x.created_at == y.created_at);
        CHECK(x.partition_id == y.partition_id);
        CHECK(x.partition == y.partition);
        CHECK(x.lease_id == y.lease_id);
        CHECK(x.consumer_group == y.consumer_group);
        CHECK(x.queue == y.queue);
        CHECK(x.retry_count == y.retry_count);
    }
}

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

TEST_CASE("client: pushes follow the current queue and partition, an item keeps its own",
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

TEST_CASE("client: a transaction's next pop is written as \"next\" after the operations",
          "[client][transaction][next]") {
    TransactionBuilder tx;
    tx.ack(popped_message()).queue("shipping").push("1").next("orders", "p-7", 10);
    json body = body_of(tx.request());
    CHECK(body["next"] == json::parse(R"({"queue":"orders","partition":"p-7","batch":10})"));
    CHECK(body["operations"].size() == 2);  // next is no operation

    // The defaults: any partition, queue mode, batch 1 (partition and group are left out).
    tx.next("orders");
    body = body_of(tx.request());
    CHECK(body["next"] == json::parse(R"({"queue":"orders","batch":1})"));

    // A later call replaces the pop: a transaction has one.
    NextPop group;
    group.queue = "events";
    group.partition = "eu";
    group.consumer_group = "billing";
    group.batch = 100;
    tx.next(group);
    body = body_of(tx.request());
    CHECK(body["next"] == json::parse(R"({"queue":"events","partition":"eu",
        "consumerGroup":"billing","batch":100})"));

    // Without next() the body has no "next" (the first test compares a whole body too).
    TransactionBuilder plain;
    plain.kv_check("b", "k", 0);
    CHECK_FALSE(body_of(plain.request()).contains("next"));

    SECTION("a next pop without a queue or with a batch < 1 is refused before sending") {
        TestServer server;
        ClientOptions options;
        options.endpoint = Endpoint{"127.0.0.1", server.port()};
        options.retry_attempts = 0;
        Client client{options};
        for (const auto& [built, why] :
             {std::pair{client.transaction().kv_check("b", "k", 0).next(""), "needs a queue"},
              std::pair{client.transaction().kv_check("b", "k", 0).next("q", "", 0),
                        "batch must be >= 1"},
              std::pair{client.transaction().kv_check("b", "k", 0).next("q", "p", -5),
                        "batch must be >= 1"}}) {
            auto result = built.commit();
            REQUIRE_FALSE(result);
            CHECK(result.error().is(Errc::invalid_argument));
            INFO(result.error().context);
            CHECK(result.error().context.find(why) != std::string::npos);
        }
        // A next pop alone is no transaction: the operations are still required.
        TransactionRequest only_next;
        only_next.next = NextPop{"q", "", "", 1};
        auto result = client.transaction(only_next);
        REQUIRE_FALSE(result);
        CHECK(result.error().context.find("no operations") != std::string::npos);
        CHECK(server.requests().empty());
    }
}

TEST_CASE("client: a committed answer's next reads exactly like the pop answer it is",
          "[client][transaction][next]") {
    PopRequest pop;
    pop.queue = "orders";
    PopResult popped;
    REQUIRE(read_pop_answer(transaction_request, response_of(200, popped_answer), pop, popped));
    REQUIRE(popped.messages.size() == 2);

    TransactionResult result;
    REQUIRE(read_transaction_answer(transaction_request,
                                    response_of(200, committed_with_next(popped_answer)), result));
    CHECK(result.transaction_id == "tx-10");
    REQUIRE(result.results.size() == 1);
    CHECK((result.results[0].type == "ack" && result.results[0].is_success));
    REQUIRE(result.next.has_value());
    check_same_pop(*result.next, popped);
    const Message& first = result.next->messages[0];
    CHECK(first.transaction_id == "in-2");
    CHECK(first.partition_id == "00000000-0000-8200-0000-000000000007");
    CHECK(first.lease_id == "lease-9");
    CHECK(first.data_json == R"({"order":18, "lines":[1,2]})");  // byte for byte
    CHECK(first.queue == "orders");
    CHECK(first.trace_id.empty());
    CHECK(result.next->messages[1].data_json == R"("x\u00e9")");
    CHECK(result.next->messages[1].retry_count == 2);
    CHECK(result.next->lease_expires_at == "2026-01-01T00:05:00.000Z");
    // The popped messages ack like any pop's: Ack::of takes their ids, lease and group.
    const Ack ack = Ack::of(first);
    CHECK((ack.transaction_id == "in-2" && ack.lease_id == "lease-9"));

    SECTION("an empty next: nothing was there, and the pop did not wait") {
        REQUIRE(read_transaction_answer(transaction_request,
                                        response_of(200, committed_with_next(R"({"messages":[]})")),
                                        result));
        REQUIRE(result.next.has_value());
        CHECK(result.next->messages.empty());
        CHECK(result.next->partitions_claimed == 0);
        CHECK(result.next->lease_id.empty());
        // The broker's own empty answer shape reads the same.
        REQUIRE(read_transaction_answer(
            transaction_request,
            response_of(200, committed_with_next(R"({"success":true,"queue":"orders",
                "partition":"","partitionId":"","leaseId":"","consumerGroup":"__QUEUE_MODE__",
                "leaseExpiresAt":null,"messages":[],"partitionsClaimed":0})")),
            result));
        REQUIRE(result.next.has_value());
        CHECK(result.next->messages.empty());
        CHECK(result.next->queue == "orders");
    }
    SECTION("an answer without next (or a null one) leaves none, whatever came before") {
        REQUIRE(read_transaction_answer(transaction_request, response_of(200, committed_answer),
                                        result));
        CHECK_FALSE(result.next.has_value());
        REQUIRE(read_transaction_answer(
            transaction_request, response_of(200, committed_with_next(popped_answer)), result));
        REQUIRE(read_transaction_answer(transaction_request,
                                        response_of(200, committed_with_next("null")), result));
        CHECK_FALSE(result.next.has_value());
    }
    SECTION("answer after answer into one result: no message of an earlier one stays") {
        const std::string one = committed_with_next(R"({"queue":"orders","messages":[
            {"id":"m-9","transactionId":"in-9","partitionId":"pid-9","data":9}]})");
        REQUIRE(read_transaction_answer(transaction_request, response_of(200, one), result));
        REQUIRE(result.next->messages.size() == 1);
        CHECK(result.next->messages[0].transaction_id == "in-9");
        CHECK(result.next->messages[0].lease_id.empty());  // not the earlier answer's lease
        CHECK(result.next->messages[0].trace_id.empty());
        CHECK(result.next->lease_expires_at.empty());
        REQUIRE(read_transaction_answer(
            transaction_request, response_of(200, committed_with_next(popped_answer)), result));
        check_same_pop(*result.next, popped);
    }
}

TEST_CASE("client: next reads the same wherever it stands among the answer's members",
          "[client][transaction][next]") {
    PopRequest pop;
    pop.queue = "orders";
    PopResult popped;
    REQUIRE(read_pop_answer(transaction_request, response_of(200, popped_answer), pop, popped));
    std::vector<std::string> members = {
        R"("transactionId":"tx-10")", R"("success":true)",
        R"("results":[{"index":0,"type":"kv.set","success":true,"version":3}])",
        std::string(R"("next":)") + popped_answer};
    std::sort(members.begin(), members.end());
    int orders = 0;
    do {
        std::string text = "{";
        for (std::size_t i = 0; i < members.size(); ++i) {
            text += (i == 0 ? "" : " ,\n") + members[i];
        }
        text += "}";
        INFO(text);
        TransactionResult result;
        REQUIRE(read_transaction_answer(transaction_request, response_of(200, text), result));
        CHECK(result.transaction_id == "tx-10");
        REQUIRE(result.results.size() == 1);
        CHECK(result.results[0].version == 3);
        REQUIRE(result.next.has_value());
        check_same_pop(*result.next, popped);
        ++orders;
    } while (std::next_permutation(members.begin(), members.end()));
    CHECK(orders == 24);
}

TEST_CASE("client: a refused transaction has no next, a next that is no pop answer is an error",
          "[client][transaction][next]") {
    TransactionResult result;
    // Start from a result that holds a next, so each refusal must clear it.
    const auto primed = [&result] {
        REQUIRE(read_transaction_answer(
            transaction_request, response_of(200, committed_with_next(popped_answer)), result));
        REQUIRE(result.next.has_value());
    };
    // Refusals as the broker sends them (no next) and with one a broker should not send: the
    // messages of a refused transaction were never popped, so none are handed out.
    for (const bool has_next : {false, true}) {
        const std::string next = has_next ? std::string(R"(,"next":)") + popped_answer : "";
        INFO("with next: " << has_next);
        primed();
        auto read = read_transaction_answer(
            transaction_request,
            response_of(200, R"({"transactionId":"t","success":false,"error":"Message not found",
                "failedIndex":0,"reason":"operation","results":[])" +
                                 next + "}"),
            result);
        REQUIRE_FALSE(read);
        CHECK(read.error().is(Errc::rejected));
        CHECK_FALSE(result.next.has_value());
        primed();
        read = read_transaction_answer(
            transaction_request,
            response_of(409, R"({"transactionId":"t","success":false,"error":"version 3 != 4",
                "failedIndex":0,"reason":"conflict","results":[])" +
                                 next + "}"),
            result);
        REQUIRE_FALSE(read);
        CHECK(read.error().is(Errc::conflict));
        CHECK_FALSE(result.next.has_value());
        primed();
        read = read_transaction_answer(
            transaction_request,
            response_of(400, R"({"transactionId":"t","success":false,"error":"next: batch must be )"
                             R"(in [1, 1000]","failedIndex":null,"reason":"invalid","results":[])" +
                                 next + "}"),
            result);
        REQUIRE_FALSE(read);
        CHECK(http_status_of(read.error()) == 400);
        CHECK(read.error().context.find("batch must be in [1, 1000]") != std::string::npos);
        CHECK_FALSE(result.next.has_value());
    }
    primed();
    auto plain = read_transaction_answer(
        transaction_request, response_of(400, R"({"error":"next.queue must be a string"})"),
        result);
    REQUIRE_FALSE(plain);
    CHECK(http_status_of(plain.error()) == 400);
    CHECK(plain.error().context.find("next.queue must be a string") != std::string::npos);
    CHECK_FALSE(result.next.has_value());

    // A committed answer whose next is not a pop answer: a bad response, and no next.
    const std::pair<const char*, const char*> bad_nexts[] = {
        {R"({})", "next: no messages array"},
        {R"({"messages":[{"id":"m","data":1}]})", "without transactionId or partitionId"},
        {R"({"messages":[1]})", "a message that is not an object"},
        {R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p","retryCount":1.}]})",
         "invalid JSON"},
        {R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p"}],"leaseId":nul})",
         "invalid JSON"},
        {R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p"})", "invalid JSON"}};
    for (const auto& [next, why] : bad_nexts) {
        INFO(next);
        primed();
        auto read = read_transaction_answer(transaction_request,
                                            response_of(200, committed_with_next(next)), result);
        REQUIRE_FALSE(read);
        CHECK(read.error().is(Errc::bad_response));
        INFO(read.error().context);
        CHECK(read.error().context.find(why) != std::string::npos);
        CHECK_FALSE(result.next.has_value());
    }
}

TEST_CASE("client: commit with next sends one request and hands back the popped messages",
          "[client][transaction][next]") {
    TestServer server;
    ClientOptions options;
    options.endpoint = Endpoint{"127.0.0.1", server.port()};
    options.retry_attempts = 2;
    options.retry_delay_ms = 1;
    Client client{options};
    server.reply_always(json_reply(200, committed_with_next(popped_answer)));
    auto done = client.transaction().ack(popped_message()).next("orders", "p-7", 2).commit();
    REQUIRE(done);
    REQUIRE(done->next.has_value());
    REQUIRE(done->next->messages.size() == 2);
    CHECK(done->next->messages[0].transaction_id == "in-2");
    CHECK(done->next->messages[1].transaction_id == "in-3");
    REQUIRE(server.requests().size() == 1);  // no pop of its own
    const json body = json::parse(server.last_request().body);
    CHECK(body["next"] == json::parse(R"({"queue":"orders","partition":"p-7","batch":2})"));

    SECTION("a refused commit with next is not retried and hands out nothing") {
        server.reply_always(json_reply(409, R"({"transactionId":"t","success":false,
            "error":"version 3 != 4","failedIndex":0,"reason":"conflict","results":[]})"));
        auto refused = client.transaction().kv_check("b", "k", 3).next("orders", "p-7", 2).commit();
        REQUIRE_FALSE(refused);
        CHECK(refused.error().is(Errc::conflict));
        CHECK(server.requests().size() == 2);
    }
}
