// client/src/multiplexer.cpp — non-blocking keep-alive HTTP/1.1 slots on one epoll set (level
// triggered), sharing the request head and response parser with the blocking Connection, and
// TLS (tls.hpp) with an epoll interest that follows what the session wants.
#include "queen/client/multiplexer.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "http_wire.hpp"
#include "queen/client/errc.hpp"
#include "queen/core/assert.hpp"
#include "tls.hpp"

namespace queen::client {
namespace {

// Shared by all slots of a multiplexer (one thread reads at a time): a typical answer arrives in
// one read, and per-slot memory stays small with thousands of slots.
constexpr std::size_t read_chunk_bytes = 64 * 1024;
constexpr int events_per_wait_max = 128;

}  // namespace

struct HttpMultiplexer::Slot {
    enum class State { idle, connecting, handshaking, sending, receiving };

    explicit Slot(std::size_t position) : index(position) {}

    std::size_t index;
    int fd = -1;
    State state = State::idle;
    std::uint32_t watched = 0;    // events registered with epoll; 0: not registered
    std::string out;              // head of the request in flight (a group: every request whole)
    std::string body;             // its body, sent after the head (a group: empty)
    bool is_body_in_out = false;  // TLS: a small body copied behind the head, sent with it
    std::size_t out_sent = 0;     // bytes of head and body sent
    std::string what;             // "<method> <target>", the prefix of its errors
    std::vector<HttpResponse> responses = std::vector<HttpResponse>(1);  // one per request
    std::size_t expected = 1;  // answers the request or group in flight waits for
    std::size_t answered = 0;  // of them, arrived whole
    detail::ResponseParser parser;
    std::int64_t deadline_ns = 0;
    bool is_idempotent = true;
    bool is_reused = false;           // sent on a connection that carried a request before
    bool is_nothing_received = true;  // no answer byte yet
    bool is_resent = false;           // already sent once more after a stale connection
    detail::TlsSession tls;           // active while a TLS connection is open
};

HttpMultiplexer::HttpMultiplexer(Endpoint endpoint, ConnectionOptions options,
                                 const queen::Clock& clock, std::size_t slots)
    : endpoint_(std::move(endpoint)),
      options_(std::move(options)),
      clock_(clock),
      head_prefix_(detail::make_head_prefix(endpoint_, options_.headers)),
      tls_context_(detail::TlsContext::make_for(endpoint_, options_)),
      epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)),
      read_buffer_(read_chunk_bytes) {
    QUEEN_ASSERT(slots > 0, "a multiplexer needs at least one slot");
    slots_.reserve(slots);
    for (std::size_t i = 0; i < slots; ++i) {
        slots_.push_back(std::make_unique<Slot>(i));
    }
}

HttpMultiplexer::~HttpMultiplexer() {
    for (const auto& slot : slots_) {
        close_socket(*slot);
    }
    if (epoll_fd_ >= 0) {
        ::close(epoll_fd_);
    }
}

HttpResponse& HttpMultiplexer::response(std::size_t slot, std::size_t index) {
    QUEEN_ASSERT(slot < slots_.size(), "slot out of range");
    QUEEN_ASSERT(index < slots_[slot]->responses.size(), "answer index out of range");
    return slots_[slot]->responses[index];
}

std::size_t HttpMultiplexer::answered(std::size_t slot) const {
    QUEEN_ASSERT(slot < slots_.size(), "slot out of range");
    return slots_[slot]->answered;
}

bool HttpMultiplexer::is_busy(std::size_t slot) const {
    QUEEN_ASSERT(slot < slots_.size(), "slot out of range");
    return slots_[slot]->state != Slot::State::idle;
}

void HttpMultiplexer::close_socket(Slot& slot) noexcept {
    slot.tls.close();  // close_notify, best effort, before the socket goes
    if (slot.fd >= 0) {
        ::close(slot.fd);  // also leaves the epoll set: the slot owns the only descriptor
        slot.fd = -1;
    }
    slot.watched = 0;
}

void HttpMultiplexer::watch(Slot& slot, std::uint32_t events) {
    if (slot.watched == events) {
        return;
    }
    epoll_event event{};
    event.events = events;
    event.data.u64 = slot.index;
    const int operation = slot.watched == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    const int rc = ::epoll_ctl(epoll_fd_, operation, slot.fd, &event);
    QUEEN_ASSERT(rc == 0, "epoll_ctl on a socket the slot owns");
    slot.watched = events;
}

queen::Status HttpMultiplexer::open(Slot& slot) {
    if (epoll_fd_ < 0) {
        return queen::Error{Errc::connect_failed,
                            "connect " + detail::describe(endpoint_) + ": no epoll instance"};
    }
    if (tls_context_ && !tls_context_->status()) {
        return tls_context_->status().error();  // a CA or certificate file that did not load
    }
    QUEEN_TRY(auto addresses, detail::resolve(endpoint_));
    int last_error = 0;
    for (const detail::SocketAddress& address : addresses) {
        bool is_in_progress = false;
        last_error = detail::start_connect(address, slot.fd, is_in_progress);
        if (last_error != 0) {
            continue;
        }
        detail::set_no_delay(slot.fd);
        ++connects_total_;
        slot.state = is_in_progress ? Slot::State::connecting : Slot::State::sending;
        return {};
    }
    return queen::Error{Errc::connect_failed, "connect " + detail::describe(endpoint_) + ": " +
                                                  std::strerror(last_error)};
}

queen::Status HttpMultiplexer::begin(Slot& slot, std::vector<Completion>& completed) {
    slot.out_sent = 0;
    slot.is_nothing_received = true;
    slot.answered = 0;
    slot.parser.start(slot.responses[0], options_.response_size_bytes_max);
    slot.is_reused = slot.fd >= 0;
    if (slot.is_reused) {
        slot.state = Slot::State::sending;
        send_some(slot, completed);
        return {};
    }
    QUEEN_TRY(open(slot));
    if (slot.state == Slot::State::connecting) {
        watch(slot, EPOLLOUT);
        return {};
    }
    connected(slot, completed);
    return {};
}

void HttpMultiplexer::connected(Slot& slot, std::vector<Completion>& completed) {
    if (!tls_context_) {
        send_some(slot, completed);
        return;
    }
    if (auto started = slot.tls.start(*tls_context_, slot.fd, endpoint_); !started) {
        close_socket(slot);
        finish(slot,
               queen::Error{started.error().code, slot.what + ": " + started.error().message()},
               completed);
        return;
    }
    slot.state = Slot::State::handshaking;
    handshake(slot, completed);
}

void HttpMultiplexer::handshake(Slot& slot, std::vector<Completion>& completed) {
    const detail::TlsResult step = slot.tls.handshake();
    Errc code = Errc::connect_failed;
    switch (step.step) {
        case detail::TlsStep::done: send_some(slot, completed); return;
        case detail::TlsStep::want_read: watch(slot, EPOLLIN); return;
        case detail::TlsStep::want_write: watch(slot, EPOLLOUT); return;
        case detail::TlsStep::closed:
        case detail::TlsStep::io_failed: break;
        case detail::TlsStep::failed: code = Errc::tls_failed; break;
    }
    // A fresh connection (never a stale one to send again on): the error is final.
    const std::string why =
        "tls handshake with " + detail::describe(endpoint_) + ": " +
        (step.step == detail::TlsStep::closed ? std::string{"closed by the server"}
                                              : slot.tls.error());
    fail(slot, code, why.c_str(), completed);
}

queen::Status HttpMultiplexer::check_idle(std::size_t index) const {
    if (index >= slots_.size()) {
        return queen::Error{Errc::invalid_argument, "slot " + std::to_string(index) + " of " +
                                                        std::to_string(slots_.size())};
    }
    const Slot& slot = *slots_[index];
    if (slot.state != Slot::State::idle) {
        return queen::Error{Errc::invalid_argument,
                            "slot " + std::to_string(index) + " is busy with " + slot.what};
    }
    return {};
}

queen::Status HttpMultiplexer::start(std::size_t index, const HttpRequest& request) {
    QUEEN_TRY(check_idle(index));
    Slot& slot = *slots_[index];
    slot.body.assign(request.has_body ? request.body : std::string_view{});
    return launch(slot, std::span<const HttpRequest>(&request, 1));
}

queen::Status HttpMultiplexer::start_pipelined(std::size_t index,
                                               std::span<const HttpRequest> requests) {
    QUEEN_TRY(check_idle(index));
    if (requests.empty()) {
        return queen::Error{Errc::invalid_argument, "start_pipelined: no request"};
    }
    Slot& slot = *slots_[index];
    if (requests.size() == 1) {
        return start(index, requests.front());
    }
    slot.body.clear();  // launch() writes every request whole into `out`
    return launch(slot, requests);
}

queen::Status HttpMultiplexer::start_with_body(std::size_t index, const HttpRequest& request,
                                               std::string& body) {
    QUEEN_TRY(check_idle(index));
    Slot& slot = *slots_[index];
    slot.body.swap(body);
    // The view is taken after the swap: a short body lives inside the string object itself.
    HttpRequest with_body = request;
    with_body.body = slot.body;
    with_body.has_body = true;
    auto launched = launch(slot, std::span<const HttpRequest>(&with_body, 1));
    if (!launched) {
        slot.body.swap(body);  // nothing started: the caller keeps its body
    }
    return launched;
}

queen::Status HttpMultiplexer::launch(Slot& slot, std::span<const HttpRequest> requests) {
    // One request: its head here, its body already in slot.body. A group: all of it here.
    slot.out.clear();
    detail::Outgoing facts =
        detail::append_requests(slot.out, requests, head_prefix_, options_.request_timeout_ms);
    slot.what = std::move(facts.what);
    slot.is_idempotent = facts.is_idempotent;
    const std::int64_t timeout_ms = facts.timeout_ms;
    slot.expected = requests.size();
    if (slot.responses.size() < slot.expected) {
        slot.responses.resize(slot.expected);
    }
    slot.deadline_ns = clock_.monotonic_ns() + timeout_ms * 1'000'000;
    slot.is_resent = false;
    // TLS: a small body leaves in the head's record; `body` stays (start_with_body's promise).
    slot.is_body_in_out =
        tls_context_ && !slot.body.empty() && slot.body.size() <= detail::tls_coalesce_bytes_max;
    if (slot.is_body_in_out) {
        slot.out.append(slot.body);
    }
    ++in_flight_;
    auto begun = begin(slot, pending_);
    if (!begun) {
        slot.state = Slot::State::idle;
        --in_flight_;
    }
    return begun;
}

void HttpMultiplexer::send_some(Slot& slot, std::vector<Completion>& completed) {
    if (slot.tls.is_active()) {
        send_some_tls(slot, completed);
        return;
    }
    const std::size_t total = slot.out.size() + slot.body.size();
    while (slot.out_sent < total) {
        // Head and body in one call, from wherever the last partial write stopped.
        iovec parts[2];
        std::size_t part_count = 0;
        if (slot.out_sent < slot.out.size()) {
            parts[part_count++] = {slot.out.data() + slot.out_sent,
                                   slot.out.size() - slot.out_sent};
            if (!slot.body.empty()) {
                parts[part_count++] = {slot.body.data(), slot.body.size()};
            }
        } else {
            const std::size_t body_sent = slot.out_sent - slot.out.size();
            parts[part_count++] = {slot.body.data() + body_sent, slot.body.size() - body_sent};
        }
        msghdr message{};
        message.msg_iov = parts;
        message.msg_iovlen = part_count;
        const ssize_t sent = ::sendmsg(slot.fd, &message, MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                slot.state = Slot::State::sending;
                watch(slot, EPOLLOUT);
                return;
            }
            fail(slot, Errc::connection_closed, std::strerror(errno), completed);
            return;
        }
        slot.out_sent += static_cast<std::size_t>(sent);
    }
    slot.state = Slot::State::receiving;
    watch(slot, EPOLLIN);
}

void HttpMultiplexer::send_some_tls(Slot& slot, std::vector<Completion>& completed) {
    const std::string_view body =
        slot.is_body_in_out ? std::string_view{} : std::string_view{slot.body};
    const std::size_t total = slot.out.size() + body.size();
    slot.state = Slot::State::sending;
    while (slot.out_sent < total) {
        // A step that wants the socket is repeated with the same bytes once it is ready.
        const bool is_head = slot.out_sent < slot.out.size();
        const std::string_view part = is_head ? std::string_view{slot.out}.substr(slot.out_sent)
                                              : body.substr(slot.out_sent - slot.out.size());
        const detail::TlsResult step = slot.tls.write(part.data(), part.size());
        switch (step.step) {
            case detail::TlsStep::done: slot.out_sent += step.bytes; continue;
            case detail::TlsStep::want_read: watch(slot, EPOLLIN); return;
            case detail::TlsStep::want_write: watch(slot, EPOLLOUT); return;
            case detail::TlsStep::closed:
                fail(slot, Errc::connection_closed, "closed by the server", completed);
                return;
            case detail::TlsStep::io_failed:
            case detail::TlsStep::failed:
                fail_tls(slot, step.step == detail::TlsStep::failed, completed);
                return;
        }
    }
    slot.state = Slot::State::receiving;
    watch(slot, EPOLLIN);
}

void HttpMultiplexer::fail_tls(Slot& slot, bool is_tls_failure,
                               std::vector<Completion>& completed) {
    const std::string why = slot.tls.error();  // fail() closes the session
    fail(slot, is_tls_failure ? Errc::tls_failed : Errc::connection_closed, why.c_str(), completed);
}

void HttpMultiplexer::receive_tls(Slot& slot, std::vector<Completion>& completed) {
    for (;;) {
        const detail::TlsResult step = slot.tls.read(read_buffer_.data(), read_buffer_.size());
        switch (step.step) {
            case detail::TlsStep::done:
                if (parse(slot, read_buffer_.data(), step.bytes, completed)) {
                    return;
                }
                // One record per read: read on while OpenSSL holds more, else level-triggered
                // epoll reports the records still in the socket.
                if (!slot.tls.has_pending()) {
                    watch(slot, EPOLLIN);
                    return;
                }
                continue;
            case detail::TlsStep::closed: parse(slot, read_buffer_.data(), 0, completed); return;
            case detail::TlsStep::want_read: watch(slot, EPOLLIN); return;
            case detail::TlsStep::want_write: watch(slot, EPOLLOUT); return;
            case detail::TlsStep::io_failed:
            case detail::TlsStep::failed:
                fail_tls(slot, step.step == detail::TlsStep::failed, completed);
                return;
        }
    }
}

void HttpMultiplexer::receive(Slot& slot, std::vector<Completion>& completed) {
    if (slot.tls.is_active()) {
        receive_tls(slot, completed);
        return;
    }
    for (;;) {
        const ssize_t received = ::recv(slot.fd, read_buffer_.data(), read_buffer_.size(), 0);
        if (received < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                fail(slot, Errc::connection_closed, std::strerror(errno), completed);
            }
            return;
        }
        const auto length = static_cast<std::size_t>(received);
        if (parse(slot, read_buffer_.data(), length, completed)) {
            return;
        }
        if (length < read_buffer_.size()) {
            return;  // level-triggered: epoll reports the rest when it arrives
        }
    }
}

bool HttpMultiplexer::parse(Slot& slot, const char* data, std::size_t length,
                            std::vector<Completion>& completed) {
    using Step = detail::ResponseParser::Step;
    const Step step = detail::feed_answers(
        slot.parser, std::span<HttpResponse>(slot.responses.data(), slot.expected), slot.answered,
        options_.response_size_bytes_max, data, length);
    if (step == Step::more) {
        slot.is_nothing_received = false;  // `more` only ever follows received bytes
        return false;
    }
    if (step == Step::complete) {
        if (!slot.parser.is_keep_alive()) {
            close_socket(slot);
        } else {
            watch(slot, EPOLLIN);  // idle: readable means closed (TLS may have left EPOLLOUT)
        }
        finish(slot, {}, completed);
        return true;
    }
    if (slot.answered > 0) {
        slot.is_nothing_received = false;
    }
    const std::string why = detail::describe(step, slot.parser, slot.is_nothing_received,
                                             options_.response_size_bytes_max);
    fail(slot, detail::error_of(step), why.c_str(), completed);
    return true;
}

void HttpMultiplexer::fail(Slot& slot, std::error_code code, const char* why,
                           std::vector<Completion>& completed) {
    close_socket(slot);
    // A reused connection the server closed while idle looks exactly like this; a fresh
    // connection failing the same way is a real failure.
    const bool is_stale = slot.is_reused && slot.is_nothing_received && slot.is_idempotent &&
                          !slot.is_resent && code == make_error_code(Errc::connection_closed);
    if (is_stale) {
        slot.is_resent = true;
        auto begun = begin(slot, completed);
        if (!begun) {
            finish(slot, std::move(begun).error(), completed);
        }
        return;
    }
    finish(slot, queen::Error{code, slot.what + ": " + why}, completed);
}

void HttpMultiplexer::finish(Slot& slot, queen::Status status, std::vector<Completion>& completed) {
    slot.state = Slot::State::idle;
    --in_flight_;
    completed.push_back(Completion{slot.index, std::move(status)});
}

void HttpMultiplexer::on_event(Slot& slot, std::uint32_t events,
                               std::vector<Completion>& completed) {
    switch (slot.state) {
        case Slot::State::idle:
            // An idle keep-alive connection has nothing to read: readable means the server
            // closed it (or sent junk). Drop it; the next request connects again. Except TLS
            // records without application data (TLS 1.3 session tickets, key updates): reading
            // consumes them and wants more.
            if (slot.tls.is_active()) {
                const detail::TlsResult step =
                    slot.tls.read(read_buffer_.data(), read_buffer_.size());
                if (step.step == detail::TlsStep::want_read ||
                    step.step == detail::TlsStep::want_write) {
                    return;
                }
            }
            close_socket(slot);
            return;
        case Slot::State::connecting: {
            const int error = detail::connect_error(slot.fd);
            if (error != 0) {
                close_socket(slot);
                finish(slot,
                       queen::Error{Errc::connect_failed, slot.what + ": connect " +
                                                              detail::describe(endpoint_) + ": " +
                                                              std::strerror(error)},
                       completed);
                return;
            }
            connected(slot, completed);
            return;
        }
        case Slot::State::handshaking: handshake(slot, completed); return;
        case Slot::State::sending: send_some(slot, completed); return;
        case Slot::State::receiving:
            // TLS: the session may have asked to wait for writable.
            if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0 || slot.tls.is_active()) {
                receive(slot, completed);
            }
            return;
    }
}

queen::Status HttpMultiplexer::wait(std::int64_t timeout_ns, std::vector<Completion>& completed) {
    if (timeout_ns < 0) {
        return queen::Error{Errc::invalid_argument, "wait: negative timeout"};
    }
    if (!pending_.empty()) {
        for (Completion& completion : pending_) {
            completed.push_back(std::move(completion));
        }
        pending_.clear();
        timeout_ns = 0;
    }
    std::int64_t now_ns = clock_.monotonic_ns();
    std::int64_t deadline_ns_min = INT64_MAX;
    if (in_flight_ > 0) {
        for (const auto& slot : slots_) {
            if (slot->state != Slot::State::idle) {
                deadline_ns_min = std::min(deadline_ns_min, slot->deadline_ns);
            }
        }
        timeout_ns = std::clamp<std::int64_t>(deadline_ns_min - now_ns, 0, timeout_ns);
    }
    epoll_event events[events_per_wait_max];
    const timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000),
                           static_cast<long>(timeout_ns % 1'000'000'000)};
    const int ready = ::epoll_pwait2(epoll_fd_, events, events_per_wait_max, &timeout, nullptr);
    for (int i = 0; i < ready; ++i) {
        on_event(*slots_[events[i].data.u64], events[i].events, completed);
    }
    if (in_flight_ > 0) {
        now_ns = clock_.monotonic_ns();
        if (now_ns >= deadline_ns_min) {
            for (const auto& slot : slots_) {
                if (slot->state != Slot::State::idle && now_ns >= slot->deadline_ns) {
                    slot->is_resent = true;  // a timeout is final
                    fail(*slot, Errc::timeout, "no complete response before the deadline",
                         completed);
                }
            }
        }
    }
    return {};
}

void HttpMultiplexer::close_all(std::vector<Completion>& completed) {
    for (Completion& completion : pending_) {
        completed.push_back(std::move(completion));
    }
    pending_.clear();
    for (const auto& slot : slots_) {
        close_socket(*slot);
        if (slot->state != Slot::State::idle) {
            finish(*slot, queen::Error{Errc::cancelled, slot->what + ": closed"}, completed);
        }
    }
}

}  // namespace queen::client
