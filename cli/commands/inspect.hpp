// cli/commands/inspect.hpp — `queen inspect`: read-only decoding of log segments, the raft state
// next to them and LMDB state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"
#include "queen/log/format.hpp"

namespace CLI {
class App;
}

namespace queen::cli {

struct InspectLogOptions {
    std::filesystem::path dir;  // a log directory, a tenant directory or a data directory
    std::string tenant;         // --tenant NAME: with a data directory, only that tenant
    bool verify = false;        // recompute every CRC; exit 4 on a mismatch
    bool json = false;
};

struct InspectRaftOptions {
    std::filesystem::path dir;  // a log directory, a tenant directory or a data directory
    std::string tenant;         // --tenant NAME: with a data directory, only that tenant
    bool verify = false;        // recompute every CRC while finding the log's bounds
    bool json = false;
};

struct InspectStateOptions {
    std::filesystem::path dir;  // a state directory, a tenant directory or a data directory
    std::string tenant;         // --tenant NAME: with a data directory, only that tenant
    bool json = false;
    bool verify = false;  // --verify: read every entry of every table, check every block
};

/// One damaged region of a segment.
struct LogDamage {
    std::uint64_t offset = 0;
    std::string reason;
    std::string detail;
    std::optional<std::uint64_t> resumed_at;  // next valid record after the damage, if any
    LogIndex index;                           // the index expected at the damaged record
    // With --verify: why the damaged record reached the disk whole (a valid CRC, or one bit
    // away from a valid record: log::find_written_damage), so it is no torn write.
    std::optional<std::string> written_whole;
};

/// One segment file as decoded read-only.
struct LogSegmentReport {
    std::filesystem::path path;
    std::uint64_t size_bytes = 0;
    std::optional<log::SegmentHeader> header;
    LogIndex name_index;
    std::uint64_t record_count = 0;
    std::uint64_t records_after_damage = 0;
    std::optional<LogIndex> first_record;
    std::optional<LogIndex> last_record;
    Term first_term;  // of first_record
    Term last_term;   // of last_record
    std::uint64_t payload_bytes = 0;
    std::uint64_t zero_tail_bytes = 0;  // the writer's zero fill after the last record
    std::vector<LogDamage> damage;
};

/// Where a log is damaged.
struct LogFinding {
    std::filesystem::path path;
    std::uint64_t offset = 0;
    std::string reason;
    std::string detail;
    LogIndex index;                            // the index expected at the damaged record
    std::optional<std::string> written_whole;  // as in LogDamage
};

/// A log directory decoded read-only: its segments in index order, the first corruption (damage
/// with valid records after it, a record that reached the disk whole and was damaged after (a
/// bit flipped in the newest record too; seen with --verify), a gap between segments) and the
/// torn tail (other damage at the end of the last segment with nothing valid after it: a crash
/// during a write, which opening the log cuts).
struct LogScan {
    std::vector<LogSegmentReport> segments;
    std::uint64_t records = 0;
    std::optional<LogFinding> corruption;
    std::optional<LogFinding> torn_tail;
};

/// Reads every segment of `dir` (O_RDONLY; never repairs). `verify` checks every record's CRC,
/// else only the framing. Errors: listing or reading a file failed (Errc::io, ...).
[[nodiscard]] Result<LogScan> scan_log_dir(const std::filesystem::path& dir, bool verify);

/// What `inspect` reads: a tenant's log/ or state/ directory.
enum class InspectPart { log, state };

/// One directory to inspect, with its tenant's name when the path showed it.
struct InspectTarget {
    std::string tenant;  // empty when the exact directory was given
    std::filesystem::path dir;
};

/// The `part` directories `given` stands for: `given` itself when it holds the files (*.seg, or
/// data.mdb), `given`/log|state for a tenant directory, and tenants/<name>/log|state of every
/// tenant (or of `tenant` only) for a data directory. `is_data_dir` is set for the last form.
/// Errors (Errc::not_found / invalid_argument) say what was looked for and where; a directory
/// holding none of these is an error, never an empty result.
[[nodiscard]] Result<std::vector<InspectTarget>> resolve_inspect_dir(
    const std::filesystem::path& given, InspectPart part, const std::string& tenant,
    bool& is_data_dir);

/// Runs `inspect_one(target, report)` (an exit code; `report` gets its JSON form) on every
/// directory `given` stands for (resolve_inspect_dir), even after one fails, and prints the JSON
/// reports when `json`: an array for a data directory without `tenant`, else the one report.
/// Returns the worst exit code (corruption, then failure); a path that names nothing to inspect
/// is reported on stderr as "queen inspect <command>: ..." with exit 2 (usage) or 1.
int run_inspect_targets(
    std::string_view command, const std::filesystem::path& given, InspectPart part,
    const std::string& tenant, bool json,
    const std::function<int(const InspectTarget&, nlohmann::json&)>& inspect_one);

/// Adds `inspect log`, `inspect raft` and `inspect state`; the chosen command's exit code lands
/// in `exit_code`.
void register_inspect(CLI::App& app, int& exit_code);
int run_inspect_log(const InspectLogOptions& options);      // inspect_log.cpp
int run_inspect_raft(const InspectRaftOptions& options);    // inspect_raft.cpp
int run_inspect_state(const InspectStateOptions& options);  // inspect_state.cpp

}  // namespace queen::cli
