// streams/tests/records_test.cpp — the on-disk layouts of the streams.* tables, byte by byte (the
// README's "On disk" section), and the decoders' refusal of bytes they did not write.
#include "records.hpp"

#include <string>

#include "harness.hpp"
#include "queen/core/error.hpp"
#include "queen/store/keys.hpp"

namespace queen::streams::detail {
namespace {

using queen::testing::must;
using queen::testing::must_fail;

std::string hex(ByteSpan bytes) {
    return to_hex(bytes);
}

Bytes unhex(std::string_view digits) {
    Bytes out;
    for (std::size_t i = 0; i + 1 < digits.size(); i += 2) {
        out.push_back(static_cast<Byte>(std::stoi(std::string(digits.substr(i, 2)), nullptr, 16)));
    }
    return out;
}

const QueryRecord example{1, 2, TimestampMs{1000}, TimestampMs{1500}, "id", "src", "", "h1"};

TEST_CASE("streams: a streams.queries value is format byte then the record's fields",
          "[streams][records]") {
    Bytes out;
    encode_query_into(out, example);
    // 01 | number 1 | epoch 2 | created_at zigzag(1000) = 2000 = d0 0f | updated_at
    // zigzag(1500) = 3000 = b8 17 | "id" | "src" | "" | "h1" (each: varint length, bytes).
    CHECK(hex(out) ==
          "010102d00fb81702696403737263000268"
          "31");
    CHECK(must(decode_query(out)) == example);
}

TEST_CASE("streams: decode_query refuses what encode_query_into did not write",
          "[streams][records]") {
    Bytes good;
    encode_query_into(good, example);
    const auto refused = [](const Bytes& bytes) {
        CHECK(must_fail(decode_query(bytes)).is(queen::Errc::corruption));
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
    for (auto broken : {QueryRecord{0, 1, {}, {}, "id", "s", "", "h"},
                        QueryRecord{1, 0, {}, {}, "id", "s", "", "h"},
                        QueryRecord{1, 1, {}, {}, "", "s", "", "h"}}) {
        Bytes bytes;
        encode_query_into(bytes, broken);
        refused(bytes);
    }
    // A varint not in its shortest form: number 1 as 81 00.
    Bytes long_varint{0x01, 0x81, 0x00};
    long_varint.insert(long_varint.end(), good.begin() + 2, good.end());
    refused(long_varint);
}

TEST_CASE("streams: a streams.rows value is format byte, updated_at, value blob",
          "[streams][records]") {
    Bytes out;
    encode_row_into(out, TimestampMs{1000}, as_bytes("hi"));
    CHECK(hex(out) == "01d00f026869");
    const RowView view = must(decode_row(out));
    CHECK(view.updated_at == TimestampMs{1000});
    CHECK(as_chars(view.value) == "hi");

    encode_row_into(out, TimestampMs{-1}, {});
    CHECK(hex(out) == "010100");
    CHECK(must(decode_row(out)).value.empty());

    for (const char* bad : {"", "02d00f026869", "01d00f0268", "01d00f02686900"}) {
        CHECK(must_fail(decode_row(unhex(bad))).is(queen::Errc::corruption));
    }
}

TEST_CASE("streams: row, garbage and meta keys are big-endian numbers then the key's bytes",
          "[streams][records]") {
    store::KeyBuilder key;
    row_key(key, 1, 2, 7, "k");
    CHECK(hex(key.span()) ==
          "0000000000000001"
          "0000000000000002"
          "0000000000000007"
          "6b");
    const RowKey decoded = must(decode_row_key(key.span()));
    CHECK(decoded.number == 1);
    CHECK(decoded.epoch == 2);
    CHECK(decoded.partition == 7);
    CHECK(as_chars(decoded.key) == "k");
    // The partition sorts numerically: 256 after 255, and UINT64_MAX last.
    store::KeyBuilder low;
    row_key(low, 1, 2, 255, "zzz");
    store::KeyBuilder high;
    row_key(high, 1, 2, 256, "a");
    CHECK(hex(low.span()) < hex(high.span()));

    epoch_key(key, 1, 2);
    CHECK(hex(key.span()) ==
          "0000000000000001"
          "0000000000000002");
    const EpochKey epoch = must(decode_epoch_key(key.span()));
    CHECK(epoch.number == 1);
    CHECK(epoch.epoch == 2);

    CHECK(must(decode_next_number(store::u64be_key(5))) == 5);

    // Refusals: a row key without a key byte, numbers 0, garbage keys of the wrong length.
    row_key(key, 1, 2, 7, "");
    CHECK(must_fail(decode_row_key(key.span())).is(queen::Errc::corruption));
    row_key(key, 0, 2, 7, "k");
    CHECK(must_fail(decode_row_key(key.span())).is(queen::Errc::corruption));
    row_key(key, 1, 2, 7, "k");
    CHECK(must_fail(decode_epoch_key(key.span())).is(queen::Errc::corruption));
    epoch_key(key, 1, 0);
    CHECK(must_fail(decode_epoch_key(key.span())).is(queen::Errc::corruption));
    CHECK(must_fail(decode_next_number(store::u64be_key(0))).is(queen::Errc::corruption));
    CHECK(must_fail(decode_next_number(as_bytes("1234567"))).is(queen::Errc::corruption));
}

TEST_CASE("streams: the tables hold exactly the README's bytes after a few commands",
          "[streams][records]") {
    testing::Harness h;
    h.now_ms = 1000;
    CHECK(h.reg("q", "h1", "id", false, "src", "").status == Status::fresh);
    CHECK(h.upsert("id", 7, "k", "hi").status == Status::ok);
    const testing::Dump dump = h.dump();
    CHECK(dump.queries == std::map<std::string, std::string>{{"71",
                                                              "010101d00fd00f02696403737263000268"
                                                              "31"}});
    CHECK(dump.query_ids == std::map<std::string, std::string>{{"6964", "71"}});
    CHECK(dump.rows == std::map<std::string, std::string>{
                           {"0000000000000001000000000000000100000000000000076b", "01d00f026869"}});
    CHECK(dump.meta ==
          std::map<std::string, std::string>{{hex(as_bytes("next_number")), "0000000000000002"}});
    CHECK(dump.garbage.empty());

    CHECK(h.reg("q", "h2", "id", true, "src", "").status == Status::reset);
    CHECK(h.dump().garbage ==
          std::map<std::string, std::string>{{"00000000000000010000000000000001", ""}});
}

}  // namespace
}  // namespace queen::streams::detail
