// modules/log/src/recovery.cpp — Log::open(): lists and scans the segments, cuts a torn tail,
// drops torn or empty later segments, refuses damage to synced data, starts the writer thread.
// Segments are decoded through a SegmentWindow: open holds a chunk of a segment, not the segment.
#include <algorithm>
#include <thread>

#include "log_impl.hpp"
#include "queen/core/assert.hpp"
#include "segment_window.hpp"

namespace queen::log {

namespace {

/// True when a later segment file holds at least one record with a valid CRC.
Result<bool> holds_valid_record(FileSystem& file_system, const std::filesystem::path& path,
                                std::uint32_t payload_size_max) {
    QUEEN_TRY(std::unique_ptr<File> file, file_system.open(path, OpenMode::read_only));
    QUEEN_TRY(const std::uint64_t size, file->size());
    detail::SegmentWindow window(*file, path, size);
    const SegmentView view = window.as_view();
    QUEEN_TRY(const SegmentScan scan, scan_segment_windowed(size, view, payload_size_max));
    if (scan.record_count > 0) {
        return true;
    }
    QUEEN_TRY(const std::optional<std::uint64_t> next,
              find_next_record_windowed(size, view, 0, LogIndex{0}, Term{0}, payload_size_max));
    return next.has_value();
}

/// The refusal of damage to synced data at the record where `scan` stopped: names the record
/// and says how to see it and how to cut it (docs/log-format.md, "Damage to synced data").
Error synced_damage_error(const std::filesystem::path& dir, const std::filesystem::path& path,
                          const SegmentScan& scan, const std::string& why) {
    const std::string index = std::to_string(scan.last_index.next().value());
    return Error{Errc::corruption,
                 path.string() + " offset " + std::to_string(scan.stop_offset) + ", index " +
                     index + ": " + std::string(stop_reason_name(scan.stop)) + " (" + scan.detail +
                     "): " + why +
                     ". This is damage to synced data, not a torn write: the record may have "
                     "been acknowledged, so the log does not cut it by itself; no file was "
                     "changed. See it with `queen inspect log " +
                     dir.string() + " --verify`; to drop it and every later record, run `" +
                     repair_command(dir, scan.last_index.next()) + "`"};
}

}  // namespace

std::string repair_command(const std::filesystem::path& dir, LogIndex first_dropped) {
    return "queen repair log " + dir.string() + " --cut-from " +
           std::to_string(first_dropped.value()) + " --confirm";
}

Result<std::unique_ptr<Log>> Log::open(const std::filesystem::path& dir, const Options& options,
                                       Environment environment, RecoveryReport* report,
                                       LogIndex keep_through) {
    QUEEN_TRY(options.validate());
    QUEEN_ASSERT(environment.file_system != nullptr && environment.clock != nullptr &&
                     environment.logger != nullptr,
                 "log::Environment members must be set");
    auto impl = std::make_unique<Impl>();
    impl->dir = dir;
    impl->options = options;
    impl->env = environment;
    FileSystem& fs = *environment.file_system;
    RecoveryReport local_report;
    RecoveryReport& rep = report != nullptr ? *report : local_report;
    rep = RecoveryReport{};

    auto listed = fs.list(dir);
    if (!listed && listed.error().is(Errc::not_found)) {
        // A new log directory: its own entry in the parent must survive a crash too.
        QUEEN_TRY(fs.create_directories(dir));
        const auto parent = dir.has_parent_path() ? dir.parent_path() : std::filesystem::path(".");
        QUEEN_TRY(fs.sync_directory(parent));
        listed = fs.list(dir);
    }
    QUEEN_TRY(std::vector<std::string> names, std::move(listed));
    std::vector<std::pair<LogIndex, std::string>> found;
    for (const std::string& name : names) {
        if (auto index = parse_segment_file_name(name)) {
            found.emplace_back(*index, name);
        } else if (name.ends_with(segment_suffix)) {
            QUEEN_LOG(*environment.logger, Level::warn, "log.ignored_file",
                      "dir=" << dir.string() << " name=" << name);
        }
    }
    std::sort(found.begin(), found.end());

    // Recovery decides before it changes anything: the scan below only reads and plans the cut
    // (a torn tail to truncate, later segments to remove); the plan is checked against
    // `keep_through` and only then carried out.
    std::optional<std::size_t> remove_from;  // found[*remove_from..] are removed
    std::shared_ptr<detail::Segment> cut_segment;
    std::string torn_header_detail;  // the removed last segment's, when its header was torn
    bool directory_changed = false;
    auto remove_segments_from = [&](std::size_t first) -> Status {
        // Newest first, so a crash part-way leaves a prefix of the segments.
        for (std::size_t k = found.size(); k-- > first;) {
            const auto path = dir / found[k].second;
            QUEEN_TRY(fs.remove(path));
            rep.removed_segments.push_back(path);
            directory_changed = true;
        }
        found.resize(first);
        return {};
    };

    for (std::size_t k = 0; k < found.size(); ++k) {
        const auto path = dir / found[k].second;
        const bool is_last = k + 1 == found.size();
        QUEEN_TRY(std::unique_ptr<File> file, fs.open(path, OpenMode::read_write));
        QUEEN_TRY(const std::uint64_t file_size, file->size());
        // Refers to the File, which the segment owns from here on.
        detail::SegmentWindow window(*file, path, file_size);
        const SegmentView view = window.as_view();
        ++rep.segments_scanned;

        auto segment = std::make_shared<detail::Segment>();
        segment->path = path;
        segment->file = std::move(file);
        const detail::Segment* previous =
            impl->segments.empty() ? nullptr : impl->segments.back().get();
        const LogIndex expected_first = previous ? previous->last_index.next() : found[k].first;
        const Term expected_prev_term = previous ? previous->last_term : Term{0};

        // The header first: records are decoded (and indexed) only once it is consistent.
        QUEEN_TRY(const ByteSpan header_bytes, view(0, segment_header_size));
        std::string header_detail;
        const std::optional<SegmentHeader> header =
            decode_segment_header(header_bytes, &header_detail);
        if (!header) {
            QUEEN_TRY(const std::optional<std::uint64_t> later_record,
                      find_next_record_windowed(file_size, view, 0, expected_first.prev(),
                                                expected_prev_term, options.record_size_bytes_max));
            if (is_last && !later_record && (previous != nullptr || found[k].first.value() == 1)) {
                // A crash while the segment was being created: its header never reached disk.
                torn_header_detail = path.string() + ": " + header_detail;
                segment->file.reset();
                remove_from = k;
                break;
            }
            return Error{Errc::corruption, path.string() + ": " + header_detail};
        }
        if (header->first_index != found[k].first) {
            return Error{Errc::corruption, path.string() + ": header first_index " +
                                               std::to_string(header->first_index.value()) +
                                               " does not match the file name"};
        }
        if (previous != nullptr &&
            (header->first_index != expected_first || header->prev_term != expected_prev_term)) {
            return Error{Errc::corruption,
                         path.string() + ": starts at index " +
                             std::to_string(header->first_index.value()) + " (prev term " +
                             std::to_string(header->prev_term.value()) + ") but " +
                             previous->path.string() + " ends at " +
                             std::to_string(previous->last_index.value()) + " (term " +
                             std::to_string(previous->last_term.value()) + ")"};
        }
        segment->header = *header;
        segment->last_index = header->first_index.prev();
        segment->last_term = header->prev_term;
        segment->size_bytes = segment_header_size;
        detail::Segment& seg = *segment;
        QUEEN_TRY(const SegmentScan scan,
                  scan_segment_windowed(file_size, view, options.record_size_bytes_max,
                                        [&](const RecordView& record, std::uint64_t offset) {
                                            seg.note_record(
                                                record.index, record.term, offset,
                                                encoded_record_size(record.payload.size()),
                                                options.index_interval_bytes);
                                            impl->note_term_locked(record.index, record.term);
                                        }));
        rep.records_recovered += scan.record_count;
        if (scan.stop != StopReason::end_of_data) {
            QUEEN_TRY(
                const std::optional<std::uint64_t> record_after,
                find_next_record_windowed(file_size, view, scan.stop_offset + 1, scan.last_index,
                                          scan.last_term, options.record_size_bytes_max));
            const bool valid_after = record_after.has_value();
            bool later_valid = false;
            for (std::size_t later = k + 1; later < found.size() && !later_valid; ++later) {
                QUEEN_TRY(later_valid, holds_valid_record(fs, dir / found[later].second,
                                                          options.record_size_bytes_max));
            }
            if (!is_last && (valid_after || later_valid)) {
                rep.damaged_from = scan.last_index.next();
                return synced_damage_error(dir, path, scan,
                                           "valid records follow it in this or a later segment, "
                                           "and only the last segment is ever written unsynced");
            }
            // A torn write differs from what was written in whole sectors; a record one bit
            // away from a valid one (or with a valid CRC) reached the disk whole and was
            // damaged afterwards (format.hpp): it may have been acknowledged.
            QUEEN_TRY(
                const std::optional<std::string> written_whole,
                find_written_damage_windowed(file_size, view, scan, options.record_size_bytes_max));
            if (written_whole) {
                rep.damaged_from = scan.last_index.next();
                return synced_damage_error(dir, path, scan, *written_whole);
            }
            rep.tail_truncated = true;
            rep.truncated_segment = path;
            rep.truncated_at_offset = scan.valid_bytes;
            rep.bytes_cut = file_size - scan.valid_bytes;
            rep.truncation_reason = scan.stop;
            rep.truncation_detail = scan.detail;
            rep.valid_record_after_cut = valid_after;
            segment->file_bytes = scan.valid_bytes;
            cut_segment = segment;
            impl->segments.push_back(std::move(segment));
            remove_from = k + 1;
            break;
        }
        // A zero-filled tail (scan.zero_tail_bytes) stays: the writer appends over it.
        segment->file_bytes = file_size;
        impl->segments.push_back(std::move(segment));
    }

    const LogIndex kept_last =
        impl->segments.empty() ? LogIndex{0} : impl->segments.back()->last_index;
    if ((cut_segment != nullptr || remove_from) && kept_last < keep_through) {
        // The damage reaches entries the caller knows were acknowledged: a flipped or lost
        // write after a clean fdatasync, not a torn one. Nothing was changed.
        return Error{
            Errc::corruption,
            dir.string() + ": recovery would keep entries up to " +
                std::to_string(kept_last.value()) + " only, but entries up to " +
                std::to_string(keep_through.value()) + " were acknowledged (" +
                (cut_segment != nullptr ? cut_segment->path.string() + " offset " +
                                              std::to_string(rep.truncated_at_offset) + ", index " +
                                              std::to_string(kept_last.next().value()) + ": " +
                                              std::string(stop_reason_name(rep.truncation_reason)) +
                                              ", " + rep.truncation_detail
                                        : torn_header_detail) +
                "): damage to synced data, not a torn write; no file was changed. See it with "
                "`queen inspect log " +
                dir.string() + " --verify`"};
    }
    if (cut_segment != nullptr) {
        QUEEN_LOG(*environment.logger, Level::warn, "log.torn_tail_truncated",
                  "path=" << cut_segment->path.string() << " offset=" << rep.truncated_at_offset
                          << " bytes_cut=" << rep.bytes_cut
                          << " reason=" << stop_reason_name(rep.truncation_reason)
                          << " valid_after=" << rep.valid_record_after_cut);
        QUEEN_TRY(cut_segment->file->truncate(rep.truncated_at_offset));
        QUEEN_TRY(cut_segment->file->sync_data());
    }
    if (!torn_header_detail.empty()) {
        QUEEN_LOG(*environment.logger, Level::warn, "log.torn_segment_removed",
                  "detail=\"" << torn_header_detail << "\"");
    }
    if (remove_from) {
        QUEEN_TRY(remove_segments_from(*remove_from));
    }

    if (impl->segments.empty()) {
        LogIndex first{1};
        if (!rep.removed_segments.empty() && !found.empty()) {
            first = found.front().first;
        }
        SegmentHeader header;
        header.first_index = first;
        QUEEN_TRY(std::shared_ptr<detail::Segment> segment, impl->create_segment(header));
        impl->segments.push_back(std::move(segment));
        rep.created = rep.removed_segments.empty();
    } else {
        // Recovered bytes may sit in the page cache only (the process, not the machine, died):
        // make them durable before anything new is acknowledged after them.
        QUEEN_TRY(impl->segments.back()->file->sync_data());
    }
    if (directory_changed) {
        QUEEN_TRY(fs.sync_directory(dir));
    }

    const detail::Segment& front = *impl->segments.front();
    const detail::Segment& back = *impl->segments.back();
    impl->first_index = front.header.first_index;
    impl->prev_term = front.header.prev_term;
    impl->last_index = back.last_index;
    impl->last_term = back.last_term;
    impl->written_index = back.last_index;
    impl->durable_index = back.last_index;
    rep.first_index = impl->first_index;
    rep.last_index = impl->last_index;
    QUEEN_LOG(*environment.logger, Level::info, "log.opened",
              "dir=" << dir.string() << " segments=" << impl->segments.size() << " first_index="
                     << impl->first_index.value() << " last_index=" << impl->last_index.value()
                     << " tail_truncated=" << rep.tail_truncated);

    Impl* raw = impl.get();
    raw->writer = std::thread([raw] { raw->writer_main(); });
    return std::unique_ptr<Log>(new Log(std::move(impl)));
}

}  // namespace queen::log
