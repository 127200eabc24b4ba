// bench/tests/lanes_test.cpp — the lanes workload's pieces: producers' lane ranges, and the
// per-lane order checker (in order, violations, gaps, missing, redeliveries) against a model.
#include "queen/bench/lanes.hpp"

#include <algorithm>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

using queen::bench::LaneChecker;
using queen::bench::LaneRange;
using Delivery = queen::bench::LaneChecker::Delivery;

TEST_CASE("bench: lane ranges split the lanes evenly and cover each once", "[bench][lanes]") {
    // 10 lanes, 3 producers: the first producer owns the one lane left over.
    const std::vector<std::pair<std::int64_t, std::int64_t>> expected = {{0, 4}, {4, 3}, {7, 3}};
    for (std::int64_t p = 0; p < 3; ++p) {
        const LaneRange range = queen::bench::lane_range(p, 3, 10);
        CHECK(range.first == expected[static_cast<std::size_t>(p)].first);
        CHECK(range.count == expected[static_cast<std::size_t>(p)].second);
    }
    // 10,000 lanes over 4 producers (the lanes-10k profile): 2,500 each.
    CHECK(queen::bench::lane_range(3, 4, 10'000).first == 7'500);
    CHECK(queen::bench::lane_range(3, 4, 10'000).count == 2'500);
    for (std::int64_t lanes = 1; lanes <= 40; ++lanes) {
        for (std::int64_t producers = 1; producers <= lanes; ++producers) {
            INFO("lanes " << lanes << ", producers " << producers);
            std::int64_t next = 0;
            std::int64_t smallest = lanes;
            std::int64_t largest = 0;
            for (std::int64_t p = 0; p < producers; ++p) {
                const LaneRange range = queen::bench::lane_range(p, producers, lanes);
                CHECK(range.first == next);  // contiguous, in producer order
                CHECK(range.count >= 1);
                next = range.first + range.count;
                smallest = std::min(smallest, range.count);
                largest = std::max(largest, range.count);
            }
            CHECK(next == lanes);  // every lane, once
            CHECK(largest - smallest <= (lanes % producers == 0 ? 0 : 1));
        }
    }
}

TEST_CASE("bench: lane checker counts nothing for lanes delivered in order", "[bench][lanes]") {
    LaneChecker checker(3);
    CHECK(checker.lanes() == 3);
    for (std::uint64_t sequence = 1; sequence <= 5; ++sequence) {
        for (std::size_t lane = 0; lane < 3; ++lane) {
            checker.produced(lane);
            CHECK(checker.deliver(lane, sequence) == Delivery::in_order);
        }
    }
    CHECK(checker.order_violations() == 0);
    CHECK(checker.gaps() == 0);
    CHECK(checker.missing() == 0);
    CHECK(checker.produced_total() == 15);
    CHECK(checker.delivered_total() == 15);
}

TEST_CASE("bench: lane checker counts a late message as a violation, not as missing",
          "[bench][lanes]") {
    LaneChecker checker(2);
    checker.produced(1, 3);
    CHECK(checker.deliver(1, 1) == Delivery::in_order);
    CHECK(checker.deliver(1, 3) == Delivery::gap);
    CHECK(checker.deliver(1, 2) == Delivery::violation);  // at or below the last seen (3)
    CHECK(checker.order_violations() == 1);
    CHECK(checker.gaps() == 1);
    CHECK(checker.missing() == 0);                        // 2 came, late
    CHECK(checker.deliver(1, 2) == Delivery::violation);  // and again: a duplicate
    CHECK(checker.order_violations() == 2);
    CHECK(checker.delivered_total() == 3);
    CHECK(checker.deliver(0, 0) == Delivery::violation);  // sequences start at 1
}

TEST_CASE("bench: lane checker counts a gap once and its skipped messages as missing",
          "[bench][lanes]") {
    LaneChecker checker(1);
    checker.produced(0, 9);
    for (const std::uint64_t sequence : {1, 2, 6, 7}) {  // 3, 4, 5 skipped; 8, 9 never came
        checker.deliver(0, sequence);
    }
    CHECK(checker.gaps() == 1);
    CHECK(checker.order_violations() == 0);
    CHECK(checker.missing() == 5);
    CHECK(checker.deliver(0, 4) == Delivery::violation);  // fills the middle of the hole
    CHECK(checker.missing() == 4);
    CHECK(checker.deliver(0, 3) == Delivery::violation);
    CHECK(checker.deliver(0, 5) == Delivery::violation);
    CHECK(checker.missing() == 2);
    CHECK(checker.deliver(0, 8) == Delivery::in_order);
    CHECK(checker.deliver(0, 9) == Delivery::in_order);
    CHECK(checker.missing() == 0);
    CHECK(checker.gaps() == 1);
    CHECK(checker.order_violations() == 3);
}

TEST_CASE("bench: lane checker counts a batch redelivered in order as violations only",
          "[bench][lanes]") {
    // A lease that expired before its ack: the broker delivers 1..3 again, in order, then 4.
    LaneChecker checker(1);
    checker.produced(0, 4);
    for (const std::uint64_t sequence : {1, 2, 3, 1, 2, 3, 4}) {
        checker.deliver(0, sequence);
    }
    CHECK(checker.order_violations() == 3);
    CHECK(checker.gaps() == 0);
    CHECK(checker.missing() == 0);
    CHECK(checker.delivered_total() == 4);  // distinct messages: the redelivery adds none
}

TEST_CASE("bench: lane checker counts what was produced but never delivered", "[bench][lanes]") {
    LaneChecker checker(4);
    checker.produced(0, 5);
    checker.produced(2, 2);
    checker.produced(3, 1);
    for (const std::uint64_t sequence : {1, 2, 3}) {
        checker.deliver(0, sequence);
    }
    checker.deliver(3, 1);
    CHECK(checker.missing() == 2 + 2);  // lane 0's 4 and 5; lane 2's 1 and 2
    CHECK(checker.gaps() == 0);
    CHECK(checker.order_violations() == 0);
    // More delivered than counted produced (a push whose answer was lost) adds nothing.
    checker.deliver(1, 1);
    CHECK(checker.missing() == 4);
}

namespace {
/// The checker's rules on one lane, the slow way: every delivered sequence remembered.
struct LaneModel {
    std::uint64_t last = 0;
    std::set<std::uint64_t> delivered;
    std::uint64_t violations = 0;
    std::uint64_t gaps = 0;
    void deliver(std::uint64_t sequence) {
        if (sequence <= last) {
            ++violations;
        } else {
            gaps += sequence > last + 1 ? 1 : 0;
            last = sequence;
        }
        if (sequence > 0) {
            delivered.insert(sequence);
        }
    }
};
}  // namespace

TEST_CASE("bench: lane checker agrees with a model on random deliveries", "[bench][lanes]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng(seed);
    for (int round = 0; round < 200; ++round) {
        const std::size_t lanes = 1 + rng.below(4);
        LaneChecker checker(lanes);
        std::vector<LaneModel> models(lanes);
        std::vector<std::uint64_t> produced(lanes, 0);
        for (std::size_t lane = 0; lane < lanes; ++lane) {
            produced[lane] = rng.below(30);
            checker.produced(lane, produced[lane]);
        }
        // Mostly in order, with skips, repeats and stragglers.
        std::vector<std::uint64_t> next(lanes, 1);
        for (int step = 0, steps = static_cast<int>(rng.below(80)); step < steps; ++step) {
            const std::size_t lane = rng.below(lanes);
            std::uint64_t sequence = next[lane];
            if (rng.chance(0.2)) {
                sequence += rng.below(4);  // a skip
            } else if (rng.chance(0.2)) {
                sequence = rng.below(next[lane] + 1);  // a repeat or a straggler (or 0)
            }
            next[lane] = std::max(next[lane], sequence + 1);
            models[lane].deliver(sequence);
            checker.deliver(lane, sequence);
        }
        std::uint64_t violations = 0;
        std::uint64_t gaps = 0;
        std::uint64_t missing = 0;
        for (std::size_t lane = 0; lane < lanes; ++lane) {
            violations += models[lane].violations;
            gaps += models[lane].gaps;
            missing += produced[lane] > models[lane].delivered.size()
                           ? produced[lane] - models[lane].delivered.size()
                           : 0;
        }
        INFO("round " << round);
        CHECK(checker.order_violations() == violations);
        CHECK(checker.gaps() == gaps);
        CHECK(checker.missing() == missing);
    }
}

TEST_CASE("bench: lane checker stays exact with consumers on several threads", "[bench][lanes]") {
    // Four threads, each the only reader of every fourth lane (as leases make it), deliver
    // their lanes in order: nothing is counted; then one skips a message on each lane.
    constexpr std::size_t lanes = 64;
    constexpr std::uint64_t per_lane = 500;
    LaneChecker checker(lanes);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 4; ++t) {
        threads.emplace_back([&checker, t] {
            for (std::uint64_t sequence = 1; sequence <= per_lane; ++sequence) {
                for (std::size_t lane = t; lane < lanes; lane += 4) {
                    checker.produced(lane);
                    // Thread 3 never delivers sequence 7: one gap and one missing per lane.
                    if (!(t == 3 && sequence == 7)) {
                        checker.deliver(lane, sequence);
                    }
                }
            }
        });
    }
    for (std::thread& thread : threads) {
        thread.join();
    }
    CHECK(checker.order_violations() == 0);
    CHECK(checker.gaps() == lanes / 4);
    CHECK(checker.missing() == lanes / 4);
    CHECK(checker.produced_total() == lanes * per_lane);
}
