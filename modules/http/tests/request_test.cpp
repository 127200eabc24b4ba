// modules/http/tests/request_test.cpp — Request lookups and Response helpers.
#include "queen/http/request.hpp"

#include "queen/http/response.hpp"
#include "queen/testing/catch.hpp"

using queen::http::Request;
using queen::http::Response;

TEST_CASE("http: header lookup is case-insensitive and returns the first", "[http][request]") {
    Request request;
    request.headers = {{"Content-Type", "application/json"}, {"X-A", "1"}, {"x-a", "2"}};
    CHECK(request.header("content-type") == "application/json");
    CHECK(request.header("X-A") == "1");
    CHECK(request.header("missing") == std::nullopt);
}

TEST_CASE("http: query helpers follow the documented boolean and integer rules",
          "[http][request]") {
    Request request;
    request.query = {
        {"wait", "true"}, {"autoAck", "1"}, {"flag", "yes"}, {"batch", "25"},
        {"bad", "12x"},   {"neg", "-3"},    {"group", ""},   {"big", "99999999999999999999"}};
    CHECK(request.query_bool("wait", false));
    CHECK(request.query_bool("autoAck", false));
    CHECK_FALSE(request.query_bool("flag", true));
    CHECK(request.query_bool("absent", true));
    CHECK(request.query_int("batch", 1) == 25);
    CHECK(request.query_int("bad", 7) == 7);
    CHECK(request.query_int("neg", 7) == -3);
    CHECK(request.query_int("group", 7) == 7);
    CHECK(request.query_int("big", 7) == 7);
    CHECK(request.query_int("absent", 7) == 7);
    CHECK(request.query_value("group") == "");  // present and empty is not absent
}

TEST_CASE("http: method names round-trip", "[http][request]") {
    using queen::http::Method;
    for (Method m : {Method::get, Method::head, Method::post, Method::put, Method::delete_,
                     Method::patch, Method::options}) {
        CHECK(queen::http::parse_method(queen::http::method_name(m)) == m);
    }
    CHECK(queen::http::parse_method("PROPFIND") == Method::other);
}

TEST_CASE("http: error bodies are JSON with escaped messages", "[http][request]") {
    Response response = Response::error(400, "bad \"name\"\n\x01");
    CHECK(response.status == 400);
    CHECK(response.content_type == "application/json");
    CHECK(response.body == "{\"error\":\"bad \\\"name\\\"\\n\\u0001\"}");
    CHECK(Response::empty().status == 204);
    CHECK(Response::empty().content_type.empty());
    CHECK(queen::http::reason_phrase(431) == "Request Header Fields Too Large");
}
