// kv/tests/harness.hpp — a KvState over a temporary LMDB env, one write txn (one log entry) per
// command, and a full dump of the kv.* tables.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "queen/kv/kv.hpp"
#include "queen/store/env.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/result.hpp"
#include "queen/testing/support.hpp"
#include "queen/testing/tables.hpp"

namespace queen::kv::testing {

using queen::testing::must;

using queen::testing::bytes;
using queen::testing::dump_table;
using queen::testing::text;

/// Every key and value of both kv tables (hex keys, so a failure prints readably).
struct Dump {
    std::map<std::string, std::string> entries;
    std::map<std::string, std::string> expiry;
    friend bool operator==(const Dump&, const Dump&) = default;
};

inline Dump dump(const Tables& tables, const store::Txn& txn) {
    return Dump{dump_table(txn, tables.entries), dump_table(txn, tables.expiry)};
}

struct Harness {
    queen::testing::TempDir dir;
    Options options;
    std::optional<store::Env> env;
    std::optional<KvState> kv;
    std::uint64_t next_index = 1;
    std::int64_t now_ms = 1'700'000'000'000;

    explicit Harness(Options kv_options = {}) : options(kv_options) { open(); }
    void open() {
        store::Options store_options;
        store_options.sync_mode = store::SyncMode::no_sync;  // a clean close keeps every page
        store_options.map_size_bytes = std::uint64_t{1} << 30;
        env.emplace(must(store::Env::open(dir.path(), store_options)));
        kv.emplace(must(KvState::open(*env, options)));
    }
    void reopen() {
        kv.reset();
        env.reset();
        open();
    }
    [[nodiscard]] TimestampMs now() const { return TimestampMs{now_ms}; }
    void advance_ms(std::int64_t ms) { now_ms += ms; }

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

    WriteResult set(std::string bucket, std::string key, std::string_view value,
                    std::optional<std::uint64_t> expected = std::nullopt, std::int64_t ttl_ms = 0) {
        const Set command{std::move(bucket), std::move(key), bytes(value), expected, ttl_ms};
        return entry([&](store::WriteTxn& txn, store::UndoLog& undo, LogIndex index) {
            return must(kv->apply(txn, undo, command, index, now()));
        });
    }
    WriteResult del(std::string bucket, std::string key,
                    std::optional<std::uint64_t> expected = std::nullopt) {
        const Delete command{std::move(bucket), std::move(key), expected};
        return entry([&](store::WriteTxn& txn, store::UndoLog& undo, LogIndex index) {
            return must(kv->apply(txn, undo, command, index, now()));
        });
    }
    WriteResult check(std::string bucket, std::string key, std::uint64_t expected) {
        const Check command{std::move(bucket), std::move(key), expected};
        return entry([&](store::WriteTxn& txn, store::UndoLog& /*undo*/, LogIndex /*index*/) {
            return must(kv->apply(txn, command, now()));
        });
    }
    ExpireResult expire(std::size_t limit) {
        auto txn = must(env->begin_write());
        auto result = must(kv->expire(txn, now(), limit));
        must(txn.commit());
        return result;
    }

    template <class Fn>
    auto read(Fn fn) {
        auto txn = must(env->begin_read());
        return fn(txn);
    }
    std::optional<Entry> get(std::string_view bucket, std::string_view key) {
        return read([&](const store::Txn& txn) {
            return must(kv::get(kv->tables(), txn, bucket, key, now()));
        });
    }
    ListPage list(std::string_view bucket, std::string_view prefix = {},
                  std::string_view after = {}, std::uint32_t limit = 1000) {
        return read([&](const store::Txn& txn) {
            return must(kv::list(kv->tables(), txn, bucket, prefix, after, limit, now()));
        });
    }
    /// The keys of every page of a listing, following next_after.
    std::vector<std::string> list_all(std::string_view bucket, std::string_view prefix,
                                      std::uint32_t limit) {
        std::vector<std::string> keys;
        std::string after;
        for (int page_count = 0;; ++page_count) {
            REQUIRE(page_count < 10'000);
            const ListPage page = list(bucket, prefix, after, limit);
            for (const auto& entry : page.entries) {
                keys.push_back(entry.key);
            }
            if (page.next_after.empty()) {
                return keys;
            }
            REQUIRE(page.entries.size() == limit);
            REQUIRE(page.next_after == page.entries.back().key);
            after = page.next_after;
        }
    }
    std::vector<BucketInfo> buckets() {
        return read(
            [&](const store::Txn& txn) { return must(kv::list_buckets(kv->tables(), txn)); });
    }
    std::optional<TimestampMs> next_expiry() {
        return read([&](const store::Txn& txn) { return must(kv->next_expiry(txn)); });
    }
    Dump dump() {
        return read([&](const store::Txn& txn) { return kv::testing::dump(kv->tables(), txn); });
    }
};

}  // namespace queen::kv::testing
