// queen/core/small_string.hpp — a string that keeps short text inside the object.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace queen {

/// Text of up to `inline_capacity` bytes lives inside the object; longer text goes to the heap.
/// Message ids (transactionIds are UUIDs, 36 bytes, in every official client) pass through
/// the parser, the log codec, apply and the answer of every message: as std::string (15 bytes
/// inline) each of those copies was a heap allocation and a free on another thread.
///
/// It reads as a std::string_view (implicit conversion) and compares with anything that does;
/// `str()` makes a std::string. The text is always followed by a NUL (`c_str()`).
class SmallString {
public:
    static constexpr std::size_t inline_capacity = 39;

    SmallString() noexcept { inline_[0] = '\0'; }
    SmallString(std::string_view text) { init(text.data(), text.size()); }  // NOLINT: implicit
    SmallString(const char* text) : SmallString(std::string_view(text)) {}  // NOLINT: implicit
    SmallString(const std::string& text)                                    // NOLINT: implicit
        : SmallString(std::string_view(text)) {}
    SmallString(const SmallString& other) { init(other.data(), other.size_); }
    SmallString(SmallString&& other) noexcept { steal(other); }
    ~SmallString() { release(); }

    SmallString& operator=(const SmallString& other) {
        if (this != &other) {
            assign(other.data(), other.size_);
        }
        return *this;
    }
    SmallString& operator=(SmallString&& other) noexcept {
        if (this != &other) {
            release();
            steal(other);
        }
        return *this;
    }
    SmallString& operator=(std::string_view text) {
        assign(text.data(), text.size());
        return *this;
    }
    SmallString& operator=(const char* text) { return *this = std::string_view(text); }
    SmallString& operator=(const std::string& text) { return *this = std::string_view(text); }

    /// Replaces the text; keeps a heap buffer that is large enough (no allocation).
    void assign(const char* text, std::size_t size) {
        if (size <= capacity()) {
            char* out = mutable_data();
            std::memmove(out, text, size);
            out[size] = '\0';
            size_ = static_cast<std::uint32_t>(size);
            return;
        }
        SmallString grown(std::string_view(text, size));
        *this = std::move(grown);
    }
    void assign(std::string_view text) { assign(text.data(), text.size()); }

    [[nodiscard]] const char* data() const noexcept { return is_heap_ ? heap_.data : inline_; }
    [[nodiscard]] const char* c_str() const noexcept { return data(); }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::size_t length() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] std::size_t capacity() const noexcept {
        return is_heap_ ? heap_.capacity : inline_capacity;
    }
    [[nodiscard]] bool is_inline() const noexcept { return !is_heap_; }
    void clear() noexcept {
        size_ = 0;
        mutable_data()[0] = '\0';
    }

    [[nodiscard]] const char* begin() const noexcept { return data(); }
    [[nodiscard]] const char* end() const noexcept { return data() + size_; }
    [[nodiscard]] char operator[](std::size_t i) const noexcept { return data()[i]; }

    [[nodiscard]] std::string_view view() const noexcept { return {data(), size_}; }
    operator std::string_view() const noexcept { return view(); }  // NOLINT: implicit
    [[nodiscard]] std::string str() const { return std::string(data(), size_); }

    friend bool operator==(const SmallString& a, std::string_view b) noexcept {
        return a.view() == b;
    }
    friend std::strong_ordering operator<=>(const SmallString& a, std::string_view b) noexcept {
        return a.view() <=> b;
    }
    friend std::string operator+(std::string a, const SmallString& b) {
        a.append(b.data(), b.size_);
        return a;
    }
    friend std::string operator+(const char* a, const SmallString& b) { return std::string(a) + b; }
    friend std::string operator+(const SmallString& a, std::string_view b) {
        std::string out = a.str();
        out.append(b);
        return out;
    }
    friend std::ostream& operator<<(std::ostream& out, const SmallString& text) {
        return out << text.view();
    }

private:
    struct Heap {
        char* data;
        std::size_t capacity;  // bytes of text the buffer holds (one more for the NUL)
    };

    char* mutable_data() noexcept { return is_heap_ ? heap_.data : inline_; }

    void init(const char* text, std::size_t size) {
        if (size <= inline_capacity) {
            is_heap_ = false;
            std::memcpy(inline_, text, size);
            inline_[size] = '\0';
        } else {
            is_heap_ = true;
            heap_.data = new char[size + 1];
            heap_.capacity = size;
            std::memcpy(heap_.data, text, size);
            heap_.data[size] = '\0';
        }
        size_ = static_cast<std::uint32_t>(size);
    }
    void steal(SmallString& other) noexcept {
        is_heap_ = other.is_heap_;
        size_ = other.size_;
        if (is_heap_) {
            heap_ = other.heap_;
            other.is_heap_ = false;
        } else {
            std::memcpy(inline_, other.inline_, static_cast<std::size_t>(size_) + 1);
        }
        other.size_ = 0;
        other.inline_[0] = '\0';
    }
    void release() noexcept {
        if (is_heap_) {
            delete[] heap_.data;
            is_heap_ = false;
        }
    }

    union {
        char inline_[inline_capacity + 1];
        Heap heap_;
    };
    std::uint32_t size_ = 0;
    bool is_heap_ = false;
};

}  // namespace queen

template <>
struct std::hash<queen::SmallString> {
    std::size_t operator()(const queen::SmallString& text) const noexcept {
        return std::hash<std::string_view>{}(text.view());
    }
};
