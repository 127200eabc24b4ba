// client/tests/client_state_test.cpp — the KV, lock, timer and request/reply calls of Client: the
// request on the wire (method, target, body), the reading of the answers the routes give (values
// and payloads byte for byte), 409 as Errc::conflict with the server's details, 404, 504, and
// which calls are retried.
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "queen/client/client.hpp"
#include "queen/testing/catch.hpp"
#include "test_server.hpp"

namespace {

using nlohmann::json;
using namespace queen::client;
using namespace std::chrono_literals;
using queen::client::testing::json_reply;
using queen::client::testing::TestServer;

ClientOptions options_for(const TestServer& server) {
    ClientOptions options;
    options.endpoint = Endpoint{"127.0.0.1", server.port()};
    options.retry_attempts = 2;
    options.retry_delay_ms = 1;
    return options;
}

json body_of(const TestServer& server) {
    return json::parse(server.last_request().body);
}

}  // namespace

TEST_CASE("client: kv_put sends the value as the body, the version and TTL in the query",
          "[client][kv]") {
    TestServer server;
    server.reply_always(json_reply(200, R"({"bucket":"orders","key":"a/b c","version":42})"));
    Client client{options_for(server)};
    KvSet set{"orders", "a/b c", R"( {"state": "paid"} )", std::uint64_t{41}, 60'000};
    auto version = client.kv_put(set);
    REQUIRE(version);
    CHECK(*version == 42);
    const auto sent = server.last_request();
    CHECK(sent.method == "PUT");
    CHECK(sent.target == "/api/v1/kv/orders/a%2Fb%20c?expectedVersion=41&ttlMs=60000");
    CHECK(sent.body == R"( {"state": "paid"} )");
    CHECK(sent.header("Content-Type") == "application/json");

    set.expected_version.reset();
    set.ttl_ms = 0;
    REQUIRE(client.kv_put(set));
    CHECK(server.last_request().target == "/api/v1/kv/orders/a%2Fb%20c");

    SECTION("bad input is refused before sending") {
        const auto before = server.requests().size();
        CHECK(client.kv_put(KvSet{"", "k", "1", {}, 0}).error().is(Errc::invalid_argument));
        CHECK(client.kv_put(KvSet{"b", "k", "{", {}, 0}).error().is(Errc::invalid_argument));
        CHECK(client.kv_put(KvSet{"b", "k", "1", {}, -5}).error().is(Errc::invalid_argument));
        CHECK(server.requests().size() == before);
    }
    SECTION("an answer without a version is a bad response") {
        server.reply_always(json_reply(200, R"({"bucket":"orders"})"));
        CHECK(client.kv_put(set).error().is(Errc::bad_response));
    }
}

TEST_CASE("client: a version conflict is Errc::conflict with the current version", "[client][kv]") {
    TestServer server;
    server.reply_always(json_reply(409, R"({"error":"version mismatch","currentVersion":17})"));
    Client client{options_for(server)};
    auto put = client.kv_put(KvSet{"b", "k", "1", std::uint64_t{3}, 0});
    REQUIRE_FALSE(put);
    CHECK(put.error().is(Errc::conflict));
    CHECK(http_status_of(put.error()) == 0);
    CHECK(put.error().context.find("version mismatch (current version 17)") != std::string::npos);
    auto del = client.kv_delete(KvDelete{"b", "k", std::uint64_t{3}});
    REQUIRE_FALSE(del);
    CHECK(del.error().is(Errc::conflict));
    CHECK(server.last_request().method == "DELETE");
    CHECK(server.last_request().target == "/api/v1/kv/b/k?expectedVersion=3");
    CHECK(server.requests().size() == 2);  // conflicts are never retried
}

TEST_CASE("client: writes with an expected version are not retried, the others are",
          "[client][kv]") {
    TestServer server;
    server.reply_always(json_reply(503, R"({"error":"unavailable"})"));
    Client client{options_for(server)};
    CHECK(http_status_of(client.kv_put(KvSet{"b", "k", "1", std::uint64_t{3}, 0}).error()) == 503);
    CHECK(server.requests().size() == 1);
    CHECK(http_status_of(client.kv_put(KvSet{"b", "k", "1", {}, 0}).error()) == 503);
    CHECK(server.requests().size() == 4);
    CHECK(http_status_of(client.kv_delete(KvDelete{"b", "k", std::uint64_t{0}}).error()) == 503);
    CHECK(server.requests().size() == 5);
    CHECK(http_status_of(client.kv_delete(KvDelete{"b", "k", {}}).error()) == 503);
    CHECK(server.requests().size() == 8);
    CHECK(http_status_of(client.lock_release("l", 4).error()) == 503);
    CHECK(server.requests().size() == 9);
    TimerSet timer;
    timer.id = "t";
    timer.queue = "q";
    CHECK(http_status_of(client.timer_set(timer).error()) == 503);
    CHECK(server.requests().size() == 10);
    timer.is_replace = true;
    CHECK(http_status_of(client.timer_set(timer).error()) == 503);
    CHECK(server.requests().size() == 13);
    CHECK(http_status_of(client.request("q", "1", 10ms).error()) == 503);
    CHECK(server.requests().size() == 14);
}

TEST_CASE("client: kv_get returns the stored value byte for byte, absent is HTTP 404",
          "[client][kv]") {
    TestServer server;
    Client client{options_for(server)};
    SECTION("present") {
        server.reply_always(
            json_reply(200, R"({"bucket":"b","key":"k","value":{"z":1, "a":[1.50,"\u00e9"]},
            "version":9,"updatedAt":"2026-01-01T00:00:00.000Z","expiresAt":null})"));
        auto entry = client.kv_get("b", "k");
        REQUIRE(entry);
        CHECK(entry->value_json == R"({"z":1, "a":[1.50,"\u00e9"]})");
        CHECK(entry->version == 9);
        CHECK(entry->updated_at == "2026-01-01T00:00:00.000Z");
        CHECK(entry->expires_at.empty());
        CHECK(server.last_request().method == "GET");
        CHECK(server.last_request().target == "/api/v1/kv/b/k");
    }
    SECTION("a null value is a value") {
        server.reply_always(json_reply(200, R"({"bucket":"b","key":"k","value":null,"version":2,
            "updatedAt":"2026-01-01T00:00:00.000Z","expiresAt":"2026-01-02T00:00:00.000Z"})"));
        auto entry = client.kv_get("b", "k");
        REQUIRE(entry);
        CHECK(entry->value_json == "null");
        CHECK(entry->expires_at == "2026-01-02T00:00:00.000Z");
    }
    SECTION("absent") {
        server.reply_always(json_reply(404, R"({"error":"key not found"})"));
        auto entry = client.kv_get("b", "k");
        REQUIRE_FALSE(entry);
        CHECK(http_status_of(entry.error()) == 404);
        CHECK(entry.error().context.find("key not found") != std::string::npos);
        CHECK(server.requests().size() == 1);
    }
    SECTION("no value member") {
        server.reply_always(json_reply(200, R"({"bucket":"b","key":"k","version":2})"));
        CHECK(client.kv_get("b", "k").error().is(Errc::bad_response));
    }
}

TEST_CASE("client: kv_delete reads deleted, kv_list pages, kv_buckets counts", "[client][kv]") {
    TestServer server;
    Client client{options_for(server)};
    server.reply_always(json_reply(200, R"({"deleted":true})"));
    auto deleted = client.kv_delete(KvDelete{"b", "k", {}});
    REQUIRE(deleted);
    CHECK(*deleted);
    CHECK(server.last_request().target == "/api/v1/kv/b/k");
    server.reply_always(json_reply(200, R"({"deleted":false})"));
    CHECK_FALSE(*client.kv_delete(KvDelete{"b", "k", {}}));
    server.reply_always(json_reply(200, R"({})"));
    CHECK(client.kv_delete(KvDelete{"b", "k", {}}).error().is(Errc::bad_response));

    server.reply_always(json_reply(200, R"({"bucket":"users","keys":[
        {"key":"u1","value":"x","version":3,"updatedAt":"2026-01-01T00:00:00.000Z","expiresAt":null},
        {"key":"u2","value":[2],"version":4,"updatedAt":"2026-01-01T00:00:01.000Z",
         "expiresAt":"2026-02-01T00:00:00.000Z"}],"nextAfter":"u2"})"));
    KvListQuery query;
    query.bucket = "users";
    query.prefix = "u";
    query.after = "u0";
    query.limit = 2;
    auto page = client.kv_list(query);
    REQUIRE(page);
    CHECK(server.last_request().target == "/api/v1/kv/users?prefix=u&after=u0&limit=2");
    CHECK(page->bucket == "users");
    CHECK(page->next_after == "u2");
    REQUIRE(page->entries.size() == 2);
    CHECK(page->entries[0].bucket == "users");
    CHECK(page->entries[0].value_json == "\"x\"");
    CHECK(page->entries[1].key == "u2");
    CHECK(page->entries[1].value_json == "[2]");
    CHECK(page->entries[1].expires_at == "2026-02-01T00:00:00.000Z");

    // Keys as bare strings and a null nextAfter (the last page) read too.
    server.reply_always(json_reply(200, R"({"bucket":"users","keys":["u3"],"nextAfter":null})"));
    page = client.kv_list(KvListQuery{"users", "", "", 100});
    REQUIRE(page);
    CHECK(server.last_request().target == "/api/v1/kv/users?limit=100");
    REQUIRE(page->entries.size() == 1);
    CHECK(page->entries[0].key == "u3");
    CHECK(page->next_after.empty());
    server.reply_always(json_reply(200, R"({"bucket":"users"})"));
    CHECK(client.kv_list(query).error().is(Errc::bad_response));
    CHECK(client.kv_list(KvListQuery{"", "", "", 1}).error().is(Errc::invalid_argument));
    CHECK(client.kv_list(KvListQuery{"b", "", "", 0}).error().is(Errc::invalid_argument));

    server.reply_always(json_reply(
        200, R"({"buckets":[{"bucket":"orders","keys":3},{"bucket":"users","keys":1}]})"));
    auto buckets = client.kv_buckets();
    REQUIRE(buckets);
    CHECK(server.last_request().target == "/api/v1/kv");
    REQUIRE(buckets->size() == 2);
    CHECK((*buckets)[0].bucket == "orders");
    CHECK((*buckets)[0].keys == 3);
    CHECK((*buckets)[1].keys == 1);
}

TEST_CASE("client: lock acquire, renew, release, get and list", "[client][locks]") {
    TestServer server;
    Client client{options_for(server)};
    const char* const grant = R"({"name":"jobs/7","owner":"worker-a","token":120,
        "acquiredAt":"2026-01-01T00:00:00.000Z","expiresAt":"2026-01-01T00:00:30.000Z"})";
    server.reply_always(json_reply(200, grant));
    auto acquired = client.lock_acquire("jobs/7", "worker-a", 30s, 2s);
    REQUIRE(acquired);
    CHECK(acquired->name == "jobs/7");
    CHECK(acquired->owner == "worker-a");
    CHECK(acquired->token == 120);
    CHECK(acquired->acquired_at == "2026-01-01T00:00:00.000Z");
    CHECK(acquired->expires_at == "2026-01-01T00:00:30.000Z");
    CHECK(acquired->guard().name == "jobs/7");
    CHECK(acquired->guard().token == 120);
    CHECK(server.last_request().method == "POST");
    CHECK(server.last_request().target == "/api/v1/locks/jobs%2F7/acquire");
    CHECK(body_of(server) == json{{"owner", "worker-a"}, {"ttlMs", 30000}, {"waitMs", 2000}});

    auto renewed = client.lock_renew("jobs/7", 120, 10s);
    REQUIRE(renewed);
    CHECK(server.last_request().target == "/api/v1/locks/jobs%2F7/renew");
    CHECK(body_of(server) == json{{"token", 120}, {"ttlMs", 10000}});

    auto got = client.lock_get("jobs/7");
    REQUIRE(got);
    CHECK(got->token == 120);
    CHECK(server.last_request().method == "GET");
    CHECK(server.last_request().target == "/api/v1/locks/jobs%2F7");

    server.reply_always(json_reply(200, R"({"released":true})"));
    REQUIRE(client.lock_release(*acquired));
    CHECK(server.last_request().target == "/api/v1/locks/jobs%2F7/release");
    CHECK(body_of(server) == json{{"token", 120}});

    server.reply_always(
        json_reply(200, std::string(R"({"locks":[)") + grant + R"(],"nextAfter":"jobs/7"})"));
    auto page = client.lock_list("jobs/6", 1);
    REQUIRE(page);
    CHECK(server.last_request().target == "/api/v1/locks?after=jobs%2F6&limit=1");
    REQUIRE(page->locks.size() == 1);
    CHECK(page->locks[0].owner == "worker-a");
    CHECK(page->next_after == "jobs/7");
    REQUIRE(client.lock_list());
    CHECK(server.last_request().target == "/api/v1/locks?limit=100");

    SECTION("bad input is refused before sending") {
        const auto before = server.requests().size();
        CHECK(client.lock_acquire("", "o", 1s).error().is(Errc::invalid_argument));
        CHECK(client.lock_acquire("n", "", 1s).error().is(Errc::invalid_argument));
        CHECK(client.lock_acquire("n", "o", 0ms).error().is(Errc::invalid_argument));
        CHECK(client.lock_acquire("n", "o", 1s, -1ms).error().is(Errc::invalid_argument));
        CHECK(client.lock_renew("n", 1, 0ms).error().is(Errc::invalid_argument));
        CHECK(client.lock_release("", 1).error().is(Errc::invalid_argument));
        CHECK(client.lock_get("").error().is(Errc::invalid_argument));
        CHECK(client.lock_list({}, 0).error().is(Errc::invalid_argument));
        CHECK(server.requests().size() == before);
    }
    SECTION("a grant without a token is a bad response") {
        server.reply_always(json_reply(200, R"({"name":"jobs/7"})"));
        CHECK(client.lock_get("jobs/7").error().is(Errc::bad_response));
        CHECK(client.lock_release("jobs/7", 1).error().is(Errc::bad_response));
    }
}

TEST_CASE("client: a held lock is a conflict naming the owner, a stale token too",
          "[client][locks]") {
    TestServer server;
    server.reply_always(json_reply(
        409,
        R"({"error":"lock is held","owner":"worker-b","expiresAt":"2026-01-01T00:01:00.000Z"})"));
    Client client{options_for(server)};
    auto acquired = client.lock_acquire("jobs/7", "worker-a", 30s);
    REQUIRE_FALSE(acquired);
    CHECK(acquired.error().is(Errc::conflict));
    CHECK(acquired.error().context.find(
              "lock is held (held by worker-b until 2026-01-01T00:01:00.000Z)") !=
          std::string::npos);
    server.reply_always(json_reply(409, R"({"error":"stale token"})"));
    auto released = client.lock_release("jobs/7", 5);
    REQUIRE_FALSE(released);
    CHECK(released.error().is(Errc::conflict));
    CHECK(client.lock_renew("jobs/7", 5, 1s).error().is(Errc::conflict));
    server.reply_always(json_reply(404, R"({"error":"lock is free"})"));
    CHECK(http_status_of(client.lock_get("jobs/7").error()) == 404);
}

TEST_CASE("client: a waiting acquire gets an HTTP deadline past its wait", "[client][locks]") {
    TestServer server;
    server.set_handler([](const auto&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        return json_reply(200, R"({"name":"l","owner":"o","token":1})");
    });
    ClientOptions options = options_for(server);
    options.connection.request_timeout_ms = 100;  // shorter than the answer takes
    options.retry_attempts = 0;
    options.pop_wait_margin_ms = 1'000;
    Client client{options};
    CHECK(client.lock_acquire("l", "o", 1s).error().is(Errc::timeout));
    auto waited = client.lock_acquire("l", "o", 1s, 200ms);
    REQUIRE(waited);
    CHECK(waited->token == 1);
}

TEST_CASE("client: timer set, cancel, get and list", "[client][timers]") {
    TestServer server;
    Client client{options_for(server)};
    server.reply_always(json_reply(
        201, R"({"id":"remind/1","dueAt":"2026-01-01T00:05:00.000Z","replaced":false})"));
    TimerSet timer;
    timer.id = "remind/1";
    timer.queue = "reminders";
    timer.payload_json = R"({"order": 1})";
    timer.delay_ms = 300'000;
    timer.interval_ms = 60'000;
    auto set = client.timer_set(timer);
    REQUIRE(set);
    CHECK(set->id == "remind/1");
    CHECK(set->due_at == "2026-01-01T00:05:00.000Z");
    CHECK_FALSE(set->is_replaced);
    CHECK(server.last_request().method == "POST");
    CHECK(server.last_request().target == "/api/v1/timers");
    CHECK(body_of(server) == json::parse(R"({"id":"remind/1","queue":"reminders",
        "payload":{"order":1},"delayMs":300000,"intervalMs":60000})"));

    server.reply_always(json_reply(409, R"({"error":"timer exists"})"));
    auto exists = client.timer_set(timer);
    REQUIRE_FALSE(exists);
    CHECK(exists.error().is(Errc::conflict));

    server.reply_always(json_reply(200, R"({"cancelled":true})"));
    auto cancelled = client.timer_cancel("remind/1");
    REQUIRE(cancelled);
    CHECK(*cancelled);
    CHECK(server.last_request().method == "DELETE");
    CHECK(server.last_request().target == "/api/v1/timers/remind%2F1");

    const char* const info = R"({"id":"remind/1","dueAt":"2026-01-01T00:05:00.000Z",
        "intervalMs":60000,"endAt":null,"fired":2,"createdAt":"2026-01-01T00:00:00.000Z",
        "queue":"reminders","partition":"Default","transactionId":null,"traceId":"tr-9",
        "payload":{"order": 1}})";
    server.reply_always(json_reply(200, info));
    auto got = client.timer_get("remind/1");
    REQUIRE(got);
    CHECK(server.last_request().target == "/api/v1/timers/remind%2F1");
    CHECK(got->interval_ms == 60'000);
    CHECK(got->fired == 2);
    CHECK(got->end_at.empty());
    CHECK(got->created_at == "2026-01-01T00:00:00.000Z");
    CHECK(got->queue == "reminders");
    CHECK(got->partition == "Default");
    CHECK(got->transaction_id.empty());
    CHECK(got->trace_id == "tr-9");
    CHECK(got->payload_json == R"({"order": 1})");

    server.reply_always(
        json_reply(200, std::string(R"({"timers":[)") + info + R"(],"nextAfter":null})"));
    auto page = client.timer_list("a", 10);
    REQUIRE(page);
    CHECK(server.last_request().target == "/api/v1/timers?after=a&limit=10");
    REQUIRE(page->timers.size() == 1);
    CHECK(page->timers[0].id == "remind/1");
    CHECK(page->next_after.empty());

    server.reply_always(json_reply(404, R"({"error":"no such timer"})"));
    CHECK(http_status_of(client.timer_get("x").error()) == 404);

    SECTION("bad input is refused before sending") {
        const auto before = server.requests().size();
        TimerSet bad = timer;
        bad.payload_json = "{";
        CHECK(client.timer_set(bad).error().is(Errc::invalid_argument));
        bad = timer;
        bad.id.clear();
        CHECK(client.timer_set(bad).error().is(Errc::invalid_argument));
        bad = timer;
        bad.at_ms = 5;
        CHECK(client.timer_set(bad).error().is(Errc::invalid_argument));  // at and delay
        CHECK(client.timer_cancel("").error().is(Errc::invalid_argument));
        CHECK(client.timer_get("").error().is(Errc::invalid_argument));
        CHECK(client.timer_list({}, 0).error().is(Errc::invalid_argument));
        CHECK(server.requests().size() == before);
    }
}

TEST_CASE("client: request posts the payload and returns the reply's payload, 504 is a timeout",
          "[client][request]") {
    TestServer server;
    Client client{options_for(server)};
    server.reply_always(
        json_reply(200, R"({"reply": {"total": 12.50, "ok": true} ,"replyTo":"q"})"));
    auto reply = client.request("prices", R"({"sku":"a"})", 1500ms, "eu");
    REQUIRE(reply);
    CHECK(*reply == R"({"total": 12.50, "ok": true})");
    CHECK(server.last_request().method == "POST");
    CHECK(server.last_request().target == "/api/v1/request");
    CHECK(body_of(server) ==
          json::parse(R"({"queue":"prices","partition":"eu","payload":{"sku":"a"},
              "timeoutMs":1500})"));
    REQUIRE(client.request("prices", "null", 0ms));
    CHECK(body_of(server) == json::parse(R"({"queue":"prices","payload":null,"timeoutMs":0})"));

    server.reply_always(json_reply(200, R"({"reply":null,"replyTo":"q"})"));
    reply = client.request("prices", "1", 10ms);
    REQUIRE(reply);
    CHECK(*reply == "null");

    server.reply_always(json_reply(504, R"({"error":"no reply within 10 ms"})"));
    const auto before = server.requests().size();
    reply = client.request("prices", "1", 10ms);
    REQUIRE_FALSE(reply);
    CHECK(reply.error().is(Errc::timeout));
    CHECK(reply.error().context.find("no reply within 10 ms") != std::string::npos);
    CHECK(server.requests().size() == before + 1);

    server.reply_always(json_reply(200, R"({"replyTo":"q"})"));
    CHECK(client.request("prices", "1", 10ms).error().is(Errc::bad_response));
    CHECK(client.request("", "1", 10ms).error().is(Errc::invalid_argument));
    CHECK(client.request("q", "{", 10ms).error().is(Errc::invalid_argument));
    CHECK(client.request("q", "1", -1ms).error().is(Errc::invalid_argument));
}
