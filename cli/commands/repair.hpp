// cli/commands/repair.hpp — `queen repair`: offline repairs of a stopped node's files that an
// operator runs knowingly (each changes files only with --confirm). Not for a running node.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace CLI {
class App;
}

namespace queen::cli {

struct RepairLogOptions {
    std::filesystem::path dir;   // a log directory, a tenant directory or a data directory
    std::string tenant;          // --tenant NAME: with a data directory, the tenant to repair
    std::uint64_t cut_from = 0;  // --cut-from INDEX: the first index dropped
    bool confirm = false;        // --confirm: change the files (else only say what would go)
    bool json = false;
};

/// Adds `repair log`; the chosen command's exit code lands in `exit_code`.
void register_repair(CLI::App& app, int& exit_code);

/// `queen repair log DIR --cut-from INDEX [--confirm]`: drops the record at INDEX and every later
/// one from the log (log::cut_log), saying how many. Without --confirm it changes nothing and
/// exits 1 after printing the plan. With a tenant directory (DIR/log, or a data directory and
/// its tenant) it also leaves the tenant's raft_recovering marker, so a cluster member rejoins
/// without voting until the leader re-sent what the cut may have dropped. Exit codes: 0 cut, 1
/// not cut (no --confirm, or the cut failed), 2 usage (DIR holds no log, several tenants).
int run_repair_log(const RepairLogOptions& options);

}  // namespace queen::cli
