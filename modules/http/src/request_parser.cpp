// modules/http/src/request_parser.cpp — RequestParser over http_parser: limits, one request per
// feed, target decoding.
#include "queen/http/detail/request_parser.hpp"

#include <http_parser.h>
#include <algorithm>

#include "queen/core/assert.hpp"
#include "queen/http/uri.hpp"

namespace queen::http::detail {

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
        impl.current.is_upgrade = p->upgrade != 0;
        impl.is_expecting_continue = false;
        impl.state = State::request_ready;
        // One request per feed(): the caller decides when to parse the next (pipelining limit).
        http_parser_pause(p, 1);
        return 0;
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
