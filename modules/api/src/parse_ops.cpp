// api/src/parse_ops.cpp — the transaction operations beyond push and ack (KV, timers, lock
// release), operation guards and push delays: read from a JSON DOM (they are not the hot path),
// shared by POST /api/v1/transaction and the KV, lock and timer routes.
#include <limits>
#include <string>
#include <utility>

#include "json.hpp"
#include "parse.hpp"
#include "queen/engine/engine.hpp"

namespace queen::api::detail {
namespace {

using Kind = engine::TransactionOp::Kind;
using nlohmann::json;

Error bad(std::string message) {
    return Error{Errc::invalid_argument, std::move(message)};
}

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

/// A time member: epoch milliseconds (integer) or an ISO 8601 text. Absent or null -> 0.
Result<TimestampMs> time_field(const json& object, std::string_view name) {
    const auto it = object.find(name);
    if (it == object.end() || it->is_null()) {
        return TimestampMs{0};
    }
    if (it->is_string()) {
        if (auto ms = parse_iso(it->get<std::string>()); ms && *ms > 0) {
            return TimestampMs{*ms};
        }
        return bad(std::string(name) + " must be an ISO 8601 time or epoch milliseconds");
    }
    QUEEN_TRY(auto ms, integer_field(object, name, 0, 1, int64_max));
    return TimestampMs{ms};
}

/// The JSON text a value is stored as (KV values, timer payloads).
Result<Bytes> json_text(const json& object, std::string_view name, std::string_view fallback,
                        std::size_t max) {
    const auto it = object.find(name);
    std::string text = it == object.end() ? std::string(fallback) : dump_json(*it);
    if (text.size() > max) {
        return bad(std::string(name) + " is larger than " + std::to_string(max) + " bytes");
    }
    return Bytes(text.begin(), text.end());
}

Status expected_version(const json& object, bool is_required, std::optional<std::uint64_t>& out) {
    const auto it = object.find("expectedVersion");
    if (it == object.end() || it->is_null()) {
        if (is_required) {
            return bad("expectedVersion is required");
        }
        out.reset();
        return {};
    }
    QUEEN_TRY(auto version, integer_field(object, "expectedVersion", 0, 0, int64_max));
    out = static_cast<std::uint64_t>(version);
    return {};
}

Status kv_operation(const json& object, Kind kind, engine::KvOp& out) {
    const kv::Options limits;
    QUEEN_TRY(out.bucket, required_string(object, "bucket", limits.bucket_bytes_max));
    QUEEN_TRY(out.key, required_string(object, "key", limits.key_bytes_max));
    QUEEN_TRY(expected_version(object, kind == Kind::kv_check, out.expected_version));
    if (kind == Kind::kv_set) {
        if (!object.contains("value")) {
            return bad("value is required");
        }
        QUEEN_TRY(out.value, json_text(object, "value", "null", limits.value_bytes_max));
        QUEEN_TRY(out.ttl_ms, integer_field(object, "ttlMs", 0, 0, limits.ttl_ms_max));
    }
    return {};
}

Status timer_id(const json& object, engine::TimerOp& out) {
    QUEEN_TRY(out.id, required_string(object, "id", engine::Options{}.timers.id_bytes_max));
    if (std::string_view(out.id).starts_with(engine::delayed_push_timer_prefix)) {
        return bad("timer ids starting with '" + std::string(engine::delayed_push_timer_prefix) +
                   "' are the server's");
    }
    return {};
}

Status timer_set(const json& object, const ApiOptions& options, engine::TransactionOp& out) {
    const timers::Options limits;
    QUEEN_TRY(timer_id(object, out.timer));
    QUEEN_TRY(out.timer.at, time_field(object, "at"));
    QUEEN_TRY(out.timer.delay_ms, integer_field(object, "delayMs", 0, 0, int64_max));
    if (out.timer.at.value() == 0 && !object.contains("delayMs")) {
        return bad("timer needs at or delayMs");
    }
    if (out.timer.at.value() != 0 && object.contains("delayMs")) {
        return bad("timer takes at or delayMs, not both");
    }
    QUEEN_TRY(out.timer.interval_ms, integer_field(object, "intervalMs", 0, 0, int64_max));
    if (out.timer.interval_ms != 0 && out.timer.interval_ms < limits.interval_ms_min) {
        return bad("intervalMs must be 0 or at least " + std::to_string(limits.interval_ms_min));
    }
    QUEEN_TRY(out.timer.end_at, time_field(object, "endAt"));
    QUEEN_TRY(out.timer.replace, boolean_field(object, "replace", false));
    // The message it delivers: queue, partition, payload, transactionId, traceId.
    QUEEN_TRY(out.push.queue, required_string(object, "queue", options.name_bytes_max));
    QUEEN_TRY(auto partition, string_field(object, "partition", "partition must be a string"));
    out.push.partition = partition.value_or(std::string(queues::default_partition_name));
    QUEEN_TRY(check_name(out.push.partition, "Partition name", options));
    QUEEN_TRY(out.push.payload, json_text(object, "payload", "null", options.payload_bytes_max));
    QUEEN_TRY(auto transaction_id,
              string_field(object, "transactionId", "transactionId must be a string"));
    out.push.transaction_id = transaction_id.value_or("");
    QUEEN_TRY(check_name(out.push.transaction_id, "transactionId", options));
    QUEEN_TRY(auto trace_id, string_field(object, "traceId", "traceId must be a string"));
    out.push.trace_id = trace_id.value_or("");
    // As a pushed item's (parse_fast.cpp): the pop answer shows it as a trace UUID.
    if (!out.push.trace_id.empty() && !is_uuid_text(out.push.trace_id)) {
        return bad("traceId must be a UUID");
    }
    return {};
}

}  // namespace

namespace {

/// The `type` of each operation kind in a transaction body and answer.
constexpr std::pair<std::string_view, Kind> operation_types[] = {
    {"push", Kind::push},
    {"ack", Kind::ack},
    {"kv.set", Kind::kv_set},
    {"kv.delete", Kind::kv_delete},
    {"kv.check", Kind::kv_check},
    {"timer.set", Kind::timer_set},
    {"timer.cancel", Kind::timer_cancel},
    {"lock.release", Kind::lock_release},
};

}  // namespace

Result<std::string> required_string(const nlohmann::json& object, std::string_view name,
                                    std::size_t max) {
    const auto it = object.find(name);
    if (it == object.end() || it->is_null()) {
        return bad(std::string(name) + " is required");
    }
    if (!it->is_string()) {
        return bad(std::string(name) + " must be a string");
    }
    std::string value = it->get<std::string>();
    if (value.empty()) {
        return bad(std::string(name) + " must not be empty");
    }
    if (value.size() > max) {
        return bad(std::string(name) + " is longer than " + std::to_string(max) + " bytes");
    }
    if (value.find('\0') != std::string::npos) {
        return bad(std::string(name) + " must not contain NUL characters");
    }
    return value;
}

Result<FencingToken> required_token(const nlohmann::json& object) {
    if (!object.contains("token") || object["token"].is_null()) {
        return bad("token is required");
    }
    QUEEN_TRY(const std::int64_t token, integer_field(object, "token", 0, 1, int64_max));
    return FencingToken{static_cast<std::uint64_t>(token)};
}

std::optional<Kind> extended_operation_kind(std::string_view type) noexcept {
    for (const auto& [name, kind] : operation_types) {
        if (name == type && kind != Kind::push && kind != Kind::ack) {
            return kind;
        }
    }
    return std::nullopt;
}

std::string_view operation_type_name(Kind kind) noexcept {
    for (const auto& [name, each] : operation_types) {
        if (each == kind) {
            return name;
        }
    }
    return "unknown";
}

Status parse_extended_operation(const nlohmann::json& object, Kind kind, const ApiOptions& options,
                                engine::TransactionOp& out) {
    if (!object.is_object()) {
        return bad("Each operation must be an object");
    }
    out.kind = kind;
    switch (kind) {
        case Kind::kv_set:
        case Kind::kv_delete:
        case Kind::kv_check: QUEEN_TRY(kv_operation(object, kind, out.kv)); break;
        case Kind::timer_set: QUEEN_TRY(timer_set(object, options, out)); break;
        case Kind::timer_cancel: QUEEN_TRY(timer_id(object, out.timer)); break;
        case Kind::lock_release: {
            QUEEN_TRY(out.lock, parse_lock_grant(object));
            break;
        }
        case Kind::push:
        case Kind::ack: return bad("push and ack operations are read by the transaction parser");
    }
    if (const auto guard = object.find("lock"); guard != object.end() && !guard->is_null()) {
        QUEEN_TRY(out.guard, parse_lock_grant(*guard));
    }
    return {};
}

Result<locks::Guard> parse_lock_grant(const nlohmann::json& object) {
    if (!object.is_object()) {
        return bad("lock must be an object with name and token");
    }
    locks::Guard out;
    QUEEN_TRY(out.name, required_string(object, "name", locks::Options{}.name_bytes_max));
    QUEEN_TRY(out.token, required_token(object));
    return out;
}

Status parse_push_delay(const nlohmann::json& object, engine::TimerOp& out) {
    QUEEN_TRY(out.delay_ms, integer_field(object, "delayMs", 0, 0, int64_max));
    QUEEN_TRY(out.at, time_field(object, "visibleAt"));
    if (out.delay_ms != 0 && out.at.value() != 0) {
        return bad("a push takes delayMs or visibleAt, not both");
    }
    return {};
}

Result<queues::Pop> parse_next_pop(const json& object, const ApiOptions& options) {
    const auto in_next = [](Error error) {
        error.context = "next: " + error.context;
        return error;
    };
    if (!object.is_object()) {
        return bad("next must be an object");
    }
    queues::Pop out;
    auto queue = required_string(object, "queue", options.name_bytes_max);
    if (!queue) {
        return in_next(std::move(queue).error());
    }
    out.queue = std::move(*queue);
    if (Status name = check_name(out.queue, "queue", options); !name) {
        return in_next(std::move(name).error());
    }
    if (const auto partition = object.find("partition");
        partition != object.end() && !partition->is_null()) {
        auto name = required_string(object, "partition", options.name_bytes_max);
        if (!name) {
            return in_next(std::move(name).error());
        }
        out.has_partition = true;
        out.partition = std::move(*name);
        if (Status checked = check_name(out.partition, "partition", options); !checked) {
            return in_next(std::move(checked).error());
        }
    }
    auto group = parse_group(object, "consumerGroup", options);
    if (!group) {
        return in_next(std::move(group).error());
    }
    out.group = std::move(*group);
    auto batch = integer_field(object, "batch", options.pop_batch_default, 1,
                               static_cast<std::int64_t>(options.pop_batch_max));
    if (!batch) {
        return in_next(std::move(batch).error());
    }
    out.batch = static_cast<std::uint32_t>(*batch);
    out.subscription_mode = subscription_mode_named(options.pop_subscription_mode_default);
    return out;
}

}  // namespace queen::api::detail
