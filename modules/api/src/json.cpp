// api/src/json.cpp — JSON writer, ISO-8601 times, body parsing and typed field readers.
#include "json.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "queen/core/assert.hpp"
#include "queen/core/hex.hpp"
#include "queen/core/json_scan.hpp"
#include "queen/http/response.hpp"

namespace queen::api::detail {

namespace {
/// Writes `ms` as ISO-8601 UTC text ("YYYY-MM-DDTHH:MM:SS.fff[000]Z") to `buffer`; returns
/// its length. Defined below.
std::size_t write_iso(std::array<char, 64>& buffer, std::int64_t ms, bool microseconds);
/// `value` / `divisor` rounded down (towards minus infinity). Defined below.
std::int64_t floor_div(std::int64_t value, std::int64_t divisor);
}  // namespace

// ---------------------------------------------------------------------------------------------
// JsonWriter

void JsonWriter::expand(std::size_t size) {
    const std::size_t needed = used_ + size;
    out_.resize(std::max({needed, out_.size() * 2, std::size_t{256}}));
}

void JsonWriter::misplaced_key() const {
    QUEEN_ASSERT(!after_key_, "JsonWriter: two keys in a row");
    QUEEN_ASSERT(depth_ > 0, "JsonWriter: a key outside an object");
    QUEEN_ASSERT(false, "JsonWriter::misplaced_key called for a key in its place");
}

JsonWriter& JsonWriter::text_key(std::string_view name) {
    QUEEN_ASSERT(!after_key_, "JsonWriter: two keys in a row");
    QUEEN_ASSERT(depth_ > 0, "JsonWriter: a key outside an object");
    prefix();
    if (is_plain_json_text(name)) {
        char* at = grow(name.size() + 3);
        at[0] = '"';
        std::memcpy(at + 1, name.data(), name.size());
        at[name.size() + 1] = '"';
        at[name.size() + 2] = ':';
    } else {
        write_escaped(name);
        *grow(1) = ':';
    }
    after_key_ = true;
    return *this;
}

void JsonWriter::write_escaped(std::string_view text) {
    // The escapes of json::scan::append_quoted: the two-character ones, \u00XX for the other
    // control bytes, everything else (UTF-8 included) as it is. At most 6 bytes per input byte.
    static constexpr char hex[] = "0123456789abcdef";
    char* const begin = grow(text.size() * 6 + 2);
    char* at = begin;
    *at++ = '"';
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && c != '"' && c != '\\') {
            *at++ = c;
            continue;
        }
        *at++ = '\\';
        switch (c) {
            case '"': *at++ = '"'; break;
            case '\\': *at++ = '\\'; break;
            case '\n': *at++ = 'n'; break;
            case '\r': *at++ = 'r'; break;
            case '\t': *at++ = 't'; break;
            case '\b': *at++ = 'b'; break;
            case '\f': *at++ = 'f'; break;
            default:
                *at++ = 'u';
                *at++ = '0';
                *at++ = '0';
                *at++ = hex[byte >> 4];
                *at++ = hex[byte & 0xf];
        }
    }
    *at++ = '"';
    used_ -= static_cast<std::size_t>((begin + text.size() * 6 + 2) - at);  // give back the rest
}

void JsonWriter::open_container(char bracket) {
    prefix();
    QUEEN_ASSERT(depth_ < depth_max, "JsonWriter: nested deeper than ", depth_max);
    *grow(1) = bracket;
    has_items_ &= ~(std::uint64_t{1} << depth_);
    ++depth_;
}

void JsonWriter::close_container(char bracket) {
    QUEEN_ASSERT(depth_ > 0 && !after_key_, "JsonWriter: unbalanced ", bracket);
    --depth_;
    *grow(1) = bracket;
}

JsonWriter& JsonWriter::begin_object() {
    open_container('{');
    return *this;
}

JsonWriter& JsonWriter::end_object() {
    close_container('}');
    return *this;
}

JsonWriter& JsonWriter::begin_array() {
    open_container('[');
    return *this;
}

JsonWriter& JsonWriter::end_array() {
    close_container(']');
    return *this;
}

JsonWriter& JsonWriter::iso_time(std::int64_t ms, bool microseconds) {
    prefix();
    // "YYYY-MM-DDTHH:MM:SS." + 3 digits (+ "000") + 'Z' for years 0-9999 (and -999 to -1).
    const std::size_t length = microseconds ? 27 : 24;
    const std::int64_t second = floor_div(ms, 1000);
    if (second != iso_second_) {
        std::array<char, 64> buffer{};
        const std::size_t written = write_iso(buffer, ms, microseconds);
        if (written != length) {  // a year of 5 digits: another layout, not cached
            char* at = grow(written + 2);
            at[0] = '"';
            std::memcpy(at + 1, buffer.data(), written);  // digits and -:.TZ: nothing to escape
            at[written + 1] = '"';
            return *this;
        }
        std::memcpy(iso_prefix_.data(), buffer.data(), iso_prefix_.size());
        iso_second_ = second;
    }
    const auto millis = static_cast<int>(ms - second * 1000);
    char* at = grow(length + 2);
    at[0] = '"';
    std::memcpy(at + 1, iso_prefix_.data(), iso_prefix_.size());
    at[21] = static_cast<char>('0' + millis / 100);
    at[22] = static_cast<char>('0' + millis / 10 % 10);
    at[23] = static_cast<char>('0' + millis % 10);
    if (microseconds) {
        at[24] = '0';
        at[25] = '0';
        at[26] = '0';
    }
    at[length] = 'Z';
    at[length + 1] = '"';
    return *this;
}

JsonWriter& JsonWriter::number(double value) {
    prefix();
    if (!std::isfinite(value)) {
        append("null");
        return *this;
    }
    std::array<char, 64> buffer{};
    const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    QUEEN_ASSERT(error == std::errc{}, "to_chars(double) failed");
    append(std::string_view(buffer.data(), static_cast<std::size_t>(end - buffer.data())));
    return *this;
}

std::string JsonWriter::take() {
    QUEEN_ASSERT(depth_ == 0 && !after_key_, "JsonWriter: unclosed containers");
    out_.resize(used_);
    used_ = 0;
    return std::move(out_);
}

// ---------------------------------------------------------------------------------------------
// Time (proleptic Gregorian, UTC; Howard Hinnant's civil calendar algorithms).

namespace {

std::int64_t days_from_civil(std::int64_t year, unsigned month, unsigned day) {
    year -= month <= 2 ? 1 : 0;
    const std::int64_t era = (year >= 0 ? year : year - 399) / 400;
    const auto year_of_era = static_cast<unsigned>(year - era * 400);
    const unsigned day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
    const unsigned day_of_era =
        year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * 146097 + static_cast<std::int64_t>(day_of_era) - 719468;
}

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

std::int64_t floor_div(std::int64_t value, std::int64_t divisor) {
    std::int64_t quotient = value / divisor;
    if ((value % divisor != 0) && ((value < 0) != (divisor < 0))) {
        --quotient;
    }
    return quotient;
}

std::size_t write_iso(std::array<char, 64>& buffer, std::int64_t ms, bool microseconds) {
    const std::int64_t days = floor_div(ms, 86'400'000);
    const std::int64_t ms_of_day = ms - days * 86'400'000;
    const Civil civil = civil_from_days(days);
    const auto hours = static_cast<int>(ms_of_day / 3'600'000);
    const auto minutes = static_cast<int>(ms_of_day / 60'000 % 60);
    const auto seconds = static_cast<int>(ms_of_day / 1000 % 60);
    const auto millis = static_cast<int>(ms_of_day % 1000);
    if (civil.year >= 0 && civil.year <= 9999) {
        // Every pop answer carries two of these: plain digits, no printf.
        std::array<char, 64>& out = buffer;
        std::fill_n(out.begin(), 27, '0');
        const std::size_t length = microseconds ? 27 : 24;
        const auto put = [&out](std::size_t at, std::size_t width, std::int64_t value) {
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
        std::snprintf(buffer.data(), buffer.size(), "%04lld-%02u-%02uT%02d:%02d:%02d.%03d%sZ",
                      static_cast<long long>(civil.year), civil.month, civil.day, hours, minutes,
                      seconds, millis, microseconds ? "000" : "");
    QUEEN_ASSERT(written > 0 && static_cast<std::size_t>(written) < buffer.size(),
                 "format_iso overflow");
    return static_cast<std::size_t>(written);
}

std::string format_iso(std::int64_t ms, bool microseconds) {
    std::array<char, 64> buffer{};
    return std::string(buffer.data(), write_iso(buffer, ms, microseconds));
}

bool read_digits(std::string_view text, std::size_t& at, std::size_t count, int& out) {
    if (at + count > text.size()) {
        return false;
    }
    int value = 0;
    for (std::size_t i = 0; i < count; ++i) {
        const char c = text[at + i];
        if (c < '0' || c > '9') {
            return false;
        }
        value = value * 10 + (c - '0');
    }
    at += count;
    out = value;
    return true;
}

bool is_leap(std::int64_t year) {
    return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

unsigned days_in_month(std::int64_t year, unsigned month) {
    static constexpr std::array<unsigned, 12> days = {31, 28, 31, 30, 31, 30,
                                                      31, 31, 30, 31, 30, 31};
    return month == 2 && is_leap(year) ? 29 : days[month - 1];
}

}  // namespace

std::string format_iso_ms(std::int64_t ms) {
    return format_iso(ms, false);
}

std::string format_iso_us(std::int64_t ms) {
    return format_iso(ms, true);
}

std::optional<std::int64_t> parse_iso(std::string_view text) {
    std::size_t at = 0;
    int year = 0;
    int month = 0;
    int day = 0;
    if (!read_digits(text, at, 4, year) || at >= text.size() || text[at++] != '-' ||
        !read_digits(text, at, 2, month) || at >= text.size() || text[at++] != '-' ||
        !read_digits(text, at, 2, day)) {
        return std::nullopt;
    }
    if (month < 1 || month > 12 || day < 1 ||
        static_cast<unsigned>(day) > days_in_month(year, static_cast<unsigned>(month))) {
        return std::nullopt;
    }
    int hour = 0;
    int minute = 0;
    int second = 0;
    std::int64_t millis = 0;
    if (at < text.size() && (text[at] == 'T' || text[at] == 't' || text[at] == ' ')) {
        ++at;
        if (!read_digits(text, at, 2, hour) || at >= text.size() || text[at++] != ':' ||
            !read_digits(text, at, 2, minute)) {
            return std::nullopt;
        }
        if (at < text.size() && text[at] == ':') {
            ++at;
            if (!read_digits(text, at, 2, second)) {
                return std::nullopt;
            }
            if (at < text.size() && (text[at] == '.' || text[at] == ',')) {
                ++at;
                std::size_t digits = 0;
                std::int64_t scale = 100;
                while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
                    millis += (text[at] - '0') * scale;
                    scale /= 10;
                    ++at;
                    ++digits;
                }
                if (digits == 0) {
                    return std::nullopt;
                }
            }
        }
        if (hour > 23 || minute > 59 || second > 60) {
            return std::nullopt;
        }
    }
    std::int64_t offset_minutes = 0;
    if (at < text.size()) {
        const char zone = text[at];
        if (zone == 'Z' || zone == 'z') {
            ++at;
        } else if (zone == '+' || zone == '-') {
            ++at;
            int offset_hours = 0;
            int offset_mins = 0;
            if (!read_digits(text, at, 2, offset_hours)) {
                return std::nullopt;
            }
            if (at < text.size() && text[at] == ':') {
                ++at;
            }
            if (at < text.size() && !read_digits(text, at, 2, offset_mins)) {
                return std::nullopt;
            }
            if (offset_hours > 23 || offset_mins > 59) {
                return std::nullopt;
            }
            offset_minutes = (zone == '+' ? 1 : -1) * (offset_hours * 60 + offset_mins);
        }
    }
    if (at != text.size()) {
        return std::nullopt;
    }
    const std::int64_t days =
        days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
    return ((days * 24 + hour) * 60 + minute - offset_minutes) * 60'000 +
           std::int64_t{second} * 1000 + millis;
}

// ---------------------------------------------------------------------------------------------
// Parsing

std::uint32_t json_depth(std::string_view text) noexcept {
    std::uint32_t depth = 0;
    std::uint32_t deepest = 0;
    bool in_string = false;
    bool escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            ++depth;
            deepest = depth > deepest ? depth : deepest;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

Result<nlohmann::json> parse_body(std::string_view body, std::uint32_t depth_max) {
    bool is_blank = true;
    for (const char c : body) {
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
            is_blank = false;
            break;
        }
    }
    if (is_blank) {
        return Error{Errc::invalid_argument, "Empty request body"};
    }
    // The parser itself is iterative, but dump() and destruction of deep values recurse: refuse
    // deep documents before building them.
    if (json_depth(body) > depth_max) {
        return Error{Errc::invalid_argument,
                     "JSON nested deeper than " + std::to_string(depth_max) + " levels"};
    }
    try {
        return nlohmann::json::parse(body);
    } catch (const nlohmann::json::exception& error) {
        // The parser quotes the offending bytes; keep the message printable ASCII so the
        // error body stays valid JSON whatever the client sent.
        std::string message = error.what();
        for (char& c : message) {
            const auto byte = static_cast<unsigned char>(c);
            if (byte < 0x20 || byte >= 0x7f) {
                c = '?';
            }
        }
        return Error{Errc::invalid_argument, "Invalid JSON: " + message};
    }
}

std::string dump_json(const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string_view json_type_name(const nlohmann::json& value) noexcept {
    switch (value.type()) {
        case nlohmann::json::value_t::object: return "object";
        case nlohmann::json::value_t::array: return "array";
        case nlohmann::json::value_t::string: return "string";
        case nlohmann::json::value_t::boolean: return "boolean";
        case nlohmann::json::value_t::null: return "null";
        case nlohmann::json::value_t::number_integer:
        case nlohmann::json::value_t::number_unsigned:
        case nlohmann::json::value_t::number_float: return "number";
        case nlohmann::json::value_t::binary:
        case nlohmann::json::value_t::discarded: break;
    }
    return "unknown";
}

bool is_uuid_text(std::string_view text) noexcept {
    if (text.size() != 36) {
        return false;
    }
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') {
                return false;
            }
        } else if (hex_value(c) < 0) {
            return false;
        }
    }
    return true;
}

Result<std::int64_t> integer_field(const nlohmann::json& object, std::string_view name,
                                   std::int64_t fallback, std::int64_t min, std::int64_t max) {
    const auto found = object.find(name);
    if (found == object.end() || found->is_null()) {
        return fallback;
    }
    std::int64_t value = 0;
    if (found->is_number_integer()) {
        if (found->is_number_unsigned() &&
            found->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
            return Error{Errc::invalid_argument, std::string(name) + " must be between " +
                                                     std::to_string(min) + " and " +
                                                     std::to_string(max)};
        }
        value = found->get<std::int64_t>();
    } else if (found->is_number_float()) {
        const double number = found->get<double>();
        // 300.0 is an integer written by a client that only has doubles (JavaScript).
        if (!std::isfinite(number) || std::trunc(number) != number || number < -9.0e18 ||
            number > 9.0e18) {
            return Error{Errc::invalid_argument, std::string(name) + " must be an integer"};
        }
        value = static_cast<std::int64_t>(number);
    } else {
        return Error{Errc::invalid_argument, std::string(name) + " must be an integer"};
    }
    if (value < min || value > max) {
        return Error{Errc::invalid_argument, std::string(name) + " must be between " +
                                                 std::to_string(min) + " and " +
                                                 std::to_string(max)};
    }
    return value;
}

Result<bool> boolean_field(const nlohmann::json& object, std::string_view name, bool fallback) {
    const auto found = object.find(name);
    if (found == object.end() || found->is_null()) {
        return fallback;
    }
    if (!found->is_boolean()) {
        return Error{Errc::invalid_argument, std::string(name) + " must be a boolean"};
    }
    return found->get<bool>();
}

Result<std::optional<std::string>> string_field(const nlohmann::json& object, std::string_view name,
                                                std::string_view type_error) {
    const auto found = object.find(name);
    if (found == object.end() || found->is_null()) {
        return std::optional<std::string>{};
    }
    if (!found->is_string()) {
        return Error{Errc::invalid_argument, std::string(type_error)};
    }
    return std::optional<std::string>{found->get<std::string>()};
}

}  // namespace queen::api::detail
