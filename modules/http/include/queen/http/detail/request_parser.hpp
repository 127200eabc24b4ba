// queen/http/detail/request_parser.hpp — incremental HTTP/1.x request parsing without sockets
// (http_parser underneath); used by the server's connections and by the fuzzer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "queen/http/request.hpp"

namespace queen::http::detail {

struct ParserLimits {
    std::uint32_t header_size_bytes_max = 16 * 1024;
    std::uint32_t headers_count_max = 100;
    std::uint64_t body_size_bytes_max = 16u << 20;
    /// Whole requests of the common shape are parsed without http_parser, and plain targets
    /// split without http_parser_parse_url (see feed()); tests turn it off to compare the paths.
    bool is_fast_path_enabled = true;
};

/// A request-level failure: the status to answer and the message for `{"error": ...}`.
struct ParseFailure {
    int status = 400;
    std::string message;
};

/// A complete request off the wire. `target_error` is set when the framing was fine but the
/// target's percent-encoding was not (answer 400, the connection may stay open).
struct ParsedRequest {
    Request request;
    std::optional<std::string> target_error;
    bool is_upgrade = false;  ///< Upgrade/CONNECT: the bytes after it are not HTTP; close after
};

/// Parses a stream of requests, one at a time. feed() stops right after a complete request so
/// the caller controls pipelining. Not thread-safe; one per connection.
class RequestParser {
public:
    enum class State : std::uint8_t {
        idle,           ///< between requests, nothing buffered
        headers,        ///< inside a request line or headers
        body,           ///< headers done, reading the body
        request_ready,  ///< take_request() now
        failed,         ///< failure() says why; the connection must close
    };

    explicit RequestParser(ParserLimits limits);
    ~RequestParser();
    RequestParser(const RequestParser&) = delete;
    RequestParser& operator=(const RequestParser&) = delete;

    /// Consumes a prefix of `bytes` and returns its length. Stops after the end of one request
    /// (state request_ready) or at a failure (state failed). Must not be called in either state.
    /// A request that `bytes` holds whole, with a plain shape (a known method, an origin-form
    /// target of printable ASCII, HTTP/1.0 or 1.1, token header names, printable values,
    /// Content-Length or no body, no Transfer-Encoding / Upgrade / Expect, within the limits)
    /// is read in one pass; anything else goes through http_parser, which has the last word on
    /// what is malformed. Both give the same request for the plain shape (tested, fuzzed).
    std::size_t feed(std::string_view bytes);
    /// Where the parser is.
    [[nodiscard]] State state() const noexcept;
    /// True while reading a body the client announced with `Expect: 100-continue`.
    [[nodiscard]] bool is_expecting_continue() const noexcept;
    /// The finished request; the parser returns to idle. Requires state request_ready.
    [[nodiscard]] ParsedRequest take_request();
    /// Why parsing failed. Requires state failed.
    [[nodiscard]] const ParseFailure& failure() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace queen::http::detail
