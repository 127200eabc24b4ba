// api/src/parse_streams.cpp — the bodies of /streams/v1/queries, /streams/v1/cycle and
// /streams/v1/state/get (docs/http-api.md, streams). The bodies are DOMs (request_json); a
// cycle's push_items go through the push route's own reader (parse_push_array), so a sink
// message is checked exactly as a pushed one.
#include "parse_streams.hpp"

#include "json.hpp"
#include "parse.hpp"

namespace queen::api::detail {
namespace {

using nlohmann::json;

Error bad(std::string message) {
    return Error{Errc::invalid_argument, std::move(message)};
}

/// "state_ops[3]"
std::string element_name(std::string_view array, std::size_t index) {
    return std::string(array) + "[" + std::to_string(index) + "]";
}

/// A string member `key` of `object`, named `label` in errors. Absent, null and "" give
/// nullopt (the SDKs send "" for "not set"); another type, more than `max` bytes or a NUL
/// (LMDB keys and names hold any bytes, but no client means one) are refused.
Result<std::optional<std::string>> optional_string(const json& object, std::string_view key,
                                                   std::string_view label, std::size_t max) {
    const auto found = object.find(key);
    if (found == object.end() || found->is_null()) {
        return std::optional<std::string>{};
    }
    if (!found->is_string()) {
        return bad(std::string(label) + " must be a string");
    }
    const auto& text = found->get_ref<const std::string&>();
    if (text.empty()) {
        return std::optional<std::string>{};
    }
    if (text.size() > max) {
        return bad(std::string(label) + " is longer than " + std::to_string(max) + " bytes");
    }
    if (text.find('\0') != std::string::npos) {
        return bad(std::string(label) + " must not contain NUL characters");
    }
    return std::optional<std::string>{text};
}

/// As optional_string, but absent, null and "" are "<label> is required" (the v1 contract).
Result<std::string> required_string(const json& object, std::string_view key,
                                    std::string_view label, std::size_t max) {
    QUEEN_TRY(auto text, optional_string(object, key, label, max));
    if (!text.has_value()) {
        return bad(std::string(label) + " is required");
    }
    return std::move(*text);
}

/// A required partition id: one of this broker's partition UUIDs (the state shard of a
/// cycle). A UUID that is not ours could only name state no source message belongs to.
Result<queues::PartitionId> required_partition(const json& body) {
    QUEEN_TRY(const std::string text,
              required_string(body, "partition_id", "partition_id", std::size_t{64}));
    QUEEN_TRY(const queues::PartitionId partition, parse_client_partition_id(text, "partition_id"));
    if (partition == queues::PartitionId{0}) {
        return bad("partition_id '" + text + "' is not a partition id of this broker");
    }
    return partition;
}

Status check_object(const json& body) {
    if (!body.is_object()) {
        return bad("body must be a JSON object");  // json_or_reply's words
    }
    return {};
}

/// The state_ops array: upserts (value stored as its compact JSON text), deletes and checks.
Status parse_state_ops(const json& body, const ApiOptions& options,
                       std::vector<engine::StreamStateOp>& out) {
    const auto found = body.find("state_ops");
    if (found == body.end() || found->is_null()) {
        return {};
    }
    if (!found->is_array()) {
        return bad("state_ops must be an array");
    }
    // One cycle is one entry: bounded like a transaction's operations.
    if (found->size() > options.transaction_operations_max) {
        return bad("state_ops has " + std::to_string(found->size()) +
                   " entries, more than the limit of " +
                   std::to_string(options.transaction_operations_max));
    }
    const streams::Options limits;
    out.reserve(found->size());
    for (std::size_t i = 0; i < found->size(); ++i) {
        const json& op = (*found)[i];
        const std::string name = element_name("state_ops", i);
        if (!op.is_object()) {
            return bad(name + " must be an object");
        }
        QUEEN_TRY(const std::string type,
                  required_string(op, "type", name + ".type", limits.key_bytes_max));
        engine::StreamStateOp parsed;
        if (type == "upsert") {
            parsed.kind = engine::StreamStateOp::Kind::upsert;
        } else if (type == "delete") {
            parsed.kind = engine::StreamStateOp::Kind::remove;
        } else if (type == "check") {
            // Our extension: with a value the row must hold it, without one it must be absent.
            parsed.kind = op.contains("value") ? engine::StreamStateOp::Kind::check
                                               : engine::StreamStateOp::Kind::check_absent;
        } else {
            return bad(name + ".type must be \"upsert\", \"delete\" or \"check\", not \"" + type +
                       "\"");
        }
        // Keys are any bytes to the module; NUL is refused with every other name here.
        QUEEN_TRY(parsed.key, required_string(op, "key", name + ".key", limits.key_bytes_max));
        if (parsed.kind == engine::StreamStateOp::Kind::upsert ||
            parsed.kind == engine::StreamStateOp::Kind::check) {
            // Both compact texts of the same writer: a check compares what an upsert stored.
            const auto value = op.find("value");
            if (value == op.end()) {
                return bad(name + ".value is required");
            }
            const std::string text = dump_json(*value);
            if (text.size() > limits.value_bytes_max) {
                return bad(name + ".value is " + std::to_string(text.size()) +
                           " bytes, more than the limit of " +
                           std::to_string(limits.value_bytes_max));
            }
            parsed.value.assign(text.begin(), text.end());
        }
        out.push_back(std::move(parsed));
    }
    return {};
}

/// The ack object: {transactionId, leaseId?, status?, count?, error?}; its group is the
/// cycle's consumer_group and its partition the cycle's.
Status parse_cycle_ack(const json& body, const ApiOptions& options, std::string group,
                       ParsedCycle& out) {
    const auto found = body.find("ack");
    if (found == body.end() || found->is_null()) {
        return {};
    }
    const json& ack = *found;
    if (!ack.is_object()) {
        return bad("ack must be an object or null");
    }
    queues::AckItem item;
    item.partition = out.cycle.partition;
    QUEEN_TRY(const std::string transaction_id,
              required_string(ack, "transactionId", "ack.transactionId", options.name_bytes_max));
    item.transaction_id.assign(transaction_id);
    QUEEN_TRY(const auto lease,
              optional_string(ack, "leaseId", "ack.leaseId", options.name_bytes_max));
    // No lease: the ack is not fenced by one (as /api/v1/ack). A lease id that is not one of
    // ours never matches: "Invalid or expired lease".
    item.lease = queues::parse_lease_id(lease.value_or(""));
    QUEEN_TRY(const auto status, optional_string(ack, "status", "ack.status", 32));
    item.status = parse_ack_status(status.value_or("completed"));
    if (item.status != queues::AckStatus::completed && item.status != queues::AckStatus::failed &&
        item.status != queues::AckStatus::dlq) {
        return bad("ack.status must be completed, success, failed or dlq, not \"" +
                   status.value_or("") + "\"");
    }
    const auto error = ack.find("error");
    if (error != ack.end() && !error->is_null()) {
        if (!error->is_string()) {
            return bad("ack.error must be a string or null");
        }
        const auto& text = error->get_ref<const std::string&>();
        if (text.size() > options.payload_bytes_max) {
            return bad("ack.error is longer than " + std::to_string(options.payload_bytes_max) +
                       " bytes");
        }
        // "" is no reason: the engine's default then says what happened.
        item.has_error = !text.empty();
        item.error = text;
    }
    auto count = integer_field(ack, "count", 1, 0, INT32_MAX);
    if (!count) {
        return bad("ack." + count.error().context);
    }
    out.ack_count = *count;
    item.group = std::move(group);
    out.cycle.ack = std::move(item);
    return {};
}

}  // namespace

Result<engine::StreamRegister> parse_stream_register(const json& body, const ApiOptions& options,
                                                     std::string new_query_id) {
    QUEEN_TRY(check_object(body));
    const streams::Options limits;
    engine::StreamRegister out;
    streams::Register& query = out.query;
    QUEEN_TRY(query.name, required_string(body, "name", "name", limits.name_bytes_max));
    QUEEN_TRY(query.source_queue,
              required_string(body, "source_queue", "source_queue", limits.queue_bytes_max));
    QUEEN_TRY(query.config_hash,
              required_string(body, "config_hash", "config_hash", limits.config_hash_bytes_max));
    QUEEN_TRY(const auto sink,
              optional_string(body, "sink_queue", "sink_queue", limits.queue_bytes_max));
    query.sink_queue = sink.value_or("");
    QUEEN_TRY(check_name(query.source_queue, "source_queue", options));
    if (!query.sink_queue.empty()) {  // "" = no sink
        QUEEN_TRY(check_name(query.sink_queue, "sink_queue", options));
    }
    QUEEN_TRY(query.reset, boolean_field(body, "reset", false));
    query.new_query_id = std::move(new_query_id);
    return out;
}

Result<ParsedCycle> parse_stream_cycle(const json& body, const ApiOptions& options,
                                       RandomSource& random, std::int64_t now_ms) {
    QUEEN_TRY(check_object(body));
    const streams::Options limits;
    ParsedCycle out;
    engine::StreamCycle& cycle = out.cycle;
    QUEEN_TRY(cycle.query_id,
              required_string(body, "query_id", "query_id", limits.query_id_bytes_max));
    QUEEN_TRY(cycle.partition, required_partition(body));
    // Read first so a bad group is refused even without an ack (it is the ack's group).
    QUEEN_TRY(std::string group, parse_group(body, "consumer_group", options));
    // Our fence (0 or absent: not checked): the epoch the runner's registration answered.
    QUEEN_TRY(const std::int64_t epoch, integer_field(body, "epoch", 0, 0, INT64_MAX));
    cycle.epoch = static_cast<std::uint64_t>(epoch);
    QUEEN_TRY(cycle.release_lease, boolean_field(body, "release_lease", true));
    QUEEN_TRY(parse_state_ops(body, options, cycle.state_ops));
    if (const auto items = body.find("push_items"); items != body.end() && !items->is_null()) {
        if (!items->is_array()) {
            return bad("push_items must be an array");
        }
        auto parsed = parse_push_array(dump_json(*items), "push_items", options, random, now_ms);
        if (!parsed) {
            Error error = std::move(parsed).error();
            if (!error.context.starts_with("push_items")) {
                error.context = "push_items: " + error.context;
            }
            return error;
        }
        cycle.push_items = std::move(parsed->push.items);
        out.has_client_transaction_id = std::move(parsed->has_client_transaction_id);
    }
    QUEEN_TRY(parse_cycle_ack(body, options, std::move(group), out));
    return out;
}

Result<StateGet> parse_state_get(const json& body) {
    QUEEN_TRY(check_object(body));
    const streams::Options limits;
    StateGet out;
    QUEEN_TRY(out.query_id,
              required_string(body, "query_id", "query_id", limits.query_id_bytes_max));
    QUEEN_TRY(out.partition, required_partition(body));
    if (const auto keys = body.find("keys"); keys != body.end() && !keys->is_null()) {
        if (!keys->is_array()) {
            return bad("keys must be an array of strings");
        }
        out.keys.reserve(keys->size());
        for (std::size_t i = 0; i < keys->size(); ++i) {
            const json& key = (*keys)[i];
            if (!key.is_string()) {
                return bad(element_name("keys", i) + " must be a string");
            }
            out.keys.push_back(key.get<std::string>());
        }
    }
    QUEEN_TRY(const auto prefix,
              optional_string(body, "key_prefix", "key_prefix", limits.key_bytes_max));
    out.key_prefix = prefix.value_or("");
    if (const auto ripe = body.find("ripe_at_or_before"); ripe != body.end() && !ripe->is_null()) {
        if (!ripe->is_number()) {
            return bad("ripe_at_or_before must be a number");
        }
        out.ripe_at_or_before = ripe->get<double>();
    }
    return out;
}

bool is_ripe(std::string_view value, double at_or_before) {
    // Most rows of a query that uses windows are windows; others (a watermark) skip the parse.
    static constexpr std::string_view member = "\"windowEnd\"";
    if (value.empty() || value.front() != '{' || value.find(member) == std::string_view::npos) {
        return false;
    }
    const json parsed = json::parse(value, nullptr, false);
    if (!parsed.is_object()) {
        return false;  // also a text that does not parse (discarded)
    }
    const auto end = parsed.find("windowEnd");
    return end != parsed.end() && end->is_number() && end->get<double>() <= at_or_before;
}

}  // namespace queen::api::detail
