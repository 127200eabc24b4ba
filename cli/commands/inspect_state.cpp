// cli/commands/inspect_state.cpp — `queen inspect state DIR [--tenant NAME] [--json]`: the LMDB
// tables of a state directory with entry counts and sizes, opened read-only (MDB_RDONLY; safe next
// to a broker); DIR may be a data directory (every tenant's state) or a tenant directory.
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "commands/inspect.hpp"
#include "exit_codes.hpp"
#include "queen/store/env.hpp"

namespace queen::cli {
namespace {

/// "4.0 KiB", "1.5 MiB": sizes for people (JSON carries exact bytes).
std::string human_bytes(std::uint64_t bytes) {
    static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < std::size(units)) {
        value /= 1024.0;
        ++unit;
    }
    std::ostringstream out;
    if (unit == 0) {
        out << bytes << " B";
    } else {
        out << std::fixed << std::setprecision(1) << value << ' ' << units[unit];
    }
    return out.str();
}

nlohmann::json table_json(const store::TableStats& table) {
    return {
        {"name", table.name},
        {"entries", table.entries},
        {"depth", table.depth},
        {"branch_pages", table.branch_pages},
        {"leaf_pages", table.leaf_pages},
        {"overflow_pages", table.overflow_pages},
        {"size_bytes", table.size_bytes()},
    };
}

nlohmann::json report_json(const InspectTarget& target, const store::EnvStats& stats) {
    nlohmann::json tables = nlohmann::json::array();
    for (const auto& table : stats.tables) {
        tables.push_back(table_json(table));
    }
    nlohmann::json out = {
        {"dir", target.dir.string()},
        {"page_size", stats.page_size},
        {"map_size_bytes", stats.map_size_bytes},
        {"file_size_bytes", stats.file_size_bytes},
        {"used_bytes", stats.used_bytes()},
        {"free_pages", stats.free_pages},
        {"last_page_used", stats.last_page_used},
        {"last_txn_id", stats.last_txn_id},
        {"readers_used", stats.readers_used},
        {"readers_max", stats.readers_max},
        {"table_count", stats.tables.size()},
        {"tables", tables},
    };
    if (!target.tenant.empty()) {
        out["tenant"] = target.tenant;
    }
    return out;
}

void print_text(const InspectTarget& target, const store::EnvStats& stats) {
    std::cout << "state " << target.dir.string() << ": LMDB, " << stats.tables.size()
              << " tables, page size " << stats.page_size << ", last txn " << stats.last_txn_id
              << "\n";
    std::cout << "  file " << human_bytes(stats.file_size_bytes) << ", used "
              << human_bytes(stats.used_bytes()) << ", free pages " << stats.free_pages << " ("
              << human_bytes(stats.free_pages * stats.page_size) << "), map "
              << human_bytes(stats.map_size_bytes) << ", readers " << stats.readers_used << "/"
              << stats.readers_max << "\n";
    if (stats.tables.empty()) {
        std::cout << "  (no tables)\n";
        return;
    }
    std::size_t name_width = 5;
    for (const auto& table : stats.tables) {
        name_width = std::max(name_width, table.name.size());
    }
    std::cout << "  " << std::left << std::setw(static_cast<int>(name_width)) << "table"
              << std::right << std::setw(14) << "entries" << std::setw(7) << "depth"
              << std::setw(10) << "branch" << std::setw(10) << "leaf" << std::setw(10) << "overflow"
              << std::setw(12) << "size"
              << "\n";
    for (const auto& table : stats.tables) {
        std::cout << "  " << std::left << std::setw(static_cast<int>(name_width)) << table.name
                  << std::right << std::setw(14) << table.entries << std::setw(7) << table.depth
                  << std::setw(10) << table.branch_pages << std::setw(10) << table.leaf_pages
                  << std::setw(10) << table.overflow_pages << std::setw(12)
                  << human_bytes(table.size_bytes()) << "\n";
    }
}

/// Reads one state directory: prints its text report, or (with --json) stores it in `json`.
int inspect_state_dir(const InspectTarget& target, const InspectStateOptions& options,
                      nlohmann::json& json) {
    auto env = store::Env::open_read_only(target.dir);
    if (!env) {
        std::cerr << "queen inspect state: " << env.error().message() << "\n";
        return exit_failed;
    }
    auto stats = env->stats();
    if (!stats) {
        std::cerr << "queen inspect state: " << stats.error().message() << "\n";
        return exit_failed;
    }
    if (options.json) {
        json = report_json(target, *stats);
    } else {
        print_text(target, *stats);
    }
    return exit_ok;
}

}  // namespace

int run_inspect_state(const InspectStateOptions& options) {
    return run_inspect_targets("state", options.dir, InspectPart::state, options.tenant,
                               options.json,
                               [&](const InspectTarget& target, nlohmann::json& report) {
                                   return inspect_state_dir(target, options, report);
                               });
}

}  // namespace queen::cli
