// queues/src/records.cpp — field-by-field encoding of the queue table values; one fields()
// per record drives both the encoder and the decoder.
#include "records.hpp"

#include <array>
#include <cstring>
#include <type_traits>

#include "queen/core/field_codec.hpp"
#include "queen/core/hex.hpp"

namespace queen::queues::detail {
namespace {

template <class A>
void fields(A& a, QueueOptions& v) {
    // Table order: the on-disk field order (the table only ever appends).
    for_each_queue_option([&](const auto& option) { a(v.*option.member); });
}
template <class A>
void fields(A& a, MetaRecord& v) {
    a(v.next_queue_id);
    a(v.next_partition_id);
    a(v.next_group_id);
    a(v.next_lease_id);
    a(v.next_dlq_id);
    a(v.next_buffer_id);
    a(v.next_trace_id);
    a(v.push_maintenance);
    a(v.pop_maintenance);
    // next_position (layout 3) follows: versioned_tail().
}
template <class A>
void fields(A& a, QueueRecord& v) {
    a(v.name);
    a(v.namespace_name);
    a(v.task);
    a(v.created_at);
    a(v.options);
}
template <class A>
void fields(A& a, PartitionRecord& v) {
    a(v.queue);
    a(v.name);
    a(v.created_at);
    a(v.first_sequence);
    a(v.last_sequence);
    a(v.last_created_at);
    a(v.message_count);
    // tail (format 2) follows: versioned_tail().
}
template <class A>
void fields(A& a, MessageRecord& v) {
    a(v.created_at);
    a(v.transaction_id);
    a(v.trace_id);
    a(v.producer_sub);
    a(v.is_encrypted);
    a(v.payload);
}
template <class A>
void fields(A& a, CursorRecord& v) {
    a(v.consumed);
    a(v.lease_id);
    a(v.lease_expires_ms);
    a(v.batch_size);
    a(v.acked_count);
    a(v.batch_retry_count);
    a(v.last_failed_lease);
    a(v.not_before_ms);
    a(v.total_consumed);
    a(v.last_consumed_ms);
}
template <class A>
void fields(A& a, GroupQueueRecord& v) {
    a(v.round_robin_position);
    a(v.created_at);
}
template <class A>
void fields(A& a, SubscriptionRecord& v) {
    a.enumeration(v.mode, SubscriptionMode::new_only);
    a(v.timestamp);
    a(v.created_at);
}
template <class A>
void fields(A& a, DlqRecord& v) {
    a(v.queue);
    a(v.partition);
    a(v.sequence);
    a(v.group);
    a(v.error);
    a(v.retry_count);
    a(v.failed_at);
    a(v.message);
}
template <class A>
void fields(A& a, TraceRecord& v) {
    a(v.group);
    a(v.event_type);
    a(v.names);
    a(v.data);
    a(v.created_at);
}
template <class A>
void fields(A& a, PushItem& v) {
    a(v.queue);
    a(v.partition);
    a(v.transaction_id);
    a(v.trace_id);
    a(v.producer_sub);
    a(v.payload);
    a(v.is_encrypted);
}

/// Runs this file's fields() for a struct; after the last overload so lookup sees them all.
struct Fields {
    template <class A, class T>
    static void visit(A& a, T& value) {
        fields(a, value);
    }
};
using Writer = codec::Writer<Fields>;
using Sizer = codec::Sizer<Fields>;
using Reader = codec::Reader<Fields>;

/// The format byte of a record: the meta record's is the layout version.
template <class T>
constexpr std::uint8_t format_of() noexcept {
    if constexpr (std::is_same_v<T, MetaRecord>) {
        return layout_version;
    } else if constexpr (std::is_same_v<T, PartitionRecord>) {
        return partition_record_format;
    } else {
        return record_format_version;
    }
}

/// The formats a record decodes from: every format up to the current one for the records that
/// gained a field (versioned_tail), only the current one for the others.
template <class T>
constexpr bool is_known_format(std::uint8_t format) noexcept {
    if constexpr (std::is_same_v<T, MetaRecord> || std::is_same_v<T, PartitionRecord>) {
        return format >= record_format_version && format <= format_of<T>();
    } else {
        return format == record_format_version;
    }
}

/// The field a format added after the common ones, or nullptr: MetaRecord::next_position
/// (layout 3), PartitionRecord::tail (format 2).
template <class T>
std::uint64_t* versioned_tail(T& record, std::uint8_t format) noexcept {
    if constexpr (std::is_same_v<T, MetaRecord>) {
        return format >= 3 ? &record.next_position : nullptr;
    } else if constexpr (std::is_same_v<T, PartitionRecord>) {
        return format >= partition_record_format ? &record.tail : nullptr;
    } else {
        (void)record;
        (void)format;
        return nullptr;
    }
}

template <class T>
void encode_any_into(Bytes& out, const T& record) {
    Sizer sizer;
    sizer(const_cast<T&>(record));  // the sizer and the writer only read
    const std::uint64_t* tail = versioned_tail(const_cast<T&>(record), format_of<T>());
    out.clear();
    out.reserve(1 + sizer.size() + (tail != nullptr ? codec::varint_size(*tail) : 0));
    out.push_back(format_of<T>());
    Writer writer(out);
    writer(const_cast<T&>(record));
    if (tail != nullptr) {
        ByteWriter(out).varint(*tail);
    }
}

template <class T>
Bytes encode_any(const T& record) {
    Bytes out;
    encode_any_into(out, record);
    return out;
}

template <class T>
Result<T> decode_any(ByteSpan bytes, const char* what) {
    Reader reader(bytes);
    const std::uint8_t version = reader.bytes().u8();
    const bool is_known = is_known_format<T>(version);
    T record{};
    if (is_known) {
        reader(record);
        if (std::uint64_t* tail = versioned_tail(record, version)) {
            *tail = reader.bytes().varint();
        }
    }
    if (!is_known || !reader.bytes().ok() || !reader.bytes().at_end()) {
        return Error{queen::Errc::corruption, std::string("queues: undecodable ") + what +
                                                  " record (" + std::to_string(bytes.size()) +
                                                  " bytes, format " + std::to_string(version) +
                                                  ")"};
    }
    return record;
}

}  // namespace

Bytes encode(const MetaRecord& record) {
    return encode_any(record);
}
Bytes encode(const QueueRecord& record) {
    return encode_any(record);
}
Bytes encode(const PartitionRecord& record) {
    return encode_any(record);
}
Bytes encode(const MessageRecord& record) {
    return encode_any(record);
}
Bytes encode(const CursorRecord& record) {
    return encode_any(record);
}
Bytes encode(const GroupQueueRecord& record) {
    return encode_any(record);
}
Bytes encode(const SubscriptionRecord& record) {
    return encode_any(record);
}
Bytes encode(const DlqRecord& record) {
    return encode_any(record);
}
Bytes encode(const TraceRecord& record) {
    return encode_any(record);
}
Bytes encode(const PushItem& record) {
    return encode_any(record);
}

void encode_into(Bytes& out, const MetaRecord& record) {
    encode_any_into(out, record);
}
void encode_into(Bytes& out, const PartitionRecord& record) {
    encode_any_into(out, record);
}
void encode_into(Bytes& out, const CursorRecord& record) {
    encode_any_into(out, record);
}

void encode_partition_into(Bytes& out, QueueId queue, std::string_view name, TimestampMs created_at,
                           Sequence first_sequence, Sequence last_sequence,
                           TimestampMs last_created_at, std::uint64_t message_count,
                           std::uint64_t tail) {
    // Field order and encodings of fields(PartitionRecord), then its format 2 tail.
    out.clear();
    out.reserve(1 + 5 + codec::varint_size(name.size()) + name.size() + 5 * 10);
    out.push_back(partition_record_format);
    ByteWriter writer(out);
    writer.varint(queue.value());
    writer.str(name);
    writer.svarint(created_at.value());
    writer.varint(first_sequence.value());
    writer.varint(last_sequence.value());
    writer.svarint(last_created_at.value());
    writer.varint(message_count);
    writer.varint(tail);
}

namespace {

std::uint64_t zigzag(std::int64_t value) noexcept {
    return (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
}

Byte* put_varint(Byte* at, std::uint64_t value) noexcept {
    while (value >= 0x80) {
        *at++ = static_cast<Byte>(value | 0x80);
        value >>= 7;
    }
    *at++ = static_cast<Byte>(value);
    return at;
}

Byte* put_blob(Byte* at, const void* data, std::size_t size) noexcept {
    at = put_varint(at, size);
    if (size > 0) {
        std::memcpy(at, data, size);
    }
    return at + size;
}

// The compact message record the pushes write (message_record_format): u8 2, u8 flags,
// created_at svarint, the transaction id (16 bytes when flag_uuid, else str), trace_id str (when
// flag_trace), producer_sub str (when flag_sub), then the payload: the rest of the record (its
// length is the block's).
constexpr std::uint8_t flag_encrypted = 1;
constexpr std::uint8_t flag_uuid = 2;
constexpr std::uint8_t flag_trace = 4;
constexpr std::uint8_t flag_sub = 8;

std::uint8_t flags_of(const PushItem& item, bool is_uuid) noexcept {
    return static_cast<std::uint8_t>(
        (item.is_encrypted ? flag_encrypted : 0) | (is_uuid ? flag_uuid : 0) |
        (item.trace_id.empty() ? 0 : flag_trace) | (item.producer_sub.empty() ? 0 : flag_sub));
}

/// A pushed item's transaction id as the compact record stores it: its 16 bytes when it is a
/// canonical UUID (parsed once per record, for its size and its bytes).
struct CompactId {
    explicit CompactId(std::string_view id) noexcept : is_uuid(parse_canonical_uuid(id, uuid)) {}
    std::array<Byte, 16> uuid{};
    bool is_uuid;
};

std::size_t compact_record_size(TimestampMs created_at, const PushItem& item,
                                const CompactId& id) noexcept {
    const auto blob_size = [](std::size_t length) { return codec::varint_size(length) + length; };
    return 2 + codec::varint_size(zigzag(created_at.value())) +
           (id.is_uuid ? 16 : blob_size(item.transaction_id.size())) +
           (item.trace_id.empty() ? 0 : blob_size(item.trace_id.size())) +
           (item.producer_sub.empty() ? 0 : blob_size(item.producer_sub.size())) +
           item.payload.size();
}

/// Writes the compact record of a pushed item at `at` (compact_record_size bytes).
void write_message_record(Byte* at, TimestampMs created_at, const PushItem& item,
                          const CompactId& id) noexcept {
    const bool is_uuid = id.is_uuid;
    const auto& uuid = id.uuid;
    const std::uint8_t flags = flags_of(item, is_uuid);
    *at++ = message_record_format;
    *at++ = flags;
    at = put_varint(at, zigzag(created_at.value()));
    if (is_uuid) {
        std::memcpy(at, uuid.data(), uuid.size());
        at += uuid.size();
    } else {
        at = put_blob(at, item.transaction_id.data(), item.transaction_id.size());
    }
    if ((flags & flag_trace) != 0) {
        at = put_blob(at, item.trace_id.data(), item.trace_id.size());
    }
    if ((flags & flag_sub) != 0) {
        at = put_blob(at, item.producer_sub.data(), item.producer_sub.size());
    }
    if (!item.payload.empty()) {
        std::memcpy(at, item.payload.data(), item.payload.size());
    }
}

Result<MessageRecord> decode_compact_message(ByteSpan bytes) {
    ByteReader in(bytes);
    MessageRecord out;
    (void)in.u8();
    const std::uint8_t flags = in.u8();
    out.created_at = TimestampMs{in.svarint()};
    if ((flags & flag_uuid) != 0) {
        const ByteSpan uuid = in.raw(16);
        if (in.ok()) {
            std::string text;
            append_canonical_uuid(text, uuid.first<16>());
            out.transaction_id = text;
        }
    } else {
        out.transaction_id = as_chars(in.raw(static_cast<std::size_t>(in.varint())));
    }
    if ((flags & flag_trace) != 0) {
        out.trace_id = std::string(as_chars(in.raw(static_cast<std::size_t>(in.varint()))));
    }
    if ((flags & flag_sub) != 0) {
        out.producer_sub = std::string(as_chars(in.raw(static_cast<std::size_t>(in.varint()))));
    }
    out.is_encrypted = (flags & flag_encrypted) != 0;
    if (!in.ok() || (flags & ~(flag_encrypted | flag_uuid | flag_trace | flag_sub)) != 0) {
        return Error{queen::Errc::corruption, "queues: undecodable message record (" +
                                                  std::to_string(bytes.size()) +
                                                  " bytes, format 2)"};
    }
    const ByteSpan payload = in.raw(in.remaining());
    out.payload.assign(payload.begin(), payload.end());
    return out;
}

}  // namespace

std::size_t message_record_size(TimestampMs created_at, const PushItem& item) noexcept {
    return compact_record_size(created_at, item, CompactId(item.transaction_id));
}

std::size_t append_message_blob(Bytes& out, TimestampMs created_at, const PushItem& item) {
    const CompactId id(item.transaction_id);
    const std::size_t size = compact_record_size(created_at, item, id);
    const std::size_t at = out.size();
    out.resize(at + codec::varint_size(size) + size);
    Byte* record = put_varint(out.data() + at, size);
    write_message_record(record, created_at, item, id);
    return static_cast<std::size_t>(record - out.data());
}

Result<MetaRecord> decode_meta(ByteSpan bytes) {
    return decode_any<MetaRecord>(bytes, "meta");
}
Result<QueueRecord> decode_queue(ByteSpan bytes) {
    return decode_any<QueueRecord>(bytes, "queue");
}
Result<PartitionRecord> decode_partition(ByteSpan bytes) {
    return decode_any<PartitionRecord>(bytes, "partition");
}
Result<MessageRecord> decode_message(ByteSpan bytes) {
    if (!bytes.empty() && bytes[0] == message_record_format) {
        return decode_compact_message(bytes);
    }
    return decode_any<MessageRecord>(bytes, "message");
}
Result<CursorRecord> decode_cursor(ByteSpan bytes) {
    return decode_any<CursorRecord>(bytes, "cursor");
}
Result<GroupQueueRecord> decode_group_queue(ByteSpan bytes) {
    return decode_any<GroupQueueRecord>(bytes, "group_queue");
}
Result<SubscriptionRecord> decode_subscription(ByteSpan bytes) {
    return decode_any<SubscriptionRecord>(bytes, "subscription");
}
Result<DlqRecord> decode_dlq(ByteSpan bytes) {
    return decode_any<DlqRecord>(bytes, "dlq");
}
Result<DlqHead> decode_dlq_head(ByteSpan bytes) {
    // The first four fields of fields(DlqRecord), in its order.
    Reader reader(bytes);
    const std::uint8_t version = reader.bytes().u8();
    DlqHead head;
    reader(head.queue);
    reader(head.partition);
    reader(head.sequence);
    reader(head.group);
    if (version != record_format_version || !reader.bytes().ok()) {
        return Error{queen::Errc::corruption, "queues: undecodable dlq record (" +
                                                  std::to_string(bytes.size()) + " bytes, format " +
                                                  std::to_string(version) + ")"};
    }
    return head;
}
Result<TraceRecord> decode_trace(ByteSpan bytes) {
    return decode_any<TraceRecord>(bytes, "trace");
}
Result<PushItem> decode_push_item(ByteSpan bytes) {
    return decode_any<PushItem>(bytes, "buffered push");
}

bool parse_canonical_uuid(std::string_view text, std::span<Byte, 16> out) noexcept {
    if (text.size() != 36 || text[8] != '-' || text[13] != '-' || text[18] != '-' ||
        text[23] != '-') {
        return false;
    }
    // Where each byte's two digits start: the dashes at 8, 13, 18 and 23 are skipped.
    static constexpr std::array<std::uint8_t, 16> at{0,  2,  4,  6,  9,  11, 14, 16,
                                                     19, 21, 24, 26, 28, 30, 32, 34};
    std::uint8_t bad = 0;  // any digit's 0xff marks the text
    for (std::size_t i = 0; i < 16; ++i) {
        const std::uint8_t high = lower_hex_values[static_cast<unsigned char>(text[at[i]])];
        const std::uint8_t low = lower_hex_values[static_cast<unsigned char>(text[at[i] + 1])];
        bad |= high | low;
        out[i] = static_cast<Byte>((high << 4) | (low & 0x0f));
    }
    return (bad & 0xf0) == 0;
}

void append_canonical_uuid(std::string& out, std::span<const Byte, 16> bytes) {
    const std::size_t at = out.size();
    out.resize(at + 36);
    char* to = out.data() + at;
    for (std::size_t i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            *to++ = '-';
        }
        put_hex(to, bytes[i], 1);
        to += 2;
    }
}

Result<std::uint64_t> decode_varint_value(ByteSpan bytes, std::string_view what) {
    ByteReader reader(bytes);
    const std::uint64_t value = reader.varint();
    if (!reader.ok() || !reader.at_end()) {
        return Error{queen::Errc::corruption, "queues: " + std::string(what) + " value of " +
                                                  std::to_string(bytes.size()) + " bytes"};
    }
    return value;
}

Result<Sequence> decode_txid_value(ByteSpan bytes) {
    QUEEN_TRY(const std::uint64_t value, decode_varint_value(bytes, "transaction id"));
    return Sequence{value};
}

Bytes encode_u64(std::uint64_t value) {
    Bytes out(8);
    store_le<std::uint64_t>(out.data(), value);
    return out;
}

Result<std::uint64_t> decode_u64(ByteSpan bytes) {
    if (bytes.size() != 8) {
        return Error{queen::Errc::corruption,
                     "queues: id value of " + std::to_string(bytes.size()) + " bytes"};
    }
    return load_le<std::uint64_t>(bytes.data());
}

}  // namespace queen::queues::detail
