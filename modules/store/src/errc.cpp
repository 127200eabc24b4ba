// modules/store/src/errc.cpp — the store error category, LMDB return code mapping and Options.
#include <lmdb.h>

#include <cerrno>
#include <string>

#include "queen/core/error.hpp"
#include "queen/store/errc.hpp"
#include "queen/store/options.hpp"
#include "state.hpp"

namespace queen::store {
namespace {
std::string_view describe(Errc e) noexcept {
    switch (e) {
        case Errc::ok: return "ok";
        case Errc::invalid_argument: return "invalid argument";
        case Errc::key_exists: return "key exists";
        case Errc::append_out_of_order: return "append key not after the last key";
        case Errc::key_too_large: return "key or value size not allowed";
        case Errc::not_found: return "not found";
        case Errc::not_an_environment: return "not an LMDB environment";
        case Errc::map_full: return "map full (grown; rerun the txn)";
        case Errc::map_size_max_reached: return "map full at map_size_bytes_max";
        case Errc::tables_full: return "too many tables (tables_max)";
        case Errc::readers_full: return "too many readers (readers_max)";
        case Errc::txn_full: return "txn too large";
        case Errc::txn_failed: return "txn failed earlier";
        case Errc::read_only: return "environment is read-only";
        case Errc::locked: return "environment is locked";
        case Errc::permission_denied: return "permission denied";
        case Errc::corruption: return "corruption";
        case Errc::disk_full: return "disk full";
        case Errc::io: return "i/o error";
        case Errc::poisoned: return "poisoned by an earlier storage failure";
        case Errc::internal: return "internal error";
    }
    return {};
}

Errc map_rc(int rc, bool is_append) noexcept {
    switch (rc) {
        case MDB_KEYEXIST: return is_append ? Errc::append_out_of_order : Errc::key_exists;
        case MDB_NOTFOUND: return Errc::not_found;
        case MDB_PAGE_NOTFOUND:
        case MDB_CORRUPTED: return Errc::corruption;
        case MDB_PANIC: return Errc::poisoned;
        case MDB_VERSION_MISMATCH:
        case MDB_INVALID: return Errc::not_an_environment;
        case MDB_MAP_FULL: return Errc::map_full;
        case MDB_DBS_FULL: return Errc::tables_full;
        case MDB_READERS_FULL:
        case MDB_TLS_FULL: return Errc::readers_full;
        case MDB_TXN_FULL: return Errc::txn_full;
        case MDB_BAD_VALSIZE: return Errc::key_too_large;
        case MDB_INCOMPATIBLE:
        case EINVAL: return Errc::invalid_argument;
        case MDB_CURSOR_FULL:
        case MDB_PAGE_FULL:
        case MDB_MAP_RESIZED:
        case MDB_BAD_RSLOT:
        case MDB_BAD_TXN:
        case MDB_BAD_DBI: return Errc::internal;
        case EACCES:
        case EPERM: return Errc::permission_denied;
        case EROFS: return Errc::read_only;
        case EAGAIN:
        case EBUSY: return Errc::locked;
        case ENOSPC:
        case EDQUOT: return Errc::disk_full;
        case ENOENT: return Errc::not_found;
        default: return Errc::io;
    }
}
}  // namespace

const std::error_category& error_category() noexcept {
    static const EnumErrorCategory<Errc, describe> category("queen.store", "unknown store error ");
    return category;
}

std::string_view to_string(SyncMode mode) noexcept {
    switch (mode) {
        case SyncMode::durable: return "durable";
        case SyncMode::no_meta_sync: return "no_meta_sync";
        case SyncMode::no_sync: return "no_sync";
        case SyncMode::checkpoint: return "checkpoint";
    }
    return "unknown";
}

queen::Result<SyncMode> parse_sync_mode(std::string_view text) {
    for (const SyncMode mode :
         {SyncMode::durable, SyncMode::no_meta_sync, SyncMode::no_sync, SyncMode::checkpoint}) {
        if (text == to_string(mode)) {
            return mode;
        }
    }
    return queen::Error{Errc::invalid_argument,
                        "sync mode '" + std::string(text) +
                            "' is not one of durable, no_meta_sync, no_sync, checkpoint"};
}

queen::Result<void> Options::validate() const {
    constexpr std::uint64_t granule = 4096;
    constexpr std::uint64_t map_size_min = std::uint64_t{64} << 10;
    constexpr std::uint64_t map_size_limit = std::uint64_t{1} << 48;
    auto bad = [](const char* field, std::uint64_t value, const char* why) {
        return queen::Error{Errc::invalid_argument, std::string("store.") + field + " = " +
                                                        std::to_string(value) + ": " + why};
    };
    if (map_size_bytes % granule != 0) {
        return bad("map_size_bytes", map_size_bytes, "must be a multiple of 4096");
    }
    if (map_size_bytes_max % granule != 0) {
        return bad("map_size_bytes_max", map_size_bytes_max, "must be a multiple of 4096");
    }
    if (map_size_bytes < map_size_min) {
        return bad("map_size_bytes", map_size_bytes, "must be at least 65536");
    }
    if (map_size_bytes_max < map_size_bytes) {
        return bad("map_size_bytes_max", map_size_bytes_max, "must be >= map_size_bytes");
    }
    if (map_size_bytes_max > map_size_limit) {
        return bad("map_size_bytes_max", map_size_bytes_max, "must be <= 2^48");
    }
    if (tables_max < 1 || tables_max > 4096) {
        return bad("tables_max", tables_max, "must be in [1, 4096]");
    }
    if (readers_max < 1 || readers_max > 65536) {
        return bad("readers_max", readers_max, "must be in [1, 65536]");
    }
    if (sync_mode != SyncMode::durable && sync_mode != SyncMode::no_meta_sync &&
        sync_mode != SyncMode::no_sync && sync_mode != SyncMode::checkpoint) {
        return bad("sync_mode", static_cast<std::uint64_t>(sync_mode), "unknown sync mode");
    }
    return {};
}

namespace detail {

queen::Error lmdb_error(int rc, std::string_view operation, bool is_append) {
    std::string context(operation);
    context += ": ";
    context += mdb_strerror(rc);
    return queen::Error{map_rc(rc, is_append), std::move(context)};
}

bool is_txn_fatal(int rc) noexcept {
    switch (rc) {
        case MDB_SUCCESS:
        case MDB_NOTFOUND:
        case MDB_KEYEXIST:
        case MDB_BAD_VALSIZE:
        case MDB_INCOMPATIBLE:
        case EINVAL:
        case EACCES: return false;
        default: return true;
    }
}

}  // namespace detail
}  // namespace queen::store
