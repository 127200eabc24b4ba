// queen/engine/transaction.hpp — the one call: a transaction of pushes, acks, KV writes and
// checks, timers and lock releases, applied as one log entry, all or nothing; and the other
// commands of the KV, lock and timer state machines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/small_string.hpp"
#include "queen/kv/kv.hpp"
#include "queen/locks/locks.hpp"
#include "queen/queues/types.hpp"
#include "queen/timers/timers.hpp"

namespace queen::engine {

/// A KV operation of a transaction (TransactionOp::kv): kv_set uses every field, kv_delete
/// bucket, key and expected_version, kv_check bucket, key and expected_version (required).
struct KvOp {
    std::string bucket;
    std::string key;
    Bytes value;  ///< kv_set: JSON text
    std::optional<std::uint64_t> expected_version;
    std::int64_t ttl_ms = 0;  ///< kv_set: 0 = no expiry
};

/// A timer operation of a transaction (TransactionOp::timer), and the delay of a delayed push.
/// timer_set: the timer delivers TransactionOp::push (a message to a queue and partition) at
/// `at`, or, when `at` is 0, `delay_ms` after the entry's time; then every interval_ms until
/// end_at when interval_ms > 0. timer_cancel: `id` only. A push with `at` or `delay_ms` set is
/// a delayed push: a one-shot timer with an id the engine makes (delayed_push_timer_id).
struct TimerOp {
    std::string id;
    TimestampMs at{0};
    std::int64_t delay_ms = 0;
    std::int64_t interval_ms = 0;
    TimestampMs end_at{0};
    bool replace = false;
};

/// Timer ids the engine makes for delayed pushes start with this; a client's may not (the API
/// refuses them), so the two never collide.
inline constexpr std::string_view delayed_push_timer_prefix = "~delay.";
/// The id of the timer of a delayed push: the prefix, the entry's index, '.', the operation's
/// position in its transaction.
[[nodiscard]] std::string delayed_push_timer_id(LogIndex index, std::size_t op);

/// One operation of POST /api/v1/transaction. `kind` selects which members it uses (the codec
/// encodes only those; the others are reset on decode):
///   push          push (+ timer.at / timer.delay_ms: a delayed push)
///   ack           ack
///   kv_set, kv_delete, kv_check   kv
///   timer_set     timer and push (the message it delivers)
///   timer_cancel  timer.id
///   lock_release  lock
/// Any operation may carry a `guard`: the whole transaction is refused unless (name, token) is
/// the current grant of that lock when the operation runs.
struct TransactionOp {
    enum class Kind : std::uint8_t {
        push = 0,
        ack = 1,
        kv_set = 2,
        kv_delete = 3,
        kv_check = 4,
        timer_set = 5,
        timer_cancel = 6,
        lock_release = 7,
    } kind = Kind::push;
    queues::PushItem push;
    queues::AckItem ack;
    KvOp kv;
    TimerOp timer;
    locks::Guard lock;
    std::optional<locks::Guard> guard;
};
inline constexpr TransactionOp::Kind transaction_op_kind_max = TransactionOp::Kind::lock_release;

/// POST /api/v1/transaction: every operation in order, in one entry; all or none.
/// `next`: once every operation succeeded, the same entry pops this (a worker's ack-and-pop-next:
/// its whole loop is one call); a refused transaction pops nothing. It never waits: an empty
/// queue gives an empty PopResult.
struct Transaction {
    std::vector<TransactionOp> ops;
    std::optional<queues::Pop> next;
};

/// Why a transaction was refused (TransactionResult::failure).
enum class TransactionFailure : std::uint8_t {
    none = 0,
    /// A push or ack failed (duplicate transaction id, unknown message, maxSize...): the Queen
    /// v1 answer (200, success false).
    operation = 1,
    /// A KV version did not match, a lock guard or release named a grant that is not current,
    /// or a timer id exists: 409.
    conflict = 2,
    /// A name, value, TTL or interval outside the limits: 400.
    invalid = 3,
};

/// The outcome of one operation.
struct TransactionOpResult {
    TransactionOp::Kind kind = TransactionOp::Kind::push;
    bool success = false;
    SmallString transaction_id;    ///< push, ack
    queues::MessageId message_id;  ///< push (not delayed)
    TimestampMs created_at{0};     ///< push: the new message's createdAt (the entry's time)
    std::string queue;             ///< push
    bool dlq = false;              ///< ack
    std::string error;
    /// kv_set: the new version; kv_check: the checked one; on a version conflict the current
    /// one (0 = absent).
    std::uint64_t version = 0;
    /// kv_delete: a live key was deleted; timer_set: an existing timer was replaced;
    /// timer_cancel: the timer existed.
    bool existed = false;
    std::string timer_id;   ///< timer_set, delayed push
    TimestampMs due_at{0};  ///< timer_set, delayed push: the first firing
};

struct TransactionResult {
    bool success = false;
    TransactionFailure failure = TransactionFailure::none;
    std::uint32_t failed_op = 0;  ///< when !success: the index of the failing operation
    std::string error;            ///< why the transaction was rolled back
    /// One per operation. On failure: the operations before the failure as they would have
    /// been, then the failing one's (success false; a KV version conflict's `version` is the
    /// key's version at that point, 0 = absent). A refusal for bad input has none.
    std::vector<TransactionOpResult> results;
    /// Transaction::next's pop, when it was asked for and the transaction committed.
    std::optional<queues::PopResult> next;
};

/// POST /api/v1/locks/:name/acquire and /renew (release is a transaction operation).
/// acquire: name, owner, ttl_ms (locks::Acquire); renew: name, token, ttl_ms (locks::Renew).
struct LockCommand {
    enum class Op : std::uint8_t { acquire = 0, renew = 1 } op = Op::acquire;
    std::string name;
    std::string owner;
    FencingToken token{0};
    std::int64_t ttl_ms = 30'000;
};
using LockResult = locks::LockResult;

/// What the leader proposes once next_due() (ApplyOutcome::due_at) has passed: fires the
/// timers due at the entry's time, deletes expired KV keys and lock grants (waking the
/// acquirers waiting on those locks), idle ephemeral queues and the state rows of cleared or
/// removed stream queries (streams::StreamsState::collect). At most `limit` of each per entry;
/// what is left makes due_at stay in the past, so the leader proposes another.
struct Due {
    std::uint32_t limit = 10'000;
};
struct DueResult {
    std::uint64_t timers_fired = 0;
    std::uint64_t messages_pushed = 0;  ///< firings whose message was queued (not duplicate)
    std::uint64_t kv_expired = 0;
    std::uint64_t locks_expired = 0;
    std::uint64_t queues_expired = 0;         ///< idle ephemeral queues deleted
    std::uint64_t stream_rows_collected = 0;  ///< rows of dead stream epochs deleted
    bool is_complete = true;
};

/// POST /api/v1/configure with "ephemeral": configures the queue (as ConfigureQueue) and makes
/// it ephemeral: once no message was pushed to it and no pop asked it for idle_ttl_ms, a Due
/// entry deletes it with its messages. Configuring it again (ephemeral or not) replaces the TTL
/// (0: no longer ephemeral). Its answer: EphemeralResult.
struct ConfigureEphemeral {
    queues::ConfigureQueue configure;
    std::int64_t idle_ttl_ms = 60'000;
};
struct EphemeralResult {
    queues::ConfigureResult configure;
    TimestampMs expires_at{0};  ///< when it is deleted unless used before (0: not ephemeral)
};
/// The longest idle TTL of an ephemeral queue (a day).
inline constexpr std::int64_t ephemeral_idle_ttl_ms_max = 24LL * 3600 * 1000;

/// The key a waiting lock acquire parks on (the node's waiters), in place of a queue name: a
/// 0x01 byte then the lock's name. Queue names never start with 0x01 (the API refuses control
/// characters), so the keys never meet.
[[nodiscard]] std::string lock_wait_key(std::string_view name);

}  // namespace queen::engine
