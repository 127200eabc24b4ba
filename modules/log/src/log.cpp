// modules/log/src/log.cpp — Log's lifetime (construction, close, destruction), its accessors and
// the fdatasync statistics. The rest of Log lives in recovery.cpp (open), writer.cpp (appends and
// group commit), reader.cpp (reads) and truncation.cpp (suffix truncation, prefix compaction).
#include <algorithm>
#include <bit>
#include <cmath>
#include <mutex>

#include "log_impl.hpp"
#include "queen/core/assert.hpp"

namespace queen::log {

// ---------------------------------------------------------------------------------------------
// SyncStats

std::size_t SyncStats::bucket_of(std::uint64_t latency_ns) noexcept {
    if (latency_ns < 8) {
        return static_cast<std::size_t>(latency_ns);
    }
    const int msb = 63 - std::countl_zero(latency_ns);
    const auto sub = static_cast<std::size_t>((latency_ns >> (msb - 2)) & 3);
    return static_cast<std::size_t>(4 * msb - 4) + sub;
}

std::uint64_t SyncStats::bucket_upper_ns(std::size_t bucket) noexcept {
    QUEEN_ASSERT(bucket < bucket_count, "histogram bucket out of range");
    if (bucket < 8) {
        return bucket;
    }
    const std::size_t msb = bucket / 4 + 1;
    const std::uint64_t sub = bucket % 4;
    const std::uint64_t lower = (4 + sub) << (msb - 2);
    return lower + ((std::uint64_t{1} << (msb - 2)) - 1);
}

std::uint64_t SyncStats::latency_ns_quantile(double q) const noexcept {
    std::uint64_t total = 0;
    for (const std::uint64_t count : latency_buckets) {
        total += count;
    }
    if (total == 0) {
        return 0;
    }
    q = std::clamp(q, 0.0, 1.0);
    const auto target = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total))));
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < bucket_count; ++b) {
        seen += latency_buckets[b];
        if (seen >= target) {
            return std::min(bucket_upper_ns(b), latency_ns_max);
        }
    }
    return latency_ns_max;
}

// ---------------------------------------------------------------------------------------------
// Lifetime and accessors

Log::Log(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Log::~Log() {
    (void)close();
}

Status Log::close() {
    std::unique_lock lock(impl_->mutex);
    if (!impl_->closed) {
        impl_->stopping = true;
        impl_->work_cv.notify_all();
        impl_->progress_cv.notify_all();
        lock.unlock();
        if (impl_->writer.joinable()) {
            impl_->writer.join();
        }
        lock.lock();
        impl_->closed = true;
    }
    if (impl_->poison) {
        return impl_->poisoned_error_locked();
    }
    return {};
}

LogIndex Log::first_index() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->first_index;
}
LogIndex Log::last_index() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->last_index;
}
Term Log::last_term() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->last_term;
}
LogIndex Log::durable_index() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->durable_index;
}
std::optional<Error> Log::poison_reason() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->poison;
}
SyncStats Log::sync_stats() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->stats;
}
std::size_t Log::segment_count() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->segments.size();
}
const std::filesystem::path& Log::directory() const noexcept {
    return impl_->dir;
}

}  // namespace queen::log
