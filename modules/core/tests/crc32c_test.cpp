// modules/core/tests/crc32c_test.cpp — CRC-32C against the standard check value and across paths.
#include "queen/core/crc32c.hpp"

#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

TEST_CASE("core: crc32c matches the standard check value", "[core][crc32c]") {
    CHECK(queen::crc32c(queen::as_bytes("123456789")) == 0xE3069283u);
    CHECK(queen::crc32c_portable(queen::as_bytes("123456789")) == 0xE3069283u);
    CHECK(queen::crc32c(queen::as_bytes("")) == 0u);
    // RFC 3720 B.4: 32 bytes of zeros.
    const queen::Bytes zeros(32, 0);
    CHECK(queen::crc32c(zeros) == 0x8A9136AAu);
}

TEST_CASE("core: crc32c hardware and table paths agree, also when continued", "[core][crc32c]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng(seed);
    for (int round = 0; round < 200; ++round) {
        queen::Bytes data(rng.below(300));
        for (auto& b : data) {
            b = static_cast<queen::Byte>(rng.next());
        }
        const std::uint32_t whole = queen::crc32c(data);
        REQUIRE(whole == queen::crc32c_portable(data));
        const std::size_t split = data.empty() ? 0 : rng.below(data.size());
        const queen::ByteSpan span(data);
        CHECK(queen::crc32c(span.subspan(split), queen::crc32c(span.first(split))) == whole);
    }
}
