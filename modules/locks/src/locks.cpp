// locks/src/locks.cpp — LockState: acquire, renew, release, guards and expiry over the two
// "locks.*" tables, which every write keeps consistent (one expiry entry per grant record).
#include "queen/locks/locks.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "queen/core/assert.hpp"
#include "queen/store/keys.hpp"
#include "records.hpp"

namespace queen::locks {
namespace {

using detail::GrantRecord;

[[nodiscard]] bool is_current(const GrantRecord& record, TimestampMs now) noexcept {
    return record.expires_at > now;
}

[[nodiscard]] Grant to_grant(std::string_view name, const GrantRecord& record) {
    return Grant{std::string(name), record.owner, record.token, record.acquired_at,
                 record.expires_at};
}

/// now + ttl_ms, saturated at the largest timestamp (a leader's clock far in the future must
/// not wrap a grant into the past).
[[nodiscard]] TimestampMs expiry_after(TimestampMs now, std::int64_t ttl_ms) noexcept {
    constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
    return TimestampMs{now.value() > max - ttl_ms ? max : now.value() + ttl_ms};
}

/// An empty message when `size` is within 1..`max` bytes.
[[nodiscard]] std::string check_bytes(const char* what, std::size_t size, std::size_t max) {
    if (size >= 1 && size <= max) {
        return {};
    }
    return std::string(what) + ": " + std::to_string(size) + " bytes, expected 1.." +
           std::to_string(max);
}

[[nodiscard]] std::string check_ttl(const Options& options, std::int64_t ttl_ms) {
    if (ttl_ms >= options.ttl_ms_min && ttl_ms <= options.ttl_ms_max) {
        return {};
    }
    return "ttl_ms: " + std::to_string(ttl_ms) + ", expected " +
           std::to_string(options.ttl_ms_min) + ".." + std::to_string(options.ttl_ms_max);
}

[[nodiscard]] LockResult invalid(std::string message) {
    LockResult out;
    out.status = Status::invalid;
    out.message = std::move(message);
    return out;
}

[[nodiscard]] LockResult ok(Grant grant) {
    LockResult out;
    out.grant = std::move(grant);
    return out;
}

/// stale_token: the current grant of the lock, or (free) the name with token 0.
[[nodiscard]] LockResult stale(std::string_view name, FencingToken token,
                               const std::optional<GrantRecord>& record, TimestampMs now) {
    LockResult out;
    out.status = Status::stale_token;
    if (record.has_value() && is_current(*record, now)) {
        out.grant = to_grant(name, *record);
        out.message = "token " + std::to_string(token.value()) +
                      " is not the current grant (current token " +
                      std::to_string(record->token.value()) + ")";
    } else {
        out.grant.name = std::string(name);
        out.message = "token " + std::to_string(token.value()) +
                      " is not the current grant (the lock is free)";
    }
    return out;
}

/// The stored record of `name` (current or expired), std::nullopt when there is none.
/// Precondition: 1 <= name.size() <= Env::key_size_max (the caller checked it).
[[nodiscard]] Result<std::optional<GrantRecord>> read_grant(const Tables& tables,
                                                            const store::Txn& txn,
                                                            std::string_view name) {
    QUEEN_TRY(const auto value, txn.get(tables.grants, detail::grant_key(name)));
    if (!value.has_value()) {
        return std::optional<GrantRecord>{};
    }
    QUEEN_TRY(auto record, detail::decode_grant(*value, name));
    return std::optional<GrantRecord>{std::move(record)};
}

[[nodiscard]] Error missing_expiry(std::string_view name, TimestampMs expires_at) {
    return Error{queen::Errc::corruption, "locks: lock '" + std::string(name) +
                                              "' has no expiry entry at " +
                                              std::to_string(expires_at.value())};
}

/// Deletes the expiry entry of `old` (a stored record of `name`). The entry must exist: the
/// two tables change together.
[[nodiscard]] Result<void> delete_expiry(store::WriteTxn& txn, store::UndoLog& undo,
                                         const Tables& tables, std::string_view name,
                                         const GrantRecord& old) {
    const store::KeyBuilder key = detail::expiry_key(old.expires_at, name);
    QUEEN_TRY(const bool was_there, undo.del(txn, tables.expiry, key.span()));
    if (!was_there) {
        return missing_expiry(name, old.expires_at);
    }
    return {};
}

/// Stores `record` as the grant of `name`, replacing `old` (the stored record, if any) in both
/// tables.
[[nodiscard]] Result<void> write_grant(store::WriteTxn& txn, store::UndoLog& undo,
                                       const Tables& tables, std::string_view name,
                                       const GrantRecord& record,
                                       const std::optional<GrantRecord>& old) {
    if (old.has_value()) {
        QUEEN_TRY(delete_expiry(txn, undo, tables, name, *old));
    }
    QUEEN_TRY(undo.put(txn, tables.grants, detail::grant_key(name), detail::encode(record)));
    const store::KeyBuilder key = detail::expiry_key(record.expires_at, name);
    return undo.put(txn, tables.expiry, key.span(), ByteSpan{});
}

}  // namespace

Result<void> Options::validate() const {
    const auto fail = [](std::string message) {
        return Error{queen::Errc::invalid_argument, "locks options: " + std::move(message)};
    };
    if (name_bytes_max < 1 || name_bytes_max > detail::name_bytes_limit) {
        return fail("name_bytes_max must be 1.." + std::to_string(detail::name_bytes_limit) +
                    " (an expiry key holds 8 bytes and the name), got " +
                    std::to_string(name_bytes_max));
    }
    if (owner_bytes_max < 1) {
        return fail("owner_bytes_max must be at least 1");
    }
    if (ttl_ms_min < 1) {
        return fail("ttl_ms_min must be at least 1, got " + std::to_string(ttl_ms_min));
    }
    if (ttl_ms_max < ttl_ms_min) {
        return fail("ttl_ms_max (" + std::to_string(ttl_ms_max) + ") is below ttl_ms_min (" +
                    std::to_string(ttl_ms_min) + ")");
    }
    if (list_limit_max < 1) {
        return fail("list_limit_max must be at least 1");
    }
    return {};
}

Result<LockState> LockState::open(store::Env& env, const Options& options) {
    QUEEN_TRY(options.validate());
    QUEEN_TRY(const store::Table grants, env.open_table("locks.grants"));
    QUEEN_TRY(const store::Table expiry, env.open_table("locks.expiry"));
    return LockState(Tables{grants, expiry}, options);
}

Result<LockResult> LockState::apply(store::WriteTxn& txn, store::UndoLog& undo,
                                    const Acquire& command, LogIndex index, TimestampMs now) {
    if (auto message = check_bytes("name", command.name.size(), options_.name_bytes_max);
        !message.empty()) {
        return invalid(std::move(message));
    }
    if (auto message = check_bytes("owner", command.owner.size(), options_.owner_bytes_max);
        !message.empty()) {
        return invalid(std::move(message));
    }
    if (auto message = check_ttl(options_, command.ttl_ms); !message.empty()) {
        return invalid(std::move(message));
    }
    QUEEN_ASSERT(index.value() > 0, "a fencing token is a log index, and those start at 1");
    QUEEN_TRY(const auto old, read_grant(tables_, txn, command.name));
    if (old.has_value()) {
        // The token of every stored grant came from an earlier entry (or this one: an atomic
        // entry may acquire a lock twice), and log indexes only grow.
        QUEEN_ASSERT(index.value() >= old->token.value(), "acquire of '", command.name,
                     "' at index ", index.value(), " below the stored token ", old->token.value());
    }
    const TimestampMs expires_at = expiry_after(now, command.ttl_ms);

    if (old.has_value() && is_current(*old, now)) {
        if (old->owner != command.owner) {
            LockResult out;
            out.status = Status::held;
            out.grant = to_grant(command.name, *old);
            out.message = "held by another owner until " + std::to_string(old->expires_at.value());
            return out;
        }
        // The holder asks again (a retry whose answer it lost): renew, same token.
        GrantRecord renewed = *old;
        renewed.expires_at = expires_at;
        QUEEN_TRY(write_grant(txn, undo, tables_, command.name, renewed, old));
        return ok(to_grant(command.name, renewed));
    }

    const GrantRecord granted{command.owner, FencingToken{index.value()}, now, expires_at};
    QUEEN_TRY(write_grant(txn, undo, tables_, command.name, granted, old));
    return ok(to_grant(command.name, granted));
}

Result<LockResult> LockState::apply(store::WriteTxn& txn, store::UndoLog& undo,
                                    const Renew& command, TimestampMs now) {
    if (auto message = check_bytes("name", command.name.size(), options_.name_bytes_max);
        !message.empty()) {
        return invalid(std::move(message));
    }
    if (auto message = check_ttl(options_, command.ttl_ms); !message.empty()) {
        return invalid(std::move(message));
    }
    QUEEN_TRY(const auto old, read_grant(tables_, txn, command.name));
    if (!old.has_value() || !is_current(*old, now) || old->token != command.token) {
        return stale(command.name, command.token, old, now);
    }
    GrantRecord renewed = *old;
    renewed.expires_at = expiry_after(now, command.ttl_ms);
    QUEEN_TRY(write_grant(txn, undo, tables_, command.name, renewed, old));
    return ok(to_grant(command.name, renewed));
}

Result<LockResult> LockState::apply(store::WriteTxn& txn, store::UndoLog& undo,
                                    const Release& command, TimestampMs now) {
    if (auto message = check_bytes("name", command.name.size(), options_.name_bytes_max);
        !message.empty()) {
        return invalid(std::move(message));
    }
    QUEEN_TRY(const auto old, read_grant(tables_, txn, command.name));
    if (!old.has_value() || !is_current(*old, now) || old->token != command.token) {
        return stale(command.name, command.token, old, now);
    }
    QUEEN_TRY(delete_expiry(txn, undo, tables_, command.name, *old));
    QUEEN_TRY(const bool was_there, undo.del(txn, tables_.grants, detail::grant_key(command.name)));
    QUEEN_ASSERT(was_there, "the grant record read above is gone");
    return ok(to_grant(command.name, *old));
}

Result<LockResult> LockState::check(const store::Txn& txn, const Guard& guard,
                                    TimestampMs now) const {
    if (auto message = check_bytes("name", guard.name.size(), options_.name_bytes_max);
        !message.empty()) {
        return invalid(std::move(message));
    }
    QUEEN_TRY(const auto record, read_grant(tables_, txn, guard.name));
    if (!record.has_value() || !is_current(*record, now) || record->token != guard.token) {
        return stale(guard.name, guard.token, record, now);
    }
    return ok(to_grant(guard.name, *record));
}

Result<ExpireResult> LockState::expire(store::WriteTxn& txn, TimestampMs now, std::size_t limit) {
    ExpireResult out;
    std::vector<detail::ExpiryKey> due;
    {
        // Collect first, delete after: the cursor's spans die with the first write.
        QUEEN_TRY(auto cursor, txn.cursor(tables_.expiry));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry.has_value()) {
            QUEEN_TRY(auto key, detail::decode_expiry_key(entry->key));
            if (key.expires_at > now) {
                break;
            }
            if (due.size() == limit) {
                out.is_complete = false;
                break;
            }
            due.push_back(std::move(key));
            QUEEN_TRY(entry, cursor.next());
        }
    }
    out.freed.reserve(due.size());
    for (auto& key : due) {
        QUEEN_TRY(const auto record, read_grant(tables_, txn, key.name));
        // Pair the expiry entry with its record: same lock, same expires_at.
        if (!record.has_value() || record->expires_at != key.expires_at) {
            return Error{queen::Errc::corruption,
                         "locks: expiry entry at " + std::to_string(key.expires_at.value()) +
                             " of lock '" + key.name + "' matches no grant record"};
        }
        const store::KeyBuilder expiry_key = detail::expiry_key(key.expires_at, key.name);
        QUEEN_TRY(const bool had_expiry, txn.del(tables_.expiry, expiry_key.span()));
        QUEEN_TRY(const bool had_grant, txn.del(tables_.grants, detail::grant_key(key.name)));
        QUEEN_ASSERT(had_expiry, "the expiry entry read above is gone");
        QUEEN_ASSERT(had_grant, "the grant record read above is gone");
        out.freed.push_back(std::move(key.name));
    }
    std::sort(out.freed.begin(), out.freed.end());
    return out;
}

Result<std::optional<TimestampMs>> LockState::next_expiry(const store::Txn& txn) const {
    QUEEN_TRY(auto cursor, txn.cursor(tables_.expiry));
    QUEEN_TRY(const auto entry, cursor.first());
    if (!entry.has_value()) {
        return std::optional<TimestampMs>{};
    }
    QUEEN_TRY(const auto key, detail::decode_expiry_key(entry->key));
    return std::optional<TimestampMs>{key.expires_at};
}

Result<std::optional<Grant>> get(const Tables& tables, const store::Txn& txn, std::string_view name,
                                 TimestampMs now) {
    // A name no key can hold names no lock: free, not an error.
    if (name.empty() || name.size() > store::Env::key_size_max) {
        return std::optional<Grant>{};
    }
    QUEEN_TRY(const auto record, read_grant(tables, txn, name));
    if (!record.has_value() || !is_current(*record, now)) {
        return std::optional<Grant>{};
    }
    return std::optional<Grant>{to_grant(name, *record)};
}

Result<std::vector<Grant>> list(const Tables& tables, const store::Txn& txn, std::string_view after,
                                std::uint32_t limit, TimestampMs now) {
    std::vector<Grant> out;
    if (limit == 0) {
        return out;
    }
    QUEEN_TRY(auto cursor, txn.cursor(tables.grants));
    // Seek to `after` (cut to the longest key: every longer key starting with it is that key)
    // and skip the keys that do not sort after it.
    const std::string_view start = after.substr(0, store::Env::key_size_max);
    QUEEN_TRY(auto entry, start.empty() ? cursor.first() : cursor.seek(as_bytes(start)));
    while (entry.has_value() && out.size() < limit) {
        const std::string_view name = as_chars(entry->key);
        if (name > after) {
            QUEEN_TRY(const auto record, detail::decode_grant(entry->value, name));
            if (is_current(record, now)) {
                out.push_back(to_grant(name, record));
            }
        }
        QUEEN_TRY(entry, cursor.next());
    }
    return out;
}

}  // namespace queen::locks
