// core/src/iso_time.cpp — ISO-8601 UTC text of a time (proleptic Gregorian; Howard Hinnant's
// civil calendar algorithm).
#include "queen/core/iso_time.hpp"

#include <algorithm>
#include <cstdio>

#include "queen/core/assert.hpp"

namespace queen {
namespace {

struct Civil {
    std::int64_t year;
    unsigned month;
    unsigned day;
};

Civil civil_from_days(std::int64_t days) {
    days += 719468;
    const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    const auto day_of_era = static_cast<unsigned>(days - era * 146097);
    const unsigned year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
    const std::int64_t year = static_cast<std::int64_t>(year_of_era) + era * 400;
    const unsigned day_of_year =
        day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    const unsigned month_index = (5 * day_of_year + 2) / 153;
    const unsigned day = day_of_year - (153 * month_index + 2) / 5 + 1;
    const unsigned month = month_index < 10 ? month_index + 3 : month_index - 9;
    return Civil{year + (month <= 2 ? 1 : 0), month, day};
}

}  // namespace

std::size_t write_iso_time(char* out, std::int64_t ms, bool microseconds) noexcept {
    const std::int64_t days = floor_div(ms, 86'400'000);
    const std::int64_t ms_of_day = ms - days * 86'400'000;
    const Civil civil = civil_from_days(days);
    const auto hours = static_cast<int>(ms_of_day / 3'600'000);
    const auto minutes = static_cast<int>(ms_of_day / 60'000 % 60);
    const auto seconds = static_cast<int>(ms_of_day / 1000 % 60);
    const auto millis = static_cast<int>(ms_of_day % 1000);
    if (civil.year >= 0 && civil.year <= 9999) {
        // Plain digits, no printf.
        std::fill_n(out, 27, '0');
        const std::size_t length = microseconds ? 27 : 24;
        const auto put = [out](std::size_t at, std::size_t width, std::int64_t value) {
            for (std::size_t i = width; i > 0; --i) {
                out[at + i - 1] = static_cast<char>('0' + value % 10);
                value /= 10;
            }
        };
        put(0, 4, civil.year);
        out[4] = '-';
        put(5, 2, civil.month);
        out[7] = '-';
        put(8, 2, civil.day);
        out[10] = 'T';
        put(11, 2, hours);
        out[13] = ':';
        put(14, 2, minutes);
        out[16] = ':';
        put(17, 2, seconds);
        out[19] = '.';
        put(20, 3, millis);
        out[length - 1] = 'Z';  // the microsecond digits, when asked for, stay "000"
        return length;
    }
    const int written =
        std::snprintf(out, iso_time_bytes_max, "%04lld-%02u-%02uT%02d:%02d:%02d.%03d%sZ",
                      static_cast<long long>(civil.year), civil.month, civil.day, hours, minutes,
                      seconds, millis, microseconds ? "000" : "");
    QUEEN_ASSERT(written > 0 && static_cast<std::size_t>(written) < iso_time_bytes_max,
                 "write_iso_time overflow");
    return static_cast<std::size_t>(written);
}

}  // namespace queen
