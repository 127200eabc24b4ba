// queues/src/records.hpp — the LMDB key and value layouts of the queue tables (docs/engine.md).
// Values start with a format byte (1); integers are varints, strings varint-length-prefixed.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>

#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"
#include "queen/queues/queries.hpp"
#include "queen/queues/types.hpp"
#include "queen/store/keys.hpp"
#include "queen/store/txn.hpp"

namespace queen::queues::detail {

inline constexpr std::uint8_t record_format_version = 1;
/// The layout version of the queue tables, which is the format byte of the meta record (the
/// record every other record's meaning hangs on; layout.hpp migrates older layouts). Its fields
/// are the same in every layout.
inline constexpr std::uint8_t layout_version = 3;
/// The format byte of PartitionRecord since layout 3 (which added its `tail`); format 1
/// records (no tail) still decode, with tail 0.
inline constexpr std::uint8_t partition_record_format = 2;

/// "q.meta" key "state": id counters and the maintenance flags.
struct MetaRecord {
    QueueId next_queue_id{1};
    PartitionId next_partition_id{1};
    GroupId next_group_id{1};
    LeaseId next_lease_id{1};
    DlqEntryId next_dlq_id{1};
    BufferedPushId next_buffer_id{1};
    TraceEntryId next_trace_id{1};
    bool push_maintenance = false;
    bool pop_maintenance = false;
    /// The position (key in q.blocks) the next message block gets (layout 3; positions are
    /// never reused, so a link to a removed block finds nothing).
    std::uint64_t next_position = 1;
    friend bool operator==(const MetaRecord&, const MetaRecord&) = default;
};

struct QueueRecord {
    std::string name;
    std::string namespace_name;
    std::string task;
    TimestampMs created_at{0};
    QueueOptions options;
};

/// Persistent mirror of the per-partition memory entry. Messages occupy sequences
/// [first_sequence, last_sequence]; the partition is empty when first = last + 1 (holes from
/// single-message deletes are allowed inside; message_count is exact). `tail` is the position
/// of the partition's newest block in q.blocks (0: none; messages.hpp).
struct PartitionRecord {
    QueueId queue;
    std::string name;
    TimestampMs created_at{0};
    Sequence first_sequence{1};
    Sequence last_sequence{0};
    TimestampMs last_created_at{0};
    std::uint64_t message_count = 0;
    std::uint64_t tail = 0;
};

struct MessageRecord {
    TimestampMs created_at{0};
    SmallString transaction_id;
    std::string trace_id;
    std::string producer_sub;
    bool is_encrypted = false;
    Bytes payload;
};

/// Per (partition, group): the cursor and the partition lease.
struct CursorRecord {
    Sequence consumed;  ///< last consumed sequence, 0 = nothing
    LeaseId lease_id;   ///< 0 = no lease
    std::int64_t lease_expires_ms = 0;
    std::uint32_t batch_size = 0;
    std::uint32_t acked_count = 0;
    std::uint32_t batch_retry_count = 0;
    LeaseId last_failed_lease;       ///< the batch whose failure was already counted
    std::int64_t not_before_ms = 0;  ///< retryDelay: no redelivery before this
    std::uint64_t total_consumed = 0;
    std::int64_t last_consumed_ms = 0;
    [[nodiscard]] bool is_leased(std::int64_t now_ms) const noexcept {
        return lease_id != LeaseId{0} && lease_expires_ms > now_ms;
    }
};

struct GroupQueueRecord {
    PartitionId round_robin_position;  ///< last partition id a pop claimed
    TimestampMs created_at{0};
};

struct SubscriptionRecord {
    SubscriptionMode mode = SubscriptionMode::all;
    TimestampMs timestamp{0};
    TimestampMs created_at{0};
};

struct DlqRecord {
    QueueId queue;
    PartitionId partition;
    Sequence sequence;
    GroupId group;
    std::string error;
    std::uint32_t retry_count = 0;
    TimestampMs failed_at{0};
    MessageRecord message;
};

struct TraceRecord {
    GroupId group;
    std::string event_type;
    std::vector<std::string> names;
    Bytes data;
    TimestampMs created_at{0};
};

Bytes encode(const MetaRecord& record);
Bytes encode(const QueueRecord& record);
Bytes encode(const PartitionRecord& record);
Bytes encode(const MessageRecord& record);
Bytes encode(const CursorRecord& record);
Bytes encode(const GroupQueueRecord& record);
Bytes encode(const SubscriptionRecord& record);
Bytes encode(const DlqRecord& record);
Bytes encode(const TraceRecord& record);
Bytes encode(const PushItem& record);

/// Encoders into a caller-owned buffer (cleared first; its capacity is reused, so a hot path
/// encodes without allocating). Same bytes as encode().
void encode_into(Bytes& out, const MetaRecord& record);
void encode_into(Bytes& out, const PartitionRecord& record);
void encode_into(Bytes& out, const CursorRecord& record);
/// The PartitionRecord{queue, name, created_at, first_sequence, last_sequence, last_created_at,
/// message_count, tail} bytes, from its parts (no record, so no copy of the name).
void encode_partition_into(Bytes& out, QueueId queue, std::string_view name, TimestampMs created_at,
                           Sequence first_sequence, Sequence last_sequence,
                           TimestampMs last_created_at, std::uint64_t message_count,
                           std::uint64_t tail);
/// The format byte of the compact message record the pushes write into q.blocks (layout 3):
/// u8 2, u8 flags (1 encrypted, 2 the transaction id is a canonical UUID, 4 a trace id follows,
/// 8 a producer sub follows), created_at svarint, the transaction id (its 16 bytes, or str),
/// trace_id str, producer_sub str, then the payload to the record's end (a block gives each
/// record's length). decode_message() reads it and the format 1 record encode(MessageRecord)
/// writes (the records of layout 2 blocks, and DLQ records).
inline constexpr std::uint8_t message_record_format = 2;
/// The compact record of a pushed item (MessageRecord{created_at, item.transaction_id,
/// item.trace_id, item.producer_sub, item.is_encrypted, item.payload}), its size:
std::size_t message_record_size(TimestampMs created_at, const PushItem& item) noexcept;
/// Appends to `out` the compact record as a blob (varint length, then the record) in one resize;
/// returns the offset of the record in `out`.
std::size_t append_message_blob(Bytes& out, TimestampMs created_at, const PushItem& item);

/// Decoders. Errors: Errc::corruption naming the record kind.
Result<MetaRecord> decode_meta(ByteSpan bytes);
Result<QueueRecord> decode_queue(ByteSpan bytes);
Result<PartitionRecord> decode_partition(ByteSpan bytes);
Result<MessageRecord> decode_message(ByteSpan bytes);
Result<CursorRecord> decode_cursor(ByteSpan bytes);
Result<GroupQueueRecord> decode_group_queue(ByteSpan bytes);
Result<SubscriptionRecord> decode_subscription(ByteSpan bytes);
Result<DlqRecord> decode_dlq(ByteSpan bytes);
/// The first fields of a DlqRecord (what the DLQ listing filters on), without decoding the
/// rest (error text, message, payload).
struct DlqHead {
    QueueId queue;
    PartitionId partition;
    Sequence sequence;
    GroupId group;
};
Result<DlqHead> decode_dlq_head(ByteSpan bytes);
Result<TraceRecord> decode_trace(ByteSpan bytes);
Result<PushItem> decode_push_item(ByteSpan bytes);

/// Small fixed-width values (ids) stored little-endian.
Bytes encode_u64(std::uint64_t value);
/// encode_u64 without allocating.
inline std::array<Byte, 8> encode_u64_fixed(std::uint64_t value) {
    std::array<Byte, 8> out{};
    store_le<std::uint64_t>(out.data(), value);
    return out;
}
Result<std::uint64_t> decode_u64(ByteSpan bytes);
/// decode_u64 of a value that holds an id (a name index entry or a sequence).
template <class Id>
Result<Id> decode_id(ByteSpan bytes) {
    QUEEN_TRY(const std::uint64_t value, decode_u64(bytes));
    return Id{static_cast<typename Id::rep>(value)};
}

// Keys (big-endian so byte order = numeric order).
inline store::KeyBuilder queue_key(QueueId queue) {
    store::KeyBuilder key;
    key.u32be(queue.value());
    return key;
}
/// Queue and group names: a 0x01 byte, then the name, so the empty name is a valid key.
inline store::KeyBuilder name_key(std::string_view name) {
    store::KeyBuilder key;
    key.u8(0x01).raw(as_bytes(name));
    return key;
}
/// The name back from a name_key (empty when malformed).
inline std::string_view name_from_key(ByteSpan key) {
    return key.empty() ? std::string_view{} : as_chars(key.subspan(1));
}
inline store::KeyBuilder partition_key(PartitionId partition) {
    store::KeyBuilder key;
    key.u64be(partition.value());
    return key;
}
inline store::KeyBuilder partition_name_key(QueueId queue, std::string_view name) {
    store::KeyBuilder key;
    key.u32be(queue.value()).raw(as_bytes(name));
    return key;
}
inline store::KeyBuilder message_key(PartitionId partition, Sequence sequence) {
    store::KeyBuilder key;
    key.u64be(partition.value()).u64be(sequence.value());
    return key;
}
/// The 16 bytes of a UUID written canonically (36 characters, 8-4-4-4-12 lowercase hex
/// digits); false for any other text (an id in uppercase hex is another id, kept as text).
bool parse_canonical_uuid(std::string_view text, std::span<Byte, 16> out) noexcept;
/// Appends the canonical text (36 characters) of 16 UUID bytes.
void append_canonical_uuid(std::string& out, std::span<const Byte, 16> bytes);

/// "q.ids" keys (layout 2): a transaction id that is a canonical UUID is stored as its 16 bytes,
/// first, so UUIDv7 ids (time-ordered, what the clients generate) insert near the end of the
/// table whatever their partition: 0x00 + 16 bytes + partition u64be (25 bytes). Any other id:
/// 0x01 + partition u64be + its bytes. The value is the message's sequence as a varint.
inline constexpr Byte txid_key_uuid = 0x00;
inline constexpr Byte txid_key_text = 0x01;
inline store::KeyBuilder txid_key(PartitionId partition, std::string_view transaction_id) {
    store::KeyBuilder key;
    std::array<Byte, 16> uuid;
    if (parse_canonical_uuid(transaction_id, uuid)) {
        key.u8(txid_key_uuid).raw(uuid).u64be(partition.value());
    } else {
        key.u8(txid_key_text).u64be(partition.value()).raw(as_bytes(transaction_id));
    }
    return key;
}
/// The "q.txids" key of layout 1 (partition u64be + the id's bytes): what the migration reads.
inline store::KeyBuilder txid_key_v1(PartitionId partition, std::string_view transaction_id) {
    store::KeyBuilder key;
    key.u64be(partition.value()).raw(as_bytes(transaction_id));
    return key;
}
/// A varint value in an inline buffer: a "q.ids" sequence, a "q.block_index" position.
class VarintValue {
public:
    explicit VarintValue(std::uint64_t value) noexcept {
        while (value >= 0x80) {
            bytes_[size_++] = static_cast<Byte>(value | 0x80);
            value >>= 7;
        }
        bytes_[size_++] = static_cast<Byte>(value);
    }
    [[nodiscard]] ByteSpan span() const noexcept { return {bytes_.data(), size_}; }

private:
    std::array<Byte, 10> bytes_{};
    std::size_t size_ = 0;
};
/// The sequence of a "q.ids" value. Errors: Errc::corruption (not one varint).
Result<Sequence> decode_txid_value(ByteSpan bytes);
/// A VarintValue's number (exactly one varint). Errors: Errc::corruption naming `what`.
Result<std::uint64_t> decode_varint_value(ByteSpan bytes, std::string_view what);
/// The sequence of the message of `partition` whose transaction id is `transaction_id`;
/// std::nullopt when there is none. Errors: those of Txn::get, Errc::corruption.
inline Result<std::optional<Sequence>> find_txid(const store::Txn& txn, store::Table table,
                                                 PartitionId partition,
                                                 std::string_view transaction_id) {
    QUEEN_TRY(auto raw, txn.get(table, txid_key(partition, transaction_id).span()));
    if (!raw) {
        return std::optional<Sequence>{};
    }
    QUEEN_TRY(const Sequence seq, decode_txid_value(*raw));
    return std::optional<Sequence>{seq};
}
inline store::KeyBuilder group_name_key(GroupId group) {
    store::KeyBuilder key;
    key.u32be(group.value());
    return key;
}
inline store::KeyBuilder cursor_key(PartitionId partition, GroupId group) {
    store::KeyBuilder key;
    key.u64be(partition.value()).u32be(group.value());
    return key;
}
inline store::KeyBuilder group_queue_key(QueueId queue, GroupId group) {
    store::KeyBuilder key;
    key.u32be(queue.value()).u32be(group.value());
    return key;
}
inline store::KeyBuilder subscription_key(GroupId group, QueueId queue, PartitionId partition) {
    store::KeyBuilder key;
    key.u32be(group.value()).u32be(queue.value()).u64be(partition.value());
    return key;
}
inline store::KeyBuilder sequence_key(std::uint64_t id) {
    store::KeyBuilder key;
    key.u64be(id);
    return key;
}
inline store::KeyBuilder trace_key(PartitionId partition, Sequence sequence, TraceEntryId id) {
    store::KeyBuilder key;
    key.u64be(partition.value()).u64be(sequence.value()).u64be(id.value());
    return key;
}

/// True when `key` starts with `prefix`.
inline bool has_prefix(ByteSpan key, ByteSpan prefix) {
    return key.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), key.begin());
}

/// Reads and decodes one record; std::nullopt when absent.
template <class Decode>
auto get_record(const store::Txn& txn, store::Table table, ByteSpan key, Decode decode)
    -> Result<std::optional<typename decltype(decode(ByteSpan{}))::value_type>> {
    using T = typename decltype(decode(ByteSpan{}))::value_type;
    QUEEN_TRY(auto raw, txn.get(table, key));
    if (!raw) {
        return std::optional<T>{};
    }
    QUEEN_TRY(auto value, decode(*raw));
    return std::optional<T>{std::move(value)};
}

}  // namespace queen::queues::detail
