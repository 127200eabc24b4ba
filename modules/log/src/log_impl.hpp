// modules/log/src/log_impl.hpp — private to the log's sources: the segment, term-run and group
// types, Log::Impl (its state, locks and the small helpers every part uses), file I/O helpers.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "queen/core/assert.hpp"
#include "queen/log/log.hpp"

namespace queen::log {
namespace detail {

struct IndexEntry {
    LogIndex index;
    std::uint64_t offset = 0;
};

/// One segment file and what is known about its contents.
struct Segment {
    std::filesystem::path path;
    SegmentHeader header;
    LogIndex last_index;           // header.first_index - 1 when empty
    Term last_term;                // header.prev_term when empty
    std::uint64_t size_bytes = 0;  // end of the last record (where the next one goes)
    std::uint64_t file_bytes = 0;  // the file's size: size_bytes plus a zero-filled tail
    std::shared_ptr<File> file;
    std::vector<IndexEntry> sparse;  // ascending; the first record always has an entry
    // Writer only, last segment only (Options::direct_io): the O_DIRECT handle, opened at the
    // first write and dropped when the segment is sealed or truncated, and the bytes of the
    // partial block the next write starts in (its offsets [size_bytes - tail.size(),
    // size_bytes)), which that write rewrites unchanged.
    std::unique_ptr<File> direct;
    Bytes tail;

    [[nodiscard]] bool is_empty() const noexcept { return last_index < header.first_index; }
    void note_record(LogIndex index, Term term, std::uint64_t offset, std::uint64_t size,
                     std::uint32_t interval) {
        QUEEN_ASSERT(index == last_index.next(), "segment records are consecutive");
        QUEEN_ASSERT(offset == size_bytes, "segment records are contiguous in the file");
        if (sparse.empty() || offset >= sparse.back().offset + interval) {
            sparse.push_back({index, offset});
        }
        last_index = index;
        last_term = term;
        size_bytes = offset + size;
    }
};

struct TermRun {
    LogIndex first;
    Term term;
};

struct Slot {
    LogIndex index;
    Term term;
    std::uint32_t size = 0;  // encoded bytes
};

struct PendingAppend {
    std::uint64_t sequence = 0;
    DurableCallback callback;
};

struct Group {
    Bytes buffer;
    std::vector<Slot> slots;
    std::vector<PendingAppend> appends;
};

inline constexpr std::uint64_t round_up(std::uint64_t value, std::uint64_t alignment) noexcept {
    return (value + alignment - 1) / alignment * alignment;
}

/// A buffer whose address is a multiple of an alignment (for O_DIRECT writes).
class AlignedBuffer {
public:
    /// Makes room for `size` bytes at `alignment`; the old contents are not kept.
    [[nodiscard]] Byte* reserve(std::size_t size, std::size_t alignment) {
        if (size > capacity_ || alignment != alignment_) {
            const std::size_t capacity = round_up(std::max(size, capacity_), alignment);
            bytes_.reset(static_cast<Byte*>(std::aligned_alloc(alignment, capacity)));
            QUEEN_ASSERT(bytes_ != nullptr, "out of memory for a ", capacity, "-byte buffer");
            capacity_ = capacity;
            alignment_ = alignment;
        }
        return bytes_.get();
    }
    /// `size` zeros at `alignment` (zeroed when allocated: only for a buffer used for nothing
    /// else).
    [[nodiscard]] const Byte* zeros(std::size_t size, std::size_t alignment) {
        const bool is_new = size > capacity_ || alignment != alignment_;
        Byte* const bytes = reserve(size, alignment);
        if (is_new) {
            std::memset(bytes, 0, capacity_);
        }
        return bytes;
    }
    /// Frees the buffer if it grew past `size_max` (a burst), so it does not stay large.
    void trim(std::size_t size_max) noexcept {
        if (capacity_ > size_max) {
            bytes_.reset();
            capacity_ = 0;
        }
    }

private:
    struct Free {
        void operator()(Byte* bytes) const noexcept { std::free(bytes); }
    };
    std::unique_ptr<Byte, Free> bytes_;
    std::size_t capacity_ = 0;
    std::size_t alignment_ = 0;
};

inline Result<std::size_t> read_fully(const File& file, std::uint64_t offset, MutableByteSpan out) {
    std::size_t done = 0;
    while (done < out.size()) {
        QUEEN_TRY(const std::size_t got, file.read_at(offset + done, out.subspan(done)));
        if (got == 0) {
            break;
        }
        done += got;
    }
    return done;
}

}  // namespace detail

struct Log::Impl {
    std::filesystem::path dir;
    Options options;
    Environment env;

    // Lock order: io_mutex before mutex. io_mutex is shared by readers while they read files and
    // exclusive while truncate_suffix/drop_prefix change them.
    std::shared_mutex io_mutex;
    mutable std::mutex mutex;
    std::condition_variable work_cv;      // writer: pending work or stop
    std::condition_variable progress_cv;  // everyone else: written, durable, space, poison

    // Ascending by first index, never empty.
    std::vector<std::shared_ptr<detail::Segment>> segments;
    std::vector<detail::TermRun> terms;  // covers [first_index, last_index]
    LogIndex first_index{1};
    Term prev_term{0};
    LogIndex last_index{0};
    Term last_term{0};
    LogIndex written_index{0};
    LogIndex durable_index{0};
    std::uint64_t appended_sequence = 0;
    std::uint64_t durable_sequence = 0;
    detail::Group pending;
    detail::Group spare;  // writer: the buffers of the last group written, cleared, for reuse
    detail::AlignedBuffer staging;   // writer: a direct write's blocks
    detail::AlignedBuffer zeros;     // writer: zeros for direct writes of an unusual alignment
    bool is_direct_refused = false;  // writer: the file system refused O_DIRECT; buffered since
    std::uint64_t pending_bytes = 0;
    bool writer_busy = false;
    bool stopping = false;
    bool closed = false;
    std::optional<Error> poison;
    SyncStats stats;
    std::thread writer;

    // -- helpers (callers hold `mutex` where noted) ---------------------------------------------

    Error poisoned_error_locked() const {
        return Error{
            Errc::poisoned,
            "log " + dir.string() + " is poisoned by an earlier failure: " + poison->message()};
    }
    Status usable_locked() const {
        if (poison) {
            return poisoned_error_locked();
        }
        if (stopping || closed) {
            return Error{Errc::cancelled, "log " + dir.string() + " is closed"};
        }
        return {};
    }
    void poison_locked(Error error) {
        if (!poison) {
            QUEEN_LOG(*env.logger, Level::error, "log.poisoned",
                      "dir=" << dir.string() << " reason=\"" << error.message() << "\"");
            poison = std::move(error);
        }
        progress_cv.notify_all();
    }
    Result<Term> term_at_locked(LogIndex index) const {
        if (index == first_index.prev()) {
            return prev_term;
        }
        if (index < first_index || index > last_index) {
            return Error{Errc::out_of_range, "term_at " + std::to_string(index.value()) +
                                                 ": log holds [" +
                                                 std::to_string(first_index.value()) + ", " +
                                                 std::to_string(last_index.value()) + "]"};
        }
        QUEEN_ASSERT(!terms.empty(), "term runs cover a non-empty log");
        auto it =
            std::upper_bound(terms.begin(), terms.end(), index,
                             [](LogIndex i, const detail::TermRun& run) { return i < run.first; });
        QUEEN_ASSERT(it != terms.begin(), "term runs start at first_index");
        return std::prev(it)->term;
    }
    void note_term_locked(LogIndex index, Term term) {
        if (terms.empty() || terms.back().term != term) {
            terms.push_back({index, term});
        }
    }

    void record_sync_locked(std::uint64_t latency_ns) {
        ++stats.sync_count;
        stats.latency_ns_last = latency_ns;
        stats.latency_ns_max = std::max(stats.latency_ns_max, latency_ns);
        stats.latency_ns_total += latency_ns;
        ++stats.latency_buckets[SyncStats::bucket_of(latency_ns)];
    }

    /// Writer only: drops the O_DIRECT handle of a segment whose end moved other than by
    /// write_at_end (sealed, truncated); the next write opens it again.
    static void drop_direct(detail::Segment& segment) noexcept {
        segment.direct.reset();
        segment.tail.clear();
    }

    /// Waits (holding `lock` on mutex) until no append is pending or being written.
    void wait_idle(std::unique_lock<std::mutex>& lock) {
        progress_cv.wait(
            lock, [&] { return poison.has_value() || (pending.appends.empty() && !writer_busy); });
    }

    // -- the writer thread and group commit (writer.cpp) ---------------------------------------

    Status sync_segment(detail::Segment& segment);
    Result<std::shared_ptr<detail::Segment>> create_segment(const SegmentHeader& header);
    Result<std::shared_ptr<detail::Segment>> create_segment_file(const SegmentHeader& header,
                                                                 std::uint64_t& sync_ns);
    Result<File*> direct_file(detail::Segment& segment);
    void refuse_direct(detail::Segment& segment, const Error& why);
    Status write_at_end(detail::Segment& segment, ByteSpan data);
    Status zero_fill_ahead(detail::Segment& segment, std::uint64_t end);
    Status seal(detail::Segment& segment);
    Status roll();
    Status write_group(const detail::Group& group);
    void writer_main();
    Result<AppendTicket> enqueue(std::span<const RecordView> records, bool assign_index,
                                 bool may_wait, DurableCallback callback);

    // -- reads (reader.cpp) ---------------------------------------------------------------------

    Result<std::uint64_t> offset_of(const detail::Segment& segment, LogIndex index) const;
    Status read_segment(const detail::Segment& segment, std::uint64_t size_limit, LogIndex first,
                        LogIndex end, std::uint64_t bytes_max, std::uint64_t& bytes_collected,
                        std::vector<Record>& out) const;

    // -- suffix truncation (truncation.cpp) -----------------------------------------------------

    Status truncate_locked(LogIndex last_kept);
};

}  // namespace queen::log
