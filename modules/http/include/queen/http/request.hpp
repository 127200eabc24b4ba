// queen/http/request.hpp — one parsed HTTP request: method, target, decoded path and query,
// headers, body.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace queen::http {

/// The methods the router distinguishes; anything else the parser accepts is `other`
/// (its text is in Request::method_name).
enum class Method : std::uint8_t { get, head, post, put, delete_, patch, options, other };

/// "GET", "HEAD", ... ("OTHER" for Method::other).
[[nodiscard]] std::string_view method_name(Method method) noexcept;
/// The Method for an upper-case method name; Method::other when it is not one of the above.
[[nodiscard]] Method parse_method(std::string_view name) noexcept;

/// A header as received (name case preserved).
struct Header {
    std::string name;
    std::string value;
};

/// ASCII case-insensitive equality (header names).
[[nodiscard]] bool iequals(std::string_view left, std::string_view right) noexcept;

/// A request as the server hands it to a handler. Plain data: handlers may move pieces out
/// (typically the body). Names are exact; values are percent-decoded where stated.
struct Request {
    Method method = Method::get;
    std::string method_name;  ///< as received ("GET", "PROPFIND", ...)
    std::string target;       ///< the raw request-target ("/api/v1/pop/queue/q%20a?wait=true")
    std::string path;         ///< raw path of the target, not decoded ("/api/v1/pop/queue/q%20a")
    std::string raw_query;    ///< raw query string without '?', not decoded ("wait=true")
    /// Percent-decoded path segments, empty segments dropped ("/a//b%2Fc/" -> {"a", "b/c"}).
    std::vector<std::string> segments;
    /// Decoded query parameters in order ('+' is a space); "k" alone gives {"k", ""}.
    std::vector<std::pair<std::string, std::string>> query;
    std::vector<Header> headers;  ///< in arrival order, duplicates kept
    std::string body;             ///< decoded (chunked framing removed)
    std::uint16_t version_major = 1;
    std::uint16_t version_minor = 1;
    bool is_keep_alive = true;  ///< the connection stays open after this exchange
    std::string peer_address;   ///< numeric IP of the client ("127.0.0.1")
    std::uint16_t peer_port = 0;
    /// Who the caller proved to be (a token's subject), set by an authentication front such as
    /// api::with_authentication; empty when none checked it. Never read from the wire.
    std::string auth_subject;
    /// Values of the route's `:name` segments, filled by Router (decoded, like segments).
    std::vector<std::pair<std::string, std::string>> params;

    /// The first header named `name` (case-insensitive), or nullopt. The view lives as long
    /// as this Request.
    [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const noexcept;
    /// The first query parameter named `name` (exact), or nullopt. "k=" yields "".
    [[nodiscard]] std::optional<std::string_view> query_value(std::string_view name) const noexcept;
    /// A boolean query parameter as the Queen v1 clients send it: `fallback` when absent;
    /// otherwise true only for "true" or "1" (docs/http-api.md, Conventions).
    [[nodiscard]] bool query_bool(std::string_view name, bool fallback) const noexcept;
    /// An integer query parameter: `fallback` when absent or not entirely a base-10 integer
    /// that fits in int64 (the old Queen server's rule; modules/api parses its integers itself
    /// and answers 400 for a malformed one).
    [[nodiscard]] std::int64_t query_int(std::string_view name,
                                         std::int64_t fallback) const noexcept;
    /// The route parameter `name` (without ':'), or nullopt when the route has none of that name.
    [[nodiscard]] std::optional<std::string_view> param(std::string_view name) const noexcept;
};

}  // namespace queen::http
