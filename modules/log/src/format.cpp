// modules/log/src/format.cpp — encoding and decoding of segment headers and records (format v1).
#include "queen/log/format.hpp"

#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "queen/core/assert.hpp"
#include "queen/core/crc32c.hpp"

namespace queen::log {

std::string_view stop_reason_name(StopReason reason) noexcept {
    switch (reason) {
        case StopReason::end_of_data: return "end_of_data";
        case StopReason::bad_header: return "bad_header";
        case StopReason::truncated_header: return "truncated_header";
        case StopReason::bad_length: return "bad_length";
        case StopReason::bad_crc: return "bad_crc";
        case StopReason::bad_field: return "bad_field";
    }
    return "unknown";
}

void encode_segment_header(const SegmentHeader& header, MutableByteSpan out) noexcept {
    QUEEN_ASSERT(out.size() >= segment_header_size, "segment header buffer too small");
    store_le<std::uint64_t>(out.data() + 0, segment_magic);
    store_le<std::uint32_t>(out.data() + 8, header.version);
    store_le<std::uint32_t>(out.data() + 12, header.flags);
    store_le<std::uint64_t>(out.data() + 16, header.first_index.value());
    store_le<std::uint64_t>(out.data() + 24, header.prev_term.value());
    store_le<std::uint32_t>(out.data() + 32, 0);
    const std::uint32_t crc = crc32c(ByteSpan{out.data(), segment_header_crc_offset});
    store_le<std::uint32_t>(out.data() + segment_header_crc_offset, crc);
}

std::optional<SegmentHeader> decode_segment_header(ByteSpan bytes, std::string* detail) {
    auto fail = [&](std::string why) -> std::optional<SegmentHeader> {
        if (detail != nullptr) {
            *detail = std::move(why);
        }
        return std::nullopt;
    };
    if (bytes.size() < segment_header_size) {
        return fail("segment header is short: " + std::to_string(bytes.size()) + " of " +
                    std::to_string(segment_header_size) + " bytes");
    }
    if (load_le<std::uint64_t>(bytes.data()) != segment_magic) {
        return fail("segment magic is not QUEENLOG");
    }
    const auto stored_crc = load_le<std::uint32_t>(bytes.data() + segment_header_crc_offset);
    const std::uint32_t actual_crc = crc32c(bytes.first(segment_header_crc_offset));
    if (stored_crc != actual_crc) {
        return fail("segment header crc mismatch (stored " + std::to_string(stored_crc) +
                    ", computed " + std::to_string(actual_crc) + ")");
    }
    SegmentHeader header;
    header.version = load_le<std::uint32_t>(bytes.data() + 8);
    header.flags = load_le<std::uint32_t>(bytes.data() + 12);
    header.first_index = LogIndex{load_le<std::uint64_t>(bytes.data() + 16)};
    header.prev_term = Term{load_le<std::uint64_t>(bytes.data() + 24)};
    if (header.version != format_version) {
        return fail("unsupported segment format version " + std::to_string(header.version) +
                    " (this build reads " + std::to_string(format_version) + ")");
    }
    if (header.flags != 0 || load_le<std::uint32_t>(bytes.data() + 32) != 0) {
        return fail("segment header has unknown flags or non-zero reserved bytes");
    }
    if (header.first_index.value() == 0) {
        return fail("segment header first_index is 0 (indexes start at 1)");
    }
    return header;
}

void encode_record(Bytes& out, Term term, LogIndex index, RecordType type, ByteSpan payload) {
    QUEEN_ASSERT(payload.size() <= record_payload_size_limit, "record payload over format limit");
    std::array<Byte, record_header_size> header{};
    store_le<std::uint32_t>(header.data() + 4, static_cast<std::uint32_t>(payload.size()));
    store_le<std::uint64_t>(header.data() + 8, term.value());
    store_le<std::uint64_t>(header.data() + 16, index.value());
    header[24] = type;
    // CRC of the header after its crc field, then of the payload: the bytes are copied once
    // (insert, not resize + memcpy, which would zero-fill the payload's room first).
    const std::uint32_t crc =
        crc32c(payload, crc32c(ByteSpan{header}.subspan(record_crc_covered_from)));
    store_le<std::uint32_t>(header.data(), crc);
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), payload.begin(), payload.end());
}

namespace {

/// decode_record() of the record at the start of `bytes`, which begins the `bytes_left` bytes
/// that remain in the segment: all of them when fewer than a record header, and all of the
/// record's when its length is within the limit and the segment. A window of a segment decodes
/// like the whole rest of it (same status, same detail).
RecordDecode decode_record_at(ByteSpan bytes, std::uint64_t bytes_left,
                              std::uint32_t payload_size_max) {
    RecordDecode out;
    if (bytes_left < record_header_size) {
        out.status = StopReason::truncated_header;
        out.detail = "only " + std::to_string(bytes_left) + " bytes left, a record header is " +
                     std::to_string(record_header_size);
        return out;
    }
    QUEEN_ASSERT(bytes.size() >= record_header_size, "a record header is in the window");
    const Byte* p = bytes.data();
    const auto payload_size = load_le<std::uint32_t>(p + 4);
    if (payload_size > payload_size_max || payload_size > record_payload_size_limit) {
        out.status = StopReason::bad_length;
        out.detail = "payload_size " + std::to_string(payload_size) + " exceeds the maximum " +
                     std::to_string(payload_size_max);
        return out;
    }
    if (bytes_left - record_header_size < payload_size) {
        out.status = StopReason::bad_length;
        out.detail = "payload_size " + std::to_string(payload_size) + " but only " +
                     std::to_string(bytes_left - record_header_size) + " bytes follow";
        return out;
    }
    QUEEN_ASSERT(bytes.size() >= encoded_record_size(payload_size), "the record is in the window");
    const auto stored_crc = load_le<std::uint32_t>(p);
    const std::uint32_t actual_crc = crc32c(bytes.subspan(
        record_crc_covered_from, record_header_size - record_crc_covered_from + payload_size));
    if (stored_crc != actual_crc) {
        out.status = StopReason::bad_crc;
        out.detail = "record crc mismatch (stored " + std::to_string(stored_crc) + ", computed " +
                     std::to_string(actual_crc) + ")";
        return out;
    }
    if (p[25] != 0 || p[26] != 0 || p[27] != 0) {
        out.status = StopReason::bad_field;
        out.detail = "record reserved bytes are not zero";
        return out;
    }
    out.record.term = Term{load_le<std::uint64_t>(p + 8)};
    out.record.index = LogIndex{load_le<std::uint64_t>(p + 16)};
    out.record.type = p[24];
    out.record.payload = bytes.subspan(record_header_size, payload_size);
    out.size = record_header_size + payload_size;
    return out;
}

/// True when bytes [from, size) of the segment are all zero, read a window at a time.
Result<bool> is_all_zero_from(std::uint64_t size, const SegmentView& view, std::uint64_t from) {
    for (std::uint64_t at = from; at < size;) {
        QUEEN_TRY(const ByteSpan window, view(at, 1));
        QUEEN_ASSERT(!window.empty(), "a segment view gives at least the bytes asked for");
        if (!is_all_zero(window)) {
            return false;
        }
        at += window.size();
    }
    return true;
}

/// The whole buffer as the view of every window.
SegmentView whole(ByteSpan bytes) {
    return [bytes](std::uint64_t offset, std::uint64_t) -> Result<ByteSpan> {
        return bytes.subspan(offset);
    };
}

}  // namespace

RecordDecode decode_record(ByteSpan bytes, std::uint32_t payload_size_max) {
    return decode_record_at(bytes, bytes.size(), payload_size_max);
}

SegmentScan scan_segment(ByteSpan bytes, std::uint32_t payload_size_max,
                         const std::function<void(const RecordView&, std::uint64_t)>& on_record) {
    // A buffer's view never fails.
    return scan_segment_windowed(bytes.size(), whole(bytes), payload_size_max, on_record).value();
}

Result<SegmentScan> scan_segment_windowed(
    std::uint64_t size, const SegmentView& view, std::uint32_t payload_size_max,
    const std::function<void(const RecordView&, std::uint64_t)>& on_record) {
    SegmentScan scan;
    QUEEN_TRY(const ByteSpan head, view(0, segment_header_size));
    scan.header = decode_segment_header(head, &scan.detail);
    if (!scan.header) {
        scan.stop = StopReason::bad_header;
        return scan;
    }
    scan.valid_bytes = segment_header_size;
    scan.last_index = scan.header->first_index.prev();
    scan.last_term = scan.header->prev_term;
    std::uint64_t at = segment_header_size;
    while (at < size) {
        const std::uint64_t left = size - at;
        QUEEN_TRY(ByteSpan rest, view(at, record_header_size));
        if (rest.size() >= record_header_size) {
            // The whole record only when its length is plausible: a damaged length field must
            // not make the view read (and hold) up to 4 GiB.
            const auto payload_size = load_le<std::uint32_t>(rest.data() + 4);
            const std::uint64_t record_size = encoded_record_size(payload_size);
            if (payload_size <= payload_size_max && record_size <= left &&
                rest.size() < record_size) {
                QUEEN_TRY(rest, view(at, record_size));
            }
        }
        RecordDecode decoded = decode_record_at(rest, left, payload_size_max);
        if (decoded.status == StopReason::end_of_data) {
            if (decoded.record.index != scan.last_index.next()) {
                decoded.status = StopReason::bad_field;
                decoded.detail = "record index " + std::to_string(decoded.record.index.value()) +
                                 " where " + std::to_string(scan.last_index.next().value()) +
                                 " was expected";
            } else if (decoded.record.term < scan.last_term) {
                decoded.status = StopReason::bad_field;
                decoded.detail = "record term " + std::to_string(decoded.record.term.value()) +
                                 " is below the previous term " +
                                 std::to_string(scan.last_term.value());
            }
        }
        if (decoded.status != StopReason::end_of_data) {
            // `rest` (and decoded.record) may be stale from here on: the check reads on.
            QUEEN_TRY(const bool zero_tail, is_all_zero_from(size, view, at));
            if (zero_tail) {
                scan.zero_tail_bytes = left;
                break;
            }
            scan.stop = decoded.status;
            scan.stop_offset = at;
            scan.detail = std::move(decoded.detail);
            return scan;
        }
        if (on_record) {
            on_record(decoded.record, at);
        }
        ++scan.record_count;
        scan.last_index = decoded.record.index;
        scan.last_term = decoded.record.term;
        at += decoded.size;
        scan.valid_bytes = at;
    }
    scan.stop_offset = at;
    return scan;
}

bool is_all_zero(ByteSpan bytes) noexcept {
    std::size_t i = 0;
    for (; i + sizeof(std::uint64_t) <= bytes.size(); i += sizeof(std::uint64_t)) {
        std::uint64_t word = 0;
        std::memcpy(&word, bytes.data() + i, sizeof word);
        if (word != 0) {
            return false;
        }
    }
    for (; i < bytes.size(); ++i) {
        if (bytes[i] != 0) {
            return false;
        }
    }
    return true;
}

std::optional<std::uint64_t> find_next_record(ByteSpan bytes, std::uint64_t from,
                                              LogIndex after_index, Term term_min,
                                              std::uint32_t payload_size_max) {
    // A buffer's view never fails.
    return find_next_record_windowed(bytes.size(), whole(bytes), from, after_index, term_min,
                                     payload_size_max)
        .value();
}

Result<std::optional<std::uint64_t>> find_next_record_windowed(std::uint64_t size,
                                                               const SegmentView& view,
                                                               std::uint64_t from,
                                                               LogIndex after_index, Term term_min,
                                                               std::uint32_t payload_size_max) {
    constexpr std::uint64_t index_window = 1ULL << 32;
    std::uint64_t at = from;
    while (at + record_header_size <= size) {
        const std::uint64_t window_start = at;
        QUEEN_TRY(const ByteSpan window, view(at, record_header_size));
        QUEEN_ASSERT(window.size() >= record_header_size,
                     "a segment view gives at least the bytes asked for");
        const std::uint64_t window_end = window_start + window.size();
        // Every candidate whose header is in this window; a longer candidate record is asked for
        // whole, which moves the view (then `window` is stale and a new one is taken).
        bool moved = false;
        for (; !moved && at + record_header_size <= window_end; ++at) {
            const Byte* p = window.data() + (at - window_start);
            // Cheap plausibility filters first, so garbage costs no CRC computation.
            if (p[25] != 0 || p[26] != 0 || p[27] != 0) {
                continue;
            }
            const auto payload_size = load_le<std::uint32_t>(p + 4);
            if (payload_size > payload_size_max ||
                size - at - record_header_size < static_cast<std::uint64_t>(payload_size)) {
                continue;
            }
            const auto index = load_le<std::uint64_t>(p + 16);
            if (index <= after_index.value() || index - after_index.value() >= index_window) {
                continue;
            }
            if (load_le<std::uint64_t>(p + 8) < term_min.value()) {
                continue;
            }
            const std::uint64_t record_size = encoded_record_size(payload_size);
            ByteSpan candidate = window.subspan(at - window_start);
            if (candidate.size() < record_size) {
                QUEEN_TRY(candidate, view(at, record_size));
                moved = true;
            }
            if (decode_record_at(candidate, size - at, payload_size_max).status ==
                StopReason::end_of_data) {
                return std::optional<std::uint64_t>{at};
            }
        }
    }
    return std::optional<std::uint64_t>{};
}

namespace {

/// The CRC-32C table (reflected polynomial 0x82F63B78), for stepping a CRC register over zero
/// bytes: crc32c() with its initial value and final xor taken out is linear, so the CRC of a
/// record with one bit flipped differs from the right one by that bit's syndrome alone.
const std::array<std::uint32_t, 256>& crc32c_table() {
    static const std::array<std::uint32_t, 256> table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t r = i;
            for (int k = 0; k < 8; ++k) {
                r = (r >> 1) ^ (0x82F63B78u & (0u - (r & 1u)));
            }
            t[i] = r;
        }
        return t;
    }();
    return table;
}

/// The byte (from the start of the covered bytes) and bit whose flip changes the CRC of
/// `covered_size` bytes by `syndrome`, if one does.
std::optional<std::pair<std::uint64_t, int>> locate_flipped_bit(std::uint64_t covered_size,
                                                                std::uint32_t syndrome) {
    const auto& table = crc32c_table();
    std::array<std::uint32_t, 8> registers{};
    for (int bit = 0; bit < 8; ++bit) {
        registers[static_cast<std::size_t>(bit)] = table[1u << bit];
    }
    // After j steps, registers[bit] is the syndrome of that bit in byte covered_size - 1 - j.
    for (std::uint64_t j = 0; j < covered_size; ++j) {
        for (int bit = 0; bit < 8; ++bit) {
            std::uint32_t& r = registers[static_cast<std::size_t>(bit)];
            if (r == syndrome) {
                return std::pair{covered_size - 1 - j, bit};
            }
            r = (r >> 8) ^ table[r & 0xffu];
        }
    }
    return std::nullopt;
}

/// The name of the record field holding record byte `at`.
std::string record_field_at(std::uint64_t at) {
    if (at < 4) {
        return "crc";
    }
    if (at < 8) {
        return "payload_size";
    }
    if (at < 16) {
        return "term";
    }
    if (at < 24) {
        return "index";
    }
    if (at < 25) {
        return "type";
    }
    if (at < record_header_size) {
        return "reserved";
    }
    return "payload";
}

}  // namespace

Result<std::optional<std::string>> find_written_damage_windowed(std::uint64_t size,
                                                                const SegmentView& view,
                                                                const SegmentScan& scan,
                                                                std::uint32_t payload_size_max) {
    using Found = std::optional<std::string>;
    if (scan.stop == StopReason::bad_field) {
        return Found{"its CRC is valid, so it reached the disk whole (" + scan.detail + ")"};
    }
    if (scan.stop != StopReason::bad_length && scan.stop != StopReason::bad_crc) {
        return Found{};
    }
    const std::uint64_t at = scan.stop_offset;
    if (at > size || size - at < record_header_size) {
        return Found{};
    }
    QUEEN_TRY(const ByteSpan head, view(at, record_header_size));
    std::array<Byte, record_header_size> header{};
    std::memcpy(header.data(), head.data(), record_header_size);
    const auto stored_crc = load_le<std::uint32_t>(header.data());
    const auto stored_size = load_le<std::uint32_t>(header.data() + 4);
    const std::uint64_t left = size - at;
    const LogIndex expected = scan.last_index.next();
    // The corrected record must also be the one expected here.
    auto fields_fit = [&](const std::array<Byte, record_header_size>& h) {
        return LogIndex{load_le<std::uint64_t>(h.data() + 16)} == expected &&
               Term{load_le<std::uint64_t>(h.data() + 8)} >= scan.last_term && h[25] == 0 &&
               h[26] == 0 && h[27] == 0;
    };
    auto fits = [&](std::uint64_t payload_size) {
        return payload_size <= payload_size_max && payload_size <= record_payload_size_limit &&
               encoded_record_size(payload_size) <= left;
    };
    auto place = [&](std::uint64_t record_byte, int bit) {
        return "bit " + std::to_string(bit) + " of byte " + std::to_string(at + record_byte) +
               " (record byte " + std::to_string(record_byte) + ", " +
               record_field_at(record_byte) + ")";
    };
    if (fits(stored_size)) {
        const std::uint64_t covered = record_header_size - record_crc_covered_from + stored_size;
        QUEEN_TRY(const ByteSpan record, view(at, encoded_record_size(stored_size)));
        const std::uint32_t actual_crc = crc32c(record.subspan(record_crc_covered_from, covered));
        const std::uint32_t syndrome = stored_crc ^ actual_crc;
        if (syndrome != 0 && (syndrome & (syndrome - 1)) == 0 && fields_fit(header)) {
            int bit = 0;
            while ((syndrome >> bit) != 1u) {
                ++bit;
            }
            return Found{"one bit flipped: " + place(static_cast<std::uint64_t>(bit / 8), bit % 8) +
                         "; the rest of the record matches its CRC"};
        }
        if (const auto flipped = locate_flipped_bit(covered, syndrome)) {
            const std::uint64_t record_byte = record_crc_covered_from + flipped->first;
            std::array<Byte, record_header_size> corrected = header;
            if (record_byte < record_header_size) {
                corrected[record_byte] ^= static_cast<Byte>(1u << flipped->second);
            }
            // A flip in payload_size would have changed the length the CRC covers: it is
            // found below, not here.
            if (record_byte >= 8 && fields_fit(corrected)) {
                return Found{"one bit flipped: " + place(record_byte, flipped->second) +
                             "; with it flipped back the record matches its CRC"};
            }
        }
    }
    for (int bit = 0; bit < 32; ++bit) {
        const std::uint32_t candidate = stored_size ^ (1u << bit);
        if (!fits(candidate) || !fields_fit(header)) {
            continue;
        }
        QUEEN_TRY(const ByteSpan record, view(at, encoded_record_size(candidate)));
        std::array<Byte, 4> size_bytes{};
        store_le<std::uint32_t>(size_bytes.data(), candidate);
        const std::uint32_t crc = crc32c(record.subspan(8, record_header_size - 8 + candidate),
                                         crc32c(ByteSpan{size_bytes}));
        if (crc == stored_crc) {
            return Found{
                "one bit flipped: " + place(4 + static_cast<std::uint64_t>(bit / 8), bit % 8) +
                " (payload_size " + std::to_string(stored_size) + " was " +
                std::to_string(candidate) + "); with it flipped back the record matches its CRC"};
        }
    }
    return Found{};
}

std::optional<std::string> find_written_damage(ByteSpan bytes, const SegmentScan& scan,
                                               std::uint32_t payload_size_max) {
    // A buffer's view never fails.
    return find_written_damage_windowed(bytes.size(), whole(bytes), scan, payload_size_max).value();
}

std::string segment_file_name(LogIndex first_index) {
    char name[32];
    const int written = std::snprintf(name, sizeof name, "%020llu",
                                      static_cast<unsigned long long>(first_index.value()));
    QUEEN_ASSERT(written == static_cast<int>(segment_name_digits), "segment name width");
    return std::string(name) + std::string(segment_suffix);
}

std::optional<LogIndex> parse_segment_file_name(std::string_view name) noexcept {
    if (name.size() != segment_name_digits + segment_suffix.size() ||
        name.substr(segment_name_digits) != segment_suffix) {
        return std::nullopt;
    }
    std::uint64_t value = 0;
    const char* first = name.data();
    const char* last = name.data() + segment_name_digits;
    for (const char* c = first; c != last; ++c) {
        if (*c < '0' || *c > '9') {
            return std::nullopt;
        }
    }
    const auto [end, ec] = std::from_chars(first, last, value);
    if (ec != std::errc{} || end != last) {
        return std::nullopt;
    }
    return LogIndex{value};
}

}  // namespace queen::log
