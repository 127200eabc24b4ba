// core/json_scan.hpp — the one JSON reader of the tree: a validating, allocation-free scanner
// (the api's request bodies, the client's answers, payload checks). Values are handled as raw
// spans of the input, so a payload reaches the caller byte for byte. Accepts exactly what RFC 8259
// (and nlohmann::json::accept) accepts, including UTF-8 and surrogate-pair rules. The single-pass
// walk over a whole body is json_cursor.hpp; the writer is json_writer.hpp. Both use the one
// plain-string loop below (detail::find_plain_end).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the first byte of a word is its lowest");

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace queen::json {

/// Arrays and objects nested deeper than this are rejected (bounds the scanner's recursion).
inline constexpr int json_depth_max = 512;

namespace detail {

/// Which bytes end a run of plain string text.
enum class Plain : bool {
    /// '"', '\\' and control bytes (< 0x20): what a writer must escape.
    unescaped,
    /// The same and bytes >= 0x80: what a reader may pass without a look (nothing to decode or
    /// to validate as UTF-8).
    ascii,
};

/// The bytes of `word` (eight of the text, the first one lowest) that end a plain run (see
/// Plain): the high bit of each is set, and the lowest set bit is exact (a borrow only runs
/// upwards from a byte that is flagged itself).
template <Plain kind>
[[nodiscard, gnu::always_inline]] inline std::uint64_t special_bytes(std::uint64_t word) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101ULL;
    constexpr std::uint64_t highs = 0x8080808080808080ULL;
    const std::uint64_t quotes = word ^ (ones * '"');
    const std::uint64_t backslashes = word ^ (ones * '\\');
    std::uint64_t flags = ((word - ones * 0x20) & ~word) | ((quotes - ones) & ~quotes) |
                          ((backslashes - ones) & ~backslashes);
    if constexpr (kind == Plain::ascii) {
        flags |= word;
    }
    return flags & highs;
}

#if defined(__SSE2__)
/// special_bytes() for sixteen bytes: bit i set when byte i ends a plain run.
template <Plain kind>
[[nodiscard, gnu::always_inline]] inline unsigned special_mask(const char* at) noexcept {
    const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    __m128i special = _mm_or_si128(_mm_cmpeq_epi8(chunk, _mm_set1_epi8('"')),
                                   _mm_cmpeq_epi8(chunk, _mm_set1_epi8('\\')));
    if constexpr (kind == Plain::ascii) {
        // Signed compare: 0x00-0x1f and 0x80-0xff (negative) are both below 0x20.
        special = _mm_or_si128(special, _mm_cmplt_epi8(chunk, _mm_set1_epi8(0x20)));
    } else {
        // Unsigned c <= 0x1f exactly when min(c, 0x1f) == c.
        const __m128i control_max = _mm_set1_epi8(0x1f);
        special = _mm_or_si128(special, _mm_cmpeq_epi8(_mm_min_epu8(chunk, control_max), chunk));
    }
    return static_cast<unsigned>(_mm_movemask_epi8(special));
}
#endif

/// find_plain_end() for a rest shorter than 16 bytes at `i` (the run began at `from`): the last
/// 16 (or 8) bytes of the text again, those already seen shifted out, when the run is that long;
/// a run of 4 to 7 bytes as two overlapping halves of a word; byte by byte only below 4. Out of
/// line: a reader's strings mostly end within their first 16 bytes, and its walk stays small.
template <Plain kind>
[[nodiscard, gnu::noinline]] std::size_t find_plain_end_of_rest(const char* data, std::size_t size,
                                                                std::size_t from,
                                                                std::size_t i) noexcept {
#if defined(__SSE2__)
    if (size - from >= 16) {
        const std::size_t last = size - 16;
        const unsigned mask = special_mask<kind>(data + last) >> (i - last);
        return mask != 0 ? i + static_cast<std::size_t>(__builtin_ctz(mask)) : size;
    }
#endif
    if (size - from >= 8) {
        std::uint64_t word = 0;
        for (; i + 8 <= size; i += 8) {
            std::memcpy(&word, data + i, sizeof word);
            if (const std::uint64_t flags = special_bytes<kind>(word); flags != 0) {
                return i + static_cast<std::size_t>(__builtin_ctzll(flags)) / 8;
            }
        }
        if (i == size) {
            return size;
        }
        const std::size_t last = size - 8;
        std::memcpy(&word, data + last, sizeof word);
        const std::uint64_t flags = special_bytes<kind>(word) >> (8 * (i - last));
        return flags != 0 ? i + static_cast<std::size_t>(__builtin_ctzll(flags)) / 8 : size;
    }
    if (size - from >= 4) {
        // 4 to 7 bytes: the first four and the last four (overlapping) as one word.
        std::uint32_t head = 0;
        std::uint32_t tail = 0;
        std::memcpy(&head, data + from, sizeof head);
        std::memcpy(&tail, data + size - 4, sizeof tail);
        const std::uint64_t flags =
            special_bytes<kind>(head | (static_cast<std::uint64_t>(tail) << 32));
        if (flags == 0) {
            return size;
        }
        const auto at = static_cast<std::size_t>(__builtin_ctzll(flags)) / 8;
        return at < 4 ? from + at : size - 8 + at;
    }
    for (; i < size; ++i) {
        const auto c = static_cast<unsigned char>(data[i]);
        if (c == '"' || c == '\\' || c < 0x20 || (kind == Plain::ascii && c >= 0x80)) {
            return i;
        }
    }
    return size;
}

/// The one plain-string loop of the tree: the position of the first byte of data[from, size)
/// that ends a plain run (see Plain), or `size` when there is none. 16 bytes per step with SSE2
/// (every x86-64 CPU has it), else 8 (SWAR); a rest shorter than a step is read as the last
/// step's worth of bytes again (never past `size`), so only runs shorter than 8 bytes go byte by
/// byte.
template <Plain kind>
[[nodiscard, gnu::always_inline]] inline std::size_t find_plain_end(const char* data,
                                                                    std::size_t size,
                                                                    std::size_t from) noexcept {
    std::size_t i = from;
#if defined(__SSE2__)
    for (; i + 16 <= size; i += 16) {
        if (const unsigned mask = special_mask<kind>(data + i); mask != 0) {
            return i + static_cast<std::size_t>(__builtin_ctz(mask));
        }
    }
#endif
    return i >= size ? size : find_plain_end_of_rest<kind>(data, size, from, i);
}

/// Writes `text` as a JSON string literal to `out`, which has room for text.size() * 6 + 2
/// bytes: quotes, the two-character escapes, \u00XX for other control bytes; other bytes (UTF-8
/// included) as they are. Returns the end of what it wrote.
char* write_quoted(char* out, std::string_view text) noexcept;

}  // namespace detail

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
/// Skips (and validates) the value at `pos`; `depth` is the nesting depth it has when it is an
/// array or object (the top value is 1). False when it is not valid JSON or an array or object
/// sits deeper than `depth_max` (the rule of the api's "JSON nested deeper than N levels":
/// `[[1]]` is 2 deep).
bool skip_value(std::string_view text, std::size_t& pos, int depth,
                int depth_max = json_depth_max) noexcept;
/// Copies the raw value `raw` to `out` without the whitespace between its tokens (string
/// contents are kept byte for byte) and returns the bytes written. `out` has room for
/// raw.size() bytes; `raw` is valid JSON (e.g. checked by skip_value).
std::size_t copy_compact(std::string_view raw, char* out) noexcept;
/// True when `text` has no byte <= 0x20. Valid JSON without one has no whitespace between its
/// tokens, so copy_compact would copy it as it is (a space inside a string also says no).
[[nodiscard]] bool has_no_space(std::string_view text) noexcept;
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
