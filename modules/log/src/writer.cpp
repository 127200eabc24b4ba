// modules/log/src/writer.cpp — the log's write path: appends queued under the lock, the writer
// thread's group commit (O_DIRECT or buffered writes, zero fill ahead, segment roll, fdatasync).
#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>

#include "log_impl.hpp"
#include "queen/core/assert.hpp"
#include "queen/core/thread_name.hpp"

namespace queen::log {

namespace {

/// The writer keeps the buffers of a written group up to this capacity for the next one.
constexpr std::size_t spare_capacity_bytes_max = std::size_t{4} << 20;
/// zero_fill_ahead writes zeros in pieces of this size.
constexpr std::size_t zero_fill_chunk_bytes = std::size_t{1} << 20;
/// The alignment of shared_direct_zeros() (a multiple of every usual direct I/O alignment).
constexpr std::size_t shared_zeros_alignment = 4096;

/// zero_fill_chunk_bytes of zeros at shared_zeros_alignment for direct writes, shared (read
/// only) by every log of the process: one per log cost each tenant 1 MiB of memory.
const Byte* shared_direct_zeros() {
    static const Byte* const zeros = [] {
        auto* bytes =
            static_cast<Byte*>(std::aligned_alloc(shared_zeros_alignment, zero_fill_chunk_bytes));
        QUEEN_ASSERT(bytes != nullptr, "out of memory for the zero fill buffer");
        std::memset(bytes, 0, zero_fill_chunk_bytes);
        return bytes;
    }();
    return zeros;
}

Status write_fully(File& file, std::uint64_t offset, ByteSpan data) {
    const std::size_t alignment = std::max<std::size_t>(file.direct_alignment(), 1);
    while (!data.empty()) {
        QUEEN_TRY(const std::size_t written, file.write_at(offset, data));
        QUEEN_ASSERT(written > 0 && written <= data.size(), "write_at returned ", written);
        if (written % alignment != 0) {
            // The rest could not be written directly from where it starts.
            return Error{Errc::io, "direct write at offset " + std::to_string(offset) + " wrote " +
                                       std::to_string(written) + " bytes, not a multiple of " +
                                       std::to_string(alignment)};
        }
        offset += written;
        data = data.subspan(written);
    }
    return {};
}

}  // namespace

Status Log::Impl::sync_segment(detail::Segment& segment) {
    const std::int64_t start_ns = env.clock->monotonic_ns();
    Status status = segment.file->sync_data();
    const std::int64_t end_ns = env.clock->monotonic_ns();
    std::lock_guard lock(mutex);
    record_sync_locked(static_cast<std::uint64_t>(std::max<std::int64_t>(0, end_ns - start_ns)));
    return status;
}

/// Creates, writes and syncs a new segment file and syncs the directory.
Result<std::shared_ptr<detail::Segment>> Log::Impl::create_segment(const SegmentHeader& header) {
    std::uint64_t sync_ns = 0;
    QUEEN_TRY(auto segment, create_segment_file(header, sync_ns));
    std::lock_guard lock(mutex);
    record_sync_locked(sync_ns);
    return segment;
}

/// create_segment() without the sync statistics (`sync_ns` gets the fdatasync's latency), for
/// callers that hold `mutex`.
Result<std::shared_ptr<detail::Segment>> Log::Impl::create_segment_file(const SegmentHeader& header,
                                                                        std::uint64_t& sync_ns) {
    auto segment = std::make_shared<detail::Segment>();
    segment->path = dir / segment_file_name(header.first_index);
    segment->header = header;
    segment->last_index = header.first_index.prev();
    segment->last_term = header.prev_term;
    QUEEN_TRY(std::unique_ptr<File> file,
              env.file_system->open(segment->path, OpenMode::create_exclusive));
    segment->file = std::move(file);
    std::array<Byte, segment_header_size> bytes{};
    encode_segment_header(header, bytes);
    QUEEN_TRY(write_fully(*segment->file, 0, bytes));
    const std::int64_t start_ns = env.clock->monotonic_ns();
    QUEEN_TRY(segment->file->sync_data());
    sync_ns =
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, env.clock->monotonic_ns() - start_ns));
    QUEEN_TRY(env.file_system->sync_directory(dir));
    segment->size_bytes = segment_header_size;
    segment->file_bytes = segment_header_size;
    return segment;
}

/// Writer only: the O_DIRECT handle of the last segment (opened at its first write, with
/// the partial block it ends in read back), or nullptr for buffered writes (direct_io off, or
/// refused by the file system).
Result<File*> Log::Impl::direct_file(detail::Segment& segment) {
    if (!options.direct_io || is_direct_refused) {
        return nullptr;
    }
    if (segment.direct != nullptr) {
        return segment.direct.get();
    }
    auto opened = env.file_system->open_direct(segment.path);
    if (!opened) {
        if (!opened.error().is(Errc::unsupported)) {
            return std::move(opened).error();
        }
        refuse_direct(segment, opened.error());
        return nullptr;
    }
    const std::size_t alignment = (*opened)->direct_alignment();
    QUEEN_ASSERT(alignment > 0 && (alignment & (alignment - 1)) == 0,
                 "direct I/O alignment is a power of two, not ", alignment);
    segment.tail.resize(segment.size_bytes % alignment);
    QUEEN_TRY(const std::size_t got,
              detail::read_fully(*segment.file, segment.size_bytes - segment.tail.size(),
                                 MutableByteSpan{segment.tail}));
    if (got != segment.tail.size()) {
        return Error{Errc::corruption, segment.path.string() + ": ends before offset " +
                                           std::to_string(segment.size_bytes)};
    }
    segment.direct = std::move(opened).value();
    return segment.direct.get();
}

/// Writer only: the file system refused direct I/O (the open, or a write with EINVAL, which
/// happens before any byte is written): buffered writes from now on.
void Log::Impl::refuse_direct(detail::Segment& segment, const Error& why) {
    is_direct_refused = true;
    drop_direct(segment);
    QUEEN_LOG(*env.logger, Level::info, "log.direct_io_refused",
              "dir=" << dir.string() << " detail=\"" << why.message()
                     << "\" (buffered writes from now on)");
}

/// Writer only: writes `data` at the segment's end (size_bytes; the caller then notes the
/// records). Directly: the partial block the end is in, `data` and zeros up to the next
/// block boundary go out as whole blocks; the block's old bytes are rewritten unchanged, so
/// a write torn at any sector leaves every synced record intact.
Status Log::Impl::write_at_end(detail::Segment& segment, ByteSpan data) {
    QUEEN_TRY(File* const direct, direct_file(segment));
    if (direct == nullptr) {
        return write_fully(*segment.file, segment.size_bytes, data);
    }
    const std::size_t alignment = direct->direct_alignment();
    const std::uint64_t start = segment.size_bytes - segment.tail.size();
    const std::size_t used = segment.tail.size() + data.size();
    const auto total = static_cast<std::size_t>(detail::round_up(used, alignment));
    Byte* const blocks = staging.reserve(total, alignment);
    std::memcpy(blocks, segment.tail.data(), segment.tail.size());
    std::memcpy(blocks + segment.tail.size(), data.data(), data.size());
    std::memset(blocks + used, 0, total - used);
    if (Status status = write_fully(*direct, start, ByteSpan{blocks, total}); !status) {
        if (!status.error().is(Errc::unsupported)) {
            return status;
        }
        // Refused before anything was written (or, at worst, after whole blocks of these
        // same bytes): write it all again through the page cache.
        refuse_direct(segment, status.error());
        return write_fully(*segment.file, segment.size_bytes, data);
    }
    segment.tail.assign(blocks + used - used % alignment, blocks + used);
    segment.file_bytes = std::max(segment.file_bytes, start + total);
    staging.trim(spare_capacity_bytes_max);
    return {};
}

/// Writer only: makes the file hold zeros up to at least `end` (and preallocate_bytes_ahead
/// beyond it, within the segment's size limit) before records are written below `end`. The
/// fdatasync of a group then overwrites blocks that are already allocated and inside the
/// file's size, so the file system has no size or extent change to journal for it: on ext4
/// that makes the sync ~30-40 % faster and cheaper. The zeros are synced with the group that
/// needed them; recovery reads an all-zero tail as the clean end of the records. Direct
/// zeros start at the first block boundary past the file's end (the file reads as zeros
/// between its end and there) and end at a block boundary.
Status Log::Impl::zero_fill_ahead(detail::Segment& segment, std::uint64_t end) {
    if (options.preallocate_bytes_ahead == 0 || end <= segment.file_bytes) {
        return {};
    }
    const std::uint64_t limit = std::max(options.segment_size_bytes_max, end);
    std::uint64_t target = std::min(end + options.preallocate_bytes_ahead, limit);
    std::uint64_t at = std::max(segment.file_bytes, segment.size_bytes);
    QUEEN_TRY(File* const direct, direct_file(segment));
    File& file = direct != nullptr ? *direct : *segment.file;
    const Byte* chunk = nullptr;
    if (direct != nullptr) {
        const std::size_t alignment = direct->direct_alignment();
        at = detail::round_up(at, alignment);
        target = detail::round_up(target, alignment);
        chunk = shared_zeros_alignment % alignment == 0
                    ? shared_direct_zeros()
                    : zeros.zeros(zero_fill_chunk_bytes, alignment);
    } else {
        static const std::vector<Byte> buffered_zeros(zero_fill_chunk_bytes, Byte{0});
        chunk = buffered_zeros.data();
    }
    while (at < target) {
        const auto size =
            static_cast<std::size_t>(std::min<std::uint64_t>(target - at, zero_fill_chunk_bytes));
        if (Status status = write_fully(file, at, ByteSpan{chunk, size}); !status) {
            if (direct == nullptr || !status.error().is(Errc::unsupported)) {
                return status;
            }
            refuse_direct(segment, status.error());
            return zero_fill_ahead(segment, end);  // again, buffered
        }
        at += size;
        segment.file_bytes = std::max(segment.file_bytes, at);
    }
    return {};
}

/// Writer only: cuts the zero-filled tail off a full segment and syncs it, before the next
/// segment is created (a segment that is not the last ends at its last record).
Status Log::Impl::seal(detail::Segment& segment) {
    drop_direct(segment);
    if (segment.file_bytes > segment.size_bytes) {
        QUEEN_TRY(segment.file->truncate(segment.size_bytes));
        segment.file_bytes = segment.size_bytes;
    }
    return sync_segment(segment);
}

/// Writer only: starts a new segment after the current last one.
Status Log::Impl::roll() {
    const detail::Segment& old = *segments.back();
    QUEEN_ASSERT(!old.is_empty(), "never roll an empty segment");
    SegmentHeader header;
    header.first_index = old.last_index.next();
    header.prev_term = old.last_term;
    QUEEN_TRY(std::shared_ptr<detail::Segment> segment, create_segment(header));
    QUEEN_LOG(*env.logger, Level::debug, "log.segment_rolled",
              "dir=" << dir.string() << " first_index=" << header.first_index.value());
    std::lock_guard lock(mutex);
    segments.push_back(std::move(segment));
    return {};
}

/// Writer only: writes a group into the last segment(s) and makes it durable. Segments are
/// rolled at record boundaries; a segment is synced before the next one is created, so a
/// segment that is not the last never has an unsynced tail.
Status Log::Impl::write_group(const detail::Group& group) {
    std::size_t next = 0;
    std::uint64_t at = 0;
    while (next < group.slots.size()) {
        detail::Segment& segment = *segments.back();
        const std::uint64_t room = segment.size_bytes < options.segment_size_bytes_max
                                       ? options.segment_size_bytes_max - segment.size_bytes
                                       : 0;
        std::size_t end = next;
        std::uint64_t chunk = 0;
        while (end < group.slots.size()) {
            const std::uint64_t size = group.slots[end].size;
            // An empty segment takes one record even when it is larger than the room left.
            if (chunk + size > room && !(segment.is_empty() && end == next)) {
                break;
            }
            chunk += size;
            ++end;
        }
        if (end == next) {
            QUEEN_TRY(seal(segment));
            QUEEN_TRY(roll());
            continue;
        }
        QUEEN_TRY(zero_fill_ahead(segment, segment.size_bytes + chunk));
        QUEEN_TRY(write_at_end(segment, ByteSpan{group.buffer}.subspan(at, chunk)));
        {
            std::lock_guard lock(mutex);
            std::uint64_t offset = segment.size_bytes;
            for (std::size_t i = next; i < end; ++i) {
                const detail::Slot& slot = group.slots[i];
                segment.note_record(slot.index, slot.term, offset, slot.size,
                                    options.index_interval_bytes);
                offset += slot.size;
            }
            written_index = group.slots[end - 1].index;
        }
        progress_cv.notify_all();
        at += chunk;
        next = end;
        if (next < group.slots.size()) {
            QUEEN_TRY(seal(segment));
            QUEEN_TRY(roll());
        }
    }
    QUEEN_ASSERT(at == group.buffer.size(), "the whole group was written");
    return sync_segment(*segments.back());
}

void Log::Impl::writer_main() {
    set_thread_name("log-writer");
    std::unique_lock lock(mutex);
    for (;;) {
        work_cv.wait(lock, [&] { return stopping || !pending.appends.empty(); });
        if (pending.appends.empty()) {
            return;  // stopping, and everything was drained
        }
        detail::Group group = std::move(pending);
        pending = std::move(spare);  // empty, with the capacity of an earlier group
        spare = detail::Group{};
        pending_bytes = 0;
        writer_busy = true;
        progress_cv.notify_all();  // room for blocked appenders
        const bool was_poisoned = poison.has_value();
        lock.unlock();

        Status status;
        if (!was_poisoned) {
            status = write_group(group);
        }

        lock.lock();
        if (!status) {
            poison_locked(std::move(status).error());
        } else if (!was_poisoned) {
            durable_sequence = group.appends.back().sequence;
            durable_index = group.slots.back().index;
            ++stats.group_count;
            stats.records_synced += group.slots.size();
            stats.bytes_synced += group.buffer.size();
        }
        writer_busy = false;
        progress_cv.notify_all();
        const Status outcome = poison ? Status{poisoned_error_locked()} : Status{};
        lock.unlock();
        for (detail::PendingAppend& append : group.appends) {
            if (append.callback) {
                append.callback(outcome);
            }
        }
        // Keep the buffers for a later group (no allocation per group), unless a burst made
        // them large.
        group.appends.clear();
        group.slots.clear();
        group.buffer.clear();
        lock.lock();
        if (group.buffer.capacity() <= spare_capacity_bytes_max) {
            spare = std::move(group);
        }
    }
}

Result<AppendTicket> Log::Impl::enqueue(std::span<const RecordView> records, bool assign_index,
                                        bool may_wait, DurableCallback callback) {
    if (records.empty()) {
        return Error{Errc::invalid_argument, "append: empty batch"};
    }
    std::uint64_t total = 0;
    for (const RecordView& record : records) {
        if (record.payload.size() > options.record_size_bytes_max) {
            return Error{Errc::invalid_argument, "append: payload of " +
                                                     std::to_string(record.payload.size()) +
                                                     " bytes exceeds log.record_size_bytes_max " +
                                                     std::to_string(options.record_size_bytes_max)};
        }
        total += encoded_record_size(record.payload.size());
    }
    if (total > options.pending_bytes_max) {
        return Error{Errc::invalid_argument, "append: batch of " + std::to_string(total) +
                                                 " bytes exceeds log.pending_bytes_max " +
                                                 std::to_string(options.pending_bytes_max)};
    }
    std::unique_lock lock(mutex);
    const auto has_room = [&] {
        return poison.has_value() || stopping || closed || pending.appends.empty() ||
               pending_bytes + total <= options.pending_bytes_max;
    };
    if (!may_wait && !has_room()) {
        return Error{Errc::busy, "append: log.pending_bytes_max " +
                                     std::to_string(options.pending_bytes_max) +
                                     " bytes are already waiting for the writer"};
    }
    progress_cv.wait(lock, has_room);
    QUEEN_TRY(usable_locked());
    LogIndex expected = last_index.next();
    Term term_floor = last_term;
    for (const RecordView& record : records) {
        if (!assign_index && record.index != expected) {
            return Error{Errc::invalid_argument, "append: index " +
                                                     std::to_string(record.index.value()) +
                                                     " does not follow the last index " +
                                                     std::to_string(expected.prev().value())};
        }
        if (record.term < term_floor) {
            return Error{Errc::invalid_argument,
                         "append: term " + std::to_string(record.term.value()) +
                             " is below the previous term " + std::to_string(term_floor.value())};
        }
        term_floor = record.term;
        expected = expected.next();
    }
    AppendTicket ticket;
    ticket.first_index = last_index.next();
    for (const RecordView& record : records) {
        const LogIndex index = last_index.next();
        const std::size_t before = pending.buffer.size();
        encode_record(pending.buffer, record.term, index, record.type, record.payload);
        pending.slots.push_back(
            {index, record.term, static_cast<std::uint32_t>(pending.buffer.size() - before)});
        note_term_locked(index, record.term);
        last_index = index;
        last_term = record.term;
    }
    pending_bytes += total;
    ticket.last_index = last_index;
    ticket.sequence = ++appended_sequence;
    pending.appends.push_back({ticket.sequence, std::move(callback)});
    work_cv.notify_one();
    return ticket;
}

Result<AppendTicket> Log::append(std::span<const RecordView> records, DurableCallback on_durable) {
    return impl_->enqueue(records, false, true, std::move(on_durable));
}

Result<AppendTicket> Log::try_append(std::span<const RecordView> records,
                                     DurableCallback on_durable) {
    return impl_->enqueue(records, false, false, std::move(on_durable));
}

Result<AppendTicket> Log::append_next(Term term, RecordType type, ByteSpan payload,
                                      DurableCallback on_durable) {
    const RecordView record{term, LogIndex{0}, type, payload};
    return impl_->enqueue(std::span<const RecordView>(&record, 1), true, true,
                          std::move(on_durable));
}

Status Log::wait_durable(const AppendTicket& ticket) {
    std::unique_lock lock(impl_->mutex);
    QUEEN_ASSERT(ticket.sequence <= impl_->appended_sequence, "wait_durable on a foreign ticket");
    impl_->progress_cv.wait(lock, [&] {
        return impl_->durable_sequence >= ticket.sequence || impl_->poison.has_value();
    });
    if (impl_->durable_sequence >= ticket.sequence) {
        return {};
    }
    return impl_->poisoned_error_locked();
}

Result<AppendTicket> Log::append_durable(std::span<const RecordView> records) {
    QUEEN_TRY(const AppendTicket ticket, append(records));
    QUEEN_TRY(wait_durable(ticket));
    return ticket;
}

Status Log::flush() {
    std::unique_lock lock(impl_->mutex);
    const std::uint64_t target = impl_->appended_sequence;
    impl_->progress_cv.wait(
        lock, [&] { return impl_->durable_sequence >= target || impl_->poison.has_value(); });
    if (impl_->poison) {
        return impl_->poisoned_error_locked();
    }
    return {};
}

}  // namespace queen::log
