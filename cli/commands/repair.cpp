// cli/commands/repair.cpp — `queen repair log DIR --cut-from INDEX [--confirm] [--json]`: the
// operator's cut of a log that Log::open refused for damage to synced data (docs/log-format.md,
// "Damage to synced data"). Plans read-only; changes files only with --confirm.
#include "commands/repair.hpp"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands/inspect.hpp"
#include "exit_codes.hpp"
#include "queen/log/file.hpp"
#include "queen/log/log.hpp"

namespace queen::cli {

namespace {

/// Creates `marker` durably (file and directory synced); one that exists already stays.
Status leave_marker(const std::filesystem::path& marker) {
    log::FileSystem& fs = log::posix_file_system();
    auto file = fs.open(marker, log::OpenMode::create_exclusive);
    if (!file && file.error().is(Errc::already_exists)) {
        return {};
    }
    QUEEN_TRY(std::unique_ptr<log::File> created, std::move(file));
    const std::string text = "recovering\n";
    QUEEN_TRY(const std::size_t written, created->write_at(0, as_bytes(text)));
    if (written != text.size()) {
        return Error{Errc::io, marker.string() + ": short write"};
    }
    QUEEN_TRY(created->sync_data());
    return fs.sync_directory(marker.parent_path());
}

}  // namespace

void register_repair(CLI::App& app, int& exit_code) {
    auto* repair = app.add_subcommand(
        "repair", "Repair a stopped node's files on purpose (changes files only with --confirm)");
    repair->require_subcommand(1);
    auto options = std::make_shared<RepairLogOptions>();
    auto* log = repair->add_subcommand(
        "log",
        "Cut a damaged log: drop the record at --cut-from and every later one (what `queen "
        "inspect log DIR --verify` and a refused start name); DIR as for inspect log");
    log->add_option("dir", options->dir,
                    "Data directory, tenants/<tenant> directory, or a directory holding *.seg")
        ->required();
    log->add_option("--tenant", options->tenant, "With a data directory: the tenant to repair");
    log->add_option("--cut-from", options->cut_from, "The first index to drop (>= 1)")
        ->required()
        ->check(CLI::PositiveNumber);
    log->add_flag("--confirm", options->confirm,
                  "Change the files; without it only print what would be dropped");
    log->add_flag("--json", options->json, "Print the report as JSON");
    log->callback([options, &exit_code] { exit_code = run_repair_log(*options); });
}

int run_repair_log(const RepairLogOptions& options) {
    bool is_data_dir = false;
    auto targets = resolve_inspect_dir(options.dir, InspectPart::log, options.tenant, is_data_dir);
    if (!targets) {
        std::cerr << "queen repair log: " << targets.error().context << "\n";
        return targets.error().is(Errc::invalid_argument) ? exit_usage : exit_failed;
    }
    if (targets->size() != 1) {
        std::cerr << "queen repair log: " << options.dir.string() << " holds " << targets->size()
                  << " tenants' logs: name one with --tenant\n";
        return exit_usage;
    }
    const InspectTarget& target = targets->front();
    const LogIndex first_dropped{options.cut_from};
    auto report = log::cut_log(target.dir, first_dropped, log::Options{}, options.confirm);
    if (!report) {
        std::cerr << "queen repair log: " << report.error().message() << "\n";
        return exit_failed;
    }
    // A tenant's log: its raft_recovering marker keeps a cluster member from voting as if it
    // still held what was cut (docs/raft.md section 1); a single node does not read it.
    const bool is_tenant_log = target.dir.filename() == "log" &&
                               std::filesystem::is_directory(target.dir.parent_path() / "state");
    const auto marker = target.dir.parent_path() / "raft_recovering";
    if (report->applied && is_tenant_log && report->records_dropped > 0) {
        if (Status written = leave_marker(marker); !written) {
            std::cerr << "queen repair log: the log was cut, but " << written.error().message()
                      << "\n";
            return exit_failed;
        }
    }
    const std::string range = report->records_dropped == 0
                                  ? std::string("no record")
                                  : std::to_string(report->records_dropped) + " record" +
                                        (report->records_dropped == 1 ? "" : "s") + " (index " +
                                        std::to_string(first_dropped.value()) + ".." +
                                        std::to_string(report->last_dropped.value()) + ")";
    if (options.json) {
        nlohmann::json removed = nlohmann::json::array();
        for (const auto& path : report->removed_segments) {
            removed.push_back(path.string());
        }
        std::cout << nlohmann::json{{"dir", target.dir.string()},
                                    {"cut_from", first_dropped.value()},
                                    {"last_dropped", report->last_dropped.value()},
                                    {"records_dropped", report->records_dropped},
                                    {"segment", report->segment.string()},
                                    {"segment_removed", report->segment_removed},
                                    {"cut_at_offset", report->cut_at_offset},
                                    {"bytes_cut", report->bytes_cut},
                                    {"removed_segments", removed},
                                    {"applied", report->applied}}
                         .dump(2)
                  << "\n";
    } else if (report->applied) {
        std::cout << "cut " << target.dir.string() << " from index " << first_dropped.value()
                  << ": dropped " << range << "; " << report->segment.string()
                  << (report->segment_removed
                          ? std::string(" removed")
                          : " cut to " + std::to_string(report->cut_at_offset) + " bytes")
                  << ", " << report->removed_segments.size() << " later segments removed\n";
        if (is_tenant_log && report->records_dropped > 0) {
            std::cout << "left " << marker.string()
                      << ": a cluster member rejoins without voting until the leader re-sent "
                         "the dropped entries\n";
        }
    } else {
        std::cout << "would cut " << target.dir.string() << " from index " << first_dropped.value()
                  << ", dropping " << range << " (" << report->segment.string()
                  << (report->segment_removed
                          ? std::string(" removed")
                          : " cut to " + std::to_string(report->cut_at_offset) + " bytes")
                  << ", " << report->removed_segments.size()
                  << " later segments removed); nothing was changed: rerun with --confirm\n";
    }
    return report->applied ? exit_ok : exit_failed;
}

}  // namespace queen::cli
