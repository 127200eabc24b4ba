// kv/src/records.cpp — field-by-field encoding of the kv.entries values (one fields() drives the
// encoder and the decoder) and the decoding of the tables' keys.
#include "records.hpp"

#include <string>

#include "queen/core/error.hpp"
#include "queen/core/field_codec.hpp"

namespace queen::kv::detail {
namespace {

template <class A>
void fields(A& a, EntryHeader& v) {
    a(v.version);
    a(v.updated_at);
    a(v.expires_at);
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

void encode_entry_into(Bytes& out, const EntryHeader& header, ByteSpan value) {
    auto& fields_in = const_cast<EntryHeader&>(header);  // the sizer and the writer only read
    Sizer sizer;
    sizer(fields_in);
    out.clear();
    out.reserve(1 + sizer.size() + codec::varint_size(value.size()) + value.size());
    out.push_back(record_format_version);
    Writer writer(out);
    writer(fields_in);
    // The value is the last field: a blob (varint length, bytes), as field_codec writes Bytes,
    // written from the caller's span so a 1 MiB value is copied once.
    ByteWriter(out).blob(value);
}

Result<EntryView> decode_entry(ByteSpan bytes) {
    Reader reader(bytes);
    EntryView view;
    const std::uint8_t version = reader.bytes().u8();
    if (version == record_format_version) {
        reader(view.header);
        view.value = reader.blob();
    }
    if (version != record_format_version || !reader.bytes().ok() || !reader.bytes().at_end()) {
        return codec::undecodable("kv", "kv.entries record", bytes);
    }
    if (view.header.version == 0) {
        return codec::undecodable("kv", "kv.entries record (version 0)", bytes);
    }
    return view;
}

Result<ExpiryKey> decode_expiry_key(ByteSpan bytes) {
    store::KeyReader reader(bytes);
    ExpiryKey out;
    out.expires_at = TimestampMs{reader.i64be()};
    reader.str(out.bucket);
    const ByteSpan key = reader.rest();
    if (!reader.ok() || out.bucket.empty() || key.empty()) {
        return codec::undecodable("kv", "kv.expiry key", bytes);
    }
    out.key.assign(as_chars(key));
    return out;
}

Result<EntriesKeyBucket> decode_entries_key_bucket(ByteSpan bytes) {
    store::KeyReader reader(bytes);
    EntriesKeyBucket out;
    reader.str(out.bucket);
    const ByteSpan key = reader.rest();
    if (!reader.ok() || out.bucket.empty() || key.empty()) {
        return codec::undecodable("kv", "kv.entries key", bytes);
    }
    out.bucket_field_bytes = bytes.size() - key.size();
    return out;
}

}  // namespace queen::kv::detail
