// modules/net/tests/frame_test.cpp — frames cut from a stream in any pieces come out whole and
// in order; a corrupted or oversized frame fails the stream.
#include "queen/net/frame.hpp"

#include <string>
#include <vector>

#include "queen/core/rng.hpp"
#include "queen/net/errc.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

using namespace queen;
using namespace queen::net;

namespace {

struct Sent {
    std::uint8_t type;
    Bytes payload;
};

std::vector<Sent> random_frames(Rng& rng, std::size_t count) {
    std::vector<Sent> frames;
    for (std::size_t i = 0; i < count; ++i) {
        Sent frame{static_cast<std::uint8_t>(rng.below(256)),
                   Bytes(rng.below(3) == 0 ? 0 : rng.below(300))};
        for (Byte& b : frame.payload) {
            b = static_cast<Byte>(rng.next());
        }
        frames.push_back(std::move(frame));
    }
    return frames;
}

}  // namespace

TEST_CASE("net: frames fed in random pieces come out whole and in order", "[net][frame]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    for (int round = 0; round < 200; ++round) {
        const auto frames = random_frames(rng, 1 + rng.below(20));
        Bytes stream;
        for (const Sent& frame : frames) {
            append_frame(stream, frame.type, frame.payload);
        }
        FrameReader reader(4096);
        std::vector<Sent> received;
        std::size_t at = 0;
        while (at < stream.size()) {
            const std::size_t piece = std::min<std::size_t>(stream.size() - at, 1 + rng.below(64));
            reader.append(ByteSpan(stream.data() + at, piece));
            at += piece;
            for (;;) {
                auto next = reader.next();
                REQUIRE(next.has_value());
                if (!next->has_value()) {
                    break;
                }
                const Frame& frame = **next;
                received.push_back({frame.type, Bytes(frame.payload.begin(), frame.payload.end())});
            }
        }
        REQUIRE(received.size() == frames.size());
        for (std::size_t i = 0; i < frames.size(); ++i) {
            CHECK(received[i].type == frames[i].type);
            CHECK(received[i].payload == frames[i].payload);
        }
        CHECK(reader.buffered() == 0);
    }
}

TEST_CASE("net: a flipped bit anywhere in a frame fails the stream", "[net][frame]") {
    Bytes stream;
    const std::string text = "a raft message";
    append_frame(stream, frame_type_application, as_bytes(text));
    for (std::size_t byte = 0; byte < stream.size(); ++byte) {
        for (int bit = 0; bit < 8; ++bit) {
            INFO("byte " << byte << " bit " << bit);
            Bytes damaged = stream;
            damaged[byte] ^= static_cast<Byte>(1u << bit);
            FrameReader reader(1024);
            reader.append(damaged);
            auto next = reader.next();
            if (byte < 4) {
                // The length changed: refused as too long or as a CRC mismatch, or the reader
                // waits for bytes that never come (a shorter length fails the CRC instead).
                CHECK((!next.has_value() || !next->has_value()));
            } else {
                REQUIRE_FALSE(next.has_value());
                CHECK(next.error().is(net::Errc::bad_frame));
            }
            if (!next.has_value()) {
                CHECK_FALSE(reader.next().has_value());  // the stream stays failed
            }
        }
    }
}

TEST_CASE("net: a frame over the limit is refused from its header alone", "[net][frame]") {
    Bytes stream;
    append_frame(stream, frame_type_application, Bytes(100, 7));
    FrameReader reader(64);
    reader.append(ByteSpan(stream.data(), frame_header_bytes));  // the body never arrives
    auto next = reader.next();
    REQUIRE_FALSE(next.has_value());
    CHECK(next.error().is(net::Errc::bad_frame));
    CHECK_THAT(next.error().context, Catch::Contains("101 bytes"));
}
