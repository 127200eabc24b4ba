// modules/http/tests/uri_test.cpp — percent-decoding of paths and queries.
#include "queen/http/uri.hpp"

#include "queen/testing/catch.hpp"

using queen::http::decode_path;
using queen::http::decode_query;
using queen::http::percent_decode;
using queen::http::percent_encode;

TEST_CASE("http: percent_decode decodes escapes of either case and optionally '+'", "[http][uri]") {
    CHECK(percent_decode("a%20b%2fc%2F", false).value() == "a b/c/");
    CHECK(percent_decode("a+b", false).value() == "a+b");
    CHECK(percent_decode("a+b", true).value() == "a b");
    CHECK(percent_decode("%C3%A9", false).value() == "\xC3\xA9");
    CHECK(percent_decode("", false).value().empty());
}

TEST_CASE("http: percent_decode rejects truncated, non-hex and NUL escapes", "[http][uri]") {
    for (const char* bad : {"%", "%4", "a%", "%zz", "%4g", "%%", "x%00y"}) {
        INFO(bad);
        auto decoded = percent_decode(bad, true);
        REQUIRE_FALSE(decoded.has_value());
        CHECK(decoded.error().is(queen::Errc::invalid_argument));
    }
}

TEST_CASE("http: percent_encode round-trips through percent_decode", "[http][uri]") {
    const std::string text = "queue name/with%odd+chars\xC3\xA9~._-";
    const std::string encoded = percent_encode(text);
    CHECK(encoded.find('/') == std::string::npos);
    CHECK(encoded.find(' ') == std::string::npos);
    CHECK(percent_decode(encoded, false).value() == text);
}

TEST_CASE("http: decode_path splits, decodes and drops empty segments", "[http][uri]") {
    CHECK(decode_path("/").value().empty());
    CHECK(decode_path("/api/v1/lease/abc/extend").value() ==
          std::vector<std::string>{"api", "v1", "lease", "abc", "extend"});
    CHECK(decode_path("//a//b%2Fc/").value() == std::vector<std::string>{"a", "b/c"});
    CHECK(decode_path("/a+b").value() == std::vector<std::string>{"a+b"});
    CHECK_FALSE(decode_path("/a/%G0").has_value());
}

TEST_CASE("http: decode_query keeps order, empty values and decodes '+'", "[http][uri]") {
    auto query = decode_query("wait=true&consumerGroup=&x=a+b%26c&flag&&k=1=2").value();
    REQUIRE(query.size() == 5);
    CHECK(query[0] == std::pair<std::string, std::string>{"wait", "true"});
    CHECK(query[1] == std::pair<std::string, std::string>{"consumerGroup", ""});
    CHECK(query[2] == std::pair<std::string, std::string>{"x", "a b&c"});
    CHECK(query[3] == std::pair<std::string, std::string>{"flag", ""});
    CHECK(query[4] == std::pair<std::string, std::string>{"k", "1=2"});
    CHECK(decode_query("").value().empty());
    CHECK_FALSE(decode_query("a=%zz").has_value());
    CHECK_FALSE(decode_query("%=1").has_value());
}
