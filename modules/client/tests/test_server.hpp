// client/tests/test_server.hpp — a tiny HTTP/1.1 server on plain sockets and threads (optionally
// TLS, OpenSSL's blocking calls) that records requests and answers with canned bytes, to test the
// client's wire format without the broker.
#pragma once

#include <openssl/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "queen/client/connection.hpp"

namespace queen::client::testing {

/// 127.0.0.1:`port`.
inline Endpoint local(std::uint16_t port) {
    return Endpoint{"127.0.0.1", port};
}

/// A GET of `target`.
inline HttpRequest get(std::string_view target) {
    HttpRequest request;
    request.target = target;
    return request;
}

/// A POST of `body` to `target`.
inline HttpRequest post(std::string_view target, std::string_view body, bool is_idempotent = true) {
    HttpRequest request;
    request.method = "POST";
    request.target = target;
    request.body = body;
    request.has_body = true;
    request.is_idempotent = is_idempotent;
    return request;
}

struct RecordedRequest {
    std::string method;
    std::string target;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    int connection_index = 0;  ///< 0 for the first accepted connection, 1 for the next, ...
    /// The value of the first header named `name` (case-insensitive), or "".
    [[nodiscard]] std::string header(const std::string& name) const;
};

/// What the server does with one request.
struct Reply {
    std::string raw;              ///< bytes written back verbatim
    bool is_close_after = false;  ///< close the connection after writing `raw`
    bool is_hang = false;         ///< never answer (until the server stops)
    /// TLS 1.3: send a new session ticket right after `raw` (records without application data
    /// arriving at an idle connection).
    bool is_ticket_after = false;
};

/// "HTTP/1.1 <status> X\r\nContent-Type: application/json\r\nContent-Length:
/// n\r\n<extra>\r\n<body>".
Reply json_reply(int status, const std::string& body, const std::string& extra_headers = "");
/// A 204 with no body.
Reply no_content_reply();
/// Closes the connection without writing anything.
Reply close_reply();

using Handler = std::function<Reply(const RecordedRequest&)>;
/// Answers 200 {"n":1}, except that the first connection answers one request and then closes
/// on the next without answering: a keep-alive connection the server dropped while the client
/// reused it.
Handler answer_once_then_drop_first_connection();

/// TLS for a TestServer. Throws std::runtime_error with OpenSSL's reason when a file does not load.
struct TestServerTls {
    std::string certificate_file;  ///< the server's certificate (PEM)
    std::string key_file;
    std::string client_ca_file;  ///< non-empty: clients must present a certificate signed by it
    bool is_tls12_only = false;  ///< at most TLS 1.2 (client certificates are checked in the
                                 ///< handshake itself, not after it as in TLS 1.3)
};

class TestServer {
public:
    using Handler = testing::Handler;
    /// Listens on 127.0.0.1 at a free port. The default handler answers 200 {}.
    TestServer();
    /// The same over TLS: every accepted connection starts with a handshake.
    explicit TestServer(const TestServerTls& tls);
    ~TestServer();
    TestServer(const TestServer&) = delete;
    TestServer& operator=(const TestServer&) = delete;

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    void set_handler(Handler handler);
    /// Convenience: answer every request with the same reply.
    void reply_always(Reply reply);
    [[nodiscard]] std::vector<RecordedRequest> requests() const;
    [[nodiscard]] RecordedRequest last_request() const;
    [[nodiscard]] int connections_accepted() const;
    /// TLS handshakes that failed (the client rejected the certificate, or sent none).
    [[nodiscard]] int handshakes_failed() const;
    /// Blocks until `count` TLS handshakes failed.
    void wait_for_failed_handshakes(int count) const;
    /// Blocks until the server closed `count` connections (after close_reply(), is_close_after,
    /// or the client's end).
    void wait_for_closed_connections(int count) const;
    /// Blocks until `count` session tickets of Reply::is_ticket_after were sent.
    void wait_for_tickets(int count) const;
    /// Blocks until at least `count` requests were recorded.
    void wait_for_requests(std::size_t count) const;
    /// Blocks until `predicate(requests so far)` holds (checked after every recorded request).
    void wait_until(
        const std::function<bool(const std::vector<RecordedRequest>&)>& predicate) const;

private:
    void start();
    void accept_loop();
    void serve(int fd, int connection_index);
    void wait_for_count(const int& counter, int count) const;

    int listen_fd_ = -1;
    int wake_fds_[2] = {-1, -1};
    std::uint16_t port_ = 0;
    mutable std::mutex mutex_;
    mutable std::condition_variable changed_;
    Handler handler_;
    std::vector<RecordedRequest> requests_;
    std::vector<int> connection_fds_;
    std::vector<std::thread> threads_;
    int connections_accepted_ = 0;
    int connections_closed_ = 0;
    int handshakes_failed_ = 0;
    int tickets_sent_ = 0;
    SSL_CTX* tls_context_ = nullptr;  // null: plain HTTP
    bool is_stopping_ = false;
    std::thread acceptor_;
};

}  // namespace queen::client::testing
