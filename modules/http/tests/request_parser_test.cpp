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
            if (parser.state() == State::failed) {  // an upgrade: nothing after it is HTTP
                outcome.is_failed = true;
                outcome.status = parser.failure().status;
                outcome.message = parser.failure().message;
                break;
            }
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

namespace {

// Everything a handler can see of an outcome, for comparing the two parsing paths.
std::string describe(const Outcome& outcome) {
    std::string out;
    for (const ParsedRequest& parsed : outcome.requests) {
        const queen::http::Request& r = parsed.request;
        out += "[" + r.method_name + " " + std::to_string(static_cast<int>(r.method)) + " " +
               r.target + " path=" + r.path + " query=" + r.raw_query + " v" +
               std::to_string(r.version_major) + "." + std::to_string(r.version_minor) +
               (r.is_keep_alive ? " keep" : " close") + (parsed.is_upgrade ? " upgrade" : "") +
               " target_error=" + parsed.target_error.value_or("-") + " segments=";
        for (const auto& segment : r.segments) {
            out += segment + "|";
        }
        out += " params=";
        for (const auto& [key, value] : r.query) {
            out += key + "=" + value + "|";
        }
        out += " headers=";
        for (const auto& header : r.headers) {
            out += header.name + ":" + header.value + "|";
        }
        out += " body=" + r.body + "]";
    }
    if (outcome.is_failed) {
        out += " failed " + std::to_string(outcome.status) + " " + outcome.message;
    }
    return out;
}

// A request built from pieces that are mostly plain and sometimes not (what the fast path must
// leave to http_parser), so both paths meet every branch.
std::string random_request(queen::Rng& rng) {
    static const std::vector<std::string> methods = {
        "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "get", "PROPFIND", "CONNECT"};
    static const std::vector<std::string> targets = {
        "/api/v1/pop/queue/q/partition/p?batch=1&wait=false",
        "/api/v1/push",
        "/a%20b/c?x=1+2&y",
        "/a%zz",
        "/x?a=%",
        "*",
        "http://host:1/x?y=1",
        "/x#frag",
        "/x?a=1#f",
        "/caf\xc3\xa9",
        "/a b",
        "//a//b/?",
        "/?",
        "/a?b?c",
        "/\"<>\\^`{|}~!$&'()*+,;=:@",
        "",
        "x"};
    static const std::vector<std::string> versions = {"HTTP/1.1", "HTTP/1.1", "HTTP/1.0",
                                                      "HTTP/2.0", "http/1.1", "HTTP/1.1 "};
    static const std::vector<std::string> headers = {"Host: 127.0.0.1:6632",
                                                     "Content-Type: application/json",
                                                     "Connection: close",
                                                     "Connection: keep-alive",
                                                     "Connection: Keep-Alive",
                                                     "Connection: keep-alive, Upgrade",
                                                     "Upgrade: websocket",
                                                     "Transfer-Encoding: chunked",
                                                     "Expect: 100-continue",
                                                     "X-Spaced:    value",
                                                     "X-Trailing: value  ",
                                                     "X-Tab:\tvalue",
                                                     "X-Inner: a \t b",
                                                     "Bad Name: x",
                                                     ": empty name",
                                                     "X-Utf8: caf\xc3\xa9",
                                                     "X-Ctl: a\x01z",
                                                     "X-Empty:",
                                                     "x-lower: v",
                                                     "Content-Length: abc",
                                                     "Content-Length: 2",
                                                     "Content-Length:  0",
                                                     "Proxy-Connection: close",
                                                     "Transfer-Encodingx: 1",
                                                     "Content-Lengthy: 1",
                                                     "Connection-X: close"};
    std::string out = methods[rng.below(methods.size())];
    out += rng.below(20) == 0 ? "  " : " ";
    out += targets[rng.below(targets.size())];
    out += " " + versions[rng.below(versions.size())];
    const char* eol = rng.below(25) == 0 ? "\n" : "\r\n";
    out += eol;
    const std::string body(rng.below(4) == 0 ? 0 : rng.below(24), 'b');
    const std::size_t count = rng.below(6);
    bool has_length = false;
    for (std::size_t i = 0; i < count; ++i) {
        out += headers[rng.below(headers.size())];
        out += rng.below(30) == 0 ? "\n" : "\r\n";
    }
    if (rng.below(4) != 0) {
        const std::uint64_t skew = rng.below(6) == 0 ? rng.below(5) : 0;
        out += "Content-Length: " + std::to_string(body.size() + skew) + "\r\n";
        has_length = true;
    }
    out += "\r\n";
    if (has_length || rng.below(3) == 0) {
        out += body;
    }
    return out;
}

}  // namespace

TEST_CASE("http: the fast path reads every request exactly as http_parser does (seeded)",
          "[http][parser]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng(seed);
    ParserLimits fast;
    fast.header_size_bytes_max = 300;
    fast.headers_count_max = 5;
    fast.body_size_bytes_max = 20;
    ParserLimits slow = fast;
    slow.is_fast_path_enabled = false;
    int fast_taken = 0;
    for (int round = 0; round < 20000; ++round) {
        std::string bytes;
        const std::size_t requests = 1 + rng.below(3);
        for (std::size_t i = 0; i < requests; ++i) {
            bytes += random_request(rng);
        }
        const std::size_t piece = rng.below(3) == 0 ? 1 + rng.below(64) : bytes.size();
        const Outcome with_fast = parse_all(bytes, piece, fast);
        const Outcome without = parse_all(bytes, piece, slow);
        INFO("round " << round << " piece " << piece << " bytes: " << bytes);
        REQUIRE(describe(with_fast) == describe(without));
        fast_taken += static_cast<int>(with_fast.requests.size());
    }
    CHECK(fast_taken > 1000);  // the generator reaches the plain shape often
}

TEST_CASE("http: the fast path leaves split, closing and unusual requests to http_parser",
          "[http][parser]") {
    // The usual request, whole: parsed, body and all, the connection stays open.
    const std::string plain =
        "POST /api/v1/push?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok";
    Outcome outcome = parse_all(plain + plain, 4096);
    REQUIRE(outcome.requests.size() == 2);
    CHECK(outcome.requests[1].request.body == "ok");
    CHECK(outcome.requests[1].request.raw_query == "x=1");
    CHECK(outcome.requests[1].request.is_keep_alive);
    // A closing request (http_parser's), then another: whatever http_parser makes of it.
    const std::string closing = "GET /a HTTP/1.1\r\nConnection: close\r\n\r\n";
    outcome = parse_all(closing + plain, 4096);
    ParserLimits slow;
    slow.is_fast_path_enabled = false;
    CHECK(describe(outcome) == describe(parse_all(closing + plain, 4096, slow)));
    REQUIRE_FALSE(outcome.requests.empty());
    CHECK_FALSE(outcome.requests[0].request.is_keep_alive);
    // Limits still answer 431 and 413.
    ParserLimits limits;
    limits.header_size_bytes_max = 40;
    CHECK(parse_all("GET /" + std::string(64, 'a') + " HTTP/1.1\r\n\r\n", 4096, limits).status ==
          431);
    limits = ParserLimits{};
    limits.body_size_bytes_max = 1;
    CHECK(parse_all(plain, 4096, limits).status == 413);
}
