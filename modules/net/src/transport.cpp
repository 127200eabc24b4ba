// modules/net/src/transport.cpp — the peer transport on standalone asio: one thread, one
// listener, one connection per node pair (the lower id dials), the handshake, batched writes.
#include "queen/net/transport.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <asio/connect.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "queen/core/assert.hpp"
#include "queen/core/thread_name.hpp"
#include "queen/net/errc.hpp"
#include "queen/net/frame.hpp"

namespace queen::net {

namespace {

using asio::ip::tcp;
using Milliseconds = std::chrono::milliseconds;

/// Handshake nonces come from OpenSSL's CSPRNG on purpose, not from an injected queen::Rng: a
/// predictable nonce would let a recorded handshake be replayed.
Nonce fresh_nonce() {
    Nonce nonce{};
    QUEEN_ASSERT(RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) == 1,
                 "net: RAND_bytes failed");
    return nonce;
}

}  // namespace

Status TransportOptions::validate() const {
    auto bad = [](const std::string& what) {
        return Error{queen::Errc::invalid_argument, "TransportOptions::" + what};
    };
    asio::error_code ec;
    (void)asio::ip::make_address(address, ec);
    if (ec) {
        return bad("address: '" + address + "' is not a numeric IP address");
    }
    if (frame_body_bytes_max < 64 || frame_body_bytes_max > (1u << 30)) {
        return bad("frame_body_bytes_max must be 64 bytes to 1 GiB");
    }
    if (queue_bytes_max < frame_body_bytes_max) {
        return bad("queue_bytes_max must hold at least one frame of frame_body_bytes_max");
    }
    if (handshake_timeout_ms <= 0 || reconnect_backoff_min_ms <= 0 ||
        reconnect_backoff_max_ms < reconnect_backoff_min_ms) {
        return bad(
            "handshake_timeout_ms and reconnect_backoff_min_ms must be > 0, and "
            "reconnect_backoff_max_ms >= reconnect_backoff_min_ms");
    }
    return {};
}

class Connection;

struct Transport::Impl {
    Impl(PeerIdentity identity_, TransportOptions options_, OnMessage on_message_,
         OnEvent on_event_, Logger& logger_)
        : identity(std::move(identity_)),
          options(std::move(options_)),
          on_message(std::move(on_message_)),
          on_event(std::move(on_event_)),
          logger(logger_),
          acceptor(io) {}

    /// A known peer. `pending` (frames waiting for its connection) is shared with send() and
    /// guarded by `mutex`; everything else belongs to the io thread.
    struct Peer {
        std::string host;
        std::uint16_t port = 0;
        Bytes pending;
        std::size_t pending_frames = 0;
        std::shared_ptr<Connection> connection;  // authenticated, or the dialer's attempt
        std::unique_ptr<asio::steady_timer> redial;
        std::int64_t backoff_ms = 0;
    };

    PeerIdentity identity;
    TransportOptions options;
    OnMessage on_message;
    OnEvent on_event;
    Logger& logger;
    asio::io_context io;
    tcp::acceptor acceptor;
    std::thread thread;
    std::uint16_t port = 0;

    std::mutex mutex;
    std::map<NodeId, Peer> peers;  // guarded by mutex for pending; io thread otherwise
    bool is_stopped = false;       // guarded by mutex

    std::atomic<std::uint64_t> connections_open{0};
    std::atomic<std::uint64_t> handshakes_ok_total{0};
    std::atomic<std::uint64_t> handshakes_refused_total{0};
    std::atomic<std::uint64_t> frames_sent_total{0};
    std::atomic<std::uint64_t> frames_received_total{0};
    std::atomic<std::uint64_t> frames_dropped_total{0};
    std::atomic<std::uint64_t> bytes_sent_total{0};
    std::atomic<std::uint64_t> bytes_received_total{0};
    std::atomic<std::uint64_t> writes_total{0};

    void accept_next();
    void dial(NodeId peer);
    void schedule_redial(NodeId peer);
    void event(PeerEvent::Kind kind, NodeId peer, std::string reason) {
        if (on_event) {
            on_event(PeerEvent{kind, peer, std::move(reason)});
        }
    }
    /// io thread: the connection finished its handshake with `peer`.
    void opened(NodeId peer, const std::shared_ptr<Connection>& connection);
    /// io thread: a connection closed; `was_open`: it had finished its handshake.
    void closed(Connection& connection, bool was_open, const std::string& reason);
    /// Moves what waits for `peer` into `out` (io thread, takes the mutex).
    std::size_t take_pending(NodeId peer, Bytes& out);
};

/// One TCP connection, dialed or accepted. Lives on the io thread only.
class Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(Transport::Impl& impl, tcp::socket socket, bool is_dialer, NodeId peer)
        : impl_(impl),
          socket_(std::move(socket)),
          timer_(impl.io),
          reader_(impl.options.frame_body_bytes_max),
          is_dialer_(is_dialer),
          peer_(peer) {}

    [[nodiscard]] NodeId peer() const noexcept { return peer_; }
    [[nodiscard]] bool is_dialer() const noexcept { return is_dialer_; }
    [[nodiscard]] bool is_open() const noexcept { return state_ == State::open; }

    void start() {
        asio::error_code ignored;
        socket_.set_option(tcp::no_delay(true), ignored);
        timer_.expires_after(Milliseconds(impl_.options.handshake_timeout_ms));
        timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
            if (!ec && !self->is_open()) {
                self->refuse("the handshake took longer than " +
                                 std::to_string(self->impl_.options.handshake_timeout_ms) + " ms",
                             false);
            }
        });
        if (is_dialer_) {
            hello_ = impl_.identity.hello(fresh_nonce());
            append_frame(control_, FrameType::hello, encode(hello_));
            state_ = State::awaiting_challenge;
            flush();
        } else {
            state_ = State::awaiting_hello;
        }
        read();
    }

    /// Sends what waits (handshake frames, then the peer's queue once open).
    void flush() {
        if (is_writing_ || state_ == State::closed) {
            return;
        }
        writing_.clear();
        writing_.swap(control_);
        std::size_t frames = 0;
        if (state_ == State::open) {
            frames = impl_.take_pending(peer_, writing_);
        }
        if (writing_.empty()) {
            return;
        }
        is_writing_ = true;
        impl_.writes_total.fetch_add(1, std::memory_order_relaxed);
        asio::async_write(
            socket_, asio::buffer(writing_),
            [self = shared_from_this(), frames](const asio::error_code& ec, std::size_t bytes) {
                self->is_writing_ = false;
                if (ec) {
                    self->close("write: " + ec.message());
                    return;
                }
                self->impl_.bytes_sent_total.fetch_add(bytes, std::memory_order_relaxed);
                self->impl_.frames_sent_total.fetch_add(frames, std::memory_order_relaxed);
                if (self->close_after_write_ && self->control_.empty()) {
                    self->close(*self->close_after_write_);
                    return;
                }
                self->flush();
            });
    }

    void close(const std::string& reason) {
        if (state_ == State::closed) {
            return;
        }
        const bool was_open = state_ == State::open;
        state_ = State::closed;
        asio::error_code ignored;
        timer_.cancel();
        socket_.shutdown(tcp::socket::shutdown_both, ignored);
        socket_.close(ignored);
        impl_.closed(*this, was_open, reason);
    }

private:
    enum class State : std::uint8_t {
        awaiting_hello,
        awaiting_challenge,
        awaiting_proof,
        open,
        closed
    };

    void read() {
        socket_.async_read_some(
            asio::buffer(buffer_),
            [self = shared_from_this()](const asio::error_code& ec, std::size_t bytes) {
                if (self->state_ == State::closed) {
                    return;
                }
                if (ec) {
                    self->close(ec == asio::error::eof ? "closed by the peer"
                                                       : "read: " + ec.message());
                    return;
                }
                self->impl_.bytes_received_total.fetch_add(bytes, std::memory_order_relaxed);
                self->reader_.append(ByteSpan(self->buffer_.data(), bytes));
                if (self->drain()) {
                    self->read();
                }
            });
    }

    /// Handles every whole frame buffered; false once the connection is closed or closing.
    bool drain() {
        for (;;) {
            auto next = reader_.next();
            if (!next) {
                refuse(next.error().context, true);
                return false;
            }
            if (!next->has_value()) {
                return true;
            }
            const Frame frame = **next;
            if (!handle(frame)) {
                return false;
            }
        }
    }

    bool handle(const Frame& frame) {
        if (frame.type == static_cast<std::uint8_t>(FrameType::refused)) {
            const std::string reason(reinterpret_cast<const char*>(frame.payload.data()),
                                     frame.payload.size());
            refuse("refused by the peer: " + reason, false);
            return false;
        }
        switch (state_) {
            case State::open:
                if (frame.type < frame_type_application) {
                    refuse("a handshake frame after the handshake", true);
                    return false;
                }
                impl_.frames_received_total.fetch_add(1, std::memory_order_relaxed);
                impl_.on_message(peer_, frame.type, frame.payload);
                return state_ == State::open;
            case State::awaiting_hello: {
                auto hello = expect(frame, FrameType::hello, decode_hello);
                if (!hello) {
                    return false;
                }
                hello_ = *hello;
                peer_ = hello_.node;
                auto challenge = impl_.identity.challenge(hello_, fresh_nonce());
                if (!challenge) {
                    refuse(challenge.error().context, true);
                    return false;
                }
                challenge_ = *challenge;
                append_frame(control_, FrameType::challenge, encode(challenge_));
                state_ = State::awaiting_proof;
                flush();
                return true;
            }
            case State::awaiting_challenge: {
                auto challenge = expect(frame, FrameType::challenge, decode_challenge);
                if (!challenge) {
                    return false;
                }
                if (challenge->node != peer_) {
                    refuse("dialed node " + std::to_string(peer_.value()) + " but node " +
                               std::to_string(challenge->node.value()) + " answered",
                           true);
                    return false;
                }
                auto proof = impl_.identity.prove(hello_, *challenge);
                if (!proof) {
                    refuse(proof.error().context, true);
                    return false;
                }
                append_frame(control_, FrameType::proof, encode(*proof));
                open();
                return true;
            }
            case State::awaiting_proof: {
                auto proof = expect(frame, FrameType::proof, decode_proof);
                if (!proof) {
                    return false;
                }
                if (auto checked = impl_.identity.check(hello_, challenge_, *proof); !checked) {
                    refuse(checked.error().context, true);
                    return false;
                }
                open();
                return true;
            }
            case State::closed: return false;
        }
        return false;
    }

    template <class Decode>
    auto expect(const Frame& frame, FrameType type, Decode decode)
        -> std::optional<typename decltype(decode(frame.payload))::value_type> {
        if (frame.type != static_cast<std::uint8_t>(type)) {
            refuse("expected handshake frame " + std::to_string(static_cast<int>(type)) +
                       ", got type " + std::to_string(frame.type),
                   true);
            return std::nullopt;
        }
        auto decoded = decode(frame.payload);
        if (!decoded) {
            refuse(decoded.error().context, true);
            return std::nullopt;
        }
        return std::move(*decoded);
    }

    void open() {
        state_ = State::open;
        timer_.cancel();
        impl_.handshakes_ok_total.fetch_add(1, std::memory_order_relaxed);
        impl_.opened(peer_, shared_from_this());
        flush();
    }

    /// A failed handshake or a broken stream: tell the peer why (when `tell` and the handshake
    /// is not done: it closes once that frame is written), then close.
    void refuse(const std::string& reason, bool tell) {
        if (state_ != State::open) {
            report_refused(reason);
        }
        if (tell && state_ != State::open) {
            append_frame(control_, FrameType::refused, as_bytes(reason));
            close_after_write_ = reason;
            flush();
            return;
        }
        close(reason);
    }

    void report_refused(const std::string& reason) {
        if (is_refusal_reported_) {
            return;
        }
        is_refusal_reported_ = true;
        impl_.handshakes_refused_total.fetch_add(1, std::memory_order_relaxed);
        QUEEN_LOG(impl_.logger, Level::warn, "net.handshake_refused",
                  "peer=" << peer_.value() << " reason=\"" << reason << "\"");
        impl_.event(PeerEvent::Kind::refused, peer_, reason);
    }

    Transport::Impl& impl_;
    tcp::socket socket_;
    asio::steady_timer timer_;
    FrameReader reader_;
    std::array<Byte, 64 * 1024> buffer_{};
    bool is_dialer_;
    NodeId peer_;
    State state_ = State::awaiting_hello;
    Hello hello_;
    Challenge challenge_;
    Bytes control_;  // handshake frames not yet written
    Bytes writing_;  // the bytes of the write in flight
    bool is_writing_ = false;
    bool is_refusal_reported_ = false;
    std::optional<std::string> close_after_write_;  // refused: close once control_ is written
};

void Transport::Impl::accept_next() {
    acceptor.async_accept([this](const asio::error_code& ec, tcp::socket socket) {
        if (ec) {
            if (ec != asio::error::operation_aborted) {
                QUEEN_LOG(logger, Level::warn, "net.accept_failed",
                          "error=\"" << ec.message() << "\"");
                accept_next();
            }
            return;
        }
        std::make_shared<Connection>(*this, std::move(socket), false, NodeId{0})->start();
        accept_next();
    });
}

void Transport::Impl::dial(NodeId peer) {
    std::string host;
    std::uint16_t peer_port = 0;
    {
        std::lock_guard lock(mutex);
        const auto found = peers.find(peer);
        if (is_stopped || found == peers.end() || found->second.connection != nullptr) {
            return;
        }
        host = found->second.host;
        peer_port = found->second.port;
    }
    asio::error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    if (ec) {
        event(PeerEvent::Kind::refused, peer, "peer address '" + host + "' is not a numeric IP");
        return;
    }
    auto socket = std::make_shared<tcp::socket>(io);
    // Leave from this node's own listen address (when it names one): with several nodes on one
    // host (127.0.0.1-3) the peer then sees the right source, and per-pair firewall rules (the
    // partition tests) cut the right pair.
    const auto local = asio::ip::make_address(options.address, ec);
    if (!ec && !local.is_unspecified() && local.is_v4() == address.is_v4()) {
        socket->open(address.is_v4() ? tcp::v4() : tcp::v6(), ec);
        if (!ec) {
            socket->bind(tcp::endpoint(local, 0), ec);
        }
        if (ec) {
            socket = std::make_shared<tcp::socket>(io);  // connect from wherever the OS picks
        }
    }
    socket->async_connect(
        tcp::endpoint(address, peer_port), [this, peer, socket](const asio::error_code& error) {
            if (error) {
                schedule_redial(peer);
                return;
            }
            auto connection = std::make_shared<Connection>(*this, std::move(*socket), true, peer);
            {
                std::lock_guard lock(mutex);
                const auto found = peers.find(peer);
                if (is_stopped || found == peers.end()) {
                    return;
                }
                found->second.connection = connection;
            }
            connection->start();
        });
}

void Transport::Impl::schedule_redial(NodeId peer) {
    std::lock_guard lock(mutex);
    const auto found = peers.find(peer);
    if (is_stopped || found == peers.end()) {
        return;
    }
    Peer& p = found->second;
    p.backoff_ms = p.backoff_ms == 0 ? options.reconnect_backoff_min_ms
                                     : std::min(p.backoff_ms * 2, options.reconnect_backoff_max_ms);
    if (p.redial == nullptr) {
        p.redial = std::make_unique<asio::steady_timer>(io);
    }
    p.redial->expires_after(Milliseconds(p.backoff_ms));
    p.redial->async_wait([this, peer](const asio::error_code& ec) {
        if (!ec) {
            dial(peer);
        }
    });
}

void Transport::Impl::opened(NodeId peer, const std::shared_ptr<Connection>& connection) {
    std::shared_ptr<Connection> replaced;
    {
        std::lock_guard lock(mutex);
        Peer& p = peers[peer];  // an accepted peer may not have been added
        if (p.connection != connection) {
            replaced = std::move(p.connection);
            p.connection = connection;
        }
        p.backoff_ms = 0;
    }
    connections_open.fetch_add(1, std::memory_order_relaxed);
    QUEEN_LOG(logger, Level::info, "net.peer_connected",
              "peer=" << peer.value() << " dialed=" << connection->is_dialer());
    if (replaced != nullptr) {
        replaced->close("replaced by a newer connection");
    }
    event(PeerEvent::Kind::connected, peer, {});
}

void Transport::Impl::closed(Connection& connection, bool was_open, const std::string& reason) {
    bool is_current = false;
    bool should_redial = false;
    {
        std::lock_guard lock(mutex);
        const auto found = peers.find(connection.peer());
        if (found != peers.end() && found->second.connection.get() == &connection) {
            found->second.connection.reset();
            is_current = true;
            should_redial = !is_stopped && connection.is_dialer();
        }
    }
    if (was_open) {
        connections_open.fetch_sub(1, std::memory_order_relaxed);
        QUEEN_LOG(logger, Level::info, "net.peer_disconnected",
                  "peer=" << connection.peer().value() << " reason=\"" << reason << "\"");
        // A connection a newer one replaced is no news: the peer is still connected.
        if (is_current) {
            event(PeerEvent::Kind::disconnected, connection.peer(), reason);
        }
    }
    if (is_current && should_redial) {
        schedule_redial(connection.peer());
    }
}

std::size_t Transport::Impl::take_pending(NodeId peer, Bytes& out) {
    std::lock_guard lock(mutex);
    const auto found = peers.find(peer);
    if (found == peers.end() || found->second.pending.empty()) {
        return 0;
    }
    Peer& p = found->second;
    if (out.empty()) {
        out.swap(p.pending);
    } else {
        out.insert(out.end(), p.pending.begin(), p.pending.end());
        p.pending.clear();
    }
    const std::size_t frames = p.pending_frames;
    p.pending_frames = 0;
    return frames;
}

Result<std::unique_ptr<Transport>> Transport::start(PeerIdentity identity, TransportOptions options,
                                                    OnMessage on_message, OnEvent on_event,
                                                    Logger& logger) {
    QUEEN_TRY(options.validate());
    QUEEN_ASSERT(on_message != nullptr, "net::Transport needs an OnMessage callback");
    auto impl = std::make_unique<Impl>(std::move(identity), std::move(options),
                                       std::move(on_message), std::move(on_event), logger);
    asio::error_code ec;
    const tcp::endpoint endpoint(asio::ip::make_address(impl->options.address), impl->options.port);
    impl->acceptor.open(endpoint.protocol(), ec);
    if (!ec) {
        impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    }
    if (!ec) {
        impl->acceptor.bind(endpoint, ec);
    }
    if (!ec) {
        impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
    }
    if (ec) {
        return Error{queen::Errc::io, "peer listener on " + impl->options.address + ":" +
                                          std::to_string(impl->options.port) + ": " + ec.message()};
    }
    impl->port = impl->acceptor.local_endpoint().port();
    impl->accept_next();
    Impl* raw = impl.get();
    impl->thread = std::thread([raw] {
        set_thread_name("queen-peers");
        auto guard = asio::make_work_guard(raw->io);
        raw->io.run();
    });
    QUEEN_LOG(logger, Level::info, "net.listening",
              "address=" << impl->options.address << " port=" << impl->port
                         << " node=" << impl->identity.node().value());
    return std::unique_ptr<Transport>(new Transport(std::move(impl)));
}

Transport::Transport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Transport::~Transport() {
    stop();
}

std::uint16_t Transport::port() const noexcept {
    return impl_->port;
}

void Transport::add_peer(NodeId peer, std::string host, std::uint16_t port) {
    if (peer == impl_->identity.node()) {
        return;
    }
    {
        std::lock_guard lock(impl_->mutex);
        if (impl_->is_stopped) {
            return;
        }
        Impl::Peer& p = impl_->peers[peer];
        p.host = std::move(host);
        p.port = port;
    }
    if (impl_->identity.node() < peer) {
        asio::post(impl_->io, [impl = impl_.get(), peer] { impl->dial(peer); });
    }
}

void Transport::remove_peer(NodeId peer) {
    asio::post(impl_->io, [impl = impl_.get(), peer] {
        std::shared_ptr<Connection> connection;
        {
            std::lock_guard lock(impl->mutex);
            const auto found = impl->peers.find(peer);
            if (found == impl->peers.end()) {
                return;
            }
            connection = std::move(found->second.connection);
            impl->peers.erase(found);
        }
        if (connection != nullptr) {
            connection->close("peer removed");
        }
    });
}

bool Transport::send(NodeId peer, std::uint8_t type, ByteSpan payload) {
    QUEEN_ASSERT(type >= frame_type_application, "net::Transport::send: type ", int{type},
                 " belongs to the handshake");
    std::shared_ptr<Connection> connection;
    {
        std::lock_guard lock(impl_->mutex);
        const auto found = impl_->peers.find(peer);
        const std::size_t frame_bytes = frame_header_bytes + 1 + payload.size();
        if (impl_->is_stopped || found == impl_->peers.end() ||
            found->second.pending.size() + frame_bytes > impl_->options.queue_bytes_max) {
            impl_->frames_dropped_total.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        Impl::Peer& p = found->second;
        const bool was_empty = p.pending.empty();
        append_frame(p.pending, type, payload);
        ++p.pending_frames;
        if (was_empty && p.connection != nullptr) {
            connection = p.connection;  // one flush per batch: later sends ride along
        }
    }
    if (connection != nullptr) {
        asio::post(impl_->io, [connection] {
            if (connection->is_open()) {
                connection->flush();
            }
        });
    }
    return true;
}

TransportStats Transport::stats() const {
    constexpr auto relaxed = std::memory_order_relaxed;
    TransportStats s;
    s.connections_open = impl_->connections_open.load(relaxed);
    s.handshakes_ok_total = impl_->handshakes_ok_total.load(relaxed);
    s.handshakes_refused_total = impl_->handshakes_refused_total.load(relaxed);
    s.frames_sent_total = impl_->frames_sent_total.load(relaxed);
    s.frames_received_total = impl_->frames_received_total.load(relaxed);
    s.frames_dropped_total = impl_->frames_dropped_total.load(relaxed);
    s.bytes_sent_total = impl_->bytes_sent_total.load(relaxed);
    s.bytes_received_total = impl_->bytes_received_total.load(relaxed);
    s.writes_total = impl_->writes_total.load(relaxed);
    return s;
}

void Transport::stop() {
    {
        std::lock_guard lock(impl_->mutex);
        if (impl_->is_stopped) {
            return;
        }
        impl_->is_stopped = true;
    }
    asio::post(impl_->io, [impl = impl_.get()] {
        asio::error_code ignored;
        impl->acceptor.close(ignored);
        std::vector<std::shared_ptr<Connection>> open;
        {
            std::lock_guard lock(impl->mutex);
            for (auto& [id, peer] : impl->peers) {
                if (peer.redial != nullptr) {
                    peer.redial->cancel();
                }
                if (peer.connection != nullptr) {
                    open.push_back(peer.connection);
                }
            }
        }
        for (auto& connection : open) {
            connection->close("transport stopped");
        }
        impl->io.stop();
    });
    if (impl_->thread.joinable()) {
        impl_->thread.join();
    }
    // Handlers that never ran hold connections; destroy them with the io_context, in order.
    std::lock_guard lock(impl_->mutex);
    for (auto& [id, peer] : impl_->peers) {
        peer.connection.reset();
        peer.redial.reset();
    }
}

}  // namespace queen::net
