// cli/commands/inspect.hpp — `queen inspect`: read-only decoding of log segments and LMDB state.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "queen/core/result.hpp"

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

struct InspectStateOptions {
    std::filesystem::path dir;  // a state directory, a tenant directory or a data directory
    std::string tenant;         // --tenant NAME: with a data directory, only that tenant
    bool json = false;
};

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

/// Adds `inspect log` and `inspect state`; the chosen command's exit code lands in `exit_code`.
void register_inspect(CLI::App& app, int& exit_code);
int run_inspect_log(const InspectLogOptions& options);      // inspect_log.cpp
int run_inspect_state(const InspectStateOptions& options);  // inspect_state.cpp

}  // namespace queen::cli
