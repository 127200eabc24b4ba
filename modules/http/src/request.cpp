// modules/http/src/request.cpp — Request lookups, method names, and Response helpers.
#include <array>
#include <charconv>

#include "queen/core/json_scan.hpp"
#include "queen/core/json_writer.hpp"
#include "queen/http/request.hpp"
#include "queen/http/response.hpp"

namespace queen::http {
namespace {

constexpr std::array<std::string_view, 8> method_names = {"GET",    "HEAD",  "POST",    "PUT",
                                                          "DELETE", "PATCH", "OPTIONS", "OTHER"};

char lower(char c) noexcept {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
}

}  // namespace

std::string_view method_name(Method method) noexcept {
    return method_names[static_cast<std::size_t>(method)];
}

Method parse_method(std::string_view name) noexcept {
    for (std::size_t i = 0; i + 1 < method_names.size(); ++i) {
        if (method_names[i] == name) {
            return static_cast<Method>(i);
        }
    }
    return Method::other;
}

bool iequals(std::string_view left, std::string_view right) noexcept {
    if (left.size() != right.size()) {
        return false;
    }
    for (std::size_t i = 0; i < left.size(); ++i) {
        if (lower(left[i]) != lower(right[i])) {
            return false;
        }
    }
    return true;
}

std::optional<std::string_view> Request::header(std::string_view name) const noexcept {
    for (const Header& h : headers) {
        if (iequals(h.name, name)) {
            return std::string_view{h.value};
        }
    }
    return std::nullopt;
}

std::optional<std::string_view> Request::query_value(std::string_view name) const noexcept {
    for (const auto& [key, value] : query) {
        if (key == name) {
            return std::string_view{value};
        }
    }
    return std::nullopt;
}

bool Request::query_bool(std::string_view name, bool fallback) const noexcept {
    const auto value = query_value(name);
    if (!value) {
        return fallback;
    }
    return *value == "true" || *value == "1";
}

std::int64_t Request::query_int(std::string_view name, std::int64_t fallback) const noexcept {
    const auto value = query_value(name);
    if (!value || value->empty()) {
        return fallback;
    }
    std::int64_t parsed = 0;
    const char* end = value->data() + value->size();
    const auto [where, error] = std::from_chars(value->data(), end, parsed);
    if (error != std::errc{} || where != end) {
        return fallback;
    }
    return parsed;
}

std::optional<std::string_view> Request::param(std::string_view name) const noexcept {
    for (const auto& [key, value] : params) {
        if (key == name) {
            return std::string_view{value};
        }
    }
    return std::nullopt;
}

Response Response::json(int status, std::string json_body) {
    Response response;
    response.status = status;
    response.body = std::move(json_body);
    return response;
}

Response Response::error(int status, std::string_view message) {
    json::Writer body;
    body.begin_object().field("error", message).end_object();
    Response response;
    response.status = status;
    response.body = body.take();
    return response;
}

Response Response::text(int status, std::string text_body, std::string content_type) {
    Response response;
    response.status = status;
    response.content_type = std::move(content_type);
    response.body = std::move(text_body);
    return response;
}

Response Response::empty(int status) {
    Response response;
    response.status = status;
    response.content_type.clear();
    return response;
}

std::string_view reason_phrase(int status) noexcept {
    switch (status) {
        case 100: return "Continue";
        case 101: return "Switching Protocols";
        case 200: return "OK";
        case 201: return "Created";
        case 202: return "Accepted";
        case 204: return "No Content";
        case 206: return "Partial Content";
        case 301: return "Moved Permanently";
        case 302: return "Found";
        case 304: return "Not Modified";
        case 307: return "Temporary Redirect";
        case 308: return "Permanent Redirect";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 409: return "Conflict";
        case 410: return "Gone";
        case 411: return "Length Required";
        case 412: return "Precondition Failed";
        case 413: return "Payload Too Large";
        case 414: return "URI Too Long";
        case 415: return "Unsupported Media Type";
        case 417: return "Expectation Failed";
        case 422: return "Unprocessable Entity";
        case 429: return "Too Many Requests";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        case 505: return "HTTP Version Not Supported";
        case 507: return "Insufficient Storage";
        default: return "Unknown";
    }
}

std::string json_quote(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    json::scan::append_quoted(out, text);
    return out;
}

}  // namespace queen::http
