// modules/node/src/entry.hpp — the envelope of a tenant log entry: leader timestamp + command
// bytes.
#pragma once

#include <cstdint>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"
#include "queen/raft/types.hpp"

namespace queen::node::detail {

/// Log record type of a command entry (docs/architecture.md, "Tenant log entries").
/// An empty payload of this type is the no-op entry a new raft leader appends.
inline constexpr std::uint8_t record_type_command = 1;
/// Log record type of a raft membership entry (the payload is raft's encoded ConfChange).
inline constexpr std::uint8_t record_type_conf_change = 2;
/// The log record type of a raft entry type.
inline std::uint8_t record_type_of(raft::EntryType type) {
    return type == raft::EntryType::conf_change ? record_type_conf_change : record_type_command;
}
/// The raft entry type of a log record type.
inline raft::EntryType entry_type_of(std::uint8_t record_type) {
    return record_type == record_type_conf_change ? raft::EntryType::conf_change
                                                  : raft::EntryType::normal;
}

/// Version byte of the envelope below.
inline constexpr std::uint8_t entry_format_version = 1;
/// version(1) + timestamp_ms(8, little-endian, signed) + command bytes (engine codec).
inline constexpr std::size_t entry_header_size = 1 + 8;
static_assert(entry_header_size == 9, "entry envelope changed: bump entry_format_version");

/// Appends the envelope's header (version, timestamp) to `out`; the command bytes follow it.
inline void encode_entry_header(Bytes& out, TimestampMs timestamp) {
    ByteWriter writer(out);
    writer.u8(entry_format_version);
    writer.fixed<std::int64_t>(timestamp.value());
}

struct EntryView {
    TimestampMs timestamp;
    ByteSpan command;
};

/// Splits an envelope. Errors: Errc::corruption (short or unknown version).
inline Result<EntryView> decode_entry(ByteSpan payload) {
    if (payload.size() < entry_header_size || payload[0] != entry_format_version) {
        return Error{Errc::corruption, "tenant log entry: bad envelope (" +
                                           std::to_string(payload.size()) + " bytes, version " +
                                           std::to_string(payload.empty() ? 0 : payload[0]) + ")"};
    }
    return EntryView{TimestampMs{load_le<std::int64_t>(payload.data() + 1)},
                     payload.subspan(entry_header_size)};
}

}  // namespace queen::node::detail
