// bench/src/histogram.cpp — log-linear bucket arithmetic of the HDR-style histogram.
#include "queen/bench/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "queen/core/assert.hpp"

namespace queen::bench {
namespace {
constexpr int sub_bucket_half_bits = 7;  // log2(sub_bucket_half_count)
static_assert(Histogram::sub_bucket_half_count == (1u << sub_bucket_half_bits));
}  // namespace

std::size_t Histogram::bucket_index(std::int64_t value) noexcept {
    const auto v = static_cast<std::uint64_t>(std::max<std::int64_t>(value, 0));
    if (v < sub_bucket_count) {
        return static_cast<std::size_t>(v);
    }
    // The highest set bit is at position >= 8; shifting by (msb - 7) leaves 128..255.
    const int msb = 63 - std::countl_zero(v);
    const int shift = msb - sub_bucket_half_bits;
    const std::uint64_t sub = (v >> shift) - sub_bucket_half_count;
    return sub_bucket_count + static_cast<std::size_t>(shift - 1) * sub_bucket_half_count +
           static_cast<std::size_t>(sub);
}

std::int64_t Histogram::bucket_value_max(std::size_t index) noexcept {
    QUEEN_ASSERT(index < bucket_count, "histogram bucket out of range: ", index);
    if (index < sub_bucket_count) {
        return static_cast<std::int64_t>(index);
    }
    const std::size_t above = index - sub_bucket_count;
    const int shift = static_cast<int>(above / sub_bucket_half_count) + 1;
    const std::uint64_t sub = above % sub_bucket_half_count + sub_bucket_half_count;
    const std::uint64_t high = ((sub + 1) << shift) - 1;
    return static_cast<std::int64_t>(std::min<std::uint64_t>(high, INT64_MAX));
}

void Histogram::record_n(std::int64_t value, std::uint64_t times) noexcept {
    if (times == 0) {
        return;
    }
    value = std::max<std::int64_t>(value, 0);
    counts_[bucket_index(value)] += times;
    min_ = count_ == 0 ? value : std::min(min_, value);
    max_ = std::max(max_, value);
    count_ += times;
}

void Histogram::merge(const Histogram& other) noexcept {
    if (other.count_ == 0) {
        return;
    }
    for (std::size_t i = 0; i < bucket_count; ++i) {
        counts_[i] += other.counts_[i];
    }
    min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
    count_ += other.count_;
}

void Histogram::reset() noexcept {
    counts_.fill(0);
    count_ = 0;
    min_ = 0;
    max_ = 0;
}

std::int64_t Histogram::value_at_percentile(double percentile) const noexcept {
    if (count_ == 0) {
        return 0;
    }
    percentile = std::clamp(percentile, 0.0, 100.0);
    if (percentile >= 100.0) {
        return max_;
    }
    // The rank of the value sought, 1-based: at least the first value.
    const auto rank = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::ceil(percentile / 100.0 * static_cast<double>(count_))));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < bucket_count; ++i) {
        seen += counts_[i];
        if (seen >= rank) {
            return std::clamp(bucket_value_max(i), min_, max_);
        }
    }
    return max_;
}

}  // namespace queen::bench
