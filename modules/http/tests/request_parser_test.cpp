// modules/http/tests/request_parser_test.cpp — RequestParser without sockets: framing, limits,
// pipelining, byte-at-a-time feeding.
#include "queen/http/detail/request_parser.hpp"

#include <vector>

#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

using queen::http::detail::ParsedRequest;
using queen::http::detail::ParserLimits;
using queen::http::detail::RequestParser;
using State = RequestParser::State;

namespace {

struct Outcome {
    std::vector<ParsedRequest> requests;
    bool is_failed = false;
    int status = 0;
    std::string message;
};

// Feeds `bytes` in pieces of at most `piece` bytes, collecting every request.
Outcome parse_all(std::string_view bytes, std::size_t piece, ParserLimits limits = {}) {
    RequestParser parser(limits);
    Outcome outcome;
    while (!bytes.empty()) {
        const std::string_view chunk = bytes.substr(0, piece);
        const std::size_t used = parser.feed(chunk);
        REQUIRE(used <= chunk.size());
        bytes.remove_prefix(used);
        if (parser.state() == State::request_ready) {
            outcome.requests.push_back(parser.take_request());
        } else if (parser.state() == State::failed) {
            outcome.is_failed = true;
            outcome.status = parser.failure().status;
            outcome.message = parser.failure().message;
            break;
        } else {
            REQUIRE(used == chunk.size());
        }
    }
    return outcome;
}

}  // namespace

TEST_CASE("http: parser reads pipelined requests whatever the chunking", "[http][parser]") {
    const std::string wire =
        "GET /api/v1/pop/queue/q%201?wait=true&batch=10 HTTP/1.1\r\nHost: x\r\n"
        "X-Custom: one\r\nx-custom: two\r\n\r\n"
        "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n{\"items\":1}"
        "POST /api/v1/ack HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        "4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\nTrailer-Field: t\r\n\r\n"
        "HEAD /health HTTP/1.0\r\n\r\n";
    for (std::size_t piece :
         {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{64}, wire.size()}) {
        INFO("piece=" << piece);
        Outcome outcome = parse_all(wire, piece);
        REQUIRE_FALSE(outcome.is_failed);
        REQUIRE(outcome.requests.size() == 4);
        const auto& get = outcome.requests[0].request;
        CHECK(get.method == queen::http::Method::get);
        CHECK(get.target == "/api/v1/pop/queue/q%201?wait=true&batch=10");
        CHECK(get.path == "/api/v1/pop/queue/q%201");
        CHECK(get.segments.back() == "q 1");
        CHECK(get.query_value("batch") == "10");
        CHECK(get.header("x-custom") == "one");
        CHECK(get.headers.size() == 3);
        CHECK(get.is_keep_alive);
        const auto& push = outcome.requests[1].request;
        CHECK(push.method == queen::http::Method::post);
        CHECK(push.body == "{\"items\":1}");
        const auto& ack = outcome.requests[2].request;
        CHECK(ack.body == "{\"a\":1}");
        CHECK(ack.header("trailer-field") == "t");
        const auto& head = outcome.requests[3].request;
        CHECK(head.method == queen::http::Method::head);
        CHECK(head.version_minor == 0);
        CHECK_FALSE(head.is_keep_alive);
    }
}

TEST_CASE("http: parser flags bad percent-encoding without failing the stream", "[http][parser]") {
    Outcome outcome = parse_all(
        "GET /a%zz HTTP/1.1\r\n\r\nGET /b?x=%4 HTTP/1.1\r\n\r\nGET /ok HTTP/1.1\r\n\r\n", 1000);
    REQUIRE_FALSE(outcome.is_failed);
    REQUIRE(outcome.requests.size() == 3);
    CHECK(outcome.requests[0].target_error.has_value());
    CHECK(outcome.requests[1].target_error.has_value());
    CHECK_FALSE(outcome.requests[2].target_error.has_value());
}

TEST_CASE("http: parser enforces header and body limits with 431 and 413", "[http][parser]") {
    ParserLimits limits;
    limits.header_size_bytes_max = 256;
    limits.headers_count_max = 4;
    limits.body_size_bytes_max = 10;

    Outcome big_header =
        parse_all("GET / HTTP/1.1\r\nX: " + std::string(300, 'a') + "\r\n\r\n", 1000, limits);
    CHECK(big_header.is_failed);
    CHECK(big_header.status == 431);

    Outcome many =
        parse_all("GET / HTTP/1.1\r\na: 1\r\nb: 1\r\nc: 1\r\nd: 1\r\ne: 1\r\n\r\n", 3, limits);
    CHECK(many.is_failed);
    CHECK(many.status == 431);

    Outcome announced = parse_all("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 1000, limits);
    CHECK(announced.is_failed);
    CHECK(announced.status == 413);

    Outcome chunked = parse_all(
        "POST / HTTP/1.1\r\nTransfer-Encoding: "
        "chunked\r\n\r\n6\r\nabcdef\r\n6\r\nghijkl\r\n0\r\n\r\n",
        5, limits);
    CHECK(chunked.is_failed);
    CHECK(chunked.status == 413);

    Outcome fits = parse_all("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789", 4, limits);
    REQUIRE_FALSE(fits.is_failed);
    REQUIRE(fits.requests.size() == 1);
    CHECK(fits.requests[0].request.body == "0123456789");
}

TEST_CASE("http: parser rejects malformed input with 400 and wrong versions with 505",
          "[http][parser]") {
    for (const char* bad :
         {"HELLO\r\n\r\n", "GET / HTTP/1.1\r\nBad Header\r\n\r\n", "GET / FTP/1.1\r\n\r\n",
          "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
          "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
          "GET /\x01 HTTP/1.1\r\n\r\n"}) {
        INFO(bad);
        Outcome outcome = parse_all(bad, 1000);
        CHECK(outcome.is_failed);
        CHECK(outcome.status == 400);
        CHECK_FALSE(outcome.message.empty());
    }
    Outcome v2 = parse_all("GET / HTTP/2.0\r\n\r\n", 1000);
    CHECK(v2.is_failed);
    CHECK(v2.status == 505);
}

TEST_CASE("http: parser reports Expect: 100-continue while waiting for the body",
          "[http][parser]") {
    RequestParser parser(ParserLimits{});
    const std::string head = "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
    CHECK(parser.feed(head) == head.size());
    CHECK(parser.state() == State::body);
    CHECK(parser.is_expecting_continue());
    CHECK(parser.feed("ok") == 2);
    REQUIRE(parser.state() == State::request_ready);
    CHECK_FALSE(parser.is_expecting_continue());
    CHECK(parser.take_request().request.body == "ok");
    CHECK(parser.state() == State::idle);
}

TEST_CASE("http: parser survives random bytes (seeded)", "[http][parser]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng(seed);
    const std::string alphabet =
        "GETPOSThttp/1.0 \r\n:%?&=chunkedContent-Length0123456789abc\x00\xff";
    for (int round = 0; round < 2000; ++round) {
        std::string bytes = round % 2 == 0 ? "POST /x HTTP/1.1\r\n" : "";
        const std::size_t size = rng.below(200);
        for (std::size_t i = 0; i < size; ++i) {
            bytes.push_back(alphabet[rng.below(alphabet.size())]);
        }
        Outcome outcome = parse_all(bytes, 1 + rng.below(16));
        if (outcome.is_failed) {
            CHECK(outcome.status >= 400);
            CHECK(outcome.status < 600);
        }
    }
}
