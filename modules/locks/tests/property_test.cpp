// locks/tests/property_test.cpp — seeded random acquire/renew/release/guard/expire with several
// owners and names and random time advances, against a std::map model; every query is compared
// after every step, and mutual exclusion and growing fencing tokens are checked on the results.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "queen/core/rng.hpp"
#include "records.hpp"

namespace queen::locks::testing {
namespace {

/// What the module should store for one lock (current or expired, until expire() or release).
struct ModelRecord {
    std::string owner;
    std::uint64_t token = 0;
    std::int64_t acquired_at = 0;
    std::int64_t expires_at = 0;
};

/// The semantics of locks.hpp over a std::map, written as plainly as possible.
struct Model {
    Options options;
    std::map<std::string, ModelRecord> records;

    static Grant grant(const std::string& name, const ModelRecord& r) {
        return Grant{name, r.owner, FencingToken{r.token}, TimestampMs{r.acquired_at},
                     TimestampMs{r.expires_at}};
    }
    const ModelRecord* current(const std::string& name, std::int64_t now) const {
        const auto it = records.find(name);
        return it != records.end() && it->second.expires_at > now ? &it->second : nullptr;
    }
    static std::int64_t expiry(std::int64_t now, std::int64_t ttl) {
        return now > std::numeric_limits<std::int64_t>::max() - ttl
                   ? std::numeric_limits<std::int64_t>::max()
                   : now + ttl;
    }
    bool bad_name(const std::string& name) const {
        return name.empty() || name.size() > options.name_bytes_max;
    }
    bool bad_ttl(std::int64_t ttl) const {
        return ttl < options.ttl_ms_min || ttl > options.ttl_ms_max;
    }
    static LockResult result(Status status, Grant grant = {}) {
        LockResult out;
        out.status = status;
        out.grant = std::move(grant);
        return out;
    }
    LockResult stale(const std::string& name, std::int64_t now) const {
        const ModelRecord* r = current(name, now);
        return result(Status::stale_token,
                      r != nullptr ? grant(name, *r) : Grant{name, "", FencingToken{0}, {}, {}});
    }

    LockResult acquire(const Acquire& c, std::uint64_t index, std::int64_t now) {
        if (bad_name(c.name) || c.owner.empty() || c.owner.size() > options.owner_bytes_max ||
            bad_ttl(c.ttl_ms)) {
            return result(Status::invalid);
        }
        if (ModelRecord* r = const_cast<ModelRecord*>(current(c.name, now)); r != nullptr) {
            if (r->owner != c.owner) {
                return result(Status::held, grant(c.name, *r));
            }
            r->expires_at = expiry(now, c.ttl_ms);
            return result(Status::ok, grant(c.name, *r));
        }
        ModelRecord& r = records[c.name];
        r = ModelRecord{c.owner, index, now, expiry(now, c.ttl_ms)};
        return result(Status::ok, grant(c.name, r));
    }
    LockResult renew(const Renew& c, std::int64_t now) {
        if (bad_name(c.name) || bad_ttl(c.ttl_ms)) {
            return result(Status::invalid);
        }
        ModelRecord* r = const_cast<ModelRecord*>(current(c.name, now));
        if (r == nullptr || r->token != c.token.value()) {
            return stale(c.name, now);
        }
        r->expires_at = expiry(now, c.ttl_ms);
        return result(Status::ok, grant(c.name, *r));
    }
    LockResult release(const Release& c, std::int64_t now) {
        if (bad_name(c.name)) {
            return result(Status::invalid);
        }
        const ModelRecord* r = current(c.name, now);
        if (r == nullptr || r->token != c.token.value()) {
            return stale(c.name, now);
        }
        LockResult out = result(Status::ok, grant(c.name, *r));
        records.erase(c.name);
        return out;
    }
    LockResult check(const Guard& g, std::int64_t now) const {
        if (bad_name(g.name)) {
            return result(Status::invalid);
        }
        const ModelRecord* r = current(g.name, now);
        if (r == nullptr || r->token != g.token.value()) {
            return stale(g.name, now);
        }
        return result(Status::ok, grant(g.name, *r));
    }
    ExpireResult expire(std::int64_t now, std::size_t limit) {
        std::vector<std::pair<std::int64_t, std::string>> due;
        for (const auto& [name, r] : records) {
            if (r.expires_at <= now) {
                due.emplace_back(r.expires_at, name);
            }
        }
        std::sort(due.begin(), due.end());
        ExpireResult out;
        out.is_complete = due.size() <= limit;
        for (std::size_t i = 0; i < due.size() && i < limit; ++i) {
            records.erase(due[i].second);
            out.freed.push_back(due[i].second);
        }
        std::sort(out.freed.begin(), out.freed.end());
        return out;
    }

    std::vector<Grant> list(const std::string& after, std::uint32_t limit, std::int64_t now) const {
        std::vector<Grant> out;
        for (auto it = records.upper_bound(after); it != records.end() && out.size() < limit;
             ++it) {
            if (it->second.expires_at > now) {
                out.push_back(grant(it->first, it->second));
            }
        }
        return out;
    }
    std::optional<TimestampMs> next_expiry() const {
        std::optional<TimestampMs> out;
        for (const auto& [name, r] : records) {
            if (!out.has_value() || TimestampMs{r.expires_at} < *out) {
                out = TimestampMs{r.expires_at};
            }
        }
        return out;
    }
    /// The bytes both tables should hold (README.md, "On disk").
    Dump dump() const {
        Dump out;
        for (const auto& [name, r] : records) {
            const detail::GrantRecord record{r.owner, FencingToken{r.token},
                                             TimestampMs{r.acquired_at}, TimestampMs{r.expires_at}};
            out.emplace("g:" + to_hex(as_bytes(name)), to_hex(detail::encode(record)));
            out.emplace("e:" + to_hex(detail::expiry_key(record.expires_at, name).span()), "");
        }
        return out;
    }
};

void check_same(const LockResult& actual, const LockResult& expected) {
    CHECK(actual.status == expected.status);
    CHECK(actual.grant == expected.grant);
    CHECK(actual.message.empty() == (expected.status == Status::ok));
}

/// Checks on the module's answers alone (not on the model): at most one grant of a lock at
/// any instant, and every new grant's token above the tokens of all earlier grants of it.
struct GrantHistory {
    struct Lock {
        std::uint64_t token = 0;             ///< of the latest grant
        std::int64_t ends_at = 0;            ///< its expires_at, or the time it was released
        std::uint64_t max_token_before = 0;  ///< largest token granted by an earlier entry
    };
    std::map<std::string, Lock> locks;
    std::map<std::string, std::uint64_t> granted_in_entry;  ///< this entry's new grants

    /// `result` answered an acquire or renew at `now`.
    void on_grant(const LockResult& result, std::int64_t now) {
        if (result.status != Status::ok) {
            return;
        }
        Lock& lock = locks[result.grant.name];
        if (result.grant.token.value() != lock.token || lock.ends_at <= now) {
            INFO("new grant of " << to_hex(as_bytes(result.grant.name)) << " at " << now);
            // Mutual exclusion: the previous grant is over (expired or released).
            REQUIRE(lock.ends_at <= now);
            REQUIRE(result.grant.acquired_at == TimestampMs{now});
            // Fencing: larger than every grant of earlier entries (one entry has one index).
            REQUIRE(result.grant.token.value() > lock.max_token_before);
            granted_in_entry[result.grant.name] =
                std::max(granted_in_entry[result.grant.name], result.grant.token.value());
        }
        lock.token = result.grant.token.value();
        lock.ends_at = result.grant.expires_at.value();
    }
    void on_release(const LockResult& result, std::int64_t now) {
        if (result.status == Status::ok) {
            REQUIRE(locks[result.grant.name].token == result.grant.token.value());
            locks[result.grant.name].ends_at = now;
        }
    }
    void end_entry() {
        for (const auto& [name, token] : granted_in_entry) {
            locks[name].max_token_before = std::max(locks[name].max_token_before, token);
        }
        granted_in_entry.clear();
    }
};

TEST_CASE("locks: random commands match a std::map model, exclusion and fencing hold",
          "[locks][property]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    const auto steps = queen::testing::env_int("QUEEN_PROPERTY_STEPS", 4000);
    queen::Rng rng(seed);

    Harness h;
    Model model;
    GrantHistory history;
    const std::vector<std::string> names = {"a", "b", std::string("a\0", 2), "\xff", "lock/1"};
    const std::vector<std::string> owners = {"o1", "o2", "o3"};
    const std::vector<std::int64_t> ttls = {1, 2, 5, 10, 20, 50, 100};
    std::map<std::string, std::vector<std::uint64_t>> tokens_of;  // every token granted per name

    const auto pick = [&](const auto& items) { return items[rng.below(items.size())]; };
    const auto pick_name = [&] {
        if (rng.chance(0.02)) {
            return rng.chance(0.5) ? std::string() : std::string(257, 'n');  // invalid
        }
        return pick(names);
    };
    const auto pick_ttl = [&]() -> std::int64_t {
        return rng.chance(0.02) ? (rng.chance(0.5) ? 0 : model.options.ttl_ms_max + 1) : pick(ttls);
    };
    const auto pick_token = [&](const std::string& name) {
        const auto it = model.records.find(name);
        if (it != model.records.end() && rng.chance(0.6)) {
            return FencingToken{it->second.token};  // current or expired
        }
        const auto& tokens = tokens_of[name];
        if (!tokens.empty() && rng.chance(0.6)) {
            return FencingToken{pick(tokens)};  // an earlier grant's
        }
        return FencingToken{rng.below(h.next_index + 2)};
    };

    /// One command in `txn`, compared with the model; true when it may have written.
    const auto run_one = [&](store::WriteTxn& txn, store::UndoLog& undo, Model& m,
                             std::uint64_t index, int kind) {
        const std::string name = pick_name();
        const std::int64_t now = h.now_ms;
        INFO("kind=" << kind << " name=" << to_hex(as_bytes(name)) << " now=" << now
                     << " index=" << index);
        if (kind == 0) {
            const Acquire command{name, rng.chance(0.02) ? std::string() : pick(owners),
                                  pick_ttl()};
            const auto actual = must(h.state->apply(txn, undo, command, LogIndex{index}, h.now()));
            check_same(actual, m.acquire(command, index, now));
            history.on_grant(actual, now);
            if (actual.status == Status::ok) {
                tokens_of[name].push_back(actual.grant.token.value());
            }
        } else if (kind == 1) {
            const Renew command{name, pick_token(name), pick_ttl()};
            const auto actual = must(h.state->apply(txn, undo, command, h.now()));
            check_same(actual, m.renew(command, now));
            history.on_grant(actual, now);
        } else if (kind == 2) {
            const Release command{name, pick_token(name)};
            const auto actual = must(h.state->apply(txn, undo, command, h.now()));
            check_same(actual, m.release(command, now));
            history.on_release(actual, now);
        } else {
            const Guard guard{name, pick_token(name)};
            check_same(must(h.state->check(txn, guard, h.now())), m.check(guard, now));
        }
    };

    const auto compare_queries = [&] {
        auto txn = must(h.env->begin_read());
        const Tables& tables = h.state->tables();
        for (const auto& name : names) {
            const ModelRecord* r = model.current(name, h.now_ms);
            const auto actual = must(get(tables, txn, name, h.now()));
            REQUIRE(actual.has_value() == (r != nullptr));
            if (r != nullptr) {
                CHECK(*actual == Model::grant(name, *r));
            }
        }
        CHECK(must(list(tables, txn, "", 100, h.now())) == model.list("", 100, h.now_ms));
        const std::string after = rng.chance(0.3) ? std::string() : pick(names);
        const auto limit = static_cast<std::uint32_t>(rng.below(4));
        CHECK(must(list(tables, txn, after, limit, h.now())) == model.list(after, limit, h.now_ms));
        CHECK(must(h.state->next_expiry(txn)) == model.next_expiry());
        REQUIRE(dump(tables, txn) == model.dump());
    };

    std::uint64_t grants = 0;
    std::uint64_t rollbacks = 0;
    for (std::int64_t step = 0; step < steps; ++step) {
        INFO("step=" << step);
        // Time: often still, often a little, sometimes exactly to the next expiry.
        const auto advance = rng.below(10);
        if (advance < 3) {
        } else if (advance < 8) {
            h.now_ms += static_cast<std::int64_t>(rng.between(1, 30));
        } else if (advance == 8) {
            if (const auto next = model.next_expiry(); next && next->value() > h.now_ms) {
                h.now_ms = next->value();
            }
        } else {
            h.now_ms += static_cast<std::int64_t>(rng.between(50, 200));
        }
        h.next_index += 1 + rng.below(3);
        const std::uint64_t index = h.next_index;

        const auto op = rng.below(100);
        if (op < 88) {
            auto txn = must(h.env->begin_write());
            run_one(txn, h.undo, model, index, op < 40 ? 0 : op < 55 ? 1 : op < 70 ? 2 : 3);
            h.undo.clear();
            must(txn.commit());
            history.end_entry();
        } else if (op < 95) {
            const std::size_t limit = rng.below(4);
            const auto actual = h.expire(limit);
            const auto expected = model.expire(h.now_ms, limit);
            CHECK(actual.freed == expected.freed);
            CHECK(actual.is_complete == expected.is_complete);
        } else if (op < 99) {
            // An atomic entry: several commands under one index, then committed or rolled back.
            const Dump before = h.dump_all();
            Model tentative = model;
            const GrantHistory history_before = history;
            auto txn = must(h.env->begin_write());
            store::UndoLog undo;
            const auto count = rng.between(1, 5);
            for (std::uint64_t i = 0; i < count; ++i) {
                run_one(txn, undo, tentative, index, static_cast<int>(rng.below(4)));
            }
            REQUIRE(dump(h.state->tables(), txn) == tentative.dump());
            if (rng.chance(0.5)) {
                must(undo.rollback(txn));
                REQUIRE(dump(h.state->tables(), txn) == before);
                history = history_before;  // those grants never happened
                ++rollbacks;
            } else {
                model = std::move(tentative);
                history.end_entry();
            }
            must(txn.commit());
        } else {
            h.reopen();
            REQUIRE(h.dump_all() == model.dump());
        }
        compare_queries();
    }
    for (const auto& [name, tokens] : tokens_of) {
        grants += tokens.size();
    }
    INFO("grants=" << grants << " rollbacks=" << rollbacks);
    CHECK(grants > static_cast<std::uint64_t>(steps) / 20);  // the run did exercise grants
}

}  // namespace
}  // namespace queen::locks::testing
