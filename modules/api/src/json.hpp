// api/src/json.hpp — the JSON edge of the API: the core writer for responses, ISO-8601 time
// text, the DOM (nlohmann) for the admin and configuration bodies (the one place nlohmann/json
// exceptions are caught) and the errors of a body that is not JSON. The hot bodies are read by
// the core reader (parse_fast.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "queen/core/json_writer.hpp"
#include "queen/core/result.hpp"

namespace queen::api::detail {

/// The one JSON writer (core): answers are built with it.
using JsonWriter = json::Writer;
using JsonKey = json::Key;

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
/// The error parse_body gives `body`, for a body the core reader refused (not JSON, or nested
/// deeper than `depth_max`): the same words for every route. Cold: the request fails anyway.
[[nodiscard]] Error body_error(std::string_view body, std::uint32_t depth_max);

/// Compact JSON text of `value` (used for stored payloads and trace data). Never throws:
/// strings with invalid UTF-8 are written with U+FFFD replacements.
[[nodiscard]] std::string dump_json(const nlohmann::json& value);

/// "object", "array", "string", "number", "boolean", "null" for error messages.
[[nodiscard]] std::string_view json_type_name(const nlohmann::json& value) noexcept;

/// True when `text` is 8-4-4-4-12 hex digits (any version), the shape of every UUID.
[[nodiscard]] bool is_uuid_text(std::string_view text) noexcept;

/// A JSON number as the DOM holds it: an integer that fits int64, one above it (up to 2^64-1),
/// a real (a fraction or exponent, or an integer beyond uint64), or not a number at all.
struct Number {
    enum class Kind : std::uint8_t { none, integer, above_int64, real };
    Kind kind = Kind::none;
    std::int64_t integer = 0;
    double real = 0;
};
/// The integer rule of every integer member (integer_field, and the raw members of
/// object_view.hpp): an integer, or a real without a fraction within +-9e18, in [min, max].
/// Errors as integer_field's.
[[nodiscard]] Result<std::int64_t> checked_integer(std::string_view name, const Number& number,
                                                   std::int64_t min, std::int64_t max);
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
