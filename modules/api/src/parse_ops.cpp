// api/src/parse_ops.cpp — the transaction operations beyond push and ack (KV, timers, lock
// release), operation guards, push delays and the transaction's next pop: rules written once
// over an object view (object_view.hpp), read from a DOM by the KV, lock and timer routes and
// from the raw text the streaming transaction reader walked (parse_fast.cpp).
#include <limits>
#include <string>
#include <utility>

#include "json.hpp"
#include "object_view.hpp"
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
template <class Object>
Result<TimestampMs> time_field(const Object& object, std::string_view name) {
    if (!object.has_value(name)) {
        return TimestampMs{0};
    }
    if (object.is_string(name)) {
        QUEEN_TRY(auto text, object.string(name, ""));
        if (auto ms = parse_iso(*text); ms && *ms > 0) {
            return TimestampMs{*ms};
        }
        return bad(std::string(name) + " must be an ISO 8601 time or epoch milliseconds");
    }
    QUEEN_TRY(auto ms, object.integer(name, 0, 1, int64_max));
    return TimestampMs{ms};
}

/// The JSON text a value is stored as (KV values, timer payloads).
template <class Object>
Result<Bytes> json_text(const Object& object, std::string_view name, std::string_view fallback,
                        std::size_t max) {
    const std::string text = object.json_text(name, fallback);
    if (text.size() > max) {
        return bad(std::string(name) + " is larger than " + std::to_string(max) + " bytes");
    }
    return Bytes(text.begin(), text.end());
}

template <class Object>
Result<std::string> required_string_of(const Object& object, std::string_view name,
                                       std::size_t max) {
    if (!object.has_value(name)) {
        return bad(std::string(name) + " is required");
    }
    QUEEN_TRY(auto value, object.string(name, std::string(name) + " must be a string"));
    if (value->empty()) {
        return bad(std::string(name) + " must not be empty");
    }
    if (value->size() > max) {
        return bad(std::string(name) + " is longer than " + std::to_string(max) + " bytes");
    }
    if (value->find('\0') != std::string::npos) {
        return bad(std::string(name) + " must not contain NUL characters");
    }
    return std::move(*value);
}

template <class Object>
Result<FencingToken> required_token_of(const Object& object) {
    if (!object.has_value("token")) {
        return bad("token is required");
    }
    QUEEN_TRY(const std::int64_t token, object.integer("token", 0, 1, int64_max));
    return FencingToken{static_cast<std::uint64_t>(token)};
}

template <class Object>
Result<locks::Guard> lock_grant(const Object& object) {
    if (!object.is_object()) {
        return bad("lock must be an object with name and token");
    }
    locks::Guard out;
    QUEEN_TRY(out.name, required_string_of(object, "name", locks::Options{}.name_bytes_max));
    QUEEN_TRY(out.token, required_token_of(object));
    return out;
}

template <class Object>
Status expected_version(const Object& object, bool is_required, std::optional<std::uint64_t>& out) {
    if (!object.has_value("expectedVersion")) {
        if (is_required) {
            return bad("expectedVersion is required");
        }
        out.reset();
        return {};
    }
    QUEEN_TRY(auto version, object.integer("expectedVersion", 0, 0, int64_max));
    out = static_cast<std::uint64_t>(version);
    return {};
}

template <class Object>
Status kv_operation(const Object& object, Kind kind, engine::KvOp& out) {
    const kv::Options limits;
    QUEEN_TRY(out.bucket, required_string_of(object, "bucket", limits.bucket_bytes_max));
    QUEEN_TRY(out.key, required_string_of(object, "key", limits.key_bytes_max));
    QUEEN_TRY(expected_version(object, kind == Kind::kv_check, out.expected_version));
    if (kind == Kind::kv_set) {
        if (!object.contains("value")) {
            return bad("value is required");
        }
        QUEEN_TRY(out.value, json_text(object, "value", "null", limits.value_bytes_max));
        QUEEN_TRY(out.ttl_ms, object.integer("ttlMs", 0, 0, limits.ttl_ms_max));
    }
    return {};
}

template <class Object>
Status timer_id(const Object& object, engine::TimerOp& out) {
    QUEEN_TRY(out.id, required_string_of(object, "id", engine::Options{}.timers.id_bytes_max));
    if (std::string_view(out.id).starts_with(engine::delayed_push_timer_prefix)) {
        return bad("timer ids starting with '" + std::string(engine::delayed_push_timer_prefix) +
                   "' are the server's");
    }
    return {};
}

template <class Object>
Status timer_set(const Object& object, const ApiOptions& options, engine::TransactionOp& out) {
    const timers::Options limits;
    QUEEN_TRY(timer_id(object, out.timer));
    QUEEN_TRY(out.timer.at, time_field(object, "at"));
    QUEEN_TRY(out.timer.delay_ms, object.integer("delayMs", 0, 0, int64_max));
    if (out.timer.at.value() == 0 && !object.contains("delayMs")) {
        return bad("timer needs at or delayMs");
    }
    if (out.timer.at.value() != 0 && object.contains("delayMs")) {
        return bad("timer takes at or delayMs, not both");
    }
    QUEEN_TRY(out.timer.interval_ms, object.integer("intervalMs", 0, 0, int64_max));
    if (out.timer.interval_ms != 0 && out.timer.interval_ms < limits.interval_ms_min) {
        return bad("intervalMs must be 0 or at least " + std::to_string(limits.interval_ms_min));
    }
    QUEEN_TRY(out.timer.end_at, time_field(object, "endAt"));
    QUEEN_TRY(out.timer.replace, object.boolean("replace", false));
    // The message it delivers: queue, partition, payload, transactionId, traceId.
    QUEEN_TRY(out.push.queue, required_string_of(object, "queue", options.name_bytes_max));
    QUEEN_TRY(check_name(out.push.queue, "queue", options));
    QUEEN_TRY(auto partition, object.string("partition", "partition must be a string"));
    out.push.partition = partition.value_or(std::string(queues::default_partition_name));
    QUEEN_TRY(check_name(out.push.partition, "Partition name", options));
    QUEEN_TRY(out.push.payload, json_text(object, "payload", "null", options.payload_bytes_max));
    QUEEN_TRY(auto transaction_id,
              object.string("transactionId", "transactionId must be a string"));
    out.push.transaction_id = transaction_id.value_or("");
    QUEEN_TRY(check_id_length(out.push.transaction_id, "transactionId", options));
    QUEEN_TRY(auto trace_id, object.string("traceId", "traceId must be a string"));
    out.push.trace_id = trace_id.value_or("");
    // As a pushed item's (parse_fast.cpp): the pop answer shows it as a trace UUID.
    if (!out.push.trace_id.empty() && !is_uuid_text(out.push.trace_id)) {
        return bad("traceId must be a UUID");
    }
    return {};
}

template <class Object>
Status extended_operation(const Object& object, Kind kind, const ApiOptions& options,
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
            QUEEN_TRY(out.lock, lock_grant(object));
            break;
        }
        case Kind::push:
        case Kind::ack: return bad("push and ack operations are read by the transaction parser");
    }
    if (object.has_value("lock")) {
        QUEEN_TRY(out.guard, lock_grant(object.member("lock")));
    }
    return {};
}

template <class Object>
Status push_delay(const Object& object, engine::TimerOp& out) {
    QUEEN_TRY(out.delay_ms, object.integer("delayMs", 0, 0, int64_max));
    QUEEN_TRY(out.at, time_field(object, "visibleAt"));
    if (out.delay_ms != 0 && out.at.value() != 0) {
        return bad("a push takes delayMs or visibleAt, not both");
    }
    return {};
}

/// A consumer group name: null, absent and "" mean __QUEUE_MODE__.
template <class Object>
Result<std::string> group_of(const Object& object, std::string_view key,
                             const ApiOptions& options) {
    QUEEN_TRY(auto group, object.string(key, std::string(key) + " must be a string"));
    if (!group.has_value() || group->empty()) {
        return std::string(queues::queue_mode_group);
    }
    QUEEN_TRY(check_name(*group, key, options));
    return std::move(*group);
}

template <class Object>
Result<queues::Pop> next_pop(const Object& object, const ApiOptions& options) {
    const auto in_next = [](Error error) {
        error.context = "next: " + error.context;
        return error;
    };
    if (!object.is_object()) {
        return bad("next must be an object");
    }
    queues::Pop out;
    auto queue = required_string_of(object, "queue", options.name_bytes_max);
    if (!queue) {
        return in_next(std::move(queue).error());
    }
    out.queue = std::move(*queue);
    if (Status name = check_name(out.queue, "queue", options); !name) {
        return in_next(std::move(name).error());
    }
    if (object.has_value("partition")) {
        auto name = required_string_of(object, "partition", options.name_bytes_max);
        if (!name) {
            return in_next(std::move(name).error());
        }
        out.has_partition = true;
        out.partition = std::move(*name);
        if (Status checked = check_name(out.partition, "partition", options); !checked) {
            return in_next(std::move(checked).error());
        }
    }
    auto group = group_of(object, "consumerGroup", options);
    if (!group) {
        return in_next(std::move(group).error());
    }
    out.group = std::move(*group);
    auto batch = object.integer("batch", options.pop_batch_default, 1,
                                static_cast<std::int64_t>(options.pop_batch_max));
    if (!batch) {
        return in_next(std::move(batch).error());
    }
    out.batch = static_cast<std::uint32_t>(*batch);
    out.subscription_mode = subscription_mode_named(options.pop_subscription_mode_default);
    return out;
}

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
    return required_string_of(DomObject(object), name, max);
}

Result<std::string> parse_group(const nlohmann::json& object, std::string_view key,
                                const ApiOptions& options) {
    return group_of(DomObject(object), key, options);
}

Result<FencingToken> required_token(const nlohmann::json& object) {
    return required_token_of(DomObject(object));
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
    return extended_operation(DomObject(object), kind, options, out);
}
Status parse_extended_operation(const RawObject& object, Kind kind, const ApiOptions& options,
                                engine::TransactionOp& out) {
    return extended_operation(object, kind, options, out);
}

Result<locks::Guard> parse_lock_grant(const nlohmann::json& object) {
    return lock_grant(DomObject(object));
}
Result<locks::Guard> parse_lock_grant(const RawObject& object) {
    return lock_grant(object);
}

Status parse_push_delay(const nlohmann::json& object, engine::TimerOp& out) {
    return push_delay(DomObject(object), out);
}
Status parse_push_delay(const RawObject& object, engine::TimerOp& out) {
    return push_delay(object, out);
}

Result<queues::Pop> parse_next_pop(const nlohmann::json& object, const ApiOptions& options) {
    return next_pop(DomObject(object), options);
}
Result<queues::Pop> parse_next_pop(const RawObject& object, const ApiOptions& options) {
    return next_pop(object, options);
}

}  // namespace queen::api::detail
