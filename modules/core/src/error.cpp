// modules/core/src/error.cpp — the core error category and errno mapping.
#include "queen/core/error.hpp"

#include <cerrno>
#include <cstring>

namespace queen {
namespace {
std::string_view describe(Errc e) noexcept {
    switch (e) {
        case Errc::ok: return "ok";
        case Errc::invalid_argument: return "invalid argument";
        case Errc::not_found: return "not found";
        case Errc::already_exists: return "already exists";
        case Errc::out_of_range: return "out of range";
        case Errc::corruption: return "corruption";
        case Errc::io: return "i/o error";
        case Errc::disk_full: return "disk full";
        case Errc::poisoned: return "poisoned by an earlier storage failure";
        case Errc::busy: return "busy";
        case Errc::timeout: return "timeout";
        case Errc::not_leader: return "not leader";
        case Errc::unsupported: return "unsupported";
        case Errc::cancelled: return "cancelled";
        case Errc::internal: return "internal error";
    }
    return {};
}
}  // namespace

const std::error_category& error_category() noexcept {
    static const EnumErrorCategory<Errc, describe> category("queen", "unknown error ");
    return category;
}

std::string Error::message() const {
    if (context.empty()) {
        return code.message();
    }
    return context + ": " + code.message();
}

Error errno_error(int errno_value, std::string context) {
    char buffer[256];
    // GNU strerror_r returns the message pointer (which may or may not be `buffer`).
    const char* text = strerror_r(errno_value, buffer, sizeof buffer);
    context += " (";
    context += text;
    context += ")";
    if (errno_value == ENOSPC || errno_value == EDQUOT) {
        return Error{Errc::disk_full, std::move(context)};
    }
    return Error{Errc::io, std::move(context)};
}

}  // namespace queen
