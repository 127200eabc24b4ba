// kv/tests/kv_test.cpp — KvState and the read queries, one behaviour of kv.hpp per test.
#include "queen/kv/kv.hpp"

#include <string>
#include <vector>

#include "harness.hpp"
#include "queen/core/error.hpp"
#include "queen/store/keys.hpp"
#include "records.hpp"

namespace queen::kv {
namespace {

using queen::testing::must_fail;
using testing::bytes;
using testing::Harness;
using testing::must;
using testing::text;

std::vector<std::string> keys_of(const ListPage& page) {
    std::vector<std::string> keys;
    for (const auto& entry : page.entries) {
        keys.push_back(entry.key);
    }
    return keys;
}

TEST_CASE("kv: Options::validate checks that bucket and key fit an LMDB key", "[kv][options]") {
    CHECK(Options{}.validate().has_value());

    Options options;
    options.bucket_bytes_max = 128;
    options.key_bytes_max = 511 - 128 - 2 - 8;  // the expiry key exactly fills 511 bytes
    CHECK(options.validate().has_value());
    options.key_bytes_max += 1;
    CHECK(must_fail(options.validate()).is(queen::Errc::invalid_argument));

    options = Options{};
    options.bucket_bytes_max = 0;
    CHECK_FALSE(options.validate().has_value());
    options = Options{};
    options.key_bytes_max = 0;
    CHECK_FALSE(options.validate().has_value());
    options = Options{};
    options.key_bytes_max = SIZE_MAX;  // must not wrap around in the sum
    CHECK_FALSE(options.validate().has_value());
    options = Options{};
    options.ttl_ms_max = 0;
    CHECK_FALSE(options.validate().has_value());
    options = Options{};
    options.list_limit_max = 0;
    CHECK_FALSE(options.validate().has_value());
    options = Options{};
    options.value_bytes_max = std::size_t{1} << 40;
    CHECK_FALSE(options.validate().has_value());

    queen::testing::TempDir dir;
    auto env = must(store::Env::open(dir.path(), store::Options{}));
    options = Options{};
    options.bucket_bytes_max = 400;
    options.key_bytes_max = 400;
    CHECK(must_fail(KvState::open(env, options)).is(queen::Errc::invalid_argument));
}

TEST_CASE("kv: open creates the kv.entries and kv.expiry tables", "[kv][open]") {
    Harness h;
    CHECK(must(h.env->table_names()) == std::vector<std::string>{"kv.entries", "kv.expiry"});
    CHECK(h.buckets().empty());
    CHECK_FALSE(h.next_expiry().has_value());
}

TEST_CASE("kv: Set stores the value with version = index and updated_at = now", "[kv][set]") {
    Harness h;
    h.next_index = 7;
    const WriteResult set = h.set("users", "42", R"({"a":1})");
    CHECK(set.status == Status::ok);
    CHECK(set.version == 7);
    CHECK(set.message.empty());
    const auto got = h.get("users", "42");
    REQUIRE(got.has_value());
    CHECK(got->key == "42");
    CHECK(text(got->value) == R"({"a":1})");
    CHECK(got->version == 7);
    CHECK(got->updated_at == h.now());
    CHECK(got->expires_at == TimestampMs{0});
    CHECK_FALSE(h.get("users", "43").has_value());
    CHECK_FALSE(h.get("user", "42").has_value());
    CHECK_FALSE(h.get("users", "").has_value());
    CHECK_FALSE(h.get("", "42").has_value());

    // Overwrite: a later entry, a greater version, the new time and value.
    h.advance_ms(5);
    const WriteResult again = h.set("users", "42", "2");
    CHECK(again.version == 8);
    const auto got_again = h.get("users", "42");
    REQUIRE(got_again.has_value());
    CHECK(got_again->version == 8);
    CHECK(got_again->updated_at == h.now());
    CHECK(text(got_again->value) == "2");

    // An empty value is a value.
    CHECK(h.set("users", "empty", "").status == Status::ok);
    const auto empty = h.get("users", "empty");
    REQUIRE(empty.has_value());
    CHECK(empty->value.empty());
}

TEST_CASE("kv: two keys written by one entry share its version", "[kv][set]") {
    Harness h;
    const auto results = h.entry([&](store::WriteTxn& txn, store::UndoLog& undo, LogIndex index) {
        std::vector<WriteResult> out;
        out.push_back(
            must(h.kv->apply(txn, undo, Set{"b", "x", bytes("1"), {}, 0}, index, h.now())));
        out.push_back(
            must(h.kv->apply(txn, undo, Set{"b", "y", bytes("2"), {}, 0}, index, h.now())));
        return out;
    });
    CHECK(results[0].version == 1);
    CHECK(results[1].version == 1);
    CHECK(h.get("b", "x")->version == 1);
    CHECK(h.get("b", "y")->version == 1);
}

TEST_CASE("kv: Set with an expected version writes only when it matches", "[kv][set][cas]") {
    Harness h;
    CHECK(h.set("b", "k", "v1", 0).status == Status::ok);  // 0: must not exist, and it did not
    const std::uint64_t v1 = h.get("b", "k")->version;

    const auto before = h.dump();
    const WriteResult exists = h.set("b", "k", "v2", 0);
    CHECK(exists.status == Status::version_mismatch);
    CHECK(exists.version == v1);
    CHECK_FALSE(exists.message.empty());
    const WriteResult stale = h.set("b", "k", "v2", v1 + 100);
    CHECK(stale.status == Status::version_mismatch);
    CHECK(stale.version == v1);
    CHECK(h.dump() == before);

    const WriteResult absent = h.set("b", "other", "v", 5);
    CHECK(absent.status == Status::version_mismatch);
    CHECK(absent.version == 0);
    CHECK(h.dump() == before);

    const WriteResult swapped = h.set("b", "k", "v2", v1);
    CHECK(swapped.status == Status::ok);
    CHECK(swapped.version > v1);
    CHECK(text(h.get("b", "k")->value) == "v2");
}

TEST_CASE("kv: writes outside the Options limits are refused and change nothing", "[kv][limits]") {
    Options options;
    options.bucket_bytes_max = 4;
    options.key_bytes_max = 6;
    options.value_bytes_max = 10;
    options.ttl_ms_max = 1000;
    Harness h(options);
    CHECK(h.set("b", "k", "v").status == Status::ok);
    const auto before = h.dump();

    const auto refused = [&](const WriteResult& result, const char* what) {
        INFO(what << ": " << result.message);
        CHECK(result.status == Status::invalid);
        CHECK(result.message.find(what) != std::string::npos);
        CHECK(h.dump() == before);
    };
    refused(h.set("", "k", "v"), "bucket");
    refused(h.set("bbbbb", "k", "v"), "bucket");
    refused(h.set(std::string("b\0c", 3), "k", "v"), "bucket");
    refused(h.set("b", "", "v"), "key");
    refused(h.set("b", "kkkkkkk", "v"), "key");
    refused(h.set("b", std::string("k\0", 2), "v"), "key");
    refused(h.set("b", "k", "01234567890"), "value");
    refused(h.set("b", "k", "v", std::nullopt, -1), "ttl_ms");
    refused(h.set("b", "k", "v", std::nullopt, 1001), "ttl_ms");
    refused(h.del("", "k"), "bucket");
    refused(h.del("b", std::string(7, 'k')), "key");
    refused(h.check("b", "", 0), "key");
    refused(h.check("bbbbb", "k", 0), "bucket");

    // The limits themselves are allowed.
    CHECK(h.set("bbbb", "kkkkkk", "0123456789", std::nullopt, 1000).status == Status::ok);
    const auto got = h.get("bbbb", "kkkkkk");
    REQUIRE(got.has_value());
    CHECK(got->expires_at == TimestampMs{h.now_ms + 1000});
}

TEST_CASE("kv: a TTL expires the key at exactly now + ttl for every read and write", "[kv][ttl]") {
    Harness h;
    const TimestampMs start = h.now();
    CHECK(h.set("b", "k", "v", std::nullopt, 1000).status == Status::ok);
    const auto live = h.get("b", "k");
    REQUIRE(live.has_value());
    CHECK(live->expires_at == TimestampMs{start.value() + 1000});
    CHECK(h.next_expiry() == TimestampMs{start.value() + 1000});
    const std::uint64_t version = live->version;

    h.advance_ms(999);
    CHECK(h.get("b", "k").has_value());
    CHECK(h.list("b").entries.size() == 1);
    CHECK(h.check("b", "k", version).status == Status::ok);

    h.advance_ms(1);  // now == expires_at: gone
    CHECK_FALSE(h.get("b", "k").has_value());
    CHECK(h.list("b").entries.empty());
    const WriteResult checked = h.check("b", "k", version);
    CHECK(checked.status == Status::version_mismatch);
    CHECK(checked.version == 0);
    CHECK(h.check("b", "k", 0).status == Status::ok);
    // The record waits for expire(): list_buckets still counts it.
    CHECK(h.buckets().size() == 1);

    // Delete of an expired key: absent, so nothing to delete and nothing written.
    const auto before = h.dump();
    const WriteResult deleted = h.del("b", "k");
    CHECK(deleted.status == Status::ok);
    CHECK_FALSE(deleted.existed);
    const WriteResult expected_deleted = h.del("b", "k", version);
    CHECK(expected_deleted.status == Status::version_mismatch);
    CHECK(expected_deleted.version == 0);
    CHECK(h.del("b", "k", 0).status == Status::ok);
    CHECK(h.dump() == before);

    // Set over the expired key is a create: expected 0 holds and the old expiry goes.
    const WriteResult created = h.set("b", "k", "new", 0);
    CHECK(created.status == Status::ok);
    const auto got = h.get("b", "k");
    REQUIRE(got.has_value());
    CHECK(text(got->value) == "new");
    CHECK(got->expires_at == TimestampMs{0});
    CHECK_FALSE(h.next_expiry().has_value());
    CHECK(h.dump().expiry.empty());
}

TEST_CASE("kv: a Set that changes or clears the TTL moves or removes the expiry key", "[kv][ttl]") {
    Harness h;
    CHECK(h.set("b", "k", "v", std::nullopt, 5000).status == Status::ok);
    CHECK(h.dump().expiry.size() == 1);
    CHECK(h.next_expiry() == TimestampMs{h.now_ms + 5000});

    h.advance_ms(10);
    CHECK(h.set("b", "k", "v", std::nullopt, 100).status == Status::ok);  // sooner
    CHECK(h.dump().expiry.size() == 1);
    CHECK(h.next_expiry() == TimestampMs{h.now_ms + 100});
    CHECK(h.get("b", "k")->expires_at == TimestampMs{h.now_ms + 100});

    CHECK(h.set("b", "k", "v").status == Status::ok);  // no TTL: clears it
    CHECK(h.dump().expiry.empty());
    CHECK_FALSE(h.next_expiry().has_value());
    h.advance_ms(1'000'000);
    CHECK(h.get("b", "k").has_value());

    // Same expiry time twice (same now, same ttl): one expiry key.
    CHECK(h.set("b", "k", "v", std::nullopt, 50).status == Status::ok);
    CHECK(h.set("b", "k", "w", std::nullopt, 50).status == Status::ok);
    CHECK(h.dump().expiry.size() == 1);
    CHECK(h.expire(10).deleted == 0);
    h.advance_ms(50);
    CHECK(h.expire(10).deleted == 1);
    CHECK(h.dump() == testing::Dump{});
}

TEST_CASE("kv: Delete removes a live key from both tables", "[kv][delete]") {
    Harness h;
    CHECK(h.set("b", "k", "v", std::nullopt, 1000).status == Status::ok);
    CHECK(h.set("b", "keep", "v").status == Status::ok);
    const std::uint64_t version = h.get("b", "k")->version;

    const auto before = h.dump();
    const WriteResult wrong = h.del("b", "k", version + 1);
    CHECK(wrong.status == Status::version_mismatch);
    CHECK(wrong.version == version);
    CHECK_FALSE(wrong.existed);
    const WriteResult must_be_absent = h.del("b", "k", 0);
    CHECK(must_be_absent.status == Status::version_mismatch);
    CHECK(must_be_absent.version == version);
    CHECK(h.dump() == before);

    const WriteResult deleted = h.del("b", "k", version);
    CHECK(deleted.status == Status::ok);
    CHECK(deleted.existed);
    CHECK(deleted.version == 0);
    CHECK_FALSE(h.get("b", "k").has_value());
    CHECK(h.dump().expiry.empty());
    CHECK(h.dump().entries.size() == 1);

    // Absent: ok, existed = false, nothing written.
    const auto after = h.dump();
    const WriteResult again = h.del("b", "k");
    CHECK(again.status == Status::ok);
    CHECK_FALSE(again.existed);
    CHECK(h.del("b", "k", 0).status == Status::ok);
    CHECK(h.del("b", "k", 3).status == Status::version_mismatch);
    CHECK(h.dump() == after);

    // Without expectation on a live key.
    const WriteResult plain = h.del("b", "keep");
    CHECK(plain.existed);
    CHECK(h.dump() == testing::Dump{});
}

TEST_CASE("kv: Check compares the live version and writes nothing", "[kv][check]") {
    Harness h;
    CHECK(h.set("b", "k", "v").status == Status::ok);
    const std::uint64_t version = h.get("b", "k")->version;
    const auto before = h.dump();

    const WriteResult ok = h.check("b", "k", version);
    CHECK(ok.status == Status::ok);
    CHECK(ok.version == version);
    const WriteResult wrong = h.check("b", "k", version + 1);
    CHECK(wrong.status == Status::version_mismatch);
    CHECK(wrong.version == version);
    const WriteResult not_absent = h.check("b", "k", 0);
    CHECK(not_absent.status == Status::version_mismatch);
    CHECK(not_absent.version == version);
    const WriteResult absent = h.check("b", "nope", 0);
    CHECK(absent.status == Status::ok);
    CHECK(absent.version == 0);
    const WriteResult not_there = h.check("b", "nope", 1);
    CHECK(not_there.status == Status::version_mismatch);
    CHECK(not_there.version == 0);
    CHECK(h.dump() == before);
}

TEST_CASE("kv: list pages through a bucket's keys in byte order with prefix and after",
          "[kv][list]") {
    Harness h;
    const std::vector<std::string> keys{"a", "a/1", "a/2", "a/3", "b", "b/1", "\x7f", "\xff\x01"};
    for (const auto& key : keys) {
        CHECK(h.set("bucket", key, "v").status == Status::ok);
    }
    // Neighbouring buckets whose names share a prefix stay out of the listing.
    CHECK(h.set("bucke", "a/0", "v").status == Status::ok);
    CHECK(h.set("bucket2", "a/0", "v").status == Status::ok);
    CHECK(h.set("bucketa", "", "v").status == Status::invalid);

    const ListPage all = h.list("bucket");
    CHECK(keys_of(all) == keys);
    CHECK(all.next_after.empty());
    CHECK(all.entries[1].version == 2);
    CHECK(text(all.entries[1].value) == "v");

    CHECK(keys_of(h.list("bucket", "a/")) == std::vector<std::string>{"a/1", "a/2", "a/3"});
    CHECK(keys_of(h.list("bucket", "a")) == std::vector<std::string>{"a", "a/1", "a/2", "a/3"});
    CHECK(keys_of(h.list("bucket", "\xff")) == std::vector<std::string>{"\xff\x01"});
    CHECK(h.list("bucket", "c").entries.empty());
    CHECK(h.list("nobucket").entries.empty());
    CHECK(h.list("").entries.empty());

    // Paging: next_after is the last key of a full page when more follow.
    const ListPage first = h.list("bucket", "", "", 3);
    CHECK(keys_of(first) == std::vector<std::string>{"a", "a/1", "a/2"});
    CHECK(first.next_after == "a/2");
    const ListPage second = h.list("bucket", "", first.next_after, 3);
    CHECK(keys_of(second) == std::vector<std::string>{"a/3", "b", "b/1"});
    CHECK(second.next_after == "b/1");
    const ListPage third = h.list("bucket", "", second.next_after, 3);
    CHECK(keys_of(third) == std::vector<std::string>{"\x7f", "\xff\x01"});
    CHECK(third.next_after.empty());
    // A page that is exactly full and last says so.
    const ListPage exact = h.list("bucket", "a/", "", 3);
    CHECK(exact.entries.size() == 3);
    CHECK(exact.next_after.empty());
    CHECK(h.list_all("bucket", "", 1) == keys);
    CHECK(h.list_all("bucket", "a", 2) == std::vector<std::string>{"a", "a/1", "a/2", "a/3"});

    // `after` need not be a stored key, and may sort before or after the prefix.
    CHECK(keys_of(h.list("bucket", "a/", "a/15")) == std::vector<std::string>{"a/2", "a/3"});
    CHECK(keys_of(h.list("bucket", "b", "a")) == std::vector<std::string>{"b", "b/1"});
    CHECK(h.list("bucket", "a", "b").entries.empty());
    CHECK(h.list("bucket", "", "\xff\x02").entries.empty());
    // Names longer than any stored key match nothing (and are not errors).
    CHECK(h.list(std::string(600, 'b')).entries.empty());
    CHECK(h.list("bucket", std::string(600, 'a')).entries.empty());
    CHECK(keys_of(h.list("bucket", "", std::string(600, 'a'))) ==
          std::vector<std::string>{"b", "b/1", "\x7f", "\xff\x01"});
    CHECK(keys_of(h.list("bucket", "", "a" + std::string(600, '/'))) ==
          std::vector<std::string>{"a/1", "a/2", "a/3", "b", "b/1", "\x7f", "\xff\x01"});
    CHECK_FALSE(h.get(std::string(600, 'b'), "k").has_value());
}

TEST_CASE("kv: list skips expired keys and says 'more' only when a live key follows",
          "[kv][list][ttl]") {
    Harness h;
    CHECK(h.set("b", "k1", "v").status == Status::ok);
    CHECK(h.set("b", "k2", "v", std::nullopt, 10).status == Status::ok);
    CHECK(h.set("b", "k3", "v").status == Status::ok);
    CHECK(h.set("b", "k4", "v", std::nullopt, 10).status == Status::ok);
    CHECK(h.set("b", "k5", "v", std::nullopt, 10).status == Status::ok);
    h.advance_ms(10);

    CHECK(keys_of(h.list("b")) == std::vector<std::string>{"k1", "k3"});
    const ListPage first = h.list("b", "", "", 1);
    CHECK(keys_of(first) == std::vector<std::string>{"k1"});
    CHECK(first.next_after == "k1");
    // k3 fills the page; k4 and k5 follow but are expired: this is the last page.
    const ListPage second = h.list("b", "", "k1", 1);
    CHECK(keys_of(second) == std::vector<std::string>{"k3"});
    CHECK(second.next_after.empty());
    CHECK(h.list_all("b", "", 1) == std::vector<std::string>{"k1", "k3"});
}

TEST_CASE("kv: expire deletes due records earliest first, up to the limit", "[kv][expire]") {
    Harness h;
    const std::int64_t t0 = h.now_ms;
    CHECK(h.set("b", "late", "v", std::nullopt, 300).status == Status::ok);
    CHECK(h.set("b", "early", "v", std::nullopt, 100).status == Status::ok);
    CHECK(h.set("a", "mid", "v", std::nullopt, 200).status == Status::ok);
    CHECK(h.set("a", "mid2", "v", std::nullopt, 200).status == Status::ok);
    CHECK(h.set("b", "forever", "v").status == Status::ok);
    CHECK(h.next_expiry() == TimestampMs{t0 + 100});

    // Nothing due yet: nothing deleted, complete.
    h.advance_ms(99);
    ExpireResult none = h.expire(10);
    CHECK(none.deleted == 0);
    CHECK(none.is_complete);

    h.advance_ms(1);  // now == the earliest expiry: due
    ExpireResult one = h.expire(10);
    CHECK(one.deleted == 1);
    CHECK(one.is_complete);
    CHECK(h.next_expiry() == TimestampMs{t0 + 200});
    CHECK(h.dump().entries.size() == 4);

    h.advance_ms(1000);  // all three due
    ExpireResult limited = h.expire(2);
    CHECK(limited.deleted == 2);
    CHECK_FALSE(limited.is_complete);
    // The two expiring at t0 + 200 went first; "late" is left.
    CHECK(h.next_expiry() == TimestampMs{t0 + 300});
    CHECK(h.buckets() == std::vector<BucketInfo>{{"b", 2}});

    ExpireResult zero = h.expire(0);
    CHECK(zero.deleted == 0);
    CHECK_FALSE(zero.is_complete);

    ExpireResult rest = h.expire(1);
    CHECK(rest.deleted == 1);
    CHECK(rest.is_complete);  // the limit was reached, but nothing more is due
    CHECK_FALSE(h.next_expiry().has_value());
    CHECK(h.dump().expiry.empty());
    CHECK(h.dump().entries.size() == 1);
    CHECK(h.get("b", "forever").has_value());
    ExpireResult empty = h.expire(0);
    CHECK(empty.is_complete);
}

TEST_CASE("kv: list_buckets counts every record per bucket, sorted", "[kv][buckets]") {
    Harness h;
    CHECK(h.set("zeta", "1", "v").status == Status::ok);
    CHECK(h.set("alpha", "1", "v").status == Status::ok);
    CHECK(h.set("alpha", "2", "v", std::nullopt, 1).status == Status::ok);
    CHECK(h.set("alph", "1", "v").status == Status::ok);
    CHECK(h.set("alphab", "1", "v").status == Status::ok);
    CHECK(h.set("\xff", "1", "v").status == Status::ok);
    h.advance_ms(5);  // alpha/2 expired, not yet deleted: still counted
    CHECK(h.buckets() == std::vector<BucketInfo>{
                             {"alph", 1}, {"alpha", 2}, {"alphab", 1}, {"zeta", 1}, {"\xff", 1}});
    CHECK(h.expire(10).deleted == 1);
    CHECK(h.buckets()[1].keys == 1);
    CHECK(h.del("alph", "1").existed);
    CHECK(h.buckets().size() == 4);
    CHECK(h.buckets()[0].bucket == "alpha");
}

TEST_CASE("kv: an UndoLog rollback of an entry's writes leaves no trace", "[kv][undo]") {
    Harness h;
    CHECK(h.set("b", "keep", "v", std::nullopt, 500).status == Status::ok);
    CHECK(h.set("b", "change", "old", std::nullopt, 1000).status == Status::ok);
    CHECK(h.set("b", "gone", "v", std::nullopt, 10).status == Status::ok);
    CHECK(h.set("b", "delete", "v").status == Status::ok);
    CHECK(h.set("c", "ttl", "v", std::nullopt, 2000).status == Status::ok);
    h.advance_ms(20);  // b/gone expired, not yet deleted
    const auto before = h.dump();
    const auto index_before = h.next_index;

    const auto results = h.entry(
        [&](store::WriteTxn& txn, store::UndoLog& undo, LogIndex index) {
            std::vector<WriteResult> out;
            const auto set = [&](std::string b, std::string k, std::string v, std::int64_t ttl) {
                out.push_back(
                    must(h.kv->apply(txn, undo, Set{std::move(b), std::move(k), bytes(v), {}, ttl},
                                     index, h.now())));
            };
            set("b", "change", "new", 0);    // clears a TTL
            set("b", "gone", "again", 300);  // over an expired record, new TTL
            set("b", "new", "v", 100);       // created with a TTL
            set("b", "new", "w", 0);         // twice in one entry
            set("c", "ttl", "v", 5000);      // moves a TTL
            out.push_back(must(h.kv->apply(txn, undo, Delete{"b", "delete", {}}, index, h.now())));
            out.push_back(must(h.kv->apply(txn, undo, Delete{"b", "keep", {}}, index, h.now())));
            CHECK(undo.size() > 0);
            CHECK(kv::testing::dump(h.kv->tables(), txn) != before);
            return out;
        },
        /*rollback=*/true);
    for (const auto& result : results) {
        CHECK(result.status == Status::ok);
    }
    CHECK(h.next_index == index_before + 1);
    CHECK(h.dump() == before);
    CHECK(h.get("b", "change")->expires_at != TimestampMs{0});
    CHECK_FALSE(h.get("b", "new").has_value());
}

TEST_CASE("kv: a reopened env holds the same keys, versions and expiries", "[kv][reopen]") {
    Harness h;
    CHECK(h.set("b", "one", "1").status == Status::ok);
    CHECK(h.set("b", "two", "2", std::nullopt, 1000).status == Status::ok);
    CHECK(h.set("c", "three", "3", std::nullopt, 50).status == Status::ok);
    CHECK(h.del("b", "one").existed);
    CHECK(h.set("b", "one", "again").status == Status::ok);
    const auto dump_before = h.dump();
    const auto one_before = h.get("b", "one");
    const auto buckets_before = h.buckets();

    h.reopen();
    CHECK(h.dump() == dump_before);
    const auto one = h.get("b", "one");
    REQUIRE(one.has_value());
    CHECK(one->version == one_before->version);
    CHECK(text(one->value) == "again");
    CHECK(h.buckets() == buckets_before);
    CHECK(h.next_expiry() == TimestampMs{h.now_ms + 50});
    // Versions keep growing after a restart (they are log indexes).
    const WriteResult later = h.set("b", "one", "x", one->version);
    CHECK(later.status == Status::ok);
    CHECK(later.version > one->version);
    h.advance_ms(50);
    CHECK(h.expire(10).deleted == 1);
}

TEST_CASE("kv: an undecodable record is Errc::corruption, not a crash", "[kv][corruption]") {
    Harness h;
    CHECK(h.set("b", "k", "v", std::nullopt, 100).status == Status::ok);
    store::KeyBuilder key;
    detail::entries_key(key, "b", "k");
    {
        auto txn = must(h.env->begin_write());
        must(txn.put(h.kv->tables().entries, key.span(), bytes("\x02garbage")));
        must(txn.commit());
    }
    {
        auto txn = must(h.env->begin_read());
        CHECK(must_fail(get(h.kv->tables(), txn, "b", "k", h.now())).is(queen::Errc::corruption));
        CHECK(must_fail(list(h.kv->tables(), txn, "b", "", "", 10, h.now()))
                  .is(queen::Errc::corruption));
    }
    {
        auto txn = must(h.env->begin_write());
        store::UndoLog undo;
        CHECK(must_fail(
                  h.kv->apply(txn, undo, Set{"b", "k", bytes("v"), {}, 0}, LogIndex{100}, h.now()))
                  .is(queen::Errc::corruption));
        CHECK(must_fail(h.kv->apply(txn, Check{"b", "k", 0}, h.now())).is(queen::Errc::corruption));
    }
    h.advance_ms(100);
    {
        auto txn = must(h.env->begin_write());
        CHECK(must_fail(h.kv->expire(txn, h.now(), 10)).is(queen::Errc::corruption));
    }
    // An expiry key whose record is gone.
    {
        auto txn = must(h.env->begin_write());
        CHECK(must(txn.del(h.kv->tables().entries, key.span())));
        CHECK(must_fail(h.kv->expire(txn, h.now(), 10)).is(queen::Errc::corruption));
    }
}

}  // namespace
}  // namespace queen::kv
