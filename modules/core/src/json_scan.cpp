// core/src/json_scan.cpp — the validating JSON scanner (see json_scan.hpp).
#include "queen/core/json_scan.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "queen/core/hex.hpp"

namespace queen::json {
namespace scan {
namespace {

constexpr std::uint64_t ones = 0x0101010101010101ULL;
constexpr std::uint64_t highs = 0x8080808080808080ULL;

std::uint64_t load8(const char* at) noexcept {
    std::uint64_t word;
    std::memcpy(&word, at, sizeof word);
    return word;
}
std::uint64_t has_less(std::uint64_t v, unsigned char n) noexcept {
    return (v - ones * n) & ~v & highs;
}
std::uint64_t has_byte(std::uint64_t v, unsigned char c) noexcept {
    const std::uint64_t x = v ^ (ones * c);
    return (x - ones) & ~x & highs;
}

bool is_digit(char c) noexcept {
    return c >= '0' && c <= '9';
}

// Reads the 4 hex digits after "\u" at text[pos] (pos at the first digit).
bool read_hex4(std::string_view text, std::size_t pos, std::uint32_t& value) noexcept {
    if (pos + 4 > text.size()) {
        return false;
    }
    value = 0;
    for (std::size_t i = 0; i < 4; ++i) {
        const int digit = hex_value(text[pos + i]);
        if (digit < 0) {
            return false;
        }
        value = value * 16 + static_cast<std::uint32_t>(digit);
    }
    return true;
}

bool is_continuation(unsigned char c) noexcept {
    return (c & 0xC0) == 0x80;
}

// Validates one UTF-8 sequence starting with a byte >= 0x80 at text[pos]; moves pos past it.
bool skip_utf8(std::string_view text, std::size_t& pos) noexcept {
    const auto at = [&](std::size_t i) {
        return pos + i < text.size() ? static_cast<unsigned char>(text[pos + i]) : 0;
    };
    const unsigned char lead = at(0);
    std::size_t length = 0;
    unsigned char second_min = 0x80;
    unsigned char second_max = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead == 0xE0) {
        length = 3;
        second_min = 0xA0;
    } else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) {
        length = 3;
    } else if (lead == 0xED) {
        length = 3;
        second_max = 0x9F;
    } else if (lead == 0xF0) {
        length = 4;
        second_min = 0x90;
    } else if (lead >= 0xF1 && lead <= 0xF3) {
        length = 4;
    } else if (lead == 0xF4) {
        length = 4;
        second_max = 0x8F;
    } else {
        return false;
    }
    if (at(1) < second_min || at(1) > second_max) {
        return false;
    }
    for (std::size_t i = 2; i < length; ++i) {
        if (!is_continuation(at(i))) {
            return false;
        }
    }
    pos += length;
    return true;
}

bool skip_string(std::string_view text, std::size_t& pos) noexcept {
    ++pos;  // opening quote
    while (pos < text.size()) {
        pos = detail::find_plain_end<detail::Plain::ascii>(text.data(), text.size(), pos);
        if (pos >= text.size()) {
            break;
        }
        const auto c = static_cast<unsigned char>(text[pos]);
        if (c == '"') {
            ++pos;
            return true;
        }
        if (c < 0x20) {
            return false;
        }
        if (c == '\\') {
            if (pos + 1 >= text.size()) {
                return false;
            }
            const char escaped = text[pos + 1];
            if (escaped == 'u') {
                std::uint32_t unit = 0;
                if (!read_hex4(text, pos + 2, unit)) {
                    return false;
                }
                pos += 6;
                if (unit >= 0xDC00 && unit <= 0xDFFF) {
                    return false;  // a low surrogate without a high one
                }
                if (unit >= 0xD800 && unit <= 0xDBFF) {
                    std::uint32_t low = 0;
                    if (pos + 1 >= text.size() || text[pos] != '\\' || text[pos + 1] != 'u' ||
                        !read_hex4(text, pos + 2, low) || low < 0xDC00 || low > 0xDFFF) {
                        return false;
                    }
                    pos += 6;
                }
                continue;
            }
            switch (escaped) {
                case '"':
                case '\\':
                case '/':
                case 'b':
                case 'f':
                case 'n':
                case 'r':
                case 't': pos += 2; continue;
                default: return false;
            }
        }
        if (c >= 0x80) {
            if (!skip_utf8(text, pos)) {
                return false;
            }
            continue;
        }
        ++pos;
    }
    return false;
}

// A number that overflows a double (1e999) is rejected, as nlohmann does; underflow (1e-999) is
// accepted as 0. from_chars reports both as out of range, so the sign of the decimal magnitude
// tells them apart.
bool is_finite_number(std::string_view number) noexcept {
    double value = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc::result_out_of_range) {
        return true;
    }
    std::size_t i = number.front() == '-' ? 1 : 0;
    std::int64_t magnitude = 0;
    std::int64_t integer_digits = 0;
    bool is_nonzero_seen = false;
    for (; i < number.size() && is_digit(number[i]); ++i) {
        is_nonzero_seen = is_nonzero_seen || number[i] != '0';
        integer_digits += is_nonzero_seen ? 1 : 0;
    }
    if (integer_digits > 0) {
        magnitude = integer_digits - 1;
    } else {
        magnitude = -1;
        if (i < number.size() && number[i] == '.') {
            for (++i; i < number.size() && number[i] == '0'; ++i) {
                --magnitude;
            }
        }
    }
    const std::size_t exponent_at = number.find_first_of("eE");
    if (exponent_at != std::string_view::npos) {
        std::string_view exponent = number.substr(exponent_at + 1);
        if (!exponent.empty() && exponent.front() == '+') {
            exponent.remove_prefix(1);
        }
        std::int64_t exponent_value = 0;
        const auto [exponent_end, exponent_ec] =
            std::from_chars(exponent.data(), exponent.data() + exponent.size(), exponent_value);
        if (exponent_ec == std::errc::result_out_of_range) {
            return exponent.front() == '-';  // an absurd exponent: its sign decides
        }
        magnitude += exponent_value;
    }
    return magnitude < 0;
}

bool skip_number(std::string_view text, std::size_t& pos) noexcept {
    const std::size_t start = pos;
    bool is_plain_integer = true;
    if (pos < text.size() && text[pos] == '-') {
        ++pos;
    }
    if (pos >= text.size() || !is_digit(text[pos])) {
        return false;
    }
    if (text[pos] == '0') {
        ++pos;
    } else {
        while (pos < text.size() && is_digit(text[pos])) {
            ++pos;
        }
    }
    if (pos < text.size() && text[pos] == '.') {
        is_plain_integer = false;
        ++pos;
        if (pos >= text.size() || !is_digit(text[pos])) {
            return false;
        }
        while (pos < text.size() && is_digit(text[pos])) {
            ++pos;
        }
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
        is_plain_integer = false;
        ++pos;
        if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
            ++pos;
        }
        if (pos >= text.size() || !is_digit(text[pos])) {
            return false;
        }
        while (pos < text.size() && is_digit(text[pos])) {
            ++pos;
        }
    }
    // Short integers always fit; anything else might overflow a double.
    return (is_plain_integer && pos - start <= 300) ||
           is_finite_number(text.substr(start, pos - start));
}

bool skip_literal(std::string_view text, std::size_t& pos, std::string_view literal) noexcept {
    if (text.substr(pos, literal.size()) != literal) {
        return false;
    }
    pos += literal.size();
    return true;
}

}  // namespace

bool skip_value(std::string_view text, std::size_t& pos, int depth, int depth_max) noexcept {
    if (pos >= text.size()) {
        return false;
    }
    switch (text[pos]) {
        case '"': return skip_string(text, pos);
        case 't': return skip_literal(text, pos, "true");
        case 'f': return skip_literal(text, pos, "false");
        case 'n': return skip_literal(text, pos, "null");
        case '[':
            return depth <= depth_max && walk_array(text, pos, [&](std::size_t& at) {
                       return skip_value(text, at, depth + 1, depth_max);
                   });
        case '{':
            return depth <= depth_max &&
                   walk_object(text, pos, [&](std::string_view, std::size_t& at) {
                       return skip_value(text, at, depth + 1, depth_max);
                   });
        default: return skip_number(text, pos);
    }
}

bool has_no_space(std::string_view text) noexcept {
    const char* const data = text.data();
    std::size_t i = 0;
    for (; i + 8 <= text.size(); i += 8) {
        if (has_less(load8(data + i), 0x21) != 0) {
            return false;
        }
    }
    for (; i < text.size(); ++i) {
        if (static_cast<unsigned char>(data[i]) <= 0x20) {
            return false;
        }
    }
    return true;
}

std::size_t copy_compact(std::string_view raw, char* out) noexcept {
    char* const begin = out;
    const char* const data = raw.data();
    const std::size_t size = raw.size();
    std::size_t pos = 0;
    while (pos < size) {
        // A run outside strings up to the next whitespace (<= 0x20 here) or quote.
        std::size_t run = pos;
        while (run + 8 <= size) {
            const std::uint64_t word = load8(data + run);
            if ((has_less(word, 0x21) | has_byte(word, '"')) != 0) {
                break;
            }
            run += 8;
        }
        while (run<size&& static_cast<unsigned char>(data[run])> 0x20 && data[run] != '"') {
            ++run;
        }
        std::memcpy(out, data + pos, run - pos);
        out += run - pos;
        pos = run;
        if (pos >= size) {
            break;
        }
        if (data[pos] != '"') {
            ++pos;  // whitespace between tokens
            continue;
        }
        // A string: copy through its closing quote, honouring escapes (valid JSON: no control
        // byte ends a plain run early).
        std::size_t end = pos + 1;
        for (;;) {
            end = detail::find_plain_end<detail::Plain::unescaped>(data, size, end);
            if (end >= size) {
                break;
            }
            if (data[end] == '"') {
                ++end;
                break;
            }
            end += data[end] == '\\' ? 2 : 1;
        }
        end = std::min(end, size);
        std::memcpy(out, data + pos, end - pos);
        out += end - pos;
        pos = end;
    }
    return static_cast<std::size_t>(out - begin);
}

void append_quoted(std::string& out, std::string_view text) {
    const std::size_t at = out.size();
    out.resize(at + text.size() * 6 + 2);
    char* const begin = out.data() + at;
    out.resize(at + static_cast<std::size_t>(detail::write_quoted(begin, text) - begin));
}

}  // namespace scan

char* detail::write_quoted(char* out, std::string_view text) noexcept {
    static constexpr char hex[] = "0123456789abcdef";
    const char* const data = text.data();
    const std::size_t size = text.size();
    *out++ = '"';
    std::size_t i = 0;
    while (i < size) {
        const std::size_t run_end = find_plain_end<Plain::unescaped>(data, size, i);
        std::memcpy(out, data + i, run_end - i);
        out += run_end - i;
        if (run_end >= size) {
            break;
        }
        const auto c = static_cast<unsigned char>(data[run_end]);
        *out++ = '\\';
        switch (c) {
            case '"': *out++ = '"'; break;
            case '\\': *out++ = '\\'; break;
            case '\n': *out++ = 'n'; break;
            case '\r': *out++ = 'r'; break;
            case '\t': *out++ = 't'; break;
            case '\b': *out++ = 'b'; break;
            case '\f': *out++ = 'f'; break;
            default:
                *out++ = 'u';
                *out++ = '0';
                *out++ = '0';
                *out++ = hex[c >> 4];
                *out++ = hex[c & 0xf];
        }
        i = run_end + 1;
    }
    *out++ = '"';
    return out;
}

bool scan_json(std::string_view text, std::string_view& value) noexcept {
    std::size_t pos = 0;
    scan::skip_whitespace(text, pos);
    const std::size_t start = pos;
    if (!scan::skip_value(text, pos, 1)) {
        return false;
    }
    const std::size_t end = pos;
    scan::skip_whitespace(text, pos);
    if (pos != text.size()) {
        return false;
    }
    value = text.substr(start, end - start);
    return true;
}

bool is_valid_json(std::string_view text) noexcept {
    std::string_view value;
    return scan_json(text, value);
}

bool decode_json_string(std::string_view raw, std::string& out) {
    out.clear();
    if (raw.size() < 2 || raw.front() != '"' || raw.back() != '"') {
        return false;
    }
    const std::string_view body = raw.substr(1, raw.size() - 2);
    if (body.find('\\') == std::string_view::npos) {
        out.assign(body);
        return true;
    }
    out.reserve(body.size());
    const auto append_utf8 = [&](std::uint32_t code) {
        if (code < 0x80) {
            out.push_back(static_cast<char>(code));
        } else if (code < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (code >> 6)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
        } else if (code < 0x10000) {
            out.push_back(static_cast<char>(0xE0 | (code >> 12)));
            out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
        } else {
            out.push_back(static_cast<char>(0xF0 | (code >> 18)));
            out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
        }
    };
    for (std::size_t i = 0; i < body.size(); ++i) {
        if (body[i] != '\\') {
            out.push_back(body[i]);
            continue;
        }
        if (i + 1 >= body.size()) {
            return false;
        }
        const char escaped = body[++i];
        switch (escaped) {
            case '"': out.push_back('"'); break;
            case '\\': out.push_back('\\'); break;
            case '/': out.push_back('/'); break;
            case 'b': out.push_back('\b'); break;
            case 'f': out.push_back('\f'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 't': out.push_back('\t'); break;
            case 'u': {
                std::uint32_t unit = 0;
                if (!scan::read_hex4(body, i + 1, unit)) {
                    return false;
                }
                i += 4;
                if (unit >= 0xD800 && unit <= 0xDBFF) {
                    std::uint32_t low = 0;
                    if (i + 2 >= body.size() || body[i + 1] != '\\' || body[i + 2] != 'u' ||
                        !scan::read_hex4(body, i + 3, low) || low < 0xDC00 || low > 0xDFFF) {
                        return false;
                    }
                    i += 6;
                    unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
                    return false;
                }
                append_utf8(unit);
                break;
            }
            default: return false;
        }
    }
    return true;
}

std::string raw_to_text(std::string_view raw) {
    if (raw.empty() || raw_is_null(raw)) {
        return {};
    }
    if (raw.front() == '"') {
        std::string text;
        if (decode_json_string(raw, text)) {
            return text;
        }
    }
    return std::string{raw};
}

std::int64_t raw_to_integer(std::string_view raw, std::int64_t fallback) {
    if (!raw.empty() && raw.front() == '"') {
        raw = raw.substr(1, raw.size() - 2);
    }
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), value);
    if (ec != std::errc{} || raw.empty()) {
        return fallback;
    }
    if (end == raw.data() + raw.size()) {
        return value;
    }
    // A fraction or exponent: go through double, like json_util's integer_of.
    double real = 0;
    const auto [real_end, real_ec] = std::from_chars(raw.data(), raw.data() + raw.size(), real);
    if (real_ec == std::errc{} && real_end == raw.data() + raw.size()) {
        return static_cast<std::int64_t>(real);
    }
    return fallback;
}

bool raw_to_bool(std::string_view raw) {
    if (raw == "true" || raw == "\"true\"" || raw == "\"1\"") {
        return true;
    }
    if (raw.empty() || raw == "false" || raw_is_null(raw) || raw.front() == '"') {
        return false;
    }
    double number = 0;
    const auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), number);
    return ec == std::errc{} && end == raw.data() + raw.size() && number != 0;
}

}  // namespace queen::json
