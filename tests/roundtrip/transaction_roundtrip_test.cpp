// tests/roundtrip/transaction_roundtrip_test.cpp — the one call through the whole path: the
// client's TransactionBuilder body -> the API's transaction parser -> the engine (queues, KV,
// timers and locks in one entry) -> the API's answer -> the client's reading of it, for a commit
// with every operation kind, for each way a transaction is refused (rollback 200, conflict 409,
// invalid 400), and for the next pop a transaction carries. The broker side is the api module's
// test harness (its Router over a real Engine), the client side a real queen::client::Client
// talking to a recording server that replays the broker's answers.
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "harness.hpp"
#include "queen/client/client.hpp"
#include "queen/testing/catch.hpp"
#include "test_server.hpp"

namespace {

namespace qc = queen::client;
using namespace std::chrono_literals;
using queen::client::testing::json_reply;
using queen::client::testing::TestServer;

/// A client whose requests go to `wire`, never retried.
qc::ClientOptions options_for(const TestServer& wire) {
    qc::ClientOptions options;
    options.endpoint = qc::Endpoint{"127.0.0.1", wire.port()};
    options.retry_attempts = 0;
    return options;
}

/// Commits `tx` through the broker: the client sends its body to the wire (answered with a
/// placeholder), the broker runs that body, then the client commits again and reads the
/// broker's answer. `status` is the broker's HTTP status.
queen::Result<qc::TransactionResult> through_broker(queen::api::testing::Harness& broker,
                                                    TestServer& wire,
                                                    const qc::TransactionBuilder& tx, int& status) {
    wire.reply_always(json_reply(200, R"({"transactionId":"x","success":true,"results":[]})"));
    REQUIRE(tx.commit());
    const auto answer = broker.post_raw("/api/v1/transaction", wire.last_request().body);
    INFO("sent: " << wire.last_request().body << "\nanswer: " << answer.body);
    status = answer.status;
    wire.reply_always(json_reply(answer.status, answer.body));
    return tx.commit();
}

/// The popped message of `queue` as the client reads the broker's pop answer.
qc::Message pop_one(queen::api::testing::Harness& broker, TestServer& wire, qc::Client& client,
                    const std::string& queue) {
    qc::PopRequest pop;
    pop.queue = queue;
    wire.reply_always(queen::client::testing::no_content_reply());
    REQUIRE(client.pop(pop));
    const auto answer = broker.get(wire.last_request().target);
    REQUIRE(answer.status == 200);
    wire.reply_always(json_reply(answer.status, answer.body));
    auto popped = client.pop(pop);
    REQUIRE(popped);
    REQUIRE(popped->messages.size() == 1);
    return popped->messages[0];
}

}  // namespace

TEST_CASE("roundtrip: a builder transaction of every kind commits on the broker as one entry",
          "[roundtrip][transaction]") {
    queen::api::testing::Harness broker;
    TestServer wire;
    qc::Client client{options_for(wire)};
    broker.push("orders", "Default", {nlohmann::json{{"order", 17}}});
    const qc::Message message = pop_one(broker, wire, client, "orders");
    CHECK(message.data_json == R"({"order":17})");

    int status = 0;
    auto done = through_broker(broker, wire,
                               client.transaction()
                                   .ack(message)
                                   .kv_set("orders", "17", R"({"state":"shipped"})", 0)
                                   .queue("shipping", "eu")
                                   .push(message.data_json)
                                   .push(R"({"later":true})", 10s)
                                   .timer("remind-17", 5min, "reminders", R"({"id":17})")
                                   .kv_delete("carts", "17")
                                   .timer_cancel("never-set"),
                               status);
    REQUIRE(done);
    CHECK(status == 200);
    REQUIRE(done->results.size() == 7);
    const auto& r = done->results;
    CHECK((r[0].type == "ack" && r[0].is_success && r[0].transaction_id == message.transaction_id));
    CHECK((r[1].type == "kv.set" && r[1].is_success));
    const std::uint64_t version = r[1].version;
    CHECK(version > 0);
    CHECK((r[2].type == "push" && r[2].is_success && r[2].queue_name == "shipping"));
    CHECK_FALSE(r[2].message_id.empty());
    CHECK_FALSE(r[2].partition_id.empty());
    CHECK(r[3].type == "push");
    CHECK(r[3].timer_id.rfind("~delay.", 0) == 0);
    CHECK_FALSE(r[3].visible_at.empty());
    CHECK(r[3].message_id.empty());
    CHECK((r[4].type == "timer.set" && r[4].timer_id == "remind-17"));
    CHECK_FALSE(r[4].due_at.empty());
    CHECK_FALSE(r[4].is_replaced);
    CHECK((r[5].type == "kv.delete" && !r[5].is_deleted));
    CHECK((r[6].type == "timer.cancel" && !r[6].is_cancelled));
    for (std::size_t k = 0; k < r.size(); ++k) {
        CHECK(r[k].index == static_cast<std::int64_t>(k));
    }

    SECTION("a version check that holds commits, one that does not is a conflict") {
        done = through_broker(broker, wire, client.transaction().kv_check("orders", "17", version),
                              status);
        REQUIRE(done);
        REQUIRE(done->results.size() == 1);
        CHECK(done->results[0].version == version);
        // kv.set then a failing check: 409, and the set is rolled back with it.
        done = through_broker(
            broker, wire,
            client.transaction().kv_set("orders", "18", "1").kv_check("orders", "17", version + 1),
            status);
        REQUIRE_FALSE(done);
        CHECK(status == 409);
        CHECK(done.error().is(qc::Errc::conflict));
        CHECK(done.error().context.find("at operation 1") != std::string::npos);
        done =
            through_broker(broker, wire, client.transaction().kv_check("orders", "18", 0), status);
        CHECK(done);  // 18 is still absent
    }
    SECTION("an existing timer id and a stale lock guard are conflicts") {
        done = through_broker(
            broker, wire, client.transaction().timer("remind-17", 1s, "reminders", "1"), status);
        REQUIRE_FALSE(done);
        CHECK(status == 409);
        CHECK(done.error().is(qc::Errc::conflict));
        qc::TimerSet replace;
        replace.id = "remind-17";
        replace.queue = "reminders";
        replace.delay_ms = 1'000;
        replace.is_replace = true;
        done = through_broker(broker, wire, client.transaction().timer(replace), status);
        REQUIRE(done);
        CHECK(done->results[0].is_replaced);
        done = through_broker(
            broker, wire,
            client.transaction().kv_set("orders", "19", "1").guard(qc::LockGuard{"jobs", 7}),
            status);
        REQUIRE_FALSE(done);
        CHECK(status == 409);
        CHECK(done.error().is(qc::Errc::conflict));
        CHECK(done.error().context.find("jobs") != std::string::npos);
        // A guard on a push travels in the push operation, next to its items.
        done = through_broker(
            broker, wire,
            client.transaction().queue("audit").push("1").guard(qc::LockGuard{"jobs", 7}), status);
        REQUIRE_FALSE(done);
        CHECK(status == 409);
        CHECK(done.error().is(qc::Errc::conflict));
        done = through_broker(broker, wire,
                              client.transaction().lock_release(qc::LockGuard{"jobs", 7}), status);
        REQUIRE_FALSE(done);
        CHECK(done.error().is(qc::Errc::conflict));
    }
    SECTION("an ack of a message already acked rolls back with 200 (rejected)") {
        done = through_broker(
            broker, wire, client.transaction().kv_set("orders", "20", "1").ack(message), status);
        REQUIRE_FALSE(done);
        CHECK(status == 200);
        CHECK(done.error().is(qc::Errc::rejected));
    }
    SECTION("an operation outside the limits is HTTP 400") {
        qc::TimerSet fast;
        fast.id = "fast";
        fast.queue = "q";
        fast.interval_ms = 1;  // under the 10 ms minimum
        done = through_broker(broker, wire, client.transaction().timer(fast), status);
        REQUIRE_FALSE(done);
        CHECK(status == 400);
        CHECK(qc::http_status_of(done.error()) == 400);
        CHECK(done.error().context.find("intervalMs") != std::string::npos);
    }
}

TEST_CASE("roundtrip: a builder transaction's next pop comes back as the broker's pop answer",
          "[roundtrip][transaction][next]") {
    queen::api::testing::Harness broker;
    TestServer wire;
    qc::Client client{options_for(wire)};
    broker.push("work", "p",
                {nlohmann::json{{"n", 0}}, nlohmann::json{{"n", 1}}, nlohmann::json{{"n", 2}}});
    const qc::Message first = pop_one(broker, wire, client, "work");
    CHECK(first.data_json == R"({"n":0})");

    // The ack ends the partition's lease, so next takes the following two, in order.
    int status = 0;
    auto done = through_broker(
        broker, wire,
        client.transaction().ack(first).queue("work", "p").push(R"({"n":3})").next("work", "p", 2),
        status);
    REQUIRE(done);
    CHECK(status == 200);
    CHECK(done->results.size() == 2);
    REQUIRE(done->next.has_value());
    const qc::PopResult batch = *done->next;
    REQUIRE(batch.messages.size() == 2);
    CHECK(batch.messages[0].data_json == R"({"n":1})");
    CHECK(batch.messages[1].data_json == R"({"n":2})");
    CHECK(batch.queue == "work");
    CHECK(batch.partition == "p");
    for (const qc::Message& message : batch.messages) {
        CHECK(message.queue == "work");
        CHECK(message.partition == "p");
        CHECK(message.lease_id == batch.lease_id);
        CHECK_FALSE(message.lease_id.empty());
        CHECK_FALSE(message.transaction_id.empty());
        CHECK(message.partition_id == first.partition_id);
    }

    // The popped messages ack like any pop's; the next one is what the first call pushed.
    auto tx = client.transaction();
    for (const qc::Message& message : batch.messages) {
        tx.ack(message);
    }
    done = through_broker(broker, wire, tx.next("work", "p", 10), status);
    REQUIRE(done);
    REQUIRE(done->next.has_value());
    REQUIRE(done->next->messages.size() == 1);
    const qc::Message pushed = done->next->messages[0];
    CHECK(pushed.data_json == R"({"n":3})");

    SECTION("nothing left: an empty next, not a wait") {
        done = through_broker(broker, wire, client.transaction().ack(pushed).next("work", "p"),
                              status);
        REQUIRE(done);
        REQUIRE(done->next.has_value());
        CHECK(done->next->messages.empty());
        CHECK(done->next->partitions_claimed == 0);
    }
    SECTION("a refused transaction pops nothing and its answer has no next") {
        broker.push("work", "other", {nlohmann::json{{"n", 100}}});
        done = through_broker(broker, wire,
                              client.transaction().ack(batch.messages[0]).next("work", "other"),
                              status);  // acked already: rolled back
        REQUIRE_FALSE(done);
        CHECK(status == 200);
        CHECK(done.error().is(qc::Errc::rejected));
        const qc::Message left = pop_one(broker, wire, client, "work");
        CHECK(left.data_json == R"({"n":100})");
    }
    SECTION("a batch over the broker's limit refuses the whole call with 400") {
        done = through_broker(
            broker, wire, client.transaction().ack(pushed).next("work", "p", 1'000'000), status);
        REQUIRE_FALSE(done);
        CHECK(status == 400);
        CHECK(qc::http_status_of(done.error()) == 400);
        CHECK(done.error().context.find("next") != std::string::npos);
        // The ack was not applied: it still goes through.
        done = through_broker(broker, wire, client.transaction().ack(pushed), status);
        CHECK(done);
    }
    SECTION("a consumer group's next pop is the group's own") {
        qc::NextPop group;
        group.queue = "work";
        group.partition = "p";
        group.consumer_group = "audit";
        group.batch = 10;
        done = through_broker(broker, wire, client.transaction().ack(pushed).next(group), status);
        REQUIRE(done);
        REQUIRE(done->next.has_value());
        CHECK(done->next->consumer_group == "audit");
        // The group has its own cursor: the messages queue mode acked are still the group's
        // (a new group reads from the partition's first message by default).
        REQUIRE(done->next->messages.size() == 4);
        CHECK(done->next->messages[0].data_json == R"({"n":0})");
        CHECK(done->next->messages[3].data_json == R"({"n":3})");
        for (const qc::Message& message : done->next->messages) {
            CHECK(message.consumer_group == "audit");
        }
    }
}
