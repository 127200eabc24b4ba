// api/src/json.cpp — ISO-8601 times, DOM body parsing, body errors and typed field readers.
#include "json.hpp"

#include <array>
#include <cmath>

#include "queen/core/assert.hpp"
#include "queen/core/hex.hpp"
#include "queen/core/iso_time.hpp"
#include "queen/core/json_scan.hpp"
#include "queen/http/response.hpp"

namespace queen::api::detail {

// ---------------------------------------------------------------------------------------------
// Time (proleptic Gregorian, UTC; Howard Hinnant's civil calendar algorithms; the text of a time
// is written by core's write_iso_time).

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

std::string format_iso(std::int64_t ms, bool microseconds) {
    std::array<char, iso_time_bytes_max> buffer{};
    return std::string(buffer.data(), write_iso_time(buffer.data(), ms, microseconds));
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

Error body_error(std::string_view body, std::uint32_t depth_max) {
    auto parsed = parse_body(body, depth_max);
    if (!parsed) {
        return std::move(parsed).error();
    }
    // The core reader refused what nlohmann accepts: never seen (api_parse fuzzes both).
    return Error{Errc::invalid_argument, "Invalid JSON"};
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

Result<std::int64_t> checked_integer(std::string_view name, const Number& number, std::int64_t min,
                                     std::int64_t max) {
    const auto out_of_range = [&] {
        return Error{Errc::invalid_argument, std::string(name) + " must be between " +
                                                 std::to_string(min) + " and " +
                                                 std::to_string(max)};
    };
    std::int64_t value = 0;
    switch (number.kind) {
        case Number::Kind::integer: value = number.integer; break;
        case Number::Kind::above_int64: return out_of_range();
        case Number::Kind::real: {
            const double real = number.real;
            // 300.0 is an integer written by a client that only has doubles (JavaScript).
            if (!std::isfinite(real) || std::trunc(real) != real || real < -9.0e18 ||
                real > 9.0e18) {
                return Error{Errc::invalid_argument, std::string(name) + " must be an integer"};
            }
            value = static_cast<std::int64_t>(real);
            break;
        }
        case Number::Kind::none:
            return Error{Errc::invalid_argument, std::string(name) + " must be an integer"};
    }
    if (value < min || value > max) {
        return out_of_range();
    }
    return value;
}

Result<std::int64_t> integer_field(const nlohmann::json& object, std::string_view name,
                                   std::int64_t fallback, std::int64_t min, std::int64_t max) {
    const auto found = object.find(name);
    if (found == object.end() || found->is_null()) {
        return fallback;
    }
    Number number;
    if (found->is_number_unsigned() &&
        found->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
        number.kind = Number::Kind::above_int64;
    } else if (found->is_number_integer()) {
        number.kind = Number::Kind::integer;
        number.integer = found->get<std::int64_t>();
    } else if (found->is_number_float()) {
        number.kind = Number::Kind::real;
        number.real = found->get<double>();
    }
    return checked_integer(name, number, min, max);
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
