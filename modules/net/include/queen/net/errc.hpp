// queen/net/errc.hpp — net::Errc: why a peer frame or a peer handshake was refused.
#pragma once

#include <system_error>

namespace queen::net {

/// Errors of the net module. The Error context says which frame or peer and what was wrong.
enum class Errc : int {
    ok = 0,
    bad_frame,            ///< a frame's length exceeds the limit or its CRC does not match
    bad_message,          ///< a handshake message does not decode (truncated, trailing bytes)
    unsupported_version,  ///< the peer speaks another version of the peer protocol
    other_cluster,        ///< the peer belongs to another cluster (its cluster id differs)
    unauthenticated,      ///< the peer's proof does not match the cluster secret
    refused,              ///< the peer refused us (its reason is in the context)
};

/// The "queen.net" category (message() gives a short English phrase per Errc).
const std::error_category& error_category() noexcept;
inline std::error_code make_error_code(Errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

}  // namespace queen::net

template <>
struct std::is_error_code_enum<queen::net::Errc> : std::true_type {};
