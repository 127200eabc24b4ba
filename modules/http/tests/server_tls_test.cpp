// modules/http/tests/server_tls_test.cpp — the server with TLS on, over real sockets, against a
// blocking OpenSSL client and certificates from a throw-away CA.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "queen/http/server.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "queen/testing/test_ca.hpp"
#include "test_client.hpp"

using queen::http::Request;
using queen::http::Responder;
using queen::http::Response;
using queen::http::Router;
using queen::http::Server;
using queen::http::ServerOptions;
using queen::testing::make_test_certificates;
using queen::testing::TestCertificates;

namespace {

/// What a TLS client sees of one connection.
struct TlsClientOptions {
    std::filesystem::path ca_file;
    std::filesystem::path certificate_file;  ///< client certificate (mutual TLS); empty: none
    std::filesystem::path key_file;
    int max_version = 0;  ///< e.g. TLS1_2_VERSION; 0: the newest
};

struct Answer {
    int status = 0;
    std::string body;
    bool is_close = false;  ///< "Connection: close"
};

/// A blocking TLS client over one TCP connection to 127.0.0.1. Reads give up after 20 s (a
/// safety net against a hung test) by throwing.
class TlsClient {
public:
    TlsClient(std::uint16_t port, const TlsClientOptions& options) {
        context_ = SSL_CTX_new(TLS_client_method());
        REQUIRE(context_ != nullptr);
        REQUIRE(SSL_CTX_load_verify_locations(context_, options.ca_file.c_str(), nullptr) == 1);
        SSL_CTX_set_verify(context_, SSL_VERIFY_PEER, nullptr);
        if (options.max_version != 0) {
            SSL_CTX_set_max_proto_version(context_, options.max_version);
        }
        if (!options.certificate_file.empty()) {
            REQUIRE(SSL_CTX_use_certificate_file(context_, options.certificate_file.c_str(),
                                                 SSL_FILETYPE_PEM) == 1);
            REQUIRE(SSL_CTX_use_PrivateKey_file(context_, options.key_file.c_str(),
                                                SSL_FILETYPE_PEM) == 1);
        }
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        REQUIRE(fd_ >= 0);
        timeval timeout{20, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(port);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
        ssl_ = SSL_new(context_);
        SSL_set_fd(ssl_, fd_);
        SSL_set1_host(ssl_, "localhost");
    }
    ~TlsClient() {
        SSL_free(ssl_);
        SSL_CTX_free(context_);
        ::close(fd_);
    }
    TlsClient(const TlsClient&) = delete;
    TlsClient& operator=(const TlsClient&) = delete;

    /// The handshake: "" on success, else OpenSSL's reason.
    std::string handshake() {
        ERR_clear_error();
        if (SSL_connect(ssl_) == 1) {
            return {};
        }
        return last_error();
    }

    /// The serial number of the server's certificate.
    long peer_serial() const {
        X509* certificate = SSL_get1_peer_certificate(ssl_);
        REQUIRE(certificate != nullptr);
        const long serial = ASN1_INTEGER_get(X509_get0_serialNumber(certificate));
        X509_free(certificate);
        return serial;
    }

    void send(std::string_view bytes) {
        REQUIRE(SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size())) ==
                static_cast<int>(bytes.size()));
    }

    /// One response with a Content-Length body.
    Answer read_answer() {
        std::size_t head_end = std::string::npos;
        while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
            REQUIRE(fill() > 0);
        }
        const std::string head = buffer_.substr(0, head_end);
        Answer answer;
        answer.status = std::atoi(head.substr(9, 3).c_str());
        answer.is_close = head.find("Connection: close") != std::string::npos;
        std::size_t length = 0;
        if (const auto at = head.find("Content-Length: "); at != std::string::npos) {
            length = static_cast<std::size_t>(std::atoll(head.c_str() + at + 16));
        }
        while (buffer_.size() < head_end + 4 + length) {
            REQUIRE(fill() > 0);
        }
        answer.body = buffer_.substr(head_end + 4, length);
        buffer_.erase(0, head_end + 4 + length);
        return answer;
    }

    Answer request(std::string_view method, std::string_view target, std::string_view body = {},
                   std::string_view extra_headers = {}) {
        send(queen::http::testing::TestClient::format_request(method, target, body, extra_headers));
        return read_answer();
    }

    /// Reads to the end: "close_notify" when the server ended TLS cleanly, else the error.
    std::string read_to_end() {
        for (;;) {
            char data[4096];
            ERR_clear_error();
            const int n = SSL_read(ssl_, data, sizeof(data));
            if (n > 0) {
                continue;
            }
            if (SSL_get_error(ssl_, n) == SSL_ERROR_ZERO_RETURN) {
                return "close_notify";
            }
            return "error: " + last_error();
        }
    }

private:
    int fill() {
        char data[16 * 1024];
        ERR_clear_error();
        const int n = SSL_read(ssl_, data, sizeof(data));
        if (n <= 0) {
            FAIL("TLS read failed: " << last_error());
        }
        buffer_.append(data, static_cast<std::size_t>(n));
        return n;
    }

    std::string last_error() const {
        std::string reason;
        while (const unsigned long code = ERR_get_error()) {
            char text[256];
            ERR_error_string_n(code, text, sizeof(text));
            reason += text;
            reason += ' ';
        }
        return reason.empty() ? "no OpenSSL reason" : reason;
    }

    SSL_CTX* context_ = nullptr;
    SSL* ssl_ = nullptr;
    int fd_ = -1;
    std::string buffer_;
};

/// A TLS server over fresh certificates, with /hello and /echo.
struct TlsFixture {
    explicit TlsFixture(const std::function<void(ServerOptions&)>& adjust = {}) {
        certificates = make_test_certificates(directory.path());
        options.port = 0;
        options.io_threads = 2;
        options.tls.certificate_file = certificates.server_certificate_file;
        options.tls.key_file = certificates.server_key_file;
        if (adjust) {
            adjust(options);
        }
        Router router;
        router.get("/hello", [](Request&, Responder responder) {
            responder.complete(Response::json(200, "{\"hello\":true}"));
        });
        router.post("/echo", [](Request& request, Responder responder) {
            responder.complete(Response::json(200, request.body));
        });
        auto started =
            Server::start(options, std::move(router).into_handler(), queen::NullLogger::instance());
        REQUIRE(started.has_value());
        server = std::move(started).value();
    }

    [[nodiscard]] TlsClientOptions trusting() const {
        TlsClientOptions client;
        client.ca_file = certificates.ca_file;
        return client;
    }

    queen::testing::TempDir directory;
    TestCertificates certificates;
    ServerOptions options;
    std::unique_ptr<Server> server;
};

/// Starts a server with `options` and returns its error (the start must fail).
queen::Error start_error(const ServerOptions& options) {
    auto started = Server::start(
        options, [](Request&, Responder) {}, queen::NullLogger::instance());
    REQUIRE_FALSE(started.has_value());
    return started.error();
}

}  // namespace

TEST_CASE("http tls: requests, pipelining and a large body over one TLS connection",
          "[http][tls]") {
    TlsFixture fixture;
    TlsClient client(fixture.server->port(), fixture.trusting());
    REQUIRE(client.handshake().empty());

    const Answer hello = client.request("GET", "/hello");
    CHECK(hello.status == 200);
    CHECK(hello.body == "{\"hello\":true}");

    // Three requests in one write, answered in order.
    std::string pipelined;
    for (int i = 0; i < 3; ++i) {
        pipelined += queen::http::testing::TestClient::format_request(
            "POST", "/echo", "{\"n\":" + std::to_string(i) + "}");
    }
    client.send(pipelined);
    for (int i = 0; i < 3; ++i) {
        CHECK(client.read_answer().body == "{\"n\":" + std::to_string(i) + "}");
    }

    // A body of many TLS records each way.
    std::string large(1 << 20, 'x');
    large.front() = '"';
    large.back() = '"';
    const Answer echoed = client.request("POST", "/echo", large);
    CHECK(echoed.status == 200);
    CHECK(echoed.body == large);

    const auto metrics = fixture.server->metrics();
    CHECK(metrics.tls_handshakes_total == 1);
    CHECK(metrics.tls_handshake_failures_total == 0);
    CHECK(metrics.connections_accepted_total == 1);
    CHECK(metrics.tls_certificate_not_after_seconds >
          static_cast<std::int64_t>(std::time(nullptr)));
    CHECK(fixture.server->is_tls());
}

TEST_CASE("http tls: Connection: close ends with close_notify", "[http][tls]") {
    TlsFixture fixture;
    TlsClient client(fixture.server->port(), fixture.trusting());
    REQUIRE(client.handshake().empty());
    const Answer answer = client.request("GET", "/hello", {}, "Connection: close\r\n");
    CHECK(answer.status == 200);
    CHECK(answer.is_close);
    CHECK(client.read_to_end() == "close_notify");
}

TEST_CASE("http tls: a client that does not trust the CA fails the handshake", "[http][tls]") {
    TlsFixture fixture;
    TlsClientOptions distrusting;
    distrusting.ca_file = fixture.certificates.other_ca_file;
    TlsClient client(fixture.server->port(), distrusting);
    const std::string error = client.handshake();
    CHECK_THAT(error, Catch::Contains("certificate verify failed"));
}

TEST_CASE("http tls: plain HTTP on the TLS port gets a plain 400 saying so", "[http][tls]") {
    TlsFixture fixture;
    queen::http::testing::TestClient plain(fixture.server->port());
    const auto answer = plain.request("GET", "/hello");
    CHECK(answer.status == 400);
    CHECK_THAT(answer.body, Catch::Contains("https://"));
    CHECK(plain.wait_closed());
    CHECK(fixture.server->metrics().tls_handshake_failures_total == 1);
    CHECK(fixture.server->metrics().tls_handshakes_total == 0);
}

TEST_CASE("http tls: a connection that never handshakes is closed after the header timeout",
          "[http][tls]") {
    TlsFixture fixture([](ServerOptions& options) { options.header_read_timeout_ms = 100; });
    queen::http::testing::TestClient silent(fixture.server->port());
    CHECK(silent.wait_closed());
    const auto metrics = fixture.server->metrics();
    CHECK(metrics.tls_handshake_failures_total == 1);
    CHECK(metrics.timeouts_total == 1);
}

TEST_CASE("http tls: tls_min_version 1.3 refuses a TLS 1.2 client", "[http][tls]") {
    TlsFixture fixture([](ServerOptions& options) { options.tls.min_version = "1.3"; });
    TlsClientOptions old_client = fixture.trusting();
    old_client.max_version = TLS1_2_VERSION;
    TlsClient refused(fixture.server->port(), old_client);
    CHECK_FALSE(refused.handshake().empty());
    TlsClient accepted(fixture.server->port(), fixture.trusting());
    CHECK(accepted.handshake().empty());
    CHECK(accepted.request("GET", "/hello").status == 200);
}

TEST_CASE("http tls: client certificates are required with tls_client_ca_file", "[http][tls]") {
    TlsFixture fixture([](ServerOptions& options) {
        // The test CA signed both the server's and the client's certificate (ca.pem beside them).
        options.tls.client_ca_file = options.tls.certificate_file.parent_path() / "ca.pem";
    });
    TlsClientOptions with_certificate = fixture.trusting();
    with_certificate.certificate_file = fixture.certificates.client_certificate_file;
    with_certificate.key_file = fixture.certificates.client_key_file;
    TlsClient accepted(fixture.server->port(), with_certificate);
    REQUIRE(accepted.handshake().empty());
    CHECK(accepted.request("GET", "/hello").status == 200);

    // Without one, TLS 1.3 completes the client's side of the handshake; the server's alert
    // arrives on the first read.
    TlsClient refused(fixture.server->port(), fixture.trusting());
    const std::string handshake = refused.handshake();
    if (handshake.empty()) {
        refused.send(queen::http::testing::TestClient::format_request("GET", "/hello"));
        CHECK_THAT(refused.read_to_end(), Catch::Contains("certificate required"));
    }
    CHECK(fixture.server->metrics().tls_handshake_failures_total == 1);
}

TEST_CASE("http tls: reload_tls serves the new certificate to new connections only",
          "[http][tls]") {
    TlsFixture fixture;
    TlsClient before(fixture.server->port(), fixture.trusting());
    REQUIRE(before.handshake().empty());
    const long first_serial = before.peer_serial();

    // Renew: a new certificate from a new CA replaces the files in place.
    queen::testing::TestCertificateOptions renewed_options;
    renewed_options.prefix = "renewed-";
    const TestCertificates renewed =
        make_test_certificates(fixture.directory.path(), renewed_options);
    std::filesystem::copy_file(renewed.server_certificate_file,
                               fixture.certificates.server_certificate_file,
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(renewed.server_key_file, fixture.certificates.server_key_file,
                               std::filesystem::copy_options::overwrite_existing);
    REQUIRE(fixture.server->reload_tls().has_value());

    TlsClientOptions trusting_renewed;
    trusting_renewed.ca_file = renewed.ca_file;
    TlsClient after(fixture.server->port(), trusting_renewed);
    REQUIRE(after.handshake().empty());
    CHECK(after.request("GET", "/hello").status == 200);
    TlsClient old_trust(fixture.server->port(), fixture.trusting());
    CHECK_THAT(old_trust.handshake(), Catch::Contains("certificate verify failed"));
    // The connection made before the reload keeps working with the old certificate.
    CHECK(before.request("GET", "/hello").status == 200);
    CHECK(before.peer_serial() == first_serial);

    // A broken file is refused and the current certificate stays.
    std::filesystem::resize_file(fixture.certificates.server_certificate_file, 10);
    const auto failed = fixture.server->reload_tls();
    REQUIRE_FALSE(failed.has_value());
    CHECK(failed.error().is(queen::Errc::invalid_argument));
    CHECK_THAT(failed.error().message(), Catch::Contains("http.tls_certificate_file"));
    TlsClient still(fixture.server->port(), trusting_renewed);
    REQUIRE(still.handshake().empty());
    CHECK(still.request("GET", "/hello").status == 200);
}

TEST_CASE("http tls: unusable certificate files stop the start with the file named",
          "[http][tls]") {
    queen::testing::TempDir directory;
    const TestCertificates good = make_test_certificates(directory.path());
    queen::testing::TestCertificateOptions other_options;
    other_options.prefix = "other-";
    const TestCertificates other = make_test_certificates(directory.path(), other_options);
    ServerOptions options;
    options.port = 0;
    options.tls.certificate_file = good.server_certificate_file;
    options.tls.key_file = good.server_key_file;

    SECTION("missing certificate") {
        options.tls.certificate_file = directory.path() / "absent.pem";
        const auto error = start_error(options);
        CHECK(error.is(queen::Errc::invalid_argument));
        CHECK_THAT(error.message(), Catch::Contains("http.tls_certificate_file") &&
                                        Catch::Contains("absent.pem") &&
                                        Catch::Contains("No such file"));
    }
    SECTION("a key that is not the certificate's") {
        options.tls.key_file = other.server_key_file;
        CHECK_THAT(start_error(options).message(),
                   Catch::Contains("http.tls_key_file") && Catch::Contains("does not match"));
    }
    SECTION("not PEM") {
        options.tls.key_file = good.ca_file;  // a certificate where a key belongs
        CHECK_THAT(start_error(options).message(), Catch::Contains("http.tls_key_file"));
    }
    SECTION("an expired certificate") {
        queen::testing::TestCertificateOptions expired_options;
        expired_options.prefix = "expired-";
        expired_options.server_valid_from_days = -3;
        expired_options.server_valid_to_days = -1;
        const TestCertificates expired = make_test_certificates(directory.path(), expired_options);
        options.tls.certificate_file = expired.server_certificate_file;
        options.tls.key_file = expired.server_key_file;
        CHECK_THAT(start_error(options).message(), Catch::Contains("expired"));
    }
    SECTION("a key without a certificate") {
        options.tls.certificate_file.clear();
        CHECK_THAT(start_error(options).message(), Catch::Contains("must be set together"));
    }
    SECTION("a client CA without TLS") {
        options.tls.certificate_file.clear();
        options.tls.key_file.clear();
        options.tls.client_ca_file = good.ca_file;
        CHECK_THAT(start_error(options).message(), Catch::Contains("http.tls_client_ca_file"));
    }
    SECTION("an unknown minimum version") {
        options.tls.min_version = "1.1";
        CHECK_THAT(start_error(options).message(), Catch::Contains("http.tls_min_version"));
    }
}
