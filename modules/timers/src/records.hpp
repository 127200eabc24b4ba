// timers/src/records.hpp — the LMDB key and value layouts of the timers.* tables (README.md).
#pragma once

#include <cstdint>
#include <string_view>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"
#include "queen/store/keys.hpp"
#include "queen/timers/timers.hpp"

namespace queen::timers::detail {

inline constexpr std::uint8_t record_format_version = 1;
/// The due key is this many bytes of due time followed by the id.
inline constexpr std::size_t due_key_prefix_size = 8;

/// "timers.timers" value: every field of Timer but the id (the key).
struct TimerRecord {
    TimestampMs due_at{0};
    std::int64_t interval_ms = 0;
    TimestampMs end_at{0};
    std::uint64_t fired = 0;
    TimestampMs created_at{0};
    Bytes payload;
};

/// Encodes `record` into `out` (cleared first): the format byte, then the fields.
void encode_into(Bytes& out, const TimerRecord& record);
/// Decodes a "timers.timers" value. With `with_payload` false the payload is skipped (left
/// empty) but still checked. Errors: queen::Errc::corruption (names the id).
[[nodiscard]] Result<TimerRecord> decode_record(ByteSpan value, std::string_view id,
                                                bool with_payload);

/// "timers.due" key: i64be(due_at) then the id's bytes (the last field, raw).
inline void due_key(store::KeyBuilder& key, TimestampMs due_at, std::string_view id) {
    key.clear();
    key.i64be(due_at.value()).raw(as_bytes(id));
}
/// Splits a "timers.due" key. Errors: queen::Errc::corruption (shorter than 9 bytes).
struct DueKey {
    TimestampMs due_at{0};
    std::string_view id;  ///< aliases the key's bytes
};
[[nodiscard]] Result<DueKey> parse_due_key(ByteSpan key);

/// The Timer of `id` stored as `record`.
[[nodiscard]] Timer to_timer(std::string_view id, TimerRecord&& record);

}  // namespace queen::timers::detail
