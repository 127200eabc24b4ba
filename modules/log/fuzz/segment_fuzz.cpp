// modules/log/fuzz/segment_fuzz.cpp — libFuzzer target: decode arbitrary bytes as a segment file.
// Checks the decoder never reads out of bounds and that what it accepts is self-consistent.
#include <cstddef>
#include <cstdint>

#include "queen/core/assert.hpp"
#include "queen/log/format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace queen::log;
    const queen::ByteSpan bytes{data, size};
    constexpr std::uint32_t payload_max = 1u << 20;
    std::uint64_t seen = 0;
    std::uint64_t next_offset = segment_header_size;
    const SegmentScan scan =
        scan_segment(bytes, payload_max, [&](const RecordView& record, std::uint64_t offset) {
            QUEEN_ASSERT(offset == next_offset, "records are contiguous");
            QUEEN_ASSERT(record.payload.data() >= data && record.payload.data() <= data + size);
            next_offset = offset + encoded_record_size(record.payload.size());
            ++seen;
        });
    QUEEN_ASSERT(scan.record_count == seen);
    QUEEN_ASSERT(scan.valid_bytes <= size);
    if (scan.header) {
        QUEEN_ASSERT(scan.valid_bytes == next_offset);
        QUEEN_ASSERT(scan.last_index.value() == scan.header->first_index.value() - 1 + seen);
        // Re-encoding what was accepted must reproduce the same bytes.
        queen::Bytes again(segment_header_size);
        encode_segment_header(*scan.header, again);
        (void)scan_segment(bytes, payload_max, [&](const RecordView& record, std::uint64_t) {
            encode_record(again, record.term, record.index, record.type, record.payload);
        });
        QUEEN_ASSERT(again.size() == scan.valid_bytes);
        for (std::size_t i = 0; i < again.size(); ++i) {
            QUEEN_ASSERT(again[i] == data[i], "re-encoding differs at byte ", i);
        }
        if (scan.stop != StopReason::end_of_data) {
            if (auto next = find_next_record(bytes, scan.stop_offset + 1, scan.last_index,
                                             scan.last_term, payload_max)) {
                QUEEN_ASSERT(*next > scan.stop_offset && *next < size);
                QUEEN_ASSERT(decode_record(bytes.subspan(*next), payload_max).status ==
                             StopReason::end_of_data);
            }
        }
    }
    return 0;
}
