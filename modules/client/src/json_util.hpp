// client/src/json_util.hpp — the client's DOM edge: lenient field readers over nlohmann::json for
// the admin answers (the hot answers are read by the core reader, queen/core/json_cursor.hpp, and
// every request body is written by the core writer). nlohmann exceptions never leave src/.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "queen/client/errc.hpp"
#include "queen/core/result.hpp"

namespace queen::client::detail {

using Json = nlohmann::json;

/// Parses a response body. Errors: Errc::bad_response naming `what`.
queen::Result<Json> parse_json(std::string_view body, std::string_view what);

/// A string field: "" when missing or null; other types as their JSON text.
std::string text_of(const Json& object, const char* key);
/// An integer field: numbers (truncated), numeric strings; otherwise `fallback`.
std::int64_t integer_of(const Json& object, const char* key, std::int64_t fallback = 0);
/// A boolean field: true, non-zero numbers, "true"/"1"; otherwise false.
bool boolean_of(const Json& object, const char* key);
/// A boolean field, or nullopt when missing or null.
std::optional<bool> optional_boolean_of(const Json& object, const char* key);
/// The first present key of the two (snake_case and camelCase spellings).
std::string text_of_either(const Json& object, const char* key, const char* other_key);

}  // namespace queen::client::detail
