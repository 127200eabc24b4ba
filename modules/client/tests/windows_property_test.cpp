// client/tests/windows_property_test.cpp — the window engine against a naive model of the same
// semantics (the manual in queen/client/windows.hpp): seeded random event streams, batched into
// cycles at random, with random idle flushes, restarts from the committed rows and cycles that
// never commit (the operator thrown away and the same events redone). The model keeps the raw
// events of every open window and aggregates only when a window closes; sessions are recomputed
// from the raw events each time. QUEEN_SEED replays; QUEEN_PROPERTY_STEPS sets the rounds.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "queen/client/windows.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "test_helpers.hpp"

namespace {

using namespace queen::client;

using WindowKey = std::tuple<std::string, std::int64_t, std::int64_t>;  // key, start, end

struct Totals {
    std::uint64_t count = 0;
    double sum = 0;
    double min = 0;
    double max = 0;
    friend bool operator==(const Totals&, const Totals&) = default;
};

void add_to(Totals& t, std::uint64_t count, double sum, double min, double max) {
    t.min = t.count == 0 ? min : std::min(t.min, min);
    t.max = t.count == 0 ? max : std::max(t.max, max);
    t.count += count;
    t.sum += sum;
}

struct Model {
    WindowSpec spec;
    std::optional<std::int64_t> watermark;
    std::map<std::pair<std::string, std::int64_t>, std::vector<double>> windows;  // key, start
    std::map<std::string, std::vector<std::pair<std::int64_t, double>>> session_events;
    std::vector<WindowResult> finals;
    std::map<WindowKey, Totals> corrections;
    std::vector<std::tuple<std::string, std::int64_t, double>> side;
    std::uint64_t dropped = 0;

    [[nodiscard]] WindowResult result(const std::string& key, std::int64_t start, std::int64_t end,
                                      const std::vector<double>& values) const {
        WindowResult r;
        r.key = key;
        r.window_start_ms = start;
        r.window_end_ms = end;
        r.count = values.size();
        double acc = spec.aggregation.initial;
        r.min = *std::min_element(values.begin(), values.end());
        r.max = *std::max_element(values.begin(), values.end());
        for (double v : values) {
            r.sum += v;
            if (spec.aggregation.reduce) {
                acc = spec.aggregation.reduce(acc, v);
            }
        }
        switch (spec.aggregation.kind) {
            case AggregateKind::count: r.value = static_cast<double>(r.count); break;
            case AggregateKind::sum: r.value = r.sum; break;
            case AggregateKind::min: r.value = r.min; break;
            case AggregateKind::max: r.value = r.max; break;
            case AggregateKind::avg: r.value = r.sum / static_cast<double>(r.count); break;
            case AggregateKind::reduce: r.value = acc; break;
        }
        return r;
    }

    // The sessions of a key: its events sorted by time, split where two are a gap or more apart.
    struct Session {
        std::int64_t start, last;
        std::vector<std::size_t> members;  // indexes into the key's events, arrival order
    };
    [[nodiscard]] std::vector<Session> sessions(
        const std::vector<std::pair<std::int64_t, double>>& events) const {
        std::vector<std::size_t> order(events.size());
        for (std::size_t i = 0; i < order.size(); ++i) {
            order[i] = i;
        }
        std::stable_sort(order.begin(), order.end(),
                         [&](auto a, auto b) { return events[a].first < events[b].first; });
        std::vector<Session> out;
        for (auto i : order) {
            if (out.empty() || events[i].first - out.back().last >= spec.gap_ms) {
                out.push_back({events[i].first, events[i].first, {}});
            }
            out.back().last = events[i].first;
            out.back().members.push_back(i);
        }
        for (auto& s : out) {
            std::sort(s.members.begin(), s.members.end());
        }
        return out;
    }

    void late(const std::string& key, double v, std::int64_t start, std::int64_t end,
              bool& is_late) {
        is_late = true;
        if (spec.late == LatePolicy::correction) {
            add_to(corrections[{key, start, end}], 1, v, v, v);
        }
    }

    void event(const std::string& key, std::int64_t t, double v) {
        bool is_late = false;
        if (spec.kind == WindowKind::session) {
            bool joins = false;
            for (const auto& [time, value] : session_events[key]) {
                joins = joins || (time - spec.gap_ms < t && t < time + spec.gap_ms);
            }
            if (!joins && watermark && t + spec.gap_ms <= *watermark) {
                late(key, v, t, t + spec.gap_ms, is_late);
            } else {
                session_events[key].emplace_back(t, v);
            }
        } else {
            const auto size = spec.size_ms;
            const auto slide = spec.kind == WindowKind::sliding ? spec.slide_ms : size;
            // Every multiple of the slide near t, kept when the window holds t.
            for (std::int64_t k = t / slide - size / slide - 2; k <= t / slide + 2; ++k) {
                const std::int64_t start = k * slide;
                if (start <= t && t < start + size) {
                    if (watermark && start + size <= *watermark) {
                        late(key, v, start, start + size, is_late);
                    } else {
                        windows[{key, start}].push_back(v);
                    }
                }
            }
        }
        if (is_late && spec.late == LatePolicy::drop) {
            ++dropped;
        }
        if (is_late && spec.late == LatePolicy::side_output) {
            side.emplace_back(key, t, v);
        }
    }

    void raise(std::int64_t to) {
        if (!watermark || to > *watermark) {
            watermark = to;
        }
        for (auto it = windows.begin(); it != windows.end();) {
            const auto end = it->first.second + spec.size_ms;
            if (end <= *watermark) {
                finals.push_back(result(it->first.first, it->first.second, end, it->second));
                it = windows.erase(it);
            } else {
                ++it;
            }
        }
        for (auto& [key, events] : session_events) {
            std::vector<std::pair<std::int64_t, double>> kept;
            std::vector<bool> closed(events.size(), false);
            for (const auto& s : sessions(events)) {
                if (s.last + spec.gap_ms <= *watermark) {
                    std::vector<double> values;
                    for (auto i : s.members) {
                        values.push_back(events[i].second);
                        closed[i] = true;
                    }
                    finals.push_back(result(key, s.start, s.last + spec.gap_ms, values));
                }
            }
            for (std::size_t i = 0; i < events.size(); ++i) {
                if (!closed[i]) {
                    kept.push_back(events[i]);
                }
            }
            events = std::move(kept);
        }
    }

    void apply(const std::vector<WindowEvent>& batch, std::int64_t now) {
        const bool is_processing = spec.time == WindowTime::processing;
        if (is_processing) {
            raise(now);
        }
        for (const auto& e : batch) {
            const auto t = is_processing ? now : e.event_time_ms;
            event(e.key, t, e.value);
            if (!is_processing) {
                raise(t - spec.allowed_lateness_ms);
            }
        }
    }
    void flush(std::int64_t now) {
        raise(spec.time == WindowTime::processing ? now : now - spec.allowed_lateness_ms);
    }
};

std::string describe(const WindowSpec& spec) {
    return "kind=" + std::to_string(static_cast<int>(spec.kind)) +
           " size=" + std::to_string(spec.size_ms) + " slide=" + std::to_string(spec.slide_ms) +
           " gap=" + std::to_string(spec.gap_ms) +
           " time=" + std::to_string(static_cast<int>(spec.time)) +
           " lateness=" + std::to_string(spec.allowed_lateness_ms) +
           " late=" + std::to_string(static_cast<int>(spec.late)) +
           " aggregation=" + std::to_string(static_cast<int>(spec.aggregation.kind));
}

bool by_window(const WindowResult& a, const WindowResult& b) {
    return std::tie(a.key, a.window_start_ms, a.window_end_ms) <
           std::tie(b.key, b.window_start_ms, b.window_end_ms);
}

}  // namespace

TEST_CASE("windows: random streams, batches, flushes and restarts match the model",
          "[windows][property]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng(seed);
    const auto rounds = queen::testing::env_int("QUEEN_PROPERTY_STEPS", 300);
    const char* const keys[] = {"a", "b", "c:d", ""};
    for (std::int64_t round = 0; round < rounds; ++round) {
        const WindowSpec spec = queen::client::testing::random_spec(rng, 0.2);
        INFO("round " << round << ": " << describe(spec));
        Model model;
        model.spec = spec;
        auto created = WindowOperator::create(spec);
        REQUIRE(created);
        WindowOperator op = std::move(*created);
        std::map<std::string, std::string> store;  // the committed rows
        std::vector<WindowResult> finals;
        std::map<WindowKey, Totals> corrections;
        std::vector<std::tuple<std::string, std::int64_t, double>> side;
        std::uint64_t dropped = 0;
        auto restart = [&] {
            std::vector<StateRow> rows;
            for (const auto& [key, value] : store) {
                rows.push_back({key, value});
            }
            auto restored = WindowOperator::restore(spec, rows);
            REQUIRE(restored);
            op = std::move(*restored);
        };
        auto commit = [&](const CycleOutput& out) {
            for (const auto& op_ : out.state_ops) {
                if (op_.is_delete) {
                    REQUIRE(store.erase(op_.key) == 1);
                } else {
                    store[op_.key] = op_.value_json;
                }
            }
            for (const auto& r : out.results) {
                if (r.is_correction) {
                    add_to(corrections[{r.key, r.window_start_ms, r.window_end_ms}], r.count, r.sum,
                           r.min, r.max);
                } else {
                    finals.push_back(r);
                }
            }
            for (const auto& l : out.late_events) {
                side.emplace_back(l.event.key, l.event.event_time_ms, l.event.value);
            }
            dropped += out.dropped;
        };

        std::int64_t clock = static_cast<std::int64_t>(rng.below(100)) - 50;
        const auto events = rng.between(0, 120);
        std::uint64_t sent = 0;
        while (sent < events) {
            std::vector<WindowEvent> batch(std::min<std::uint64_t>(rng.below(8), events - sent));
            for (auto& e : batch) {
                clock += static_cast<std::int64_t>(rng.below(6));
                e.key = keys[rng.below(std::size(keys))];
                // Mostly near the clock; some far behind it (late ones).
                e.event_time_ms = clock - static_cast<std::int64_t>(
                                              rng.chance(0.15) ? rng.below(80) : rng.below(4));
                e.value = static_cast<double>(static_cast<std::int64_t>(rng.below(41)) - 20);
            }
            sent += batch.size();
            // The cycle's clock mostly moves forward; sometimes it goes back a little.
            const std::int64_t now = clock + static_cast<std::int64_t>(rng.below(10)) - 3;
            const bool is_flush = rng.chance(0.1);
            if (rng.chance(0.1)) {  // computed, never committed: restart and redo it
                (void)(is_flush ? op.flush(now) : op.apply(batch, now));
                restart();
            }
            if (is_flush) {
                model.flush(now);
                commit(op.flush(now));
            }
            model.apply(batch, now);
            commit(op.apply(batch, now));
            if (rng.chance(0.2)) {
                restart();
            }
            // The operator's own view of its rows is what the broker holds.
            const auto rows = op.rows();
            REQUIRE(rows.size() == store.size());
            for (const auto& row : rows) {
                REQUIRE(store.count(row.key) == 1);
                REQUIRE(nlohmann::json::parse(store[row.key]) ==
                        nlohmann::json::parse(row.value_json));
            }
        }
        const std::int64_t end = clock + 1'000'000;
        model.flush(end);
        commit(op.flush(end));
        // Everything closed: only the watermark row is left.
        CHECK(store.size() <= 1);
        CHECK(op.open_windows() == 0);

        std::stable_sort(finals.begin(), finals.end(), by_window);
        std::stable_sort(model.finals.begin(), model.finals.end(), by_window);
        REQUIRE(finals.size() == model.finals.size());
        for (std::size_t i = 0; i < finals.size(); ++i) {
            INFO("window " << finals[i].key << " [" << finals[i].window_start_ms << ","
                           << finals[i].window_end_ms << ") vs model [" << model.finals[i].key
                           << " " << model.finals[i].window_start_ms << ","
                           << model.finals[i].window_end_ms << ")");
            REQUIRE(finals[i] == model.finals[i]);
        }
        CHECK(corrections == model.corrections);
        std::sort(side.begin(), side.end());
        std::sort(model.side.begin(), model.side.end());
        CHECK(side == model.side);
        CHECK(dropped == model.dropped);
    }
}
