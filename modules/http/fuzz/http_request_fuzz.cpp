// modules/http/fuzz/http_request_fuzz.cpp — libFuzzer target: arbitrary bytes through the
// request parser (split at fuzzer-chosen points), target decoding and the router; and the
// parser's fast path against http_parser alone on the same bytes (they must agree).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "queen/http/detail/request_parser.hpp"
#include "queen/http/router.hpp"
#include "queen/http/uri.hpp"

namespace {

const queen::http::Router& fuzz_router() {
    static const queen::http::Router router = [] {
        queen::http::Router r;
        const auto ok = [](queen::http::Request&, queen::http::Responder responder) {
            responder.complete(queen::http::Response::json(200, "{}"));
        };
        r.get("/api/v1/pop/queue/:queue", ok);
        r.get("/api/v1/pop/queue/:queue/partition/:partition", ok);
        r.post("/api/v1/push", ok);
        r.post("/api/v1/ack/batch", ok);
        r.post("/api/v1/lease/:leaseId/extend", ok);
        r.del("/api/v1/consumer-groups/:group/queues/:queue", ok);
        r.get("/assets/*", ok);
        return r;
    }();
    return router;
}

void check(bool condition) {
    if (!condition) {
        __builtin_trap();
    }
}

/// Everything a handler sees of the requests in `bytes`, fed whole (so the fast path can take
/// them), and how the stream failed.
std::string read_all(std::string_view bytes, const queen::http::detail::ParserLimits& limits) {
    using State = queen::http::detail::RequestParser::State;
    queen::http::detail::RequestParser parser(limits);
    std::string out;
    while (!bytes.empty()) {
        const std::size_t used = parser.feed(bytes);
        bytes.remove_prefix(used);
        if (parser.state() == State::request_ready) {
            const queen::http::detail::ParsedRequest parsed = parser.take_request();
            const queen::http::Request& r = parsed.request;
            out += r.method_name + ' ' + r.target + ' ' + r.path + '?' + r.raw_query + ' ' +
                   std::to_string(r.version_minor) + (r.is_keep_alive ? 'k' : 'c') +
                   (parsed.is_upgrade ? 'u' : '-') + parsed.target_error.value_or("") + '\n';
            for (const auto& segment : r.segments) {
                out += segment + '/';
            }
            for (const auto& [key, value] : r.query) {
                out += key + '=' + value + '&';
            }
            for (const auto& header : r.headers) {
                out += header.name + ':' + header.value + '\n';
            }
            out += r.body + '\n';
        }
        if (parser.state() == State::failed) {
            return out + "failed " + std::to_string(parser.failure().status) + ' ' +
                   parser.failure().message;
        }
        if (parser.state() != State::idle) {
            break;  // incomplete: both paths have taken what they can
        }
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) {
        return 0;
    }
    // The first two bytes choose how the stream is cut into reads, like a socket would.
    const std::size_t piece = 1 + (data[0] % 32) * (1 + data[1] % 8);
    std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);

    queen::http::detail::ParserLimits limits;
    limits.header_size_bytes_max = 2048;
    limits.headers_count_max = 16;
    limits.body_size_bytes_max = 4096;
    queen::http::detail::RequestParser parser(limits);
    using State = queen::http::detail::RequestParser::State;

    {
        queen::http::detail::ParserLimits slow = limits;
        slow.is_fast_path_enabled = false;
        check(read_all(bytes, limits) == read_all(bytes, slow));
    }

    while (!bytes.empty()) {
        const std::string_view chunk = bytes.substr(0, piece);
        const std::size_t used = parser.feed(chunk);
        check(used <= chunk.size());
        bytes.remove_prefix(used);
        const State state = parser.state();
        if (state == State::request_ready) {
            queen::http::detail::ParsedRequest parsed = parser.take_request();
            queen::http::Request& request = parsed.request;
            check(request.body.size() <= limits.body_size_bytes_max);
            check(request.headers.size() <= limits.headers_count_max);
            if (!parsed.target_error) {
                std::optional<int> status;
                fuzz_router().handle(request,
                                     queen::http::Responder::detached(
                                         [&](queen::http::Response r) { status = r.status; }));
                check(status.has_value());
                check(*status == 200 || *status == 404 || *status == 405);
                for (const std::string& segment : request.segments) {
                    // Decoded segments re-encode to something that decodes back to them.
                    auto again =
                        queen::http::percent_decode(queen::http::percent_encode(segment), false);
                    check(again.has_value() && again.value() == segment);
                }
            }
            if (parser.state() == State::failed) {
                break;  // an upgrade: the rest is not HTTP
            }
        } else if (state == State::failed) {
            const int status = parser.failure().status;
            check(status >= 400 && status <= 599);
            break;
        } else {
            check(used == chunk.size());
        }
    }
    return 0;
}
