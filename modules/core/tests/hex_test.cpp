// modules/core/tests/hex_test.cpp — the one hex reader (digits of either case) and put_hex.
#include "queen/core/hex.hpp"

#include <array>
#include <cctype>
#include <string>

#include "queen/testing/catch.hpp"

TEST_CASE("core: hex_value reads digits of either case and refuses everything else",
          "[core][hex]") {
    const std::string digits = "0123456789abcdef";
    for (std::size_t i = 0; i < digits.size(); ++i) {
        CHECK(queen::hex_value(digits[i]) == static_cast<int>(i));
        const char upper = static_cast<char>(std::toupper(static_cast<unsigned char>(digits[i])));
        CHECK(queen::hex_value(upper) == static_cast<int>(i));
    }
    int refused = 0;
    for (int c = 0; c < 256; ++c) {
        refused += queen::hex_value(static_cast<char>(c)) < 0 ? 1 : 0;
    }
    CHECK(refused == 256 - 22);
    static_assert(queen::hex_value('F') == 15 && queen::hex_value('g') == -1);
}

TEST_CASE("core: decode_hex decodes pairs of digits and rejects bad digits or sizes",
          "[core][hex]") {
    std::array<std::uint8_t, 4> out{};
    REQUIRE(queen::decode_hex("00fFa57e", out));
    CHECK(out == std::array<std::uint8_t, 4>{0x00, 0xff, 0xa5, 0x7e});
    CHECK_FALSE(queen::decode_hex("00ffa57", out));     // odd size
    CHECK_FALSE(queen::decode_hex("00ffa57e00", out));  // too long for out
    CHECK_FALSE(queen::decode_hex("00ffa5 e", out));
    CHECK_FALSE(queen::decode_hex("g0ffa57e", out));
    CHECK(queen::decode_hex("", std::span<std::uint8_t>{}));
}

TEST_CASE("core: put_hex writes what decode_hex reads back", "[core][hex]") {
    std::array<char, 16> text{};
    queen::put_hex(text.data(), 0x0123456789abcdefULL, 8);
    CHECK(std::string(text.data(), text.size()) == "0123456789abcdef");
    std::array<std::uint8_t, 8> bytes{};
    REQUIRE(queen::decode_hex(std::string_view(text.data(), text.size()), bytes));
    CHECK(bytes == std::array<std::uint8_t, 8>{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef});
}
