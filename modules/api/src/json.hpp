// api/src/json.hpp — the JSON edge of the API: a streaming writer for responses, ISO-8601 time
// text, and request-body parsing (the one place nlohmann/json exceptions are caught).
#pragma once

#include <charconv>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "queen/core/result.hpp"

namespace queen::api::detail {

/// Builds compact JSON text left to right. Commas are placed automatically. Misuse (a value
/// where a key is due, unbalanced ends) is a programmer error and asserts.
class JsonWriter {
public:
    JsonWriter() = default;
    /// Reserves `capacity_bytes` up front (an estimate of the output saves the regrowth copies).
    explicit JsonWriter(std::size_t capacity_bytes) { out_.reserve(capacity_bytes); }

    JsonWriter& begin_object();
    JsonWriter& end_object();
    JsonWriter& begin_array();
    JsonWriter& end_array();
    /// Writes `"name":`; the next call writes its value.
    JsonWriter& key(std::string_view name);

    JsonWriter& string(std::string_view text);
    /// A string, or null when `text` is empty.
    JsonWriter& string_or_null(std::string_view text);
    /// `ms` since the epoch as an ISO-8601 string, as format_iso_ms (or format_iso_us when
    /// `microseconds`) writes it, without a temporary string.
    JsonWriter& iso_time(std::int64_t ms, bool microseconds);
    JsonWriter& boolean(bool value);
    JsonWriter& null();
    template <class T>
    requires(std::integral<T> && !std::same_as<T, bool>) JsonWriter& number(T value) {
        prefix();
        char digits[24];
        const auto written = std::to_chars(digits, digits + sizeof digits, value);
        out_.append(digits, written.ptr);
        return *this;
    }
    JsonWriter& number(double value);
    /// Inserts already valid JSON text (a stored payload) as one value.
    JsonWriter& raw(std::string_view json_text);
    /// Writes a string value of exactly `size` bytes and returns where they go; the caller
    /// fills all of them, with bytes that need no escaping (no '"', '\\' or control byte),
    /// before the next call on this writer. For ids formatted in place (no temporary string).
    [[nodiscard]] char* string_slot(std::size_t size);

    /// key + value shorthands.
    JsonWriter& field(std::string_view name, std::string_view text) {
        return key(name).string(text);
    }
    JsonWriter& field(std::string_view name, const char* text) { return key(name).string(text); }
    JsonWriter& field(std::string_view name, const std::string& text) {
        return key(name).string(text);
    }
    JsonWriter& field(std::string_view name, bool value) { return key(name).boolean(value); }
    template <class T>
    requires(std::integral<T> && !std::same_as<T, bool>) JsonWriter& field(std::string_view name,
                                                                           T value) {
        return key(name).number(value);
    }
    JsonWriter& field_or_null(std::string_view name, std::string_view text) {
        return key(name).string_or_null(text);
    }
    JsonWriter& null_field(std::string_view name) { return key(name).null(); }

    /// The text so far; complete when every container is closed.
    [[nodiscard]] const std::string& text() const noexcept { return out_; }
    [[nodiscard]] std::string take();

private:
    void prefix();
    /// Grows the text by `size` bytes and returns the first of them (to be overwritten).
    char* grow(std::size_t size);
    void open_container(char bracket);
    void close_container(char bracket);
    static constexpr std::uint32_t depth_max = 64;
    std::string out_;
    std::uint64_t has_items_ = 0;  // bit d: the open container at depth d has an item
    std::uint32_t depth_ = 0;      // open containers (no allocation per response)
    bool after_key_ = false;
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
