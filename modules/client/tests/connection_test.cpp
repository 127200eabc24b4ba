// client/tests/connection_test.cpp — keep-alive, reconnects, bodies, timeouts and the pool.
#include "queen/client/connection.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <span>
#include <thread>
#include <utility>

#include "queen/client/errc.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "test_server.hpp"

namespace {

using queen::client::Connection;
using queen::client::ConnectionOptions;
using queen::client::ConnectionPool;
using queen::client::Endpoint;
using queen::client::Errc;
using queen::client::HttpRequest;
using queen::client::testing::answer_once_then_drop_first_connection;
using queen::client::testing::close_reply;
using queen::client::testing::get;
using queen::client::testing::json_reply;
using queen::client::testing::local;
using queen::client::testing::post;
using queen::client::testing::RecordedRequest;
using queen::client::testing::Reply;
using queen::client::testing::TestServer;

}  // namespace

TEST_CASE("client: parse_url accepts host, port and scheme forms", "[client][connection]") {
    auto a = queen::client::parse_url("http://localhost:7000/");
    REQUIRE(a);
    CHECK(a->host == "localhost");
    CHECK(a->port == 7000);
    auto b = queen::client::parse_url("10.0.0.1");
    REQUIRE(b);
    CHECK(b->port == 6632);
    auto c = queen::client::parse_url("http://[::1]:81");
    REQUIRE(c);
    CHECK(c->host == "::1");
    CHECK(c->port == 81);
    CHECK(queen::client::parse_url("ftp://x").error().is(Errc::invalid_argument));
    CHECK(queen::client::parse_url("http://x:0").error().is(Errc::invalid_argument));
    CHECK(queen::client::parse_url("http://x:99999").error().is(Errc::invalid_argument));
    CHECK(queen::client::parse_url("http://x/api").error().is(Errc::invalid_argument));
    CHECK(queen::client::parse_url(":80").error().is(Errc::invalid_argument));
}

TEST_CASE("client: requests carry method, target, headers and a Content-Length body",
          "[client][connection]") {
    TestServer server;
    server.reply_always(json_reply(201, R"([{"status":"queued"}])"));
    ConnectionOptions options;
    options.headers.push_back({"Authorization", "Bearer t0k"});
    Connection connection{local(server.port()), options, queen::SystemClock::instance()};
    auto response = connection.request(post("/api/v1/push", R"({"items":[]})"));
    REQUIRE(response);
    CHECK(response->status == 201);
    CHECK(response->body == R"([{"status":"queued"}])");
    CHECK(response->header("content-type") == "application/json");
    const RecordedRequest recorded = server.last_request();
    CHECK(recorded.method == "POST");
    CHECK(recorded.target == "/api/v1/push");
    CHECK(recorded.body == R"({"items":[]})");
    CHECK(recorded.header("Content-Length") == "12");
    CHECK(recorded.header("Content-Type") == "application/json");
    CHECK(recorded.header("Authorization") == "Bearer t0k");
    CHECK(recorded.header("Host") == "127.0.0.1:" + std::to_string(server.port()));

    auto no_body = connection.request(get("/health"));
    REQUIRE(no_body);
    CHECK(server.last_request().header("Content-Length").empty());
}

TEST_CASE("client: request_into reuses one response and replaces all of it",
          "[client][connection]") {
    TestServer server;
    int call = 0;
    server.set_handler([&call](const RecordedRequest&) {
        ++call;
        if (call == 1) {
            return json_reply(200, std::string(5000, 'x'), "X-One: first value of some length\r\n");
        }
        if (call == 2) {
            return json_reply(201, "[]");
        }
        return queen::client::testing::no_content_reply();
    });
    Connection connection{local(server.port()), {}, queen::SystemClock::instance()};
    queen::client::HttpResponse response;
    REQUIRE(connection.request_into(get("/a"), response));
    CHECK(response.status == 200);
    CHECK(response.body.size() == 5000);
    CHECK(response.header("x-one") == "first value of some length");
    REQUIRE(response.headers.size() == 3);
    REQUIRE(connection.request_into(get("/b"), response));
    CHECK(response.status == 201);
    CHECK(response.body == "[]");
    CHECK_FALSE(response.header("X-One").has_value());
    CHECK(response.header("Content-Length") == "2");
    CHECK(response.headers.size() == 2);
    REQUIRE(connection.request_into(get("/c"), response));
    CHECK(response.status == 204);
    CHECK(response.body.empty());
    CHECK(response.headers.empty());
}

TEST_CASE("client: keep-alive reuses one TCP connection", "[client][connection]") {
    TestServer server;
    Connection connection{local(server.port()), {}, queen::SystemClock::instance()};
    for (int i = 0; i < 5; ++i) {
        REQUIRE(connection.request(get("/health")));
    }
    CHECK(connection.connects_total() == 1);
    CHECK(server.connections_accepted() == 1);
    CHECK(server.requests().size() == 5);
}

TEST_CASE("client: Connection: close from the server makes the next request reconnect",
          "[client][connection]") {
    TestServer server;
    server.set_handler([](const RecordedRequest& request) {
        Reply reply =
            json_reply(200, "{}", request.connection_index == 0 ? "Connection: close\r\n" : "");
        reply.is_close_after = request.connection_index == 0;
        return reply;
    });
    Connection connection{local(server.port()), {}, queen::SystemClock::instance()};
    REQUIRE(connection.request(get("/a")));
    CHECK_FALSE(connection.is_open());
    REQUIRE(connection.request(get("/b")));
    CHECK(connection.connects_total() == 2);
    CHECK(server.connections_accepted() == 2);
}

TEST_CASE("client: a keep-alive connection closed by the server is retried once when idempotent",
          "[client][connection]") {
    TestServer server;
    // The first connection answers one request, then drops the second without answering: what a
    // server closing an idle connection looks like when the close races our write.
    server.set_handler(answer_once_then_drop_first_connection());
    Connection connection{local(server.port()), {}, queen::SystemClock::instance()};
    REQUIRE(connection.request(get("/first")));

    SECTION("idempotent: resent on a new connection") {
        auto second = connection.request(get("/second"));
        REQUIRE(second);
        CHECK(second->body == R"({"n":1})");
        CHECK(connection.connects_total() == 2);
        const auto recorded = server.requests();
        REQUIRE(recorded.size() == 3);
        CHECK(recorded[1].target == "/second");
        CHECK(recorded[2].target == "/second");
        CHECK(recorded[2].connection_index == 1);
    }
    SECTION("not idempotent: the error is returned, nothing is resent") {
        auto second = connection.request(post("/api/v1/transaction", "{}", false));
        REQUIRE_FALSE(second);
        CHECK(second.error().is(Errc::connection_closed));
        CHECK(server.requests().size() == 2);
    }
}

TEST_CASE("client: an idle connection closed by the server is detected before reuse",
          "[client][connection]") {
    TestServer server;
    server.set_handler([](const RecordedRequest& request) {
        Reply reply = json_reply(200, "{}");
        reply.is_close_after = request.connection_index == 0;  // no Connection: close header
        return reply;
    });
    Connection connection{local(server.port()), {}, queen::SystemClock::instance()};
    REQUIRE(connection.request(get("/a")));
    // Wait until the server has really closed: a recorded request means the reply was written
    // and the close follows right after; poll the socket state through a non-idempotent request,
    // which would fail if the dead connection were reused.
    server.wait_for_requests(1);
    bool is_closed_seen = false;
    for (int i = 0; i < 1000 && !is_closed_seen; ++i) {
        auto response = connection.request(post("/b", "{}", false));
        if (response) {
            is_closed_seen = true;
        } else {
            // The FIN had not arrived yet when we wrote: a legitimate race, try again.
            REQUIRE(response.error().is(Errc::connection_closed));
        }
    }
    CHECK(is_closed_seen);
    CHECK(connection.connects_total() >= 2);
}

TEST_CASE("client: idle_check_after_ms skips the liveness check only right after an answer",
          "[client][connection]") {
    TestServer server;
    server.set_handler([](const RecordedRequest& request) {
        Reply reply = json_reply(200, "{}");
        reply.is_close_after = request.connection_index < 2;  // no Connection: close header
        return reply;
    });
    queen::ManualClock clock;
    ConnectionOptions options;
    options.idle_check_after_ms = 1'000;
    Connection connection{local(server.port()), options, clock};
    REQUIRE(connection.request(get("/a")));
    server.wait_for_requests(1);
    // Within the window the dead connection is used without a check: a request that must not be
    // resent fails, as after a server crash.
    auto unchecked = connection.request(post("/b", "{}", false));
    REQUIRE_FALSE(unchecked);
    CHECK(unchecked.error().is(Errc::connection_closed));
    CHECK(server.requests().size() == 1);
    // Past the window the check is back: the close is seen before the write and the request
    // goes out on a new connection.
    REQUIRE(connection.request(get("/c")));  // connection 1, closed by the server after this
    server.wait_for_requests(2);
    clock.advance_ms(2'000);
    bool is_closed_seen = false;
    for (int i = 0; i < 1000 && !is_closed_seen; ++i) {
        auto response = connection.request(post("/d", "{}", false));
        if (response) {
            is_closed_seen = true;
        } else {
            // The FIN had not arrived yet when we checked: a legitimate race, try again.
            REQUIRE(response.error().is(Errc::connection_closed));
            clock.advance_ms(2'000);
        }
    }
    CHECK(is_closed_seen);
}

TEST_CASE("client: chunked and read-until-close bodies are decoded", "[client][connection]") {
    TestServer server;
    Connection connection{local(server.port()), {}, queen::SystemClock::instance()};
    SECTION("chunked") {
        server.reply_always(
            Reply{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "5\r\n{\"a\":\r\n3\r\n12}\r\n0\r\n\r\n",
                  false, false});
        for (int i = 0; i < 2; ++i) {
            auto response = connection.request(get("/x"));
            REQUIRE(response);
            CHECK(response->body == R"({"a":12})");
        }
        CHECK(connection.connects_total() == 1);
    }
    SECTION("until close") {
        server.reply_always(
            Reply{"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"b\":true}", true, false});
        auto response = connection.request(get("/x"));
        REQUIRE(response);
        CHECK(response->body == R"({"b":true})");
        CHECK_FALSE(connection.is_open());
    }
    SECTION("204 without a body keeps the connection") {
        server.reply_always(queen::client::testing::no_content_reply());
        auto response = connection.request(get("/api/v1/pop/queue/q"));
        REQUIRE(response);
        CHECK(response->status == 204);
        CHECK(response->body.empty());
        REQUIRE(connection.request(get("/api/v1/pop/queue/q")));
        CHECK(connection.connects_total() == 1);
    }
}

TEST_CASE("client: malformed, truncated and oversized responses are bad_response or closed",
          "[client][connection]") {
    TestServer server;
    ConnectionOptions options;
    options.response_size_bytes_max = 16;
    Connection connection{local(server.port()), options, queen::SystemClock::instance()};
    SECTION("garbage") {
        server.reply_always(Reply{"this is not http\r\n\r\n", false, false});
        auto response = connection.request(get("/x"));
        REQUIRE_FALSE(response);
        CHECK(response.error().is(Errc::bad_response));
        CHECK_FALSE(connection.is_open());
    }
    SECTION("truncated body") {
        server.reply_always(
            Reply{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{\"a\"", true, false});
        auto response = connection.request(get("/x"));
        REQUIRE_FALSE(response);
        CHECK(response.error().is(Errc::connection_closed));
    }
    SECTION("too large") {
        server.reply_always(json_reply(200, std::string(17, ' ')));
        auto response = connection.request(get("/x"));
        REQUIRE_FALSE(response);
        CHECK(response.error().is(Errc::bad_response));
    }
    SECTION("bytes after the response") {
        server.reply_always(
            Reply{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}junk", false, false});
        auto response = connection.request(get("/x"));
        REQUIRE_FALSE(response);
        CHECK(response.error().is(Errc::bad_response));
    }
}

TEST_CASE("client: a server that never answers hits the request deadline", "[client][connection]") {
    TestServer server;
    server.reply_always(Reply{"", false, true});
    ConnectionOptions options;
    options.request_timeout_ms = 50;
    Connection connection{local(server.port()), options, queen::SystemClock::instance()};
    auto response = connection.request(get("/api/v1/pop/queue/q?wait=true"));
    REQUIRE_FALSE(response);
    CHECK(response.error().is(Errc::timeout));
    CHECK_FALSE(connection.is_open());
}

TEST_CASE("client: connecting to a closed port is connect_failed", "[client][connection]") {
    // Bind a port, then close it: nobody listens there.
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(fd);
    Connection connection{local(ntohs(address.sin_port)), {}, queen::SystemClock::instance()};
    auto response = connection.request(get("/health"));
    REQUIRE_FALSE(response);
    CHECK(response.error().is(Errc::connect_failed));
}

TEST_CASE("client: abort() from another thread ends a request in flight", "[client][connection]") {
    TestServer server;
    server.reply_always(Reply{"", false, true});
    Connection connection{local(server.port()), {}, queen::SystemClock::instance()};
    std::thread aborter([&] {
        server.wait_for_requests(1);
        connection.abort();
    });
    auto response = connection.request(get("/api/v1/pop/queue/q?wait=true&timeout=30000"));
    aborter.join();
    REQUIRE_FALSE(response);
    CHECK(response.error().is(Errc::cancelled));
    auto later = connection.request(get("/health"));
    REQUIRE_FALSE(later);
    CHECK(later.error().is(Errc::cancelled));
}

TEST_CASE("client: the pool shares connections between threads within its bound",
          "[client][connection][pool]") {
    TestServer server;
    ConnectionPool pool{local(server.port()), {}, queen::SystemClock::instance(), 4};
    constexpr int threads_count = 8;
    constexpr int requests_per_thread = 50;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < threads_count; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < requests_per_thread; ++i) {
                auto lease = pool.acquire(10'000);
                if (!lease || !(*lease)->request(get("/health"))) {
                    ++failures;
                }
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    CHECK(failures == 0);
    CHECK(pool.size() <= 4);
    CHECK(server.requests().size() == threads_count * requests_per_thread);
    CHECK(pool.connects_total() == pool.size());

    SECTION("an exhausted pool answers busy after the wait") {
        ConnectionPool small{local(server.port()), {}, queen::SystemClock::instance(), 1};
        auto held = small.acquire(0);
        REQUIRE(held);
        auto second = small.acquire(1);
        REQUIRE_FALSE(second);
        CHECK(second.error().is(Errc::busy));
    }
}

TEST_CASE("client: large bodies cross partial writes and many reads intact",
          "[client][connection]") {
    TestServer server;
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    // Bigger than the socket buffers, so sendmsg() writes part of it and recv() runs many times.
    std::string request_body(6 * 1024 * 1024 + rng.below(4096), ' ');
    for (auto& c : request_body) {
        c = static_cast<char>('a' + rng.below(26));
    }
    std::string response_body(3 * 1024 * 1024 + rng.below(4096), ' ');
    for (auto& c : response_body) {
        c = static_cast<char>('A' + rng.below(26));
    }
    server.reply_always(json_reply(200, response_body));
    ConnectionOptions options;
    options.response_size_bytes_max = 8 << 20;
    Connection connection{local(server.port()), options, queen::SystemClock::instance()};
    for (int round = 0; round < 2; ++round) {
        auto response = connection.request(post("/api/v1/push", request_body));
        REQUIRE(response);
        CHECK(response->body == response_body);
        CHECK(server.last_request().body == request_body);
    }
    CHECK(connection.connects_total() == 1);
}

TEST_CASE("connection: a pipelined group goes out in one write and its answers come back in order",
          "[client][connection]") {
    TestServer server;
    std::string held;  // an answer held back to leave in one write with the next
    server.set_handler([&](const RecordedRequest& request) {
        Reply reply = json_reply(200, "\"" + request.target + request.body + "\"");
        if (request.target == "/held") {
            held = reply.raw;
            return Reply{};
        }
        reply.raw = std::exchange(held, "") + reply.raw;
        return reply;
    });
    Connection connection{local(server.port()), {}, queen::SystemClock::instance()};
    std::size_t answered = 0;
    SECTION("answers in separate writes") {
        const std::array<HttpRequest, 3> group{post("/a", "1"), get("/b"), post("/c", "3")};
        std::array<queen::client::HttpResponse, 3> responses;
        REQUIRE(connection.request_pipelined(group, responses, answered));
        CHECK(answered == 3);
        CHECK(responses[0].body == "\"/a1\"");
        CHECK(responses[1].body == "\"/b\"");
        CHECK(responses[2].body == "\"/c3\"");
    }
    SECTION("answers in one write") {
        const std::array<HttpRequest, 2> group{post("/held", "x"), get("/b")};
        std::array<queen::client::HttpResponse, 2> responses;
        REQUIRE(connection.request_pipelined(group, responses, answered));
        CHECK(answered == 2);
        CHECK(responses[0].body == "\"/heldx\"");
        CHECK(responses[1].body == "\"/b\"");
    }
    // The connection goes on with single requests.
    auto after = connection.request(get("/after"));
    REQUIRE(after.has_value());
    CHECK(after->body == "\"/after\"");
    CHECK(connection.connects_total() == 1);
    std::array<queen::client::HttpResponse, 1> one;
    CHECK(connection.request_pipelined({}, one, answered).error().is(Errc::invalid_argument));
    const std::array<HttpRequest, 2> two{get("/x"), get("/y")};
    CHECK(connection.request_pipelined(two, one, answered).error().is(Errc::invalid_argument));
}

TEST_CASE("connection: a pipelined group cut short fails, answers before it kept",
          "[client][connection]") {
    TestServer server;
    SECTION("the connection drops after the first answer") {
        server.set_handler([](const RecordedRequest& request) {
            return request.target == "/a" ? json_reply(200, "\"a\"") : close_reply();
        });
    }
    SECTION("the first answer says Connection: close") {
        server.set_handler([](const RecordedRequest&) {
            return json_reply(200, "\"a\"", "Connection: close\r\n");
        });
    }
    Connection connection{local(server.port()), {}, queen::SystemClock::instance()};
    const std::array<HttpRequest, 2> group{get("/a"), get("/b")};
    std::array<queen::client::HttpResponse, 2> responses;
    std::size_t answered = 0;
    const queen::Status status = connection.request_pipelined(group, responses, answered);
    REQUIRE_FALSE(status);
    CHECK(status.error().is(Errc::connection_closed));
    CHECK_THAT(status.error().message(), Catch::Matchers::Contains("GET /a (+1 pipelined)"));
    CHECK(answered == 1);
    CHECK(responses[0].body == "\"a\"");
    CHECK(connection.connects_total() == 1);  // an answer came: not sent again
}
