// queen/bench/workload.hpp — the load drivers of `queen bench` over the client: produce, consume,
// e2e, lanes, transaction and partitions, as agents on event-loop threads
// (client::HttpMultiplexer), and stream (producers as agents, StreamRunners on threads of their
// own). They count; printing is the caller's business.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "queen/bench/report.hpp"
#include "queen/client/client.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/result.hpp"

namespace queen::bench {

/// The workloads, by their command names.
enum class Workload { produce, consume, e2e, transaction, partitions, stream, lanes };
[[nodiscard]] std::string_view to_string(Workload workload) noexcept;
/// Errors: queen::Errc::invalid_argument (not a workload name).
[[nodiscard]] queen::Result<Workload> parse_workload(std::string_view name);

/// What a transaction worker does with each popped batch (workload transaction):
/// - ack_push: acks it and pushes the next batch in one transaction;
/// - one_call: the four-step worker: acks it, sets a KV key (its state), pushes the next batch
///   and sets (replaces) a reminder timer a minute out, in one transaction;
/// - four_requests: the same four effects as four requests, one after another: POST /ack,
///   a one-operation transaction of kv.set, POST /push, a one-operation transaction of
///   timer.set (so each is its own log entry, as with four systems);
/// - one_call_next: one_call whose transaction also pops the worker's next batch from its own
///   partition (the transaction's `next`, in the same log entry), so a loop is one request; when
///   that pop comes back empty the worker falls back to its waiting pop;
/// - stream_cycle: the loop of a stream runner as one POST /streams/v1/cycle of a query the run
///   registers: the ack of the batch's last message (its lease, the consumer group), one state
///   upsert of a 64-byte value under the worker's key, and the push of the next batch;
/// - ack_kv_push: the same three effects as one transaction (the ack of every message of the
///   batch, kv.set of the same value, the push), so the two compare a cycle with a transaction
///   of the same size (with batch 1 the acks are the same one ack).
/// Both pop as a consumer group: consumer_group, else stream_steps_group.
enum class Steps { ack_push, one_call, four_requests, one_call_next, stream_cycle, ack_kv_push };
/// The consumer group of the steps stream_cycle and ack_kv_push when none is given.
inline constexpr std::string_view stream_steps_group = "bench-streams";
[[nodiscard]] std::string_view to_string(Steps steps) noexcept;
/// Errors: queen::Errc::invalid_argument (not a steps name).
[[nodiscard]] queen::Result<Steps> parse_steps(std::string_view name);
/// What one latency sample of the transaction workload covers with these steps (its report's
/// latency_of): the requests of a worker's loop.
[[nodiscard]] std::string_view describe_transaction_loop(Steps steps, bool is_pipelined) noexcept;

struct WorkloadOptions {
    Workload workload = Workload::produce;
    std::string queue = "bench";  ///< deleted and created again at the start (is_queue_reset)
    bool is_queue_reset = true;
    /// Producer connections (fill connections for consume and partitions), each one request at
    /// a time.
    std::int64_t producers = 1;
    std::int64_t consumers = 1;  ///< consumer connections (transaction: worker connections)
    /// Event-loop threads that drive the connections (each an epoll loop over its share of
    /// them). The bench shares the machine with the broker: 1 spends the least CPU per request.
    std::int64_t driver_threads = 1;
    std::int64_t batch = 100;       ///< messages per push, per pop and per transaction
    std::int64_t size_bytes = 256;  ///< payload JSON size (at least the ~40 bytes of the header)
    /// Partitions written round-robin (message n goes to partition "p<n mod partitions>"). The
    /// partitions workload fills exactly this many partitions with one message each; in lanes
    /// it is the number of lanes (partitions "l<index>").
    std::int64_t partitions = 1;
    std::int64_t pop_partitions = 1;  ///< pops claim up to this many partitions (one lease)
    /// Transaction workers send the next pop right behind their transaction on the same
    /// connection (HTTP/1.1 pipelining): one round trip per loop instead of two. Steps ack_push
    /// and one_call only (four_requests has no transaction to pipeline behind; one_call_next
    /// pops inside its transaction).
    bool is_pipelined = false;
    Steps steps = Steps::ack_push;  ///< transaction workload only
    std::string consumer_group;     ///< empty: queue mode
    /// When messages is 0: length of the measured phase. Otherwise the upper bound of each phase
    /// (a run never exceeds it per phase, whatever the count).
    double duration_s = 10;
    /// 0: run for duration_s. Otherwise the count: messages produced (produce, e2e, consume's
    /// prefill) or transactions (transaction). Ignored by partitions (it fills `partitions`).
    std::uint64_t messages = 0;
    /// Total target rate of all producers in messages per second, paced open-loop (see Pacer):
    /// each batch is sent at its due time and its payloads carry that time, so e2e latency and
    /// produce latency count from when a message should have gone out. 0: unpaced (producers
    /// push as fast as answers come back). Only produce, e2e, lanes and stream take a rate.
    double rate_msgs_per_s = 0;
    /// lanes: the seed of the producers' lane choices (producer p draws from Rng(seed + p)); the
    /// same seed, producers, lanes and batch give the same lanes in the same order. The caller
    /// picks one (the library draws no randomness) and the report's conditions carry it.
    std::uint64_t seed = 0;
    /// Blocks the calling thread until the clock's monotonic_ns() reaches the argument (or a
    /// little later). Required when rate_msgs_per_s > 0: the library never sleeps by itself. A
    /// driver thread calls it only when none of its requests is in flight (otherwise it waits
    /// on its sockets until the due time).
    std::function<void(std::int64_t)> wait_until_ns;
    /// stream: the tumbling window of the runners' aggregation.
    std::int64_t window_ms = 1'000;
    /// stream: aggregate with Aggregation::count() and check at the end that the counts of the
    /// emitted windows plus those of the open windows' rows equal the events pushed.
    bool is_verified = false;
    /// Consumers stop when this long passes without a delivery once producing is over (stream:
    /// without an acked event, waiting for the runners to catch up).
    std::int64_t drain_idle_ms = 5'000;
    std::int64_t pop_wait_ms = 1'000;  ///< long-poll timeout of one pop
    std::uint64_t errors_max = 1'000;  ///< the run stops after this many errors
    /// Returns the server's RSS in bytes (< 0 unknown); the partitions workload samples it after
    /// each phase. May be empty.
    std::function<std::int64_t()> server_rss_bytes;
    /// Returns the server's CPU time so far (user + system, microseconds; < 0 unknown). Sampled
    /// around the measured phase for the report's server_cpu_us_per_msg. May be empty.
    std::function<double()> server_cpu_us;

    /// Errors: queen::Errc::invalid_argument naming the first out-of-range field.
    [[nodiscard]] queen::Result<void> validate() const;
};

/// Live counters, read by another thread for progress lines; writes are relaxed.
struct Progress {
    std::atomic<std::uint64_t> produced{0};
    std::atomic<std::uint64_t> consumed{0};
    std::atomic<std::uint64_t> errors{0};
    /// Largest latency sample (ns) recorded since the reader last took it with exchange(0): a
    /// stall shows in the progress line of the second it happened.
    std::atomic<std::int64_t> latency_max_ns{0};
    std::atomic<const char*> phase{"starting"};  ///< a static string: fill, run, drain, done
    std::atomic<bool> is_stop_requested{false};  ///< set by anyone to end the run early
};

/// Runs `options.workload` against the broker behind `client` and returns its report (rates,
/// latency histogram, counts; the conditions' load fields and server facts are left for the
/// caller). The measured phase and what one latency sample is depend on the workload:
/// - produce: pushes; latency of one push request (paced: from its due time); rate of queued
///   messages;
/// - consume: fills the queue with `messages` (default 100,000) first, then pops + acks; latency
///   of pop + ack; rate of acked messages;
/// - e2e: produce and consume together; latency from the timestamp in the payload (paced: the
///   due time) to delivery; rate of acked messages over the time until the last one; duplicates
///   and missing counted; the consumers' lag when producing ended in metrics. Unpaced, the
///   latency includes the backlog producers build ahead of consumers;
/// - lanes: e2e with one writer per lane: `partitions` lanes (partitions "l<index>"), each
///   producer owning a contiguous range of them (lane_range in lanes.hpp); every message goes to
///   a lane of its producer's range drawn from Rng(seed + producer) and carries
///   {"lane":L,"seq":S,"ts":T,...}, S the lane's own sequence (1, 2, 3 ...). Consumers pop
///   (pop_partitions per pop, wait) and ack like e2e's and check every delivery against its
///   lane's last sequence (LaneChecker); order violations, gaps and missing messages are
///   counted as errors, in metrics (order_violations, gaps; `missing` in the report) and in
///   report.check. Latency and rates as e2e;
/// - transaction: each worker pops a batch and, in one transaction, acks it and pushes the next
///   batch (more with `steps`); latency of a worker's loop (describe_transaction_loop); rate of
///   messages moved (transactions in metrics; with one_call_next, next pops that came back
///   empty as empty_next_pops);
/// - partitions: fills `partitions` partitions with one message each, then drains them; rate
///   of the drain; fill rate and server RSS in metrics;
/// - stream: producers push events {"user":"u<k>","ts":<ms>,"amount":<n>,"pad":".."} to the
///   partitions "p<k>" (each partition one producer's, its event times never decreasing) while
///   `consumers` StreamRunners (a thread and a client each) aggregate them per user in tumbling
///   windows of window_ms into the sink queue "<queue>-windows"; once producing is over the run
///   waits for the runners to ack everything (drain_idle_ms without progress ends the wait).
///   Rate: source events acked by committed cycles (StreamMetrics::acked) per second up to the
///   last one; latency: the producers' push requests; cycles, events per cycle, window
///   results, failed cycles, retries in metrics; report.check says whether the query's lag
///   came to 0 (and, with is_verified, whether the window counts add up to the events pushed).
/// Every loop stops at its count, at its time bound, after errors_max errors, or when
/// progress.is_stop_requested is set. Threads are joined before returning.
/// Errors: queen::Errc::invalid_argument (options; a rate or the stream workload without
/// wait_until_ns), or the client's error when the queue cannot be reset or configured (the
/// server is not reachable).
[[nodiscard]] queen::Result<Report> run_workload(queen::client::Client& client,
                                                 const WorkloadOptions& options,
                                                 const queen::Clock& clock, Progress& progress);

/// A JSON object payload of exactly max(size_bytes, header) bytes carrying `sequence` and
/// `timestamp_ns`: {"seq":N,"ts":T,"pad":"xxx..."}; with a `lane` >= 0 (the lanes workload)
/// the lane comes first: {"lane":L,"seq":N,"ts":T,"pad":"xxx..."}.
[[nodiscard]] std::string make_payload(std::uint64_t sequence, std::int64_t timestamp_ns,
                                       std::int64_t size_bytes, std::int64_t lane = -1);

/// make_payload() into `out`, replacing its text (a loop reuses its storage).
void write_payload(std::string& out, std::uint64_t sequence, std::int64_t timestamp_ns,
                   std::int64_t size_bytes, std::int64_t lane = -1);

/// What parse_payload reads back: the members "seq" and "ts", and "lane" when it comes before
/// the later of the two (write_payload puts it first); lane is -1 without one.
struct PayloadStamp {
    std::uint64_t sequence = 0;
    std::int64_t timestamp_ns = 0;
    std::int64_t lane = -1;
};
/// Reads a payload's stamp (whatever whitespace the server put around its members) with the
/// core JSON reader; members after "seq" and "ts" are not looked at. Returns false (stamp
/// unspecified) when "seq" or "ts" is missing or not an integer, or "lane" is not a
/// non-negative integer.
[[nodiscard]] bool parse_payload(std::string_view json, PayloadStamp& stamp) noexcept;

/// The stream workload's event into `out` (replacing its text):
/// {"user":"u<user>","ts":<event_time_ms>,"amount":<amount>,"pad":"xxx..."} of exactly
/// max(size_bytes, header) bytes.
void write_stream_event(std::string& out, std::int64_t user, std::int64_t event_time_ms,
                        std::int64_t amount, std::int64_t size_bytes);

}  // namespace queen::bench
