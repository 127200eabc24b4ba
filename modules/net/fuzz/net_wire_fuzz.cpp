// modules/net/fuzz/net_wire_fuzz.cpp — libFuzzer target `net_wire`: what a peer may send before
// it is authenticated. The input is a byte stream fed to a FrameReader in pieces (the first
// byte picks the piece size); every frame it yields is decoded as the handshake message of its
// type. Never crash; whatever decodes re-encodes to the same value; a failed reader stays
// failed.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "queen/core/assert.hpp"
#include "queen/net/frame.hpp"
#include "queen/net/handshake.hpp"

namespace {

template <class Decode>
void round_trip(queen::ByteSpan payload, Decode decode) {
    auto decoded = decode(payload);
    if (!decoded.has_value()) {
        return;
    }
    const queen::Bytes again = queen::net::encode(*decoded);
    auto second = decode(queen::ByteSpan(again));
    QUEEN_ASSERT(second.has_value() && *second == *decoded, "net: round trip must preserve");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace queen::net;
    if (size == 0) {
        return 0;
    }
    const std::size_t piece = 1 + data[0] % 64;
    FrameReader reader(4096);
    for (std::size_t at = 1; at < size; at += piece) {
        reader.append(queen::ByteSpan(data + at, std::min(piece, size - at)));
        for (;;) {
            auto next = reader.next();
            if (!next.has_value()) {
                QUEEN_ASSERT(!reader.next().has_value(), "net: a failed reader stays failed");
                return 0;
            }
            if (!next->has_value()) {
                break;
            }
            const Frame frame = **next;
            switch (static_cast<FrameType>(frame.type)) {
                case FrameType::hello: round_trip(frame.payload, decode_hello); break;
                case FrameType::challenge: round_trip(frame.payload, decode_challenge); break;
                case FrameType::proof: round_trip(frame.payload, decode_proof); break;
                case FrameType::refused: break;
            }
        }
    }
    return 0;
}
