// queues/src/uuid.cpp — ids as UUID-shaped text: 8-4-4-4-12 lowercase hex; a kind nibble for the
// server's own ids, UUIDv7 for message ids.
#include <algorithm>
#include <array>

#include "queen/core/assert.hpp"
#include "queen/core/hex.hpp"
#include "queen/queues/types.hpp"

namespace queen::queues {
namespace {

// Layout (32 hex digits): high (48 bits, 12 digits) | '8' | kind (1 digit) | "00" | low (64
// bits, 16 digits), printed with dashes after digits 8, 12, 16 and 20.
constexpr std::uint64_t high_max = (std::uint64_t{1} << 48) - 1;

constexpr std::uint64_t low_bits(std::uint64_t value, unsigned bits) noexcept {
    return value & ((std::uint64_t{1} << bits) - 1);
}

}  // namespace

std::string format_uuid(UuidKind kind, std::uint64_t high, std::uint64_t low) {
    QUEEN_ASSERT(high <= high_max, "uuid high part over 48 bits: ", high);
    static constexpr char digits[] = "0123456789abcdef";
    std::array<char, 32> hex{};
    for (int i = 0; i < 12; ++i) {
        hex[static_cast<std::size_t>(i)] = digits[(high >> (4 * (11 - i))) & 0xf];
    }
    hex[12] = '8';
    hex[13] = digits[static_cast<unsigned>(kind) & 0xf];
    hex[14] = '0';
    hex[15] = '0';
    for (int i = 0; i < 16; ++i) {
        hex[static_cast<std::size_t>(16 + i)] = digits[(low >> (4 * (15 - i))) & 0xf];
    }
    std::string out;
    out.reserve(36);
    for (std::size_t i = 0; i < 32; ++i) {
        if (i == 8 || i == 12 || i == 16 || i == 20) {
            out.push_back('-');
        }
        out.push_back(hex[i]);
    }
    return out;
}

MessageUuid message_uuid(MessageId id, TimestampMs created_at) noexcept {
    static_assert(message_id_partition_bits + message_id_sequence_bits == 74,
                  "a UUIDv7 has 74 bits after its time, version and variant");
    static_assert(message_id_partition_bits > 12, "the partition spans both halves");
    constexpr unsigned partition_low_bits = message_id_partition_bits - 12;  // in `low`
    const std::int64_t ms = created_at.value();
    const std::uint64_t time = ms < 0 ? 0 : std::min(static_cast<std::uint64_t>(ms), high_max);
    const std::uint64_t partition = low_bits(id.partition.value(), message_id_partition_bits);
    const std::uint64_t sequence = low_bits(id.sequence.value(), message_id_sequence_bits);
    MessageUuid out;
    out.high = (time << 16) | (std::uint64_t{7} << 12) | (partition >> partition_low_bits);
    out.low = (std::uint64_t{2} << 62) |
              (low_bits(partition, partition_low_bits) << message_id_sequence_bits) | sequence;
    return out;
}

std::string format_message_id(MessageId id, TimestampMs created_at) {
    const MessageUuid uuid = message_uuid(id, created_at);
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(36);
    for (int i = 0; i < 32; ++i) {
        if (i == 8 || i == 12 || i == 16 || i == 20) {
            out.push_back('-');
        }
        const std::uint64_t half = i < 16 ? uuid.high : uuid.low;
        out.push_back(digits[(half >> (4 * (15 - i % 16))) & 0xf]);
    }
    return out;
}

bool parse_uuid(std::string_view text, UuidKind kind, std::uint64_t& high, std::uint64_t& low) {
    if (text.size() != 36) {
        return false;
    }
    std::array<int, 32> nibbles{};
    std::size_t n = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (text[i] != '-') {
                return false;
            }
            continue;
        }
        const int value = hex_value(text[i]);
        if (value < 0) {
            return false;
        }
        nibbles[n++] = value;
    }
    if (nibbles[12] != 8 || nibbles[13] != static_cast<int>(kind) || nibbles[14] != 0 ||
        nibbles[15] != 0) {
        return false;
    }
    high = 0;
    low = 0;
    for (std::size_t i = 0; i < 12; ++i) {
        high = (high << 4) | static_cast<std::uint64_t>(nibbles[i]);
    }
    for (std::size_t i = 16; i < 32; ++i) {
        low = (low << 4) | static_cast<std::uint64_t>(nibbles[i]);
    }
    return true;
}

PartitionId parse_partition_id(std::string_view text) {
    std::uint64_t high = 0;
    std::uint64_t low = 0;
    if (!parse_uuid(text, UuidKind::partition, high, low) || high != 0) {
        return PartitionId{0};
    }
    return PartitionId{low};
}

LeaseId parse_lease_id(std::string_view text) {
    if (text.empty()) {
        return LeaseId{0};
    }
    std::uint64_t high = 0;
    std::uint64_t low = 0;
    if (!parse_uuid(text, UuidKind::lease, high, low) || high != 0 || low == 0) {
        return LeaseId{UINT64_MAX};
    }
    return LeaseId{low};
}

}  // namespace queen::queues
