// modules/http/tests/router_test.cpp — Router: literals, :params, *, 404/405, HEAD fallback.
#include "queen/http/router.hpp"

#include <optional>

#include "queen/http/uri.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

using queen::http::Method;
using queen::http::Request;
using queen::http::Responder;
using queen::http::Response;
using queen::http::Router;

namespace {

Request make_request(Method method, std::string path) {
    Request request;
    request.method = method;
    request.method_name = std::string(queen::http::method_name(method));
    request.path = path;
    request.segments = queen::http::decode_path(path).value();
    return request;
}

// Routes `path`, answers with the handler's tag (and its params) or the router's error.
Response route(const Router& router, Method method, std::string path, Request* seen = nullptr) {
    std::optional<Response> got;
    Request request = make_request(method, std::move(path));
    router.handle(request, Responder::detached([&](Response r) { got = std::move(r); }));
    if (seen != nullptr) {
        *seen = request;
    }
    REQUIRE(got.has_value());
    return *got;
}

queen::http::Handler tag(std::string name) {
    return [name](Request&, Responder responder) { responder.complete(Response::text(200, name)); };
}

Router spec_router() {
    Router router;
    router.get("/health", tag("health"));
    router.get("/api/v1/pop/queue/:queue", tag("pop-queue"));
    router.get("/api/v1/pop/queue/:queue/partition/:partition", tag("pop-partition"));
    router.post("/api/v1/ack", tag("ack"));
    router.post("/api/v1/ack/batch", tag("ack-batch"));
    router.post("/api/v1/lease/:leaseId/extend", tag("extend"));
    router.get("/api/v1/traces/names", tag("trace-names"));
    router.get("/api/v1/traces/by-name/:traceName", tag("traces-by-name"));
    router.get("/api/v1/traces/:partitionId/:transactionId", tag("traces"));
    router.get("/api/v1/consumer-groups/lagging", tag("lagging"));
    router.get("/api/v1/consumer-groups/:group", tag("group"));
    router.del("/api/v1/consumer-groups/:group", tag("group-delete"));
    router.post("/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek",
                tag("seek-partition"));
    router.get("/assets/*", tag("assets"));
    return router;
}

}  // namespace

TEST_CASE("http: router matches literals, params and the documented path shapes",
          "[http][router]") {
    const Router router = spec_router();
    CHECK(router.size() == 14);
    Request seen;
    CHECK(route(router, Method::get, "/health").body == "health");
    CHECK(route(router, Method::get, "/api/v1/pop/queue/orders", &seen).body == "pop-queue");
    CHECK(seen.param("queue") == "orders");
    CHECK(route(router, Method::get, "/api/v1/pop/queue/a%20b/partition/p%2F1", &seen).body ==
          "pop-partition");
    CHECK(seen.param("queue") == "a b");
    CHECK(seen.param("partition") == "p/1");
    CHECK(route(router, Method::post, "/api/v1/ack/batch").body == "ack-batch");
    CHECK(route(router, Method::post, "/api/v1/ack").body == "ack");
    CHECK(route(router, Method::post, "/api/v1/lease/0190-abc/extend", &seen).body == "extend");
    CHECK(seen.param("leaseId") == "0190-abc");
    CHECK(route(router, Method::get, "/api/v1/traces/names").body == "trace-names");
    CHECK(route(router, Method::get, "/api/v1/traces/by-name/x").body == "traces-by-name");
    CHECK(route(router, Method::get, "/api/v1/traces/p1/t1", &seen).body == "traces");
    CHECK(seen.param("partitionId") == "p1");
    CHECK(seen.param("transactionId") == "t1");
    CHECK(route(router, Method::get, "/api/v1/consumer-groups/lagging").body == "lagging");
    CHECK(route(router, Method::get, "/api/v1/consumer-groups/g1", &seen).body == "group");
    CHECK(seen.param("group") == "g1");
    CHECK(route(router, Method::delete_, "/api/v1/consumer-groups/g1").body == "group-delete");
    CHECK(route(router, Method::post, "/api/v1/consumer-groups/g/queues/q/partitions/p/seek", &seen)
              .body == "seek-partition");
    CHECK(seen.param("partition") == "p");
    CHECK(route(router, Method::get, "/assets/js/app.js", &seen).body == "assets");
    CHECK(seen.param("*") == "js/app.js");
    CHECK(seen.param("missing") == std::nullopt);
    // Trailing slashes and doubled slashes are the same path.
    CHECK(route(router, Method::get, "/health/").body == "health");
}

TEST_CASE("http: literal beats param but param routes still match when the literal fails",
          "[http][router]") {
    Router router;
    router.get("/a/:x/c", tag("param-c"));
    router.get("/a/b/d", tag("literal-d"));
    Request seen;
    CHECK(route(router, Method::get, "/a/b/d").body == "literal-d");
    CHECK(route(router, Method::get, "/a/b/c", &seen).body == "param-c");
    CHECK(seen.param("x") == "b");
}

TEST_CASE("http: unknown paths answer 404 and wrong methods 405 with Allow", "[http][router]") {
    const Router router = spec_router();
    Response missing = route(router, Method::get, "/api/v1/nothing");
    CHECK(missing.status == 404);
    CHECK(missing.body.find("\"error\"") != std::string::npos);
    CHECK(route(router, Method::get, "/api/v1/pop/queue").status == 404);  // param needs a value

    Response wrong = route(router, Method::post, "/api/v1/consumer-groups/g1");
    CHECK(wrong.status == 405);
    REQUIRE(wrong.headers.size() == 1);
    CHECK(wrong.headers[0].name == "Allow");
    CHECK(wrong.headers[0].value == "GET, DELETE, HEAD");
}

TEST_CASE("http: HEAD falls back to the GET route", "[http][router]") {
    const Router router = spec_router();
    CHECK(route(router, Method::head, "/health").body == "health");
}

TEST_CASE("http: registering a route twice is a programmer error", "[http][router]") {
    Router router;
    router.get("/a/:x", tag("one"));
    queen::testing::AssertCapture capture;
    CHECK_THROWS_AS(router.get("/a/:y", tag("two")), queen::testing::AssertionFired);
    CHECK_THROWS_AS(router.get("/a/*/b", tag("three")), queen::testing::AssertionFired);
    CHECK_THROWS_AS(router.get("no-slash", tag("four")), queen::testing::AssertionFired);
}
