// queen/store/errc.hpp — store::Errc: every LMDB failure mode as a std::error_code enum.
#pragma once

#include <system_error>

namespace queen::store {

/// Errors of the store module. Every LMDB return code maps to exactly one of these, and the
/// Error context names the operation plus LMDB's own mdb_strerror() text.
enum class Errc : int {
    ok = 0,
    invalid_argument,      ///< bad Options, EINVAL from LMDB, a table opened with wrong flags
    key_exists,            ///< MDB_KEYEXIST under PutFlags::no_overwrite / no_dup_data
    append_out_of_order,   ///< MDB_KEYEXIST under PutFlags::append(_dup): key not after the last
    key_too_large,         ///< MDB_BAD_VALSIZE: empty key, key > key_size_max, or bad dup size
    not_found,             ///< a table or environment that must exist does not
    not_an_environment,    ///< MDB_INVALID / MDB_VERSION_MISMATCH: the files are not our LMDB
    map_full,              ///< MDB_MAP_FULL: the map was grown; abort and rerun the txn
    map_size_max_reached,  ///< MDB_MAP_FULL with map_size_bytes_max already in use
    tables_full,           ///< MDB_DBS_FULL: more named tables than Options::tables_max
    readers_full,          ///< MDB_READERS_FULL: more read txns than Options::readers_max
    txn_full,              ///< MDB_TXN_FULL: too many dirty pages in one write txn; split it
    txn_failed,            ///< an earlier operation failed inside this write txn; abort it
    read_only,             ///< a write on an environment opened read-only (EACCES)
    locked,                ///< EAGAIN/EBUSY: the lock file is held in an incompatible way
    permission_denied,     ///< EACCES/EPERM opening files
    corruption,            ///< MDB_CORRUPTED / MDB_PAGE_NOTFOUND
    disk_full,             ///< ENOSPC / EDQUOT
    io,                    ///< any other operating-system failure (EIO, ...)
    poisoned,              ///< an earlier storage failure made this Env fail-stop
    internal,              ///< LMDB misuse we could not rule out statically (BAD_DBI, ...)
};

/// The "queen.store" category (message() gives a short English phrase per Errc).
const std::error_category& error_category() noexcept;
inline std::error_code make_error_code(Errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

}  // namespace queen::store

template <>
struct std::is_error_code_enum<queen::store::Errc> : std::true_type {};
