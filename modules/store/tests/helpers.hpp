// modules/store/tests/helpers.hpp — small helpers shared by the store tests.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/result.hpp"

namespace queen::store::test {

using queen::testing::must;
using queen::testing::must_fail;

inline ByteSpan bytes(std::string_view text) noexcept {
    return as_bytes(text);
}
inline std::string text(ByteSpan span) {
    return std::string(as_chars(span));
}

}  // namespace queen::store::test
