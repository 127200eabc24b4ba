// timers/tests/property_test.cpp — random set/cancel/fire with random time advances against a
// std::map model; every query is compared to the model after each step (QUEEN_SEED,
// QUEEN_PROPERTY_STEPS).
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "harness.hpp"
#include "queen/core/rng.hpp"

namespace queen::timers {
namespace {

using testing::Harness;
using testing::must;
using testing::text;

struct ModelTimer {
    std::int64_t due_at = 0;
    std::int64_t interval_ms = 0;
    std::int64_t end_at = 0;
    std::uint64_t fired = 0;
    std::int64_t created_at = 0;
    std::string payload;
};
/// Ids compare as LMDB compares keys: bytewise, unsigned. std::string's order is char_traits'
/// (unsigned too), so a std::map<std::string, ...> already matches.
using Model = std::map<std::string, ModelTimer>;

/// The model's rules, written independently of src/timers.cpp.
bool model_valid(const Options& options, const Set& c) {
    if (c.id.empty() || c.id.size() > options.id_bytes_max) {
        return false;
    }
    if (c.payload.size() > options.payload_bytes_max || c.due_at.value() <= 0) {
        return false;
    }
    if (c.interval_ms < 0 || (c.interval_ms > 0 && c.interval_ms < options.interval_ms_min)) {
        return false;
    }
    return c.end_at.value() == 0 || c.end_at >= c.due_at;
}

/// Firings as the model expects them: due order then id order, at most `limit`.
FireResult model_fire(Model& model, std::int64_t now, std::size_t limit) {
    std::vector<std::tuple<std::int64_t, std::string>> due;
    for (const auto& [id, timer] : model) {
        if (timer.due_at <= now) {
            due.emplace_back(timer.due_at, id);
        }
    }
    std::sort(due.begin(), due.end());
    FireResult out;
    out.is_complete = due.size() <= limit;
    due.resize(std::min(due.size(), limit));
    for (const auto& [due_at, id] : due) {
        ModelTimer& timer = model.at(id);
        Firing firing;
        firing.id = id;
        firing.due_at = TimestampMs{due_at};
        firing.sequence = timer.fired + 1;
        firing.payload = testing::bytes(timer.payload);
        bool is_last = timer.interval_ms == 0;
        if (!is_last) {
            std::int64_t next = timer.due_at;
            while (next <= now) {  // walk the grid: slow but obviously right
                next += timer.interval_ms;
            }
            is_last = timer.end_at != 0 && next > timer.end_at;
            timer.due_at = next;
            timer.fired += 1;
        }
        firing.is_last = is_last;
        if (is_last) {
            model.erase(id);
        }
        out.firings.push_back(std::move(firing));
    }
    return out;
}

void check_timer(const Timer& got, const std::string& id, const ModelTimer& want,
                 bool with_payload) {
    INFO("timer " << id);
    CHECK(got.id == id);
    CHECK(got.due_at.value() == want.due_at);
    CHECK(got.interval_ms == want.interval_ms);
    CHECK(got.end_at.value() == want.end_at);
    CHECK(got.fired == want.fired);
    CHECK(got.created_at.value() == want.created_at);
    CHECK(text(got.payload) == (with_payload ? want.payload : std::string()));
}

void check_queries(Harness& h, const Model& model, Rng& rng, const std::vector<std::string>& ids) {
    REQUIRE(h.count() == model.size());
    // Every timer, in id order.
    const auto all = h.list("", static_cast<std::uint32_t>(model.size() + 1));
    REQUIRE(all.size() == model.size());
    auto it = model.begin();
    for (const Timer& timer : all) {
        check_timer(timer, it->first, it->second, true);
        ++it;
    }
    // Due order and next_due.
    std::vector<std::tuple<std::int64_t, std::string>> due;
    for (const auto& [id, timer] : model) {
        due.emplace_back(timer.due_at, id);
    }
    std::sort(due.begin(), due.end());
    const auto due_limit = static_cast<std::uint32_t>(rng.below(model.size() + 2));
    const bool with_payload = rng.chance(0.5);
    const auto listed_due = h.list_due(due_limit, with_payload);
    REQUIRE(listed_due.size() == std::min<std::size_t>(due_limit, due.size()));
    for (std::size_t i = 0; i < listed_due.size(); ++i) {
        const std::string& id = std::get<1>(due[i]);
        check_timer(listed_due[i], id, model.at(id), with_payload);
    }
    const auto next = h.next_due();
    if (due.empty()) {
        CHECK_FALSE(next.has_value());
    } else {
        CHECK(next == std::get<0>(due.front()));
    }
    // A page after a random id.
    const std::string& after = rng.chance(0.2) ? std::string() : ids[rng.below(ids.size())];
    const auto limit = static_cast<std::uint32_t>(rng.below(6));
    const auto page = h.list(after, limit, with_payload);
    auto from = after.empty() ? model.begin() : model.upper_bound(after);
    REQUIRE(page.size() == std::min<std::size_t>(
                               limit, static_cast<std::size_t>(std::distance(from, model.end()))));
    for (const Timer& timer : page) {
        check_timer(timer, from->first, from->second, with_payload);
        ++from;
    }
    // get of a random id.
    const std::string& id = ids[rng.below(ids.size())];
    const auto got = h.get(id);
    const auto want = model.find(id);
    REQUIRE(got.has_value() == (want != model.end()));
    if (got) {
        check_timer(*got, id, want->second, true);
    }
}

Set random_set(Rng& rng, const std::vector<std::string>& ids, std::int64_t now) {
    Set c;
    c.id = ids[rng.below(ids.size())];
    c.due_at = TimestampMs{now - 300 + static_cast<std::int64_t>(rng.below(3000))};
    if (rng.chance(0.02)) {
        c.due_at = TimestampMs{-static_cast<std::int64_t>(rng.below(2))};  // 0 or -1: invalid
    }
    switch (rng.below(5)) {
        case 0:
        case 1: c.interval_ms = 0; break;
        case 2:
            c.interval_ms = static_cast<std::int64_t>(rng.between(5, 15));
            break;  // < 10: invalid
        default: c.interval_ms = static_cast<std::int64_t>(rng.between(10, 700)); break;
    }
    if (rng.chance(0.4)) {
        c.end_at = TimestampMs{c.due_at.value() - 5 + static_cast<std::int64_t>(rng.below(3000))};
    }
    c.payload.resize(rng.below(20));  // over 16: invalid
    for (auto& b : c.payload) {
        b = static_cast<Byte>(rng.below(256));
    }
    c.replace = rng.chance(0.3);
    return c;
}

TEST_CASE("timers: random set/cancel/fire agree with a model", "[timers][property]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    const int steps = static_cast<int>(queen::testing::env_int("QUEEN_PROPERTY_STEPS", 3000));
    Rng rng(seed);
    Options options;
    options.id_bytes_max = 6;
    options.payload_bytes_max = 16;
    options.interval_ms_min = 10;
    Harness h(options);
    h.now_ms = 10'000;
    // Ids with shared prefixes and a NUL byte, plus invalid ones (empty, too long).
    std::vector<std::string> ids = {"a",      "ab", "abc",    std::string("a\0", 2), "b", "ba", "c",
                                    "zzzzzz", "",   "toolong"};
    for (int i = 0; i < 20; ++i) {
        ids.push_back("t" + std::to_string(i));
    }
    Model model;
    std::size_t firings = 0;
    std::size_t rollbacks = 0;
    for (int step = 0; step < steps; ++step) {
        INFO("step " << step << " now " << h.now_ms);
        const auto op = rng.below(100);
        if (op < 40) {
            const Set c = random_set(rng, ids, h.now_ms);
            const auto result = h.set(c);
            const auto existing = model.find(c.id);
            if (!model_valid(options, c)) {
                CHECK(result.status == Status::invalid);
                CHECK_FALSE(result.message.empty());
            } else if (existing != model.end() && !c.replace) {
                CHECK(result.status == Status::exists);
                check_timer(result.timer, c.id, existing->second, false);
            } else {
                CHECK(result.status == Status::ok);
                CHECK(result.replaced == (existing != model.end()));
                ModelTimer& timer = model[c.id];
                timer = ModelTimer{c.due_at.value(), c.interval_ms,  c.end_at.value(), 0,
                                   h.now_ms,         text(c.payload)};
                check_timer(result.timer, c.id, timer, true);
            }
        } else if (op < 55) {
            const std::string& id = ids[rng.below(ids.size())];
            const auto result = h.cancel(id);
            if (id.empty() || id.size() > options.id_bytes_max) {
                CHECK(result.status == Status::invalid);
            } else if (model.erase(id) == 1) {
                CHECK(result.status == Status::ok);
            } else {
                CHECK(result.status == Status::not_found);
            }
        } else if (op < 80) {
            const std::size_t limit = rng.below(8);
            const auto want = model_fire(model, h.now_ms, limit);
            const auto got = h.fire(limit);
            CHECK(testing::describe(got) == testing::describe(want));
            CHECK(got.is_complete == want.is_complete);
            REQUIRE(got.firings.size() == want.firings.size());
            for (std::size_t i = 0; i < got.firings.size(); ++i) {
                CHECK(got.firings[i].payload == want.firings[i].payload);
            }
            firings += got.firings.size();
        } else if (op < 83) {
            // An entry whose later operation failed: its writes are taken back.
            const auto before = h.dump();
            auto txn = must(h.env->begin_write());
            store::UndoLog undo;
            const int writes = 1 + static_cast<int>(rng.below(5));
            for (int i = 0; i < writes; ++i) {
                if (rng.chance(0.7)) {
                    (void)must(h.state->apply(txn, undo, random_set(rng, ids, h.now_ms),
                                              TimestampMs{h.now_ms}));
                } else {
                    (void)must(h.state->apply(txn, undo, Cancel{ids[rng.below(ids.size())]},
                                              TimestampMs{h.now_ms}));
                }
            }
            must(undo.rollback(txn));
            must(txn.commit());
            REQUIRE(h.dump() == before);
            ++rollbacks;
        } else if (op < 84) {
            h.reopen();
        } else {
            h.now_ms += static_cast<std::int64_t>(rng.below(rng.chance(0.1) ? 5000 : 200));
        }
        check_queries(h, model, rng, ids);
    }
    INFO("firings=" << firings << " rollbacks=" << rollbacks);
    CHECK(firings > 0);
}

}  // namespace
}  // namespace queen::timers
