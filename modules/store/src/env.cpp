// modules/store/src/env.cpp — Env: opening, tables, txn begin, map growth, sync, stats, copy.
#include "queen/store/env.hpp"

#include <fcntl.h>
#include <lmdb.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <system_error>

#include "state.hpp"

namespace queen::store {
namespace detail {

EnvState::~EnvState() {
    if (env == nullptr) {
        return;
    }
    if (pin != nullptr) {
        // A final checkpoint, so the next open has nothing to undo. On failure the next open
        // goes back to the previous checkpoint, which is still whole.
        if (!is_poisoned.load(std::memory_order_acquire)) {
            (void)checkpoint();
        }
        mdb_txn_abort(pin);
        pin = nullptr;
    }
    mdb_env_close(env);
}

queen::Result<void> EnvState::check_poisoned() const {
    if (!is_poisoned.load(std::memory_order_acquire)) [[likely]] {
        return {};
    }
    const std::lock_guard lock(poison_mutex);
    return queen::Error{Errc::poisoned, "store " + path.string() + ": " + poison_reason};
}

queen::Error EnvState::poison(const queen::Error& cause) {
    {
        const std::lock_guard lock(poison_mutex);
        if (!is_poisoned.load(std::memory_order_relaxed)) {
            poison_reason = cause.message();
            is_poisoned.store(true, std::memory_order_release);
        }
    }
    return check_poisoned().error();
}

void EnvState::enter(bool is_write) {
    std::unique_lock lock(gate_mutex);
    gate_changed.wait(lock, [&] { return !is_resizing && !(is_write && has_writer); });
    ++live_txns;
    if (is_write) {
        has_writer = true;
    }
}

void EnvState::leave(bool is_write, bool release_writer) {
    {
        const std::lock_guard lock(gate_mutex);
        QUEEN_ASSERT(live_txns > 0, "txn gate: leave without enter");
        --live_txns;
        if (is_write && release_writer) {
            QUEEN_ASSERT(has_writer, "txn gate: writer role released twice");
            has_writer = false;
        }
    }
    gate_changed.notify_all();
}

int EnvState::resize(std::uint64_t size_bytes) {
    std::unique_lock lock(gate_mutex);
    gate_changed.wait(lock, [&] { return !is_resizing; });
    is_resizing = true;
    gate_changed.wait(lock, [&] { return live_txns == 0; });
    const int rc = mdb_env_set_mapsize(env, static_cast<std::size_t>(size_bytes));
    is_resizing = false;
    lock.unlock();
    refresh_map_size();
    gate_changed.notify_all();
    return rc;
}

void EnvState::refresh_map_size() noexcept {
    MDB_envinfo info{};
    if (mdb_env_info(env, &info) == MDB_SUCCESS) {
        map_size_bytes.store(info.me_mapsize, std::memory_order_relaxed);
    }
}

queen::Error EnvState::grow_after_map_full(std::string_view operation) {
    const std::uint64_t current = map_size_bytes.load(std::memory_order_relaxed);
    const std::uint64_t limit = std::max(options.map_size_bytes_max, current);
    std::string context(operation);
    if (current >= limit) {
        {
            const std::lock_guard lock(gate_mutex);
            has_writer = false;
        }
        gate_changed.notify_all();
        return queen::Error{Errc::map_size_max_reached,
                            context + ": map size " + std::to_string(current) +
                                " bytes is map_size_bytes_max; free space or raise the limit"};
    }
    const std::uint64_t target = std::min(current * 2, limit);
    // The writer role is kept while resizing so no other write txn starts on the old map.
    const int rc = resize(target);
    {
        const std::lock_guard lock(gate_mutex);
        has_writer = false;
    }
    gate_changed.notify_all();
    if (rc != MDB_SUCCESS) {
        return lmdb_error(rc,
                          context + ": growing the map to " + std::to_string(target) + " bytes");
    }
    return queen::Error{Errc::map_full, context + ": map grew from " + std::to_string(current) +
                                            " to " + std::to_string(target) +
                                            " bytes; rerun the txn"};
}

queen::Result<void> EnvState::adopt_resized_map() {
    const int rc = resize(0);
    if (rc != MDB_SUCCESS) {
        return lmdb_error(rc, "adopting the map size another process set");
    }
    return {};
}

std::string EnvState::table_label(std::uint32_t dbi) const {
    const std::lock_guard lock(tables_mutex);
    if (dbi < names_by_id.size() && !names_by_id[dbi].empty()) {
        return "table '" + names_by_id[dbi] + "'";
    }
    return "table #" + std::to_string(dbi);
}

}  // namespace detail

namespace {

constexpr unsigned table_flag_mask = MDB_INTEGERKEY | MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP;

unsigned to_mdb_flags(TableFlags flags) {
    unsigned out = 0;
    if (has_flag(flags, TableFlags::integer_keys)) {
        out |= MDB_INTEGERKEY;
    }
    if (has_flag(flags, TableFlags::dupsort)) {
        out |= MDB_DUPSORT;
    }
    if (has_flag(flags, TableFlags::dup_fixed)) {
        out |= MDB_DUPFIXED;
    }
    if (has_flag(flags, TableFlags::integer_dups)) {
        out |= MDB_INTEGERDUP;
    }
    return out;
}

TableFlags from_mdb_flags(unsigned flags) {
    auto out = TableFlags::none;
    if ((flags & MDB_INTEGERKEY) != 0) {
        out = out | TableFlags::integer_keys;
    }
    if ((flags & MDB_DUPSORT) != 0) {
        out = out | TableFlags::dupsort;
    }
    if ((flags & MDB_DUPFIXED) != 0) {
        out = out | TableFlags::dup_fixed;
    }
    if ((flags & MDB_INTEGERDUP) != 0) {
        out = out | TableFlags::integer_dups;
    }
    return out;
}

/// Tables whose values carry the store's CRC-32C: one key per table name, empty values.
constexpr const char* value_checksums_table = "store.value_checksums";

/// New tables get value checksums unless LMDB keeps their values sorted (dupsort: a suffix
/// would change lookups by value) or their owner checks its values itself.
bool wants_value_checksums(TableFlags flags) {
    return !has_flag(flags, TableFlags::dupsort) && !has_flag(flags, TableFlags::self_checked);
}

/// Rewrites every value of table `dbi` as value + CRC-32C (a table made before value
/// checksums), inside `txn`. An LMDB code.
int add_value_checksums(MDB_txn* txn, MDB_dbi dbi) {
    MDB_cursor* cursor = nullptr;
    int rc = mdb_cursor_open(txn, dbi, &cursor);
    if (rc != MDB_SUCCESS) {
        return rc;
    }
    MDB_val key{};
    MDB_val value{};
    std::vector<Byte> key_copy;
    std::vector<Byte> stored;
    for (rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
        // Both point into the page the put rewrites: copy them first.
        const ByteSpan found_key = detail::to_span(key);
        key_copy.assign(found_key.begin(), found_key.end());
        detail::stored_with_checksum(detail::to_span(value), stored);
        MDB_val put_key{key_copy.size(), key_copy.data()};
        MDB_val put_value{stored.size(), stored.data()};
        rc = mdb_cursor_put(cursor, &put_key, &put_value, MDB_CURRENT);
        if (rc != MDB_SUCCESS) {
            break;
        }
    }
    mdb_cursor_close(cursor);
    return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

/// Whether table `name` (`table_dbi`) has value checksums. The record of store.value_checksums
/// says so: an empty value for a table that has them, "S" for one whose owner checks its values
/// (self_checked, whatever flags it is opened with later). In a write txn a table without a
/// record gets one: a new table per `flags`; one made before value checksums that wants them has
/// every value rewritten with its checksum first (once, at its first open by this version).
/// An LMDB code.
int value_checksums_of(MDB_txn* txn, const std::string& name, MDB_dbi table_dbi, TableFlags flags,
                       bool is_created, bool is_write, bool& has_value_checksums) {
    has_value_checksums = false;
    const bool is_recorded_here = is_write && !has_flag(flags, TableFlags::dupsort);
    MDB_dbi dbi = 0;
    int rc = mdb_dbi_open(txn, value_checksums_table, is_recorded_here ? MDB_CREATE : 0u, &dbi);
    if (rc == MDB_NOTFOUND) {
        return MDB_SUCCESS;  // read-only, in an environment older than value checksums
    }
    if (rc != MDB_SUCCESS) {
        return rc;
    }
    MDB_val key{name.size(), const_cast<char*>(name.data())};
    MDB_val value{0, nullptr};
    rc = is_created ? MDB_NOTFOUND : mdb_get(txn, dbi, &key, &value);
    if (rc == MDB_SUCCESS) {
        has_value_checksums = value.mv_size == 0;
        return MDB_SUCCESS;
    }
    if (rc != MDB_NOTFOUND || !is_recorded_here) {
        return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
    }
    const bool wants = wants_value_checksums(flags);
    if (wants && !is_created) {
        rc = add_value_checksums(txn, table_dbi);
        if (rc != MDB_SUCCESS) {
            return rc;
        }
    }
    static constexpr char self_checked_mark = 'S';
    value = wants ? MDB_val{0, nullptr} : MDB_val{1, const_cast<char*>(&self_checked_mark)};
    rc = mdb_put(txn, dbi, &key, &value, 0);
    has_value_checksums = rc == MDB_SUCCESS && wants;
    return rc;
}

std::string describe_flags(TableFlags flags) {
    std::string out;
    auto add = [&](TableFlags flag, const char* name) {
        if (has_flag(flags, flag)) {
            out += out.empty() ? "" : "|";
            out += name;
        }
    };
    add(TableFlags::integer_keys, "integer_keys");
    add(TableFlags::dupsort, "dupsort");
    add(TableFlags::dup_fixed, "dup_fixed");
    add(TableFlags::integer_dups, "integer_dups");
    add(TableFlags::self_checked, "self_checked");
    return out.empty() ? "none" : out;
}

TableStats to_table_stats(const MDB_stat& stat, std::string name) {
    TableStats out;
    out.name = std::move(name);
    out.page_size = stat.ms_psize;
    out.depth = stat.ms_depth;
    out.entries = stat.ms_entries;
    out.branch_pages = stat.ms_branch_pages;
    out.leaf_pages = stat.ms_leaf_pages;
    out.overflow_pages = stat.ms_overflow_pages;
    return out;
}

/// Begins an LMDB txn through the gate, adopting a map resized by another process once.
queen::Result<MDB_txn*> begin_lmdb_txn(detail::EnvState& state, bool is_write) {
    for (int attempt = 0;; ++attempt) {
        QUEEN_TRY(state.check_poisoned());
        state.enter(is_write);
        MDB_txn* txn = nullptr;
        const int rc = mdb_txn_begin(state.env, nullptr, is_write ? 0 : MDB_RDONLY, &txn);
        if (rc == MDB_SUCCESS) {
            return txn;
        }
        state.leave(is_write);
        if (rc == MDB_MAP_RESIZED && attempt == 0) {
            QUEEN_TRY(state.adopt_resized_map());
            continue;
        }
        auto error = detail::lmdb_error(rc, is_write ? "begin write txn" : "begin read txn");
        if (rc == MDB_PANIC) {
            return state.poison(error);
        }
        return error;
    }
}

std::string strip_trailing_separator(std::string text) {
    while (text.size() > 1 && text.back() == '/') {
        text.pop_back();
    }
    return text;
}

queen::Result<std::unique_ptr<detail::EnvState>> open_state(const std::filesystem::path& dir,
                                                            const Options& options,
                                                            bool is_read_only) {
    auto state = std::make_unique<detail::EnvState>();
    state->path = dir;
    state->options = options;
    state->is_read_only = is_read_only;
    int rc = mdb_env_create(&state->env);
    if (rc != MDB_SUCCESS) {
        state->env = nullptr;
        return detail::lmdb_error(rc, "mdb_env_create");
    }
    const std::string where = "open " + dir.string();
    // A read-only open keeps the size the writer recorded (0 = use the file's meta page).
    rc = mdb_env_set_mapsize(state->env, is_read_only ? 0 : options.map_size_bytes);
    if (rc == MDB_SUCCESS) {
        rc = mdb_env_set_maxdbs(state->env, options.tables_max + 1);  // + store.value_checksums
    }
    if (rc == MDB_SUCCESS) {
        rc = mdb_env_set_maxreaders(state->env, options.readers_max);
    }
    if (rc != MDB_SUCCESS) {
        return detail::lmdb_error(rc, where + ": configuring");
    }
    unsigned flags = MDB_NOTLS;
    if (is_read_only) {
        flags |= MDB_RDONLY;
    } else if (options.sync_mode == SyncMode::no_meta_sync) {
        flags |= MDB_NOMETASYNC;
    } else if (options.sync_mode == SyncMode::no_sync ||
               options.sync_mode == SyncMode::checkpoint) {
        flags |= MDB_NOSYNC;
    }
    const bool has_checkpoints = !is_read_only && options.sync_mode == SyncMode::checkpoint;
    if (!is_read_only) {
        // Whatever the mode now: if the last writer ran in checkpoint mode, its checkpoint is
        // the last state known whole. Other modes then drop the file, which would otherwise
        // name a snapshot whose pages they reuse.
        QUEEN_TRY(detail::restore_checkpoint(dir));
        if (!has_checkpoints) {
            QUEEN_TRY(detail::remove_checkpoint(dir));
        }
    }
    rc = mdb_env_open(state->env, strip_trailing_separator(dir.string()).c_str(), flags, 0644);
    if (rc != MDB_SUCCESS) {
        return detail::lmdb_error(rc, where);
    }
    if (!is_read_only) {
        // Reader slots of processes that died (SIGKILL) would otherwise pin old pages forever.
        int dead_readers = 0;
        rc = mdb_reader_check(state->env, &dead_readers);
        if (rc != MDB_SUCCESS) {
            return detail::lmdb_error(rc, where + ": clearing stale readers");
        }
    }
    state->refresh_map_size();
    if (has_checkpoints) {
        MDB_stat stat{};
        rc = mdb_env_stat(state->env, &stat);
        if (rc != MDB_SUCCESS) {
            return detail::lmdb_error(rc, where + ": stat");
        }
        state->page_size = stat.ms_psize;
        // From here on a crash comes back to at least this point, never to a torn file.
        QUEEN_TRY(state->checkpoint());
    }
    return state;
}

}  // namespace

Env::Env(std::unique_ptr<detail::EnvState> state) noexcept : state_(std::move(state)) {}
Env::Env(Env&& other) noexcept = default;
Env& Env::operator=(Env&& other) noexcept {
    if (this != &other) {
        QUEEN_ASSERT(state_ == nullptr || state_->live_txns == 0,
                     "Env replaced while a txn of it is alive");
        state_ = std::move(other.state_);
    }
    return *this;
}
Env::~Env() {
    if (state_ != nullptr) {
        const std::lock_guard lock(state_->gate_mutex);
        QUEEN_ASSERT(state_->live_txns == 0, "Env destroyed while ", state_->live_txns,
                     " txn(s) of it are alive");
    }
}

queen::Result<Env> Env::open(const std::filesystem::path& dir, const Options& options) {
    QUEEN_TRY(options.validate());
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        return queen::Error{ec.value() == EACCES ? Errc::permission_denied : Errc::io,
                            "open " + dir.string() + ": creating the directory: " + ec.message()};
    }
    QUEEN_TRY(auto state, open_state(dir, options, false));
    return Env(std::move(state));
}

queen::Result<Env> Env::open_read_only(const std::filesystem::path& dir, std::uint32_t tables_max) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
        return queen::Error{Errc::not_found, "open " + dir.string() + ": no such directory"};
    }
    if (!std::filesystem::is_regular_file(dir / "data.mdb", ec)) {
        return queen::Error{Errc::not_an_environment,
                            "open " + dir.string() + ": no data.mdb in the directory"};
    }
    Options options;
    options.tables_max = std::clamp<std::uint32_t>(tables_max, 1, 4096);
    options.map_size_bytes = 0;
    options.map_size_bytes_max = 0;
    QUEEN_TRY(auto state, open_state(dir, options, true));
    state->options.map_size_bytes = state->map_size_bytes.load();
    state->options.map_size_bytes_max = state->options.map_size_bytes;
    return Env(std::move(state));
}

queen::Result<Table> Env::open_table(std::string_view name, TableFlags flags) {
    if (name.empty() || name.size() > key_size_max) {
        return queen::Error{Errc::invalid_argument,
                            "open table: a name has 1.." + std::to_string(key_size_max) +
                                " bytes, got " + std::to_string(name.size())};
    }
    const std::string label = "open table '" + std::string(name) + "'";
    const std::lock_guard dbi_open_lock(state_->dbi_open_mutex);
    for (;;) {
        QUEEN_TRY(state_->check_poisoned());
        std::optional<Table> known;
        {
            const std::lock_guard tables_lock(state_->tables_mutex);
            if (const auto found = state_->tables_by_name.find(name);
                found != state_->tables_by_name.end()) {
                known = found->second;
            }
        }
        // self_checked is not LMDB's: store.value_checksums records it (value_checksums_of).
        const TableFlags lmdb_flags = from_mdb_flags(to_mdb_flags(flags));
        if (known.has_value()) {
            if (from_mdb_flags(to_mdb_flags(known->flags())) != lmdb_flags) {
                return queen::Error{Errc::invalid_argument, label + ": the table has flags " +
                                                                describe_flags(known->flags()) +
                                                                ", asked for " +
                                                                describe_flags(flags)};
            }
            return *known;
        }
        const bool is_write = !state_->is_read_only;
        QUEEN_TRY(MDB_txn * txn, begin_lmdb_txn(*state_, is_write));
        const std::string name_text(name);
        MDB_dbi dbi = 0;
        int rc = mdb_dbi_open(txn, name_text.c_str(), to_mdb_flags(flags), &dbi);
        const bool is_created = rc == MDB_NOTFOUND && is_write;
        if (is_created) {
            rc = mdb_dbi_open(txn, name_text.c_str(), to_mdb_flags(flags) | MDB_CREATE, &dbi);
        }
        unsigned stored_flags = 0;
        if (rc == MDB_SUCCESS) {
            rc = mdb_dbi_flags(txn, dbi, &stored_flags);
        }
        if (rc == MDB_SUCCESS && from_mdb_flags(stored_flags & table_flag_mask) != lmdb_flags) {
            mdb_txn_abort(txn);
            state_->leave(is_write);
            return queen::Error{Errc::invalid_argument,
                                label + ": the table has flags " +
                                    describe_flags(from_mdb_flags(stored_flags)) + ", asked for " +
                                    describe_flags(flags)};
        }
        bool has_value_checksums = false;
        if (rc == MDB_SUCCESS && name_text != value_checksums_table) {
            rc = value_checksums_of(txn, name_text, dbi, flags, is_created, is_write,
                                    has_value_checksums);
        }
        if (rc != MDB_SUCCESS) {
            mdb_txn_abort(txn);
            if (rc == MDB_MAP_FULL) {
                state_->leave(true, false);
                const auto grown = state_->grow_after_map_full(label);
                if (grown.is(Errc::map_full)) {
                    continue;
                }
                return grown;
            }
            state_->leave(is_write);
            auto error = detail::lmdb_error(rc, label);
            if (rc == MDB_PANIC) {
                return state_->poison(error);
            }
            return error;
        }
        // Committing (also a read txn) makes the handle usable by every later txn.
        rc = mdb_txn_commit(txn);
        if (rc == MDB_MAP_FULL) {
            state_->leave(true, false);
            const auto grown = state_->grow_after_map_full(label);
            if (grown.is(Errc::map_full)) {
                continue;
            }
            return grown;
        }
        state_->leave(is_write);
        if (rc != MDB_SUCCESS) {
            auto error = detail::lmdb_error(rc, label + ": commit");
            return is_write ? state_->poison(error) : error;
        }
        const Table table(dbi, flags, has_value_checksums);
        const std::lock_guard tables_lock(state_->tables_mutex);
        state_->tables_by_name.emplace(name_text, table);
        if (state_->names_by_id.size() <= dbi) {
            state_->names_by_id.resize(dbi + 1);
        }
        state_->names_by_id[dbi] = name_text;
        return table;
    }
}

queen::Result<std::vector<std::string>> Env::table_names() const {
    QUEEN_TRY(MDB_txn * txn, begin_lmdb_txn(*state_, false));
    std::vector<std::string> names;
    MDB_cursor* cursor = nullptr;
    int rc = mdb_cursor_open(txn, 1, &cursor);  // dbi 1 is the main table (0 is the free list)
    if (rc == MDB_SUCCESS) {
        MDB_val key{};
        MDB_val value{};
        while ((rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) == MDB_SUCCESS) {
            const std::string_view found(static_cast<const char*>(key.mv_data), key.mv_size);
            if (found != value_checksums_table) {  // the store's own bookkeeping
                names.emplace_back(found);
            }
        }
        mdb_cursor_close(cursor);
    }
    mdb_txn_abort(txn);
    state_->leave(false);
    if (rc != MDB_NOTFOUND) {
        return detail::lmdb_error(rc, "list tables of " + state_->path.string());
    }
    return names;
}

queen::Result<ReadTxn> Env::begin_read() const {
    QUEEN_TRY(MDB_txn * txn, begin_lmdb_txn(*state_, false));
    auto* txn_state = new detail::TxnState;
    txn_state->env = state_.get();
    txn_state->txn = txn;
    txn_state->id = mdb_txn_id(txn);
    return ReadTxn(txn_state);
}

queen::Result<WriteTxn> Env::begin_write() {
    if (state_->is_read_only) {
        return queen::Error{Errc::read_only,
                            "begin write txn on " + state_->path.string() + " (opened read-only)"};
    }
    QUEEN_TRY(MDB_txn * txn, begin_lmdb_txn(*state_, true));
    auto* txn_state = new detail::TxnState;
    txn_state->env = state_.get();
    txn_state->txn = txn;
    txn_state->is_write = true;
    txn_state->id = mdb_txn_id(txn);
    return WriteTxn(txn_state);
}

queen::Result<void> Env::sync(bool force) {
    QUEEN_TRY(state_->check_poisoned());
    if (state_->is_read_only) {
        return {};
    }
    if (state_->options.sync_mode == SyncMode::checkpoint) {
        return force ? state_->checkpoint() : queen::Result<void>{};
    }
    const int rc = mdb_env_sync(state_->env, force ? 1 : 0);
    if (rc != MDB_SUCCESS) {
        // Never retry a failed fsync: the kernel may have dropped the dirty pages.
        auto error = detail::lmdb_error(rc, "sync " + state_->path.string());
        state_->poison(error);
        return error;
    }
    return {};
}

queen::Result<void> Env::start_writeback() {
    QUEEN_TRY(state_->check_poisoned());
    const SyncMode mode = state_->options.sync_mode;
    if (state_->is_read_only || (mode != SyncMode::checkpoint && mode != SyncMode::no_sync)) {
        return {};
    }
    int fd = -1;
    if (const int rc = mdb_env_get_fd(state_->env, &fd); rc != MDB_SUCCESS) {
        return detail::lmdb_error(rc, "writeback of " + state_->path.string());
    }
    if (::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE) != 0) {
        return detail::lmdb_error(errno, "writeback of " + state_->path.string());
    }
    return {};
}

queen::Result<EnvStats> Env::stats() const {
    QUEEN_TRY(state_->check_poisoned());
    EnvStats out;
    out.sync_mode = state_->options.sync_mode;
    out.is_read_only = state_->is_read_only;
    {
        const std::lock_guard checkpoint_lock(state_->checkpoint_mutex);
        out.checkpoint_txn_id = state_->pin != nullptr ? state_->pinned_txn_id : 0;
    }
    std::error_code ec;
    const auto file_size = std::filesystem::file_size(state_->path / "data.mdb", ec);
    out.file_size_bytes = ec ? 0 : file_size;

    const std::lock_guard dbi_open_lock(state_->dbi_open_mutex);
    std::map<std::string, Table, std::less<>> known;
    {
        const std::lock_guard tables_lock(state_->tables_mutex);
        known = state_->tables_by_name;
    }
    QUEEN_TRY(MDB_txn * txn, begin_lmdb_txn(*state_, false));
    auto fail = [&](int rc, const std::string& what) -> queen::Error {
        mdb_txn_abort(txn);
        state_->leave(false);
        return detail::lmdb_error(rc, "stats of " + state_->path.string() + ": " + what);
    };
    MDB_envinfo info{};
    MDB_stat stat{};
    int rc = mdb_env_info(state_->env, &info);
    if (rc != MDB_SUCCESS) {
        return fail(rc, "env info");
    }
    out.map_size_bytes = info.me_mapsize;
    out.last_page_used = info.me_last_pgno;
    out.last_txn_id = info.me_last_txnid;
    out.readers_max = info.me_maxreaders;
    out.readers_used = info.me_numreaders;
    rc = mdb_stat(txn, 1, &stat);  // the main table
    if (rc != MDB_SUCCESS) {
        return fail(rc, "main table");
    }
    out.page_size = stat.ms_psize;
    out.main = to_table_stats(stat, "");

    // Free pages: each free-list record holds a page-number list whose first word is its
    // length (the layout mdb_stat -f reads).
    MDB_cursor* cursor = nullptr;
    rc = mdb_cursor_open(txn, 0, &cursor);
    if (rc != MDB_SUCCESS) {
        return fail(rc, "free list");
    }
    MDB_val key{};
    MDB_val value{};
    while ((rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) == MDB_SUCCESS) {
        if (value.mv_size >= sizeof(std::size_t)) {
            std::size_t count = 0;
            std::memcpy(&count, value.mv_data, sizeof count);
            out.free_pages += count;
        }
    }
    mdb_cursor_close(cursor);
    if (rc != MDB_NOTFOUND) {
        return fail(rc, "free list");
    }

    std::vector<std::string> names;
    rc = mdb_cursor_open(txn, 1, &cursor);
    if (rc != MDB_SUCCESS) {
        return fail(rc, "table names");
    }
    while ((rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) == MDB_SUCCESS) {
        const std::string_view found(static_cast<const char*>(key.mv_data), key.mv_size);
        if (found != value_checksums_table) {  // the store's own bookkeeping
            names.emplace_back(found);
        }
    }
    mdb_cursor_close(cursor);
    if (rc != MDB_NOTFOUND) {
        return fail(rc, "table names");
    }
    std::vector<std::pair<std::string, Table>> opened;
    for (const auto& name : names) {
        MDB_dbi dbi = 0;
        if (const auto found = known.find(name); found != known.end()) {
            dbi = found->second.id();
        } else {
            rc = mdb_dbi_open(txn, name.c_str(), 0, &dbi);
            if (rc == MDB_INCOMPATIBLE) {
                continue;  // a plain key of the main table, not a named table
            }
            if (rc != MDB_SUCCESS) {
                return fail(rc, "open table '" + name + "'");
            }
            unsigned flags = 0;
            rc = mdb_dbi_flags(txn, dbi, &flags);
            if (rc != MDB_SUCCESS) {
                return fail(rc, "flags of table '" + name + "'");
            }
            bool has_value_checksums = false;
            rc = value_checksums_of(txn, name, dbi, TableFlags::none, false, false,
                                    has_value_checksums);
            if (rc != MDB_SUCCESS) {
                return fail(rc, "value checksums of table '" + name + "'");
            }
            opened.emplace_back(name, Table(dbi, from_mdb_flags(flags), has_value_checksums));
        }
        rc = mdb_stat(txn, dbi, &stat);
        if (rc != MDB_SUCCESS) {
            return fail(rc, "stat of table '" + name + "'");
        }
        out.tables.push_back(to_table_stats(stat, name));
    }
    // Commit keeps the handles opened above valid for later calls (a read txn writes nothing).
    rc = mdb_txn_commit(txn);
    state_->leave(false);
    if (rc != MDB_SUCCESS) {
        return detail::lmdb_error(rc, "stats of " + state_->path.string() + ": end read txn");
    }
    const std::lock_guard tables_lock(state_->tables_mutex);
    for (const auto& [name, table] : opened) {
        state_->tables_by_name.emplace(name, table);
        if (state_->names_by_id.size() <= table.id()) {
            state_->names_by_id.resize(table.id() + 1);
        }
        state_->names_by_id[table.id()] = name;
    }
    return out;
}

queen::Result<void> Env::copy_to(const std::filesystem::path& target_dir, bool compact) const {
    QUEEN_TRY(state_->check_poisoned());
    const std::string where = "copy " + state_->path.string() + " to " + target_dir.string();
    std::error_code ec;
    std::filesystem::create_directories(target_dir, ec);
    if (ec) {
        return queen::Error{ec.value() == EACCES ? Errc::permission_denied : Errc::io,
                            where + ": creating the directory: " + ec.message()};
    }
    if (std::filesystem::exists(target_dir / "data.mdb", ec)) {
        return queen::Error{Errc::invalid_argument, where + ": the target already has data.mdb"};
    }
    // The copy runs its own read txn on the map, so it holds a gate slot like any txn.
    state_->enter(false);
    const int rc = mdb_env_copy2(state_->env, strip_trailing_separator(target_dir.string()).c_str(),
                                 compact ? MDB_CP_COMPACT : 0u);
    state_->leave(false);
    if (rc != MDB_SUCCESS) {
        return detail::lmdb_error(rc, where);
    }
    return {};
}

const std::filesystem::path& Env::path() const noexcept {
    return state_->path;
}
const Options& Env::options() const noexcept {
    return state_->options;
}
bool Env::is_read_only() const noexcept {
    return state_->is_read_only;
}
std::uint64_t Env::map_size_bytes() const noexcept {
    return state_->map_size_bytes.load(std::memory_order_relaxed);
}
bool Env::is_poisoned() const noexcept {
    return state_->is_poisoned.load(std::memory_order_acquire);
}

}  // namespace queen::store
