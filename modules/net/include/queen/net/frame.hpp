// queen/net/frame.hpp — the frames of the peer protocol: every byte two nodes exchange over their
// one connection is a frame, and a frame is checked before anything reads it.
//
// Layout (little endian): body_size u32 | crc32c(body) u32 | body, where body = type u8 |
// payload. Types below 16 belong to the handshake (handshake.hpp); 16 and up are the
// application's (raft messages, forwarded requests). docs/cluster-protocol.md has the whole
// protocol.
//
// Reading a stream:
//
//     FrameReader reader(frame_bytes_max);
//     reader.append(bytes_from_socket);
//     while (true) {
//         QUEEN_TRY(std::optional<Frame> frame, reader.next());   // Errc::bad_frame: close
//         if (!frame) break;                                       // need more bytes
//         handle(frame->type, frame->payload);                     // valid until the next call
//     }
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"

namespace queen::net {

/// What a frame carries. Handshake types are fixed by the protocol; types from
/// `frame_type_application` up are free for the layers above.
enum class FrameType : std::uint8_t {
    hello = 1,      ///< dialer -> acceptor: version, cluster, node id, nonce
    challenge = 2,  ///< acceptor -> dialer: its node id, nonce and proof
    proof = 3,      ///< dialer -> acceptor: the dialer's proof
    refused = 4,    ///< either way: why the handshake failed (UTF-8 text); the sender closes
};
inline constexpr std::uint8_t frame_type_application = 16;

inline constexpr std::size_t frame_header_bytes = 8;

/// One frame as read: its type byte and a view of its payload (owned by the reader).
struct Frame {
    std::uint8_t type = 0;
    ByteSpan payload;
};

/// Appends one frame of `type` carrying `payload` to `out`.
void append_frame(Bytes& out, std::uint8_t type, ByteSpan payload);
inline void append_frame(Bytes& out, FrameType type, ByteSpan payload) {
    append_frame(out, static_cast<std::uint8_t>(type), payload);
}

/// Cuts a byte stream into checked frames. Bytes arrive in any pieces; a frame's payload view
/// stays valid until the next append() or next(). Thread-safety: none (one per connection).
class FrameReader {
public:
    /// `body_bytes_max`: the largest body (type + payload) accepted; a longer one is refused
    /// from its header alone, before its bytes are buffered.
    explicit FrameReader(std::size_t body_bytes_max) : body_bytes_max_(body_bytes_max) {}

    /// Buffers bytes read from the connection.
    void append(ByteSpan bytes);

    /// The next whole frame, or nullopt until more bytes arrive.
    /// Errors: net::Errc::bad_frame (a body over the limit, an empty body, a CRC mismatch); the
    /// stream is unusable after one (close the connection).
    [[nodiscard]] Result<std::optional<Frame>> next();

    /// Bytes buffered and not yet returned as frames.
    [[nodiscard]] std::size_t buffered() const noexcept { return buffer_.size() - consumed_; }

private:
    std::size_t body_bytes_max_;
    Bytes buffer_;
    std::size_t consumed_ = 0;  // bytes of buffer_ already returned
    bool is_failed_ = false;
};

}  // namespace queen::net
