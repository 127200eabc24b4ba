// client/src/http_wire.hpp — the HTTP/1.1 bytes both connection kinds share: the request head and
// an incremental response parser over libhttp-parser. Private to the client.
#pragma once

#include <http_parser.h>
#include <sys/socket.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "queen/client/connection.hpp"
#include "queen/client/errc.hpp"
#include "queen/core/result.hpp"

namespace queen::client::detail {

/// One resolved address of an endpoint.
struct SocketAddress {
    sockaddr_storage storage{};
    socklen_t length = 0;
};

/// The addresses of `endpoint` (getaddrinfo), in the resolver's order.
/// Errors: Errc::connect_failed (resolution failed or found nothing).
[[nodiscard]] queen::Result<std::vector<SocketAddress>> resolve(const Endpoint& endpoint);
/// Opens a non-blocking, close-on-exec TCP socket into `fd` and starts connecting it to
/// `address`. Returns 0 (`is_in_progress` when the connect finishes later: wait until writable,
/// then read connect_error()) or the errno of the failure (no socket is left open).
[[nodiscard]] int start_connect(const SocketAddress& address, int& fd, bool& is_in_progress);
/// The outcome of a connect that became writable: 0 when connected, else its errno.
[[nodiscard]] int connect_error(int fd) noexcept;
/// Disables Nagle: requests go out whole and at once.
void set_no_delay(int fd) noexcept;
/// "host:port" ("https://host:port" with TLS, "https://[::1]:port"), for error contexts.
[[nodiscard]] std::string describe(const Endpoint& endpoint);

/// ASCII case-insensitive equality (header names).
[[nodiscard]] bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept;

/// "Host: host:port\r\n", the option headers, and Content-Type: application/json unless one of
/// them names a Content-Type: the part of every request head that never changes.
[[nodiscard]] std::string make_head_prefix(const Endpoint& endpoint,
                                           const std::vector<Header>& headers);

/// Appends "<method> <target> HTTP/1.1\r\n", `head_prefix`, Content-Length when the request has
/// a body, and the blank line.
void append_request_head(std::string& out, const HttpRequest& request,
                         std::string_view head_prefix);

/// What both connection kinds need to send a request or a pipelined group (at least one).
struct Outgoing {
    std::string what;         ///< "<method> <target>" of the first, "+ (N pipelined)" for a group
    std::int64_t timeout_ms;  ///< the longest of the requests' timeouts (0 takes the default)
    bool is_idempotent;       ///< every request is
};
/// Appends the heads of `requests` to `out`, and for a group also their bodies (a group leaves
/// as one buffer; a single request's body is sent from where it is), and returns their facts.
Outgoing append_requests(std::string& out, std::span<const HttpRequest> requests,
                         std::string_view head_prefix, std::int64_t default_timeout_ms);

/// Parses one response, fed in pieces as they arrive. Reuses the storage of the target's body and
/// headers. Not copyable: the http_parser points back at it.
class ResponseParser {
public:
    enum class Step {
        more,            ///< needs more bytes
        complete,        ///< the response is whole (status, headers, body filled in)
        too_large,       ///< the body passed body_size_bytes_max
        malformed,       ///< not HTTP (description() says why)
        trailing_bytes,  ///< bytes followed the complete response
        closed_early,    ///< end of stream before the response was whole
        closed_between,  ///< (feed_answers) an answer closed the connection before the last
    };

    ResponseParser() = default;
    ResponseParser(const ResponseParser&) = delete;
    ResponseParser& operator=(const ResponseParser&) = delete;

    /// Starts a response into `target` (status 0, body empty); `target` must outlive the parse.
    void start(HttpResponse& target, std::size_t body_size_bytes_max);
    /// Feeds received bytes; `length` 0 means the peer closed the stream (which completes a body
    /// delimited by the close).
    Step feed(const char* data, std::size_t length);
    /// After `complete`: whether the connection may carry another request.
    [[nodiscard]] bool is_keep_alive() const noexcept;
    /// After `malformed`: libhttp-parser's description.
    [[nodiscard]] const char* description() const noexcept;
    /// Bytes of the last feed() that belong to this response: after `trailing_bytes`, the rest
    /// of that feed starts the next response (pipelined requests).
    [[nodiscard]] std::size_t consumed() const noexcept { return consumed_; }

    // Callback state (public for the C callbacks; not part of the interface).
    HttpResponse* response = nullptr;
    std::size_t header_count = 0;  // entries of response->headers filled so far
    std::size_t body_size_bytes_max = 0;
    bool is_complete = false;
    bool is_too_large = false;
    bool is_last_header_value = false;

private:
    http_parser parser_{};
    std::size_t consumed_ = 0;
};

/// Feeds `data` (`length` 0: end of stream) to the answers of a pipelined group: `parser` parses
/// `responses[answered]`; each whole answer raises `answered` and the bytes after it start the
/// next. Returns Step::complete once every answer is whole, Step::more when more bytes are
/// needed, or the failing step (Step::closed_between when an answer other than the last says
/// the connection closes; Step::trailing_bytes after the last).
[[nodiscard]] ResponseParser::Step feed_answers(ResponseParser& parser,
                                                std::span<HttpResponse> responses,
                                                std::size_t& answered,
                                                std::size_t body_size_bytes_max, const char* data,
                                                std::size_t length);

/// The error code of a failed parse step (bad_response, or connection_closed for closed_early
/// and closed_between).
[[nodiscard]] Errc error_of(ResponseParser::Step step) noexcept;
/// Why a parse step failed, for the error's context. `is_nothing_received`: no byte of the answer
/// had arrived before the stream closed.
[[nodiscard]] std::string describe(ResponseParser::Step step, const ResponseParser& parser,
                                   bool is_nothing_received, std::size_t body_size_bytes_max);

}  // namespace queen::client::detail
