// queen/log/options.hpp — tunables and limits of the raft log storage, with validate().
#pragma once

#include <cstdint>

#include "queen/core/result.hpp"

namespace queen::log {

/// Limits and sizes of one Log. Defaults suit a broker tenant log on an SSD.
struct Options {
    /// A segment is rolled (closed, a new file started) before it would grow past this size.
    /// A single record larger than the remaining room still goes into a fresh segment alone.
    std::uint64_t segment_size_bytes_max = 128u << 20;
    /// The writer keeps the last segment zero-filled this far past its last record (0: off, the
    /// file grows with each write). Overwriting allocated zeros lets fdatasync skip journaling a
    /// size change; the cost is writing each byte of the log twice (zeros, then records).
    std::uint64_t preallocate_bytes_ahead = 1u << 20;
    /// The writer writes records (and the zeros ahead of them) with O_DIRECT: from its buffer to
    /// the device, without a copy into the page cache, rewriting the last partial block with
    /// each group. Where the file system refuses direct I/O the writer uses buffered writes.
    /// Reads (recovery, read()) always go through the page cache.
    bool direct_io = true;
    /// Largest payload of one record; appends above it fail with Errc::invalid_argument, and
    /// recovery treats a longer length field as damage. Recovery reads a segment 1 MiB at a time,
    /// or one whole record when longer: this, not segment_size_bytes_max, bounds what opening a
    /// log holds in memory.
    std::uint32_t record_size_bytes_max = 16u << 20;
    /// Encoded bytes waiting for the writer; appenders block while this much is pending
    /// (backpressure instead of unbounded growth). It also bounds one group: the writer takes
    /// everything pending as one write + one fdatasync. One append call must fit in it.
    std::uint64_t pending_bytes_max = 64u << 20;
    /// One sparse-index entry (index -> segment offset) per this many bytes of records.
    std::uint32_t index_interval_bytes = 4096;
    /// Records one read() returns at most.
    std::uint32_t read_records_max = 65536;

    /// Checks the values are consistent. Errors: Errc::invalid_argument naming the field.
    [[nodiscard]] Status validate() const;
};

}  // namespace queen::log
