// queen/core/chunked_array.hpp — a growable array of fixed-size chunks: elements never move, so
// growing never copies what is there (a std::vector of 8,388,608 40-byte elements copies 335 MB
// and faults in 670 MB when it doubles) and never holds two copies at once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

namespace queen {

/// Index-addressed like std::vector (size, resize, assign, operator[]); no iterators, no
/// insertion in the middle. Elements are value-initialized when they come into range, also after
/// a shrink and a regrow. References stay valid until their element leaves the range.
/// `ChunkBits`: log2 of the elements per chunk.
template <class T, unsigned ChunkBits = 16>
class ChunkedArray {
public:
    static constexpr std::size_t chunk_size = std::size_t{1} << ChunkBits;

    ChunkedArray() = default;
    explicit ChunkedArray(std::size_t count) { resize(count); }

    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    /// Elements the allocated chunks hold.
    [[nodiscard]] std::size_t capacity() const noexcept { return chunks_.size() * chunk_size; }

    [[nodiscard]] T& operator[](std::size_t index) noexcept {
        return chunks_[index >> ChunkBits][index & (chunk_size - 1)];
    }
    [[nodiscard]] const T& operator[](std::size_t index) const noexcept {
        return chunks_[index >> ChunkBits][index & (chunk_size - 1)];
    }

    /// Grows with value-initialized elements (new chunks only; nothing moves), or shrinks:
    /// the elements past `count` are reset and the chunks past it freed.
    void resize(std::size_t count) {
        if (count < size_) {
            const std::size_t kept_chunks = (count + chunk_size - 1) >> ChunkBits;
            const std::size_t reset_end = std::min(size_, kept_chunks * chunk_size);
            for (std::size_t i = count; i < reset_end; ++i) {
                (*this)[i] = T{};
            }
            chunks_.resize(kept_chunks);
        } else {
            while (capacity() < count) {
                chunks_.push_back(std::make_unique<T[]>(chunk_size));  // value-initialized
            }
        }
        size_ = count;
    }

    /// `count` copies of `value` (the chunks are allocated afresh).
    void assign(std::size_t count, const T& value) {
        chunks_.clear();
        size_ = 0;
        resize(count);
        for (std::size_t i = 0; i < count; ++i) {
            (*this)[i] = value;
        }
    }

private:
    std::vector<std::unique_ptr<T[]>> chunks_;
    std::size_t size_ = 0;
};

}  // namespace queen
