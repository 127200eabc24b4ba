// modules/core/tests/field_codec_test.cpp — the shared field codec: one fields() list drives the
// writer, the sizer and the reader; the reader refuses every non-canonical or lying input.
#include "queen/core/field_codec.hpp"

#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace codec_test {

enum class Colour : std::uint8_t { red, green, blue };

struct Inner {
    std::string name;
    std::vector<std::uint64_t> numbers;
    friend bool operator==(const Inner&, const Inner&) = default;
};

struct Record {
    bool flag = false;
    std::uint32_t small = 0;
    std::uint64_t big = 0;
    std::int64_t signed_value = 0;
    queen::LogIndex index;
    Colour colour = Colour::red;
    queen::Bytes blob;
    std::vector<Inner> inners;
    friend bool operator==(const Record&, const Record&) = default;
};

template <class A>
void fields(A& a, Inner& v) {
    a(v.name);
    a(v.numbers);
}
template <class A>
void fields(A& a, Record& v) {
    a(v.flag);
    a(v.small);
    a(v.big);
    a(v.signed_value);
    a(v.index);
    a.enumeration(v.colour, Colour::blue);
    a(v.blob);
    a(v.inners);
}

struct Fields {
    template <class A, class T>
    static void visit(A& a, T& value) {
        fields(a, value);
    }
};
using Writer = queen::codec::Writer<Fields>;
using Sizer = queen::codec::Sizer<Fields>;
using Reader = queen::codec::Reader<Fields>;

queen::Bytes encode(Record record) {
    Sizer sizer;
    sizer(record);
    queen::Bytes out;
    Writer writer(out);
    writer(record);
    REQUIRE(out.size() == sizer.size());
    return out;
}

bool decode(queen::ByteSpan bytes, Record& out) {
    Reader reader(bytes);
    reader(out);
    return reader.bytes().ok() && reader.bytes().remaining() == 0;
}

TEST_CASE("codec: random records round-trip and the sizer counts exactly", "[core][codec]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    queen::Rng rng(seed);
    for (int i = 0; i < 2000; ++i) {
        Record record;
        record.flag = rng.chance(0.5);
        record.small = static_cast<std::uint32_t>(rng.next());
        record.big = rng.next() >> rng.below(64);
        record.signed_value = static_cast<std::int64_t>(rng.next()) >> rng.below(64);
        record.index = queen::LogIndex{rng.next() >> rng.below(64)};
        record.colour = static_cast<Colour>(rng.below(3));
        record.blob.resize(rng.below(300));
        for (auto& byte : record.blob) {
            byte = static_cast<queen::Byte>(rng.next());
        }
        record.inners.resize(rng.below(4));
        for (auto& inner : record.inners) {
            inner.name.assign(rng.below(20), 'x');
            inner.numbers.resize(rng.below(5));
            for (auto& number : inner.numbers) {
                number = rng.next() >> rng.below(64);
            }
        }
        const queen::Bytes bytes = encode(record);
        Record back;
        REQUIRE(decode(bytes, back));
        REQUIRE(back == record);
    }
}

TEST_CASE("codec: the reader refuses non-canonical and lying input", "[core][codec]") {
    Record record;
    record.big = 5;
    record.inners.push_back(Inner{"a", {1, 2}});
    const queen::Bytes good = encode(record);
    Record out;
    REQUIRE(decode(good, out));

    SECTION("a bool other than 0 or 1") {
        queen::Bytes bad = good;
        bad[0] = 2;
        CHECK_FALSE(decode(bad, out));
    }
    SECTION("a varint not in its shortest form") {
        queen::Bytes bad = good;
        // small (0) then big (5): encode big as 0x85 0x00 instead of 0x05.
        REQUIRE(good[2] == 5);
        bad.erase(bad.begin() + 2);
        const queen::Byte padded[] = {0x85, 0x00};
        bad.insert(bad.begin() + 2, std::begin(padded), std::end(padded));
        CHECK_FALSE(decode(bad, out));
    }
    SECTION("an enum beyond its maximum") {
        queen::Bytes bad = good;
        REQUIRE(good[5] == 0);  // flag, small, big, signed, index (1 byte each), then the colour
        bad[5] = 3;
        CHECK_FALSE(decode(bad, out));
    }
    SECTION("a count larger than the bytes left") {
        queen::Bytes bad = good;
        REQUIRE(good[7] == 1);  // ..., colour, blob length 0, then the count of inners
        bad[7] = 0x7f;
        CHECK_FALSE(decode(bad, out));
    }
    SECTION("truncated") {
        for (std::size_t size = 0; size < good.size(); ++size) {
            CHECK_FALSE(decode(queen::ByteSpan(good.data(), size), out));
        }
    }
}

}  // namespace codec_test
