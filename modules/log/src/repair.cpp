// modules/log/src/repair.cpp — cut_log(): the operator's cut of a damaged log (from an index on),
// planned read-only and carried out only when asked. Not used by Log::open, which never cuts
// damage to synced data by itself.
#include <algorithm>

#include "queen/core/assert.hpp"
#include "queen/log/log.hpp"
#include "segment_window.hpp"

namespace queen::log {

namespace {

/// The highest index of a record with a valid CRC in bytes [from, size) of a segment, following
/// records from one to the next and jumping over damage; `highest` when there is none.
Result<LogIndex> highest_index_from(std::uint64_t size, const SegmentView& view, std::uint64_t from,
                                    LogIndex highest, std::uint32_t payload_size_max) {
    std::uint64_t at = from;
    for (;;) {
        QUEEN_TRY(
            const std::optional<std::uint64_t> next,
            find_next_record_windowed(size, view, at, LogIndex{0}, Term{0}, payload_size_max));
        if (!next) {
            return highest;
        }
        QUEEN_TRY(const ByteSpan head, view(*next, record_header_size));
        const LogIndex index{load_le<std::uint64_t>(head.data() + 16)};
        highest = std::max(highest, index);
        at = *next + encoded_record_size(load_le<std::uint32_t>(head.data() + 4));
    }
}

}  // namespace

Result<CutReport> cut_log(const std::filesystem::path& dir, LogIndex first_dropped,
                          const Options& options, bool apply, FileSystem& file_system) {
    QUEEN_TRY(options.validate());
    QUEEN_TRY(const std::vector<std::string> names, file_system.list(dir));
    std::vector<std::pair<LogIndex, std::string>> found;
    for (const std::string& name : names) {
        if (auto index = parse_segment_file_name(name)) {
            found.emplace_back(*index, name);
        }
    }
    std::sort(found.begin(), found.end());
    if (found.empty()) {
        return Error{Errc::not_found, dir.string() + ": no log segment (*.seg) here"};
    }
    if (first_dropped < found.front().first || first_dropped.value() == 0) {
        return Error{Errc::invalid_argument, dir.string() + ": the log starts at index " +
                                                 std::to_string(found.front().first.value()) +
                                                 "; cannot cut from " +
                                                 std::to_string(first_dropped.value())};
    }
    // The segment that holds first_dropped - 1 or starts at first_dropped.
    std::size_t k = 0;
    while (k + 1 < found.size() && found[k + 1].first <= first_dropped) {
        ++k;
    }
    const std::uint32_t payload_size_max = options.record_size_bytes_max;
    CutReport report;
    report.first_dropped = first_dropped;
    report.last_dropped = first_dropped.prev();
    report.segment = dir / found[k].second;

    QUEEN_TRY(std::unique_ptr<File> file, file_system.open(report.segment, OpenMode::read_only));
    QUEEN_TRY(const std::uint64_t size, file->size());
    detail::SegmentWindow window(*file, report.segment, size);
    const SegmentView view = window.as_view();
    if (found[k].first == first_dropped && k > 0) {
        report.segment_removed = true;
        report.bytes_cut = size;
        QUEEN_TRY(report.last_dropped,
                  highest_index_from(size, view, 0, report.last_dropped, payload_size_max));
    } else {
        std::optional<std::uint64_t> cut_at;
        if (found[k].first == first_dropped) {
            cut_at = segment_header_size;
        }
        QUEEN_TRY(const SegmentScan scan,
                  scan_segment_windowed(size, view, payload_size_max,
                                        [&](const RecordView& record, std::uint64_t offset) {
                                            if (record.index.next() == first_dropped) {
                                                cut_at = offset +
                                                         encoded_record_size(record.payload.size());
                                            }
                                        }));
        if (!scan.header) {
            return Error{Errc::corruption, report.segment.string() + ": " + scan.detail +
                                               "; its records cannot be kept: cut from index " +
                                               std::to_string(found[k].first.value())};
        }
        if (!cut_at) {
            if (scan.stop == StopReason::end_of_data) {
                return Error{Errc::invalid_argument, dir.string() + ": the log ends at index " +
                                                         std::to_string(scan.last_index.value()) +
                                                         "; there is nothing to cut from " +
                                                         std::to_string(first_dropped.value())};
            }
            return Error{Errc::corruption,
                         report.segment.string() + " offset " + std::to_string(scan.stop_offset) +
                             ", index " + std::to_string(scan.last_index.next().value()) + ": " +
                             std::string(stop_reason_name(scan.stop)) + " (" + scan.detail +
                             "): records are readable only up to index " +
                             std::to_string(scan.last_index.value()) + "; cut from " +
                             std::to_string(scan.last_index.next().value())};
        }
        report.cut_at_offset = *cut_at;
        report.bytes_cut = size - *cut_at;
        report.last_dropped = std::max(report.last_dropped, scan.last_index);
        if (scan.stop != StopReason::end_of_data) {
            // The damaged record stands at the index after the last good one.
            report.last_dropped = std::max(report.last_dropped, scan.last_index.next());
            QUEEN_TRY(report.last_dropped,
                      highest_index_from(size, view, scan.stop_offset + 1, report.last_dropped,
                                         payload_size_max));
        }
    }
    for (std::size_t later = k + 1; later < found.size(); ++later) {
        const auto path = dir / found[later].second;
        QUEEN_TRY(std::unique_ptr<File> later_file, file_system.open(path, OpenMode::read_only));
        QUEEN_TRY(const std::uint64_t later_size, later_file->size());
        detail::SegmentWindow later_window(*later_file, path, later_size);
        QUEEN_TRY(report.last_dropped, highest_index_from(later_size, later_window.as_view(), 0,
                                                          report.last_dropped, payload_size_max));
        report.removed_segments.push_back(path);
    }
    if (report.last_dropped >= first_dropped) {
        report.records_dropped = report.last_dropped.value() - first_dropped.value() + 1;
    }
    if (!apply) {
        return report;
    }

    // Newest first, as truncate_suffix does: a crash part-way leaves a prefix of the segments.
    for (auto it = report.removed_segments.rbegin(); it != report.removed_segments.rend(); ++it) {
        QUEEN_TRY(file_system.remove(*it));
    }
    if (report.segment_removed) {
        QUEEN_TRY(file_system.remove(report.segment));
    } else {
        QUEEN_TRY(std::unique_ptr<File> cut,
                  file_system.open(report.segment, OpenMode::read_write));
        QUEEN_TRY(cut->truncate(report.cut_at_offset));
        QUEEN_TRY(cut->sync_data());
    }
    QUEEN_TRY(file_system.sync_directory(dir));
    report.applied = true;
    return report;
}

}  // namespace queen::log
