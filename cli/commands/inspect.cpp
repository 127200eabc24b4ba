// cli/commands/inspect.cpp — registers `queen inspect log|raft|state` and finds the directories a
// path stands for (exact, tenant or data directory); the decoding is in inspect_*.cpp.
#include "commands/inspect.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <system_error>

#include "exit_codes.hpp"

namespace queen::cli {
namespace {

namespace fs = std::filesystem;

bool is_existing_dir(const fs::path& path) {
    std::error_code ec;
    return fs::is_directory(path, ec);
}

/// True when `dir` holds what `part` reads: a segment file, or LMDB's data.mdb.
bool holds_part_files(const fs::path& dir, InspectPart part) {
    std::error_code ec;
    if (part == InspectPart::state) {
        return fs::is_regular_file(dir / "data.mdb", ec);
    }
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.path().extension() == ".seg") {
            return true;
        }
    }
    return false;
}

const char* part_name(InspectPart part) {
    return part == InspectPart::log ? "log" : "state";
}

const char* part_files(InspectPart part) {
    return part == InspectPart::log ? "no log segments (*.seg)" : "no LMDB state (data.mdb)";
}

}  // namespace

Result<std::vector<InspectTarget>> resolve_inspect_dir(const fs::path& given, InspectPart part,
                                                       const std::string& tenant,
                                                       bool& is_data_dir) {
    is_data_dir = false;
    if (!is_existing_dir(given)) {
        return Error{Errc::not_found, given.string() + " is not a directory"};
    }
    const fs::path dir = given.has_filename() ? given : given.parent_path();  // "x/" -> "x"
    const fs::path sub = dir / part_name(part);
    const bool is_tenant_dir = is_existing_dir(sub);
    const bool is_data = is_existing_dir(dir / "tenants");
    if (!tenant.empty() && !is_data) {
        return Error{Errc::invalid_argument,
                     "--tenant applies to a data directory (one holding tenants/), and " +
                         dir.string() + " is not one"};
    }
    if (tenant.empty() && holds_part_files(dir, part)) {
        return std::vector<InspectTarget>{{"", dir}};
    }
    if (tenant.empty() && is_tenant_dir) {
        if (!holds_part_files(sub, part)) {
            return Error{Errc::not_found, sub.string() + " holds " + part_files(part)};
        }
        std::error_code ec;
        const fs::path named = fs::weakly_canonical(dir, ec);  // "." has no useful name
        return std::vector<InspectTarget>{{(ec ? dir : named).filename().string(), sub}};
    }
    if (!is_data) {
        return Error{Errc::not_found, dir.string() + " holds " + part_files(part) +
                                          ", and is neither a tenant " + "directory (with " +
                                          part_name(part) + "/) nor a data directory (with " +
                                          "tenants/<tenant>/" + part_name(part) + "/)"};
    }
    is_data_dir = true;
    std::vector<InspectTarget> targets;
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir / "tenants", ec)) {
        const fs::path candidate = entry.path() / part_name(part);
        if (is_existing_dir(entry.path()) && holds_part_files(candidate, part)) {
            targets.push_back({entry.path().filename().string(), candidate});
            names.push_back(entry.path().filename().string());
        }
    }
    std::sort(targets.begin(), targets.end(),
              [](const InspectTarget& a, const InspectTarget& b) { return a.tenant < b.tenant; });
    std::sort(names.begin(), names.end());
    if (targets.empty()) {
        return Error{Errc::not_found, (dir / "tenants").string() + " holds no tenant with a " +
                                          part_name(part) + " (" + part_files(part) + ")"};
    }
    if (tenant.empty()) {
        return targets;
    }
    for (InspectTarget& target : targets) {
        if (target.tenant == tenant) {
            return std::vector<InspectTarget>{std::move(target)};
        }
    }
    std::string known;
    for (const std::string& name : names) {
        known += (known.empty() ? "" : ", ") + name;
    }
    return Error{Errc::not_found, "no tenant '" + tenant + "' with a " + part_name(part) + " in " +
                                      dir.string() + " (tenants: " + known + ")"};
}

void register_inspect(CLI::App& app, int& exit_code) {
    auto* inspect = app.add_subcommand(
        "inspect", "Read log segments, raft state and LMDB state on disk, read-only");
    inspect->require_subcommand(1);

    auto log_options = std::make_shared<InspectLogOptions>();
    auto* log = inspect->add_subcommand(
        "log",
        "Decode the log segments of DIR: a data directory (every tenant), a tenant directory "
        "or its log/ directory");
    log->add_option("dir", log_options->dir,
                    "Data directory, tenants/<tenant> directory, or a directory holding *.seg")
        ->required();
    log->add_option("--tenant", log_options->tenant,
                    "With a data directory: only this tenant (default: every tenant)");
    log->add_flag("--verify", log_options->verify,
                  "Check every record's CRC; exit 4 on corruption");
    log->add_flag("--json", log_options->json,
                  "Print JSON (an array of reports for a data directory without --tenant)");
    log->callback([log_options, &exit_code] { exit_code = run_inspect_log(*log_options); });

    auto raft_options = std::make_shared<InspectRaftOptions>();
    auto* raft = inspect->add_subcommand(
        "raft",
        "Show the raft state on disk of DIR: term, vote, commit hint, the log's first and last "
        "index with their terms, and the raft_recovering marker; DIR as for log");
    raft->add_option("dir", raft_options->dir,
                     "Data directory, tenants/<tenant> directory, or a directory holding *.seg")
        ->required();
    raft->add_option("--tenant", raft_options->tenant,
                     "With a data directory: only this tenant (default: every tenant)");
    raft->add_flag("--verify", raft_options->verify,
                   "Check every record's CRC while finding the log's bounds; exit 4 on corruption");
    raft->add_flag("--json", raft_options->json,
                   "Print JSON (an array of reports for a data directory without --tenant)");
    raft->callback([raft_options, &exit_code] { exit_code = run_inspect_raft(*raft_options); });

    auto state_options = std::make_shared<InspectStateOptions>();
    auto* state = inspect->add_subcommand(
        "state",
        "List the LMDB tables of DIR with entry counts and sizes: a data directory (every "
        "tenant), a tenant directory or its state/ directory");
    state
        ->add_option("dir", state_options->dir,
                     "Data directory, tenants/<tenant> directory, or a directory holding data.mdb")
        ->required();
    state->add_option("--tenant", state_options->tenant,
                      "With a data directory: only this tenant (default: every tenant)");
    state->add_flag("--json", state_options->json,
                    "Print JSON (an array of reports for a data directory without --tenant)");
    state->add_flag("--verify", state_options->verify,
                    "Read every entry of every table and check every message block's checksum "
                    "(exit 4 on damage)");
    state->callback([state_options, &exit_code] { exit_code = run_inspect_state(*state_options); });
}

int run_inspect_targets(
    std::string_view command, const fs::path& given, InspectPart part, const std::string& tenant,
    bool json, const std::function<int(const InspectTarget&, nlohmann::json&)>& inspect_one) {
    bool is_data_dir = false;
    auto targets = resolve_inspect_dir(given, part, tenant, is_data_dir);
    if (!targets) {
        std::cerr << "queen inspect " << command << ": " << targets.error().context << "\n";
        return targets.error().is(Errc::invalid_argument) ? exit_usage : exit_failed;
    }
    bool is_corrupt = false;
    bool is_failed = false;
    nlohmann::json reports = nlohmann::json::array();
    for (std::size_t i = 0; i < targets->size(); ++i) {
        if (!json && i > 0) {
            std::cout << "\n";
        }
        nlohmann::json report;
        const int code = inspect_one((*targets)[i], report);
        is_corrupt = is_corrupt || code == exit_corruption;
        is_failed = is_failed || (code != exit_ok && code != exit_corruption);
        if (json && !report.is_null()) {
            reports.push_back(std::move(report));
        }
    }
    if (json) {
        if (is_data_dir && tenant.empty()) {
            std::cout << reports.dump(2) << "\n";
        } else if (!reports.empty()) {
            std::cout << reports.front().dump(2) << "\n";
        }
    }
    std::cout.flush();
    return is_corrupt ? exit_corruption : is_failed ? exit_failed : exit_ok;
}

}  // namespace queen::cli
