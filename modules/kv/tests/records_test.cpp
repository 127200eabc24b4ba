// kv/tests/records_test.cpp — the on-disk layouts of the kv.* tables, byte by byte (the README's
// "On disk" section), and the decoders' refusal of bytes they did not write.
#include "records.hpp"

#include <string>

#include "queen/core/error.hpp"
#include "queen/store/keys.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/result.hpp"

namespace queen::kv::detail {
namespace {

using queen::testing::must;
using queen::testing::must_fail;

std::string hex(ByteSpan bytes) {
    return to_hex(bytes);
}

TEST_CASE("kv: a kv.entries value is format byte, header fields, value blob", "[kv][records]") {
    Bytes out;
    const std::string value = "hi";
    encode_entry_into(out, EntryHeader{300, TimestampMs{1000}, TimestampMs{0}}, as_bytes(value));
    // 01 | version 300 = ac 02 | updated_at zigzag(1000) = 2000 = d0 0f | expires_at 0 = 00 |
    // length 2, "hi".
    CHECK(hex(out) == "01ac02d00f00026869");

    const EntryView view = must(decode_entry(out));
    CHECK(view.header == EntryHeader{300, TimestampMs{1000}, TimestampMs{0}});
    CHECK(as_chars(view.value) == "hi");

    encode_entry_into(out, EntryHeader{1, TimestampMs{-1}, TimestampMs{1'700'000'000'000}}, {});
    const EntryView other = must(decode_entry(out));
    CHECK(other.header == EntryHeader{1, TimestampMs{-1}, TimestampMs{1'700'000'000'000}});
    CHECK(other.value.empty());
}

TEST_CASE("kv: decode_entry refuses what encode_entry_into did not write", "[kv][records]") {
    Bytes good;
    encode_entry_into(good, EntryHeader{5, TimestampMs{1}, TimestampMs{2}}, as_bytes("xyz"));
    REQUIRE(decode_entry(good).has_value());

    const auto refused = [](Bytes bytes) {
        CHECK(must_fail(decode_entry(bytes)).is(queen::Errc::corruption));
    };
    refused({});
    Bytes wrong_format = good;
    wrong_format[0] = 2;
    refused(wrong_format);
    Bytes truncated = good;
    truncated.pop_back();
    refused(truncated);
    Bytes trailing = good;
    trailing.push_back(0);
    refused(trailing);
    Bytes version_zero;
    encode_entry_into(version_zero, EntryHeader{0, TimestampMs{1}, TimestampMs{2}}, {});
    refused(version_zero);
    refused(Bytes{1, 0x85, 0x00, 0, 0, 0});  // a varint not in its shortest form
}

TEST_CASE("kv: keys are str(bucket) + raw key, and i64be(expires_at) before that",
          "[kv][records]") {
    store::KeyBuilder key;
    entries_key(key, "users", "42");
    CHECK(hex(key.span()) ==
          "75736572730000"
          "3432");
    CHECK(must(decode_entries_key_bucket(key.span())).bucket == "users");
    CHECK(must(decode_entries_key_bucket(key.span())).bucket_field_bytes == 7);

    expiry_key(key, TimestampMs{1}, "b", "k");
    CHECK(hex(key.span()) ==
          "8000000000000001"
          "620000"
          "6b");
    const ExpiryKey decoded = must(decode_expiry_key(key.span()));
    CHECK(decoded.expires_at == TimestampMs{1});
    CHECK(decoded.bucket == "b");
    CHECK(decoded.key == "k");

    // Expiry keys sort by time first, negative times included.
    store::KeyBuilder earlier;
    expiry_key(earlier, TimestampMs{-5}, "z", "z");
    CHECK(as_chars(earlier.span()) < as_chars(key.span()));
    CHECK(must(decode_expiry_key(earlier.span())).expires_at == TimestampMs{-5});

    // Not a key these tables hold: no key bytes, no bucket, cut short.
    key.clear();
    key.str("b");
    CHECK(must_fail(decode_entries_key_bucket(key.span())).is(queen::Errc::corruption));
    key.clear();
    key.str("").raw(as_bytes("k"));
    CHECK(must_fail(decode_entries_key_bucket(key.span())).is(queen::Errc::corruption));
    key.clear();
    key.raw(as_bytes("abc"));
    CHECK(must_fail(decode_entries_key_bucket(key.span())).is(queen::Errc::corruption));
    key.clear();
    key.u32be(7);
    CHECK(must_fail(decode_expiry_key(key.span())).is(queen::Errc::corruption));
    key.clear();
    key.i64be(7).str("b");
    CHECK(must_fail(decode_expiry_key(key.span())).is(queen::Errc::corruption));
}

TEST_CASE("kv: a bucket's keys are contiguous and in key byte order", "[kv][records]") {
    // ("a", anything) < ("ab", anything): the bucket terminator sorts before every key byte.
    store::KeyBuilder a;
    store::KeyBuilder ab;
    entries_key(a, "a", "\xff\xff");
    entries_key(ab, "ab", "\x01");
    CHECK(as_chars(a.span()) < as_chars(ab.span()));
    // Inside a bucket, the order of the keys' bytes (unsigned).
    store::KeyBuilder low;
    store::KeyBuilder high;
    entries_key(low, "a", "k\x7f");
    entries_key(high, "a", "k\x80");
    CHECK(as_chars(low.span()) < as_chars(high.span()));
}

}  // namespace
}  // namespace queen::kv::detail
