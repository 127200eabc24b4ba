// modules/log/src/segment_window.cpp — SegmentWindow: a segment file read in bounded chunks.
#include "segment_window.hpp"

#include <algorithm>
#include <cstring>

#include "log_impl.hpp"
#include "queen/core/assert.hpp"

namespace queen::log::detail {

SegmentWindow::SegmentWindow(const File& file, std::filesystem::path path, std::uint64_t size,
                             std::size_t chunk_bytes)
    : file_(file), path_(std::move(path)), size_(size), chunk_bytes_(chunk_bytes) {
    QUEEN_ASSERT(chunk_bytes > 0, "a segment window reads at least one byte at a time");
}

Result<ByteSpan> SegmentWindow::view(std::uint64_t offset, std::uint64_t want) {
    QUEEN_ASSERT(offset <= size_, "a segment view starts inside the segment");
    const std::uint64_t need = std::min(want, size_ - offset);
    const std::uint64_t held_end = start_ + held_;
    if (offset >= start_ && offset + need <= held_end) {
        return ByteSpan{buffer_.data() + (offset - start_),
                        static_cast<std::size_t>(held_end - offset)};
    }
    const auto length = static_cast<std::size_t>(
        std::min(std::max<std::uint64_t>(need, chunk_bytes_), size_ - offset));
    const std::size_t kept =
        offset >= start_ && offset < held_end ? static_cast<std::size_t>(held_end - offset) : 0;
    const std::size_t kept_from = kept > 0 ? static_cast<std::size_t>(offset - start_) : 0;
    if (length > buffer_.size() || (buffer_.size() > chunk_bytes_ && length <= chunk_bytes_)) {
        // Grows only for a record longer than a chunk, and shrinks back after it: one long record
        // must not keep its size for the rest of the scan.
        Bytes next(length);
        std::copy_n(buffer_.begin() + static_cast<std::ptrdiff_t>(kept_from), kept, next.begin());
        buffer_.swap(next);
        peak_buffer_bytes_ = std::max(peak_buffer_bytes_, buffer_.size());
    } else if (kept > 0) {
        std::memmove(buffer_.data(), buffer_.data() + kept_from, kept);
    }
    start_ = offset;
    held_ = kept;
    QUEEN_TRY(
        const std::size_t got,
        read_fully(file_, offset + kept, MutableByteSpan{buffer_}.subspan(kept, length - kept)));
    held_ += got;
    bytes_read_ += got;
    if (held_ < length) {
        return Error{Errc::io, path_.string() + ": ends at byte " + std::to_string(offset + held_) +
                                   " while reading it, its size was " + std::to_string(size_) +
                                   " (the file changed while the log was being opened)"};
    }
    return ByteSpan{buffer_.data(), held_};
}

SegmentView SegmentWindow::as_view() {
    return [this](std::uint64_t offset, std::uint64_t want) { return view(offset, want); };
}

}  // namespace queen::log::detail
