// timers/src/timers.cpp — TimerState: Options::validate, open, Set, Cancel, fire and next_due.
#include "queen/timers/timers.hpp"

#include <limits>
#include <string>
#include <utility>

#include "queen/core/assert.hpp"
#include "queen/store/keys.hpp"
#include "records.hpp"

namespace queen::timers {
namespace {

/// The largest id that leaves room for the due key's 8-byte time prefix in an LMDB key.
constexpr std::size_t id_bytes_limit = store::Env::key_size_max - detail::due_key_prefix_size;
static_assert(id_bytes_limit == 503, "due key = i64be(due_at) + id must fit an LMDB key");
/// A sanity bound on Options::payload_bytes_max (a record is one LMDB value).
constexpr std::size_t payload_bytes_limit = std::size_t{1} << 30;

/// Why `command` is outside `options`, or an empty string.
std::string check_set(const Options& options, const Set& command) {
    if (command.id.empty() || command.id.size() > options.id_bytes_max) {
        return "id: " + std::to_string(command.id.size()) + " bytes (1.." +
               std::to_string(options.id_bytes_max) + ")";
    }
    if (command.payload.size() > options.payload_bytes_max) {
        return "payload: " + std::to_string(command.payload.size()) + " bytes (max " +
               std::to_string(options.payload_bytes_max) + ")";
    }
    if (command.due_at.value() <= 0) {
        return "due_at: " + std::to_string(command.due_at.value()) + " (must be > 0)";
    }
    if (command.interval_ms != 0 && command.interval_ms < options.interval_ms_min) {
        return "interval_ms: " + std::to_string(command.interval_ms) +
               " (0 or >= " + std::to_string(options.interval_ms_min) + ")";
    }
    if (command.end_at.value() != 0 && command.end_at < command.due_at) {
        return "end_at: " + std::to_string(command.end_at.value()) + " is before due_at " +
               std::to_string(command.due_at.value());
    }
    return {};
}

/// The first due time of a repeating timer after `now`: due_at + k * interval_ms for the
/// smallest k >= 1 that passes `now`; std::nullopt when it does not fit an int64.
/// Precondition: due_at <= now, interval_ms > 0.
std::optional<TimestampMs> next_due_after(TimestampMs due_at, std::int64_t interval_ms,
                                          TimestampMs now) {
    __extension__ using i128 = __int128;
    QUEEN_ASSERT(interval_ms > 0, "next_due_after of a one-shot timer");
    QUEEN_ASSERT(due_at <= now, "next_due_after of a timer that is not due");
    const i128 due = due_at.value();
    const i128 interval = interval_ms;
    const i128 steps = (static_cast<i128>(now.value()) - due) / interval + 1;
    const i128 next = due + steps * interval;
    QUEEN_ASSERT(next > now.value(), "the next due time passes now");
    QUEEN_ASSERT(next - interval <= now.value(), "the next due time is the first after now");
    if (next > std::numeric_limits<std::int64_t>::max()) {
        return std::nullopt;
    }
    return TimestampMs{static_cast<std::int64_t>(next)};
}

/// Adds the timers.due key of (due_at, id), recording it in `undo` unless null.
/// Errors: queen::Errc::corruption (the key exists), storage errors.
Result<void> put_due_key(store::WriteTxn& txn, store::Table due, store::UndoLog* undo,
                         TimestampMs due_at, std::string_view id, store::KeyBuilder& key) {
    // The key names this timer and its due time, so it is absent unless the tables disagree:
    // no read first (the undo of an absent key is its deletion).
    detail::due_key(key, due_at, id);
    auto stored = txn.put(due, key.span(), ByteSpan{}, store::PutFlags::no_overwrite);
    if (!stored) {
        if (stored.error().is(store::Errc::key_exists)) {
            return Error{queen::Errc::corruption,
                         "timers: timers.due key of " + to_hex(as_bytes(id)) + " at " +
                             std::to_string(due_at.value()) + " before its timer was due then"};
        }
        return stored;
    }
    if (undo != nullptr) {
        undo->record(due, key.span(), std::nullopt);
    }
    return {};
}

/// Deletes the timers.due key of (due_at, id), recording it in `undo` unless null.
/// Errors: queen::Errc::corruption (the key is absent), storage errors.
Result<void> del_due_key(store::WriteTxn& txn, store::Table due, store::UndoLog* undo,
                         TimestampMs due_at, std::string_view id, store::KeyBuilder& key) {
    detail::due_key(key, due_at, id);
    QUEEN_TRY(const bool deleted, txn.del(due, key.span()));
    if (!deleted) {
        return Error{queen::Errc::corruption, "timers: timer " + to_hex(as_bytes(id)) +
                                                  " has no timers.due key for its due_at " +
                                                  std::to_string(due_at.value())};
    }
    if (undo != nullptr) {
        undo->record(due, key.span(), ByteSpan{});  // due keys hold an empty value
    }
    return {};
}

}  // namespace

Result<void> Options::validate() const {
    const auto fail = [](std::string what) {
        return Error{queen::Errc::invalid_argument, "timers options: " + std::move(what)};
    };
    if (id_bytes_max < 1 || id_bytes_max > id_bytes_limit) {
        return fail("id_bytes_max " + std::to_string(id_bytes_max) + " (1.." +
                    std::to_string(id_bytes_limit) + ")");
    }
    if (payload_bytes_max > payload_bytes_limit) {
        return fail("payload_bytes_max " + std::to_string(payload_bytes_max) + " (max " +
                    std::to_string(payload_bytes_limit) + ")");
    }
    if (interval_ms_min < 1) {
        return fail("interval_ms_min " + std::to_string(interval_ms_min) + " (>= 1)");
    }
    if (list_limit_max < 1) {
        return fail("list_limit_max 0 (>= 1)");
    }
    return {};
}

Result<TimerState> TimerState::open(store::Env& env, const Options& options) {
    QUEEN_TRY(options.validate());
    Tables tables;
    QUEEN_TRY(tables.timers, env.open_table("timers.timers"));
    QUEEN_TRY(tables.due, env.open_table("timers.due"));
    return TimerState(tables, options);
}

Result<SetResult> TimerState::apply(store::WriteTxn& txn, store::UndoLog& undo, const Set& command,
                                    TimestampMs now) {
    SetResult result;
    result.message = check_set(options_, command);
    if (!result.message.empty()) {
        result.status = Status::invalid;
        return result;
    }
    detail::TimerRecord record;
    record.due_at = command.due_at;
    record.interval_ms = command.interval_ms;
    record.end_at = command.end_at;
    record.fired = 0;
    record.created_at = now;
    record.payload = command.payload;
    Bytes value;
    detail::encode_into(value, record);

    // One descent stores a new timer or finds the existing one.
    const ByteSpan id = as_bytes(command.id);
    store::KeyBuilder key;
    QUEEN_TRY(const auto existing, txn.put_if_absent(tables_.timers, id, value));
    if (!existing) {
        undo.record(tables_.timers, id, std::nullopt);
    } else {
        QUEEN_TRY(auto old, detail::decode_record(*existing, command.id, false));
        if (!command.replace) {
            result.status = Status::exists;
            result.timer = detail::to_timer(command.id, std::move(old));
            return result;
        }
        // Recorded before the writes below end the span's life.
        undo.record(tables_.timers, id, existing);
        QUEEN_TRY(del_due_key(txn, tables_.due, &undo, old.due_at, command.id, key));
        QUEEN_TRY(txn.put(tables_.timers, id, value));
        result.replaced = true;
    }
    QUEEN_TRY(put_due_key(txn, tables_.due, &undo, record.due_at, command.id, key));
    result.timer = detail::to_timer(command.id, std::move(record));
    return result;
}

Result<CancelResult> TimerState::apply(store::WriteTxn& txn, store::UndoLog& undo,
                                       const Cancel& command, TimestampMs /*now*/) {
    CancelResult result;
    if (command.id.empty() || command.id.size() > options_.id_bytes_max) {
        result.status = Status::invalid;
        result.message = "id: " + std::to_string(command.id.size()) + " bytes (1.." +
                         std::to_string(options_.id_bytes_max) + ")";
        return result;
    }
    const ByteSpan id = as_bytes(command.id);
    QUEEN_TRY(auto existing, txn.get(tables_.timers, id));
    if (!existing) {
        result.status = Status::not_found;
        result.message = "no timer with this id";
        return result;
    }
    QUEEN_TRY(auto record, detail::decode_record(*existing, command.id, false));
    undo.record(tables_.timers, id, existing);
    QUEEN_TRY(const bool had_record, txn.del(tables_.timers, id));
    QUEEN_ASSERT(had_record, "the timer read just before is gone");
    store::KeyBuilder key;
    QUEEN_TRY(del_due_key(txn, tables_.due, &undo, record.due_at, command.id, key));
    return result;
}

Result<FireResult> TimerState::fire(store::WriteTxn& txn, TimestampMs now, std::size_t limit) {
    FireResult result;
    // First collect the due keys (at most `limit`), then move the timers on: nothing is written
    // while the cursor walks, and every rescheduled key lands after `now`, so no timer fires
    // twice in one call.
    struct DueTimer {
        TimestampMs due_at;
        std::string id;
    };
    std::vector<DueTimer> due;
    {
        QUEEN_TRY(auto cursor, txn.cursor(tables_.due));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            QUEEN_TRY(const auto key, detail::parse_due_key(entry->key));
            if (key.due_at > now) {
                break;
            }
            if (due.size() == limit) {
                result.is_complete = false;
                break;
            }
            due.push_back(DueTimer{key.due_at, std::string(key.id)});
            QUEEN_TRY(entry, cursor.next());
        }
    }

    result.firings.reserve(due.size());
    store::KeyBuilder key;
    Bytes value;
    for (DueTimer& timer : due) {
        const ByteSpan id = as_bytes(timer.id);
        QUEEN_TRY(auto stored, txn.get(tables_.timers, id));
        if (!stored) {
            return Error{queen::Errc::corruption,
                         "timers: timers.due key of " + to_hex(id) + " without its timer"};
        }
        QUEEN_TRY(auto record, detail::decode_record(*stored, timer.id, true));
        if (record.due_at != timer.due_at) {
            return Error{queen::Errc::corruption,
                         "timers: timers.due key of " + to_hex(id) + " at " +
                             std::to_string(timer.due_at.value()) + ", its timer due at " +
                             std::to_string(record.due_at.value())};
        }
        Firing firing;
        firing.due_at = record.due_at;
        firing.sequence = record.fired + 1;
        // A plain value and a flag (an optional here trips gcc 12's maybe-uninitialized).
        TimestampMs next{0};
        firing.is_last = true;
        if (record.interval_ms > 0) {
            const auto after = next_due_after(record.due_at, record.interval_ms, now);
            if (after && (record.end_at.value() == 0 || *after <= record.end_at)) {
                next = *after;
                firing.is_last = false;
            }
        }

        QUEEN_TRY(del_due_key(txn, tables_.due, nullptr, record.due_at, timer.id, key));
        if (firing.is_last) {
            QUEEN_TRY(const bool had_record, txn.del(tables_.timers, id));
            QUEEN_ASSERT(had_record, "the timer read just before is gone");
        } else {
            record.fired += 1;
            record.due_at = next;
            detail::encode_into(value, record);
            QUEEN_TRY(txn.put(tables_.timers, id, value));
            QUEEN_TRY(put_due_key(txn, tables_.due, nullptr, record.due_at, timer.id, key));
        }
        firing.payload = std::move(record.payload);
        firing.id = std::move(timer.id);
        result.firings.push_back(std::move(firing));
    }
    return result;
}

Result<std::optional<TimestampMs>> TimerState::next_due(const store::Txn& txn) const {
    QUEEN_TRY(auto cursor, txn.cursor(tables_.due));
    QUEEN_TRY(const auto entry, cursor.first());
    if (!entry) {
        return std::optional<TimestampMs>{};
    }
    QUEEN_TRY(const auto key, detail::parse_due_key(entry->key));
    return std::optional<TimestampMs>{key.due_at};
}

}  // namespace queen::timers
