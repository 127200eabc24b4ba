// modules/store/tests/checksum_test.cpp — value checksums: a flipped byte in data.mdb is an error
// naming the table and key (never the damaged bytes), tables made before checksums stay readable.
#include <lmdb.h>

#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>

#include "helpers.hpp"
#include "queen/core/error.hpp"
#include "queen/core/rng.hpp"
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

TEST_CASE("store: a table made before value checksums gets them at its first writable open",
          "[store][checksum]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng(seed);
    queen::testing::TempDir dir;
    // What an older version wrote: named tables and no store.value_checksums. Values of every
    // size (empty, a few bytes, over a page: overflow pages), enough of them to split pages
    // while they grow by their checksums.
    std::map<std::string, std::string> rows;
    for (int i = 0; i < 3000; ++i) {
        const auto size = static_cast<std::size_t>(
            i % 500 == 0 ? 5000 + rng.below(3000) : (i % 7 == 0 ? 0 : rng.below(200)));
        std::string value(size, '\0');
        for (char& c : value) {
            c = static_cast<char>('a' + rng.below(26));
        }
        rows["k" + std::to_string(rng.next())] = value;
    }
    {
        MDB_env* raw = nullptr;
        REQUIRE(mdb_env_create(&raw) == MDB_SUCCESS);
        REQUIRE(mdb_env_set_maxdbs(raw, 4) == MDB_SUCCESS);
        REQUIRE(mdb_env_set_mapsize(raw, Options{}.map_size_bytes) == MDB_SUCCESS);
        REQUIRE(mdb_env_open(raw, dir.path().c_str(), 0, 0600) == MDB_SUCCESS);
        MDB_txn* txn = nullptr;
        REQUIRE(mdb_txn_begin(raw, nullptr, 0, &txn) == MDB_SUCCESS);
        MDB_dbi legacy = 0;
        MDB_dbi sorted = 0;
        REQUIRE(mdb_dbi_open(txn, "legacy", MDB_CREATE, &legacy) == MDB_SUCCESS);
        REQUIRE(mdb_dbi_open(txn, "sorted", MDB_CREATE | MDB_DUPSORT, &sorted) == MDB_SUCCESS);
        for (auto& [key, value] : rows) {
            MDB_val k{key.size(), const_cast<char*>(key.data())};
            MDB_val v{value.size(), const_cast<char*>(value.data())};
            REQUIRE(mdb_put(txn, legacy, &k, &v, 0) == MDB_SUCCESS);
        }
        std::string key = "dup";
        std::string value = "one";
        MDB_val k{key.size(), key.data()};
        MDB_val v{value.size(), value.data()};
        REQUIRE(mdb_put(txn, sorted, &k, &v, 0) == MDB_SUCCESS);
        REQUIRE(mdb_txn_commit(txn) == MDB_SUCCESS);
        mdb_env_close(raw);
    }
    const auto check_rows = [&](Env& env, Table table) {
        auto txn = must(env.begin_read());
        auto cursor = must(txn.cursor(table));
        std::size_t seen = 0;
        for (auto entry = must(cursor.first()); entry; entry = must(cursor.next())) {
            const auto found = rows.find(text(entry->key));
            REQUIRE(found != rows.end());
            CHECK(text(entry->value) == found->second);
            ++seen;
        }
        CHECK(seen == rows.size());
    };
    {
        // Read-only (queen inspect next to an older broker): nothing is changed.
        Env reader = must(Env::open_read_only(dir.path()));
        const Table legacy = must(reader.open_table("legacy"));
        CHECK_FALSE(legacy.has_value_checksums());
        check_rows(reader, legacy);
    }
    {
        Env env = must(Env::open(dir.path(), Options{}));
        const Table legacy = must(env.open_table("legacy"));
        CHECK(legacy.has_value_checksums());
        check_rows(env, legacy);
        CHECK_FALSE(must(env.open_table("sorted", TableFlags::dupsort)).has_value_checksums());
        const Table fresh = must(env.open_table("fresh"));
        CHECK(fresh.has_value_checksums());
        must(env.write([&](WriteTxn& txn) -> queen::Result<void> {
            return txn.put(legacy, bytes("k-new"), bytes("written now"));
        }));
        rows["k-new"] = "written now";
        check_rows(env, legacy);
    }
    // Every value carries its checksum now: a reopened (also read-only) Env checks them.
    Env reader = must(Env::open_read_only(dir.path()));
    const Table legacy = must(reader.open_table("legacy"));
    CHECK(legacy.has_value_checksums());
    check_rows(reader, legacy);
    CHECK(must(reader.stats()).tables.size() == 3);
}

}  // namespace queen::store::test
