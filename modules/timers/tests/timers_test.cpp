// timers/tests/timers_test.cpp — TimerState: every behaviour of timers.hpp (set, cancel, fire,
// cadence, end_at, limits, queries, undo, reopen, corruption).
#include "queen/timers/timers.hpp"

#include <limits>
#include <string>
#include <vector>

#include "harness.hpp"
#include "records.hpp"

namespace queen::timers {
namespace {

using testing::bytes;
using testing::describe;
using testing::Harness;
using testing::make_set;
using testing::must;
using testing::must_fail;
using testing::text;
using Names = std::vector<std::string>;

std::vector<std::string> ids_of(const std::vector<Timer>& timers) {
    std::vector<std::string> out;
    for (const Timer& timer : timers) {
        out.push_back(timer.id);
    }
    return out;
}

TEST_CASE("timers: Options::validate bounds every limit", "[timers][options]") {
    CHECK(Options{}.validate().has_value());
    Options options;
    options.id_bytes_max = 503;  // 8 bytes of due time + 503 = LMDB's 511-byte key
    CHECK(options.validate().has_value());
    options.id_bytes_max = 504;
    CHECK(must_fail(options.validate()).is(queen::Errc::invalid_argument));
    options.id_bytes_max = 0;
    CHECK(must_fail(options.validate()).is(queen::Errc::invalid_argument));
    options = {};
    options.interval_ms_min = 0;
    CHECK(must_fail(options.validate()).is(queen::Errc::invalid_argument));
    options = {};
    options.list_limit_max = 0;
    CHECK(must_fail(options.validate()).is(queen::Errc::invalid_argument));
    options = {};
    options.payload_bytes_max = (std::size_t{1} << 30) + 1;
    CHECK(must_fail(options.validate()).is(queen::Errc::invalid_argument));

    queen::testing::TempDir dir;
    auto env = must(store::Env::open(dir.path(), store::Options{}));
    options = {};
    options.interval_ms_min = -1;
    CHECK(must_fail(TimerState::open(env, options)).is(queen::Errc::invalid_argument));
}

TEST_CASE("timers: set stores the timer and get, list, list_due, count and next_due see it",
          "[timers][set]") {
    Harness h;
    CHECK(h.count() == 0);
    CHECK_FALSE(h.next_due().has_value());
    h.now_ms = 500;
    const auto set = h.set(make_set("b", 2000, 100, 5000, "hello"));
    CHECK(set.status == Status::ok);
    CHECK_FALSE(set.replaced);
    CHECK(set.timer.id == "b");
    CHECK(set.timer.due_at == TimestampMs{2000});
    CHECK(set.timer.interval_ms == 100);
    CHECK(set.timer.end_at == TimestampMs{5000});
    CHECK(set.timer.fired == 0);
    CHECK(set.timer.created_at == TimestampMs{500});
    CHECK(text(set.timer.payload) == "hello");
    CHECK(h.set(make_set("a", 3000)).status == Status::ok);

    const auto got = h.get("b");
    REQUIRE(got.has_value());
    CHECK(got->due_at == TimestampMs{2000});
    CHECK(got->interval_ms == 100);
    CHECK(got->end_at == TimestampMs{5000});
    CHECK(got->created_at == TimestampMs{500});
    CHECK(text(got->payload) == "hello");
    CHECK_FALSE(h.get("c").has_value());
    CHECK_FALSE(h.get("").has_value());
    CHECK_FALSE(h.get(std::string(600, 'x')).has_value());  // longer than any LMDB key
    CHECK(h.count() == 2);
    CHECK(h.next_due() == 2000);
    CHECK(ids_of(h.list()) == Names{"a", "b"});
    CHECK(ids_of(h.list_due()) == Names{"b", "a"});
    CHECK(text(h.list_due().at(0).payload) == "hello");
    CHECK(h.list_due(10, false).at(0).payload.empty());
    CHECK(h.list_due(10, false).at(0).due_at == TimestampMs{2000});
    CHECK(h.list("", 10, false).at(1).payload.empty());
    CHECK(h.list("", 10, false).at(1).interval_ms == 100);
    // Both tables hold one entry per timer.
    const auto dump = h.dump();
    CHECK(dump.at("timers.timers").size() == 2);
    CHECK(dump.at("timers.due").size() == 2);
}

TEST_CASE("timers: set refuses what is outside Options and writes nothing", "[timers][limits]") {
    Options options;
    options.id_bytes_max = 8;
    options.payload_bytes_max = 4;
    options.interval_ms_min = 50;
    Harness h(options);
    CHECK(h.set(make_set("kept", 10'000)).status == Status::ok);
    const auto before = h.dump();
    struct Case {
        const char* name;
        Set command;
        const char* field;
    };
    const std::vector<Case> cases = {
        {"empty id", make_set("", 2000), "id"},
        {"id too long", make_set("123456789", 2000), "id"},
        {"payload too large", make_set("a", 2000, 0, 0, "12345"), "payload"},
        {"due_at 0", make_set("a", 0), "due_at"},
        {"due_at negative", make_set("a", -5), "due_at"},
        {"interval under the minimum", make_set("a", 2000, 49), "interval_ms"},
        {"interval negative", make_set("a", 2000, -100), "interval_ms"},
        {"end_at before due_at", make_set("a", 2000, 100, 1999), "end_at"},
        {"end_at negative", make_set("a", 2000, 100, -1), "end_at"},
        {"replace with a bad interval", make_set("kept", 2000, 1), "interval_ms"},
    };
    for (auto c : cases) {
        INFO(c.name);
        if (std::string(c.name).starts_with("replace")) {
            c.command.replace = true;
        }
        auto txn = must(h.env->begin_write());
        store::UndoLog undo;
        const auto result = must(h.state->apply(txn, undo, c.command, TimestampMs{h.now_ms}));
        CHECK(result.status == Status::invalid);
        CHECK(result.message.starts_with(c.field));
        CHECK(undo.empty());
        CHECK(testing::dump_tables(h.state->tables(), txn) == before);
    }
    // The bounds themselves are accepted.
    CHECK(h.set(make_set("12345678", 2000, 50, 2000, "1234")).status == Status::ok);
    CHECK(h.set(make_set(std::string("a\0b", 3), 2000)).status == Status::ok);  // any bytes
    CHECK(h.get(std::string("a\0b", 3)).has_value());
    Harness cancel_h(options);
    CHECK(cancel_h.cancel("").status == Status::invalid);
    CHECK(cancel_h.cancel("123456789").status == Status::invalid);
}

TEST_CASE("timers: set of an existing id keeps it unless replace", "[timers][set]") {
    Harness h;
    h.now_ms = 100;
    REQUIRE(h.set(make_set("t", 1000, 100, 0, "first")).status == Status::ok);
    h.now_ms = 1000;
    REQUIRE(h.fire().firings.size() == 1);  // fired = 1, due 1100
    const auto before = h.dump();

    SECTION("without replace: exists, the existing timer without its payload, nothing written") {
        h.now_ms = 1050;
        auto txn = must(h.env->begin_write());
        store::UndoLog undo;
        const auto result =
            must(h.state->apply(txn, undo, make_set("t", 5000, 0, 0, "second"), TimestampMs{1050}));
        CHECK(result.status == Status::exists);
        CHECK_FALSE(result.replaced);
        CHECK(result.timer.id == "t");
        CHECK(result.timer.due_at == TimestampMs{1100});
        CHECK(result.timer.interval_ms == 100);
        CHECK(result.timer.fired == 1);
        CHECK(result.timer.created_at == TimestampMs{100});
        CHECK(result.timer.payload.empty());
        CHECK(undo.empty());
        CHECK(testing::dump_tables(h.state->tables(), txn) == before);
    }
    SECTION("with replace: the old due key goes, the record is new, fired restarts at 0") {
        h.now_ms = 1050;
        auto command = make_set("t", 5000, 0, 0, "second");
        command.replace = true;
        const auto result = h.set(command);
        CHECK(result.status == Status::ok);
        CHECK(result.replaced);
        CHECK(result.timer.due_at == TimestampMs{5000});
        CHECK(result.timer.fired == 0);
        CHECK(result.timer.created_at == TimestampMs{1050});
        CHECK(text(result.timer.payload) == "second");
        const auto dump = h.dump();
        CHECK(dump.at("timers.due").size() == 1);  // the key at 1100 is gone
        CHECK(h.next_due() == 5000);
        const auto got = h.get("t");
        REQUIRE(got.has_value());
        CHECK(got->interval_ms == 0);
        CHECK(got->fired == 0);
        CHECK(text(got->payload) == "second");
        h.now_ms = 4999;
        CHECK(h.fire().firings.empty());
        h.now_ms = 5000;
        CHECK(describe(h.fire()) == Names{"t@5000#1!"});
    }
    SECTION("replace of an id that does not exist is a plain set") {
        auto command = make_set("new", 2000);
        command.replace = true;
        const auto result = h.set(command);
        CHECK(result.status == Status::ok);
        CHECK_FALSE(result.replaced);
        CHECK(h.count() == 2);
    }
}

TEST_CASE("timers: cancel deletes the record and its due key, or answers not_found",
          "[timers][cancel]") {
    Harness h;
    REQUIRE(h.set(make_set("a", 2000)).status == Status::ok);
    REQUIRE(h.set(make_set("b", 1500, 100)).status == Status::ok);
    const auto cancelled = h.cancel("b");
    CHECK(cancelled.status == Status::ok);
    CHECK_FALSE(h.get("b").has_value());
    CHECK(h.count() == 1);
    CHECK(h.next_due() == 2000);
    const auto dump = h.dump();
    CHECK(dump.at("timers.timers").size() == 1);
    CHECK(dump.at("timers.due").size() == 1);
    CHECK(h.cancel("b").status == Status::not_found);
    CHECK(h.cancel("zzz").status == Status::not_found);
    h.now_ms = 10'000;
    CHECK(describe(h.fire()) == Names{"a@2000#1!"});   // the cancelled timer never fires
    CHECK(h.cancel("a").status == Status::not_found);  // fired and gone
}

TEST_CASE("timers: a one-shot timer fires at its due time, never before, then is gone",
          "[timers][fire]") {
    Harness h;
    REQUIRE(h.set(make_set("once", 2000, 0, 0, "deliver me")).status == Status::ok);
    h.now_ms = 1999;
    const auto early = h.fire();
    CHECK(early.firings.empty());
    CHECK(early.is_complete);
    CHECK(h.get("once").has_value());
    h.now_ms = 2000;  // exactly due
    const auto fired = h.fire();
    REQUIRE(fired.firings.size() == 1);
    const Firing& firing = fired.firings[0];
    CHECK(firing.id == "once");
    CHECK(firing.due_at == TimestampMs{2000});
    CHECK(firing.sequence == 1);
    CHECK(firing.is_last);
    CHECK(text(firing.payload) == "deliver me");
    CHECK(fired.is_complete);
    CHECK_FALSE(h.get("once").has_value());
    CHECK_FALSE(h.next_due().has_value());
    CHECK(h.count() == 0);
    h.now_ms = 1'000'000;
    CHECK(h.fire().firings.empty());
}

TEST_CASE("timers: a due time at or before now when set fires at the next fire()",
          "[timers][fire]") {
    Harness h;
    h.now_ms = 5000;
    REQUIRE(h.set(make_set("late", 10)).status == Status::ok);
    CHECK(h.next_due() == 10);
    CHECK(describe(h.fire()) == Names{"late@10#1!"});
}

TEST_CASE("timers: a repeating timer keeps its cadence and fires once for missed slots",
          "[timers][fire]") {
    Harness h;
    REQUIRE(h.set(make_set("r", 1000, 100)).status == Status::ok);
    h.now_ms = 1000;
    CHECK(describe(h.fire()) == Names{"r@1000#1"});
    CHECK(h.next_due() == 1100);
    h.now_ms = 1099;
    CHECK(h.fire().firings.empty());
    // Late by 250 ms: slots 1100, 1200 and 1300 have passed. One firing, for the stored (first
    // missed) due time; the next due time is the first slot after now, on the grid.
    h.now_ms = 1350;
    CHECK(describe(h.fire()) == Names{"r@1100#2"});
    CHECK(h.next_due() == 1400);
    CHECK(h.get("r")->fired == 2);
    h.now_ms = 1399;
    CHECK(h.fire().firings.empty());
    // now exactly on a later slot: 1400 and 1500 both passed, next is 1600 (after now).
    h.now_ms = 1500;
    CHECK(describe(h.fire()) == Names{"r@1400#3"});
    CHECK(h.next_due() == 1600);
    h.now_ms = 1600;
    CHECK(describe(h.fire()) == Names{"r@1600#4"});
    CHECK(h.next_due() == 1700);
    CHECK(h.count() == 1);
}

TEST_CASE(
    "timers: a repeating timer whose next due time passes end_at is deleted after its "
    "last firing",
    "[timers][fire]") {
    Harness h;
    SECTION("end_at between slots") {
        REQUIRE(h.set(make_set("r", 1000, 100, 1250)).status == Status::ok);
        h.now_ms = 1000;
        CHECK(describe(h.fire()) == Names{"r@1000#1"});
        h.now_ms = 1100;
        CHECK(describe(h.fire()) == Names{"r@1100#2"});
        h.now_ms = 1200;
        CHECK(describe(h.fire()) == Names{"r@1200#3!"});  // 1300 > 1250
        CHECK_FALSE(h.get("r").has_value());
        CHECK_FALSE(h.next_due().has_value());
    }
    SECTION("end_at on a slot: that slot still fires") {
        REQUIRE(h.set(make_set("r", 1000, 100, 1200)).status == Status::ok);
        h.now_ms = 1100;
        CHECK(describe(h.fire()) == Names{"r@1000#1"});  // next 1200 <= end_at
        h.now_ms = 1200;
        CHECK(describe(h.fire()) == Names{"r@1200#2!"});
    }
    SECTION("end_at == due_at: one firing") {
        REQUIRE(h.set(make_set("r", 1000, 100, 1000)).status == Status::ok);
        h.now_ms = 1000;
        CHECK(describe(h.fire()) == Names{"r@1000#1!"});
    }
    SECTION("late past end_at: one firing, the last") {
        REQUIRE(h.set(make_set("r", 1000, 100, 1500)).status == Status::ok);
        h.now_ms = 9000;
        CHECK(describe(h.fire()) == Names{"r@1000#1!"});
        CHECK(h.count() == 0);
    }
}

TEST_CASE("timers: a next due time past the int64 range ends the timer", "[timers][fire]") {
    Harness h;
    const std::int64_t max = std::numeric_limits<std::int64_t>::max();
    REQUIRE(h.set(make_set("edge", max - 5, 10)).status == Status::ok);
    REQUIRE(h.set(make_set("fits", max - 30, 10)).status == Status::ok);
    h.now_ms = max - 5;
    // fits: max - 30 + 3 * 10 = max, the largest time there is; edge: max + 5 does not fit.
    CHECK(describe(h.fire()) == Names{"fits@" + std::to_string(max - 30) + "#1",
                                      "edge@" + std::to_string(max - 5) + "#1!"});
    CHECK(h.next_due() == max);
    CHECK(h.count() == 1);
}

TEST_CASE("timers: fire returns due timers in due order, ties in id order", "[timers][fire]") {
    Harness h;
    REQUIRE(h.set(make_set("c", 2000)).status == Status::ok);
    REQUIRE(h.set(make_set("b", 1000)).status == Status::ok);
    REQUIRE(h.set(make_set("ab", 2000)).status == Status::ok);
    REQUIRE(h.set(make_set("a", 2000)).status == Status::ok);
    REQUIRE(h.set(make_set("z", 3000)).status == Status::ok);
    h.now_ms = 2500;
    CHECK(describe(h.fire()) == Names{"b@1000#1!", "a@2000#1!", "ab@2000#1!", "c@2000#1!"});
    CHECK(h.next_due() == 3000);
}

TEST_CASE("timers: the limit stops fire and is_complete says whether more are due",
          "[timers][fire][limits]") {
    Harness h;
    for (int i = 0; i < 5; ++i) {
        REQUIRE(h.set(make_set("t" + std::to_string(i), 1000 + i)).status == Status::ok);
    }
    REQUIRE(h.set(make_set("later", 9000)).status == Status::ok);
    h.now_ms = 2000;
    const auto none = h.fire(0);
    CHECK(none.firings.empty());
    CHECK_FALSE(none.is_complete);
    const auto first = h.fire(2);
    CHECK(describe(first) == Names{"t0@1000#1!", "t1@1001#1!"});
    CHECK_FALSE(first.is_complete);
    const auto rest = h.fire(3);  // exactly what is left: complete
    CHECK(describe(rest) == Names{"t2@1002#1!", "t3@1003#1!", "t4@1004#1!"});
    CHECK(rest.is_complete);
    const auto empty = h.fire(0);
    CHECK(empty.firings.empty());
    CHECK(empty.is_complete);  // nothing due
    CHECK(h.next_due() == 9000);
}

TEST_CASE("timers: one fire() never fires a timer twice, whatever the limit and the lateness",
          "[timers][fire]") {
    Harness h;
    // Repeating timers far behind: each would have many slots before now.
    for (int i = 0; i < 20; ++i) {
        REQUIRE(h.set(make_set("r" + std::to_string(100 + i), 1000 + i, 10)).status == Status::ok);
    }
    h.now_ms = 1'000'000;
    const auto all = h.fire(1000);
    CHECK(all.is_complete);
    REQUIRE(all.firings.size() == 20);
    for (std::size_t i = 0; i < all.firings.size(); ++i) {
        CHECK(all.firings[i].id == "r" + std::to_string(100 + i));
        CHECK(all.firings[i].sequence == 1);
        CHECK_FALSE(all.firings[i].is_last);
    }
    // Every timer moved past now, on its own grid (1000 + i + k * 10).
    for (const Timer& timer : h.list()) {
        CHECK(timer.due_at.value() > h.now_ms);
        CHECK(timer.due_at.value() - 10 <= h.now_ms);
        CHECK((timer.due_at.value() - (1000 + std::stoi(timer.id.substr(1)) - 100)) % 10 == 0);
    }
    CHECK(h.fire(1000).firings.empty());  // same now: nothing is due again
    // With a limit of 1 on a timer whose rescheduled key sorts right after it.
    Harness one;
    REQUIRE(one.set(make_set("x", 1000, 10)).status == Status::ok);
    one.now_ms = 1000;
    const auto single = one.fire(1);
    CHECK(describe(single) == Names{"x@1000#1"});
    CHECK(single.is_complete);
}

TEST_CASE("timers: list pages in id order after `after`", "[timers][queries]") {
    Harness h;
    const std::vector<std::string> ids = {"a", std::string("a\0", 2), "ab", "b", "ba", "c"};
    for (std::size_t i = 0; i < ids.size(); ++i) {
        REQUIRE(h.set(make_set(ids[i], 5000 - static_cast<std::int64_t>(i))).status == Status::ok);
    }
    CHECK(ids_of(h.list()) == ids);
    CHECK(ids_of(h.list("", 2)) == Names{"a", std::string("a\0", 2)});
    CHECK(ids_of(h.list("a", 2)) == Names{std::string("a\0", 2), "ab"});
    CHECK(ids_of(h.list("aa", 10)) == Names{"ab", "b", "ba", "c"});  // not a stored id
    CHECK(ids_of(h.list("c", 10)).empty());
    CHECK(ids_of(h.list("a", 0)).empty());
    CHECK(ids_of(h.list(std::string(600, 'a'), 10)) == Names{"ab", "b", "ba", "c"});
    CHECK(ids_of(h.list(std::string(600, 'b'), 10)) == Names{"c"});
    // Paging through with the last id of each page visits every timer once.
    std::vector<std::string> paged;
    std::string after;
    for (;;) {
        const auto page = h.list(after, 4);
        for (const Timer& timer : page) {
            paged.push_back(timer.id);
        }
        if (page.size() < 4) {
            break;
        }
        after = page.back().id;
    }
    CHECK(paged == ids);
    CHECK(ids_of(h.list_due(3)) == Names{"c", "ba", "b"});
    CHECK(h.list_due(0).empty());
}

TEST_CASE("timers: undo rollback leaves no trace of sets, replaces and cancels", "[timers][undo]") {
    Harness h;
    REQUIRE(h.set(make_set("keep", 1000, 100)).status == Status::ok);
    REQUIRE(h.set(make_set("gone", 3000)).status == Status::ok);
    REQUIRE(h.set(make_set("swap", 4000, 0, 0, "old")).status == Status::ok);
    const auto before = h.dump();
    auto txn = must(h.env->begin_write());
    store::UndoLog undo;
    const TimestampMs now{1500};
    CHECK(must(h.state->apply(txn, undo, make_set("new", 2000), now)).status == Status::ok);
    auto replace = make_set("swap", 500, 20, 0, "new");
    replace.replace = true;
    CHECK(must(h.state->apply(txn, undo, replace, now)).replaced);
    CHECK(must(h.state->apply(txn, undo, Cancel{"gone"}, now)).status == Status::ok);
    CHECK(must(h.state->apply(txn, undo, Cancel{"keep"}, now)).status == Status::ok);
    // Refusals record nothing.
    const std::size_t recorded = undo.size();
    CHECK(must(h.state->apply(txn, undo, make_set("new", 9000), now)).status == Status::exists);
    CHECK(must(h.state->apply(txn, undo, Cancel{"nope"}, now)).status == Status::not_found);
    CHECK(must(h.state->apply(txn, undo, make_set("", 9000), now)).status == Status::invalid);
    CHECK(undo.size() == recorded);
    CHECK(testing::dump_tables(h.state->tables(), txn) != before);
    must(undo.rollback(txn));
    CHECK(testing::dump_tables(h.state->tables(), txn) == before);
    must(txn.commit());
    CHECK(h.dump() == before);
    CHECK(h.next_due() == 1000);
    CHECK(text(h.get("swap")->payload) == "old");
}

TEST_CASE("timers: the state survives closing and reopening the environment", "[timers][reopen]") {
    Harness h;
    REQUIRE(h.set(make_set("once", 3000, 0, 0, "x")).status == Status::ok);
    REQUIRE(h.set(make_set("rep", 1000, 250, 2600, "y")).status == Status::ok);
    REQUIRE(h.set(make_set("old", 1200)).status == Status::ok);
    h.now_ms = 1300;
    REQUIRE(describe(h.fire()) == Names{"rep@1000#1", "old@1200#1!"});
    const auto before = h.dump();
    const auto listed = h.list();
    h.reopen();
    CHECK(h.dump() == before);
    CHECK(h.count() == 2);
    CHECK(h.next_due() == 1500);
    REQUIRE(h.list().size() == listed.size());
    CHECK(h.get("rep")->fired == 1);
    h.now_ms = 3000;
    CHECK(describe(h.fire()) == Names{"rep@1500#2!", "once@3000#1!"});  // 3250 > 2600
    CHECK(h.count() == 0);
}

TEST_CASE("timers: a record or key that does not decode is Errc::corruption, never a crash",
          "[timers][corruption]") {
    Harness h;
    REQUIRE(h.set(make_set("good", 1000)).status == Status::ok);
    const auto tables = h.state->tables();
    SECTION("a garbage record") {
        auto txn = must(h.env->begin_write());
        must(txn.put(tables.timers, as_bytes("good"), as_bytes("\x07garbage")));
        CHECK(must_fail(timers::get(tables, txn, "good")).is(queen::Errc::corruption));
        CHECK(must_fail(timers::list(tables, txn, "", 10, true)).is(queen::Errc::corruption));
        CHECK(must_fail(timers::list_due(tables, txn, 10, false)).is(queen::Errc::corruption));
        store::UndoLog undo;
        CHECK(must_fail(h.state->apply(txn, undo, make_set("good", 5), TimestampMs{1}))
                  .is(queen::Errc::corruption));
        CHECK(must_fail(h.state->fire(txn, TimestampMs{5000}, 10)).is(queen::Errc::corruption));
    }
    SECTION("a truncated record (format byte right, fields cut)") {
        auto txn = must(h.env->begin_write());
        const ByteSpan stored = must(txn.get(tables.timers, as_bytes("good"))).value();
        const Bytes value(stored.begin(), stored.end() - 1);
        must(txn.put(tables.timers, as_bytes("good"), value));
        CHECK(must_fail(timers::get(tables, txn, "good")).is(queen::Errc::corruption));
    }
    SECTION("a due key without its timer") {
        auto txn = must(h.env->begin_write());
        store::KeyBuilder key;
        detail::due_key(key, TimestampMs{900}, "orphan");
        must(txn.put(tables.due, key.span(), ByteSpan{}));
        CHECK(must_fail(timers::list_due(tables, txn, 10, true)).is(queen::Errc::corruption));
        CHECK(must_fail(h.state->fire(txn, TimestampMs{5000}, 10)).is(queen::Errc::corruption));
    }
    SECTION("a due key that disagrees with its timer's due_at") {
        auto txn = must(h.env->begin_write());
        store::KeyBuilder key;
        detail::due_key(key, TimestampMs{1000}, "good");
        CHECK(must(txn.del(tables.due, key.span())));
        detail::due_key(key, TimestampMs{900}, "good");
        must(txn.put(tables.due, key.span(), ByteSpan{}));
        CHECK(must_fail(h.state->fire(txn, TimestampMs{5000}, 10)).is(queen::Errc::corruption));
        store::UndoLog undo;
        CHECK(must_fail(h.state->apply(txn, undo, Cancel{"good"}, TimestampMs{1}))
                  .is(queen::Errc::corruption));
    }
    SECTION("a due key too short to hold a time and an id") {
        auto txn = must(h.env->begin_write());
        must(txn.put(tables.due, as_bytes("\x01"), ByteSpan{}));
        CHECK(must_fail(h.state->next_due(txn)).is(queen::Errc::corruption));
        CHECK(must_fail(h.state->fire(txn, TimestampMs{5000}, 10)).is(queen::Errc::corruption));
    }
}

TEST_CASE("timers: the record codec round-trips, with or without the payload",
          "[timers][records]") {
    detail::TimerRecord record;
    record.due_at = TimestampMs{std::numeric_limits<std::int64_t>::max()};
    record.interval_ms = 10;
    record.end_at = TimestampMs{0};
    record.fired = std::numeric_limits<std::uint64_t>::max();
    record.created_at = TimestampMs{-1};
    record.payload = bytes(std::string(300, 'p'));
    Bytes value;
    detail::encode_into(value, record);
    CHECK(value.at(0) == detail::record_format_version);
    const auto full = must(detail::decode_record(value, "id", true));
    CHECK(full.due_at == record.due_at);
    CHECK(full.interval_ms == record.interval_ms);
    CHECK(full.fired == record.fired);
    CHECK(full.created_at == record.created_at);
    CHECK(full.payload == record.payload);
    const auto head = must(detail::decode_record(value, "id", false));
    CHECK(head.due_at == record.due_at);
    CHECK(head.fired == record.fired);
    CHECK(head.payload.empty());
    value.push_back(0);  // a trailing byte
    CHECK(must_fail(detail::decode_record(value, "id", false)).is(queen::Errc::corruption));
    CHECK(must_fail(detail::decode_record({}, "id", true)).is(queen::Errc::corruption));
}

}  // namespace
}  // namespace queen::timers
