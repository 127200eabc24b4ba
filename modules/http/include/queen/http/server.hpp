// queen/http/server.hpp — the HTTP/1.1 server: listener, I/O threads, connections, limits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"
#include "queen/http/options.hpp"
#include "queen/http/router.hpp"

namespace queen::http {

/// Counters since start, read with Server::metrics() (Prometheus formatting lives elsewhere).
struct ServerMetrics {
    std::uint64_t requests_total = 0;       ///< requests parsed and answered or being answered
    std::uint64_t responses_1xx_total = 0;  ///< final responses by class (100-continue excluded)
    std::uint64_t responses_2xx_total = 0;
    std::uint64_t responses_3xx_total = 0;
    std::uint64_t responses_4xx_total = 0;
    std::uint64_t responses_5xx_total = 0;
    std::uint64_t connections_open = 0;  ///< gauge
    std::uint64_t connections_accepted_total = 0;
    std::uint64_t connections_rejected_total = 0;  ///< over connections_max
    std::uint64_t bad_requests_total = 0;          ///< malformed or over a limit (closed after)
    std::uint64_t timeouts_total = 0;              ///< header, body or idle timeouts that closed
    std::uint64_t requests_cancelled_total = 0;    ///< client left before the answer
    std::uint64_t handler_exceptions_total = 0;
    std::uint64_t bytes_in_total = 0;
    std::uint64_t bytes_out_total = 0;
    std::uint64_t tls_handshakes_total = 0;          ///< completed TLS handshakes
    std::uint64_t tls_handshake_failures_total = 0;  ///< failed or timed out (connection closed)
    /// The notAfter of the certificate new connections get, in unix seconds; 0 when TLS is off.
    std::int64_t tls_certificate_not_after_seconds = 0;
};

/// A running HTTP/1.1 server. Each I/O thread runs its own event loop; a connection lives on
/// one of them for its whole life, so a handler and the I/O of its connection share a thread.
///
/// Per connection: keep-alive, pipelining (answers leave in request order whatever order the
/// handlers complete in; at most pipelined_requests_max in flight), HTTP/1.0 and
/// `Connection: close`, chunked request bodies, `Expect: 100-continue`, HEAD. Malformed input
/// gets a 400 JSON error and the connection closes; over-limit headers 431, bodies 413 (sent
/// before reading the body when Content-Length announces it). Bad percent-encoding in the
/// target answers 400 and keeps the connection. OPTIONS requests are answered by the server
/// (204; with the CORS preflight headers when the request's Origin is in
/// cors.allowed_origins) and never reach the handler.
///
/// With options.tls enabled the listener speaks HTTPS only: each connection first completes a TLS
/// handshake (within header_read_timeout_ms); a plain HTTP request gets a plain 400 saying so.
///
/// Thread-safety: metrics(), port(), address() and reload_tls() may be called from any thread;
/// stop() from any thread except an I/O thread of this server (i.e. not from a handler).
class Server {
public:
    /// Validates `options`, binds and listens, and starts the I/O threads. `logger` must
    /// outlive the server. Errors: Errc::invalid_argument (options, or TLS files
    /// that cannot be read or do not match), Errc::io (bind/listen
    /// failed, e.g. the port is in use; the context names the address).
    [[nodiscard]] static Result<std::unique_ptr<Server>> start(const ServerOptions& options,
                                                               Handler handler, Logger& logger);

    /// Stops accepting, closes every connection (cancelling parked requests: their on_cancel
    /// callbacks run), and joins the I/O threads. Idempotent. Responders completed afterwards
    /// are ignored.
    void stop();
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    /// Reads options.tls's files again; new connections get the new certificate, open ones
    /// keep theirs. On failure the previous certificate stays in use (and the error is logged).
    /// Does nothing when TLS is off. Thread-safe. Errors: as Server::start() for the files.
    [[nodiscard]] Status reload_tls();
    /// Whether the listener speaks TLS.
    [[nodiscard]] bool is_tls() const noexcept;

    /// The bound port (the real one when options.port was 0).
    [[nodiscard]] std::uint16_t port() const noexcept;
    /// The bound address ("127.0.0.1").
    [[nodiscard]] const std::string& address() const noexcept;
    /// A snapshot of the counters (each read atomically; not a consistent cut across them).
    [[nodiscard]] ServerMetrics metrics() const noexcept;

private:
    struct Impl;
    explicit Server(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

}  // namespace queen::http
