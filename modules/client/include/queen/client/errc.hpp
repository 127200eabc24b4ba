// queen/client/errc.hpp — the client's error codes, and HTTP statuses carried as error codes.
#pragma once

#include <string>
#include <system_error>

#include "queen/core/error.hpp"

namespace queen::client {

/// Failure modes of the client. HTTP error statuses are not listed here: they travel as codes of
/// http_status_category() whose value is the status (see http_status_of()).
enum class Errc : int {
    ok = 0,
    invalid_argument,   ///< the request could not be built (bad payload JSON, bad URL, ...)
    connect_failed,     ///< name resolution, TCP connect, or the server closed during TLS setup
    timeout,            ///< connect or request deadline passed
    connection_closed,  ///< the peer closed or reset the connection before a full response
    bad_response,       ///< the response was not valid HTTP, or its JSON had an unexpected shape
    rejected,           ///< a 2xx answer that says the operation failed (transaction, seek, ...)
    busy,               ///< the connection pool is exhausted and the wait for one timed out
    cancelled,          ///< the connection was aborted (Connection::abort, Consumer::stop)
    /// HTTP 409 from the KV, lock, timer and transaction calls: a version that did not match, a
    /// lock held by another owner or a stale fencing token, a timer id that exists. The context
    /// says which, with the server's details (current version, owner, expiry).
    conflict,
    /// TLS could not be set up: a CA, certificate or key file that does not load, a handshake
    /// that failed (the server's certificate did not verify or name the host, no common
    /// protocol), or a TLS alert from the server (a client certificate it required). Not
    /// retryable: the same connection attempt fails the same way.
    tls_failed,
};

const std::error_category& error_category() noexcept;
inline std::error_code make_error_code(Errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

/// The category of HTTP error statuses: the code's value is the status (400, 404, 500, ...).
const std::error_category& http_status_category() noexcept;

/// An Error for an HTTP error answer. `message` is the server's {"error": ...} text when it sent
/// one, else "HTTP <status>".
queen::Error make_http_error(int status, std::string message);

/// The HTTP status of an error built by make_http_error(), or 0 for any other error.
int http_status_of(const queen::Error& error) noexcept;

/// True for errors worth retrying: network failures, timeouts and 5xx statuses (never 4xx).
bool is_retryable(const queen::Error& error) noexcept;

}  // namespace queen::client

template <>
struct std::is_error_code_enum<queen::client::Errc> : std::true_type {};
