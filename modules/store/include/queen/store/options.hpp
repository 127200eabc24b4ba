// queen/store/options.hpp — store::Options: map size limits, table/reader limits and sync mode.
#pragma once

#include <cstdint>
#include <string_view>

#include "queen/core/result.hpp"
#include "queen/store/errc.hpp"

namespace queen::store {

/// How a write txn commit reaches the disk (docs/architecture.md section 4).
enum class SyncMode : std::uint8_t {
    /// LMDB default: commit = write pages, fdatasync, write the meta page through an O_DSYNC fd.
    /// A txn whose commit() returned ok survives a power loss. Two sync points per commit.
    durable,
    /// MDB_NOMETASYNC: data pages are fdatasync'ed, the meta page is not. A system crash may
    /// undo the last committed txns (never corrupts). Env::sync(true) makes them durable.
    no_meta_sync,
    /// MDB_NOSYNC: nothing is flushed on commit. Only Env::sync(true) makes commits durable; a
    /// system crash before it may lose recent txns (and relies on the filesystem keeping write
    /// order). A process crash (SIGKILL) loses nothing that was committed: pages are in the
    /// page cache. Never combined with MDB_WRITEMAP (we never use it).
    no_sync,
    /// MDB_NOSYNC commits plus power-loss-safe checkpoints: nothing is flushed on commit;
    /// Env::sync(true) is a checkpoint (fdatasync of the data file, then the meta page of the
    /// last committed txn is saved in `checkpoint.meta` next to data.mdb), and a read txn pins
    /// that snapshot so no later txn reuses its pages. Every open that finds a checkpoint puts
    /// its meta page back first, so after any crash (process or machine) the environment is
    /// exactly the last checkpoint: never corrupt, and the txns after it are the caller's to
    /// redo (the engine replays them from its log). Closing the Env takes a final checkpoint.
    checkpoint,
};

/// "durable", "no_meta_sync", "no_sync" or "checkpoint".
[[nodiscard]] std::string_view to_string(SyncMode mode) noexcept;
/// Parses the names to_string() returns. Errors: store::Errc::invalid_argument (names the input).
[[nodiscard]] queen::Result<SyncMode> parse_sync_mode(std::string_view text);

/// Options of one LMDB environment (one per tenant: `tenants/<t>/state/`).
struct Options {
    /// Initial size of the memory map (virtual address space; the file grows as pages are
    /// used). Reopening an environment whose data needs more uses what the data needs. Large by
    /// default: a growth aborts the open write txn and, in the engine, rebuilds the memory
    /// index from LMDB (2 s at 7,400,000 partitions), so it should be rare.
    std::uint64_t map_size_bytes = std::uint64_t{16} << 30;
    /// The map doubles on MDB_MAP_FULL up to this; beyond it writes fail with
    /// Errc::map_size_max_reached.
    std::uint64_t map_size_bytes_max = std::uint64_t{64} << 30;
    /// Named tables that may be open at once (MDB maxdbs).
    std::uint32_t tables_max = 64;
    /// Concurrent read txns across every process using the environment (MDB maxreaders).
    std::uint32_t readers_max = 126;
    SyncMode sync_mode = SyncMode::durable;

    /// Checks limits: map sizes are multiples of 4096, 64 KiB <= map_size_bytes <=
    /// map_size_bytes_max <= 2^48, 1 <= tables_max <= 4096, 1 <= readers_max <= 65536.
    /// Errors: store::Errc::invalid_argument naming the field and its value.
    [[nodiscard]] queen::Result<void> validate() const;
};

}  // namespace queen::store
