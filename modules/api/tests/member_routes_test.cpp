// modules/api/tests/member_routes_test.cpp — the cluster member routes through the Router:
// members listed, added and removed, bad input (never reaching the backend), and the statuses
// of the backend's errors.
#include "harness.hpp"

namespace queen::api::testing {
namespace {

using http::Method;
using nlohmann::json;

const char* const members_route = "/api/v1/system/cluster/members";

json member(std::uint64_t id, const std::string& address, bool is_self, bool is_connected,
            std::uint32_t tenants) {
    return {{"id", id},
            {"peerAddress", address},
            {"self", is_self},
            {"connected", is_connected},
            {"tenants", tenants}};
}

std::vector<std::uint64_t> ids_of(const json& answer) {
    std::vector<std::uint64_t> ids;
    for (const json& m : answer["members"]) {
        ids.push_back(m["id"]);
    }
    return ids;
}

TEST_CASE("api: cluster members are listed, added and removed through the backend",
          "[api][members]") {
    Harness h;
    const Reply first = h.get(members_route);
    CHECK(first.status == 200);
    CHECK(first.json() == json{{"members",
                                {member(7, "127.0.0.7:7007", true, true, 1),
                                 member(8, "127.0.0.8:7008", false, true, 1),
                                 member(9, "127.0.0.9:7009", false, false, 1)}}});

    const Reply added = h.post(members_route, {{"id", 4}, {"address", "127.0.0.4:7004"}});
    CHECK(added.status == 201);
    CHECK(ids_of(added.json()) == std::vector<std::uint64_t>{4, 7, 8, 9});
    CHECK(added.json()["members"][0] == member(4, "127.0.0.4:7004", false, false, 0));
    CHECK(h.get(members_route).json() == added.json());
    // IPv6 as cluster.peers writes it: the port after the last ':'.
    const Reply v6 = h.post(members_route, {{"id", 12}, {"address", "::1:7012"}});
    CHECK(v6.status == 201);
    CHECK(v6.json()["members"][4] == member(12, "::1:7012", false, false, 0));
    CHECK(h.backend.members.at(12).peer_host == "::1");
    CHECK(h.backend.members.at(12).peer_port == 7012);

    const Reply removed = h.del(std::string(members_route) + "/9");
    CHECK(removed.status == 200);
    CHECK(ids_of(removed.json()) == std::vector<std::uint64_t>{4, 7, 8, 12});
    CHECK(h.backend.member_calls == 3);
    CHECK(h.get(members_route).json() == removed.json());
}

TEST_CASE("api: a bad member body or id answers 400 with why, and asks the backend nothing",
          "[api][members]") {
    Harness h;
    for (const std::string& body :
         std::vector<std::string>{"",
                                  "  ",
                                  "{",
                                  "[]",
                                  "null",
                                  "4",
                                  "{}",
                                  R"({"address": "127.0.0.4:7004"})",
                                  R"({"id": null, "address": "127.0.0.4:7004"})",
                                  R"({"id": 0, "address": "127.0.0.4:7004"})",
                                  R"({"id": -4, "address": "127.0.0.4:7004"})",
                                  R"({"id": 4.5, "address": "127.0.0.4:7004"})",
                                  R"({"id": 4.0, "address": "127.0.0.4:7004"})",
                                  R"({"id": "4", "address": "127.0.0.4:7004"})",
                                  R"({"id": 4})",
                                  R"({"id": 4, "address": null})",
                                  R"({"id": 4, "address": 7004})",
                                  R"({"id": 4, "address": ""})",
                                  R"({"id": 4, "address": "127.0.0.4"})",
                                  R"({"id": 4, "address": "127.0.0.4:"})",
                                  R"({"id": 4, "address": ":7004"})",
                                  R"({"id": 4, "address": "127.0.0.4:0"})",
                                  R"({"id": 4, "address": "127.0.0.4:65536"})",
                                  R"({"id": 4, "address": "127.0.0.4:-1"})",
                                  R"({"id": 4, "address": "127.0.0.4:+7004"})",
                                  R"({"id": 4, "address": "127.0.0.4:70x4"})",
                                  R"({"id": 4, "address": "127.0.0.4:007004"})",
                                  R"({"id": 4, "address": "localhost:7004"})",
                                  R"({"id": 4, "address": "node4.example:7004"})",
                                  R"({"id": 4, "address": "127.0.0.256:7004"})",
                                  R"({"id": 4, "address": "[::1]:7004"})",
                                  R"({"id": 4, "address": "4@127.0.0.4:7004"})",
                                  R"({"id": 4, "address": " 127.0.0.4:7004"})",
                                  R"({"id": 4, "address": "127.0.0.4:7004", "replication": 3})",
                                  R"({"id": 4, "peerAddress": "127.0.0.4:7004"})"}) {
        INFO(body);
        const Reply bad = h.post_raw(members_route, body);
        CHECK(bad.status == 400);
        CHECK_FALSE(bad.json()["error"].get<std::string>().empty());
    }
    for (const std::string id : {"0", "-1", "x", "4x", "4.0", "%20", "18446744073709551616"}) {
        INFO(id);
        const Reply bad = h.del(std::string(members_route) + "/" + id);
        CHECK(bad.status == 400);
        CHECK(bad.json()["error"] == "the node id must be a positive integer");
    }
    CHECK(h.backend.member_calls == 0);
    CHECK(h.backend.members.size() == 3);

    SECTION("the messages say what is wrong") {
        auto error_of = [&](const std::string& body) {
            return h.post_raw(members_route, body).json()["error"].get<std::string>();
        };
        CHECK_THAT(error_of(R"({"address": "127.0.0.4:7004"})"),
                   Catch::Contains("id") && Catch::Contains("positive integer") &&
                       Catch::Contains("required"));
        CHECK_THAT(error_of(R"({"id": 4})"),
                   Catch::Contains("address") && Catch::Contains("required"));
        CHECK_THAT(error_of(R"({"id": 4, "address": "localhost:7004"})"),
                   Catch::Contains("address 'localhost:7004' is not <ip>:<port>") &&
                       Catch::Contains("numeric"));
        CHECK_THAT(error_of(R"({"id": 4, "address": "127.0.0.4:7004", "to": 1})"),
                   Catch::Contains("unknown field 'to'"));
        CHECK(error_of("[]") == "body must be a JSON object");
        CHECK(error_of("") == "Empty request body");
        CHECK(h.backend.member_calls == 0);
    }
}

TEST_CASE("api: the member routes ignore the tenant header", "[api][members]") {
    Harness h;
    for (const std::string header : {"acme", "bad tenant!"}) {
        INFO(header);
        const std::vector<http::Header> headers = {{"X-Queen-Tenant", header}};
        CHECK(h.call(Method::get, members_route, {}, headers).status == 200);
    }
    const std::vector<http::Header> headers = {{"X-Queen-Tenant", "nope"}};
    CHECK(h.call(Method::post, members_route, R"({"id":4,"address":"127.0.0.4:7004"})", headers)
              .status == 201);
    CHECK(h.call(Method::delete_, std::string(members_route) + "/4", {}, headers).status == 200);
}

TEST_CASE("api: the member list waits until the state holds what was answered", "[api][members]") {
    Harness h;
    check_catalogue_list_waits_for_state(h, members_route,
                                         Error{Errc::busy, "too many reads waiting"});
}

TEST_CASE("api: member errors map to statuses", "[api][members]") {
    Harness h;
    const std::string node_4 = std::string(members_route) + "/4";
    const json add = {{"id", 4}, {"address", "127.0.0.4:7004"}};

    // The backend's own refusals.
    const Reply taken = h.post(members_route, {{"id", 8}, {"address", "127.0.0.4:7004"}});
    CHECK(taken.status == 409);
    CHECK(taken.json()["error"] == "node 8 is a member already: a member with id 8");
    const Reply same_address = h.post(members_route, {{"id", 4}, {"address", "127.0.0.8:7008"}});
    CHECK(same_address.status == 400);
    CHECK(same_address.json()["error"] == "node 8 has that peer address");
    const Reply unknown = h.del(node_4);
    CHECK(unknown.status == 404);
    CHECK(unknown.json()["error"] == "node 4 is not a member: no member has that id");
    CHECK(h.backend.members.size() == 3);

    // Retryable: 503 with Retry-After, for every route.
    for (const Error& error :
         {Error{Errc::not_leader, "the catalogue leader is node 8"},
          Error{Errc::busy, "4096 proposals waiting"}, Error{Errc::cancelled, "shutting down"},
          Error{Errc::timeout, "no answer from node 8"}}) {
        h.backend.catalogue_fail_with = error;
        for (const Reply& reply :
             {h.post(members_route, add), h.del(node_4), h.get(members_route)}) {
            INFO(error.message() << ": " << reply.body);
            CHECK(reply.status == 503);
            CHECK(has_retry_after(reply));
        }
    }
    h.backend.catalogue_fail_with = Error{Errc::not_leader, "the catalogue leader is node 8"};
    CHECK_THAT(h.post(members_route, add).json()["error"].get<std::string>(),
               Catch::Contains("node 8") && Catch::Contains("retry"));
    h.backend.catalogue_fail_with = Error{Errc::poisoned, "fdatasync failed: EIO"};
    const Reply poisoned = h.post(members_route, add);
    CHECK(poisoned.status == 503);
    CHECK_FALSE(has_retry_after(poisoned));
    h.backend.catalogue_fail_with =
        Error{Errc::invalid_argument, "tenant 'acme' would have 2 nodes for its replication 3"};
    const Reply too_few = h.del(node_4);
    CHECK(too_few.status == 400);
    CHECK(too_few.json()["error"] == "tenant 'acme' would have 2 nodes for its replication 3");
    // The backend's words are added unless they name the node (they would say it twice).
    h.backend.catalogue_fail_with = Error{Errc::already_exists, "node 4 is a member"};
    CHECK(h.post(members_route, add).json()["error"] == "node 4 is a member already");
    h.backend.catalogue_fail_with = Error{Errc::not_found, ""};
    CHECK(h.del(node_4).json()["error"] == "node 4 is not a member");

    h.backend.catalogue_fail_with = Error{
        Errc::unsupported, "this node runs alone (no cluster.peers): it has no cluster to add to"};
    for (const Reply& reply : {h.post(members_route, add), h.del(node_4)}) {
        CHECK(reply.status == 501);
        CHECK(reply.json()["error"] ==
              "this node runs alone (no cluster.peers): it has no cluster to add to");
    }
    h.backend.catalogue_fail_with.reset();
    CHECK(h.backend.member_calls == 18);
    CHECK(h.backend.members.size() == 3);
}

TEST_CASE("api: the last member cannot be removed, and a backend without members answers 501",
          "[api][members]") {
    Harness h;
    CHECK(h.del(std::string(members_route) + "/8").status == 200);
    CHECK(h.del(std::string(members_route) + "/9").status == 200);
    const Reply last = h.del(std::string(members_route) + "/7");
    CHECK(last.status == 501);
    CHECK(last.json()["error"] == "the last member cannot be removed");
    CHECK(ids_of(h.get(members_route).json()) == std::vector<std::uint64_t>{7});
    // The default tenant now has only node 7 among its replicas.
    CHECK(h.get(members_route).json()["members"][0]["tenants"] == 1);

    // A node that runs alone has no peer listener: its address is null.
    h.backend.members.at(7).peer_host.clear();
    h.backend.members.at(7).peer_port = 0;
    CHECK(h.get(members_route).json()["members"][0]["peerAddress"] == nullptr);

    h.backend.catalogue_fail_with = Error{Errc::unsupported, "this backend has no cluster members"};
    const Reply none = h.get(members_route);
    CHECK(none.status == 501);
    CHECK(none.json()["error"] == "this backend has no cluster members");
}

}  // namespace
}  // namespace queen::api::testing
