// modules/core/src/clock.cpp — the system clock, random seeds and sleep: the only clock reads in
// modules.
#include <sys/random.h>

#include <chrono>
#include <thread>

#include "queen/core/clock.hpp"
#include "queen/core/rng.hpp"

namespace queen {

std::int64_t SystemClock::wall_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::int64_t SystemClock::monotonic_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

SystemClock& SystemClock::instance() {
    static SystemClock clock;
    return clock;
}

void sleep_ms(std::int64_t ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

std::uint64_t random_seed() {
    std::uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed)) {
        seed = static_cast<std::uint64_t>(SystemClock::instance().monotonic_ns());
    }
    return seed;
}

}  // namespace queen
