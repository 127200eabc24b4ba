// bench/tests/pacer_test.cpp — the open-loop schedule: due times, due counts, batches, unpaced.
#include "queen/bench/pacer.hpp"

#include <cstdint>
#include <limits>

#include "queen/testing/catch.hpp"

using queen::bench::Pacer;

TEST_CASE("bench: a paced schedule spaces messages by 1/rate from the start", "[bench][pacer]") {
    const Pacer pacer{150'000, 1'000'000};
    CHECK(pacer.is_paced());
    CHECK(pacer.due_ns(0) == 1'000'000);
    // 150,000 msgs/s: a batch of 100 every 666,666.67 ns, truncated to whole nanoseconds.
    CHECK(pacer.due_ns(100) == 1'000'000 + 666'666);
    CHECK(pacer.due_ns(300) == 1'000'000 + 2'000'000);
    CHECK(pacer.due_ns(150'000) == 1'000'000 + 1'000'000'000);
    // Ten seconds hold 1.5M messages; the next one is due after the end.
    CHECK(pacer.due_ns(1'500'000) == 1'000'000 + 10'000'000'000);
    // No drift over long runs: one hour at 150,000/s lands exactly on the hour.
    CHECK(pacer.due_ns(540'000'000) == 1'000'000 + 3'600'000'000'000);
}

TEST_CASE("bench: due counts invert due times", "[bench][pacer]") {
    for (const double rate : {1.0, 7.0, 1'000.0, 150'000.0, 333'333.3, 1e9}) {
        INFO("rate=" << rate);
        const Pacer pacer{rate, 5'000};
        CHECK(pacer.due_count(4'999) == 0);
        CHECK(pacer.due_count(5'000) == 1);  // message 0 is due at the start
        for (const std::uint64_t n : {1ull, 2ull, 99ull, 100ull, 12'345ull, 1'000'000ull}) {
            const std::int64_t due = pacer.due_ns(n);
            INFO("n=" << n << " due=" << due);
            CHECK(pacer.due_ns(n - 1) <= due);
            CHECK(pacer.due_count(due) >= n + 1);
            if (pacer.due_ns(n - 1) < due) {
                CHECK(pacer.due_count(due - 1) == n);
            }
        }
    }
}

TEST_CASE("bench: rate 0 is unpaced: everything is due at the start", "[bench][pacer]") {
    const Pacer pacer{0, 42};
    CHECK_FALSE(pacer.is_paced());
    CHECK(pacer.due_ns(0) == 42);
    CHECK(pacer.due_ns(1'000'000'000) == 42);
    CHECK(pacer.due_count(0) == std::numeric_limits<std::uint64_t>::max());
}

TEST_CASE("bench: due times saturate instead of overflowing", "[bench][pacer]") {
    const Pacer pacer{1e-6, std::numeric_limits<std::int64_t>::max() - 10};
    CHECK(pacer.due_ns(0) == std::numeric_limits<std::int64_t>::max() - 10);
    CHECK(pacer.due_ns(1) == std::numeric_limits<std::int64_t>::max());
}
