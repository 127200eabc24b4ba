// queen/client/streams.hpp — the streams API of the client (docs/streams.md), like the official JS
// SDK's: a Stream is an operator chain over a source queue (map, filter, flat_map, key_by, then an
// optional window with an aggregation) and a sink (a queue, a callback, or both); a StreamRunner
// runs it against a broker's /streams/v1 endpoints, cycle by cycle, with the window engine of
// queen/client/windows.hpp.
//
// # The manual
//
// ```cpp
// auto spec = WindowSpec::tumbling(60s);
// spec.allowed_lateness_ms = 5'000;
// auto stream = Stream::from("clicks")              // the source queue
//                   .named("clicks-per-user")       // the query's name (its identity)
//                   .version("2")                   // part of config_hash (see below)
//                   .filter([](std::string_view e) { return e.find("\"bot\"") == e.npos; })
//                   .key_by_field("user")           // or key_by(lambda)
//                   .event_time_field("ts")         // epoch ms; default: the message's createdAt
//                   .window(spec)
//                   .aggregate_field(Aggregation::sum(), "amount")
//                   .to_queue("click-totals");      // and/or .for_each(callback)
// StreamRunner runner{client, stream};
// runner.run_until(stop_token);                     // or run_for(d), or step() by step
// ```
//
// **Events** are JSON texts (a message's payload). map() returns a new JSON text, filter() keeps
// an event, flat_map() returns zero or more events, key_by() sets the key of the events that
// follow (before any key_by, an event's key is its source partition's name). The chain runs in
// the order it was written. Without window(), every event that leaves the chain is an output
// (its payload the event). With window(), the chain's events go to the partition's
// WindowOperator as (key, event time, value): the value from aggregate()'s extractor (count
// needs none), the event time from event_time() (event time only; else the source message's
// createdAt). A function that throws stops the runner with Errc::rejected naming the step; the
// batch is not acked, so it comes back by lease.
//
// **Outputs** (StreamOutput): a closed window's result (payload WindowResult::to_json()), a
// correction (LatePolicy::correction: the late events' delta, "correction":true), a late event
// (LatePolicy::side_output: {"late":true,"key","eventTime","value","watermark"}, to
// late_to_queue() when set, else with the results), or a windowless event. A sink queue gets
// each output as one message in the source partition's name (or the partition to_queue() names),
// with a transactionId derived from the query, the source partition and the output (key, window
// start and end for a result; the acked source message too for corrections, late events and
// windowless events), so a redone cycle's pushes are deduplicated by the broker.
//
// **The runner's loop** (as the JS runner): register the query once (POST /streams/v1/queries);
// then pop the source with consumer group "streams.<name>" (batch 200, up to 4 partitions, a 1 s
// long poll), group the messages by partition and, per partition: run the chain, feed the
// partition's WindowOperator (restored from POST /streams/v1/state/get the first time this
// process sees the partition, and again after any failed cycle) and send ONE cycle (POST
// /streams/v1/cycle) with the state ops, the sink pushes, the ack of the partition's last
// message (its lease, completed, release_lease true) and the query's epoch. Every idle_flush_ms
// the runner flushes the partitions it knows (seen, or holding state per the admin route GET
// /api/v1/streams/queries/:name when the broker has it): a cycle without ack carrying what
// WindowOperator::flush(now) closed, when something closed.
//
// **Guarantees.** Input is at least once (a batch whose cycle did not commit comes back by lease),
// state and sink-queue effects are exactly once: state ops, pushes and the ack commit together,
// a failed cycle's operator is thrown away and restored from the committed rows, and a redone
// cycle's pushes carry the same transactionIds. Callbacks are outside the broker, so they are at
// least once: with CallbackDelivery::at_least_once (the default) they run just before their cycle
// is sent, and again for a redone cycle; with CallbackDelivery::after_commit they run only for a
// cycle whose commit the runner saw, so a crash (or a lost answer) between the commit and the
// call loses them (at most once). Idle flush of a partition assumes no other runner of the same
// query is processing it at that moment (run one runner per query when windows use idle flush).
//
// **config_hash** is a hash of the chain's structure: each step's kind (and field name for the
// *_field helpers), the window spec (kind, sizes, time, lateness, late policy), the aggregation
// kind and initial value, and the user's version() string. Lambdas cannot be hashed: change
// version() when a lambda's meaning changes. Registering a changed chain under the same name
// fails with the broker's 409 (Errc::conflict) unless StreamRunnerOptions::is_reset (which wipes
// the query's state).
//
// **Several runners** of one query share its partitions (the consumer group hands each batch's
// partition to whichever runner pops it). Each windowed cycle checks the partition's "p" row
// (state op "check") and writes a fresh token into it, so a cycle computed from an operator
// that missed another runner's cycles is refused; the runner restores the partition and redoes
// the batch at once, under the same lease (StreamMetrics::state_changes). A cycle sent again
// after a lost answer finds its own token there and counts as committed.
//
// **Epochs.** Registration answers the query's epoch (1 at creation, +1 per reset and per
// `queen admin streams reset`) and every cycle carries it: the broker refuses a cycle once the
// epoch moved, so state read before a reset is never written after it. The runner then
// registers again (without reset): the same chain carries on from the new, empty state (every
// operator rebuilt from the rows; sink transactionIds include the epoch, so the new epoch's
// windows are not taken for duplicates of the old one's); a query now running another chain
// answers 409, and the runner stops with Errc::conflict.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "queen/client/client.hpp"
#include "queen/client/windows.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/result.hpp"

namespace queen::client {

/// One output of a stream (see the manual).
struct StreamOutput {
    enum class Kind : std::uint8_t { result, correction, late, event };
    Kind kind = Kind::result;
    std::string partition;               ///< the source partition's name
    std::string partition_id;            ///< the source partition's id
    std::string payload_json;            ///< what a sink queue receives
    std::string transaction_id;          ///< the sink message's transactionId (deterministic)
    std::optional<WindowResult> window;  ///< result and correction
};

/// When for_each() callbacks run (see the manual, Guarantees).
enum class CallbackDelivery : std::uint8_t { at_least_once, after_commit };

/// An operator chain over a source queue, and its sinks. A plain value: copy it, give it to a
/// StreamRunner. The setters return *this for chaining.
class Stream {
public:
    using MapFn = std::function<std::string(std::string_view event_json)>;
    using FilterFn = std::function<bool(std::string_view event_json)>;
    using FlatMapFn = std::function<std::vector<std::string>(std::string_view event_json)>;
    using KeyFn = std::function<std::string(std::string_view event_json)>;
    using TimeFn = std::function<std::int64_t(std::string_view event_json)>;
    using ValueFn = std::function<double(std::string_view event_json)>;
    using Callback = std::function<void(const StreamOutput&)>;

    /// A chain over `source_queue`, named after it until named().
    static Stream from(std::string source_queue);

    Stream& named(std::string name);
    /// Part of config_hash: change it when a lambda changes meaning.
    Stream& version(std::string version);
    Stream& map(MapFn map);
    Stream& filter(FilterFn filter);
    Stream& flat_map(FlatMapFn flat_map);
    Stream& key_by(KeyFn key);
    /// key_by the top-level member `field` (a string as is, any other value as its JSON text;
    /// absent: "").
    Stream& key_by_field(std::string field);
    /// Event time (epoch ms) of an event; event-time windows only.
    Stream& event_time(TimeFn time);
    /// event_time from the top-level numeric member `field` (absent, not a number or not within
    /// +-2^62 ms: the source message's createdAt). An event_time() function's time outside that
    /// range, like a value() function's NaN or infinity, stops the runner with Errc::rejected.
    Stream& event_time_field(std::string field);
    Stream& window(WindowSpec spec);
    /// The window's aggregation and the value it aggregates (count needs no value).
    Stream& aggregate(Aggregation aggregation, ValueFn value = {});
    /// aggregate() over the top-level numeric member `field` (absent or not a number: 0).
    Stream& aggregate_field(Aggregation aggregation, std::string field);
    /// The sink queue; an empty `partition`: each output goes to its source partition's name.
    Stream& to_queue(std::string queue, std::string partition = {});
    /// Where late events of LatePolicy::side_output go (default: the sink queue).
    Stream& late_to_queue(std::string queue);
    Stream& for_each(Callback callback,
                     CallbackDelivery delivery = CallbackDelivery::at_least_once);

    /// Errc::invalid_argument naming the problem: no source or name, no sink, a window spec
    /// validate() refuses, an aggregation without a value, event_time without a window.
    [[nodiscard]] queen::Status validate() const;
    /// The hash of the chain's structure and version (see the manual): 16 hex digits.
    [[nodiscard]] std::string config_hash() const;

    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] const std::string& source_queue() const noexcept { return source_; }
    [[nodiscard]] const std::string& sink_queue() const noexcept { return sink_; }
    /// The window with its aggregation, when there is one.
    [[nodiscard]] std::optional<WindowSpec> window_spec() const;

private:
    friend class StreamRunner;
    enum class StepKind : std::uint8_t { map, filter, flat_map, key_by };
    struct Step {
        StepKind kind = StepKind::map;
        std::string field;  // key_by_field
        MapFn map;          // map, key_by
        FilterFn filter;
        FlatMapFn flat_map;
    };

    std::string source_;
    std::string name_;
    std::string version_;
    std::vector<Step> steps_;
    std::optional<WindowSpec> window_;
    TimeFn time_;
    std::string time_field_;
    ValueFn value_;
    std::string value_field_;
    Aggregation aggregation_;
    bool has_aggregation_ = false;
    std::string sink_;
    std::string sink_partition_;
    std::string late_queue_;
    Callback callback_;
    CallbackDelivery delivery_ = CallbackDelivery::at_least_once;
};

struct StreamRunnerOptions {
    std::int64_t batch = 200;             ///< messages per pop
    std::int64_t partitions = 4;          ///< partitions leased per pop
    std::int64_t pop_timeout_ms = 1'000;  ///< the long poll
    /// How often quiet partitions are flushed (WindowOperator::flush); 0: never.
    std::int64_t idle_flush_ms = 5'000;
    /// Register with reset: a changed chain wipes the query's state instead of a 409.
    bool is_reset = false;
    /// Empty: "streams.<name>".
    std::string consumer_group;
    /// Attempts of a streams call after a network error or 5xx, with backoff
    /// retry_delay_ms * 2^n (capped at 5 s). 4xx and success false are never retried.
    std::uint32_t retry_attempts = 5;
    std::int64_t retry_delay_ms = 100;
};

struct StreamMetrics {
    std::uint64_t pops = 0;
    std::uint64_t messages = 0;  ///< source messages taken from pops
    /// Source messages acked by cycles whose commit the runner saw: processed for good (a batch
    /// of a failed cycle comes back and counts when it commits; one whose answer was lost
    /// after it committed does not count).
    std::uint64_t acked = 0;
    std::uint64_t events = 0;         ///< events that reached the window (or the sink)
    std::uint64_t cycles = 0;         ///< committed cycles (idle flushes included)
    std::uint64_t cycles_failed = 0;  ///< refused or lost cycles (operator restored after)
    std::uint64_t emitted = 0;        ///< outputs of committed cycles
    std::uint64_t late = 0;           ///< side-output late events and corrections emitted
    std::uint64_t dropped = 0;        ///< late events dropped
    std::uint64_t idle_flush_cycles = 0;
    std::uint64_t restores = 0;  ///< operators rebuilt from state/get
    std::uint64_t retries = 0;   ///< streams calls tried again after a retryable error
    /// Cycles refused because the query was reset or cleared since (then registered again).
    std::uint64_t epoch_changes = 0;
    /// Cycles refused because another runner of the query changed the partition's state
    /// since this one read it (the partition was restored and its batch redone).
    std::uint64_t state_changes = 0;
};

/// The answer of POST /streams/v1/queries.
struct StreamQueryInfo {
    std::string query_id;
    std::string config_hash;
    bool is_fresh = false;
    bool is_reset = false;
    /// The query's state generation (1 at creation, +1 per reset or `queen admin streams
    /// reset`); the runner's cycles carry it, so the broker refuses them once it changed. 0
    /// from a broker that does not send it (then cycles are not fenced).
    std::uint64_t epoch = 0;
};

/// Runs one Stream. Not thread-safe, except metrics() (from any thread).
class StreamRunner {
public:
    /// `client` and `clock` must outlive the runner; the clock gives processing time and the
    /// idle flush's now (wall_ms) and its interval (monotonic).
    StreamRunner(Client& client, Stream stream, StreamRunnerOptions options = {},
                 const queen::Clock& clock = queen::SystemClock::instance());

    /// Validates the stream and registers the query (once; step() calls it). Errors:
    /// validate()'s, Errc::conflict (409: a changed chain without is_reset), the call's errors.
    queen::Result<StreamQueryInfo> start();
    /// One pop and one cycle per popped partition, then an idle flush when one is due. Returns
    /// the number of source messages popped. A refused cycle is not an error (it is counted,
    /// its operator restored and its batch comes back by lease). Errors: start()'s, a pop's,
    /// a user function's (Errc::rejected), Errc::conflict (the query was reset to another
    /// chain: registering again after the refused cycle's epoch mismatch got the 409), a
    /// streams call that still failed after the retries.
    queen::Result<std::size_t> step();
    /// Flushes every known partition now (a cycle for each with something to close).
    queen::Status flush_idle();
    /// step() until `stop` is requested (seen within about pop_timeout_ms). Retryable errors
    /// pause and carry on; others end the run.
    queen::Status run_until(std::stop_token stop);
    queen::Status run_for(std::chrono::milliseconds duration);

    [[nodiscard]] StreamMetrics metrics() const;
    [[nodiscard]] const Stream& stream() const noexcept { return stream_; }
    [[nodiscard]] std::string config_hash() const { return config_hash_; }
    /// Empty before start().
    [[nodiscard]] const std::string& query_id() const noexcept { return query_id_; }

private:
    struct Item;
    struct Partition {
        std::string name;
        std::optional<WindowOperator> op;
        // The "p" row as the broker holds it ({"partition":name,"v":token}, compact JSON),
        // nullopt when it holds none. Every windowed cycle checks it and writes a new token,
        // so a cycle computed from state another runner changed since is refused.
        std::optional<std::string> p_row;
        bool is_stale = false;  // the last cycle's check failed: restore and redo the batch
    };
    struct Cycle;

    queen::Result<std::string> call(std::string_view target, const std::string& body);
    queen::Status restore(const std::string& partition_id, Partition& partition);
    queen::Status process(const std::string& partition_id, std::span<const Message> messages);
    queen::Status process_once(const std::string& partition_id, Partition& partition,
                               std::span<const Message> messages);
    queen::Status run_chain(const Message& message, std::vector<Item>& out) const;
    queen::Status send(const std::string& partition_id, Partition& partition, Cycle& cycle);
    void add_outputs(const std::string& partition_id, const Partition& partition,
                     const CycleOutput& out, std::string_view salt, Cycle& cycle) const;
    void discover_partitions();
    queen::Result<StreamQueryInfo> register_query(bool is_reset);
    void bump(std::uint64_t StreamMetrics::*counter, std::uint64_t by = 1);
    /// Waits `ms` (a retry's backoff); false when run_until's stop was requested.
    bool pause(std::int64_t ms);

    Client& client_;
    Stream stream_;
    StreamRunnerOptions options_;
    const queen::Clock& clock_;
    std::string config_hash_;
    std::string query_id_;
    std::uint64_t epoch_ = 0;
    std::string token_prefix_;       // random per runner: the "p" row tokens it writes
    std::uint64_t tokens_made_ = 0;  // ... are token_prefix_ + a counter
    std::string epoch_text_;         // part of every sink transactionId: a cleared query's windows
                                     // are new results, not duplicates of the old epoch's
    std::string group_;
    std::map<std::string, Partition> partitions_;  // by partition id
    std::int64_t last_flush_ns_ = 0;
    std::stop_token stop_;  // run_until's, so a backoff ends when it is requested
    std::mutex pause_mutex_;
    std::condition_variable_any pause_changed_;
    mutable std::mutex metrics_mutex_;
    StreamMetrics metrics_;  // guarded by metrics_mutex_
};

}  // namespace queen::client
