// queen/store/table.hpp — Table: a handle on one named LMDB table (MDB_dbi) and its statistics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace queen::store {

/// How a table orders and stores keys. Fixed when the table is created: reopening it with
/// different flags fails with Errc::invalid_argument.
enum class TableFlags : std::uint32_t {
    none = 0,
    /// MDB_INTEGERKEY: keys are native-endian unsigned 32- or 64-bit integers (all keys of a
    /// table the same width) compared as numbers. Use as_native_key(). For portable composite
    /// keys prefer big-endian keys (keys.hpp) in a table without this flag.
    integer_keys = 1u << 0,
    /// MDB_DUPSORT: a key holds a sorted set of values (each value <= Env::key_size_max bytes).
    dupsort = 1u << 1,
    /// MDB_DUPFIXED (with dupsort): every value of the table has the same size.
    dup_fixed = 1u << 2,
    /// MDB_INTEGERDUP (with dupsort): values are native-endian unsigned integers.
    integer_dups = 1u << 3,
    /// Not LMDB's: the values carry a checksum of their owner's making (message blocks), so the
    /// store adds none to a table created (or first opened by this version) with it
    /// (Table::has_value_checksums). Recorded: later opens without it change nothing.
    self_checked = 1u << 4,
};
[[nodiscard]] constexpr TableFlags operator|(TableFlags a, TableFlags b) noexcept {
    return static_cast<TableFlags>(static_cast<std::uint32_t>(a) | static_cast<std::uint32_t>(b));
}
/// True when every bit of `flag` is set in `set`.
[[nodiscard]] constexpr bool has_flag(TableFlags set, TableFlags flag) noexcept {
    return (static_cast<std::uint32_t>(set) & static_cast<std::uint32_t>(flag)) ==
           static_cast<std::uint32_t>(flag);
}

/// A named table of an Env, from Env::open_table(). A small value type: copy it freely. It is
/// valid for the life of the Env that opened it and usable from any txn of that Env.
/// A default-constructed Table is invalid; passing it to a txn is a programmer error (asserts).
///
/// Value checksums: a table created by this version (not dupsort, not self_checked) stores
/// each value with a CRC-32C after it; every read checks it and a mismatch is an error
/// (queen::Errc::corruption naming the table and key) instead of damaged bytes. Callers see
/// the value alone. An older table gets them at its first writable open (values rewritten
/// once); the Env records which tables have them, in its table "store.value_checksums".
class Table {
public:
    constexpr Table() noexcept = default;
    constexpr Table(std::uint32_t id, TableFlags flags, bool has_value_checksums = false) noexcept
        : id_(id), flags_(flags), has_value_checksums_(has_value_checksums) {}

    [[nodiscard]] constexpr bool is_valid() const noexcept { return id_ != invalid_id; }
    /// The LMDB dbi number, for diagnostics (named tables start at 2: LMDB keeps its free list
    /// in 0 and the table names in 1).
    [[nodiscard]] constexpr std::uint32_t id() const noexcept { return id_; }
    [[nodiscard]] constexpr TableFlags flags() const noexcept { return flags_; }
    /// Whether the table's values carry the store's CRC-32C (see above).
    [[nodiscard]] constexpr bool has_value_checksums() const noexcept {
        return has_value_checksums_;
    }
    friend constexpr bool operator==(Table, Table) noexcept = default;

    /// Bytes the store adds to each value of a table with value checksums.
    static constexpr std::size_t checksum_bytes = 4;

private:
    static constexpr std::uint32_t invalid_id = 0xffffffffu;
    std::uint32_t id_ = invalid_id;
    TableFlags flags_ = TableFlags::none;
    bool has_value_checksums_ = false;
};

/// Size statistics of one table (mdb_stat), as `queen inspect state` reports them.
struct TableStats {
    std::string name;  ///< empty for the main table (which holds the table names)
    std::uint32_t page_size = 0;
    std::uint32_t depth = 0;  ///< B-tree height; 0 for an empty table
    std::uint64_t entries = 0;
    std::uint64_t branch_pages = 0;
    std::uint64_t leaf_pages = 0;
    std::uint64_t overflow_pages = 0;  ///< pages of values larger than about page_size / 2

    [[nodiscard]] std::uint64_t pages() const noexcept {
        return branch_pages + leaf_pages + overflow_pages;
    }
    [[nodiscard]] std::uint64_t size_bytes() const noexcept { return pages() * page_size; }
};

}  // namespace queen::store
