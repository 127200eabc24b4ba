// queen/core/bytes.hpp — byte spans and little-endian encoding helpers for on-disk and wire
// formats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "queen/core/assert.hpp"

namespace queen {

using Byte = std::uint8_t;
using ByteSpan = std::span<const Byte>;
using MutableByteSpan = std::span<Byte>;
using Bytes = std::vector<Byte>;

inline ByteSpan as_bytes(std::string_view text) noexcept {
    return {reinterpret_cast<const Byte*>(text.data()), text.size()};
}
inline std::string_view as_chars(ByteSpan bytes) noexcept {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

/// Little-endian fixed-width stores and loads (all queen formats are little-endian).
template <class T>
inline void store_le(Byte* out, T value) noexcept {
    static_assert(std::is_integral_v<T>);
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        out[i] = static_cast<Byte>(static_cast<std::make_unsigned_t<T>>(value) >> (8 * i));
    }
}
template <class T>
[[nodiscard]] inline T load_le(const Byte* in) noexcept {
    static_assert(std::is_integral_v<T>);
    std::make_unsigned_t<T> value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        value |= static_cast<std::make_unsigned_t<T>>(static_cast<std::make_unsigned_t<T>>(in[i])
                                                      << (8 * i));
    }
    return static_cast<T>(value);
}

/// Appends encoded fields to a growing buffer. Varints are LEB128 (unsigned).
class ByteWriter {
public:
    explicit ByteWriter(Bytes& target) : out_(target) {}
    template <class T>
    void fixed(T value) {
        const std::size_t at = out_.size();
        out_.resize(at + sizeof(T));
        store_le<T>(out_.data() + at, value);
    }
    void u8(std::uint8_t value) { out_.push_back(value); }
    void varint(std::uint64_t value) {
        while (value >= 0x80) {
            out_.push_back(static_cast<Byte>(value | 0x80));
            value >>= 7;
        }
        out_.push_back(static_cast<Byte>(value));
    }
    /// Signed varint, zigzag-encoded.
    void svarint(std::int64_t value) {
        varint((static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63));
    }
    void raw(ByteSpan bytes) { out_.insert(out_.end(), bytes.begin(), bytes.end()); }
    /// varint length followed by the bytes.
    void blob(ByteSpan bytes) {
        varint(bytes.size());
        raw(bytes);
    }
    void str(std::string_view text) { blob(as_bytes(text)); }
    [[nodiscard]] std::size_t size() const noexcept { return out_.size(); }

private:
    Bytes& out_;
};

/// Reads fields from a span. Any read past the end sets a sticky failure flag and returns zero
/// values, so decoders check `ok()` once at the end (and before trusting a length).
class ByteReader {
public:
    explicit ByteReader(ByteSpan source) noexcept : in_(source) {}
    template <class T>
    T fixed() noexcept {
        if (!need(sizeof(T))) {
            return T{};
        }
        T value = load_le<T>(in_.data() + at_);
        at_ += sizeof(T);
        return value;
    }
    std::uint8_t u8() noexcept { return fixed<std::uint8_t>(); }
    std::uint64_t varint() noexcept {
        std::uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (!need(1)) {
                return 0;
            }
            const Byte b = in_[at_++];
            value |= static_cast<std::uint64_t>(b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                if (shift == 63 && b > 1) {
                    failed_ = true;  // overflows 64 bits
                    return 0;
                }
                return value;
            }
        }
        failed_ = true;
        return 0;
    }
    std::int64_t svarint() noexcept {
        const std::uint64_t raw_value = varint();
        return static_cast<std::int64_t>(raw_value >> 1) ^
               -static_cast<std::int64_t>(raw_value & 1);
    }
    ByteSpan raw(std::size_t count) noexcept {
        if (!need(count)) {
            return {};
        }
        ByteSpan out = in_.subspan(at_, count);
        at_ += count;
        return out;
    }
    ByteSpan blob() noexcept { return raw(static_cast<std::size_t>(varint())); }
    std::string_view str() noexcept { return as_chars(blob()); }

    [[nodiscard]] bool ok() const noexcept { return !failed_; }
    [[nodiscard]] bool at_end() const noexcept { return at_ == in_.size(); }
    [[nodiscard]] std::size_t position() const noexcept { return at_; }
    [[nodiscard]] std::size_t remaining() const noexcept { return failed_ ? 0 : in_.size() - at_; }
    void fail() noexcept { failed_ = true; }

private:
    bool need(std::size_t count) noexcept {
        if (failed_ || in_.size() - at_ < count) {
            failed_ = true;
            return false;
        }
        return true;
    }
    ByteSpan in_;
    std::size_t at_ = 0;
    bool failed_ = false;
};

/// Lowercase hex of `bytes` (for inspect output and test messages).
std::string to_hex(ByteSpan bytes);

}  // namespace queen
