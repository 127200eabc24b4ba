// timers/tests/harness.hpp — a TimerState over a temporary LMDB env, one write txn per command,
// and a full dump of the timers.* tables for before/after comparisons.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "queen/store/env.hpp"
#include "queen/store/undo.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/result.hpp"
#include "queen/testing/support.hpp"
#include "queen/testing/tables.hpp"
#include "queen/timers/timers.hpp"

namespace queen::timers::testing {

using queen::testing::must;
using queen::testing::must_fail;

using queen::testing::bytes;
using queen::testing::text;

/// Every entry of both tables, as hex, keyed by table name then key.
using Dump = std::map<std::string, std::map<std::string, std::string>>;

inline Dump dump_tables(const Tables& tables, const store::Txn& txn) {
    Dump out;
    const std::pair<const char*, store::Table> named[] = {{"timers.timers", tables.timers},
                                                          {"timers.due", tables.due}};
    for (const auto& [name, table] : named) {
        out[name] = queen::testing::dump_table(txn, table);
    }
    return out;
}

inline Set make_set(std::string id, std::int64_t due_at, std::int64_t interval_ms = 0,
                    std::int64_t end_at = 0, std::string_view payload = "p") {
    Set command;
    command.id = std::move(id);
    command.due_at = TimestampMs{due_at};
    command.interval_ms = interval_ms;
    command.end_at = TimestampMs{end_at};
    command.payload = bytes(payload);
    return command;
}

struct Harness {
    queen::testing::TempDir dir;
    Options options;
    std::optional<store::Env> env;
    std::optional<TimerState> state;
    std::int64_t now_ms = 1'000;

    explicit Harness(Options timer_options = {}) : options(timer_options) { open(); }
    void open() {
        store::Options store_options;
        store_options.sync_mode =
            store::SyncMode::no_sync;  // semantics tests; a reopen keeps pages
        store_options.map_size_bytes = std::uint64_t{1} << 30;
        env.emplace(must(store::Env::open(dir.path(), store_options)));
        state.emplace(must(TimerState::open(*env, options)));
    }
    void reopen() {
        state.reset();
        env.reset();
        open();
    }

    /// Runs `fn(txn, undo)` in one write txn and commits it.
    template <class Fn>
    auto write(Fn fn) {
        auto txn = must(env->begin_write());
        store::UndoLog undo;
        auto result = must(fn(txn, undo));
        must(txn.commit());
        return result;
    }
    SetResult set(const Set& command) {
        return write([&](store::WriteTxn& txn, store::UndoLog& undo) {
            return state->apply(txn, undo, command, TimestampMs{now_ms});
        });
    }
    CancelResult cancel(std::string id) {
        return write([&](store::WriteTxn& txn, store::UndoLog& undo) {
            return state->apply(txn, undo, Cancel{std::move(id)}, TimestampMs{now_ms});
        });
    }
    FireResult fire(std::size_t limit = 1000) {
        return write([&](store::WriteTxn& txn, store::UndoLog& /*undo*/) {
            return state->fire(txn, TimestampMs{now_ms}, limit);
        });
    }

    /// Runs `fn(tables, txn)` in a read txn and returns its value.
    template <class Fn>
    auto read(Fn fn) {
        auto txn = must(env->begin_read());
        return must(fn(state->tables(), txn));
    }
    std::optional<Timer> get(std::string_view id) {
        return read(
            [&](const Tables& t, const store::Txn& txn) { return timers::get(t, txn, id); });
    }
    std::optional<std::int64_t> next_due() {
        auto txn = must(env->begin_read());
        const auto due = must(state->next_due(txn));
        return due ? std::optional<std::int64_t>{due->value()} : std::nullopt;
    }
    std::uint64_t count() {
        return read([](const Tables& t, const store::Txn& txn) { return timers::count(t, txn); });
    }
    std::vector<Timer> list(std::string_view after = {}, std::uint32_t limit = 1000,
                            bool with_payload = true) {
        return read([&](const Tables& t, const store::Txn& txn) {
            return timers::list(t, txn, after, limit, with_payload);
        });
    }
    std::vector<Timer> list_due(std::uint32_t limit = 1000, bool with_payload = true) {
        return read([&](const Tables& t, const store::Txn& txn) {
            return timers::list_due(t, txn, limit, with_payload);
        });
    }
    Dump dump() {
        auto txn = must(env->begin_read());
        return dump_tables(state->tables(), txn);
    }
};

/// "id@due_at#sequence" (plus "!" when last) for each firing: one string to compare in a CHECK.
inline std::vector<std::string> describe(const FireResult& result) {
    std::vector<std::string> out;
    for (const Firing& firing : result.firings) {
        out.push_back(firing.id + "@" + std::to_string(firing.due_at.value()) + "#" +
                      std::to_string(firing.sequence) + (firing.is_last ? "!" : ""));
    }
    return out;
}

}  // namespace queen::timers::testing
