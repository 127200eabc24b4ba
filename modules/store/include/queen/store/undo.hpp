// queen/store/undo.hpp — UndoLog: the old value of every key an atomic entry wrote, so the entry
// can be taken back inside the same write txn (all or nothing without a nested LMDB txn).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"
#include "queen/store/table.hpp"
#include "queen/store/txn.hpp"

namespace queen::store {

/// Records, before each write of an atomic entry, what the key held (or that it was absent);
/// rollback() puts every recorded key back, newest first. Several state machines of one tenant
/// may share one UndoLog or keep their own: they write disjoint tables.
///
/// Why not a nested LMDB txn: mdb_txn_begin with a parent allocates a dirty-page list (2 MiB)
/// per child and merges it on commit; an entry of a few writes pays far more for that than for
/// copying the old values of its keys.
///
/// Only for tables without dupsort (a dupsort key holds a set, which put/del of one value
/// would not restore). clear() keeps the buffers: once earlier entries have grown them, an
/// entry's undo allocates nothing. Not thread-safe (the applier's).
class UndoLog {
public:
    /// Records that `key` of `table` held `old` (std::nullopt: absent) before this entry wrote
    /// it. For a caller that has just read the old value itself.
    void record(Table table, ByteSpan key, std::optional<ByteSpan> old);

    /// Reads what `key` holds, records it and stores `value`. Errors: those of Txn::get and
    /// WriteTxn::put.
    [[nodiscard]] queen::Result<void> put(WriteTxn& txn, Table table, ByteSpan key, ByteSpan value);
    /// Reads what `key` holds, records it (when present) and deletes it; false when absent.
    /// Errors: those of Txn::get and WriteTxn::del.
    [[nodiscard]] queen::Result<bool> del(WriteTxn& txn, Table table, ByteSpan key);

    /// Puts back every recorded key, newest first, then forgets them. After an error the txn
    /// must be aborted (the keys are partly restored). Errors: those of put and del.
    [[nodiscard]] queen::Result<void> rollback(WriteTxn& txn);

    /// Forgets what was recorded (the entry committed), keeping the buffers.
    void clear() noexcept { size_ = 0; }
    /// Number of writes recorded since the last clear() or rollback().
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }

private:
    struct Record {
        Table table;
        Bytes key;
        bool has_old_value = false;  ///< false: the key was absent (undo = delete)
        Bytes old_value;
    };
    /// The entry's records are records_[0, size_); later elements are spares whose buffers the
    /// next records reuse.
    std::vector<Record> records_;
    std::size_t size_ = 0;
};

}  // namespace queen::store
