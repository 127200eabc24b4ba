// modules/node/tests/tenant_routing_test.cpp — which API requests a node forwards, to which
// replica, and how long it waits (forward_target()).
#include "tenant_routing.hpp"

#include <map>
#include <set>
#include <string>

#include "queen/testing/catch.hpp"
#include "request_forward.hpp"

namespace {
using queen::NodeId;
using namespace queen::node::detail;

/// Node 1's view: it hosts "default" and "local"; "remote" lives on nodes 3 and 2 (3 preferred);
/// "mine" lists node 1 but is not open yet.
struct View {
    std::set<std::string> hosted{"default", "local"};
    std::map<std::string, TenantPlacement> catalogue;
    std::set<NodeId> connected{NodeId{2}, NodeId{3}};

    View() {
        for (const auto& [name, replicas] : std::map<std::string, std::vector<NodeId>>{
                 {"default", {NodeId{1}, NodeId{2}, NodeId{3}}},
                 {"local", {NodeId{1}}},
                 {"remote", {NodeId{3}, NodeId{2}}},
                 {"mine", {NodeId{2}, NodeId{1}}}}) {
            TenantPlacement placement;
            placement.name = name;
            placement.replicas = replicas;
            catalogue[name] = placement;
        }
    }

    std::optional<ForwardTarget> target(const std::string& method, const std::string& target,
                                        std::vector<queen::http::Header> headers = {}) const {
        auto request = rebuild_request(method, target);
        REQUIRE(request);
        request->headers = std::move(headers);
        TenantRoutingOptions options;
        options.forward_timeout_ms = 5'000;
        options.pop_timeout_ms_default = 30'000;
        options.pop_timeout_ms_max = 60'000;
        return forward_target(
            *request, NodeId{1}, options,
            [&](const std::string& name) { return hosted.count(name) != 0; },
            [&](const std::string& name) -> std::optional<TenantPlacement> {
                const auto found = catalogue.find(name);
                if (found == catalogue.end()) {
                    return std::nullopt;
                }
                return found->second;
            },
            [&](NodeId peer) { return connected.count(peer) != 0; });
    }
};

queen::http::Header tenant(std::string name) {
    return queen::http::Header{"X-Queen-Tenant", std::move(name)};
}
}  // namespace

TEST_CASE("requests for tenants hosted here, unknown or invalid are served here") {
    const View view;
    CHECK_FALSE(view.target("POST", "/api/v1/push"));  // the default tenant
    CHECK_FALSE(view.target("POST", "/api/v1/push", {tenant("local")}));
    CHECK_FALSE(view.target("POST", "/api/v1/push", {tenant("")}));           // empty: the default
    CHECK_FALSE(view.target("POST", "/api/v1/push", {tenant("nosuch")}));     // 404 here
    CHECK_FALSE(view.target("POST", "/api/v1/push", {tenant("bad name!")}));  // 400 here
    CHECK_FALSE(view.target("POST", "/api/v1/push", {tenant("mine")}));       // 503 while opening
}

TEST_CASE("a tenant hosted elsewhere goes to its first connected replica") {
    View view;
    auto target = view.target("POST", "/api/v1/push", {tenant("remote")});
    REQUIRE(target);
    CHECK(target->node == NodeId{3});  // the preferred leader
    CHECK(target->timeout == std::chrono::milliseconds(5'000));

    view.connected.erase(NodeId{3});
    target = view.target("GET", "/api/v1/resources/queues", {tenant("remote")});
    REQUIRE(target);
    CHECK(target->node == NodeId{2});

    view.connected.clear();  // none connected: the preferred one (the forward fails with 503)
    target = view.target("GET", "/api/v1/resources/queues", {tenant("remote")});
    REQUIRE(target);
    CHECK(target->node == NodeId{3});
}

TEST_CASE("a long poll waits its timeout on top of the forward timeout, at most the maximum") {
    const View view;
    const auto wait = [&](const std::string& query) {
        auto target = view.target("GET", "/api/v1/pop/queue/q" + query, {tenant("remote")});
        REQUIRE(target);
        return target->timeout.count();
    };
    CHECK(wait("?wait=true&timeout=2000") == 7'000);
    CHECK(wait("?wait=true") == 35'000);                 // the default wait
    CHECK(wait("?wait=1&timeout=999999999") == 65'000);  // clamped
    CHECK(wait("?wait=false&timeout=2000") == 5'000);    // no wait
    CHECK(wait("?timeout=2000") == 5'000);
}

TEST_CASE("requests outside /api/ and requests a peer forwarded are never forwarded") {
    const View view;
    CHECK_FALSE(view.target("GET", "/health", {tenant("remote")}));
    CHECK_FALSE(view.target("GET", "/metrics/prometheus", {tenant("remote")}));
    CHECK_FALSE(view.target("GET", "/apix/v1/push", {tenant("remote")}));
    CHECK_FALSE(view.target(
        "POST", "/api/v1/push",
        {tenant("remote"), queen::http::Header{std::string(forwarded_from_header), "2"}}));
}
