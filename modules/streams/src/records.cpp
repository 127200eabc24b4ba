// streams/src/records.cpp — field-by-field encoding of the streams.* values (one fields() drives
// the encoder and the decoder) and the decoding of the tables' keys.
#include "records.hpp"

#include <string>
#include <utility>

#include "queen/core/error.hpp"
#include "queen/core/field_codec.hpp"

namespace queen::streams::detail {
namespace {

template <class A>
void fields(A& a, QueryRecord& v) {
    a(v.number);
    a(v.epoch);
    a(v.created_at);
    a(v.updated_at);
    a(v.query_id);
    a(v.source_queue);
    a(v.sink_queue);
    a(v.config_hash);
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

}  // namespace

void encode_query_into(Bytes& out, const QueryRecord& record) {
    auto& fields_in = const_cast<QueryRecord&>(record);  // the sizer and the writer only read
    Sizer sizer;
    sizer(fields_in);
    out.clear();
    out.reserve(1 + sizer.size());
    out.push_back(record_format_version);
    Writer writer(out);
    writer(fields_in);
}

Result<QueryRecord> decode_query(ByteSpan bytes) {
    Reader reader(bytes);
    QueryRecord record;
    const std::uint8_t version = reader.bytes().u8();
    if (version == record_format_version) {
        reader(record);
    }
    if (version != record_format_version || !reader.bytes().ok() || !reader.bytes().at_end()) {
        return codec::undecodable("streams", "streams.queries record", bytes);
    }
    if (record.number == 0 || record.epoch == 0 || record.query_id.empty()) {
        return codec::undecodable(
            "streams", "streams.queries record (number, epoch or query_id empty)", bytes);
    }
    return record;
}

void encode_row_into(Bytes& out, TimestampMs updated_at, ByteSpan value) {
    std::int64_t at = updated_at.value();
    Sizer sizer;
    sizer(at);
    out.clear();
    out.reserve(1 + sizer.size() + codec::varint_size(value.size()) + value.size());
    out.push_back(record_format_version);
    Writer writer(out);
    writer(at);
    // The value is the last field, a blob written from the caller's span (one copy of 1 MiB).
    ByteWriter(out).blob(value);
}

Result<RowView> decode_row(ByteSpan bytes) {
    Reader reader(bytes);
    RowView view;
    const std::uint8_t version = reader.bytes().u8();
    if (version == record_format_version) {
        std::int64_t at = 0;
        reader(at);
        view.updated_at = TimestampMs{at};
        view.value = reader.blob();
    }
    if (version != record_format_version || !reader.bytes().ok() || !reader.bytes().at_end()) {
        return codec::undecodable("streams", "streams.rows record", bytes);
    }
    return view;
}

Result<RowKey> decode_row_key(ByteSpan bytes) {
    store::KeyReader reader(bytes);
    RowKey out;
    out.number = reader.u64be();
    out.epoch = reader.u64be();
    out.partition = reader.u64be();
    out.key = reader.rest();
    if (!reader.ok() || out.key.empty() || out.number == 0 || out.epoch == 0) {
        return codec::undecodable("streams", "streams.rows key", bytes);
    }
    return out;
}

Result<EpochKey> decode_epoch_key(ByteSpan bytes) {
    store::KeyReader reader(bytes);
    EpochKey out;
    out.number = reader.u64be();
    out.epoch = reader.u64be();
    if (!reader.ok() || !reader.at_end() || out.number == 0 || out.epoch == 0) {
        return codec::undecodable("streams", "streams.garbage key", bytes);
    }
    return out;
}

Result<std::uint64_t> decode_next_number(ByteSpan bytes) {
    if (bytes.size() != sizeof(std::uint64_t)) {
        return codec::undecodable("streams", "streams.meta next_number", bytes);
    }
    const auto number = store::load_be<std::uint64_t>(bytes.data());
    if (number == 0) {
        return codec::undecodable("streams", "streams.meta next_number (0)", bytes);
    }
    return number;
}

Query to_query(std::string_view name, QueryRecord record) {
    Query query;
    query.name.assign(name);
    query.query_id = std::move(record.query_id);
    query.source_queue = std::move(record.source_queue);
    query.sink_queue = std::move(record.sink_queue);
    query.config_hash = std::move(record.config_hash);
    query.number = record.number;
    query.epoch = record.epoch;
    query.created_at = record.created_at;
    query.updated_at = record.updated_at;
    return query;
}

Result<std::optional<QueryRecord>> read_query(const store::Txn& txn, const Tables& tables,
                                              std::string_view name) {
    if (name.empty() || name.size() > store::KeyBuilder::size_max) {
        return std::optional<QueryRecord>{};
    }
    QUEEN_TRY(const auto stored, txn.get(tables.queries, as_bytes(name)));
    if (!stored.has_value()) {
        return std::optional<QueryRecord>{};
    }
    QUEEN_TRY(auto record, decode_query(*stored));
    return std::optional<QueryRecord>{std::move(record)};
}

Result<std::optional<NamedQuery>> read_query_by_id(const store::Txn& txn, const Tables& tables,
                                                   std::string_view query_id) {
    if (query_id.empty() || query_id.size() > store::KeyBuilder::size_max) {
        return std::optional<NamedQuery>{};
    }
    QUEEN_TRY(const auto stored_name, txn.get(tables.query_ids, as_bytes(query_id)));
    if (!stored_name.has_value()) {
        return std::optional<NamedQuery>{};
    }
    NamedQuery found;
    found.name.assign(as_chars(*stored_name));
    QUEEN_TRY(auto record, read_query(txn, tables, found.name));
    if (!record.has_value() || record->query_id != query_id) {
        return Error{queen::Errc::corruption,
                     "streams: streams.query_ids names query '" + found.name + "' for id '" +
                         std::string(query_id) + "', which " +
                         (record.has_value() ? "has id '" + record->query_id + "'"
                                             : std::string("is not there"))};
    }
    found.record = std::move(*record);
    return std::optional<NamedQuery>{std::move(found)};
}

}  // namespace queen::streams::detail
