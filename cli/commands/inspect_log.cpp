// cli/commands/inspect_log.cpp — `queen inspect log DIR [--tenant NAME] [--verify] [--json]`:
// decodes the segment files of a log read-only (O_RDONLY, never repairs), decoding past damage
// where it can; DIR may be a data directory (every tenant's log) or a tenant directory. The
// decoding (scan_log_dir) also serves `inspect raft`.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "commands/inspect.hpp"
#include "exit_codes.hpp"
#include "queen/log/file.hpp"
#include "queen/log/format.hpp"
#include "queen/log/hard_state.hpp"
#include "queen/log/log.hpp"

namespace queen::cli {
namespace {

using log::RecordDecode;
using log::StopReason;

using Damage = LogDamage;
using SegmentReport = LogSegmentReport;
using Finding = LogFinding;

/// Framing-only decode (no CRC): used without --verify so a quick look stays cheap.
RecordDecode frame_record(ByteSpan bytes) {
    RecordDecode out;
    if (bytes.size() < log::record_header_size) {
        out.status = StopReason::truncated_header;
        out.detail = "only " + std::to_string(bytes.size()) + " bytes left for a record header";
        return out;
    }
    const auto payload_size = load_le<std::uint32_t>(bytes.data() + 4);
    if (payload_size > log::record_payload_size_limit ||
        bytes.size() - log::record_header_size < payload_size) {
        out.status = StopReason::bad_length;
        out.detail = "payload_size " + std::to_string(payload_size) + " but " +
                     std::to_string(bytes.size() - log::record_header_size) + " bytes follow";
        return out;
    }
    out.record.term = Term{load_le<std::uint64_t>(bytes.data() + 8)};
    out.record.index = LogIndex{load_le<std::uint64_t>(bytes.data() + 16)};
    out.record.type = bytes[24];
    out.record.payload = bytes.subspan(log::record_header_size, payload_size);
    out.size = log::record_header_size + payload_size;
    return out;
}

SegmentReport inspect_segment(const std::filesystem::path& path, LogIndex name_index,
                              const Bytes& bytes, bool verify) {
    SegmentReport report;
    report.path = path;
    report.size_bytes = bytes.size();
    report.name_index = name_index;
    std::string header_detail;
    report.header = log::decode_segment_header(bytes, &header_detail);
    std::uint64_t at = log::segment_header_size;
    LogIndex expected = name_index;
    Term term_floor{0};
    if (report.header) {
        expected = report.header->first_index;
        term_floor = report.header->prev_term;
        if (report.header->first_index != name_index) {
            report.damage.push_back({0, "bad_header",
                                     "header first_index " +
                                         std::to_string(report.header->first_index.value()) +
                                         " does not match the file name",
                                     std::nullopt, name_index, std::nullopt});
        }
    } else {
        Damage damage{0, "bad_header", header_detail, std::nullopt, name_index, std::nullopt};
        damage.resumed_at = log::find_next_record(bytes, 0, name_index.prev(), Term{0},
                                                  log::record_payload_size_limit);
        report.damage.push_back(damage);
        if (!damage.resumed_at) {
            return report;
        }
        at = *damage.resumed_at;
        expected = LogIndex{load_le<std::uint64_t>(bytes.data() + at + 16)};
    }
    bool after_damage = !report.damage.empty();
    while (at < bytes.size()) {
        const ByteSpan rest = ByteSpan{bytes}.subspan(at);
        RecordDecode decoded =
            verify ? log::decode_record(rest, log::record_payload_size_limit) : frame_record(rest);
        if (decoded.status == StopReason::end_of_data) {
            if (decoded.record.index != expected) {
                decoded.status = StopReason::bad_field;
                decoded.detail = "record index " + std::to_string(decoded.record.index.value()) +
                                 " where " + std::to_string(expected.value()) + " was expected";
            } else if (decoded.record.term < term_floor) {
                decoded.status = StopReason::bad_field;
                decoded.detail = "record term " + std::to_string(decoded.record.term.value()) +
                                 " below the previous term " + std::to_string(term_floor.value());
            }
        }
        if (decoded.status == StopReason::end_of_data) {
            if (!report.first_record) {
                report.first_record = decoded.record.index;
                report.first_term = decoded.record.term;
            }
            report.last_record = decoded.record.index;
            report.last_term = decoded.record.term;
            ++report.record_count;
            if (after_damage) {
                ++report.records_after_damage;
            }
            report.payload_bytes += decoded.record.payload.size();
            expected = expected.next();
            term_floor = decoded.record.term;
            at += decoded.size;
            continue;
        }
        if (log::is_all_zero(rest)) {
            report.zero_tail_bytes = rest.size();  // a clean end (docs/log-format.md)
            break;
        }
        Damage damage{at,
                      std::string(log::stop_reason_name(decoded.status)),
                      decoded.detail,
                      std::nullopt,
                      expected,
                      std::nullopt};
        if (verify) {
            log::SegmentScan stop;
            stop.stop = decoded.status;
            stop.stop_offset = at;
            stop.detail = decoded.detail;
            stop.last_index = expected.prev();
            stop.last_term = term_floor;
            damage.written_whole =
                log::find_written_damage(bytes, stop, log::record_payload_size_limit);
        }
        damage.resumed_at = log::find_next_record(bytes, at + 1, expected.prev(), term_floor,
                                                  log::record_payload_size_limit);
        report.damage.push_back(damage);
        after_damage = true;
        if (!damage.resumed_at) {
            break;
        }
        at = *damage.resumed_at;
        expected = LogIndex{load_le<std::uint64_t>(bytes.data() + at + 16)};
    }
    return report;
}

Result<Bytes> read_only(const std::filesystem::path& path) {
    QUEEN_TRY(std::unique_ptr<log::File> file,
              log::posix_file_system().open(path, log::OpenMode::read_only));
    QUEEN_TRY(const std::uint64_t size, file->size());
    Bytes bytes(static_cast<std::size_t>(size));
    std::size_t done = 0;
    while (done < bytes.size()) {
        QUEEN_TRY(const std::size_t got, file->read_at(done, MutableByteSpan{bytes}.subspan(done)));
        if (got == 0) {
            break;
        }
        done += got;
    }
    bytes.resize(done);
    return bytes;
}

std::string index_text(const std::optional<LogIndex>& index) {
    return index ? std::to_string(index->value()) : "-";
}

/// Decodes one log directory: prints its text report, or (with --json) stores it in `json`.
/// Returns exit_ok, exit_corruption or exit_failed.
int inspect_log_dir(const InspectTarget& target, const InspectLogOptions& options,
                    nlohmann::json& json) {
    auto scan = scan_log_dir(target.dir, options.verify);
    if (!scan) {
        std::cerr << "queen inspect log: " << scan.error().message() << "\n";
        return exit_failed;
    }
    const std::vector<SegmentReport>& reports = scan->segments;
    const std::optional<Finding>& corruption = scan->corruption;
    const std::optional<Finding>& torn_tail = scan->torn_tail;
    const std::uint64_t total_records = scan->records;
    // Raft's hard state, when this log has one (read only, like everything here).
    auto hard_state = log::read_hard_state(target.dir);
    if (!hard_state) {
        std::cerr << "queen inspect log: " << hard_state.error().message() << "\n";
        return exit_corruption;
    }
    if (options.json) {
        nlohmann::json& out = json;
        out["dir"] = target.dir.string();
        if (!target.tenant.empty()) {
            out["tenant"] = target.tenant;
        }
        out["verified"] = options.verify;
        out["format_version"] = log::format_version;
        out["records"] = total_records;
        out["segments"] = nlohmann::json::array();
        for (const SegmentReport& report : reports) {
            nlohmann::json segment;
            segment["file"] = report.path.filename().string();
            segment["size_bytes"] = report.size_bytes;
            segment["header_ok"] = report.header.has_value();
            if (report.header) {
                segment["version"] = report.header->version;
                segment["first_index"] = report.header->first_index.value();
                segment["prev_term"] = report.header->prev_term.value();
            }
            segment["records"] = report.record_count;
            segment["payload_bytes"] = report.payload_bytes;
            segment["zero_tail_bytes"] = report.zero_tail_bytes;
            segment["first_record"] = report.first_record
                                          ? nlohmann::json(report.first_record->value())
                                          : nlohmann::json(nullptr);
            segment["last_record"] = report.last_record
                                         ? nlohmann::json(report.last_record->value())
                                         : nlohmann::json(nullptr);
            segment["last_term"] = report.last_term.value();
            segment["records_after_damage"] = report.records_after_damage;
            segment["damage"] = nlohmann::json::array();
            for (const Damage& damage : report.damage) {
                segment["damage"].push_back(
                    {{"offset", damage.offset},
                     {"reason", damage.reason},
                     {"detail", damage.detail},
                     {"resumed_at", damage.resumed_at ? nlohmann::json(*damage.resumed_at)
                                                      : nlohmann::json(nullptr)}});
            }
            out["segments"].push_back(segment);
        }
        auto finding_json = [](const std::optional<Finding>& finding) {
            if (!finding) {
                return nlohmann::json(nullptr);
            }
            return nlohmann::json{
                {"file", finding->path.string()},
                {"offset", finding->offset},
                {"index", finding->index.value()},
                {"reason", finding->reason},
                {"detail", finding->detail},
                {"written_whole", finding->written_whole ? nlohmann::json(*finding->written_whole)
                                                         : nlohmann::json(nullptr)}};
        };
        out["hard_state"] = *hard_state ? nlohmann::json{{"term", (*hard_state)->term.value()},
                                                         {"vote", (*hard_state)->vote.value()},
                                                         {"commit", (*hard_state)->commit.value()}}
                                        : nlohmann::json(nullptr);
        out["corruption"] = finding_json(corruption);
        out["torn_tail"] = finding_json(torn_tail);
    } else {
        std::cout << "log " << target.dir.string() << ": " << reports.size() << " segments, "
                  << total_records << " records"
                  << (options.verify ? " (every CRC checked)"
                                     : " (framing only; --verify checks CRCs)")
                  << "\n";
        for (const SegmentReport& report : reports) {
            std::cout << "  " << report.path.filename().string() << "  index "
                      << index_text(report.first_record) << ".." << index_text(report.last_record)
                      << "  records " << report.record_count << "  bytes " << report.size_bytes;
            if (report.zero_tail_bytes > 0) {
                std::cout << " (zero-filled tail " << report.zero_tail_bytes << ")";
            }
            if (report.header) {
                std::cout << "  prev_term " << report.header->prev_term.value() << "  last_term "
                          << report.last_term.value();
            }
            std::cout << "\n";
            for (const Damage& damage : report.damage) {
                std::cout << "    damage at byte " << damage.offset << ": " << damage.reason << " ("
                          << damage.detail << ")";
                if (damage.resumed_at) {
                    std::cout << "; decoding resumed at byte " << *damage.resumed_at;
                } else {
                    std::cout << "; nothing decodable after it";
                }
                std::cout << "\n";
            }
        }
        if (*hard_state) {
            std::cout << "hard state: term " << (*hard_state)->term.value() << "  vote "
                      << (*hard_state)->vote.value() << "  commit " << (*hard_state)->commit.value()
                      << "\n";
        }
        if (torn_tail) {
            std::cout << "torn tail: " << torn_tail->path.string() << " at byte "
                      << torn_tail->offset << " (" << torn_tail->reason
                      << "); opening the log truncates it, unless that would drop an entry "
                         "the tenant's state has applied (then the start is refused and no "
                         "file changes)\n";
        }
        if (corruption) {
            std::cout << "CORRUPTION: " << corruption->path.string() << " at byte "
                      << corruption->offset << " (index " << corruption->index.value()
                      << "): " << corruption->reason << " (" << corruption->detail << ")\n";
            if (corruption->written_whole) {
                std::cout << "  not a torn write: " << *corruption->written_whole
                          << "; the record may have been acknowledged, so opening the log "
                             "refuses it\n";
            }
            std::cout << "  to drop it and every later record: "
                      << log::repair_command(target.dir, corruption->index)
                      << " (docs/log-format.md, \"Damage to synced data\")\n";
        }
    }
    return corruption ? exit_corruption : exit_ok;
}

}  // namespace

Result<LogScan> scan_log_dir(const std::filesystem::path& dir, bool verify) {
    QUEEN_TRY(auto names, log::posix_file_system().list(dir));
    std::vector<std::pair<LogIndex, std::string>> found;
    for (const std::string& name : names) {
        if (auto index = log::parse_segment_file_name(name)) {
            found.emplace_back(*index, name);
        }
    }
    std::sort(found.begin(), found.end());

    LogScan scan;
    std::vector<SegmentReport>& reports = scan.segments;
    for (const auto& [index, name] : found) {
        const auto path = dir / name;
        QUEEN_TRY(auto bytes, read_only(path));
        reports.push_back(inspect_segment(path, index, bytes, verify));
    }

    // Classify: damage with nothing valid after it in the last segment is a torn tail (a crash
    // during a write; the log repairs it on open). Everything else is corruption, as are gaps.
    std::optional<Finding>& corruption = scan.corruption;
    std::optional<Finding>& torn_tail = scan.torn_tail;
    for (std::size_t k = 0; k < reports.size(); ++k) {
        const SegmentReport& report = reports[k];
        const bool is_last = k + 1 == reports.size();
        if (k > 0 && report.header && !corruption) {
            const SegmentReport& previous = reports[k - 1];
            const LogIndex previous_last =
                previous.last_record
                    ? *previous.last_record
                    : (previous.header ? previous.header->first_index.prev() : LogIndex{0});
            if (previous.damage.empty() && report.header->first_index != previous_last.next()) {
                corruption = Finding{report.path,
                                     0,
                                     "gap",
                                     "segment starts at index " +
                                         std::to_string(report.header->first_index.value()) +
                                         " but the previous one ends at " +
                                         std::to_string(previous_last.value()),
                                     report.header->first_index,
                                     std::nullopt};
            }
        }
        for (const Damage& damage : report.damage) {
            // A torn header is only a crash during creation when an earlier segment exists; a
            // record that reached the disk whole is no torn write (Log::open refuses it too).
            const bool torn = is_last && !damage.resumed_at && !damage.written_whole &&
                              (damage.reason != "bad_header" || k > 0);
            const Finding finding{report.path,   damage.offset, damage.reason,
                                  damage.detail, damage.index,  damage.written_whole};
            if (torn) {
                torn_tail = finding;
            } else if (!corruption) {
                corruption = finding;
            }
        }
    }
    for (const SegmentReport& report : reports) {
        scan.records += report.record_count;
    }
    return scan;
}

int run_inspect_log(const InspectLogOptions& options) {
    return run_inspect_targets("log", options.dir, InspectPart::log, options.tenant, options.json,
                               [&](const InspectTarget& target, nlohmann::json& report) {
                                   return inspect_log_dir(target, options, report);
                               });
}

}  // namespace queen::cli
