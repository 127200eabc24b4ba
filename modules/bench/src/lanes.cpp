// bench/src/lanes.cpp — the lanes workload: e2e with one writer per lane (partition "l<index>"),
// each producer drawing the lanes of its own range, and the per-lane order check its readers
// share (LaneChecker). The agents are e2e's (workload.cpp); this file adds what differs.
#include "queen/bench/lanes.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "queen/core/assert.hpp"
#include "queen/core/rng.hpp"
#include "run.hpp"

namespace queen::bench {

LaneRange lane_range(std::int64_t producer, std::int64_t producers, std::int64_t lanes) {
    QUEEN_ASSERT(producers >= 1, "lane_range: at least one producer");
    QUEEN_ASSERT(producers <= lanes, "lane_range: every producer owns a lane");
    QUEEN_ASSERT(producer >= 0 && producer < producers, "lane_range: producer out of range");
    const std::int64_t base = lanes / producers;
    const std::int64_t extra = lanes % producers;  // the first `extra` producers own one more
    LaneRange range;
    range.first = producer * base + std::min(producer, extra);
    range.count = base + (producer < extra ? 1 : 0);
    return range;
}

LaneChecker::LaneChecker(std::size_t lanes)
    : lanes_(lanes), states_(std::make_unique<State[]>(lanes)) {
    QUEEN_ASSERT(lanes > 0, "a lane checker checks at least one lane");
}

void LaneChecker::produced(std::size_t lane, std::uint64_t count) noexcept {
    QUEEN_ASSERT(lane < lanes_, "produced: lane out of range");
    states_[lane].produced.fetch_add(count, std::memory_order_relaxed);
}

LaneChecker::Delivery LaneChecker::deliver(std::size_t lane, std::uint64_t sequence) {
    constexpr auto relaxed = std::memory_order_relaxed;
    QUEEN_ASSERT(lane < lanes_, "deliver: lane out of range");
    State& state = states_[lane];
    // In order: one compare-and-swap, no lock. It neither makes nor fills a hole: holes lie
    // below `last`, and this sequence is last + 1.
    if (sequence > 0) {
        std::uint64_t expected = sequence - 1;
        if (state.last.compare_exchange_strong(expected, sequence, relaxed)) {
            state.delivered.fetch_add(1, relaxed);
            return Delivery::in_order;
        }
    }
    // Everything else under the mutex, the lane's `last` moved by a compare-and-swap still:
    // a concurrent in-order delivery on the lane (which the leases rule out) can only move it
    // up by one, and a late sequence then finds its hole already recorded.
    std::lock_guard lock(mutex_);
    std::uint64_t last = state.last.load(relaxed);
    do {
        if (sequence <= last) {
            order_violations_.fetch_add(1, relaxed);
            if (fill_hole(lane, sequence)) {
                state.delivered.fetch_add(1, relaxed);  // late, but its first delivery
            }
            return Delivery::violation;
        }
    } while (!state.last.compare_exchange_weak(last, sequence, relaxed));
    state.delivered.fetch_add(1, relaxed);
    if (sequence == last + 1) {
        return Delivery::in_order;  // `last` moved up to sequence - 1 since the fast path
    }
    gaps_.fetch_add(1, relaxed);
    holes_[lane].push_back(Hole{last + 1, sequence});
    return Delivery::gap;
}

bool LaneChecker::fill_hole(std::size_t lane, std::uint64_t sequence) {
    const auto found = holes_.find(lane);
    if (found == holes_.end()) {
        return false;
    }
    std::vector<Hole>& holes = found->second;
    for (std::size_t i = 0; i < holes.size(); ++i) {
        const Hole hole = holes[i];
        if (sequence < hole.first || sequence >= hole.end) {
            continue;
        }
        // Keep what is left on either side of the sequence.
        holes[i] = Hole{hole.first, sequence};
        if (sequence + 1 < hole.end) {
            holes.push_back(Hole{sequence + 1, hole.end});
        }
        if (holes[i].first == holes[i].end) {
            holes.erase(holes.begin() + static_cast<std::ptrdiff_t>(i));
        }
        if (holes.empty()) {
            holes_.erase(found);
        }
        return true;
    }
    return false;
}

std::uint64_t LaneChecker::missing() const {
    std::uint64_t missing = 0;
    for (std::size_t lane = 0; lane < lanes_; ++lane) {
        const std::uint64_t produced = states_[lane].produced.load();
        const std::uint64_t delivered = states_[lane].delivered.load();
        missing += produced > delivered ? produced - delivered : 0;
    }
    return missing;
}

std::uint64_t LaneChecker::produced_total() const {
    std::uint64_t total = 0;
    for (std::size_t lane = 0; lane < lanes_; ++lane) {
        total += states_[lane].produced.load();
    }
    return total;
}

std::uint64_t LaneChecker::delivered_total() const {
    std::uint64_t total = 0;
    for (std::size_t lane = 0; lane < lanes_; ++lane) {
        total += states_[lane].delivered.load();
    }
    return total;
}

namespace detail {
namespace {

/// One producer's batches: each message to a lane of its range drawn from its Rng, numbered
/// with that lane's next sequence (1, 2, 3 ...: this producer is the lane's only writer, and it
/// has one push in flight, so the broker receives a lane's messages in sequence order).
class LaneFiller final : public BatchFiller {
public:
    LaneFiller(const Run& run, LaneChecker& checker, LaneRange range, std::uint64_t seed)
        : run_(run),
          checker_(checker),
          range_(range),
          rng_(seed),
          sequences_(static_cast<std::size_t>(range.count), 0) {
        QUEEN_ASSERT(range.count > 0, "a producer owns at least one lane");
    }

    void fill(std::size_t index, std::uint64_t, std::int64_t stamp_ns, PushItem& item) override {
        const std::uint64_t offset = rng_.below(static_cast<std::uint64_t>(range_.count));
        const std::int64_t lane = range_.first + static_cast<std::int64_t>(offset);
        const std::uint64_t sequence = ++sequences_[offset];
        if (index >= batch_lanes_.size()) {
            batch_lanes_.resize(index + 1);
        }
        batch_lanes_[index] = static_cast<std::size_t>(lane);
        // lane < partitions, so "l<lane mod partitions>" is the lane's partition.
        assign_partition_name(run_, static_cast<std::uint64_t>(lane), item.partition);
        write_payload(item.payload_json, sequence, stamp_ns, run_.options.size_bytes, lane);
    }

    void queued(std::size_t index) override { checker_.produced(batch_lanes_[index]); }

private:
    const Run& run_;
    LaneChecker& checker_;
    LaneRange range_;
    queen::Rng rng_;
    std::vector<std::uint64_t> sequences_;  // the last sequence given, per lane of the range
    std::vector<std::size_t> batch_lanes_;  // the lane of each item of the batch last filled
};

std::string describe(const LaneChecker& checker, std::uint64_t violations, std::uint64_t gaps,
                     std::uint64_t missing) {
    return "per-lane order over " + std::to_string(checker.lanes()) +
           " lanes: " + std::to_string(violations) + " order violations, " + std::to_string(gaps) +
           " gaps, " + std::to_string(missing) + " missing of " +
           std::to_string(checker.produced_total()) + " produced";
}

}  // namespace

Report run_lanes(Run& run, std::int64_t produce_deadline_ns, std::int64_t bound_ns) {
    const WorkloadOptions& options = run.options;
    LaneChecker checker(static_cast<std::size_t>(options.partitions));
    run.partition_prefix = "l";
    E2eShape shape;
    shape.lanes = &checker;
    shape.make_filler = [&run, &checker](std::int64_t producer) -> std::unique_ptr<BatchFiller> {
        const WorkloadOptions& o = run.options;
        return std::make_unique<LaneFiller>(run, checker,
                                            lane_range(producer, o.producers, o.partitions),
                                            o.seed + static_cast<std::uint64_t>(producer));
    };
    Report report = run_e2e(run, produce_deadline_ns, bound_ns, shape);
    // Agents are joined: the counts are final.
    const std::uint64_t violations = checker.order_violations();
    const std::uint64_t gaps = checker.gaps();
    const std::uint64_t missing = checker.missing();
    report.missing = missing;
    report.metrics.push_back({"order_violations", static_cast<double>(violations)});
    report.metrics.push_back({"gaps", static_cast<double>(gaps)});
    run.count_error("lanes: order violation (a sequence at or below its lane's last)", violations);
    run.count_error("lanes: gap (a sequence past its lane's last + 1)", gaps);
    run.count_error("lanes: missing (produced, never delivered)", missing);
    report.check_passed = violations == 0 && gaps == 0 && missing == 0;
    report.check = describe(checker, violations, gaps, missing);
    return report;
}

}  // namespace detail
}  // namespace queen::bench
