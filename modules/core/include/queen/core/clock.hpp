// queen/core/clock.hpp — time is injected: modules take a Clock&, never read a clock themselves.
#pragma once

#include <cstdint>

namespace queen {

/// A source of time. Modules receive one; only core and cli create the system clock.
/// Thread-safety: SystemClock is safe from any thread; ManualClock is not synchronised.
class Clock {
public:
    virtual ~Clock() = default;
    /// Wall-clock milliseconds since the Unix epoch (may jump; used to stamp log entries).
    [[nodiscard]] virtual std::int64_t wall_ms() const = 0;
    /// Monotonic nanoseconds since an arbitrary origin (never jumps; used for timeouts/latency).
    [[nodiscard]] virtual std::int64_t monotonic_ns() const = 0;
};

/// The real clocks of the machine.
class SystemClock final : public Clock {
public:
    [[nodiscard]] std::int64_t wall_ms() const override;
    [[nodiscard]] std::int64_t monotonic_ns() const override;
    /// One process-wide instance.
    static SystemClock& instance();
};

/// A clock tests move by hand.
class ManualClock final : public Clock {
public:
    explicit ManualClock(std::int64_t wall_ms_start = 1'700'000'000'000,
                         std::int64_t monotonic_ns_start = 0)
        : wall_ms_(wall_ms_start), monotonic_ns_(monotonic_ns_start) {}
    [[nodiscard]] std::int64_t wall_ms() const override { return wall_ms_; }
    [[nodiscard]] std::int64_t monotonic_ns() const override { return monotonic_ns_; }
    void advance_ms(std::int64_t ms) {
        wall_ms_ += ms;
        monotonic_ns_ += ms * 1'000'000;
    }

private:
    std::int64_t wall_ms_;
    std::int64_t monotonic_ns_;
};

/// Sleeps the calling thread (core and cli only; tests await events instead).
void sleep_ms(std::int64_t ms);

}  // namespace queen
