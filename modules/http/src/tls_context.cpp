// modules/http/src/tls_context.cpp — make_tls_context(): files -> asio::ssl::context.
#include "tls_context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>

namespace queen::http::detail {
namespace {

/// OpenSSL's reasons for the last failure, oldest (most specific) first, and the queue cleared;
/// `fallback` when it has none.
std::string openssl_reason(const std::string& fallback) {
    std::string reason;
    while (const unsigned long code = ERR_get_error()) {
        const char* text = ERR_reason_error_string(code);
        if (text != nullptr && reason.find(text) == std::string::npos) {
            reason += reason.empty() ? "" : "; ";
            reason += text;
        }
    }
    return reason.empty() ? fallback : reason;
}

Error bad_file(const char* setting, const std::filesystem::path& path, const std::string& why) {
    return Error{Errc::invalid_argument,
                 std::string("http.") + setting + " '" + path.string() + "': " + why};
}

/// A missing or unreadable file is named as such (OpenSSL's reason for it is obscure).
Status check_readable(const char* setting, const std::filesystem::path& path) {
    std::ifstream file(path);
    if (!file) {
        return bad_file(setting, path, std::strerror(errno));
    }
    return {};
}

std::int64_t not_after_of(SSL_CTX* context) {
    X509* certificate = SSL_CTX_get0_certificate(context);
    if (certificate == nullptr) {
        return 0;
    }
    std::tm parts{};
    if (ASN1_TIME_to_tm(X509_get0_notAfter(certificate), &parts) != 1) {
        return 0;
    }
    return static_cast<std::int64_t>(timegm(&parts));
}

}  // namespace

Result<std::shared_ptr<TlsContext>> make_tls_context(const TlsOptions& options) {
    ERR_clear_error();
    auto tls = std::make_shared<TlsContext>();
    asio::ssl::context& context = tls->context;
    SSL_CTX* native = context.native_handle();
    context.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                        asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                        asio::ssl::context::no_tlsv1_1 | asio::ssl::context::no_compression |
                        asio::ssl::context::single_dh_use);
    SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_min_proto_version(native,
                                  options.min_version == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION);
    // Write buffers move: asio may hand a larger buffer on a retried partial write.
    SSL_CTX_set_mode(native, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);

    QUEEN_TRY(check_readable("tls_certificate_file", options.certificate_file));
    QUEEN_TRY(check_readable("tls_key_file", options.key_file));
    asio::error_code ec;
    context.use_certificate_chain_file(options.certificate_file.string(), ec);
    if (ec) {
        return bad_file("tls_certificate_file", options.certificate_file,
                        openssl_reason(ec.message()) +
                            " (want PEM: the certificate, then its "
                            "intermediates)");
    }
    context.use_private_key_file(options.key_file.string(), asio::ssl::context::pem, ec);
    if (ec) {
        const std::string reason = openssl_reason(ec.message());
        if (reason.find("key values mismatch") != std::string::npos) {
            return bad_file(
                "tls_key_file", options.key_file,
                "does not match the certificate in " + options.certificate_file.string());
        }
        return bad_file("tls_key_file", options.key_file,
                        reason + " (want an unencrypted PEM private key)");
    }
    if (SSL_CTX_check_private_key(native) != 1) {
        return bad_file("tls_key_file", options.key_file,
                        "does not match the certificate in " + options.certificate_file.string());
    }
    tls->not_after_unix_seconds = not_after_of(native);
    if (tls->not_after_unix_seconds != 0 &&
        tls->not_after_unix_seconds < static_cast<std::int64_t>(std::time(nullptr))) {
        return bad_file("tls_certificate_file", options.certificate_file,
                        "the certificate has expired (notAfter " +
                            std::to_string(tls->not_after_unix_seconds) + " unix seconds)");
    }
    if (!options.client_ca_file.empty()) {
        QUEEN_TRY(check_readable("tls_client_ca_file", options.client_ca_file));
        context.load_verify_file(options.client_ca_file.string(), ec);
        if (ec) {
            return bad_file("tls_client_ca_file", options.client_ca_file,
                            openssl_reason(ec.message()));
        }
        STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options.client_ca_file.c_str());
        if (names == nullptr) {
            return bad_file("tls_client_ca_file", options.client_ca_file,
                            openssl_reason("no CA certificate in it"));
        }
        SSL_CTX_set_client_CA_list(native, names);  // takes ownership
        context.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
        // Session resumption with client certificates needs a context id.
        static constexpr unsigned char session_context[] = "queen-http";
        SSL_CTX_set_session_id_context(native, session_context, sizeof(session_context) - 1);
    }
    return tls;
}

}  // namespace queen::http::detail
