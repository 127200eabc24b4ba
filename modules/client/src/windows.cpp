// client/src/windows.cpp — WindowOperator: windows of one partition kept in a map by (key,
// windowStart) and indexed by windowEnd, so raising the watermark closes windows from the front
// of the index. The manual is in queen/client/windows.hpp.
#include "queen/client/windows.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "queen/client/errc.hpp"

namespace queen::client {

namespace {

using Json = nlohmann::json;

// Division rounding towards minus infinity: windows of negative times start below them too.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    if (a % b != 0 && (a < 0) != (b < 0)) {
        --q;
    }
    return q;
}

queen::Error bad_spec(std::string message) {
    return queen::Error{Errc::invalid_argument, "window spec: " + std::move(message)};
}

queen::Error bad_row(const std::string& key, std::string_view why) {
    return queen::Error{Errc::invalid_argument,
                        "window state row '" + key + "': " + std::string(why)};
}

// Times beyond this could overflow start + size or time - lateness.
constexpr std::int64_t time_limit = std::int64_t{1} << 62;

}  // namespace

WindowSpec WindowSpec::tumbling(std::chrono::milliseconds size) {
    WindowSpec spec;
    spec.kind = WindowKind::tumbling;
    spec.size_ms = size.count();
    return spec;
}

WindowSpec WindowSpec::sliding(std::chrono::milliseconds size, std::chrono::milliseconds slide) {
    WindowSpec spec;
    spec.kind = WindowKind::sliding;
    spec.size_ms = size.count();
    spec.slide_ms = slide.count();
    return spec;
}

WindowSpec WindowSpec::session(std::chrono::milliseconds gap) {
    WindowSpec spec;
    spec.kind = WindowKind::session;
    spec.gap_ms = gap.count();
    return spec;
}

queen::Result<void> validate(const WindowSpec& spec) {
    switch (spec.kind) {
        case WindowKind::tumbling:
            if (spec.size_ms <= 0 || spec.size_ms >= time_limit) {
                return bad_spec("tumbling size must be > 0 ms and < 2^62");
            }
            break;
        case WindowKind::sliding:
            if (spec.size_ms <= 0 || spec.size_ms >= time_limit) {
                return bad_spec("sliding size must be > 0 ms and < 2^62");
            }
            if (spec.slide_ms <= 0 || spec.slide_ms > spec.size_ms) {
                return bad_spec("sliding slide must be > 0 ms and <= the size");
            }
            break;
        case WindowKind::session:
            if (spec.gap_ms <= 0 || spec.gap_ms >= time_limit) {
                return bad_spec("session gap must be > 0 ms and < 2^62");
            }
            break;
        default: return bad_spec("unknown window kind");
    }
    if (spec.allowed_lateness_ms < 0 || spec.allowed_lateness_ms >= time_limit) {
        return bad_spec("allowed lateness must be >= 0 ms and < 2^62");
    }
    if (spec.aggregation.kind == AggregateKind::reduce) {
        if (!spec.aggregation.reduce) {
            return bad_spec("a custom aggregation needs a reduce function");
        }
        if (spec.kind == WindowKind::session && !spec.aggregation.merge) {
            return bad_spec("session windows merge: a custom aggregation needs a merge function");
        }
    }
    return {};
}

std::string window_row_key(std::string_view key, std::int64_t window_start_ms) {
    std::string row = "w:";
    row += key;
    row += ':';
    row += std::to_string(window_start_ms);
    return row;
}

std::string WindowResult::to_json() const {
    Json json = {{"key", key},
                 {"windowStart", window_start_ms},
                 {"windowEnd", window_end_ms},
                 {"value", value},
                 {"count", count},
                 {"sum", sum},
                 {"min", min},
                 {"max", max},
                 {"correction", is_correction}};
    return json.dump();
}

std::string CycleOutput::state_ops_json() const {
    std::string out = "[";
    for (const auto& op : state_ops) {
        if (out.size() > 1) {
            out += ',';
        }
        out += op.is_delete ? R"({"type":"delete","key":)" : R"({"type":"upsert","key":)";
        out += Json(op.key).dump();
        if (!op.is_delete) {
            out += ",\"value\":";
            out += op.value_json;
        }
        out += '}';
    }
    return out + "]";
}

queen::Result<std::vector<StateRow>> parse_state_rows(std::string_view answer_json) {
    Json answer = Json::parse(answer_json, nullptr, false);
    if (answer.is_discarded() || !answer.is_object() || !answer.contains("rows") ||
        !answer["rows"].is_array()) {
        return queen::Error{Errc::bad_response, "state/get: no \"rows\" array"};
    }
    std::vector<StateRow> rows;
    for (const auto& row : answer["rows"]) {
        if (!row.is_object() || !row.contains("key") || !row["key"].is_string() ||
            !row.contains("value")) {
            return queen::Error{Errc::bad_response, "state/get: a row without key or value"};
        }
        const Json& value = row["value"];
        // The value as JSON, or as the JSON text of it (a string holding JSON).
        rows.push_back({row["key"].get<std::string>(),
                        value.is_string() ? value.get<std::string>() : value.dump()});
    }
    return rows;
}

queen::Result<WindowOperator> WindowOperator::create(WindowSpec spec) {
    if (auto valid = validate(spec); !valid) {
        return valid.error();
    }
    return WindowOperator{std::move(spec)};
}

queen::Result<WindowOperator> WindowOperator::restore(WindowSpec spec,
                                                      std::span<const StateRow> rows) {
    auto created = create(std::move(spec));
    if (!created) {
        return created;
    }
    WindowOperator& op = *created;
    for (const auto& row : rows) {
        const bool is_watermark = row.key == watermark_row_key;
        if (!is_watermark && !row.key.starts_with("w:")) {
            continue;  // not ours
        }
        Json value = Json::parse(row.value_json, nullptr, false);
        if (value.is_discarded() || !value.is_object()) {
            return bad_row(row.key, "value is not a JSON object");
        }
        if (is_watermark) {
            if (!value.contains("watermark") || !value["watermark"].is_number_integer()) {
                return bad_row(row.key, "no integer watermark");
            }
            op.watermark_ = value["watermark"].get<std::int64_t>();
            continue;
        }
        for (const char* field : {"windowStart", "windowEnd", "count"}) {
            if (!value.contains(field) || !value[field].is_number_integer()) {
                return bad_row(row.key, std::string("no integer ") + field);
            }
        }
        for (const char* field : {"sum", "min", "max", "acc"}) {
            if (!value.contains(field) || !value[field].is_number()) {
                return bad_row(row.key, std::string("no number ") + field);
            }
        }
        if (!value.contains("key") || !value["key"].is_string()) {
            return bad_row(row.key, "no key");
        }
        const auto key = value["key"].get<std::string>();
        const auto start = value["windowStart"].get<std::int64_t>();
        Accumulator accumulator;
        accumulator.end = value["windowEnd"].get<std::int64_t>();
        accumulator.count = value["count"].get<std::uint64_t>();
        accumulator.sum = value["sum"].get<double>();
        accumulator.min = value["min"].get<double>();
        accumulator.max = value["max"].get<double>();
        accumulator.acc = value["acc"].get<double>();
        if (window_row_key(key, start) != row.key || accumulator.end <= start ||
            accumulator.count == 0) {
            return bad_row(row.key, "key, windowStart, windowEnd or count do not fit the row");
        }
        op.windows_[{key, start}] = accumulator;
        op.by_end_.emplace(accumulator.end, key, start);
        op.persisted_.insert(row.key);
    }
    return created;
}

CycleOutput WindowOperator::apply(std::span<const WindowEvent> events, std::int64_t now_ms) {
    CycleOutput out;
    LateMap late;
    const auto before = watermark_;
    const bool is_processing = spec_.time == WindowTime::processing;
    if (is_processing) {
        raise_watermark(now_ms, out);
    } else {
        close_ripe(out);  // nothing, unless rows were written past their watermark
    }
    for (const auto& event : events) {
        const std::int64_t time = is_processing ? now_ms : event.event_time_ms;
        if (spec_.kind == WindowKind::session) {
            add_session(event, time, out, late);
        } else {
            add(event, time, out, late);
        }
        if (!is_processing) {
            raise_watermark(time - spec_.allowed_lateness_ms, out);
        }
    }
    finish(out, late, before);
    return out;
}

CycleOutput WindowOperator::flush(std::int64_t now_ms) {
    CycleOutput out;
    LateMap late;
    const auto before = watermark_;
    raise_watermark(
        spec_.time == WindowTime::processing ? now_ms : now_ms - spec_.allowed_lateness_ms, out);
    finish(out, late, before);
    return out;
}

std::vector<StateRow> WindowOperator::rows() const {
    std::vector<StateRow> rows;
    for (const auto& [id, accumulator] : windows_) {
        rows.push_back({window_row_key(id.first, id.second), row_value(id, accumulator)});
    }
    if (watermark_) {
        rows.push_back({std::string(watermark_row_key), Json{{"watermark", *watermark_}}.dump()});
    }
    std::sort(rows.begin(), rows.end(),
              [](const StateRow& a, const StateRow& b) { return a.key < b.key; });
    return rows;
}

std::string WindowOperator::row_value(const WindowId& id, const Accumulator& accumulator) {
    const Json value = {{"key", id.first},
                        {"windowStart", id.second},
                        {"windowEnd", accumulator.end},
                        {"count", accumulator.count},
                        {"sum", accumulator.sum},
                        {"min", accumulator.min},
                        {"max", accumulator.max},
                        {"acc", accumulator.acc}};
    return value.dump();
}

void WindowOperator::raise_watermark(std::int64_t to, CycleOutput& out) {
    if (!watermark_ || to > *watermark_) {
        watermark_ = to;
    }
    close_ripe(out);
}

void WindowOperator::close_ripe(CycleOutput& out) {
    while (watermark_ && !by_end_.empty() && std::get<0>(*by_end_.begin()) <= *watermark_) {
        const auto [end, key, start] = *by_end_.begin();
        out.results.push_back(result_of(key, start, windows_.at({key, start})));
        erase({key, start});
    }
}

void WindowOperator::fold(Accumulator& accumulator, double value) const {
    if (accumulator.count == 0) {
        accumulator.min = value;
        accumulator.max = value;
    } else {
        accumulator.min = std::min(accumulator.min, value);
        accumulator.max = std::max(accumulator.max, value);
    }
    ++accumulator.count;
    accumulator.sum += value;
    if (spec_.aggregation.kind == AggregateKind::reduce) {
        accumulator.acc = spec_.aggregation.reduce(accumulator.acc, value);
    }
}

void WindowOperator::late_event(const WindowEvent& event, std::int64_t time, CycleOutput& out) {
    switch (spec_.late) {
        case LatePolicy::drop: ++out.dropped; break;
        case LatePolicy::side_output: {
            LateEvent late{event, *watermark_};
            late.event.event_time_ms = time;
            out.late_events.push_back(std::move(late));
            break;
        }
        case LatePolicy::correction: break;  // the caller folded it into its window's delta
    }
}

void WindowOperator::add(const WindowEvent& event, std::int64_t time, CycleOutput& out,
                         LateMap& late) {
    const std::int64_t size = spec_.size_ms;
    const std::int64_t slide = spec_.kind == WindowKind::sliding ? spec_.slide_ms : size;
    bool is_late = false;
    // The windows holding `time` start at the multiples of `slide` in (time - size, time].
    for (std::int64_t start = floor_div(time, slide) * slide; start > time - size; start -= slide) {
        const std::int64_t end = start + size;
        if (watermark_ && end <= *watermark_) {
            is_late = true;
            if (spec_.late == LatePolicy::correction) {
                auto [it, is_new] = late.try_emplace({event.key, start, end});
                if (is_new) {
                    it->second.end = end;
                    it->second.acc = spec_.aggregation.initial;
                }
                fold(it->second, event.value);
            }
            continue;
        }
        const WindowId id{event.key, start};
        auto [it, is_new] = windows_.try_emplace(id);
        if (is_new) {
            it->second.end = end;
            it->second.acc = spec_.aggregation.initial;
            by_end_.emplace(end, event.key, start);
        }
        fold(it->second, event.value);
        touched_.insert(id);
    }
    if (is_late) {
        late_event(event, time, out);
    }
}

void WindowOperator::add_session(const WindowEvent& event, std::int64_t time, CycleOutput& out,
                                 LateMap& late) {
    const std::int64_t gap = spec_.gap_ms;
    // The open sessions of the key that [time, time + gap) overlaps: the event joins them all.
    std::vector<WindowId> joined;
    for (auto it = windows_.lower_bound({event.key, std::numeric_limits<std::int64_t>::min()});
         it != windows_.end() && it->first.first == event.key; ++it) {
        if (it->first.second < time + gap && time < it->second.end) {
            joined.push_back(it->first);
        }
    }
    if (joined.empty() && watermark_ && time + gap <= *watermark_) {
        if (spec_.late == LatePolicy::correction) {
            auto [it, is_new] = late.try_emplace({event.key, time, time + gap});
            if (is_new) {
                it->second.end = time + gap;
                it->second.acc = spec_.aggregation.initial;
            }
            fold(it->second, event.value);
        }
        late_event(event, time, out);
        return;
    }
    std::int64_t start = time;
    Accumulator merged;
    merged.end = time + gap;
    merged.acc = spec_.aggregation.initial;
    for (const auto& id : joined) {  // in windowStart order
        const Accumulator part = windows_.at(id);
        start = std::min(start, id.second);
        merged.end = std::max(merged.end, part.end);
        merged.min = merged.count == 0 ? part.min : std::min(merged.min, part.min);
        merged.max = merged.count == 0 ? part.max : std::max(merged.max, part.max);
        merged.count += part.count;
        merged.sum += part.sum;
        if (spec_.aggregation.kind == AggregateKind::reduce) {
            merged.acc = spec_.aggregation.merge(merged.acc, part.acc);
        }
        erase(id);
    }
    fold(merged, event.value);
    put({event.key, start}, merged);
}

void WindowOperator::put(const WindowId& id, Accumulator accumulator) {
    if (auto it = windows_.find(id); it != windows_.end()) {
        by_end_.erase({it->second.end, id.first, id.second});
    }
    by_end_.emplace(accumulator.end, id.first, id.second);
    windows_[id] = accumulator;
    touched_.insert(id);
}

void WindowOperator::erase(const WindowId& id) {
    if (auto it = windows_.find(id); it != windows_.end()) {
        by_end_.erase({it->second.end, id.first, id.second});
        windows_.erase(it);
    }
    touched_.insert(id);
}

void WindowOperator::finish(CycleOutput& out, LateMap& late,
                            std::optional<std::int64_t> watermark_before) {
    for (const auto& id : touched_) {
        auto row_key = window_row_key(id.first, id.second);
        if (auto it = windows_.find(id); it != windows_.end()) {
            out.state_ops.push_back({row_key, row_value(id, it->second), false});
            persisted_.insert(std::move(row_key));
        } else if (persisted_.erase(row_key) > 0) {
            // Only rows the broker holds are deleted: a window opened and closed in one cycle
            // never had one.
            out.state_ops.push_back({std::move(row_key), {}, true});
        }
    }
    touched_.clear();
    for (const auto& [window, accumulator] : late) {
        auto result = result_of(std::get<0>(window), std::get<1>(window), accumulator);
        result.is_correction = true;
        out.results.push_back(std::move(result));
    }
    if (watermark_ != watermark_before) {
        out.state_ops.push_back(
            {std::string(watermark_row_key), Json{{"watermark", *watermark_}}.dump(), false});
    }
}

WindowResult WindowOperator::result_of(const std::string& key, std::int64_t start,
                                       const Accumulator& accumulator) const {
    WindowResult result;
    result.key = key;
    result.window_start_ms = start;
    result.window_end_ms = accumulator.end;
    result.count = accumulator.count;
    result.sum = accumulator.sum;
    result.min = accumulator.min;
    result.max = accumulator.max;
    switch (spec_.aggregation.kind) {
        case AggregateKind::count: result.value = static_cast<double>(accumulator.count); break;
        case AggregateKind::sum: result.value = accumulator.sum; break;
        case AggregateKind::min: result.value = accumulator.min; break;
        case AggregateKind::max: result.value = accumulator.max; break;
        case AggregateKind::avg:
            result.value = accumulator.sum / static_cast<double>(accumulator.count);
            break;
        case AggregateKind::reduce: result.value = accumulator.acc; break;
    }
    return result;
}

}  // namespace queen::client
