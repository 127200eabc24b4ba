// client/src/tls.hpp — TLS for both connection kinds over OpenSSL: a client context built once from
// TlsClientOptions, and a session over a connected non-blocking socket whose steps say what the
// socket must become (readable, writable) before the next try. Private to the client.
#pragma once

#include <openssl/types.h>

#include <cstddef>
#include <memory>
#include <string>

#include "queen/client/connection.hpp"
#include "queen/core/result.hpp"

namespace queen::client::detail {

/// An SSL_CTX for the client side: minimum TLS 1.2, the trusted CAs, the client certificate,
/// peer verification (unless disabled). Shared by the connections of a Connection, pool or
/// multiplexer (OpenSSL allows new sessions from many threads). Immutable once built.
class TlsContext {
public:
    /// Builds the context of `options`. Never null: a failure is kept in status().
    [[nodiscard]] static std::shared_ptr<const TlsContext> make(const TlsClientOptions& options);
    /// make(options.tls) for a TLS endpoint, null for plain HTTP.
    [[nodiscard]] static std::shared_ptr<const TlsContext> make_for(
        const Endpoint& endpoint, const ConnectionOptions& options);
    ~TlsContext();
    TlsContext(const TlsContext&) = delete;
    TlsContext& operator=(const TlsContext&) = delete;

    /// Ok, or why the context could not be built (Errc::tls_failed, naming the file and
    /// OpenSSL's reason): every connection that uses it fails with this error.
    [[nodiscard]] const queen::Status& status() const noexcept { return status_; }
    [[nodiscard]] const TlsClientOptions& options() const noexcept { return options_; }
    [[nodiscard]] SSL_CTX* native() const noexcept { return context_; }

private:
    explicit TlsContext(TlsClientOptions options) : options_(std::move(options)) {}
    queen::Status build();

    TlsClientOptions options_;
    SSL_CTX* context_ = nullptr;
    queen::Status status_;
};

/// A request body up to this size leaves with its head as one TLS record (one copy, one send);
/// larger ones are written from where they are.
inline constexpr std::size_t tls_coalesce_bytes_max = 16 * 1024;

/// What one session step did.
enum class TlsStep {
    done,        ///< the handshake finished, or `bytes` were read or written (> 0)
    want_read,   ///< try again once the socket is readable
    want_write,  ///< try again once the socket is writable
    closed,      ///< the server ended the stream (close_notify, or the TCP end without it)
    io_failed,   ///< the socket failed (reset, ...): error() holds errno's text
    failed,      ///< TLS failed (a certificate that did not verify, an alert): error() says why
};

struct TlsResult {
    TlsStep step = TlsStep::done;
    std::size_t bytes = 0;
};

/// One TLS connection over a socket it does not own. Steps never block: the socket is
/// non-blocking, and a want_read/want_write step is repeated with the same arguments once the
/// socket is ready. Writes go through send(MSG_NOSIGNAL): a closed peer never raises SIGPIPE.
class TlsSession {
public:
    TlsSession() = default;
    ~TlsSession();
    TlsSession(const TlsSession&) = delete;
    TlsSession& operator=(const TlsSession&) = delete;

    /// Starts a client session on the connected `fd` towards `endpoint`: SNI and the name or IP
    /// checked against the certificate (TlsClientOptions::server_name or the host). The
    /// handshake follows with handshake(). Closes an earlier session first.
    /// Errors: Errc::tls_failed (the context's own error, or OpenSSL could not set up).
    [[nodiscard]] queen::Status start(const TlsContext& context, int fd, const Endpoint& endpoint);
    /// One handshake step: done once it finished.
    [[nodiscard]] TlsResult handshake();
    /// Reads up to `size` decrypted bytes into `data`.
    [[nodiscard]] TlsResult read(char* data, std::size_t size);
    /// Writes up to `size` bytes of `data` (done: `bytes` of them went out, maybe fewer).
    [[nodiscard]] TlsResult write(const char* data, std::size_t size);
    /// Whether bytes that read() can return without the socket (or a partial record) are
    /// buffered: a reader must not wait for the socket before reading again.
    [[nodiscard]] bool has_pending() const noexcept;
    /// Why the last step was io_failed or failed.
    [[nodiscard]] const std::string& error() const noexcept { return error_; }
    [[nodiscard]] bool is_active() const noexcept { return ssl_ != nullptr; }
    /// Sends close_notify once without waiting (not after a failure), then frees the session.
    /// The caller closes the socket.
    void close() noexcept;

private:
    TlsResult outcome(int rc, std::size_t bytes);

    SSL* ssl_ = nullptr;
    bool is_broken_ = false;  // a fatal error: no close_notify
    std::string error_;
};

}  // namespace queen::client::detail
