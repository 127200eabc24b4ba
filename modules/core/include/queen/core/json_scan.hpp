// core/json_scan.hpp — a validating, allocation-free JSON scanner for the hot paths (push
// payload checks, push/ack/pop answers): values are handled as raw spans of the input, so a
// popped payload reaches the caller byte for byte. Accepts exactly what RFC 8259 (and
// nlohmann::json::accept) accepts, including UTF-8 and surrogate-pair rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace queen::json {

/// Nesting deeper than this is rejected (bounds the scanner's recursion).
inline constexpr int json_depth_max = 512;

/// True when `text` is exactly one JSON value, optionally surrounded by whitespace.
[[nodiscard]] bool is_valid_json(std::string_view text) noexcept;

/// Splits `text` into its single value: on success `value` is the raw span without the
/// surrounding whitespace.
[[nodiscard]] bool scan_json(std::string_view text, std::string_view& value) noexcept;

/// Decodes a raw string value (quotes included) into UTF-8. False if `raw` is not a string.
[[nodiscard]] bool decode_json_string(std::string_view raw, std::string& out);

/// Calls visit(key, raw_value) for each member of the raw object `raw`; `key` is decoded.
/// Returns false if `raw` is not an object or `visit` returns false.
template <class Visit>
bool for_each_member(std::string_view raw, Visit&& visit);
/// Calls visit(raw_element) for each element of the raw array `raw`.
template <class Visit>
bool for_each_element(std::string_view raw, Visit&& visit);

/// Readers of raw scalar values, lenient like json_util.hpp: a string is decoded, null and
/// absent give "", other values give their raw text.
[[nodiscard]] std::string raw_to_text(std::string_view raw);
[[nodiscard]] std::int64_t raw_to_integer(std::string_view raw, std::int64_t fallback = 0);
[[nodiscard]] bool raw_to_bool(std::string_view raw);
[[nodiscard]] inline bool raw_is_null(std::string_view raw) noexcept {
    return raw == "null";
}

namespace scan {
// Building blocks for the templates above; `pos` moves past what was read.
void skip_whitespace(std::string_view text, std::size_t& pos) noexcept;
/// Skips (and validates) the value at `pos`, whose nesting depth is `depth` (the top value is 1);
/// false when it is not valid JSON or a value sits deeper than `depth_max`.
bool skip_value(std::string_view text, std::size_t& pos, int depth,
                int depth_max = json_depth_max) noexcept;
/// Copies the raw value `raw` to `out` without the whitespace between its tokens (string
/// contents are kept byte for byte) and returns the bytes written. `out` has room for
/// raw.size() bytes; `raw` is valid JSON (e.g. checked by skip_value).
std::size_t copy_compact(std::string_view raw, char* out) noexcept;
/// Appends `text` as a JSON string literal: quotes, the two-character escapes, \u00XX for other
/// control characters; other bytes (UTF-8 included) are copied as they are.
void append_quoted(std::string& out, std::string_view text);
}  // namespace scan

template <class Visit>
bool for_each_member(std::string_view raw, Visit&& visit) {
    std::size_t pos = 0;
    if (raw.empty() || raw[0] != '{') {
        return false;
    }
    ++pos;
    scan::skip_whitespace(raw, pos);
    if (pos < raw.size() && raw[pos] == '}') {
        return true;
    }
    std::string key;
    for (;;) {
        const std::size_t key_start = pos;
        if (!scan::skip_value(raw, pos, 1) || raw[key_start] != '"') {
            return false;
        }
        if (!decode_json_string(raw.substr(key_start, pos - key_start), key)) {
            return false;
        }
        scan::skip_whitespace(raw, pos);
        if (pos >= raw.size() || raw[pos] != ':') {
            return false;
        }
        ++pos;
        scan::skip_whitespace(raw, pos);
        const std::size_t value_start = pos;
        if (!scan::skip_value(raw, pos, 1)) {
            return false;
        }
        if (!visit(std::string_view{key}, raw.substr(value_start, pos - value_start))) {
            return false;
        }
        scan::skip_whitespace(raw, pos);
        if (pos < raw.size() && raw[pos] == ',') {
            ++pos;
            scan::skip_whitespace(raw, pos);
            continue;
        }
        return pos < raw.size() && raw[pos] == '}';
    }
}

template <class Visit>
bool for_each_element(std::string_view raw, Visit&& visit) {
    std::size_t pos = 0;
    if (raw.empty() || raw[0] != '[') {
        return false;
    }
    ++pos;
    scan::skip_whitespace(raw, pos);
    if (pos < raw.size() && raw[pos] == ']') {
        return true;
    }
    for (;;) {
        const std::size_t start = pos;
        if (!scan::skip_value(raw, pos, 1)) {
            return false;
        }
        if (!visit(raw.substr(start, pos - start))) {
            return false;
        }
        scan::skip_whitespace(raw, pos);
        if (pos < raw.size() && raw[pos] == ',') {
            ++pos;
            scan::skip_whitespace(raw, pos);
            continue;
        }
        return pos < raw.size() && raw[pos] == ']';
    }
}

}  // namespace queen::json
