// queen/core/field_codec.hpp — the field-by-field binary codec shared by the engine's commands
// and the queue tables' records: one `fields(visitor, struct)` function per struct drives the
// writer, the sizer and the reader, so encoder and decoder cannot drift apart.
//
// Encoding: unsigned integers as LEB128 varints (shortest form only: one value has exactly one
// encoding), signed as zigzag varints; bools and enums one byte; strings and byte blobs a varint
// length then the bytes; vectors a varint count then the elements; optionals a presence byte
// (0 or 1) then the value when present.
//
// A module writes its `fields()` overloads, then one dispatcher struct after the last of them
// (so ordinary lookup sees every overload) and names the three visitors:
//
//     struct Fields {
//         template <class A, class T>
//         static void visit(A& a, T& value) { fields(a, value); }
//     };
//     using Writer = codec::Writer<Fields>;
//     using Sizer = codec::Sizer<Fields>;
//     using Reader = codec::Reader<Fields>;
//
// FieldWriter, FieldSizer and FieldReader are the CRTP bases those three share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/error.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/small_string.hpp"

namespace queen::codec {

/// Bytes of `value` as a LEB128 varint.
[[nodiscard]] constexpr std::size_t varint_size(std::uint64_t value) noexcept {
    std::size_t n = 1;
    for (value >>= 7; value != 0; value >>= 7) {
        ++n;
    }
    return n;
}

/// Writes each visited field into a Bytes buffer.
template <class Derived>
class FieldWriter {
public:
    explicit FieldWriter(Bytes& out) : out_(out) {}
    void operator()(bool& value) { out_.u8(value ? 1 : 0); }
    void operator()(std::uint32_t& value) { out_.varint(value); }
    void operator()(std::uint64_t& value) { out_.varint(value); }
    void operator()(std::int64_t& value) { out_.svarint(value); }
    void operator()(std::string& value) { out_.str(value); }
    void operator()(SmallString& value) { out_.str(value); }
    void operator()(Bytes& value) { out_.blob(value); }
    template <class Tag, class Rep>
    void operator()(StrongInt<Tag, Rep>& value) {
        Rep raw = value.value();
        derived()(raw);
    }
    template <class E>
    requires std::is_enum_v<E>
    void enumeration(E& value, E /*max*/) { out_.u8(static_cast<std::uint8_t>(value)); }
    template <class T>
    void operator()(std::vector<T>& values) {
        out_.varint(values.size());
        for (auto& value : values) {
            derived()(value);
        }
    }
    template <class T>
    void operator()(std::optional<T>& value) {
        out_.u8(value.has_value() ? 1 : 0);
        if (value) {
            derived()(*value);
        }
    }

private:
    Derived& derived() { return static_cast<Derived&>(*this); }
    ByteWriter out_;
};

/// Counts the bytes FieldWriter would write, so an encoder sizes its buffer once.
template <class Derived>
class FieldSizer {
public:
    void operator()(bool& /*value*/) { size_ += 1; }
    void operator()(std::uint32_t& value) { size_ += varint_size(value); }
    void operator()(std::uint64_t& value) { size_ += varint_size(value); }
    void operator()(std::int64_t& value) {
        size_ += varint_size((static_cast<std::uint64_t>(value) << 1) ^
                             static_cast<std::uint64_t>(value >> 63));
    }
    void operator()(std::string& value) { size_ += varint_size(value.size()) + value.size(); }
    void operator()(SmallString& value) { size_ += varint_size(value.size()) + value.size(); }
    void operator()(Bytes& value) { size_ += varint_size(value.size()) + value.size(); }
    template <class Tag, class Rep>
    void operator()(StrongInt<Tag, Rep>& value) {
        Rep raw = value.value();
        derived()(raw);
    }
    template <class E>
    requires std::is_enum_v<E>
    void enumeration(E& /*value*/, E /*max*/) { size_ += 1; }
    template <class T>
    void operator()(std::vector<T>& values) {
        size_ += varint_size(values.size());
        for (auto& value : values) {
            derived()(value);
        }
    }
    template <class T>
    void operator()(std::optional<T>& value) {
        size_ += 1;
        if (value) {
            derived()(*value);
        }
    }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }

private:
    Derived& derived() { return static_cast<Derived&>(*this); }
    std::size_t size_ = 0;
};

/// Reads what FieldWriter wrote. Failures (truncation, a varint not in its shortest form, a bool
/// or enum out of range, a count larger than the bytes left) are sticky in the ByteReader and
/// checked once at the end with bytes().ok().
template <class Derived>
class FieldReader {
public:
    explicit FieldReader(ByteSpan in) : in_(in) {}
    std::uint64_t varint() {
        const std::size_t start = in_.position();
        const std::uint64_t value = in_.varint();
        if (in_.ok() && in_.position() - start != varint_size(value)) {
            in_.fail();
        }
        return value;
    }
    ByteSpan blob() { return in_.raw(static_cast<std::size_t>(varint())); }
    void operator()(bool& value) {
        const std::uint8_t raw = in_.u8();
        if (raw > 1) {
            in_.fail();
        }
        value = raw == 1;
    }
    void operator()(std::uint32_t& value) {
        const std::uint64_t raw = varint();
        if (raw > UINT32_MAX) {
            in_.fail();
        }
        value = static_cast<std::uint32_t>(raw);
    }
    void operator()(std::uint64_t& value) { value = varint(); }
    void operator()(std::int64_t& value) {
        const std::uint64_t raw = varint();
        value = static_cast<std::int64_t>(raw >> 1) ^ -static_cast<std::int64_t>(raw & 1);
    }
    void operator()(std::string& value) { value.assign(as_chars(blob())); }
    void operator()(SmallString& value) { value.assign(as_chars(blob())); }
    void operator()(Bytes& value) {
        const ByteSpan raw = blob();
        value.assign(raw.begin(), raw.end());
    }
    template <class Tag, class Rep>
    void operator()(StrongInt<Tag, Rep>& value) {
        Rep raw{};
        derived()(raw);
        value = StrongInt<Tag, Rep>{raw};
    }
    template <class E>
    requires std::is_enum_v<E>
    void enumeration(E& value, E max) {
        const std::uint8_t raw = in_.u8();
        if (raw > static_cast<std::uint8_t>(max)) {
            in_.fail();
        }
        value = static_cast<E>(raw);
    }
    template <class T>
    void operator()(std::vector<T>& values) {
        const std::uint64_t count = varint();
        // Every element takes at least one byte, so a count above the bytes left is a lie; this
        // bounds allocation by the input size.
        if (count > in_.remaining()) {
            in_.fail();
            return;
        }
        // Elements already there are decoded over (callers may keep their storage).
        values.resize(static_cast<std::size_t>(count));
        for (auto& value : values) {
            if (!in_.ok()) {
                break;
            }
            derived()(value);
        }
    }
    template <class T>
    void operator()(std::optional<T>& value) {
        bool present = false;
        (*this)(present);
        if (!present) {
            value.reset();
            return;
        }
        if (!value) {
            value.emplace();
        }
        derived()(*value);
    }

    ByteReader& bytes() { return in_; }

private:
    Derived& derived() { return static_cast<Derived&>(*this); }
    ByteReader in_;
};

/// The visitors a module uses; `Fields::visit(visitor, value)` runs the module's fields() for a
/// struct (see the top of this file).
template <class Fields>
class Writer final : public FieldWriter<Writer<Fields>> {
public:
    explicit Writer(Bytes& out) : FieldWriter<Writer<Fields>>(out) {}
    using FieldWriter<Writer<Fields>>::operator();
    template <class T>
    requires std::is_class_v<T>
    void operator()(T& value) { Fields::visit(*this, value); }
};

template <class Fields>
class Sizer final : public FieldSizer<Sizer<Fields>> {
public:
    using FieldSizer<Sizer<Fields>>::operator();
    template <class T>
    requires std::is_class_v<T>
    void operator()(T& value) { Fields::visit(*this, value); }
};

template <class Fields>
class Reader final : public FieldReader<Reader<Fields>> {
public:
    explicit Reader(ByteSpan in) : FieldReader<Reader<Fields>>(in) {}
    using FieldReader<Reader<Fields>>::operator();
    template <class T>
    requires std::is_class_v<T>
    void operator()(T& value) { Fields::visit(*this, value); }
};

/// The Errc::corruption of a stored record or key of `module` that does not decode:
/// "<module>: undecodable <what> (<size> bytes: <hex of the first 32 bytes>)".
[[nodiscard]] inline Error undecodable(std::string_view module, std::string_view what,
                                       ByteSpan bytes) {
    return Error{queen::Errc::corruption,
                 std::string(module) + ": undecodable " + std::string(what) + " (" +
                     std::to_string(bytes.size()) +
                     " bytes: " + to_hex(bytes.first(bytes.size() < 32 ? bytes.size() : 32)) + ")"};
}

}  // namespace queen::codec
