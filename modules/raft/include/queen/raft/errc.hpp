// queen/raft/errc.hpp — the raft module's error codes (a std::error_code enum).
#pragma once

#include <system_error>

namespace queen::raft {

/// Failure modes of the raft module. Operating errors only; misuse of the API asserts.
enum class Errc : int {
    ok = 0,
    not_leader,           ///< the call needs the leader; status().leader is a hint
    busy,                 ///< a bound was reached (uncommitted bytes, pending conf change, reads)
    transferring,         ///< a leadership transfer is in progress: proposals wait
    dropped,              ///< the node cannot take this now (e.g. no leader known)
    invalid_conf_change,  ///< the change does not apply to the current configuration
    compacted,            ///< the requested index is at or below the snapshot
    unavailable,          ///< the requested index is above the last index
    decode,               ///< a message or record did not decode (truncated, bad tag, bad length)
    unsupported_version,  ///< the version byte of a message or record is unknown
    too_large,            ///< a snapshot or message exceeds its configured maximum
};

/// The std::error_category of raft::Errc ("raft").
const std::error_category& error_category() noexcept;
inline std::error_code make_error_code(Errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

}  // namespace queen::raft

template <>
struct std::is_error_code_enum<queen::raft::Errc> : std::true_type {};
