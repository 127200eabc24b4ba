// modules/raft/tests/codec_test.cpp — round trips and rejections of the raft encodings.
#include "queen/raft/codec.hpp"

#include "queen/core/rng.hpp"
#include "queen/raft/errc.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

using namespace queen;
using namespace queen::raft;

namespace {

Message sample_message() {
    Message m;
    m.type = MessageType::append;
    m.from = NodeId{1};
    m.to = NodeId{300};
    m.term = Term{7};
    m.log_term = Term{6};
    m.index = LogIndex{41};
    m.commit = LogIndex{40};
    m.entries.push_back(Entry{Term{7}, LogIndex{42}, EntryType::normal, Bytes{1, 2, 3}});
    m.entries.push_back(Entry{Term{7}, LogIndex{43}, EntryType::conf_change, Bytes{}});
    m.context = Bytes{9, 9};
    return m;
}

}  // namespace

TEST_CASE("raft: messages round-trip through the codec", "[raft][codec]") {
    Message m = sample_message();
    Bytes wire;
    encode_message(m, wire);
    CHECK(wire[0] == codec_version);
    auto decoded = decode_message(wire);
    REQUIRE(decoded.has_value());
    CHECK(decoded.value() == m);

    Message snap;
    snap.type = MessageType::snapshot;
    snap.from = NodeId{2};
    snap.to = NodeId{3};
    snap.reject = true;
    snap.is_last_chunk = true;
    snap.snapshot =
        SnapshotMeta{LogIndex{10}, Term{2}, ConfState{{NodeId{1}, NodeId{2}}, {NodeId{5}}}};
    snap.snapshot_offset = 1024;
    snap.snapshot_size = 2048;
    snap.snapshot_chunk = Bytes(100, 0xab);
    wire.clear();
    encode_message(snap, wire);
    auto decoded_snap = decode_message(wire);
    REQUIRE(decoded_snap.has_value());
    CHECK(decoded_snap.value() == snap);
}

TEST_CASE("raft: every truncation of a message is rejected, never misread", "[raft][codec]") {
    Bytes wire;
    encode_message(sample_message(), wire);
    for (std::size_t cut = 0; cut < wire.size(); ++cut) {
        auto decoded = decode_message(ByteSpan(wire.data(), cut));
        INFO("cut=" << cut);
        REQUIRE_FALSE(decoded.has_value());
    }
    Bytes longer = wire;
    longer.push_back(0);
    CHECK(decode_message(longer).error().is(raft::Errc::decode));
}

TEST_CASE("raft: unknown versions, types and flags are refused", "[raft][codec]") {
    Bytes wire;
    encode_message(sample_message(), wire);
    Bytes bad_version = wire;
    bad_version[0] = 2;
    CHECK(decode_message(bad_version).error().is(raft::Errc::unsupported_version));
    Bytes bad_type = wire;
    bad_type[1] = 99;
    CHECK(decode_message(bad_type).error().is(raft::Errc::decode));
    Bytes bad_flags = wire;
    bad_flags[2] = 0x80;
    CHECK(decode_message(bad_flags).error().is(raft::Errc::decode));
}

TEST_CASE("raft: records round-trip and reject corruption", "[raft][codec]") {
    Bytes out;
    const HardState hs{Term{5}, NodeId{2}, LogIndex{99}};
    encode_hard_state(hs, out);
    CHECK(out == Bytes{1, 5, 2, 99});
    CHECK(decode_hard_state(out).value() == hs);

    out.clear();
    const Entry entry{Term{3}, LogIndex{200}, EntryType::normal, Bytes{7}};
    encode_entry(entry, out);
    CHECK(decode_entry(out).value() == entry);
    out.back() = 0xff;
    out.push_back(0);
    CHECK_FALSE(decode_entry(out).has_value());

    out.clear();
    const SnapshotMeta meta{LogIndex{8}, Term{2}, ConfState{{NodeId{1}, NodeId{3}}, {}}};
    encode_snapshot_meta(meta, out);
    CHECK(decode_snapshot_meta(out).value() == meta);
    // Voters must be sorted and unique.
    Bytes unsorted{1, 8, 2, 2, 3, 1, 0};
    CHECK_FALSE(decode_snapshot_meta(unsorted).has_value());
    Bytes overlapping{1, 8, 2, 1, 3, 1, 3};
    CHECK_FALSE(decode_snapshot_meta(overlapping).has_value());

    out.clear();
    const ConfChange change{ConfChangeType::remove_node, NodeId{4}};
    encode_conf_change(change, out);
    CHECK(out == Bytes{1, 2, 4});
    CHECK(decode_conf_change(out).value() == change);
    CHECK_FALSE(decode_conf_change(Bytes{1, 3, 4}).has_value());
    CHECK_FALSE(decode_conf_change(Bytes{1, 0, 0}).has_value());
}

TEST_CASE("raft: random bytes never crash the decoders", "[raft][codec]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    Bytes valid;
    encode_message(sample_message(), valid);
    for (int i = 0; i < 20000; ++i) {
        Bytes input = valid;
        const std::uint64_t flips = rng.between(1, 4);
        for (std::uint64_t f = 0; f < flips; ++f) {
            input[rng.below(input.size())] = static_cast<Byte>(rng.next());
        }
        auto decoded = decode_message(input);
        if (decoded.has_value()) {
            Bytes again;
            encode_message(decoded.value(), again);
            CHECK(decode_message(again).value() == decoded.value());
        }
        (void)decode_entry(input);
        (void)decode_hard_state(input);
        (void)decode_snapshot_meta(input);
    }
}

TEST_CASE("raft: the heartbeat example of docs/raft.md is byte-exact", "[raft][codec]") {
    Message m;
    m.type = MessageType::heartbeat;
    m.from = NodeId{1};
    m.to = NodeId{2};
    m.term = Term{7};
    m.commit = LogIndex{40};
    Bytes wire;
    encode_message(m, wire);
    CHECK(to_hex(wire) == "010700010207000028000000");
}

TEST_CASE("raft: quiesce (type 15) round-trips, the next type is refused", "[raft][codec]") {
    Message m;
    m.type = MessageType::quiesce;
    m.from = NodeId{1};
    m.to = NodeId{2};
    m.term = Term{7};
    m.index = LogIndex{40};
    m.log_term = Term{7};
    m.commit = LogIndex{40};
    Bytes wire;
    encode_message(m, wire);
    CHECK(to_hex(wire) == "010f00010207072828000000");
    CHECK(decode_message(wire).value() == m);
    CHECK(message_type_name(MessageType::quiesce) == "quiesce");
    wire[1] = 16;
    CHECK(decode_message(wire).error().is(raft::Errc::decode));
}
