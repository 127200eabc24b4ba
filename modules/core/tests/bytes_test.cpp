// modules/core/tests/bytes_test.cpp — byte encoding round trips, strong ids and the seeded rng.
#include "queen/core/bytes.hpp"

#include "queen/core/ids.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

TEST_CASE("core: ByteWriter and ByteReader round-trip every field kind", "[core][bytes]") {
    queen::Bytes buffer;
    queen::ByteWriter writer(buffer);
    writer.fixed<std::uint32_t>(0xdeadbeef);
    writer.varint(0);
    writer.varint(300);
    writer.varint(UINT64_MAX);
    writer.svarint(-5);
    writer.str("queen");
    queen::ByteReader reader(buffer);
    CHECK(reader.fixed<std::uint32_t>() == 0xdeadbeefu);
    CHECK(reader.varint() == 0u);
    CHECK(reader.varint() == 300u);
    CHECK(reader.varint() == UINT64_MAX);
    CHECK(reader.svarint() == -5);
    CHECK(reader.str() == "queen");
    CHECK(reader.ok());
    CHECK(reader.at_end());
    // Reading past the end fails sticky and returns zeros.
    CHECK(reader.fixed<std::uint64_t>() == 0u);
    CHECK_FALSE(reader.ok());
}

TEST_CASE("core: a truncated varint or blob fails the reader", "[core][bytes]") {
    const queen::Bytes truncated_varint{0x80, 0x80};
    queen::ByteReader a(truncated_varint);
    (void)a.varint();
    CHECK_FALSE(a.ok());
    const queen::Bytes long_blob{0x05, 'a', 'b'};
    queen::ByteReader b(long_blob);
    CHECK(b.blob().empty());
    CHECK_FALSE(b.ok());
    const queen::Bytes overlong(11, 0xff);
    queen::ByteReader c(overlong);
    (void)c.varint();
    CHECK_FALSE(c.ok());
}

TEST_CASE("core: strong ids compare within their type", "[core][ids]") {
    const queen::LogIndex a{5};
    CHECK(a.next() == queen::LogIndex{6});
    CHECK(a < a.next());
    static_assert(!std::is_convertible_v<queen::Term, queen::LogIndex>);
}

TEST_CASE("core: the rng is deterministic per seed and stays in bounds", "[core][rng]") {
    queen::Rng one(42);
    queen::Rng two(42);
    for (int i = 0; i < 100; ++i) {
        REQUIRE(one.next() == two.next());
    }
    queen::Rng rng(queen::testing::seed_from_env());
    INFO("seed=" << rng.seed());
    for (int i = 0; i < 1000; ++i) {
        const auto value = rng.between(10, 20);
        REQUIRE(value >= 10);
        REQUIRE(value <= 20);
    }
}
