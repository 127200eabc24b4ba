// queen/timers/timers.hpp — TimerState: timers that fire once or every N ms, as a deterministic
// state machine over LMDB tables (L2; no clock, nothing per timer in memory).
//
// The model. A timer has an id (chosen by the client, unique in the tenant), a due time, an
// optional interval (repeat every interval_ms after the first firing) with an optional end,
// and a payload of opaque bytes that this module never reads (the engine stores there the
// message the timer delivers). Setting an id that exists keeps the existing timer unless
// `replace` is set, so a retried set is harmless (idempotent by id).
//
// Firing goes through the log. The leader watches next_due() and, once its clock passes it,
// proposes an entry; applying that entry calls fire(now = the entry's time), which returns
// every timer with due_at <= now (up to a limit, earliest first) and moves each on: a one-shot
// timer is deleted, a repeating one gets its next due time. So every firing happens in exactly
// one entry (replay and followers apply the same entries), never before its due time (the
// entry's time is at least the due time), across restarts and leader changes.
//
// Cadence. A repeating timer's due times are due_at + k * interval_ms. When several of them
// have passed by the time it fires (the cluster was down, or the leader late), it fires once
// for all of them and moves to the first due time after `now`; it never fires twice for one
// due time and never drifts. That one firing reports the timer's stored due time (the first
// slot it missed) and counts as one in `fired`. Example: due 1000, interval 100, fired at
// now = 1000 (due_at 1000, sequence 1, next 1100), then at now = 1350 (due_at 1100, sequence
// 2, next 1400: 1200 and 1300 are covered by that firing). A timer whose next due time would
// pass end_at (or the int64 range) is deleted after its last firing.
//
// Memory: a timer costs LMDB space only (its record and its due-index key); millions of
// pending timers take no RAM beyond LMDB's page cache.
//
// Atomicity: set and cancel write through the caller's store::UndoLog (see kv.hpp). Logical
// outcomes are results, never errors; errors are storage errors only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"
#include "queen/store/env.hpp"
#include "queen/store/undo.hpp"

namespace queen::timers {

/// Limits apply() checks (over one: Status::invalid, nothing changes).
struct Options {
    std::size_t id_bytes_max = 256;            ///< 1..this bytes (any bytes); at most 503
    std::size_t payload_bytes_max = 2u << 20;  ///< the engine's encoded delivery
    std::int64_t interval_ms_min = 10;         ///< a repeating timer's shortest interval
    std::uint32_t list_limit_max = 1000;       ///< for callers of list()/list_due() to clamp to
    /// Errors: Errc::invalid_argument.
    [[nodiscard]] Result<void> validate() const;
};

enum class Status : std::uint8_t {
    ok = 0,
    exists = 1,     ///< Set without replace: a timer with this id exists (it is unchanged)
    not_found = 2,  ///< Cancel: no such timer
    invalid = 3,    ///< an id, payload, interval or end outside Options (`message` says which)
};

/// One stored timer.
struct Timer {
    std::string id;
    TimestampMs due_at{0};         ///< its next firing
    std::int64_t interval_ms = 0;  ///< 0 = fires once
    TimestampMs end_at{0};         ///< repeating: no firing after this time; 0 = none
    std::uint64_t fired = 0;       ///< firings so far
    TimestampMs created_at{0};     ///< the entry time of the set
    Bytes payload;
};

/// Creates timer `id` (or, with `replace`, replaces it). A due_at at or before now fires at
/// the next fire(). interval_ms 0 = once; otherwise >= Options::interval_ms_min. end_at 0 =
/// none, else it must not be before due_at.
struct Set {
    std::string id;
    TimestampMs due_at{0};
    std::int64_t interval_ms = 0;
    TimestampMs end_at{0};
    Bytes payload;
    bool replace = false;
};
struct Cancel {
    std::string id;
};

struct SetResult {
    Status status = Status::ok;
    bool replaced = false;  ///< ok with replace: a timer with this id existed
    Timer timer;            ///< ok: the stored timer; exists: the existing one (payload empty)
    std::string message;
};
struct CancelResult {
    Status status = Status::ok;
    std::string message;
};

/// One firing returned by fire().
struct Firing {
    std::string id;
    TimestampMs due_at{0};       ///< the due time this firing is for: the timer's stored one
                                 ///< (a late repeating timer: the first slot it missed)
    std::uint64_t sequence = 0;  ///< 1 for a timer's first firing, then 2, 3, ...
    Bytes payload;
    bool is_last = false;  ///< the timer was deleted after this firing
};
struct FireResult {
    std::vector<Firing> firings;  ///< in due order (ties: id order)
    bool is_complete = true;      ///< false when the limit stopped it (more are due now)
                                  ///< (limit 0 with a timer due: no firings, false)
};

/// Table handles (names start with "timers.").
struct Tables {
    store::Table timers;  ///< id -> record
    store::Table due;     ///< due_at (be64), id -> empty
};

/// The timers of one tenant. Thread-safety: apply() and fire() from the applier; queries from
/// any thread.
class TimerState {
public:
    /// Errors: Errc::invalid_argument (bad Options); store errors of open_table.
    [[nodiscard]] static Result<TimerState> open(store::Env& env, const Options& options);

    /// Errors: storage errors only.
    [[nodiscard]] Result<SetResult> apply(store::WriteTxn& txn, store::UndoLog& undo,
                                          const Set& command, TimestampMs now);
    [[nodiscard]] Result<CancelResult> apply(store::WriteTxn& txn, store::UndoLog& undo,
                                             const Cancel& command, TimestampMs now);

    /// Fires up to `limit` timers with due_at <= now (see the file comment); not through an
    /// UndoLog. A timer fires at most once per call (its next due time is after `now`).
    /// Errors: storage errors; Errc::corruption when the two tables disagree or a record does
    /// not decode.
    [[nodiscard]] Result<FireResult> fire(store::WriteTxn& txn, TimestampMs now, std::size_t limit);
    /// The earliest due_at of any timer, if any. Errors: storage errors.
    [[nodiscard]] Result<std::optional<TimestampMs>> next_due(const store::Txn& txn) const;

    [[nodiscard]] const Tables& tables() const noexcept { return tables_; }
    [[nodiscard]] const Options& options() const noexcept { return options_; }

private:
    TimerState(Tables tables, Options options) noexcept : tables_(tables), options_(options) {}
    Tables tables_;
    Options options_;
};

/// Timer `id`, std::nullopt when none. Errors: storage errors.
[[nodiscard]] Result<std::optional<Timer>> get(const Tables& tables, const store::Txn& txn,
                                               std::string_view id);
/// Timers whose ids sort after `after` (bytewise, as LMDB orders keys; "" = from the first),
/// at most `limit` (the caller clamps it to Options::list_limit_max), in id order.
/// `with_payload` false leaves payloads empty. Errors: storage errors.
[[nodiscard]] Result<std::vector<Timer>> list(const Tables& tables, const store::Txn& txn,
                                              std::string_view after, std::uint32_t limit,
                                              bool with_payload);
/// Timers with the earliest due times (at most `limit`), in due order. Errors: storage errors.
[[nodiscard]] Result<std::vector<Timer>> list_due(const Tables& tables, const store::Txn& txn,
                                                  std::uint32_t limit, bool with_payload);
/// Number of pending timers (the entry count of timers.timers: O(1)). Errors: storage errors.
[[nodiscard]] Result<std::uint64_t> count(const Tables& tables, const store::Txn& txn);

}  // namespace queen::timers
