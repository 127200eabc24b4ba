// node/src/disk_space.cpp — DiskSpace: statvfs of the data directory, rate-limited.
#include "disk_space.hpp"

#include <sys/statvfs.h>

namespace queen::node::detail {

DiskSpace::DiskSpace(std::filesystem::path dir, std::uint64_t reserve_bytes, const Clock& clock)
    : dir_(std::move(dir)), reserve_bytes_(reserve_bytes), clock_(clock) {
    refresh();
    refreshed_at_ns_.store(clock_.monotonic_ns(), std::memory_order_relaxed);
}

void DiskSpace::refresh() {
    struct statvfs info {};
    if (::statvfs(dir_.c_str(), &info) != 0) {
        return;  // keep the last reading: the writes themselves report real failures
    }
    free_bytes_.store(static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize,
                      std::memory_order_relaxed);
}

Room DiskSpace::room() {
    if (reserve_bytes_ == 0) {
        return Room::plenty;
    }
    const std::int64_t now = clock_.monotonic_ns();
    std::int64_t last = refreshed_at_ns_.load(std::memory_order_relaxed);
    // Near the reserve every write reads it again: a burst of large pushes between two readings
    // could otherwise run through the reserve.
    const bool is_near = free_bytes() / 4 < reserve_bytes_;
    if ((is_near || now - last >= refresh_interval_ns) &&
        refreshed_at_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
        refresh();  // one caller reads; the others use the last reading
    }
    const std::uint64_t free = free_bytes();
    if (free < reserve_bytes_ / 4) {
        return Room::none;
    }
    return free < reserve_bytes_ ? Room::low : Room::plenty;
}

Error DiskSpace::refusal(Room room) const {
    const auto mib = [](std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; };
    const std::string what = room == Room::none ? "writes"
                                                : "writes that add data (pushes, "
                                                  "transactions, traces)";
    return Error{Errc::disk_full, "disk full: " + mib(free_bytes()) + " free on " + dir_.string() +
                                      ", under " + (room == Room::none ? "a quarter of " : "") +
                                      "node.disk_reserve_bytes (" + mib(reserve_bytes_) +
                                      "): " + what +
                                      " wait until space is freed, then resume by themselves"};
}

}  // namespace queen::node::detail
