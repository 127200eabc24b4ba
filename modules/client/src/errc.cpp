// client/src/errc.cpp — client error categories.
#include "queen/client/errc.hpp"

#include "queen/core/error.hpp"

namespace queen::client {
namespace {
std::string_view describe(Errc e) noexcept {
    switch (e) {
        case Errc::ok: return "ok";
        case Errc::invalid_argument: return "invalid argument";
        case Errc::connect_failed: return "connect failed";
        case Errc::timeout: return "timeout";
        case Errc::connection_closed: return "connection closed";
        case Errc::bad_response: return "bad response";
        case Errc::rejected: return "rejected by the server";
        case Errc::busy: return "no free connection";
        case Errc::cancelled: return "cancelled";
        case Errc::conflict: return "conflict";
        case Errc::tls_failed: return "tls failed";
    }
    return {};
}

class HttpStatusCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "http"; }
    std::string message(int code) const override { return "HTTP " + std::to_string(code); }
};
}  // namespace

const std::error_category& error_category() noexcept {
    static const EnumErrorCategory<Errc, describe> category("queen.client",
                                                            "unknown client error ");
    return category;
}

const std::error_category& http_status_category() noexcept {
    static const HttpStatusCategory category;
    return category;
}

queen::Error make_http_error(int status, std::string message) {
    return queen::Error{std::error_code{status, http_status_category()}, std::move(message)};
}

int http_status_of(const queen::Error& error) noexcept {
    return error.code.category() == http_status_category() ? error.code.value() : 0;
}

bool is_retryable(const queen::Error& error) noexcept {
    if (const int status = http_status_of(error); status != 0) {
        return status >= 500;
    }
    return error.is(Errc::connect_failed) || error.is(Errc::timeout) ||
           error.is(Errc::connection_closed);
}

}  // namespace queen::client
