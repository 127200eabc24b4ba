// modules/log/tests/crash_writer/payload.hpp — the payload the crash test writes at each index,
// so the parent can check every acknowledged record byte for byte after a SIGKILL.
#pragma once

#include <cstdint>

#include "queen/core/bytes.hpp"
#include "queen/core/rng.hpp"

namespace queen::log::testing {

/// 1..600 bytes, fully determined by `index`.
inline Bytes crash_payload(std::uint64_t index) {
    std::uint64_t state = index * 0x9E3779B97F4A7C15ULL + 17;
    const std::size_t size = 1 + static_cast<std::size_t>(Rng::splitmix64(state) % 600);
    Bytes out(size);
    for (std::size_t i = 0; i < size; i += 8) {
        const std::uint64_t word = Rng::splitmix64(state);
        for (std::size_t j = 0; j < 8 && i + j < size; ++j) {
            out[i + j] = static_cast<Byte>(word >> (8 * j));
        }
    }
    return out;
}

/// Terms grow every 1000 indexes, so recovery also checks term bookkeeping.
inline std::uint64_t crash_term(std::uint64_t index) {
    return 1 + index / 1000;
}

}  // namespace queen::log::testing
