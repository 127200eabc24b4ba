// api/tests/streams_routes_test.cpp — the streams routes through the Router over a real engine:
// what a node-level test cannot see cheaply — sink messages sealed for encrypted queues, state/get
// waiting for the state, its answer caps, bad bodies submitting nothing, backend errors — and
// parse_push_array reading items exactly as the push route does.
#include "harness.hpp"
#include "json.hpp"
#include "parse.hpp"
#include "queen/engine/command.hpp"

namespace queen::api::testing {
namespace {

using http::Method;
using nlohmann::json;

const char* const key_hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

std::string register_query(Harness& h, const std::string& name) {
    const Reply reply = h.post("/streams/v1/queries",
                               {{"name", name}, {"source_queue", "src"}, {"config_hash", "h"}});
    REQUIRE(reply.status == 200);
    return reply.json()["query_id"];
}

/// The partition id of queue/partition (a message is pushed there to create it).
std::string partition_of(Harness& h, const std::string& queue, const std::string& partition) {
    return h.push(queue, partition, {json{{"seed", true}}})[0]["partition_id"];
}

TEST_CASE("api: a streams cycle seals its sink messages for an encrypted queue",
          "[api][streams][encryption]") {
    ApiOptions options;
    options.encryption_key_hex = key_hex;
    Harness h(options);
    REQUIRE(h.post("/api/v1/configure",
                   {{"queue", "secret"}, {"options", {{"encryptionEnabled", true}}}})
                .status == 200);
    const std::string query = register_query(h, "q");
    const std::string partition = partition_of(h, "src", "p");
    const json secret = {{"card", "4111-1111-1111-1111"}};
    const Reply reply = h.post(
        "/streams/v1/cycle",
        {{"query_id", query},
         {"partition_id", partition},
         {"push_items", {{{"queue", "secret"}, {"payload", secret}, {"transactionId", "s1"}}}}});
    REQUIRE(reply.status == 200);
    const json result = reply.json()["push_results"][0];
    REQUIRE(result["status"] == "queued");

    const queues::MessageDetail stored =
        h.stored_message(result["partition_id"].get<std::string>(), "s1");
    CHECK(stored.is_encrypted);
    const std::string raw(stored.payload.begin(), stored.payload.end());
    CHECK(raw.find("4111") == std::string::npos);
    CHECK(h.get("/api/v1/pop/queue/secret").json()["messages"][0]["data"] == secret);

    SECTION("without the key the cycle is refused and writes nothing") {
        Harness plain;
        REQUIRE(plain
                    .post("/api/v1/configure",
                          {{"queue", "secret"}, {"options", {{"encryptionEnabled", true}}}})
                    .status == 200);
        const std::string id = register_query(plain, "q");
        const std::string pid = partition_of(plain, "src", "p");
        const Reply refused = plain.post(
            "/streams/v1/cycle", {{"query_id", id},
                                  {"partition_id", pid},
                                  {"state_ops", {{{"type", "upsert"}, {"key", "k"}, {"value", 1}}}},
                                  {"push_items", {{{"queue", "secret"}, {"payload", 1}}}}});
        CHECK(refused.status == 500);
        CHECK_THAT(refused.json()["error"].get<std::string>(),
                   Catch::Contains("security.payload_encryption"));
        const Reply rows =
            plain.post("/streams/v1/state/get", {{"query_id", id}, {"partition_id", pid}});
        CHECK(rows.json()["rows"].empty());
    }
}

TEST_CASE("api: streams state/get waits until the state is readable", "[api][streams][reads]") {
    Harness h;
    const std::string query = register_query(h, "q");
    const std::string partition = partition_of(h, "src", "p");
    REQUIRE(h.post("/streams/v1/cycle",
                   {{"query_id", query},
                    {"partition_id", partition},
                    {"state_ops", {{{"type", "upsert"}, {"key", "k"}, {"value", 1}}}}})
                .status == 200);
    h.backend.defer_reads(true);
    auto pending = h.start(Method::post, "/streams/v1/state/get",
                           json{{"query_id", query}, {"partition_id", partition}}.dump());
    CHECK_FALSE(pending.reply->is_done);
    CHECK(h.backend.deferred_reads() == 1);
    h.backend.release_reads();
    REQUIRE(pending.reply->is_done);
    CHECK(pending.reply->json()["rows"][0]["value"] == 1);

    SECTION("a backend error while waiting answers 503 to retry") {
        auto failed = h.start(Method::post, "/streams/v1/state/get",
                              json{{"query_id", query}, {"partition_id", partition}}.dump());
        h.backend.release_reads(Error{Errc::not_leader, "the leader moved"});
        REQUIRE(failed.reply->is_done);
        CHECK(failed.reply->status == 503);
        CHECK(has_retry_after(*failed.reply));
    }
}

TEST_CASE("api: streams state/get pages through every row and refuses an answer over the cap",
          "[api][streams][reads]") {
    Harness h;
    const std::string query = register_query(h, "q");
    const std::string partition = partition_of(h, "src", "p");
    // 100,001 rows "r000000".."r100000" in cycles of 10,000 state ops (the per-cycle limit);
    // every 1000th is a ripe window.
    constexpr int rows = 100'001;
    for (int from = 0; from < rows; from += 10'000) {
        json ops = json::array();
        for (int i = from; i < std::min(rows, from + 10'000); ++i) {
            char key[16];
            std::snprintf(key, sizeof key, "r%06d", i);
            ops.push_back({{"type", "upsert"},
                           {"key", key},
                           {"value", i % 1000 == 0 ? json{{"windowEnd", i}} : json(i)}});
        }
        REQUIRE(h.post("/streams/v1/cycle",
                       {{"query_id", query}, {"partition_id", partition}, {"state_ops", ops}})
                    .json()["state_ops_applied"] == ops.size());
    }
    const json base = {{"query_id", query}, {"partition_id", partition}};

    const Reply all = h.post("/streams/v1/state/get", base);
    CHECK(all.status == 413);
    CHECK_THAT(all.json()["error"].get<std::string>(), Catch::Contains("key_prefix"));

    // The cap counts the rows answered, not the rows read: a narrow filter over every row passes.
    json ripe = base;
    ripe["ripe_at_or_before"] = 100'000;
    const Reply windows = h.post("/streams/v1/state/get", ripe);
    REQUIRE(windows.status == 200);
    const json found = windows.json()["rows"];
    REQUIRE(found.size() == 101);
    CHECK(found.front()["key"] == "r000000");
    CHECK(found.back()["key"] == "r100000");  // past the first pages of list_rows

    json prefix = base;
    prefix["key_prefix"] = "r09";
    const Reply page = h.post("/streams/v1/state/get", prefix);
    REQUIRE(page.status == 200);
    CHECK(page.json()["rows"].size() == 10'000);
}

TEST_CASE("api: bad streams bodies answer 400 and submit nothing", "[api][streams]") {
    Harness h;
    const std::string query = register_query(h, "q");
    const std::string partition = partition_of(h, "src", "p");
    const std::uint64_t submitted = h.backend.submitted();
    const json too_many_ops = [] {
        json ops = json::array();
        for (int i = 0; i < 10'001; ++i) {
            ops.push_back({{"type", "delete"}, {"key", "k"}});
        }
        return ops;
    }();
    const json too_many_items = [] {
        json items = json::array();
        for (int i = 0; i < 10'001; ++i) {
            items.push_back({{"queue", "sink"}, {"payload", i}});
        }
        return items;
    }();
    const std::vector<std::pair<json, std::string>> cases = {
        {{{"partition_id", partition}}, "query_id is required"},
        {{{"query_id", query}, {"partition_id", "00000000-0000-8400-0000-000000000001"}},
         "partition_id '00000000-0000-8400-0000-000000000001' is not a partition id of this "
         "broker"},
        {{{"query_id", query}, {"partition_id", partition}, {"state_ops", too_many_ops}},
         "state_ops has 10001 entries, more than the limit of 10000"},
        {{{"query_id", query}, {"partition_id", partition}, {"push_items", too_many_items}},
         "push_items has 10001 entries, more than the limit of 10000"},
        {{{"query_id", query},
          {"partition_id", partition},
          {"push_items", {{{"queue", "sink"}, {"traceId", "x"}}}}},
         "push_items: TraceId must be a UUID"},
        {{{"query_id", query},
          {"partition_id", partition},
          {"ack", {{"transactionId", "t"}, {"count", -1}}}},
         "ack.count must be between 0 and 2147483647"},
        {{{"query_id", query},
          {"partition_id", partition},
          {"ack", {{"transactionId", "t"}, {"error", 5}}}},
         "ack.error must be a string or null"},
        {{{"query_id", std::string(65, 'q')}, {"partition_id", partition}},
         "query_id is longer than 64 bytes"},
    };
    for (const auto& [body, words] : cases) {
        INFO(words);
        const Reply reply = h.post("/streams/v1/cycle", body);
        CHECK(reply.status == 400);
        CHECK(reply.json() == json{{"error", words}});
    }
    CHECK(h.post_raw("/streams/v1/queries", "[]").status == 400);
    CHECK(h.post_raw("/streams/v1/state/get", "").status == 400);
    CHECK(h.backend.submitted() == submitted);
    CHECK(h.get("/streams/v1/cycle").status == 405);
}

TEST_CASE(
    "api: streams routes answer 404 for an unknown tenant and 503 when the backend cannot "
    "take the entry",
    "[api][streams]") {
    Harness h;
    const std::string query = register_query(h, "q");
    const std::string partition = partition_of(h, "src", "p");
    const std::vector<http::Header> tenant = {{"X-Queen-Tenant", "nobody"}};
    const std::string cycle = json{{"query_id", query}, {"partition_id", partition}}.dump();
    CHECK(h.call(Method::post, "/streams/v1/cycle", cycle, tenant).status == 404);
    CHECK(h.call(Method::post, "/streams/v1/state/get", cycle, tenant).status == 404);
    CHECK(h.call(Method::post, "/streams/v1/queries",
                 R"({"name":"n","source_queue":"s","config_hash":"h"})", tenant)
              .status == 404);

    h.backend.fail_with(Error{Errc::busy, "the proposal queue is full"});
    const Reply busy = h.post_raw("/streams/v1/cycle", cycle);
    CHECK(busy.status == 503);
    CHECK(has_retry_after(busy));
}

TEST_CASE("api: parse_push_array reads items with the push route's rules and words",
          "[api][streams][parse]") {
    const ApiOptions options;
    const std::vector<std::string> lists = {
        R"([{"queue":"q","payload":{"a":1},"transactionId":"t1"},{"queue":"q","partition":"p"}])",
        R"([{"queue":"q","payload":[1, 2 ,3],"traceId":"0a1b2c3d-0000-4000-8000-000000000000"}])",
        R"([])",
        R"([{"queue":5}])",
        R"([{"queue":"q","partition":1}])",
        R"([{"queue":"q","transactionId":false}])",
        R"([{"queue":"q","traceId":"nope"}])",
        R"([1])",
        R"([{"queue":")" + std::string(300, 'x') + R"("}])",
    };
    for (const std::string& list : lists) {
        INFO(list);
        SeededRandom random_a(7);
        SeededRandom random_b(7);
        auto from_body = detail::parse_push(R"({"items":)" + list + "}", options, random_a, 1000);
        auto from_array = detail::parse_push_array(list, "push_items", options, random_b, 1000);
        REQUIRE(from_body.has_value() == from_array.has_value());
        if (!from_body) {
            CHECK(from_body.error().context == from_array.error().context);
            continue;
        }
        REQUIRE(from_body->push.items.size() == from_array->push.items.size());
        CHECK(from_body->has_client_transaction_id == from_array->has_client_transaction_id);
        for (std::size_t i = 0; i < from_body->push.items.size(); ++i) {
            const queues::PushItem& a = from_body->push.items[i];
            const queues::PushItem& b = from_array->push.items[i];
            CHECK(a.queue == b.queue);
            CHECK(a.partition == b.partition);
            CHECK(a.transaction_id == b.transaction_id);
            CHECK(a.trace_id == b.trace_id);
            CHECK(a.payload == b.payload);
        }
    }
    SeededRandom random(1);
    auto object = detail::parse_push_array(R"({"queue":"q"})", "push_items", options, random, 0);
    REQUIRE_FALSE(object.has_value());
    CHECK(object.error().context == "push_items must be an array");
}

}  // namespace
}  // namespace queen::api::testing
