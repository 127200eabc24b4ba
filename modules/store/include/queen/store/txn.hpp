// queen/store/txn.hpp — ReadTxn / WriteTxn (RAII, move-only) and Cursor over LMDB tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"
#include "queen/store/errc.hpp"
#include "queen/store/table.hpp"

namespace queen::store {

namespace detail {
struct TxnState;  // owns the MDB_txn*; defined in src/txn_state.hpp
}  // namespace detail

/// How put() treats an existing key. Combine with `|`.
enum class PutFlags : std::uint32_t {
    none = 0,
    /// MDB_NOOVERWRITE: fail with Errc::key_exists if the key is present (any table).
    no_overwrite = 1u << 0,
    /// MDB_NODUPDATA (dupsort tables): fail with Errc::key_exists if this key/value pair exists.
    no_dup_data = 1u << 1,
    /// MDB_APPEND: the key is greater than every key in the table, so LMDB skips the search and
    /// fills pages completely (a FIFO log keyed by a growing sequence number). A key that is not
    /// greater fails with Errc::append_out_of_order and changes nothing.
    append = 1u << 2,
    /// MDB_APPENDDUP (dupsort tables): like append, for the values of the last key.
    append_dup = 1u << 3,
};
[[nodiscard]] constexpr PutFlags operator|(PutFlags a, PutFlags b) noexcept {
    return static_cast<PutFlags>(static_cast<std::uint32_t>(a) | static_cast<std::uint32_t>(b));
}

/// One key/value pair. Both spans point into the LMDB map (zero copy): they stay valid until the
/// txn ends, and in a WriteTxn only until the next put/reserve/del/clear of that txn.
struct Entry {
    ByteSpan key;
    ByteSpan value;
};

/// A position in one table of one txn (MDB_cursor). Move-only. A Cursor may outlive its txn
/// (then it is dead: destroying it is fine, any other call asserts). Every read method returns
/// the entry the cursor lands on, std::nullopt when there is none (the position is then
/// unspecified: reposition with first(), last(), seek() or find()), or an Error.
/// Errors for every method: Errc::poisoned, Errc::corruption, Errc::map_full (only in a write
/// txn, for put/del), Errc::txn_failed, Errc::io. Thread-safety: like its txn.
class Cursor {
public:
    Cursor(Cursor&& other) noexcept;
    Cursor& operator=(Cursor&& other) noexcept;
    Cursor(const Cursor&) = delete;
    Cursor& operator=(const Cursor&) = delete;
    ~Cursor();

    /// The smallest key (and its first value).
    [[nodiscard]] queen::Result<std::optional<Entry>> first();
    /// The largest key (and its last value).
    [[nodiscard]] queen::Result<std::optional<Entry>> last();
    /// The entry after the current one (the next value of a dupsort key first). Without a
    /// position (fresh cursor) it behaves like first(). After del() it returns the entry that
    /// followed the deleted one.
    [[nodiscard]] queen::Result<std::optional<Entry>> next();
    /// The entry before the current one. Without a position it behaves like last().
    [[nodiscard]] queen::Result<std::optional<Entry>> prev();
    /// The entry under the cursor; std::nullopt without a position.
    [[nodiscard]] queen::Result<std::optional<Entry>> current();
    /// Lower bound: the first entry whose key is >= `key` (MDB_SET_RANGE).
    /// Errors also: Errc::key_too_large.
    [[nodiscard]] queen::Result<std::optional<Entry>> seek(ByteSpan key);
    /// The entry whose key equals `key` (MDB_SET_KEY), or std::nullopt.
    /// Errors also: Errc::key_too_large.
    [[nodiscard]] queen::Result<std::optional<Entry>> find(ByteSpan key);

    /// Dupsort tables: the first key greater than the current one (MDB_NEXT_NODUP).
    [[nodiscard]] queen::Result<std::optional<Entry>> next_key();
    /// Dupsort tables: the next value of the current key only (MDB_NEXT_DUP).
    [[nodiscard]] queen::Result<std::optional<Entry>> next_dup();
    /// Dupsort tables: the first value >= `value` under exactly `key` (MDB_GET_BOTH_RANGE).
    [[nodiscard]] queen::Result<std::optional<Entry>> seek_dup(ByteSpan key, ByteSpan value);
    /// Dupsort tables: how many values the current key has (1 for other tables).
    /// Errors also: Errc::invalid_argument when the cursor has no position.
    [[nodiscard]] queen::Result<std::uint64_t> dup_count();

    /// Writes like WriteTxn::put and leaves the cursor on the written entry (with
    /// PutFlags::append this is the fast path for bulk loads).
    /// Errors also: Errc::read_only (cursor of a ReadTxn), Errc::key_exists,
    /// Errc::append_out_of_order, Errc::key_too_large, Errc::map_full, Errc::txn_full.
    [[nodiscard]] queen::Result<void> put(ByteSpan key, ByteSpan value,
                                          PutFlags flags = PutFlags::none);
    /// Deletes the entry under the cursor (one value of a dupsort key). The next next() returns
    /// the entry that followed it. Errors also: Errc::read_only, Errc::invalid_argument (no
    /// position), Errc::map_full, Errc::txn_full.
    [[nodiscard]] queen::Result<void> del();
    /// Dupsort tables: deletes every value of the current key (MDB_NODUPDATA).
    /// Errors: as del().
    [[nodiscard]] queen::Result<void> del_all_dups();

    /// The table this cursor walks.
    [[nodiscard]] Table table() const noexcept { return table_; }

private:
    friend class Txn;
    Cursor(detail::TxnState* txn, void* cursor, Table table) noexcept;
    void release() noexcept;
    queen::Result<std::optional<Entry>> move(int op, const char* what, ByteSpan key = {},
                                             ByteSpan value = {});
    detail::TxnState* txn_ = nullptr;
    void* cursor_ = nullptr;  // MDB_cursor*
    Table table_;
};

/// What every txn can do: read. Functions that only read take `const Txn&` so they run
/// inside a ReadTxn or a WriteTxn alike. Move-only; ending (commit, abort, destruction) frees
/// LMDB's reader slot or writer lock. A txn must end before its Env is destroyed.
/// Thread-safety: a txn and its cursors are used by one thread at a time; they may move
/// between threads (the Env uses MDB_NOTLS). A thread may hold several ReadTxns and at most
/// one WriteTxn.
class Txn {
public:
    Txn(const Txn&) = delete;
    Txn& operator=(const Txn&) = delete;

    /// The value stored under `key`, std::nullopt when absent (in a dupsort table, the first
    /// value). The span is valid as Entry says.
    /// Errors: Errc::key_too_large, Errc::txn_failed, Errc::poisoned, Errc::corruption,
    /// Errc::io. Precondition: the txn is active and `table` is valid (asserted).
    [[nodiscard]] queen::Result<std::optional<ByteSpan>> get(Table table, ByteSpan key) const;
    /// A cursor on `table`, without a position. End it before or with the txn.
    /// Errors: Errc::txn_failed, Errc::poisoned, Errc::internal.
    [[nodiscard]] queen::Result<Cursor> cursor(Table table) const;
    /// Entries and page counts of `table` as this txn sees it (TableStats::name left empty).
    /// Errors: Errc::txn_failed, Errc::poisoned, Errc::internal.
    [[nodiscard]] queen::Result<TableStats> stats(Table table) const;
    /// LMDB's txn id: the id of the snapshot a ReadTxn sees, or the id a WriteTxn will commit.
    [[nodiscard]] std::uint64_t id() const noexcept;
    /// False after commit() or abort() (and in a moved-from txn).
    [[nodiscard]] bool is_active() const noexcept;
    /// Ends the txn discarding its writes. Idempotent; destruction calls it.
    void abort() noexcept;

protected:
    Txn() noexcept = default;
    explicit Txn(detail::TxnState* state) noexcept : state_(state) {}
    Txn(Txn&& other) noexcept;
    Txn& operator=(Txn&& other) noexcept;
    ~Txn();
    detail::TxnState* state_ = nullptr;

private:
    friend class Env;
};

/// A consistent snapshot (MVCC): it sees every txn committed before it began and nothing
/// after; it never blocks the writer. Hold it briefly: it pins old pages (the file grows) and
/// map growth waits for every ReadTxn to end.
class ReadTxn final : public Txn {
public:
    ReadTxn(ReadTxn&&) noexcept = default;
    ReadTxn& operator=(ReadTxn&&) noexcept = default;
    ~ReadTxn() = default;

private:
    friend class Env;
    explicit ReadTxn(detail::TxnState* state) noexcept : Txn(state) {}
};

/// The single write txn of an Env (others wait in Env::begin_write). Changes become visible
/// to later txns and durable (per SyncMode) at commit(); destruction without commit aborts.
///
/// Map growth protocol: when an operation or commit() hits MDB_MAP_FULL, the txn aborts
/// itself at once, the Env doubles the map (up to Options::map_size_bytes_max, after every
/// ReadTxn of the Env has ended) and the call returns Errc::map_full. Every later call on this
/// txn returns Errc::map_full too, so `QUEEN_TRY` chains unwind; the caller then reruns the
/// whole txn in a new WriteTxn (Env::write() does exactly that). At the maximum the error is
/// Errc::map_size_max_reached instead, and the txn is aborted the same way.
/// Other errors that leave LMDB's txn unusable (txn_full, io, corruption, ...) also abort it;
/// later calls return Errc::txn_failed. key_exists, append_out_of_order, key_too_large and
/// invalid_argument leave the txn usable.
class WriteTxn final : public Txn {
public:
    WriteTxn(WriteTxn&&) noexcept = default;
    WriteTxn& operator=(WriteTxn&&) noexcept = default;
    ~WriteTxn() = default;

    /// Stores `value` under `key` (replacing an existing value unless a flag says otherwise;
    /// in a dupsort table adding the value to the key's set).
    /// Errors: Errc::key_exists, Errc::append_out_of_order, Errc::key_too_large (empty key or
    /// key > Env::key_size_max), Errc::map_full, Errc::map_size_max_reached, Errc::txn_full,
    /// Errc::txn_failed, Errc::poisoned, Errc::disk_full, Errc::io.
    [[nodiscard]] queen::Result<void> put(Table table, ByteSpan key, ByteSpan value,
                                          PutFlags flags = PutFlags::none);
    /// Stores `value` under `key` only when the key is absent (MDB_NOOVERWRITE), in one B-tree
    /// descent: a dedupe check and an insert in one call. Returns std::nullopt when it stored
    /// the value, or the value already stored under `key` (nothing written; the span is valid
    /// as Entry says). Not for dupsort tables (asserted).
    /// Errors: as put(), except that an existing key is not an error.
    [[nodiscard]] queen::Result<std::optional<ByteSpan>> put_if_absent(Table table, ByteSpan key,
                                                                       ByteSpan value);
    /// MDB_RESERVE: makes room for a `size_bytes` value under `key` and returns it, so the
    /// caller encodes the value in place (no copy). The span is valid until the next write of
    /// this txn or its end; its content is undefined until written. Not for dupsort tables
    /// (asserted). Errors: as put().
    [[nodiscard]] queen::Result<MutableByteSpan> reserve(Table table, ByteSpan key,
                                                         std::size_t size_bytes,
                                                         PutFlags flags = PutFlags::none);
    /// Deletes `key` (every value of it in a dupsort table). Returns false when absent.
    /// Errors: Errc::key_too_large, Errc::map_full, Errc::map_size_max_reached,
    /// Errc::txn_full, Errc::txn_failed, Errc::poisoned, Errc::io.
    [[nodiscard]] queen::Result<bool> del(Table table, ByteSpan key);
    /// Dupsort tables: deletes one value of `key`. Returns false when the pair is absent.
    /// Errors: as del(table, key).
    [[nodiscard]] queen::Result<bool> del(Table table, ByteSpan key, ByteSpan value);
    /// Deletes every entry of `table` (mdb_drop(..., 0)); the table stays open.
    /// Errors: as del().
    [[nodiscard]] queen::Result<void> clear(Table table);
    /// Makes the changes visible and (SyncMode::durable) durable, and ends the txn whatever
    /// the outcome. Errors: Errc::map_full / Errc::map_size_max_reached (txn discarded, map
    /// grown: rerun it), Errc::txn_failed (an earlier call failed: nothing was written),
    /// Errc::poisoned; any other failure (Errc::io, Errc::disk_full, ...) means the commit's
    /// outcome on disk is unknown, and it poisons the Env.
    /// Precondition: is_active() (asserted).
    [[nodiscard]] queen::Result<void> commit();

private:
    friend class Env;
    explicit WriteTxn(detail::TxnState* state) noexcept : Txn(state) {}
};

}  // namespace queen::store
