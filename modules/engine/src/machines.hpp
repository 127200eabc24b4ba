// engine/src/machines.hpp — the L2 state machines of one tenant and the engine's commands that
// span them: transactions, lock commands and Due entries (transaction.cpp).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "queen/engine/command.hpp"
#include "queen/kv/kv.hpp"
#include "queen/locks/locks.hpp"
#include "queen/queues/queues.hpp"
#include "queen/store/undo.hpp"
#include "queen/streams/streams.hpp"
#include "queen/timers/timers.hpp"

namespace queen::engine::detail {

/// One tenant's state machines over one LMDB env, and the scratch their atomic entries share.
/// Applier thread only.
struct Machines {
    queues::QueueState queues;
    kv::KvState kv;
    locks::LockState locks;
    timers::TimerState timers;
    streams::StreamsState streams;
    /// The KV, lock and timer writes of the transaction being applied (the queues journal
    /// their own): taken back when an operation fails.
    store::UndoLog undo;
    /// Locks released or expired since the last take_wakeups(): their acquirers retry.
    std::vector<std::string> freed_locks;
    /// A KV, lock or timer write happened since the last due_at(): it may have moved.
    bool is_due_dirty = true;
    /// Ephemeral queues: "e.ephemeral" holds name -> idle TTL and last use, "e.ephemeral_due"
    /// the time each expires (be64) + name. `ephemeral` mirrors the TTLs in memory (rebuilt from
    /// LMDB at open and after an aborted txn), so a push to an ordinary queue costs one lookup,
    /// and nothing while no queue is ephemeral.
    store::Table ephemeral_table;
    store::Table ephemeral_due;
    std::map<std::string, std::int64_t, std::less<>> ephemeral;

    /// The queues' wakeups plus the wait keys of the freed locks, sorted and unique.
    [[nodiscard]] std::vector<queues::Wakeup> take_wakeups();
    /// The earliest time a Due entry has work: a timer's due time, a KV key's or a lock
    /// grant's expiry. Errors: storage errors.
    [[nodiscard]] Result<std::optional<TimestampMs>> due_at(const store::Txn& txn) const;
};

/// Opens (creating) the tables of every state machine of a tenant.
[[nodiscard]] Result<Machines> open_machines(store::Env& env, const kv::Options& kv,
                                             const locks::Options& locks,
                                             const timers::Options& timers,
                                             const queues::Options& queues);
/// Reloads Machines::ephemeral from LMDB (after an aborted txn). Errors: storage errors.
[[nodiscard]] Result<void> load_ephemeral(Machines& m, const store::Txn& txn);

/// Configures a queue and sets (or, with TTL 0, clears) its ephemeral TTL. Errors: as
/// QueueState::apply; Errc::invalid_argument for a TTL out of range.
[[nodiscard]] Result<EphemeralResult> apply_ephemeral(Machines& m, store::WriteTxn& txn,
                                                      const ConfigureEphemeral& command,
                                                      TimestampMs now);
/// Deletes up to `limit` ephemeral queues whose idle TTL has passed at `now`; clears
/// `is_complete` when the limit stopped it. Returns how many. Errors: storage errors.
[[nodiscard]] Result<std::uint64_t> expire_ephemeral(Machines& m, store::WriteTxn& txn,
                                                     TimestampMs now, std::size_t limit,
                                                     bool& is_complete);
/// When the next ephemeral queue expires, if any. Errors: storage errors.
[[nodiscard]] Result<std::optional<TimestampMs>> next_ephemeral_expiry(const Machines& m,
                                                                       const store::Txn& txn);
/// Records that `queue` was used at `now` (a push to it, a pop of it), when it is ephemeral:
/// its idle TTL starts again. Errors: storage errors.
[[nodiscard]] Result<void> touch_ephemeral(Machines& m, store::WriteTxn& txn,
                                           std::string_view queue, TimestampMs now);

/// Applies a streams cycle: state ops, sink pushes and the ack, all or none
/// (queen/engine/stream.hpp). A refused cycle is a result (success false). Errors: storage
/// errors (then abort the txn and rebuild).
[[nodiscard]] Result<StreamCycleResult> apply_stream_cycle(Machines& m, store::WriteTxn& txn,
                                                           const StreamCycle& command,
                                                           LogIndex index, TimestampMs now);
/// Applies a transaction: every operation in order, all or none (queen/engine/transaction.hpp).
/// A refused transaction is a result (success false), not an error. Errors: storage errors
/// (then abort the txn and rebuild).
[[nodiscard]] Result<TransactionResult> apply_transaction(Machines& m, store::WriteTxn& txn,
                                                          const Transaction& command,
                                                          LogIndex index, TimestampMs now);
/// Acquires or renews a lock. Errors: storage errors.
[[nodiscard]] Result<LockResult> apply_lock(Machines& m, store::WriteTxn& txn,
                                            const LockCommand& command, LogIndex index,
                                            TimestampMs now);
/// Fires the due timers (pushing their messages) and expires KV keys and lock grants.
/// Errors: storage errors.
[[nodiscard]] Result<DueResult> apply_due(Machines& m, store::WriteTxn& txn, const Due& command,
                                          TimestampMs now);

}  // namespace queen::engine::detail
