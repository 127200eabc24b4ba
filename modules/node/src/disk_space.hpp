// node/src/disk_space.hpp — free space on the data directory's file system, and what it still
// admits: disk full is a pause for writes, not a failure (docs/architecture.md, "Disk full").
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>

#include "queen/core/clock.hpp"
#include "queen/core/result.hpp"

namespace queen::node::detail {

/// What the file system still admits, from its free space against `node.disk_reserve_bytes` R:
/// `plenty` (>= R): everything; `low` (< R): no command that adds data (pushes, transactions,
/// traces, stream cycles), while pops, acks, deletes and the tenant's own sweeps go on, so
/// consumers can still drain and retention can free space; `none` (< R / 4): no client write at
/// all. The rest of the reserve is the log's and LMDB's own headroom (a group commit, a
/// checkpoint). Writes resume by themselves once space returns.
enum class Room : std::uint8_t { plenty, low, none };

/// statvfs() of one directory, read at most once per refresh interval whoever asks.
/// Thread-safe.
class DiskSpace {
public:
    /// `reserve_bytes` 0 turns the checks off (room() is always plenty).
    DiskSpace(std::filesystem::path dir, std::uint64_t reserve_bytes, const Clock& clock);

    /// The room now (read again when the last reading is older than 100 ms, or at every call
    /// while the free space is under four times the reserve).
    [[nodiscard]] Room room();
    /// Bytes available to this process at the last reading.
    [[nodiscard]] std::uint64_t free_bytes() const noexcept {
        return free_bytes_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] std::uint64_t reserve_bytes() const noexcept { return reserve_bytes_; }

    /// The refusal for a write at `room` (low or none): Errc::disk_full saying what is free, what
    /// is kept back and that writes resume by themselves.
    [[nodiscard]] Error refusal(Room room) const;

    static constexpr std::int64_t refresh_interval_ns = 100'000'000;

private:
    void refresh();

    std::filesystem::path dir_;
    std::uint64_t reserve_bytes_;
    const Clock& clock_;
    std::atomic<std::int64_t> refreshed_at_ns_{0};
    std::atomic<std::uint64_t> free_bytes_{UINT64_MAX};
};

}  // namespace queen::node::detail
