// queen/raft/codec.hpp — versioned binary encodings of raft messages and persisted records
// (little-endian, LEB128 varints; byte by byte in docs/raft.md). Not for application data.
#pragma once

#include <cstdint>

#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"
#include "queen/raft/types.hpp"

namespace queen::raft {

/// The first byte of every encoding below. Decoders refuse any other value.
inline constexpr std::uint8_t codec_version = 1;

// Compatibility within version 1 (nodes of different releases in one group during an upgrade).
// Decoders refuse unknown message types and flag bits (the message is dropped, like a lost one),
// so a new type or flag is sent only to a peer known to understand it. A new meaning for a field
// every message already carries is fine when 0 is what older nodes send and means "unknown".
// Uses so far:
//  - `commit` in append_response and heartbeat_response: the sender's commit (older nodes send
//    0). The leader quiesces only when every peer reported the leader's commit that way...
//  - ...so type 15 `quiesce` never reaches a node that predates it.
// Anything else (a field moved, a type renumbered) needs codec_version 2.

/// Appends the encoding of `message` (version, type, fields, entries, snapshot chunk) to `out`.
void encode_message(const Message& message, Bytes& out);
/// Decodes one whole message; trailing bytes are an error.
/// Errors: Errc::unsupported_version, Errc::decode (truncated, unknown type, bad flags,
/// lengths past the end, trailing bytes).
[[nodiscard]] Result<Message> decode_message(ByteSpan bytes);

/// Appends the record form of one log entry (version, type, term, index, data).
void encode_entry(const Entry& entry, Bytes& out);
/// Errors: Errc::unsupported_version, Errc::decode.
[[nodiscard]] Result<Entry> decode_entry(ByteSpan bytes);

/// Appends the record form of a hard state (version, term, vote, commit).
void encode_hard_state(const HardState& state, Bytes& out);
/// Errors: Errc::unsupported_version, Errc::decode.
[[nodiscard]] Result<HardState> decode_hard_state(ByteSpan bytes);

/// Appends the record form of snapshot metadata (version, index, term, voters, learners).
void encode_snapshot_meta(const SnapshotMeta& meta, Bytes& out);
/// Errors: Errc::unsupported_version, Errc::decode (also unsorted or overlapping member lists).
[[nodiscard]] Result<SnapshotMeta> decode_snapshot_meta(ByteSpan bytes);

/// The data of a conf_change entry (version, change type, node id).
void encode_conf_change(const ConfChange& change, Bytes& out);
/// Errors: Errc::unsupported_version, Errc::decode (unknown change type, node id 0).
[[nodiscard]] Result<ConfChange> decode_conf_change(ByteSpan bytes);

}  // namespace queen::raft
