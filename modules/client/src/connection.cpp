// client/src/connection.cpp — blocking keep-alive HTTP/1.1 over POSIX sockets (TLS through
// tls.hpp), parsed by libhttp-parser; deadlines through poll() and the injected clock.
#include "queen/client/connection.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "http_wire.hpp"
#include "queen/client/errc.hpp"
#include "tls.hpp"

namespace queen::client {
namespace {

using detail::describe;
using detail::equals_ignoring_case;

// Per connection; small enough for thousands of connections (bench), big enough that a typical
// answer arrives in one or two reads.
constexpr std::size_t read_chunk_bytes = 16 * 1024;

}  // namespace

std::optional<std::string_view> HttpResponse::header(std::string_view name) const {
    for (const auto& h : headers) {
        if (equals_ignoring_case(h.name, name)) {
            return std::string_view{h.value};
        }
    }
    return std::nullopt;
}

queen::Result<Endpoint> parse_url(std::string_view url) {
    const auto bad = [&](const char* why) {
        return queen::Error{Errc::invalid_argument, "url '" + std::string{url} + "': " + why};
    };
    std::string_view rest = url;
    Endpoint endpoint;
    if (rest.starts_with("https://")) {
        rest.remove_prefix(8);
        endpoint.is_tls = true;
    } else if (rest.starts_with("http://")) {
        rest.remove_prefix(7);
    } else if (rest.find("://") != std::string_view::npos) {
        return bad("only http:// and https:// are supported");
    }
    if (!rest.empty() && rest.back() == '/') {
        rest.remove_suffix(1);
    }
    if (rest.find('/') != std::string_view::npos) {
        return bad("a path is not supported");
    }
    std::string_view port_text;
    if (rest.starts_with("[")) {
        const auto close = rest.find(']');
        if (close == std::string_view::npos) {
            return bad("unterminated [ipv6]");
        }
        endpoint.host = std::string{rest.substr(1, close - 1)};
        rest.remove_prefix(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') {
                return bad("junk after ]");
            }
            port_text = rest.substr(1);
        }
    } else {
        const auto colon = rest.rfind(':');
        endpoint.host = std::string{rest.substr(0, colon)};
        if (colon != std::string_view::npos) {
            port_text = rest.substr(colon + 1);
        }
    }
    if (endpoint.host.empty()) {
        return bad("empty host");
    }
    if (!port_text.empty()) {
        unsigned port = 0;
        const auto [end, ec] =
            std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
        if (ec != std::errc{} || end != port_text.data() + port_text.size() || port == 0 ||
            port > 65535) {
            return bad("bad port");
        }
        endpoint.port = static_cast<std::uint16_t>(port);
    }
    return endpoint;
}

Connection::Connection(Endpoint endpoint, ConnectionOptions options, const queen::Clock& clock)
    : Connection(endpoint, options, clock, detail::TlsContext::make_for(endpoint, options)) {}

Connection::Connection(Endpoint endpoint, ConnectionOptions options, const queen::Clock& clock,
                       std::shared_ptr<const detail::TlsContext> tls_context)
    : endpoint_(std::move(endpoint)),
      options_(std::move(options)),
      clock_(clock),
      tls_context_(std::move(tls_context)) {
    head_prefix_ = detail::make_head_prefix(endpoint_, options_.headers);
    read_buffer_.resize(read_chunk_bytes);
    if (tls_context_) {
        tls_ = std::make_unique<detail::TlsSession>();
    }
}

Connection::~Connection() {
    close();
}

void Connection::close() noexcept {
    const std::lock_guard lock{fd_mutex_};
    if (tls_) {
        tls_->close();  // close_notify, best effort, before the socket goes
    }
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

void Connection::abort() noexcept {
    const std::lock_guard lock{fd_mutex_};
    is_aborted_ = true;
    if (fd_ >= 0) {
        // Wakes a poll()/recv() blocked in another thread; the fd is closed by that thread or
        // the next close().
        ::shutdown(fd_, SHUT_RDWR);
    }
}

bool Connection::is_open() const noexcept {
    const std::lock_guard lock{fd_mutex_};
    return fd_ >= 0;
}

int Connection::wait_fd(short events, std::int64_t deadline_ns) const {
    for (;;) {
        const std::int64_t remaining_ns = deadline_ns - clock_.monotonic_ns();
        if (remaining_ns <= 0) {
            return 0;
        }
        pollfd descriptor{fd_, events, 0};
        // Round up so a sub-millisecond remainder still waits instead of spinning.
        const auto timeout_ms =
            static_cast<int>(std::min<std::int64_t>((remaining_ns + 999'999) / 1'000'000, 60'000));
        const int ready = ::poll(&descriptor, 1, timeout_ms);
        if (ready > 0) {
            return 1;
        }
        if (ready < 0 && errno != EINTR) {
            return -1;
        }
    }
}

queen::Status Connection::open(std::int64_t deadline_ns) {
    if (tls_context_ && !tls_context_->status()) {
        return tls_context_->status().error();  // a CA or certificate file that did not load
    }
    QUEEN_TRY(auto addresses, detail::resolve(endpoint_));
    std::string last_error = "no address";
    for (const detail::SocketAddress& address : addresses) {
        int fd = -1;
        bool is_in_progress = false;
        int error = detail::start_connect(address, fd, is_in_progress);
        if (error == 0 && is_in_progress) {
            {
                const std::lock_guard lock{fd_mutex_};
                fd_ = fd;
            }
            const int ready = wait_fd(POLLOUT, deadline_ns);
            {
                const std::lock_guard lock{fd_mutex_};
                fd_ = -1;
            }
            if (ready == 0) {
                ::close(fd);
                return queen::Error{Errc::timeout, "connect " + describe(endpoint_) + ": after " +
                                                       std::to_string(options_.connect_timeout_ms) +
                                                       " ms"};
            }
            error = ready > 0 ? detail::connect_error(fd) : errno;
            if (error != 0) {
                ::close(fd);
            }
        }
        if (error != 0) {
            last_error = std::strerror(error);
            continue;
        }
        detail::set_no_delay(fd);
        {
            const std::lock_guard lock{fd_mutex_};
            if (is_aborted_) {
                ::close(fd);
                return queen::Error{Errc::cancelled,
                                    "connect " + describe(endpoint_) + ": aborted"};
            }
            fd_ = fd;
            ++connects_total_;
        }
        return tls_ ? handshake(deadline_ns) : queen::Status{};
    }
    return queen::Error{Errc::connect_failed, "connect " + describe(endpoint_) + ": " + last_error};
}

queen::Status Connection::handshake(std::int64_t deadline_ns) {
    // `why` by value: close() clears the session's error text.
    const auto fail = [&](Errc code, std::string why) {
        close();
        return queen::Error{code, "tls handshake with " + describe(endpoint_) + ": " + why};
    };
    if (auto started = tls_->start(*tls_context_, fd_, endpoint_); !started) {
        close();
        return started;
    }
    for (;;) {
        short events = POLLIN;
        switch (const detail::TlsResult step = tls_->handshake(); step.step) {
            case detail::TlsStep::done: return {};
            case detail::TlsStep::want_read: break;
            case detail::TlsStep::want_write: events = POLLOUT; break;
            case detail::TlsStep::closed:
                return fail(is_aborted_ ? Errc::cancelled : Errc::connect_failed,
                            "closed by the server");
            case detail::TlsStep::io_failed:
                return fail(is_aborted_ ? Errc::cancelled : Errc::connect_failed, tls_->error());
            case detail::TlsStep::failed: return fail(Errc::tls_failed, tls_->error());
        }
        if (wait_fd(events, deadline_ns) == 0) {
            return fail(Errc::timeout,
                        "after " + std::to_string(options_.connect_timeout_ms) + " ms");
        }
    }
}

bool Connection::is_idle_connection_dead() noexcept {
    // An idle keep-alive connection has nothing to read; readable means EOF, a reset or junk.
    pollfd descriptor{fd_, POLLIN, 0};
    const int ready = ::poll(&descriptor, 1, 0);
    if (ready == 0 || !tls_ || ready < 0) {
        return ready != 0;
    }
    // Except TLS records without application data: TLS 1.3 session tickets (they may come after
    // the handshake) and key updates. Reading them consumes them; only an end of stream, an
    // error or answer bytes nobody asked for mean the connection is dead.
    const detail::TlsResult step = tls_->read(read_buffer_.data(), read_buffer_.size());
    return step.step != detail::TlsStep::want_read && step.step != detail::TlsStep::want_write;
}

queen::Result<HttpResponse> Connection::request(const HttpRequest& request) {
    HttpResponse response;
    QUEEN_TRY(request_into(request, response));
    return response;
}

queen::Status Connection::request_into(const HttpRequest& request, HttpResponse& response) {
    std::size_t answered = 0;
    return perform(std::span<const HttpRequest>(&request, 1), std::span<HttpResponse>(&response, 1),
                   answered);
}

queen::Status Connection::request_pipelined(std::span<const HttpRequest> requests,
                                            std::span<HttpResponse> responses,
                                            std::size_t& answered) {
    answered = 0;
    if (requests.empty() || responses.size() != requests.size()) {
        return queen::Error{Errc::invalid_argument,
                            "request_pipelined: " + std::to_string(requests.size()) +
                                " requests and " + std::to_string(responses.size()) + " responses"};
    }
    return perform(requests, responses, answered);
}

queen::Status Connection::perform(std::span<const HttpRequest> requests,
                                  std::span<HttpResponse> responses, std::size_t& answered) {
    // One request: its head here and its body sent from where it is. A group: all of it here.
    std::string head;
    head.reserve(64 + requests.front().target.size() + head_prefix_.size());
    const detail::Outgoing facts =
        detail::append_requests(head, requests, head_prefix_, options_.request_timeout_ms);
    const HttpRequest& first = requests.front();
    const std::string_view body =
        requests.size() == 1 && first.has_body ? first.body : std::string_view{};
    const std::int64_t start_ns = clock_.monotonic_ns();
    const std::int64_t deadline_ns = start_ns + facts.timeout_ms * 1'000'000;
    for (int attempt = 0;; ++attempt) {
        answered = 0;
        if (is_aborted_) {
            close();
            return queen::Error{Errc::cancelled,
                                std::string{requests.front().target} + ": aborted"};
        }
        bool is_reused = fd_ >= 0;
        const bool is_recent =
            options_.idle_check_after_ms > 0 &&
            clock_.monotonic_ns() - last_answer_ns_ < options_.idle_check_after_ms * 1'000'000;
        if (is_reused && !is_recent && is_idle_connection_dead()) {
            close();
            is_reused = false;
        }
        if (!is_reused) {
            const std::int64_t connect_deadline_ns = std::min(
                deadline_ns, clock_.monotonic_ns() + options_.connect_timeout_ms * 1'000'000);
            QUEEN_TRY(open(connect_deadline_ns));
        }
        bool is_nothing_received = true;
        auto exchanged =
            exchange(head, body, facts.what, deadline_ns, is_nothing_received, responses, answered);
        if (exchanged) {
            if (options_.idle_check_after_ms > 0) {
                last_answer_ns_ = clock_.monotonic_ns();
            }
            return exchanged;
        }
        close();
        // A reused connection the server closed between our check and our write looks exactly
        // like this; a fresh connection failing the same way is a real failure.
        const bool is_stale =
            is_reused && is_nothing_received && exchanged.error().is(Errc::connection_closed);
        if (!is_stale || !facts.is_idempotent || attempt > 0) {
            return exchanged;
        }
    }
}

queen::Status Connection::send_request(const std::string& head, std::string_view body,
                                       std::string_view what, std::int64_t deadline_ns) {
    const auto fail = [&](Errc code, const std::string& why) {
        return queen::Error{code, std::string{what} + ": " + why};
    };
    if (tls_) {
        std::string_view parts[2] = {head, body};
        if (!body.empty() && body.size() <= detail::tls_coalesce_bytes_max) {
            tls_send_buffer_.assign(head).append(body);
            parts[0] = tls_send_buffer_;
            parts[1] = {};
        }
        for (std::string_view part : parts) {
            while (!part.empty()) {
                short events = POLLOUT;
                switch (const detail::TlsResult step = tls_->write(part.data(), part.size());
                        step.step) {
                    case detail::TlsStep::done: part.remove_prefix(step.bytes); continue;
                    case detail::TlsStep::want_read: events = POLLIN; break;
                    case detail::TlsStep::want_write: break;
                    case detail::TlsStep::closed:
                        return fail(is_aborted_ ? Errc::cancelled : Errc::connection_closed,
                                    "send: closed by the server");
                    case detail::TlsStep::io_failed:
                        return fail(is_aborted_ ? Errc::cancelled : Errc::connection_closed,
                                    "send: " + tls_->error());
                    case detail::TlsStep::failed: return fail(Errc::tls_failed, tls_->error());
                }
                if (wait_fd(events, deadline_ns) == 0) {
                    return fail(Errc::timeout, "send timed out");
                }
            }
        }
        return {};
    }
    // Send head and body with one syscall when possible.
    iovec parts[2] = {{const_cast<char*>(head.data()), head.size()},
                      {const_cast<char*>(body.data()), body.size()}};
    std::size_t part = 0;
    while (part < 2) {
        if (parts[part].iov_len == 0) {
            ++part;
            continue;
        }
        msghdr message{};
        message.msg_iov = &parts[part];
        message.msg_iovlen = 2 - part;
        const ssize_t sent = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                const int ready = wait_fd(POLLOUT, deadline_ns);
                if (ready == 0) {
                    return fail(Errc::timeout, "send timed out");
                }
                continue;
            }
            if (is_aborted_) {
                return fail(Errc::cancelled, "aborted");
            }
            return fail(Errc::connection_closed, std::string{"send: "} + std::strerror(errno));
        }
        auto remaining = static_cast<std::size_t>(sent);
        while (part < 2 && remaining >= parts[part].iov_len) {
            remaining -= parts[part].iov_len;
            parts[part].iov_len = 0;
            ++part;
        }
        if (part < 2) {
            parts[part].iov_base = static_cast<char*>(parts[part].iov_base) + remaining;
            parts[part].iov_len -= remaining;
        }
    }
    return {};
}

queen::Result<std::size_t> Connection::receive(std::string_view what, std::int64_t deadline_ns,
                                               bool is_wait_first) {
    const auto fail = [&](Errc code, const std::string& why) {
        return queen::Error{code, std::string{what} + ": " + why};
    };
    short events = is_wait_first ? POLLIN : 0;
    for (;;) {
        if (events != 0) {
            if (wait_fd(events, deadline_ns) == 0) {
                return fail(Errc::timeout, "no complete response before the deadline");
            }
            events = 0;
        }
        if (tls_) {
            switch (const detail::TlsResult step =
                        tls_->read(read_buffer_.data(), read_buffer_.size());
                    step.step) {
                case detail::TlsStep::done: return step.bytes;
                case detail::TlsStep::closed: return std::size_t{0};
                case detail::TlsStep::want_read: events = POLLIN; continue;
                case detail::TlsStep::want_write: events = POLLOUT; continue;
                case detail::TlsStep::io_failed:
                    if (is_aborted_) {
                        return fail(Errc::cancelled, "aborted");
                    }
                    return fail(Errc::connection_closed, "recv: " + tls_->error());
                case detail::TlsStep::failed: return fail(Errc::tls_failed, tls_->error());
            }
        }
        const ssize_t received = ::recv(fd_, read_buffer_.data(), read_buffer_.size(), 0);
        if (received >= 0) {
            return static_cast<std::size_t>(received);
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            events = POLLIN;
            continue;
        }
        if (is_aborted_) {
            return fail(Errc::cancelled, "aborted");
        }
        return fail(Errc::connection_closed, std::string{"recv: "} + std::strerror(errno));
    }
}

queen::Status Connection::exchange(const std::string& head, std::string_view body,
                                   std::string_view what, std::int64_t deadline_ns,
                                   bool& is_nothing_received, std::span<HttpResponse> responses,
                                   std::size_t& answered) {
    QUEEN_TRY(send_request(head, body, what, deadline_ns));
    detail::ResponseParser parser;
    parser.start(responses.front(), options_.response_size_bytes_max);
    // The answer cannot be there yet right after sending: wait first instead of a recv() that
    // would only say EAGAIN (one syscall less per request).
    bool is_wait_first = true;
    for (;;) {
        QUEEN_TRY(const std::size_t received, receive(what, deadline_ns, is_wait_first));
        is_wait_first = false;
        if (is_aborted_) {
            return queen::Error{Errc::cancelled, std::string{what} + ": aborted"};
        }
        const auto step =
            detail::feed_answers(parser, responses, answered, options_.response_size_bytes_max,
                                 read_buffer_.data(), received);
        if (step == detail::ResponseParser::Step::complete) {
            break;
        }
        if (answered > 0) {
            is_nothing_received = false;
        }
        if (step != detail::ResponseParser::Step::more) {
            return queen::Error{detail::error_of(step),
                                std::string{what} + ": " +
                                    detail::describe(step, parser, is_nothing_received,
                                                     options_.response_size_bytes_max)};
        }
        is_nothing_received = false;
    }
    if (!parser.is_keep_alive()) {
        close();
    }
    return {};
}

ConnectionPool::ConnectionPool(Endpoint endpoint, ConnectionOptions options,
                               const queen::Clock& clock, std::size_t connections_max)
    : endpoint_(std::move(endpoint)),
      options_(std::move(options)),
      clock_(clock),
      tls_context_(detail::TlsContext::make_for(endpoint_, options_)),
      connections_max_(connections_max) {
    QUEEN_ASSERT(connections_max_ > 0, "a pool needs at least one connection");
}

ConnectionPool::~ConnectionPool() {
    const std::lock_guard lock{mutex_};
    QUEEN_ASSERT(idle_.size() == all_.size(), "pool destroyed while connections are borrowed");
}

ConnectionPool::Lease::Lease(Lease&& other) noexcept
    : pool_(other.pool_), connection_(other.connection_) {
    other.pool_ = nullptr;
    other.connection_ = nullptr;
}

ConnectionPool::Lease::~Lease() {
    if (pool_ != nullptr) {
        pool_->release(connection_);
    }
}

queen::Result<ConnectionPool::Lease> ConnectionPool::acquire(std::int64_t wait_ms) {
    std::unique_lock lock{mutex_};
    const auto is_available = [&] {
        return is_aborted_ || !idle_.empty() || all_.size() < connections_max_;
    };
    if (!released_.wait_for(lock, std::chrono::milliseconds{wait_ms}, is_available)) {
        return queen::Error{Errc::busy, "all " + std::to_string(connections_max_) +
                                            " connections stayed busy for " +
                                            std::to_string(wait_ms) + " ms"};
    }
    if (is_aborted_) {
        return queen::Error{Errc::cancelled, "connection pool aborted"};
    }
    if (!idle_.empty()) {
        // Most recently used first: its socket is the least likely to have been closed idle.
        Connection* connection = idle_.back();
        idle_.pop_back();
        return Lease{this, connection};
    }
    all_.push_back(make_connection());
    return Lease{this, all_.back().get()};
}

std::unique_ptr<Connection> ConnectionPool::make_connection() const {
    // The constructor that shares the context is private to Connection and this class.
    return std::unique_ptr<Connection>{new Connection{endpoint_, options_, clock_, tls_context_}};
}

void ConnectionPool::release(Connection* connection) {
    {
        const std::lock_guard lock{mutex_};
        idle_.push_back(connection);
        QUEEN_ASSERT(idle_.size() <= all_.size(), "a connection was released twice");
    }
    released_.notify_one();
}

void ConnectionPool::abort_all() noexcept {
    {
        const std::lock_guard lock{mutex_};
        is_aborted_ = true;
        for (const auto& connection : all_) {
            connection->abort();
        }
    }
    released_.notify_all();
}

std::size_t ConnectionPool::size() const {
    const std::lock_guard lock{mutex_};
    return all_.size();
}

std::uint64_t ConnectionPool::connects_total() const {
    const std::lock_guard lock{mutex_};
    std::uint64_t total = 0;
    for (const auto& connection : all_) {
        total += connection->connects_total();
    }
    return total;
}

}  // namespace queen::client
