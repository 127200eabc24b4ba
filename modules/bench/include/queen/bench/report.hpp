// queen/bench/report.hpp — the result of one bench run, and its two renderings: a table for people
// and JSON for scripts (msgs_per_s, mb_per_s, latency_ms, errors, conditions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "queen/bench/histogram.hpp"

namespace queen::bench {

/// What a number depends on: printed next to it so results can be compared honestly.
struct Conditions {
    std::string url;
    std::string server_version;  ///< from /health; empty when unknown
    std::string durability;      ///< e.g. "log fdatasync before ack"
    std::int64_t batch = 0;
    std::int64_t size_bytes = 0;
    std::int64_t partitions = 0;      ///< lanes: the lanes
    std::int64_t pop_partitions = 0;  ///< partitions one pop may claim; 0: the workload pops none
    std::int64_t producers = 0;
    std::int64_t consumers = 0;
    std::int64_t driver_threads = 0;     ///< event-loop threads driving them (at most one each)
    bool is_pipelined = false;           ///< pops pipelined behind transactions
    std::optional<std::uint64_t> seed;   ///< lanes: the seed of the producers' lane choices
    std::int64_t cores = 0;              ///< online CPUs of this machine
    double load_average_1m = -1;         ///< of this machine at the end of the run; < 0 unknown
    std::int64_t server_rss_bytes = -1;  ///< at the end of the run; < 0 unknown
};

/// A workload-specific number (fill rate, drain rate, RSS after fill, ...).
struct Metric {
    std::string name;  ///< snake_case with the unit last, e.g. "fill_msgs_per_s"
    double value = 0;
};

/// A profile's performance goal (conf/bench.toml `goal_msgs_per_s`, `goal_p99_ms`,
/// `goal_keep_up_msgs_per_s`); 0: none.
struct Goal {
    double msgs_per_s_min = 0;  ///< the run's msgs_per_s must reach this
    double p99_ms_max = 0;      ///< and its p99 latency stay below this
    /// and its steady_consume_msgs_per_s (consumers keeping up while producers run) this
    double keep_up_msgs_per_s_min = 0;
    [[nodiscard]] bool is_set() const noexcept {
        return msgs_per_s_min > 0 || p99_ms_max > 0 || keep_up_msgs_per_s_min > 0;
    }
};

/// One kind of error a run met: its text ("pop: timeout: no complete response before the
/// deadline", "ack: Invalid or expired lease", ...) and how often.
struct ErrorSample {
    std::string what;
    std::uint64_t count = 0;
};

/// One run. `latency_ns` holds one value per measured operation (see `latency_of`).
struct Report {
    std::string workload;  ///< produce | consume | e2e | transaction | partitions | stream | lanes
    std::string profile;   ///< the conf/bench.toml profile, or empty
    std::string latency_of;        ///< what one latency value measures, e.g. "push request"
    double elapsed_s = 0;          ///< of the measured phase
    std::uint64_t produced = 0;    ///< messages the server answered `queued`
    std::uint64_t consumed = 0;    ///< messages delivered and acked
    std::uint64_t duplicates = 0;  ///< deliveries of an already consumed message (e2e)
    std::uint64_t missing = 0;     ///< produced but never consumed (e2e with --messages; lanes)
    std::uint64_t messages = 0;    ///< the count the rate is computed from
    std::uint64_t bytes = 0;       ///< payload bytes of `messages`
    std::uint64_t errors = 0;      ///< failed requests, failed items and failed acks
    /// The first distinct kinds of `errors` with their counts (a few; later kinds are only in
    /// `errors`), in the order they first happened.
    std::vector<ErrorSample> error_samples;
    double target_msgs_per_s = 0;   ///< the paced producers' target (--rate); 0: unpaced
    double produce_msgs_per_s = 0;  ///< what the producers achieved (queued messages per second)
    /// Messages consumed per second over the second half of the produce window (e2e, lanes): the
    /// rate consumers sustain once a backlog, if any, has formed; 0: not measured. The run's
    /// msgs_per_s also counts the start (consumers still idle) and the drain after producing.
    double steady_consume_msgs_per_s = 0;
    Histogram latency_ns;
    std::vector<Metric> metrics;
    Conditions conditions;
    Goal goal;  ///< from the profile; unset without one
    /// The workload's own correctness check (stream: the lag after the drain, and the window
    /// counts with verify): passed or not, and what it compared. nullopt: no check.
    std::optional<bool> check_passed;
    std::string check;

    /// messages / elapsed_s (0 when elapsed_s is 0).
    [[nodiscard]] double msgs_per_s() const noexcept;
    /// bytes / elapsed_s in MB (10^6 bytes) per second.
    [[nodiscard]] double mb_per_s() const noexcept;
    /// Whether the run met `goal` (std::nullopt without one): msgs_per_s() >= msgs_per_s_min
    /// and p99 < p99_ms_max, each only when set. A run with errors never meets it.
    [[nodiscard]] std::optional<bool> goal_met() const;
};

/// A human-readable summary: rates (a paced run shows its target next to what producers
/// achieved), latency percentiles in ms, counts, errors, the check ("passed: ..." or "FAILED:
/// ..."), metrics and the conditions, one aligned line each, ending in a newline.
[[nodiscard]] std::string format_table(const Report& report);

/// The report as one JSON object: workload, profile, msgs_per_s, mb_per_s, target_msgs_per_s (0:
/// unpaced), produce_msgs_per_s, steady_consume_msgs_per_s, latency_ms {p50, p90, p99, p999, max,
/// count, of}, elapsed_s, messages, bytes, produced, consumed, duplicates, missing, errors,
/// error_samples [{error, count}], metrics {name: value}, conditions {... pop_partitions, seed
/// (null but for lanes)}, goal {msgs_per_s_min, p99_ms_max, keep_up_msgs_per_s_min, met} (null
/// without one), check {passed, what} (null without one). No trailing newline.
[[nodiscard]] std::string format_json(const Report& report);

/// One run of several compared (`queen bench transaction --steps a,b`): its name and report.
struct NamedReport {
    std::string name;
    const Report* report = nullptr;
};
/// How the runs compare: each run's rate (its transactions_per_s metric, else msgs_per_s) and
/// server CPU per loop, and the first run's rate as a multiple of each other's. Text: a
/// "compare" block ending in a newline; json: one object {"compare": [{name, per_s,
/// server_cpu_us}], "ratios": {"<first>/<other>": x}} and a newline.
[[nodiscard]] std::string format_comparison(const std::vector<NamedReport>& runs, bool json);

/// ">= 300,000 msgs/s, p99 < 50.0 ms" (the parts that are set).
[[nodiscard]] std::string describe_goal(const Goal& goal);

/// Nanoseconds as milliseconds with 3 decimals ("1.234").
[[nodiscard]] std::string format_ms(std::int64_t ns);

}  // namespace queen::bench
