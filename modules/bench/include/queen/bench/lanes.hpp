// queen/bench/lanes.hpp — the parts of the lanes workload that stand on their own: which lanes a
// producer owns, and the per-lane order checker its consumers share. Not the agents (src/).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace queen::bench {

/// The lanes [first, first + count) one producer owns.
struct LaneRange {
    std::int64_t first = 0;
    std::int64_t count = 0;
};

/// The range of producer `producer` (0-based) among `producers` sharing `lanes` lanes. The ranges
/// are contiguous, in producer order, cover every lane exactly once, and their sizes differ by
/// at most one: the first `lanes % producers` producers own one lane more.
/// Precondition (asserted): 0 <= producer < producers <= lanes.
[[nodiscard]] LaneRange lane_range(std::int64_t producer, std::int64_t producers,
                                   std::int64_t lanes);

/// Per-lane delivery order of the lanes workload. Each lane has one producer, which numbers the
/// lane's messages 1, 2, 3 ... in push order; consumers report every delivered message here, and
/// the checker compares its sequence with the highest one seen on that lane so far (`last`):
/// - sequence == last + 1: in order;
/// - sequence > last + 1: a gap (counted once per such delivery); the numbers skipped are
///   remembered as holes;
/// - sequence <= last: an order violation, whatever the cause (a message delivered late, a
///   redelivery, a duplicate): a run without failures has no redeliveries, so the rule is exact.
///   A late message that fills a hole still counts as delivered.
/// missing() is what was produced but never delivered, per lane: produced - distinct deliveries.
///
/// Thread-safety: produced(), deliver() and the counters may be called from any thread. A
/// delivery in order is one compare-and-swap on the lane's `last`; anything else (a gap, a
/// violation) takes one mutex, rare in a good run. The counts are exact even if two threads
/// deliver on one lane at once (which the broker's leases rule out). Read missing() after every
/// producer and consumer stopped (joined).
class LaneChecker {
public:
    /// Precondition: lanes > 0.
    explicit LaneChecker(std::size_t lanes);

    /// What deliver() found.
    enum class Delivery { in_order, gap, violation };

    [[nodiscard]] std::size_t lanes() const noexcept { return lanes_; }

    /// The lane's producer: `count` more messages of `lane` were queued by the broker.
    /// Precondition (asserted): lane < lanes().
    void produced(std::size_t lane, std::uint64_t count = 1) noexcept;

    /// A consumer got message `sequence` (1-based) of `lane`; counts it as described above.
    /// Precondition (asserted): lane < lanes().
    Delivery deliver(std::size_t lane, std::uint64_t sequence);

    /// Deliveries at or below the highest sequence already seen on their lane.
    [[nodiscard]] std::uint64_t order_violations() const noexcept {
        return order_violations_.load(std::memory_order_relaxed);
    }
    /// Deliveries that skipped past last + 1.
    [[nodiscard]] std::uint64_t gaps() const noexcept {
        return gaps_.load(std::memory_order_relaxed);
    }
    /// Messages produced but never delivered, summed over the lanes (a lane that delivered more
    /// distinct sequences than were counted produced adds 0).
    [[nodiscard]] std::uint64_t missing() const;
    /// Messages counted by produced(), summed over the lanes.
    [[nodiscard]] std::uint64_t produced_total() const;
    /// Distinct messages delivered (in order, after a gap, or late into a hole), summed.
    [[nodiscard]] std::uint64_t delivered_total() const;

private:
    struct State {
        std::atomic<std::uint64_t> last{0};       // highest sequence delivered; 0: none yet
        std::atomic<std::uint64_t> produced{0};   // messages of the lane queued
        std::atomic<std::uint64_t> delivered{0};  // distinct sequences delivered
    };
    /// Sequences [first, end) of a lane skipped by a gap and not delivered since.
    struct Hole {
        std::uint64_t first = 0;
        std::uint64_t end = 0;
    };
    /// Removes `sequence` from the lane's holes; whether it was in one. Caller holds mutex_.
    bool fill_hole(std::size_t lane, std::uint64_t sequence);

    std::size_t lanes_;
    std::unique_ptr<State[]> states_;
    std::atomic<std::uint64_t> order_violations_{0};
    std::atomic<std::uint64_t> gaps_{0};
    std::mutex mutex_;                                          // the slow path: gaps, violations
    std::unordered_map<std::size_t, std::vector<Hole>> holes_;  // guarded by mutex_
};

}  // namespace queen::bench
