// locks/tests/harness.hpp — a LockState over a temporary LMDB env (one write txn per command),
// a dump of its two tables, and result printers for failing checks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/locks/locks.hpp"
#include "queen/store/env.hpp"
#include "queen/store/undo.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/result.hpp"
#include "queen/testing/support.hpp"

namespace queen::locks {

inline std::ostream& operator<<(std::ostream& out, Status status) {
    switch (status) {
        case Status::ok: return out << "ok";
        case Status::held: return out << "held";
        case Status::stale_token: return out << "stale_token";
        case Status::invalid: return out << "invalid";
    }
    return out << "Status(" << static_cast<int>(status) << ")";
}

inline std::ostream& operator<<(std::ostream& out, const Grant& grant) {
    return out << "{name=" << to_hex(as_bytes(grant.name)) << " owner=" << grant.owner
               << " token=" << grant.token << " acquired_at=" << grant.acquired_at
               << " expires_at=" << grant.expires_at << "}";
}

}  // namespace queen::locks

namespace queen::locks::testing {

using queen::testing::must;
using queen::testing::must_fail;

/// Every entry of both tables, keys and values in hex, "g:" (grants) or "e:" (expiry) first.
using Dump = std::map<std::string, std::string>;

inline Dump dump(const Tables& tables, const store::Txn& txn) {
    Dump out;
    for (const auto& [prefix, table] : {std::pair{"g:", tables.grants}, {"e:", tables.expiry}}) {
        auto cursor = must(txn.cursor(table));
        for (auto entry = must(cursor.first()); entry.has_value(); entry = must(cursor.next())) {
            out.emplace(prefix + to_hex(entry->key), to_hex(entry->value));
        }
    }
    return out;
}

struct Harness {
    queen::testing::TempDir dir;
    Options options;
    std::optional<store::Env> env;
    std::optional<LockState> state;
    store::UndoLog undo;
    std::int64_t now_ms = 1'700'000'000'000;
    std::uint64_t next_index = 1;  ///< the log index of the next acquire

    explicit Harness(Options opts = {}) : options(opts) { open(); }
    void open() {
        store::Options store_options;
        store_options.sync_mode = store::SyncMode::no_sync;  // a reopen keeps the pages
        env.emplace(must(store::Env::open(dir.path(), store_options)));
        state.emplace(must(LockState::open(*env, options)));
    }
    void reopen() {
        state.reset();
        env.reset();
        open();
    }
    [[nodiscard]] TimestampMs now() const { return TimestampMs{now_ms}; }

    /// Runs fn(txn) in a write txn that commits; the undo log is cleared after it.
    template <class Fn>
    auto write(Fn fn) {
        auto txn = must(env->begin_write());
        if constexpr (std::is_void_v<typename decltype(fn(txn))::value_type>) {
            must(fn(txn));
            undo.clear();
            must(txn.commit());
        } else {
            auto result = must(fn(txn));
            undo.clear();
            must(txn.commit());
            return result;
        }
    }
    template <class Fn>
    auto read(Fn fn) {
        auto txn = must(env->begin_read());
        return must(fn(txn));
    }

    LockResult acquire(const std::string& name, const std::string& owner,
                       std::int64_t ttl_ms = 1000) {
        return acquire_at(LogIndex{next_index++}, name, owner, ttl_ms);
    }
    LockResult acquire_at(LogIndex index, const std::string& name, const std::string& owner,
                          std::int64_t ttl_ms = 1000) {
        return write([&](store::WriteTxn& txn) {
            return state->apply(txn, undo, Acquire{name, owner, ttl_ms}, index, now());
        });
    }
    LockResult renew(const std::string& name, FencingToken token, std::int64_t ttl_ms = 1000) {
        return write([&](store::WriteTxn& txn) {
            return state->apply(txn, undo, Renew{name, token, ttl_ms}, now());
        });
    }
    LockResult release(const std::string& name, FencingToken token) {
        return write([&](store::WriteTxn& txn) {
            return state->apply(txn, undo, Release{name, token}, now());
        });
    }
    LockResult guard(const std::string& name, FencingToken token) {
        return read([&](const store::Txn& txn) {
            return state->check(txn, Guard{name, token}, now());
        });
    }
    ExpireResult expire(std::size_t limit = 100) {
        return write([&](store::WriteTxn& txn) { return state->expire(txn, now(), limit); });
    }
    std::optional<Grant> get(std::string_view name) {
        return read(
            [&](const store::Txn& txn) { return locks::get(state->tables(), txn, name, now()); });
    }
    std::vector<Grant> list(std::string_view after = {}, std::uint32_t limit = 1000) {
        return read([&](const store::Txn& txn) {
            return locks::list(state->tables(), txn, after, limit, now());
        });
    }
    std::optional<TimestampMs> next_expiry() {
        return read([&](const store::Txn& txn) { return state->next_expiry(txn); });
    }
    Dump dump_all() {
        auto txn = must(env->begin_read());
        return dump(state->tables(), txn);
    }
};

}  // namespace queen::locks::testing
