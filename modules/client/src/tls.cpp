// client/src/tls.cpp — the client's TLS over OpenSSL 3: the context from TlsClientOptions, and
// sessions over non-blocking sockets through a BIO of our own (send with MSG_NOSIGNAL).
#include "tls.hpp"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "queen/client/errc.hpp"

namespace queen::client::detail {
namespace {

// The reasons in this thread's OpenSSL error queue, oldest first, which empties it.
std::string drain_errors(const char* fallback) {
    std::string text;
    while (const unsigned long code = ERR_get_error()) {
        char buffer[256];
        const char* reason = ERR_reason_error_string(code);
        if (reason == nullptr) {
            ERR_error_string_n(code, buffer, sizeof buffer);
            reason = buffer;
        }
        if (text.find(reason) == std::string::npos) {
            text.append(text.empty() ? "" : ": ").append(reason);
        }
    }
    return text.empty() ? fallback : text;
}

queen::Error tls_error(const std::string& why) {
    return queen::Error{Errc::tls_failed, "tls: " + why};
}

// A file OpenSSL is about to read: a missing or unreadable one is named with errno's text
// (OpenSSL's own reason for it is less clear).
queen::Status check_readable(const char* what, const std::string& path) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) {
        return tls_error(std::string{what} + " '" + path + "': " + std::strerror(errno));
    }
    std::fclose(file);
    return {};
}

bool is_ip_literal(const std::string& host) {
    in6_addr address{};
    return ::inet_pton(AF_INET, host.c_str(), &address) == 1 ||
           ::inet_pton(AF_INET6, host.c_str(), &address) == 1;
}

// ---- the socket BIO: OpenSSL's own writes with write(), which raises SIGPIPE on a closed peer

int socket_of(BIO* bio) {
    return static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(bio)));
}

int bio_write(BIO* bio, const char* data, int length) {
    BIO_clear_retry_flags(bio);
    for (;;) {
        const ssize_t sent =
            ::send(socket_of(bio), data, static_cast<std::size_t>(length), MSG_NOSIGNAL);
        if (sent >= 0) {
            return static_cast<int>(sent);
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            BIO_set_retry_write(bio);
        }
        return -1;
    }
}

int bio_read(BIO* bio, char* data, int length) {
    BIO_clear_retry_flags(bio);
    for (;;) {
        const ssize_t received = ::recv(socket_of(bio), data, static_cast<std::size_t>(length), 0);
        if (received >= 0) {
            return static_cast<int>(received);
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            BIO_set_retry_read(bio);
        }
        return -1;
    }
}

long bio_ctrl(BIO* bio, int command, long /*number*/, void* pointer) {
    switch (command) {
        case BIO_CTRL_FLUSH: return 1;  // nothing is buffered here
        case BIO_C_GET_FD:
            if (pointer != nullptr) {
                *static_cast<int*>(pointer) = socket_of(bio);
            }
            return socket_of(bio);
        default: return 0;
    }
}

int bio_create(BIO* bio) {
    BIO_set_init(bio, 1);
    return 1;
}

struct MethodFree {
    void operator()(BIO_METHOD* method) const noexcept { BIO_meth_free(method); }
};

const BIO_METHOD* socket_method() {
    static const std::unique_ptr<BIO_METHOD, MethodFree> method = [] {
        BIO_METHOD* made = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "queen socket");
        if (made != nullptr) {
            BIO_meth_set_write(made, bio_write);
            BIO_meth_set_read(made, bio_read);
            BIO_meth_set_ctrl(made, bio_ctrl);
            BIO_meth_set_create(made, bio_create);
        }
        return std::unique_ptr<BIO_METHOD, MethodFree>{made};
    }();
    return method.get();
}

}  // namespace

// ---- TlsContext

std::shared_ptr<const TlsContext> TlsContext::make(const TlsClientOptions& options) {
    // The constructor is private: make() is the only way to build one.
    std::shared_ptr<TlsContext> context{new TlsContext{options}};
    context->status_ = context->build();
    ERR_clear_error();
    return context;
}

std::shared_ptr<const TlsContext> TlsContext::make_for(const Endpoint& endpoint,
                                                       const ConnectionOptions& options) {
    return endpoint.is_tls ? make(options.tls) : nullptr;
}

TlsContext::~TlsContext() {
    SSL_CTX_free(context_);
}

queen::Status TlsContext::build() {
    ERR_clear_error();
    context_ = SSL_CTX_new(TLS_client_method());
    if (context_ == nullptr) {
        return tls_error(drain_errors("SSL_CTX_new failed"));
    }
    if (SSL_CTX_set_min_proto_version(context_, TLS1_2_VERSION) != 1) {
        return tls_error("TLS 1.2: " + drain_errors("not available"));
    }
    // Writes may take part of a buffer, and be repeated from a buffer that moved (a string
    // that grew). An end of stream without close_notify is an end of stream: HTTP's own
    // framing tells a cut answer from a whole one.
    SSL_CTX_set_mode(context_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(context_, SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (options_.is_verify_disabled) {
        SSL_CTX_set_verify(context_, SSL_VERIFY_NONE, nullptr);
    } else {
        SSL_CTX_set_verify(context_, SSL_VERIFY_PEER, nullptr);
        if (options_.ca_file.empty()) {
            if (SSL_CTX_set_default_verify_paths(context_) != 1) {
                return tls_error("the default trust store: " + drain_errors("does not load"));
            }
        } else {
            QUEEN_TRY(check_readable("ca_file", options_.ca_file));
            if (SSL_CTX_load_verify_locations(context_, options_.ca_file.c_str(), nullptr) != 1) {
                return tls_error("ca_file '" + options_.ca_file +
                                 "': " + drain_errors("no certificate loaded"));
            }
        }
    }
    const std::string& certificate = options_.certificate_file;
    const std::string& key = options_.key_file;
    if (certificate.empty() != key.empty()) {
        return tls_error("certificate_file and key_file go together: give both or neither");
    }
    if (!certificate.empty()) {
        QUEEN_TRY(check_readable("certificate_file", certificate));
        QUEEN_TRY(check_readable("key_file", key));
        if (SSL_CTX_use_certificate_chain_file(context_, certificate.c_str()) != 1) {
            return tls_error("certificate_file '" + certificate +
                             "': " + drain_errors("no certificate loaded"));
        }
        const std::string mismatch =
            "key_file '" + key + "' does not match certificate_file '" + certificate + "'";
        if (SSL_CTX_use_PrivateKey_file(context_, key.c_str(), SSL_FILETYPE_PEM) != 1) {
            const std::string why = drain_errors("no key loaded");
            return tls_error(why.find("mismatch") != std::string::npos
                                 ? mismatch
                                 : "key_file '" + key + "': " + why);
        }
        if (SSL_CTX_check_private_key(context_) != 1) {
            return tls_error(mismatch);
        }
    }
    return {};
}

// ---- TlsSession

TlsSession::~TlsSession() {
    close();
}

queen::Status TlsSession::start(const TlsContext& context, int fd, const Endpoint& endpoint) {
    close();
    if (!context.status()) {
        return context.status().error();
    }
    ERR_clear_error();
    const BIO_METHOD* method = socket_method();
    BIO* bio = method == nullptr ? nullptr : BIO_new(method);
    ssl_ = bio == nullptr ? nullptr : SSL_new(context.native());
    if (ssl_ == nullptr) {
        BIO_free(bio);
        return tls_error(drain_errors("SSL_new failed"));
    }
    BIO_set_data(bio, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)));
    SSL_set_bio(ssl_, bio, bio);  // the session owns the BIO now
    const TlsClientOptions& options = context.options();
    const std::string& name = options.server_name.empty() ? endpoint.host : options.server_name;
    const bool is_ip = is_ip_literal(name);
    bool is_set = true;
    if (!options.is_verify_disabled) {
        if (is_ip) {
            is_set = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), name.c_str()) == 1;
        } else {
            SSL_set_hostflags(ssl_, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            is_set = SSL_set1_host(ssl_, name.c_str()) == 1;
        }
    }
    if (is_set && !is_ip) {
        // SNI names a host; RFC 6066 forbids IP literals in it.
        is_set = SSL_ctrl(ssl_, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                          const_cast<char*>(name.c_str())) == 1;
    }
    if (!is_set) {
        const std::string why = drain_errors("rejected");
        close();
        return tls_error("server name '" + name + "': " + why);
    }
    SSL_set_connect_state(ssl_);
    return {};
}

TlsResult TlsSession::outcome(int rc, std::size_t bytes) {
    const int saved_errno = errno;
    if (rc == 1) {
        return {TlsStep::done, bytes};
    }
    const int kind = SSL_get_error(ssl_, rc);
    switch (kind) {
        case SSL_ERROR_WANT_READ: return {TlsStep::want_read, 0};
        case SSL_ERROR_WANT_WRITE: return {TlsStep::want_write, 0};
        case SSL_ERROR_ZERO_RETURN: return {TlsStep::closed, 0};
        case SSL_ERROR_SYSCALL:
            is_broken_ = true;
            if (ERR_peek_error() != 0) {
                error_ = drain_errors("tls error");
                return {TlsStep::failed, 0};
            }
            if (saved_errno == 0) {
                return {TlsStep::closed, 0};  // the TCP end, without close_notify
            }
            error_ = std::strerror(saved_errno);
            return {TlsStep::io_failed, 0};
        case SSL_ERROR_SSL: {
            is_broken_ = true;
            error_ = drain_errors("tls protocol error");
            // "certificate verify failed" says nothing more: add the verifier's reason.
            const long verified = SSL_get_verify_result(ssl_);
            if (verified != X509_V_OK && error_.find("verify failed") != std::string::npos) {
                error_.append(": ").append(X509_verify_cert_error_string(verified));
            }
            return {TlsStep::failed, 0};
        }
        default:
            is_broken_ = true;
            error_ = "unexpected OpenSSL state " + std::to_string(kind);
            ERR_clear_error();
            return {TlsStep::failed, 0};
    }
}

TlsResult TlsSession::handshake() {
    ERR_clear_error();
    errno = 0;
    const int rc = SSL_do_handshake(ssl_);
    return outcome(rc, 0);
}

TlsResult TlsSession::read(char* data, std::size_t size) {
    ERR_clear_error();
    errno = 0;
    std::size_t bytes = 0;
    const int rc = SSL_read_ex(ssl_, data, size, &bytes);
    return outcome(rc, bytes);
}

TlsResult TlsSession::write(const char* data, std::size_t size) {
    ERR_clear_error();
    errno = 0;
    std::size_t bytes = 0;
    const int rc = SSL_write_ex(ssl_, data, size, &bytes);
    return outcome(rc, bytes);
}

bool TlsSession::has_pending() const noexcept {
    return ssl_ != nullptr && SSL_has_pending(ssl_) == 1;
}

void TlsSession::close() noexcept {
    if (ssl_ == nullptr) {
        return;
    }
    if (!is_broken_ && SSL_is_init_finished(ssl_) == 1) {
        // Best effort and once: our close_notify, without waiting for the server's.
        ERR_clear_error();
        [[maybe_unused]] const int rc = SSL_shutdown(ssl_);
    }
    ERR_clear_error();
    SSL_free(ssl_);
    ssl_ = nullptr;
    is_broken_ = false;
    error_.clear();
}

}  // namespace queen::client::detail
