// modules/net/src/errc.cpp — the "queen.net" error category.
#include "queen/net/errc.hpp"

#include "queen/core/error.hpp"

namespace queen::net {

namespace {

std::string_view describe(Errc e) noexcept {
    switch (e) {
        case Errc::ok: return "ok";
        case Errc::bad_frame: return "bad peer frame";
        case Errc::bad_message: return "bad peer handshake message";
        case Errc::unsupported_version: return "unsupported peer protocol version";
        case Errc::other_cluster: return "peer of another cluster";
        case Errc::unauthenticated: return "peer failed authentication";
        case Errc::refused: return "refused by the peer";
    }
    return {};
}

}  // namespace

const std::error_category& error_category() noexcept {
    static const EnumErrorCategory<Errc, describe> category("queen.net", "unknown net error ");
    return category;
}

}  // namespace queen::net
