// queen/core/error.hpp — queen::Error and the core Errc; every module's Errc plugs into
// std::error_code.
#pragma once

#include <string>
#include <string_view>
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

/// The std::error_category of an Errc enum `E`: a name, and for each code the text `describe`
/// gives (an empty view for a value the enum does not name: `unknown` followed by the number).
/// A module defines `describe` and one static instance:
///
///     std::string_view describe(Errc e) noexcept { switch (e) { ... } return {}; }
///     const std::error_category& error_category() noexcept {
///         static const EnumErrorCategory<Errc, describe> category("raft", "unknown raft error ");
///         return category;
///     }
template <class E, std::string_view (*describe)(E) noexcept>
class EnumErrorCategory final : public std::error_category {
public:
    constexpr EnumErrorCategory(const char* name, const char* unknown) noexcept
        : name_(name), unknown_(unknown) {}
    [[nodiscard]] const char* name() const noexcept override { return name_; }
    [[nodiscard]] std::string message(int code) const override {
        const std::string_view text = describe(static_cast<E>(code));
        return text.empty() ? unknown_ + std::to_string(code) : std::string(text);
    }

private:
    const char* name_;
    const char* unknown_;
};

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
