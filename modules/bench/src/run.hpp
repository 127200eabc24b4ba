// bench/src/run.hpp — what the workload drivers share: the run's state, driver threads, the Agent
// interface and the event-loop driver; each workload's agents are in their own file.
#pragma once

#include <algorithm>
#include <atomic>
#include <charconv>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "queen/bench/histogram.hpp"
#include "queen/bench/lanes.hpp"
#include "queen/bench/pacer.hpp"
#include "queen/bench/report.hpp"
#include "queen/bench/system.hpp"
#include "queen/bench/workload.hpp"
#include "queen/client/multiplexer.hpp"
#include "queen/client/protocol.hpp"
#include "queen/core/assert.hpp"

namespace queen::bench::detail {

using client::Ack;
using client::PopRequest;
using client::PushItem;
using client::PushStatus;

constexpr auto relaxed = std::memory_order_relaxed;
constexpr std::uint64_t tracked_messages_max = 100'000'000;  // bitmap bound: 2 x 100 MB
// A driver thread looks at its sleeping agents (and they at the stop flag) at least this often.
constexpr std::int64_t wake_slice_ns = 100'000'000;

inline queen::Error invalid(std::string what) {
    return queen::Error{queen::Errc::invalid_argument, std::move(what)};
}

inline std::int64_t seconds_to_ns(double seconds) {
    return static_cast<std::int64_t>(seconds * 1e9);
}

/// Distinct error texts a report keeps (with their counts); later kinds are only counted.
constexpr std::size_t error_kinds_max = 8;

/// The transport's error, else what `read` (the client's answer reader) says of the answer.
template <class Read>
queen::Status read_answer(const queen::Status& transport, Read&& read) {
    if (!transport) {
        return transport;
    }
    return read();
}

/// "<request>: <why>" for a request that failed as a whole.
inline std::string failure(std::string_view request, const queen::Status& status) {
    return std::string(request) + ": " + status.error().message();
}

/// "push: <status>[: <server's reason>]" for one pushed item that was not queued.
inline std::string item_failure(const client::PushResult& result) {
    std::string what = "push: item " + std::string(client::to_string(result.status));
    if (!result.error.empty()) {
        what += ": " + result.error;
    }
    return what;
}

inline void raise_to(std::atomic<std::int64_t>& maximum, std::int64_t value) {
    std::int64_t seen = maximum.load(relaxed);
    while (value > seen && !maximum.compare_exchange_weak(seen, value, relaxed)) {
    }
}

/// State shared by the threads of one run.
struct Run {
    Run(client::Client& c, const WorkloadOptions& o, const queen::Clock& k, Progress& p)
        : client(c),
          options(o),
          clock(k),
          progress(p),
          endpoint(c.options().endpoint),
          connection_options(c.connection_options()),
          pop_wait_margin_ms(c.options().pop_wait_margin_ms),
          id_seed(c.options().id_seed ^ 0x9E37'79B9'7F4A'7C15ULL) {}

    client::Client& client;
    const WorkloadOptions& options;
    const queen::Clock& clock;
    Progress& progress;
    client::Endpoint endpoint;  // the driver threads' connections go here
    client::ConnectionOptions connection_options;
    std::int64_t pop_wait_margin_ms;
    std::uint64_t id_seed;     // of the driver threads' generated ids
    std::uint64_t target = 0;  // messages to produce; 0: until the deadline
    std::atomic<std::uint64_t> next_sequence{0};
    std::atomic<std::uint64_t> bytes_produced{0};
    std::atomic<std::uint64_t> bytes_consumed{0};
    std::atomic<std::uint64_t> duplicates{0};
    std::atomic<std::uint64_t> transactions{0};
    std::atomic<std::uint64_t> transactions_claimed{0};  // a worker claims one before committing
    std::atomic<std::uint64_t> empty_pops{0};            // pops answered 204 (nothing delivered)
    std::atomic<std::uint64_t> empty_next_pops{0};       // transactions' next pops that were empty
    std::atomic<bool> is_producing_over{false};
    std::atomic<std::int64_t> producers_live{0};  // producer agents not stopped yet
    std::int64_t produce_end_ns = 0;              // when the last producer stopped
    std::uint64_t consumed_at_produce_end = 0;
    // The steady part of a paced run: the first ack answered after half_ns (the middle of the
    // produce window) marks when and at what count consumption entered it.
    std::int64_t half_ns = std::numeric_limits<std::int64_t>::max();
    std::atomic<bool> is_half_marked{false};
    std::int64_t half_mark_ns = 0;
    std::uint64_t consumed_at_half = 0;
    std::atomic<std::int64_t> last_delivery_ns{0};
    // One flag per sequence number when the count is bounded: produced, then consumed.
    std::unique_ptr<std::atomic<std::uint8_t>[]> produced_flags;
    std::unique_ptr<std::atomic<std::uint8_t>[]> consumed_flags;
    std::string partition_prefix = "p";
    // Transaction workers: the consumer group they pop as (empty: queue mode), and with
    // Steps::stream_cycle the query their cycles name (registered once before the loop).
    std::string group;
    std::string stream_query_id;
    std::uint64_t stream_epoch = 0;
    Pacer pacer{0, 0};                                    // set when the measured phase starts
    std::atomic<std::int64_t> behind_schedule_ns_max{0};  // latest send after its due time
    std::mutex error_mutex;
    std::vector<ErrorSample> error_samples;  // guarded by error_mutex

    bool is_stopping() const {
        return progress.is_stop_requested.load(relaxed) ||
               progress.errors.load(relaxed) >= options.errors_max;
    }
    /// Counts `n` errors of kind `what` ("pop: ...", "ack: ..."); the first error_kinds_max
    /// kinds keep their text and count for the report.
    void count_error(std::string_view what, std::uint64_t n = 1) {
        if (n == 0) {
            return;
        }
        progress.errors.fetch_add(n, relaxed);
        std::lock_guard lock(error_mutex);
        for (ErrorSample& sample : error_samples) {
            if (sample.what == what) {
                sample.count += n;
                return;
            }
        }
        if (error_samples.size() < error_kinds_max) {
            error_samples.push_back(ErrorSample{std::string(what), n});
        }
    }
    /// Records one latency sample in `histogram` (the caller's driver thread's) and in the live
    /// maximum.
    void record_latency(Histogram& histogram, std::int64_t ns) {
        histogram.record(ns);
        raise_to(progress.latency_max_ns, ns);
    }
    /// A producer agent stopped; the last one marks the end of producing.
    void producer_stopped() {
        if (producers_live.fetch_sub(1) == 1) {
            produce_end_ns = clock.monotonic_ns();
            consumed_at_produce_end = progress.consumed.load();
            is_producing_over.store(true);
        }
    }
    /// Counts `n` consumed messages (acked) at `now_ns`; the first count after half_ns marks
    /// the steady window's start.
    void count_consumed(std::uint64_t n, std::int64_t now_ns) {
        const std::uint64_t total = progress.consumed.fetch_add(n, relaxed) + n;
        if (now_ns >= half_ns && !is_half_marked.load(relaxed) && !is_half_marked.exchange(true)) {
            half_mark_ns = now_ns;
            consumed_at_half = total;
        }
    }
    void track(std::uint64_t count) {
        target = count;
        if (count == 0 || count > tracked_messages_max) {
            return;
        }
        produced_flags = std::make_unique<std::atomic<std::uint8_t>[]>(count);
        consumed_flags = std::make_unique<std::atomic<std::uint8_t>[]>(count);
    }
};

/// Sets `out` to the partition of message `sequence` ("p<sequence mod partitions>"), reusing its
/// storage.
inline void assign_partition_name(const Run& run, std::uint64_t sequence, std::string& out) {
    const auto partitions = static_cast<std::uint64_t>(run.options.partitions);
    char digits[24];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, sequence % partitions);
    QUEEN_ASSERT(ec == std::errc{}, "a 64-bit number fits in 24 digits");
    out.assign(run.partition_prefix).append(digits, end);
}

/// Sets `ack` to the completion of `message` (Ack::of), reusing the ack's storage.
inline void assign_ack(const client::Message& message, Ack& ack) {
    ack.transaction_id = message.transaction_id;
    ack.partition_id = message.partition_id;
    ack.status = client::AckStatus::completed;
    ack.error.clear();
    ack.lease_id = message.lease_id;
    ack.consumer_group = message.consumer_group;
}

/// What one driver thread shares between its agents.
struct Driver {
    Driver(std::uint64_t seed, const queen::Clock& clock) : ids(seed, clock) {}
    Histogram latency;
    client::UuidV7Generator ids;  // generated transactionIds (transaction pushes)
};

/// One connection's worth of a workload as a state machine: it builds its next request and reads
/// the answer; the driver owns the socket (one multiplexer slot per agent) and the waiting.
class Agent {
public:
    enum class Next { send, sleep, stop };

    virtual ~Agent() = default;
    /// At `now_ns`: build the next request into `request` (send), or ask to be woken at `wake_ns`
    /// (sleep), or end (stop; next() is not called again).
    virtual Next next(std::int64_t now_ns, client::OwnedRequest& request,
                      std::int64_t& wake_ns) = 0;
    /// After next() said send: whether a second request goes with that one, pipelined on the
    /// same connection (built into `follow`); complete() then runs for each, in order.
    virtual bool follow(client::OwnedRequest& /*follow*/) { return false; }
    /// The request built by the last next() finished at `now_ns`: `status` is the transport
    /// outcome, `response` the answer (any status).
    virtual void complete(std::int64_t now_ns, const queen::Status& status,
                          const client::HttpRequest& request,
                          const client::HttpResponse& response) = 0;
    /// Called once, after next() said stop.
    virtual void on_stop() {}
};

/// Builds agent `index` (0-based across the run) on `driver`.
using AgentFactory = std::function<std::unique_ptr<Agent>(std::int64_t index, Driver& driver)>;

/// Runs `count` agents from `make` on min(driver_threads, count) threads, each an event loop
/// over its share of the connections; returns the merged latency histogram of the driver threads.
Histogram run_agents(Run& run, std::int64_t count, const AgentFactory& make);

inline double elapsed_s(std::int64_t start_ns, std::int64_t end_ns) {
    return static_cast<double>(std::max<std::int64_t>(end_ns - start_ns, 0)) / 1e9;
}

/// The CPU time the server and this process spend over a measured phase, per message of its
/// report (the server's only when options.server_cpu_us knows it). The phase's idle tail (the
/// consumers' last long polls) is in it too.
class CpuWindow {
public:
    explicit CpuWindow(const WorkloadOptions& options)
        : options_(options), server_start_us_(sample_server()), own_start_us_(own_cpu_us()) {}

    void add_to(Report& report) const {
        const double own_us = own_cpu_us() - own_start_us_;
        const double server_end_us = sample_server();
        const auto messages = static_cast<double>(report.messages);
        if (messages <= 0) {
            return;
        }
        if (server_start_us_ >= 0 && server_end_us >= server_start_us_) {
            report.metrics.push_back(
                {"server_cpu_us_per_msg", (server_end_us - server_start_us_) / messages});
        }
        report.metrics.push_back({"bench_cpu_us_per_msg", own_us / messages});
    }

private:
    [[nodiscard]] double sample_server() const {
        return options_.server_cpu_us ? options_.server_cpu_us() : -1;
    }

    const WorkloadOptions& options_;
    double server_start_us_;
    double own_start_us_;
};

/// What a producer's batches carry: the partition and payload of each message (ProducerAgent
/// fills its items through one). One per producer agent, used on its driver thread only.
class BatchFiller {
public:
    virtual ~BatchFiller() = default;
    /// Sets `item.partition` and `item.payload_json` (reusing their storage) of item `index` of
    /// the batch being built: message `sequence` of the run (0-based, counted across producers),
    /// stamped `stamp_ns`. A batch's items are filled in order from index 0.
    virtual void fill(std::size_t index, std::uint64_t sequence, std::int64_t stamp_ns,
                      PushItem& item) = 0;
    /// Item `index` of the batch last filled was queued (or answered duplicate) by the broker.
    virtual void queued(std::size_t /*index*/) {}
};

/// What the e2e phase runs: e2e itself (the defaults), or the lanes workload.
struct E2eShape {
    /// Builds the filler of producer `producer` (0-based). Empty: message n goes to partition
    /// "p<n mod partitions>" with the payload write_payload(n, stamp).
    std::function<std::unique_ptr<BatchFiller>(std::int64_t producer)> make_filler;
    /// Non-null: consumers report the lane and sequence of every delivery here (the payloads
    /// carry a lane) instead of marking the run's sequence flags.
    LaneChecker* lanes = nullptr;
};

/// Producers and consumers together until the producers' deadline (or count) and the drain
/// (bounded by `bound_ns` more): e2e's phase, and the lanes workload's with its shape. Fills the
/// report's rates, latency, counts, lag and CPU metrics.
Report run_e2e(Run& run, std::int64_t produce_deadline_ns, std::int64_t bound_ns,
               const E2eShape& shape);

/// The lanes workload (lanes.cpp): run_e2e with one writer per lane and the lane checker, then
/// the checker's counts as errors, metrics and the report's check.
Report run_lanes(Run& run, std::int64_t produce_deadline_ns, std::int64_t bound_ns);

/// The transaction workload (transaction.cpp): seeds each worker's partition, then runs the
/// TransactionAgents until the deadline or the count.
queen::Result<Report> run_transaction(Run& run, std::int64_t deadline_ns);

/// The stream workload (stream.cpp): producers on the event loop, StreamRunners on threads of
/// their own, the drain and the check.
queen::Result<Report> run_stream(Run& run, std::int64_t deadline_ns);

/// DELETE, POST or GET answered 404 (a queue, group or query that is not there yet).
inline bool is_not_found(const queen::Error& error) {
    return client::http_status_of(error) == 404;
}

}  // namespace queen::bench::detail
