// locks/tests/records_test.cpp — the on-disk bytes of the "locks.*" tables are the ones
// README.md documents, and undecodable values are refused.
#include "records.hpp"

#include <string>
#include <string_view>

#include "queen/core/hex.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/result.hpp"

namespace queen::locks::detail {
namespace {

using queen::testing::must;
using queen::testing::must_fail;

TEST_CASE("locks: a grant record's bytes are the documented layout", "[locks][records]") {
    const GrantRecord record{"ab", FencingToken{300}, TimestampMs{1}, TimestampMs{-2}};
    // format 1 | owner: len 2 'a' 'b' | token 300 = ac 02 | acquired_at zigzag(1) = 02 |
    // expires_at zigzag(-2) = 03
    CHECK(to_hex(encode(record)) == "01026162ac020203");
    CHECK(must(decode_grant(encode(record), "x")) == record);

    GrantRecord big{std::string(200, 'o'), FencingToken{UINT64_MAX}, TimestampMs{1'700'000'000'000},
                    TimestampMs{INT64_MAX}};
    CHECK(must(decode_grant(encode(big), "x")) == big);
    Bytes reused{9, 9, 9};
    encode_into(reused, record);
    CHECK(reused == encode(record));
}

TEST_CASE("locks: an expiry key is the sign-flipped big-endian time then the name",
          "[locks][records]") {
    const auto key = expiry_key(TimestampMs{0x0102}, "lk");
    CHECK(to_hex(key.span()) ==
          "8000000000000102"
          "6c6b");
    const auto negative = expiry_key(TimestampMs{-1}, "lk");
    CHECK(to_hex(negative.span()) ==
          "7fffffffffffffff"
          "6c6b");
    CHECK(negative.span().size() == 10);
    const auto decoded = must(decode_expiry_key(key.span()));
    CHECK(decoded.expires_at == TimestampMs{0x0102});
    CHECK(decoded.name == "lk");
    CHECK(must_fail(decode_expiry_key(expiry_key(TimestampMs{5}, "").span()))
              .is(queen::Errc::corruption));
    CHECK(to_hex(grant_key(std::string_view("a\0b", 3))) == "610062");
}

TEST_CASE("locks: undecodable grant values are corruption", "[locks][records]") {
    const auto refused = [](std::string_view hex) {
        Bytes value(hex.size() / 2);
        REQUIRE(decode_hex(hex, value));
        const auto error = must_fail(decode_grant(value, "lock"));
        CHECK(error.is(queen::Errc::corruption));
        CHECK(error.message().find("'lock'") != std::string::npos);
    };
    refused("");                    // no format byte
    refused("02026162ac020203");    // format 2
    refused("01026162ac0202");      // truncated
    refused("01026162ac02020300");  // trailing byte
    refused("01026162ac82000203");  // token varint not in its shortest form
    refused("01056162ac020203");    // owner longer than the value
}

}  // namespace
}  // namespace queen::locks::detail
