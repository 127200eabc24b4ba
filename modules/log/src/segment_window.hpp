// modules/log/src/segment_window.hpp — private to the log's sources: a segment file read through
// a bounded buffer, the SegmentView (format.hpp) recovery decodes segments with, so opening a log
// never holds a whole segment (up to segment_size_bytes_max) in memory.
#pragma once

#include <cstdint>
#include <filesystem>

#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"
#include "queen/log/file.hpp"
#include "queen/log/format.hpp"

namespace queen::log::detail {

/// How much of a segment recovery reads at once. Large enough that a read costs little next to
/// the CRCs of its records, small enough that the allocator keeping freed pages (tcmalloc does)
/// leaves no trace worth measuring. A longer record is held whole, alone.
inline constexpr std::size_t recovery_chunk_bytes = std::size_t{1} << 20;

/// The bytes of one segment file of `size` bytes, a window at a time: a view starts a new window
/// at its offset when the current one does not hold what it asks for, reading `chunk_bytes`, or
/// the whole of what was asked when that is longer (one long record), and keeping the bytes it
/// already had from that offset on (the start of a record cut by the window's end).
class SegmentWindow {
public:
    /// `file` must outlive the window; `path` is for error messages.
    SegmentWindow(const File& file, std::filesystem::path path, std::uint64_t size,
                  std::size_t chunk_bytes = recovery_chunk_bytes);

    /// The SegmentView contract. Errors: those of File::read_at, and Errc::io when the file
    /// ends before `size` (it changed while being read).
    [[nodiscard]] Result<ByteSpan> view(std::uint64_t offset, std::uint64_t want);
    /// view() as a SegmentView; refers to *this.
    [[nodiscard]] SegmentView as_view();

    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    /// The largest buffer the window has held (the memory bound tests check).
    [[nodiscard]] std::size_t peak_buffer_bytes() const noexcept { return peak_buffer_bytes_; }
    /// Bytes read from the file so far (each at most once unless a long record moved the window
    /// back over them).
    [[nodiscard]] std::uint64_t bytes_read() const noexcept { return bytes_read_; }

private:
    const File& file_;
    std::filesystem::path path_;
    std::uint64_t size_;
    std::size_t chunk_bytes_;
    Bytes buffer_;  // buffer_[0, held_) are the file's bytes [start_, start_ + held_)
    std::uint64_t start_ = 0;
    std::size_t held_ = 0;
    std::size_t peak_buffer_bytes_ = 0;
    std::uint64_t bytes_read_ = 0;
};

}  // namespace queen::log::detail
