// locks/tests/locks_test.cpp — LockState: every behaviour of locks.hpp (acquire, renew, release,
// guards, expiry, queries, limits, undo rollback, reopen, corruption).
#include "queen/locks/locks.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "harness.hpp"
#include "queen/store/keys.hpp"
#include "records.hpp"

namespace queen::locks::testing {
namespace {

constexpr std::int64_t t0 = 1'700'000'000'000;

TEST_CASE("locks: Options::validate refuses limits outside their ranges", "[locks][options]") {
    CHECK(Options{}.validate().has_value());
    const auto refused = [](Options options) {
        const auto error = must_fail(options.validate());
        CHECK(error.is(queen::Errc::invalid_argument));
        return error.message();
    };
    Options options;
    options.name_bytes_max = 0;
    CHECK(refused(options).find("name_bytes_max") != std::string::npos);
    options.name_bytes_max = 504;  // the expiry key (8 + name bytes) would pass 511
    refused(options);
    options.name_bytes_max = 503;
    CHECK(options.validate().has_value());

    options = {};
    options.owner_bytes_max = 0;
    CHECK(refused(options).find("owner_bytes_max") != std::string::npos);
    options = {};
    options.ttl_ms_min = 0;
    CHECK(refused(options).find("ttl_ms_min") != std::string::npos);
    options = {};
    options.ttl_ms_min = 10;
    options.ttl_ms_max = 9;
    CHECK(refused(options).find("ttl_ms_max") != std::string::npos);
    options.ttl_ms_max = 10;
    CHECK(options.validate().has_value());
    options = {};
    options.list_limit_max = 0;
    CHECK(refused(options).find("list_limit_max") != std::string::npos);

    // open() refuses them too, before touching the env.
    queen::testing::TempDir dir;
    auto env = must(store::Env::open(dir.path(), store::Options{}));
    Options bad;
    bad.ttl_ms_min = -1;
    CHECK(must_fail(LockState::open(env, bad)).is(queen::Errc::invalid_argument));
    CHECK(must(env.table_names()).empty());
}

TEST_CASE("locks: acquire grants a free lock, the token is the entry's log index",
          "[locks][acquire]") {
    Harness h;
    h.next_index = 42;
    CHECK(h.next_expiry() == std::nullopt);
    const auto result = h.acquire("jobs/1", "worker-a", 5000);
    CHECK(result.status == Status::ok);
    CHECK(result.message.empty());
    const Grant expected{"jobs/1", "worker-a", FencingToken{42}, TimestampMs{t0},
                         TimestampMs{t0 + 5000}};
    CHECK(result.grant == expected);
    CHECK(h.get("jobs/1") == expected);
    CHECK(h.get("jobs/2") == std::nullopt);
    REQUIRE(h.list().size() == 1);
    CHECK(h.list()[0] == expected);
    CHECK(h.next_expiry() == TimestampMs{t0 + 5000});
    CHECK(h.dump_all().size() == 2);  // one grant record, one expiry entry
}

TEST_CASE("locks: acquire of a lock another owner holds answers held and writes nothing",
          "[locks][acquire]") {
    Harness h;
    const auto first = h.acquire("db", "a");
    h.now_ms += 999;
    const auto before = h.dump_all();
    const auto second = h.acquire("db", "b", 60'000);
    CHECK(second.status == Status::held);
    CHECK(second.grant == first.grant);
    CHECK_FALSE(second.message.empty());
    CHECK(h.dump_all() == before);
    CHECK(h.get("db") == first.grant);
}

TEST_CASE("locks: acquire by the holder renews: same token, same acquired_at, new expiry",
          "[locks][acquire]") {
    Harness h;
    const auto first = h.acquire("db", "a", 1000);
    h.now_ms += 600;
    const auto again = h.acquire("db", "a", 3000);
    CHECK(again.status == Status::ok);
    CHECK(again.grant.token == first.grant.token);
    CHECK(again.grant.acquired_at == TimestampMs{t0});
    CHECK(again.grant.expires_at == TimestampMs{t0 + 600 + 3000});
    CHECK(h.next_expiry() == TimestampMs{t0 + 3600});
    CHECK(h.dump_all().size() == 2);  // the old expiry entry is gone

    // A shorter TTL shortens the grant.
    const auto shorter = h.acquire("db", "a", 10);
    CHECK(shorter.status == Status::ok);
    CHECK(shorter.grant.expires_at == TimestampMs{t0 + 610});
    CHECK(h.next_expiry() == TimestampMs{t0 + 610});

    // An atomic entry may acquire a lock twice: the second one renews (index == token).
    const LogIndex index{h.next_index++};
    const auto granted = h.acquire_at(index, "twice", "a");
    const auto renewed = h.acquire_at(index, "twice", "a", 2000);
    CHECK(renewed.status == Status::ok);
    CHECK(renewed.grant.token == granted.grant.token);
    CHECK(h.acquire_at(index, "twice", "b").status == Status::held);
}

TEST_CASE("locks: a grant is over at exactly expires_at", "[locks][expiry]") {
    Harness h;
    const auto first = h.acquire("db", "a", 100);
    const FencingToken token = first.grant.token;

    h.now_ms = t0 + 99;  // the last instant of the grant
    CHECK(h.get("db") == first.grant);
    CHECK(h.list().size() == 1);
    CHECK(h.guard("db", token).status == Status::ok);
    CHECK(h.acquire("db", "b").status == Status::held);
    CHECK(h.expire().freed.empty());

    h.now_ms = t0 + 100;  // expires_at == now: over
    CHECK(h.get("db") == std::nullopt);
    CHECK(h.list().empty());
    const auto guard = h.guard("db", token);
    CHECK(guard.status == Status::stale_token);
    CHECK(guard.grant.token == FencingToken{0});
    CHECK(guard.grant.name == "db");
    const auto before = h.dump_all();
    CHECK(h.renew("db", token).status == Status::stale_token);
    CHECK(h.release("db", token).status == Status::stale_token);
    CHECK(h.dump_all() == before);  // refusals write nothing; the record waits for expire()

    // The same owner gets a new grant (not a renewal): a larger token, a new acquired_at.
    const auto second = h.acquire("db", "a", 100);
    CHECK(second.status == Status::ok);
    CHECK(second.grant.token > token);
    CHECK(second.grant.acquired_at == TimestampMs{t0 + 100});
    CHECK(h.dump_all().size() == 2);  // the expired record and its expiry entry were replaced
    CHECK(h.next_expiry() == TimestampMs{t0 + 200});

    // Another owner takes an expired lock the same way.
    h.now_ms = t0 + 200;
    const auto third = h.acquire("db", "b", 100);
    CHECK(third.status == Status::ok);
    CHECK(third.grant.owner == "b");
    CHECK(third.grant.token > second.grant.token);
}

TEST_CASE("locks: renew extends a current grant and refuses any other token", "[locks][renew]") {
    Harness h;
    const auto first = h.acquire("db", "a", 1000);
    const FencingToken token = first.grant.token;
    h.now_ms += 500;
    const auto renewed = h.renew("db", token, 2000);
    CHECK(renewed.status == Status::ok);
    CHECK(renewed.grant == Grant{"db", "a", token, TimestampMs{t0}, TimestampMs{t0 + 2500}});
    CHECK(h.get("db") == renewed.grant);
    CHECK(h.next_expiry() == TimestampMs{t0 + 2500});
    CHECK(h.dump_all().size() == 2);

    // A wrong token: stale, with the current grant.
    const auto before = h.dump_all();
    const auto wrong = h.renew("db", FencingToken{token.value() + 1});
    CHECK(wrong.status == Status::stale_token);
    CHECK(wrong.grant == renewed.grant);
    CHECK_FALSE(wrong.message.empty());
    CHECK(h.dump_all() == before);

    // A free lock: stale, token 0.
    const auto free = h.renew("nothing", FencingToken{1});
    CHECK(free.status == Status::stale_token);
    CHECK(free.grant == Grant{"nothing", "", FencingToken{0}, TimestampMs{0}, TimestampMs{0}});

    // The token of an earlier grant of the lock: stale, with the new grant.
    CHECK(h.release("db", token).status == Status::ok);
    const auto next = h.acquire("db", "a");
    const auto old = h.renew("db", token);
    CHECK(old.status == Status::stale_token);
    CHECK(old.grant == next.grant);
}

TEST_CASE("locks: release ends the grant and frees the lock", "[locks][release]") {
    Harness h;
    const auto first = h.acquire("db", "a");
    h.acquire("other", "a");
    h.now_ms += 10;
    const auto released = h.release("db", first.grant.token);
    CHECK(released.status == Status::ok);
    CHECK(released.grant == first.grant);  // the grant that ended
    CHECK(h.get("db") == std::nullopt);
    CHECK(h.dump_all().size() == 2);  // only "other" is left, in both tables
    CHECK(h.list().size() == 1);

    // Again: the token is no grant any more.
    const auto again = h.release("db", first.grant.token);
    CHECK(again.status == Status::stale_token);
    CHECK(again.grant.token == FencingToken{0});

    // Another owner acquires at once.
    const auto next = h.acquire("db", "b");
    CHECK(next.status == Status::ok);
    CHECK(next.grant.token > first.grant.token);
    // The old token cannot release the new grant.
    const auto stale = h.release("db", first.grant.token);
    CHECK(stale.status == Status::stale_token);
    CHECK(stale.grant == next.grant);
    CHECK(h.get("db") == next.grant);
}

TEST_CASE("locks: a guard holds only for the current grant's token", "[locks][guard]") {
    Harness h;
    const auto first = h.acquire("db", "a", 100);
    const auto ok = h.guard("db", first.grant.token);
    CHECK(ok.status == Status::ok);
    CHECK(ok.grant == first.grant);
    CHECK(ok.message.empty());

    const auto wrong = h.guard("db", FencingToken{first.grant.token.value() + 7});
    CHECK(wrong.status == Status::stale_token);
    CHECK(wrong.grant == first.grant);
    const auto free = h.guard("free", FencingToken{1});
    CHECK(free.status == Status::stale_token);
    CHECK(free.grant.token == FencingToken{0});

    // Released and granted again: the old token fails, the new one holds.
    h.release("db", first.grant.token);
    CHECK(h.guard("db", first.grant.token).status == Status::stale_token);
    const auto second = h.acquire("db", "b");
    CHECK(h.guard("db", first.grant.token).status == Status::stale_token);
    CHECK(h.guard("db", second.grant.token).status == Status::ok);

    // check() works inside a write txn too and writes nothing.
    const auto before = h.dump_all();
    const auto inside = h.write([&](store::WriteTxn& txn) {
        return h.state->check(txn, Guard{"db", second.grant.token}, h.now());
    });
    CHECK(inside.status == Status::ok);
    CHECK(h.dump_all() == before);
}

TEST_CASE("locks: limits are checked in apply and check: invalid, nothing written",
          "[locks][limits]") {
    Options options;
    options.name_bytes_max = 8;
    options.owner_bytes_max = 4;
    options.ttl_ms_min = 10;
    options.ttl_ms_max = 1000;
    Harness h(options);
    const auto held = h.acquire("held", "a");
    const auto before = h.dump_all();
    const auto refused = [&](const LockResult& result, const char* what) {
        CHECK(result.status == Status::invalid);
        CHECK(result.message.find(what) != std::string::npos);
        CHECK(h.dump_all() == before);
    };
    const std::string name_9(9, 'n');
    refused(h.acquire("", "a"), "name");
    refused(h.acquire(name_9, "a"), "name");
    refused(h.acquire("x", ""), "owner");
    refused(h.acquire("x", "abcde"), "owner");
    refused(h.acquire("x", "a", 9), "ttl_ms");
    refused(h.acquire("x", "a", 1001), "ttl_ms");
    refused(h.acquire("x", "a", -5), "ttl_ms");
    refused(h.renew("", held.grant.token), "name");
    refused(h.renew(name_9, held.grant.token), "name");
    refused(h.renew("held", held.grant.token, 9), "ttl_ms");
    refused(h.renew("held", held.grant.token, 1001), "ttl_ms");
    refused(h.release("", held.grant.token), "name");
    refused(h.release(name_9, held.grant.token), "name");
    refused(h.guard("", held.grant.token), "name");
    refused(h.guard(name_9, held.grant.token), "name");
    // A limit refusal wins over held: a bad TTL on a held lock is invalid.
    refused(h.acquire("held", "b", 5000), "ttl_ms");

    // Exactly at the limits: accepted.
    const std::string name_8(8, 'n');
    CHECK(h.acquire(name_8, "abcd", 10).status == Status::ok);
    CHECK(h.acquire("y", "a", 1000).status == Status::ok);
    CHECK(h.renew("held", held.grant.token, 10).status == Status::ok);
    CHECK(h.guard(name_8, FencingToken{1}).status == Status::stale_token);
    CHECK(h.release(name_8, FencingToken{1}).status == Status::stale_token);

    // get() of a name no key can hold is simply free.
    CHECK(h.get("") == std::nullopt);
    CHECK(h.get(std::string(600, 'x')) == std::nullopt);
}

TEST_CASE("locks: names are bytes, list and expire order them as std::string does",
          "[locks][names]") {
    Harness h;
    const std::vector<std::string> names = {
        std::string("a\0", 2), "b", std::string("a\0b", 3), "\xff", "a", "\x01",
        std::string(256, 'z')};
    std::map<std::string, std::string> owners;  // owners hold 0x00 bytes too
    for (std::size_t i = 0; i < names.size(); ++i) {
        owners[names[i]] = std::string("o\0", 2) + std::to_string(i);
        CHECK(h.acquire(names[i], owners[names[i]], 100).status == Status::ok);
    }
    std::vector<std::string> sorted = names;
    std::sort(sorted.begin(), sorted.end());
    const auto listed = h.list();
    REQUIRE(listed.size() == names.size());
    for (std::size_t i = 0; i < sorted.size(); ++i) {
        CHECK(listed[i].name == sorted[i]);
        CHECK(listed[i].owner == owners[sorted[i]]);
        CHECK(h.get(sorted[i]) == listed[i]);
    }
    h.now_ms += 100;
    const auto expired = h.expire();
    CHECK(expired.freed == sorted);
    CHECK(expired.is_complete);
    CHECK(h.dump_all().empty());
}

TEST_CASE("locks: expire deletes expired grants earliest first, at most limit", "[locks][expiry]") {
    Harness h;
    h.acquire("d", "o", 40);
    h.acquire("c", "o", 10);
    h.acquire("b", "o", 5);
    h.acquire("a", "o", 10);
    h.acquire("e", "o", 1000);
    CHECK(h.next_expiry() == TimestampMs{t0 + 5});

    h.now_ms = t0 + 4;
    auto result = h.expire();
    CHECK(result.freed.empty());
    CHECK(result.is_complete);

    h.now_ms = t0 + 10;  // b (5), a and c (10) are due; a < c at the same expiry
    const auto before = h.dump_all();
    result = h.expire(0);
    CHECK(result.freed.empty());
    CHECK_FALSE(result.is_complete);
    CHECK(h.dump_all() == before);

    result = h.expire(2);
    CHECK(result.freed == std::vector<std::string>{"a", "b"});
    CHECK_FALSE(result.is_complete);
    CHECK(h.next_expiry() == TimestampMs{t0 + 10});
    result = h.expire(1);
    CHECK(result.freed == std::vector<std::string>{"c"});
    CHECK(result.is_complete);  // nothing else due: complete even at the limit
    CHECK(h.next_expiry() == TimestampMs{t0 + 40});

    h.now_ms = t0 + 40;
    result = h.expire(1);
    CHECK(result.freed == std::vector<std::string>{"d"});
    CHECK(result.is_complete);
    CHECK(h.get("e").has_value());
    CHECK(h.dump_all().size() == 2);

    // A released lock leaves nothing for expire().
    h.release("e", h.get("e")->token);
    h.now_ms = t0 + 5000;
    CHECK(h.expire().freed.empty());
    CHECK(h.next_expiry() == std::nullopt);
}

TEST_CASE("locks: list pages through current grants in name order", "[locks][list]") {
    Harness h;
    for (const char* name : {"e", "a", "c", "b", "d"}) {
        h.acquire(name, "o", 100);
    }
    h.acquire("bb", "o", 10);
    h.now_ms += 10;  // "bb" is over but still stored: list skips it

    const auto names = [](const std::vector<Grant>& grants) {
        std::vector<std::string> out;
        for (const auto& grant : grants) {
            out.push_back(grant.name);
        }
        return out;
    };
    using Names = std::vector<std::string>;
    CHECK(names(h.list()) == Names{"a", "b", "c", "d", "e"});
    CHECK(names(h.list("", 2)) == Names{"a", "b"});
    CHECK(names(h.list("b", 2)) == Names{"c", "d"});   // strictly after
    CHECK(names(h.list("bb", 2)) == Names{"c", "d"});  // `after` need not exist
    CHECK(names(h.list("b\x01", 10)) == Names{"c", "d", "e"});
    CHECK(names(h.list("d", 2)) == Names{"e"});
    CHECK(names(h.list("e", 2)).empty());
    CHECK(names(h.list("", 0)).empty());
    CHECK(names(h.list(std::string(600, 'a'), 10)) == Names{"b", "c", "d", "e"});
    CHECK(names(h.list(std::string(600, '\xff'), 10)).empty());
}

TEST_CASE("locks: an undo rollback leaves no trace in either table", "[locks][undo]") {
    Harness h;
    const auto kept = h.acquire("kept", "a", 1000);
    const auto gone = h.acquire("gone", "a", 1000);
    const auto stale = h.acquire("stale", "a", 10);
    h.now_ms += 20;
    const auto before = h.dump_all();
    REQUIRE(before.size() == 6);

    auto txn = must(h.env->begin_write());
    store::UndoLog undo;
    const auto apply_acquire = [&](const char* name, const char* owner) {
        return must(h.state->apply(txn, undo, Acquire{name, owner, 500}, LogIndex{h.next_index++},
                                   h.now()));
    };
    CHECK(apply_acquire("new", "b").status == Status::ok);
    CHECK(apply_acquire("stale", "b").status == Status::ok);  // over the expired record
    CHECK(apply_acquire("kept", "a").status == Status::ok);   // renewal by the holder
    CHECK(apply_acquire("kept", "b").status == Status::held);
    CHECK(must(h.state->apply(txn, undo, Renew{"kept", kept.grant.token, 5000}, h.now())).status ==
          Status::ok);
    CHECK(must(h.state->apply(txn, undo, Release{"gone", gone.grant.token}, h.now())).status ==
          Status::ok);
    CHECK(apply_acquire("gone", "c").status == Status::ok);
    CHECK(dump(h.state->tables(), txn) != before);

    must(undo.rollback(txn));
    CHECK(dump(h.state->tables(), txn) == before);
    must(txn.commit());
    CHECK(h.dump_all() == before);
    CHECK(h.get("kept") == kept.grant);
    CHECK(h.get("gone") == gone.grant);
    CHECK(h.get("new") == std::nullopt);
    CHECK(h.guard("stale", stale.grant.token).status == Status::stale_token);
}

TEST_CASE("locks: state survives a reopen and tokens keep growing after it", "[locks][reopen]") {
    Harness h;
    const auto a = h.acquire("a", "x", 10'000);
    const auto b = h.acquire("b", "y", 10);
    const auto c = h.acquire("c", "z", 10'000);
    h.release("c", c.grant.token);
    h.now_ms += 10;  // b is over, its record stays
    const auto before = h.dump_all();
    const auto listed = h.list();

    h.reopen();
    CHECK(h.dump_all() == before);
    CHECK(h.list() == listed);
    CHECK(h.get("a") == a.grant);
    CHECK(h.get("b") == std::nullopt);
    CHECK(h.guard("a", a.grant.token).status == Status::ok);
    CHECK(h.next_expiry() == TimestampMs{t0 + 10});

    // The log continues: every new grant's token is larger than any before the restart.
    const auto b2 = h.acquire("b", "x");
    CHECK(b2.status == Status::ok);
    CHECK(b2.grant.token > b.grant.token);
    const auto c2 = h.acquire("c", "x");
    CHECK(c2.grant.token > c.grant.token);
    CHECK(h.acquire("a", "y").status == Status::held);
    CHECK(h.expire().freed.empty());  // b's old record was replaced, not left behind
}

TEST_CASE("locks: acquire asserts that log indexes do not go back", "[locks][acquire]") {
    Harness h;
    h.acquire_at(LogIndex{10}, "db", "a", 10);
    h.now_ms += 10;
    queen::testing::AssertCapture capture;
    // An expired grant's token (10) above the new entry's index: tokens would go back.
    CHECK_THROWS_AS(h.acquire_at(LogIndex{9}, "db", "b"), queen::testing::AssertionFired);
    CHECK_THROWS_AS(h.acquire_at(LogIndex{0}, "free", "b"), queen::testing::AssertionFired);
}

TEST_CASE("locks: expires_at saturates at the largest timestamp", "[locks][expiry]") {
    Harness h;
    h.now_ms = std::numeric_limits<std::int64_t>::max() - 5;
    const auto result = h.acquire("db", "a", 1000);
    CHECK(result.status == Status::ok);
    CHECK(result.grant.expires_at == TimestampMs{std::numeric_limits<std::int64_t>::max()});
    CHECK(h.get("db").has_value());
    h.now_ms = std::numeric_limits<std::int64_t>::max();
    CHECK(h.get("db") == std::nullopt);
    CHECK(h.expire().freed == std::vector<std::string>{"db"});
}

TEST_CASE("locks: a stored record that does not decode is corruption, not a crash",
          "[locks][corruption]") {
    Harness h;
    h.acquire("good", "a");
    const auto corrupt = [](const Error& error) {
        CHECK(error.is(queen::Errc::corruption));
        CHECK(error.message().find("locks") != std::string::npos);
    };
    SECTION("a grant value with a bad format byte, truncated or with trailing bytes") {
        for (const Bytes& value :
             {Bytes{2, 1, 'a', 1, 0, 0}, Bytes{1, 1, 'a', 1, 0, 0, 0}, Bytes{1, 5, 'a'}, Bytes{}}) {
            INFO("value=" << to_hex(value));
            h.write([&](store::WriteTxn& txn) {
                return txn.put(h.state->tables().grants, as_bytes("bad"), value);
            });
            auto txn = must(h.env->begin_write());
            store::UndoLog undo;
            const Tables& tables = h.state->tables();
            corrupt(must_fail(get(tables, txn, "bad", h.now())));
            corrupt(must_fail(list(tables, txn, "", 10, h.now())));
            corrupt(must_fail(h.state->check(txn, Guard{"bad", FencingToken{1}}, h.now())));
            corrupt(must_fail(
                h.state->apply(txn, undo, Acquire{"bad", "a", 10}, LogIndex{100}, h.now())));
            corrupt(
                must_fail(h.state->apply(txn, undo, Renew{"bad", FencingToken{1}, 10}, h.now())));
            corrupt(must_fail(h.state->apply(txn, undo, Release{"bad", FencingToken{1}}, h.now())));
            CHECK(must(get(tables, txn, "good", h.now())).has_value());
        }
    }
    SECTION("an expiry entry without its grant record") {
        const auto key = detail::expiry_key(TimestampMs{t0 - 1}, "orphan");
        h.write([&](store::WriteTxn& txn) {
            return txn.put(h.state->tables().expiry, key.span(), ByteSpan{});
        });
        auto txn = must(h.env->begin_write());
        corrupt(must_fail(h.state->expire(txn, h.now(), 10)));
    }
    SECTION("a grant record without its expiry entry") {
        auto txn = must(h.env->begin_write());
        const auto grant = must(get(h.state->tables(), txn, "good", h.now()));
        REQUIRE(grant.has_value());
        const auto key = detail::expiry_key(grant->expires_at, "good");
        CHECK(must(txn.del(h.state->tables().expiry, key.span())));
        store::UndoLog undo;
        corrupt(must_fail(h.state->apply(txn, undo, Renew{"good", grant->token, 10}, h.now())));
    }
    SECTION("an expiry key too short to hold a time and a name") {
        h.write([&](store::WriteTxn& txn) {
            return txn.put(h.state->tables().expiry, as_bytes("short"), ByteSpan{});
        });
        auto txn = must(h.env->begin_read());
        corrupt(must_fail(h.state->next_expiry(txn)));
    }
}

}  // namespace
}  // namespace queen::locks::testing
