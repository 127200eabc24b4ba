// modules/store/src/state.hpp — private state behind Env and Txn: the MDB_env, the txn gate for
// map growth, poisoning, and the per-txn state shared with cursors.
#pragma once

#include <lmdb.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/error.hpp"
#include "queen/core/result.hpp"
#include "queen/store/errc.hpp"
#include "queen/store/options.hpp"
#include "queen/store/table.hpp"

namespace queen::store::detail {

/// Maps an LMDB (or errno) return code to an Error whose context is "<operation>: <LMDB's
/// message>". `is_append` turns MDB_KEYEXIST into Errc::append_out_of_order.
queen::Error lmdb_error(int rc, std::string_view operation, bool is_append = false);

/// True for return codes after which LMDB's write txn can no longer be used (its
/// MDB_TXN_ERROR state): everything except "no such key", "key exists" and argument checks.
bool is_txn_fatal(int rc) noexcept;

struct EnvState {
    MDB_env* env = nullptr;
    std::filesystem::path path;
    Options options;
    bool is_read_only = false;
    std::atomic<std::uint64_t> map_size_bytes{0};

    // Poisoning: set once, never cleared.
    std::atomic<bool> is_poisoned{false};
    mutable std::mutex poison_mutex;
    std::string poison_reason;

    // The txn gate. mdb_env_set_mapsize() remaps the file, so no txn of this process may be
    // alive while it runs (LMDB does not check this). Every txn holds a slot from begin to
    // end; a resize waits for the slots to drain and blocks new ones meanwhile. `has_writer`
    // serializes write txns here rather than on LMDB's writer mutex, so a writer waiting for
    // its turn holds no slot and cannot block a resize (which would deadlock).
    std::mutex gate_mutex;
    std::condition_variable gate_changed;
    std::uint32_t live_txns = 0;
    bool has_writer = false;
    bool is_resizing = false;

    // mdb_dbi_open() must not run in two txns at once: `dbi_open_mutex` serializes the callers
    // (held across their txn). `tables_mutex` guards the two maps below and is only held
    // briefly, never while waiting on the gate, so error paths of a writer may take it.
    std::mutex dbi_open_mutex;
    mutable std::mutex tables_mutex;
    std::map<std::string, Table, std::less<>> tables_by_name;
    std::vector<std::string> names_by_id;

    // Checkpoints (SyncMode::checkpoint). `pin` is a read txn on the snapshot whose meta page
    // `checkpoint.meta` holds, so no later txn reuses that snapshot's pages (LMDB reuses a
    // freed page only when no reader is older than the txn that freed it). It is not counted
    // in live_txns: it is never read through, so a map resize may run while it is open (LMDB
    // 0.9 refuses a resize only under a write txn; an idle read txn holds no pointer into the
    // map). Both are guarded by checkpoint_mutex, which is never taken under gate_mutex.
    std::mutex checkpoint_mutex;
    MDB_txn* pin = nullptr;
    std::uint64_t pinned_txn_id = 0;
    std::uint32_t page_size = 0;

    EnvState() = default;
    EnvState(const EnvState&) = delete;
    EnvState& operator=(const EnvState&) = delete;
    ~EnvState();

    /// Errc::poisoned with the first failure, or ok.
    queen::Result<void> check_poisoned() const;
    /// Records `cause` as the reason (first one wins) and returns the poisoned error.
    queen::Error poison(const queen::Error& cause);

    /// Takes a txn slot (and the writer role). Blocks while a resize runs or, for a writer,
    /// while another write txn is open.
    void enter(bool is_write);
    /// Gives the slot back (and the writer role when `release_writer`).
    void leave(bool is_write, bool release_writer = true);
    /// After a write txn hit MDB_MAP_FULL and was aborted: the caller still holds the writer
    /// role but no slot. Doubles the map (up to the max) once every txn has ended, then
    /// releases the writer role. Returns Errc::map_full (grown: rerun) or
    /// Errc::map_size_max_reached, with `operation` in the context.
    queen::Error grow_after_map_full(std::string_view operation);
    /// Adopts a map size another process set (MDB_MAP_RESIZED): the caller holds no slot.
    queen::Result<void> adopt_resized_map();

    /// SyncMode::checkpoint: pins the last committed snapshot (briefly taking the writer role),
    /// copies its meta page, fdatasyncs data.mdb, saves the page in checkpoint.meta (written to
    /// a temporary file, fdatasync'ed, renamed, directory fsync'ed), then drops the previous
    /// pin. No-op when nothing was committed since the last one. Caller holds no txn slot.
    /// Errors: Errc::poisoned; a failed flush or write (Errc::io, Errc::disk_full) poisons.
    queen::Result<void> checkpoint();

    /// "'name'" of a table, for error contexts.
    std::string table_label(std::uint32_t dbi) const;
    void refresh_map_size() noexcept;

private:
    /// Runs mdb_env_set_mapsize(env, size) once no txn is alive. Caller holds no slot.
    int resize(std::uint64_t size_bytes);
};

/// SyncMode::checkpoint, before mdb_env_open: when `dir` holds checkpoint.meta, writes its meta
/// page back into both meta slots of data.mdb (the other slot as the txn before it) and
/// fdatasyncs, so LMDB opens exactly the checkpointed snapshot. Nothing to do when the file is
/// already in that state or there is no checkpoint; a checkpoint without data.mdb is removed.
/// Errors: Errc::corruption (checkpoint.meta damaged, or data.mdb shorter than the snapshot),
/// Errc::io, Errc::permission_denied.
queen::Result<void> restore_checkpoint(const std::filesystem::path& dir);
/// Removes checkpoint.meta (after restore_checkpoint, when opening in another mode) and
/// fsyncs the directory. Errors: Errc::io, Errc::permission_denied.
queen::Result<void> remove_checkpoint(const std::filesystem::path& dir);

struct TxnState {
    EnvState* env = nullptr;
    MDB_txn* txn = nullptr;  ///< null once LMDB's txn has ended (then cursors are freed)
    bool is_write = false;
    bool is_finished = false;  ///< commit() or abort() was called
    bool has_owner = true;     ///< the Txn object still refers to this state
    std::uint32_t cursor_refs = 0;
    std::uint64_t id = 0;
    std::optional<queen::Error> failure;  ///< why LMDB's txn was aborted early

    /// Ok, the txn's failure, or Errc::poisoned. Asserts the txn was not ended by the user.
    queen::Result<void> check_usable() const;
    /// Ends LMDB's txn (abort) and gives the gate slot back. Idempotent.
    void end_lmdb_txn() noexcept;
    /// Handles a failed LMDB call of this txn: maps `rc`, poisons on MDB_PANIC, and for a write
    /// txn left unusable aborts it (growing the map on MDB_MAP_FULL) and remembers the error.
    queen::Error fail(int rc, std::string_view operation, bool is_append = false);
    /// Frees this state once neither the Txn nor a Cursor refers to it.
    static void release_ref(TxnState* state, bool is_owner) noexcept;
};

inline MDB_val to_val(ByteSpan bytes) noexcept {
    // LMDB takes non-const pointers but never writes through keys or values passed in.
    return MDB_val{bytes.size(), const_cast<Byte*>(bytes.data())};
}
inline ByteSpan to_span(const MDB_val& value) noexcept {
    return {static_cast<const Byte*>(value.mv_data), value.mv_size};
}

/// Sets `out` to what a table with value checksums stores for `value`: the value, then its
/// CRC-32C, little-endian (Table::checksum_bytes). Built aside: `value` may point into the map.
void stored_with_checksum(ByteSpan value, std::vector<Byte>& out);

}  // namespace queen::store::detail
