// client/tests/tls_multiplexer_test.cpp — HttpMultiplexer over TLS: round trips on many slots,
// keep-alive, pipelining, stale and idle-closed connections, session tickets at idle slots, and
// failed handshakes and setups.
#include <array>
#include <span>
#include <string>
#include <vector>

#include "queen/client/errc.hpp"
#include "queen/client/multiplexer.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "test_server.hpp"
#include "tls_fixture.hpp"

namespace {

using Catch::Matchers::Contains;
using queen::client::ConnectionOptions;
using queen::client::Errc;
using queen::client::HttpMultiplexer;
using queen::client::HttpRequest;
using queen::client::testing::answer_once_then_drop_first_connection;
using queen::client::testing::get;
using queen::client::testing::json_reply;
using queen::client::testing::post;
using queen::client::testing::RecordedRequest;
using queen::client::testing::Reply;
using queen::client::testing::TestServer;
using queen::client::testing::tls_local;
using queen::client::testing::TlsFixture;

constexpr std::int64_t wait_slice_ns = 100'000'000;

const queen::Clock& clock_() {
    return queen::SystemClock::instance();
}

// Waits until every started request finished (each wait() is bounded by the requests'
// deadlines); returns the completions in arrival order.
std::vector<HttpMultiplexer::Completion> drain(HttpMultiplexer& mux) {
    std::vector<HttpMultiplexer::Completion> completed;
    while (mux.in_flight() > 0) {
        REQUIRE(mux.wait(wait_slice_ns, completed));
    }
    REQUIRE(mux.wait(0, completed));
    return completed;
}

// The one completion of a request on slot 0: its status.
queen::Status only_status(HttpMultiplexer& mux) {
    const auto completed = drain(mux);
    REQUIRE(completed.size() == 1);
    CHECK(completed[0].slot == 0);
    return completed[0].status;
}

Reply echo(const RecordedRequest& request) {
    return json_reply(200, request.body.empty()
                               ? "\"" + request.method + " " + request.target + "\""
                               : request.body);
}

}  // namespace

TEST_CASE("multiplexer tls: GETs, small and 1 MiB POSTs on many slots over kept-alive TLS",
          "[client][multiplexer][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    server.set_handler(echo);
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    std::string large(1 << 20, ' ');
    for (auto& c : large) {
        c = static_cast<char>('a' + rng.below(26));
    }
    large.front() = '"';
    large.back() = '"';
    constexpr std::size_t slots = 4;
    HttpMultiplexer mux{tls_local(server.port()), tls.client(), clock_(), slots};
    std::string reused_body;  // start_with_body's buffer, handed back and forth
    for (int round = 0; round < 3; ++round) {
        const std::string small = "[" + std::to_string(round) + "]";
        REQUIRE(mux.start(0, get("/g" + std::to_string(round))));
        REQUIRE(mux.start(1, post("/small", small)));
        REQUIRE(mux.start(2, post("/large", large)));
        reused_body = small;
        REQUIRE(mux.start_with_body(3, post("/taken", ""), reused_body));
        const auto completed = drain(mux);
        REQUIRE(completed.size() == slots);
        for (const auto& completion : completed) {
            REQUIRE(completion.status);
            CHECK(mux.response(completion.slot).status == 200);
        }
        CHECK(mux.response(0).body == "\"GET /g" + std::to_string(round) + "\"");
        CHECK(mux.response(1).body == small);
        CHECK(mux.response(2).body == large);
        CHECK(mux.response(3).body == small);
    }
    CHECK(mux.connects_total() == slots);
    CHECK(server.connections_accepted() == static_cast<int>(slots));
}

TEST_CASE("multiplexer tls: a pipelined group over TLS is answered in order",
          "[client][multiplexer][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    server.set_handler(echo);
    HttpMultiplexer mux{tls_local(server.port()), tls.client(), clock_(), 1};
    const std::array<HttpRequest, 3> group{post("/a", "1"), get("/b"), post("/c", "3")};
    for (int round = 0; round < 2; ++round) {
        REQUIRE(mux.start_pipelined(0, group));
        REQUIRE(only_status(mux));
        CHECK(mux.answered(0) == 3);
        CHECK(mux.response(0, 0).body == "1");
        CHECK(mux.response(0, 1).body == "\"GET /b\"");
        CHECK(mux.response(0, 2).body == "3");
    }
    CHECK(mux.connects_total() == 1);
}

TEST_CASE("multiplexer tls: a request dropped on a reused TLS connection is resent once",
          "[client][multiplexer][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    server.set_handler(answer_once_then_drop_first_connection());
    HttpMultiplexer mux{tls_local(server.port()), tls.client(), clock_(), 1};
    REQUIRE(mux.start(0, get("/first")));
    REQUIRE(only_status(mux));
    REQUIRE(mux.start(0, get("/second")));
    REQUIRE(only_status(mux));
    CHECK(mux.response(0).body == R"({"n":1})");
    CHECK(mux.connects_total() == 2);
    const auto recorded = server.requests();
    REQUIRE(recorded.size() == 3);
    CHECK(recorded[2].target == "/second");
    CHECK(recorded[2].connection_index == 1);
}

TEST_CASE("multiplexer tls: an idle slot drops a closed connection and keeps one sent a ticket",
          "[client][multiplexer][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    bool is_ticket = false;
    SECTION("close_notify while idle") {
        Reply reply = json_reply(200, "{}");
        reply.is_close_after = true;
        server.reply_always(reply);
    }
    SECTION("a session ticket while idle") {
        is_ticket = true;
        Reply reply = json_reply(200, "{}");
        reply.is_ticket_after = true;
        server.reply_always(reply);
    }
    HttpMultiplexer mux{tls_local(server.port()), tls.client(), clock_(), 1};
    for (int i = 1; i <= 3; ++i) {
        REQUIRE(mux.start(0, get("/n")));
        REQUIRE(only_status(mux));
        if (is_ticket) {
            server.wait_for_tickets(i);
        } else {
            server.wait_for_closed_connections(i);
        }
        // The idle slot sees its socket readable now.
        std::vector<HttpMultiplexer::Completion> completed;
        REQUIRE(mux.wait(0, completed));
        CHECK(completed.empty());
    }
    CHECK(mux.connects_total() == (is_ticket ? 1 : 3));
    CHECK(server.requests().size() == 3);
}

TEST_CASE("multiplexer tls: a failed handshake fails its request with the reason, not resent",
          "[client][multiplexer][tls]") {
    const TlsFixture tls;
    bool is_client_certificate_required = false;
    ConnectionOptions options = tls.client();
    std::string expected;
    SECTION("a CA the client does not trust") {
        options.tls.ca_file = tls.certificates.other_ca_file.string();
        expected = ": certificate verify failed: unable to get local issuer certificate";
    }
    SECTION("a name the certificate does not hold") {
        options.tls.server_name = "queen.example";
        expected = ": certificate verify failed: hostname mismatch";
    }
    SECTION("no client certificate for a server that requires one") {
        is_client_certificate_required = true;
        expected = "alert";
    }
    TestServer server{tls.server(is_client_certificate_required)};
    HttpMultiplexer mux{tls_local(server.port()), options, clock_(), 1};
    REQUIRE(mux.start(0, get("/health")));
    const queen::Status status = only_status(mux);
    REQUIRE_FALSE(status);
    CHECK(status.error().is(Errc::tls_failed));
    CHECK_THAT(status.error().message(), Contains("GET /health: "));
    CHECK_THAT(status.error().message(), Contains(expected));
    if (!is_client_certificate_required) {
        CHECK_THAT(status.error().message(),
                   Contains("tls handshake with https://127.0.0.1:" +
                            std::to_string(server.port()) + ": certificate verify failed"));
    }
    server.wait_for_failed_handshakes(1);
    CHECK(mux.connects_total() == 1);
    CHECK(server.connections_accepted() == 1);
    CHECK(server.requests().empty());
    CHECK_FALSE(mux.is_busy(0));
}

TEST_CASE("multiplexer tls: a CA file that does not load fails start(), nothing in flight",
          "[client][multiplexer][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    ConnectionOptions options = tls.client();
    options.tls.ca_file = (tls.dir.path() / "missing.pem").string();
    HttpMultiplexer mux{tls_local(server.port()), options, clock_(), 1};
    std::string body = "{}";
    for (int attempt = 0; attempt < 2; ++attempt) {
        const queen::Status started = mux.start_with_body(0, post("/p", ""), body);
        REQUIRE_FALSE(started);
        CHECK(started.error().is(Errc::tls_failed));
        CHECK_THAT(started.error().message(),
                   Contains("ca_file '" + options.tls.ca_file + "': No such file or directory"));
        CHECK(body == "{}");  // start_with_body keeps the caller's body on an error
        CHECK(mux.in_flight() == 0);
        CHECK_FALSE(mux.is_busy(0));
    }
    CHECK(mux.connects_total() == 0);
}

TEST_CASE("multiplexer tls: a server that never answers the handshake fails at the deadline",
          "[client][multiplexer][tls]") {
    TestServer plain;  // reads the ClientHello as an HTTP head that never ends
    const TlsFixture tls;
    HttpMultiplexer mux{tls_local(plain.port()), tls.client(), clock_(), 1};
    HttpRequest request = get("/health");
    request.timeout_ms = 200;
    REQUIRE(mux.start(0, request));
    const queen::Status status = only_status(mux);
    REQUIRE_FALSE(status);
    CHECK(status.error().is(Errc::timeout));
    CHECK(mux.connects_total() == 1);
}
