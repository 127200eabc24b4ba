// api/tests/rate_meter_test.cpp — the lock-free RateMeter against the plain model it replaced
// (60 buckets of {second, count}), and its totals under concurrent adds.
#include <array>
#include <thread>
#include <vector>

#include "context.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace queen::api::detail {
namespace {

/// The meter as it was, with a mutex and one {second, count} pair per bucket.
class ModelMeter {
public:
    void add(std::int64_t now_ms, std::uint64_t count) {
        const std::int64_t second = now_ms / 1000;
        const auto slot = static_cast<std::size_t>(((second % 60) + 60) % 60);
        if (second_[slot] != second) {
            second_[slot] = second;
            count_[slot] = 0;
        }
        count_[slot] += count;
    }
    double per_second(std::int64_t now_ms, std::int64_t seconds) const {
        seconds = seconds < 1 ? 1 : (seconds > 60 ? 60 : seconds);
        const std::int64_t current = now_ms / 1000;
        std::uint64_t total = 0;
        for (std::size_t slot = 0; slot < second_.size(); ++slot) {
            if (second_[slot] > current - seconds && second_[slot] <= current) {
                total += count_[slot];
            }
        }
        return static_cast<double>(total) / static_cast<double>(seconds);
    }

private:
    std::array<std::int64_t, 60> second_{};
    std::array<std::uint64_t, 60> count_{};
};

TEST_CASE("api: RateMeter counts per second like the mutex model", "[api][metrics]") {
    const std::uint64_t seed = testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    for (int run = 0; run < 50; ++run) {
        RateMeter meter;
        ModelMeter model;
        // Around the epoch (negative seconds), or a 2026 wall clock.
        std::int64_t now_ms =
            rng.chance(0.3) ? -static_cast<std::int64_t>(rng.below(200'000)) : 1'764'491'234'567;
        for (int step = 0; step < 2000; ++step) {
            // Mostly forward by up to 3 s, sometimes a jump of minutes, sometimes a step back.
            switch (rng.below(20)) {
                case 0: now_ms += static_cast<std::int64_t>(rng.below(300'000)); break;
                case 1: now_ms -= static_cast<std::int64_t>(rng.below(5'000)); break;
                default: now_ms += static_cast<std::int64_t>(rng.below(3'000));
            }
            const std::uint64_t count = rng.below(1000);
            meter.add(now_ms, count);
            model.add(now_ms, count);
            const auto seconds = static_cast<std::int64_t>(rng.below(62));
            const std::int64_t read_ms = now_ms + static_cast<std::int64_t>(rng.below(4000)) - 1000;
            REQUIRE(meter.per_second(read_ms, seconds) == model.per_second(read_ms, seconds));
        }
    }
}

TEST_CASE("api: RateMeter loses no count to concurrent adds", "[api][metrics]") {
    RateMeter meter;
    constexpr int threads = 4;
    constexpr int adds = 50'000;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&meter] {
            for (int i = 0; i < adds; ++i) {
                meter.add(7'000 + i % 1000, 1);  // all in second 7
            }
        });
    }
    for (std::thread& worker : workers) {
        worker.join();
    }
    CHECK(meter.per_second(7'999, 1) == threads * adds);
    CHECK(meter.per_second(67'000, 60) == 0);  // a minute later it has aged out
}

}  // namespace
}  // namespace queen::api::detail
