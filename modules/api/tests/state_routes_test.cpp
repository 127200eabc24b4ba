// api/tests/state_routes_test.cpp — the KV, lock and timer routes through the Router over a real
// engine: answers and headers, versions and 409s, TTLs, paging, the waiting acquire (woken by a
// release or an expiry, the deadline, a client that goes away), timers that deliver (sealed for
// encrypted queues), and bad input answered 4xx with nothing submitted.
#include <set>

#include "harness.hpp"
#include "json.hpp"
#include "queen/engine/command.hpp"
#include "queen/timers/timers.hpp"

namespace queen::api::testing {
namespace {

using http::Method;
using nlohmann::json;

const char* const key_hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
constexpr std::int64_t start_ms = 1'700'000'000'000;  // the harness's wall clock at start

std::string iso(std::int64_t ms) {
    return detail::format_iso_ms(ms);
}

Reply put(Harness& h, std::string_view target, std::string body,
          std::vector<http::Header> headers = {}) {
    return h.call(Method::put, target, std::move(body), std::move(headers));
}

Reply del(Harness& h, std::string_view target, std::vector<http::Header> headers = {}) {
    return h.call(Method::delete_, target, {}, std::move(headers));
}

std::string header_of(const Reply& reply, std::string_view name) {
    for (const http::Header& header : reply.headers) {
        if (http::iequals(header.name, name)) {
            return header.value;
        }
    }
    return {};
}

/// Applies a Due entry now (what the node proposes once a timer, a TTL or a grant is due).
engine::DueResult run_due(Harness& h) {
    engine::Command command;
    command.body = engine::Due{};
    std::optional<engine::DueResult> out;
    h.backend.submit("default", std::move(command), [&](Result<engine::CommandResult> result) {
        REQUIRE(result.has_value());
        REQUIRE(std::holds_alternative<engine::DueResult>(*result));
        out = std::get<engine::DueResult>(*result);
    });
    REQUIRE(out.has_value());
    return *out;
}

/// Every key of `bucket` through the paged listing with `limit`, following nextAfter.
std::vector<std::string> list_all_keys(Harness& h, const std::string& bucket, int limit,
                                       const std::string& prefix = "") {
    std::vector<std::string> keys;
    std::string after;
    for (int pages = 0; pages < 1000; ++pages) {
        const Reply reply = h.get("/api/v1/kv/" + bucket + "?limit=" + std::to_string(limit) +
                                  "&prefix=" + prefix + "&after=" + after);
        REQUIRE(reply.status == 200);
        const json page = reply.json();
        CHECK(page["bucket"].is_string());
        CHECK(page["keys"].size() <= static_cast<std::size_t>(limit));
        for (const json& entry : page["keys"]) {
            keys.push_back(entry["key"]);
        }
        if (page["nextAfter"].is_null()) {
            return keys;
        }
        CHECK(page["keys"].size() == static_cast<std::size_t>(limit));
        after = page["nextAfter"];
        CHECK(after == keys.back());
    }
    FAIL("the listing never ended");
    return keys;
}

// ---------------------------------------------------------------- KV

TEST_CASE("api: a KV put answers its version and ETag, and a get reads the JSON back",
          "[api][kv]") {
    Harness h;
    const json value = {{"name", "Ada"}, {"tags", {1, 2.5, "x"}}, {"nested", {{"ok", true}}}};
    const Reply stored = put(h, "/api/v1/kv/users/42", value.dump(2));
    REQUIRE(stored.status == 200);
    const json body = stored.json();
    CHECK(body["bucket"] == "users");
    CHECK(body["key"] == "42");
    const std::uint64_t version = body["version"];
    CHECK(version > 0);
    CHECK(header_of(stored, "ETag") == "\"" + std::to_string(version) + "\"");
    // One write path: the route submits a transaction.
    REQUIRE_FALSE(h.backend.submitted_types().empty());
    CHECK(h.backend.submitted_types().back() == engine::CommandType::transaction);

    const Reply got = h.get("/api/v1/kv/users/42");
    REQUIRE(got.status == 200);
    const json read = got.json();
    CHECK(read["bucket"] == "users");
    CHECK(read["key"] == "42");
    CHECK(read["value"] == value);
    CHECK(read["version"] == version);
    CHECK(read["updatedAt"] == "2023-11-14T22:13:20.000Z");
    CHECK(read["updatedAt"] == iso(start_ms));
    CHECK(read["expiresAt"].is_null());
    CHECK(header_of(got, "ETag") == "\"" + std::to_string(version) + "\"");

    SECTION("every JSON value is a value: scalars, null, arrays") {
        for (const std::string text : {"7", "\"text\"", "null", "[1,2]", "false"}) {
            INFO(text);
            REQUIRE(put(h, "/api/v1/kv/scalars/k", text).status == 200);
            CHECK(h.get("/api/v1/kv/scalars/k").json()["value"] == json::parse(text));
        }
    }
    SECTION("bucket and key are percent-decoded path segments") {
        REQUIRE(put(h, "/api/v1/kv/my%20bucket/a%2Fb%3Fc", "1").status == 200);
        const json entry = h.get("/api/v1/kv/my%20bucket/a%2Fb%3Fc").json();
        CHECK(entry["bucket"] == "my bucket");
        CHECK(entry["key"] == "a/b?c");
        CHECK(list_all_keys(h, "my%20bucket", 10) == std::vector<std::string>{"a/b?c"});
    }
    SECTION("an absent key, bucket or tenant is a 404") {
        const Reply absent = h.get("/api/v1/kv/users/43");
        CHECK(absent.status == 404);
        CHECK(absent.json()["error"] == "key '43' not found in bucket 'users'");
        CHECK(h.get("/api/v1/kv/nobody/42").status == 404);
        const Reply tenant =
            h.call(Method::get, "/api/v1/kv/users/42", {}, {{"X-Queen-Tenant", "elsewhere"}});
        CHECK(tenant.status == 404);
        CHECK_THAT(tenant.json()["error"].get<std::string>(), Catch::Contains("unknown tenant"));
    }
}

TEST_CASE("api: KV writes with a stale version answer 409 with the current one and change nothing",
          "[api][kv]") {
    Harness h;
    const std::uint64_t v1 = put(h, "/api/v1/kv/b/k", R"({"n":1})").json()["version"];

    SECTION("If-Match with the current version (quoted or not) writes; a stale one is a 409") {
        const Reply second = put(h, "/api/v1/kv/b/k", R"({"n":2})",
                                 {{"If-Match", "\"" + std::to_string(v1) + "\""}});
        REQUIRE(second.status == 200);
        const std::uint64_t v2 = second.json()["version"];
        CHECK(v2 > v1);
        const Reply stale =
            put(h, "/api/v1/kv/b/k", R"({"n":3})", {{"If-Match", std::to_string(v1)}});
        CHECK(stale.status == 409);
        CHECK(stale.json()["currentVersion"] == v2);
        CHECK_THAT(stale.json()["error"].get<std::string>(),
                   Catch::Contains("version " + std::to_string(v2)));
        CHECK(h.get("/api/v1/kv/b/k").json()["value"]["n"] == 2);
        const Reply third =
            put(h, "/api/v1/kv/b/k", R"({"n":3})", {{"If-Match", " " + std::to_string(v2) + " "}});
        CHECK(third.status == 200);
    }
    SECTION("expectedVersion in the query is the same precondition") {
        CHECK(put(h, "/api/v1/kv/b/k?expectedVersion=" + std::to_string(v1 + 100), "2").status ==
              409);
        CHECK(put(h, "/api/v1/kv/b/k?expectedVersion=" + std::to_string(v1), "2").status == 200);
        CHECK(h.get("/api/v1/kv/b/k").json()["value"] == 2);
    }
    SECTION("If-None-Match: * (expected version 0) creates only") {
        const Reply exists = put(h, "/api/v1/kv/b/k", "5", {{"If-None-Match", "*"}});
        CHECK(exists.status == 409);
        CHECK(exists.json()["currentVersion"] == v1);
        CHECK(put(h, "/api/v1/kv/b/new", "5", {{"If-None-Match", "*"}}).status == 200);
        CHECK(put(h, "/api/v1/kv/b/new", "6", {{"If-None-Match", "*"}}).status == 409);
        CHECK(h.get("/api/v1/kv/b/new").json()["value"] == 5);
    }
    SECTION("a version for an absent key is a 409 with currentVersion 0") {
        const Reply absent = put(h, "/api/v1/kv/b/none", "1", {{"If-Match", "7"}});
        CHECK(absent.status == 409);
        CHECK(absent.json()["currentVersion"] == 0);
        CHECK(h.get("/api/v1/kv/b/none").status == 404);
    }
    SECTION("delete: a stale version is a 409 and keeps the key; the right one deletes") {
        const Reply stale = del(h, "/api/v1/kv/b/k", {{"If-Match", std::to_string(v1 + 1)}});
        CHECK(stale.status == 409);
        CHECK(stale.json()["currentVersion"] == v1);
        CHECK(h.get("/api/v1/kv/b/k").status == 200);
        const Reply deleted = del(h, "/api/v1/kv/b/k?expectedVersion=" + std::to_string(v1));
        REQUIRE(deleted.status == 200);
        CHECK(deleted.json() == json{{"deleted", true}});
        CHECK(h.get("/api/v1/kv/b/k").status == 404);
        CHECK(del(h, "/api/v1/kv/b/k").json() == json{{"deleted", false}});
    }
}

TEST_CASE("api: a KV TTL ends the key at exactly its expiry", "[api][kv][ttl]") {
    Harness h;
    SECTION("ttlMs in the query") {
        REQUIRE(put(h, "/api/v1/kv/s/session?ttlMs=1000", R"({"user":1})").status == 200);
    }
    SECTION("X-Queen-TTL-Ms") {
        REQUIRE(
            put(h, "/api/v1/kv/s/session", R"({"user":1})", {{"X-Queen-TTL-Ms", "1000"}}).status ==
            200);
    }
    const json entry = h.get("/api/v1/kv/s/session").json();
    CHECK(entry["expiresAt"] == iso(start_ms + 1000));
    h.backend.advance(999);
    CHECK(h.get("/api/v1/kv/s/session").status == 200);
    CHECK(h.get("/api/v1/kv/s").json()["keys"].size() == 1);
    h.backend.advance(1);
    CHECK(h.get("/api/v1/kv/s/session").status == 404);
    CHECK(h.get("/api/v1/kv/s").json()["keys"].empty());
    // An expired key is absent for writes too: creating it again works.
    CHECK(put(h, "/api/v1/kv/s/session", "2", {{"If-None-Match", "*"}}).status == 200);
    // A write without a TTL clears it.
    CHECK(h.get("/api/v1/kv/s/session").json()["expiresAt"].is_null());
}

TEST_CASE("api: KV listings page by nextAfter and filter by prefix", "[api][kv]") {
    Harness h;
    std::vector<std::string> all;
    for (int i = 0; i < 23; ++i) {
        const std::string key = (i % 2 == 0 ? "even-" : "odd-") + std::to_string(100 + i);
        REQUIRE(put(h, "/api/v1/kv/big/" + key, std::to_string(i)).status == 200);
        all.push_back(key);
    }
    std::sort(all.begin(), all.end());
    REQUIRE(put(h, "/api/v1/kv/other/x", "1").status == 200);

    for (const int limit : {1, 5, 23, 100}) {
        INFO("limit " << limit);
        CHECK(list_all_keys(h, "big", limit) == all);
    }
    const std::vector<std::string> odd = list_all_keys(h, "big", 4, "odd-");
    CHECK(odd.size() == 11);
    for (const std::string& key : odd) {
        CHECK(key.rfind("odd-", 0) == 0);
    }
    // A full last page says no more when nothing follows (no empty page).
    const json exact = h.get("/api/v1/kv/big?limit=11&prefix=odd-").json();
    CHECK(exact["keys"].size() == 11);
    CHECK(exact["nextAfter"].is_null());
    // The entries carry value, version and times.
    const json first = h.get("/api/v1/kv/big?limit=1").json()["keys"][0];
    CHECK(first["key"] == all.front());
    CHECK(first["value"].is_number());
    CHECK(first["version"].is_number());
    CHECK(first["updatedAt"] == iso(start_ms));
    CHECK(first["expiresAt"].is_null());
    CHECK(h.get("/api/v1/kv/empty").json() ==
          json{{"bucket", "empty"}, {"keys", json::array()}, {"nextAfter", nullptr}});

    const json buckets = h.get("/api/v1/kv").json();
    CHECK(
        buckets ==
        json{{"buckets", {{{"bucket", "big"}, {"keys", 23}}, {{"bucket", "other"}, {"keys", 1}}}}});
}

TEST_CASE("api: bad KV requests answer 4xx and submit nothing", "[api][kv]") {
    ApiOptions options;
    options.json_body_bytes_max = 2u << 20;
    options.payload_bytes_max = 1u << 20;
    Harness h(options);
    const std::string long_bucket(129, 'b');
    const std::string long_key(257, 'k');
    struct Case {
        Method method;
        std::string target;
        std::string body;
        std::vector<http::Header> headers;
        int status;
        std::string message;
    };
    const std::vector<Case> cases = {
        {Method::put, "/api/v1/kv/b/k", "", {}, 400, "Empty request body"},
        {Method::put, "/api/v1/kv/b/k", "  ", {}, 400, "Empty request body"},
        {Method::put, "/api/v1/kv/b/k", "{", {}, 400, "Invalid JSON"},
        {Method::put, "/api/v1/kv/b/k", "[1] 2", {}, 400, "Invalid JSON"},
        {Method::put,
         "/api/v1/kv/" + long_bucket + "/k",
         "1",
         {},
         400,
         "bucket is longer than 128"},
        {Method::put, "/api/v1/kv/b/" + long_key, "1", {}, 400, "key is longer than 256"},
        {Method::put, "/api/v1/kv/b/%FF", "1", {}, 400, "key must be UTF-8"},
        {Method::put, "/api/v1/kv/b/k", "1", {{"If-Match", "abc"}}, 400, "If-Match"},
        {Method::put, "/api/v1/kv/b/k", "1", {{"If-Match", "W/\"1\""}}, 400, "If-Match"},
        {Method::put, "/api/v1/kv/b/k", "1", {{"If-Match", "*"}}, 400, "If-Match"},
        {Method::put, "/api/v1/kv/b/k", "1", {{"If-Match", "-1"}}, 400, "If-Match"},
        {Method::put, "/api/v1/kv/b/k", "1", {{"If-None-Match", "\"1\""}}, 400, "If-None-Match"},
        {Method::put, "/api/v1/kv/b/k?expectedVersion=-1", "1", {}, 400, "expectedVersion"},
        {Method::put, "/api/v1/kv/b/k?expectedVersion=x", "1", {}, 400, "expectedVersion"},
        {Method::put,
         "/api/v1/kv/b/k?expectedVersion=1",
         "1",
         {{"If-Match", "1"}},
         400,
         "not several"},
        {Method::put,
         "/api/v1/kv/b/k",
         "1",
         {{"If-Match", "1"}, {"If-None-Match", "*"}},
         400,
         "not several"},
        {Method::put, "/api/v1/kv/b/k?ttlMs=-5", "1", {}, 400, "ttlMs"},
        {Method::put, "/api/v1/kv/b/k?ttlMs=31622400001", "1", {}, 400, "ttlMs"},
        {Method::put, "/api/v1/kv/b/k", "1", {{"X-Queen-TTL-Ms", "soon"}}, 400, "X-Queen-TTL-Ms"},
        {Method::put, "/api/v1/kv/b/k?ttlMs=5", "1", {{"X-Queen-TTL-Ms", "5"}}, 400, "not both"},
        {Method::put,
         "/api/v1/kv/b/k",
         "\"" + std::string(1u << 20, 'v') + "\"",
         {},
         400,
         "value is larger than"},
        {Method::put, "/api/v1/kv/b/k", std::string((2u << 20) + 1, ' '), {}, 413, "limit"},
        {Method::delete_, "/api/v1/kv/b/k", "", {{"If-Match", "x"}}, 400, "If-Match"},
        {Method::delete_, "/api/v1/kv/b/" + long_key, "", {}, 400, "key is longer"},
        {Method::get, "/api/v1/kv/b?limit=0", "", {}, 400, "limit"},
        {Method::get, "/api/v1/kv/b?limit=1001", "", {}, 400, "limit"},
        {Method::get, "/api/v1/kv/b?prefix=" + long_key, "", {}, 400, "prefix"},
        {Method::get, "/api/v1/kv/b?after=" + long_key, "", {}, 400, "after"},
        {Method::get, "/api/v1/kv/" + long_bucket, "", {}, 400, "bucket"},
        {Method::get, "/api/v1/kv/b/" + long_key, "", {}, 400, "key"},
        {Method::put,
         "/api/v1/kv/b/k",
         "1",
         {{"X-Queen-Tenant", "bad tenant"}},
         400,
         "X-Queen-Tenant"},
    };
    for (const Case& c : cases) {
        INFO(http::method_name(c.method)
             << " " << c.target.substr(0, 80) << " " << c.body.substr(0, 40));
        const std::uint64_t before = h.backend.submitted();
        const Reply reply = h.call(c.method, c.target, c.body, c.headers);
        CHECK(reply.status == c.status);
        CHECK_THAT(reply.json()["error"].get<std::string>(), Catch::Contains(c.message));
        CHECK(h.backend.submitted() == before);
    }
    CHECK(h.get("/api/v1/kv").json()["buckets"].empty());
}

// ---------------------------------------------------------------- locks

TEST_CASE("api: locks are acquired, renewed, released, read and listed", "[api][locks]") {
    Harness h;
    const Reply acquired =
        h.post("/api/v1/locks/jobs%2Fnightly/acquire", {{"owner", "worker-1"}, {"ttlMs", 5000}});
    REQUIRE(acquired.status == 200);
    const json grant = acquired.json();
    CHECK(grant["name"] == "jobs/nightly");
    CHECK(grant["owner"] == "worker-1");
    const std::uint64_t token = grant["token"];
    CHECK(token > 0);
    CHECK(grant["acquiredAt"] == iso(start_ms));
    CHECK(grant["expiresAt"] == iso(start_ms + 5000));
    CHECK(h.backend.submitted_types().back() == engine::CommandType::lock);
    CHECK(h.get("/api/v1/locks/jobs%2Fnightly").json() == grant);

    SECTION("another owner gets a 409 naming the holder; the holder's acquire renews") {
        const Reply held = h.post("/api/v1/locks/jobs%2Fnightly/acquire", {{"owner", "worker-2"}});
        CHECK(held.status == 409);
        CHECK(held.json()["owner"] == "worker-1");
        CHECK(held.json()["expiresAt"] == iso(start_ms + 5000));
        CHECK_THAT(held.json()["error"].get<std::string>(), Catch::Contains("held"));
        h.backend.advance(1000);
        const json again =
            h.post("/api/v1/locks/jobs%2Fnightly/acquire", {{"owner", "worker-1"}}).json();
        CHECK(again["token"] == token);
        CHECK(again["expiresAt"] == iso(start_ms + 1000 + 30000));  // the default TTL
    }
    SECTION("renew extends the grant with the same token; a stale token is a 409") {
        h.backend.advance(2000);
        const Reply renewed =
            h.post("/api/v1/locks/jobs%2Fnightly/renew", {{"token", token}, {"ttlMs", 10000}});
        REQUIRE(renewed.status == 200);
        CHECK(renewed.json()["token"] == token);
        CHECK(renewed.json()["expiresAt"] == iso(start_ms + 2000 + 10000));
        CHECK(renewed.json()["acquiredAt"] == iso(start_ms));
        const Reply stale = h.post("/api/v1/locks/jobs%2Fnightly/renew", {{"token", token + 1}});
        CHECK(stale.status == 409);
        CHECK(stale.json().contains("error"));
        CHECK(h.post("/api/v1/locks/free/renew", {{"token", token}}).status == 409);
    }
    SECTION("release with a stale token is a 409 and keeps the grant; the right token frees it") {
        const Reply stale = h.post("/api/v1/locks/jobs%2Fnightly/release", {{"token", token + 7}});
        CHECK(stale.status == 409);
        CHECK(h.get("/api/v1/locks/jobs%2Fnightly").status == 200);
        const Reply released = h.post("/api/v1/locks/jobs%2Fnightly/release", {{"token", token}});
        REQUIRE(released.status == 200);
        CHECK(released.json() == json{{"released", true}});
        CHECK(h.backend.submitted_types().back() == engine::CommandType::transaction);
        CHECK(h.get("/api/v1/locks/jobs%2Fnightly").status == 404);
        CHECK(h.post("/api/v1/locks/jobs%2Fnightly/release", {{"token", token}}).status == 409);
        // Free again: the next grant has a larger token.
        const json next =
            h.post("/api/v1/locks/jobs%2Fnightly/acquire", {{"owner", "worker-2"}}).json();
        CHECK(next["token"].get<std::uint64_t>() > token);
    }
    SECTION("a grant ends at exactly its expiry") {
        h.backend.advance(4999);
        CHECK(h.get("/api/v1/locks/jobs%2Fnightly").status == 200);
        h.backend.advance(1);
        CHECK(h.get("/api/v1/locks/jobs%2Fnightly").status == 404);
        CHECK(h.get("/api/v1/locks").json()["locks"].empty());
        const Reply other = h.post("/api/v1/locks/jobs%2Fnightly/acquire", {{"owner", "worker-2"}});
        CHECK(other.status == 200);
    }
    SECTION("the listing pages by nextAfter") {
        std::vector<std::string> names = {"jobs/nightly"};
        for (int i = 0; i < 9; ++i) {
            const std::string name = "lock-" + std::to_string(i);
            REQUIRE(h.post("/api/v1/locks/" + name + "/acquire", {{"owner", "o"}}).status == 200);
            names.push_back(name);
        }
        std::sort(names.begin(), names.end());
        std::vector<std::string> seen;
        std::string after;
        for (int pages = 0; pages < 20; ++pages) {
            const json page = h.get("/api/v1/locks?limit=3&after=" + after).json();
            for (const json& each : page["locks"]) {
                seen.push_back(each["name"]);
                CHECK(each["owner"].is_string());
            }
            if (page["nextAfter"].is_null()) {
                break;
            }
            after = page["nextAfter"];
        }
        CHECK(seen == names);
        const json exact = h.get("/api/v1/locks?limit=10").json();
        CHECK(exact["locks"].size() == 10);
        CHECK(exact["nextAfter"].is_null());
    }
}

TEST_CASE("api: a lock guard on a push operation with items guards every item",
          "[api][locks][transaction]") {
    Harness h;
    const std::uint64_t token =
        h.post("/api/v1/locks/fence/acquire", {{"owner", "a"}}).json()["token"];
    const auto push_guarded = [&](std::uint64_t guard_token) {
        return h.post(
            "/api/v1/transaction",
            {{"operations",
              {{{"type", "push"},
                {"items",
                 {{{"queue", "fenced"}, {"payload", 1}}, {{"queue", "fenced"}, {"payload", 2}}}},
                {"lock", {{"name", "fence"}, {"token", guard_token}}}}}}});
    };
    const Reply stale = push_guarded(token + 1);
    CHECK(stale.status == 409);
    CHECK(stale.json()["success"] == false);
    CHECK(h.get("/api/v1/pop/queue/fenced").status == 204);
    const Reply current = push_guarded(token);
    REQUIRE(current.status == 200);
    CHECK(current.json()["success"] == true);
    CHECK(h.get("/api/v1/pop/queue/fenced?batch=10").json()["messages"].size() == 2);
}

TEST_CASE("api: bad lock requests answer 400 and submit nothing", "[api][locks]") {
    Harness h;
    const std::string long_name(257, 'n');
    const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
        {"/api/v1/locks/l/acquire", "", "Empty request body"},
        {"/api/v1/locks/l/acquire", "[]", "body must be a JSON object"},
        {"/api/v1/locks/l/acquire", "{}", "owner is required"},
        {"/api/v1/locks/l/acquire", R"({"owner": 5})", "owner must be a string"},
        {"/api/v1/locks/l/acquire", R"({"owner": ""})", "owner must not be empty"},
        {"/api/v1/locks/l/acquire", "{\"owner\": \"" + std::string(257, 'o') + "\"}",
         "owner is longer than 256"},
        {"/api/v1/locks/l/acquire", R"({"owner": "o", "ttlMs": 0})", "ttlMs must be between"},
        {"/api/v1/locks/l/acquire", R"({"owner": "o", "ttlMs": 86400001})", "ttlMs"},
        {"/api/v1/locks/l/acquire", R"({"owner": "o", "ttlMs": "5"})", "ttlMs must be an integer"},
        {"/api/v1/locks/l/acquire", R"({"owner": "o", "waitMs": -1})", "waitMs"},
        {"/api/v1/locks/l/acquire", R"({"owner": "o", "waitMs": 600001})", "waitMs"},
        {"/api/v1/locks/l/acquire", R"({"owner": "o", "ttl": 5})", "unknown field 'ttl'"},
        {"/api/v1/locks/" + long_name + "/acquire", R"({"owner": "o"})", "lock name is longer"},
        {"/api/v1/locks/%C3%28/acquire", R"({"owner": "o"})", "lock name must be UTF-8"},
        {"/api/v1/locks/l/renew", "{}", "token is required"},
        {"/api/v1/locks/l/renew", R"({"token": 0})", "token must be between"},
        {"/api/v1/locks/l/renew", R"({"token": "1"})", "token must be an integer"},
        {"/api/v1/locks/l/renew", R"({"token": 1, "owner": "o"})", "unknown field 'owner'"},
        {"/api/v1/locks/l/renew", R"({"token": 1, "ttlMs": 0})", "ttlMs"},
        {"/api/v1/locks/l/release", R"({"token": -3})", "token must be between"},
        {"/api/v1/locks/l/release", R"({"token": 1, "ttlMs": 5})", "unknown field 'ttlMs'"},
        {"/api/v1/locks/l/release", "", "Empty request body"},
    };
    for (const auto& [target, body, message] : cases) {
        INFO(target.substr(0, 60) << " " << body.substr(0, 60));
        const std::uint64_t before = h.backend.submitted();
        const Reply reply = h.post_raw(target, body);
        CHECK(reply.status == 400);
        CHECK_THAT(reply.json()["error"].get<std::string>(), Catch::Contains(message));
        CHECK(h.backend.submitted() == before);
    }
    for (const std::string& target :
         std::vector<std::string>{"/api/v1/locks/" + long_name, "/api/v1/locks?limit=0",
                                  "/api/v1/locks?limit=1001", "/api/v1/locks?after=" + long_name}) {
        INFO(target);
        CHECK(h.get(target).status == 400);
    }
    CHECK(h.backend.submitted() == 0);
}

TEST_CASE("api: a waiting acquire is woken by the release and gets the lock",
          "[api][locks][wait]") {
    Harness h;
    const json first = h.post("/api/v1/locks/L/acquire", {{"owner", "a"}}).json();
    const std::uint64_t submitted = h.backend.submitted();
    auto waiting = h.start(Method::post, "/api/v1/locks/L/acquire",
                           json{{"owner", "b"}, {"waitMs", 5000}}.dump());
    REQUIRE_FALSE(waiting.reply->is_done);
    CHECK(h.backend.waiting() == 1);
    CHECK(h.backend.submitted() == submitted + 1);  // one acquire, then it parks

    // Other changes do not wake it: a KV write, a release of another lock.
    REQUIRE(put(h, "/api/v1/kv/b/k", "1").status == 200);
    const json other = h.post("/api/v1/locks/M/acquire", {{"owner", "a"}}).json();
    REQUIRE(h.post("/api/v1/locks/M/release", {{"token", other["token"]}}).status == 200);
    CHECK_FALSE(waiting.reply->is_done);
    CHECK(h.backend.submitted() == submitted + 4);  // no acquire retried
    h.backend.advance(4000);
    CHECK_FALSE(waiting.reply->is_done);

    REQUIRE(h.post("/api/v1/locks/L/release", {{"token", first["token"]}}).status == 200);
    REQUIRE(waiting.reply->is_done);
    REQUIRE(waiting.reply->status == 200);
    const json grant = waiting.reply->json();
    CHECK(grant["owner"] == "b");
    CHECK(grant["token"].get<std::uint64_t>() > first["token"].get<std::uint64_t>());
    CHECK(grant["acquiredAt"] == iso(start_ms + 4000));
    CHECK(h.backend.waiting() == 0);
    CHECK(h.get("/api/v1/locks/L").json()["owner"] == "b");
}

TEST_CASE("api: a waiting acquire answers 409 at its deadline", "[api][locks][wait]") {
    Harness h;
    REQUIRE(h.post("/api/v1/locks/L/acquire", {{"owner", "a"}, {"ttlMs", 60000}}).status == 200);
    auto waiting = h.start(Method::post, "/api/v1/locks/L/acquire",
                           json{{"owner", "b"}, {"waitMs", 1000}}.dump());
    REQUIRE_FALSE(waiting.reply->is_done);
    h.backend.advance(999);
    CHECK_FALSE(waiting.reply->is_done);
    const std::uint64_t submitted = h.backend.submitted();
    h.backend.advance(1);
    REQUIRE(waiting.reply->is_done);
    CHECK(waiting.reply->status == 409);
    CHECK(waiting.reply->json()["owner"] == "a");
    CHECK(waiting.reply->json()["expiresAt"] == iso(start_ms + 60000));
    CHECK(h.backend.submitted() == submitted);  // answered from the last try: no sleep loop
    CHECK(h.backend.waiting() == 0);
    CHECK(h.get("/api/v1/locks/L").json()["owner"] == "a");
}

TEST_CASE("api: a waiting acquire outlives a leader change: it acquires again after a pause",
          "[api][locks][wait]") {
    Harness h;
    const json first = h.post("/api/v1/locks/L/acquire", {{"owner", "a"}}).json();
    // No leader for a while: the acquire fails, pauses, tries again, until the deadline.
    h.backend.fail_with(Error{Errc::not_leader, "no leader known"});
    auto waiting = h.start(Method::post, "/api/v1/locks/L/acquire",
                           json{{"owner", "b"}, {"waitMs", 5000}}.dump());
    REQUIRE_FALSE(waiting.reply->is_done);
    h.backend.advance(1000);
    CHECK_FALSE(waiting.reply->is_done);
    // A leader again: the next try finds the lock held and parks; the release wakes it.
    h.backend.fail_with(std::nullopt);
    h.backend.advance(200);
    CHECK_FALSE(waiting.reply->is_done);
    REQUIRE(h.post("/api/v1/locks/L/release", {{"token", first["token"]}}).status == 200);
    REQUIRE(waiting.reply->is_done);
    CHECK(waiting.reply->status == 200);
    CHECK(waiting.reply->json()["owner"] == "b");

    SECTION("an error that lasts past the deadline is the answer") {
        h.backend.fail_with(Error{Errc::timeout, "the leader changed"});
        auto late = h.start(Method::post, "/api/v1/locks/L/acquire",
                            json{{"owner", "c"}, {"waitMs", 1000}}.dump());
        REQUIRE_FALSE(late.reply->is_done);
        h.backend.advance(1000);
        REQUIRE(late.reply->is_done);
        CHECK(late.reply->status == 503);
        CHECK(h.backend.waiting() == 0);
    }
    SECTION("without waitMs the error is the answer at once") {
        h.backend.fail_with(Error{Errc::not_leader, "no leader known"});
        CHECK(h.post("/api/v1/locks/L/acquire", {{"owner", "c"}}).status == 503);
    }
}

TEST_CASE("api: a waiting acquire is woken when the holder's grant expires", "[api][locks][wait]") {
    Harness h;
    REQUIRE(h.post("/api/v1/locks/L/acquire", {{"owner", "a"}, {"ttlMs", 1000}}).status == 200);
    auto waiting = h.start(Method::post, "/api/v1/locks/L/acquire",
                           json{{"owner", "b"}, {"waitMs", 10000}}.dump());
    REQUIRE_FALSE(waiting.reply->is_done);
    h.backend.advance(1000);
    CHECK_FALSE(waiting.reply->is_done);  // woken by the Due entry, not by the clock
    const engine::DueResult due = run_due(h);
    CHECK(due.locks_expired == 1);
    REQUIRE(waiting.reply->is_done);
    REQUIRE(waiting.reply->status == 200);
    CHECK(waiting.reply->json()["owner"] == "b");
    CHECK(h.backend.waiting() == 0);
}

TEST_CASE("api: a waiting acquire whose client goes away stops waiting", "[api][locks][wait]") {
    Harness h;
    const json first = h.post("/api/v1/locks/L/acquire", {{"owner", "a"}}).json();
    auto waiting = h.start(Method::post, "/api/v1/locks/L/acquire",
                           json{{"owner", "b"}, {"waitMs", 5000}}.dump());
    REQUIRE(h.backend.waiting() == 1);
    http::Responder::cancel(waiting.responder);
    CHECK(h.backend.waiting() == 0);
    const std::uint64_t submitted = h.backend.submitted();
    REQUIRE(h.post("/api/v1/locks/L/release", {{"token", first["token"]}}).status == 200);
    CHECK(h.backend.submitted() == submitted + 1);  // the release only: no acquire for b
    CHECK_FALSE(waiting.reply->is_done);
    CHECK(h.get("/api/v1/locks/L").status == 404);
}

TEST_CASE("api: several waiting acquires: each release hands the lock to one of them",
          "[api][locks][wait]") {
    Harness h;
    json holder = h.post("/api/v1/locks/L/acquire", {{"owner", "w0"}}).json();
    std::vector<Harness::Pending> waiting;
    for (int i = 1; i <= 3; ++i) {
        waiting.push_back(
            h.start(Method::post, "/api/v1/locks/L/acquire",
                    json{{"owner", "w" + std::to_string(i)}, {"waitMs", 60000}}.dump()));
    }
    std::set<std::string> owners;
    for (int round = 0; round < 3; ++round) {
        REQUIRE(h.post("/api/v1/locks/L/release", {{"token", holder["token"]}}).status == 200);
        int granted = 0;
        for (const auto& pending : waiting) {
            if (pending.reply->is_done && pending.reply->status == 200) {
                const json grant = pending.reply->json();
                if (!owners.contains(grant["owner"])) {
                    owners.insert(grant["owner"].get<std::string>());
                    holder = grant;
                }
                ++granted;
            }
        }
        CHECK(granted == round + 1);  // exactly one more waiter got it
        CHECK(h.get("/api/v1/locks/L").json()["owner"] == holder["owner"]);
    }
    CHECK(owners == std::set<std::string>{"w1", "w2", "w3"});
    CHECK(h.backend.waiting() == 0);
}

// ---------------------------------------------------------------- timers

TEST_CASE("api: timers are set, read, listed, replaced and cancelled", "[api][timers]") {
    Harness h;
    const json body = {{"id", "reminder-1"},      {"queue", "reminders"},
                       {"partition", "p1"},       {"payload", {{"text", "call back"}}},
                       {"transactionId", "tx-1"}, {"delayMs", 1000}};
    const Reply created = h.post("/api/v1/timers", body);
    REQUIRE(created.status == 201);
    CHECK(created.json() ==
          json{{"id", "reminder-1"}, {"dueAt", iso(start_ms + 1000)}, {"replaced", false}});
    CHECK(h.backend.submitted_types().back() == engine::CommandType::transaction);

    const Reply read = h.get("/api/v1/timers/reminder-1");
    REQUIRE(read.status == 200);
    CHECK(read.json() == json{{"id", "reminder-1"},
                              {"dueAt", iso(start_ms + 1000)},
                              {"intervalMs", 0},
                              {"endAt", nullptr},
                              {"fired", 0},
                              {"createdAt", iso(start_ms)},
                              {"queue", "reminders"},
                              {"partition", "p1"},
                              {"transactionId", "tx-1"},
                              {"traceId", nullptr},
                              {"payload", {{"text", "call back"}}}});

    SECTION("setting an existing id is a 409 and changes nothing; replace replaces it") {
        json other = body;
        other["delayMs"] = 5000;
        const Reply exists = h.post("/api/v1/timers", other);
        CHECK(exists.status == 409);
        CHECK_THAT(exists.json()["error"].get<std::string>(), Catch::Contains("exists"));
        CHECK(h.get("/api/v1/timers/reminder-1").json()["dueAt"] == iso(start_ms + 1000));
        other["replace"] = true;
        const Reply replaced = h.post("/api/v1/timers", other);
        REQUIRE(replaced.status == 201);
        CHECK(replaced.json()["replaced"] == true);
        CHECK(replaced.json()["dueAt"] == iso(start_ms + 5000));
    }
    SECTION("cancel answers whether the timer existed") {
        const Reply cancelled = del(h, "/api/v1/timers/reminder-1");
        REQUIRE(cancelled.status == 200);
        CHECK(cancelled.json() == json{{"cancelled", true}});
        CHECK(h.get("/api/v1/timers/reminder-1").status == 404);
        CHECK(del(h, "/api/v1/timers/reminder-1").json() == json{{"cancelled", false}});
    }
    SECTION("a due timer delivers its message through a Due entry") {
        h.backend.advance(1000);
        CHECK(run_due(h).messages_pushed == 1);
        const json popped = h.get("/api/v1/pop/queue/reminders").json();
        REQUIRE(popped["messages"].size() == 1);
        CHECK(popped["messages"][0]["data"] == json{{"text", "call back"}});
        CHECK(popped["messages"][0]["transactionId"] == "tx-1");
        CHECK(popped["partition"] == "p1");
        CHECK(h.get("/api/v1/timers/reminder-1").status == 404);  // one-shot: gone
    }
    SECTION("a repeating timer shows its interval, end and firings") {
        const Reply every = h.post("/api/v1/timers", {{"id", "tick"},
                                                      {"queue", "ticks"},
                                                      {"at", iso(start_ms + 100)},
                                                      {"intervalMs", 100},
                                                      {"endAt", start_ms + 1000}});
        REQUIRE(every.status == 201);
        CHECK(every.json()["dueAt"] == iso(start_ms + 100));
        h.backend.advance(100);
        run_due(h);
        const json tick = h.get("/api/v1/timers/tick").json();
        CHECK(tick["intervalMs"] == 100);
        CHECK(tick["endAt"] == iso(start_ms + 1000));
        CHECK(tick["fired"] == 1);
        CHECK(tick["dueAt"] == iso(start_ms + 200));
        CHECK(tick["payload"].is_null());
        CHECK(tick["transactionId"].is_null());
    }
    SECTION("the listing pages by nextAfter, without payloads") {
        std::vector<std::string> ids = {"reminder-1"};
        for (int i = 0; i < 70; ++i) {  // more than one read chunk
            const std::string id = "t" + std::to_string(1000 + i);
            REQUIRE(
                h.post("/api/v1/timers", {{"id", id}, {"queue", "q"}, {"delayMs", 60000}}).status ==
                201);
            ids.push_back(id);
        }
        std::sort(ids.begin(), ids.end());
        for (const int limit : {1, 7, 66, 71, 100}) {
            INFO("limit " << limit);
            std::vector<std::string> seen;
            std::string after;
            for (int pages = 0; pages < 100; ++pages) {
                const json page =
                    h.get("/api/v1/timers?limit=" + std::to_string(limit) + "&after=" + after)
                        .json();
                for (const json& timer : page["timers"]) {
                    seen.push_back(timer["id"]);
                    CHECK_FALSE(timer.contains("payload"));
                    CHECK(timer["queue"].is_string());
                }
                if (page["nextAfter"].is_null()) {
                    break;
                }
                CHECK(page["timers"].size() == static_cast<std::size_t>(limit));
                after = page["nextAfter"];
            }
            CHECK(seen == ids);
        }
    }
}

TEST_CASE("api: delayed pushes' timers are listed and readable, but not set or cancelled",
          "[api][timers]") {
    Harness h;
    const Reply pushed = h.post(
        "/api/v1/transaction",
        {{"operations",
          {{{"type", "push"},
            {"items", {{{"queue", "later"}, {"payload", {{"n", 1}}}, {"delayMs", 2000}}}}}}}});
    REQUIRE(pushed.status == 200);
    const std::string id = pushed.json()["results"][0]["timerId"];
    REQUIRE(id.rfind("~delay.", 0) == 0);
    const json listed = h.get("/api/v1/timers").json();
    REQUIRE(listed["timers"].size() == 1);
    CHECK(listed["timers"][0]["id"] == id);
    const Reply read = h.get("/api/v1/timers/" + id);
    REQUIRE(read.status == 200);
    CHECK(read.json()["queue"] == "later");
    CHECK(read.json()["payload"] == json{{"n", 1}});
    CHECK(read.json()["dueAt"] == iso(start_ms + 2000));

    const std::uint64_t before = h.backend.submitted();
    const Reply cancel = del(h, "/api/v1/timers/" + id);
    CHECK(cancel.status == 400);
    CHECK_THAT(cancel.json()["error"].get<std::string>(), Catch::Contains("server's"));
    const Reply set = h.post("/api/v1/timers", {{"id", id}, {"queue", "q"}, {"delayMs", 1}});
    CHECK(set.status == 400);
    CHECK(h.backend.submitted() == before);
    CHECK(h.get("/api/v1/timers/" + id).status == 200);
}

TEST_CASE("api: bad timer requests answer 400 and submit nothing", "[api][timers]") {
    Harness h;
    REQUIRE(h.post("/api/v1/timers", {{"id", "t"}, {"queue", "q"}, {"delayMs", 1000}}).status ==
            201);
    const std::uint64_t submitted = h.backend.submitted();
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "Empty request body"},
        {"[1]", "body must be a JSON object"},
        {R"({"queue": "q", "delayMs": 1})", "id is required"},
        {R"({"id": 5, "queue": "q", "delayMs": 1})", "id must be a string"},
        {"{\"id\": \"" + std::string(201, 'i') + "\", \"queue\": \"q\", \"delayMs\": 1}",
         "id is longer than 200"},
        {R"({"id": "~delay.1.0", "queue": "q", "delayMs": 1})", "server's"},
        {R"({"id": "x", "delayMs": 1})", "queue is required"},
        {R"({"id": "x", "queue": "q"})", "at or delayMs"},
        {R"({"id": "x", "queue": "q", "at": 5, "delayMs": 1})", "not both"},
        {R"({"id": "x", "queue": "q", "at": "tomorrow"})", "at must be an ISO 8601 time"},
        {R"({"id": "x", "queue": "q", "delayMs": -1})", "delayMs"},
        {R"({"id": "x", "queue": "q", "delayMs": 1, "intervalMs": 5})", "intervalMs"},
        {R"({"id": "x", "queue": "q", "delayMs": 1, "replace": "yes"})", "replace"},
        {R"({"id": "x", "queue": "q", "delayMs": 1, "traceId": "not-a-uuid"})", "traceId"},
        {R"({"id": "x", "queue": "q", "delayMs": 1, "delay": 5})", "unknown field 'delay'"},
        {R"({"type": "kv.set", "id": "x", "queue": "q", "delayMs": 1})", "type must be"},
        {R"({"id": "x", "queue": "q", "delayMs": 1, "lock": {"name": "l"}})", "token is required"},
        {"{\"id\": \"x\", \"queue\": \"" + std::string(257, 'q') + "\", \"delayMs\": 1}",
         "queue is longer"},
    };
    for (const auto& [body, message] : cases) {
        INFO(body.substr(0, 80));
        const Reply reply = h.post_raw("/api/v1/timers", body);
        CHECK(reply.status == 400);
        CHECK_THAT(reply.json()["error"].get<std::string>(), Catch::Contains(message));
    }
    CHECK(del(h, "/api/v1/timers/" + std::string(201, 'i')).status == 400);
    CHECK(h.get("/api/v1/timers/" + std::string(201, 'i')).status == 400);
    CHECK(h.get("/api/v1/timers?limit=0").status == 400);
    CHECK(h.get("/api/v1/timers?limit=1001").status == 400);
    CHECK(h.get("/api/v1/timers/none").status == 404);
    CHECK(h.backend.submitted() == submitted);
    // The one timer is unchanged.
    const json timers = h.get("/api/v1/timers").json()["timers"];
    REQUIRE(timers.size() == 1);
    CHECK(timers[0]["dueAt"] == iso(start_ms + 1000));
}

TEST_CASE("api: a timer to an encrypted queue stores its payload sealed and reads it back plain",
          "[api][timers][encryption]") {
    ApiOptions options;
    options.encryption_key_hex = key_hex;
    Harness h(options);
    REQUIRE(h.post("/api/v1/configure",
                   {{"queue", "secret"}, {"options", {{"encryptionEnabled", true}}}})
                .status == 200);
    const json secret = {{"card", "4111-1111-1111-1111"}};
    REQUIRE(h.post("/api/v1/timers",
                   {{"id", "s"}, {"queue", "secret"}, {"payload", secret}, {"delayMs", 10}})
                .status == 201);

    // At rest: the delivered message is sealed inside the timer record.
    const auto stored = h.backend.engine().read([&](const queues::Tables&, const store::Txn& txn) {
        return timers::get(h.backend.engine().timer_tables(), txn, "s");
    });
    REQUIRE(stored.has_value());
    REQUIRE(stored->has_value());
    const auto item = engine::decode_timer_message((*stored)->payload);
    REQUIRE(item.has_value());
    CHECK(item->is_encrypted);
    const std::string raw(item->payload.begin(), item->payload.end());
    CHECK(raw.find("4111") == std::string::npos);

    CHECK(h.get("/api/v1/timers/s").json()["payload"] == secret);
    h.backend.advance(10);
    run_due(h);
    CHECK(h.get("/api/v1/pop/queue/secret").json()["messages"][0]["data"] == secret);

    SECTION("without the key the timer is refused, and reading a sealed one is a 500") {
        Harness plain;
        REQUIRE(plain
                    .post("/api/v1/configure",
                          {{"queue", "secret"}, {"options", {{"encryptionEnabled", true}}}})
                    .status == 200);
        const Reply refused = plain.post(
            "/api/v1/timers", {{"id", "s"}, {"queue", "secret"}, {"payload", 1}, {"delayMs", 10}});
        CHECK(refused.status == 500);
        CHECK_THAT(refused.json()["error"].get<std::string>(),
                   Catch::Contains("security.payload_encryption"));
        CHECK(plain.get("/api/v1/timers").json()["timers"].empty());
    }
}

TEST_CASE("api: the KV, lock and timer reads wait until the state is readable", "[api][reads]") {
    Harness h;
    REQUIRE(put(h, "/api/v1/kv/b/k", "1").status == 200);
    h.backend.defer_reads(true);
    std::vector<Harness::Pending> reads;
    for (const std::string target :
         {"/api/v1/kv/b/k", "/api/v1/kv/b", "/api/v1/kv", "/api/v1/locks/l", "/api/v1/locks",
          "/api/v1/timers/t", "/api/v1/timers"}) {
        reads.push_back(h.start(Method::get, target));
        CHECK_FALSE(reads.back().reply->is_done);
    }
    CHECK(h.backend.deferred_reads() == reads.size());
    h.backend.release_reads();
    for (const auto& pending : reads) {
        CHECK(pending.reply->is_done);
    }
    CHECK(reads[0].reply->json()["value"] == 1);

    SECTION("a KV conflict answers with the version the entry saw, without a read") {
        const auto version = reads[0].reply->json()["version"].get<std::uint64_t>();
        auto conflict = h.start(Method::put, "/api/v1/kv/b/k", "2", {{"If-None-Match", "*"}});
        REQUIRE(conflict.reply->is_done);
        CHECK(conflict.reply->status == 409);
        CHECK(conflict.reply->json()["currentVersion"].get<std::uint64_t>() == version);
        CHECK(h.backend.deferred_reads() == 0);
    }
}

TEST_CASE("api: the KV, lock and timer routes answer 404 for an unknown tenant", "[api][tenants]") {
    Harness h;
    const std::vector<http::Header> tenant = {{"X-Queen-Tenant", "nobody"}};
    CHECK(h.call(Method::put, "/api/v1/kv/b/k", "1", tenant).status == 404);
    CHECK(h.call(Method::delete_, "/api/v1/kv/b/k", "", tenant).status == 404);
    CHECK(h.call(Method::get, "/api/v1/kv", "", tenant).status == 404);
    CHECK(h.call(Method::post, "/api/v1/locks/l/acquire", R"({"owner":"o"})", tenant).status ==
          404);
    CHECK(h.call(Method::get, "/api/v1/locks", "", tenant).status == 404);
    CHECK(h.call(Method::post, "/api/v1/timers", R"({"id":"t","queue":"q","delayMs":1})", tenant)
              .status == 404);
    CHECK(h.call(Method::get, "/api/v1/timers/t", "", tenant).status == 404);
    CHECK(h.backend.waiting() == 0);
}

}  // namespace
}  // namespace queen::api::testing
