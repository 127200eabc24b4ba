// modules/http/src/options.cpp — ServerOptions::validate(), the CORS origin check, numeric IPs.
#include <arpa/inet.h>

#include "queen/http/address.hpp"
#include "queen/http/options.hpp"
#include "queen/http/request.hpp"

namespace queen::http {

bool is_numeric_address(const std::string& text) {
    unsigned char buffer[16];
    return inet_pton(AF_INET, text.c_str(), buffer) == 1 ||
           inet_pton(AF_INET6, text.c_str(), buffer) == 1;
}

bool is_loopback_address(const std::string& text) {
    in_addr v4{};
    in6_addr v6{};
    if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
        return (ntohl(v4.s_addr) >> 24) == 127;
    }
    return inet_pton(AF_INET6, text.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

namespace {

Status out_of_range(const char* field, std::uint64_t value, const char* range) {
    return Error{Errc::invalid_argument, std::string("http.") + field + " = " +
                                             std::to_string(value) + " (must be " + range + ")"};
}

/// "*", or "scheme://host[:port]": a scheme, "://", a non-empty host, no path, no spaces or
/// control characters (so the value can be written into a header as it is).
bool is_origin(std::string_view text) {
    if (text == "*") {
        return true;
    }
    for (const char c : text) {
        if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f || c == ',') {
            return false;
        }
    }
    const auto separator = text.find("://");
    if (separator == std::string_view::npos || separator == 0) {
        return false;
    }
    const std::string_view authority = text.substr(separator + 3);
    return !authority.empty() && authority.find('/') == std::string_view::npos;
}

}  // namespace

std::string_view CorsOptions::allow_origin_for(
    std::optional<std::string_view> origin) const noexcept {
    if (!origin || allowed_origins.empty()) {
        return {};
    }
    bool is_any_allowed = false;
    for (const std::string& allowed : allowed_origins) {
        if (allowed == "*") {
            is_any_allowed = true;
        } else if (iequals(allowed, *origin)) {
            return *origin;
        }
    }
    return is_any_allowed ? std::string_view("*") : std::string_view();
}

Status ServerOptions::validate() const {
    if (!is_numeric_address(bind_address)) {
        return Error{Errc::invalid_argument,
                     "http.address = '" + bind_address + "' (must be a numeric IP address)"};
    }
    for (const std::string& origin : cors.allowed_origins) {
        if (!is_origin(origin)) {
            return Error{Errc::invalid_argument,
                         "http.cors_allowed_origins: '" + origin +
                             "' is not \"*\" or an origin like \"http://localhost:3000\" "
                             "(scheme://host[:port], no path or trailing '/')"};
        }
    }
    if (tls.certificate_file.empty() != tls.key_file.empty()) {
        return Error{Errc::invalid_argument,
                     "http.tls_certificate_file and http.tls_key_file must be set together"};
    }
    if (!tls.client_ca_file.empty() && !tls.is_enabled()) {
        return Error{Errc::invalid_argument,
                     "http.tls_client_ca_file needs http.tls_certificate_file and "
                     "http.tls_key_file"};
    }
    if (tls.min_version != "1.2" && tls.min_version != "1.3") {
        return Error{Errc::invalid_argument, "http.tls_min_version = '" + tls.min_version +
                                                 "' (must be \"1.2\" or \"1.3\")"};
    }
    if (io_threads < 1 || io_threads > 256) {
        return out_of_range("io_threads", io_threads, "in [1, 256]");
    }
    if (header_size_bytes_max < 256 || header_size_bytes_max > (1u << 20)) {
        return out_of_range("header_size_bytes_max", header_size_bytes_max, "in [256, 1048576]");
    }
    if (headers_count_max < 1) {
        return out_of_range("headers_count_max", headers_count_max, ">= 1");
    }
    if (body_size_bytes_max > (std::uint64_t{1} << 32)) {
        return out_of_range("body_size_bytes_max", body_size_bytes_max, "<= 4294967296");
    }
    if (connections_max < 1) {
        return out_of_range("connections_max", connections_max, ">= 1");
    }
    if (keep_alive_idle_timeout_ms < 1) {
        return out_of_range("keep_alive_idle_timeout_ms", keep_alive_idle_timeout_ms, ">= 1");
    }
    if (header_read_timeout_ms < 1) {
        return out_of_range("header_read_timeout_ms", header_read_timeout_ms, ">= 1");
    }
    if (body_read_timeout_ms < 1) {
        return out_of_range("body_read_timeout_ms", body_read_timeout_ms, ">= 1");
    }
    if (request_read_timeout_ms < 1) {
        return out_of_range("request_read_timeout_ms", request_read_timeout_ms, ">= 1");
    }
    if (close_linger_timeout_ms < 1) {
        return out_of_range("close_linger_timeout_ms", close_linger_timeout_ms, ">= 1");
    }
    if (pipelined_requests_max < 1 || pipelined_requests_max > 1024) {
        return out_of_range("pipelined_requests_max", pipelined_requests_max, "in [1, 1024]");
    }
    if (read_buffer_bytes < 512 || read_buffer_bytes > (1u << 20)) {
        return out_of_range("read_buffer_bytes", read_buffer_bytes, "in [512, 1048576]");
    }
    if (listen_backlog < 1) {
        return out_of_range("listen_backlog", listen_backlog, ">= 1");
    }
    return {};
}

}  // namespace queen::http
