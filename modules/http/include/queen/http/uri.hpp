// queen/http/uri.hpp — percent-decoding of paths and query strings (RFC 3986, form '+').
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "queen/core/result.hpp"

namespace queen::http {

/// Decodes %XX escapes (hex digits of either case); with `plus_is_space`, '+' becomes ' '.
/// Errors: Errc::invalid_argument for a '%' not followed by two hex digits, and for %00 (a NUL
/// inside a name is never legitimate and would truncate it downstream).
[[nodiscard]] Result<std::string> percent_decode(std::string_view text, bool plus_is_space);

/// Percent-encodes everything except the RFC 3986 unreserved set [A-Za-z0-9-._~].
[[nodiscard]] std::string percent_encode(std::string_view text);

/// Splits a raw path on '/' and decodes each segment ('+' stays '+'); empty segments are
/// dropped. Errors: those of percent_decode, with the segment in the context.
[[nodiscard]] Result<std::vector<std::string>> decode_path(std::string_view raw_path);

/// Splits a raw query on '&', each piece on the first '=', decodes both sides with '+' as a
/// space. Empty pieces are skipped; "k" alone yields {"k", ""}.
/// Errors: those of percent_decode, with the parameter in the context.
[[nodiscard]] Result<std::vector<std::pair<std::string, std::string>>> decode_query(
    std::string_view raw_query);

}  // namespace queen::http
