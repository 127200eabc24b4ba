// streams/tests/streams_test.cpp — StreamsState and the read queries, one behaviour of
// streams.hpp per test.
#include "queen/streams/streams.hpp"

#include <string>
#include <vector>

#include "harness.hpp"
#include "queen/core/error.hpp"
#include "queen/store/keys.hpp"
#include "records.hpp"

namespace queen::streams {
namespace {

using queen::testing::must_fail;
using testing::bytes;
using testing::Harness;
using testing::keys_of;
using testing::must;
using testing::text;

using Keys = std::vector<std::string>;

TEST_CASE("streams: Options::validate checks that names and row keys fit an LMDB key",
          "[streams][options]") {
    CHECK(Options{}.validate().has_value());

    Options options;
    options.key_bytes_max = 511 - 24;  // the row key exactly fills 511 bytes
    CHECK(options.validate().has_value());
    options.key_bytes_max += 1;
    CHECK(must_fail(options.validate()).is(queen::Errc::invalid_argument));

    const auto refused = [](auto change) {
        Options o;
        change(o);
        CHECK(must_fail(o.validate()).is(queen::Errc::invalid_argument));
    };
    refused([](Options& o) { o.name_bytes_max = 0; });
    refused([](Options& o) { o.name_bytes_max = 512; });
    refused([](Options& o) { o.query_id_bytes_max = 0; });
    refused([](Options& o) { o.query_id_bytes_max = 512; });
    refused([](Options& o) { o.queue_bytes_max = 0; });
    refused([](Options& o) { o.config_hash_bytes_max = 0; });
    refused([](Options& o) { o.key_bytes_max = 0; });
    refused([](Options& o) { o.key_bytes_max = SIZE_MAX; });
    refused([](Options& o) { o.value_bytes_max = std::size_t{1} << 40; });
    refused([](Options& o) { o.list_limit_max = 0; });

    queen::testing::TempDir dir;
    auto env = must(store::Env::open(dir.path(), store::Options{}));
    options = Options{};
    options.key_bytes_max = 500;
    CHECK(must_fail(StreamsState::open(env, options)).is(queen::Errc::invalid_argument));
}

TEST_CASE("streams: open creates the five streams.* tables, all empty", "[streams][open]") {
    Harness h;
    CHECK(must(h.env->table_names()) == Keys{"streams.garbage", "streams.meta", "streams.queries",
                                             "streams.query_ids", "streams.rows"});
    CHECK(h.queries().queries.empty());
    CHECK_FALSE(h.has_garbage());
    CHECK(h.dump() == testing::Dump{});
}

TEST_CASE("streams: Register creates, reuses, resets or conflicts as the HTTP contract says",
          "[streams][register]") {
    Harness h;
    const TimestampMs created = h.now();
    const RegisterResult fresh = h.reg("orders", "h1", "id-1", false, "src", "sink");
    CHECK(fresh.status == Status::fresh);
    CHECK(fresh.query_id == "id-1");
    CHECK(fresh.config_hash == "h1");
    CHECK(fresh.epoch == 1);
    CHECK(fresh.message.empty());
    const auto query = h.query("orders");
    REQUIRE(query.has_value());
    CHECK(*query == Query{"orders", "id-1", "src", "sink", "h1", 1, 1, created, created});
    CHECK(h.query_by_id("id-1") == query);
    CHECK(h.upsert("id-1", 0, "k", "1").status == Status::ok);

    // Same hash: reused, whatever reset says; the queues are replaced, the id and rows kept,
    // the new_query_id ignored.
    h.advance_ms(10);
    const RegisterResult reused = h.reg("orders", "h1", "id-other", true, "src2", "");
    CHECK(reused.status == Status::reused);
    CHECK(reused.query_id == "id-1");
    CHECK(reused.config_hash == "h1");
    CHECK(reused.epoch == 1);
    CHECK(*h.query("orders") == Query{"orders", "id-1", "src2", "", "h1", 1, 1, created, h.now()});
    CHECK_FALSE(h.query_by_id("id-other").has_value());
    CHECK(h.count("id-1") == 1);

    // Another hash without reset: conflict, with the 409's text, and nothing written.
    const auto before = h.dump();
    const RegisterResult conflict = h.reg("orders", "h2", "id-3", false, "x", "y");
    CHECK(conflict.status == Status::conflict);
    CHECK(conflict.query_id == "id-1");
    CHECK(conflict.config_hash == "h1");
    CHECK(conflict.message ==
          "config_hash mismatch: operator chain changed for queryId 'orders'. Pass reset:true "
          "to wipe existing state, or use a new queryId.");
    CHECK(h.dump() == before);

    // Another hash with reset: the rows are gone at once, the hash stored, the id kept.
    h.advance_ms(10);
    const RegisterResult reset = h.reg("orders", "h2", "id-4", true, "src3", "sink3");
    CHECK(reset.status == Status::reset);
    CHECK(reset.query_id == "id-1");
    CHECK(reset.config_hash == "h2");
    CHECK(reset.epoch == 2);
    CHECK(*h.query("orders") ==
          Query{"orders", "id-1", "src3", "sink3", "h2", 1, 2, created, h.now()});
    CHECK(h.count("id-1") == 0);
    CHECK(h.rows("id-1", 0).rows.empty());
    CHECK(h.has_garbage());

    // A second query gets the next number; queries list in name order.
    CHECK(h.reg("alpha", "h", "id-a").status == Status::fresh);
    CHECK(h.query("alpha")->number == 2);
    const QueryPage page = h.queries();
    REQUIRE(page.queries.size() == 2);
    CHECK(page.queries[0].name == "alpha");
    CHECK(page.queries[1].name == "orders");
    CHECK(page.next_after.empty());
}

TEST_CASE("streams: every Register field is checked against Options, refusals write nothing",
          "[streams][register][limits]") {
    Options options;
    options.name_bytes_max = 4;
    options.query_id_bytes_max = 5;
    options.queue_bytes_max = 3;
    options.config_hash_bytes_max = 2;
    Harness h(options);
    CHECK(h.reg("name", "hh", "iiiii", false, "qqq", "qqq").status == Status::fresh);
    const auto before = h.dump();

    const auto refused = [&](const RegisterResult& result, const char* what) {
        INFO(what << ": " << result.message);
        CHECK(result.status == Status::invalid);
        CHECK(result.message.starts_with(what));
        CHECK(result.query_id.empty());
        CHECK(result.epoch == 0);
        CHECK(h.dump() == before);
    };
    refused(h.reg("", "h", "id"), "name");
    refused(h.reg("names", "h", "id"), "name");
    refused(h.reg("n", "hhh", "id"), "config_hash");
    refused(h.reg("n", "", "id"), "config_hash");
    refused(h.reg("n", "h", ""), "query_id");
    refused(h.reg("n", "h", "iiiiii"), "query_id");
    refused(h.reg("name", "hh", ""), "query_id");  // required even when the name exists
    refused(h.reg("n", "h", "id", false, ""), "source_queue");
    refused(h.reg("n", "h", "id", false, "qqqq"), "source_queue");
    refused(h.reg("n", "h", "id", false, "q", "qqqq"), "sink_queue");
    // A new name whose query_id is taken: refused, not a second query under one id.
    refused(h.reg("n2", "h", "iiiii"), "query_id");

    // The limits themselves are allowed (sink may be empty), names may hold any bytes.
    CHECK(h.reg(std::string("n\0\xff", 3), "hh", std::string("i\0", 2), false, "qqq", "").status ==
          Status::fresh);
    CHECK(h.query(std::string("n\0\xff", 3))->query_id == std::string("i\0", 2));
}

TEST_CASE(
    "streams: Upsert and Delete write rows of (query, partition, key) and say if one was "
    "there",
    "[streams][rows]") {
    Harness h;
    CHECK(h.reg("q", "h", "id").status == Status::fresh);
    const WriteResult created = h.upsert("id", 7, "user-1", R"({"n":1})");
    CHECK(created.status == Status::ok);
    CHECK_FALSE(created.existed);
    CHECK(created.message.empty());
    h.advance_ms(5);
    const WriteResult replaced = h.upsert("id", 7, "user-1", R"({"n":2})");
    CHECK(replaced.existed);
    CHECK(h.upsert("id", 8, "user-1", "other partition").status == Status::ok);
    CHECK(h.upsert("id", 7, "user-2", "").status == Status::ok);  // an empty value is a value

    const RowPage seven = h.rows("id", 7);
    REQUIRE(seven.rows.size() == 2);
    CHECK(seven.rows[0] == Row{"user-1", bytes(R"({"n":2})"), h.now()});
    CHECK(seven.rows[1] == Row{"user-2", {}, h.now()});
    CHECK(keys_of(h.rows("id", 8)) == Keys{"user-1"});
    CHECK(h.rows("id", 9).rows.empty());
    CHECK(h.count("id") == 3);
    CHECK(h.partitions("id") == std::vector<std::uint64_t>{7, 8});

    const WriteResult deleted = h.del("id", 7, "user-1");
    CHECK(deleted.status == Status::ok);
    CHECK(deleted.existed);
    const auto after = h.dump();
    const WriteResult absent = h.del("id", 7, "user-1");
    CHECK(absent.status == Status::ok);
    CHECK_FALSE(absent.existed);
    CHECK(h.del("id", 99, "nope").status == Status::ok);
    CHECK(h.dump() == after);
    CHECK(keys_of(h.rows("id", 7)) == Keys{"user-2"});
    CHECK(h.count("id") == 2);
}

TEST_CASE("streams: a row command for an unknown query_id is unknown_query and writes nothing",
          "[streams][rows]") {
    Harness h;
    CHECK(h.reg("q", "h", "id").status == Status::fresh);
    const auto before = h.dump();
    const WriteResult upsert = h.upsert("nope", 0, "k", "v");
    CHECK(upsert.status == Status::unknown_query);
    CHECK(upsert.message.find("nope") != std::string::npos);
    CHECK(h.del("nope", 0, "k").status == Status::unknown_query);
    CHECK(h.clear("nope").status == Status::unknown_query);
    CHECK(h.remove("nope").status == Status::unknown_query);
    // Names and ids are separate: the name is not an id.
    CHECK(h.upsert("q", 0, "k", "v").status == Status::unknown_query);
    CHECK(h.dump() == before);
    // Reads of an unknown query are empty, not errors.
    CHECK(h.rows("nope", 0).rows.empty());
    CHECK(h.rows_of("nope", 0, {"k"}).empty());
    CHECK(h.count("nope") == 0);
    CHECK(h.partitions("nope").empty());
    CHECK_FALSE(h.query_by_id("nope").has_value());
    CHECK_FALSE(h.query_by_id("").has_value());
    CHECK_FALSE(h.query_by_id(std::string(600, 'i')).has_value());
    CHECK_FALSE(h.query("").has_value());
    CHECK_FALSE(h.query(std::string(600, 'n')).has_value());
}

TEST_CASE("streams: row commands outside the Options limits are invalid and write nothing",
          "[streams][rows][limits]") {
    Options options;
    options.query_id_bytes_max = 4;
    options.key_bytes_max = 3;
    options.value_bytes_max = 5;
    options.name_bytes_max = 2;
    Harness h(options);
    CHECK(h.reg("q", "h", "id").status == Status::fresh);
    const auto before = h.dump();
    const auto refused = [&](const WriteResult& result, const char* what) {
        INFO(what << ": " << result.message);
        CHECK(result.status == Status::invalid);
        CHECK(result.message.starts_with(what));
        CHECK(h.dump() == before);
    };
    refused(h.upsert("id", 0, "", "v"), "key");
    refused(h.upsert("id", 0, "kkkk", "v"), "key");
    refused(h.upsert("id", 0, "k", "vvvvvv"), "value");
    refused(h.upsert("", 0, "k", "v"), "query_id");
    refused(h.upsert("iiiii", 0, "k", "v"), "query_id");
    refused(h.del("id", 0, ""), "key");
    refused(h.del("id", 0, "kkkk"), "key");
    refused(h.del("iiiii", 0, "k"), "query_id");
    refused(h.clear(""), "name");
    refused(h.clear("nnn"), "name");
    refused(h.remove(""), "name");
    refused(h.remove("nnn"), "name");

    CHECK(h.upsert("id", UINT64_MAX, "kkk", "vvvvv").status == Status::ok);
    CHECK(h.upsert("id", 0, std::string("\0\xff", 2), "v").status == Status::ok);
    CHECK(h.partitions("id") == std::vector<std::uint64_t>{0, UINT64_MAX});
    CHECK(keys_of(h.rows("id", 0)) == Keys{std::string("\0\xff", 2)});
}

TEST_CASE("streams: list_rows pages in key byte order with prefix and after, get_rows by keys",
          "[streams][rows][list]") {
    Harness h;
    CHECK(h.reg("q", "h", "id").status == Status::fresh);
    CHECK(h.reg("other", "h", "id2").status == Status::fresh);
    const Keys keys{"a", "a/1", "a/2", "a/3", "b", "b/1", "\x7f", "\xff\x01"};
    for (const auto& key : keys) {
        CHECK(h.upsert("id", 1, key, "v-" + key).status == Status::ok);
    }
    // Neighbours in every direction stay out: other partitions, the other query.
    CHECK(h.upsert("id", 0, "a/0", "v").status == Status::ok);
    CHECK(h.upsert("id", 2, "a/0", "v").status == Status::ok);
    CHECK(h.upsert("id2", 1, "a/0", "v").status == Status::ok);

    CHECK(keys_of(h.rows("id", 1)) == keys);
    CHECK(text(h.rows("id", 1).rows[1].value) == "v-a/1");
    CHECK(keys_of(h.rows("id", 1, "a/")) == Keys{"a/1", "a/2", "a/3"});
    CHECK(keys_of(h.rows("id", 1, "\xff")) == Keys{"\xff\x01"});
    CHECK(h.rows("id", 1, "c").rows.empty());

    const RowPage first = h.rows("id", 1, "", "", 3);
    CHECK(keys_of(first) == Keys{"a", "a/1", "a/2"});
    CHECK(first.next_after == "a/2");
    const RowPage second = h.rows("id", 1, "", first.next_after, 3);
    CHECK(keys_of(second) == Keys{"a/3", "b", "b/1"});
    const RowPage third = h.rows("id", 1, "", second.next_after, 3);
    CHECK(keys_of(third) == Keys{"\x7f", "\xff\x01"});
    CHECK(third.next_after.empty());
    const RowPage exact = h.rows("id", 1, "a/", "", 3);  // full and last: says so
    CHECK(exact.rows.size() == 3);
    CHECK(exact.next_after.empty());
    CHECK(keys_of(h.rows("id", 1, "a/", "a/15")) == Keys{"a/2", "a/3"});
    CHECK(keys_of(h.rows("id", 1, "b", "a")) == Keys{"b", "b/1"});
    CHECK(h.rows("id", 1, "a", "b").rows.empty());
    // Prefixes and afters longer than any stored key are not errors.
    CHECK(h.rows("id", 1, std::string(600, 'a')).rows.empty());
    CHECK(keys_of(h.rows("id", 1, "", "a" + std::string(600, '/'))) ==
          Keys{"a/1", "a/2", "a/3", "b", "b/1", "\x7f", "\xff\x01"});

    // By keys: sorted, each once, missing and unstorable keys left out.
    const auto picked =
        h.rows_of("id", 1, {"b", "a/2", "missing", "b", "", std::string(600, 'x'), "\x7f"});
    CHECK(keys_of(picked) == Keys{"a/2", "b", "\x7f"});
    CHECK(text(picked[0].value) == "v-a/2");
    CHECK(h.rows_of("id", 1, {}).empty());
    CHECK(h.partitions("id") == std::vector<std::uint64_t>{0, 1, 2});
    CHECK(h.count("id") == 10);
    CHECK(h.count("id2") == 1);
}

TEST_CASE("streams: list_queries pages in name order", "[streams][list]") {
    Harness h;
    for (const std::string name : {"c", "a", "b", "bb", "\xff"}) {
        CHECK(h.reg(name, "h", "id-" + name).status == Status::fresh);
    }
    const QueryPage first = h.queries("", 2);
    REQUIRE(first.queries.size() == 2);
    CHECK(first.queries[0].name == "a");
    CHECK(first.queries[1].query_id == "id-b");
    CHECK(first.next_after == "b");
    const QueryPage second = h.queries("b", 3);
    REQUIRE(second.queries.size() == 3);
    CHECK(second.queries[2].name == "\xff");
    CHECK(second.next_after.empty());
    CHECK(h.queries("bb", 1).queries.at(0).name == "c");
    CHECK(h.queries("\xff").queries.empty());
    CHECK(h.queries(std::string(600, 'b')).queries.at(0).name == "c");
}

TEST_CASE("streams: a reset hides the old rows at once, collect removes them in bounded steps",
          "[streams][reset][collect]") {
    Harness h;
    CHECK(h.reg("q", "h1", "id").status == Status::fresh);
    CHECK(h.reg("keep", "h", "id-keep").status == Status::fresh);
    for (int i = 0; i < 10; ++i) {
        CHECK(h.upsert("id", i % 3, "k" + std::to_string(i), "old").status == Status::ok);
    }
    CHECK(h.upsert("id-keep", 0, "k0", "kept").status == Status::ok);
    CHECK_FALSE(h.has_garbage());
    CHECK(h.collect(100).deleted == 0);

    CHECK(h.reg("q", "h2", "id", true).status == Status::reset);
    // Hidden for every read and write, at once, while the records are still there.
    CHECK(h.count("id") == 0);
    CHECK(h.partitions("id").empty());
    CHECK(h.rows("id", 0).rows.empty());
    CHECK(h.rows_of("id", 0, {"k0"}).empty());
    const WriteResult rewritten = h.upsert("id", 0, "k0", "new");
    CHECK_FALSE(rewritten.existed);
    CHECK(h.del("id", 1, "k1").existed == false);
    CHECK(h.table_size(h.tables().rows) == 12);
    CHECK(h.has_garbage());

    // Bounded steps, oldest epoch first; live rows are never touched.
    CollectResult step = h.collect(4);
    CHECK(step.deleted == 4);
    CHECK_FALSE(step.is_complete);
    CHECK(h.has_garbage());
    step = h.collect(0);
    CHECK(step.deleted == 0);
    CHECK_FALSE(step.is_complete);
    step = h.collect(6);  // exactly the rest
    CHECK(step.deleted == 6);
    CHECK(step.is_complete);
    CHECK_FALSE(h.has_garbage());
    CHECK(h.table_size(h.tables().rows) == 2);
    CHECK(h.dump().garbage.empty());
    CHECK(text(h.rows("id", 0).rows.at(0).value) == "new");
    CHECK(text(h.rows("id-keep", 0).rows.at(0).value) == "kept");
    step = h.collect(0);
    CHECK(step.is_complete);

    // A reset of a query without rows leaves no garbage behind.
    CHECK(h.reg("keep", "h-new", "x", true).status == Status::reset);
    CHECK(h.reg("keep", "h-newer", "x", true).status == Status::reset);
    CHECK(h.has_garbage());  // the first reset retired k0
    CHECK(h.collect(10).deleted == 1);
    CHECK(h.query("keep")->epoch == 3);
    CHECK_FALSE(h.has_garbage());
}

TEST_CASE("streams: collect walks several dead epochs across queries in order",
          "[streams][collect]") {
    Harness h;
    CHECK(h.reg("a", "h", "ia").status == Status::fresh);
    CHECK(h.reg("b", "h", "ib").status == Status::fresh);
    for (int i = 0; i < 3; ++i) {
        CHECK(h.upsert("ib", 0, "k" + std::to_string(i), "b1").status == Status::ok);
        CHECK(h.upsert("ia", 0, "k" + std::to_string(i), "a1").status == Status::ok);
    }
    CHECK(h.clear("b").existed);
    CHECK(h.upsert("ib", 0, "k0", "b2").status == Status::ok);
    CHECK(h.clear("b").existed);   // epochs 1 and 2 of b are dead
    CHECK(h.remove("a").existed);  // a and its epoch 1 too
    CHECK_FALSE(h.clear("b").existed);
    CHECK(h.dump().garbage.size() == 3);
    // a (number 1) goes first, then b's epochs in order: 3 + 3 + 1 rows.
    CHECK(h.collect(2).deleted == 2);
    CHECK(h.collect(2).deleted == 2);  // a's last row, b's first
    CHECK(h.dump().garbage.size() == 1 + 1);
    CollectResult rest = h.collect(100);
    CHECK(rest.deleted == 3);
    CHECK(rest.is_complete);
    CHECK(h.dump().rows.empty());
    CHECK(h.dump().garbage.empty());
}

TEST_CASE("streams: ClearState keeps the query and empties it, Remove deletes the query",
          "[streams][clear][remove]") {
    Harness h;
    CHECK(h.reg("q", "h", "id", false, "src", "sink").status == Status::fresh);
    CHECK(h.upsert("id", 0, "k", "v").status == Status::ok);
    h.advance_ms(3);
    const WriteResult cleared = h.clear("q");
    CHECK(cleared.status == Status::ok);
    CHECK(cleared.existed);
    const auto query = h.query("q");
    REQUIRE(query.has_value());
    CHECK(query->epoch == 2);
    CHECK(query->config_hash == "h");
    CHECK(query->updated_at == h.now());
    CHECK(h.count("id") == 0);
    CHECK(h.upsert("id", 0, "k2", "v").status == Status::ok);

    const WriteResult removed = h.remove("q");
    CHECK(removed.status == Status::ok);
    CHECK(removed.existed);
    CHECK_FALSE(h.query("q").has_value());
    CHECK_FALSE(h.query_by_id("id").has_value());
    CHECK(h.upsert("id", 0, "k", "v").status == Status::unknown_query);
    CHECK(h.remove("q").status == Status::unknown_query);

    // Registered again: a new query, a new number and id, none of the old rows.
    const RegisterResult again = h.reg("q", "h", "id-new");
    CHECK(again.status == Status::fresh);
    CHECK(again.query_id == "id-new");
    CHECK(again.epoch == 1);
    CHECK(h.query("q")->number == 2);
    CHECK(h.count("id-new") == 0);
    // The old id is free again (the index entry went with the query).
    CHECK(h.reg("q2", "h", "id").status == Status::fresh);
    CHECK(h.collect(100).deleted == 2);
    CHECK(h.table_size(h.tables().rows) == 0);
}

TEST_CASE("streams: an UndoLog rollback of a mixed entry leaves every table as before",
          "[streams][undo]") {
    Harness h;
    CHECK(h.reg("q", "h1", "id", false, "src", "sink").status == Status::fresh);
    CHECK(h.reg("gone", "h", "id-gone").status == Status::fresh);
    CHECK(h.reg("empty", "h", "id-empty").status == Status::fresh);
    CHECK(h.upsert("id", 0, "change", "old").status == Status::ok);
    CHECK(h.upsert("id", 0, "delete", "v").status == Status::ok);
    CHECK(h.upsert("id-gone", 1, "k", "v").status == Status::ok);
    CHECK(h.reg("dead", "h", "id-dead").status == Status::fresh);
    CHECK(h.upsert("id-dead", 1, "k", "v").status == Status::ok);
    CHECK(h.clear("dead").existed);  // garbage present before the entry
    h.advance_ms(20);
    const auto before = h.dump();
    const auto index_before = h.next_index;

    const auto statuses = h.entry(
        [&](store::WriteTxn& txn, store::UndoLog& undo, LogIndex index) {
            std::vector<Status> out;
            const auto run = [&](const auto& command) {
                out.push_back(must(h.streams->apply(txn, undo, command, index, h.now())).status);
            };
            run(Upsert{"id", 0, "change", bytes("new")});
            run(Upsert{"id", 0, "new", bytes("v")});
            run(Delete{"id", 0, "delete"});
            run(Register{"q", "src2", "", "h1", false, "x"});         // reused
            run(Register{"q", "src", "", "h2", true, "x"});           // reset
            run(Upsert{"id", 0, "after-reset", bytes("v")});          // into the new epoch
            run(Register{"fresh", "s", "", "h", false, "id-fresh"});  // takes a number
            run(Upsert{"id-fresh", 5, "k", bytes("v")});
            run(Remove{"gone"});
            run(ClearState{"empty"});
            run(Register{"gone", "s", "", "h", false, "id-gone-2"});  // the name again
            CHECK(undo.size() > 0);
            CHECK(streams::testing::dump(h.tables(), txn) != before);
            return out;
        },
        /*rollback=*/true);
    CHECK(statuses == std::vector<Status>{Status::ok, Status::ok, Status::ok, Status::reused,
                                          Status::reset, Status::ok, Status::fresh, Status::ok,
                                          Status::ok, Status::ok, Status::fresh});
    CHECK(h.next_index == index_before + 1);
    CHECK(h.dump() == before);
    CHECK(h.query("q")->config_hash == "h1");
    CHECK(text(h.rows("id", 0).rows.at(0).value) == "old");
    // The counter came back too: the next query gets the number the rolled-back one had.
    CHECK(h.reg("fresh", "h", "id-fresh").status == Status::fresh);
    CHECK(h.query("fresh")->number == 5);
}

TEST_CASE("streams: a reopened env holds the same queries, rows, garbage and counter",
          "[streams][reopen]") {
    Harness h;
    CHECK(h.reg("q", "h1", "id", false, "src", "sink").status == Status::fresh);
    CHECK(h.upsert("id", 3, "k", "v").status == Status::ok);
    CHECK(h.reg("q", "h2", "id", true).status == Status::reset);
    CHECK(h.upsert("id", 4, "k2", "v2").status == Status::ok);
    CHECK(h.reg("gone", "h", "id-gone").status == Status::fresh);
    CHECK(h.remove("gone").status == Status::ok);
    const auto dump_before = h.dump();
    const auto query_before = h.query("q");

    h.reopen();
    CHECK(h.dump() == dump_before);
    CHECK(h.query("q") == query_before);
    CHECK(h.query_by_id("id") == query_before);
    CHECK(keys_of(h.rows("id", 4)) == Keys{"k2"});
    CHECK(h.has_garbage());
    // Numbers keep counting after the restart (2 went to "gone").
    CHECK(h.reg("next", "h", "id-next").status == Status::fresh);
    CHECK(h.query("next")->number == 3);
    CHECK(h.collect(10).deleted == 1);
}

TEST_CASE("streams: undecodable records and disagreeing tables are Errc::corruption",
          "[streams][corruption]") {
    Harness h;
    CHECK(h.reg("q", "h", "id").status == Status::fresh);
    CHECK(h.upsert("id", 0, "k", "v").status == Status::ok);
    store::KeyBuilder row;
    detail::row_key(row, 1, 1, 0, "k");
    {
        auto txn = must(h.env->begin_write());
        must(txn.put(h.tables().rows, row.span(), bytes("\x02garbage")));
        must(txn.commit());
    }
    {
        auto txn = must(h.env->begin_read());
        CHECK(
            must_fail(list_rows(h.tables(), txn, "id", 0, "", "", 10)).is(queen::Errc::corruption));
        CHECK(must_fail(get_rows(h.tables(), txn, "id", 0, Keys{"k"})).is(queen::Errc::corruption));
    }
    {
        // The id index names a query that is not there.
        auto txn = must(h.env->begin_write());
        CHECK(must(txn.del(h.tables().queries, as_bytes("q"))));
        CHECK(must_fail(find_query_by_id(h.tables(), txn, "id")).is(queen::Errc::corruption));
        store::UndoLog undo;
        CHECK(must_fail(h.streams->apply(txn, undo, Upsert{"id", 0, "k", bytes("v")}, LogIndex{100},
                                         h.now()))
                  .is(queen::Errc::corruption));
    }
    {
        auto txn = must(h.env->begin_write());
        must(txn.put(h.tables().queries, as_bytes("q"), bytes("\x01")));
        CHECK(must_fail(find_query(h.tables(), txn, "q")).is(queen::Errc::corruption));
        CHECK(must_fail(list_queries(h.tables(), txn, "", 10)).is(queen::Errc::corruption));
    }
    {
        auto txn = must(h.env->begin_write());
        must(txn.put(h.tables().garbage, as_bytes("short"), {}));
        CHECK(must_fail(h.streams->collect(txn, 10)).is(queen::Errc::corruption));
    }
    {
        auto txn = must(h.env->begin_write());
        must(txn.put(h.tables().meta, as_bytes(detail::next_number_key), bytes("x")));
        store::UndoLog undo;
        CHECK(must_fail(h.streams->apply(txn, undo, Register{"new", "s", "", "h", false, "n"},
                                         LogIndex{100}, h.now()))
                  .is(queen::Errc::corruption));
    }
}

}  // namespace
}  // namespace queen::streams
