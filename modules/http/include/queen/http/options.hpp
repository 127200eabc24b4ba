// queen/http/options.hpp — ServerOptions: every limit and timeout of the HTTP server, validated.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "queen/core/result.hpp"

namespace queen::http {

/// Cross-origin answers for web pages, granted per origin. A browser sends `Origin` with a
/// cross-origin request; only when that origin is listed does the server answer with
/// `Access-Control-Allow-Origin` (the origin echoed, or `*` when "*" is listed), -Methods and
/// -Headers, and answer an `OPTIONS` preflight with them plus -Max-Age. Other origins get none
/// of these, so a page they serve cannot read answers or send non-simple requests. Whenever the
/// list is not empty, every answer carries `Vary: Origin` (it depends on that header).
struct CorsOptions {
    /// Exact origins, "scheme://host[:port]" as browsers send them ("http://localhost:3000"),
    /// compared ASCII case-insensitively; "*" allows every origin. Empty (the default): no
    /// cross-origin access.
    std::vector<std::string> allowed_origins;
    std::string allow_methods = "GET, POST, PUT, DELETE, OPTIONS";
    std::string allow_headers =
        "Content-Type, Authorization, If-Match, If-None-Match, X-Queen-TTL-Ms, X-Queen-Tenant";
    std::uint32_t max_age_seconds = 86400;  ///< sent on preflight answers only

    /// The `Access-Control-Allow-Origin` value for a request whose `Origin` header is `origin`
    /// (nullopt: no such header): `origin` itself when listed, "*" when "*" is listed and the
    /// origin is not, else empty (no CORS headers). The view refers to `origin` or to a
    /// static string.
    [[nodiscard]] std::string_view allow_origin_for(
        std::optional<std::string_view> origin) const noexcept;
};

/// TLS on the listener (OpenSSL). Off while certificate_file is empty; then the port speaks plain
/// HTTP. On: every connection must complete a TLS handshake (TLS 1.2 or newer) within
/// header_read_timeout_ms before its first request is read. Server::reload_tls() reads the files
/// again (certificate renewal without a restart); connections already open keep the old ones.
struct TlsOptions {
    /// PEM: the server certificate first, then the intermediates that lead to the clients' CA.
    std::filesystem::path certificate_file;
    std::filesystem::path key_file;  ///< PEM private key of that certificate (unencrypted)
    /// PEM bundle of CAs: when set, a client must present a certificate signed by one of them
    /// (mutual TLS); the handshake fails otherwise. Empty: clients are not asked for one.
    std::filesystem::path client_ca_file;
    std::string min_version = "1.2";  ///< "1.2" or "1.3"

    [[nodiscard]] bool is_enabled() const noexcept { return !certificate_file.empty(); }
};

/// Options of one Server. Defaults suit a broker on a small machine.
struct ServerOptions {
    std::string bind_address = "127.0.0.1";  ///< an IPv4 or IPv6 literal (no host names)
    std::uint16_t port = 6632;     ///< 0 = ephemeral; Server::port() reports the bound one
    std::uint32_t io_threads = 2;  ///< threads, each running its own event loop
    std::uint32_t header_size_bytes_max = 16 * 1024;  ///< request line + headers; beyond -> 431
    std::uint32_t headers_count_max = 100;            ///< beyond -> 431
    std::uint64_t body_size_bytes_max = 16u << 20;    ///< decoded body; beyond -> 413
    std::uint32_t connections_max = 10'000;  ///< beyond: a 503 answer, then the socket is closed
    std::uint32_t keep_alive_idle_timeout_ms = 60'000;  ///< idle keep-alive connection is closed
    /// From the first byte of a request to the end of its headers; then 408 and close (slowloris).
    std::uint32_t header_read_timeout_ms = 10'000;
    /// Longest pause between two reads of one request body; then 408 and close.
    std::uint32_t body_read_timeout_ms = 30'000;
    /// From the first byte of a request to the last byte of its body, however steadily it
    /// trickles in; then 408 and close. (A 16 MiB body needs ~280 KB/s to arrive in time.)
    std::uint32_t request_read_timeout_ms = 60'000;
    /// After a response that closes the connection, unread input is drained this long so the
    /// peer sees the response rather than a reset.
    std::uint32_t close_linger_timeout_ms = 2'000;
    /// Requests of one connection whose responses are not yet written; reading pauses at it.
    std::uint32_t pipelined_requests_max = 16;
    std::uint32_t read_buffer_bytes = 16 * 1024;  ///< one socket read at most
    std::uint32_t listen_backlog = 1024;
    CorsOptions cors;
    TlsOptions tls;

    /// Checks ranges: io_threads in [1, 256], header_size_bytes_max in [256, 1 MiB],
    /// headers_count_max >= 1, body_size_bytes_max in [0, 4 GiB], connections_max >= 1, every
    /// timeout >= 1 ms, pipelined_requests_max in [1, 1024], read_buffer_bytes in [512, 1 MiB],
    /// listen_backlog >= 1, that bind_address is a numeric IP address, and that every entry of
    /// cors.allowed_origins is "*" or "scheme://host[:port]" (no path, no trailing '/'), and
    /// that tls names a key exactly when it names a certificate (client_ca_file only with them)
    /// and a min_version of "1.2" or "1.3". The TLS files are read by Server::start().
    /// Errors: Errc::invalid_argument naming the field and the value.
    [[nodiscard]] Status validate() const;
};

}  // namespace queen::http
