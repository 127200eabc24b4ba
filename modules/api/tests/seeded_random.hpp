// api/tests/seeded_random.hpp — a RandomSource for tests: seeded, so a failing run replays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "queen/api/api.hpp"
#include "queen/core/rng.hpp"

namespace queen::api::testing {

/// Seeded, thread-safe randomness for nonces, keys and generated ids.
class SeededRandom final : public RandomSource {
public:
    explicit SeededRandom(std::uint64_t seed) : rng_(seed) {}
    void fill(std::uint8_t* data, std::size_t size) override {
        std::lock_guard lock(mutex_);
        for (std::size_t i = 0; i < size; ++i) {
            data[i] = static_cast<std::uint8_t>(rng_.next());
        }
    }

private:
    std::mutex mutex_;
    Rng rng_;
};

}  // namespace queen::api::testing
