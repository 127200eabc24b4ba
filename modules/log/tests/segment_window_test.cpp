// modules/log/tests/segment_window_test.cpp — recovery reads a segment through a bounded window:
// SegmentWindow against the whole-buffer decoder, and Log::open of segments several windows long
// (records across a window's end, a record longer than a window, damage in them), with the
// longest read it makes.
#include "segment_window.hpp"

#include <fstream>

#include "faulty_file_system.hpp"
#include "queen/core/rng.hpp"
#include "queen/log/log.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "random_segment.hpp"
#include "segment_files.hpp"

using namespace queen;
using namespace queen::log;
using namespace queen::log::testing;

namespace {

constexpr std::uint64_t chunk = queen::log::detail::recovery_chunk_bytes;

/// Segments 3.5 windows long that take records up to 2 windows long.
Options large_segments() {
    Options options;
    options.segment_size_bytes_max = 3 * chunk + chunk / 2;
    options.record_size_bytes_max = static_cast<std::uint32_t>(2 * chunk);
    return options;
}

struct Written {
    Term term;
    Bytes payload;
};

/// A log of about 9.8 windows in 3 segments: random payloads of random sizes (up to 5,000
/// bytes), and in each segment one record 1.5 windows long with records after it. Returns
/// record i + 1 at [i].
std::vector<Written> write_large_log(const std::filesystem::path& dir, Rng& rng) {
    auto log = Log::open(dir, large_segments());
    REQUIRE(log);
    std::vector<Written> records;
    std::uint64_t written = 0;
    const auto append = [&](std::size_t size) {
        Written record{Term{1 + records.size() / 500}, Bytes(size)};
        for (Byte& b : record.payload) {
            b = static_cast<Byte>(rng.next());
        }
        REQUIRE((*log)->append_next(record.term, 1, record.payload));
        written += encoded_record_size(size);
        records.push_back(std::move(record));
    };
    const auto small_until = [&](std::uint64_t bytes) {
        while (written < bytes) {
            append(rng.below(5000));
        }
    };
    // Segments roll at 3.5 windows: one long record in the middle of each.
    for (const std::uint64_t big_at : {chunk * 12 / 10, chunk * 47 / 10, chunk * 75 / 10}) {
        small_until(big_at);
        append(chunk * 3 / 2);
    }
    small_until(chunk * 98 / 10);
    REQUIRE((*log)->flush());
    REQUIRE((*log)->close());
    return records;
}

/// Checks the log holds records 1..last exactly as written.
void check_records(Log& log, const std::vector<Written>& records, std::uint64_t last) {
    REQUIRE(log.last_index() == LogIndex{last});
    std::uint64_t next = 1;
    while (next <= last) {
        auto got = log.read(LogIndex{next}, LogIndex{last + 1});
        REQUIRE(got);
        for (const Record& record : *got) {
            REQUIRE(record.index == LogIndex{next});
            REQUIRE(record.term == records[next - 1].term);
            REQUIRE(record.payload == records[next - 1].payload);
            ++next;
        }
    }
}

struct Placed {
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
    LogIndex index;
};

/// The records of a segment file, where they are.
std::vector<Placed> placed_records(const Bytes& bytes) {
    std::vector<Placed> placed;
    (void)scan_segment(
        bytes, large_segments().record_size_bytes_max,
        [&](const RecordView& record, std::uint64_t offset) {
            placed.push_back({offset, encoded_record_size(record.payload.size()), record.index});
        });
    return placed;
}

/// The record that starts in the segment's first window and ends past it.
Placed across_first_window(const std::vector<Placed>& placed) {
    for (const Placed& record : placed) {
        if (record.offset < chunk && record.offset + record.size > chunk) {
            return record;
        }
    }
    FAIL("no record crosses the first window's end");
    return {};
}

/// The record longer than a window (records follow it).
Placed longer_than_window(const std::vector<Placed>& placed) {
    for (std::size_t k = 0; k + 1 < placed.size(); ++k) {
        if (placed[k].size > chunk) {
            return placed[k];
        }
    }
    FAIL("no record followed by others is longer than a window");
    return {};
}

}  // namespace

TEST_CASE("log: a segment read through windows of any size decodes as the whole file",
          "[log][recovery]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    queen::testing::TempDir dir;
    const auto path = dir.path() / "segment";
    constexpr std::uint32_t payload_max = 1024;
    for (int round = 0; round < 150; ++round) {
        INFO("round " << round);
        const Bytes bytes = queen::log::testing::random_segment(rng, payload_max);
        write_file(path, bytes);
        auto file = posix_file_system().open(path, OpenMode::read_only);
        REQUIRE(file);
        const SegmentScan whole = scan_segment(bytes, payload_max);
        for (const std::size_t chunk_bytes : {1u, 27u, 28u, 29u, 100u, 1000u, 4096u}) {
            INFO("chunk_bytes=" << chunk_bytes);
            queen::log::detail::SegmentWindow window(**file, path, bytes.size(), chunk_bytes);
            auto scan = scan_segment_windowed(bytes.size(), window.as_view(), payload_max);
            REQUIRE(scan);
            queen::log::testing::check_same_scan(whole, *scan);
            if (scan->header && scan->stop == StopReason::end_of_data) {
                // A clean scan reads each byte once: the start of a record cut by a window's
                // end is kept, not read again.
                CHECK(window.bytes_read() == bytes.size());
            }
            if (whole.header) {
                auto next =
                    find_next_record_windowed(bytes.size(), window.as_view(), whole.stop_offset + 1,
                                              whole.last_index, whole.last_term, payload_max);
                REQUIRE(next);
                CHECK(*next == find_next_record(bytes, whole.stop_offset + 1, whole.last_index,
                                                whole.last_term, payload_max));
            }
            // A window, or one record when that is longer: never the segment.
            CHECK(window.peak_buffer_bytes() <=
                  std::max<std::uint64_t>(chunk_bytes, encoded_record_size(payload_max)));
        }
    }
}

TEST_CASE("log: a segment file shorter than its size when read is an io error", "[log][recovery]") {
    queen::testing::TempDir dir;
    const auto path = dir.path() / "segment";
    write_file(path, Bytes(100, Byte{0}));
    auto file = posix_file_system().open(path, OpenMode::read_only);
    REQUIRE(file);
    queen::log::detail::SegmentWindow window(**file, path, 1000, 64);
    REQUIRE(window.view(0, 10));
    auto view = window.view(90, 20);
    REQUIRE_FALSE(view);
    CHECK(view.error().is(Errc::io));
    CHECK(view.error().context.find("changed while") != std::string::npos);
}

TEST_CASE("log: segments several windows long recover exactly, reading a window at a time",
          "[log][recovery]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    queen::testing::TempDir dir;
    const std::vector<Written> records = write_large_log(dir.path(), rng);
    const auto files = segment_files(dir.path());
    REQUIRE(files.size() == 3);
    std::uint64_t longest_record = 0;
    for (const auto& file : files) {
        const Bytes bytes = read_file(file);
        REQUIRE(bytes.size() > 2 * chunk);
        const auto placed = placed_records(bytes);
        (void)across_first_window(placed);
        longest_record = std::max(longest_record, longer_than_window(placed).size);
    }

    queen::log::testing::Faults faults;
    queen::log::testing::FaultyFileSystem file_system(faults);
    Environment environment;
    environment.file_system = &file_system;
    RecoveryReport report;
    auto log = Log::open(dir.path(), large_segments(), environment, &report);
    REQUIRE(log);
    // Whole segments (3.5 windows) were never read at once: a window, or the long record.
    CHECK(faults.largest_read.load() <= longest_record);
    CHECK(faults.largest_read.load() >= chunk);
    CHECK(report.segments_scanned == 3);
    CHECK(report.records_recovered == records.size());
    CHECK_FALSE(report.tail_truncated);
    CHECK(report.removed_segments.empty());
    check_records(**log, records, records.size());
}

TEST_CASE("log: damage in a large last segment is cut at the damaged record, across windows",
          "[log][recovery]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    queen::testing::TempDir dir;
    const std::vector<Written> records = write_large_log(dir.path(), rng);
    const auto last_file = segment_files(dir.path()).back();
    Bytes bytes = read_file(last_file);
    const auto placed = placed_records(bytes);
    Placed damaged;
    StopReason reason = StopReason::bad_crc;
    bool valid_after = true;
    // A torn write: the sector the record ends in never reached the disk (zeros).
    const auto zero_last_sector = [&] {
        const std::uint64_t end = damaged.offset + damaged.size;
        const std::uint64_t from = std::max(damaged.offset, (end - 1) / 512 * 512);
        std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(from),
                  bytes.begin() + static_cast<std::ptrdiff_t>(end), Byte{0});
    };
    SECTION("the last sector of the record across the first window's end unwritten") {
        damaged = across_first_window(placed);
        REQUIRE(damaged.offset + damaged.size - 1 >= chunk);
        zero_last_sector();
    }
    SECTION("the length of the record across the first window's end damaged") {
        damaged = across_first_window(placed);
        store_le<std::uint32_t>(bytes.data() + damaged.offset + 4, 0xFFFFFFFFu);
        reason = StopReason::bad_length;
    }
    SECTION("the last sector of the record longer than a window unwritten") {
        damaged = longer_than_window(placed);
        zero_last_sector();
    }
    SECTION("the file cut in the middle of the record longer than a window") {
        damaged = longer_than_window(placed);
        bytes.resize(damaged.offset + damaged.size / 2);
        reason = StopReason::bad_length;
        valid_after = false;
    }
    write_file(last_file, bytes);

    RecoveryReport report;
    auto log = Log::open(dir.path(), large_segments(), {}, &report);
    REQUIRE(log);
    CHECK(report.tail_truncated);
    CHECK(report.truncated_segment == last_file);
    CHECK(report.truncated_at_offset == damaged.offset);
    CHECK(report.bytes_cut == bytes.size() - damaged.offset);
    CHECK(report.truncation_reason == reason);
    CHECK(report.valid_record_after_cut == valid_after);
    CHECK(std::filesystem::file_size(last_file) == damaged.offset);
    check_records(**log, records, damaged.index.value() - 1);
}

TEST_CASE("log: a bit flipped in a large last segment is refused, across windows",
          "[log][recovery]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    queen::testing::TempDir dir;
    (void)write_large_log(dir.path(), rng);
    const auto last_file = segment_files(dir.path()).back();
    Bytes bytes = read_file(last_file);
    const auto placed = placed_records(bytes);
    Placed damaged;
    SECTION("in the record across the first window's end") {
        damaged = across_first_window(placed);
    }
    SECTION("in the record longer than a window") {
        damaged = longer_than_window(placed);
    }
    const std::uint64_t byte = rng.below(damaged.size);
    INFO("record byte " << byte);
    bytes[damaged.offset + byte] ^= static_cast<Byte>(1u << rng.below(8));
    write_file(last_file, bytes);
    auto log = Log::open(dir.path(), large_segments());
    REQUIRE_FALSE(log);
    CHECK(log.error().is(Errc::corruption));
    CHECK_THAT(log.error().context,
               Catch::Contains(" offset " + std::to_string(damaged.offset) + ", index " +
                               std::to_string(damaged.index.value())) &&
                   Catch::Contains("one bit flipped"));
    CHECK(read_file(last_file) == bytes);
}

TEST_CASE("log: damage in a large earlier segment is corruption and changes nothing",
          "[log][recovery]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    queen::testing::TempDir dir;
    (void)write_large_log(dir.path(), rng);
    const auto files = segment_files(dir.path());
    const auto victim = files[1];
    Bytes bytes = read_file(victim);
    const auto placed = placed_records(bytes);
    Placed damaged;
    SECTION("in the record across the first window's end") {
        damaged = across_first_window(placed);
    }
    SECTION("in the record longer than a window") {
        damaged = longer_than_window(placed);
    }
    bytes[damaged.offset + damaged.size - 1] ^= 0x01;
    write_file(victim, bytes);
    const auto last_size = std::filesystem::file_size(files.back());

    auto log = Log::open(dir.path(), large_segments());
    REQUIRE_FALSE(log);
    CHECK(log.error().is(Errc::corruption));
    CHECK(log.error().context.find(victim.string() + " offset " + std::to_string(damaged.offset)) !=
          std::string::npos);
    CHECK(read_file(victim) == bytes);
    CHECK(segment_files(dir.path()) == files);
    CHECK(std::filesystem::file_size(files.back()) == last_size);
}

TEST_CASE("log: a read error while opening fails the open and changes nothing", "[log][recovery]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    queen::testing::TempDir dir;
    const std::vector<Written> records = write_large_log(dir.path(), rng);
    const auto files = segment_files(dir.path());
    std::vector<std::uintmax_t> sizes;
    for (const auto& file : files) {
        sizes.push_back(std::filesystem::file_size(file));
    }
    queen::log::testing::Faults faults;
    queen::log::testing::FaultyFileSystem file_system(faults);
    Environment environment;
    environment.file_system = &file_system;
    // A read somewhere in the middle of the scan: the first segment is 4 windows or more.
    faults.fail_read_after = static_cast<int>(2 + rng.below(8));
    INFO("failing read " << faults.fail_read_after.load());
    auto failed = Log::open(dir.path(), large_segments(), environment);
    REQUIRE_FALSE(failed);
    CHECK(failed.error().is(Errc::io));
    CHECK(segment_files(dir.path()) == files);
    for (std::size_t k = 0; k < files.size(); ++k) {
        CHECK(std::filesystem::file_size(files[k]) == sizes[k]);
    }
    auto log = Log::open(dir.path(), large_segments(), environment);
    REQUIRE(log);
    check_records(**log, records, records.size());
}
