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
/// Skips JSON whitespace (space, \n, \r, \t). Inline: the hot paths call it between tokens.
inline void skip_whitespace(std::string_view text, std::size_t& pos) noexcept {
    while (pos < text.size() &&
           (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\r' || text[pos] == '\t')) {
        ++pos;
    }
}
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

namespace scan {

/// Walks the array at text[pos] (a '['): visit(pos) reads one element starting at `pos` and
/// moves `pos` past it, or returns false to stop. On success `pos` is past the closing ']'.
/// False on malformed input or when visit returned false.
template <class Visit>
bool walk_array(std::string_view text, std::size_t& pos, Visit&& visit) {
    if (pos >= text.size() || text[pos] != '[') {
        return false;
    }
    ++pos;
    skip_whitespace(text, pos);
    if (pos < text.size() && text[pos] == ']') {
        ++pos;
        return true;
    }
    for (;;) {
        if (!visit(pos)) {
            return false;
        }
        skip_whitespace(text, pos);
        if (pos >= text.size()) {
            return false;
        }
        if (text[pos] == ']') {
            ++pos;
            return true;
        }
        if (text[pos] != ',') {
            return false;
        }
        ++pos;
        skip_whitespace(text, pos);
    }
}

/// Walks the object at text[pos] (a '{'): visit(key_literal, pos) gets each key as its validated
/// literal (quotes included, escapes not decoded), reads the value starting at `pos` and moves
/// `pos` past it, or returns false to stop. On success `pos` is past the closing '}'.
template <class Visit>
bool walk_object(std::string_view text, std::size_t& pos, Visit&& visit) {
    if (pos >= text.size() || text[pos] != '{') {
        return false;
    }
    ++pos;
    skip_whitespace(text, pos);
    if (pos < text.size() && text[pos] == '}') {
        ++pos;
        return true;
    }
    for (;;) {
        const std::size_t key_start = pos;
        if (pos >= text.size() || text[pos] != '"' || !skip_value(text, pos, 1)) {
            return false;
        }
        const std::string_view key = text.substr(key_start, pos - key_start);
        skip_whitespace(text, pos);
        if (pos >= text.size() || text[pos] != ':') {
            return false;
        }
        ++pos;
        skip_whitespace(text, pos);
        if (!visit(key, pos)) {
            return false;
        }
        skip_whitespace(text, pos);
        if (pos >= text.size()) {
            return false;
        }
        if (text[pos] == '}') {
            ++pos;
            return true;
        }
        if (text[pos] != ',') {
            return false;
        }
        ++pos;
        skip_whitespace(text, pos);
    }
}

}  // namespace scan

template <class Visit>
bool for_each_member(std::string_view raw, Visit&& visit) {
    std::size_t pos = 0;
    std::string key;
    return scan::walk_object(raw, pos, [&](std::string_view literal, std::size_t& at) {
        if (!decode_json_string(literal, key)) {
            return false;
        }
        const std::size_t value_start = at;
        if (!scan::skip_value(raw, at, 1)) {
            return false;
        }
        return static_cast<bool>(
            visit(std::string_view{key}, raw.substr(value_start, at - value_start)));
    });
}

template <class Visit>
bool for_each_element(std::string_view raw, Visit&& visit) {
    std::size_t pos = 0;
    return scan::walk_array(raw, pos, [&](std::size_t& at) {
        const std::size_t start = at;
        if (!scan::skip_value(raw, at, 1)) {
            return false;
        }
        return static_cast<bool>(visit(raw.substr(start, at - start)));
    });
}

}  // namespace queen::json
