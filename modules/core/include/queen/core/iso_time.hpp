// core/iso_time.hpp — milliseconds since the epoch as ISO-8601 UTC text, written without printf
// for years 0-9999 (every pop answer carries two; json::Writer::iso_time caches the date part).
#pragma once

#include <cstddef>
#include <cstdint>

namespace queen {

/// The most bytes write_iso_time() writes (a year far from ours takes more digits).
inline constexpr std::size_t iso_time_bytes_max = 64;

/// Writes `ms` since the epoch as "YYYY-MM-DDTHH:MM:SS.fffZ" (UTC; with `microseconds`, six
/// fraction digits "...SS.fff000Z") to `out`, which has room for iso_time_bytes_max bytes, and
/// returns its length: 24 (27) for years 0-9999, more or less outside them.
std::size_t write_iso_time(char* out, std::int64_t ms, bool microseconds) noexcept;

/// `value` / `divisor` rounded towards minus infinity (`divisor` > 0 or < 0, never 0).
[[nodiscard]] constexpr std::int64_t floor_div(std::int64_t value, std::int64_t divisor) noexcept {
    std::int64_t quotient = value / divisor;
    if ((value % divisor != 0) && ((value < 0) != (divisor < 0))) {
        --quotient;
    }
    return quotient;
}

}  // namespace queen
