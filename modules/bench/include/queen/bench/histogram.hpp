// queen/bench/histogram.hpp — an HDR-style log-linear histogram of non-negative integers (latency
// in nanoseconds): fixed memory, ~0.8% relative precision, exact min/max, mergeable.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace queen::bench {

/// Counts values in buckets whose width grows with the value: values below 256 are exact, larger
/// ones fall in one of 128 equal sub-buckets of their power of two (relative error < 1/128).
/// Percentiles are read from the bucket counts, never averaged. Memory is fixed (~57 KiB).
/// Thread-safety: none; give each thread its own histogram and merge() them.
class Histogram {
public:
    static constexpr std::size_t sub_bucket_half_count = 128;
    static constexpr std::size_t sub_bucket_count = 2 * sub_bucket_half_count;
    /// Buckets for every value up to INT64_MAX.
    static constexpr std::size_t bucket_count = sub_bucket_count + 55 * sub_bucket_half_count;

    /// Counts `value` once. Negative values (a clock that went backwards) count as 0.
    void record(std::int64_t value) noexcept { record_n(value, 1); }
    /// Counts `value` `times` times.
    void record_n(std::int64_t value, std::uint64_t times) noexcept;
    /// Adds every count of `other` to this one.
    void merge(const Histogram& other) noexcept;
    /// Forgets every value.
    void reset() noexcept;

    [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
    /// The smallest and largest values recorded (exact); 0 when empty.
    [[nodiscard]] std::int64_t min() const noexcept { return count_ == 0 ? 0 : min_; }
    [[nodiscard]] std::int64_t max() const noexcept { return max_; }
    /// The smallest bucket bound at or below which `percentile` percent (0..100) of the values
    /// lie: the highest value equivalent to that bucket, capped at max(). 100 gives max(); an
    /// empty histogram gives 0. Percentiles outside [0, 100] are clamped.
    [[nodiscard]] std::int64_t value_at_percentile(double percentile) const noexcept;

    /// The bucket holding `value` (>= 0), and the largest value that bucket holds.
    [[nodiscard]] static std::size_t bucket_index(std::int64_t value) noexcept;
    [[nodiscard]] static std::int64_t bucket_value_max(std::size_t index) noexcept;

private:
    std::array<std::uint64_t, bucket_count> counts_{};
    std::uint64_t count_ = 0;
    std::int64_t min_ = 0;
    std::int64_t max_ = 0;
};

}  // namespace queen::bench
