// streams/src/records.hpp — the key and value layouts of the streams.* tables and their encoding
// (README "On disk" describes them byte by byte).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"
#include "queen/store/keys.hpp"
#include "queen/streams/streams.hpp"

namespace queen::streams::detail {

inline constexpr std::uint8_t record_format_version = 1;

/// Bytes a row key puts before the row's own key: number, epoch and partition as u64be.
inline constexpr std::size_t row_prefix_bytes = 24;
/// Bytes of the (number, epoch) part that every row of one epoch shares (and the garbage key).
inline constexpr std::size_t epoch_prefix_bytes = 16;

/// The single key of "streams.meta" that holds the next query number.
inline constexpr std::string_view next_number_key = "next_number";

/// A "streams.queries" value: the query without its name (the name is the key).
struct QueryRecord {
    std::uint64_t number = 0;
    std::uint64_t epoch = 0;
    TimestampMs created_at{0};
    TimestampMs updated_at{0};
    std::string query_id;
    std::string source_queue;
    std::string sink_queue;
    std::string config_hash;
    friend bool operator==(const QueryRecord&, const QueryRecord&) = default;
};

/// A decoded "streams.rows" value; `value` points into the bytes it was decoded from.
struct RowView {
    TimestampMs updated_at{0};
    ByteSpan value;
};

/// "streams.queries" value: format byte, then the record's fields (field_codec).
void encode_query_into(Bytes& out, const QueryRecord& record);
/// Errors: queen::Errc::corruption (wrong format byte, truncated, trailing bytes, number or
/// epoch 0, empty query_id).
[[nodiscard]] Result<QueryRecord> decode_query(ByteSpan bytes);

/// "streams.rows" value: format byte, updated_at (signed varint), the value as a blob.
void encode_row_into(Bytes& out, TimestampMs updated_at, ByteSpan value);
/// Errors: queen::Errc::corruption.
[[nodiscard]] Result<RowView> decode_row(ByteSpan bytes);

/// "streams.rows" key: u64be(number), u64be(epoch), u64be(partition), then the key's bytes raw
/// (the last field). The rows of one epoch, and within it of one partition, are contiguous and
/// in key byte order.
inline void row_key(store::KeyBuilder& out, std::uint64_t number, std::uint64_t epoch,
                    std::uint64_t partition, std::string_view key) {
    out.clear();
    out.u64be(number).u64be(epoch).u64be(partition).raw(as_bytes(key));
}
/// The first 16 bytes of every row key of (number, epoch); also the "streams.garbage" key.
inline void epoch_key(store::KeyBuilder& out, std::uint64_t number, std::uint64_t epoch) {
    out.clear();
    out.u64be(number).u64be(epoch);
}

/// A "streams.rows" key taken apart; `key` points into the bytes.
struct RowKey {
    std::uint64_t number = 0;
    std::uint64_t epoch = 0;
    std::uint64_t partition = 0;
    ByteSpan key;
};
/// Errors: queen::Errc::corruption (shorter than the prefix plus one key byte).
[[nodiscard]] Result<RowKey> decode_row_key(ByteSpan bytes);
/// A "streams.garbage" key. Errors: queen::Errc::corruption (not 16 bytes, number or epoch 0).
struct EpochKey {
    std::uint64_t number = 0;
    std::uint64_t epoch = 0;
};
[[nodiscard]] Result<EpochKey> decode_epoch_key(ByteSpan bytes);

/// The "streams.meta" next_number value: u64be. Errors: queen::Errc::corruption.
[[nodiscard]] Result<std::uint64_t> decode_next_number(ByteSpan bytes);

/// A query as reads see it, from its name and record.
[[nodiscard]] Query to_query(std::string_view name, QueryRecord record);

/// The record of the query `name`; std::nullopt when absent, or when the name is empty or too
/// long to be a stored key. Errors: storage errors, queen::Errc::corruption.
[[nodiscard]] Result<std::optional<QueryRecord>> read_query(const store::Txn& txn,
                                                            const Tables& tables,
                                                            std::string_view name);
/// A query found by its id: its name and record.
struct NamedQuery {
    std::string name;
    QueryRecord record;
};
/// The query whose id is `query_id` (the id index, then the record); std::nullopt when absent
/// or not storable. Errors: storage errors, queen::Errc::corruption (the index names a query
/// that is not there, or one with another id).
[[nodiscard]] Result<std::optional<NamedQuery>> read_query_by_id(const store::Txn& txn,
                                                                 const Tables& tables,
                                                                 std::string_view query_id);

}  // namespace queen::streams::detail
