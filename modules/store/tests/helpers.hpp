// modules/store/tests/helpers.hpp — small helpers shared by the store tests.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"
#include "queen/testing/catch.hpp"

namespace queen::store::test {

/// The value of a Result, or a test failure that shows the error message.
template <class T>
T must(queen::Result<T> result) {
    if (!result) {
        FAIL("unexpected error: " << result.error().message());
    }
    return std::move(result).value();
}
inline void must(queen::Result<void> result) {
    if (!result) {
        FAIL("unexpected error: " << result.error().message());
    }
}

/// The error of a Result that must have failed.
template <class T>
queen::Error must_fail(queen::Result<T> result) {
    if (result.has_value()) {
        FAIL("expected an error, got a value");
    }
    return std::move(result).error();
}

inline ByteSpan bytes(std::string_view text) noexcept {
    return as_bytes(text);
}
inline std::string text(ByteSpan span) {
    return std::string(as_chars(span));
}

}  // namespace queen::store::test
