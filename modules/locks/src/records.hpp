// locks/src/records.hpp — the LMDB key and value layouts of the "locks.*" tables (README.md,
// "On disk") and their encoding; not the logic that keeps the two tables consistent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"
#include "queen/store/env.hpp"
#include "queen/store/keys.hpp"

namespace queen::locks::detail {

inline constexpr std::uint8_t record_format_version = 1;

/// Bytes of the expires_at prefix of a "locks.expiry" key.
inline constexpr std::size_t expiry_prefix_size = 8;
/// The longest lock name a key can hold: the expiry key is the prefix then the name.
inline constexpr std::size_t name_bytes_limit = store::Env::key_size_max - expiry_prefix_size;
static_assert(name_bytes_limit == 503, "expiry key layout changed: update README.md");

/// "locks.grants" value (the key is the lock name as it is). expires_at > acquired_at is not
/// required (a grant may be renewed shorter than it began), only ttl_ms_min >= 1 after `now`.
struct GrantRecord {
    std::string owner;
    FencingToken token{0};
    TimestampMs acquired_at{0};
    TimestampMs expires_at{0};
    friend bool operator==(const GrantRecord&, const GrantRecord&) = default;
};

/// Value: format byte 1, then owner (varint length + bytes), token (varint), acquired_at and
/// expires_at (zigzag varints).
[[nodiscard]] Bytes encode(const GrantRecord& record);
void encode_into(Bytes& out, const GrantRecord& record);
/// Errors: queen::Errc::corruption (wrong format byte, truncated, trailing bytes, a varint not
/// in its shortest form). `name` is only for the error message.
[[nodiscard]] Result<GrantRecord> decode_grant(ByteSpan value, std::string_view name);

/// "locks.grants" key: the name's bytes as they are (byte order = std::string order).
[[nodiscard]] inline ByteSpan grant_key(std::string_view name) noexcept {
    return as_bytes(name);
}

/// "locks.expiry" key: expires_at as KeyBuilder::i64be (sign bit flipped, big-endian) then the
/// name's bytes as they are (the last field); order = (expires_at, name).
[[nodiscard]] inline store::KeyBuilder expiry_key(TimestampMs expires_at, std::string_view name) {
    store::KeyBuilder key;
    key.i64be(expires_at.value()).raw(as_bytes(name));
    return key;
}

/// A decoded "locks.expiry" key.
struct ExpiryKey {
    TimestampMs expires_at{0};
    std::string name;
};
/// Errors: queen::Errc::corruption (shorter than the prefix plus one name byte).
[[nodiscard]] Result<ExpiryKey> decode_expiry_key(ByteSpan key);

}  // namespace queen::locks::detail
