// cli/commands/inspect_state.cpp — `queen inspect state DIR [--tenant NAME] [--json]`: the LMDB
// tables of a state directory with entry counts and sizes, and what the KV, lock and timer tables
// hold (keys per bucket, locks held now, pending timers and the earliest due) and the stream
// queries (epoch, live rows), opened read-only
// (MDB_RDONLY; safe next to a broker); DIR may be a data directory (every tenant's state) or a
// tenant directory.
#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands/inspect.hpp"
#include "exit_codes.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/iso_time.hpp"
#include "queen/kv/kv.hpp"
#include "queen/locks/locks.hpp"
#include "queen/queues/queries.hpp"
#include "queen/store/env.hpp"
#include "queen/streams/streams.hpp"
#include "queen/timers/timers.hpp"

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

std::string iso_of(std::int64_t ms) {
    char text[iso_time_bytes_max];
    return std::string(text, write_iso_time(text, ms, false));
}

/// What the KV, lock and timer tables hold. A part is absent (nullopt) when its tables are not
/// in the file (state written before the module existed).
struct StateSummary {
    std::optional<std::vector<kv::BucketInfo>> kv_buckets;  ///< records per bucket
    std::optional<std::uint64_t> locks_held;                ///< grants current at now_ms
    std::optional<std::uint64_t> timers_pending;
    std::optional<timers::Timer> timer_earliest;  ///< the earliest due (payload not read)
    /// Stream queries with their live rows (counted: O(rows), fine offline).
    std::optional<std::vector<std::pair<streams::Query, std::uint64_t>>> stream_queries;
    bool has_stream_garbage = false;  ///< rows of reset or removed queries not collected yet
    std::int64_t now_ms = 0;
};

/// Reads the summary in one read txn. A module whose tables are missing is left out; other
/// errors (a record that does not decode) are returned.
Result<StateSummary> read_summary(store::Env& env) {
    StateSummary summary;
    summary.now_ms = SystemClock::instance().wall_ms();
    const TimestampMs now{summary.now_ms};
    // Opening a read-only Env's tables only looks them up; a missing one is Errc::not_found.
    const auto is_missing = [](const Error& error) { return error.is(store::Errc::not_found); };
    auto kv_state = kv::KvState::open(env, {});
    if (!kv_state && !is_missing(kv_state.error())) {
        return std::move(kv_state).error();
    }
    auto lock_state = locks::LockState::open(env, {});
    if (!lock_state && !is_missing(lock_state.error())) {
        return std::move(lock_state).error();
    }
    auto timer_state = timers::TimerState::open(env, {});
    if (!timer_state && !is_missing(timer_state.error())) {
        return std::move(timer_state).error();
    }
    auto stream_state = streams::StreamsState::open(env, {});
    if (!stream_state && !is_missing(stream_state.error())) {
        return std::move(stream_state).error();
    }
    QUEEN_TRY(auto txn, env.begin_read());
    if (stream_state) {
        std::vector<std::pair<streams::Query, std::uint64_t>> queries;
        const std::uint32_t page_size = stream_state->options().list_limit_max;
        std::string after;
        for (;;) {
            QUEEN_TRY(auto page,
                      streams::list_queries(stream_state->tables(), txn, after, page_size));
            for (streams::Query& query : page.queries) {
                QUEEN_TRY(const std::uint64_t rows,
                          streams::count_rows(stream_state->tables(), txn, query.query_id));
                queries.emplace_back(std::move(query), rows);
            }
            if (page.next_after.empty()) {
                break;
            }
            after = page.next_after;
        }
        summary.stream_queries = std::move(queries);
        QUEEN_TRY(summary.has_stream_garbage, stream_state->has_garbage(txn));
    }
    if (kv_state) {
        QUEEN_TRY(summary.kv_buckets, kv::list_buckets(kv_state->tables(), txn));
    }
    if (lock_state) {
        // Pages of current grants (expired records that expire() has not deleted are skipped).
        const std::uint32_t page_size = lock_state->options().list_limit_max;
        std::uint64_t held = 0;
        std::string after;
        for (;;) {
            QUEEN_TRY(auto page, locks::list(lock_state->tables(), txn, after, page_size, now));
            held += page.size();
            if (page.size() < page_size) {
                break;
            }
            after = page.back().name;
        }
        summary.locks_held = held;
    }
    if (timer_state) {
        QUEEN_TRY(summary.timers_pending, timers::count(timer_state->tables(), txn));
        QUEEN_TRY(auto earliest, timers::list_due(timer_state->tables(), txn, 1, false));
        if (!earliest.empty()) {
            summary.timer_earliest = std::move(earliest.front());
        }
    }
    return summary;
}

/// What --verify found: every entry of every table read (LMDB finds a damaged page structure),
/// the store's checksum of every value checked where the table has them, every message block's
/// format, header and checksum checked.
struct VerifyReport {
    std::uint64_t tables = 0;
    std::uint64_t unchecked_tables = 0;  ///< made before value checksums: values not checked
    std::uint64_t entries = 0;
    std::uint64_t blocks = 0;
    std::uint64_t unchecked_blocks = 0;  ///< format 3: written before blocks had checksums
    std::uint64_t damaged = 0;
    std::vector<std::string> damage;  ///< the first damage_listed of them
    static constexpr std::size_t damage_listed = 20;

    void add_damage(std::string what) {
        ++damaged;
        if (damage.size() < damage_listed) {
            damage.push_back(std::move(what));
        }
    }
};

Result<VerifyReport> verify_state(store::Env& env) {
    VerifyReport report;
    QUEEN_TRY(const std::vector<std::string> names, env.table_names());
    QUEEN_TRY(auto txn, env.begin_read());
    for (const std::string& name : names) {
        QUEEN_TRY(const store::Table table, env.open_table(name));
        ++report.tables;
        const bool is_blocks = name == queues::blocks_table_name;
        if (!is_blocks && !table.has_value_checksums()) {
            ++report.unchecked_tables;
        }
        QUEEN_TRY(auto cursor, txn.cursor(table));
        for (auto entry = cursor.first();; entry = cursor.next()) {
            if (!entry && entry.error().is(Errc::corruption)) {
                // A value failed its checksum: the cursor stands on it, the walk goes on.
                ++report.entries;
                report.add_damage(entry.error().context);
                continue;
            }
            if (!entry) {
                report.add_damage("table " + name + " after " + std::to_string(report.entries) +
                                  " entries: " + entry.error().message());
                break;
            }
            if (!*entry) {
                break;
            }
            ++report.entries;
            if (!is_blocks) {
                continue;
            }
            ++report.blocks;
            const ByteSpan value = (*entry)->value;
            if (!value.empty() && value[0] == 3) {
                ++report.unchecked_blocks;
            }
            if (Status checked = queues::verify_block(value); !checked) {
                const ByteSpan key = (*entry)->key;
                std::uint64_t position = 0;  // the key: u64 big-endian
                for (const Byte byte : key.first(std::min<std::size_t>(key.size(), 8))) {
                    position = (position << 8) | byte;
                }
                report.add_damage(std::string(queues::blocks_table_name) + " position " +
                                  std::to_string(position) + ": " + checked.error().context);
            }
        }
    }
    return report;
}

nlohmann::json verify_json(const VerifyReport& report) {
    return nlohmann::json{{"tables", report.tables},
                          {"tables_without_checksums", report.unchecked_tables},
                          {"entries", report.entries},
                          {"blocks", report.blocks},
                          {"blocks_without_checksum", report.unchecked_blocks},
                          {"damaged", report.damaged},
                          {"damage", report.damage}};
}

void print_verify(const VerifyReport& report) {
    std::cout << "verify: " << report.tables << " tables, " << report.entries << " entries read, "
              << report.blocks << " message blocks checked";
    if (report.unchecked_tables > 0) {
        std::cout << " (" << report.unchecked_tables
                  << " tables made before value checksums: read, values not checked)";
    }
    if (report.unchecked_blocks > 0) {
        std::cout << " (" << report.unchecked_blocks
                  << " written before blocks had checksums: format and header only)";
    }
    if (report.damaged == 0) {
        std::cout << ": no damage\n";
        return;
    }
    std::cout << ": " << report.damaged << " DAMAGED\n";
    for (const std::string& what : report.damage) {
        std::cout << "  " << what << "\n";
    }
    if (report.damaged > report.damage.size()) {
        std::cout << "  ... and " << (report.damaged - report.damage.size()) << " more\n";
    }
}

nlohmann::json summary_json(const StateSummary& summary) {
    nlohmann::json out = nlohmann::json::object();
    if (summary.kv_buckets) {
        nlohmann::json buckets = nlohmann::json::array();
        std::uint64_t keys = 0;
        for (const kv::BucketInfo& bucket : *summary.kv_buckets) {
            buckets.push_back({{"bucket", bucket.bucket}, {"keys", bucket.keys}});
            keys += bucket.keys;
        }
        out["kv"] = {{"keys", keys}, {"buckets", buckets}};
    } else {
        out["kv"] = nullptr;
    }
    out["locks"] = summary.locks_held ? nlohmann::json{{"held", *summary.locks_held},
                                                       {"at", iso_of(summary.now_ms)}}
                                      : nlohmann::json(nullptr);
    if (summary.timers_pending) {
        nlohmann::json timers = {{"pending", *summary.timers_pending},
                                 {"earliestDue", nullptr},
                                 {"earliestId", nullptr}};
        if (summary.timer_earliest) {
            timers["earliestDue"] = iso_of(summary.timer_earliest->due_at.value());
            timers["earliestId"] = summary.timer_earliest->id;
        }
        out["timers"] = timers;
    } else {
        out["timers"] = nullptr;
    }
    if (summary.stream_queries) {
        nlohmann::json queries = nlohmann::json::array();
        for (const auto& [query, rows] : *summary.stream_queries) {
            queries.push_back({{"name", query.name},
                               {"queryId", query.query_id},
                               {"sourceQueue", query.source_queue},
                               {"epoch", query.epoch},
                               {"rows", rows}});
        }
        out["streams"] = {{"queries", queries}, {"uncollectedRows", summary.has_stream_garbage}};
    } else {
        out["streams"] = nullptr;
    }
    return out;
}

void print_summary(const StateSummary& summary) {
    if (summary.kv_buckets) {
        std::uint64_t keys = 0;
        std::string per_bucket;
        for (const kv::BucketInfo& bucket : *summary.kv_buckets) {
            keys += bucket.keys;
            per_bucket += (per_bucket.empty() ? "" : ", ") + bucket.bucket + " " +
                          std::to_string(bucket.keys);
        }
        std::cout << "  kv: " << keys << (keys == 1 ? " key" : " keys") << " in "
                  << summary.kv_buckets->size()
                  << (summary.kv_buckets->size() == 1 ? " bucket" : " buckets")
                  << (per_bucket.empty() ? "" : " (" + per_bucket + ")") << "\n";
    } else {
        std::cout << "  kv: no tables\n";
    }
    if (summary.locks_held) {
        std::cout << "  locks: " << *summary.locks_held << " held at " << iso_of(summary.now_ms)
                  << "\n";
    } else {
        std::cout << "  locks: no tables\n";
    }
    if (summary.timers_pending) {
        std::cout << "  timers: " << *summary.timers_pending << " pending";
        if (summary.timer_earliest) {
            std::cout << ", earliest due " << iso_of(summary.timer_earliest->due_at.value()) << " ("
                      << summary.timer_earliest->id << ")";
        }
        std::cout << "\n";
    } else {
        std::cout << "  timers: no tables\n";
    }
    if (summary.stream_queries) {
        const auto& queries = *summary.stream_queries;
        std::cout << "  streams: " << queries.size()
                  << (queries.size() == 1 ? " query" : " queries");
        std::string per_query;
        for (const auto& [query, rows] : queries) {
            per_query += (per_query.empty() ? "" : ", ") + query.name + " " + std::to_string(rows) +
                         (rows == 1 ? " row" : " rows") + " (epoch " + std::to_string(query.epoch) +
                         ")";
        }
        std::cout << (per_query.empty() ? "" : " (" + per_query + ")")
                  << (summary.has_stream_garbage ? ", rows of reset queries still to collect" : "")
                  << "\n";
    } else {
        std::cout << "  streams: no tables\n";
    }
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
    auto summary = read_summary(*env);
    if (options.json) {
        json = report_json(target, *stats);
        if (summary) {
            json["state"] = summary_json(*summary);
        }
    } else {
        print_text(target, *stats);
        if (summary) {
            print_summary(*summary);
        }
    }
    if (options.verify) {
        auto verified = verify_state(*env);
        if (!verified) {
            std::cerr << "queen inspect state: " << target.dir.string()
                      << ": verify: " << verified.error().message() << "\n";
            return exit_failed;
        }
        if (options.json) {
            json["verify"] = verify_json(*verified);
        } else {
            print_verify(*verified);
        }
        if (verified->damaged > 0) {
            return exit_corruption;
        }
    }
    if (!summary) {
        // The table sizes are printed; the decoding of the state is what failed.
        std::cerr << "queen inspect state: " << target.dir.string() << ": "
                  << summary.error().message() << "\n";
        const bool is_corrupt =
            summary.error().is(Errc::corruption) || summary.error().is(store::Errc::corruption);
        return is_corrupt ? exit_corruption : exit_failed;
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
