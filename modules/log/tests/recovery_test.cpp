// modules/log/tests/recovery_test.cpp — Log::open after torn writes (garbage, short and zeroed
// tails, torn segment headers) and after damage that must be reported as corruption.
#include <fstream>
#include <map>

#include "queen/core/rng.hpp"
#include "queen/log/log.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "segment_files.hpp"

using namespace queen;
using namespace queen::log;
using namespace queen::log::testing;

namespace {

Options small_segments() {
    Options options;
    options.segment_size_bytes_max = 2048;
    options.record_size_bytes_max = 4096;
    options.index_interval_bytes = 256;
    return options;
}

std::string payload_for(std::uint64_t index) {
    return "rec-" + std::to_string(index) + std::string(index % 17, '#');
}

/// Writes records 1..count (term 1 + i/20) and closes the log.
void write_log(const std::filesystem::path& dir, std::uint64_t count) {
    auto log = Log::open(dir, small_segments());
    REQUIRE(log);
    for (std::uint64_t i = 1; i <= count; ++i) {
        const std::string payload = payload_for(i);
        auto ticket = (*log)->append_next(Term{1 + i / 20}, 0, as_bytes(payload));
        REQUIRE(ticket);
        REQUIRE(ticket->first_index == LogIndex{i});
    }
    REQUIRE((*log)->flush());
    REQUIRE((*log)->close());
}

/// Offsets of the records of a segment file.
std::vector<std::uint64_t> record_offsets(const Bytes& bytes) {
    std::vector<std::uint64_t> offsets;
    (void)scan_segment(bytes, 4096,
                       [&](const RecordView&, std::uint64_t offset) { offsets.push_back(offset); });
    return offsets;
}

/// Checks records [1, last] read back with the payloads write_log() gave them.
void check_records(Log& log, std::uint64_t last) {
    REQUIRE(log.last_index() == LogIndex{last});
    std::uint64_t next = 1;
    while (next <= last) {
        auto records = log.read(LogIndex{next}, LogIndex{last + 1});
        REQUIRE(records);
        for (const Record& record : *records) {
            REQUIRE(record.index == LogIndex{next});
            REQUIRE(as_chars(record.payload) == payload_for(next));
            REQUIRE(record.term == Term{1 + next / 20});
            ++next;
        }
    }
}

/// Every file of `dir` with its bytes.
std::map<std::filesystem::path, Bytes> snapshot_files(const std::filesystem::path& dir) {
    std::map<std::filesystem::path, Bytes> files;
    for (const auto& path : segment_files(dir)) {
        files.emplace(path, read_file(path));
    }
    return files;
}

/// A log of records 1..100 in `dir` with one bit flipped in the payload of the second record of
/// its last segment (`mask`): the segment and the offsets of its records.
struct FlippedLog {
    std::filesystem::path last_file;
    std::vector<std::uint64_t> offsets;
};
FlippedLog write_log_with_flipped_bit(const std::filesystem::path& dir, Byte mask) {
    write_log(dir, 100);
    FlippedLog flipped;
    flipped.last_file = segment_files(dir).back();
    Bytes bytes = read_file(flipped.last_file);
    flipped.offsets = record_offsets(bytes);
    REQUIRE(flipped.offsets.size() >= 3);
    bytes[flipped.offsets[1] + record_header_size] ^= mask;
    write_file(flipped.last_file, bytes);
    return flipped;
}

/// Like write_log_with_flipped_bit, but the second record of the last segment lost the sector
/// its end lies in (zeros where it should be): what a crash leaves when the pages of an
/// unsynced group reach the disk in another order.
FlippedLog write_log_with_torn_sector(const std::filesystem::path& dir) {
    write_log(dir, 100);
    FlippedLog torn;
    torn.last_file = segment_files(dir).back();
    Bytes bytes = read_file(torn.last_file);
    torn.offsets = record_offsets(bytes);
    REQUIRE(torn.offsets.size() >= 3);
    const std::uint64_t end = torn.offsets[2];
    const std::uint64_t from = std::max(torn.offsets[1], (end - 1) / 512 * 512);
    std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(from),
              bytes.begin() + static_cast<std::ptrdiff_t>(end), Byte{0});
    write_file(torn.last_file, bytes);
    return torn;
}

}  // namespace

TEST_CASE("log: reopening after a torn write truncates to the last whole record",
          "[log][recovery]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    queen::testing::TempDir dir;
    write_log(dir.path(), 100);
    const auto files = segment_files(dir.path());
    REQUIRE(files.size() > 2);
    const auto last_file = files.back();
    // The segment as its records end (the writer's zero-filled tail cut off).
    Bytes clean = read_file(last_file);
    clean.resize(scan_segment(clean, 4096).valid_bytes);
    const auto offsets = record_offsets(clean);
    REQUIRE(offsets.size() >= 2);
    std::uint64_t expected_last = 100;
    std::uint64_t expected_cut = 0;

    SECTION("garbage tail") {
        Bytes bytes = clean;
        const std::size_t garbage = 1 + rng.below(3000);
        for (std::size_t i = 0; i < garbage; ++i) {
            bytes.push_back(static_cast<Byte>(rng.next()));
        }
        write_file(last_file, bytes);
        expected_cut = garbage;
    }
    SECTION("short tail: the last record is cut in its payload") {
        Bytes bytes = clean;
        bytes.resize(bytes.size() - 2);
        write_file(last_file, bytes);
        expected_last = 99;
        expected_cut = clean.size() - 2 - offsets.back();
    }
    SECTION("short tail: the last record is cut in its header") {
        Bytes bytes = clean;
        bytes.resize(offsets.back() + 1 + rng.below(record_header_size - 1));
        write_file(last_file, bytes);
        expected_last = 99;
        expected_cut = bytes.size() - offsets.back();
    }
    SECTION("zeroed tail: the pages of the last records never reached the disk") {
        Bytes bytes = clean;
        const std::uint64_t from = offsets[offsets.size() - 2] + 3;
        std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(from), bytes.end(), 0);
        bytes.resize(bytes.size() + 4096, 0);
        write_file(last_file, bytes);
        expected_last = 98;
        expected_cut = bytes.size() - offsets[offsets.size() - 2];
    }
    RecoveryReport report;
    {
        auto log = Log::open(dir.path(), small_segments(), {}, &report);
        REQUIRE(log);
        CHECK(report.tail_truncated);
        CHECK(report.truncated_segment == last_file);
        CHECK(report.bytes_cut == expected_cut);
        CHECK_FALSE(report.valid_record_after_cut);
        CHECK(report.last_index == LogIndex{expected_last});
        check_records(**log, expected_last);
        // The log continues where the whole records end.
        const std::string payload = payload_for(expected_last + 1);
        auto ticket = (*log)->append_next(Term{1 + (expected_last + 1) / 20}, 0, as_bytes(payload));
        REQUIRE(ticket);
        REQUIRE((*log)->wait_durable(*ticket));
    }
    auto log = Log::open(dir.path(), small_segments(), {}, &report);
    REQUIRE(log);
    CHECK_FALSE(report.tail_truncated);
    check_records(**log, expected_last + 1);
}

TEST_CASE("log: a torn sector in the last segment with valid records after it is cut and reported",
          "[log][recovery]") {
    queen::testing::TempDir dir;
    const auto [last_file, offsets] = write_log_with_torn_sector(dir.path());
    RecoveryReport report;
    auto log = Log::open(dir.path(), small_segments(), {}, &report);
    REQUIRE(log);
    CHECK(report.tail_truncated);
    CHECK(report.truncation_reason == StopReason::bad_crc);
    CHECK(report.truncated_at_offset == offsets[1]);
    CHECK(report.valid_record_after_cut);
    CHECK((*log)->last_index() == LogIndex{100 - offsets.size() + 1});
}

TEST_CASE("log: recovery changes no file when its cut would drop an acknowledged entry",
          "[log][recovery]") {
    queen::testing::TempDir dir;
    // A sector of a synced record lost (a write the disk acknowledged and dropped): byte for
    // byte a torn write.
    const auto [last_file, offsets] = write_log_with_torn_sector(dir.path());
    const std::uint64_t damaged = 100 - offsets.size() + 2;  // the second record of the segment
    const auto before = snapshot_files(dir.path());

    SECTION("the caller acknowledged the damaged entry: refused, nothing changed") {
        for (const std::uint64_t keep : {damaged, std::uint64_t{100}}) {
            INFO("keep_through=" << keep);
            auto log = Log::open(dir.path(), small_segments(), {}, nullptr, LogIndex{keep});
            REQUIRE_FALSE(log);
            CHECK(log.error().is(Errc::corruption));
            CHECK_THAT(log.error().context,
                       Catch::Contains("no file was changed") &&
                           Catch::Contains("entries up to " + std::to_string(keep)) &&
                           Catch::Contains(last_file.string()));
            CHECK(snapshot_files(dir.path()) == before);
        }
    }
    SECTION("everything acknowledged lies before the damage: the tail is cut as a torn write") {
        RecoveryReport report;
        auto log = Log::open(dir.path(), small_segments(), {}, &report, LogIndex{damaged - 1});
        REQUIRE(log);
        CHECK(report.tail_truncated);
        CHECK(report.truncated_at_offset == offsets[1]);
        check_records(**log, damaged - 1);
    }
}

TEST_CASE("log: a torn segment header is not removed when the caller acknowledged more",
          "[log][recovery]") {
    queen::testing::TempDir dir;
    write_log(dir.path(), 60);
    const auto torn = dir.path() / segment_file_name(LogIndex{61});
    write_file(torn, Bytes(segment_header_size, 0));
    const auto before = snapshot_files(dir.path());
    auto refused = Log::open(dir.path(), small_segments(), {}, nullptr, LogIndex{61});
    REQUIRE_FALSE(refused);
    CHECK(refused.error().is(Errc::corruption));
    CHECK(snapshot_files(dir.path()) == before);
    auto log = Log::open(dir.path(), small_segments(), {}, nullptr, LogIndex{60});
    REQUIRE(log);
    CHECK_FALSE(std::filesystem::exists(torn));
    check_records(**log, 60);
}

TEST_CASE("log: a torn header of a just-created last segment removes that segment",
          "[log][recovery]") {
    queen::testing::TempDir dir;
    write_log(dir.path(), 60);
    const auto files = segment_files(dir.path());
    const auto torn = dir.path() / segment_file_name(LogIndex{61});
    SECTION("short header") {
        write_file(torn, Bytes(11, 0x51));
    }
    SECTION("zeroed header") {
        write_file(torn, Bytes(segment_header_size, 0));
    }
    RecoveryReport report;
    auto log = Log::open(dir.path(), small_segments(), {}, &report);
    REQUIRE(log);
    REQUIRE(report.removed_segments.size() == 1);
    CHECK(report.removed_segments.front() == torn);
    CHECK_FALSE(std::filesystem::exists(torn));
    check_records(**log, 60);
    const std::string payload = payload_for(61);
    auto ticket = (*log)->append_next(Term{4}, 0, as_bytes(payload));
    REQUIRE(ticket);
    REQUIRE((*log)->wait_durable(*ticket));
}

TEST_CASE("log: a torn tail followed only by an empty segment drops that segment",
          "[log][recovery]") {
    queen::testing::TempDir dir;
    write_log(dir.path(), 100);
    auto files = segment_files(dir.path());
    REQUIRE(files.size() >= 3);
    // Make the last segment empty (header only) and tear the one before it.
    const Bytes last = read_file(files.back());
    write_file(files.back(), Bytes(last.begin(), last.begin() + segment_header_size));
    const auto previous = files[files.size() - 2];
    Bytes bytes = read_file(previous);
    const auto offsets = record_offsets(bytes);
    bytes.resize(bytes.size() - 1);
    write_file(previous, bytes);
    RecoveryReport report;
    auto log = Log::open(dir.path(), small_segments(), {}, &report);
    REQUIRE(log);
    CHECK(report.tail_truncated);
    CHECK(report.truncated_segment == previous);
    CHECK(report.truncated_at_offset == offsets.back());
    REQUIRE(report.removed_segments.size() == 1);
    CHECK(report.removed_segments.front() == files.back());
    const std::uint64_t last_index = (*log)->last_index().value();
    check_records(**log, last_index);
}

TEST_CASE("log: a bad record followed by valid records in an earlier segment is corruption",
          "[log][recovery]") {
    queen::testing::TempDir dir;
    write_log(dir.path(), 100);
    const auto files = segment_files(dir.path());
    REQUIRE(files.size() >= 3);
    const auto victim = files[1];
    Bytes bytes = read_file(victim);
    const auto offsets = record_offsets(bytes);
    std::uint64_t damaged_at = 0;
    SECTION("bit flip in the middle") {
        damaged_at = offsets[offsets.size() / 2];
        bytes[damaged_at + 10] ^= 0x01;
    }
    SECTION("the last record of the segment, with records in later segments") {
        damaged_at = offsets.back();
        bytes[bytes.size() - 1] ^= 0x80;
    }
    const Bytes before = bytes;
    write_file(victim, bytes);
    auto log = Log::open(dir.path(), small_segments());
    REQUIRE_FALSE(log);
    CHECK(log.error().is(Errc::corruption));
    CHECK(log.error().context.find(victim.string()) != std::string::npos);
    CHECK(log.error().context.find("offset " + std::to_string(damaged_at)) != std::string::npos);
    // Nothing was repaired: the files are as they were.
    CHECK(read_file(victim) == before);
    CHECK(segment_files(dir.path()).size() == files.size());
}

TEST_CASE("log: a missing middle segment or a mismatched name is corruption", "[log][recovery]") {
    queen::testing::TempDir dir;
    write_log(dir.path(), 100);
    const auto files = segment_files(dir.path());
    REQUIRE(files.size() >= 3);
    SECTION("gap") {
        std::filesystem::remove(files[1]);
    }
    SECTION("renamed") {
        std::filesystem::rename(files[1], dir.path() / segment_file_name(LogIndex{999}));
    }
    SECTION("damaged header of the first segment") {
        Bytes bytes = read_file(files[0]);
        bytes[20] ^= 1;
        write_file(files[0], bytes);
    }
    auto log = Log::open(dir.path(), small_segments());
    REQUIRE_FALSE(log);
    CHECK(log.error().is(Errc::corruption));
}

TEST_CASE("log: the writer zero-fills ahead, a zero tail reopens cleanly and is written over",
          "[log][recovery]") {
    queen::testing::TempDir dir;
    Options options = small_segments();
    options.segment_size_bytes_max = 8u << 10;
    options.preallocate_bytes_ahead = 2u << 10;
    const auto append = [&](Log& log, std::uint64_t from, std::uint64_t to) {
        for (std::uint64_t i = from; i <= to; ++i) {
            const std::string payload = payload_for(i);
            auto ticket = log.append_next(Term{1 + i / 20}, 0, as_bytes(payload));
            REQUIRE(ticket);
            REQUIRE(ticket->first_index == LogIndex{i});
        }
        REQUIRE(log.flush());
    };
    // The last segment's file: its size, where its records end, its zero tail.
    const auto last_segment = [&] {
        const Bytes bytes = read_file(segment_files(dir.path()).back());
        return std::pair{bytes.size(), scan_segment(bytes, 4096)};
    };
    {
        auto log = Log::open(dir.path(), options);
        REQUIRE(log);
        append(**log, 1, 40);
        const auto [size, scan] = last_segment();
        CHECK(scan.stop == StopReason::end_of_data);
        CHECK(scan.record_count == 40);
        CHECK(scan.zero_tail_bytes > 0);
        // Direct writes round the zeros up to a block boundary.
        CHECK(scan.zero_tail_bytes <= options.preallocate_bytes_ahead + 4096);
        CHECK(size == scan.valid_bytes + scan.zero_tail_bytes);
        REQUIRE((*log)->close());
    }
    RecoveryReport report;
    {
        auto log = Log::open(dir.path(), options, {}, &report);
        REQUIRE(log);
        CHECK_FALSE(report.tail_truncated);
        CHECK(report.last_index == LogIndex{40});
        check_records(**log, 40);
        // New records go where the old ones end, over the zeros, not after the file's end.
        append(**log, 41, 400);
        check_records(**log, 400);
        REQUIRE((*log)->close());
    }
    const auto files = segment_files(dir.path());
    REQUIRE(files.size() > 2);
    // Full segments were cut to their last record before the next one was created.
    for (std::size_t k = 0; k + 1 < files.size(); ++k) {
        const Bytes bytes = read_file(files[k]);
        const SegmentScan scan = scan_segment(bytes, 4096);
        CHECK(scan.stop == StopReason::end_of_data);
        CHECK(scan.zero_tail_bytes == 0);
        CHECK(scan.valid_bytes == bytes.size());
    }
    auto log = Log::open(dir.path(), options, {}, &report);
    REQUIRE(log);
    CHECK_FALSE(report.tail_truncated);
    check_records(**log, 400);
}

TEST_CASE(
    "log: with preallocate_bytes_ahead = 0 a segment ends at its last record (buffered) "
    "or at the block boundary after it (direct)",
    "[log][recovery]") {
    for (const bool is_direct : {false, true}) {
        INFO("direct_io=" << is_direct);
        queen::testing::TempDir dir;
        Options options = small_segments();
        options.segment_size_bytes_max = 64u << 10;
        options.preallocate_bytes_ahead = 0;
        options.direct_io = is_direct;
        auto log = Log::open(dir.path(), options);
        REQUIRE(log);
        for (std::uint64_t i = 1; i <= 30; ++i) {
            const std::string payload = payload_for(i);
            REQUIRE((*log)->append_next(Term{1 + i / 20}, 0, as_bytes(payload)));
            if (i % 7 == 0) {
                REQUIRE((*log)->flush());  // several groups, each rewriting the partial block
            }
        }
        REQUIRE((*log)->flush());
        const Bytes bytes = read_file(segment_files(dir.path()).back());
        const SegmentScan scan = scan_segment(bytes, 4096);
        CHECK(scan.record_count == 30);
        CHECK(scan.valid_bytes + scan.zero_tail_bytes == bytes.size());
        if (is_direct) {
            CHECK(bytes.size() % 4096 == 0);
            CHECK(scan.zero_tail_bytes < 4096);
        } else {
            CHECK(scan.zero_tail_bytes == 0);
        }
        log->reset();
        auto reopened = Log::open(dir.path(), options);
        REQUIRE(reopened);
        check_records(**reopened, 30);
    }
}

TEST_CASE("log: a bit flipped in the newest record is refused, named, and cut only on request",
          "[log][recovery]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    queen::testing::TempDir dir;
    write_log(dir.path(), 100);  // synced: flush() returned, every append was acknowledged
    const auto last_file = segment_files(dir.path()).back();
    Bytes bytes = read_file(last_file);
    const auto offsets = record_offsets(bytes);
    const std::uint64_t newest = offsets.back();
    const std::uint64_t newest_size = scan_segment(bytes, 4096).valid_bytes - newest;
    const std::uint64_t byte = rng.below(newest_size);
    const int bit = static_cast<int>(rng.below(8));
    INFO("flipped bit " << bit << " of record byte " << byte);
    bytes[newest + byte] ^= static_cast<Byte>(1u << bit);
    write_file(last_file, bytes);
    const auto before = snapshot_files(dir.path());

    for (int attempt = 0; attempt < 2; ++attempt) {
        auto refused = Log::open(dir.path(), small_segments());
        REQUIRE_FALSE(refused);
        CHECK(refused.error().is(Errc::corruption));
        CHECK_THAT(refused.error().context,
                   Catch::Contains(last_file.string() + " offset " + std::to_string(newest) +
                                   ", index 100") &&
                       Catch::Contains("one bit flipped") && Catch::Contains("not a torn write") &&
                       Catch::Contains(repair_command(dir.path(), LogIndex{100})));
        CHECK(snapshot_files(dir.path()) == before);
    }

    // The operator's cut: planned first (nothing changes), then applied.
    auto plan = cut_log(dir.path(), LogIndex{100}, small_segments(), false);
    REQUIRE(plan);
    CHECK(plan->records_dropped == 1);
    CHECK(plan->last_dropped == LogIndex{100});
    CHECK(plan->segment == last_file);
    CHECK(plan->cut_at_offset == newest);
    CHECK_FALSE(plan->applied);
    CHECK(snapshot_files(dir.path()) == before);
    auto done = cut_log(dir.path(), LogIndex{100}, small_segments(), true);
    REQUIRE(done);
    CHECK(done->applied);
    CHECK(done->records_dropped == 1);
    CHECK(std::filesystem::file_size(last_file) == newest);
    RecoveryReport report;
    auto log = Log::open(dir.path(), small_segments(), {}, &report);
    REQUIRE(log);
    CHECK_FALSE(report.tail_truncated);
    check_records(**log, 99);
}

TEST_CASE(
    "log: a bit flipped in a middle record of the last segment is refused, and the cut drops "
    "it and every later record",
    "[log][recovery]") {
    queen::testing::TempDir dir;
    const auto [last_file, offsets] = write_log_with_flipped_bit(dir.path(), 0x10);
    const std::uint64_t damaged = 100 - offsets.size() + 2;
    const auto before = snapshot_files(dir.path());
    RecoveryReport report;
    auto refused = Log::open(dir.path(), small_segments(), {}, &report);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().is(Errc::corruption));
    CHECK_THAT(refused.error().context,
               Catch::Contains(last_file.string() + " offset " + std::to_string(offsets[1]) +
                               ", index " + std::to_string(damaged)));
    CHECK(snapshot_files(dir.path()) == before);
    // What a cluster member cuts from by itself (its peers hold the rest).
    REQUIRE(report.damaged_from.has_value());
    CHECK(report.damaged_from->value() == damaged);

    SECTION("a cut above the damage is refused: records below it must decode") {
        auto cut = cut_log(dir.path(), LogIndex{damaged + 1}, small_segments(), true);
        REQUIRE_FALSE(cut);
        CHECK(cut.error().is(Errc::corruption));
        CHECK_THAT(cut.error().context, Catch::Contains("cut from " + std::to_string(damaged)));
        CHECK(snapshot_files(dir.path()) == before);
    }
    SECTION("the cut at the damaged record") {
        auto cut = cut_log(dir.path(), LogIndex{damaged}, small_segments(), true);
        REQUIRE(cut);
        CHECK(cut->records_dropped == 100 - damaged + 1);
        auto log = Log::open(dir.path(), small_segments());
        REQUIRE(log);
        check_records(**log, damaged - 1);
    }
    SECTION("a cut at an earlier segment's first index removes that segment whole") {
        const auto files = segment_files(dir.path());
        REQUIRE(files.size() >= 3);
        const auto start = parse_segment_file_name(files[1].filename().string());
        REQUIRE(start);
        auto cut = cut_log(dir.path(), *start, small_segments(), true);
        REQUIRE(cut);
        CHECK(cut->segment_removed);
        CHECK(cut->records_dropped == 100 - start->value() + 1);
        CHECK(segment_files(dir.path()).size() == 1);
        auto log = Log::open(dir.path(), small_segments());
        REQUIRE(log);
        check_records(**log, start->value() - 1);
    }
}
