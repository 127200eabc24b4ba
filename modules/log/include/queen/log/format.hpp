// queen/log/format.hpp — the on-disk segment format (v1): constants, encoders and a decoder of a
// buffer or of a segment given in windows. Pure functions over bytes: no files, no threads.
// docs/log-format.md describes the same layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"

namespace queen::log {

/// Version of the segment and record layout below. Any change to a constant or field bumps it.
inline constexpr std::uint32_t format_version = 1;

/// "QUEENLOG" in ASCII: the first 8 bytes of every segment file.
inline constexpr std::uint64_t segment_magic = 0x474F4C4E45455551ULL;
static_assert((segment_magic & 0xff) == 'Q' && (segment_magic >> 56) == 'G',
              "segment magic must read QUEENLOG byte by byte (little-endian)");

/// Segment header: magic(8) format_version(4) flags(4) first_index(8) prev_term(8) reserved(4)
/// header_crc(4). header_crc = crc32c of bytes [0, 36).
inline constexpr std::size_t segment_header_size = 40;
inline constexpr std::size_t segment_header_crc_offset = 36;
static_assert(segment_header_size == 8 + 4 + 4 + 8 + 8 + 4 + 4,
              "segment header layout changed: bump log::format_version");
static_assert(segment_header_crc_offset == segment_header_size - 4);

/// Record header: crc(4) payload_size(4) term(8) index(8) type(1) reserved(3), then the payload.
/// crc = crc32c of bytes [4, record_header_size + payload_size): it covers the length, every
/// other header field and the payload. Reserved bytes are zero.
inline constexpr std::size_t record_header_size = 28;
inline constexpr std::size_t record_crc_covered_from = 4;
static_assert(record_header_size == 4 + 4 + 8 + 8 + 1 + 3,
              "record header layout changed: bump log::format_version");

/// Hard limit of the format on one payload (the Options limit is usually far lower).
inline constexpr std::uint32_t record_payload_size_limit = 1u << 30;

/// Segment files are named by their first index: 20 decimal digits, zero padded, then ".seg".
inline constexpr std::string_view segment_suffix = ".seg";
inline constexpr std::size_t segment_name_digits = 20;

/// What the application stores in a record's type byte (opaque to the log).
using RecordType = std::uint8_t;

/// The fixed header of a segment file.
struct SegmentHeader {
    std::uint32_t version = format_version;
    std::uint32_t flags = 0;  ///< no flags are defined in v1; must be zero
    LogIndex first_index{1};  ///< index of the first record this segment holds (or would hold)
    Term prev_term{0};        ///< term of the record at first_index - 1 (0 when none)
};

/// One decoded record. `payload` points into the buffer that was decoded (not owned).
struct RecordView {
    Term term;
    LogIndex index;
    RecordType type = 0;
    ByteSpan payload;
};

/// Why decoding of a segment stopped.
enum class StopReason : std::uint8_t {
    end_of_data,       ///< clean: the last record ends at the end of the buffer, or only
                       ///< zero bytes follow it (the writer's zero-filled tail)
    bad_header,        ///< the segment header is short, has a wrong magic, version, flags or CRC
    truncated_header,  ///< fewer than record_header_size bytes remain
    bad_length,        ///< payload_size exceeds the limit or the bytes that remain
    bad_crc,           ///< the record CRC does not match
    bad_field,         ///< CRC ok but reserved bytes set, index out of sequence or term decreasing
};

/// A stable lowercase name ("bad_crc", ...) for reports and JSON.
[[nodiscard]] std::string_view stop_reason_name(StopReason reason) noexcept;

/// The result of decoding one segment buffer up to its first bad record.
struct SegmentScan {
    std::optional<SegmentHeader> header;  ///< empty when the header itself is bad
    std::uint64_t record_count = 0;       ///< whole, valid records before the stop
    std::uint64_t valid_bytes = 0;        ///< end offset of the last valid record (or header end)
    LogIndex last_index{0};  ///< index of the last valid record (first_index-1 if none)
    Term last_term{0};       ///< its term (prev_term if none)
    StopReason stop = StopReason::end_of_data;
    std::uint64_t stop_offset = 0;      ///< byte position of the problem (== valid_bytes)
    std::string detail;                 ///< a sentence describing the problem, empty when clean
    std::uint64_t zero_tail_bytes = 0;  ///< zero bytes after the last record (a clean end)
};

/// True when every byte of `bytes` is zero (true for an empty span). The bytes after a
/// segment's last record are zeros when the writer filled them ahead of its writes: no record
/// is all zeros (its CRC would not match), so such a tail is a clean end, not damage.
[[nodiscard]] bool is_all_zero(ByteSpan bytes) noexcept;

/// Encodes the 40-byte segment header into `out` (out.size() >= segment_header_size).
void encode_segment_header(const SegmentHeader& header, MutableByteSpan out) noexcept;

/// Decodes and checks a segment header. Returns nothing (and sets `detail`) when the buffer is
/// short or magic, version, flags, reserved bytes or CRC are wrong.
[[nodiscard]] std::optional<SegmentHeader> decode_segment_header(ByteSpan bytes,
                                                                 std::string* detail = nullptr);

/// Size on disk of a record with `payload_size` payload bytes.
[[nodiscard]] constexpr std::uint64_t encoded_record_size(std::uint64_t payload_size) noexcept {
    return record_header_size + payload_size;
}

/// Appends one encoded record to `out`. Precondition: payload.size() <= record_payload_size_limit.
void encode_record(Bytes& out, Term term, LogIndex index, RecordType type, ByteSpan payload);

/// Outcome of decoding the record at one position.
struct RecordDecode {
    StopReason status = StopReason::end_of_data;  ///< end_of_data here means "decoded fine"
    RecordView record;
    std::uint64_t size = 0;  ///< encoded size when status is end_of_data
    std::string detail;
};

/// Decodes the record at the start of `bytes` without checking its sequence against others.
/// `payload_size_max` bounds the length field (<= record_payload_size_limit).
[[nodiscard]] RecordDecode decode_record(ByteSpan bytes, std::uint32_t payload_size_max);

/// Decodes a whole segment held in memory: the header, then records until the first bad one
/// (an all-zero rest of the buffer is not bad: a clean end with zero_tail_bytes set).
/// Records must have consecutive indexes starting at the header's first_index and terms that
/// never decrease (starting at >= prev_term). `on_record` (may be empty) sees each valid record
/// with its byte offset, in order. Never throws, never reads outside `bytes`.
[[nodiscard]] SegmentScan scan_segment(
    ByteSpan bytes, std::uint32_t payload_size_max,
    const std::function<void(const RecordView&, std::uint64_t offset)>& on_record = {});

/// After a stop, looks for the next offset >= `from` where a record decodes with a valid CRC and
/// an index in (after_index, after_index + 2^32) and a term >= `term_min`. Used to tell a torn
/// tail (nothing valid follows) from corruption (valid records follow), and by inspect to decode
/// past damage. Returns the offset, or nothing. Cost: at most one CRC per plausible candidate.
[[nodiscard]] std::optional<std::uint64_t> find_next_record(ByteSpan bytes, std::uint64_t from,
                                                            LogIndex after_index, Term term_min,
                                                            std::uint32_t payload_size_max);

/// A segment's bytes, a window at a time: view(offset, want), for offset <= the segment's size,
/// returns the bytes from `offset` on, at least min(want, size - offset) of them and at most
/// size - offset; the span stays valid until the next call. Lets the decoder below work on a
/// segment read from a file in bounded chunks (recovery) as it does on a buffer.
using SegmentView = std::function<Result<ByteSpan>(std::uint64_t offset, std::uint64_t want)>;

/// scan_segment() of a segment of `size` bytes given by `view` (same result, same order of
/// callbacks). It asks for one record at a time (its header, then the whole record when its
/// length is within `payload_size_max` and the segment), and for the rest of the segment a
/// window at a time when it checks for an all-zero tail: what the view holds at once is up to
/// it. The payload `on_record` sees is valid during the call only. Errors: those of `view`.
[[nodiscard]] Result<SegmentScan> scan_segment_windowed(
    std::uint64_t size, const SegmentView& view, std::uint32_t payload_size_max,
    const std::function<void(const RecordView&, std::uint64_t offset)>& on_record = {});

/// find_next_record() of a segment of `size` bytes given by `view` (same result). It walks the
/// windows the view gives and asks for a whole candidate record only when its length field is
/// within `payload_size_max` and the segment. Errors: those of `view`.
[[nodiscard]] Result<std::optional<std::uint64_t>> find_next_record_windowed(
    std::uint64_t size, const SegmentView& view, std::uint64_t from, LogIndex after_index,
    Term term_min, std::uint32_t payload_size_max);

/// Evidence that the bad record where a scan of a segment stopped was written whole and damaged
/// afterwards (so it is not a torn write), or nothing when it may be a torn write. A torn write
/// leaves whole sectors of a record holding what they held before (zeros: the writer fills
/// ahead with zeros, and a file extended by a write reads as zeros where the write did not
/// land), so the bytes differ from the record in whole sectors. The evidence is either:
///  - a valid CRC (StopReason::bad_field): the record reached the disk whole; or
///  - exactly one flipped bit: flipping one bit of the stored CRC, of payload_size (the
///    CRC is checked over the length that bit gives) or of any CRC-covered byte makes the CRC
///    match, and the corrected record has the expected index, a term >= `scan.last_term` and
///    zero reserved bytes. CRC-32C locates one flipped bit unambiguously in a record of up to
///    2^31 bits; a torn record passes for one bit away from a valid one only by chance (about
///    n / 2^32 for a record of n bits) or when the sector it lacks held exactly one set bit.
/// Header stops (bad_header) and a file that ends inside a record header are never evidence.
/// Only `scan.stop_offset`, `stop`, `detail`, `last_index` and `last_term` are read. The cost is
/// one pass over the record per candidate (the record, and up to 32 other lengths).
/// Errors: those of `view`.
[[nodiscard]] Result<std::optional<std::string>> find_written_damage_windowed(
    std::uint64_t size, const SegmentView& view, const SegmentScan& scan,
    std::uint32_t payload_size_max);

/// find_written_damage_windowed() of a segment held in memory.
[[nodiscard]] std::optional<std::string> find_written_damage(ByteSpan bytes,
                                                             const SegmentScan& scan,
                                                             std::uint32_t payload_size_max);

/// "00000000000000000001.seg" for index 1.
[[nodiscard]] std::string segment_file_name(LogIndex first_index);

/// Parses a segment file name; nothing when `name` is not exactly 20 digits + ".seg".
[[nodiscard]] std::optional<LogIndex> parse_segment_file_name(std::string_view name) noexcept;

}  // namespace queen::log
