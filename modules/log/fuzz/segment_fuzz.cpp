// modules/log/fuzz/segment_fuzz.cpp — libFuzzer target: decode arbitrary bytes as a segment file.
// Checks the decoder never reads out of bounds, that what it accepts is self-consistent, and that
// decoding through the smallest windows a SegmentView may give (recovery reads segments in
// chunks) answers exactly as decoding the whole buffer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "queen/core/assert.hpp"
#include "queen/log/format.hpp"

namespace {

/// A SegmentView giving exactly min(want, size - offset) bytes, each window a new heap copy, so
/// ASan reports a read past a window or of an earlier one.
class MinimalView {
public:
    explicit MinimalView(queen::ByteSpan bytes) : bytes_(bytes) {}
    queen::Result<queen::ByteSpan> operator()(std::uint64_t offset, std::uint64_t want) {
        QUEEN_ASSERT(offset <= bytes_.size(), "a view starts inside the segment");
        const auto length =
            static_cast<std::size_t>(std::min<std::uint64_t>(want, bytes_.size() - offset));
        window_ = std::make_unique<queen::Byte[]>(length);
        std::copy_n(bytes_.data() + offset, length, window_.get());
        return queen::ByteSpan{window_.get(), length};
    }

private:
    queen::ByteSpan bytes_;
    std::unique_ptr<queen::Byte[]> window_;
};

}  // namespace

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

    MinimalView minimal(bytes);
    const SegmentView view = std::ref(minimal);
    std::uint64_t windowed_seen = 0;
    const auto windowed = scan_segment_windowed(
        size, view, payload_max, [&](const RecordView&, std::uint64_t) { ++windowed_seen; });
    QUEEN_ASSERT(windowed.has_value());
    QUEEN_ASSERT(windowed->header.has_value() == scan.header.has_value());
    QUEEN_ASSERT(windowed->record_count == seen && windowed_seen == seen);
    QUEEN_ASSERT(windowed->valid_bytes == scan.valid_bytes && windowed->stop == scan.stop);
    QUEEN_ASSERT(windowed->stop_offset == scan.stop_offset && windowed->detail == scan.detail);
    QUEEN_ASSERT(windowed->zero_tail_bytes == scan.zero_tail_bytes);
    QUEEN_ASSERT(windowed->last_index == scan.last_index && windowed->last_term == scan.last_term);
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
            const auto next = find_next_record(bytes, scan.stop_offset + 1, scan.last_index,
                                               scan.last_term, payload_max);
            const auto windowed_next = find_next_record_windowed(
                size, view, scan.stop_offset + 1, scan.last_index, scan.last_term, payload_max);
            QUEEN_ASSERT(windowed_next.has_value() && *windowed_next == next);
            if (next) {
                QUEEN_ASSERT(*next > scan.stop_offset && *next < size);
                QUEEN_ASSERT(decode_record(bytes.subspan(*next), payload_max).status ==
                             StopReason::end_of_data);
            }
        }
    }
    return 0;
}
