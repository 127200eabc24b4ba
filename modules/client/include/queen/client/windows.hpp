// queen/client/windows.hpp — the window engine of the streams API: tumbling, sliding and session
// windows over event or processing time, with allowed lateness and a late-event policy, and the
// count/sum/min/max/avg/custom aggregations. Deterministic and without I/O: a WindowOperator turns
// one cycle's events into the state rows to write and the results to emit in that same cycle
// (POST /streams/v1/cycle), and is rebuilt from the rows (POST /streams/v1/state/get).
//
// # The manual
//
// **Windows.** A window is a half-open interval of time [windowStart, windowEnd) of one key of
// one partition (a WindowOperator serves one partition; every partition has its own operator,
// watermark and rows, and never sees another's events):
// - tumbling(size): [k*size, (k+1)*size), every event in exactly one window;
// - sliding(size, slide): [k*slide, k*slide + size) for every k, slide <= size: an event is in
//   size/slide windows (rounded up or down by its position);
// - session(gap): the events of a key that follow each other by less than `gap` form one window
//   [first event, last event + gap). An event that falls within `gap` of two sessions merges
//   them (their accumulators are merged, the rows of the old sessions deleted).
// Times are milliseconds (any epoch, negative allowed, |t| < 2^62). In event time each event
// brings its own time (the caller's timestamp extractor); in processing time every event of a
// cycle gets the cycle's `now_ms`.
//
// **When a window closes.** Each partition has a watermark, which never goes back:
// - event time: after each event, watermark = max(watermark, event time - allowed lateness), so
//   it trails the largest event time seen by the allowed lateness; flush(now_ms) raises it to
//   now_ms - allowed lateness (the idle flush: a quiet partition's windows close by the clock);
// - processing time: apply(events, now_ms) and flush(now_ms) raise it to now_ms before the
//   events (allowed lateness is not used).
// A window closes as soon as windowEnd <= watermark: its result is emitted and its row deleted
// in the same cycle, so a restart from the rows never emits it twice. Windows close in the
// order the watermark passes them (by windowEnd, then key, then windowStart).
//
// **Late events.** An event is late for a window it belongs to when that window's end is at or
// below the watermark (it has closed, or would have); for a session, when the event merges with
// no open session of its key and event time + gap <= watermark. Its fate is the LatePolicy:
// - drop: ignored, counted in CycleOutput::dropped;
// - correction: a WindowResult with is_correction set, carrying the aggregate of the late
//   events of that window in this cycle only (a delta: add count and sum to the first result,
//   take min / max of both; avg = total sum / total count). A late session event's correction
//   window is [event time, event time + gap), since the closed session it missed is gone;
// - side_output: the event itself in CycleOutput::late_events (once, even when a sliding
//   window event is late for several windows; its windows that are still open count it).
//
// **Rows** (the state of one (query, partition), keys in the broker's byte order):
// - "w:<key>:<windowStart>" for each open window, value
//   {"key":k,"windowStart":s,"windowEnd":e,"count":n,"sum":x,"min":x,"max":x,"acc":x}; windowEnd
//   is a number, so state/get's ripe_at_or_before=T answers the windows an idle flush at a
//   watermark of T would close (T = now - allowed lateness in event time). `acc` is the custom
//   reduce's accumulator (the initial value for the other aggregations);
// - "m": the partition's watermark, {"watermark":w}, written whenever it moved (no windowEnd,
//   so ripe_at_or_before never answers it);
// - rows with other keys belong to someone else: restore() ignores them.
//
// **Cycles and restarts.** apply() / flush() change the operator and return the CycleOutput of
// the changes: send its state_ops, its results (as push_items or to a callback) and the ack of
// the events in one cycle. If the cycle is not committed, throw the operator away and restore()
// it from the rows the broker holds, then redo the events: the output is the same as if the
// failed cycle had never run. Running the same events straight through or with restarts from
// the rows between any two cycles gives the same results (tested against an in-memory model).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "queen/core/result.hpp"

namespace queen::client {

enum class WindowKind : std::uint8_t { tumbling, sliding, session };
enum class WindowTime : std::uint8_t { event, processing };
enum class LatePolicy : std::uint8_t { drop, correction, side_output };
enum class AggregateKind : std::uint8_t { count, sum, min, max, avg, reduce };

/// What a window computes over its events' values (a numeric field the caller extracted).
struct Aggregation {
    AggregateKind kind = AggregateKind::count;
    /// reduce only: acc = reduce(acc, value), from `initial`, in the order the events came.
    std::function<double(double acc, double value)> reduce;
    /// reduce only, and needed by session windows (which merge): the accumulator of two
    /// windows' events together.
    std::function<double(double left, double right)> merge;
    double initial = 0.0;

    static Aggregation count() { return {}; }
    static Aggregation sum() { return of(AggregateKind::sum); }
    static Aggregation min() { return of(AggregateKind::min); }
    static Aggregation max() { return of(AggregateKind::max); }
    static Aggregation avg() { return of(AggregateKind::avg); }
    static Aggregation custom(double initial, std::function<double(double, double)> reduce,
                              std::function<double(double, double)> merge = {}) {
        Aggregation aggregation = of(AggregateKind::reduce);
        aggregation.initial = initial;
        aggregation.reduce = std::move(reduce);
        aggregation.merge = std::move(merge);
        return aggregation;
    }

private:
    static Aggregation of(AggregateKind kind) {
        Aggregation aggregation;
        aggregation.kind = kind;
        return aggregation;
    }
};

struct WindowSpec {
    WindowKind kind = WindowKind::tumbling;
    std::int64_t size_ms = 0;   ///< tumbling, sliding
    std::int64_t slide_ms = 0;  ///< sliding: 0 < slide_ms <= size_ms
    std::int64_t gap_ms = 0;    ///< session
    WindowTime time = WindowTime::event;
    std::int64_t allowed_lateness_ms = 0;  ///< event time only; >= 0
    LatePolicy late = LatePolicy::drop;
    Aggregation aggregation;

    static WindowSpec tumbling(std::chrono::milliseconds size);
    static WindowSpec sliding(std::chrono::milliseconds size, std::chrono::milliseconds slide);
    static WindowSpec session(std::chrono::milliseconds gap);
};

/// Errc::invalid_argument naming the first bad field (sizes, slide, gap > 0, slide <= size,
/// lateness >= 0, a reduce function for AggregateKind::reduce, and its merge for sessions).
queen::Result<void> validate(const WindowSpec& spec);

struct WindowEvent {
    std::string key;
    std::int64_t event_time_ms = 0;  ///< ignored in processing time
    double value = 0.0;              ///< the aggregated field (count ignores it)
};

struct WindowResult {
    std::string key;
    std::int64_t window_start_ms = 0;
    std::int64_t window_end_ms = 0;
    double value = 0.0;  ///< the aggregation's answer
    std::uint64_t count = 0;
    double sum = 0.0;
    double min = 0.0;
    double max = 0.0;
    bool is_correction = false;  ///< the late events' delta of a closed window (see the manual)

    /// {"key":..,"windowStart":..,"windowEnd":..,"value":..,"count":..,"sum":..,"min":..,
    /// "max":..,"correction":bool}: a push item's payload.
    [[nodiscard]] std::string to_json() const;
    friend bool operator==(const WindowResult&, const WindowResult&) = default;
};

struct LateEvent {
    WindowEvent event;
    std::int64_t watermark_ms = 0;  ///< the watermark it was late against
};

/// One state op of POST /streams/v1/cycle.
struct StateOp {
    std::string key;
    std::string value_json;  ///< empty for a delete
    bool is_delete = false;
    friend bool operator==(const StateOp&, const StateOp&) = default;
};

/// One row of a state/get answer.
struct StateRow {
    std::string key;
    std::string value_json;
};

/// What one cycle sends: every row key appears at most once in state_ops.
struct CycleOutput {
    std::vector<StateOp> state_ops;
    std::vector<WindowResult> results;   ///< closed windows in closing order, then corrections
    std::vector<LateEvent> late_events;  ///< LatePolicy::side_output
    std::uint64_t dropped = 0;           ///< LatePolicy::drop: late events ignored

    /// The cycle's "state_ops" array: [{"type":"upsert","key":..,"value":{..}} |
    /// {"type":"delete","key":..}, ...].
    [[nodiscard]] std::string state_ops_json() const;
};

/// The rows of a state/get answer {"rows":[{"key":..,"value":<JSON or JSON text>}, ...]}.
/// Errors: Errc::bad_response.
queen::Result<std::vector<StateRow>> parse_state_rows(std::string_view answer_json);

/// The row key of an open window: "w:<key>:<windowStart>".
std::string window_row_key(std::string_view key, std::int64_t window_start_ms);
inline constexpr std::string_view watermark_row_key = "m";

/// The windows of one partition. Not thread-safe.
class WindowOperator {
public:
    /// A fresh operator (no rows). Errors: those of validate().
    static queen::Result<WindowOperator> create(WindowSpec spec);
    /// The operator the rows describe. Errors: validate()'s, Errc::invalid_argument for a row
    /// of ours ("m", "w:...") that is not what this operator writes (naming its key).
    static queen::Result<WindowOperator> restore(WindowSpec spec, std::span<const StateRow> rows);

    /// Adds one cycle's events, in order, and closes what the watermark passed.
    CycleOutput apply(std::span<const WindowEvent> events, std::int64_t now_ms);
    /// The idle flush: closes the windows whose end the clock passed (see the manual).
    CycleOutput flush(std::int64_t now_ms);

    /// Nothing before the first event (event time) or cycle (processing time).
    [[nodiscard]] std::optional<std::int64_t> watermark_ms() const noexcept { return watermark_; }
    [[nodiscard]] std::size_t open_windows() const noexcept { return windows_.size(); }
    /// The rows the broker holds once every output so far is committed, in key order.
    [[nodiscard]] std::vector<StateRow> rows() const;
    [[nodiscard]] const WindowSpec& spec() const noexcept { return spec_; }

private:
    struct Accumulator {
        std::int64_t end = 0;
        std::uint64_t count = 0;
        double sum = 0.0;
        double min = 0.0;
        double max = 0.0;
        double acc = 0.0;
    };
    using WindowId = std::pair<std::string, std::int64_t>;  // key, windowStart
    // The late events' deltas of this cycle, by (key, windowStart, windowEnd).
    using LateMap = std::map<std::tuple<std::string, std::int64_t, std::int64_t>, Accumulator>;

    explicit WindowOperator(WindowSpec spec) : spec_(std::move(spec)) {}
    void raise_watermark(std::int64_t to, CycleOutput& out);
    void close_ripe(CycleOutput& out);
    void add(const WindowEvent& event, std::int64_t time, CycleOutput& out, LateMap& late);
    void add_session(const WindowEvent& event, std::int64_t time, CycleOutput& out, LateMap& late);
    void fold(Accumulator& accumulator, double value) const;
    void late_event(const WindowEvent& event, std::int64_t time, CycleOutput& out);
    static std::string row_value(const WindowId& id, const Accumulator& accumulator);
    void put(const WindowId& id, Accumulator accumulator);
    void erase(const WindowId& id);
    void finish(CycleOutput& out, LateMap& late, std::optional<std::int64_t> watermark_before);
    [[nodiscard]] WindowResult result_of(const std::string& key, std::int64_t start,
                                         const Accumulator& accumulator) const;

    WindowSpec spec_;
    std::optional<std::int64_t> watermark_;
    std::map<WindowId, Accumulator> windows_;
    std::set<std::tuple<std::int64_t, std::string, std::int64_t>> by_end_;  // end, key, start
    std::set<std::string> persisted_;  // window row keys the broker holds
    std::set<WindowId> touched_;       // windows changed in this cycle
};

}  // namespace queen::client
