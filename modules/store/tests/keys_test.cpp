// modules/store/tests/keys_test.cpp — order-preserving key encoding: byte order = field order.
#include "queen/store/keys.hpp"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "helpers.hpp"
#include "queen/core/rng.hpp"
#include "queen/store/env.hpp"
#include "queen/testing/support.hpp"

namespace queen::store::test {
namespace {

Bytes to_bytes(ByteSpan span) {
    return Bytes(span.begin(), span.end());
}

TEST_CASE("store: big-endian integers compare bytewise like numbers", "[store][keys]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng(seed);
    for (int i = 0; i < 10000; ++i) {
        // Mix full-range values with small ones so equal high bytes are common.
        const std::uint64_t a = rng.chance(0.5) ? rng.next() : rng.below(1000);
        const std::uint64_t b = rng.chance(0.5) ? rng.next() : rng.below(1000);
        CHECK((to_bytes(u64be_key(a)) < to_bytes(u64be_key(b))) == (a < b));
        const auto sa = static_cast<std::int64_t>(a);
        const auto sb = static_cast<std::int64_t>(b);
        KeyBuilder ka;
        KeyBuilder kb;
        ka.i64be(sa);
        kb.i64be(sb);
        CHECK((to_bytes(ka.span()) < to_bytes(kb.span())) == (sa < sb));
        CHECK(KeyReader(ka.span()).i64be() == sa);
        CHECK(load_be<std::uint64_t>(u64be_key(a).data()) == a);
    }
}

TEST_CASE("store: composite keys sort like their field tuples", "[store][keys]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng(seed);
    using Tuple = std::tuple<std::string, std::uint32_t, std::uint64_t>;
    std::vector<Tuple> tuples;
    for (int i = 0; i < 3000; ++i) {
        std::string name;
        const auto length = rng.below(5);
        for (std::uint64_t c = 0; c < length; ++c) {
            // A tiny alphabet with 0x00 and 0xFF makes prefixes and escapes common.
            constexpr char alphabet[] = {'\0', '\x01', 'a', 'b', '\xff'};
            name.push_back(alphabet[rng.below(sizeof alphabet)]);
        }
        tuples.emplace_back(name, static_cast<std::uint32_t>(rng.below(3)), rng.below(3));
    }
    auto encode = [](const Tuple& t) {
        KeyBuilder key;
        key.str(std::get<0>(t)).u32be(std::get<1>(t)).u64be(std::get<2>(t));
        REQUIRE_FALSE(key.is_overflowed());
        return to_bytes(key.span());
    };
    auto by_tuple = tuples;
    std::sort(by_tuple.begin(), by_tuple.end(), [](const Tuple& a, const Tuple& b) {
        // std::string compares chars as signed; keys compare unsigned bytes.
        const auto& sa = std::get<0>(a);
        const auto& sb = std::get<0>(b);
        if (sa != sb) {
            return std::lexicographical_compare(
                sa.begin(), sa.end(), sb.begin(), sb.end(), [](char x, char y) {
                    return static_cast<unsigned char>(x) < static_cast<unsigned char>(y);
                });
        }
        return std::tie(std::get<1>(a), std::get<2>(a)) < std::tie(std::get<1>(b), std::get<2>(b));
    });
    auto by_key = tuples;
    std::sort(by_key.begin(), by_key.end(),
              [&](const Tuple& a, const Tuple& b) { return encode(a) < encode(b); });
    CHECK(by_key == by_tuple);
    for (const auto& t : tuples) {
        const Bytes key = encode(t);
        KeyReader reader(key);
        std::string name;
        reader.str(name);
        CHECK(name == std::get<0>(t));
        CHECK(reader.u32be() == std::get<1>(t));
        CHECK(reader.u64be() == std::get<2>(t));
        CHECK(reader.ok());
        CHECK(reader.at_end());
    }
}

TEST_CASE("store: key reader fails on truncated or malformed keys", "[store][keys]") {
    KeyBuilder key;
    key.str("ab").u64be(7);
    const Bytes full = to_bytes(key.span());
    KeyReader truncated(ByteSpan(full).first(full.size() - 1));
    std::string name;
    truncated.str(name);
    CHECK(truncated.ok());
    CHECK(truncated.u64be() == 0);
    CHECK_FALSE(truncated.ok());

    const Bytes bad_escape{'a', 0x00, 0x07};
    KeyReader malformed(bad_escape);
    std::string out;
    malformed.str(out);
    CHECK_FALSE(malformed.ok());

    KeyBuilder raw_key;
    raw_key.u8(1).raw(bytes("tail"));
    KeyReader with_rest(raw_key.span());
    CHECK(with_rest.u8() == 1);
    CHECK(text(with_rest.rest()) == "tail");
    CHECK(with_rest.at_end());
}

TEST_CASE("store: an overflowing key builder makes store calls fail cleanly", "[store][keys]") {
    KeyBuilder key;
    key.str(std::string(600, 'q'));
    CHECK(key.is_overflowed());
    CHECK(key.span().size() == Env::key_size_max + 1);
    key.clear();
    CHECK_FALSE(key.is_overflowed());
    CHECK(key.size() == 0);
    for (int i = 0; i < 63; ++i) {
        key.u64be(static_cast<std::uint64_t>(i));
    }
    CHECK_FALSE(key.is_overflowed());
    CHECK(key.size() == 504);
    key.u64be(1);  // 512 > 511
    CHECK(key.is_overflowed());
    // Raw bytes past the limit: what fits is kept, the rest overflows.
    KeyBuilder long_raw;
    long_raw.u64be(7).raw(bytes(std::string(503, 'r')));
    CHECK_FALSE(long_raw.is_overflowed());
    CHECK(long_raw.size() == 511);
    long_raw.clear();
    long_raw.u64be(7).raw(bytes(std::string(504, 'r')));
    CHECK(long_raw.is_overflowed());
    CHECK(long_raw.size() == 511);

    queen::testing::TempDir dir;
    Env env = must(Env::open(dir.path(), Options{}));
    const Table table = must(env.open_table("t"));
    auto txn = must(env.begin_write());
    CHECK(must_fail(txn.put(table, key.span(), bytes("v"))).is(Errc::key_too_large));
    CHECK(must_fail(txn.get(table, key.span())).is(Errc::key_too_large));
}

TEST_CASE("store: big-endian keys iterate in numeric order in LMDB", "[store][keys]") {
    queen::testing::TempDir dir;
    Env env = must(Env::open(dir.path(), Options{}));
    const Table table = must(env.open_table("t"));
    const std::vector<std::uint64_t> values{256, 1, 65536, 255, 1ULL << 63, 0};
    must(env.write([&](WriteTxn& txn) -> queen::Result<void> {
        for (const auto v : values) {
            KeyBuilder key;
            key.str("queue").u64be(v);
            QUEEN_TRY(txn.put(table, key.span(), bytes("x")));
        }
        return {};
    }));
    auto txn = must(env.begin_read());
    auto cursor = must(txn.cursor(table));
    std::vector<std::uint64_t> seen;
    for (auto entry = must(cursor.first()); entry.has_value(); entry = must(cursor.next())) {
        KeyReader reader(entry->key);
        std::string name;
        reader.str(name);
        CHECK(name == "queue");
        seen.push_back(reader.u64be());
    }
    auto sorted = values;
    std::sort(sorted.begin(), sorted.end());
    CHECK(seen == sorted);
}

}  // namespace
}  // namespace queen::store::test
