// locks/src/records.cpp — field-by-field encoding of the "locks.grants" values; one fields()
// drives both the encoder and the decoder.
#include "records.hpp"

#include <string>

#include "queen/core/field_codec.hpp"

namespace queen::locks::detail {
namespace {

template <class A>
void fields(A& a, GrantRecord& v) {
    a(v.owner);
    a(v.token);
    a(v.acquired_at);
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

void encode_into(Bytes& out, const GrantRecord& record) {
    Sizer sizer;
    sizer(const_cast<GrantRecord&>(record));  // the sizer and the writer only read
    out.clear();
    out.reserve(1 + sizer.size());
    out.push_back(record_format_version);
    Writer writer(out);
    writer(const_cast<GrantRecord&>(record));
}

Bytes encode(const GrantRecord& record) {
    Bytes out;
    encode_into(out, record);
    return out;
}

Result<GrantRecord> decode_grant(ByteSpan value, std::string_view name) {
    Reader reader(value);
    const std::uint8_t version = reader.bytes().u8();
    GrantRecord record;
    if (version == record_format_version) {
        reader(record);
    }
    if (version != record_format_version || !reader.bytes().ok() || !reader.bytes().at_end()) {
        return Error{queen::Errc::corruption, "locks: undecodable grant record of lock '" +
                                                  std::string(name) + "' (" +
                                                  std::to_string(value.size()) + " bytes, format " +
                                                  std::to_string(version) + ")"};
    }
    return record;
}

Result<ExpiryKey> decode_expiry_key(ByteSpan key) {
    if (key.size() <= expiry_prefix_size) {
        return Error{queen::Errc::corruption, "locks: expiry key of " + std::to_string(key.size()) +
                                                  " bytes (at least 9 expected)"};
    }
    store::KeyReader reader(key);
    ExpiryKey out;
    out.expires_at = TimestampMs{reader.i64be()};
    out.name = std::string(as_chars(reader.rest()));
    return out;
}

}  // namespace queen::locks::detail
