// bench/src/pacer.cpp — due times of an open-loop send schedule.
#include "queen/bench/pacer.hpp"

#include <cmath>
#include <limits>

#include "queen/core/assert.hpp"

namespace queen::bench {

Pacer::Pacer(double rate_msgs_per_s, std::int64_t start_ns) noexcept
    : rate_msgs_per_s_(rate_msgs_per_s), start_ns_(start_ns) {
    QUEEN_ASSERT(std::isfinite(rate_msgs_per_s) && rate_msgs_per_s >= 0,
                 "a rate is finite and not negative");
}

std::int64_t Pacer::due_ns(std::uint64_t sequence) const noexcept {
    if (!is_paced()) {
        return start_ns_;
    }
    // A long double keeps nanosecond precision for any count a run can reach (2^64 messages at
    // 1 msg/s would still be exact to the nanosecond in its 64-bit mantissa).
    const long double offset_ns =
        static_cast<long double>(sequence) * 1e9L / static_cast<long double>(rate_msgs_per_s_);
    const auto max_offset_ns =
        static_cast<long double>(std::numeric_limits<std::int64_t>::max() - start_ns_);
    if (offset_ns >= max_offset_ns) {
        return std::numeric_limits<std::int64_t>::max();
    }
    return start_ns_ + static_cast<std::int64_t>(offset_ns);
}

std::uint64_t Pacer::due_count(std::int64_t now_ns) const noexcept {
    if (!is_paced()) {
        return std::numeric_limits<std::uint64_t>::max();
    }
    if (now_ns < start_ns_) {
        return 0;
    }
    // Messages 0..k are due when k * 1e9 / rate <= elapsed, i.e. k <= elapsed * rate / 1e9.
    const long double elapsed_ns = static_cast<long double>(now_ns - start_ns_);
    const auto last = static_cast<std::uint64_t>(
        std::floor(elapsed_ns * static_cast<long double>(rate_msgs_per_s_) / 1e9L));
    std::uint64_t count = last + 1;
    // Rounding of the two formulas must agree: due_ns(count - 1) <= now < due_ns(count).
    while (count > 0 && due_ns(count - 1) > now_ns) {
        --count;
    }
    while (due_ns(count) <= now_ns) {
        ++count;
    }
    return count;
}

}  // namespace queen::bench
