// core/json_writer.hpp — the one JSON writer of the tree: the api's answers, the client's
// request bodies, the bench's payloads. Strings are escaped by the rule of
// json::scan::append_quoted (detail::write_quoted, over the plain-string loop of json_scan.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "queen/core/assert.hpp"
#include "queen/core/json_scan.hpp"

namespace queen::json {

/// A key known at compile time (a string literal): its plain-text check runs in the compiler,
/// so writing it is one copy of a constant size. A literal that would need escaping does not
/// compile.
class Key {
public:
    template <std::size_t N>
    consteval Key(const char (&name)[N])  // NOLINT(google-explicit-constructor): literals
        : text_(name, N - 1) {
        for (const char c : text_) {
            if (static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\') {
                throw "json::Key: a key that needs escaping";
            }
        }
    }
    [[nodiscard]] constexpr std::string_view text() const noexcept { return text_; }

private:
    std::string_view text_;
};

/// Builds compact JSON text left to right. Commas are placed automatically. Misuse (a value
/// where a key is due, unbalanced ends) is a programmer error and asserts. The text grows in a
/// buffer written through a pointer (no per-call string bookkeeping); keys and plain strings
/// are checked and copied inline.
class Writer {
public:
    Writer() = default;
    /// Reserves `capacity_bytes` up front (an estimate of the output saves the regrowth copies).
    explicit Writer(std::size_t capacity_bytes) { out_.resize(capacity_bytes); }
    /// Writes over the text of `buffer` in its storage, reserved to at least `capacity_bytes`: a
    /// caller that builds many texts reuses one allocation through take(). The buffer grows (and
    /// is zeroed) only past its old text, so pass the previous text, not a cleared string.
    explicit Writer(std::string&& buffer, std::size_t capacity_bytes = 0)
        : out_(std::move(buffer)) {
        out_.reserve(capacity_bytes);
    }

    Writer& begin_object() {
        open_container('{');
        return *this;
    }
    Writer& end_object() {
        close_container('}');
        return *this;
    }
    Writer& begin_array() {
        open_container('[');
        return *this;
    }
    Writer& end_array() {
        close_container(']');
        return *this;
    }
    /// Writes `"name":` for a literal name; the next call writes its value.
    [[gnu::always_inline]] Writer& key(Key name) {
        if (after_key_ || depth_ == 0) [[unlikely]] {
            misplaced_key();
        }
        prefix();
        const std::string_view text = name.text();
        char* at = grow(text.size() + 3);
        at[0] = '"';
        std::memcpy(at + 1, text.data(), text.size());
        at[text.size() + 1] = '"';
        at[text.size() + 2] = ':';
        after_key_ = true;
        return *this;
    }
    /// Writes `"name":` for a name made at run time (escaped when it needs it).
    template <class Text>
    requires(std::convertible_to<const Text&, std::string_view> &&
             !std::is_array_v<Text>) Writer& key(const Text& name) {
        return text_key(std::string_view(name));
    }

    Writer& string(std::string_view text) {
        prefix();
        if (is_plain(text)) {
            char* at = grow(text.size() + 2);
            at[0] = '"';
            std::memcpy(at + 1, text.data(), text.size());
            at[text.size() + 1] = '"';
        } else {
            write_escaped(text);
        }
        return *this;
    }
    /// A string value known at compile time (a literal, checked then like a key): one copy.
    [[gnu::always_inline]] Writer& literal(Key text) {
        prefix();
        const std::string_view value = text.text();
        char* at = grow(value.size() + 2);
        at[0] = '"';
        std::memcpy(at + 1, value.data(), value.size());
        at[value.size() + 1] = '"';
        return *this;
    }
    /// A string, or null when `text` is empty.
    Writer& string_or_null(std::string_view text) { return text.empty() ? null() : string(text); }
    /// `ms` since the epoch as an ISO-8601 string, as write_iso_time (queen/core/iso_time.hpp)
    /// writes it, without a temporary string (the date and time up to the second are reused
    /// from the previous call in the same second).
    Writer& iso_time(std::int64_t ms, bool microseconds);
    Writer& boolean(bool value) {
        prefix();
        append(value ? std::string_view("true") : std::string_view("false"));
        return *this;
    }
    Writer& null() {
        prefix();
        append("null");
        return *this;
    }
    template <class T>
    requires(std::integral<T> && !std::same_as<T, bool>) Writer& number(T value) {
        prefix();
        char digits[24];
        const auto written = std::to_chars(digits, digits + sizeof digits, value);
        append(std::string_view(digits, static_cast<std::size_t>(written.ptr - digits)));
        return *this;
    }
    Writer& number(double value);
    /// Inserts already valid JSON text (a stored payload) as one value.
    Writer& raw(std::string_view json_text) {
        prefix();
        append(json_text.empty() ? std::string_view("null") : json_text);
        return *this;
    }
    /// Inserts a copy of text this writer wrote earlier, text()[from, from + size): items of an
    /// open container (as raw_items), e.g. members shared by the objects of an array.
    Writer& copy_items(std::size_t from, std::size_t size) {
        QUEEN_ASSERT(!after_key_ && depth_ > 0, "json::Writer: copied items outside a container");
        QUEEN_ASSERT(from <= used_ && size <= used_ - from, "json::Writer: copy past the text");
        if (size > 0) {
            prefix();
            char* at = grow(size);  // may move the buffer: the source is taken after it
            std::memcpy(at, out_.data() + from, size);
        }
        return *this;
    }
    /// Writes a string value of exactly `size` bytes and returns where they go; the caller
    /// fills all of them, with bytes that need no escaping (no '"', '\\' or control byte),
    /// before the next call on this writer. For ids formatted in place (no temporary string).
    [[nodiscard]] char* string_slot(std::size_t size) {
        prefix();
        char* at = grow(size + 2);
        at[0] = '"';
        at[size + 1] = '"';
        return at + 1;
    }

    /// key + value shorthands (literal keys; a run-time key goes through key()). Always
    /// inlined like key(): out of line the key's size is no longer a constant.
    [[gnu::always_inline]] Writer& field(Key name, std::string_view text) {
        return key(name).string(text);
    }
    [[gnu::always_inline]] Writer& field(Key name, const char* text) {
        return key(name).string(text);
    }
    [[gnu::always_inline]] Writer& field(Key name, const std::string& text) {
        return key(name).string(text);
    }
    [[gnu::always_inline]] Writer& field(Key name, bool value) { return key(name).boolean(value); }
    template <class T>
    requires(std::integral<T> && !std::same_as<T, bool>)
        [[gnu::always_inline]] Writer& field(Key name, T value) {
        return key(name).number(value);
    }
    [[gnu::always_inline]] Writer& field_or_null(Key name, std::string_view text) {
        return key(name).string_or_null(text);
    }
    [[gnu::always_inline]] Writer& null_field(Key name) { return key(name).null(); }

    /// The text so far; complete when every container is closed.
    [[nodiscard]] std::string_view text() const noexcept {
        return std::string_view(out_.data(), used_);
    }
    [[nodiscard]] std::string take();

private:
    [[gnu::always_inline]] void prefix() {
        if (after_key_) {
            after_key_ = false;
            return;
        }
        if (depth_ > 0) {
            const std::uint64_t bit = std::uint64_t{1} << (depth_ - 1);
            if ((has_items_ & bit) != 0) {
                *grow(1) = ',';
            }
            has_items_ |= bit;
        } else {
            QUEEN_ASSERT(used_ == 0, "json::Writer: a second top-level value");
        }
    }
    /// Takes the next `size` bytes of the buffer (to be overwritten) and returns the first.
    char* grow(std::size_t size) {
        if (size > out_.size() - used_) {
            expand(size);
        }
        char* at = out_.data() + used_;
        used_ += size;
        return at;
    }
    /// key() for a run-time name.
    Writer& text_key(std::string_view name);
    /// Asserts: a key right after a key, or outside an object.
    [[noreturn, gnu::cold]] void misplaced_key() const;
    /// Enlarges the buffer (geometrically, within its storage first) so that `size` more bytes
    /// fit.
    void expand(std::size_t size);
    void append(std::string_view text) { std::memcpy(grow(text.size()), text.data(), text.size()); }
    /// Writes `text` quoted with the escapes of detail::write_quoted.
    void write_escaped(std::string_view text);
    /// True when `text` goes between quotes as it is (no '"', '\\' or control byte).
    static bool is_plain(std::string_view text) noexcept {
        return detail::find_plain_end<detail::Plain::unescaped>(text.data(), text.size(), 0) ==
               text.size();
    }
    void open_container(char bracket) {
        prefix();
        if (depth_ >= depth_max) [[unlikely]] {
            too_deep();
        }
        *grow(1) = bracket;
        has_items_ &= ~(std::uint64_t{1} << depth_);
        ++depth_;
    }
    void close_container(char bracket) {
        if (depth_ == 0 || after_key_) [[unlikely]] {
            unbalanced(bracket);
        }
        --depth_;
        *grow(1) = bracket;
    }
    /// Asserts: a container past depth_max, or an end without its beginning.
    [[noreturn, gnu::cold]] void too_deep() const;
    [[noreturn, gnu::cold]] void unbalanced(char bracket) const;
    static constexpr std::uint32_t depth_max = 64;
    std::string out_;  // the buffer: [0, used_) is the text, the rest is room
    std::size_t used_ = 0;
    std::uint64_t has_items_ = 0;  // bit d: the open container at depth d has an item
    std::uint32_t depth_ = 0;      // open containers (no allocation per response)
    bool after_key_ = false;
    // iso_time's last second and its "YYYY-MM-DDTHH:MM:SS." (a pop's messages share seconds).
    std::int64_t iso_second_ = INT64_MIN;
    std::array<char, 20> iso_prefix_{};
};

}  // namespace queen::json
