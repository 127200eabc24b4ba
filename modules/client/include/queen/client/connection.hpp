// queen/client/connection.hpp — one HTTP/1.1 keep-alive connection (blocking, with deadlines) and a
// pool of them for multi-threaded use. Not an HTTP library: just what the Queen API needs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "queen/core/clock.hpp"
#include "queen/core/result.hpp"

namespace queen::client {

namespace detail {
class TlsContext;
class TlsSession;
}  // namespace detail

/// Where the broker listens.
struct Endpoint {
    std::string host = "127.0.0.1";
    std::uint16_t port = 6632;
    bool is_tls = false;  ///< HTTPS: TLS over the TCP connection (ConnectionOptions::tls)
};

/// Parses "http://host[:port][/]", "https://host[:port][/]" (is_tls) or "host[:port]" (plain
/// HTTP); the port defaults to 6632 for both schemes; IPv6 as "[::1]:6632".
/// Errors: Errc::invalid_argument (another scheme, a path, a bad port, an empty host).
[[nodiscard]] queen::Result<Endpoint> parse_url(std::string_view url);

struct Header {
    std::string name;
    std::string value;
};

/// How a connection to an https:// endpoint (Endpoint::is_tls) sets up TLS (OpenSSL; TLS 1.2 at
/// least). The server's certificate must chain to a trusted CA and name the host: a DNS name is
/// matched against the certificate's DNS names, an IP literal against its IP addresses. The
/// files are read once, when the Connection, ConnectionPool or HttpMultiplexer is built; one that
/// does not load fails every request of it with Errc::tls_failed naming the file and the reason.
struct TlsClientOptions {
    /// PEM bundle of the CAs trusted to sign the server's certificate; empty: the system's
    /// default trust store (OpenSSL's default paths, SSL_CERT_FILE / SSL_CERT_DIR).
    std::string ca_file;
    /// PEM client certificate (with its chain) and its private key, for a broker that requires
    /// client certificates: both or neither.
    std::string certificate_file;
    std::string key_file;
    /// The name checked against the server's certificate and sent as SNI; empty: the endpoint's
    /// host (SNI is sent only for a DNS name, not for an IP literal).
    std::string server_name;
    /// Accept any server certificate, unverified (no CA, no name check): an attacker in the path
    /// can read and change the traffic. For tests and `--insecure` only.
    bool is_verify_disabled = false;
};

struct ConnectionOptions {
    std::int64_t connect_timeout_ms = 5'000;         ///< TCP connect plus the TLS handshake
    std::int64_t request_timeout_ms = 30'000;        ///< default deadline of one request
    std::size_t response_size_bytes_max = 64 << 20;  ///< larger answers fail with bad_response
    std::vector<Header> headers;  ///< sent on every request (e.g. Authorization: Bearer ...)
    /// A reused connection is checked for a close by the server (one poll() per request) when
    /// its last answer is older than this; 0 checks before every request. A connection that
    /// answered moments ago is alive unless the server went away: with a value well below the
    /// server's keep-alive timeout, skipping the check only turns that crash into the error of
    /// the request (a non-idempotent one is then not resent). The bench sets it.
    std::int64_t idle_check_after_ms = 0;
    TlsClientOptions tls;  ///< used when the endpoint is_tls
};

/// One request. Views must stay valid during Connection::request().
struct HttpRequest {
    std::string_view method = "GET";
    std::string_view target = "/";  ///< path and query, already percent-encoded
    std::string_view body;
    bool has_body = false;  ///< false: no body and no Content-Length (GET, DELETE)
    /// True when sending the request twice is harmless; then a request that fails on a reused
    /// keep-alive connection before any answer byte arrives is sent once more on a new one.
    bool is_idempotent = true;
    std::int64_t timeout_ms = 0;  ///< 0: ConnectionOptions::request_timeout_ms
};

struct HttpResponse {
    int status = 0;
    std::vector<Header> headers;  ///< in arrival order; names as the server sent them
    std::string body;             ///< de-chunked
    /// The value of the first header named `name` (case-insensitive), or nullopt.
    [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
};

/// A keep-alive HTTP/1.1 connection over a blocking TCP socket (TLS for an https:// endpoint,
/// the handshake within connect_timeout_ms). It connects lazily, reconnects when the server
/// closed it while idle, honours `Connection: close`, reads Content-Length, chunked and
/// read-until-close bodies, and enforces a deadline per request. Closing sends TLS close_notify.
/// Thread-safety: request() from one thread at a time; abort() from any thread.
class Connection {
public:
    /// `clock` measures deadlines and must outlive the connection. With TLS the CA and
    /// certificate files are read here (see TlsClientOptions).
    Connection(Endpoint endpoint, ConnectionOptions options, const queen::Clock& clock);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    /// Sends `request` and reads the whole response (any status: mapping statuses to errors is
    /// the caller's business).
    /// Errors: Errc::connect_failed, Errc::timeout (the connection is closed), Errc::
    /// connection_closed, Errc::bad_response (not HTTP, or larger than response_size_bytes_max),
    /// Errc::cancelled (after abort()), Errc::tls_failed (TLS files that do not load, a failed
    /// handshake: "tls handshake with https://host:port: certificate verify failed: <why>", a
    /// TLS alert such as a client certificate the server required; never sent again).
    [[nodiscard]] queen::Result<HttpResponse> request(const HttpRequest& request);
    /// request() into `response`, reusing the storage of its body and headers from an earlier
    /// call (a request loop stops allocating per answer). Errors: as request(); `response` is
    /// then unspecified but valid.
    [[nodiscard]] queen::Status request_into(const HttpRequest& request, HttpResponse& response);
    /// Sends `requests` (at least one) back to back in one write and reads their answers in
    /// order into `responses` (as many): HTTP/1.1 pipelining, so the server handles them in this
    /// order. `answered` is how many answers arrived whole: all on success, those before the
    /// failure otherwise. Sent once more on a new connection only when every request is
    /// idempotent and no answer byte came (as request()). The deadline is the latest of the
    /// requests'. Errors: as request(), and Errc::invalid_argument (no request, or a different
    /// count of responses).
    [[nodiscard]] queen::Status request_pipelined(std::span<const HttpRequest> requests,
                                                  std::span<HttpResponse> responses,
                                                  std::size_t& answered);

    /// Closes the socket; the next request() connects again.
    void close() noexcept;
    /// Fails the request in flight (if any) and every later one with Errc::cancelled. Sticky.
    void abort() noexcept;
    [[nodiscard]] bool is_open() const noexcept;
    /// TCP connections opened so far (1 per reconnect): lets tests see keep-alive reuse.
    [[nodiscard]] std::uint64_t connects_total() const noexcept { return connects_total_; }
    [[nodiscard]] const Endpoint& endpoint() const noexcept { return endpoint_; }

private:
    struct Attempt;
    friend class ConnectionPool;  // shares one TLS context among its connections
    Connection(Endpoint endpoint, ConnectionOptions options, const queen::Clock& clock,
               std::shared_ptr<const detail::TlsContext> tls_context);
    queen::Status open(std::int64_t deadline_ns);
    queen::Status handshake(std::int64_t deadline_ns);
    queen::Status send_request(const std::string& head, std::string_view body,
                               std::string_view what, std::int64_t deadline_ns);
    queen::Result<std::size_t> receive(std::string_view what, std::int64_t deadline_ns,
                                       bool is_wait_first);
    queen::Status perform(std::span<const HttpRequest> requests, std::span<HttpResponse> responses,
                          std::size_t& answered);
    queen::Status exchange(const std::string& head, std::string_view body, std::string_view what,
                           std::int64_t deadline_ns, bool& is_nothing_received,
                           std::span<HttpResponse> responses, std::size_t& answered);
    [[nodiscard]] bool is_idle_connection_dead() noexcept;
    int wait_fd(short events, std::int64_t deadline_ns) const;

    Endpoint endpoint_;
    ConnectionOptions options_;
    const queen::Clock& clock_;
    std::string head_prefix_;      // "Host: ...\r\n" plus option headers, built once
    mutable std::mutex fd_mutex_;  // guards fd_ changes against abort()
    int fd_ = -1;
    std::atomic<bool> is_aborted_{false};
    std::atomic<std::uint64_t> connects_total_{0};
    std::int64_t last_answer_ns_ = 0;  // when the last complete answer arrived
    std::vector<char> read_buffer_;
    std::shared_ptr<const detail::TlsContext> tls_context_;  // null: plain HTTP
    std::unique_ptr<detail::TlsSession> tls_;                // with tls_context_
    std::string tls_send_buffer_;  // head and a small body, sent as one TLS record
};

/// A bounded set of connections to one endpoint, shared by threads. acquire() hands out an idle
/// connection (or opens a new one below connections_max, or waits for one to be released).
/// Thread-safety: all members are thread-safe.
class ConnectionPool {
public:
    ConnectionPool(Endpoint endpoint, ConnectionOptions options, const queen::Clock& clock,
                   std::size_t connections_max);
    ~ConnectionPool();
    ConnectionPool(const ConnectionPool&) = delete;
    ConnectionPool& operator=(const ConnectionPool&) = delete;

    /// A connection borrowed from the pool; returned to it on destruction.
    class Lease {
    public:
        Lease(ConnectionPool* pool, Connection* connection)
            : pool_(pool), connection_(connection) {}
        Lease(Lease&& other) noexcept;
        Lease& operator=(Lease&&) = delete;
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        ~Lease();
        Connection& operator*() const noexcept { return *connection_; }
        Connection* operator->() const noexcept { return connection_; }

    private:
        ConnectionPool* pool_;
        Connection* connection_;
    };

    /// Borrows a connection, waiting up to `wait_ms` for one when connections_max are in use.
    /// Errors: Errc::busy (the wait ran out), Errc::cancelled (after abort_all()).
    [[nodiscard]] queen::Result<Lease> acquire(std::int64_t wait_ms);
    /// Aborts every connection, borrowed or idle; later acquire() calls fail with cancelled.
    void abort_all() noexcept;
    /// Connections created so far (at most connections_max).
    [[nodiscard]] std::size_t size() const;
    /// Sum of Connection::connects_total() over the pool.
    [[nodiscard]] std::uint64_t connects_total() const;
    /// A connection of one's own, outside the pool (not counted by size()), with the pool's
    /// endpoint, options and TLS context.
    [[nodiscard]] std::unique_ptr<Connection> make_connection() const;

private:
    void release(Connection* connection);

    Endpoint endpoint_;
    ConnectionOptions options_;
    const queen::Clock& clock_;
    std::shared_ptr<const detail::TlsContext> tls_context_;  // one for every connection
    std::size_t connections_max_;
    mutable std::mutex mutex_;
    std::condition_variable released_;
    std::vector<std::unique_ptr<Connection>> all_;
    std::vector<Connection*> idle_;
    bool is_aborted_ = false;
};

}  // namespace queen::client
