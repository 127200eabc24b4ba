// modules/store/src/txn.cpp — ReadTxn / WriteTxn / Cursor over LMDB, with failure handling.
#include "queen/store/txn.hpp"

#include <lmdb.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/crc32c.hpp"

#include "queen/store/env.hpp"
#include "state.hpp"

namespace queen::store {
namespace detail {

void stored_with_checksum(ByteSpan value, std::vector<Byte>& out) {
    out.resize(value.size() + Table::checksum_bytes);
    if (!value.empty()) {
        std::memcpy(out.data(), value.data(), value.size());
    }
    const std::uint32_t crc = crc32c(value);
    for (std::size_t i = 0; i < Table::checksum_bytes; ++i) {
        out[value.size() + i] = static_cast<Byte>(crc >> (8 * i));
    }
}

queen::Result<void> TxnState::check_usable() const {
    QUEEN_ASSERT(!is_finished, "store txn used after commit() or abort()");
    if (failure.has_value()) [[unlikely]] {
        if (failure->is(Errc::map_full) || failure->is(Errc::map_size_max_reached) ||
            failure->is(Errc::poisoned)) {
            return *failure;
        }
        return queen::Error{Errc::txn_failed, "txn aborted after: " + failure->message()};
    }
    return env->check_poisoned();
}

void TxnState::end_lmdb_txn() noexcept {
    if (txn != nullptr) {
        mdb_txn_abort(txn);
        txn = nullptr;
        env->leave(is_write);
    }
}

queen::Error TxnState::fail(int rc, std::string_view operation, bool is_append) {
    auto error = lmdb_error(rc, operation, is_append);
    if (rc == MDB_PANIC) {
        error = env->poison(error);
        end_lmdb_txn();
        failure = error;
        return error;
    }
    if (!is_write || !is_txn_fatal(rc)) {
        return error;
    }
    // LMDB's txn is in its error state: abort it now so the writer role is free again.
    mdb_txn_abort(txn);
    txn = nullptr;
    if (rc == MDB_MAP_FULL) {
        env->leave(true, false);
        error = env->grow_after_map_full(operation);
    } else {
        env->leave(true);
    }
    failure = error;
    return error;
}

void TxnState::release_ref(TxnState* state, bool is_owner) noexcept {
    if (is_owner) {
        state->has_owner = false;
    } else {
        QUEEN_ASSERT(state->cursor_refs > 0, "cursor reference count underflow");
        --state->cursor_refs;
    }
    if (!state->has_owner && state->cursor_refs == 0) {
        QUEEN_ASSERT(state->txn == nullptr, "txn state freed while LMDB's txn is alive");
        delete state;
    }
}

}  // namespace detail

namespace {

unsigned to_mdb_put_flags(PutFlags flags) {
    const auto bits = static_cast<std::uint32_t>(flags);
    unsigned out = 0;
    if ((bits & static_cast<std::uint32_t>(PutFlags::no_overwrite)) != 0) {
        out |= MDB_NOOVERWRITE;
    }
    if ((bits & static_cast<std::uint32_t>(PutFlags::no_dup_data)) != 0) {
        out |= MDB_NODUPDATA;
    }
    if ((bits & static_cast<std::uint32_t>(PutFlags::append)) != 0) {
        out |= MDB_APPEND;
    }
    if ((bits & static_cast<std::uint32_t>(PutFlags::append_dup)) != 0) {
        out |= MDB_APPENDDUP;
    }
    return out;
}

bool is_append(PutFlags flags) {
    const auto bits = static_cast<std::uint32_t>(flags);
    return (bits & (static_cast<std::uint32_t>(PutFlags::append) |
                    static_cast<std::uint32_t>(PutFlags::append_dup))) != 0;
}

/// The value a table with value checksums stores for `value`: the value, then its CRC-32C
/// (little-endian). Built aside, not with MDB_RESERVE: `value` may point into the map, which the
/// put can move. The view stays valid until the next call on this thread.
MDB_val with_checksum(ByteSpan value) {
    thread_local std::vector<Byte> scratch;
    detail::stored_with_checksum(value, scratch);
    return MDB_val{scratch.size(), scratch.data()};
}

/// The value stored as `stored` in a table with value checksums, once its checksum matches.
/// Errors: queen::Errc::corruption naming the table and the key.
queen::Result<ByteSpan> checked_value(const detail::TxnState& state, Table table, ByteSpan key,
                                      ByteSpan stored) {
    if (stored.size() >= Table::checksum_bytes) [[likely]] {
        const ByteSpan value = stored.first(stored.size() - Table::checksum_bytes);
        std::uint32_t expected = 0;
        for (std::size_t i = 0; i < Table::checksum_bytes; ++i) {
            expected |= static_cast<std::uint32_t>(stored[value.size() + i]) << (8 * i);
        }
        if (crc32c(value) == expected) [[likely]] {
            return value;
        }
    }
    constexpr std::size_t key_shown_max = 32;
    const ByteSpan shown = key.first(std::min(key.size(), key_shown_max));
    return queen::Error{queen::Errc::corruption, state.env->table_label(table.id()) +
                                                     ": the value of key " + to_hex(shown) +
                                                     (key.size() > key_shown_max ? "..." : "") +
                                                     " (" + std::to_string(stored.size()) +
                                                     " bytes) fails its checksum: damaged on disk"};
}

/// LMDB checks key sizes on writes but not on lookups; check both the same way.
queen::Result<void> check_key(ByteSpan key, const char* operation) {
    if (key.empty() || key.size() > Env::key_size_max) [[unlikely]] {
        return queen::Error{Errc::key_too_large, std::string(operation) + ": key of " +
                                                     std::to_string(key.size()) + " bytes (1.." +
                                                     std::to_string(Env::key_size_max) + ")"};
    }
    return {};
}

}  // namespace

// ---- Txn ----

Txn::Txn(Txn&& other) noexcept : state_(other.state_) {
    other.state_ = nullptr;
}

Txn& Txn::operator=(Txn&& other) noexcept {
    if (this != &other) {
        abort();
        if (state_ != nullptr) {
            detail::TxnState::release_ref(state_, true);
        }
        state_ = other.state_;
        other.state_ = nullptr;
    }
    return *this;
}

Txn::~Txn() {
    abort();
    if (state_ != nullptr) {
        detail::TxnState::release_ref(state_, true);
    }
}

void Txn::abort() noexcept {
    if (state_ == nullptr || state_->is_finished) {
        return;
    }
    state_->end_lmdb_txn();
    state_->is_finished = true;
}

bool Txn::is_active() const noexcept {
    return state_ != nullptr && !state_->is_finished;
}

std::uint64_t Txn::id() const noexcept {
    return state_ == nullptr ? 0 : state_->id;
}

queen::Result<std::optional<ByteSpan>> Txn::get(Table table, ByteSpan key) const {
    QUEEN_ASSERT(state_ != nullptr, "get on a moved-from txn");
    QUEEN_TRY(state_->check_usable());
    QUEEN_ASSERT(table.is_valid(), "get with an invalid Table");
    QUEEN_TRY(check_key(key, "get"));
    MDB_val key_val = detail::to_val(key);
    MDB_val value{};
    const int rc = mdb_get(state_->txn, table.id(), &key_val, &value);
    if (rc == MDB_SUCCESS) [[likely]] {
        if (table.has_value_checksums()) {
            QUEEN_TRY(const ByteSpan checked,
                      checked_value(*state_, table, key, detail::to_span(value)));
            return std::optional<ByteSpan>(checked);
        }
        return std::optional<ByteSpan>(detail::to_span(value));
    }
    if (rc == MDB_NOTFOUND) {
        return std::optional<ByteSpan>();
    }
    return state_->fail(rc, "get from " + state_->env->table_label(table.id()));
}

queen::Result<Cursor> Txn::cursor(Table table) const {
    QUEEN_ASSERT(state_ != nullptr, "cursor on a moved-from txn");
    QUEEN_TRY(state_->check_usable());
    QUEEN_ASSERT(table.is_valid(), "cursor with an invalid Table");
    MDB_cursor* cursor = nullptr;
    const int rc = mdb_cursor_open(state_->txn, table.id(), &cursor);
    if (rc != MDB_SUCCESS) {
        return state_->fail(rc, "open cursor on " + state_->env->table_label(table.id()));
    }
    ++state_->cursor_refs;
    return Cursor(state_, cursor, table);
}

queen::Result<TableStats> Txn::stats(Table table) const {
    QUEEN_ASSERT(state_ != nullptr, "stats on a moved-from txn");
    QUEEN_TRY(state_->check_usable());
    QUEEN_ASSERT(table.is_valid(), "stats with an invalid Table");
    MDB_stat stat{};
    const int rc = mdb_stat(state_->txn, table.id(), &stat);
    if (rc != MDB_SUCCESS) {
        return state_->fail(rc, "stats of " + state_->env->table_label(table.id()));
    }
    TableStats out;
    out.page_size = stat.ms_psize;
    out.depth = stat.ms_depth;
    out.entries = stat.ms_entries;
    out.branch_pages = stat.ms_branch_pages;
    out.leaf_pages = stat.ms_leaf_pages;
    out.overflow_pages = stat.ms_overflow_pages;
    return out;
}

// ---- WriteTxn ----

queen::Result<void> WriteTxn::put(Table table, ByteSpan key, ByteSpan value, PutFlags flags) {
    QUEEN_ASSERT(state_ != nullptr, "put on a moved-from txn");
    QUEEN_TRY(state_->check_usable());
    QUEEN_ASSERT(table.is_valid(), "put with an invalid Table");
    MDB_val key_val = detail::to_val(key);
    MDB_val value_val = table.has_value_checksums() ? with_checksum(value) : detail::to_val(value);
    const int rc = mdb_put(state_->txn, table.id(), &key_val, &value_val, to_mdb_put_flags(flags));
    if (rc == MDB_SUCCESS) [[likely]] {
        return {};
    }
    return state_->fail(rc, "put into " + state_->env->table_label(table.id()), is_append(flags));
}

queen::Result<std::optional<ByteSpan>> WriteTxn::put_if_absent(Table table, ByteSpan key,
                                                               ByteSpan value) {
    QUEEN_ASSERT(state_ != nullptr, "put_if_absent on a moved-from txn");
    QUEEN_TRY(state_->check_usable());
    QUEEN_ASSERT(table.is_valid(), "put_if_absent with an invalid Table");
    QUEEN_ASSERT(!has_flag(table.flags(), TableFlags::dupsort),
                 "put_if_absent is not allowed in dupsort tables");
    MDB_val key_val = detail::to_val(key);
    MDB_val value_val = table.has_value_checksums() ? with_checksum(value) : detail::to_val(value);
    const int rc = mdb_put(state_->txn, table.id(), &key_val, &value_val, MDB_NOOVERWRITE);
    if (rc == MDB_SUCCESS) [[likely]] {
        return std::optional<ByteSpan>{};
    }
    if (rc == MDB_KEYEXIST) {
        // LMDB points the data argument at the stored value.
        const ByteSpan stored(static_cast<const Byte*>(value_val.mv_data), value_val.mv_size);
        if (table.has_value_checksums()) {
            QUEEN_TRY(const ByteSpan checked, checked_value(*state_, table, key, stored));
            return std::optional<ByteSpan>{checked};
        }
        return std::optional<ByteSpan>{stored};
    }
    return state_->fail(rc, "put into " + state_->env->table_label(table.id()));
}

queen::Result<MutableByteSpan> WriteTxn::reserve(Table table, ByteSpan key, std::size_t size_bytes,
                                                 PutFlags flags) {
    QUEEN_ASSERT(state_ != nullptr, "reserve on a moved-from txn");
    QUEEN_TRY(state_->check_usable());
    QUEEN_ASSERT(table.is_valid(), "reserve with an invalid Table");
    QUEEN_ASSERT(!has_flag(table.flags(), TableFlags::dupsort),
                 "reserve is not allowed in dupsort tables");
    QUEEN_ASSERT(!table.has_value_checksums(),
                 "reserve needs a table without value checksums (self_checked)");
    MDB_val key_val = detail::to_val(key);
    MDB_val value{size_bytes, nullptr};
    const int rc =
        mdb_put(state_->txn, table.id(), &key_val, &value, to_mdb_put_flags(flags) | MDB_RESERVE);
    if (rc == MDB_SUCCESS) [[likely]] {
        QUEEN_ASSERT(value.mv_size == size_bytes, "MDB_RESERVE returned another size");
        return MutableByteSpan(static_cast<Byte*>(value.mv_data), size_bytes);
    }
    return state_->fail(rc, "reserve in " + state_->env->table_label(table.id()), is_append(flags));
}

queen::Result<bool> WriteTxn::del(Table table, ByteSpan key) {
    QUEEN_ASSERT(state_ != nullptr, "del on a moved-from txn");
    QUEEN_TRY(state_->check_usable());
    QUEEN_ASSERT(table.is_valid(), "del with an invalid Table");
    MDB_val key_val = detail::to_val(key);
    const int rc = mdb_del(state_->txn, table.id(), &key_val, nullptr);
    if (rc == MDB_SUCCESS) {
        return true;
    }
    if (rc == MDB_NOTFOUND) {
        return false;
    }
    return state_->fail(rc, "del from " + state_->env->table_label(table.id()));
}

queen::Result<bool> WriteTxn::del(Table table, ByteSpan key, ByteSpan value) {
    QUEEN_ASSERT(state_ != nullptr, "del on a moved-from txn");
    QUEEN_TRY(state_->check_usable());
    QUEEN_ASSERT(table.is_valid(), "del with an invalid Table");
    MDB_val key_val = detail::to_val(key);
    MDB_val value_val = detail::to_val(value);
    const int rc = mdb_del(state_->txn, table.id(), &key_val, &value_val);
    if (rc == MDB_SUCCESS) {
        return true;
    }
    if (rc == MDB_NOTFOUND) {
        return false;
    }
    return state_->fail(rc, "del value from " + state_->env->table_label(table.id()));
}

queen::Result<void> WriteTxn::clear(Table table) {
    QUEEN_ASSERT(state_ != nullptr, "clear on a moved-from txn");
    QUEEN_TRY(state_->check_usable());
    QUEEN_ASSERT(table.is_valid(), "clear with an invalid Table");
    const int rc = mdb_drop(state_->txn, table.id(), 0);
    if (rc != MDB_SUCCESS) {
        return state_->fail(rc, "clear " + state_->env->table_label(table.id()));
    }
    return {};
}

queen::Result<void> WriteTxn::commit() {
    QUEEN_ASSERT(state_ != nullptr && !state_->is_finished, "commit of a txn that already ended");
    auto usable = state_->check_usable();
    state_->is_finished = true;
    if (!usable) {
        state_->end_lmdb_txn();
        return std::move(usable).error();
    }
    MDB_txn* txn = state_->txn;
    state_->txn = nullptr;
    const int rc = mdb_txn_commit(txn);  // ends the txn (and frees its cursors) in every case
    if (rc == MDB_SUCCESS) [[likely]] {
        state_->env->leave(true);
        return {};
    }
    const std::string operation = "commit txn " + std::to_string(state_->id);
    if (rc == MDB_MAP_FULL) {
        state_->env->leave(true, false);
        return state_->env->grow_after_map_full(operation);
    }
    state_->env->leave(true);
    // The commit may be partly on disk: the Env is fail-stop from here on.
    auto error = detail::lmdb_error(rc, operation);
    state_->env->poison(error);
    return error;
}

// ---- Cursor ----

Cursor::Cursor(detail::TxnState* txn, void* cursor, Table table) noexcept
    : txn_(txn), cursor_(cursor), table_(table) {}

Cursor::Cursor(Cursor&& other) noexcept
    : txn_(other.txn_), cursor_(other.cursor_), table_(other.table_) {
    other.txn_ = nullptr;
    other.cursor_ = nullptr;
}

Cursor& Cursor::operator=(Cursor&& other) noexcept {
    if (this != &other) {
        release();
        txn_ = other.txn_;
        cursor_ = other.cursor_;
        table_ = other.table_;
        other.txn_ = nullptr;
        other.cursor_ = nullptr;
    }
    return *this;
}

Cursor::~Cursor() {
    release();
}

void Cursor::release() noexcept {
    if (txn_ == nullptr) {
        return;
    }
    // A write txn's cursors are freed by LMDB when the txn ends; a read txn's never are.
    if (!txn_->is_write || txn_->txn != nullptr) {
        mdb_cursor_close(static_cast<MDB_cursor*>(cursor_));
    }
    detail::TxnState::release_ref(txn_, false);
    txn_ = nullptr;
    cursor_ = nullptr;
}

queen::Result<std::optional<Entry>> Cursor::move(int op, const char* what, ByteSpan key,
                                                 ByteSpan value) {
    QUEEN_ASSERT(txn_ != nullptr, "cursor used after being moved from");
    QUEEN_TRY(txn_->check_usable());
    MDB_val key_val = detail::to_val(key);
    MDB_val value_val = detail::to_val(value);
    const int rc = mdb_cursor_get(static_cast<MDB_cursor*>(cursor_), &key_val, &value_val,
                                  static_cast<MDB_cursor_op>(op));
    if (rc == MDB_SUCCESS) [[likely]] {
        const ByteSpan found_key = detail::to_span(key_val);
        if (table_.has_value_checksums()) {
            QUEEN_TRY(const ByteSpan checked,
                      checked_value(*txn_, table_, found_key, detail::to_span(value_val)));
            return std::optional<Entry>(Entry{found_key, checked});
        }
        return std::optional<Entry>(Entry{found_key, detail::to_span(value_val)});
    }
    // GET_CURRENT on a cursor without a position answers EINVAL: that is "no entry" too.
    if (rc == MDB_NOTFOUND || (rc == EINVAL && op == MDB_GET_CURRENT)) {
        return std::optional<Entry>();
    }
    return txn_->fail(rc,
                      std::string("cursor ") + what + " on " + txn_->env->table_label(table_.id()));
}

queen::Result<std::optional<Entry>> Cursor::first() {
    return move(MDB_FIRST, "first");
}
queen::Result<std::optional<Entry>> Cursor::last() {
    return move(MDB_LAST, "last");
}
queen::Result<std::optional<Entry>> Cursor::next() {
    return move(MDB_NEXT, "next");
}
queen::Result<std::optional<Entry>> Cursor::prev() {
    return move(MDB_PREV, "prev");
}
queen::Result<std::optional<Entry>> Cursor::current() {
    return move(MDB_GET_CURRENT, "current");
}
queen::Result<std::optional<Entry>> Cursor::seek(ByteSpan key) {
    QUEEN_TRY(check_key(key, "cursor seek"));
    return move(MDB_SET_RANGE, "seek", key);
}
queen::Result<std::optional<Entry>> Cursor::find(ByteSpan key) {
    QUEEN_TRY(check_key(key, "cursor find"));
    return move(MDB_SET_KEY, "find", key);
}
queen::Result<std::optional<Entry>> Cursor::next_key() {
    return move(MDB_NEXT_NODUP, "next_key");
}
queen::Result<std::optional<Entry>> Cursor::next_dup() {
    return move(MDB_NEXT_DUP, "next_dup");
}
queen::Result<std::optional<Entry>> Cursor::seek_dup(ByteSpan key, ByteSpan value) {
    QUEEN_TRY(check_key(key, "cursor seek_dup"));
    return move(MDB_GET_BOTH_RANGE, "seek_dup", key, value);
}

queen::Result<std::uint64_t> Cursor::dup_count() {
    if (!has_flag(table_.flags(), TableFlags::dupsort)) {
        QUEEN_TRY(auto entry, current());
        if (!entry.has_value()) {
            return queen::Error{Errc::invalid_argument, "cursor dup_count without a position"};
        }
        return std::uint64_t{1};
    }
    QUEEN_ASSERT(txn_ != nullptr, "cursor used after being moved from");
    QUEEN_TRY(txn_->check_usable());
    std::size_t count = 0;
    const int rc = mdb_cursor_count(static_cast<MDB_cursor*>(cursor_), &count);
    if (rc != MDB_SUCCESS) {
        return txn_->fail(rc, "cursor dup_count on " + txn_->env->table_label(table_.id()));
    }
    return std::uint64_t{count};
}

queen::Result<void> Cursor::put(ByteSpan key, ByteSpan value, PutFlags flags) {
    QUEEN_ASSERT(txn_ != nullptr, "cursor used after being moved from");
    QUEEN_TRY(txn_->check_usable());
    if (!txn_->is_write) {
        return queen::Error{Errc::read_only, "cursor put in a read txn"};
    }
    MDB_val key_val = detail::to_val(key);
    MDB_val value_val = table_.has_value_checksums() ? with_checksum(value) : detail::to_val(value);
    const int rc = mdb_cursor_put(static_cast<MDB_cursor*>(cursor_), &key_val, &value_val,
                                  to_mdb_put_flags(flags));
    if (rc == MDB_SUCCESS) [[likely]] {
        return {};
    }
    return txn_->fail(rc, "cursor put into " + txn_->env->table_label(table_.id()),
                      is_append(flags));
}

queen::Result<void> Cursor::del() {
    QUEEN_ASSERT(txn_ != nullptr, "cursor used after being moved from");
    QUEEN_TRY(txn_->check_usable());
    if (!txn_->is_write) {
        return queen::Error{Errc::read_only, "cursor del in a read txn"};
    }
    const int rc = mdb_cursor_del(static_cast<MDB_cursor*>(cursor_), 0);
    if (rc != MDB_SUCCESS) {
        return txn_->fail(rc, "cursor del in " + txn_->env->table_label(table_.id()));
    }
    return {};
}

queen::Result<void> Cursor::del_all_dups() {
    QUEEN_ASSERT(txn_ != nullptr, "cursor used after being moved from");
    QUEEN_TRY(txn_->check_usable());
    if (!txn_->is_write) {
        return queen::Error{Errc::read_only, "cursor del in a read txn"};
    }
    const int rc = mdb_cursor_del(static_cast<MDB_cursor*>(cursor_), MDB_NODUPDATA);
    if (rc != MDB_SUCCESS) {
        return txn_->fail(rc, "cursor del_all_dups in " + txn_->env->table_label(table_.id()));
    }
    return {};
}

}  // namespace queen::store
