// modules/store/tests/checksum_test.cpp — value checksums: a flipped byte in data.mdb is an error
// naming the table and key (never the damaged bytes), tables made before checksums stay readable.
#include <lmdb.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "helpers.hpp"
#include "queen/core/error.hpp"
#include "queen/store/env.hpp"
#include "queen/store/txn.hpp"
#include "queen/testing/support.hpp"

namespace queen::store::test {
namespace {

/// Flips one byte of the first occurrence of `marker` in `dir`/data.mdb.
void flip_byte_of(const std::filesystem::path& dir, const std::string& marker) {
    const auto path = dir / "data.mdb";
    std::string file;
    {
        std::ifstream in(path, std::ios::binary);
        file.assign(std::istreambuf_iterator<char>(in), {});
    }
    const auto at = file.find(marker);
    REQUIRE(at != std::string::npos);
    file[at + marker.size() / 2] ^= 0x20;
    std::ofstream(path, std::ios::binary | std::ios::in) << file;
}

}  // namespace

TEST_CASE("store: value checksums turn a damaged value into an error naming table and key",
          "[store][checksum]") {
    queen::testing::TempDir dir;
    const std::string damaged_value = "value-that-will-be-damaged-0123456789";
    {
        Env env = must(Env::open(dir.path(), Options{}));
        const Table table = must(env.open_table("cursors"));
        CHECK(table.has_value_checksums());
        must(env.write([&](WriteTxn& txn) -> queen::Result<void> {
            QUEEN_TRY(txn.put(table, bytes("a"), bytes("first")));
            QUEEN_TRY(txn.put(table, bytes("b"), bytes(damaged_value)));
            QUEEN_TRY(txn.put(table, bytes("c"), bytes("third")));
            // Callers see the value alone, whatever the store adds.
            QUEEN_TRY(auto back, txn.get(table, bytes("a")));
            CHECK(text(*back) == "first");
            return {};
        }));
    }
    flip_byte_of(dir.path(), damaged_value);

    Env env = must(Env::open(dir.path(), Options{}));
    const Table table = must(env.open_table("cursors"));
    REQUIRE(table.has_value_checksums());
    auto txn = must(env.begin_read());
    CHECK(text(*must(txn.get(table, bytes("a")))) == "first");
    const auto error = must_fail(txn.get(table, bytes("b")));
    CHECK(error.is(queen::Errc::corruption));
    CHECK_THAT(error.message(), Catch::Contains("cursors") && Catch::Contains("key 62") &&
                                    Catch::Contains("checksum"));
    CHECK_THAT(error.message(), !Catch::Contains(damaged_value.substr(0, 10)));

    // A cursor stops on the damaged entry with the error, and moves on past it.
    auto cursor = must(txn.cursor(table));
    CHECK(text(must(cursor.first())->value) == "first");
    CHECK(must_fail(cursor.next()).is(queen::Errc::corruption));
    CHECK(text(must(cursor.next())->value) == "third");
    // The damage is in the data only: the txn and the Env stay usable.
    CHECK(text(*must(txn.get(table, bytes("c")))) == "third");
    CHECK_FALSE(must(env.begin_read()).get(table, bytes("b")).has_value());
}

TEST_CASE("store: put_if_absent and cursor puts keep the checksum, self_checked tables get none",
          "[store][checksum]") {
    queen::testing::TempDir dir;
    auto env = std::make_unique<Env>(must(Env::open(dir.path(), Options{})));
    const Table checked = must(env->open_table("checked"));
    const Table own = must(env->open_table("own", TableFlags::self_checked));
    const Table sorted = must(env->open_table("sorted", TableFlags::dupsort));
    CHECK(checked.has_value_checksums());
    CHECK_FALSE(own.has_value_checksums());
    CHECK_FALSE(sorted.has_value_checksums());
    must(env->write([&](WriteTxn& txn) -> queen::Result<void> {
        QUEEN_TRY(auto absent, txn.put_if_absent(checked, bytes("k"), bytes("one")));
        CHECK_FALSE(absent.has_value());
        QUEEN_TRY(auto present, txn.put_if_absent(checked, bytes("k"), bytes("two")));
        REQUIRE(present.has_value());
        CHECK(text(*present) == "one");
        QUEEN_TRY(auto cursor, txn.cursor(checked));
        QUEEN_TRY(cursor.put(bytes("z"), bytes("by cursor"), PutFlags::append));
        QUEEN_TRY(txn.put(own, bytes("k"), bytes("raw")));
        QUEEN_TRY(txn.put(checked, bytes("empty"), bytes("")));
        return {};
    }));
    auto txn = must(env->begin_read());
    CHECK(text(*must(txn.get(checked, bytes("z")))) == "by cursor");
    CHECK(must(txn.get(checked, bytes("empty")))->empty());
    CHECK(text(*must(txn.get(own, bytes("k")))) == "raw");
    // What the store adds shows in the table's size, not in the values.
    CHECK(must(txn.stats(checked)).entries == 3);

    // Reopened in a new Env, each table keeps what it was created with, whatever flag it is
    // opened with now (self_checked only matters at creation).
    txn.abort();
    env.reset();
    Env again = must(Env::open(dir.path(), Options{}));
    CHECK(must(again.open_table("checked", TableFlags::self_checked)).has_value_checksums());
    CHECK_FALSE(must(again.open_table("own")).has_value_checksums());
    CHECK(must(again.table_names()) == std::vector<std::string>{"checked", "own", "sorted"});
}

TEST_CASE("store: a table made before value checksums stays readable without them",
          "[store][checksum]") {
    queen::testing::TempDir dir;
    {
        // What an older version wrote: a named table and no store.value_checksums.
        MDB_env* raw = nullptr;
        REQUIRE(mdb_env_create(&raw) == MDB_SUCCESS);
        REQUIRE(mdb_env_set_maxdbs(raw, 4) == MDB_SUCCESS);
        REQUIRE(mdb_env_set_mapsize(raw, Options{}.map_size_bytes) == MDB_SUCCESS);
        REQUIRE(mdb_env_open(raw, dir.path().c_str(), 0, 0600) == MDB_SUCCESS);
        MDB_txn* txn = nullptr;
        REQUIRE(mdb_txn_begin(raw, nullptr, 0, &txn) == MDB_SUCCESS);
        MDB_dbi dbi = 0;
        REQUIRE(mdb_dbi_open(txn, "legacy", MDB_CREATE, &dbi) == MDB_SUCCESS);
        std::string key = "k";
        std::string value = "old value";
        MDB_val k{key.size(), key.data()};
        MDB_val v{value.size(), value.data()};
        REQUIRE(mdb_put(txn, dbi, &k, &v, 0) == MDB_SUCCESS);
        REQUIRE(mdb_txn_commit(txn) == MDB_SUCCESS);
        mdb_env_close(raw);
    }
    auto env = std::make_unique<Env>(must(Env::open(dir.path(), Options{})));
    const Table legacy = must(env->open_table("legacy"));
    CHECK_FALSE(legacy.has_value_checksums());
    const Table fresh = must(env->open_table("fresh"));
    CHECK(fresh.has_value_checksums());
    must(env->write([&](WriteTxn& txn) -> queen::Result<void> {
        QUEEN_TRY(txn.put(legacy, bytes("k2"), bytes("written now")));
        return txn.put(fresh, bytes("k"), bytes("new value"));
    }));
    auto txn = must(env->begin_read());
    CHECK(text(*must(txn.get(legacy, bytes("k")))) == "old value");
    CHECK(text(*must(txn.get(legacy, bytes("k2")))) == "written now");
    CHECK(text(*must(txn.get(fresh, bytes("k")))) == "new value");

    // Read-only (queen inspect) sees the same.
    txn.abort();
    env.reset();
    {
        Env reader = must(Env::open_read_only(dir.path()));
        CHECK_FALSE(must(reader.open_table("legacy")).has_value_checksums());
        CHECK(must(reader.open_table("fresh")).has_value_checksums());
    }
    // stats() opens every table first (queen inspect state): the handles it keeps know too.
    Env inspected = must(Env::open_read_only(dir.path()));
    CHECK(must(inspected.stats()).tables.size() == 2);
    CHECK_FALSE(must(inspected.open_table("legacy")).has_value_checksums());
    const Table fresh_again = must(inspected.open_table("fresh"));
    CHECK(fresh_again.has_value_checksums());
    CHECK(text(*must(must(inspected.begin_read()).get(fresh_again, bytes("k")))) == "new value");
}

}  // namespace queen::store::test
