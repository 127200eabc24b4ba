// cli/commands/inspect_raft.cpp — `queen inspect raft DIR [--tenant NAME] [--verify] [--json]`:
// a tenant's raft state on disk, read-only: the hard state (term, vote, commit hint), the log's
// first and last index with their terms, and the raft_recovering marker of protocol-aware
// recovery (docs/cluster.md). DIR may be a data directory (every tenant), a tenant directory or
// its log/ directory.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "commands/inspect.hpp"
#include "exit_codes.hpp"
#include "queen/log/hard_state.hpp"

namespace queen::cli {
namespace {

namespace fs = std::filesystem;

/// The log's bounds as raft sees them: the first entry it holds and the last, with their terms.
/// An empty log (no record) holds nothing from its first segment's first index on: last_index
/// is one below it and last_term the term before it (the segment header's prev_term).
struct LogBounds {
    std::optional<LogIndex> first_index;
    std::optional<Term> first_term;  // nullopt when the log holds no entry
    LogIndex last_index;
    Term last_term;
};

LogBounds bounds_of(const LogScan& scan) {
    LogBounds bounds;
    for (const LogSegmentReport& segment : scan.segments) {
        if (segment.first_record) {
            bounds.first_index = segment.first_record;
            bounds.first_term = segment.first_term;
            break;
        }
    }
    for (auto it = scan.segments.rbegin(); it != scan.segments.rend(); ++it) {
        if (it->last_record) {
            bounds.last_index = *it->last_record;
            bounds.last_term = it->last_term;
            return bounds;
        }
    }
    if (!scan.segments.empty() && scan.segments.front().header) {
        const log::SegmentHeader& header = *scan.segments.front().header;
        bounds.first_index = header.first_index;
        bounds.last_index = header.first_index.prev();
        bounds.last_term = header.prev_term;
    }
    return bounds;
}

nlohmann::json finding_json(const std::optional<LogFinding>& finding) {
    if (!finding) {
        return nullptr;
    }
    return {{"file", finding->path.string()},
            {"offset", finding->offset},
            {"reason", finding->reason},
            {"detail", finding->detail}};
}

/// Reads one log directory's raft state: prints it, or (with --json) stores it in `json`.
/// Returns exit_ok, exit_corruption (a damaged hard state file, or corruption in the log) or
/// exit_failed.
int inspect_raft_dir(const InspectTarget& target, const InspectRaftOptions& options,
                     nlohmann::json& json) {
    auto scan = scan_log_dir(target.dir, options.verify);
    if (!scan) {
        std::cerr << "queen inspect raft: " << scan.error().message() << "\n";
        return exit_failed;
    }
    auto hard_state = log::read_hard_state(target.dir);
    if (!hard_state) {
        std::cerr << "queen inspect raft: " << hard_state.error().message() << "\n";
    }
    const LogBounds bounds = bounds_of(*scan);
    // The marker lives in the tenant directory, next to log/; a log directory found elsewhere
    // says nothing about it.
    std::optional<fs::path> marker;
    std::optional<bool> is_recovering;
    if (target.dir.filename() == "log") {
        marker = target.dir.parent_path() / "raft_recovering";
        std::error_code ec;
        is_recovering = fs::exists(*marker, ec);
    }
    // A snapshot install the node did not finish (modules/node/src/snapshot.hpp): its meta
    // names the snapshot's index and term; a download cut short is dropped at the next start.
    std::optional<std::string> install_meta;
    bool is_download_cut = false;
    if (target.dir.filename() == "log") {
        const fs::path tenant_dir = target.dir.parent_path();
        std::error_code ec;
        if (fs::exists(tenant_dir / "snapshot.install", ec)) {
            std::ifstream in(tenant_dir / "snapshot.install" / "meta");
            std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
            while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
                text.pop_back();
            }
            for (char& c : text) {
                c = c == '\n' ? ',' : c;
            }
            install_meta = text.empty() ? std::string("(no meta)") : text;
        }
        is_download_cut = fs::exists(tenant_dir / "snapshot.incoming", ec);
    }
    std::vector<std::string> notes;
    if (install_meta) {
        notes.push_back("snapshot.install is present (" + *install_meta +
                        "): a snapshot install did not finish; the next start completes it "
                        "(the state is replaced and the log restarts after that index)");
    }
    if (is_download_cut) {
        notes.push_back(
            "snapshot.incoming is present: a snapshot download was cut short; the next start "
            "drops it and the leader sends the snapshot again");
    }
    if (hard_state && *hard_state && (*hard_state)->commit > bounds.last_index) {
        notes.push_back("the commit hint " + std::to_string((*hard_state)->commit.value()) +
                        " is above the log's last index " +
                        std::to_string(bounds.last_index.value()) +
                        ": the log lost entries this node had; raft trusts the hint only up "
                        "to the last durable entry");
    }
    if (scan->torn_tail) {
        notes.push_back(
            "the log's tail is torn (" + scan->torn_tail->reason +
            "): opening it cuts the tail, and in a cluster the node then comes back as a "
            "recovering member");
    }
    if (is_recovering.value_or(false)) {
        notes.push_back(
            "raft_recovering is present: this node votes for nobody and never campaigns until "
            "it holds everything the leader may have committed (docs/cluster.md)");
    }

    if (options.json) {
        json["dir"] = target.dir.string();
        if (!target.tenant.empty()) {
            json["tenant"] = target.tenant;
        }
        if (hard_state && *hard_state) {
            json["hard_state"] = {{"term", (*hard_state)->term.value()},
                                  {"vote", (*hard_state)->vote.value()},
                                  {"commit", (*hard_state)->commit.value()}};
        } else {
            json["hard_state"] = nullptr;
        }
        if (!hard_state) {
            json["hard_state_error"] = hard_state.error().message();
        }
        json["log"] = {
            {"first_index",
             bounds.first_index ? nlohmann::json(bounds.first_index->value()) : nullptr},
            {"first_term",
             bounds.first_term ? nlohmann::json(bounds.first_term->value()) : nullptr},
            {"last_index", bounds.last_index.value()},
            {"last_term", bounds.last_term.value()},
            {"records", scan->records},
            {"segments", scan->segments.size()},
            {"verified", options.verify},
        };
        json["recovering"] = is_recovering ? nlohmann::json(*is_recovering) : nullptr;
        json["recovering_marker"] = marker ? nlohmann::json(marker->string()) : nullptr;
        json["snapshot_install"] = install_meta ? nlohmann::json(*install_meta) : nullptr;
        json["snapshot_download_cut"] = is_download_cut;
        json["torn_tail"] = finding_json(scan->torn_tail);
        json["corruption"] = finding_json(scan->corruption);
        json["notes"] = notes;
    } else {
        std::cout << "raft " << target.dir.string()
                  << (target.tenant.empty() ? "" : " (tenant " + target.tenant + ")") << "\n";
        if (!hard_state) {
            std::cout << "  hard state  DAMAGED: " << hard_state.error().message() << "\n";
        } else if (!*hard_state) {
            std::cout << "  hard state  none saved (no term or vote was ever made durable)\n";
        } else {
            const log::HardState& state = **hard_state;
            std::cout << "  term        " << state.term.value() << "\n"
                      << "  vote        "
                      << (state.vote.value() == 0 ? std::string("none")
                                                  : "node " + std::to_string(state.vote.value()))
                      << "\n"
                      << "  commit      " << state.commit.value()
                      << " (a hint: the leader says what is committed)\n";
        }
        std::cout << "  log         ";
        if (bounds.first_term) {
            std::cout << "first " << bounds.first_index->value() << " (term "
                      << bounds.first_term->value() << "), last " << bounds.last_index.value()
                      << " (term " << bounds.last_term.value() << ")";
        } else if (bounds.first_index) {
            std::cout << "empty from index " << bounds.first_index->value() << " (term before it "
                      << bounds.last_term.value() << ")";
        } else {
            std::cout << "no readable segment";
        }
        std::cout << ", " << scan->records << " records in " << scan->segments.size() << " segments"
                  << (options.verify ? " (every CRC checked)"
                                     : " (framing only; --verify checks CRCs)")
                  << "\n";
        std::cout << "  recovering  "
                  << (!is_recovering   ? std::string("unknown (not a tenant's log/ directory)")
                      : *is_recovering ? "yes (" + marker->string() + ")"
                                       : std::string("no"))
                  << "\n";
        for (const std::string& note : notes) {
            std::cout << "  note: " << note << "\n";
        }
        if (scan->corruption) {
            std::cout << "  CORRUPTION: " << scan->corruption->path.string() << " at byte "
                      << scan->corruption->offset << ": " << scan->corruption->reason << " ("
                      << scan->corruption->detail << "); queen inspect log --verify shows more\n";
        }
    }
    return !hard_state || scan->corruption ? exit_corruption : exit_ok;
}

}  // namespace

int run_inspect_raft(const InspectRaftOptions& options) {
    return run_inspect_targets("raft", options.dir, InspectPart::log, options.tenant, options.json,
                               [&](const InspectTarget& target, nlohmann::json& report) {
                                   return inspect_raft_dir(target, options, report);
                               });
}

}  // namespace queen::cli
