// kv/src/records.hpp — the key and value layouts of the kv.* tables and their encoding (README
// "On disk" describes them byte by byte).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"
#include "queen/store/keys.hpp"

namespace queen::kv::detail {

inline constexpr std::uint8_t record_format_version = 1;

/// Bytes str(bucket) adds to the bucket's own bytes (the 0x00 0x00 terminator; buckets hold no
/// NUL byte, so nothing is escaped).
inline constexpr std::size_t bucket_framing_bytes = 2;
/// Bytes the expiry key puts before the entries key: expires_at as i64be.
inline constexpr std::size_t expiry_prefix_bytes = 8;
static_assert(expiry_prefix_bytes == sizeof(std::int64_t), "expiry key layout changed");

/// The fields of a "kv.entries" value before the value bytes.
struct EntryHeader {
    std::uint64_t version = 0;
    TimestampMs updated_at{0};
    TimestampMs expires_at{0};  ///< 0 = never
    friend bool operator==(const EntryHeader&, const EntryHeader&) = default;
};

/// A decoded "kv.entries" value; `value` points into the bytes it was decoded from.
struct EntryView {
    EntryHeader header;
    ByteSpan value;
};

/// True when a record with this expiry is live at `now` (expires_at 0 = never expires).
[[nodiscard]] inline bool is_live(TimestampMs expires_at, TimestampMs now) noexcept {
    return expires_at.value() == 0 || expires_at > now;
}

/// "kv.entries" value: format byte, the header's fields (field_codec), the value as a blob.
void encode_entry_into(Bytes& out, const EntryHeader& header, ByteSpan value);
/// Decodes an "kv.entries" value. Errors: queen::Errc::corruption (wrong format byte,
/// truncated, trailing bytes).
[[nodiscard]] Result<EntryView> decode_entry(ByteSpan bytes);

/// "kv.entries" key: str(bucket) then the key's bytes raw. A bucket's keys are contiguous and in
/// key byte order, so the keys with a prefix are the range starting at entries_key(b, prefix).
inline void entries_key(store::KeyBuilder& out, std::string_view bucket, std::string_view key) {
    out.clear();
    out.str(bucket).raw(as_bytes(key));
}

/// "kv.expiry" key: i64be(expires_at), str(bucket), then the key's bytes raw (value empty).
/// Ordered by expiry, then by bucket and key.
inline void expiry_key(store::KeyBuilder& out, TimestampMs expires_at, std::string_view bucket,
                       std::string_view key) {
    out.clear();
    out.i64be(expires_at.value()).str(bucket).raw(as_bytes(key));
}

/// A "kv.expiry" key taken apart.
struct ExpiryKey {
    TimestampMs expires_at{0};
    std::string bucket;
    std::string key;
};
/// Errors: queen::Errc::corruption (not a key expiry_key() makes).
[[nodiscard]] Result<ExpiryKey> decode_expiry_key(ByteSpan bytes);
/// The bucket of a "kv.entries" key and the number of bytes its field takes. Errors:
/// queen::Errc::corruption.
struct EntriesKeyBucket {
    std::string bucket;
    std::size_t bucket_field_bytes = 0;
};
[[nodiscard]] Result<EntriesKeyBucket> decode_entries_key_bucket(ByteSpan bytes);

}  // namespace queen::kv::detail
