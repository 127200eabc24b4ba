// timers/src/queries.cpp — the read-only queries of timers.hpp (get, list, list_due, count); they
// need only a store::Txn, so any thread can run them.
#include <algorithm>
#include <string>
#include <utility>

#include "queen/store/env.hpp"
#include "queen/timers/timers.hpp"
#include "records.hpp"

namespace queen::timers {
namespace {

/// Bytewise (LMDB) order of ids: memcmp, a prefix first.
bool id_after(std::string_view id, std::string_view after) {
    const ByteSpan a = as_bytes(after);
    const ByteSpan b = as_bytes(id);
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

}  // namespace

Result<std::optional<Timer>> get(const Tables& tables, const store::Txn& txn, std::string_view id) {
    if (id.empty() || id.size() > store::Env::key_size_max) {
        return std::optional<Timer>{};  // no stored id looks like this (and LMDB would refuse it)
    }
    QUEEN_TRY(const auto value, txn.get(tables.timers, as_bytes(id)));
    if (!value) {
        return std::optional<Timer>{};
    }
    QUEEN_TRY(auto record, detail::decode_record(*value, id, true));
    return std::optional<Timer>{detail::to_timer(id, std::move(record))};
}

Result<std::vector<Timer>> list(const Tables& tables, const store::Txn& txn, std::string_view after,
                                std::uint32_t limit, bool with_payload) {
    std::vector<Timer> out;
    if (limit == 0) {
        return out;
    }
    QUEEN_TRY(auto cursor, txn.cursor(tables.timers));
    std::optional<store::Entry> entry;
    if (after.empty()) {
        QUEEN_TRY(entry, cursor.first());
    } else {
        // Ids are at most 503 bytes; an `after` longer than an LMDB key seeks by its prefix,
        // and the loop below skips what is not after it.
        const std::string_view prefix = after.substr(0, store::Env::key_size_max);
        QUEEN_TRY(entry, cursor.seek(as_bytes(prefix)));
    }
    while (entry) {
        const std::string_view id = as_chars(entry->key);
        if (id_after(id, after)) {
            QUEEN_TRY(auto record, detail::decode_record(entry->value, id, with_payload));
            out.push_back(detail::to_timer(id, std::move(record)));
            if (out.size() == limit) {
                break;
            }
        }
        QUEEN_TRY(entry, cursor.next());
    }
    return out;
}

Result<std::vector<Timer>> list_due(const Tables& tables, const store::Txn& txn,
                                    std::uint32_t limit, bool with_payload) {
    std::vector<Timer> out;
    if (limit == 0) {
        return out;
    }
    QUEEN_TRY(auto cursor, txn.cursor(tables.due));
    QUEEN_TRY(auto entry, cursor.first());
    while (entry) {
        QUEEN_TRY(const auto key, detail::parse_due_key(entry->key));
        QUEEN_TRY(const auto value, txn.get(tables.timers, as_bytes(key.id)));
        if (!value) {
            return Error{
                queen::Errc::corruption,
                "timers: timers.due key of " + to_hex(as_bytes(key.id)) + " without its timer"};
        }
        QUEEN_TRY(auto record, detail::decode_record(*value, key.id, with_payload));
        if (record.due_at != key.due_at) {
            return Error{queen::Errc::corruption,
                         "timers: timers.due key of " + to_hex(as_bytes(key.id)) + " at " +
                             std::to_string(key.due_at.value()) + ", its timer due at " +
                             std::to_string(record.due_at.value())};
        }
        out.push_back(detail::to_timer(key.id, std::move(record)));
        if (out.size() == limit) {
            break;
        }
        QUEEN_TRY(entry, cursor.next());
    }
    return out;
}

Result<std::uint64_t> count(const Tables& tables, const store::Txn& txn) {
    // mdb_stat's entry count of timers.timers: O(1), exact for the txn's snapshot.
    QUEEN_TRY(const auto stats, txn.stats(tables.timers));
    return stats.entries;
}

}  // namespace queen::timers
