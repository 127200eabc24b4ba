// modules/http/src/server.cpp — listener, one event loop per I/O thread, connections with
// pipelining, timeouts and limits. asio is used only through its error_code overloads.
#include "queen/http/server.hpp"

#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/ssl/error.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "exchange.hpp"
#include "queen/core/assert.hpp"
#include "queen/core/memory.hpp"
#include "queen/core/thread_name.hpp"
#include "queen/http/detail/request_parser.hpp"
#include "tls_context.hpp"

namespace queen::http {

namespace {

using asio::ip::tcp;
using Milliseconds = std::chrono::milliseconds;

class Connection;

struct Counters {
    std::atomic<std::uint64_t> requests_total{0};
    std::array<std::atomic<std::uint64_t>, 5> responses_by_class{};
    std::atomic<std::uint64_t> connections_open{0};
    std::atomic<std::uint64_t> connections_accepted_total{0};
    std::atomic<std::uint64_t> connections_rejected_total{0};
    std::atomic<std::uint64_t> bad_requests_total{0};
    std::atomic<std::uint64_t> timeouts_total{0};
    std::atomic<std::uint64_t> requests_cancelled_total{0};
    std::atomic<std::uint64_t> handler_exceptions_total{0};
    std::atomic<std::uint64_t> bytes_in_total{0};
    std::atomic<std::uint64_t> bytes_out_total{0};
    std::atomic<std::uint64_t> tls_handshakes_total{0};
    std::atomic<std::uint64_t> tls_handshake_failures_total{0};

    void count_status(int status) {
        if (status >= 100 && status < 600) {
            responses_by_class[static_cast<std::size_t>(status / 100 - 1)].fetch_add(
                1, std::memory_order_relaxed);
        }
    }
};

/// Lets Responders that outlive the server (or complete during stop) become no-ops.
struct LivenessGuard {
    std::shared_mutex mutex;
    bool is_stopped = false;
};

/// One I/O thread with its own event loop; connections never move between loops.
struct Loop {
    asio::io_context context{1};
    /// Owns the open connections (a connection waiting on a parked request has no pending I/O
    /// holding it). Touched on the loop thread only.
    std::unordered_map<Connection*, std::shared_ptr<Connection>> connections;
    std::thread thread;
    /// Armed after a request with a large body: when it fires, the allocator's free memory goes
    /// back to the system (release_free_memory), once for a burst of such requests.
    asio::steady_timer release_timer{context};
    bool is_release_armed = false;

    /// Called on the loop thread once a large body is freed.
    void release_memory_soon() {
        if (is_release_armed) {
            return;
        }
        is_release_armed = true;
        release_timer.expires_after(std::chrono::milliseconds(large_body_release_delay_ms));
        release_timer.async_wait([this](asio::error_code ec) {
            is_release_armed = false;
            if (!ec) {
                release_free_memory();
            }
        });
    }

    /// Bodies at least this large (their buffer's capacity) arm the release.
    static constexpr std::size_t large_body_bytes = 1u << 20;
    /// Lets a burst of large requests end before one release serves them all.
    static constexpr std::uint32_t large_body_release_delay_ms = 100;
};

/// The parts of Server::Impl a connection needs.
struct Shared {
    Shared(const ServerOptions& server_options, Handler request_handler, Logger& server_logger)
        : options(server_options), handler(std::move(request_handler)), logger(server_logger) {}
    ServerOptions options;
    Handler handler;
    Logger& logger;
    Counters counters;
    std::shared_ptr<LivenessGuard> guard = std::make_shared<LivenessGuard>();
    std::atomic<bool> is_stopped{false};

    /// The context new connections handshake with (null: TLS off); replaced by reload_tls().
    [[nodiscard]] std::shared_ptr<detail::TlsContext> current_tls() const {
        const std::lock_guard lock(tls_mutex);
        return tls;
    }
    mutable std::mutex tls_mutex;
    std::shared_ptr<detail::TlsContext> tls;
};

void append_header_text(std::string& out, std::string_view text) {
    for (const char c : text) {
        if (c != '\r' && c != '\n') {
            out.push_back(c);
        }
    }
}

bool has_no_body(const Response& response) noexcept {
    return response.status < 200 || response.status == 204 || response.status == 304;
}

/// The status line and headers of `response` (through the empty line), without the body.
/// `allow_origin` is the request's Access-Control-Allow-Origin value (empty: no CORS headers).
std::string serialize_head(const Response& response, std::uint16_t version_minor,
                           bool is_close_after, const CorsOptions& cors,
                           std::string_view allow_origin) {
    QUEEN_ASSERT(response.status >= 100 && response.status <= 599, "bad HTTP status ",
                 response.status);
    const bool is_bodyless = has_no_body(response);
    std::string out;
    out.reserve(160);
    out += version_minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ";
    out += std::to_string(response.status);
    out += ' ';
    out += reason_phrase(response.status);
    out += "\r\n";
    if (!is_bodyless) {
        out += "Content-Length: ";
        out += std::to_string(response.body.size());
        out += "\r\n";
        if (!response.content_type.empty()) {
            out += "Content-Type: ";
            out += response.content_type;
            out += "\r\n";
        }
    }
    if (!cors.allowed_origins.empty()) {
        out += "Vary: Origin\r\n";  // the CORS headers below depend on the request's Origin
    }
    if (!allow_origin.empty()) {
        out += "Access-Control-Allow-Origin: ";
        append_header_text(out, allow_origin);
        out += "\r\nAccess-Control-Allow-Methods: ";
        out += cors.allow_methods;
        out += "\r\nAccess-Control-Allow-Headers: ";
        out += cors.allow_headers;
        out += "\r\n";
    }
    for (const Header& header : response.headers) {
        // A CR or LF from a handler (say, an echoed client value) must not split the header.
        append_header_text(out, header.name);
        out += ": ";
        append_header_text(out, header.value);
        out += "\r\n";
    }
    if (is_close_after) {
        out += "Connection: close\r\n";
    } else if (version_minor == 0) {
        out += "Connection: keep-alive\r\n";
    }
    out += "\r\n";
    return out;
}

/// The whole answer in one string (rare answers: final errors, rejections). They answer no
/// parsed request, so they carry no CORS grant.
std::string serialize(const Response& response, bool is_head, std::uint16_t version_minor,
                      bool is_close_after, const CorsOptions& cors) {
    std::string out = serialize_head(response, version_minor, is_close_after, cors, {});
    if (!has_no_body(response) && !is_head) {
        out += response.body;
    }
    return out;
}

class Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(Shared& shared, Loop& loop, tcp::socket socket,
               std::shared_ptr<detail::TlsContext> tls)
        : shared_(shared),
          loop_(loop),
          socket_(std::move(socket)),
          timer_(loop.context),
          request_timer_(loop.context),
          parser_(detail::ParserLimits{shared.options.header_size_bytes_max,
                                       shared.options.headers_count_max,
                                       shared.options.body_size_bytes_max}),
          read_buffer_(shared.options.read_buffer_bytes) {
        asio::error_code ec;
        const tcp::endpoint peer = socket_.remote_endpoint(ec);
        if (!ec) {
            peer_address_ = peer.address().to_string();
            peer_port_ = peer.port();
        }
        socket_.set_option(tcp::no_delay(true), ec);
        if (tls) {
            tls_context_ = std::move(tls);
            tls_.emplace(socket_, tls_context_->context);
        }
    }

    void start() {
        loop_.connections.emplace(this, shared_from_this());
        if (shared_.is_stopped.load()) {
            abort("server_stopped");
            return;
        }
        if (tls_) {
            is_handshaking_ = true;  // no request is read before the handshake is done
            update_timer(false);
            tls_->async_handshake(
                asio::ssl::stream_base::server,
                [self = shared_from_this()](asio::error_code ec) { self->on_handshake(ec); });
            return;
        }
        update_timer(false);
        do_read();
    }

    /// Closes at once; parked requests are cancelled (their on_cancel callbacks run here).
    void abort(const char* reason) {
        if (is_closed_) {
            return;
        }
        QUEEN_LOG(shared_.logger, Level::debug, "http.connection_closed",
                  "peer=" << peer_address_ << ":" << peer_port_ << " reason=" << reason
                          << " pending=" << slots_.size());
        is_closed_ = true;
        const auto self = shared_from_this();  // erasing from the loop may drop the last owner
        asio::error_code ec;
        timer_.cancel();
        request_timer_.cancel();
        socket_.close(ec);
        loop_.connections.erase(this);
        shared_.counters.connections_open.fetch_sub(1, std::memory_order_relaxed);
        std::deque<Slot> slots = std::move(slots_);
        slots_.clear();
        for (Slot& slot : slots) {
            if (auto exchange = slot.exchange.lock()) {
                exchange->cancel(&shared_.counters.requests_cancelled_total);
            }
        }
    }

    /// Stores the answer of request `id` and writes every answer that is now first in line.
    void finish_slot(std::uint64_t id, Response response) {
        if (is_closed_ || slots_.empty() || id < slots_.front().id) {
            return;
        }
        const std::uint64_t index = id - slots_.front().id;
        if (index >= slots_.size()) {
            return;
        }
        Slot& slot = slots_[index];
        QUEEN_ASSERT(slot.id == id, "slot ids are consecutive");
        QUEEN_ASSERT(!slot.is_ready, "a slot is answered once");
        shared_.counters.count_status(response.status);
        slot.bytes = serialize_head(response, slot.version_minor, slot.is_close_after,
                                    shared_.options.cors, slot.allow_origin);
        if (!has_no_body(response) && !slot.is_head) {
            slot.body = std::move(response.body);  // sent from where it is, not copied
        }
        slot.is_ready = true;
        slot.exchange.reset();
        if (!slots_.back().is_ready) {
            // A later request of this connection is still being handled (pipelining): its answer
            // may be posted to this thread already, so write after the handlers queued now and
            // let answers finished together leave in one write.
            post_write();
        } else {
            try_write();
        }
        do_read();
        update_timer(false);
    }

private:
    enum class Phase : std::uint8_t { none, handshake, idle, headers, body, busy, draining };

    void on_handshake(asio::error_code ec) {
        is_handshaking_ = false;
        if (is_closed_) {
            return;
        }
        if (ec) {
            shared_.counters.tls_handshake_failures_total.fetch_add(1, std::memory_order_relaxed);
            QUEEN_LOG(shared_.logger, Level::debug, "http.tls_handshake_failed",
                      "peer=" << peer_address_ << ":" << peer_port_ << " error=\"" << ec.message()
                              << "\"");
            if (ec.category() == asio::error::get_ssl_category() &&
                ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_HTTP_REQUEST) {
                answer_plain_http();
                return;
            }
            abort("tls_handshake_failed");
            return;
        }
        shared_.counters.tls_handshakes_total.fetch_add(1, std::memory_order_relaxed);
        update_timer(false);
        do_read();
    }

    /// A plain HTTP request reached the TLS port: say so in plain HTTP (the client cannot read
    /// anything else), then close.
    void answer_plain_http() {
        is_closing_ = true;
        is_draining_ = true;
        shared_.counters.count_status(400);
        write_buffer_ =
            serialize(Response::error(400, "This port speaks HTTPS: send the request to https://"),
                      false, 1, true, shared_.options.cors);
        update_timer(false);  // draining: bounded by close_linger_timeout_ms
        asio::async_write(socket_, asio::buffer(write_buffer_),
                          [self = shared_from_this()](asio::error_code, std::size_t) {
                              self->abort("plain_http_on_tls_port");
                          });
    }

    /// Sends the TLS close_notify (and waits for the peer's, bounded by the linger timer); the
    /// connection closes when that ends either way.
    void start_tls_shutdown() {
        tls_->async_shutdown(
            [self = shared_from_this()](asio::error_code) { self->abort("tls_closed"); });
    }

    struct Slot {
        std::uint64_t id = 0;
        bool is_ready = false;
        bool is_head = false;
        bool is_close_after = false;
        std::uint16_t version_minor = 1;
        std::string allow_origin;  // Access-Control-Allow-Origin of the answer; empty: none
        std::string bytes;         // the head, or the whole answer
        std::string body;          // the body when it is not in `bytes`
        std::weak_ptr<detail::Exchange> exchange;
    };

    void do_read() {
        if (is_reading_ || is_closed_ || is_handshaking_ || is_tls_closing_) {
            return;
        }
        const bool is_discarding = is_closing_ || is_draining_;
        if (!is_discarding && (input_offset_ < input_.size() ||
                               slots_.size() >= shared_.options.pipelined_requests_max)) {
            return;  // resumes when answers leave (pipelining limit)
        }
        is_reading_ = true;
        auto on_done = [self = shared_from_this()](asio::error_code ec, std::size_t n) {
            self->on_read(ec, n);
        };
        if (tls_) {
            tls_->async_read_some(asio::buffer(read_buffer_), std::move(on_done));
        } else {
            socket_.async_read_some(asio::buffer(read_buffer_), std::move(on_done));
        }
    }

    void on_read(asio::error_code ec, std::size_t bytes_read) {
        is_reading_ = false;
        if (is_closed_) {
            return;
        }
        if (is_tls_closing_) {
            start_tls_shutdown();  // the read was cancelled for it (begin_linger_close)
            return;
        }
        if (ec) {
            // EOF or reset: the client is gone, parked requests are cancelled.
            abort(ec == asio::error::eof ? "eof" : "read_error");
            return;
        }
        shared_.counters.bytes_in_total.fetch_add(bytes_read, std::memory_order_relaxed);
        if (!is_closing_ && !is_draining_) {
            input_.append(read_buffer_.data(), bytes_read);
            process_input();
        }
        do_read();
        update_timer(true);
    }

    void process_input() {
        while (!is_closing_ && !is_closed_ && input_offset_ < input_.size() &&
               slots_.size() < shared_.options.pipelined_requests_max) {
            const std::string_view view = std::string_view(input_).substr(input_offset_);
            const std::size_t used = parser_.feed(view);
            input_offset_ += used;
            const auto state = parser_.state();
            if (state == detail::RequestParser::State::request_ready) {
                dispatch(parser_.take_request());
            } else if (state == detail::RequestParser::State::failed) {
                fail_connection(parser_.failure().status, parser_.failure().message);
            } else if (used == 0) {
                // The parser took nothing and asked for nothing: never spin on it.
                fail_connection(400, "Malformed request");
            }
        }
        if (input_offset_ >= input_.size()) {
            input_.clear();
            input_offset_ = 0;
        }
        if (!is_closing_ && !is_closed_ && parser_.is_expecting_continue() && !is_continue_sent_) {
            is_continue_sent_ = true;
            Slot slot;
            slot.id = next_slot_id_++;
            slot.is_ready = true;
            slot.bytes = "HTTP/1.1 100 Continue\r\n\r\n";
            slots_.push_back(std::move(slot));
            try_write();
        }
    }

    void dispatch(detail::ParsedRequest parsed) {
        shared_.counters.requests_total.fetch_add(1, std::memory_order_relaxed);
        is_continue_sent_ = false;
        Request& request = parsed.request;
        request.peer_address = peer_address_;
        request.peer_port = peer_port_;
        Slot slot;
        slot.id = next_slot_id_++;
        slot.is_head = request.method == Method::head;
        slot.version_minor = request.version_minor;
        slot.is_close_after = !request.is_keep_alive || parsed.is_upgrade;
        if (slot.is_close_after) {
            is_closing_ = true;  // nothing after this request is parsed
        }
        const CorsOptions& cors = shared_.options.cors;
        if (!cors.allowed_origins.empty()) {
            slot.allow_origin = std::string(cors.allow_origin_for(request.header("Origin")));
        }
        const bool is_origin_allowed = !slot.allow_origin.empty();
        const std::uint64_t id = slot.id;
        slots_.push_back(std::move(slot));

        if (parsed.target_error) {
            finish_slot(id, Response::error(400, *parsed.target_error));
            return;
        }
        if (request.method == Method::options) {
            // Preflights are the server's: 204, with the grant only for an allowed origin.
            Response preflight = Response::empty(204);
            if (is_origin_allowed) {
                preflight.headers.push_back(
                    Header{"Access-Control-Max-Age", std::to_string(cors.max_age_seconds)});
            }
            finish_slot(id, std::move(preflight));
            return;
        }
        auto exchange = std::make_shared<detail::Exchange>(make_deliver(id));
        exchange->deliver_made = make_deliver_made(id);
        exchange->dispatch = make_dispatch();
        slots_.back().exchange = exchange;
        Responder responder(exchange);
        try {
            shared_.handler(request, responder);
        } catch (const std::exception& error) {
            handler_failed(*exchange, id, error.what());
        } catch (...) {
            handler_failed(*exchange, id, "unknown exception");
        }
        // The handler read the body (handlers copy what they keep): a large one is freed now
        // and its memory handed back to the system soon after.
        if (request.body.capacity() >= Loop::large_body_bytes) {
            std::string().swap(request.body);
            loop_.release_memory_soon();
        }
    }

    void handler_failed(detail::Exchange& exchange, std::uint64_t id, const char* what) {
        shared_.counters.handler_exceptions_total.fetch_add(1, std::memory_order_relaxed);
        QUEEN_LOG(shared_.logger, Level::error, "http.handler_exception",
                  "peer=" << peer_address_ << " error=" << what);
        if (exchange.try_mark_completed()) {
            finish_slot(id, Response::error(500, "Internal server error"));
        }
    }

    std::function<void(Response)> make_deliver(std::uint64_t id) {
        return [weak = weak_from_this(), id, guard = shared_.guard,
                executor = loop_.context.get_executor()](Response response) {
            std::shared_lock lock(guard->mutex);
            if (guard->is_stopped) {
                return;
            }
            auto self = weak.lock();
            if (!self) {
                return;
            }
            if (executor.running_in_this_thread()) {
                self->finish_slot(id, std::move(response));
                return;
            }
            asio::post(executor,
                       [self = std::move(self), id, response = std::move(response)]() mutable {
                           self->finish_slot(id, std::move(response));
                       });
        };
    }

    std::function<void(std::function<Response()>)> make_deliver_made(std::uint64_t id) {
        return [weak = weak_from_this(), id, guard = shared_.guard,
                executor = loop_.context.get_executor()](std::function<Response()> make) {
            std::shared_lock lock(guard->mutex);
            if (guard->is_stopped) {
                return;
            }
            auto self = weak.lock();
            if (!self) {
                return;
            }
            if (executor.running_in_this_thread()) {
                self->finish_slot(id, make());
                return;
            }
            asio::post(executor, [self = std::move(self), id, make = std::move(make)]() mutable {
                self->finish_slot(id, make());
            });
        };
    }

    std::function<void(std::function<void()>)> make_dispatch() {
        return [guard = shared_.guard,
                executor = loop_.context.get_executor()](std::function<void()> work) {
            std::shared_lock lock(guard->mutex);
            if (guard->is_stopped) {
                return;
            }
            if (executor.running_in_this_thread()) {
                lock.unlock();
                work();
                return;
            }
            asio::post(executor, std::move(work));
        };
    }

    /// Malformed or over-limit input: answer, then close (the stream position is unknown).
    void fail_connection(int status, const std::string& message) {
        shared_.counters.bad_requests_total.fetch_add(1, std::memory_order_relaxed);
        QUEEN_LOG(shared_.logger, Level::debug, "http.bad_request",
                  "peer=" << peer_address_ << " status=" << status << " error=" << message);
        queue_final_answer(Response::error(status, message));
    }

    void queue_final_answer(const Response& response) {
        is_closing_ = true;
        shared_.counters.count_status(response.status);
        Slot slot;
        slot.id = next_slot_id_++;
        slot.is_ready = true;
        slot.is_close_after = true;
        slot.bytes = serialize(response, false, 1, true, shared_.options.cors);
        slots_.push_back(std::move(slot));
        try_write();
    }

    void post_write() {
        if (is_write_posted_) {
            return;
        }
        is_write_posted_ = true;
        asio::post(loop_.context, [self = shared_from_this()] {
            self->is_write_posted_ = false;
            self->try_write();
        });
    }

    void try_write() {
        if (is_writing_ || is_closed_) {
            return;
        }
        write_buffer_.clear();
        write_body_.clear();
        bool is_close_after = false;
        while (!slots_.empty() && slots_.front().is_ready && !is_close_after) {
            Slot& front = slots_.front();
            if (write_buffer_.empty() && write_body_.empty()) {
                // The usual single answer: head and body leave from where they are.
                write_buffer_.swap(front.bytes);
                write_body_.swap(front.body);
            } else {
                write_buffer_ += write_body_;
                write_body_.clear();
                write_buffer_ += front.bytes;
                write_buffer_ += front.body;
            }
            is_close_after = front.is_close_after;
            slots_.pop_front();
        }
        if (write_buffer_.empty() && write_body_.empty()) {
            return;
        }
        is_writing_ = true;
        auto on_done = [self = shared_from_this(), is_close_after](asio::error_code ec,
                                                                   std::size_t n) {
            self->on_written(ec, n, is_close_after);
        };
        // TLS writes one record per buffer: a small body joins its head in one record.
        if (tls_ && !write_body_.empty() && write_body_.size() <= tls_coalesce_bytes_max) {
            write_buffer_ += write_body_;
            write_body_.clear();
        }
        const std::array<asio::const_buffer, 2> buffers{asio::buffer(write_buffer_),
                                                        asio::buffer(write_body_)};
        if (tls_) {
            asio::async_write(*tls_, buffers, std::move(on_done));
        } else {
            asio::async_write(socket_, buffers, std::move(on_done));
        }
    }

    void on_written(asio::error_code ec, std::size_t bytes_written, bool is_close_after) {
        is_writing_ = false;
        if (is_closed_) {
            return;
        }
        if (ec) {
            abort("write_error");
            return;
        }
        shared_.counters.bytes_out_total.fetch_add(bytes_written, std::memory_order_relaxed);
        if (is_close_after) {
            begin_linger_close();
            return;
        }
        process_input();
        try_write();
        do_read();
        update_timer(false);
    }

    /// Half-closes and drains the peer's unread input for a while, so a response followed by a
    /// close reaches the client instead of being destroyed by a reset.
    void begin_linger_close() {
        is_draining_ = true;
        is_closing_ = true;
        if (tls_) {
            // close_notify, then the peer's; a read in flight is cancelled first (one TLS
            // operation reads at a time) and starts the shutdown when it ends.
            is_tls_closing_ = true;
            if (is_reading_) {
                asio::error_code ignored;
                socket_.cancel(ignored);
            } else {
                start_tls_shutdown();
            }
        } else {
            asio::error_code ec;
            socket_.shutdown(tcp::socket::shutdown_send, ec);
            if (ec) {
                abort("shutdown_error");
                return;
            }
        }
        // Requests still waiting behind the closing answer will never be sent.
        for (Slot& slot : slots_) {
            if (auto exchange = slot.exchange.lock()) {
                exchange->cancel(&shared_.counters.requests_cancelled_total);
            }
        }
        slots_.clear();
        update_timer(false);
        do_read();
    }

    Phase compute_phase() const {
        if (is_handshaking_) {
            return Phase::handshake;
        }
        if (is_draining_ || is_timed_out_) {
            return Phase::draining;
        }
        if (input_offset_ < input_.size()) {
            return Phase::busy;  // paused by the pipelining limit: our turn, not the client's
        }
        const auto state = parser_.state();
        if (!is_closing_ && state == detail::RequestParser::State::headers) {
            return Phase::headers;
        }
        if (!is_closing_ && state == detail::RequestParser::State::body) {
            return Phase::body;
        }
        if (!slots_.empty() || is_writing_ || is_closing_) {
            return Phase::busy;
        }
        return Phase::idle;
    }

    void update_timer(bool has_read_progress) {
        if (is_closed_) {
            return;
        }
        const Phase phase = compute_phase();
        if (phase == timer_phase_ && !(phase == Phase::body && has_read_progress)) {
            return;
        }
        const bool is_reading_request = phase == Phase::headers || phase == Phase::body;
        const bool was_reading_request =
            timer_phase_ == Phase::headers || timer_phase_ == Phase::body;
        if (is_reading_request && !was_reading_request) {
            arm_request_timer();  // the first byte of a request
        } else if (!is_reading_request && was_reading_request) {
            ++request_timer_generation_;  // read whole (or given up): the deadline is moot
            request_timer_.cancel();
        }
        timer_phase_ = phase;
        ++timer_generation_;
        std::uint32_t timeout_ms = 0;
        switch (phase) {
            case Phase::idle: timeout_ms = shared_.options.keep_alive_idle_timeout_ms; break;
            case Phase::handshake:
            case Phase::headers: timeout_ms = shared_.options.header_read_timeout_ms; break;
            case Phase::body: timeout_ms = shared_.options.body_read_timeout_ms; break;
            case Phase::draining: timeout_ms = shared_.options.close_linger_timeout_ms; break;
            case Phase::busy:
            case Phase::none: timer_.cancel(); return;
        }
        timer_.expires_after(Milliseconds(timeout_ms));
        timer_.async_wait(
            [self = shared_from_this(), generation = timer_generation_](asio::error_code ec) {
                if (!ec && generation == self->timer_generation_ && !self->is_closed_) {
                    self->on_timeout();
                }
            });
    }

    /// The whole request's deadline, from its first byte (however steadily the body trickles in,
    /// which the pause timer alone never catches).
    void arm_request_timer() {
        ++request_timer_generation_;
        request_timer_.expires_after(Milliseconds(shared_.options.request_read_timeout_ms));
        request_timer_.async_wait([self = shared_from_this(),
                                   generation = request_timer_generation_](asio::error_code ec) {
            if (!ec && generation == self->request_timer_generation_ && !self->is_closed_ &&
                (self->timer_phase_ == Phase::headers || self->timer_phase_ == Phase::body)) {
                self->on_timeout();
            }
        });
    }

    void on_timeout() {
        switch (timer_phase_) {
            case Phase::idle: abort("idle_timeout"); return;
            case Phase::draining: abort("linger_done"); return;
            case Phase::handshake:
                shared_.counters.timeouts_total.fetch_add(1, std::memory_order_relaxed);
                shared_.counters.tls_handshake_failures_total.fetch_add(1,
                                                                        std::memory_order_relaxed);
                abort("tls_handshake_timeout");
                return;
            case Phase::headers:
            case Phase::body: {
                shared_.counters.timeouts_total.fetch_add(1, std::memory_order_relaxed);
                QUEEN_LOG(shared_.logger, Level::debug, "http.request_timeout",
                          "peer=" << peer_address_ << " phase="
                                  << (timer_phase_ == Phase::headers ? "headers" : "body"));
                is_timed_out_ = true;
                queue_final_answer(Response::error(408, "Request timed out"));
                update_timer(false);  // now draining: a peer that never reads cannot hold us
                return;
            }
            case Phase::busy:
            case Phase::none: return;
        }
    }

    /// Bodies up to this size are written in the record of their head over TLS.
    static constexpr std::size_t tls_coalesce_bytes_max = 16 * 1024;

    Shared& shared_;
    Loop& loop_;
    tcp::socket socket_;
    std::shared_ptr<detail::TlsContext> tls_context_;     ///< null: plain HTTP
    std::optional<asio::ssl::stream<tcp::socket&>> tls_;  ///< over socket_ when TLS is on
    asio::steady_timer timer_;                            ///< the current phase's timeout
    asio::steady_timer request_timer_;  ///< http.request_read_timeout_ms of the request read
    detail::RequestParser parser_;
    std::vector<char> read_buffer_;
    std::string input_;  // bytes read but not yet parsed (pipelining limit reached)
    std::size_t input_offset_ = 0;
    std::deque<Slot> slots_;  // answers in request order; front is written first
    std::uint64_t next_slot_id_ = 0;
    std::string write_buffer_;  // in flight: heads (and bodies when several answers go at once)
    std::string write_body_;    // in flight: the body of a lone answer
    std::string peer_address_;
    std::uint16_t peer_port_ = 0;
    Phase timer_phase_ = Phase::none;
    std::uint64_t request_timer_generation_ = 0;
    std::uint64_t timer_generation_ = 0;
    bool is_reading_ = false;
    bool is_writing_ = false;
    bool is_write_posted_ = false;  // a post_write() handler is queued
    bool is_closing_ = false;       // no more requests are parsed
    bool is_draining_ = false;      // final answer sent; discarding input until EOF or linger
    bool is_closed_ = false;
    bool is_timed_out_ = false;
    bool is_continue_sent_ = false;
    bool is_handshaking_ = false;  // TLS handshake in progress: nothing is read
    bool is_tls_closing_ = false;  // close_notify under way: nothing more is read
};

}  // namespace

struct Server::Impl {
    Impl(const ServerOptions& options, Handler handler, Logger& logger)
        : shared(options, std::move(handler), logger) {}

    void do_accept() {
        Loop& target = *loops[next_loop % loops.size()];
        ++next_loop;
        acceptor->async_accept(target.context,
                               [this, &target](asio::error_code ec, tcp::socket socket) {
                                   on_accept(ec, std::move(socket), target);
                               });
    }

    void on_accept(asio::error_code ec, tcp::socket socket, Loop& target) {
        if (ec == asio::error::operation_aborted || shared.is_stopped.load()) {
            return;
        }
        if (ec) {
            // EMFILE and friends: back off a little instead of spinning on the error.
            QUEEN_LOG(shared.logger, Level::warn, "http.accept_failed", "error=" << ec.message());
            accept_retry_timer->expires_after(Milliseconds(50));
            accept_retry_timer->async_wait([this](asio::error_code wait_ec) {
                if (!wait_ec && !shared.is_stopped.load()) {
                    do_accept();
                }
            });
            return;
        }
        Counters& counters = shared.counters;
        counters.connections_accepted_total.fetch_add(1, std::memory_order_relaxed);
        if (counters.connections_open.fetch_add(1) >= shared.options.connections_max) {
            counters.connections_open.fetch_sub(1);
            counters.connections_rejected_total.fetch_add(1, std::memory_order_relaxed);
            reject(std::move(socket));
        } else {
            asio::post(target.context, [this, &target, socket = std::move(socket)]() mutable {
                auto connection = std::make_shared<Connection>(shared, target, std::move(socket),
                                                               shared.current_tls());
                connection->start();
            });
        }
        do_accept();
    }

    /// Over connections_max: a short 503 and close, without a Connection object.
    void reject(tcp::socket socket) {
        if (shared.options.tls.is_enabled()) {
            asio::error_code ignored;  // a plain answer means nothing to a TLS client
            socket.close(ignored);
            return;
        }
        shared.counters.count_status(503);
        struct Rejected {
            tcp::socket socket;
            std::string bytes;
        };
        auto rejected = std::make_shared<Rejected>(
            Rejected{std::move(socket), serialize(Response::error(503, "Too many connections"),
                                                  false, 1, true, shared.options.cors)});
        asio::async_write(rejected->socket, asio::buffer(rejected->bytes),
                          [rejected](asio::error_code, std::size_t) {
                              asio::error_code ignored;
                              rejected->socket.shutdown(tcp::socket::shutdown_both, ignored);
                              rejected->socket.close(ignored);
                          });
    }

    void stop() {
        std::lock_guard lock(stop_mutex);
        if (shared.is_stopped.exchange(true)) {
            return;
        }
        for (const auto& loop : loops) {
            QUEEN_ASSERT(loop->thread.get_id() != std::this_thread::get_id(),
                         "Server::stop() called from one of its own I/O threads");
        }
        {
            std::unique_lock guard_lock(shared.guard->mutex);
            shared.guard->is_stopped = true;
        }
        asio::post(loops.front()->context, [this] {
            asio::error_code ignored;
            acceptor->close(ignored);
            accept_retry_timer->cancel();
        });
        for (const auto& loop : loops) {
            asio::post(loop->context, [&loop = *loop] {
                std::vector<std::shared_ptr<Connection>> alive;
                for (const auto& [raw, connection] : loop.connections) {
                    alive.push_back(connection);
                }
                for (const auto& connection : alive) {
                    connection->abort("server_stopped");
                }
            });
        }
        work_guards.clear();
        for (const auto& loop : loops) {
            if (loop->thread.joinable()) {
                loop->thread.join();
            }
        }
    }

    void run_loop(Loop& loop, std::size_t number) {
        set_thread_name("http-io-" + std::to_string(number));
        for (;;) {
            try {
                loop.context.run();
                return;
            } catch (const std::exception& error) {
                // Only user callbacks (on_cancel) can throw here; keep serving.
                QUEEN_LOG(shared.logger, Level::error, "http.loop_exception",
                          "error=" << error.what());
            } catch (...) {
                QUEEN_LOG(shared.logger, Level::error, "http.loop_exception", "error=unknown");
            }
        }
    }

    Shared shared;
    std::mutex stop_mutex;
    std::size_t next_loop = 0;  // accept thread only
    std::uint16_t port = 0;
    std::string address;
    // Declared after `shared`: destroying the loops destroys pending handlers (and with them
    // connections) while the counters they touch still exist.
    std::vector<std::unique_ptr<Loop>> loops;
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work_guards;
    std::optional<tcp::acceptor> acceptor;
    std::optional<asio::steady_timer> accept_retry_timer;
};

Result<std::unique_ptr<Server>> Server::start(const ServerOptions& options, Handler handler,
                                              Logger& logger) {
    QUEEN_TRY(options.validate());
    QUEEN_ASSERT(handler != nullptr, "Server::start() needs a handler");
    auto impl = std::make_unique<Impl>(options, std::move(handler), logger);
    if (options.tls.is_enabled()) {
        QUEEN_TRY(impl->shared.tls, detail::make_tls_context(options.tls));
    }
    for (std::uint32_t i = 0; i < options.io_threads; ++i) {
        impl->loops.push_back(std::make_unique<Loop>());
        impl->work_guards.push_back(asio::make_work_guard(impl->loops.back()->context));
    }
    asio::io_context& accept_context = impl->loops.front()->context;
    impl->acceptor.emplace(accept_context);
    impl->accept_retry_timer.emplace(accept_context);

    asio::error_code ec;
    const asio::ip::address address = asio::ip::make_address(options.bind_address, ec);
    if (ec) {
        return Error{Errc::invalid_argument,
                     "http.address '" + options.bind_address + "': " + ec.message()};
    }
    const tcp::endpoint endpoint(address, options.port);
    const std::string where = options.bind_address + ":" + std::to_string(options.port);
    tcp::acceptor& acceptor = *impl->acceptor;
    if (acceptor.open(endpoint.protocol(), ec); ec) {
        return Error{Errc::io, "http: open socket for " + where + ": " + ec.message()};
    }
    if (acceptor.set_option(tcp::acceptor::reuse_address(true), ec); ec) {
        return Error{Errc::io, "http: SO_REUSEADDR on " + where + ": " + ec.message()};
    }
    if (acceptor.bind(endpoint, ec); ec) {
        return Error{Errc::io, "http: bind " + where + ": " + ec.message()};
    }
    if (acceptor.listen(static_cast<int>(options.listen_backlog), ec); ec) {
        return Error{Errc::io, "http: listen on " + where + ": " + ec.message()};
    }
    const tcp::endpoint bound = acceptor.local_endpoint(ec);
    if (ec) {
        return Error{Errc::io, "http: local address of " + where + ": " + ec.message()};
    }
    impl->port = bound.port();
    impl->address = bound.address().to_string();
    impl->do_accept();
    Impl& started = *impl;
    for (std::size_t i = 0; i < impl->loops.size(); ++i) {
        impl->loops[i]->thread =
            std::thread([&started, &loop = *impl->loops[i], i] { started.run_loop(loop, i); });
    }
    QUEEN_LOG(logger, Level::info, "http.listening",
              "address=" << impl->address << " port=" << impl->port
                         << " io_threads=" << options.io_threads
                         << " tls=" << (options.tls.is_enabled() ? "on" : "off"));
    return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}

Server::~Server() {
    stop();
}

void Server::stop() {
    if (impl_) {
        impl_->stop();
    }
}

Status Server::reload_tls() {
    Shared& shared = impl_->shared;
    if (!shared.options.tls.is_enabled()) {
        return {};
    }
    auto fresh = detail::make_tls_context(shared.options.tls);
    if (!fresh) {
        QUEEN_LOG(shared.logger, Level::error, "http.tls_reload_failed",
                  "error=\"" << fresh.error().message() << "\" kept=previous");
        return std::move(fresh).error();
    }
    const std::int64_t not_after = (*fresh)->not_after_unix_seconds;
    {
        const std::lock_guard lock(shared.tls_mutex);
        shared.tls = std::move(*fresh);
    }
    QUEEN_LOG(shared.logger, Level::info, "http.tls_reloaded",
              "certificate=" << shared.options.tls.certificate_file.string()
                             << " not_after=" << not_after);
    return {};
}

bool Server::is_tls() const noexcept {
    return impl_->shared.options.tls.is_enabled();
}

std::uint16_t Server::port() const noexcept {
    return impl_->port;
}

const std::string& Server::address() const noexcept {
    return impl_->address;
}

ServerMetrics Server::metrics() const noexcept {
    const Counters& c = impl_->shared.counters;
    const auto read = [](const std::atomic<std::uint64_t>& value) {
        return value.load(std::memory_order_relaxed);
    };
    ServerMetrics m;
    m.requests_total = read(c.requests_total);
    m.responses_1xx_total = read(c.responses_by_class[0]);
    m.responses_2xx_total = read(c.responses_by_class[1]);
    m.responses_3xx_total = read(c.responses_by_class[2]);
    m.responses_4xx_total = read(c.responses_by_class[3]);
    m.responses_5xx_total = read(c.responses_by_class[4]);
    m.connections_open = read(c.connections_open);
    m.connections_accepted_total = read(c.connections_accepted_total);
    m.connections_rejected_total = read(c.connections_rejected_total);
    m.bad_requests_total = read(c.bad_requests_total);
    m.timeouts_total = read(c.timeouts_total);
    m.requests_cancelled_total = read(c.requests_cancelled_total);
    m.handler_exceptions_total = read(c.handler_exceptions_total);
    m.bytes_in_total = read(c.bytes_in_total);
    m.bytes_out_total = read(c.bytes_out_total);
    m.tls_handshakes_total = read(c.tls_handshakes_total);
    m.tls_handshake_failures_total = read(c.tls_handshake_failures_total);
    if (const auto tls = impl_->shared.current_tls()) {
        m.tls_certificate_not_after_seconds = tls->not_after_unix_seconds;
    }
    return m;
}

}  // namespace queen::http
