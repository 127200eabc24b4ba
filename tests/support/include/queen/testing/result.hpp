// queen/testing/result.hpp — a Result in a test: its value, or a test failure that shows the
// error message (and the other way round).
#pragma once

#include <utility>

#include "queen/core/result.hpp"
#include "queen/testing/catch.hpp"

namespace queen::testing {

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

}  // namespace queen::testing
