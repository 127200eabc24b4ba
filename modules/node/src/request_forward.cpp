// modules/node/src/request_forward.cpp — HTTP requests served by another node over the peer link.
#include "request_forward.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include "queen/core/assert.hpp"
#include "queen/core/thread_name.hpp"
#include "queen/http/uri.hpp"
#include "queen/net/transport.hpp"

namespace queen::node::detail {
namespace {

constexpr std::int64_t ns_per_ms = 1'000'000;
constexpr std::size_t id_bytes = 8;

std::size_t varint_size(std::uint64_t value) noexcept {
    std::size_t size = 1;
    while (value >= 0x80) {
        value >>= 7;
        ++size;
    }
    return size;
}

std::size_t str_size(std::string_view text) noexcept {
    return varint_size(text.size()) + text.size();
}

std::size_t headers_size(const std::vector<http::Header>& headers) noexcept {
    std::size_t size = 0;
    for (const http::Header& header : headers) {
        size += str_size(header.name) + str_size(header.value);
    }
    return size;
}

/// Exact size of encode_http_request()'s output.
std::size_t request_frame_size(std::string_view method_name, std::string_view target,
                               const std::vector<http::Header>& headers,
                               std::string_view body) noexcept {
    return id_bytes + 4 + str_size(method_name) + str_size(target) + varint_size(headers.size()) +
           headers_size(headers) + str_size(body);
}

/// Exact size of encode_http_response()'s output.
std::size_t response_frame_size(const http::Response& response) noexcept {
    std::size_t count = response.headers.size();
    std::size_t size = id_bytes + 2 + headers_size(response.headers) + str_size(response.body);
    if (!response.content_type.empty()) {
        ++count;
        size += str_size("Content-Type") + str_size(response.content_type);
    }
    return size + varint_size(count);
}

/// RFC 9110 tchar (header names).
bool is_token_char(char c) noexcept {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
        return true;
    }
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_header_name(std::string_view name) noexcept {
    return !name.empty() && std::all_of(name.begin(), name.end(), is_token_char);
}

bool is_header_value(std::string_view value) noexcept {
    return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

void write_header(ByteWriter& writer, std::string_view name, std::string_view value) {
    writer.str(name);
    writer.str(value);
}

/// varint count, then (name, value) pairs; false when short.
bool read_headers(ByteReader& reader, std::vector<http::Header>& headers) {
    const std::uint64_t count = reader.varint();
    if (!reader.ok() || count > reader.remaining() / 2) {  // each header takes 2 bytes or more
        reader.fail();
        return false;
    }
    headers.reserve(static_cast<std::size_t>(count));
    for (std::uint64_t i = 0; i < count && reader.ok(); ++i) {
        http::Header header;
        header.name = std::string(reader.str());
        header.value = std::string(reader.str());
        headers.push_back(std::move(header));
    }
    return reader.ok();
}

/// `status` with {"error": message}; 503s say when to retry.
http::Response error_response(int status, std::string_view message) {
    http::Response response = http::Response::error(status, message);
    if (status == 503) {
        response.headers.push_back(http::Header{"Retry-After", "1"});
    }
    return response;
}

std::string size_text(std::size_t bytes) {
    std::ostringstream text;
    text << bytes << " bytes";
    if (bytes >= (1u << 20)) {
        text << " (" << (bytes >> 20) << " MiB)";
    }
    return text.str();
}

}  // namespace

void encode_http_request(std::uint64_t id, std::uint32_t timeout_ms, std::string_view method_name,
                         std::string_view target, const std::vector<http::Header>& headers,
                         std::string_view body, Bytes& out) {
    out.reserve(out.size() + request_frame_size(method_name, target, headers, body));
    ByteWriter writer(out);
    writer.fixed<std::uint64_t>(id);
    writer.fixed<std::uint32_t>(timeout_ms);
    writer.str(method_name);
    writer.str(target);
    writer.varint(headers.size());
    for (const http::Header& header : headers) {
        write_header(writer, header.name, header.value);
    }
    writer.str(body);
}

Result<HttpRequestFrame> decode_http_request(ByteSpan payload) {
    ByteReader reader(payload);
    HttpRequestFrame frame;
    frame.id = reader.fixed<std::uint64_t>();
    frame.timeout_ms = reader.fixed<std::uint32_t>();
    frame.method_name = std::string(reader.str());
    frame.target = std::string(reader.str());
    if (read_headers(reader, frame.headers)) {
        frame.body = std::string(reader.str());
    }
    if (!reader.ok() || !reader.at_end()) {
        return Error{Errc::corruption, "http_request frame: malformed (" +
                                           std::to_string(payload.size()) + " bytes)"};
    }
    return frame;
}

void encode_http_response(std::uint64_t id, const http::Response& response, Bytes& out) {
    out.reserve(out.size() + response_frame_size(response));
    ByteWriter writer(out);
    writer.fixed<std::uint64_t>(id);
    writer.fixed<std::uint16_t>(static_cast<std::uint16_t>(response.status));
    const bool has_type = !response.content_type.empty();
    writer.varint(response.headers.size() + (has_type ? 1 : 0));
    if (has_type) {
        write_header(writer, "Content-Type", response.content_type);
    }
    for (const http::Header& header : response.headers) {
        write_header(writer, header.name, header.value);
    }
    writer.str(response.body);
}

Result<std::pair<std::uint64_t, http::Response>> decode_http_response(ByteSpan payload) {
    ByteReader reader(payload);
    const std::uint64_t id = reader.fixed<std::uint64_t>();
    http::Response response;
    response.status = reader.fixed<std::uint16_t>();
    response.content_type.clear();
    std::vector<http::Header> headers;
    if (read_headers(reader, headers)) {
        response.body = std::string(reader.str());
    }
    if (!reader.ok() || !reader.at_end()) {
        return Error{Errc::corruption, "http_response frame: malformed (" +
                                           std::to_string(payload.size()) + " bytes)"};
    }
    if (response.status < 100 || response.status > 599) {
        return Error{Errc::corruption,
                     "http_response frame: status " + std::to_string(response.status)};
    }
    bool has_type = false;
    for (http::Header& header : headers) {
        if (!is_header_name(header.name) || !is_header_value(header.value)) {
            return Error{Errc::corruption, "http_response frame: a header that is not valid HTTP"};
        }
        if (!has_type && http::iequals(header.name, "Content-Type")) {
            has_type = true;
            response.content_type = std::move(header.value);
            continue;
        }
        response.headers.push_back(std::move(header));
    }
    return std::pair<std::uint64_t, http::Response>(id, std::move(response));
}

Result<http::Request> rebuild_request(std::string_view method_name, std::string_view target) {
    http::Request request;
    request.method_name = std::string(method_name);
    request.method = http::parse_method(method_name);
    request.target = std::string(target);
    if (method_name.empty() ||
        !std::all_of(method_name.begin(), method_name.end(), is_token_char)) {
        return Error{Errc::invalid_argument, "Malformed request method"};
    }
    if (method_name == "CONNECT") {
        return Error{Errc::invalid_argument, "CONNECT is not supported"};
    }
    if (target == "*") {
        request.path = "*";
        return request;
    }
    const bool is_printable = std::all_of(target.begin(), target.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte > 0x20 && byte != 0x7f;
    });
    if (target.empty() || !is_printable) {
        return Error{Errc::invalid_argument, "Malformed request target"};
    }
    // What the HTTP server takes: origin form ("/path?query"), or absolute form
    // ("http://host/path?query", the path of which counts). A fragment is not part of either.
    std::string_view rest = target.substr(0, target.find('#'));
    if (rest.front() != '/') {
        const std::size_t scheme_end = rest.find("://");
        const bool is_scheme =
            scheme_end != std::string_view::npos && scheme_end > 0 &&
            std::all_of(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(scheme_end),
                        [](char c) {
                            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                   (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
                        });
        if (!is_scheme || scheme_end + 3 >= rest.size()) {
            return Error{Errc::invalid_argument, "Malformed request target"};
        }
        rest.remove_prefix(scheme_end + 3);
        const std::size_t authority_end = rest.find_first_of("/?");
        if (authority_end == 0) {
            return Error{Errc::invalid_argument, "Malformed request target"};
        }
        rest.remove_prefix(authority_end == std::string_view::npos ? rest.size() : authority_end);
    }
    const std::size_t question = rest.find('?');
    request.path = std::string(rest.substr(0, question));
    if (request.path.empty()) {
        request.path = "/";
    }
    if (question != std::string_view::npos) {
        request.raw_query = std::string(rest.substr(question + 1));
    }
    auto segments = http::decode_path(request.path);
    if (!segments) {
        return Error{Errc::invalid_argument,
                     "Bad percent-encoding in the path: " + segments.error().context};
    }
    request.segments = std::move(segments).value();
    auto query = http::decode_query(request.raw_query);
    if (!query) {
        return Error{Errc::invalid_argument,
                     "Bad percent-encoding in the query: " + query.error().context};
    }
    request.query = std::move(query).value();
    return request;
}

RequestForwarder::RequestForwarder(Cluster& cluster, const Clock& clock, Logger& logger,
                                   RequestForwarderOptions options)
    : cluster_(cluster), clock_(clock), logger_(logger), options_(options), self_(cluster.self()) {
    // Unique per start of this node: a peer may still hold requests of an earlier start.
    const auto wall_ms = static_cast<std::uint64_t>(std::max<std::int64_t>(clock.wall_ms(), 0));
    next_id_ = (wall_ms << 20) + 1;
}

RequestForwarder::~RequestForwarder() {
    stop_impl(false);
}

std::shared_ptr<RequestForwarder> RequestForwarder::start(Cluster& cluster, const Clock& clock,
                                                          Logger& logger,
                                                          RequestForwarderOptions options) {
    QUEEN_ASSERT(
        options.frame_bytes_max >= 64 &&
            options.frame_bytes_max < net::TransportOptions{}.frame_body_bytes_max,
        "RequestForwarderOptions::frame_bytes_max out of range: ", options.frame_bytes_max);
    QUEEN_ASSERT(options.serve_threads >= 1, "RequestForwarderOptions::serve_threads is 0");
    QUEEN_ASSERT(options.check_interval_ms >= 1, "RequestForwarderOptions::check_interval_ms");
    std::shared_ptr<RequestForwarder> forwarder(
        new RequestForwarder(cluster, clock, logger, options));
    RequestForwarder* self = forwarder.get();
    self->deadline_thread_ = std::thread([self] { self->run_deadlines(); });
    for (std::size_t i = 0; i < options.serve_threads; ++i) {
        self->workers_.emplace_back([self, i] { self->run_worker(i); });
    }
    cluster.set_frame_handler(frame_type_http_request, [forwarder](NodeId from, ByteSpan payload) {
        forwarder->on_request(from, payload);
    });
    cluster.set_frame_handler(frame_type_http_response, [forwarder](NodeId from, ByteSpan payload) {
        forwarder->on_response(from, payload);
    });
    cluster.set_frame_handler(frame_type_http_cancel, [forwarder](NodeId from, ByteSpan payload) {
        forwarder->on_cancel_frame(from, payload);
    });
    return forwarder;
}

void RequestForwarder::set_local_handler(http::Handler handler) {
    std::lock_guard lock(mutex_);
    local_handler_ = std::move(handler);
}

RequestForwarderStats RequestForwarder::stats() const {
    std::lock_guard lock(mutex_);
    RequestForwarderStats stats = stats_;
    stats.pending = pending_.size();
    stats.serving = served_.size();
    return stats;
}

void RequestForwarder::fail(const http::Responder& responder, int status,
                            const std::string& message) {
    responder.complete(error_response(status, message));
}

void RequestForwarder::wake_deadlines_if_earlier(std::int64_t deadline_ns) {
    if (awaited_ns_ == 0 || deadline_ns < awaited_ns_) {
        deadline_wakeup_.notify_one();
    }
}

std::optional<RequestForwarder::Pending> RequestForwarder::take_pending(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    const auto found = pending_.find(id);
    if (found == pending_.end()) {
        return std::nullopt;
    }
    std::optional<Pending> taken(std::move(found->second));
    pending_deadlines_.erase({taken->deadline_ns, id});
    pending_.erase(found);
    return taken;
}

// ---------------------------------------------------------------------------------------------
// Origin side

void RequestForwarder::forward(NodeId node, const http::Request& request, http::Responder responder,
                               std::chrono::milliseconds timeout) {
    const std::string_view method_name = request.method_name.empty()
                                             ? http::method_name(request.method)
                                             : std::string_view(request.method_name);
    std::string rebuilt_target;
    std::string_view target = request.target;
    if (target.empty()) {  // a request built by hand: path and query
        rebuilt_target = request.path.empty() ? std::string("/") : request.path;
        if (!request.raw_query.empty()) {
            rebuilt_target += "?" + request.raw_query;
        }
        target = rebuilt_target;
    }
    const std::size_t frame_size =
        request_frame_size(method_name, target, request.headers, request.body);
    if (frame_size > options_.frame_bytes_max) {
        {
            std::lock_guard lock(mutex_);
            ++stats_.failed_total;
        }
        QUEEN_LOG(
            logger_, Level::warn, "cluster.http_forward_too_large",
            "peer=" << node << " bytes=" << frame_size << " limit=" << options_.frame_bytes_max);
        fail(responder, 413,
             "The request (" + size_text(frame_size) + ") is too large to hand to node " +
                 std::to_string(node.value()) + ", which serves this tenant: the peer link " +
                 "carries at most " + size_text(options_.frame_bytes_max) + " per request");
        return;
    }
    const std::int64_t timeout_ms = std::max<std::int64_t>(timeout.count(), 0);
    const auto frame_timeout_ms = static_cast<std::uint32_t>(
        std::min<std::int64_t>(timeout_ms, std::numeric_limits<std::uint32_t>::max()));
    const std::int64_t deadline_ns =
        clock_.monotonic_ns() +
        std::min<std::int64_t>(timeout_ms,
                               std::numeric_limits<std::int64_t>::max() / ns_per_ms / 4) *
            ns_per_ms;
    std::uint64_t id = 0;
    {
        std::lock_guard lock(mutex_);
        if (is_stopped_) {
            ++stats_.failed_total;
            id = 0;
        } else {
            id = next_id_++;
            pending_.emplace(id, Pending{node, responder, deadline_ns});
            pending_deadlines_.emplace(deadline_ns, id);
            wake_deadlines_if_earlier(deadline_ns);
        }
    }
    if (id == 0) {
        fail(responder, 503, "This node is stopping; retry on another node");
        return;
    }
    std::weak_ptr<RequestForwarder> weak = weak_from_this();
    responder.on_cancel([weak, id] {
        if (auto self = weak.lock()) {
            self->on_client_cancel(id);
        }
    });
    {
        std::lock_guard lock(mutex_);
        if (pending_.find(id) == pending_.end()) {
            return;  // the client left already (on_cancel ran), or stop() answered it
        }
    }
    Bytes payload;
    encode_http_request(id, frame_timeout_ms, method_name, target, request.headers, request.body,
                        payload);
    if (cluster_.send_frame(node, frame_type_http_request, payload)) {
        std::lock_guard lock(mutex_);
        ++stats_.forwarded_total;
        return;
    }
    const std::optional<Pending> taken = take_pending(id);
    if (!taken) {
        return;
    }
    {
        std::lock_guard lock(mutex_);
        ++stats_.failed_total;
    }
    QUEEN_LOG(logger_, Level::warn, "cluster.http_forward_unreachable",
              "peer=" << node << " target=\"" << target << "\"");
    fail(taken->responder, 503,
         "Node " + std::to_string(node.value()) +
             ", which serves this tenant, cannot be reached over the peer link (unknown node, "
             "or its queue is full); retry");
}

void RequestForwarder::on_client_cancel(std::uint64_t id) {
    const std::optional<Pending> taken = take_pending(id);
    if (!taken) {
        return;
    }
    {
        std::lock_guard lock(mutex_);
        ++stats_.cancelled_total;
    }
    send_cancel(taken->node, id);
}

void RequestForwarder::send_cancel(NodeId to, std::uint64_t id) {
    Bytes payload;
    ByteWriter(payload).fixed<std::uint64_t>(id);
    // Dropped: the peer cancels the request by itself once its time is up (serve_grace_ms).
    (void)cluster_.send_frame(to, frame_type_http_cancel, payload);
}

void RequestForwarder::on_response(NodeId from, ByteSpan payload) {
    auto decoded = decode_http_response(payload);
    if (!decoded) {
        QUEEN_LOG(logger_, Level::warn, "cluster.http_bad_frame",
                  "peer=" << from << " frame=http_response error=\"" << decoded.error().message()
                          << "\"");
        if (payload.size() < id_bytes) {
            return;  // nobody to answer: the forward times out
        }
        const std::uint64_t id = load_le<std::uint64_t>(payload.data());
        {
            std::lock_guard lock(mutex_);
            const auto found = pending_.find(id);
            if (found == pending_.end() || found->second.node != from) {
                return;
            }
        }
        if (const std::optional<Pending> taken = take_pending(id)) {
            {
                std::lock_guard lock(mutex_);
                ++stats_.failed_total;
            }
            fail(taken->responder, 502,
                 "Node " + std::to_string(from.value()) +
                     ", which serves this tenant, sent an answer that is not valid HTTP: " +
                     decoded.error().context);
        }
        return;
    }
    const std::uint64_t id = decoded->first;
    std::optional<Pending> taken;
    {
        std::lock_guard lock(mutex_);
        const auto found = pending_.find(id);
        if (found == pending_.end()) {
            return;  // timed out, cancelled or failed already
        }
        if (found->second.node != from) {
            QUEEN_LOG(logger_, Level::warn, "cluster.http_response_wrong_peer",
                      "peer=" << from << " expected=" << found->second.node << " id=" << id);
            return;
        }
        taken.emplace(std::move(found->second));
        pending_deadlines_.erase({taken->deadline_ns, id});
        pending_.erase(found);
        ++stats_.answered_total;
    }
    // The HTTP server formats the answer on the connection's I/O thread.
    auto response = std::make_shared<http::Response>(std::move(decoded->second));
    taken->responder.complete_with([response] { return std::move(*response); });
}

// ---------------------------------------------------------------------------------------------
// Serving side

void RequestForwarder::on_request(NodeId from, ByteSpan payload) {
    auto frame = decode_http_request(payload);
    if (!frame) {
        QUEEN_LOG(
            logger_, Level::warn, "cluster.http_bad_frame",
            "peer=" << from << " frame=http_request error=\"" << frame.error().message() << "\"");
        if (payload.size() >= id_bytes) {
            send_response(from, load_le<std::uint64_t>(payload.data()),
                          error_response(
                              400, "The forwarded request is malformed: " + frame.error().context));
        }
        return;
    }
    auto rebuilt = rebuild_request(frame->method_name, frame->target);
    if (!rebuilt) {
        send_response(from, frame->id, error_response(400, rebuilt.error().context));
        return;
    }
    http::Request request = std::move(rebuilt).value();
    request.headers.reserve(frame->headers.size() + 1);
    for (http::Header& header : frame->headers) {
        if (!http::iequals(header.name, forwarded_from_header)) {
            request.headers.push_back(std::move(header));
        }
    }
    request.headers.push_back(
        http::Header{std::string(forwarded_from_header), std::to_string(from.value())});
    request.body = std::move(frame->body);
    request.peer_address = cluster_.peer_host(from);
    if (request.peer_address.empty()) {
        request.peer_address = "peer:" + std::to_string(from.value());
    }

    const ServedKey key{from.value(), frame->id};
    const std::int64_t deadline_ns =
        clock_.monotonic_ns() +
        (static_cast<std::int64_t>(frame->timeout_ms) + options_.serve_grace_ms) * ns_per_ms;
    std::string refusal;
    {
        std::lock_guard lock(mutex_);
        if (is_stopped_) {
            refusal = "Node " + std::to_string(self_.value()) + " is stopping; retry";
        } else if (!local_handler_) {
            refusal = "Node " + std::to_string(self_.value()) +
                      " does not serve forwarded requests yet (starting); retry";
        } else if (work_.size() >= options_.serve_queue_max) {
            refusal = "Node " + std::to_string(self_.value()) +
                      " has too many forwarded requests waiting; retry";
        } else if (served_.find(key) != served_.end()) {
            refusal = "duplicate forwarded request id " + std::to_string(frame->id);
        } else {
            const std::uint64_t serial = next_serial_++;
            std::weak_ptr<RequestForwarder> weak = weak_from_this();
            http::Responder responder =
                http::Responder::detached([weak, key, serial](http::Response response) {
                    if (auto self = weak.lock()) {
                        self->deliver(key, serial, std::move(response));
                    }
                });
            served_.emplace(key, Served{serial, responder, deadline_ns});
            served_deadlines_.emplace(deadline_ns, key.first, key.second);
            wake_deadlines_if_earlier(deadline_ns);
            ++stats_.served_total;
            work_.push_back(Job{std::move(request), responder});
        }
    }
    if (!refusal.empty()) {
        send_response(from, frame->id, error_response(503, refusal));
        return;
    }
    work_ready_.notify_one();
}

void RequestForwarder::run_worker(std::size_t index) {
    set_thread_name("queen-fwd-" + std::to_string(index));
    while (true) {
        std::optional<Job> job;
        http::Handler handler;
        {
            std::unique_lock lock(mutex_);
            work_ready_.wait(lock, [this] { return is_stopped_ || !work_.empty(); });
            if (is_stopped_) {
                return;
            }
            job.emplace(std::move(work_.front()));
            work_.pop_front();
            handler = local_handler_;
        }
        if (job->responder.is_cancelled()) {
            continue;  // the origin cancelled it while it waited
        }
        const char* failure = nullptr;
        std::string what;
        try {
            handler(job->request, job->responder);
        } catch (const std::exception& error) {
            failure = "exception";
            what = error.what();
        } catch (...) {
            failure = "exception";
            what = "unknown exception";
        }
        if (failure != nullptr) {
            QUEEN_LOG(logger_, Level::error, "cluster.http_handler_exception",
                      "target=\"" << job->request.target << "\" error=\"" << what << "\"");
            if (!job->responder.is_completed()) {
                job->responder.complete(error_response(500, "Internal error: " + what));
            }
        }
    }
}

void RequestForwarder::deliver(ServedKey key, std::uint64_t serial, http::Response response) {
    std::optional<Served> taken;
    {
        std::lock_guard lock(mutex_);
        const auto found = served_.find(key);
        if (found == served_.end() || found->second.serial != serial) {
            return;  // cancelled, expired, or answered by stop()
        }
        taken.emplace(std::move(found->second));
        served_deadlines_.erase({taken->deadline_ns, key.first, key.second});
        served_.erase(found);
    }
    send_response(NodeId{key.first}, key.second, response);
}

void RequestForwarder::send_response(NodeId to, std::uint64_t id, const http::Response& response) {
    Bytes payload;
    const std::size_t size = response_frame_size(response);
    if (size > options_.frame_bytes_max) {
        {
            std::lock_guard lock(mutex_);
            ++stats_.too_large_total;
        }
        QUEEN_LOG(logger_, Level::warn, "cluster.http_response_too_large",
                  "peer=" << to << " id=" << id << " status=" << response.status
                          << " bytes=" << size << " limit=" << options_.frame_bytes_max);
        encode_http_response(
            id,
            error_response(502, "The answer of node " + std::to_string(self_.value()) +
                                    ", which serves this tenant, is " + size_text(size) +
                                    ": over the " + size_text(options_.frame_bytes_max) +
                                    " a forwarded answer may carry over the peer link; ask for "
                                    "less (a smaller batch or page)"),
            payload);
    } else {
        encode_http_response(id, response, payload);
    }
    if (cluster_.send_frame(to, frame_type_http_response, payload)) {
        return;
    }
    QUEEN_LOG(logger_, Level::warn, "cluster.http_response_dropped",
              "peer=" << to << " id=" << id << " bytes=" << payload.size()
                      << " note=\"the peer link refused the answer (peer unknown, its queue "
                         "full, or stopped); the origin answers 503 at its timeout\"");
    if (payload.size() > 4096) {
        // A small answer may still fit where a large one did not.
        Bytes small;
        encode_http_response(
            id,
            error_response(503, "The answer of node " + std::to_string(self_.value()) + " (" +
                                    size_text(payload.size()) +
                                    ") could not be queued on the peer link (its queue is "
                                    "full); retry"),
            small);
        (void)cluster_.send_frame(to, frame_type_http_response, small);
    }
}

void RequestForwarder::on_cancel_frame(NodeId from, ByteSpan payload) {
    if (payload.size() != id_bytes) {
        QUEEN_LOG(logger_, Level::warn, "cluster.http_bad_frame",
                  "peer=" << from << " frame=http_cancel bytes=" << payload.size());
        return;
    }
    const ServedKey key{from.value(), load_le<std::uint64_t>(payload.data())};
    std::optional<Served> taken;
    {
        std::lock_guard lock(mutex_);
        const auto found = served_.find(key);
        if (found == served_.end()) {
            return;  // answered already (the answer crossed the cancel), or never arrived
        }
        taken.emplace(std::move(found->second));
        served_deadlines_.erase({taken->deadline_ns, key.first, key.second});
        served_.erase(found);
    }
    http::Responder::cancel(taken->responder);  // runs the handler's on_cancel: releases a poll
}

// ---------------------------------------------------------------------------------------------
// Deadlines and stop

void RequestForwarder::run_deadlines() {
    set_thread_name("queen-fwd-time");
    std::unique_lock lock(mutex_);
    while (!is_stopped_) {
        const std::int64_t now = clock_.monotonic_ns();
        std::vector<std::pair<std::uint64_t, Pending>> expired;
        while (!pending_deadlines_.empty() && pending_deadlines_.begin()->first <= now) {
            const std::uint64_t id = pending_deadlines_.begin()->second;
            pending_deadlines_.erase(pending_deadlines_.begin());
            const auto found = pending_.find(id);
            if (found != pending_.end()) {
                expired.emplace_back(id, std::move(found->second));
                pending_.erase(found);
            }
        }
        std::vector<std::pair<ServedKey, Served>> abandoned;
        while (!served_deadlines_.empty() && std::get<0>(*served_deadlines_.begin()) <= now) {
            const ServedKey key{std::get<1>(*served_deadlines_.begin()),
                                std::get<2>(*served_deadlines_.begin())};
            served_deadlines_.erase(served_deadlines_.begin());
            const auto found = served_.find(key);
            if (found != served_.end()) {
                abandoned.emplace_back(found->first, std::move(found->second));
                served_.erase(found);
            }
        }
        if (!expired.empty() || !abandoned.empty()) {
            stats_.failed_total += expired.size();
            stats_.timed_out_total += expired.size();
            lock.unlock();
            for (auto& [id, pending] : expired) {
                QUEEN_LOG(logger_, Level::warn, "cluster.http_forward_timeout",
                          "peer=" << pending.node << " id=" << id);
                fail(pending.responder, 503,
                     "Node " + std::to_string(pending.node.value()) +
                         ", which serves this tenant, did not answer in time over the peer "
                         "link; retry");
                send_cancel(pending.node, id);
            }
            for (auto& [key, served] : abandoned) {
                QUEEN_LOG(logger_, Level::debug, "cluster.http_served_abandoned",
                          "peer=" << key.first << " id=" << key.second);
                http::Responder::cancel(served.responder);
            }
            expired.clear();
            abandoned.clear();  // the responders go outside the lock
            lock.lock();
            continue;
        }
        std::int64_t next = 0;
        if (!pending_deadlines_.empty()) {
            next = pending_deadlines_.begin()->first;
        }
        if (!served_deadlines_.empty()) {
            const std::int64_t served_next = std::get<0>(*served_deadlines_.begin());
            next = next == 0 ? served_next : std::min(next, served_next);
        }
        std::int64_t wait_ns = options_.check_interval_ms * ns_per_ms;
        if (next != 0) {
            wait_ns = std::clamp<std::int64_t>(next - now, 0, wait_ns);
        }
        awaited_ns_ = next == 0 ? std::numeric_limits<std::int64_t>::max() : next;
        deadline_wakeup_.wait_for(lock, std::chrono::nanoseconds(wait_ns));
        awaited_ns_ = 0;
    }
}

void RequestForwarder::stop() {
    stop_impl(true);
}

void RequestForwarder::stop_impl(bool is_cluster_usable) {
    std::map<std::uint64_t, Pending> pending;
    std::map<ServedKey, Served> served;
    std::deque<Job> work;
    {
        std::lock_guard lock(mutex_);
        if (is_stopped_) {
            return;
        }
        is_stopped_ = true;
        pending.swap(pending_);
        pending_deadlines_.clear();
        served.swap(served_);
        served_deadlines_.clear();
        work.swap(work_);
        stats_.failed_total += pending.size();
    }
    deadline_wakeup_.notify_all();
    work_ready_.notify_all();
    const auto finish = [](std::thread& thread) {
        if (!thread.joinable()) {
            return;
        }
        if (thread.get_id() == std::this_thread::get_id()) {
            thread.detach();  // the last owner let go on this thread: it returns on its own
        } else {
            thread.join();
        }
    };
    finish(deadline_thread_);
    for (std::thread& worker : workers_) {
        finish(worker);
    }
    const std::string self = std::to_string(self_.value());
    for (auto& [id, entry] : pending) {
        fail(entry.responder, 503, "Node " + self + " is stopping; retry on another node");
        if (is_cluster_usable) {
            send_cancel(entry.node, id);
        }
    }
    for (auto& [key, entry] : served) {
        http::Responder::cancel(entry.responder);
        if (is_cluster_usable) {
            send_response(NodeId{key.first}, key.second,
                          error_response(503, "Node " + self + " is stopping; retry"));
        }
    }
    work.clear();  // after their responders were cancelled: nothing answers twice
    if (!is_cluster_usable) {
        return;
    }
    // The cluster's handlers held this object; frames from now on are ignored.
    for (const std::uint8_t type :
         {frame_type_http_request, frame_type_http_response, frame_type_http_cancel}) {
        cluster_.set_frame_handler(type, [](NodeId, ByteSpan) {});
    }
}

}  // namespace queen::node::detail
