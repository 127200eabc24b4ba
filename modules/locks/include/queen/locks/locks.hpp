// queen/locks/locks.hpp — LockState: named locks with an owner, a TTL and a fencing token, as a
// deterministic state machine over LMDB tables (L2; no clock).
//
// The model. A lock is free or held by one owner (a client-chosen string) until its expiry.
// Acquire grants a free (or expired) lock and returns a fencing token: the index of the log
// entry that granted it. Log indexes only grow, so every grant of a lock gets a larger token
// than the grants before it, across restarts, snapshots and leader changes, and a resource
// that remembers the largest token it has seen can refuse a stale holder. Renew extends a
// grant (same token); release ends it. A transaction guarded by (name, token) is applied only
// while that grant is current (Guard).
//
// Time. `now` is the entry's timestamp. A grant with expires_at <= now is over from that
// instant on every replica: acquire treats the lock as free, renew and guards refuse it.
// expire() deletes the records of expired grants (bounded per entry) and names the locks it
// freed, so the node wakes the acquirers waiting on them; release names its lock too.
//
// Acquiring a lock one already holds (same owner, grant current) renews it: the same token,
// the new TTL (an owner that retries an acquire whose answer it lost keeps its grant).
//
// Atomicity: writes go through the caller's store::UndoLog (see kv.hpp). Logical outcomes are
// results, never errors; errors are storage errors only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"
#include "queen/store/env.hpp"
#include "queen/store/undo.hpp"

namespace queen::locks {

/// Limits apply() checks (over one: Status::invalid, nothing changes). The HTTP layer checks
/// them first and answers 400.
struct Options {
    std::size_t name_bytes_max = 256;   ///< 1..this bytes
    std::size_t owner_bytes_max = 256;  ///< 1..this bytes
    std::int64_t ttl_ms_min = 1;
    std::int64_t ttl_ms_max = 24LL * 3600 * 1000;
    std::uint32_t list_limit_max = 1000;
    /// Errors: Errc::invalid_argument.
    [[nodiscard]] Result<void> validate() const;
};

enum class Status : std::uint8_t {
    ok = 0,
    /// Acquire: another owner holds a current grant (Grant says who and until when).
    held = 1,
    /// Renew, release, guard: the token is not the current grant of the lock (released,
    /// expired, or granted again since).
    stale_token = 2,
    invalid = 3,  ///< a name, owner or TTL outside Options (`message` says which)
};

/// A current grant.
struct Grant {
    std::string name;
    std::string owner;
    FencingToken token{0};
    TimestampMs acquired_at{0};  ///< the entry time of the grant
    TimestampMs expires_at{0};
    friend bool operator==(const Grant&, const Grant&) = default;
};

struct Acquire {
    std::string name;
    std::string owner;
    std::int64_t ttl_ms = 30'000;
};
struct Renew {
    std::string name;
    FencingToken token{0};
    std::int64_t ttl_ms = 30'000;
};
struct Release {
    std::string name;
    FencingToken token{0};
};
/// A transaction operation's precondition: (name, token) is the current grant at `now`.
struct Guard {
    std::string name;
    FencingToken token{0};
};

/// The outcome of acquire, renew, release and guard checks.
struct LockResult {
    Status status = Status::ok;
    /// ok: the grant after the operation (release: the grant that ended). held: the other
    /// owner's grant. stale_token: the current grant if any (when the lock is free: only the
    /// name, token 0). invalid: empty.
    Grant grant;
    std::string message;  ///< why, when status != ok
};

struct ExpireResult {
    std::vector<std::string> freed;  ///< names of the locks whose grant expired, sorted
    bool is_complete = true;         ///< false when the limit stopped it
};

/// Table handles (names start with "locks."; byte layouts in modules/locks/README.md). Every
/// grant record has exactly one expiry entry, at its expires_at.
struct Tables {
    store::Table grants;  ///< name -> owner, token, acquired_at, expires_at
    store::Table expiry;  ///< expires_at (be64), name -> empty
};

/// The locks of one tenant. Keeps nothing per lock in memory.
/// Thread-safety: apply() and expire() from the applier; queries from any thread.
class LockState {
public:
    /// Errors: Errc::invalid_argument (bad Options); store errors of open_table.
    [[nodiscard]] static Result<LockState> open(store::Env& env, const Options& options);

    /// `index` is the entry's log index (the token of a new grant), `now` its time.
    /// expires_at = now + ttl_ms, saturated at the largest TimestampMs.
    /// Precondition (asserted): 0 < index, and index >= the token of the lock's stored grant
    /// (log indexes only grow; an atomic entry may acquire one lock twice under one index).
    /// Errors: storage errors only (among them Errc::corruption: a stored record that does
    /// not decode, or the two tables disagree).
    [[nodiscard]] Result<LockResult> apply(store::WriteTxn& txn, store::UndoLog& undo,
                                           const Acquire& command, LogIndex index, TimestampMs now);
    [[nodiscard]] Result<LockResult> apply(store::WriteTxn& txn, store::UndoLog& undo,
                                           const Renew& command, TimestampMs now);
    [[nodiscard]] Result<LockResult> apply(store::WriteTxn& txn, store::UndoLog& undo,
                                           const Release& command, TimestampMs now);
    /// Checks a guard; writes nothing. A name outside Options is Status::invalid.
    [[nodiscard]] Result<LockResult> check(const store::Txn& txn, const Guard& guard,
                                           TimestampMs now) const;

    /// Deletes up to `limit` grants with expires_at <= now, earliest first (not through an
    /// UndoLog). `is_complete` is false only when more expired grants remain.
    /// Errors: storage errors, Errc::corruption (an expiry entry without its grant record).
    [[nodiscard]] Result<ExpireResult> expire(store::WriteTxn& txn, TimestampMs now,
                                              std::size_t limit);
    /// The earliest expires_at of any stored grant (current or not yet deleted), if any.
    /// Errors: storage errors, Errc::corruption.
    [[nodiscard]] Result<std::optional<TimestampMs>> next_expiry(const store::Txn& txn) const;

    [[nodiscard]] const Tables& tables() const noexcept { return tables_; }
    [[nodiscard]] const Options& options() const noexcept { return options_; }

private:
    LockState(Tables tables, Options options) noexcept : tables_(tables), options_(options) {}
    Tables tables_;
    Options options_;
};

/// The current grant of `name` at `now`, std::nullopt when free (or expired; also for a name
/// no key can hold: empty or over store::Env::key_size_max bytes).
/// Errors: storage errors, Errc::corruption.
[[nodiscard]] Result<std::optional<Grant>> get(const Tables& tables, const store::Txn& txn,
                                               std::string_view name, TimestampMs now);
/// Current grants whose names sort after `after` (bytewise, as std::string compares), at most
/// `limit`, in name order. The caller bounds `limit` (Options::list_limit_max); records of
/// expired grants that expire() has not deleted yet are read and skipped.
/// Errors: storage errors, Errc::corruption.
[[nodiscard]] Result<std::vector<Grant>> list(const Tables& tables, const store::Txn& txn,
                                              std::string_view after, std::uint32_t limit,
                                              TimestampMs now);

}  // namespace queen::locks
