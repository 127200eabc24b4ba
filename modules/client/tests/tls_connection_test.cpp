// client/tests/tls_connection_test.cpp — the blocking Connection (and pool, and Client) over TLS:
// round trips, keep-alive, pipelining, stale connections, session tickets at an idle connection,
// and every way the handshake or the setup fails.
#include <array>
#include <fstream>
#include <string>

#include "queen/client/client.hpp"
#include "queen/client/connection.hpp"
#include "queen/client/errc.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "test_server.hpp"
#include "tls_fixture.hpp"

namespace {

using Catch::Matchers::Contains;
using queen::client::Connection;
using queen::client::ConnectionOptions;
using queen::client::ConnectionPool;
using queen::client::Errc;
using queen::client::HttpRequest;
using queen::client::HttpResponse;
using queen::client::testing::answer_once_then_drop_first_connection;
using queen::client::testing::get;
using queen::client::testing::json_reply;
using queen::client::testing::post;
using queen::client::testing::RecordedRequest;
using queen::client::testing::Reply;
using queen::client::testing::TestServer;
using queen::client::testing::tls_local;
using queen::client::testing::TlsFixture;

const queen::Clock& clock_() {
    return queen::SystemClock::instance();
}

// Answers every request with its method, target and body (the body as the JSON text itself).
Reply echo(const RecordedRequest& request) {
    return json_reply(200, request.body.empty()
                               ? "\"" + request.method + " " + request.target + "\""
                               : request.body);
}

// A request that fails: its error (the test fails when it succeeds).
queen::Error failure_of(Connection& connection, const HttpRequest& request) {
    auto response = connection.request(request);
    REQUIRE_FALSE(response);
    return response.error();
}

}  // namespace

TEST_CASE("client: parse_url reads https:// as TLS on the same default port",
          "[client][connection][tls]") {
    auto a = queen::client::parse_url("https://broker.example");
    REQUIRE(a);
    CHECK(a->is_tls);
    CHECK(a->host == "broker.example");
    CHECK(a->port == 6632);
    auto b = queen::client::parse_url("https://[::1]:7443/");
    REQUIRE(b);
    CHECK(b->is_tls);
    CHECK(b->host == "::1");
    CHECK(b->port == 7443);
    CHECK_FALSE(queen::client::parse_url("http://x:1")->is_tls);
    CHECK_FALSE(queen::client::parse_url("x:1")->is_tls);
    CHECK(queen::client::parse_url("ftp://x").error().is(Errc::invalid_argument));
    CHECK(queen::client::parse_url("https://").error().is(Errc::invalid_argument));
    CHECK(queen::client::parse_url("https://x/api").error().is(Errc::invalid_argument));
}

TEST_CASE("client tls: a Connection GETs and POSTs 1 MiB over TLS", "[client][connection][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    server.set_handler(echo);
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    std::string body(1 << 20, ' ');
    for (auto& c : body) {
        c = static_cast<char>('a' + rng.below(26));
    }
    body.front() = '"';
    body.back() = '"';
    Connection connection{tls_local(server.port()), tls.client(), clock_()};
    auto got = connection.request(get("/health"));
    REQUIRE(got);
    CHECK(got->status == 200);
    CHECK(got->body == "\"GET /health\"");
    auto posted = connection.request(post("/api/v1/push", body));
    REQUIRE(posted);
    CHECK(posted->body == body);
    CHECK(server.last_request().body == body);
    CHECK(server.last_request().header("Host") == "127.0.0.1:" + std::to_string(server.port()));
    CHECK(connection.connects_total() == 1);
}

TEST_CASE("client tls: keep-alive reuses one TLS connection, also through the pool",
          "[client][connection][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    server.set_handler(echo);
    SECTION("a connection") {
        Connection connection{tls_local(server.port()), tls.client(), clock_()};
        for (int i = 0; i < 5; ++i) {
            const std::string target = "/r" + std::to_string(i);
            auto response = connection.request(i % 2 == 0 ? get(target) : post(target, "[1]"));
            REQUIRE(response);
            CHECK(response->body == (i % 2 == 0 ? "\"GET " + target + "\"" : "[1]"));
        }
        CHECK(connection.connects_total() == 1);
    }
    SECTION("a pool and its own connections share the context") {
        ConnectionPool pool{tls_local(server.port()), tls.client(), clock_(), 2};
        for (int i = 0; i < 3; ++i) {
            auto lease = pool.acquire(1'000);
            REQUIRE(lease);
            REQUIRE((*lease)->request(get("/p")));
        }
        CHECK(pool.connects_total() == 1);
        const auto own = pool.make_connection();
        REQUIRE(own->request(get("/own")));
        CHECK(own->connects_total() == 1);
        CHECK(pool.size() == 1);
    }
    CHECK(server.connections_accepted() <= 2);
}

TEST_CASE("client tls: a pipelined group over TLS is answered in order",
          "[client][connection][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    server.set_handler(echo);
    Connection connection{tls_local(server.port()), tls.client(), clock_()};
    const std::array<HttpRequest, 3> group{post("/a", "1"), get("/b"), post("/c", "3")};
    std::array<HttpResponse, 3> responses;
    std::size_t answered = 0;
    REQUIRE(connection.request_pipelined(group, responses, answered));
    CHECK(answered == 3);
    CHECK(responses[0].body == "1");
    CHECK(responses[1].body == "\"GET /b\"");
    CHECK(responses[2].body == "3");
    REQUIRE(connection.request(get("/after")));
    CHECK(connection.connects_total() == 1);
}

TEST_CASE("client tls: an idle connection the server closed is replaced for an idempotent request",
          "[client][connection][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    bool is_closed_while_idle = false;
    SECTION("closed when the next request came (it meets the end of the stream): sent again") {
        server.set_handler(answer_once_then_drop_first_connection());
    }
    SECTION("closed with close_notify while idle: seen before the request") {
        is_closed_while_idle = true;
        server.set_handler([](const RecordedRequest& request) {
            Reply reply = json_reply(200, R"({"n":1})");
            reply.is_close_after = request.connection_index == 0;
            return reply;
        });
    }
    Connection connection{tls_local(server.port()), tls.client(), clock_()};
    REQUIRE(connection.request(get("/first")));
    if (is_closed_while_idle) {
        server.wait_for_closed_connections(1);
    }
    auto second = connection.request(get("/second"));
    REQUIRE(second);
    CHECK(second->body == R"({"n":1})");
    CHECK(connection.connects_total() == 2);
    CHECK(server.requests().size() == (is_closed_while_idle ? 2 : 3));
}

TEST_CASE("client tls: a session ticket at an idle connection does not look like a close",
          "[client][connection][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    server.set_handler([](const RecordedRequest&) {
        Reply reply = json_reply(200, "{}");
        reply.is_ticket_after = true;
        return reply;
    });
    Connection connection{tls_local(server.port()), tls.client(), clock_()};
    for (int i = 1; i <= 3; ++i) {
        REQUIRE(connection.request(get("/t")));
        server.wait_for_tickets(i);  // the ticket waits, unread, at the idle connection
    }
    CHECK(connection.connects_total() == 1);
    CHECK(server.connections_accepted() == 1);
}

TEST_CASE("client tls: a certificate from a CA the client does not trust fails with the reason",
          "[client][connection][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    ConnectionOptions options = tls.client();
    options.tls.ca_file = tls.certificates.other_ca_file.string();
    Connection connection{tls_local(server.port()), options, clock_()};
    const queen::Error error = failure_of(connection, get("/health"));
    CHECK(error.is(Errc::tls_failed));
    CHECK_THAT(error.message(),
               Contains("tls handshake with https://127.0.0.1:" + std::to_string(server.port()) +
                        ": certificate verify failed: unable to get local issuer certificate"));
    CHECK_FALSE(queen::client::is_retryable(error));
    server.wait_for_failed_handshakes(1);
    CHECK(server.connections_accepted() == 1);  // not tried again
    CHECK(server.requests().empty());
    CHECK_FALSE(connection.is_open());
}

TEST_CASE("client tls: the certificate must name the server", "[client][connection][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    ConnectionOptions options = tls.client();
    SECTION("a name it does not hold fails") {
        options.tls.server_name = "queen.example";
        Connection connection{tls_local(server.port()), options, clock_()};
        const queen::Error error = failure_of(connection, get("/health"));
        CHECK(error.is(Errc::tls_failed));
        CHECK_THAT(error.message(), Contains("certificate verify failed: hostname mismatch"));
    }
    SECTION("its DNS name passes, checked and sent as SNI") {
        options.tls.server_name = "localhost";
        Connection connection{tls_local(server.port()), options, clock_()};
        REQUIRE(connection.request(get("/health")));
    }
    SECTION("an IP address it does not hold fails") {
        options.tls.server_name = "127.0.0.2";
        Connection connection{tls_local(server.port()), options, clock_()};
        CHECK(failure_of(connection, get("/health")).is(Errc::tls_failed));
    }
}

TEST_CASE("client tls: is_verify_disabled accepts a certificate nobody trusts",
          "[client][connection][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    ConnectionOptions options = tls.client();
    options.tls.ca_file = tls.certificates.other_ca_file.string();
    options.tls.server_name = "queen.example";
    options.tls.is_verify_disabled = true;
    Connection connection{tls_local(server.port()), options, clock_()};
    auto response = connection.request(get("/health"));
    REQUIRE(response);
    CHECK(response->status == 200);
}

TEST_CASE("client tls: a client certificate is sent when the server requires one",
          "[client][connection][tls]") {
    const TlsFixture tls;
    queen::client::testing::TestServerTls server_tls = tls.server(true);
    SECTION("TLS 1.3") {}
    SECTION("TLS 1.2") {
        server_tls.is_tls12_only = true;
    }
    TestServer server{server_tls};
    {
        Connection connection{tls_local(server.port()), tls.client_with_certificate(), clock_()};
        REQUIRE(connection.request(get("/with")));
        CHECK(server.last_request().target == "/with");
    }
    Connection connection{tls_local(server.port()), tls.client(), clock_()};
    const queen::Error error = failure_of(connection, get("/without"));
    // TLS 1.2 fails in the handshake; TLS 1.3 finishes the client's side of it and the server's
    // alert arrives as the answer.
    CHECK(error.is(Errc::tls_failed));
    CHECK_THAT(error.message(), Contains("alert"));
    server.wait_for_failed_handshakes(1);
    CHECK(server.requests().size() == 1);
    CHECK(connection.connects_total() == 1);  // not sent again
}

TEST_CASE("client tls: an expired server certificate fails", "[client][connection][tls]") {
    queen::testing::TestCertificateOptions expired;
    expired.server_valid_from_days = -3;
    expired.server_valid_to_days = -1;
    const TlsFixture tls{expired};
    TestServer server{tls.server()};
    Connection connection{tls_local(server.port()), tls.client(), clock_()};
    const queen::Error error = failure_of(connection, get("/health"));
    CHECK(error.is(Errc::tls_failed));
    CHECK_THAT(error.message(), Contains("certificate verify failed: certificate has expired"));
}

TEST_CASE("client tls: files that do not load are a clear error, not a crash",
          "[client][connection][tls]") {
    const TlsFixture tls;
    TestServer server{tls.server()};
    ConnectionOptions options = tls.client();
    std::string expected;
    SECTION("a missing CA file") {
        options.tls.ca_file = (tls.dir.path() / "missing.pem").string();
        expected = "tls: ca_file '" + options.tls.ca_file + "': No such file or directory";
    }
    SECTION("a CA file that is not PEM") {
        options.tls.ca_file = (tls.dir.path() / "junk.pem").string();
        std::ofstream{options.tls.ca_file} << "not a certificate\n";
        expected = "tls: ca_file '" + options.tls.ca_file + "': ";
    }
    SECTION("a certificate without its key") {
        options.tls.certificate_file = tls.certificates.client_certificate_file.string();
        expected = "certificate_file and key_file go together";
    }
    SECTION("a key that is not the certificate's") {
        options.tls.certificate_file = tls.certificates.client_certificate_file.string();
        options.tls.key_file = tls.certificates.server_key_file.string();
        expected = "does not match certificate_file";
    }
    Connection connection{tls_local(server.port()), options, clock_()};
    for (int attempt = 0; attempt < 2; ++attempt) {
        const queen::Error error = failure_of(connection, get("/health"));
        CHECK(error.is(Errc::tls_failed));
        CHECK_THAT(error.message(), Contains(expected));
    }
    CHECK(connection.connects_total() == 0);
    CHECK(server.connections_accepted() == 0);

    // A Client reports it at once (not retryable).
    queen::client::ClientOptions client_options;
    client_options.endpoint = tls_local(server.port());
    client_options.connection = options;
    client_options.retry_delay_ms = 60'000;
    queen::client::Client client{client_options};
    auto health = client.health();
    REQUIRE_FALSE(health);
    CHECK(health.error().is(Errc::tls_failed));
}

TEST_CASE("client tls: a server that never answers the handshake times out at the connect deadline",
          "[client][connection][tls]") {
    TestServer plain;  // reads the ClientHello as an HTTP head that never ends
    const TlsFixture tls;
    ConnectionOptions options = tls.client();
    options.connect_timeout_ms = 200;
    Connection connection{tls_local(plain.port()), options, clock_()};
    const queen::Error error = failure_of(connection, get("/health"));
    CHECK(error.is(Errc::timeout));
    CHECK_THAT(error.message(), Contains("tls handshake with https://127.0.0.1:"));
    CHECK_FALSE(connection.is_open());
}
