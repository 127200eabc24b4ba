// modules/http/src/tls_context.hpp — the listener's TLS context (asio::ssl over OpenSSL), built
// from TlsOptions; private to the HTTP module.
#pragma once

#include <asio/ssl/context.hpp>
#include <cstdint>
#include <memory>

#include "queen/core/result.hpp"
#include "queen/http/options.hpp"

namespace queen::http::detail {

/// A server context with its certificate's expiry, shared by the connections made with it.
struct TlsContext {
    asio::ssl::context context{asio::ssl::context::tls_server};
    std::int64_t not_after_unix_seconds = 0;  ///< the server certificate's notAfter
};

/// Reads the certificate chain, key and client CAs of `options` (which must be enabled) into a
/// new context: TLS 1.2 or `min_version` at least, no compression or renegotiation, peer
/// certificates required when client_ca_file is set. Errors: Errc::invalid_argument naming the
/// setting, the file and OpenSSL's reason (unreadable, not PEM, key not matching the
/// certificate, certificate already expired).
[[nodiscard]] Result<std::shared_ptr<TlsContext>> make_tls_context(const TlsOptions& options);

}  // namespace queen::http::detail
