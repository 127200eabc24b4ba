// api/tests/names_test.cpp — the one name rule (docs/http-api.md, "Names") on every route that
// takes a queue, partition, group, namespace or task name, in a body, a path or a query: a bad
// name is a 400 saying which part is wrong, and nothing is submitted.
#include "harness.hpp"

namespace queen::api::testing {
namespace {

using http::Method;
using nlohmann::json;

TEST_CASE("api: one name rule on every route: 400 and nothing submitted", "[api][names]") {
    Harness h;
    h.push("q", "p", {json(1)});
    const auto submitted = h.backend.submitted();
    // (JSON text, percent-encoded path text) of each bad name.
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"a\\u0001b", "a%01b"}, {"a\\u007fb", "a%7Fb"},
        {"a/b", "a%2Fb"},       {".", "%2E"},
        {"..", "%2E%2E"},       {std::string(257, 'x'), std::string(257, 'x')},
        {"\\ud800", "%FF%FE"},
    };
    const auto refused = [&](const Reply& reply, std::string_view what) {
        INFO(what << " -> " << reply.status << " " << reply.body);
        CHECK(reply.status == 400);
    };
    for (const auto& [text, path] : bad) {
        INFO("bad name " << text);
        const std::string name = "\"" + text + "\"";
        refused(h.post_raw("/api/v1/push", R"({"items":[{"queue":)" + name + "}]}"), "push queue");
        refused(h.post_raw("/api/v1/push", R"({"items":[{"queue":"q","partition":)" + name + "}]}"),
                "push partition");
        for (const char* field : {"queue", "namespace", "task"}) {
            const json body = {{"queue", "q"},
                               {"namespace", nullptr},
                               {"task", nullptr},
                               {"options", json::object()}};
            const std::string raw = body.dump();
            std::string with = raw;
            const std::string key = std::string("\"") + field + "\":";
            const auto at = with.find(key);
            const auto end = with.find_first_of(",}", at);
            with.replace(at, end - at, key + name);
            refused(h.post_raw("/api/v1/configure", with), field);
        }
        const std::string uuid = "\"00000000-0000-7000-8000-000000000001\"";
        refused(
            h.post_raw("/api/v1/ack", R"({"transactionId":"t","partitionId":)" + uuid +
                                          R"(,"status":"completed","consumerGroup":)" + name + "}"),
            "ack group");
        refused(h.post_raw("/api/v1/ack/batch",
                           R"({"acknowledgments":[{"transactionId":"t","partitionId":)" + uuid +
                               R"(,"status":"completed"}],"consumerGroup":)" + name + "}"),
                "ack batch group");
        refused(h.post_raw("/api/v1/transaction",
                           R"({"operations":[{"type":"push","items":[{"queue":)" + name + "}]}]}"),
                "transaction push queue");
        refused(h.get("/api/v1/pop/queue/" + path + "?wait=false"), "pop queue");
        refused(h.get("/api/v1/pop/queue/q/partition/" + path + "?wait=false"), "pop partition");
        refused(h.get("/api/v1/pop/queue/q?wait=false&consumerGroup=" + path), "pop group");
        refused(h.get("/api/v1/pop?wait=false&namespace=" + path), "pop namespace");
        refused(h.get("/api/v1/resources/queues/" + path), "queue detail");
        refused(h.del("/api/v1/resources/queues/" + path), "delete queue");
        refused(h.get("/api/v1/status/queues/" + path), "queue status");
        refused(h.get("/api/v1/status/queues?namespace=" + path), "status filter");
        refused(h.get("/api/v1/messages?queue=" + path), "messages filter");
        refused(h.get("/api/v1/consumer-groups/" + path), "group detail");
        refused(h.del("/api/v1/consumer-groups/" + path), "delete group");
        refused(h.del("/api/v1/consumer-groups/g/queues/" + path), "delete group on queue");
        refused(h.post("/api/v1/consumer-groups/g/queues/" + path + "/seek", {{"toEnd", true}}),
                "seek queue");
        refused(h.post("/api/v1/consumer-groups/g/queues/q/partitions/" + path + "/seek",
                       json::object()),
                "seek partition");
    }
    SECTION("empty names in bodies and an empty tenant header") {
        refused(h.post_raw("/api/v1/push", R"({"items":[{"queue":""}]})"), "empty queue");
        refused(h.post_raw("/api/v1/push", R"({"items":[{"queue":"q","partition":""}]})"),
                "empty partition");
        refused(h.post_raw("/api/v1/configure", R"({"queue":""})"), "empty configure queue");
        refused(h.call(Method::get, "/api/v1/resources/queues", {}, {{"X-Queen-Tenant", ""}}),
                "empty tenant");
    }
    SECTION("the words say what is wrong") {
        const Reply reply = h.post_raw("/api/v1/push", R"({"items":[{"queue":"a/b"}]})");
        CHECK(reply.json()["error"] == "Queue name must not contain '/'");
        const Reply dots = h.get("/api/v1/resources/queues/%2E%2E");
        CHECK(dots.json()["error"] == "queue must not be '.' or '..'");
    }
    SECTION("names the rule allows") {
        for (const char* good : {"a b", "user:42", "été", "__x", "a.b", "...", "x@y.z"}) {
            INFO(good);
            CHECK(h.post("/api/v1/push", {{"items", {{{"queue", good}, {"partition", good}}}}})
                      .status == 201);
        }
    }
    CHECK(h.backend.submitted() >= submitted);
    SECTION("nothing was submitted for the refused requests") {
        CHECK(h.backend.submitted() == submitted);
        const json queues = h.get("/api/v1/resources/queues").json()["queues"];
        REQUIRE(queues.size() == 1);
        CHECK(queues[0]["name"] == "q");
    }
}

}  // namespace
}  // namespace queen::api::testing
