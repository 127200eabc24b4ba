// queen/store/env.hpp — an LMDB environment behind queen types; lmdb.h is included only by
// store/src.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "queen/core/assert.hpp"
#include "queen/core/result.hpp"
#include "queen/store/errc.hpp"
#include "queen/store/options.hpp"
#include "queen/store/table.hpp"
#include "queen/store/txn.hpp"

namespace queen::store {

namespace detail {
struct EnvState;  // owns the MDB_env*; defined in src/env_state.hpp
}  // namespace detail

/// Whole-environment statistics (mdb_env_info + mdb_env_stat + mdb_stat per table).
struct EnvStats {
    std::uint32_t page_size = 0;
    std::uint64_t map_size_bytes = 0;  ///< current map size
    std::uint64_t last_page_used = 0;  ///< highest page number ever written (file high water)
    std::uint64_t last_txn_id = 0;     ///< id of the last committed write txn
    std::uint32_t readers_max = 0;
    std::uint32_t readers_used = 0;     ///< reader slots in use (all processes)
    std::uint64_t file_size_bytes = 0;  ///< size of data.mdb
    std::uint64_t free_pages = 0;       ///< pages on LMDB's free list (reusable)
    SyncMode sync_mode = SyncMode::durable;
    /// SyncMode::checkpoint: the txn the last checkpoint saved (a crash comes back to it).
    std::uint64_t checkpoint_txn_id = 0;
    bool is_read_only = false;
    TableStats main;                 ///< the unnamed table that holds the table names
    std::vector<TableStats> tables;  ///< every named table in the file, sorted by name

    /// Bytes of the file in use: (last_page_used + 1) * page_size.
    [[nodiscard]] std::uint64_t used_bytes() const noexcept {
        return (last_page_used + 1) * page_size;
    }
};

/// One LMDB environment: a directory holding data.mdb and lock.mdb. Move-only; every txn must
/// end before the Env is destroyed (asserted).
///
/// Thread-safety: all methods may be called from any thread concurrently, except that
/// open_table() should be called at start, before concurrent use begins. One WriteTxn exists at
/// a time (begin_write blocks while another is open); read txns run concurrently with it.
///
/// Poisoning: MDB_PANIC, a failed commit (other than map full) or a failed sync() poison the
/// Env: every later call, on the Env or its txns, returns Errc::poisoned with the first failure
/// in its context. The only way out is to close the Env and reopen it (fail-stop, like LMDB's
/// MDB_FATAL_ERROR; a failed fsync is never retried).
class Env {
public:
    /// LMDB's maximum key size in bytes (also the maximum size of a dupsort value).
    static constexpr std::size_t key_size_max = 511;

    /// Opens (creating `dir` and the files if needed) a read-write environment.
    /// Errors: Errc::invalid_argument (Options::validate failed), Errc::not_an_environment
    /// (data.mdb is not an LMDB file of this version), Errc::locked, Errc::permission_denied,
    /// Errc::disk_full, Errc::io, Errc::corruption.
    [[nodiscard]] static queen::Result<Env> open(const std::filesystem::path& dir,
                                                 const Options& options);
    /// Opens an existing environment with MDB_RDONLY (for `queen inspect`): nothing is created
    /// or written except reader slots in lock.mdb, so it works next to a running broker. Writes
    /// and begin_write() fail with Errc::read_only. Tables are looked up, never created.
    /// lock.mdb is created if missing (LMDB needs it for reader slots).
    /// Errors: Errc::not_found (no directory `dir`), Errc::not_an_environment (no data.mdb in
    /// it, or not an LMDB file of this version), Errc::permission_denied, Errc::io,
    /// Errc::corruption.
    [[nodiscard]] static queen::Result<Env> open_read_only(const std::filesystem::path& dir,
                                                           std::uint32_t tables_max = 4096);

    Env(Env&& other) noexcept;
    Env& operator=(Env&& other) noexcept;
    Env(const Env&) = delete;
    Env& operator=(const Env&) = delete;
    /// Closes the environment. Precondition: no txn of it is alive (asserted).
    ~Env();

    /// Opens the named table, creating it (in its own write txn) if it does not exist. Call it
    /// once per table at start and keep the Table. Opening an open table again returns the
    /// same handle. Name: 1..key_size_max bytes. Must not be called by a thread that holds a
    /// WriteTxn of this Env (it needs the writer role itself).
    /// A map full while creating the table grows the map and retries inside (never map_full).
    /// Errors: Errc::invalid_argument (bad name, or `flags` differ from the table's), Errc::
    /// not_found (read-only Env and no such table), Errc::tables_full,
    /// Errc::map_size_max_reached, Errc::poisoned, Errc::io (a failed commit also poisons).
    [[nodiscard]] queen::Result<Table> open_table(std::string_view name,
                                                  TableFlags flags = TableFlags::none);
    /// Names of every named table in the file, sorted.
    /// Errors: Errc::poisoned, Errc::readers_full, Errc::corruption, Errc::io.
    [[nodiscard]] queen::Result<std::vector<std::string>> table_names() const;

    /// Begins a snapshot read. Errors: Errc::readers_full, Errc::poisoned, Errc::io.
    [[nodiscard]] queen::Result<ReadTxn> begin_read() const;
    /// Begins the write txn, waiting while another one is open (and while the map grows).
    /// Errors: Errc::read_only, Errc::poisoned, Errc::io.
    [[nodiscard]] queen::Result<WriteTxn> begin_write();

    /// Runs `fn(WriteTxn&)` (returning queen::Result<T>) in a new write txn and commits it when
    /// fn succeeded. When fn or the commit fails with Errc::map_full (the map has grown), the
    /// whole txn is rerun, so `fn` may run more than once: it must not have effects outside
    /// the txn that a rerun would repeat. Returns fn's value, fn's error (the txn is aborted)
    /// or the commit's error. Errors: those of begin_write(), fn and WriteTxn::commit(), never
    /// Errc::map_full. Precondition: the calling thread holds no ReadTxn of this Env (growth
    /// waits for every ReadTxn to end).
    template <class Fn>
    [[nodiscard]] std::invoke_result_t<Fn&, WriteTxn&> write(Fn&& fn);

    /// Flushes committed txns to disk (mdb_env_sync). With `force`, also under no_meta_sync and
    /// no_sync: on success every txn committed before the call is durable. Without it, only
    /// what the sync mode owes is flushed (nothing in no_sync and checkpoint modes). Read-only:
    /// no-op. SyncMode::checkpoint: `force` takes a checkpoint (see SyncMode): on success every
    /// txn committed before the call survives any crash; it blocks a writer only while the
    /// snapshot is pinned, never during the flush. Precondition there: the calling thread holds
    /// no WriteTxn of this Env.
    /// Errors: Errc::poisoned; a failed flush (Errc::io, Errc::disk_full) poisons the Env.
    [[nodiscard]] queen::Result<void> sync(bool force = true);

    /// SyncMode::checkpoint and no_sync: starts the kernel's writeback of data.mdb's dirty
    /// pages (sync_file_range(SYNC_FILE_RANGE_WRITE)) without waiting for it, so the next
    /// checkpoint's fdatasync has little left and the disk sees a steady stream instead of one
    /// burst per checkpoint (bursts delay the log's fdatasync behind them). Promises nothing
    /// about durability. Other modes and read-only: no-op.
    /// Errors: Errc::poisoned, Errc::io (a failure that the next sync also reports; does not
    /// poison).
    [[nodiscard]] queen::Result<void> start_writeback();

    /// Sizes of the environment and of every named table, as one read txn sees them.
    /// Errors: Errc::readers_full, Errc::tables_full (too many tables for the Env's limit),
    /// Errc::poisoned, Errc::io.
    [[nodiscard]] queen::Result<EnvStats> stats() const;

    /// Writes a consistent copy of the environment into `target_dir` (created if missing; must
    /// not already hold data.mdb) from a read txn, so writers keep going (mdb_env_copy2).
    /// With `compact`, free pages are omitted and pages renumbered. The copy opens as a normal
    /// environment. Errors: Errc::invalid_argument (target already has data.mdb), Errc::disk_full,
    /// Errc::permission_denied, Errc::poisoned, Errc::io.
    [[nodiscard]] queen::Result<void> copy_to(const std::filesystem::path& target_dir,
                                              bool compact = true) const;

    [[nodiscard]] const std::filesystem::path& path() const noexcept;
    [[nodiscard]] const Options& options() const noexcept;
    [[nodiscard]] bool is_read_only() const noexcept;
    /// The current map size (grows on map full).
    [[nodiscard]] std::uint64_t map_size_bytes() const noexcept;
    [[nodiscard]] bool is_poisoned() const noexcept;

private:
    explicit Env(std::unique_ptr<detail::EnvState> state) noexcept;
    std::unique_ptr<detail::EnvState> state_;
};

template <class Fn>
std::invoke_result_t<Fn&, WriteTxn&> Env::write(Fn&& fn) {
    using R = std::invoke_result_t<Fn&, WriteTxn&>;
    // Each map_full doubles the map, and doubling stops at map_size_bytes_max (<= 2^48) with a
    // different error, so the loop is bounded; the bound below only guards that invariant.
    constexpr int attempts_max = 64;
    for (int attempt = 0; attempt < attempts_max; ++attempt) {
        auto txn = begin_write();
        if (!txn) {
            return R(std::move(txn).error());
        }
        R result = fn(*txn);
        if (!result) {
            if (result.error().is(Errc::map_full)) {
                continue;
            }
            return result;
        }
        auto committed = txn->commit();
        if (!committed) {
            if (committed.error().is(Errc::map_full)) {
                continue;
            }
            return R(std::move(committed).error());
        }
        return result;
    }
    QUEEN_ASSERT(false, "Env::write: map_full ", attempts_max, " times without reaching the max");
    QUEEN_UNREACHABLE();
}

}  // namespace queen::store
