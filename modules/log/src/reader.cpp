// modules/log/src/reader.cpp — the log's read path: read() through each segment's sparse index
// (every record's CRC checked), term_at(), and a record's byte offset for truncation.
#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "log_impl.hpp"
#include "queen/core/assert.hpp"

namespace queen::log {

/// Byte offset of record `index` inside `segment` (index in the segment's range), found from
/// the sparse index by walking record headers. Caller holds io_mutex.
Result<std::uint64_t> Log::Impl::offset_of(const detail::Segment& segment, LogIndex index) const {
    QUEEN_ASSERT(index >= segment.header.first_index, "offset_of below the segment");
    QUEEN_ASSERT(index <= segment.last_index, "offset_of above the segment");
    auto it = std::upper_bound(
        segment.sparse.begin(), segment.sparse.end(), index,
        [](LogIndex i, const detail::IndexEntry& entry) { return i < entry.index; });
    QUEEN_ASSERT(it != segment.sparse.begin(), "sparse index starts at the first record");
    --it;
    LogIndex at_index = it->index;
    std::uint64_t offset = it->offset;
    while (at_index < index) {
        std::array<Byte, record_header_size> header{};
        QUEEN_TRY(const std::size_t got, detail::read_fully(*segment.file, offset, header));
        if (got != header.size() ||
            load_le<std::uint64_t>(header.data() + 16) != at_index.value()) {
            return Error{Errc::corruption, segment.path.string() + " offset " +
                                               std::to_string(offset) +
                                               ": record header does not match the index"};
        }
        offset += encoded_record_size(load_le<std::uint32_t>(header.data() + 4));
        at_index = at_index.next();
    }
    return offset;
}

/// Reads records [first, end) of one segment starting from its sparse index into `out`.
Status Log::Impl::read_segment(const detail::Segment& segment, std::uint64_t size_limit,
                               LogIndex first, LogIndex end, std::uint64_t bytes_max,
                               std::uint64_t& bytes_collected, std::vector<Record>& out) const {
    auto it = std::upper_bound(
        segment.sparse.begin(), segment.sparse.end(), first,
        [](LogIndex i, const detail::IndexEntry& entry) { return i < entry.index; });
    QUEEN_ASSERT(it != segment.sparse.begin(), "sparse index starts at the first record");
    --it;
    LogIndex expected = it->index;
    std::uint64_t position = it->offset;
    constexpr std::size_t chunk_bytes = 256u << 10;
    Bytes buffer;
    auto corrupt = [&](std::uint64_t offset, const std::string& why) {
        return Error{Errc::corruption,
                     segment.path.string() + " offset " + std::to_string(offset) + ": " + why};
    };
    auto done = [&] {
        return expected >= end || out.size() >= options.read_records_max ||
               (!out.empty() && bytes_collected >= bytes_max);
    };
    while (!done() && position < size_limit) {
        std::size_t want =
            static_cast<std::size_t>(std::min<std::uint64_t>(size_limit - position, chunk_bytes));
        // Make sure at least one whole record fits in the buffer.
        if (want >= record_header_size) {
            std::array<Byte, record_header_size> header{};
            QUEEN_TRY(const std::size_t got, detail::read_fully(*segment.file, position, header));
            if (got != header.size()) {
                return corrupt(position, "short record header");
            }
            const auto payload_size = load_le<std::uint32_t>(header.data() + 4);
            if (payload_size > options.record_size_bytes_max) {
                return corrupt(position, "record length " + std::to_string(payload_size) +
                                             " over the maximum");
            }
            want = std::max<std::size_t>(want, encoded_record_size(payload_size));
        }
        buffer.resize(want);
        QUEEN_TRY(const std::size_t got, detail::read_fully(*segment.file, position, buffer));
        ByteSpan view{buffer.data(), got};
        std::size_t consumed = 0;
        while (!done() && consumed < view.size()) {
            const ByteSpan rest = view.subspan(consumed);
            if (rest.size() < record_header_size ||
                rest.size() < encoded_record_size(load_le<std::uint32_t>(rest.data() + 4))) {
                break;  // the record continues in the next chunk
            }
            RecordDecode decoded = decode_record(rest, options.record_size_bytes_max);
            if (decoded.status != StopReason::end_of_data) {
                return corrupt(position + consumed, decoded.detail);
            }
            if (decoded.record.index != expected) {
                return corrupt(position + consumed,
                               "record index " + std::to_string(decoded.record.index.value()) +
                                   " where " + std::to_string(expected.value()) + " was expected");
            }
            if (expected >= first) {
                out.push_back(
                    Record{decoded.record.term, decoded.record.index, decoded.record.type,
                           Bytes(decoded.record.payload.begin(), decoded.record.payload.end())});
                bytes_collected += decoded.record.payload.size();
            }
            expected = expected.next();
            consumed += decoded.size;
        }
        if (consumed == 0 && !done()) {
            return corrupt(position, "record runs past the written end of the segment");
        }
        position += consumed;
    }
    return {};
}

Result<std::vector<Record>> Log::read(LogIndex first, LogIndex end, std::uint64_t bytes_max) {
    std::shared_lock io(impl_->io_mutex);
    std::unique_lock lock(impl_->mutex);
    QUEEN_TRY(impl_->usable_locked());
    if (first > end || first < impl_->first_index || end > impl_->last_index.next()) {
        return Error{Errc::out_of_range, "read [" + std::to_string(first.value()) + ", " +
                                             std::to_string(end.value()) + "): log holds [" +
                                             std::to_string(impl_->first_index.value()) + ", " +
                                             std::to_string(impl_->last_index.value()) + "]"};
    }
    std::vector<Record> out;
    if (first == end) {
        return out;
    }
    const LogIndex last_wanted =
        std::min(end.prev(), LogIndex{first.value() + impl_->options.read_records_max - 1});
    impl_->progress_cv.wait(
        lock, [&] { return impl_->written_index >= last_wanted || impl_->poison.has_value(); });
    QUEEN_TRY(impl_->usable_locked());
    struct Piece {
        std::shared_ptr<detail::Segment> segment;
        std::uint64_t size_limit;
    };
    std::vector<Piece> pieces;
    for (const auto& segment : impl_->segments) {
        if (segment->is_empty() || segment->last_index < first ||
            segment->header.first_index > last_wanted) {
            continue;
        }
        pieces.push_back({segment, segment->size_bytes});
    }
    // The sparse index of a segment can grow while we read (the writer appends under `mutex`),
    // so the reads below use a copy of each segment's entries taken now.
    std::vector<detail::Segment> snapshots;
    snapshots.reserve(pieces.size());
    for (const Piece& piece : pieces) {
        detail::Segment copy;
        copy.path = piece.segment->path;
        copy.header = piece.segment->header;
        copy.last_index = piece.segment->last_index;
        copy.file = piece.segment->file;
        copy.sparse = piece.segment->sparse;
        snapshots.push_back(std::move(copy));
    }
    lock.unlock();

    std::uint64_t bytes_collected = 0;
    for (std::size_t i = 0; i < snapshots.size(); ++i) {
        const LogIndex from = std::max(first, snapshots[i].header.first_index);
        QUEEN_TRY(impl_->read_segment(snapshots[i], pieces[i].size_limit, from, last_wanted.next(),
                                      bytes_max, bytes_collected, out));
        if (out.size() >= impl_->options.read_records_max ||
            (!out.empty() && bytes_collected >= bytes_max)) {
            break;
        }
    }
    QUEEN_ASSERT(!out.empty(), "a non-empty read returns at least one record");
    QUEEN_ASSERT(out.front().index == first, "reads start at the first index asked for");
    return out;
}

Result<Term> Log::term_at(LogIndex index) const {
    std::lock_guard lock(impl_->mutex);
    return impl_->term_at_locked(index);
}

}  // namespace queen::log
