// streams/tests/harness.hpp — a StreamsState over a temporary LMDB env, one write txn (one log
// entry) per command, and a full dump of the streams.* tables.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "queen/store/env.hpp"
#include "queen/streams/streams.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/result.hpp"
#include "queen/testing/support.hpp"
#include "queen/testing/tables.hpp"

namespace queen::streams::testing {

using queen::testing::must;

using queen::testing::bytes;
using queen::testing::dump_table;
using queen::testing::text;

/// Every key and value of every streams table (hex, so a failure prints readably).
struct Dump {
    std::map<std::string, std::string> queries;
    std::map<std::string, std::string> query_ids;
    std::map<std::string, std::string> rows;
    std::map<std::string, std::string> garbage;
    std::map<std::string, std::string> meta;
    friend bool operator==(const Dump&, const Dump&) = default;
};

inline Dump dump(const Tables& tables, const store::Txn& txn) {
    return Dump{dump_table(txn, tables.queries), dump_table(txn, tables.query_ids),
                dump_table(txn, tables.rows), dump_table(txn, tables.garbage),
                dump_table(txn, tables.meta)};
}

struct Harness {
    queen::testing::TempDir dir;
    Options options;
    std::optional<store::Env> env;
    std::optional<StreamsState> streams;
    std::uint64_t next_index = 1;
    std::int64_t now_ms = 1'700'000'000'000;

    explicit Harness(Options streams_options = {}) : options(streams_options) { open(); }
    void open() {
        store::Options store_options;
        store_options.sync_mode = store::SyncMode::no_sync;  // a clean close keeps every page
        store_options.map_size_bytes = std::uint64_t{1} << 30;
        env.emplace(must(store::Env::open(dir.path(), store_options)));
        streams.emplace(must(StreamsState::open(*env, options)));
    }
    void reopen() {
        streams.reset();
        env.reset();
        open();
    }
    [[nodiscard]] TimestampMs now() const { return TimestampMs{now_ms}; }
    void advance_ms(std::int64_t ms) { now_ms += ms; }
    [[nodiscard]] const Tables& tables() const { return streams->tables(); }

    /// Runs `fn(txn, undo, index)` as one log entry: commits it, or rolls it back through the
    /// UndoLog when `rollback` is set (the txn then commits nothing the entry wrote).
    template <class Fn>
    auto entry(Fn fn, bool rollback = false) {
        auto txn = must(env->begin_write());
        store::UndoLog undo;
        const LogIndex index{next_index++};
        auto result = fn(txn, undo, index);
        if (rollback) {
            must(undo.rollback(txn));
        }
        must(txn.commit());
        return result;
    }
    /// One command as its own entry.
    template <class Command>
    auto run(const Command& command) {
        return entry([&](store::WriteTxn& txn, store::UndoLog& undo, LogIndex index) {
            return must(streams->apply(txn, undo, command, index, now()));
        });
    }

    RegisterResult reg(std::string name, std::string hash, std::string query_id, bool reset = false,
                       std::string source = "src", std::string sink = "") {
        return run(Register{std::move(name), std::move(source), std::move(sink), std::move(hash),
                            reset, std::move(query_id)});
    }
    WriteResult upsert(std::string query_id, std::uint64_t partition, std::string key,
                       std::string_view value) {
        return run(Upsert{std::move(query_id), partition, std::move(key), bytes(value)});
    }
    WriteResult del(std::string query_id, std::uint64_t partition, std::string key) {
        return run(Delete{std::move(query_id), partition, std::move(key)});
    }
    WriteResult clear(std::string name) { return run(ClearState{std::move(name)}); }
    WriteResult remove(std::string name) { return run(Remove{std::move(name)}); }
    CollectResult collect(std::size_t limit) {
        auto txn = must(env->begin_write());
        auto result = must(streams->collect(txn, limit));
        must(txn.commit());
        return result;
    }

    template <class Fn>
    auto read(Fn fn) {
        auto txn = must(env->begin_read());
        return fn(txn);
    }
    bool has_garbage() {
        return read([&](const store::Txn& txn) { return must(streams->has_garbage(txn)); });
    }
    std::optional<Query> query(std::string_view name) {
        return read([&](const store::Txn& txn) { return must(find_query(tables(), txn, name)); });
    }
    std::optional<Query> query_by_id(std::string_view id) {
        return read(
            [&](const store::Txn& txn) { return must(find_query_by_id(tables(), txn, id)); });
    }
    QueryPage queries(std::string_view after = {}, std::uint32_t limit = 1000) {
        return read(
            [&](const store::Txn& txn) { return must(list_queries(tables(), txn, after, limit)); });
    }
    RowPage rows(std::string_view id, std::uint64_t partition, std::string_view prefix = {},
                 std::string_view after = {}, std::uint32_t limit = 1000) {
        return read([&](const store::Txn& txn) {
            return must(list_rows(tables(), txn, id, partition, prefix, after, limit));
        });
    }
    std::vector<Row> rows_of(std::string_view id, std::uint64_t partition,
                             const std::vector<std::string>& keys) {
        return read([&](const store::Txn& txn) {
            return must(get_rows(tables(), txn, id, partition, keys));
        });
    }
    std::uint64_t count(std::string_view id) {
        return read([&](const store::Txn& txn) { return must(count_rows(tables(), txn, id)); });
    }
    std::vector<std::uint64_t> partitions(std::string_view id) {
        return read(
            [&](const store::Txn& txn) { return must(list_partitions(tables(), txn, id)); });
    }
    Dump dump() {
        return read([&](const store::Txn& txn) { return streams::testing::dump(tables(), txn); });
    }
    std::uint64_t table_size(store::Table table) {
        return read([&](const store::Txn& txn) { return must(txn.stats(table)).entries; });
    }
};

/// The keys of a page, in order.
inline std::vector<std::string> keys_of(const RowPage& page) {
    std::vector<std::string> keys;
    for (const auto& row : page.rows) {
        keys.push_back(row.key);
    }
    return keys;
}
inline std::vector<std::string> keys_of(const std::vector<Row>& rows) {
    std::vector<std::string> keys;
    for (const auto& row : rows) {
        keys.push_back(row.key);
    }
    return keys;
}

}  // namespace queen::streams::testing
