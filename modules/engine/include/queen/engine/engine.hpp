// queen/engine/engine.hpp — one tenant's state machine: decodes committed log entries and
// applies them in batches (one LMDB write txn per batch) with client dedupe; read queries.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"
#include "queen/engine/command.hpp"
#include "queen/kv/kv.hpp"
#include "queen/locks/locks.hpp"
#include "queen/queues/queries.hpp"
#include "queen/queues/queues.hpp"
#include "queen/store/env.hpp"
#include "queen/timers/timers.hpp"

namespace queen::engine {

/// Options of one tenant's state.
struct Options {
    store::Options store;
    queues::Options queues;
    kv::Options kv;
    locks::Options locks;
    /// Timer ids leave room for the '#' and sequence the engine appends to make a repeating
    /// timer's transaction ids (transaction ids are at most 256 bytes).
    timers::Options timers{.id_bytes_max = 200};
    /// Most entries applied in one LMDB write txn (a larger batch is split).
    std::size_t entries_per_txn_max = 4096;
    /// A client's dedupe record is dropped by the first Sweep entry after it was unused this
    /// long (a retry after that is applied again). 0 = keep forever.
    std::int64_t client_session_ttl_ms = 24 * 3600 * 1000;
};

/// A committed log entry handed to apply(). `command` is borrowed for the call. An empty
/// `command` is a no-op (the entry a new raft leader appends, or a membership change): it moves
/// applied_index and nothing else, and its result is an ErrorResult nobody waits for.
struct Entry {
    LogIndex index;
    TimestampMs timestamp{0};  ///< the leader's stamp: "now" for this entry
    ByteSpan command;          ///< bytes made by encode_command
};

/// What one apply() call produced.
struct ApplyOutcome {
    std::vector<Bytes> results;           ///< per entry, encode_result bytes, in entry order
    std::vector<queues::Wakeup> wakeups;  ///< sorted, unique: retry parked pops of these queues
    std::optional<TimestampMs> next_due;  ///< propose a wake/sweep entry at this time
    /// When is_due_changed: the earliest time a Due entry has work (a timer due, a KV key or a
    /// lock grant expiring), std::nullopt for none; it replaces what earlier outcomes said.
    /// When !is_due_changed it is what it was (the batch wrote no KV, lock or timer).
    bool is_due_changed = false;
    std::optional<TimestampMs> due_at;
};

/// Entries applied in the open write txn (Engine::apply_uncommitted) and their command bytes.
struct UncommittedStats {
    std::size_t entries = 0;
    std::size_t bytes = 0;
};

/// The tenant state machine over one LMDB environment (docs/architecture.md sections 2-5).
///
/// Write path: the node appends entries to its log, and once they are committed (fdatasync
/// locally, later a Raft majority) calls apply() with them in index order. apply() runs every
/// entry in one write txn, stores applied_index and the client dedupe records in the same txn,
/// and commits. After a crash, open() reports applied_index and the node replays its log from
/// applied_index + 1; replay reproduces the same state because apply depends only on the
/// entries (their timestamps are "now") and on LMDB.
///
/// Thread-safety: apply(), apply_uncommitted(), commit() and next_due() from one thread (the
/// tenant's applier); read(), system_record(), sync() and applied_index() from any thread.
class Engine {
public:
    /// Opens (creating) the LMDB environment in `dir` and rebuilds the memory index.
    /// Errors: store errors of Env::open / open_table; Errc::corruption for undecodable records.
    [[nodiscard]] static Result<Engine> open(const std::filesystem::path& dir,
                                             const Options& options);
    Engine(Engine&&) noexcept;
    Engine& operator=(Engine&&) noexcept;
    ~Engine();

    /// The index of the last applied entry whose LMDB txn committed (0 for a new state).
    [[nodiscard]] LogIndex applied_index() const noexcept;

    /// Applies `entries`, which must start at applied_index() + 1 and be consecutive (asserted).
    /// An entry that does not decode, or a stale client request, yields an ErrorResult and
    /// changes nothing but applied_index. Logical failures (a transaction's precondition,
    /// unknown message) are results, not errors.
    /// Errors: storage errors (store::Errc::*) after which nothing of the batch is applied and
    /// the memory index was rebuilt from LMDB; Errc::poisoned after an unrecoverable one
    /// (reopen the Engine). Map growth is handled inside (the batch is rerun).
    [[nodiscard]] Result<ApplyOutcome> apply(std::span<const Entry> entries);

    /// Receives the results of entries [first, first + results.size()) of an apply() call once
    /// they ran and before their LMDB write txn commits (it may move them out); today one
    /// entry per call, right after the entry ran, so an answer does not wait for the rest of
    /// its batch. The entries are committed in the log, so their answers may leave before LMDB
    /// has them: after a crash, or a failed commit or a later entry's failure, replay gives the
    /// same results. Called once per entry, in order, even when a map growth reruns the txn.
    using BeforeCommit = std::function<void(std::size_t first, std::span<CommandResult> results)>;
    /// As apply(), but the results go to `before_commit`, typed (ApplyOutcome::results stays
    /// empty), so the answers need not wait for the commit's fdatasync nor pay an encode and a
    /// decode. Errors: as apply(); results already handed over stay valid (see BeforeCommit).
    [[nodiscard]] Result<ApplyOutcome> apply(std::span<const Entry> entries,
                                             const BeforeCommit& before_commit);

    /// As apply(entries, before_commit), but the LMDB write txn stays open after the call:
    /// the next apply_uncommitted() or apply() continues it and commit() ends it, so entries
    /// applied close together share one commit (each commit writes every page it dirtied,
    /// and the root and branch pages of every table it touched, once). applied_index() and
    /// sync() see the entries only after commit(); the answers in `before_commit` may leave
    /// at once (see BeforeCommit). A txn never holds more than entries_per_txn_max entries
    /// (this commits on reaching it). The engine keeps a copy of each uncommitted command so a
    /// map growth can rerun them. Errors: as apply(); a failure abandons every uncommitted
    /// entry (memory is rebuilt from the last commit; the node replays them from its log).
    [[nodiscard]] Result<ApplyOutcome> apply_uncommitted(std::span<const Entry> entries,
                                                         const BeforeCommit& before_commit);
    /// Commits what apply_uncommitted() left open (nothing to do when nothing is).
    /// Errors: as apply(); after one, the uncommitted entries are abandoned (see above).
    [[nodiscard]] Result<void> commit();
    /// What apply_uncommitted() applied since the last commit.
    [[nodiscard]] UncommittedStats uncommitted() const noexcept;

    /// Decodes and applies commands directly (tests and tools): assigns indexes after
    /// applied_index() and uses `now` for each. Errors: as apply().
    [[nodiscard]] Result<std::vector<CommandResult>> apply_commands(
        std::span<const Command> commands, TimestampMs now);

    /// Flushes LMDB to disk (SyncMode::checkpoint: takes a checkpoint) and returns the applied
    /// index that is durable now. The node calls it before compacting its log: never
    /// drop log entries above the returned index. Any thread, also while an apply runs (the
    /// returned index is the one committed before the flush began).
    /// Errors: those of Env::sync (a failed flush poisons the Env: reopen).
    [[nodiscard]] Result<LogIndex> sync();
    /// Starts the writeback of LMDB's dirty pages between checkpoints (store::Env::
    /// start_writeback). Any thread. Errors: those of Env::start_writeback.
    [[nodiscard]] Result<void> start_writeback();

    /// The earliest time a pop may find something it cannot find now (see QueueState).
    [[nodiscard]] std::optional<TimestampMs> next_due(
        std::optional<TimestampMs> after = std::nullopt) const;

    /// Queues with a deferred partition due at or before `now` (see QueueState::queues_due):
    /// wake their parked pops when the next_due() timer fires. Applier thread.
    [[nodiscard]] std::vector<std::string> queues_due(TimestampMs now) const;

    /// Runs `fn(const queues::Tables&, const store::Txn&)` in a fresh read txn and returns its
    /// result (the queries of queen/queues/queries.hpp). Errors: those of begin_read and fn.
    template <class Fn>
    auto read(Fn&& fn) const
        -> decltype(fn(std::declval<const queues::Tables&>(), std::declval<const store::Txn&>())) {
        auto txn = env().begin_read();
        if (!txn) {
            return std::move(txn).error();
        }
        return fn(queue_tables(), *txn);
    }

    /// The system record stored under `key` by PutSystem entries, std::nullopt when none is.
    /// Reads in a fresh read txn, so it sees committed state only: not what apply_uncommitted()
    /// left in the open txn until commit(), nor what a failed batch abandoned. Any thread.
    /// Errors: Errc::invalid_argument for a key outside system_key_bytes_min..
    /// system_key_bytes_max bytes (none can be stored); those of begin_read and Txn::get.
    [[nodiscard]] Result<std::optional<Bytes>> system_record(std::string_view key) const;

    /// The earliest time a Due entry has work, as committed (the node asks once at start;
    /// then ApplyOutcome::due_at says). Any thread. Errors: storage errors.
    [[nodiscard]] Result<std::optional<TimestampMs>> due_at() const;

    [[nodiscard]] const queues::Tables& queue_tables() const noexcept;
    [[nodiscard]] const kv::Tables& kv_tables() const noexcept;
    [[nodiscard]] const locks::Tables& lock_tables() const noexcept;
    [[nodiscard]] const timers::Tables& timer_tables() const noexcept;
    [[nodiscard]] const streams::Tables& stream_tables() const noexcept;
    [[nodiscard]] const store::Env& env() const noexcept;
    [[nodiscard]] store::Env& env() noexcept;
    /// The queue state machine (tests: index statistics and dumps). Applier thread only.
    [[nodiscard]] const queues::QueueState& queue_state() const noexcept;
    [[nodiscard]] bool is_poisoned() const noexcept;

private:
    struct Impl;
    explicit Engine(std::unique_ptr<Impl> impl) noexcept;
    [[nodiscard]] Result<ApplyOutcome> apply_entries(std::span<const Entry> entries,
                                                     const BeforeCommit* before_commit,
                                                     bool keep_open);
    std::unique_ptr<Impl> impl_;
};

}  // namespace queen::engine
