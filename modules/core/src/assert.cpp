// modules/core/src/assert.cpp — assertion failure reporting and the overridable handler.
#include "queen/core/assert.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace queen {
namespace {
std::atomic<AssertHandler> installed_handler{nullptr};
}

AssertHandler set_assert_handler(AssertHandler handler) noexcept {
    return installed_handler.exchange(handler);
}

namespace detail {
void assertion_failed(const char* file, int line, const char* expression, std::string message) {
    const AssertionInfo info{file, line, expression, std::move(message)};
    if (AssertHandler handler = installed_handler.load()) {
        handler(info);  // may throw (tests)
    }
    std::fprintf(stderr, "queen: assertion failed at %s:%d: %s%s%s\n", info.file, info.line,
                 info.expression, info.message.empty() ? "" : ": ", info.message.c_str());
    std::fflush(stderr);
    std::abort();
}
}  // namespace detail
}  // namespace queen
