// modules/raft/fuzz/raft_codec_fuzz.cpp — libFuzzer target for every raft decoder: never crash,
// and whatever decodes re-encodes to bytes that decode to the same value.
#include <cstddef>
#include <cstdint>

#include "queen/core/assert.hpp"
#include "queen/raft/codec.hpp"

namespace {

template <class T, class Decode, class Encode>
void round_trip(queen::ByteSpan input, Decode decode, Encode encode) {
    auto decoded = decode(input);
    if (!decoded.has_value()) {
        return;
    }
    queen::Bytes again;
    encode(decoded.value(), again);
    auto second = decode(queen::ByteSpan(again));
    QUEEN_ASSERT(second.has_value(), "re-encoded value must decode");
    QUEEN_ASSERT(second.value() == decoded.value(), "round trip must preserve the value");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace queen::raft;
    const queen::ByteSpan input(data, size);
    round_trip<Message>(input, decode_message, encode_message);
    round_trip<Entry>(input, decode_entry, encode_entry);
    round_trip<HardState>(input, decode_hard_state, encode_hard_state);
    round_trip<SnapshotMeta>(input, decode_snapshot_meta, encode_snapshot_meta);
    round_trip<ConfChange>(input, decode_conf_change, encode_conf_change);
    return 0;
}
