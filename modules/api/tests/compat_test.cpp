// api/tests/compat_test.cpp — what the official clients rely on: UUIDv7 message ids, the pop of
// a namespace/task (GET /api/v1/pop), and the DLQ listing's total.
#include <set>

#include "harness.hpp"

namespace queen::api::testing {
namespace {

using http::Method;
using nlohmann::json;

json configure_body(std::string_view queue, std::string_view namespace_name, std::string_view task,
                    std::int64_t priority) {
    return {{"queue", queue},
            {"namespace", namespace_name},
            {"task", task},
            {"options", {{"priority", priority}}}};
}

std::set<std::string> keys_of(const json& object) {
    std::set<std::string> out;
    for (const auto& [key, value] : object.items()) {
        out.insert(key);
    }
    return out;
}

/// The ms time in the first 48 bits of a UUID text.
std::int64_t uuid_time_ms(const std::string& id) {
    return static_cast<std::int64_t>(std::stoull(id.substr(0, 8) + id.substr(9, 4), nullptr, 16));
}

TEST_CASE("api: message ids are UUIDv7 holding createdAt, the same in every answer", "[api][ids]") {
    Harness h;
    const std::int64_t pushed_ms = h.backend.wall_ms();
    const json pushed = h.push("ids", "Default", {json(1), json(2)});
    h.backend.advance(3);
    const json later = h.push("ids", "Default", {json(3)});
    const std::string first = pushed[0]["message_id"];
    REQUIRE(first.size() == 36);
    CHECK(first[14] == '7');                                          // version
    CHECK(std::string("89ab").find(first[19]) != std::string::npos);  // variant 0b10
    CHECK(uuid_time_ms(first) == pushed_ms);
    CHECK(uuid_time_ms(later[0]["message_id"]) == pushed_ms + 3);
    // In push order: within the batch, then the later push.
    CHECK(pushed[0]["message_id"] < pushed[1]["message_id"]);
    CHECK(pushed[1]["message_id"] < later[0]["message_id"]);
    // A duplicate names the stored message's id.
    const json again = h.post("/api/v1/push", {{"items",
                                                {{{"queue", "ids"},
                                                  {"transactionId", pushed[0]["transaction_id"]},
                                                  {"payload", 1}}}}})
                           .json();
    CHECK(again[0]["status"] == "duplicate");
    CHECK(again[0]["message_id"] == first);
    // The pop prints the same ids, and each message names its queue.
    const Reply reply = h.get("/api/v1/pop/queue/ids?batch=10");
    REQUIRE(reply.status == 200);
    const json popped = reply.json();
    REQUIRE(popped["messages"].size() == 3);
    CHECK(popped["messages"][0]["id"] == first);
    CHECK(popped["messages"][1]["id"] == pushed[1]["message_id"]);
    CHECK(popped["messages"][2]["id"] == later[0]["message_id"]);
    for (const json& message : popped["messages"]) {
        CHECK(message["queue"] == "ids");
    }
    // The admin listing too.
    const json listed = h.get("/api/v1/messages?queue=ids").json();
    std::set<std::string> listed_ids;
    for (const json& message : listed["messages"]) {
        listed_ids.insert(message["id"].get<std::string>());
    }
    CHECK(listed_ids.count(first) == 1);
    // A transaction's push result.
    const json transaction =
        h.post("/api/v1/transaction",
               {{"operations",
                 {{{"type", "push"}, {"items", {{{"queue", "ids"}, {"payload", 4}}}}}}}})
            .json();
    REQUIRE(transaction["success"] == true);
    const std::string in_transaction = transaction["results"][0]["messageId"];
    CHECK(in_transaction[14] == '7');
    CHECK(uuid_time_ms(in_transaction) == pushed_ms + 3);
}

TEST_CASE("api: GET /api/v1/pop of a namespace/task answers as a queue pop",
          "[api][pop][matching]") {
    Harness h;
    REQUIRE(h.post("/api/v1/configure", configure_body("low", "shop", "mail", 1)).status == 200);
    REQUIRE(h.post("/api/v1/configure", configure_body("high", "shop", "bill", 9)).status == 200);
    REQUIRE(h.post("/api/v1/configure", configure_body("other", "misc", "mail", 5)).status == 200);
    h.push("low", "Default", {json("low")});
    h.push("high", "Default", {json("high")});
    h.push("other", "Default", {json("other")});

    // Higher priority first.
    const Reply shop = h.get("/api/v1/pop?namespace=shop&batch=5");
    REQUIRE(shop.status == 200);
    const json served = shop.json();
    CHECK(served["queue"] == "high");
    REQUIRE(served["messages"].size() == 1);
    CHECK(served["messages"][0]["data"] == "high");
    CHECK(served["messages"][0]["queue"] == "high");
    // The same fields as a queue pop's answer, at both levels.
    const json queue_pop = h.get("/api/v1/pop/queue/low").json();
    CHECK(keys_of(served) == keys_of(queue_pop));
    CHECK(keys_of(served["messages"][0]) == keys_of(queue_pop["messages"][0]));
    // Its lease acks like any other.
    const json acked =
        h.post("/api/v1/ack", {{"transactionId", served["messages"][0]["transactionId"]},
                               {"partitionId", served["messages"][0]["partitionId"]},
                               {"leaseId", served["messages"][0]["leaseId"]},
                               {"status", "completed"}})
            .json();
    CHECK(acked[0]["success"] == true);
    CHECK(acked[0]["queueName"] == "high");

    // Task only, and both.
    const json mail = h.get("/api/v1/pop?task=mail&consumerGroup=g").json();
    CHECK(mail["queue"] == "other");  // priority 5 before low's 1; g is a group of its own
    CHECK(mail["consumerGroup"] == "g");
    CHECK(h.get("/api/v1/pop?task=mail&consumerGroup=g&autoAck=true").json()["queue"] == "low");
    CHECK(h.get("/api/v1/pop?namespace=misc&task=bill").status == 204);
    CHECK(h.get("/api/v1/pop?namespace=nobody").status == 204);
    CHECK(h.get("/api/v1/pop?namespace=shop").status == 204);  // everything taken
}

TEST_CASE("api: GET /api/v1/pop without namespace and task is a 400", "[api][pop][matching]") {
    Harness h;
    const std::uint64_t submitted = h.backend.submitted();
    for (const char* target : {"/api/v1/pop", "/api/v1/pop?batch=2",
                               "/api/v1/pop?namespace=", "/api/v1/pop?namespace=&task="}) {
        INFO(target);
        const Reply reply = h.get(target);
        CHECK(reply.status == 400);
        CHECK(reply.json()["error"].get<std::string>().find("namespace or task") !=
              std::string::npos);
    }
    CHECK(h.get("/api/v1/pop?namespace=" + std::string(300, 'n')).status == 400);
    CHECK(h.get("/api/v1/pop?task=t&batch=0").status == 400);
    CHECK(h.backend.submitted() == submitted);
}

TEST_CASE("api: a long poll of a namespace is woken by a push to a matching queue",
          "[api][pop][matching][longpoll]") {
    Harness h;
    REQUIRE(h.post("/api/v1/configure", configure_body("jobs", "work", "", 0)).status == 200);
    auto pending = h.start(Method::get, "/api/v1/pop?namespace=work&wait=true&timeout=30000");
    REQUIRE_FALSE(pending.reply->is_done);
    CHECK(h.backend.waiting() == 1);
    const std::uint64_t submitted = h.backend.submitted();
    // A push to a queue of another namespace does not wake it.
    h.push("elsewhere", "Default", {json(0)});
    CHECK_FALSE(pending.reply->is_done);
    CHECK(h.backend.submitted() == submitted + 1);  // no pop retried
    // A push to a queue created after the poll parked, whose name puts it in the namespace.
    h.push("work.later", "Default", {json{{"hello", "world"}}});
    REQUIRE(pending.reply->is_done);
    CHECK(pending.reply->status == 200);
    const json answer = pending.reply->json();
    CHECK(answer["queue"] == "work.later");
    CHECK(answer["messages"][0]["data"]["hello"] == "world");
    CHECK(h.backend.waiting() == 0);

    // At the deadline: 204.
    auto idle = h.start(Method::get, "/api/v1/pop?task=none&wait=true&timeout=1000");
    REQUIRE_FALSE(idle.reply->is_done);
    h.backend.advance(1000);
    REQUIRE(idle.reply->is_done);
    CHECK(idle.reply->status == 204);
}

TEST_CASE("api: GET /api/v1/dlq answers the total of its filters", "[api][dlq]") {
    Harness h;
    for (const char* queue : {"a", "b"}) {
        for (int i = 0; i < (queue[0] == 'a' ? 3 : 1); ++i) {
            h.push(queue, "Default", {json(i)});
            const json m = h.get(std::string("/api/v1/pop/queue/") + queue).json()["messages"][0];
            const json acked = h.post("/api/v1/ack", {{"transactionId", m["transactionId"]},
                                                      {"partitionId", m["partitionId"]},
                                                      {"leaseId", m["leaseId"]},
                                                      {"status", "dlq"}})
                                   .json();
            REQUIRE(acked[0]["dlq"] == true);
        }
    }
    const json all = h.get("/api/v1/dlq").json();
    CHECK(all["total"] == 4);
    CHECK(all["messages"].size() == 4);
    const json page = h.get("/api/v1/dlq?queue=a&limit=1&offset=1").json();
    CHECK(page["total"] == 3);
    CHECK(page["messages"].size() == 1);
    CHECK(page["pagination"]["limit"] == 1);
    CHECK(h.get("/api/v1/dlq?queue=a&offset=10").json()["total"] == 3);
    CHECK(h.get("/api/v1/dlq?queue=b").json()["total"] == 1);
    CHECK(h.get("/api/v1/dlq?consumerGroup=__QUEUE_MODE__&limit=2").json()["total"] == 4);
    CHECK(h.get("/api/v1/dlq?consumerGroup=nobody").json()["total"] == 0);
    CHECK(h.get("/api/v1/dlq?queue=nothing").json()["total"] == 0);
    // The DLQ entry's id is the message's.
    CHECK(all["messages"][0]["id"].get<std::string>()[14] == '7');
}

}  // namespace
}  // namespace queen::api::testing
