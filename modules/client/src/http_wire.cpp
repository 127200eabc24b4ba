// client/src/http_wire.cpp — request heads and the incremental response parser (libhttp-parser).
#include "http_wire.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>

namespace queen::client::detail {
namespace {

ResponseParser& state_of(http_parser* parser) {
    return *static_cast<ResponseParser*>(parser->data);
}

int on_header_field(http_parser* parser, const char* at, std::size_t length) {
    auto& state = state_of(parser);
    auto& headers = state.response->headers;
    if (state.header_count == 0 || state.is_last_header_value) {
        if (state.header_count == headers.size()) {
            headers.emplace_back();
        }
        Header& header = headers[state.header_count++];
        header.name.clear();
        header.value.clear();
        state.is_last_header_value = false;
    }
    headers[state.header_count - 1].name.append(at, length);
    return 0;
}

int on_header_value(http_parser* parser, const char* at, std::size_t length) {
    auto& state = state_of(parser);
    if (state.header_count == 0) {
        return 1;
    }
    state.is_last_header_value = true;
    state.response->headers[state.header_count - 1].value.append(at, length);
    return 0;
}

int on_headers_complete(http_parser* parser) {
    auto& state = state_of(parser);
    state.response->headers.resize(state.header_count);
    // With a Content-Length, size the body once instead of growing it read by read.
    const std::uint64_t length = parser->content_length;
    if (length != ULLONG_MAX && length <= state.body_size_bytes_max) {
        state.response->body.reserve(static_cast<std::size_t>(length));
    }
    return 0;
}

int on_body(http_parser* parser, const char* at, std::size_t length) {
    auto& state = state_of(parser);
    if (state.response->body.size() + length > state.body_size_bytes_max) {
        state.is_too_large = true;
        return 1;
    }
    state.response->body.append(at, length);
    return 0;
}

int on_message_complete(http_parser* parser) {
    auto& state = state_of(parser);
    state.is_complete = true;
    state.response->status = static_cast<int>(parser->status_code);
    // Stop here: bytes after the response (there should be none) must not start another one.
    http_parser_pause(parser, 1);
    return 0;
}

const http_parser_settings& parser_settings() {
    static const http_parser_settings settings = [] {
        http_parser_settings s{};
        http_parser_settings_init(&s);
        s.on_header_field = on_header_field;
        s.on_header_value = on_header_value;
        s.on_headers_complete = on_headers_complete;
        s.on_body = on_body;
        s.on_message_complete = on_message_complete;
        return s;
    }();
    return settings;
}

}  // namespace

queen::Result<std::vector<SocketAddress>> resolve(const Endpoint& endpoint) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(endpoint.port);
    if (const int rc = ::getaddrinfo(endpoint.host.c_str(), port.c_str(), &hints, &found);
        rc != 0) {
        return queen::Error{Errc::connect_failed,
                            "resolve " + describe(endpoint) + ": " + ::gai_strerror(rc)};
    }
    std::vector<SocketAddress> addresses;
    for (const addrinfo* address = found; address != nullptr; address = address->ai_next) {
        if (address->ai_addrlen <= sizeof(sockaddr_storage)) {
            SocketAddress& entry = addresses.emplace_back();
            std::memcpy(&entry.storage, address->ai_addr, address->ai_addrlen);
            entry.length = address->ai_addrlen;
        }
    }
    ::freeaddrinfo(found);
    if (addresses.empty()) {
        return queen::Error{Errc::connect_failed, "resolve " + describe(endpoint) + ": no address"};
    }
    return addresses;
}

int start_connect(const SocketAddress& address, int& fd, bool& is_in_progress) {
    is_in_progress = false;
    fd = ::socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return errno;
    }
    // sockaddr_storage is the documented way to hold any address family for connect().
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address.storage), address.length) == 0) {
        return 0;
    }
    if (errno == EINPROGRESS) {
        is_in_progress = true;
        return 0;
    }
    const int error = errno;
    ::close(fd);
    fd = -1;
    return error;
}

int connect_error(int fd) noexcept {
    int socket_error = 0;
    socklen_t length = sizeof socket_error;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &socket_error, &length) != 0) {
        return errno;
    }
    return socket_error;
}

void set_no_delay(int fd) noexcept {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::string describe(const Endpoint& endpoint) {
    if (endpoint.is_tls) {
        const bool is_ipv6 = endpoint.host.find(':') != std::string::npos;
        return "https://" + (is_ipv6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" +
               std::to_string(endpoint.port);
    }
    return endpoint.host + ":" + std::to_string(endpoint.port);
}

bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               const auto lower = [](char c) {
                   return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
               };
               return lower(x) == lower(y);
           });
}

std::string make_head_prefix(const Endpoint& endpoint, const std::vector<Header>& headers) {
    const bool is_ipv6 = endpoint.host.find(':') != std::string::npos;
    std::string prefix = "Host: " + (is_ipv6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" +
                         std::to_string(endpoint.port) + "\r\n";
    bool has_content_type = false;
    for (const auto& h : headers) {
        has_content_type = has_content_type || equals_ignoring_case(h.name, "Content-Type");
        prefix += h.name + ": " + h.value + "\r\n";
    }
    if (!has_content_type) {
        // The official clients send it on every request, GET included.
        prefix += "Content-Type: application/json\r\n";
    }
    return prefix;
}

void append_request_head(std::string& out, const HttpRequest& request,
                         std::string_view head_prefix) {
    out.append(request.method).append(" ").append(request.target).append(" HTTP/1.1\r\n");
    out.append(head_prefix);
    if (request.has_body) {
        char digits[24];
        const auto end = std::to_chars(digits, digits + sizeof digits, request.body.size()).ptr;
        out.append("Content-Length: ").append(digits, end).append("\r\n");
    }
    out.append("\r\n");
}

Outgoing append_requests(std::string& out, std::span<const HttpRequest> requests,
                         std::string_view head_prefix, std::int64_t default_timeout_ms) {
    const bool is_group = requests.size() > 1;
    Outgoing facts{std::string(requests.front().method), 0, true};
    facts.what.append(" ").append(requests.front().target);
    if (is_group) {
        facts.what.append(" (+").append(std::to_string(requests.size() - 1)).append(" pipelined)");
    }
    for (const HttpRequest& request : requests) {
        append_request_head(out, request, head_prefix);
        if (is_group && request.has_body) {
            out.append(request.body);
        }
        facts.timeout_ms = std::max(
            facts.timeout_ms, request.timeout_ms > 0 ? request.timeout_ms : default_timeout_ms);
        facts.is_idempotent = facts.is_idempotent && request.is_idempotent;
    }
    return facts;
}

void ResponseParser::start(HttpResponse& target, std::size_t size_bytes_max) {
    response = &target;
    response->status = 0;
    response->body.clear();
    header_count = 0;
    body_size_bytes_max = size_bytes_max;
    is_complete = false;
    is_too_large = false;
    is_last_header_value = false;
    consumed_ = 0;
    http_parser_init(&parser_, HTTP_RESPONSE);
    parser_.data = this;
}

ResponseParser::Step ResponseParser::feed(const char* data, std::size_t length) {
    const auto& settings = parser_settings();
    if (length == 0) {
        // EOF completes a body that is delimited by the connection closing.
        http_parser_execute(&parser_, &settings, nullptr, 0);
        return is_complete ? Step::complete : Step::closed_early;
    }
    const std::size_t parsed = http_parser_execute(&parser_, &settings, data, length);
    consumed_ = parsed;
    const auto parse_error = HTTP_PARSER_ERRNO(&parser_);
    if (is_too_large) {
        return Step::too_large;
    }
    if (parse_error == HPE_PAUSED) {
        return parsed == length ? Step::complete : Step::trailing_bytes;
    }
    if (parse_error != HPE_OK || parsed != length) {
        return Step::malformed;
    }
    return is_complete ? Step::complete : Step::more;
}

bool ResponseParser::is_keep_alive() const noexcept {
    return http_should_keep_alive(&parser_) != 0;
}

const char* ResponseParser::description() const noexcept {
    return http_errno_description(HTTP_PARSER_ERRNO(&parser_));
}

ResponseParser::Step feed_answers(ResponseParser& parser, std::span<HttpResponse> responses,
                                  std::size_t& answered, std::size_t body_size_bytes_max,
                                  const char* data, std::size_t length) {
    using Step = ResponseParser::Step;
    for (;;) {
        const Step step = parser.feed(data, length);
        const bool is_last = answered + 1 == responses.size();
        if (step != Step::complete && (step != Step::trailing_bytes || is_last)) {
            return step;  // more, or a failure
        }
        ++answered;
        if (is_last) {
            return Step::complete;
        }
        if (!parser.is_keep_alive()) {
            return Step::closed_between;
        }
        const std::size_t used = parser.consumed();
        parser.start(responses[answered], body_size_bytes_max);
        if (step == Step::complete) {
            return Step::more;  // the answer ended this piece: the next comes in a later one
        }
        data += used;
        length -= used;
    }
}

Errc error_of(ResponseParser::Step step) noexcept {
    return step == ResponseParser::Step::closed_early ||
                   step == ResponseParser::Step::closed_between
               ? Errc::connection_closed
               : Errc::bad_response;
}

std::string describe(ResponseParser::Step step, const ResponseParser& parser,
                     bool is_nothing_received, std::size_t body_size_bytes_max) {
    switch (step) {
        case ResponseParser::Step::too_large:
            return "response body larger than " + std::to_string(body_size_bytes_max) + " bytes";
        case ResponseParser::Step::trailing_bytes: return "unexpected bytes after the response";
        case ResponseParser::Step::malformed:
            return std::string{"malformed HTTP: "} + parser.description();
        case ResponseParser::Step::closed_early:
            return is_nothing_received ? "closed by the server before answering"
                                       : "closed by the server mid-response";
        case ResponseParser::Step::closed_between:
            return "closed by the server before the last pipelined answer";
        case ResponseParser::Step::more:
        case ResponseParser::Step::complete: break;
    }
    return "no error";
}

}  // namespace queen::client::detail
