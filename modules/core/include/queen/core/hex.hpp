// core/hex.hpp — lowercase hex digits written two at a time (ids and UUIDs formatted in place).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace queen {

/// "00" .. "ff": the two lowercase hex digits of each byte value, at [2 * byte, 2 * byte + 2).
inline constexpr std::array<char, 512> hex_pairs = [] {
    constexpr char digits[] = "0123456789abcdef";
    std::array<char, 512> pairs{};
    for (std::size_t byte = 0; byte < 256; ++byte) {
        pairs[2 * byte] = digits[byte >> 4];
        pairs[2 * byte + 1] = digits[byte & 0xf];
    }
    return pairs;
}();

/// Writes the `bytes` low-order bytes of `value` (at most 8) as 2 * `bytes` lowercase hex digits
/// at `at`, most significant first.
inline void put_hex(char* at, std::uint64_t value, std::size_t bytes) noexcept {
    for (std::size_t i = bytes; i > 0; --i) {
        const std::size_t pair = 2 * ((value >> (8 * (i - 1))) & 0xff);
        *at++ = hex_pairs[pair];
        *at++ = hex_pairs[pair + 1];
    }
}

}  // namespace queen
