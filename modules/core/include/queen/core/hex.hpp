// core/hex.hpp — hex digits: lowercase ones written two at a time (ids and UUIDs formatted in
// place), and the one reader of hex digits (either case) everyone uses.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

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

namespace detail {
/// The value of each byte as a hex digit; 0xff for every other byte (uppercase digits too unless
/// `with_upper`).
constexpr std::array<std::uint8_t, 256> make_hex_values(bool with_upper) {
    std::array<std::uint8_t, 256> values{};
    values.fill(0xff);
    for (std::uint8_t i = 0; i < 10; ++i) {
        values['0' + i] = i;
    }
    for (std::uint8_t i = 0; i < 6; ++i) {
        values['a' + i] = static_cast<std::uint8_t>(10 + i);
        if (with_upper) {
            values['A' + i] = static_cast<std::uint8_t>(10 + i);
        }
    }
    return values;
}
}  // namespace detail

/// The value of each byte as a hex digit ('0'-'9', 'a'-'f', 'A'-'F'); 0xff for every other byte
/// (so OR-ing the values of many digits and testing the high bits finds any non-digit at once).
inline constexpr std::array<std::uint8_t, 256> hex_values = detail::make_hex_values(true);
/// The same for lowercase digits only ('A'-'F' are 0xff): canonical UUID text.
inline constexpr std::array<std::uint8_t, 256> lower_hex_values = detail::make_hex_values(false);

/// The value of hex digit `c` (either case), or -1 when `c` is not one.
[[nodiscard]] constexpr int hex_value(char c) noexcept {
    const std::uint8_t value = hex_values[static_cast<unsigned char>(c)];
    return value == 0xff ? -1 : value;
}

/// Decodes `hex` (2 digits a byte, either case) into `out`, which must hold hex.size() / 2
/// bytes. False, with `out` unspecified, when the sizes do not match or a digit is not hex.
[[nodiscard]] constexpr bool decode_hex(std::string_view hex,
                                        std::span<std::uint8_t> out) noexcept {
    if (hex.size() != 2 * out.size()) {
        return false;
    }
    std::uint8_t invalid = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const std::uint8_t high = hex_values[static_cast<unsigned char>(hex[2 * i])];
        const std::uint8_t low = hex_values[static_cast<unsigned char>(hex[2 * i + 1])];
        invalid |= high | low;
        out[i] = static_cast<std::uint8_t>((high << 4) | (low & 0xf));
    }
    return (invalid & 0xf0) == 0;
}

}  // namespace queen
