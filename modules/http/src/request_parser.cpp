// modules/http/src/request_parser.cpp — RequestParser over http_parser: limits, one request per
// feed, target decoding.
#include "queen/http/detail/request_parser.hpp"

#include <http_parser.h>
#include <algorithm>

#include "queen/core/assert.hpp"
#include "queen/http/uri.hpp"

namespace queen::http::detail {
namespace {

/// An origin-form target ("/path?query") of printable ASCII without '#': http_parser's URL
/// grammar takes every such target, and its path and query split at the first '?'.
bool is_plain_target(std::string_view target) noexcept {
    if (target.empty() || target.front() != '/') {
        return false;
    }
    for (const char c : target) {
        if (c < 0x21 || c > 0x7e || c == '#') {
            return false;
        }
    }
    return true;
}

/// RFC 9110 tchar (header names, methods).
bool is_token_char(char c) noexcept {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
        return true;
    }
    switch (c) {
        case '!':
        case '#':
        case '$':
        case '%':
        case '&':
        case '\'':
        case '*':
        case '+':
        case '-':
        case '.':
        case '^':
        case '_':
        case '`':
        case '|':
        case '~': return true;
        default: return false;
    }
}

/// A header name http_parser reads with a meaning (or, for names that start like one, with its
/// own quirks: "Transfer-Encodingx" is refused): the fast path leaves such requests to it.
bool has_special_prefix(std::string_view name) noexcept {
    static constexpr std::string_view specials[] = {"connection",       "content-length",
                                                    "proxy-connection", "transfer-encoding",
                                                    "upgrade",          "expect"};
    for (const std::string_view special : specials) {
        if (name.size() >= special.size() && iequals(name.substr(0, special.size()), special)) {
            return true;
        }
    }
    return false;
}

/// A header value the fast path takes: visible ASCII, spaces and tabs inside, none at the end.
bool is_plain_value(std::string_view value) noexcept {
    if (!value.empty() && (value.back() == ' ' || value.back() == '\t')) {
        return false;
    }
    for (const char c : value) {
        if ((c < 0x20 || c > 0x7e) && c != '\t') {
            return false;
        }
    }
    return true;
}

}  // namespace

struct RequestParser::Impl {
    static constexpr std::size_t headers_reserved = 8;
    static constexpr std::uint64_t body_reserved_max = 1u << 20;

    explicit Impl(ParserLimits parser_limits) : limits(parser_limits) {
        http_parser_settings_init(&settings);
        settings.on_message_begin = &Impl::on_message_begin;
        settings.on_url = &Impl::on_url;
        settings.on_header_field = &Impl::on_header_field;
        settings.on_header_value = &Impl::on_header_value;
        settings.on_headers_complete = &Impl::on_headers_complete;
        settings.on_body = &Impl::on_body;
        settings.on_message_complete = &Impl::on_message_complete;
        http_parser_init(&parser, HTTP_REQUEST);
        parser.data = this;
    }

    static Impl& self(http_parser* p) { return *static_cast<Impl*>(p->data); }

    int fail(int status, std::string message) {
        failure.status = status;
        failure.message = std::move(message);
        has_failure = true;
        return -1;
    }

    int count_header_bytes(std::size_t length) {
        header_bytes += length;
        if (header_bytes > limits.header_size_bytes_max) {
            return fail(431, "Request headers larger than " +
                                 std::to_string(limits.header_size_bytes_max) + " bytes");
        }
        return 0;
    }

    void flush_header() {
        if (has_pending_header) {
            current.request.headers.push_back(Header{std::move(field), std::move(value)});
            field.clear();
            value.clear();
            has_pending_header = false;
            is_last_value = false;
        }
    }

    static int on_message_begin(http_parser* p) {
        Impl& impl = self(p);
        impl.current = ParsedRequest{};
        // Clients send a handful of headers: one allocation instead of the growth steps.
        impl.current.request.headers.reserve(headers_reserved);
        impl.url.clear();
        impl.field.clear();
        impl.value.clear();
        impl.has_pending_header = false;
        impl.is_last_value = false;
        impl.header_bytes = 0;
        impl.is_expecting_continue = false;
        impl.state = State::headers;
        return 0;
    }

    static int on_url(http_parser* p, const char* at, std::size_t length) {
        Impl& impl = self(p);
        impl.url.append(at, length);
        return impl.count_header_bytes(length);
    }

    static int on_header_field(http_parser* p, const char* at, std::size_t length) {
        Impl& impl = self(p);
        if (impl.is_last_value) {
            impl.flush_header();
        }
        if (!impl.has_pending_header) {
            if (impl.current.request.headers.size() >= impl.limits.headers_count_max) {
                return impl.fail(431, "More than " + std::to_string(impl.limits.headers_count_max) +
                                          " request headers");
            }
            impl.has_pending_header = true;
            impl.header_bytes += 4;  // ": " and CRLF
        }
        impl.field.append(at, length);
        return impl.count_header_bytes(length);
    }

    static int on_header_value(http_parser* p, const char* at, std::size_t length) {
        Impl& impl = self(p);
        impl.value.append(at, length);
        impl.is_last_value = true;
        return impl.count_header_bytes(length);
    }

    static int on_headers_complete(http_parser* p) {
        Impl& impl = self(p);
        impl.flush_header();
        Request& request = impl.current.request;
        if (p->http_major != 1) {
            return impl.fail(505, "HTTP version " + std::to_string(p->http_major) + "." +
                                      std::to_string(p->http_minor) + " is not supported");
        }
        request.version_major = static_cast<std::uint16_t>(p->http_major);
        request.version_minor = static_cast<std::uint16_t>(p->http_minor);
        request.method_name = http_method_str(static_cast<http_method>(p->method));
        request.method = parse_method(request.method_name);
        if ((p->flags & F_CONTENTLENGTH) != 0 &&
            p->content_length > impl.limits.body_size_bytes_max) {
            return impl.fail(413, "Request body of " + std::to_string(p->content_length) +
                                      " bytes is larger than the limit of " +
                                      std::to_string(impl.limits.body_size_bytes_max) + " bytes");
        }
        if ((p->flags & F_CONTENTLENGTH) != 0) {
            // The body arrives in one string without regrowth copies. Capped: a declared length
            // reserves memory before any byte of it has arrived.
            request.body.reserve(static_cast<std::size_t>(
                std::min<std::uint64_t>(p->content_length, body_reserved_max)));
        }
        const auto expect = request.header("Expect");
        if (expect && iequals(*expect, "100-continue") && p->http_minor >= 1) {
            impl.is_expecting_continue = true;
        }
        impl.state = State::body;
        return 0;
    }

    static int on_body(http_parser* p, const char* at, std::size_t length) {
        Impl& impl = self(p);
        std::string& body = impl.current.request.body;
        if (body.size() + length > impl.limits.body_size_bytes_max) {
            return impl.fail(413, "Request body larger than the limit of " +
                                      std::to_string(impl.limits.body_size_bytes_max) + " bytes");
        }
        body.append(at, length);
        return 0;
    }

    static int on_message_complete(http_parser* p) {
        Impl& impl = self(p);
        impl.flush_header();  // a chunked trailer may end with a header
        impl.current.request.is_keep_alive = http_should_keep_alive(p) != 0;
        impl.is_last_keep_alive = impl.current.request.is_keep_alive;
        impl.current.is_upgrade = p->upgrade != 0;
        impl.is_expecting_continue = false;
        impl.state = State::request_ready;
        // One request per feed(): the caller decides when to parse the next (pipelining limit).
        http_parser_pause(p, 1);
        return 0;
    }

    /// The request at the start of `in` when it is whole and of the plain shape (see feed() in
    /// the header): fills `current`, returns its length. 0: http_parser parses it instead.
    std::size_t fast_request(std::string_view in) {
        if (!is_last_keep_alive) {
            return 0;  // after a closing request: http_parser's reading of what follows
        }
        const std::size_t head_end = in.find("\r\n\r\n");
        if (head_end == std::string_view::npos || head_end + 4 > limits.header_size_bytes_max) {
            return 0;
        }
        const std::string_view head = in.substr(0, head_end + 2);  // every line with its CRLF
        std::size_t line_end = head.find("\r\n");
        const std::string_view line = head.substr(0, line_end);
        const std::size_t space = line.find(' ');
        if (space == std::string_view::npos) {
            return 0;
        }
        const std::string_view method_text = line.substr(0, space);
        const Method method = parse_method(method_text);
        const std::size_t second_space = line.find(' ', space + 1);
        if (method == Method::other || second_space == std::string_view::npos) {
            return 0;
        }
        const std::string_view target = line.substr(space + 1, second_space - space - 1);
        const std::string_view version = line.substr(second_space + 1);
        std::uint16_t minor = 0;
        if (version == "HTTP/1.1") {
            minor = 1;
        } else if (version != "HTTP/1.0") {
            return 0;
        }
        if (!is_plain_target(target)) {
            return 0;
        }
        std::uint64_t counted = target.size();  // as the http_parser callbacks count
        std::optional<std::uint64_t> content_length;
        bool is_close = false;
        bool is_keep_alive_asked = false;
        bool has_connection = false;
        std::vector<Header> headers;
        headers.reserve(headers_reserved);
        std::size_t at = line_end + 2;
        while (at < head.size()) {
            line_end = head.find("\r\n", at);
            const std::string_view header = head.substr(at, line_end - at);
            at = line_end + 2;
            const std::size_t colon = header.find(':');
            if (colon == 0 || colon == std::string_view::npos ||
                headers.size() >= limits.headers_count_max) {
                return 0;
            }
            const std::string_view name = header.substr(0, colon);
            std::string_view text = header.substr(colon + 1);
            while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
                text.remove_prefix(1);
            }
            if (!std::all_of(name.begin(), name.end(), is_token_char) || !is_plain_value(text)) {
                return 0;
            }
            counted += name.size() + text.size() + 4;
            const bool is_content_length = iequals(name, "Content-Length");
            const bool is_connection = iequals(name, "Connection");
            if (!is_content_length && !is_connection && has_special_prefix(name)) {
                return 0;
            }
            if (is_content_length) {
                if (content_length || text.empty() || text.size() > 18 ||
                    !std::all_of(text.begin(), text.end(),
                                 [](char c) { return c >= '0' && c <= '9'; })) {
                    return 0;
                }
                std::uint64_t length = 0;
                for (const char c : text) {
                    length = length * 10 + static_cast<std::uint64_t>(c - '0');
                }
                content_length = length;
            } else if (is_connection) {
                if (has_connection) {
                    return 0;
                }
                has_connection = true;
                if (iequals(text, "close")) {
                    is_close = true;
                } else if (iequals(text, "keep-alive")) {
                    is_keep_alive_asked = true;
                } else {
                    return 0;  // token lists, upgrade: http_parser's reading
                }
            }
            headers.push_back(Header{std::string(name), std::string(text)});
        }
        const std::uint64_t body_size = content_length.value_or(0);
        // A closing request is left to http_parser: the end of a stream is its call.
        const bool is_keep_alive = minor == 1 ? !is_close : is_keep_alive_asked;
        if (!is_keep_alive || counted > limits.header_size_bytes_max ||
            body_size > limits.body_size_bytes_max || body_size > in.size() - (head_end + 4)) {
            return 0;
        }
        current = ParsedRequest{};
        Request& request = current.request;
        request.method = method;
        request.method_name.assign(method_text);
        request.version_major = 1;
        request.version_minor = minor;
        request.headers = std::move(headers);
        request.body.assign(in.substr(head_end + 4, static_cast<std::size_t>(body_size)));
        request.is_keep_alive = true;
        url.assign(target);
        state = State::request_ready;
        return head_end + 4 + static_cast<std::size_t>(body_size);
    }

    void decode_target() {
        Request& request = current.request;
        request.target = std::move(url);
        url.clear();
        if (request.method_name == "CONNECT") {
            current.target_error = "CONNECT is not supported";
            current.is_upgrade = true;
            return;
        }
        if (request.target == "*") {
            request.path = "*";
            return;
        }
        if (limits.is_fast_path_enabled && is_plain_target(request.target)) {
            const std::string_view target = request.target;
            const std::size_t question = target.find('?');
            request.path.assign(target.substr(0, question));
            if (question != std::string_view::npos) {
                request.raw_query.assign(target.substr(question + 1));
            }
            decode_path_and_query();
            return;
        }
        http_parser_url parts;
        http_parser_url_init(&parts);
        if (http_parser_parse_url(request.target.data(), request.target.size(), 0, &parts) != 0) {
            current.target_error = "Malformed request target";
            return;
        }
        const auto field_of = [&](int which) -> std::string_view {
            if ((parts.field_set & (1u << which)) == 0) {
                return {};
            }
            return std::string_view(request.target)
                .substr(parts.field_data[which].off, parts.field_data[which].len);
        };
        request.path = std::string(field_of(UF_PATH));
        if (request.path.empty()) {
            request.path = "/";
        }
        request.raw_query = std::string(field_of(UF_QUERY));
        decode_path_and_query();
    }

    /// Fills segments and query from path and raw_query.
    void decode_path_and_query() {
        Request& request = current.request;
        auto segments = decode_path(request.path);
        if (!segments) {
            current.target_error = "Bad percent-encoding in the path: " + segments.error().context;
            return;
        }
        request.segments = std::move(segments).value();
        auto query = decode_query(request.raw_query);
        if (!query) {
            current.target_error = "Bad percent-encoding in the query: " + query.error().context;
            return;
        }
        request.query = std::move(query).value();
    }

    ParserLimits limits;
    http_parser parser{};
    http_parser_settings settings{};
    State state = State::idle;
    ParseFailure failure;
    bool has_failure = false;
    ParsedRequest current;
    std::string url;
    std::string field;
    std::string value;
    bool has_pending_header = false;
    bool is_last_value = false;
    bool is_expecting_continue = false;
    bool is_last_keep_alive = true;  ///< the previous request left the connection open
    std::uint64_t header_bytes = 0;
};

RequestParser::RequestParser(ParserLimits limits) : impl_(std::make_unique<Impl>(limits)) {}
RequestParser::~RequestParser() = default;

std::size_t RequestParser::feed(std::string_view bytes) {
    Impl& impl = *impl_;
    QUEEN_ASSERT(impl.state != State::request_ready, "feed() before take_request()");
    QUEEN_ASSERT(impl.state != State::failed, "feed() after a failure");
    if (bytes.empty()) {
        return 0;
    }
    if (impl.state == State::idle && impl.limits.is_fast_path_enabled) {
        if (const std::size_t used = impl.fast_request(bytes); used > 0) {
            return used;
        }
    }
    const std::size_t consumed =
        http_parser_execute(&impl.parser, &impl.settings, bytes.data(), bytes.size());
    QUEEN_ASSERT(consumed <= bytes.size(), "http_parser consumed more than it was given");
    const auto error = static_cast<http_errno>(impl.parser.http_errno);
    if (error == HPE_PAUSED) {
        QUEEN_ASSERT(impl.state == State::request_ready, "paused outside on_message_complete");
        http_parser_pause(&impl.parser, 0);
        return consumed;
    }
    if (error != HPE_OK) {
        if (!impl.has_failure) {
            if (error == HPE_HEADER_OVERFLOW) {
                impl.fail(431, "Request headers too large");
            } else {
                impl.fail(400, std::string("Malformed request: ") + http_errno_description(error));
            }
        }
        impl.state = State::failed;
        return consumed;
    }
    if (impl.state == State::request_ready) {
        return consumed;  // an Upgrade request: http_parser stops after its headers
    }
    if (consumed != bytes.size()) {
        // http_parser stops early only on errors or pauses; treat anything else as malformed
        // rather than trusting the remaining bytes.
        impl.fail(400, "Malformed request");
        impl.state = State::failed;
    }
    return consumed;
}

RequestParser::State RequestParser::state() const noexcept {
    return impl_->state;
}

bool RequestParser::is_expecting_continue() const noexcept {
    return impl_->state == State::body && impl_->is_expecting_continue;
}

ParsedRequest RequestParser::take_request() {
    Impl& impl = *impl_;
    QUEEN_ASSERT(impl.state == State::request_ready, "take_request() without a request");
    impl.decode_target();
    ParsedRequest out = std::move(impl.current);
    impl.current = ParsedRequest{};
    impl.state = State::idle;
    if (out.is_upgrade) {
        // The bytes after an upgrade request are another protocol: nothing more to parse.
        impl.fail(400, "Protocol upgrades are not supported");
        impl.state = State::failed;
    }
    return out;
}

const ParseFailure& RequestParser::failure() const noexcept {
    QUEEN_ASSERT(impl_->state == State::failed, "failure() without a failure");
    return impl_->failure;
}

}  // namespace queen::http::detail
