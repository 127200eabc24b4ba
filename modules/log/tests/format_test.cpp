// modules/log/tests/format_test.cpp — segment header and record encoding, the buffer decoder.
#include "queen/log/format.hpp"

#include "queen/core/crc32c.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "random_segment.hpp"

using namespace queen;
using namespace queen::log;

namespace {
Bytes make_segment(std::uint64_t count, LogIndex first = LogIndex{1}) {
    Bytes out(segment_header_size);
    SegmentHeader header;
    header.first_index = first;
    encode_segment_header(header, out);
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::string payload = "payload-" + std::to_string(i);
        encode_record(out, Term{1 + i / 3}, LogIndex{first.value() + i}, 2, as_bytes(payload));
    }
    return out;
}
}  // namespace

TEST_CASE("log: segment header round-trips and rejects damage", "[log][format]") {
    SegmentHeader header;
    header.first_index = LogIndex{42};
    header.prev_term = Term{7};
    Bytes bytes(segment_header_size);
    encode_segment_header(header, bytes);
    CHECK(as_chars(ByteSpan{bytes}.first(8)) == "QUEENLOG");
    auto decoded = decode_segment_header(bytes);
    REQUIRE(decoded);
    CHECK(decoded->first_index == LogIndex{42});
    CHECK(decoded->prev_term == Term{7});
    CHECK(decoded->version == format_version);

    std::string why;
    CHECK_FALSE(decode_segment_header(ByteSpan{bytes}.first(39), &why));
    CHECK(why.find("short") != std::string::npos);
    for (std::size_t i = 0; i < segment_header_size; ++i) {
        Bytes damaged = bytes;
        damaged[i] ^= 0x10;
        CHECK_FALSE(decode_segment_header(damaged));
    }
}

TEST_CASE("log: record layout matches the documented byte offsets", "[log][format]") {
    Bytes out;
    const std::string payload = "abc";
    encode_record(out, Term{0x0102030405060708}, LogIndex{0x1112131415161718}, 9,
                  as_bytes(payload));
    REQUIRE(out.size() == record_header_size + 3);
    CHECK(load_le<std::uint32_t>(out.data() + 4) == 3);
    CHECK(load_le<std::uint64_t>(out.data() + 8) == 0x0102030405060708);
    CHECK(load_le<std::uint64_t>(out.data() + 16) == 0x1112131415161718);
    CHECK(out[24] == 9);
    CHECK(out[25] == 0);
    CHECK(as_chars(ByteSpan{out}.subspan(28)) == "abc");
    CHECK(load_le<std::uint32_t>(out.data()) == crc32c(ByteSpan{out}.subspan(4)));
}

TEST_CASE("log: scan_segment decodes every record of a clean segment", "[log][format]") {
    const Bytes bytes = make_segment(10, LogIndex{5});
    std::vector<std::uint64_t> indexes;
    const SegmentScan scan =
        scan_segment(bytes, 1024, [&](const RecordView& record, std::uint64_t) {
            indexes.push_back(record.index.value());
            CHECK(record.type == 2);
        });
    CHECK(scan.stop == StopReason::end_of_data);
    CHECK(scan.record_count == 10);
    CHECK(scan.valid_bytes == bytes.size());
    CHECK(scan.last_index == LogIndex{14});
    CHECK(scan.last_term == Term{4});
    CHECK(indexes.front() == 5);
    CHECK(indexes.back() == 14);
}

TEST_CASE("log: scan_segment stops at the first bad record of a damaged segment", "[log][format]") {
    const Bytes clean = make_segment(6);
    const SegmentScan full = scan_segment(clean, 1024);
    // Offsets of record boundaries.
    std::vector<std::uint64_t> offsets;
    (void)scan_segment(clean, 1024,
                       [&](const RecordView&, std::uint64_t offset) { offsets.push_back(offset); });
    REQUIRE(offsets.size() == 6);

    SECTION("a flipped payload bit is a crc mismatch at that record") {
        Bytes bytes = clean;
        bytes[offsets[3] + record_header_size + 1] ^= 1;
        const SegmentScan scan = scan_segment(bytes, 1024);
        CHECK(scan.stop == StopReason::bad_crc);
        CHECK(scan.stop_offset == offsets[3]);
        CHECK(scan.record_count == 3);
        CHECK(find_next_record(bytes, scan.stop_offset + 1, scan.last_index, scan.last_term,
                               1024) == offsets[4]);
    }
    SECTION("a short tail is a truncated record") {
        const Bytes bytes(clean.begin(), clean.end() - 3);
        const SegmentScan scan = scan_segment(bytes, 1024);
        CHECK(scan.stop == StopReason::bad_length);
        CHECK(scan.stop_offset == offsets[5]);
        CHECK(scan.record_count == 5);
    }
    SECTION("a length over the maximum is bad_length") {
        Bytes bytes = clean;
        store_le<std::uint32_t>(bytes.data() + offsets[2] + 4, 5000);
        CHECK(scan_segment(bytes, 1024).stop == StopReason::bad_length);
    }
    SECTION("an all-zero tail (the writer's zero fill) is a clean end") {
        Bytes bytes = clean;
        bytes.resize(bytes.size() + 4096, 0);
        const SegmentScan scan = scan_segment(bytes, 1024);
        CHECK(scan.stop == StopReason::end_of_data);
        CHECK(scan.detail.empty());
        CHECK(scan.record_count == 6);
        CHECK(scan.valid_bytes == full.valid_bytes);
        CHECK(scan.stop_offset == full.valid_bytes);
        CHECK(scan.zero_tail_bytes == 4096);
        CHECK(full.zero_tail_bytes == 0);
    }
    SECTION("zeros with one non-zero byte after them are damage, not a zero tail") {
        Bytes bytes = clean;
        bytes.resize(bytes.size() + 4096, 0);
        bytes[bytes.size() - 1 - (bytes.size() % 7)] = 1;
        const SegmentScan scan = scan_segment(bytes, 1024);
        CHECK(scan.stop == StopReason::bad_crc);
        CHECK(scan.valid_bytes == full.valid_bytes);
        CHECK(scan.zero_tail_bytes == 0);
        CHECK_FALSE(
            find_next_record(bytes, scan.stop_offset + 1, scan.last_index, scan.last_term, 1024));
    }
    SECTION("a record whose first bytes reached the disk and the rest is zeros is damage") {
        Bytes bytes(clean.begin(), clean.begin() + static_cast<std::ptrdiff_t>(offsets[5] + 3));
        bytes.resize(clean.size() + 512, 0);
        const SegmentScan scan = scan_segment(bytes, 1024);
        CHECK(scan.stop != StopReason::end_of_data);
        CHECK(scan.stop_offset == offsets[5]);
        CHECK(scan.record_count == 5);
    }
    SECTION("an index out of sequence with a valid crc is bad_field") {
        Bytes bytes(clean.begin(), clean.begin() + static_cast<std::ptrdiff_t>(offsets[2]));
        encode_record(bytes, Term{1}, LogIndex{9}, 0, as_bytes("x"));
        const SegmentScan scan = scan_segment(bytes, 1024);
        CHECK(scan.stop == StopReason::bad_field);
        CHECK(scan.record_count == 2);
    }
    SECTION("a decreasing term is bad_field") {
        Bytes bytes = clean;
        encode_record(bytes, Term{0}, LogIndex{7}, 0, as_bytes("x"));
        CHECK(scan_segment(bytes, 1024).stop == StopReason::bad_field);
    }
}

TEST_CASE("log: scan_segment never reads out of bounds on random damage", "[log][format]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    const Bytes clean = make_segment(40);
    for (int round = 0; round < 2000; ++round) {
        Bytes bytes = clean;
        bytes.resize(rng.below(bytes.size() + 1));
        const auto flips = rng.below(4);
        for (std::uint64_t f = 0; f < flips && !bytes.empty(); ++f) {
            bytes[rng.below(bytes.size())] ^= static_cast<Byte>(1 + rng.below(255));
        }
        const SegmentScan scan = scan_segment(bytes, 1024);
        CHECK(scan.valid_bytes <= bytes.size());
        if (scan.header) {
            CHECK(scan.last_index.value() == scan.record_count);
        }
    }
}

TEST_CASE("log: is_all_zero looks at every byte", "[log][format]") {
    CHECK(is_all_zero(ByteSpan{}));
    for (std::size_t size : {1u, 7u, 8u, 9u, 63u, 64u, 65u}) {
        Bytes bytes(size, 0);
        CHECK(is_all_zero(bytes));
        for (std::size_t i = 0; i < size; ++i) {
            bytes[i] = 0x80;
            CHECK_FALSE(is_all_zero(bytes));
            bytes[i] = 0;
        }
    }
}

TEST_CASE("log: segment file names are 20 digits and parse back", "[log][format]") {
    CHECK(segment_file_name(LogIndex{1}) == "00000000000000000001.seg");
    CHECK(parse_segment_file_name("00000000000000000001.seg") == LogIndex{1});
    CHECK(parse_segment_file_name("18446744073709551615.seg") == LogIndex{UINT64_MAX});
    CHECK_FALSE(parse_segment_file_name("0000000000000000001.seg"));
    CHECK_FALSE(parse_segment_file_name("0000000000000000000a.seg"));
    CHECK_FALSE(parse_segment_file_name("00000000000000000001.tmp"));
    CHECK_FALSE(parse_segment_file_name("99999999999999999999.seg"));
}

namespace {

/// A SegmentView of `bytes` that gives as few bytes as the contract allows (or, when `generous`
/// says so, a random number more), each window a new copy with the previous one overwritten by
/// garbage: a decoder that reads past a window or keeps using an old one answers differently
/// (and, under ASan, reads freed memory).
class StingyView {
public:
    StingyView(ByteSpan bytes, Rng& rng, bool generous)
        : bytes_(bytes), rng_(rng), generous_(generous) {}

    Result<ByteSpan> operator()(std::uint64_t offset, std::uint64_t want) {
        REQUIRE(offset <= bytes_.size());
        const std::uint64_t rest = bytes_.size() - offset;
        std::uint64_t length = std::min(want, rest);
        if (generous_ && rng_.below(2) == 0) {
            length += rng_.below(rest - length + 1);
        }
        largest_want_ = std::max(largest_want_, want);
        std::fill(current_.begin(), current_.end(), Byte{0xEE});
        previous_ = std::move(current_);
        const auto from = bytes_.begin() + static_cast<std::ptrdiff_t>(offset);
        current_.assign(from, from + static_cast<std::ptrdiff_t>(length));
        return ByteSpan{current_};
    }
    [[nodiscard]] std::uint64_t largest_want() const noexcept { return largest_want_; }

private:
    ByteSpan bytes_;
    Rng& rng_;
    bool generous_;
    Bytes current_;
    Bytes previous_;
    std::uint64_t largest_want_ = 0;
};

struct SeenRecord {
    std::uint64_t offset;
    std::uint64_t index;
    std::uint64_t term;
    RecordType type;
    Bytes payload;
    bool operator==(const SeenRecord&) const = default;
};

}  // namespace

TEST_CASE("log: a segment decoded through small windows decodes as the whole buffer",
          "[log][format]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    constexpr std::uint32_t payload_max = 1024;
    for (int round = 0; round < 1500; ++round) {
        INFO("round " << round);
        const Bytes bytes = queen::log::testing::random_segment(rng, payload_max);
        StingyView stingy(bytes, rng, round % 2 == 1);
        const SegmentView view = std::ref(stingy);

        std::vector<SeenRecord> whole_records;
        const SegmentScan whole =
            scan_segment(bytes, payload_max, [&](const RecordView& r, std::uint64_t offset) {
                whole_records.push_back({offset, r.index.value(), r.term.value(), r.type,
                                         Bytes(r.payload.begin(), r.payload.end())});
            });
        std::vector<SeenRecord> windowed_records;
        auto windowed = scan_segment_windowed(
            bytes.size(), view, payload_max, [&](const RecordView& r, std::uint64_t offset) {
                windowed_records.push_back({offset, r.index.value(), r.term.value(), r.type,
                                            Bytes(r.payload.begin(), r.payload.end())});
            });
        REQUIRE(windowed);
        queen::log::testing::check_same_scan(whole, *windowed);
        CHECK(whole_records == windowed_records);

        // Where the recovery looks for valid records: after the stop, from the start (a bad
        // header), and from anywhere.
        std::vector<std::tuple<std::uint64_t, LogIndex, Term>> searches;
        searches.emplace_back(0, LogIndex{0}, Term{0});
        searches.emplace_back(rng.below(bytes.size() + 1), LogIndex{rng.below(1000)}, Term{0});
        if (whole.header) {
            searches.emplace_back(0, whole.header->first_index.prev(), whole.header->prev_term);
            searches.emplace_back(whole.stop_offset + 1, whole.last_index, whole.last_term);
        }
        for (const auto& [from, after, term_min] : searches) {
            auto found =
                find_next_record_windowed(bytes.size(), view, from, after, term_min, payload_max);
            REQUIRE(found);
            CHECK(*found == find_next_record(bytes, from, after, term_min, payload_max));
        }
        // No window asked for is longer than one record: the memory bound of the decoder.
        CHECK(stingy.largest_want() <= encoded_record_size(payload_max));
    }
}

TEST_CASE("log: find_written_damage names every single flipped bit of a record", "[log][format]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    // Two records; the second, with a random payload, is damaged.
    Bytes clean(segment_header_size);
    SegmentHeader header;
    encode_segment_header(header, clean);
    encode_record(clean, Term{3}, LogIndex{1}, 1, as_bytes(std::string("first")));
    const std::uint64_t at = clean.size();
    Bytes payload(1 + rng.below(1500));
    for (Byte& byte : payload) {
        byte = static_cast<Byte>(rng.next());
    }
    encode_record(clean, Term{4}, LogIndex{2}, 7, payload);
    clean.resize(clean.size() + 700, 0);  // the writer's zero tail
    const std::uint64_t record_size = encoded_record_size(payload.size());

    SECTION("one bit flipped anywhere in the record is damage, at that byte") {
        for (std::uint64_t byte = 0; byte < record_size; ++byte) {
            const int bit = static_cast<int>(rng.below(8));
            Bytes bytes = clean;
            bytes[at + byte] ^= static_cast<Byte>(1u << bit);
            const SegmentScan scan = scan_segment(bytes, 4096);
            INFO("record byte " << byte << " bit " << bit);
            REQUIRE(scan.stop != StopReason::end_of_data);
            REQUIRE(scan.stop_offset == at);
            const auto found = find_written_damage(bytes, scan, 4096);
            REQUIRE(found);
            CHECK_THAT(*found, Catch::Contains("bit " + std::to_string(bit) + " of byte " +
                                               std::to_string(at + byte)));
        }
    }
    SECTION("sectors left unwritten (zeros) are no evidence: a torn write") {
        // Every 512-byte sector of the file the record reaches, zeroed in turn, and all the
        // sectors after a random one (a write cut there).
        const std::uint64_t first_sector = at / 512;
        const std::uint64_t last_sector = (at + record_size - 1) / 512;
        for (std::uint64_t sector = first_sector; sector <= last_sector; ++sector) {
            for (const bool rest : {false, true}) {
                Bytes bytes = clean;
                const std::uint64_t from = std::max(at, sector * 512);
                const std::uint64_t to = rest ? bytes.size() : (sector + 1) * 512;
                std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(from),
                          bytes.begin() + static_cast<std::ptrdiff_t>(
                                              std::min<std::uint64_t>(to, bytes.size())),
                          Byte{0});
                const SegmentScan scan = scan_segment(bytes, 4096);
                INFO("sector " << sector << " rest " << rest);
                if (scan.stop == StopReason::end_of_data) {
                    continue;  // the whole record was zeroed: a clean zero tail
                }
                CHECK_FALSE(find_written_damage(bytes, scan, 4096));
            }
        }
    }
    SECTION("a record with a valid CRC in the wrong place is damage") {
        Bytes bytes(segment_header_size);
        encode_segment_header(header, bytes);
        encode_record(bytes, Term{3}, LogIndex{1}, 1, as_bytes(std::string("first")));
        encode_record(bytes, Term{4}, LogIndex{5}, 1, as_bytes(std::string("skips")));
        const SegmentScan scan = scan_segment(bytes, 4096);
        REQUIRE(scan.stop == StopReason::bad_field);
        CHECK(find_written_damage(bytes, scan, 4096));
    }
    SECTION("a file ending inside a record header is no evidence") {
        Bytes bytes = clean;
        bytes.resize(at + 1 + rng.below(record_header_size - 1));
        bytes.back() |= 1;
        const SegmentScan scan = scan_segment(bytes, 4096);
        REQUIRE(scan.stop == StopReason::truncated_header);
        CHECK_FALSE(find_written_damage(bytes, scan, 4096));
    }
}
