// timers/tests/scale_test.cpp — a million pending timers: created in batches of 10,000 per txn,
// next_due is the minimum, the first 1,000 fire in due order (QUEEN_TIMERS_SCALE sets the count;
// about 4.5 s on the 2-core dev VM, so it stays in the default run).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "queen/core/rng.hpp"

namespace queen::timers {
namespace {

using testing::Harness;
using testing::must;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void run_scale(std::int64_t count) {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ") timers=" << count);
    REQUIRE(count > 1000);
    Rng rng(seed);
    Harness h;
    const std::int64_t base = 1'700'000'000'000;
    const std::int64_t batch = 10'000;
    std::vector<std::int64_t> due(static_cast<std::size_t>(count));
    const auto started = std::chrono::steady_clock::now();
    for (std::int64_t done = 0; done < count;) {
        auto txn = must(h.env->begin_write());
        store::UndoLog undo;
        for (std::int64_t i = 0; i < batch && done < count; ++i, ++done) {
            Set command;
            char id[32];
            std::snprintf(id, sizeof id, "timer-%08lld", static_cast<long long>(done));
            command.id = id;
            // Due times in random order over a day, with ties.
            const std::int64_t due_at = base + static_cast<std::int64_t>(rng.below(86'400'000));
            due[static_cast<std::size_t>(done)] = due_at;
            command.due_at = TimestampMs{due_at};
            command.interval_ms = done % 10 == 0 ? 60'000 : 0;  // one in ten repeats every minute
            command.payload.assign(16, static_cast<Byte>(done));
            const auto result = must(h.state->apply(txn, undo, command, TimestampMs{base}));
            REQUIRE(result.status == Status::ok);
        }
        undo.clear();
        must(txn.commit());
    }
    const double create_s = seconds_since(started);

    // Expected firing order: due time, then id (zero-padded, so index order).
    std::vector<std::pair<std::int64_t, std::int64_t>> order(due.size());
    for (std::size_t i = 0; i < due.size(); ++i) {
        order[i] = {due[i], static_cast<std::int64_t>(i)};
    }
    std::partial_sort(order.begin(), order.begin() + 1001, order.end());
    std::vector<std::int64_t> sorted(1001);
    for (std::size_t i = 0; i < sorted.size(); ++i) {
        sorted[i] = order[i].first;
    }
    auto read_started = std::chrono::steady_clock::now();
    CHECK(h.count() == static_cast<std::uint64_t>(count));
    CHECK(h.next_due() == sorted.front());
    const double read_s = seconds_since(read_started);

    // Fire the first 1,000: now is the 1,000th due time, limit 1,000. More may share that time
    // (ties), so the call may be incomplete, and exactly the 1,000 earliest (due, id) fire.
    h.now_ms = sorted[999];
    const auto fire_started = std::chrono::steady_clock::now();
    const auto fired = h.fire(1000);
    const double fire_s = seconds_since(fire_started);
    REQUIRE(fired.firings.size() == 1000);
    CHECK(fired.is_complete == (sorted[1000] > sorted[999]));
    for (std::size_t i = 0; i < fired.firings.size(); ++i) {
        char id[32];
        std::snprintf(id, sizeof id, "timer-%08lld", static_cast<long long>(order[i].second));
        CHECK(fired.firings[i].id == id);
        CHECK(fired.firings[i].due_at.value() == sorted[i]);
        CHECK(fired.firings[i].payload.size() == 16);
    }
    // One-shots are gone; repeating ones moved to the first minute after now on their grid.
    std::size_t repeating = 0;
    std::int64_t expected_next = sorted[1000];
    for (const Firing& firing : fired.firings) {
        const auto timer = h.get(firing.id);
        REQUIRE(timer.has_value() == !firing.is_last);
        if (timer) {
            ++repeating;
            CHECK(timer->due_at.value() > h.now_ms);
            CHECK(timer->due_at.value() - 60'000 <= h.now_ms);
            CHECK((timer->due_at.value() - firing.due_at.value()) % 60'000 == 0);
            expected_next = std::min(expected_next, timer->due_at.value());
        }
    }
    CHECK(repeating > 0);
    CHECK(h.count() == static_cast<std::uint64_t>(count) - (1000 - repeating));
    const auto next = h.next_due();
    REQUIRE(next.has_value());
    CHECK(*next == expected_next);
    CHECK(h.list_due(1).at(0).due_at.value() == *next);

    const auto stats = must(h.env->stats());
    std::printf(
        "timers: %lld pending timers created in %.2f s (batches of %lld), count+next_due "
        "%.4f s, fire(1000) %.4f s (%zu repeating rescheduled); data.mdb %.1f MB, used "
        "%.1f MB\n",
        static_cast<long long>(count), create_s, static_cast<long long>(batch), read_s, fire_s,
        repeating, static_cast<double>(stats.file_size_bytes) / 1e6,
        static_cast<double>(stats.used_bytes()) / 1e6);
}

TEST_CASE(
    "timers: a million pending timers cost LMDB space only, next_due is the minimum and "
    "the first 1000 fire in order",
    "[timers][scale]") {
    run_scale(queen::testing::env_int("QUEEN_TIMERS_SCALE", 1'000'000));
}

}  // namespace
}  // namespace queen::timers
