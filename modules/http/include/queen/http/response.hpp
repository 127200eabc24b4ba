// queen/http/response.hpp — a response a handler builds; the server adds framing headers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "queen/http/request.hpp"

namespace queen::http {

/// What a handler answers. The server adds Content-Length, Connection and the CORS headers;
/// do not put those in `headers`. A 1xx/204/304 response never carries a body (it is dropped).
struct Response {
    int status = 200;                               ///< 100..599 (asserted when serialized)
    std::string content_type = "application/json";  ///< omitted when empty or without a body
    std::vector<Header> headers;                    ///< extra headers, written as given
    std::string body;

    /// `status` with a JSON body written by the caller (already valid JSON).
    [[nodiscard]] static Response json(int status, std::string json_body);
    /// `status` with `{"error": "<message>"}`, the message JSON-escaped.
    [[nodiscard]] static Response error(int status, std::string_view message);
    /// `status` with a text/plain body.
    [[nodiscard]] static Response text(int status, std::string text_body,
                                       std::string content_type = "text/plain; charset=utf-8");
    /// `status` without a body (204 for an empty pop).
    [[nodiscard]] static Response empty(int status = 204);
};

/// The reason phrase of a status code ("OK", "Not Found"); "Unknown" for unlisted codes.
[[nodiscard]] std::string_view reason_phrase(int status) noexcept;

/// `text` as a JSON string literal including the quotes (queen::json::scan::append_quoted:
/// two-character escapes where JSON has them, \u00XX for other control characters; other bytes,
/// invalid UTF-8 included, pass through unchanged).
[[nodiscard]] std::string json_quote(std::string_view text);

}  // namespace queen::http
