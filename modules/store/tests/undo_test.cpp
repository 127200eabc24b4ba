// modules/store/tests/undo_test.cpp — UndoLog: a rollback restores every key to what it held.
#include "queen/store/undo.hpp"

#include <map>
#include <string>

#include "helpers.hpp"
#include "queen/core/rng.hpp"
#include "queen/store/env.hpp"
#include "queen/testing/support.hpp"

namespace queen::store::test {
namespace {

std::map<std::string, std::string> dump(const Txn& txn, Table table) {
    std::map<std::string, std::string> out;
    auto cursor = must(txn.cursor(table));
    for (auto entry = must(cursor.first()); entry.has_value(); entry = must(cursor.next())) {
        out.emplace(text(entry->key), text(entry->value));
    }
    return out;
}

TEST_CASE("store: UndoLog rollback restores overwritten, created and deleted keys",
          "[store][undo]") {
    queen::testing::TempDir dir;
    Env env = must(Env::open(dir.path() / "state", Options{}));
    Table a = must(env.open_table("a"));
    Table b = must(env.open_table("b"));
    auto txn = must(env.begin_write());
    must(txn.put(a, bytes("kept"), bytes("1")));
    must(txn.put(a, bytes("changed"), bytes("old")));
    must(txn.put(b, bytes("deleted"), bytes("x")));
    const auto before_a = dump(txn, a);
    const auto before_b = dump(txn, b);

    UndoLog undo;
    must(undo.put(txn, a, bytes("changed"), bytes("new")));
    must(undo.put(txn, a, bytes("changed"), bytes("newer")));  // twice: the oldest value wins
    must(undo.put(txn, a, bytes("created"), bytes("y")));
    CHECK(must(undo.del(txn, b, bytes("deleted"))));
    CHECK_FALSE(must(undo.del(txn, b, bytes("never"))));  // absent: nothing recorded
    CHECK(undo.size() == 4);
    CHECK(dump(txn, a) != before_a);

    must(undo.rollback(txn));
    CHECK(undo.empty());
    CHECK(dump(txn, a) == before_a);
    CHECK(dump(txn, b) == before_b);

    // clear() forgets: a later rollback leaves the committed writes alone.
    must(undo.put(txn, a, bytes("kept"), bytes("2")));
    undo.clear();
    must(undo.rollback(txn));
    CHECK(dump(txn, a).at("kept") == "2");
}

TEST_CASE("store: UndoLog rollback of random writes gives the state before them", "[store][undo]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng(seed);
    queen::testing::TempDir dir;
    Env env = must(Env::open(dir.path() / "state", Options{}));
    Table table = must(env.open_table("t"));
    auto txn = must(env.begin_write());
    UndoLog undo;
    for (int round = 0; round < 50; ++round) {
        const auto before = dump(txn, table);
        const int writes = 1 + static_cast<int>(rng.below(20));
        for (int i = 0; i < writes; ++i) {
            const std::string key = "k" + std::to_string(rng.below(30));
            if (rng.below(3) == 0) {
                (void)must(undo.del(txn, table, bytes(key)));
            } else {
                const std::string value = std::to_string(rng.below(1000));
                must(undo.put(txn, table, bytes(key), bytes(value)));
            }
        }
        if (rng.below(2) == 0) {
            must(undo.rollback(txn));
            REQUIRE(dump(txn, table) == before);
        } else {
            undo.clear();
        }
    }
}

}  // namespace
}  // namespace queen::store::test
