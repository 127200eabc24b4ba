// modules/store/tests/txn_test.cpp — ReadTxn / WriteTxn / Cursor behaviour on real LMDB files.
#include "queen/store/txn.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "queen/store/env.hpp"
#include "queen/store/keys.hpp"
#include "queen/testing/support.hpp"

namespace queen::store::test {
namespace {

struct Fixture {
    queen::testing::TempDir dir;
    Env env = must(Env::open(dir.path() / "state", Options{}));
    Table table = must(env.open_table("items"));
};

std::optional<std::string> read(const Txn& txn, Table table, std::string_view key) {
    auto value = must(txn.get(table, bytes(key)));
    if (!value.has_value()) {
        return std::nullopt;
    }
    return text(*value);
}

std::vector<std::string> keys_forward(const Txn& txn, Table table) {
    std::vector<std::string> out;
    auto cursor = must(txn.cursor(table));
    for (auto entry = must(cursor.first()); entry.has_value(); entry = must(cursor.next())) {
        out.push_back(text(entry->key));
    }
    return out;
}

TEST_CASE("store: put then get in the same txn and after commit", "[store][txn]") {
    Fixture f;
    auto txn = must(f.env.begin_write());
    CHECK(txn.is_active());
    must(txn.put(f.table, bytes("a"), bytes("1")));
    CHECK(read(txn, f.table, "a") == "1");
    CHECK_FALSE(read(txn, f.table, "b").has_value());
    must(txn.commit());
    CHECK_FALSE(txn.is_active());

    auto reader = must(f.env.begin_read());
    CHECK(read(reader, f.table, "a") == "1");
}

TEST_CASE("store: destruction without commit aborts, and abort() is idempotent", "[store][txn]") {
    Fixture f;
    {
        auto txn = must(f.env.begin_write());
        must(txn.put(f.table, bytes("gone"), bytes("x")));
    }
    {
        auto txn = must(f.env.begin_write());
        must(txn.put(f.table, bytes("gone2"), bytes("x")));
        txn.abort();
        txn.abort();
        CHECK_FALSE(txn.is_active());
    }
    auto reader = must(f.env.begin_read());
    CHECK_FALSE(read(reader, f.table, "gone").has_value());
    CHECK_FALSE(read(reader, f.table, "gone2").has_value());
}

TEST_CASE("store: a read txn is a snapshot that later commits do not change", "[store][txn]") {
    Fixture f;
    must(f.env.write([&](WriteTxn& txn) { return txn.put(f.table, bytes("k"), bytes("old")); }));
    auto snapshot = must(f.env.begin_read());
    must(f.env.write([&](WriteTxn& txn) { return txn.put(f.table, bytes("k"), bytes("new")); }));
    CHECK(read(snapshot, f.table, "k") == "old");
    auto fresh = must(f.env.begin_read());
    CHECK(read(fresh, f.table, "k") == "new");
    CHECK(fresh.id() > snapshot.id());
}

TEST_CASE("store: no_overwrite reports key_exists and the txn stays usable", "[store][txn]") {
    Fixture f;
    auto txn = must(f.env.begin_write());
    must(txn.put(f.table, bytes("k"), bytes("1")));
    auto error = must_fail(txn.put(f.table, bytes("k"), bytes("2"), PutFlags::no_overwrite));
    CHECK(error.is(Errc::key_exists));
    CHECK_THAT(error.message(), Catch::Contains("table 'items'"));
    must(txn.put(f.table, bytes("other"), bytes("3")));
    must(txn.commit());
    auto reader = must(f.env.begin_read());
    CHECK(read(reader, f.table, "k") == "1");
    CHECK(read(reader, f.table, "other") == "3");
}

TEST_CASE("store: put_if_absent inserts once, then returns the stored value", "[store][txn]") {
    Fixture f;
    auto txn = must(f.env.begin_write());
    CHECK_FALSE(must(txn.put_if_absent(f.table, bytes("k"), bytes("first"))).has_value());
    auto existing = must(txn.put_if_absent(f.table, bytes("k"), bytes("second")));
    REQUIRE(existing.has_value());
    CHECK(text(*existing) == "first");
    CHECK(read(txn, f.table, "k") == "first");
    auto error = must_fail(txn.put_if_absent(f.table, ByteSpan{}, bytes("v")));
    CHECK(error.is(Errc::key_too_large));
    must(txn.commit());

    auto again = must(f.env.begin_write());
    existing = must(again.put_if_absent(f.table, bytes("k"), bytes("third")));
    REQUIRE(existing.has_value());
    CHECK(text(*existing) == "first");
    CHECK_FALSE(must(again.put_if_absent(f.table, bytes("k2"), bytes("x"))).has_value());
    must(again.commit());
    auto reader = must(f.env.begin_read());
    CHECK(read(reader, f.table, "k") == "first");
    CHECK(read(reader, f.table, "k2") == "x");
    CHECK(must(reader.stats(f.table)).entries == 2);
}

TEST_CASE("store: append accepts increasing keys and rejects others without harm", "[store][txn]") {
    Fixture f;
    auto txn = must(f.env.begin_write());
    for (std::uint64_t i = 1; i <= 1000; ++i) {
        const auto key = u64be_key(i);
        must(txn.put(f.table, key, bytes("v"), PutFlags::append));
    }
    auto error = must_fail(txn.put(f.table, u64be_key(500), bytes("v"), PutFlags::append));
    CHECK(error.is(Errc::append_out_of_order));
    error = must_fail(txn.put(f.table, u64be_key(1000), bytes("v"), PutFlags::append));
    CHECK(error.is(Errc::append_out_of_order));
    must(txn.put(f.table, u64be_key(1001), bytes("v"), PutFlags::append));
    must(txn.commit());
    auto reader = must(f.env.begin_read());
    CHECK(must(reader.stats(f.table)).entries == 1001);
}

TEST_CASE("store: reserve lets the caller write the value in place", "[store][txn]") {
    Fixture f;
    f.table = must(f.env.open_table("self-checked", TableFlags::self_checked));
    CHECK_FALSE(f.table.has_value_checksums());
    auto txn = must(f.env.begin_write());
    auto space = must(txn.reserve(f.table, bytes("r"), 5));
    REQUIRE(space.size() == 5);
    std::memcpy(space.data(), "hello", 5);
    auto big = must(txn.reserve(f.table, bytes("big"), 100000));  // an overflow page run
    std::memset(big.data(), 'z', big.size());
    must(txn.commit());
    auto reader = must(f.env.begin_read());
    CHECK(read(reader, f.table, "r") == "hello");
    CHECK(read(reader, f.table, "big") == std::string(100000, 'z'));
    CHECK(must(reader.stats(f.table)).overflow_pages > 0);
}

TEST_CASE("store: del and clear", "[store][txn]") {
    Fixture f;
    auto txn = must(f.env.begin_write());
    must(txn.put(f.table, bytes("a"), bytes("1")));
    must(txn.put(f.table, bytes("b"), bytes("2")));
    CHECK(must(txn.del(f.table, bytes("a"))));
    CHECK_FALSE(must(txn.del(f.table, bytes("a"))));
    CHECK_FALSE(read(txn, f.table, "a").has_value());
    must(txn.clear(f.table));
    CHECK(must(txn.stats(f.table)).entries == 0);
    must(txn.put(f.table, bytes("c"), bytes("3")));  // the table stays open after clear
    must(txn.commit());
    auto reader = must(f.env.begin_read());
    CHECK(keys_forward(reader, f.table) == std::vector<std::string>{"c"});
}

TEST_CASE("store: empty and over-long keys are key_too_large", "[store][txn]") {
    Fixture f;
    auto txn = must(f.env.begin_write());
    CHECK(must_fail(txn.put(f.table, {}, bytes("x"))).is(Errc::key_too_large));
    const std::string longest(Env::key_size_max, 'k');
    must(txn.put(f.table, bytes(longest), bytes("x")));
    const std::string too_long(Env::key_size_max + 1, 'k');
    CHECK(must_fail(txn.put(f.table, bytes(too_long), bytes("x"))).is(Errc::key_too_large));
    CHECK(must_fail(txn.get(f.table, bytes(too_long))).is(Errc::key_too_large));
    must(txn.commit());  // argument errors leave the txn usable
    auto reader = must(f.env.begin_read());
    CHECK(read(reader, f.table, longest) == "x");
}

TEST_CASE("store: cursor walks, seeks and finds in key order", "[store][cursor]") {
    Fixture f;
    must(f.env.write([&](WriteTxn& txn) -> queen::Result<void> {
        for (const char* key : {"d", "b", "a", "c", "f"}) {
            QUEEN_TRY(txn.put(f.table, bytes(key), bytes(std::string("v") + key)));
        }
        return {};
    }));
    auto reader = must(f.env.begin_read());
    CHECK(keys_forward(reader, f.table) == std::vector<std::string>{"a", "b", "c", "d", "f"});

    auto cursor = must(reader.cursor(f.table));
    CHECK(cursor.table() == f.table);
    CHECK_FALSE(must(cursor.current()).has_value());  // no position yet
    auto entry = must(cursor.last());
    REQUIRE(entry.has_value());
    CHECK(text(entry->key) == "f");
    CHECK(text(must(cursor.prev())->key) == "d");
    CHECK(text(must(cursor.current())->value) == "vd");
    entry = must(cursor.seek(bytes("e")));  // lower bound
    REQUIRE(entry.has_value());
    CHECK(text(entry->key) == "f");
    CHECK(text(must(cursor.seek(bytes("c")))->key) == "c");
    CHECK_FALSE(must(cursor.seek(bytes("g"))).has_value());
    CHECK_FALSE(must(cursor.find(bytes("e"))).has_value());
    entry = must(cursor.find(bytes("b")));
    REQUIRE(entry.has_value());
    CHECK(text(entry->value) == "vb");
    CHECK(text(must(cursor.next())->key) == "c");
    CHECK(must(cursor.dup_count()) == 1);

    auto fresh = must(reader.cursor(f.table));
    CHECK(text(must(fresh.prev())->key) == "f");  // prev without a position = last
    auto fresh2 = must(reader.cursor(f.table));
    CHECK(text(must(fresh2.next())->key) == "a");  // next without a position = first
}

TEST_CASE("store: cursor del, then next returns the following entry", "[store][cursor]") {
    Fixture f;
    auto txn = must(f.env.begin_write());
    for (std::uint64_t i = 0; i < 10; ++i) {
        must(txn.put(f.table, u64be_key(i), bytes("v")));
    }
    {
        auto cursor = must(txn.cursor(f.table));
        // Delete the even keys while walking.
        for (auto entry = must(cursor.first()); entry.has_value();) {
            KeyReader key(entry->key);
            if (key.u64be() % 2 == 0) {
                must(cursor.del());
            }
            entry = must(cursor.next());
        }
    }
    std::vector<std::uint64_t> left;
    auto cursor = must(txn.cursor(f.table));
    for (auto entry = must(cursor.first()); entry.has_value(); entry = must(cursor.next())) {
        left.push_back(KeyReader(entry->key).u64be());
    }
    CHECK(left == std::vector<std::uint64_t>{1, 3, 5, 7, 9});
    must(txn.commit());  // the cursor is still alive: commit frees it in LMDB, not twice here
    CHECK_FALSE(txn.is_active());
}

TEST_CASE("store: cursors may outlive their txn, read or write", "[store][cursor]") {
    Fixture f;
    must(f.env.write([&](WriteTxn& txn) { return txn.put(f.table, bytes("a"), bytes("1")); }));
    std::optional<Cursor> read_cursor;
    std::optional<Cursor> write_cursor;
    {
        auto reader = must(f.env.begin_read());
        read_cursor.emplace(must(reader.cursor(f.table)));
        CHECK(must(read_cursor->first()).has_value());
    }
    {
        auto writer = must(f.env.begin_write());
        write_cursor.emplace(must(writer.cursor(f.table)));
        must(write_cursor->put(bytes("b"), bytes("2")));
        must(writer.commit());
    }
    Cursor moved = std::move(*read_cursor);
    read_cursor.reset();
    write_cursor.reset();
    {
        queen::testing::AssertCapture capture;
        CHECK_THROWS_AS(moved.first(), queen::testing::AssertionFired);
    }
    auto reader = must(f.env.begin_read());
    CHECK(keys_forward(reader, f.table) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("store: cursor writes in a read txn are read_only errors", "[store][cursor]") {
    Fixture f;
    auto reader = must(f.env.begin_read());
    auto cursor = must(reader.cursor(f.table));
    CHECK(must_fail(cursor.put(bytes("a"), bytes("1"))).is(Errc::read_only));
    CHECK(must_fail(cursor.del()).is(Errc::read_only));
}

TEST_CASE("store: cursor put with append bulk-loads in order", "[store][cursor]") {
    Fixture f;
    auto txn = must(f.env.begin_write());
    {
        auto cursor = must(txn.cursor(f.table));
        for (std::uint64_t i = 0; i < 5000; ++i) {
            must(cursor.put(u64be_key(i), bytes("payload"), PutFlags::append));
        }
        CHECK(KeyReader(must(cursor.current())->key).u64be() == 4999);
        CHECK(must_fail(cursor.put(u64be_key(10), bytes("x"), PutFlags::append))
                  .is(Errc::append_out_of_order));
    }
    must(txn.commit());
    auto reader = must(f.env.begin_read());
    CHECK(must(reader.stats(f.table)).entries == 5000);
}

TEST_CASE("store: dupsort tables keep sorted value sets per key", "[store][cursor]") {
    Fixture f;
    const Table dups = must(f.env.open_table("dups", TableFlags::dupsort));
    auto txn = must(f.env.begin_write());
    for (const char* value : {"3", "1", "2"}) {
        must(txn.put(dups, bytes("k1"), bytes(value)));
    }
    must(txn.put(dups, bytes("k2"), bytes("9")));
    CHECK(must_fail(txn.put(dups, bytes("k1"), bytes("2"), PutFlags::no_dup_data))
              .is(Errc::key_exists));
    CHECK(read(txn, dups, "k1") == "1");  // get returns the first value

    auto cursor = must(txn.cursor(dups));
    auto entry = must(cursor.find(bytes("k1")));
    REQUIRE(entry.has_value());
    CHECK(must(cursor.dup_count()) == 3);
    CHECK(text(must(cursor.next_dup())->value) == "2");
    CHECK(text(must(cursor.next_dup())->value) == "3");
    CHECK_FALSE(must(cursor.next_dup()).has_value());
    entry = must(cursor.seek_dup(bytes("k1"), bytes("15")));
    REQUIRE(entry.has_value());
    CHECK(text(entry->value) == "2");
    entry = must(cursor.next_key());
    REQUIRE(entry.has_value());
    CHECK(text(entry->key) == "k2");

    CHECK(must(txn.del(dups, bytes("k1"), bytes("2"))));
    CHECK_FALSE(must(txn.del(dups, bytes("k1"), bytes("2"))));
    entry = must(cursor.find(bytes("k1")));
    REQUIRE(entry.has_value());
    CHECK(must(cursor.dup_count()) == 2);
    must(cursor.del_all_dups());
    CHECK_FALSE(read(txn, dups, "k1").has_value());
    CHECK(must(txn.stats(dups)).entries == 1);
    must(txn.commit());
}

TEST_CASE("store: integer_keys tables order native integers numerically", "[store][cursor]") {
    Fixture f;
    const Table numbers = must(f.env.open_table("numbers", TableFlags::integer_keys));
    auto txn = must(f.env.begin_write());
    for (const std::uint64_t n : {300ULL, 2ULL, 70000ULL, 1ULL << 40}) {
        must(txn.put(numbers, as_native_key(n), bytes("v")));
    }
    std::vector<std::uint64_t> seen;
    auto cursor = must(txn.cursor(numbers));
    for (auto entry = must(cursor.first()); entry.has_value(); entry = must(cursor.next())) {
        std::uint64_t n = 0;
        REQUIRE(entry->key.size() == sizeof n);
        std::memcpy(&n, entry->key.data(), sizeof n);
        seen.push_back(n);
    }
    CHECK(seen == std::vector<std::uint64_t>{2, 300, 70000, 1ULL << 40});
    must(txn.commit());
}

queen::Result<std::uint64_t> count_entries(const Txn& txn, Table table) {
    QUEEN_TRY(auto cursor, txn.cursor(table));
    std::uint64_t count = 0;
    for (;;) {
        QUEEN_TRY(auto entry, cursor.next());
        if (!entry.has_value()) {
            return count;
        }
        ++count;
    }
}

TEST_CASE("store: read helpers taking const Txn& work in read and write txns", "[store][txn]") {
    Fixture f;
    auto writer = must(f.env.begin_write());
    must(writer.put(f.table, bytes("a"), bytes("1")));
    CHECK(must(count_entries(writer, f.table)) == 1);
    must(writer.commit());
    auto reader = must(f.env.begin_read());
    CHECK(must(count_entries(reader, f.table)) == 1);
}

TEST_CASE("store: txns move, and using an ended txn asserts", "[store][txn]") {
    Fixture f;
    auto first = must(f.env.begin_write());
    must(first.put(f.table, bytes("a"), bytes("1")));
    WriteTxn second = std::move(first);
    CHECK_FALSE(first.is_active());  // NOLINT(bugprone-use-after-move): checking the moved-from
    CHECK(second.is_active());
    const std::uint64_t id = second.id();
    must(second.commit());
    queen::testing::AssertCapture capture;
    CHECK_THROWS_AS(second.commit(), queen::testing::AssertionFired);
    CHECK_THROWS_AS(second.put(f.table, bytes("b"), bytes("2")), queen::testing::AssertionFired);
    auto next = must(f.env.begin_write());
    CHECK(next.id() == id + 1);
}

TEST_CASE("store: values from a write txn are zero-copy spans into the map", "[store][txn]") {
    Fixture f;
    must(f.env.write([&](WriteTxn& txn) {
        return txn.put(f.table, bytes("k"), bytes(std::string(3000, 'q')));
    }));
    auto reader = must(f.env.begin_read());
    const auto first = must(reader.get(f.table, bytes("k")));
    const auto again = must(reader.get(f.table, bytes("k")));
    REQUIRE(first.has_value());
    REQUIRE(again.has_value());
    CHECK(first->data() == again->data());  // same bytes in the map, not copies
}

}  // namespace
}  // namespace queen::store::test
