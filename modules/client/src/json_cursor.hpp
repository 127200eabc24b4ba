// client/src/json_cursor.hpp — a single-pass reader over a JSON answer for the hot paths (push,
// pop, ack results): every byte is validated once, as the walk consumes it, instead of once per
// nesting level as for_each_member/for_each_element do when nested. Private to the client.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "queen/core/json_scan.hpp"

namespace queen::client::detail {

/// Walks one JSON text front to back. Every read either succeeds and moves past what it read, or
/// fails and marks the cursor failed (is_ok() false); later reads then fail too, so callers may
/// check once at the end. Values are validated by queen::json::scan (RFC 8259, depth-limited).
/// Not thread-safe; `text` must outlive the cursor and the spans it returns.
class JsonCursor {
public:
    explicit JsonCursor(std::string_view text) noexcept : text_(text) {}

    [[nodiscard]] bool is_ok() const noexcept { return is_ok_; }
    /// The next non-whitespace byte, or '\0' at the end (or after a failure).
    [[nodiscard]] char peek() noexcept {
        // Compact answers rarely have whitespace between tokens: skip the call when the next byte
        // is already a token (every JSON token starts above the space character).
        if (is_ok_ && pos_ < text_.size() && static_cast<unsigned char>(text_[pos_]) > ' ') {
            return text_[pos_];
        }
        json::scan::skip_whitespace(text_, pos_);
        return is_ok_ && pos_ < text_.size() ? text_[pos_] : '\0';
    }
    /// True when only whitespace is left and nothing failed.
    [[nodiscard]] bool is_at_end() noexcept { return peek() == '\0' && pos_ >= text_.size(); }

    /// Consumes '{' (or '['); false (failed) when the next value is not an object (array).
    bool enter_object() noexcept { return enter('{'); }
    bool enter_array() noexcept { return enter('['); }

    /// Inside an object: true with the member's key (decoded) when another member follows, the
    /// cursor then sitting on its value; false at the closing '}' (consumed) or on failure.
    /// `is_first` starts true for each object and is managed by the call.
    bool next_member(std::string_view& key, bool& is_first) {
        if (!separate('}', is_first)) {
            return false;
        }
        if (peek() != '"') {
            return fail();
        }
        std::size_t end = 0;
        if (find_plain_string_end(end)) {
            key = text_.substr(pos_ + 1, end - pos_ - 1);
            pos_ = end + 1;
        } else if (!read_key(key)) {
            return false;
        }
        if (peek() != ':') {
            return fail();
        }
        ++pos_;
        return true;
    }
    /// Inside an array: true when another element follows (the cursor sits on it); false at the
    /// closing ']' (consumed) or on failure.
    bool next_element(bool& is_first) { return separate(']', is_first); }

    /// Consumes one scalar into `out` as text, reusing its storage (the rule of assign_text(): a
    /// string decoded, null as "", other values as their raw text).
    bool read_text(std::string& out);

    /// Consumes one whole value (validated) and returns its raw span.
    bool read_value(std::string_view& raw) noexcept {
        if (peek() == '\0') {
            return fail();
        }
        const std::size_t start = pos_;
        if (!json::scan::skip_value(text_, pos_, depth_ + 1)) {
            return fail();
        }
        raw = text_.substr(start, pos_ - start);
        return true;
    }
    /// Consumes one value whatever it is.
    bool skip_value() noexcept {
        std::string_view ignored;
        return read_value(ignored);
    }
    /// Marks the cursor failed; returns false for `return cursor.fail();`.
    bool fail() noexcept {
        is_ok_ = false;
        return false;
    }

private:
    /// The fast path of the strings an answer is made of (keys, ids, times): when the string at
    /// the cursor holds only printable ASCII without escapes up to its closing quote, `end` is
    /// that quote's position. Such strings are valid JSON by construction; anything else (an
    /// escape, a control byte, UTF-8, no closing quote) returns false for the full scanner.
    [[nodiscard]] bool find_plain_string_end(std::size_t& end) const noexcept {
        const char* data = text_.data();
        std::size_t i = pos_ + 1;
        // Eight bytes at a time while none of them can end the fast path (ids and times are
        // 24-36 plain bytes): a word holding a quote, backslash, control or non-ASCII byte goes
        // to the byte loop below, which finds the first one exactly (the word test may flag bytes
        // after it, never miss one).
        constexpr std::uint64_t ones = 0x0101'0101'0101'0101ULL;
        constexpr std::uint64_t highs = 0x8080'8080'8080'8080ULL;
        for (; i + sizeof(std::uint64_t) <= text_.size(); i += sizeof(std::uint64_t)) {
            std::uint64_t word = 0;
            std::memcpy(&word, data + i, sizeof word);
            const std::uint64_t quote = word ^ (ones * '"');
            const std::uint64_t backslash = word ^ (ones * '\\');
            const std::uint64_t special = ((quote - ones) & ~quote) |
                                          ((backslash - ones) & ~backslash) |
                                          ((word - ones * 0x20) & ~word) | word;
            if ((special & highs) != 0) {
                break;
            }
        }
        for (; i < text_.size(); ++i) {
            const auto c = static_cast<unsigned char>(data[i]);
            if (c == '"') {
                end = i;
                return true;
            }
            if (c == '\\' || c < 0x20 || c >= 0x80) {
                return false;
            }
        }
        return false;
    }
    bool read_key(std::string_view& key) {
        std::string_view raw;
        if (!read_value(raw)) {
            return false;
        }
        const std::string_view body = raw.substr(1, raw.size() - 2);
        if (body.find('\\') == std::string_view::npos) {
            key = body;
        } else {
            if (!json::decode_json_string(raw, key_buffer_)) {
                return fail();
            }
            key = key_buffer_;
        }
        return true;
    }
    bool enter(char open) noexcept {
        if (peek() != open) {
            return fail();
        }
        ++pos_;
        ++depth_;
        if (depth_ >= json::json_depth_max) {
            return fail();
        }
        return true;
    }
    bool separate(char close, bool& is_first) noexcept {
        const char next = peek();
        if (next == close) {
            ++pos_;
            --depth_;
            return false;
        }
        if (!is_first) {
            if (next != ',') {
                return fail();
            }
            ++pos_;
        }
        is_first = false;
        if (peek() == '\0') {
            return fail();
        }
        return true;
    }

    std::string_view text_;
    std::size_t pos_ = 0;
    int depth_ = 0;
    bool is_ok_ = true;
    std::string key_buffer_;
};

/// Sets `out` to a raw scalar as text, reusing its capacity: a string is decoded, null gives "",
/// anything else its raw text (the lenient rule of json::raw_to_text).
inline void assign_text(std::string& out, std::string_view raw) {
    if (!raw.empty() && raw.front() == '"') {
        const std::string_view body = raw.substr(1, raw.size() - 2);
        if (body.find('\\') == std::string_view::npos) {
            out.assign(body);
            return;
        }
        if (json::decode_json_string(raw, out)) {
            return;
        }
    }
    if (json::raw_is_null(raw)) {
        out.clear();
        return;
    }
    out.assign(raw);
}

inline bool JsonCursor::read_text(std::string& out) {
    std::size_t end = 0;
    if (peek() == '"' && find_plain_string_end(end)) {
        out.assign(text_.data() + pos_ + 1, end - pos_ - 1);
        pos_ = end + 1;
        return true;
    }
    std::string_view raw;
    if (!read_value(raw)) {
        return false;
    }
    assign_text(out, raw);
    return true;
}

}  // namespace queen::client::detail
