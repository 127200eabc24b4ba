// queen/core/assert.hpp — always-on assertions with context and a handler tests can override.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace queen {

/// What an assertion failure knows: where it happened, the expression and the message.
struct AssertionInfo {
    const char* file;
    int line;
    const char* expression;
    std::string message;
};

/// Called before abort() when an assertion fails. A handler may throw (tests do, to check that an
/// assertion fires); if it returns, the process aborts. Thread-safety: set once at start-up.
using AssertHandler = void (*)(const AssertionInfo&);
AssertHandler set_assert_handler(AssertHandler handler) noexcept;

namespace detail {
[[noreturn]] void assertion_failed(const char* file, int line, const char* expression,
                                   std::string message);
template <class... Args>
std::string assert_message(const Args&... args) {
    if constexpr (sizeof...(Args) == 0) {
        return {};
    } else {
        std::ostringstream out;
        (out << ... << args);
        return out.str();
    }
}
}  // namespace detail

}  // namespace queen

/// On in every build: a wrong broker is worse than a crashed one.
#define QUEEN_ASSERT(cond, ...)                                                              \
    do {                                                                                     \
        if (!(cond)) [[unlikely]] {                                                          \
            ::queen::detail::assertion_failed(__FILE__, __LINE__, #cond,                     \
                                              ::queen::detail::assert_message(__VA_ARGS__)); \
        }                                                                                    \
    } while (false)

/// Expensive checks (full scans): only in builds without NDEBUG.
#ifdef NDEBUG
#define QUEEN_DEBUG_ASSERT(cond, ...) \
    do {                              \
    } while (false)
#else
#define QUEEN_DEBUG_ASSERT(cond, ...) QUEEN_ASSERT(cond, __VA_ARGS__)
#endif

#define QUEEN_UNREACHABLE()                                              \
    ::queen::detail::assertion_failed(__FILE__, __LINE__, "unreachable", \
                                      "QUEEN_UNREACHABLE reached")
