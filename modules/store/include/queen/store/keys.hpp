// queen/store/keys.hpp — order-preserving key encoding: byte order of the key = order of fields.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "queen/core/bytes.hpp"

namespace queen::store {

/// Big-endian fixed-width stores and loads: memcmp order of the bytes = numeric order.
template <class T>
inline void store_be(Byte* out, T value) noexcept {
    static_assert(std::is_unsigned_v<T>, "use the signed helpers of KeyBuilder");
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        out[i] = static_cast<Byte>(value >> (8 * (sizeof(T) - 1 - i)));
    }
}
template <class T>
[[nodiscard]] inline T load_be(const Byte* in) noexcept {
    static_assert(std::is_unsigned_v<T>, "use the signed helpers of KeyReader");
    T value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        value = static_cast<T>((value << 8) | in[i]);
    }
    return value;
}

/// An 8-byte big-endian key, e.g. a message sequence number in a FIFO table (use it with
/// PutFlags::append).
[[nodiscard]] inline std::array<Byte, 8> u64be_key(std::uint64_t value) noexcept {
    std::array<Byte, 8> out{};
    store_be<std::uint64_t>(out.data(), value);
    return out;
}

/// The bytes of `value` in native order, as tables with TableFlags::integer_keys (or
/// integer_dups) expect. The span aliases `value`: keep it alive while the span is used.
[[nodiscard]] inline ByteSpan as_native_key(const std::uint64_t& value) noexcept {
    return {reinterpret_cast<const Byte*>(&value), sizeof value};
}
[[nodiscard]] inline ByteSpan as_native_key(const std::uint32_t& value) noexcept {
    return {reinterpret_cast<const Byte*>(&value), sizeof value};
}

/// Builds a composite key in an inline buffer (no allocation) so that comparing keys byte by
/// byte (LMDB's default order) compares the fields in order: integers big-endian (signed ones
/// with the sign bit flipped), strings escaped and terminated (0x00 -> 0x00 0xFF, end = 0x00
/// 0x00... see str()), raw bytes as they are. Example:
///   KeyBuilder key; key.str(queue).u32be(partition).u64be(sequence); txn.put(t, key.span(), v);
/// Capacity is Env::key_size_max (511) bytes. Appending past it sets is_overflowed() and makes
/// span() 512 bytes long, which every store call rejects with Errc::key_too_large, so an
/// over-long user-supplied name fails cleanly instead of being truncated.
class KeyBuilder {
public:
    static constexpr std::size_t size_max = 511;

    KeyBuilder& u8(std::uint8_t value) noexcept { return fixed(value); }
    KeyBuilder& u16be(std::uint16_t value) noexcept { return fixed(value); }
    KeyBuilder& u32be(std::uint32_t value) noexcept { return fixed(value); }
    KeyBuilder& u64be(std::uint64_t value) noexcept { return fixed(value); }
    /// Signed integers: two's complement with the sign bit flipped, so -1 < 0 < 1 bytewise.
    KeyBuilder& i64be(std::int64_t value) noexcept {
        return fixed(static_cast<std::uint64_t>(value) ^ (std::uint64_t{1} << 63));
    }
    /// A string field that may be followed by more fields: each 0x00 byte becomes 0x00 0xFF and
    /// the field ends with 0x00 0x00. Shorter strings sort first ("a" < "a\0" < "ab"), and the
    /// terminator keeps ("a", x) before ("ab", y) whatever x and y are.
    KeyBuilder& str(std::string_view text) noexcept {
        for (const char c : text) {
            byte(static_cast<Byte>(c));
            if (c == '\0') {
                byte(0xff);
            }
        }
        byte(0x00);
        byte(0x00);
        return *this;
    }
    /// Bytes appended as they are: only as the last field, or when every key has the same
    /// length at this point (otherwise order and uniqueness of later fields break).
    KeyBuilder& raw(ByteSpan bytes) noexcept {
        const std::size_t room = size_max - size_;
        const std::size_t count = bytes.size() <= room ? bytes.size() : room;
        if (count > 0) {
            std::memcpy(buffer_.data() + size_, bytes.data(), count);
            size_ += count;
        }
        if (count < bytes.size()) {
            is_overflowed_ = true;
        }
        return *this;
    }

    /// The key so far; valid while the builder lives and is not changed.
    [[nodiscard]] ByteSpan span() const noexcept {
        return {buffer_.data(), is_overflowed_ ? buffer_.size() : size_};
    }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool is_overflowed() const noexcept { return is_overflowed_; }
    /// Empties the builder for reuse.
    void clear() noexcept {
        size_ = 0;
        is_overflowed_ = false;
    }

private:
    template <class T>
    KeyBuilder& fixed(T value) noexcept {
        if (size_ + sizeof(T) > size_max) {
            is_overflowed_ = true;
            return *this;
        }
        store_be<T>(buffer_.data() + size_, value);
        size_ += sizeof(T);
        return *this;
    }
    void byte(Byte b) noexcept {
        if (size_ == size_max) {
            is_overflowed_ = true;
            return;
        }
        buffer_[size_++] = b;
    }
    std::array<Byte, size_max + 1> buffer_{};
    std::size_t size_ = 0;
    bool is_overflowed_ = false;
};

/// Decodes keys made by KeyBuilder, field by field in the same order. A read past the end or a
/// malformed string sets a sticky failure (ok() false) and returns zero values.
class KeyReader {
public:
    explicit KeyReader(ByteSpan key) noexcept : in_(key) {}

    std::uint8_t u8() noexcept { return fixed<std::uint8_t>(); }
    std::uint16_t u16be() noexcept { return fixed<std::uint16_t>(); }
    std::uint32_t u32be() noexcept { return fixed<std::uint32_t>(); }
    std::uint64_t u64be() noexcept { return fixed<std::uint64_t>(); }
    std::int64_t i64be() noexcept {
        return static_cast<std::int64_t>(fixed<std::uint64_t>() ^ (std::uint64_t{1} << 63));
    }
    /// Appends the decoded string field to `out` (it may hold 0x00 bytes).
    template <class String>
    void str(String& out) {
        for (;;) {
            if (in_.size() - at_ < 2 || failed_) {
                failed_ = true;
                return;
            }
            const Byte b = in_[at_];
            if (b != 0x00) {
                out.push_back(static_cast<char>(b));
                ++at_;
                continue;
            }
            const Byte next = in_[at_ + 1];
            at_ += 2;
            if (next == 0x00) {
                return;
            }
            if (next != 0xff) {
                failed_ = true;
                return;
            }
            out.push_back('\0');
        }
    }
    /// The remaining bytes (a trailing raw field).
    ByteSpan rest() noexcept {
        const ByteSpan out = failed_ ? ByteSpan{} : in_.subspan(at_);
        at_ = in_.size();
        return out;
    }

    [[nodiscard]] bool ok() const noexcept { return !failed_; }
    [[nodiscard]] bool at_end() const noexcept { return at_ == in_.size(); }

private:
    template <class T>
    T fixed() noexcept {
        if (failed_ || in_.size() - at_ < sizeof(T)) {
            failed_ = true;
            return T{};
        }
        const T value = load_be<T>(in_.data() + at_);
        at_ += sizeof(T);
        return value;
    }
    ByteSpan in_;
    std::size_t at_ = 0;
    bool failed_ = false;
};

}  // namespace queen::store
