// queen/core/rng.hpp — seeded randomness (xoshiro256**), injected; the only source of random
// numbers.
#pragma once

#include <cstdint>
#include <string_view>

#include "queen/core/assert.hpp"

namespace queen {

/// A small, fast, seedable generator (xoshiro256**, seeded by splitmix64). Same seed, same stream
/// on every platform. Not cryptographic. Not thread-safe: one per thread or per simulated actor.
class Rng {
public:
    explicit Rng(std::uint64_t seed) noexcept { reseed(seed); }
    void reseed(std::uint64_t seed) noexcept {
        seed_ = seed;
        for (auto& word : state_) {
            word = splitmix64(seed);
        }
    }
    [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }

    /// A uniformly distributed 64-bit value.
    std::uint64_t next() noexcept {
        const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const std::uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }
    /// Uniform in [0, bound). bound > 0. (Lemire's multiply-shift; the tiny bias is irrelevant
    /// here.)
    std::uint64_t below(std::uint64_t bound) noexcept {
        QUEEN_ASSERT(bound > 0, "Rng::below(0)");
        __extension__ using u128 = unsigned __int128;
        return static_cast<std::uint64_t>((static_cast<u128>(next()) * bound) >> 64);
    }
    /// Uniform in [low, high]. low <= high.
    std::uint64_t between(std::uint64_t low, std::uint64_t high) noexcept {
        QUEEN_ASSERT(low <= high, "Rng::between: low > high");
        if (high - low == UINT64_MAX) {
            return next();
        }
        return low + below(high - low + 1);
    }
    /// True with probability `probability` in [0, 1].
    bool chance(double probability) noexcept { return unit() < probability; }
    /// Uniform in [0, 1).
    double unit() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

    static std::uint64_t splitmix64(std::uint64_t& state) noexcept {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) noexcept {
        return (x << k) | (x >> (64 - k));
    }
    std::uint64_t state_[4]{};
    std::uint64_t seed_ = 0;
};

/// A seed for a process that was given none: from the OS entropy source (core and cli only).
std::uint64_t random_seed();

}  // namespace queen
