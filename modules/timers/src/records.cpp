// timers/src/records.cpp — field-by-field encoding of the timers.timers value; one fields() drives
// the encoder, the sizer and the decoder.
#include "records.hpp"

#include <string>
#include <utility>

#include "queen/core/field_codec.hpp"

namespace queen::timers::detail {
namespace {

/// Every field but the payload, which is last so a reader can step over it.
template <class A>
void head_fields(A& a, TimerRecord& v) {
    a(v.due_at);
    a(v.interval_ms);
    a(v.end_at);
    a(v.fired);
    a(v.created_at);
}
template <class A>
void fields(A& a, TimerRecord& v) {
    head_fields(a, v);
    a(v.payload);
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

Error corrupt(std::string_view what, std::string_view id, std::size_t size_bytes) {
    return Error{queen::Errc::corruption, "timers: undecodable " + std::string(what) +
                                              " of timer " + to_hex(as_bytes(id)) + " (" +
                                              std::to_string(size_bytes) + " bytes)"};
}

}  // namespace

void encode_into(Bytes& out, const TimerRecord& record) {
    auto& fields_of = const_cast<TimerRecord&>(record);  // the sizer and the writer only read
    Sizer sizer;
    sizer(fields_of);
    out.clear();
    out.reserve(1 + sizer.size());
    out.push_back(record_format_version);
    Writer writer(out);
    writer(fields_of);
}

Result<TimerRecord> decode_record(ByteSpan value, std::string_view id, bool with_payload) {
    Reader reader(value);
    TimerRecord record;
    const std::uint8_t version = reader.bytes().u8();
    if (version != record_format_version) {
        return corrupt("record (format " + std::to_string(version) + ")", id, value.size());
    }
    if (with_payload) {
        reader(record);
    } else {
        // Step over the payload (checked, not copied).
        head_fields(reader, record);
        (void)reader.blob();
    }
    if (!reader.bytes().ok() || !reader.bytes().at_end()) {
        return corrupt("record", id, value.size());
    }
    return record;
}

Result<DueKey> parse_due_key(ByteSpan key) {
    store::KeyReader reader(key);
    DueKey out;
    out.due_at = TimestampMs{reader.i64be()};
    out.id = as_chars(reader.rest());
    if (!reader.ok() || out.id.empty()) {
        return Error{queen::Errc::corruption, "timers: undecodable timers.due key " + to_hex(key)};
    }
    return out;
}

Timer to_timer(std::string_view id, TimerRecord&& record) {
    Timer timer;
    timer.id.assign(id);
    timer.due_at = record.due_at;
    timer.interval_ms = record.interval_ms;
    timer.end_at = record.end_at;
    timer.fired = record.fired;
    timer.created_at = record.created_at;
    timer.payload = std::move(record.payload);
    return timer;
}

}  // namespace queen::timers::detail
