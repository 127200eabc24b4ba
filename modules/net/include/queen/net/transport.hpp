// queen/net/transport.hpp — the peer transport: one authenticated TCP connection per node pair,
// carrying application frames (raft messages, forwarded requests) both ways.
//
// Who dials: of two nodes, the one with the lower id dials the other and redials after any
// failure (backoff between reconnect_backoff_min_ms and _max_ms); the higher one only accepts.
// So a pair never holds two connections, and both ends agree which one it is. Every connection
// starts with the handshake of handshake.hpp; until it succeeds nothing else is read or sent.
//
// Sending never blocks: send() queues the frame for the peer's connection (frames queued while a
// write is in flight leave together in the next write). While a peer is not connected its frames
// wait, up to queue_bytes_max per peer; beyond that new frames are dropped and counted (raft
// resends what matters). Received frames are handed to the OnMessage callback on the
// transport's thread, in the order the peer sent them.
//
//     auto transport = net::Transport::start(identity, options, on_message, on_event, logger);
//     (*transport)->add_peer(NodeId{2}, "127.0.0.2", 7001);
//     (*transport)->send(NodeId{2}, frame_type_application, bytes);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"
#include "queen/net/handshake.hpp"

namespace queen::net {

struct TransportOptions {
    /// Numeric IP to listen on and the port (0: pick a free one; see Transport::port()). Dialed
    /// connections leave from this address too (when it is not 0.0.0.0 or ::).
    std::string address = "127.0.0.1";
    std::uint16_t port = 0;
    /// Largest frame body accepted from a peer; a larger one closes the connection.
    std::size_t frame_body_bytes_max = 64u << 20;
    /// Bytes of frames waiting per peer (not connected, or behind a slow write) before new
    /// ones are dropped.
    std::size_t queue_bytes_max = 64u << 20;
    /// The handshake must finish within this, or the connection is closed.
    std::int64_t handshake_timeout_ms = 5000;
    /// The dialer's wait before redialing: doubles from min to max after each failure.
    std::int64_t reconnect_backoff_min_ms = 20;
    std::int64_t reconnect_backoff_max_ms = 2000;

    /// Errors: Errc::invalid_argument naming the field.
    [[nodiscard]] Status validate() const;
};

/// What happened to a peer's connection (for logs, metrics and tests).
struct PeerEvent {
    enum class Kind : std::uint8_t {
        connected,     ///< the handshake succeeded; frames flow
        disconnected,  ///< the peer's current connection closed (the dialer redials); not sent
                       ///< for a connection a newer one to the same peer replaced
        refused,       ///< a handshake failed; `reason` says why (ours or the peer's words)
    };
    Kind kind = Kind::connected;
    NodeId peer;         ///< 0 when a refused peer never said who it is
    std::string reason;  ///< for refused and disconnected
};

/// Counters since start. Thread-safe snapshot.
struct TransportStats {
    std::uint64_t connections_open = 0;  ///< authenticated connections now
    std::uint64_t handshakes_ok_total = 0;
    std::uint64_t handshakes_refused_total = 0;
    std::uint64_t frames_sent_total = 0;
    std::uint64_t frames_received_total = 0;
    std::uint64_t frames_dropped_total = 0;  ///< queue_bytes_max reached, or an unknown peer
    std::uint64_t bytes_sent_total = 0;
    std::uint64_t bytes_received_total = 0;
    std::uint64_t writes_total =
        0;  ///< socket writes (frames_sent_total / writes_total = batching)
};

class Transport {
public:
    using OnMessage = std::function<void(NodeId from, std::uint8_t type, ByteSpan payload)>;
    using OnEvent = std::function<void(const PeerEvent& event)>;

    /// Listens and starts the transport's thread. Callbacks run on that thread and must not
    /// block; `on_event` may be empty.
    /// Errors: Errc::invalid_argument (options), Errc::io (the address cannot be bound).
    [[nodiscard]] static Result<std::unique_ptr<Transport>> start(PeerIdentity identity,
                                                                  TransportOptions options,
                                                                  OnMessage on_message,
                                                                  OnEvent on_event, Logger& logger);
    /// Closes every connection and joins the thread (stop()).
    ~Transport();
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;

    /// The port listened on.
    [[nodiscard]] std::uint16_t port() const noexcept;

    /// Makes `peer` known at `host`:`port`; the lower id of the two dials. Re-adding a peer
    /// with another address takes effect at the next dial. Thread-safe.
    void add_peer(NodeId peer, std::string host, std::uint16_t port);
    /// Forgets `peer`: closes its connection and drops what waits for it. Thread-safe.
    void remove_peer(NodeId peer);

    /// Queues one frame of `type` (frame_type_application or above) for `peer`. Never blocks.
    /// False when it was dropped (unknown peer, queue full, stopped). Thread-safe.
    bool send(NodeId peer, std::uint8_t type, ByteSpan payload);

    [[nodiscard]] TransportStats stats() const;

    /// Closes every connection and joins the thread. Idempotent.
    void stop();

    struct Impl;

private:
    explicit Transport(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace queen::net
