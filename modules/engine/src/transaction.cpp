// engine/src/transaction.cpp — the one call: a transaction's operations over the queues, KV,
// locks and timers, in order, all or none; lock commands; Due entries (timers fire, expiries).
#include <algorithm>
#include <string>

#include "machines.hpp"
#include "queen/core/assert.hpp"

namespace queen::engine {

std::string delayed_push_timer_id(LogIndex index, std::size_t op) {
    return std::string(delayed_push_timer_prefix) + std::to_string(index.value()) + "." +
           std::to_string(op);
}

std::string lock_wait_key(std::string_view name) {
    std::string key;
    key.reserve(1 + name.size());
    key.push_back('\x01');
    key.append(name);
    return key;
}

namespace detail {
namespace {

using Kind = TransactionOp::Kind;

/// Why an operation refused the transaction: its failure class and message.
struct Refusal {
    TransactionFailure failure = TransactionFailure::none;
    std::string message;
};

Refusal refuse(TransactionFailure failure, std::string message) {
    return Refusal{failure, std::move(message)};
}

std::string in_quotes(std::string_view text) {
    return "'" + std::string(text) + "'";
}

/// The time a timer operation (or a delayed push) is first due: `at`, or delay_ms after now.
TimestampMs first_due(const TimerOp& timer, TimestampMs now) {
    return timer.at.value() != 0 ? timer.at : TimestampMs{now.value() + timer.delay_ms};
}

bool is_delayed(const TransactionOp& op, TimestampMs now) {
    return (op.timer.at.value() != 0 || op.timer.delay_ms > 0) &&
           first_due(op.timer, now).value() > now.value();
}

TransactionFailure failure_of(kv::Status status) {
    return status == kv::Status::invalid ? TransactionFailure::invalid
                                         : TransactionFailure::conflict;
}
TransactionFailure failure_of(locks::Status status) {
    return status == locks::Status::invalid ? TransactionFailure::invalid
                                            : TransactionFailure::conflict;
}
TransactionFailure failure_of(timers::Status status) {
    return status == timers::Status::invalid ? TransactionFailure::invalid
                                             : TransactionFailure::conflict;
}

/// Runs one operation; fills `out`, or returns why the transaction must be refused.
class OpRunner {
public:
    OpRunner(Machines& m, store::WriteTxn& txn, LogIndex index, TimestampMs now)
        : m_(m), txn_(txn), index_(index), now_(now) {}

    Result<Refusal> run(const TransactionOp& op, std::size_t position, TransactionOpResult& out) {
        out.kind = op.kind;
        if (op.guard) {
            QUEEN_TRY(auto guard, m_.locks.check(txn_, *op.guard, now_));
            if (guard.status != locks::Status::ok) {
                // locks::check says which token and why ("token 2 is not the current grant
                // (current token 5)"); the guard names the lock.
                return refuse(failure_of(guard.status),
                              "lock guard " + in_quotes(op.guard->name) + ": " + guard.message);
            }
        }
        switch (op.kind) {
            case Kind::push: return push(op, position, out);
            case Kind::ack: return ack(op, out);
            case Kind::kv_set:
            case Kind::kv_delete:
            case Kind::kv_check: return kv(op, out);
            case Kind::timer_set: return timer_set(op, out);
            case Kind::timer_cancel: return timer_cancel(op, out);
            case Kind::lock_release: return lock_release(op, out);
        }
        return refuse(TransactionFailure::invalid, "unknown operation");
    }

private:
    Result<Refusal> push(const TransactionOp& op, std::size_t position, TransactionOpResult& out) {
        out.transaction_id = op.push.transaction_id;
        out.queue = op.push.queue;
        if (is_delayed(op, now_)) {
            timers::Set set;
            set.id = delayed_push_timer_id(index_, position);
            set.due_at = first_due(op.timer, now_);
            set.payload = encode_timer_message(op.push);
            return set_timer(set, out);
        }
        QUEEN_TRY(auto pushed, m_.queues.push_atomic(txn_, op.push, now_));
        out.message_id = pushed.message_id;
        out.created_at = pushed.created_at;
        if (pushed.status == queues::PushStatus::queued) {
            out.success = true;
            return Refusal{};
        }
        if (pushed.status == queues::PushStatus::duplicate) {
            return refuse(TransactionFailure::operation,
                          "Duplicate transactionId " + in_quotes(op.push.transaction_id) +
                              " in partition " + in_quotes(op.push.partition) + " of queue " +
                              in_quotes(op.push.queue));
        }
        out.error = pushed.error;
        return refuse(TransactionFailure::operation, pushed.error);
    }

    Result<Refusal> ack(const TransactionOp& op, TransactionOpResult& out) {
        QUEEN_TRY(auto acked, m_.queues.ack_atomic(txn_, op.ack, now_));
        out.transaction_id = op.ack.transaction_id;
        out.success = acked.item.success;
        out.dlq = acked.item.dlq;
        out.error = acked.item.error;
        if (!acked.failure.empty()) {
            return refuse(TransactionFailure::operation, std::move(acked.failure));
        }
        return Refusal{};
    }

    Result<Refusal> kv(const TransactionOp& op, TransactionOpResult& out) {
        const KvOp& c = op.kv;
        kv::WriteResult written;
        if (op.kind == Kind::kv_set) {
            QUEEN_TRY(written,
                      m_.kv.apply(txn_, m_.undo,
                                  kv::Set{c.bucket, c.key, c.value, c.expected_version, c.ttl_ms},
                                  index_, now_));
        } else if (op.kind == Kind::kv_delete) {
            QUEEN_TRY(written,
                      m_.kv.apply(txn_, m_.undo, kv::Delete{c.bucket, c.key, c.expected_version},
                                  index_, now_));
        } else {
            QUEEN_TRY(written,
                      m_.kv.apply(txn_, kv::Check{c.bucket, c.key, c.expected_version.value_or(0)},
                                  now_));
        }
        out.version = written.version;
        out.existed = written.existed;
        if (written.status == kv::Status::ok) {
            out.success = true;
            m_.is_due_dirty = true;
            return Refusal{};
        }
        out.error = written.message;
        if (written.status == kv::Status::version_mismatch) {
            return refuse(TransactionFailure::conflict,
                          "key " + in_quotes(c.key) + " of bucket " + in_quotes(c.bucket) +
                              " is at version " + std::to_string(written.version) + ", not " +
                              std::to_string(c.expected_version.value_or(0)));
        }
        return refuse(failure_of(written.status), written.message);
    }

    Result<Refusal> timer_set(const TransactionOp& op, TransactionOpResult& out) {
        if (std::string_view(op.timer.id).starts_with(delayed_push_timer_prefix)) {
            return refuse(TransactionFailure::invalid, "timer ids starting with " +
                                                           in_quotes(delayed_push_timer_prefix) +
                                                           " are the server's");
        }
        timers::Set set;
        set.id = op.timer.id;
        set.due_at = first_due(op.timer, now_);
        set.interval_ms = op.timer.interval_ms;
        set.end_at = op.timer.end_at;
        set.replace = op.timer.replace;
        set.payload = encode_timer_message(op.push);
        out.queue = op.push.queue;
        return set_timer(set, out);
    }

    Result<Refusal> set_timer(const timers::Set& set, TransactionOpResult& out) {
        QUEEN_TRY(auto stored, m_.timers.apply(txn_, m_.undo, set, now_));
        out.timer_id = set.id;
        if (stored.status == timers::Status::ok) {
            out.success = true;
            out.existed = stored.replaced;
            out.due_at = stored.timer.due_at;
            m_.is_due_dirty = true;
            return Refusal{};
        }
        out.error = stored.message;
        if (stored.status == timers::Status::exists) {
            return refuse(TransactionFailure::conflict,
                          "timer " + in_quotes(set.id) + " exists (set replace to change it)");
        }
        return refuse(failure_of(stored.status), stored.message);
    }

    Result<Refusal> timer_cancel(const TransactionOp& op, TransactionOpResult& out) {
        QUEEN_TRY(auto cancelled,
                  m_.timers.apply(txn_, m_.undo, timers::Cancel{op.timer.id}, now_));
        out.timer_id = op.timer.id;
        // Cancelling a timer that has already fired (or never was) is not a failure: a retried
        // cancel, or one racing the firing, must not undo the rest of the transaction.
        if (cancelled.status == timers::Status::ok ||
            cancelled.status == timers::Status::not_found) {
            out.success = true;
            out.existed = cancelled.status == timers::Status::ok;
            m_.is_due_dirty = true;
            return Refusal{};
        }
        out.error = cancelled.message;
        return refuse(failure_of(cancelled.status), cancelled.message);
    }

    Result<Refusal> lock_release(const TransactionOp& op, TransactionOpResult& out) {
        QUEEN_TRY(auto released,
                  m_.locks.apply(txn_, m_.undo, locks::Release{op.lock.name, op.lock.token}, now_));
        if (released.status == locks::Status::ok) {
            out.success = true;
            m_.freed_locks.push_back(op.lock.name);
            m_.is_due_dirty = true;
            return Refusal{};
        }
        out.error = released.message;
        // As a guard's refusal: the lock named once, locks' reason (which token is current).
        return refuse(failure_of(released.status),
                      "lock " + in_quotes(op.lock.name) + ": " + released.message);
    }

    Machines& m_;
    store::WriteTxn& txn_;
    LogIndex index_;
    TimestampMs now_;
};

/// The transaction id of a timer's firing: a one-shot timer's message keeps the id it was set
/// with; otherwise (a repeating timer, or none given) the id (or the timer's id) plus '#' and
/// the firing's sequence, so each firing is its own message and a replay makes the same ids.
SmallString firing_transaction_id(const timers::Firing& firing, const queues::PushItem& item) {
    const bool is_once = firing.sequence == 1 && firing.is_last;
    if (is_once && !item.transaction_id.empty()) {
        return item.transaction_id;
    }
    std::string id(item.transaction_id.empty() ? std::string_view(firing.id)
                                               : std::string_view(item.transaction_id));
    id += '#';
    id += std::to_string(firing.sequence);
    return SmallString(id);
}

}  // namespace

std::vector<queues::Wakeup> Machines::take_wakeups() {
    std::vector<queues::Wakeup> wakeups = queues.take_wakeups();
    if (freed_locks.empty()) {
        return wakeups;
    }
    for (const std::string& name : freed_locks) {
        wakeups.push_back(queues::Wakeup{lock_wait_key(name)});
    }
    freed_locks.clear();
    std::sort(wakeups.begin(), wakeups.end());
    wakeups.erase(std::unique(wakeups.begin(), wakeups.end()), wakeups.end());
    return wakeups;
}

Result<std::optional<TimestampMs>> Machines::due_at(const store::Txn& txn) const {
    std::optional<TimestampMs> earliest;
    const auto consider = [&](std::optional<TimestampMs> at) {
        if (at && (!earliest || at->value() < earliest->value())) {
            earliest = at;
        }
    };
    QUEEN_TRY(auto timer, timers.next_due(txn));
    consider(timer);
    QUEEN_TRY(auto key, kv.next_expiry(txn));
    consider(key);
    QUEEN_TRY(auto lock, locks.next_expiry(txn));
    consider(lock);
    QUEEN_TRY(auto queue, next_ephemeral_expiry(*this, txn));
    consider(queue);
    QUEEN_TRY(const bool garbage, streams.has_garbage(txn));
    if (garbage) {
        consider(TimestampMs{0});  // due at once: Due entries delete the rows, `limit` each
    }
    return earliest;
}

Result<TransactionResult> apply_transaction(Machines& m, store::WriteTxn& txn,
                                            const Transaction& command, LogIndex index,
                                            TimestampMs now) {
    TransactionResult result;
    if (command.ops.empty()) {
        result.failure = TransactionFailure::invalid;
        result.error = "operations array cannot be empty";
        return result;
    }
    QUEEN_TRY(m.queues.begin_atomic(txn));
    m.undo.clear();
    const std::size_t freed_before = m.freed_locks.size();
    OpRunner runner(m, txn, index, now);
    result.results.reserve(command.ops.size());
    for (std::size_t i = 0; i < command.ops.size(); ++i) {
        TransactionOpResult one;
        auto ran = runner.run(command.ops[i], i, one);
        if (!ran) {
            (void)m.queues.rollback_atomic(txn);
            (void)m.undo.rollback(txn);
            return std::move(ran).error();
        }
        if (ran->failure != TransactionFailure::none) {
            QUEEN_TRY(m.queues.rollback_atomic(txn));
            QUEEN_TRY(m.undo.rollback(txn));
            m.freed_locks.resize(freed_before);
            result.success = false;
            result.failure = ran->failure;
            result.failed_op = static_cast<std::uint32_t>(i);
            result.error = std::move(ran->message);
            result.results.push_back(std::move(one));  // the failing one last: its version
            return result;
        }
        result.results.push_back(std::move(one));
    }
    QUEEN_TRY(m.queues.commit_atomic(txn));
    m.undo.clear();
    result.success = true;
    if (!m.ephemeral.empty()) {
        for (const TransactionOp& op : command.ops) {
            if (op.kind == Kind::push) {
                QUEEN_TRY(touch_ephemeral(m, txn, op.push.queue, now));
            }
        }
    }
    if (command.next.has_value()) {
        // After the operations, so it may pop what they pushed. Its names passed the engine's
        // limits with the rest of the command: it cannot be refused now that they are applied.
        QUEEN_TRY(result.next, m.queues.apply(txn, *command.next, now));
        if (!m.ephemeral.empty()) {
            QUEEN_TRY(touch_ephemeral(m, txn, command.next->queue, now));
        }
    }
    return result;
}

Result<LockResult> apply_lock(Machines& m, store::WriteTxn& txn, const LockCommand& command,
                              LogIndex index, TimestampMs now) {
    m.undo.clear();  // single writes: nothing to take back
    m.is_due_dirty = true;
    if (command.op == LockCommand::Op::acquire) {
        return m.locks.apply(
            txn, m.undo, locks::Acquire{command.name, command.owner, command.ttl_ms}, index, now);
    }
    return m.locks.apply(txn, m.undo, locks::Renew{command.name, command.token, command.ttl_ms},
                         now);
}

Result<DueResult> apply_due(Machines& m, store::WriteTxn& txn, const Due& command,
                            TimestampMs now) {
    DueResult result;
    const std::size_t limit = std::max<std::uint32_t>(command.limit, 1);
    QUEEN_TRY(auto fired, m.timers.fire(txn, now, limit));
    result.timers_fired = fired.firings.size();
    if (!fired.firings.empty()) {
        queues::Push push;
        push.items.reserve(fired.firings.size());
        for (const timers::Firing& firing : fired.firings) {
            auto item = decode_timer_message(firing.payload);
            if (!item) {
                // The engine wrote this payload; one that does not decode is damage.
                return Error{queen::Errc::corruption,
                             "timer " + in_quotes(firing.id) + ": " + item.error().message()};
            }
            item->transaction_id = firing_transaction_id(firing, *item);
            push.items.push_back(std::move(*item));
        }
        QUEEN_TRY(auto pushed, m.queues.apply(txn, push, now));
        for (const queues::PushItemResult& item : pushed.items) {
            if (item.status == queues::PushStatus::queued) {
                ++result.messages_pushed;
            }
        }
    }
    QUEEN_TRY(auto keys, m.kv.expire(txn, now, limit));
    result.kv_expired = keys.deleted;
    QUEEN_TRY(auto grants, m.locks.expire(txn, now, limit));
    result.locks_expired = grants.freed.size();
    for (std::string& name : grants.freed) {
        m.freed_locks.push_back(std::move(name));
    }
    result.is_complete = fired.is_complete && keys.is_complete && grants.is_complete;
    QUEEN_TRY(result.queues_expired, expire_ephemeral(m, txn, now, limit, result.is_complete));
    QUEEN_TRY(auto collected, m.streams.collect(txn, limit));
    result.stream_rows_collected = collected.deleted;
    result.is_complete = result.is_complete && collected.is_complete;
    m.is_due_dirty = true;
    return result;
}

}  // namespace detail
}  // namespace queen::engine
