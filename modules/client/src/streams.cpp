// client/src/streams.cpp — the streams API: the Stream chain's builder and hash, and the runner's
// loop over POST /streams/v1/{queries,cycle,state/get} (see streams.hpp, the manual).
#include "queen/client/streams.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>
#include <utility>

#include "json_util.hpp"
#include "queen/client/errc.hpp"
#include "queen/core/json_scan.hpp"

namespace queen::client {

using detail::Json;

namespace {

// The row that names a partition, so a runner that learns of a partition only by its id (the
// admin route's listing) can push its outputs to the right sink partition. restore() ignores it.
constexpr std::string_view name_row_key = "p";
constexpr std::int64_t retry_delay_max_ms = 5'000;

std::uint64_t fnv1a(std::string_view text, std::uint64_t hash) {
    for (const char c : text) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ULL;
    }
    return hash;
}

std::string hex16(std::uint64_t value) {
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(value));
    return out;
}

// A transactionId for a sink message: 128 bits of two FNV-1a hashes of the parts (with their
// lengths, so ("ab","c") and ("a","bc") differ). Deterministic, so a redone cycle's pushes carry
// the same ids and the broker deduplicates them.
std::string derived_id(std::initializer_list<std::string_view> parts) {
    std::uint64_t low = 14695981039346656037ULL;
    std::uint64_t high = 0x9e3779b97f4a7c15ULL;
    for (const auto part : parts) {
        const std::string length = std::to_string(part.size()) + ":";
        low = fnv1a(part, fnv1a(length, low));
        high = fnv1a(part, fnv1a(length, high));
    }
    return "qs-" + hex16(high) + hex16(low);
}

// Member `field` of the JSON object `event` as raw JSON text ("" when absent or not an object).
std::string_view raw_member(std::string_view event, std::string_view field) {
    std::string_view object;
    if (!json::scan_json(event, object)) {
        return {};
    }
    std::string_view found;
    json::for_each_member(object, [&](std::string_view key, std::string_view raw) {
        if (key != field) {
            return true;
        }
        found = raw;
        return false;
    });
    return found;
}

// The window engine's times are |t| < 2^62 ms (queen/client/windows.hpp).
constexpr std::int64_t event_time_abs_max = std::int64_t{1} << 62;

std::optional<double> number_of(std::string_view raw) {
    if (raw.empty() || !(raw.front() == '-' || (raw.front() >= '0' && raw.front() <= '9'))) {
        return std::nullopt;
    }
    const std::string text{raw};
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    return end == text.c_str() ? std::nullopt : std::optional<double>{value};
}

// Days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// Epoch ms of an API time ("2026-12-03T10:00:01.067Z", or six fraction digits), or nullopt.
std::optional<std::int64_t> iso_to_ms(const std::string& text) {
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, consumed = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                    &second, &consumed) != 6 ||
        month < 1 || month > 12 || day < 1 || day > 31) {
        return std::nullopt;
    }
    std::int64_t ms = 0;
    std::size_t at = static_cast<std::size_t>(consumed);
    if (at < text.size() && text[at] == '.') {
        std::int64_t scale = 100;
        for (++at; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at, scale /= 10) {
            ms += (text[at] - '0') * scale;
        }
    }
    const std::int64_t days =
        days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
    return ((days * 24 + hour) * 60 + minute) * 60'000 + second * 1'000 + ms;
}

const char* kind_name(WindowKind kind) {
    switch (kind) {
        case WindowKind::tumbling: return "tumbling";
        case WindowKind::sliding: return "sliding";
        case WindowKind::session: return "session";
    }
    return "?";
}

queen::Error user_error(std::string_view step, const std::exception_ptr& thrown) {
    std::string why = "unknown exception";
    try {
        std::rethrow_exception(thrown);
    } catch (const std::exception& e) {
        why = e.what();
    } catch (...) {
    }
    return queen::Error{Errc::rejected, "stream " + std::string{step} + " threw: " + why};
}

Json parsed(std::string_view text) {
    return Json::parse(text, nullptr, false);  // a discarded value never reaches the broker:
}  // every text here was written or checked by us

}  // namespace

// ---- Stream ----

Stream Stream::from(std::string source_queue) {
    Stream stream;
    stream.name_ = source_queue;
    stream.source_ = std::move(source_queue);
    return stream;
}

Stream& Stream::named(std::string name) {
    name_ = std::move(name);
    return *this;
}

Stream& Stream::version(std::string version) {
    version_ = std::move(version);
    return *this;
}

Stream& Stream::map(MapFn map) {
    steps_.push_back(Step{StepKind::map, {}, std::move(map), {}, {}});
    return *this;
}

Stream& Stream::filter(FilterFn filter) {
    steps_.push_back(Step{StepKind::filter, {}, {}, std::move(filter), {}});
    return *this;
}

Stream& Stream::flat_map(FlatMapFn flat_map) {
    steps_.push_back(Step{StepKind::flat_map, {}, {}, {}, std::move(flat_map)});
    return *this;
}

Stream& Stream::key_by(KeyFn key) {
    steps_.push_back(Step{StepKind::key_by, {}, std::move(key), {}, {}});
    return *this;
}

Stream& Stream::key_by_field(std::string field) {
    KeyFn key = [field](std::string_view event) {
        return json::raw_to_text(raw_member(event, field));
    };
    steps_.push_back(Step{StepKind::key_by, std::move(field), std::move(key), {}, {}});
    return *this;
}

Stream& Stream::event_time(TimeFn time) {
    time_ = std::move(time);
    time_field_.clear();
    return *this;
}

Stream& Stream::event_time_field(std::string field) {
    time_ = {};
    time_field_ = std::move(field);
    return *this;
}

Stream& Stream::window(WindowSpec spec) {
    window_ = std::move(spec);
    return *this;
}

Stream& Stream::aggregate(Aggregation aggregation, ValueFn value) {
    aggregation_ = std::move(aggregation);
    has_aggregation_ = true;
    value_ = std::move(value);
    value_field_.clear();
    return *this;
}

Stream& Stream::aggregate_field(Aggregation aggregation, std::string field) {
    aggregate(std::move(aggregation));
    value_field_ = std::move(field);
    return *this;
}

Stream& Stream::to_queue(std::string queue, std::string partition) {
    sink_ = std::move(queue);
    sink_partition_ = std::move(partition);
    return *this;
}

Stream& Stream::late_to_queue(std::string queue) {
    late_queue_ = std::move(queue);
    return *this;
}

Stream& Stream::for_each(Callback callback, CallbackDelivery delivery) {
    callback_ = std::move(callback);
    delivery_ = delivery;
    return *this;
}

std::optional<WindowSpec> Stream::window_spec() const {
    if (!window_) {
        return std::nullopt;
    }
    WindowSpec spec = *window_;
    if (has_aggregation_) {
        spec.aggregation = aggregation_;
    }
    return spec;
}

queen::Status Stream::validate() const {
    const auto invalid = [](std::string what) {
        return queen::Error{Errc::invalid_argument, "stream: " + std::move(what)};
    };
    if (source_.empty()) {
        return invalid("a source queue is required");
    }
    if (name_.empty()) {
        return invalid("a name is required");
    }
    if (sink_.empty() && !callback_) {
        return invalid("a sink is required: to_queue() or for_each()");
    }
    for (const auto& step : steps_) {
        if (!step.map && !step.filter && !step.flat_map) {
            return invalid("a map, filter, flat_map or key_by step without a function");
        }
    }
    if (!window_) {
        if (has_aggregation_ || time_ || !time_field_.empty() || !late_queue_.empty()) {
            return invalid("aggregate(), event_time() and late_to_queue() need a window()");
        }
        return {};
    }
    const auto spec = window_spec();
    QUEEN_TRY(queen::client::validate(*spec));
    if (spec->aggregation.kind != AggregateKind::count && !value_ && value_field_.empty()) {
        return invalid("aggregate() needs a value function or field (only count needs none)");
    }
    if (spec->time == WindowTime::processing && (time_ || !time_field_.empty())) {
        return invalid("event_time() needs an event-time window (the spec is processing time)");
    }
    if (!late_queue_.empty() && spec->late != LatePolicy::side_output) {
        return invalid("late_to_queue() needs LatePolicy::side_output");
    }
    return {};
}

std::string Stream::config_hash() const {
    // The structure only: lambdas have no stable identity, the user's version stands for them.
    std::string canon = "queen-streams/1;version=" + version_ + ";steps=";
    for (const auto& step : steps_) {
        static constexpr const char* names[] = {"map", "filter", "flat_map", "key_by"};
        canon += names[static_cast<int>(step.kind)];
        canon += step.field.empty() ? "," : "(field:" + step.field + "),";
    }
    if (const auto spec = window_spec()) {
        canon += ";window=" + std::string{kind_name(spec->kind)} + "," +
                 std::to_string(spec->size_ms) + "," + std::to_string(spec->slide_ms) + "," +
                 std::to_string(spec->gap_ms) + "," +
                 (spec->time == WindowTime::event ? "event" : "processing") + "," +
                 std::to_string(spec->allowed_lateness_ms) + "," +
                 std::to_string(static_cast<int>(spec->late)) +
                 ";aggregate=" + std::to_string(static_cast<int>(spec->aggregation.kind)) + "," +
                 Json(spec->aggregation.initial).dump() +
                 ";time=" + (time_ ? "fn" : "field:" + time_field_) +
                 ";value=" + (value_ ? "fn" : "field:" + value_field_);
    }
    return hex16(fnv1a(canon, 14695981039346656037ULL));
}

// ---- StreamRunner ----

struct StreamRunner::Item {
    std::string json;
    std::string key;
};

// One cycle being built: its state ops, sink pushes and outputs, and the ack.
struct StreamRunner::Cycle {
    std::vector<StateOp> state_ops;
    Json push_items = Json::array();
    std::vector<StreamOutput> outputs;
    std::string ack_transaction_id;  // empty: no ack (an idle flush)
    std::string ack_lease_id;
    std::uint64_t acked = 0;  // the source messages the ack closes
    std::uint64_t late = 0;
    std::uint64_t dropped = 0;
};

StreamRunner::StreamRunner(Client& client, Stream stream, StreamRunnerOptions options,
                           const queen::Clock& clock)
    : client_(client),
      stream_(std::move(stream)),
      options_(std::move(options)),
      clock_(clock),
      config_hash_(stream_.config_hash()),
      group_(options_.consumer_group.empty() ? "streams." + stream_.name()
                                             : options_.consumer_group),
      last_flush_ns_(clock.monotonic_ns()) {
    // Unique per runner: the client's UUIDv7 generator (its injected randomness and clock).
    token_prefix_ = client_.generate_uuid_v7() + ":";
}

StreamMetrics StreamRunner::metrics() const {
    const std::lock_guard lock{metrics_mutex_};
    return metrics_;
}

void StreamRunner::bump(std::uint64_t StreamMetrics::*counter, std::uint64_t by) {
    const std::lock_guard lock{metrics_mutex_};
    metrics_.*counter += by;
}

bool StreamRunner::pause(std::int64_t ms) {
    // Nothing notifies: the wait ends after `ms`, or at once when run_until's stop is requested.
    std::unique_lock lock{pause_mutex_};
    pause_changed_.wait_for(lock, stop_, std::chrono::milliseconds{ms}, [] { return false; });
    return !stop_.stop_requested();
}

queen::Result<std::string> StreamRunner::call(std::string_view target, const std::string& body) {
    // Every streams call may be repeated: a register is idempotent, state/get reads, and a
    // cycle is all or nothing (a repeat of a committed one is refused by its ack, or finds its
    // pushes deduplicated and its state ops already there).
    for (std::uint32_t attempt = 0;; ++attempt) {
        auto answer = client_.post_json(target, body);
        if (answer || !is_retryable(answer.error()) || attempt >= options_.retry_attempts) {
            return answer;
        }
        bump(&StreamMetrics::retries);
        const std::int64_t delay = std::min(
            options_.retry_delay_ms << std::min<std::uint32_t>(attempt, 16), retry_delay_max_ms);
        if (!pause(delay)) {
            return answer;  // run_until's stop came during the backoff
        }
    }
}

queen::Result<StreamQueryInfo> StreamRunner::start() {
    return register_query(options_.is_reset);
}

queen::Result<StreamQueryInfo> StreamRunner::register_query(bool is_reset) {
    QUEEN_TRY(stream_.validate());
    Json body{{"name", stream_.name()},
              {"source_queue", stream_.source_queue()},
              {"config_hash", config_hash_},
              {"reset", is_reset}};
    if (!stream_.sink_queue().empty()) {
        body["sink_queue"] = stream_.sink_queue();
    }
    auto answer = call("/streams/v1/queries", body.dump());
    if (!answer) {
        if (http_status_of(answer.error()) == 409) {
            return queen::Error{Errc::conflict, std::move(answer).error().context};
        }
        return std::move(answer).error();
    }
    QUEEN_TRY(auto json, detail::parse_json(*answer, "streams register"));
    StreamQueryInfo info;
    info.query_id = detail::text_of(json, "query_id");
    info.config_hash = detail::text_of(json, "config_hash");
    info.is_fresh = detail::boolean_of(json, "fresh");
    info.is_reset = detail::boolean_of(json, "reset");
    if (const auto epoch = json.find("epoch"); epoch != json.end() && epoch->is_number_unsigned()) {
        info.epoch = epoch->get<std::uint64_t>();
    }
    if (!detail::boolean_of(json, "success") || info.query_id.empty()) {
        return queen::Error{Errc::rejected,
                            "streams register: " + detail::text_of(json, "error") + " " + *answer};
    }
    query_id_ = info.query_id;
    epoch_ = info.epoch;
    epoch_text_ = std::to_string(info.epoch);
    return info;
}

queen::Status StreamRunner::restore(const std::string& partition_id, Partition& partition) {
    const Json body{{"query_id", query_id_}, {"partition_id", partition_id}};
    QUEEN_TRY(auto answer, call("/streams/v1/state/get", body.dump()));
    QUEEN_TRY(auto rows, parse_state_rows(answer));
    partition.p_row.reset();
    for (const auto& row : rows) {
        if (row.key == name_row_key) {
            partition.p_row = row.value_json;
            if (partition.name.empty()) {
                partition.name = json::raw_to_text(raw_member(row.value_json, "partition"));
            }
        }
    }
    QUEEN_TRY(auto op, WindowOperator::restore(*stream_.window_spec(), rows));
    partition.op = std::move(op);
    bump(&StreamMetrics::restores);
    return {};
}

queen::Status StreamRunner::run_chain(const Message& message, std::vector<Item>& out) const {
    std::vector<Item> items{Item{message.data_json, message.partition}};
    std::vector<Item> next;
    for (const auto& step : stream_.steps_) {
        next.clear();
        for (auto& item : items) {
            try {
                switch (step.kind) {
                    case Stream::StepKind::map: item.json = step.map(item.json); break;
                    case Stream::StepKind::key_by: item.key = step.map(item.json); break;
                    case Stream::StepKind::filter:
                        if (!step.filter(item.json)) {
                            continue;
                        }
                        break;
                    case Stream::StepKind::flat_map:
                        for (auto& produced : step.flat_map(item.json)) {
                            next.push_back(Item{std::move(produced), item.key});
                        }
                        continue;
                }
            } catch (...) {
                static constexpr const char* names[] = {"map", "filter", "flat_map", "key_by"};
                return user_error(names[static_cast<int>(step.kind)], std::current_exception());
            }
            next.push_back(std::move(item));
        }
        std::swap(items, next);
    }
    for (auto& item : items) {
        if (!json::is_valid_json(item.json)) {
            return queen::Error{Errc::rejected,
                                "stream: a step produced an event that is not "
                                "JSON: " +
                                    item.json.substr(0, 200)};
        }
        out.push_back(std::move(item));
    }
    return {};
}

void StreamRunner::add_outputs(const std::string& partition_id, const Partition& partition,
                               const CycleOutput& out, std::string_view salt, Cycle& cycle) const {
    const std::string& sink = stream_.sink_;
    const std::string& sink_partition =
        stream_.sink_partition_.empty() ? partition.name : stream_.sink_partition_;
    const auto emit = [&](StreamOutput output, const std::string& queue) {
        output.partition = partition.name;
        output.partition_id = partition_id;
        if (!queue.empty()) {
            cycle.push_items.push_back(Json{{"queue", queue},
                                            {"partition", sink_partition},
                                            {"payload", parsed(output.payload_json)},
                                            {"transactionId", output.transaction_id}});
        }
        cycle.outputs.push_back(std::move(output));
    };
    for (const auto& result : out.results) {
        StreamOutput output;
        output.kind =
            result.is_correction ? StreamOutput::Kind::correction : StreamOutput::Kind::result;
        const std::string start = std::to_string(result.window_start_ms);
        const std::string end = std::to_string(result.window_end_ms);
        // A window's result is emitted once (its row goes in the same cycle); a window's
        // corrections may come in several cycles, so theirs name the batch's acked message.
        output.transaction_id = result.is_correction
                                    ? derived_id({query_id_, config_hash_, epoch_text_,
                                                  partition_id, "c", result.key, start, end, salt})
                                    : derived_id({query_id_, config_hash_, epoch_text_,
                                                  partition_id, "w", result.key, start, end});
        output.payload_json = result.to_json();
        output.window = result;
        cycle.late += result.is_correction ? 1 : 0;
        emit(std::move(output), sink);
    }
    for (std::size_t i = 0; i < out.late_events.size(); ++i) {
        const auto& late = out.late_events[i];
        StreamOutput output;
        output.kind = StreamOutput::Kind::late;
        output.transaction_id = derived_id(
            {query_id_, config_hash_, epoch_text_, partition_id, "l", salt, std::to_string(i)});
        output.payload_json = Json{
            {"late", true},
            {"key", late.event.key},
            {"eventTime", late.event.event_time_ms},
            {"value", late.event.value},
            {"watermark",
             late.watermark_ms}}.dump();
        ++cycle.late;
        emit(std::move(output), stream_.late_queue_.empty() ? sink : stream_.late_queue_);
    }
    cycle.dropped += out.dropped;
    cycle.state_ops.insert(cycle.state_ops.end(), out.state_ops.begin(), out.state_ops.end());
}

queen::Status StreamRunner::process(const std::string& partition_id,
                                    std::span<const Message> messages) {
    Partition& partition = partitions_[partition_id];
    // Another runner of the query may have processed this partition since this one last did
    // (the group hands partitions around): then the check of the "p" row refuses the cycle,
    // nothing of it is applied and the lease is still this runner's, so it restores the
    // partition from the rows and redoes the batch at once. Twice more at most (a third
    // runner would have to take the partition in between, which its lease prevents).
    for (int attempt = 0;; ++attempt) {
        partition.is_stale = false;
        QUEEN_TRY(process_once(partition_id, partition, messages));
        if (!partition.is_stale || attempt == 2) {
            return {};
        }
    }
}

queen::Status StreamRunner::process_once(const std::string& partition_id, Partition& partition,
                                         std::span<const Message> messages) {
    partition.name = messages.front().partition;
    const auto spec = stream_.window_spec();
    if (spec && !partition.op) {
        QUEEN_TRY(restore(partition_id, partition));
    }
    Cycle cycle;
    cycle.ack_transaction_id = messages.back().transaction_id;
    cycle.ack_lease_id = messages.back().lease_id;
    cycle.acked = messages.size();
    std::vector<WindowEvent> events;
    std::vector<Item> items;
    for (const auto& message : messages) {
        items.clear();
        QUEEN_TRY(run_chain(message, items));
        bump(&StreamMetrics::events, items.size());
        for (std::size_t i = 0; i < items.size(); ++i) {
            auto& item = items[i];
            if (!spec) {
                StreamOutput output;
                output.kind = StreamOutput::Kind::event;
                output.partition = partition.name;
                output.partition_id = partition_id;
                output.transaction_id =
                    derived_id({query_id_, config_hash_, epoch_text_, partition_id, "e",
                                message.transaction_id, std::to_string(i)});
                output.payload_json = std::move(item.json);
                if (!stream_.sink_.empty()) {
                    cycle.push_items.push_back(Json{
                        {"queue", stream_.sink_},
                        {"partition", stream_.sink_partition_.empty() ? partition.name
                                                                      : stream_.sink_partition_},
                        {"payload", parsed(output.payload_json)},
                        {"transactionId", output.transaction_id}});
                }
                cycle.outputs.push_back(std::move(output));
                continue;
            }
            WindowEvent event;
            event.key = std::move(item.key);
            try {
                if (spec->time == WindowTime::event) {
                    std::optional<std::int64_t> time;
                    if (stream_.time_) {
                        time = stream_.time_(item.json);
                        if (*time <= -event_time_abs_max || *time >= event_time_abs_max) {
                            return queen::Error{Errc::rejected,
                                                "stream event_time returned " +
                                                    std::to_string(*time) +
                                                    ", outside the window engine's +-2^62 ms"};
                        }
                    } else if (!stream_.time_field_.empty()) {
                        const auto number = number_of(raw_member(item.json, stream_.time_field_));
                        // Out of range is "not a time" like a string (and casting it is UB).
                        if (number && std::abs(*number) < static_cast<double>(event_time_abs_max)) {
                            time = static_cast<std::int64_t>(*number);
                        }
                    }
                    event.event_time_ms = time ? *time : iso_to_ms(message.created_at).value_or(0);
                }
                if (stream_.value_) {
                    event.value = stream_.value_(item.json);
                    if (!std::isfinite(event.value)) {
                        // JSON cannot hold it: the window's row would not restore.
                        return queen::Error{Errc::rejected, "stream value returned " +
                                                                std::to_string(event.value) +
                                                                ", not a finite number"};
                    }
                } else if (!stream_.value_field_.empty()) {
                    event.value =
                        number_of(raw_member(item.json, stream_.value_field_)).value_or(0.0);
                }
            } catch (...) {
                return user_error("event_time or value", std::current_exception());
            }
            events.push_back(std::move(event));
        }
    }
    if (spec) {
        const CycleOutput out = partition.op->apply(events, clock_.wall_ms());
        add_outputs(partition_id, partition, out, cycle.ack_transaction_id, cycle);
    }
    return send(partition_id, partition, cycle);
}

queen::Status StreamRunner::send(const std::string& partition_id, Partition& partition,
                                 Cycle& cycle) {
    const bool has_callback = static_cast<bool>(stream_.callback_);
    const auto call_back = [&]() -> queen::Status {
        try {
            for (const auto& output : cycle.outputs) {
                stream_.callback_(output);
            }
        } catch (...) {
            partition.op.reset();  // not sent: the operator holds what never committed
            return user_error("for_each callback", std::current_exception());
        }
        return {};
    };
    if (has_callback && stream_.delivery_ == CallbackDelivery::at_least_once) {
        QUEEN_TRY(call_back());
    }
    Json ops = Json::array();
    for (const auto& op : cycle.state_ops) {
        ops.push_back(
            op.is_delete
                ? Json{{"type", "delete"}, {"key", op.key}}
                : Json{{"type", "upsert"}, {"key", op.key}, {"value", parsed(op.value_json)}});
    }
    std::optional<std::string> p_row;
    if (stream_.window_spec() && !partition.name.empty()) {
        // The fence (see Partition::p_row): first the check, then the new token.
        Json check{{"type", "check"}, {"key", name_row_key}};
        if (partition.p_row) {
            check["value"] = parsed(*partition.p_row);
        }
        ops.insert(ops.begin(), std::move(check));
        const Json row{{"partition", partition.name},
                       {"v", token_prefix_ + std::to_string(++tokens_made_)}};
        p_row = row.dump();
        ops.push_back(Json{{"type", "upsert"}, {"key", name_row_key}, {"value", row}});
    }
    Json body{{"query_id", query_id_},
              {"partition_id", partition_id},
              {"consumer_group", group_},
              {"state_ops", std::move(ops)},
              {"push_items", std::move(cycle.push_items)},
              {"release_lease", true},
              {"epoch", epoch_}};
    if (!cycle.ack_transaction_id.empty()) {
        body["ack"] = Json{{"transactionId", cycle.ack_transaction_id},
                           {"leaseId", cycle.ack_lease_id},
                           {"status", "completed"}};
    }
    auto answer = call("/streams/v1/cycle", body.dump());
    const auto failed = [&] {
        // What the operator holds may not be what the broker holds: rebuild it from the rows
        // before this partition's next cycle.
        partition.op.reset();
        bump(&StreamMetrics::cycles_failed);
    };
    if (!answer) {
        failed();
        return std::move(answer).error();
    }
    auto json = detail::parse_json(*answer, "streams cycle");
    if (!json) {
        failed();
        return std::move(json).error();
    }
    bool is_committed = detail::boolean_of(*json, "success");
    const std::string error = is_committed ? std::string{} : detail::text_of(*json, "error");
    if (!is_committed && p_row && error.starts_with("state check failed")) {
        // Either another runner changed the partition, or this very cycle committed and its
        // answer was lost (call() sent it again, and the row now holds its new token): the
        // rows tell. Restored either way, the operator describes what the broker holds.
        partition.op.reset();
        QUEEN_TRY(restore(partition_id, partition));
        is_committed = partition.p_row == p_row;
        if (!is_committed) {
            bump(&StreamMetrics::cycles_failed);
            bump(&StreamMetrics::state_changes);
            partition.is_stale = true;
            return {};
        }
    }
    if (!is_committed) {
        failed();
        if (error.starts_with("epoch mismatch")) {
            // The query was reset or cleared since this runner read its state: register again,
            // never with reset (two runners of different chains must not take turns wiping
            // it: a 409 when it now runs another chain, Errc::conflict, the runner stops), and
            // rebuild every operator from the new epoch's rows.
            bump(&StreamMetrics::epoch_changes);
            QUEEN_TRY(register_query(false));
            for (auto& [id, known] : partitions_) {
                known.op.reset();  // restore() reads the "p" row (none in a new epoch)
            }
        }
        return {};  // e.g. a lease that ran out: the batch comes back, the operator is rebuilt
    }
    if (p_row) {
        partition.p_row = std::move(p_row);
    }
    {
        const std::lock_guard lock{metrics_mutex_};
        ++metrics_.cycles;
        metrics_.acked += cycle.acked;
        metrics_.emitted += cycle.outputs.size();
        metrics_.late += cycle.late;
        metrics_.dropped += cycle.dropped;
        metrics_.idle_flush_cycles += cycle.ack_transaction_id.empty() ? 1 : 0;
    }
    if (has_callback && stream_.delivery_ == CallbackDelivery::after_commit) {
        QUEEN_TRY(call_back());
    }
    return {};
}

void StreamRunner::discover_partitions() {
    // The admin route lists the partitions holding state, so partitions that went quiet before
    // this process started are flushed too. A broker without it (404) leaves the seen ones.
    auto answer = client_.get_json("/api/v1/streams/queries/" + percent_encode(stream_.name()));
    if (!answer) {
        return;
    }
    auto json = detail::parse_json(*answer, "streams query");
    if (!json || !json->contains("partitions") || !(*json)["partitions"].is_array()) {
        return;
    }
    for (const auto& entry : (*json)["partitions"]) {
        const std::string id = detail::text_of(entry, "partition_id");
        if (!id.empty()) {
            partitions_.try_emplace(id);
        }
    }
}

queen::Status StreamRunner::flush_idle() {
    last_flush_ns_ = clock_.monotonic_ns();
    if (!stream_.window_spec()) {
        return {};
    }
    if (query_id_.empty()) {
        QUEEN_TRY(start());
    }
    discover_partitions();
    for (auto& [partition_id, partition] : partitions_) {
        if (!partition.op) {
            QUEEN_TRY(restore(partition_id, partition));
        }
        if (partition.name.empty() && stream_.sink_partition_.empty()) {
            continue;  // listed by the admin route without its "p" row: no sink partition known
        }
        // Flush a copy: when nothing closes, no cycle is sent, and the operator must keep
        // describing the rows the broker holds (a raised watermark alone is not written).
        WindowOperator flushed = *partition.op;
        const CycleOutput out = flushed.flush(clock_.wall_ms());
        if (out.results.empty()) {
            continue;
        }
        Cycle cycle;
        add_outputs(partition_id, partition, out, {}, cycle);
        partition.op = std::move(flushed);
        QUEEN_TRY(send(partition_id, partition, cycle));
    }
    return {};
}

queen::Result<std::size_t> StreamRunner::step() {
    if (query_id_.empty()) {
        QUEEN_TRY(start());
    }
    PopRequest pop;
    pop.queue = stream_.source_queue();
    pop.consumer_group = group_;
    pop.batch = options_.batch;
    pop.partitions = options_.partitions;
    pop.is_wait = options_.pop_timeout_ms > 0;
    pop.timeout_ms = options_.pop_timeout_ms;
    QUEEN_TRY(auto popped, client_.pop(pop));
    bump(&StreamMetrics::pops);
    bump(&StreamMetrics::messages, popped.messages.size());
    // Group by partition, in the order the partitions first appear (a partition's messages
    // are in order within the answer).
    std::vector<std::pair<std::string, std::vector<Message>>> groups;
    for (auto& message : popped.messages) {
        auto found = std::find_if(groups.begin(), groups.end(), [&](const auto& group) {
            return group.first == message.partition_id;
        });
        if (found == groups.end()) {
            groups.emplace_back(message.partition_id, std::vector<Message>{});
            found = std::prev(groups.end());
        }
        found->second.push_back(std::move(message));
    }
    for (const auto& [partition_id, messages] : groups) {
        QUEEN_TRY(process(partition_id, messages));
    }
    if (options_.idle_flush_ms > 0 &&
        clock_.monotonic_ns() - last_flush_ns_ >= options_.idle_flush_ms * 1'000'000) {
        QUEEN_TRY(flush_idle());
    }
    return popped.messages.size();
}

queen::Status StreamRunner::run_until(std::stop_token stop) {
    stop_ = stop;
    std::int64_t delay_ms = options_.retry_delay_ms;
    while (!stop.stop_requested()) {
        auto stepped = step();
        if (stepped) {
            delay_ms = options_.retry_delay_ms;
            continue;
        }
        if (!is_retryable(stepped.error())) {
            return std::move(stepped).error();
        }
        // The broker is away (after the call's own retries): wait, then carry on.
        pause(delay_ms);
        delay_ms = std::min(delay_ms * 2, retry_delay_max_ms);
    }
    return {};
}

queen::Status StreamRunner::run_for(std::chrono::milliseconds duration) {
    std::stop_source source;
    const std::int64_t deadline = clock_.monotonic_ns() + duration.count() * 1'000'000;
    std::jthread timer([&source, deadline, this](std::stop_token own) {
        std::mutex mutex;
        std::condition_variable_any woken;
        std::unique_lock lock{mutex};
        while (!own.stop_requested() && clock_.monotonic_ns() < deadline) {
            woken.wait_for(lock, own, std::chrono::milliseconds{20}, [] { return false; });
        }
        source.request_stop();
    });
    return run_until(source.get_token());
}

}  // namespace queen::client
