// queen/core/error.hpp — queen::Error and the core Errc; every module's Errc plugs into
// std::error_code.
#pragma once

#include <string>
#include <system_error>
#include <utility>

namespace queen {

/// Errors shared by every module (a module with its own failure modes adds its own Errc).
enum class Errc : int {
    ok = 0,
    invalid_argument,  ///< bad input from a caller: a 4xx at the edges
    not_found,
    already_exists,
    out_of_range,
    corruption,  ///< a checksum or structure check failed on data we wrote earlier
    io,          ///< an operating-system call failed; the context says which and why
    disk_full,   ///< ENOSPC
    poisoned,    ///< an earlier storage failure made this handle fail-stop
    busy,        ///< a bounded queue is full: back off and retry
    timeout,
    not_leader,
    unsupported,
    cancelled,
    internal,
};

const std::error_category& error_category() noexcept;
inline std::error_code make_error_code(Errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

/// An error code plus a human sentence saying where and why. Cheap to move.
struct Error {
    std::error_code code;
    std::string context;

    Error() = default;
    template <class E>
    requires std::is_error_code_enum_v<E> Error(E e, std::string context_text)
        : code(make_error_code(e)), context(std::move(context_text)) {}
    Error(std::error_code c, std::string context_text)
        : code(c), context(std::move(context_text)) {}

    /// "context: category message" — what users and logs see.
    [[nodiscard]] std::string message() const;
    template <class E>
    requires std::is_error_code_enum_v<E>
    [[nodiscard]] bool is(E e) const noexcept { return code == make_error_code(e); }
};

/// Builds an Error from errno (or an explicit errno value), mapping ENOSPC to Errc::disk_full.
Error errno_error(int errno_value, std::string context);

}  // namespace queen

template <>
struct std::is_error_code_enum<queen::Errc> : std::true_type {};
