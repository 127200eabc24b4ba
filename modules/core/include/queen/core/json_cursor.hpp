// core/json_cursor.hpp — the single-pass walk of the one JSON reader (json_scan.hpp) over a
// whole document: the api's request bodies (push, ack, ack batch, transaction), the client's
// answers (push, pop, ack and transaction results), the bench's payloads. Every byte is validated
// once, as the walk consumes it, instead of once per nesting level as for_each_member /
// for_each_element do when nested.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "queen/core/json_scan.hpp"

namespace queen::json {

/// True when `key` is exactly `literal`; the comparison has a constant length, so it compiles to
/// a length check and a few word compares instead of a call.
template <std::size_t N>
[[nodiscard]] inline bool is_key(std::string_view key, const char (&literal)[N]) noexcept {
    return key.size() == N - 1 && std::memcmp(key.data(), literal, N - 1) == 0;
}

namespace detail {

/// True when the `size` bytes at `a` and `b` are equal: a few word compares, without a call,
/// for the short member names compared at run time (memcmp would be a library call).
[[nodiscard]] inline bool is_equal_bytes(const char* a, const char* b, std::size_t size) noexcept {
    const auto load8 = [](const char* at) {
        std::uint64_t word = 0;
        std::memcpy(&word, at, sizeof word);
        return word;
    };
    const auto load4 = [](const char* at) {
        std::uint32_t word = 0;
        std::memcpy(&word, at, sizeof word);
        return word;
    };
    if (size >= 8) {
        // Whole words, then the last eight bytes (overlapping the previous word when needed).
        for (std::size_t i = 0; i + 8 < size; i += 8) {
            if (load8(a + i) != load8(b + i)) {
                return false;
            }
        }
        return load8(a + size - 8) == load8(b + size - 8);
    }
    if (size >= 4) {
        return load4(a) == load4(b) && load4(a + size - 4) == load4(b + size - 4);
    }
    return std::memcmp(a, b, size) == 0;
}

}  // namespace detail

/// Sets `out` to the bytes [data, data + size), reusing its storage: an append to a cleared
/// string is a capacity check and a copy, cheaper than assign()'s overlap handling.
inline void assign_bytes(std::string& out, const char* data, std::size_t size) {
    out.clear();
    out.append(data, size);
}

/// Sets `out` to a raw scalar as text, reusing its capacity: a string is decoded, null gives "",
/// anything else its raw text (the lenient rule of json::raw_to_text).
inline void assign_text(std::string& out, std::string_view raw) {
    if (!raw.empty() && raw.front() == '"') {
        const std::string_view body = raw.substr(1, raw.size() - 2);
        if (body.find('\\') == std::string_view::npos) {
            assign_bytes(out, body.data(), body.size());
            return;
        }
        if (decode_json_string(raw, out)) {
            return;
        }
    }
    if (raw_is_null(raw)) {
        out.clear();
        return;
    }
    assign_bytes(out, raw.data(), raw.size());
}

/// Walks one JSON text front to back. Every read either succeeds and moves past what it read, or
/// fails and marks the cursor failed (is_ok() false); later reads then fail too, so callers may
/// check once at the end. Values are validated by queen::json::scan (RFC 8259, arrays and
/// objects at most `depth_max` deep, as scan::skip_value counts them); the fast paths below
/// accept only text that scanner accepts and leave the rest to it. A failure means the text is
/// not valid JSON (or too deep) unless the caller called fail() itself.
/// Not thread-safe; `text` must outlive the cursor and the spans it returns.
class Cursor {
public:
    /// `depth`: the arrays and objects already open around `text` (a cursor over a value that
    /// an outer walk has validated and taken apart).
    explicit Cursor(std::string_view text, int depth_max = json_depth_max, int depth = 0) noexcept
        : text_(text), depth_(depth), depth_max_(depth_max) {}

    [[nodiscard]] bool is_ok() const noexcept { return is_ok_; }
    /// Where the walk is: text()[offset()] is the next byte to read (or whitespace before it).
    [[nodiscard]] std::size_t offset() const noexcept { return pos_; }
    [[nodiscard]] std::string_view text() const noexcept { return text_; }
    /// The next non-whitespace byte, or '\0' at the end (or after a failure).
    [[nodiscard]] char peek() noexcept {
        // Compact answers rarely have whitespace between tokens: the next byte is already a token
        // (every JSON token starts above the space character) and nothing is called.
        if (pos_ < text_.size() && static_cast<unsigned char>(text_[pos_]) > ' ' && is_ok_) {
            return text_[pos_];
        }
        return peek_after_whitespace();
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
        const std::size_t end = find_plain_string_end(pos_ + 1);
        if (end != std::string_view::npos) [[likely]] {
            key = std::string_view{text_.data() + pos_ + 1, end - pos_ - 1};
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
    /// Inside an object: when the next member is written exactly `member` (its key in quotes and
    /// a colon, e.g. "\"id\":", no whitespace or escapes) consumes it and returns true, the cursor
    /// then sitting on its value as after next_member(); otherwise changes nothing and returns
    /// false, and next_member() reads the member. Lets a reader that knows the order the server
    /// writes its members in skip looking for each key.
    template <std::size_t N>
    bool next_member_is(const char (&member)[N], bool& is_first) noexcept {
        std::size_t at = pos_;
        if (!is_first) {
            if (at >= text_.size() || text_[at] != ',') {
                return false;
            }
            ++at;
        }
        if (text_.size() - at < N - 1 || std::memcmp(text_.data() + at, member, N - 1) != 0 ||
            !is_ok_) {
            return false;
        }
        pos_ = at + N - 1;
        is_first = false;
        return true;
    }
    /// next_member_is() for a member known at run time.
    bool next_member_is(std::string_view member, bool& is_first) noexcept {
        std::size_t at = pos_;
        if (!is_first) {
            if (at >= text_.size() || text_[at] != ',') {
                return false;
            }
            ++at;
        }
        if (member.empty() || text_.size() - at < member.size() ||
            !detail::is_equal_bytes(text_.data() + at, member.data(), member.size()) || !is_ok_) {
            return false;
        }
        pos_ = at + member.size();
        is_first = false;
        return true;
    }
    /// next_member() for an object whose members usually come in the order of `members` (each
    /// written as next_member_is() takes it): `expected` indexes the member tried first and moves
    /// past it when it came. `key` is the member's key either way.
    bool next_member_in_order(std::span<const std::string_view> members, std::size_t& expected,
                              std::string_view& key, bool& is_first) {
        if (expected < members.size() && next_member_is(members[expected], is_first)) {
            const std::string_view member = members[expected++];
            key = member.substr(1, member.size() - 3);  // without the quotes and the colon
            return true;
        }
        return next_member(key, is_first);
    }
    /// Inside an array: true when another element follows (the cursor sits on it); false at the
    /// closing ']' (consumed) or on failure.
    bool next_element(bool& is_first) { return separate(']', is_first); }

    /// Consumes one scalar into `out` as text, reusing its storage (the rule of assign_text(): a
    /// string decoded, null as "", other values as their raw text).
    bool read_text(std::string& out) {
        const char next = peek();
        if (next == '"') {
            const std::size_t end = find_plain_string_end(pos_ + 1);
            if (end != std::string_view::npos) {
                assign_bytes(out, text_.data() + pos_ + 1, end - pos_ - 1);
                pos_ = end + 1;
                return true;
            }
        } else if (next == 'n' && is_literal_at("null")) {
            out.clear();
            pos_ += 4;
            return true;
        }
        return read_text_slowly(out);
    }

    /// Consumes one value into `value` by the rule of json::raw_to_bool(): true, "true", "1"
    /// and non-zero numbers are true; anything else valid is false.
    bool read_bool(bool& value) {
        if (peek() == 't' && is_literal_at("true")) {
            value = true;
            pos_ += 4;
            return true;
        }
        if (peek() == 'f' && is_literal_at("false")) {
            value = false;
            pos_ += 5;
            return true;
        }
        std::string_view raw;
        if (!read_value(raw)) {
            return false;
        }
        value = raw_to_bool(raw);
        return true;
    }

    /// Consumes one value into `value` by the rule of json::raw_to_integer() (numbers truncated,
    /// numeric strings parsed, anything else 0).
    bool read_integer(std::int64_t& value) {
        // The common case, a short plain non-negative integer, is parsed here: its digits are
        // exactly what the scanner accepts when no fraction or exponent follows.
        const char first = peek();
        if (first >= '0' && first <= '9') {
            const char* data = text_.data();
            std::size_t end = pos_ + 1;
            std::int64_t parsed = first - '0';
            if (first != '0') {
                while (end < text_.size() && end - pos_ < 18 && data[end] >= '0' &&
                       data[end] <= '9') {
                    parsed = parsed * 10 + (data[end] - '0');
                    ++end;
                }
            }
            const bool is_plain_end =
                end >= text_.size() || (data[end] != '.' && data[end] != 'e' && data[end] != 'E' &&
                                        (data[end] < '0' || data[end] > '9'));
            if (is_plain_end) {
                value = parsed;
                pos_ = end;
                return true;
            }
        }
        std::string_view raw;
        if (!read_value(raw)) {
            return false;
        }
        value = raw_to_integer(raw);
        return true;
    }

    /// Consumes one whole value (validated) and returns its raw span.
    bool read_value(std::string_view& raw) noexcept {
        const char next = peek();
        if (next == '\0') {
            return fail();
        }
        const std::size_t start = pos_;
        // A flat object holds no array or object: one level deeper than here.
        if (next == '{' && depth_ < depth_max_) {
            const std::size_t end = find_flat_object_end(start);
            if (end != std::string_view::npos) {
                raw = text_.substr(start, end - start);
                pos_ = end;
                return true;
            }
        }
        if (!scan::skip_value(text_, pos_, depth_ + 1, depth_max_)) {
            return fail();
        }
        raw = text_.substr(start, pos_ - start);
        return true;
    }
    /// read_value() that also tells whether the value is a plain string: only printable ASCII,
    /// no escape, so its text is `raw` without the quotes (nothing to decode).
    bool read_raw(std::string_view& raw, bool& is_plain_string) noexcept {
        if (peek() == '"') {
            const std::size_t end = find_plain_string_end(pos_ + 1);
            if (end != std::string_view::npos) {
                raw = text_.substr(pos_, end + 1 - pos_);
                pos_ = end + 1;
                is_plain_string = true;
                return true;
            }
        }
        is_plain_string = false;
        return read_value(raw);
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
    /// The fast path of the strings an answer is made of (keys, ids, times): when the string
    /// whose body starts at `from` holds only printable ASCII without escapes up to its closing
    /// quote, returns that quote's position. Such strings are valid JSON by construction;
    /// anything else (an escape, a control byte, UTF-8, no closing quote) returns npos for the
    /// full scanner.
    [[nodiscard]] std::size_t find_plain_string_end(std::size_t from) const noexcept {
        const std::size_t end =
            detail::find_plain_end<detail::Plain::ascii>(text_.data(), text_.size(), from);
        return end < text_.size() && text_[end] == '"' ? end : std::string_view::npos;
    }
    /// The fast path of read_value() for payloads such as the bench's: when the object at `from`
    /// (a '{') is compact (no whitespace) and holds only plain strings (as above) and short
    /// non-negative integers, returns the position after its closing brace. Such an object is
    /// valid JSON by construction; anything else returns npos for the full scanner.
    [[nodiscard]] std::size_t find_flat_object_end(std::size_t from) const noexcept {
        constexpr std::size_t none = std::string_view::npos;
        const char* data = text_.data();
        const std::size_t size = text_.size();
        const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
        std::size_t i = from + 1;
        if (i < size && data[i] == '}') {
            return i + 1;
        }
        for (;;) {
            if (i >= size || data[i] != '"') {
                return none;
            }
            std::size_t end = find_plain_string_end(i + 1);
            if (end == none || end + 2 >= size || data[end + 1] != ':') {
                return none;
            }
            i = end + 2;
            if (data[i] == '"') {
                end = find_plain_string_end(i + 1);
                if (end == none) {
                    return none;
                }
                i = end + 1;
            } else if (is_digit(data[i])) {
                // The scanner's integer rule: "0" alone, or digits not starting with 0 (up to
                // 300, which always fit a double); then the separator must follow.
                const std::size_t start = i++;
                if (data[start] != '0') {
                    while (i < size && i - start < 300 && is_digit(data[i])) {
                        ++i;
                    }
                }
                // A fraction, an exponent or a digit past the 300th is no separator: below.
            } else {
                return none;
            }
            if (i >= size) {
                return none;
            }
            if (data[i] == '}') {
                return i + 1;
            }
            if (data[i] != ',') {
                return none;
            }
            ++i;
        }
    }
    /// True when the text at the cursor starts with `literal` (the scanner's literal rule: the
    /// byte after it is checked by whatever reads next).
    template <std::size_t N>
    [[nodiscard]] bool is_literal_at(const char (&literal)[N]) const noexcept {
        return text_.size() - pos_ >= N - 1 &&
               std::memcmp(text_.data() + pos_, literal, N - 1) == 0;
    }
    [[gnu::noinline]] char peek_after_whitespace() noexcept {
        scan::skip_whitespace(text_, pos_);
        return is_ok_ && pos_ < text_.size() ? text_[pos_] : '\0';
    }
    [[gnu::noinline]] bool read_text_slowly(std::string& out) {
        std::string_view raw;
        if (!read_value(raw)) {
            return false;
        }
        assign_text(out, raw);
        return true;
    }
    [[gnu::noinline]] bool read_key(std::string_view& key) {
        std::string_view raw;
        if (!read_value(raw)) {
            return false;
        }
        const std::string_view body = raw.substr(1, raw.size() - 2);
        if (body.find('\\') == std::string_view::npos) {
            key = body;
        } else {
            if (!decode_json_string(raw, key_buffer_)) {
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
        if (depth_ > depth_max_) {
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
    int depth_max_ = json_depth_max;
    bool is_ok_ = true;
    std::string key_buffer_;
};

}  // namespace queen::json
