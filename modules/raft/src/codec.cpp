// modules/raft/src/codec.cpp — encoders and bounds-checked decoders for raft messages/records.
#include "queen/raft/codec.hpp"

#include <algorithm>
#include <string>

#include "queen/raft/errc.hpp"

namespace queen::raft {
namespace {

// Message flag bits (one byte after the type).
constexpr std::uint8_t flag_reject = 1u << 0;
constexpr std::uint8_t flag_transfer = 1u << 1;
constexpr std::uint8_t flag_last_chunk = 1u << 2;
constexpr std::uint8_t flag_recovering = 1u << 3;
constexpr std::uint8_t flag_recovery_index = 1u
                                             << 4;  // a recovery_index varint follows reject_hint
constexpr std::uint8_t flags_known =
    flag_reject | flag_transfer | flag_last_chunk | flag_recovering | flag_recovery_index;

// Snapshot chunks and their responses carry the snapshot fields; other types do not.
bool carries_snapshot(MessageType type) {
    return type == MessageType::snapshot || type == MessageType::snapshot_response;
}

Error decode_error(const char* what) {
    return Error{Errc::decode, std::string("raft: ") + what};
}

queen::Status check_version(ByteReader& reader, const char* what) {
    const std::uint8_t version = reader.u8();
    if (!reader.ok()) {
        return decode_error(what);
    }
    if (version != codec_version) {
        return Error{Errc::unsupported_version,
                     std::string("raft: ") + what + " version " + std::to_string(version)};
    }
    return {};
}

void write_entry_body(ByteWriter& writer, const Entry& entry) {
    writer.u8(static_cast<std::uint8_t>(entry.type));
    writer.varint(entry.term.value());
    writer.varint(entry.index.value());
    writer.blob(entry.data);
}

bool read_entry_body(ByteReader& reader, Entry& entry) {
    const std::uint8_t type = reader.u8();
    entry.term = Term{reader.varint()};
    entry.index = LogIndex{reader.varint()};
    const ByteSpan data = reader.blob();
    if (!reader.ok() || type > static_cast<std::uint8_t>(EntryType::conf_change)) {
        return false;
    }
    entry.type = static_cast<EntryType>(type);
    entry.data.assign(data.begin(), data.end());
    return true;
}

void write_ids(ByteWriter& writer, const std::vector<NodeId>& ids) {
    writer.varint(ids.size());
    for (const NodeId id : ids) {
        writer.varint(id.value());
    }
}

bool read_ids(ByteReader& reader, std::vector<NodeId>& ids) {
    const std::uint64_t count = reader.varint();
    // Every id takes at least one byte: a count beyond the remaining bytes is corrupt.
    if (!reader.ok() || count > reader.remaining()) {
        return false;
    }
    ids.clear();
    ids.reserve(count);
    for (std::uint64_t i = 0; i < count; ++i) {
        const NodeId id{reader.varint()};
        if (!reader.ok() || id == no_node || (!ids.empty() && !(ids.back() < id))) {
            return false;  // sorted, unique, non-zero
        }
        ids.push_back(id);
    }
    return true;
}

void write_meta_body(ByteWriter& writer, const SnapshotMeta& meta) {
    writer.varint(meta.index.value());
    writer.varint(meta.term.value());
    write_ids(writer, meta.conf_state.voters);
    write_ids(writer, meta.conf_state.learners);
}

bool read_meta_body(ByteReader& reader, SnapshotMeta& meta) {
    meta.index = LogIndex{reader.varint()};
    meta.term = Term{reader.varint()};
    if (!read_ids(reader, meta.conf_state.voters) || !read_ids(reader, meta.conf_state.learners)) {
        return false;
    }
    for (const NodeId id : meta.conf_state.learners) {
        if (std::binary_search(meta.conf_state.voters.begin(), meta.conf_state.voters.end(), id)) {
            return false;
        }
    }
    return reader.ok();
}

}  // namespace

std::string_view message_type_name(MessageType type) noexcept {
    switch (type) {
        case MessageType::append: return "append";
        case MessageType::append_response: return "append_response";
        case MessageType::request_vote: return "request_vote";
        case MessageType::request_vote_response: return "request_vote_response";
        case MessageType::request_pre_vote: return "request_pre_vote";
        case MessageType::request_pre_vote_response: return "request_pre_vote_response";
        case MessageType::heartbeat: return "heartbeat";
        case MessageType::heartbeat_response: return "heartbeat_response";
        case MessageType::snapshot: return "snapshot";
        case MessageType::snapshot_response: return "snapshot_response";
        case MessageType::timeout_now: return "timeout_now";
        case MessageType::read_index: return "read_index";
        case MessageType::read_index_response: return "read_index_response";
        case MessageType::transfer_leader: return "transfer_leader";
        case MessageType::quiesce: return "quiesce";
    }
    return "unknown";
}

std::string_view role_name(Role role) noexcept {
    switch (role) {
        case Role::follower: return "follower";
        case Role::pre_candidate: return "pre_candidate";
        case Role::candidate: return "candidate";
        case Role::leader: return "leader";
    }
    return "unknown";
}

void encode_message(const Message& message, Bytes& out) {
    ByteWriter writer(out);
    writer.u8(codec_version);
    writer.u8(static_cast<std::uint8_t>(message.type));
    std::uint8_t flags = 0;
    flags |= message.reject ? flag_reject : 0;
    flags |= message.is_transfer ? flag_transfer : 0;
    flags |= message.is_last_chunk ? flag_last_chunk : 0;
    flags |= message.is_recovering ? flag_recovering : 0;
    flags |= message.recovery_index > LogIndex{0} ? flag_recovery_index : 0;
    writer.u8(flags);
    writer.varint(message.from.value());
    writer.varint(message.to.value());
    writer.varint(message.term.value());
    writer.varint(message.log_term.value());
    writer.varint(message.index.value());
    writer.varint(message.commit.value());
    writer.varint(message.reject_hint.value());
    if (message.recovery_index > LogIndex{0}) {
        writer.varint(message.recovery_index.value());
    }
    writer.varint(message.entries.size());
    for (const Entry& entry : message.entries) {
        write_entry_body(writer, entry);
    }
    writer.blob(message.context);
    if (carries_snapshot(message.type)) {
        write_meta_body(writer, message.snapshot);
        writer.varint(message.snapshot_offset);
        writer.varint(message.snapshot_size);
        writer.blob(message.snapshot_chunk);
    }
}

Result<Message> decode_message(ByteSpan bytes) {
    ByteReader reader(bytes);
    QUEEN_TRY(check_version(reader, "message"));
    Message message;
    const std::uint8_t type = reader.u8();
    const std::uint8_t flags = reader.u8();
    if (!reader.ok() || type < static_cast<std::uint8_t>(MessageType::append) ||
        type > static_cast<std::uint8_t>(MessageType::quiesce)) {
        return decode_error("message type");
    }
    if ((flags & ~flags_known) != 0) {
        return decode_error("message flags");
    }
    message.type = static_cast<MessageType>(type);
    message.reject = (flags & flag_reject) != 0;
    message.is_transfer = (flags & flag_transfer) != 0;
    message.is_last_chunk = (flags & flag_last_chunk) != 0;
    message.is_recovering = (flags & flag_recovering) != 0;
    message.from = NodeId{reader.varint()};
    message.to = NodeId{reader.varint()};
    message.term = Term{reader.varint()};
    message.log_term = Term{reader.varint()};
    message.index = LogIndex{reader.varint()};
    message.commit = LogIndex{reader.varint()};
    message.reject_hint = LogIndex{reader.varint()};
    if ((flags & flag_recovery_index) != 0) {
        message.recovery_index = LogIndex{reader.varint()};
        if (message.recovery_index == LogIndex{0}) {
            return decode_error("message recovery_index");  // canonical: the flag means > 0
        }
    }
    const std::uint64_t count = reader.varint();
    // An entry takes at least 4 bytes (type, term, index, data length).
    if (!reader.ok() || count > reader.remaining() / 4) {
        return decode_error("message entry count");
    }
    message.entries.resize(count);
    for (Entry& entry : message.entries) {
        if (!read_entry_body(reader, entry)) {
            return decode_error("message entry");
        }
    }
    const ByteSpan context = reader.blob();
    message.context.assign(context.begin(), context.end());
    if (carries_snapshot(message.type)) {
        if (!read_meta_body(reader, message.snapshot)) {
            return decode_error("message snapshot meta");
        }
        message.snapshot_offset = reader.varint();
        message.snapshot_size = reader.varint();
        const ByteSpan chunk = reader.blob();
        message.snapshot_chunk.assign(chunk.begin(), chunk.end());
    }
    if (!reader.ok()) {
        return decode_error("message truncated");
    }
    if (!reader.at_end()) {
        return decode_error("message trailing bytes");
    }
    return message;
}

void encode_entry(const Entry& entry, Bytes& out) {
    ByteWriter writer(out);
    writer.u8(codec_version);
    write_entry_body(writer, entry);
}

Result<Entry> decode_entry(ByteSpan bytes) {
    ByteReader reader(bytes);
    QUEEN_TRY(check_version(reader, "entry"));
    Entry entry;
    if (!read_entry_body(reader, entry) || !reader.at_end()) {
        return decode_error("entry");
    }
    return entry;
}

void encode_hard_state(const HardState& state, Bytes& out) {
    ByteWriter writer(out);
    writer.u8(codec_version);
    writer.varint(state.term.value());
    writer.varint(state.vote.value());
    writer.varint(state.commit.value());
}

Result<HardState> decode_hard_state(ByteSpan bytes) {
    ByteReader reader(bytes);
    QUEEN_TRY(check_version(reader, "hard state"));
    HardState state;
    state.term = Term{reader.varint()};
    state.vote = NodeId{reader.varint()};
    state.commit = LogIndex{reader.varint()};
    if (!reader.ok() || !reader.at_end()) {
        return decode_error("hard state");
    }
    return state;
}

void encode_snapshot_meta(const SnapshotMeta& meta, Bytes& out) {
    ByteWriter writer(out);
    writer.u8(codec_version);
    write_meta_body(writer, meta);
}

Result<SnapshotMeta> decode_snapshot_meta(ByteSpan bytes) {
    ByteReader reader(bytes);
    QUEEN_TRY(check_version(reader, "snapshot meta"));
    SnapshotMeta meta;
    if (!read_meta_body(reader, meta) || !reader.at_end()) {
        return decode_error("snapshot meta");
    }
    return meta;
}

void encode_conf_change(const ConfChange& change, Bytes& out) {
    ByteWriter writer(out);
    writer.u8(codec_version);
    writer.u8(static_cast<std::uint8_t>(change.type));
    writer.varint(change.node_id.value());
}

Result<ConfChange> decode_conf_change(ByteSpan bytes) {
    ByteReader reader(bytes);
    QUEEN_TRY(check_version(reader, "conf change"));
    ConfChange change;
    const std::uint8_t type = reader.u8();
    change.node_id = NodeId{reader.varint()};
    if (!reader.ok() || !reader.at_end() ||
        type > static_cast<std::uint8_t>(ConfChangeType::remove_node) ||
        change.node_id == no_node) {
        return decode_error("conf change");
    }
    change.type = static_cast<ConfChangeType>(type);
    return change;
}

}  // namespace queen::raft
