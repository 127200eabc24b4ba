// modules/api/tests/tenant_routes_test.cpp — the cluster and tenant routes through the Router:
// transfer-leader, tenants created, listed and deleted, rebalance, and their errors and statuses.
#include "harness.hpp"

namespace queen::api::testing {
namespace {

using http::Method;
using nlohmann::json;

TEST_CASE("api: transfer-leader asks the backend, or answers why not", "[api][cluster]") {
    Harness h;
    const std::string route = "/api/v1/system/cluster/transfer-leader";
    const Reply started = h.post(route, {{"to", 8}});
    CHECK(started.status == 202);
    CHECK(started.json() ==
          json{{"tenant", "default"},
               {"to", 8},
               {"leaderId", 7},
               {"term", 3},
               {"transferring", true},
               {"message", "transfer asked for: watch /health for the new leaderId"}});
    CHECK(h.backend.transfers == std::vector<std::uint64_t>{8});
    const Reply named = h.post(route, {{"tenant", "default"}, {"to", 9}});
    CHECK(named.status == 202);
    const Reply already = h.post(route, {{"to", 7}});
    CHECK(already.status == 200);
    CHECK(already.json()["transferring"] == false);
    CHECK(h.backend.transfers == std::vector<std::uint64_t>{8, 9});

    // Bad node ids: 400, and nothing is asked.
    for (const json& body :
         {json{{"to", 0}}, json{{"to", -2}}, json{{"to", "8"}}, json{{"to", 8.5}}, json::object(),
          json{{"tenant", 3}, {"to", 8}}, json{{"tenant", "bad tenant!"}, {"to", 8}}}) {
        INFO(body.dump());
        const Reply bad = h.post(route, body);
        CHECK(bad.status == 400);
        CHECK_FALSE(bad.json()["error"].get<std::string>().empty());
    }
    CHECK(h.post_raw(route, "[8]").status == 400);
    CHECK(h.post_raw(route, "{").status == 400);
    const Reply mismatch =
        h.call(Method::post, route, R"({"tenant":"default","to":8})", {{"X-Queen-Tenant", "acme"}});
    CHECK(mismatch.status == 400);
    CHECK_THAT(mismatch.json()["error"].get<std::string>(), Catch::Contains("acme"));
    CHECK(h.backend.transfers.size() == 2);

    const Reply not_voter = h.post(route, {{"to", 4}});
    CHECK(not_voter.status == 409);
    CHECK_THAT(not_voter.json()["error"].get<std::string>(), Catch::Contains("not a voter"));
    const Reply unknown = h.post(route, {{"tenant", "acme"}, {"to", 8}});
    CHECK(unknown.status == 404);
    CHECK_THAT(unknown.json()["error"].get<std::string>(), Catch::Contains("acme"));
    const Reply by_header =
        h.call(Method::post, route, R"({"to":8})", {{"X-Queen-Tenant", "acme"}});
    CHECK(by_header.status == 404);

    h.backend.leader_id = 0;
    const Reply election = h.post(route, {{"to", 8}});
    CHECK(election.status == 503);
    CHECK_THAT(election.json()["error"].get<std::string>(), Catch::Contains("retry"));
    CHECK(has_retry_after(election));
    CHECK(h.backend.transfers.size() == 2);
}

const char* const tenants_route = "/api/v1/system/tenants";

TEST_CASE("api: tenants are created, listed and deleted through the backend's catalogue",
          "[api][tenants]") {
    Harness h;
    const json default_tenant = {
        {"name", "default"}, {"replication", 3}, {"replicas", {7, 8, 9}}, {"preferredLeader", 7},
        {"leaderId", 7},     {"hosted", true},   {"createdAt", nullptr}};
    const Reply first = h.get(tenants_route);
    CHECK(first.status == 200);
    CHECK(first.json() == json{{"tenants", {default_tenant}}});

    const Reply created = h.post(tenants_route, {{"name", "acme"}, {"replication", 1}});
    CHECK(created.status == 201);
    const json acme = {{"name", "acme"},
                       {"replication", 1},
                       {"replicas", {7}},
                       {"preferredLeader", 7},
                       {"leaderId", 7},
                       {"hosted", true},
                       {"createdAt", "2023-11-14T22:13:20.000Z"}};
    CHECK(created.json() == acme);
    // Without replication the cluster chooses (3 here); this one does not include this node
    // first, and a tenant of one replica elsewhere is not hosted here.
    const Reply beta = h.post(tenants_route, {{"name", "beta.2"}});
    CHECK(beta.status == 201);
    CHECK(beta.json()["replication"] == 3);
    CHECK(beta.json()["replicas"] == json{8, 9, 7});
    CHECK(beta.json()["preferredLeader"] == 8);
    const Reply away = h.post(tenants_route, {{"name", "Away_1"}, {"replication", 1}});
    CHECK(away.status == 201);
    CHECK(away.json()["replicas"] == json{9});
    CHECK(away.json()["hosted"] == false);
    CHECK(away.json()["leaderId"] == 0);

    const json listed = h.get(tenants_route).json();
    std::vector<std::string> names;
    for (const json& tenant : listed["tenants"]) {
        names.push_back(tenant["name"]);
    }
    CHECK(names == std::vector<std::string>{"Away_1", "acme", "beta.2", "default"});
    CHECK(listed["tenants"][1] == acme);

    const Reply again = h.post(tenants_route, {{"name", "acme"}, {"replication", 3}});
    CHECK(again.status == 409);
    CHECK_THAT(again.json()["error"].get<std::string>(),
               Catch::Contains("tenant 'acme' exists already"));
    const Reply too_many = h.post(tenants_route, {{"name", "big"}, {"replication", 5}});
    CHECK(too_many.status == 400);
    CHECK_THAT(too_many.json()["error"].get<std::string>(), Catch::Contains("3 nodes"));

    const Reply deleted = h.del("/api/v1/system/tenants/acme");
    CHECK(deleted.status == 200);
    CHECK(deleted.json() == json{{"deleted", "acme"}});
    CHECK_FALSE(h.backend.catalogue.contains("acme"));
    const Reply gone = h.del("/api/v1/system/tenants/acme");
    CHECK(gone.status == 404);
    CHECK_THAT(gone.json()["error"].get<std::string>(), Catch::Contains("unknown tenant 'acme'"));
    const Reply protected_default = h.del("/api/v1/system/tenants/default");
    CHECK(protected_default.status == 400);
    CHECK(protected_default.json()["error"] == "the default tenant cannot be deleted");
    CHECK(h.backend.catalogue.contains("default"));
    CHECK(h.del("/api/v1/system/tenants/bad%20name").status == 400);
    CHECK(h.del("/api/v1/system/tenants/" + std::string(65, 'x')).status == 400);
    CHECK(h.backend.catalogue_changes == 4);  // three creates, one delete
}

TEST_CASE("api: a bad tenant body answers 400 with why, and creates nothing", "[api][tenants]") {
    Harness h;
    for (const std::string& body :
         std::vector<std::string>{"",
                                  "  ",
                                  "{",
                                  "[]",
                                  "\"acme\"",
                                  "{}",
                                  R"({"name": null})",
                                  R"({"name": 7})",
                                  R"({"name": ""})",
                                  R"({"name": "bad name"})",
                                  R"({"name": "a/b"})",
                                  R"({"name": ")" + std::string(65, 'a') + R"("})",
                                  R"({"name": "ok", "replication": 2})",
                                  R"({"name": "ok", "replication": 0})",
                                  R"({"name": "ok", "replication": -1})",
                                  R"({"name": "ok", "replication": 3.0})",
                                  R"({"name": "ok", "replication": "3"})",
                                  R"({"name": "ok", "replication": 7})",
                                  R"({"name": "ok", "replicas": 3})",
                                  R"({"tenant": "ok"})"}) {
        INFO(body);
        const Reply bad = h.post_raw(tenants_route, body);
        CHECK(bad.status == 400);
        CHECK_FALSE(bad.json()["error"].get<std::string>().empty());
    }
    CHECK(h.backend.catalogue_changes == 0);
    CHECK(h.backend.catalogue.size() == 1);
    CHECK(h.post_raw(tenants_route, R"({"name": "ok", "replication": null})").status == 201);

    SECTION("the messages say what is wrong") {
        auto error_of = [&](const std::string& body) {
            return h.post_raw(tenants_route, body).json()["error"].get<std::string>();
        };
        CHECK_THAT(error_of("{}"), Catch::Contains("name") && Catch::Contains("required"));
        CHECK_THAT(error_of(R"({"name": "bad name"})"),
                   Catch::Contains("1-64 characters of [A-Za-z0-9._-]"));
        CHECK(error_of(R"({"name": "x", "replication": 2})") == "replication must be 1, 3 or 5");
        CHECK_THAT(error_of(R"({"name": "x", "replicas": 3})"), Catch::Contains("'replicas'"));
        CHECK(error_of("") == "Empty request body");
    }
}

TEST_CASE("api: the tenant routes ignore the tenant header", "[api][tenants]") {
    Harness h;
    for (const std::string header : {"acme", "bad tenant!"}) {
        INFO(header);
        const std::vector<http::Header> headers = {{"X-Queen-Tenant", header}};
        CHECK(h.call(Method::get, tenants_route, {}, headers).status == 200);
        CHECK(h.call(Method::post, "/api/v1/system/cluster/rebalance", {}, headers).status == 200);
    }
    const std::vector<http::Header> headers = {{"X-Queen-Tenant", "nope"}};
    CHECK(h.call(Method::post, tenants_route, R"({"name":"acme"})", headers).status == 201);
    CHECK(h.call(Method::delete_, "/api/v1/system/tenants/acme", {}, headers).status == 200);
}

TEST_CASE("api: the tenant list waits until the state holds what was answered", "[api][tenants]") {
    Harness h;
    check_catalogue_list_waits_for_state(
        h, tenants_route, Error{Errc::not_leader, "no leader of tenant 'default' is known"});
}

TEST_CASE("api: catalogue errors map to statuses", "[api][tenants]") {
    Harness h;
    const json create = {{"name", "acme"}};
    h.backend.catalogue_fail_with = Error{Errc::not_leader, "the catalogue leader is node 8"};
    for (const Reply& reply :
         {h.post(tenants_route, create), h.del("/api/v1/system/tenants/acme"), h.get(tenants_route),
          h.post_raw("/api/v1/system/cluster/rebalance", "")}) {
        INFO(reply.body);
        CHECK(reply.status == 503);
        CHECK(has_retry_after(reply));
        CHECK_THAT(reply.json()["error"].get<std::string>(), Catch::Contains("node 8"));
    }
    h.backend.catalogue_fail_with = Error{Errc::busy, "4096 proposals waiting"};
    const Reply busy = h.post(tenants_route, create);
    CHECK(busy.status == 503);
    CHECK(has_retry_after(busy));
    h.backend.catalogue_fail_with = Error{Errc::poisoned, "fdatasync failed: EIO"};
    CHECK(h.post(tenants_route, create).status == 503);
    h.backend.catalogue_fail_with = Error{Errc::invalid_argument, "no room"};
    const Reply invalid = h.post(tenants_route, create);
    CHECK(invalid.status == 400);
    CHECK(invalid.json()["error"] == "no room");
    // The backend's words are added unless they name the tenant (they would say it twice).
    h.backend.catalogue_fail_with = Error{Errc::already_exists, "tenant 'acme' exists"};
    CHECK(h.post(tenants_route, create).json()["error"] == "tenant 'acme' exists already");
    h.backend.catalogue_fail_with = Error{Errc::not_found, "unknown tenant 'acme'"};
    CHECK(h.del("/api/v1/system/tenants/acme").json()["error"] == "unknown tenant 'acme'");
    h.backend.catalogue_fail_with = Error{Errc::not_found, "being deleted"};
    CHECK(h.del("/api/v1/system/tenants/acme").json()["error"] ==
          "unknown tenant 'acme': being deleted");
    h.backend.catalogue_fail_with = Error{Errc::unsupported, "this backend has no tenants API"};
    CHECK(h.post(tenants_route, create).status == 501);
    CHECK(h.get(tenants_route).status == 501);
    CHECK(h.del("/api/v1/system/tenants/acme").status == 501);
    CHECK(h.post_raw("/api/v1/system/cluster/rebalance", "").status == 501);
    CHECK(h.backend.catalogue_changes == 0);
}

TEST_CASE("api: rebalance answers the new placement", "[api][tenants]") {
    Harness h;
    REQUIRE(h.post(tenants_route, {{"name", "a"}}).status == 201);  // replicas 7, 8, 9
    REQUIRE(h.post(tenants_route, {{"name", "b"}}).status == 201);  // replicas 8, 9, 7
    const std::string route = "/api/v1/system/cluster/rebalance";
    const Reply empty = h.post_raw(route, "");
    CHECK(empty.status == 200);
    // By name: a, b, default take nodes 7, 8 and 9 as preferred leaders.
    const json tenants = empty.json()["tenants"];
    REQUIRE(tenants.size() == 3);
    CHECK(tenants[0]["preferredLeader"] == 7);
    CHECK(tenants[1]["preferredLeader"] == 8);
    CHECK(tenants[2]["name"] == "default");
    CHECK(tenants[2]["preferredLeader"] == 9);
    CHECK(tenants[2]["replicas"] == json{9, 7, 8});
    CHECK(h.post(route, json::object()).status == 200);
    CHECK(h.backend.catalogue_changes == 4);
    for (const std::string body : {"{\"to\": 3}", "[]", "{", "null"}) {
        INFO(body);
        const Reply bad = h.post_raw(route, body);
        CHECK(bad.status == 400);
        CHECK_FALSE(bad.json()["error"].get<std::string>().empty());
    }
    CHECK(h.backend.catalogue_changes == 4);
}

}  // namespace
}  // namespace queen::api::testing
