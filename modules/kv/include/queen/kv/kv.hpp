// queen/kv/kv.hpp — KvState: buckets of versioned keys with JSON values, compare-and-set and
// TTL, as a deterministic state machine over LMDB tables (L2; no clock, no JSON parsing).
//
// The model. A tenant holds any number of buckets; a bucket holds keys; a key holds a value
// (opaque bytes: the HTTP layer checks that they are JSON text), the version that wrote it and
// an optional expiry. The version is the index of the log entry that wrote the key, so it
// strictly increases with every write of a key, across restarts and leader changes, and two
// keys written by one entry share it. There is no version 0: an expected version of 0 means
// "the key must not exist".
//
// Time. Every write takes `now` (the entry's timestamp). A key whose expires_at <= now is
// absent for every read, write and check, from that instant, on every replica; expire() later
// deletes its record (bounded per entry), so an expired key costs disk only until then.
//
// Atomicity. Every write goes through the caller's store::UndoLog: the engine takes back a
// transaction whose later operation failed with UndoLog::rollback(). Logical outcomes (a
// version mismatch, a limit) are results, never errors; errors are storage errors only.
//
//     auto kv = KvState::open(env, {}).value();
//     auto txn = env.begin_write().value();
//     store::UndoLog undo;
//     auto set = kv.apply(txn, undo, Set{"users", "42", bytes, std::nullopt, 0}, index, now);
//     // set->status == Status::ok, set->version == index
//     auto got = get(kv.tables(), txn, "users", "42", now);  // any Txn, any thread
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"
#include "queen/store/env.hpp"
#include "queen/store/undo.hpp"

namespace queen::kv {

/// Limits apply() checks (a write over one is refused with Status::invalid and changes nothing).
/// The HTTP layer checks the same ones first and answers 400.
struct Options {
    std::size_t bucket_bytes_max = 128;                  ///< 1..this bytes, no NUL byte
    std::size_t key_bytes_max = 256;                     ///< 1..this bytes (any bytes but NUL)
    std::size_t value_bytes_max = 1u << 20;              ///< 0..this bytes
    std::int64_t ttl_ms_max = 366LL * 24 * 3600 * 1000;  ///< TTL 1..this ms (0 = none)
    std::uint32_t list_limit_max = 1000;                 ///< keys per list() page
    /// Validates the limits (bucket + key fit an LMDB key). Errors: Errc::invalid_argument.
    [[nodiscard]] Result<void> validate() const;
};

/// How a write or check ended.
enum class Status : std::uint8_t {
    ok = 0,
    /// The expected version did not match (`current_version` says what is there, 0 = absent).
    version_mismatch = 1,
    /// A name, value or TTL outside Options (`message` says which).
    invalid = 2,
};

/// Stores `value` under (bucket, key). With `expected_version`, only if the key's current
/// version equals it (0: only if the key is absent). `ttl_ms` > 0: the key expires at
/// now + ttl_ms; 0: never (a write without TTL clears an earlier one).
struct Set {
    std::string bucket;
    std::string key;
    Bytes value;
    std::optional<std::uint64_t> expected_version;
    std::int64_t ttl_ms = 0;
};

/// Deletes (bucket, key). With `expected_version`, only if it matches (0: only if absent,
/// which deletes nothing and succeeds).
struct Delete {
    std::string bucket;
    std::string key;
    std::optional<std::uint64_t> expected_version;
};

/// A pure precondition: (bucket, key) has version `expected_version` (0: is absent).
struct Check {
    std::string bucket;
    std::string key;
    std::uint64_t expected_version = 0;
};

/// The outcome of a Set, Delete or Check.
struct WriteResult {
    Status status = Status::ok;
    /// ok: the key's version after the operation (Set: the entry's index; Delete: 0; Check:
    /// the checked version). version_mismatch: the current version (0 = absent).
    std::uint64_t version = 0;
    bool existed = false;  ///< Delete: a live key was deleted
    std::string message;   ///< why, when status != ok
};

/// One stored key as reads see it.
struct Entry {
    std::string key;
    Bytes value;
    std::uint64_t version = 0;
    TimestampMs updated_at{0};  ///< the entry time of the write
    TimestampMs expires_at{0};  ///< 0 = never
    friend bool operator==(const Entry&, const Entry&) = default;
};

/// One page of a bucket listing, in key byte order.
struct ListPage {
    std::vector<Entry> entries;
    /// The key to pass as `after` for the next page; empty when this page is the last. Set (to
    /// the page's last key) only when a live key with the prefix follows the full page, so an
    /// empty page never says "more".
    std::string next_after;
};

/// What one expire() call removed.
struct ExpireResult {
    std::uint64_t deleted = 0;
    bool is_complete = true;  ///< false when the limit stopped it (more are due)
};

/// The table handles (names start with "kv."), for the read queries below.
struct Tables {
    store::Table entries;  ///< bucket, key -> record (version, times, value)
    store::Table expiry;   ///< expires_at (be64), bucket, key -> empty
};

/// The KV state of one tenant. Keeps nothing per key in memory.
/// Thread-safety: apply() and expire() from one thread (the applier); the read queries need
/// only a Txn and may run on any thread.
class KvState {
public:
    /// Opens (creating) the tables in `env`. Errors: Errc::invalid_argument (bad Options);
    /// store errors of open_table.
    [[nodiscard]] static Result<KvState> open(store::Env& env, const Options& options);

    /// Writes go through `undo`; `index` is the entry's log index (the new version), `now` its
    /// time. Errors: storage errors only (then abort the txn), counting queen::Errc::corruption
    /// (a stored record that does not decode, or the two tables disagreeing).
    [[nodiscard]] Result<WriteResult> apply(store::WriteTxn& txn, store::UndoLog& undo,
                                            const Set& command, LogIndex index, TimestampMs now);
    [[nodiscard]] Result<WriteResult> apply(store::WriteTxn& txn, store::UndoLog& undo,
                                            const Delete& command, LogIndex index, TimestampMs now);
    [[nodiscard]] Result<WriteResult> apply(store::WriteTxn& txn, const Check& command,
                                            TimestampMs now) const;

    /// Deletes up to `limit` keys whose expires_at <= now, oldest expiry first (not through an
    /// UndoLog: the engine runs it outside transactions). Errors: storage errors.
    [[nodiscard]] Result<ExpireResult> expire(store::WriteTxn& txn, TimestampMs now,
                                              std::size_t limit);
    /// The earliest expires_at of any stored key (expired or not), if any: expire() has work
    /// at that time.
    [[nodiscard]] Result<std::optional<TimestampMs>> next_expiry(const store::Txn& txn) const;

    [[nodiscard]] const Tables& tables() const noexcept { return tables_; }
    [[nodiscard]] const Options& options() const noexcept { return options_; }

private:
    KvState(Tables tables, Options options) noexcept : tables_(tables), options_(options) {}
    Tables tables_;
    Options options_;
};

/// The live entry of (bucket, key) at `now`, std::nullopt when absent or expired.
/// Errors: storage errors, queen::Errc::corruption (the stored record does not decode).
[[nodiscard]] Result<std::optional<Entry>> get(const Tables& tables, const store::Txn& txn,
                                               std::string_view bucket, std::string_view key,
                                               TimestampMs now);
/// Live keys of `bucket` that start with `prefix` and sort after `after` (byte order), at most
/// `limit` (clamped to 1..Options::list_limit_max by the caller; 0 asserts). Expired keys are
/// skipped (an expired backlog that expire() has not removed yet is walked over). Names longer
/// than any stored key match nothing. Errors: storage errors, queen::Errc::corruption.
[[nodiscard]] Result<ListPage> list(const Tables& tables, const store::Txn& txn,
                                    std::string_view bucket, std::string_view prefix,
                                    std::string_view after, std::uint32_t limit, TimestampMs now);
/// Buckets that hold at least one record (live or not yet expired away), sorted, with their
/// record counts (for `queen admin kv` and `queen inspect`). Walks every record: O(records),
/// not for request paths. Errors: storage errors, queen::Errc::corruption.
struct BucketInfo {
    std::string bucket;
    std::uint64_t keys = 0;
    friend bool operator==(const BucketInfo&, const BucketInfo&) = default;
};
[[nodiscard]] Result<std::vector<BucketInfo>> list_buckets(const Tables& tables,
                                                           const store::Txn& txn);

}  // namespace queen::kv
