// modules/log/tests/random_segment.hpp — random segments with random damage, and a check that
// two decodes of one segment agree, for the tests of the windowed decoder.
#pragma once

#include <algorithm>

#include "queen/core/rng.hpp"
#include "queen/log/format.hpp"
#include "queen/testing/catch.hpp"

namespace queen::log::testing {

/// A segment of random records (mostly short payloads, some up to `payload_max` bytes, terms
/// that sometimes step up), then random damage: none, a cut anywhere, flipped bytes, a zeroed
/// stretch, a zero tail or garbage appended.
inline Bytes random_segment(Rng& rng, std::uint32_t payload_max) {
    Bytes out(segment_header_size);
    SegmentHeader header;
    header.first_index = LogIndex{1 + rng.below(1000)};
    header.prev_term = Term{rng.below(5)};
    encode_segment_header(header, out);
    Term term = header.prev_term;
    const std::uint64_t count = rng.below(60);
    for (std::uint64_t i = 0; i < count; ++i) {
        if (rng.below(4) == 0) {
            term = Term{term.value() + 1};
        }
        Bytes payload(rng.below(8) == 0 ? rng.below(payload_max + 1) : rng.below(64));
        for (Byte& b : payload) {
            b = static_cast<Byte>(rng.next());
        }
        encode_record(out, term, LogIndex{header.first_index.value() + i},
                      static_cast<RecordType>(rng.below(4)), payload);
    }
    switch (rng.below(6)) {
        case 0: break;
        case 1: out.resize(rng.below(out.size() + 1)); break;
        case 2:
            for (std::uint64_t f = 1 + rng.below(3); f > 0; --f) {
                out[rng.below(out.size())] ^= static_cast<Byte>(1 + rng.below(255));
            }
            break;
        case 3: {
            const std::uint64_t at = rng.below(out.size());
            std::fill_n(out.begin() + static_cast<std::ptrdiff_t>(at),
                        rng.below(out.size() - at + 1), Byte{0});
            break;
        }
        case 4: out.resize(out.size() + 1 + rng.below(3000), Byte{0}); break;
        default:
            for (std::uint64_t g = 1 + rng.below(3000); g > 0; --g) {
                out.push_back(static_cast<Byte>(rng.next()));
            }
            break;
    }
    return out;
}

inline void check_same_scan(const SegmentScan& a, const SegmentScan& b) {
    REQUIRE(a.header.has_value() == b.header.has_value());
    if (a.header) {
        CHECK(a.header->first_index == b.header->first_index);
        CHECK(a.header->prev_term == b.header->prev_term);
    }
    CHECK(a.record_count == b.record_count);
    CHECK(a.valid_bytes == b.valid_bytes);
    CHECK(a.last_index == b.last_index);
    CHECK(a.last_term == b.last_term);
    CHECK(a.stop == b.stop);
    CHECK(a.stop_offset == b.stop_offset);
    CHECK(a.detail == b.detail);
    CHECK(a.zero_tail_bytes == b.zero_tail_bytes);
}

}  // namespace queen::log::testing
