// api/src/json.hpp — the JSON edge of the API: a streaming writer for responses, ISO-8601 time
// text, and request-body parsing (the one place nlohmann/json exceptions are caught).
#pragma once

#include <array>
#include <charconv>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "queen/core/assert.hpp"
#include "queen/core/result.hpp"

namespace queen::api::detail {

/// True when `text` goes between JSON quotes as it is: no '"', '\\' or byte below 0x20
/// (UTF-8 and other bytes are written as they are). Eight bytes per step.
[[nodiscard]] inline bool is_plain_json_text(std::string_view text) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101ULL;
    constexpr std::uint64_t highs = 0x8080808080808080ULL;
    const auto has_zero = [](std::uint64_t v) { return (v - ones) & ~v & highs; };
    const char* const data = text.data();
    const std::size_t size = text.size();
    std::size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, data + i, sizeof word);
        if ((((word - ones * 0x20) & ~word & highs) | has_zero(word ^ (ones * '"')) |
             has_zero(word ^ (ones * '\\'))) != 0) {
            return false;
        }
    }
    for (; i < size; ++i) {
        const auto c = static_cast<unsigned char>(data[i]);
        if (c < 0x20 || c == '"' || c == '\\') {
            return false;
        }
    }
    return true;
}

/// A key known at compile time (a string literal): its plain-text check runs in the compiler,
/// so writing it is one copy of a constant size. A literal that would need escaping does not
/// compile.
class JsonKey {
public:
    template <std::size_t N>
    consteval JsonKey(const char (&name)[N])  // NOLINT(google-explicit-constructor): literals
        : text_(name, N - 1) {
        for (const char c : text_) {
            if (static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\') {
                throw "JsonKey: a key that needs escaping";
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
class JsonWriter {
public:
    JsonWriter() = default;
    /// Reserves `capacity_bytes` up front (an estimate of the output saves the regrowth copies).
    explicit JsonWriter(std::size_t capacity_bytes) { out_.resize(capacity_bytes); }

    JsonWriter& begin_object();
    JsonWriter& end_object();
    JsonWriter& begin_array();
    JsonWriter& end_array();
    /// Writes `"name":` for a literal name; the next call writes its value.
    [[gnu::always_inline]] JsonWriter& key(JsonKey name) {
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
             !std::is_array_v<Text>) JsonWriter& key(const Text& name) {
        return text_key(std::string_view(name));
    }

    JsonWriter& string(std::string_view text) {
        prefix();
        if (is_plain_json_text(text)) {
            char* at = grow(text.size() + 2);
            at[0] = '"';
            std::memcpy(at + 1, text.data(), text.size());
            at[text.size() + 1] = '"';
        } else {
            write_escaped(text);
        }
        return *this;
    }
    /// A string, or null when `text` is empty.
    JsonWriter& string_or_null(std::string_view text) {
        return text.empty() ? null() : string(text);
    }
    /// `ms` since the epoch as an ISO-8601 string, as format_iso_ms (or format_iso_us when
    /// `microseconds`) writes it, without a temporary string (the date and time up to the
    /// second are reused from the previous call in the same second).
    JsonWriter& iso_time(std::int64_t ms, bool microseconds);
    JsonWriter& boolean(bool value) {
        prefix();
        append(value ? std::string_view("true") : std::string_view("false"));
        return *this;
    }
    JsonWriter& null() {
        prefix();
        append("null");
        return *this;
    }
    template <class T>
    requires(std::integral<T> && !std::same_as<T, bool>) JsonWriter& number(T value) {
        prefix();
        char digits[24];
        const auto written = std::to_chars(digits, digits + sizeof digits, value);
        append(std::string_view(digits, static_cast<std::size_t>(written.ptr - digits)));
        return *this;
    }
    JsonWriter& number(double value);
    /// Inserts already valid JSON text (a stored payload) as one value.
    JsonWriter& raw(std::string_view json_text) {
        prefix();
        append(json_text.empty() ? std::string_view("null") : json_text);
        return *this;
    }
    /// Inserts a copy of text this writer wrote earlier, text()[from, from + size): items of an
    /// open container (as raw_items), e.g. members shared by the objects of an array.
    JsonWriter& copy_items(std::size_t from, std::size_t size) {
        QUEEN_ASSERT(!after_key_ && depth_ > 0, "JsonWriter: copied items outside a container");
        QUEEN_ASSERT(from <= used_ && size <= used_ - from, "JsonWriter: copy past the text");
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
    [[gnu::always_inline]] JsonWriter& field(JsonKey name, std::string_view text) {
        return key(name).string(text);
    }
    [[gnu::always_inline]] JsonWriter& field(JsonKey name, const char* text) {
        return key(name).string(text);
    }
    [[gnu::always_inline]] JsonWriter& field(JsonKey name, const std::string& text) {
        return key(name).string(text);
    }
    [[gnu::always_inline]] JsonWriter& field(JsonKey name, bool value) {
        return key(name).boolean(value);
    }
    template <class T>
    requires(std::integral<T> && !std::same_as<T, bool>)
        [[gnu::always_inline]] JsonWriter& field(JsonKey name, T value) {
        return key(name).number(value);
    }
    [[gnu::always_inline]] JsonWriter& field_or_null(JsonKey name, std::string_view text) {
        return key(name).string_or_null(text);
    }
    [[gnu::always_inline]] JsonWriter& null_field(JsonKey name) { return key(name).null(); }

    /// The text so far; complete when every container is closed.
    [[nodiscard]] std::string_view text() const noexcept {
        return std::string_view(out_.data(), used_);
    }
    [[nodiscard]] std::string take();

private:
    void prefix() {
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
            QUEEN_ASSERT(used_ == 0, "JsonWriter: a second top-level value");
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
    JsonWriter& text_key(std::string_view name);
    /// Asserts: a key right after a key, or outside an object.
    [[noreturn, gnu::cold]] void misplaced_key() const;
    /// Enlarges the buffer (geometrically) so that `size` more bytes fit.
    void expand(std::size_t size);
    void append(std::string_view text) { std::memcpy(grow(text.size()), text.data(), text.size()); }
    /// Writes `text` quoted with the escapes of json::scan::append_quoted.
    void write_escaped(std::string_view text);
    void open_container(char bracket);
    void close_container(char bracket);
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

/// `ms` since the epoch as "YYYY-MM-DDTHH:MM:SS.fffZ" (UTC).
[[nodiscard]] std::string format_iso_ms(std::int64_t ms);
/// As format_iso_ms with six fraction digits ("...SS.ffffffZ"), the pop `createdAt` form.
[[nodiscard]] std::string format_iso_us(std::int64_t ms);
/// Parses "YYYY-MM-DD", "YYYY-MM-DDTHH:MM[:SS[.fraction]]" with an optional "Z" or "+HH:MM" /
/// "-HHMM" offset (none = UTC; a space may replace the 'T'). Returns milliseconds since the
/// epoch, or nullopt when the text is not such a time or a field is out of range.
[[nodiscard]] std::optional<std::int64_t> parse_iso(std::string_view text);

/// The deepest nesting of arrays/objects in `text` (strings skipped). Linear, no allocation;
/// garbage gives some number, the parser judges validity.
[[nodiscard]] std::uint32_t json_depth(std::string_view text) noexcept;

/// Parses a request body. Errors (Errc::invalid_argument, context = the client message):
/// "Empty request body", "Invalid JSON: <parser message>", "JSON nested deeper than N levels".
[[nodiscard]] Result<nlohmann::json> parse_body(std::string_view body, std::uint32_t depth_max);

/// Compact JSON text of `value` (used for stored payloads and trace data). Never throws:
/// strings with invalid UTF-8 are written with U+FFFD replacements.
[[nodiscard]] std::string dump_json(const nlohmann::json& value);

/// "object", "array", "string", "number", "boolean", "null" for error messages.
[[nodiscard]] std::string_view json_type_name(const nlohmann::json& value) noexcept;

/// True when `text` is 8-4-4-4-12 hex digits (any version), the shape of every UUID.
[[nodiscard]] bool is_uuid_text(std::string_view text) noexcept;

/// Reads an integer field. Absent or null -> `fallback`. A non-integer number or another type
/// -> Errc::invalid_argument "<name> must be an integer". Outside [min, max] ->
/// Errc::invalid_argument "<name> must be between <min> and <max>".
[[nodiscard]] Result<std::int64_t> integer_field(const nlohmann::json& object,
                                                 std::string_view name, std::int64_t fallback,
                                                 std::int64_t min, std::int64_t max);
/// Reads a boolean field. Absent or null -> `fallback`; another type -> "<name> must be a
/// boolean".
[[nodiscard]] Result<bool> boolean_field(const nlohmann::json& object, std::string_view name,
                                         bool fallback);
/// Reads an optional string field. Absent or null -> nullopt; another type -> `type_error`.
[[nodiscard]] Result<std::optional<std::string>> string_field(const nlohmann::json& object,
                                                              std::string_view name,
                                                              std::string_view type_error);

}  // namespace queen::api::detail
