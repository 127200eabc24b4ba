// queen/bench/pacer.hpp — the open-loop send schedule of a paced run (`--rate`): when each message
// is due, independent of when earlier requests were answered. Arithmetic only; no clock, no sleep.
#pragma once

#include <cstdint>

namespace queen::bench {

/// An open-loop schedule of `rate_msgs_per_s` messages per second shared by every producer:
/// message n (0-based sequence number across all producers) is due at
/// start_ns + n * 10^9 / rate_msgs_per_s. A batch is due when its first message is. Producers
/// send a batch at its due time, or at once when they are behind, and stamp it with the due
/// time: a stall then shows as latency instead of as fewer, later requests (coordinated
/// omission). A rate of 0 means unpaced: every message is due at start_ns.
/// Thread-safety: immutable after construction; any thread may read it.
class Pacer {
public:
    /// Precondition: rate_msgs_per_s >= 0 and finite.
    Pacer(double rate_msgs_per_s, std::int64_t start_ns) noexcept;

    [[nodiscard]] bool is_paced() const noexcept { return rate_msgs_per_s_ > 0; }
    [[nodiscard]] double rate_msgs_per_s() const noexcept { return rate_msgs_per_s_; }
    [[nodiscard]] std::int64_t start_ns() const noexcept { return start_ns_; }

    /// When message `sequence` is due (start_ns() when unpaced). Monotonic in `sequence`.
    [[nodiscard]] std::int64_t due_ns(std::uint64_t sequence) const noexcept;
    /// How many messages are due at or before `now_ns` (0 before the start; unpaced: unbounded,
    /// returned as UINT64_MAX).
    [[nodiscard]] std::uint64_t due_count(std::int64_t now_ns) const noexcept;

private:
    double rate_msgs_per_s_;
    std::int64_t start_ns_;
};

}  // namespace queen::bench
