// client/tests/streams_property_test.cpp — the StreamRunner (queen/client/streams.hpp) over the
// in-memory broker of streams_fake_broker.hpp against a model of the windows' semantics written
// from the manuals of streams.hpp and windows.hpp (not WindowOperator): seeded random events
// (users, partitions, event times with disorder and late ones, events without a time or a user,
// events a filter drops) pushed in random chunks, a random window spec (tumbling, sliding,
// session; event time, or processing time from a ManualClock; lateness; every late policy;
// every aggregation), and between steps random faults: the runner thrown away and rebuilt,
// answers lost after the cycle applied, 503s (some outlasting the runner's retries), leases run
// out (between steps and between a cycle's build and its send), a callback that throws before
// its cycle, `queen admin streams reset` (a new epoch), pops cut short, idle flushes at the
// clock. Afterwards a flush far in the future closes everything and the sink must hold every
// window result of the model exactly once, the corrections must add up to the model's (and, in
// event time without a reset, final + corrections = every event of the window), the late side
// output must be the model's. QUEEN_SEED replays; QUEEN_PROPERTY_STEPS sets the rounds.
//
// The model syncs with the runner through what the broker committed: a cycle acks its batch in
// the same commit as its state, so after each step the events of a partition up to the group's
// cursor are exactly the events the committed state has seen; the model applies the new ones
// then (in processing time at the clock of that step, which does not move during a step). An
// idle flush that closes nothing sends no cycle, so the runner's watermark does not move: the
// model's flush raises the watermark only when something closes.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "queen/client/streams.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "streams_fake_broker.hpp"
#include "test_helpers.hpp"

namespace {

using namespace queen::client;
using testing::FakeStreamsBroker;
using Json = nlohmann::json;

constexpr const char* source = "events";
constexpr const char* sink = "out";
constexpr const char* late_queue = "late";
constexpr const char* group = "streams.prop";

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0);
}

/// One source event as pushed, and what the chain makes of it.
struct Event {
    std::string key;        // the "user" member; "" when absent (key_by_field)
    std::int64_t time = 0;  // "ts", or the message's createdAt when there is no "ts"
    double value = 0;       // "amount"
    bool is_dropped_by_filter = false;
};

struct Totals {
    std::uint64_t count = 0;
    double sum = 0;
    double min = 0;
    double max = 0;
    void add(std::uint64_t n, double s, double lo, double hi) {
        min = count == 0 ? lo : std::min(min, lo);
        max = count == 0 ? hi : std::max(max, hi);
        count += n;
        sum += s;
    }
    friend bool operator==(const Totals&, const Totals&) = default;
};

// (partition, key, windowStart, windowEnd)
using WindowId = std::tuple<std::string, std::string, std::int64_t, std::int64_t>;
// (partition, key, windowStart, windowEnd, value, count, sum, min, max)
using Final = std::tuple<std::string, std::string, std::int64_t, std::int64_t, double,
                         std::uint64_t, double, double, double>;
// (partition, key, eventTime, value, watermark)
using Side = std::tuple<std::string, std::string, std::int64_t, double, std::int64_t>;

/// The windows of the whole query: one state per source partition, the outputs of all.
class Model {
public:
    explicit Model(WindowSpec spec) : spec_(std::move(spec)) {}

    /// A committed cycle of `partition` with these events (processing time: at `now`).
    void apply(const std::string& partition, const std::vector<Event>& events, std::int64_t now) {
        State& state = states_[partition];
        const bool is_processing = spec_.time == WindowTime::processing;
        if (is_processing) {
            raise(partition, state, now);
        }
        for (const Event& event : events) {
            if (event.is_dropped_by_filter) {
                continue;
            }
            const std::int64_t time = is_processing ? now : event.time;
            add(partition, state, event.key, time, event.value);
            if (!is_processing) {
                raise(partition, state, time - spec_.allowed_lateness_ms);
            }
        }
    }

    /// The runner's idle flush at `now`: raises the watermark only when a window closes.
    void flush(std::int64_t now) {
        const std::int64_t to =
            spec_.time == WindowTime::processing ? now : now - spec_.allowed_lateness_ms;
        for (auto& [partition, state] : states_) {
            bool closes = false;
            for (const auto& [id, window] : state.windows) {
                closes = closes || id.second + spec_.size_ms <= to;
            }
            for (const auto& [key, sessions] : state.sessions) {
                for (const auto& session : sessions) {
                    closes = closes || session.last + spec_.gap_ms <= to;
                }
            }
            if (closes) {
                raise(partition, state, to);
            }
        }
    }

    /// `queen admin streams reset`: every partition starts again from nothing.
    void clear() { states_.clear(); }

    std::vector<Final> finals;
    std::map<WindowId, Totals> corrections;
    std::vector<Side> side;

private:
    struct Session {
        std::int64_t start = 0;
        std::int64_t last = 0;
        std::vector<double> values;  // in arrival order
    };
    struct State {
        std::optional<std::int64_t> watermark;
        std::map<std::pair<std::string, std::int64_t>, std::vector<double>> windows;  // key, start
        std::map<std::string, std::vector<Session>> sessions;  // open sessions by key
    };

    void add(const std::string& partition, State& state, const std::string& key, std::int64_t time,
             double value) {
        bool is_late = false;
        const auto late_for = [&](std::int64_t start, std::int64_t end) {
            is_late = true;
            if (spec_.late == LatePolicy::correction) {
                corrections[{partition, key, start, end}].add(1, value, value, value);
            }
        };
        if (spec_.kind == WindowKind::session) {
            auto& sessions = state.sessions[key];
            std::vector<Session> joined;
            std::vector<Session> apart;
            for (auto& session : sessions) {
                // The events of a session follow each other by less than the gap, so an event
                // is within the gap of one of them iff it is within the gap of the span.
                const bool joins =
                    session.start - spec_.gap_ms < time && time < session.last + spec_.gap_ms;
                (joins ? joined : apart).push_back(std::move(session));
            }
            if (joined.empty() && state.watermark && time + spec_.gap_ms <= *state.watermark) {
                late_for(time, time + spec_.gap_ms);
                sessions = std::move(apart);
            } else {
                Session merged{time, time, {}};
                for (auto& session : joined) {
                    merged.start = std::min(merged.start, session.start);
                    merged.last = std::max(merged.last, session.last);
                    merged.values.insert(merged.values.end(), session.values.begin(),
                                         session.values.end());
                }
                merged.values.push_back(value);
                apart.push_back(std::move(merged));
                sessions = std::move(apart);
            }
        } else {
            const std::int64_t slide =
                spec_.kind == WindowKind::sliding ? spec_.slide_ms : spec_.size_ms;
            for (std::int64_t start = floor_div(time, slide) * slide; start + spec_.size_ms > time;
                 start -= slide) {
                if (state.watermark && start + spec_.size_ms <= *state.watermark) {
                    late_for(start, start + spec_.size_ms);
                } else {
                    state.windows[{key, start}].push_back(value);
                }
            }
        }
        if (is_late && spec_.late == LatePolicy::side_output) {
            side.emplace_back(partition, key, time, value, *state.watermark);
        }
    }

    void raise(const std::string& partition, State& state, std::int64_t to) {
        state.watermark = std::max(state.watermark.value_or(to), to);
        const std::int64_t watermark = *state.watermark;
        for (auto it = state.windows.begin(); it != state.windows.end();) {
            const std::int64_t end = it->first.second + spec_.size_ms;
            if (end <= watermark) {
                emit(partition, it->first.first, it->first.second, end, it->second);
                it = state.windows.erase(it);
            } else {
                ++it;
            }
        }
        for (auto& [key, sessions] : state.sessions) {
            std::erase_if(sessions, [&](const Session& session) {
                if (session.last + spec_.gap_ms > watermark) {
                    return false;
                }
                emit(partition, key, session.start, session.last + spec_.gap_ms, session.values);
                return true;
            });
        }
    }

    void emit(const std::string& partition, const std::string& key, std::int64_t start,
              std::int64_t end, const std::vector<double>& values) {
        Totals totals;
        double acc = spec_.aggregation.initial;
        for (const double v : values) {
            totals.add(1, v, v, v);
            if (spec_.aggregation.kind == AggregateKind::reduce) {
                acc = acc + v * v;  // the test's custom aggregation: a sum of squares
            }
        }
        double value = 0;
        switch (spec_.aggregation.kind) {
            case AggregateKind::count: value = static_cast<double>(totals.count); break;
            case AggregateKind::sum: value = totals.sum; break;
            case AggregateKind::min: value = totals.min; break;
            case AggregateKind::max: value = totals.max; break;
            case AggregateKind::avg: value = totals.sum / static_cast<double>(totals.count); break;
            case AggregateKind::reduce: value = acc; break;
        }
        finals.emplace_back(partition, key, start, end, value, totals.count, totals.sum, totals.min,
                            totals.max);
    }

    WindowSpec spec_;
    std::map<std::string, State> states_;  // by partition name
};

std::string describe(const WindowSpec& spec) {
    static constexpr const char* kinds[] = {"tumbling", "sliding", "session"};
    static constexpr const char* policies[] = {"drop", "correction", "side_output"};
    static constexpr const char* aggregations[] = {"count", "sum", "min", "max", "avg", "reduce"};
    return std::string(kinds[static_cast<int>(spec.kind)]) +
           " size=" + std::to_string(spec.size_ms) + " slide=" + std::to_string(spec.slide_ms) +
           " gap=" + std::to_string(spec.gap_ms) +
           (spec.time == WindowTime::event ? " event-time" : " processing-time") +
           " lateness=" + std::to_string(spec.allowed_lateness_ms) +
           " late=" + policies[static_cast<int>(spec.late)] +
           " aggregation=" + aggregations[static_cast<int>(spec.aggregation.kind)];
}

/// The errors the faults cause: the callback's crash, and 503s or lost answers that outlasted
/// the runner's retries. Anything else (a conflict, a bad answer) is a failure.
bool is_expected(const queen::Error& error) {
    return error.is(Errc::rejected) || is_retryable(error);
}

/// What a callback does the next time it runs (at least once: just before its cycle is sent).
enum class CallbackFault : std::uint8_t { none, throw_before_send, expire_leases };

/// What the rounds exercised, printed at the end (a property test that never met a fault or a
/// late event would pass vacuously).
struct Coverage {
    std::uint64_t results = 0;
    std::uint64_t corrections = 0;
    std::uint64_t side = 0;
    std::uint64_t failed_cycles = 0;  // refused, lost or 503'd past the retries
    std::uint64_t epoch_changes = 0;
    std::uint64_t rebuilds = 0;
    std::uint64_t step_errors = 0;
};

/// One round: a spec, a stream of events, a runner under faults; the sink against the model.
class Round {
public:
    Round(queen::Rng& rng, WindowSpec spec, Coverage& coverage)
        : rng_(rng), coverage_(coverage), spec_(std::move(spec)), model_(spec_) {
        broker_.has_admin_route = true;  // a rebuilt runner flushes partitions it never saw
        ClientOptions client_options;
        client_options.endpoint = broker_.endpoint();
        client_options.retry_attempts = 0;
        client_ = std::make_unique<Client>(client_options);
        options_.pop_timeout_ms = 0;
        options_.idle_flush_ms = 0;  // flushes are the test's, at chosen clock times
        options_.retry_delay_ms = 1;
        options_.retry_attempts = static_cast<std::uint32_t>(rng_.below(4));
        options_.batch = static_cast<std::int64_t>(rng_.between(1, 20));
        options_.partitions = static_cast<std::int64_t>(rng_.between(1, 4));
        partitions_ = static_cast<int>(rng_.between(1, 4));
        has_late_queue_ = spec_.late == LatePolicy::side_output && rng_.chance(0.5);
        base_ = clock_.wall_ms();
        rebuild();
        REQUIRE(runner_->start());  // the query exists: a reset may come before any step
    }

    void run() {
        const auto total = rng_.between(0, 150);
        std::uint64_t pushed = 0;
        for (int action = 0; pushed < total || action < 5; ++action) {
            REQUIRE(action < 5'000);
            const auto dice = rng_.below(100);
            if (dice < 30 && pushed < total) {
                const auto chunk = std::min<std::uint64_t>(rng_.between(1, 10), total - pushed);
                for (std::uint64_t i = 0; i < chunk; ++i) {
                    push_one();
                }
                pushed += chunk;
            } else if (dice < 65) {
                step();
            } else if (dice < 75) {
                clock_.advance_ms(static_cast<std::int64_t>(rng_.below(15)));
            } else if (dice < 80) {
                flush();
            } else {
                fault();
            }
        }
        // Everything through, then a flush far in the future closes every window.
        drain();
        clock_.advance_ms(1'000'000'000);
        flush();
        check();
    }

private:
    void rebuild() {
        if (runner_) {
            count_runner();
            ++coverage_.rebuilds;
        }
        runner_.reset();
        auto stream = Stream::from(source)
                          .named("prop")
                          .filter([](std::string_view e) { return e.find("\"skip\"") == e.npos; })
                          .key_by_field("user");
        if (spec_.time == WindowTime::event) {
            stream.event_time_field("ts");
        }
        stream.window(spec_)
            .aggregate_field(spec_.aggregation, "amount")
            .to_queue(sink)
            .for_each([this](const StreamOutput&) {
                const CallbackFault fault = std::exchange(callback_fault_, CallbackFault::none);
                if (fault == CallbackFault::throw_before_send) {
                    throw std::runtime_error("crash before the cycle");
                }
                if (fault == CallbackFault::expire_leases) {
                    broker_.expire_leases();  // the cycle's ack will find its lease gone
                }
            });
        if (has_late_queue_) {
            stream.late_to_queue(late_queue);
        }
        runner_ = std::make_unique<StreamRunner>(*client_, stream, options_, clock_);
    }

    void count_runner() {
        const auto metrics = runner_->metrics();
        coverage_.failed_cycles += metrics.cycles_failed;
        coverage_.epoch_changes += metrics.epoch_changes;
    }

    void push_one() {
        const std::string partition = "p" + std::to_string(rng_.below(partitions_));
        Event event;
        Json payload = Json::object();
        if (!rng_.chance(0.1)) {
            static const char* const users[] = {"a", "b", "c:d", "e f", ""};
            event.key = users[rng_.below(std::size(users))];
            payload["user"] = event.key;
        }
        // Mostly near the event clock, some a little out of order, some far behind (late).
        cursor_ += static_cast<std::int64_t>(rng_.below(6));
        event.time = base_ + cursor_ -
                     static_cast<std::int64_t>(rng_.chance(0.15) ? rng_.below(80) : rng_.below(4));
        event.value = static_cast<double>(static_cast<std::int64_t>(rng_.below(41)) - 20);
        payload["amount"] = event.value;
        if (rng_.chance(0.9)) {
            payload["ts"] = event.time;
        }  // else the runner takes the message's createdAt, which is event.time too
        if (rng_.chance(0.05)) {
            payload["skip"] = true;
            event.is_dropped_by_filter = true;
        }
        broker_.push(source, partition, payload.dump(), event.time);
        events_[partition].push_back(event);
    }

    /// Applies to the model what the broker committed since the last sync.
    void sync() {
        for (auto& [partition, events] : events_) {
            const std::size_t acked = broker_.acked(source, partition, group);
            std::size_t& applied = applied_[partition];
            REQUIRE(acked >= applied);
            if (acked > applied) {
                model_.apply(partition,
                             std::vector<Event>(events.begin() + static_cast<long>(applied),
                                                events.begin() + static_cast<long>(acked)),
                             clock_.wall_ms());
                applied = acked;
            }
        }
    }

    /// One step; an error (a crash, retries run out) leaves leases that run out later.
    bool step() {
        const auto before = broker_.pending(source, group);
        auto stepped = runner_->step();
        sync();
        const auto after = broker_.pending(source, group);
        if (!stepped) {
            INFO("step: " << stepped.error().message());
            REQUIRE(is_expected(stepped.error()));
            ++coverage_.step_errors;
            broker_.expire_leases();
            return false;
        }
        if (after == before && after > 0) {
            broker_.expire_leases();  // a refused cycle's lease, or a crashed runner's
        }
        return after < before;
    }

    /// flush_idle until every partition's flush went through (a refused or lost one is
    /// redone at the same clock, where it closes what it would have closed).
    void flush() {
        for (int attempt = 0;; ++attempt) {
            REQUIRE(attempt < 100);
            const auto failed_before = runner_->metrics().cycles_failed;
            const auto flushed = runner_->flush_idle();
            if (flushed && runner_->metrics().cycles_failed == failed_before) {
                break;
            }
            if (!flushed) {
                INFO("flush: " << flushed.error().message());
                REQUIRE(is_expected(flushed.error()));
            }
        }
        model_.flush(clock_.wall_ms());
    }

    void fault() {
        switch (rng_.below(8)) {
            case 0: rebuild(); break;
            case 1: broker_.lose_answers += static_cast<int>(rng_.between(1, 2)); break;
            case 2: broker_.fail_before += static_cast<int>(rng_.between(1, 7)); break;
            case 3: broker_.expire_leases(); break;
            case 4: callback_fault_ = CallbackFault::throw_before_send; break;
            case 5: callback_fault_ = CallbackFault::expire_leases; break;
            case 6:
                broker_.pop_limit_per_partition = rng_.chance(0.5) ? 0 : rng_.between(1, 5);
                break;
            default:
                if (rng_.chance(0.6)) {
                    // Between steps the model has seen every committed event: what the reset
                    // drops is exactly its state now.
                    broker_.clear("prop");
                    model_.clear();
                    was_cleared_ = true;
                }
        }
    }

    void drain() {
        for (int i = 0; broker_.pending(source, group) > 0; ++i) {
            REQUIRE(i < 5'000);
            step();
        }
        sync();
    }

    void check() {
        std::vector<Final> finals;
        std::map<WindowId, Totals> corrections;
        std::vector<Side> side;
        const auto read = [&](const std::string& queue) {
            for (const auto& message : broker_.sink(queue)) {
                const Json p = Json::parse(message.payload_json);
                if (p.contains("late")) {
                    side.emplace_back(message.partition, p.at("key"), p.at("eventTime"),
                                      p.at("value"), p.at("watermark"));
                } else if (p.at("correction").get<bool>()) {
                    corrections[{message.partition, p.at("key"), p.at("windowStart"),
                                 p.at("windowEnd")}]
                        .add(p.at("count"), p.at("sum"), p.at("min"), p.at("max"));
                } else {
                    finals.emplace_back(message.partition, p.at("key"), p.at("windowStart"),
                                        p.at("windowEnd"), p.at("value"), p.at("count"),
                                        p.at("sum"), p.at("min"), p.at("max"));
                }
            }
        };
        read(sink);
        read(late_queue);
        count_runner();
        coverage_.results += finals.size();
        coverage_.corrections += corrections.size();
        coverage_.side += side.size();
        CHECK(broker_.pending(source, group) == 0);
        // Every window closed: a partition keeps only its watermark and name rows.
        for (const auto& [partition, events] : events_) {
            for (const auto& [key, value] : broker_.rows("prop", partition)) {
                INFO("partition " << partition);
                CHECK((key == "m" || key == "p"));
            }
        }
        std::sort(finals.begin(), finals.end());
        std::sort(model_.finals.begin(), model_.finals.end());
        // Every result of the model exactly once (a duplicate or a lost one shows here).
        CHECK(finals.size() == model_.finals.size());
        std::vector<Final> missing;
        std::vector<Final> extra;
        std::set_difference(model_.finals.begin(), model_.finals.end(), finals.begin(),
                            finals.end(), std::back_inserter(missing));
        std::set_difference(finals.begin(), finals.end(), model_.finals.begin(),
                            model_.finals.end(), std::back_inserter(extra));
        for (const auto& [partition, key, start, end, value, count, sum, min, max] : missing) {
            UNSCOPED_INFO("missing " << partition << " '" << key << "' [" << start - base_ << ","
                                     << end - base_ << ") value " << value << " count " << count);
        }
        for (const auto& [partition, key, start, end, value, count, sum, min, max] : extra) {
            UNSCOPED_INFO("unexpected " << partition << " '" << key << "' [" << start - base_ << ","
                                        << end - base_ << ") value " << value << " count "
                                        << count);
        }
        CHECK(missing.empty());
        CHECK(extra.empty());
        CHECK(corrections == model_.corrections);
        std::sort(side.begin(), side.end());
        std::sort(model_.side.begin(), model_.side.end());
        CHECK(side == model_.side);

        // Corrections add up, without the model: in event time, a tumbling or sliding window's
        // result plus its corrections hold every event of the window.
        if (spec_.late == LatePolicy::correction && spec_.time == WindowTime::event &&
            spec_.kind != WindowKind::session && !was_cleared_) {
            std::map<WindowId, Totals> truth;
            const std::int64_t slide =
                spec_.kind == WindowKind::sliding ? spec_.slide_ms : spec_.size_ms;
            for (const auto& [partition, events] : events_) {
                for (const Event& e : events) {
                    for (std::int64_t start = floor_div(e.time, slide) * slide;
                         !e.is_dropped_by_filter && start + spec_.size_ms > e.time;
                         start -= slide) {
                        truth[{partition, e.key, start, start + spec_.size_ms}].add(
                            1, e.value, e.value, e.value);
                    }
                }
            }
            std::map<WindowId, Totals> seen = corrections;
            for (const auto& [partition, key, start, end, value, count, sum, min, max] : finals) {
                seen[{partition, key, start, end}].add(count, sum, min, max);
            }
            CHECK(seen == truth);
        }
    }

    queen::Rng& rng_;
    Coverage& coverage_;
    WindowSpec spec_;
    Model model_;
    FakeStreamsBroker broker_;
    queen::ManualClock clock_;
    std::unique_ptr<Client> client_;
    StreamRunnerOptions options_;
    std::unique_ptr<StreamRunner> runner_;
    int partitions_ = 1;
    bool has_late_queue_ = false;
    bool was_cleared_ = false;
    std::int64_t base_ = 0;
    std::int64_t cursor_ = 0;  // the event clock, from base_
    CallbackFault callback_fault_ = CallbackFault::none;
    std::map<std::string, std::vector<Event>> events_;  // pushed, by partition
    std::map<std::string, std::size_t> applied_;        // events the model applied
};

}  // namespace

TEST_CASE("streams: random streams through the runner under faults match the model",
          "[client][streams][property]") {
    const auto seed = queen::testing::seed_from_env();
    std::printf("streams property: seed=%llu (rerun with QUEEN_SEED=%llu)\n",
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng(seed);
    const auto rounds = queen::testing::env_int("QUEEN_PROPERTY_STEPS", 120);
    Coverage coverage;
    for (std::int64_t round = 0; round < rounds; ++round) {
        const WindowSpec spec = queen::client::testing::random_spec(rng, 0.25);
        INFO("round " << round << ": " << describe(spec));
        Round{rng, spec, coverage}.run();
    }
    std::printf(
        "streams property: %lld rounds, %llu results, %llu corrected windows, %llu late events, "
        "%llu failed cycles, %llu epoch changes, %llu runners rebuilt, %llu steps failed\n",
        static_cast<long long>(rounds), static_cast<unsigned long long>(coverage.results),
        static_cast<unsigned long long>(coverage.corrections),
        static_cast<unsigned long long>(coverage.side),
        static_cast<unsigned long long>(coverage.failed_cycles),
        static_cast<unsigned long long>(coverage.epoch_changes),
        static_cast<unsigned long long>(coverage.rebuilds),
        static_cast<unsigned long long>(coverage.step_errors));
}
