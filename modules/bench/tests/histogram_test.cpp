// bench/tests/histogram_test.cpp — bucket arithmetic, percentiles against an exact model, merge.
#include "queen/bench/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

using queen::bench::Histogram;

TEST_CASE("bench: histogram buckets hold their values with under 1% relative error",
          "[bench][histogram]") {
    for (std::int64_t v = 0; v < 256; ++v) {
        CHECK(Histogram::bucket_value_max(Histogram::bucket_index(v)) == v);
    }
    std::int64_t previous_index = -1;
    for (std::int64_t v = 1; v > 0 && v < INT64_MAX / 3; v = v * 3 + 1) {
        const std::size_t index = Histogram::bucket_index(v);
        REQUIRE(index < Histogram::bucket_count);
        CHECK(static_cast<std::int64_t>(index) > previous_index);
        previous_index = static_cast<std::int64_t>(index);
        const std::int64_t high = Histogram::bucket_value_max(index);
        CHECK(high >= v);
        CHECK(static_cast<double>(high - v) <= static_cast<double>(v) / 128.0);
        // The next value up starts the next bucket.
        CHECK(Histogram::bucket_index(high + 1) == index + 1);
    }
    CHECK(Histogram::bucket_index(INT64_MAX) == Histogram::bucket_count - 1);
    CHECK(Histogram::bucket_value_max(Histogram::bucket_count - 1) == INT64_MAX);
}

TEST_CASE("bench: histogram percentiles match the sorted values within bucket precision",
          "[bench][histogram]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng(seed);
    Histogram h;
    std::vector<std::int64_t> values;
    const std::size_t n = 1 + rng.below(20'000);
    for (std::size_t i = 0; i < n; ++i) {
        // Latency-like: mostly around 1 ms, a long tail up to seconds.
        const auto v = static_cast<std::int64_t>(std::exp(rng.unit() * 21.0));
        values.push_back(v);
        h.record(v);
    }
    std::sort(values.begin(), values.end());
    REQUIRE(h.count() == n);
    CHECK(h.min() == values.front());
    CHECK(h.max() == values.back());
    CHECK(h.value_at_percentile(100) == values.back());
    for (const double p : {0.0, 1.0, 50.0, 90.0, 99.0, 99.9}) {
        INFO("p" << p);
        const auto rank = std::max<std::size_t>(
            1, static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(n))));
        const std::int64_t exact = values[rank - 1];
        const std::int64_t got = h.value_at_percentile(p);
        CHECK(got >= exact);
        CHECK(static_cast<double>(got - exact) <= static_cast<double>(exact) / 128.0 + 1);
    }
}

TEST_CASE("bench: histogram merge equals recording everything in one", "[bench][histogram]") {
    Histogram a;
    Histogram b;
    Histogram all;
    for (std::int64_t v = 0; v < 5000; v += 7) {
        (v % 2 == 0 ? a : b).record(v * 1000);
        all.record(v * 1000);
    }
    Histogram merged;
    merged.merge(a);
    merged.merge(b);
    CHECK(merged.count() == all.count());
    CHECK(merged.min() == all.min());
    CHECK(merged.max() == all.max());
    for (const double p : {10.0, 50.0, 99.0, 99.9}) {
        CHECK(merged.value_at_percentile(p) == all.value_at_percentile(p));
    }
    merged.reset();
    CHECK(merged.count() == 0);
    CHECK(merged.value_at_percentile(50) == 0);
}

TEST_CASE("bench: histogram edge cases: empty, negative, repeated", "[bench][histogram]") {
    Histogram h;
    CHECK(h.value_at_percentile(99) == 0);
    CHECK(h.min() == 0);
    h.record(-5);
    CHECK(h.count() == 1);
    CHECK(h.max() == 0);
    h.record_n(1'000'000, 99);
    CHECK(h.count() == 100);
    CHECK(h.value_at_percentile(1) == 0);
    // The bucket bound is capped at the recorded maximum: exact for a single repeated value.
    CHECK(h.value_at_percentile(2) == 1'000'000);
    CHECK(h.value_at_percentile(50) == 1'000'000);
    CHECK(h.value_at_percentile(150) == 1'000'000);
    CHECK(h.value_at_percentile(-3) == 0);
}
