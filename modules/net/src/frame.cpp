// modules/net/src/frame.cpp — frame encoding and the stream reader.
#include "queen/net/frame.hpp"

#include <string>

#include "queen/core/crc32c.hpp"
#include "queen/net/errc.hpp"

namespace queen::net {

void append_frame(Bytes& out, std::uint8_t type, ByteSpan payload) {
    const std::size_t at = out.size();
    out.resize(at + frame_header_bytes + 1 + payload.size());
    Byte* const body = out.data() + at + frame_header_bytes;
    body[0] = type;
    if (!payload.empty()) {
        std::memcpy(body + 1, payload.data(), payload.size());
    }
    const std::size_t body_size = 1 + payload.size();
    store_le<std::uint32_t>(out.data() + at, static_cast<std::uint32_t>(body_size));
    store_le<std::uint32_t>(out.data() + at + 4, crc32c(ByteSpan(body, body_size)));
}

void FrameReader::append(ByteSpan bytes) {
    if (consumed_ > 0 && consumed_ == buffer_.size()) {
        buffer_.clear();
        consumed_ = 0;
    } else if (consumed_ > 0 && consumed_ >= buffer_.size() / 2) {
        // Drop what was returned before the buffer grows (payload views are invalid now).
        buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(consumed_));
        consumed_ = 0;
    }
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

Result<std::optional<Frame>> FrameReader::next() {
    if (is_failed_) {
        return Error{Errc::bad_frame, "the stream already held a bad frame"};
    }
    const std::size_t available = buffer_.size() - consumed_;
    if (available < frame_header_bytes) {
        return std::optional<Frame>{};
    }
    const Byte* const header = buffer_.data() + consumed_;
    const std::size_t body_size = load_le<std::uint32_t>(header);
    if (body_size == 0 || body_size > body_bytes_max_) {
        is_failed_ = true;
        return Error{Errc::bad_frame, "frame body of " + std::to_string(body_size) +
                                          " bytes (1 to " + std::to_string(body_bytes_max_) +
                                          " allowed)"};
    }
    if (available < frame_header_bytes + body_size) {
        return std::optional<Frame>{};
    }
    const ByteSpan body(header + frame_header_bytes, body_size);
    const std::uint32_t stored = load_le<std::uint32_t>(header + 4);
    if (const std::uint32_t computed = crc32c(body); computed != stored) {
        is_failed_ = true;
        return Error{Errc::bad_frame, "frame CRC mismatch (stored " + std::to_string(stored) +
                                          ", computed " + std::to_string(computed) + ")"};
    }
    consumed_ += frame_header_bytes + body_size;
    return std::optional<Frame>{Frame{body[0], body.subspan(1)}};
}

}  // namespace queen::net
