// queen/queues/queues.hpp — QueueState: the deterministic queue state machine over LMDB tables
// plus its in-memory pop index. Apply functions take the entry's time; nothing reads a clock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "queen/core/result.hpp"
#include "queen/queues/queries.hpp"
#include "queen/queues/types.hpp"
#include "queen/store/env.hpp"

namespace queen::queues {

/// Limits checked by apply (violations are per-item failures or ErrorResult at the engine).
struct Options {
    std::size_t queue_name_bytes_max = 256;
    std::size_t partition_name_bytes_max = 256;
    std::size_t transaction_id_bytes_max = 256;
    std::size_t group_name_bytes_max = 256;
    std::uint32_t pop_batch_max = 10'000;
    std::uint32_t pop_partitions_max = 1'000;
    /// Validates the limits (all > 0, names fit an LMDB key). Errors: Errc::invalid_argument.
    [[nodiscard]] Result<void> validate() const;
};

/// A queue that may have new deliverable messages after an apply: long polls parked on it
/// should retry their pop.
struct Wakeup {
    std::string queue;  ///< a queue name, or a wait key (matching_wait_key, lock wait keys)
    friend auto operator<=>(const Wakeup&, const Wakeup&) = default;
};

/// The key a long poll of a pop naming a namespace and/or a task (no queue) waits on, in place
/// of a queue name: a NUL byte, the namespace, a NUL byte, the task ("" = any). Once such a pop
/// ran, take_wakeups() adds for every woken queue with namespace N and task T the keys (N, ""),
/// ("", T) and (N, T) (those without an empty name of the queue's). A queue whose name has this
/// form would share the key: its long polls would only be woken more often than needed.
[[nodiscard]] std::string matching_wait_key(std::string_view namespace_name, std::string_view task);

namespace detail {
struct State;  // tables + memory index; src/state.hpp
}  // namespace detail

/// The queues of one tenant. Owns its LMDB tables (names start with "q.") and the memory index.
///
/// Apply contract: every apply_* runs inside the caller's WriteTxn with `now` = the entry's
/// timestamp. A storage error (any store::Errc) leaves the memory index out of step with LMDB:
/// the caller must abort the txn and call rebuild() (Engine does) before any other apply.
/// Transactions: between begin_atomic() and end_atomic(), every write (LMDB and memory) is
/// journaled; rollback_atomic() undoes them, so a failed precondition aborts the whole entry.
/// Thread-safety: apply_*, rebuild and the atomic calls from one thread (the tenant's applier).
/// The read queries in queries.hpp need only a Txn and may run on any thread concurrently.
class QueueState {
public:
    /// Opens (creating) the tables in `env` and rebuilds the memory index from them.
    /// Errors: store errors of open_table / begin_read / reads; Errc::corruption when a stored
    /// record does not decode.
    [[nodiscard]] static Result<QueueState> open(store::Env& env, const Options& options);
    QueueState(QueueState&&) noexcept;
    QueueState& operator=(QueueState&&) noexcept;
    ~QueueState();

    /// Drops the memory index and rebuilds it from what `txn` sees (after an aborted write txn).
    /// Errors: as open().
    [[nodiscard]] Result<void> rebuild(const store::Txn& txn);

    [[nodiscard]] Result<ConfigureResult> apply(store::WriteTxn& txn, const ConfigureQueue& command,
                                                TimestampMs now);
    /// Items fail one by one (maxSize, name limits); duplicates are reported, not stored.
    [[nodiscard]] Result<PushResult> apply(store::WriteTxn& txn, const Push& command,
                                           TimestampMs now);
    /// A pop with an empty queue and a namespace and/or task serves the matching queues by
    /// priority (higher first), then name: each is readied for the group (candidates and the
    /// subscription start of a new group), and the first that delivers anything answers alone
    /// (PopResult::queue names it). Errors: Errc::invalid_argument (bad group length; a
    /// partition without a queue).
    [[nodiscard]] Result<PopResult> apply(store::WriteTxn& txn, const Pop& command,
                                          TimestampMs now);
    [[nodiscard]] Result<AckResult> apply(store::WriteTxn& txn, const Ack& command,
                                          TimestampMs now);
    [[nodiscard]] Result<ExtendLeaseResult> apply(store::WriteTxn& txn, const ExtendLease& command,
                                                  TimestampMs now);
    [[nodiscard]] Result<DeleteQueueResult> apply(store::WriteTxn& txn, const DeleteQueue& command,
                                                  TimestampMs now);
    [[nodiscard]] Result<DeleteGroupResult> apply(store::WriteTxn& txn, const DeleteGroup& command,
                                                  TimestampMs now);
    [[nodiscard]] Result<UpdateSubscriptionResult> apply(store::WriteTxn& txn,
                                                         const UpdateSubscription& command,
                                                         TimestampMs now);
    [[nodiscard]] Result<SeekGroupResult> apply(store::WriteTxn& txn, const SeekGroup& command,
                                                TimestampMs now);
    [[nodiscard]] Result<SeekPartitionResult> apply(store::WriteTxn& txn,
                                                    const SeekPartition& command, TimestampMs now);
    /// Turning push maintenance off applies every buffered push (in order, deduplicated).
    [[nodiscard]] Result<MaintenanceResult> apply(store::WriteTxn& txn,
                                                  const SetMaintenance& command, TimestampMs now);
    [[nodiscard]] Result<SweepResult> apply(store::WriteTxn& txn, const Sweep& command,
                                            TimestampMs now);
    [[nodiscard]] Result<DeleteMessageResult> apply(store::WriteTxn& txn,
                                                    const DeleteMessage& command, TimestampMs now);
    [[nodiscard]] Result<AddTraceResult> apply(store::WriteTxn& txn, const AddTrace& command,
                                               TimestampMs now);

    /// Atomic entries (the engine's transactions, which also hold KV, lock and timer
    /// operations): begin_atomic(), then push_atomic() and ack_atomic() in the entry's order,
    /// then commit_atomic() or, when any operation of the entry failed, rollback_atomic().
    /// In between, every write (LMDB and memory) is journaled, so a rollback leaves no trace.
    /// Only these four calls may run between begin and commit/rollback. Errors (storage): abort
    /// the txn and rebuild() as after any apply error.
    [[nodiscard]] Result<void> begin_atomic(store::WriteTxn& txn);
    /// One pushed message of the entry: queued, or duplicate / failed (the entry must then
    /// roll back: a transaction stores all its messages or none).
    [[nodiscard]] Result<PushItemResult> push_atomic(store::WriteTxn& txn, const PushItem& item,
                                                     TimestampMs now);
    /// One ack of the entry; AtomicAck::failure says why the entry must roll back, if it must.
    /// `release` says when it releases the partition's lease (LeaseRelease).
    [[nodiscard]] Result<AtomicAck> ack_atomic(store::WriteTxn& txn, const AckItem& item,
                                               TimestampMs now,
                                               LeaseRelease release = LeaseRelease::by_count);
    /// Ends the entry, keeping its writes (and writes the partition records it changed).
    [[nodiscard]] Result<void> commit_atomic(store::WriteTxn& txn);
    /// Ends the entry, taking back every write since begin_atomic().
    [[nodiscard]] Result<void> rollback_atomic(store::WriteTxn& txn);

    /// Writes the message blocks the pushes of a batch left pending (a push's messages to a
    /// partition join the block an earlier push of the batch started there); every apply but
    /// Push does that first itself. Also writes the meta record when a pop moved its lease
    /// counter. Call after the last apply of a batch, before the txn commits. Errors: store
    /// errors of the writes.
    [[nodiscard]] Result<void> end_batch(store::WriteTxn& txn);
    /// end_batch(), then writes what the queues keep in memory for the rest of the txn (the
    /// records of the partitions pushes changed, the cursor records pops and acks changed).
    /// Call right before the txn commits.
    /// Errors: store errors of the writes.
    [[nodiscard]] Result<void> before_commit(store::WriteTxn& txn);

    /// The queues that may have new deliverable messages since the last call (pushes, released
    /// or expired leases, seeks), sorted, without duplicates; clears the list.
    /// With the wait keys of namespace/task pops (matching_wait_key) once such a pop ran.
    [[nodiscard]] std::vector<Wakeup> take_wakeups();
    /// The earliest time after which a pop may find something it could not find now (a lease
    /// expiry, delayed visibility, window buffer, retry delay), if any; with `after`, the
    /// earliest such time later than it.
    [[nodiscard]] std::optional<TimestampMs> next_due(
        std::optional<TimestampMs> after = std::nullopt) const;

    /// Queues (sorted names) with a deferred partition due at or before `now`: when the timer
    /// set from next_due() fires, wake the pops parked on these. next_due() may lie in the past
    /// while no pop has looked at a due partition yet; act on it only for parked pops.
    [[nodiscard]] std::vector<std::string> queues_due(TimestampMs now) const;

    /// The table handles, for the read queries of queries.hpp.
    [[nodiscard]] const Tables& tables() const noexcept;

    /// Memory index sizes (for tests and metrics).
    struct IndexStats {
        std::uint64_t queues = 0;
        std::uint64_t partitions = 0;
        std::uint64_t ready_entries = 0;
        std::uint64_t deferred_entries = 0;
        std::uint64_t active_leases = 0;
        std::uint64_t partition_bytes = 0;  ///< bytes of the per-partition array (capacity)
    };
    [[nodiscard]] IndexStats index_stats() const;
    /// A canonical dump of the memory index (tests compare it across a restart).
    [[nodiscard]] std::string debug_dump_index() const;

    /// What open() did to data of an older layout (docs/engine.md, "Layout versions").
    struct LayoutMigration {
        std::uint8_t from = 0;  ///< the layout found (a migration a crash cut short: the new one)
        std::uint8_t to = 0;
        std::uint64_t ids_moved = 0;     ///< transaction ids rewritten
        std::uint64_t blocks_moved = 0;  ///< message blocks rewritten
    };
    /// The migration open() ran, if any (the node logs it).
    [[nodiscard]] std::optional<LayoutMigration> migration() const noexcept;

private:
    explicit QueueState(std::unique_ptr<detail::State> state) noexcept;
    std::unique_ptr<detail::State> state_;
};

}  // namespace queen::queues
