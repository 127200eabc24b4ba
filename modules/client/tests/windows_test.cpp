// client/tests/windows_test.cpp — the window engine (queen/client/windows.hpp) without a broker:
// known inputs and their totals for each window kind, late events under each policy, the idle
// flush, restarts from the rows, independent partitions, and a seeded property test against a
// naive model (every open window's raw events kept, aggregated only when it closes).
#include "queen/client/windows.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "queen/client/errc.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace {

using namespace queen::client;
using namespace std::chrono_literals;

/// The rows of one partition as the broker would hold them after the committed cycles.
struct Store {
    std::map<std::string, std::string> rows;

    void commit(const CycleOutput& out) {
        std::vector<std::string> keys;
        for (const auto& op : out.state_ops) {
            keys.push_back(op.key);
            if (op.is_delete) {
                REQUIRE(rows.erase(op.key) == 1);  // only rows that exist are deleted
            } else {
                REQUIRE(nlohmann::json::accept(op.value_json));
                rows[op.key] = op.value_json;
            }
        }
        std::sort(keys.begin(), keys.end());
        REQUIRE(std::adjacent_find(keys.begin(), keys.end()) == keys.end());  // a key once
    }
    [[nodiscard]] std::vector<StateRow> state() const {
        std::vector<StateRow> out;
        for (const auto& [key, value] : rows) {
            out.push_back({key, value});
        }
        return out;
    }
};

WindowOperator make(const WindowSpec& spec) {
    auto created = WindowOperator::create(spec);
    REQUIRE(created);
    return std::move(*created);
}

WindowOperator restored(const WindowSpec& spec, const Store& store) {
    auto op = WindowOperator::restore(spec, store.state());
    REQUIRE(op);
    return std::move(*op);
}

std::vector<WindowEvent> events_of(std::initializer_list<std::tuple<const char*, int, double>> in) {
    std::vector<WindowEvent> out;
    for (const auto& [key, time, value] : in) {
        out.push_back({key, time, value});
    }
    return out;
}

/// (key, start, end, value, count) of each result, for short expectations.
using Brief = std::tuple<std::string, std::int64_t, std::int64_t, double, std::uint64_t>;
std::vector<Brief> brief(const std::vector<WindowResult>& results, bool corrections = false) {
    std::vector<Brief> out;
    for (const auto& r : results) {
        if (r.is_correction == corrections) {
            out.emplace_back(r.key, r.window_start_ms, r.window_end_ms, r.value, r.count);
        }
    }
    return out;
}

}  // namespace

TEST_CASE("windows: tumbling windows close when the watermark reaches their end", "[windows]") {
    auto spec = WindowSpec::tumbling(10ms);
    spec.aggregation = Aggregation::sum();
    auto op = make(spec);
    Store store;
    auto out = op.apply(events_of({{"a", 1, 1}, {"a", 9, 2}, {"b", 5, 10}}), 0);
    store.commit(out);
    CHECK(out.results.empty());
    CHECK(store.rows.size() == 3);  // w:a:0, w:b:0, m
    CHECK(op.watermark_ms() == 9);
    // The event at 10 raises the watermark to 10 = the end of [0,10): both close, in the same
    // cycle as their rows are deleted and a's [10,20) is written.
    out = op.apply(events_of({{"a", 10, 4}}), 0);
    store.commit(out);
    CHECK(brief(out.results) == std::vector<Brief>{{"a", 0, 10, 3, 2}, {"b", 0, 10, 10, 1}});
    CHECK(store.rows.count("w:a:0") == 0);
    CHECK(store.rows.count("w:b:0") == 0);
    CHECK(store.rows.count("w:a:10") == 1);
}

TEST_CASE("windows: tumbling totals of each aggregation", "[windows]") {
    const auto events = events_of({{"a", 1, 3},
                                   {"a", 4, -1},
                                   {"b", 7, 5},
                                   {"a", 12, 8},
                                   {"a", 19, 2},
                                   {"b", 25, 1},
                                   {"a", 31, 0}});
    struct Case {
        Aggregation aggregation;
        std::vector<Brief> expected;
    };
    const std::vector<Case> cases = {
        {Aggregation::count(),
         {{"a", 0, 10, 2, 2}, {"b", 0, 10, 1, 1}, {"a", 10, 20, 2, 2}, {"b", 20, 30, 1, 1}}},
        {Aggregation::sum(),
         {{"a", 0, 10, 2, 2}, {"b", 0, 10, 5, 1}, {"a", 10, 20, 10, 2}, {"b", 20, 30, 1, 1}}},
        {Aggregation::min(),
         {{"a", 0, 10, -1, 2}, {"b", 0, 10, 5, 1}, {"a", 10, 20, 2, 2}, {"b", 20, 30, 1, 1}}},
        {Aggregation::max(),
         {{"a", 0, 10, 3, 2}, {"b", 0, 10, 5, 1}, {"a", 10, 20, 8, 2}, {"b", 20, 30, 1, 1}}},
        {Aggregation::avg(),
         {{"a", 0, 10, 1, 2}, {"b", 0, 10, 5, 1}, {"a", 10, 20, 5, 2}, {"b", 20, 30, 1, 1}}},
        {Aggregation::custom(1, [](double acc, double v) { return acc * 10 + v; }),
         {{"a", 0, 10, 129, 2}, {"b", 0, 10, 15, 1}, {"a", 10, 20, 182, 2}, {"b", 20, 30, 11, 1}}},
    };
    for (const auto& c : cases) {
        auto spec = WindowSpec::tumbling(10ms);
        spec.aggregation = c.aggregation;
        auto op = make(spec);
        Store store;
        auto out = op.apply(events, 0);
        store.commit(out);
        CHECK(brief(out.results) == c.expected);
        // Only [30,40) of a is open; its row carries a numeric windowEnd; the watermark row.
        REQUIRE(store.rows.size() == 2);
        const auto row = nlohmann::json::parse(store.rows.at("w:a:30"));
        CHECK(row["windowEnd"] == 40);
        CHECK(row["windowStart"] == 30);
        CHECK(row["key"] == "a");
        CHECK(nlohmann::json::parse(store.rows.at("m"))["watermark"] == 31);
    }
}

TEST_CASE("windows: sliding windows count an event in every window holding it", "[windows]") {
    auto spec = WindowSpec::sliding(10ms, 5ms);
    spec.aggregation = Aggregation::sum();
    auto op = make(spec);
    Store store;
    // 3 is in [-5,5) and [0,10); 7 in [0,10) and [5,15); 12 in [5,15) and [10,20).
    auto out = op.apply(events_of({{"k", 3, 1}, {"k", 7, 10}, {"k", 12, 100}}), 0);
    store.commit(out);
    CHECK(brief(out.results) == std::vector<Brief>{{"k", -5, 5, 1, 1}, {"k", 0, 10, 11, 2}});
    out = op.flush(1'000);
    store.commit(out);
    CHECK(brief(out.results) == std::vector<Brief>{{"k", 5, 15, 110, 2}, {"k", 10, 20, 100, 1}});
    CHECK(store.rows.size() == 1);  // only the watermark is left
}

TEST_CASE("windows: sessions grow, merge and close a gap after their last event", "[windows]") {
    auto spec = WindowSpec::session(10ms);
    spec.aggregation = Aggregation::sum();
    spec.allowed_lateness_ms = 10;
    auto op = make(spec);
    Store store;
    auto out = op.apply(events_of({{"u", 0, 1}, {"u", 5, 2}, {"u", 30, 4}}), 0);
    store.commit(out);
    CHECK(brief(out.results) == std::vector<Brief>{{"u", 0, 15, 3, 2}});  // closed by wm 20
    CHECK(store.rows.count("w:u:30") == 1);
    // 45 is a gap or more after 30: a new session (wm 35 keeps [30,40) open); 38 is within a gap
    // of both: they merge into one session [30,55).
    out = op.apply(events_of({{"u", 45, 8}}), 0);
    store.commit(out);
    CHECK(store.rows.count("w:u:45") == 1);
    out = op.apply(events_of({{"u", 38, 16}}), 0);
    store.commit(out);
    CHECK(store.rows.count("w:u:45") == 0);  // the merged session's row replaces both
    CHECK(store.rows.count("w:u:30") == 1);
    CHECK(nlohmann::json::parse(store.rows.at("w:u:30"))["windowEnd"] == 55);
    CHECK(op.flush(64).results.empty());  // wm 54
    out = op.flush(65);
    store.commit(out);
    CHECK(brief(out.results) == std::vector<Brief>{{"u", 30, 55, 28, 3}});
    CHECK(store.rows.size() == 1);
}

TEST_CASE("windows: late events dropped, as corrections, or as a side output", "[windows]") {
    for (const auto policy : {LatePolicy::drop, LatePolicy::correction, LatePolicy::side_output}) {
        auto spec = WindowSpec::tumbling(10ms);
        spec.aggregation = Aggregation::sum();
        spec.allowed_lateness_ms = 5;
        spec.late = policy;
        auto op = make(spec);
        // Watermark 20 - 5 = 15: [0,10) closed; 12 is late but within the lateness: counted.
        auto out = op.apply(events_of({{"a", 3, 1}, {"a", 20, 2}, {"a", 12, 4}}), 0);
        CHECK(brief(out.results) == std::vector<Brief>{{"a", 0, 10, 1, 1}});
        // 7 and 8 belong to the closed [0,10); 16 to the open [10,20).
        out = op.apply(events_of({{"a", 7, 16}, {"a", 8, 32}, {"a", 16, 64}}), 0);
        CHECK(brief(out.results).empty());
        switch (policy) {
            case LatePolicy::drop:
                CHECK(out.dropped == 2);
                CHECK(brief(out.results, true).empty());
                CHECK(out.late_events.empty());
                break;
            case LatePolicy::correction:
                CHECK(out.dropped == 0);
                CHECK(brief(out.results, true) == std::vector<Brief>{{"a", 0, 10, 48, 2}});
                CHECK(out.late_events.empty());
                break;
            case LatePolicy::side_output:
                CHECK(out.dropped == 0);
                CHECK(brief(out.results, true).empty());
                REQUIRE(out.late_events.size() == 2);
                CHECK(out.late_events[0].event.event_time_ms == 7);
                CHECK(out.late_events[1].event.value == 32);
                CHECK(out.late_events[1].watermark_ms == 15);
                break;
        }
        out = op.flush(100);
        CHECK(brief(out.results) == std::vector<Brief>{{"a", 10, 20, 68, 2}, {"a", 20, 30, 2, 1}});
    }
}

TEST_CASE("windows: idle flush closes a quiet partition's windows by the clock", "[windows]") {
    SECTION("event time: at now - allowed lateness") {
        auto spec = WindowSpec::tumbling(1'000ms);
        spec.allowed_lateness_ms = 500;
        auto op = make(spec);
        Store store;
        store.commit(op.apply(events_of({{"a", 100, 0}, {"b", 900, 0}}), 100));
        auto out = op.flush(1'499);
        CHECK(out.results.empty());  // 1499 - 500 < 1000
        out = op.flush(1'500);
        store.commit(out);
        CHECK(brief(out.results) == std::vector<Brief>{{"a", 0, 1000, 1, 1}, {"b", 0, 1000, 1, 1}});
        CHECK(store.rows.size() == 1);
        // The clock raised the watermark: an event at 999 is late now.
        out = op.apply(events_of({{"a", 999, 0}}), 1'500);
        CHECK(out.dropped == 1);
    }
    SECTION("processing time: events get the cycle's now; windows close at now") {
        auto spec = WindowSpec::tumbling(1'000ms);
        spec.time = WindowTime::processing;
        auto op = make(spec);
        auto out = op.apply(events_of({{"a", -77, 0}, {"a", 123456, 0}}), 2'100);
        CHECK(out.results.empty());
        out = op.flush(2'999);
        CHECK(out.results.empty());
        out = op.flush(3'000);
        CHECK(brief(out.results) == std::vector<Brief>{{"a", 2000, 3000, 2, 2}});
    }
}

TEST_CASE("windows: a restart from the rows between cycles gives the same output", "[windows]") {
    for (auto spec :
         {WindowSpec::tumbling(10ms), WindowSpec::sliding(10ms, 3ms), WindowSpec::session(4ms)}) {
        spec.aggregation = Aggregation::avg();
        spec.late = LatePolicy::correction;
        spec.allowed_lateness_ms = 2;
        const std::vector<std::vector<WindowEvent>> cycles = {
            events_of({{"a", 1, 2}, {"b", 2, 4}, {"a", 6, 6}}),
            events_of({{"a", 14, 1}, {"a", 3, 9}, {"b", 11, 3}}),
            events_of({{"b", 12, 5}, {"a", 30, 7}, {"a", 1, 1}}), events_of({{"b", 33, 8}})};
        auto straight = make(spec);
        std::vector<WindowResult> expected;
        for (const auto& cycle : cycles) {
            for (auto& r : straight.apply(cycle, 0).results) {
                expected.push_back(r);
            }
        }
        for (std::size_t crash_at = 0; crash_at < cycles.size(); ++crash_at) {
            INFO("restart after cycle " << crash_at);
            Store store;
            auto op = make(spec);
            std::vector<WindowResult> results;
            for (std::size_t i = 0; i < cycles.size(); ++i) {
                if (i == crash_at) {  // a cycle computed but never committed, then a restart
                    (void)op.apply(cycles[i], 0);
                    op = restored(spec, store);
                }
                auto out = op.apply(cycles[i], 0);
                store.commit(out);
                results.insert(results.end(), out.results.begin(), out.results.end());
                op = restored(spec, store);
            }
            CHECK(results == expected);
            CHECK(op.rows().size() == store.rows.size());
        }
    }
}

TEST_CASE("windows: two partitions keep their own windows and watermarks", "[windows]") {
    auto spec = WindowSpec::tumbling(10ms);
    auto p0 = make(spec);
    auto p1 = make(spec);
    auto out0 = p0.apply(events_of({{"k", 1, 0}, {"k", 50, 0}}), 0);
    auto out1 = p1.apply(events_of({{"k", 2, 0}, {"k", 3, 0}}), 0);
    CHECK(brief(out0.results) == std::vector<Brief>{{"k", 0, 10, 1, 1}});
    CHECK(out1.results.empty());  // p0's watermark of 50 does not close p1's [0,10)
    CHECK(p1.watermark_ms() == 3);
    out1 = p1.apply(events_of({{"k", 4, 0}}), 0);
    CHECK(out1.dropped == 0);
    out1 = p1.flush(10);
    CHECK(brief(out1.results) == std::vector<Brief>{{"k", 0, 10, 3, 3}});
}

TEST_CASE("windows: bad specs and rows are refused with the reason", "[windows]") {
    auto refused = [](const WindowSpec& spec, std::string_view why) {
        auto op = WindowOperator::create(spec);
        REQUIRE_FALSE(op);
        CHECK(op.error().is(Errc::invalid_argument));
        CHECK(op.error().message().find(why) != std::string::npos);
    };
    refused(WindowSpec::tumbling(0ms), "tumbling size");
    refused(WindowSpec::sliding(10ms, 0ms), "slide");
    refused(WindowSpec::sliding(10ms, 11ms), "slide");
    refused(WindowSpec::session(-1ms), "session gap");
    auto late = WindowSpec::tumbling(10ms);
    late.allowed_lateness_ms = -1;
    refused(late, "lateness");
    auto reduce = WindowSpec::tumbling(10ms);
    reduce.aggregation.kind = AggregateKind::reduce;
    refused(reduce, "reduce function");
    auto session = WindowSpec::session(10ms);
    session.aggregation = Aggregation::custom(0, [](double a, double v) { return a + v; });
    refused(session, "merge function");

    const auto spec = WindowSpec::tumbling(10ms);
    for (
        const auto& row : std::vector<StateRow>{
            {"m", "{}"},
            {"m", "[1]"},
            {"w:a:0", "not json"},
            {"w:a:0",
             R"({"key":"a","windowStart":0,"windowEnd":"10","count":1,"sum":0,"min":0,"max":0,"acc":0})"},
            {"w:a:0",
             R"({"key":"b","windowStart":0,"windowEnd":10,"count":1,"sum":0,"min":0,"max":0,"acc":0})"},
            {"w:a:0",
             R"({"key":"a","windowStart":0,"windowEnd":10,"count":0,"sum":0,"min":0,"max":0,"acc":0})"}}) {
        INFO(row.key << " " << row.value_json);
        auto op = WindowOperator::restore(spec, std::vector<StateRow>{row});
        REQUIRE_FALSE(op);
        CHECK(op.error().message().find(row.key) != std::string::npos);
    }
    // Rows of other owners are left alone.
    CHECK(WindowOperator::restore(spec, std::vector<StateRow>{{"offset", "7"}}));

    auto rows = parse_state_rows(
        R"({"rows":[{"key":"m","value":{"watermark":5}},{"key":"x","value":"{\"a\":1}"}]})");
    REQUIRE(rows);
    REQUIRE(rows->size() == 2);
    CHECK((*rows)[0].value_json == R"({"watermark":5})");
    CHECK((*rows)[1].value_json == R"({"a":1})");
    CHECK_FALSE(parse_state_rows("{}"));
    CHECK_FALSE(parse_state_rows(R"({"rows":[{"value":1}]})"));
}

TEST_CASE("windows: state ops and results as the cycle's JSON", "[windows]") {
    CycleOutput out;
    out.state_ops = {{"w:a\"b:0", R"({"windowEnd":10})", false}, {"w:c:5", "", true}};
    CHECK(out.state_ops_json() == R"([{"type":"upsert","key":"w:a\"b:0","value":{"windowEnd":10}},)"
                                  R"({"type":"delete","key":"w:c:5"}])");
    WindowResult result{"k", 0, 10, 2.5, 2, 5, 1, 4, true};
    const auto json = nlohmann::json::parse(result.to_json());
    CHECK(json["windowEnd"] == 10);
    CHECK(json["value"] == 2.5);
    CHECK(json["correction"] == true);
}
