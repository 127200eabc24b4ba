// api/tests/reference_parse.hpp — the reference the one reader of the hot bodies is checked
// against (api tests, the api_parse fuzzer, tools/json_read_bench): push, ack, ack batch and
// transaction read as the api read them before parse_fast.cpp did it alone, through an nlohmann
// DOM (parse_body) with the same checks and words. Test code only: the api has no DOM path for
// these bodies any more. One known difference: the limits on stored JSON texts (push payloads, KV
// values, timer payloads) apply here to nlohmann's re-serialized text (numbers and escapes
// rewritten), there to the client's text without its whitespace.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "json.hpp"
#include "parse.hpp"

namespace queen::api::reference {

using detail::ParsedPush;

inline Error bad(std::string message) {
    return Error{Errc::invalid_argument, std::move(message)};
}

/// True when `error` is a limit on a stored JSON text (a push payload; a KV value or a timer
/// payload, "... is larger than"), the one check whose numbers may differ (see above).
inline bool is_payload_limit(const Error& error) {
    return error.context.starts_with("payload is ") ||
           error.context.find(" is larger than ") != std::string::npos;
}

inline Result<queues::PushItem> push_item(const nlohmann::json& item, const ApiOptions& options,
                                          RandomSource& random, std::int64_t now_ms,
                                          const nlohmann::json& default_payload,
                                          std::string_view payload_key, bool& has_client_id) {
    using namespace detail;
    if (!item.is_object()) {
        return bad("Each item must be an object");
    }
    queues::PushItem out;
    const auto queue = item.find("queue");
    if (queue == item.end() || !queue->is_string()) {
        return bad("Queue must be a string");
    }
    out.queue = queue->get<std::string>();
    QUEEN_TRY(check_name(out.queue, "Queue name", options));
    QUEEN_TRY(auto partition, string_field(item, "partition", "Partition must be a string"));
    if (partition.has_value()) {
        out.partition = std::move(*partition);
        QUEEN_TRY(check_name(out.partition, "Partition name", options));
    }
    QUEEN_TRY(auto transaction_id,
              string_field(item, "transactionId", "TransactionId must be a string"));
    has_client_id = transaction_id.has_value() && !transaction_id->empty();
    if (has_client_id) {
        out.transaction_id = std::move(*transaction_id);
        QUEEN_TRY(check_id_length(out.transaction_id, "TransactionId", options));
    } else {
        out.transaction_id = time_uuid(random, now_ms);
    }
    QUEEN_TRY(auto trace_id, string_field(item, "traceId", "TraceId must be a string"));
    if (trace_id.has_value() && !trace_id->empty()) {
        if (!is_uuid_text(*trace_id)) {
            return bad("TraceId must be a UUID");
        }
        out.trace_id = std::move(*trace_id);
    }
    const auto payload = item.find(payload_key);
    const std::string text = dump_json(payload == item.end() ? default_payload : *payload);
    if (text.size() > options.payload_bytes_max) {
        return bad("payload is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                   std::to_string(options.payload_bytes_max));
    }
    out.payload.assign(text.begin(), text.end());
    return out;
}

inline Result<queues::AckItem> ack_item(const nlohmann::json& item, const ApiOptions& options,
                                        std::string_view missing_transaction,
                                        std::string_view missing_partition) {
    using namespace detail;
    if (!item.is_object()) {
        return bad("Each acknowledgment must be an object");
    }
    queues::AckItem out;
    const auto transaction_id = item.find("transactionId");
    if (transaction_id == item.end() || !transaction_id->is_string() ||
        transaction_id->get_ref<const std::string&>().empty()) {
        return bad(std::string(missing_transaction));
    }
    out.transaction_id = transaction_id->get<std::string>();
    QUEEN_TRY(check_id_length(out.transaction_id, "transactionId", options));
    const auto partition_id = item.find("partitionId");
    if (partition_id == item.end() || !partition_id->is_string() ||
        partition_id->get_ref<const std::string&>().empty()) {
        return bad(std::string(missing_partition));
    }
    QUEEN_TRY(out.partition, parse_client_partition_id(partition_id->get_ref<const std::string&>(),
                                                       "partitionId"));
    QUEEN_TRY(auto status, string_field(item, "status", "status must be a string"));
    out.status = status.has_value() ? parse_ack_status(*status) : queues::AckStatus::completed;
    const auto error = item.find("error");
    if (error != item.end() && !error->is_null()) {
        if (!error->is_string()) {
            return bad("error must be a string or null");
        }
        out.has_error = true;
        out.error = error->get<std::string>();
        if (out.error.size() > options.payload_bytes_max) {
            return bad("error is longer than " + std::to_string(options.payload_bytes_max) +
                       " bytes");
        }
    }
    QUEEN_TRY(auto lease, string_field(item, "leaseId", "leaseId must be a string"));
    out.lease = lease.has_value() ? queues::parse_lease_id(*lease) : queues::LeaseId{0};
    QUEEN_TRY(out.group, parse_group(item, "consumerGroup", options));
    return out;
}

inline Result<ParsedPush> parse_push(std::string_view text, const ApiOptions& options,
                                     RandomSource& random, std::int64_t now_ms) {
    QUEEN_TRY(auto body, detail::parse_body(text, options.json_depth_max));
    if (!body.is_object()) {
        return bad("items array is required");
    }
    const auto items = body.find("items");
    if (items == body.end() || !items->is_array()) {
        return bad("items array is required");
    }
    if (items->size() > options.push_items_max) {
        return bad("items has " + std::to_string(items->size()) +
                   " entries, more than the limit of " + std::to_string(options.push_items_max));
    }
    ParsedPush out;
    const nlohmann::json null_payload;
    for (const nlohmann::json& item : *items) {
        bool has_client_id = false;
        QUEEN_TRY(auto parsed,
                  push_item(item, options, random, now_ms, null_payload, "payload", has_client_id));
        out.push.items.push_back(std::move(parsed));
        out.has_client_transaction_id.push_back(has_client_id);
    }
    return out;
}

inline Result<queues::Ack> parse_ack(std::string_view text, const ApiOptions& options) {
    QUEEN_TRY(auto body, detail::parse_body(text, options.json_depth_max));
    if (!body.is_object()) {
        return bad("transactionId is required");
    }
    QUEEN_TRY(auto item, ack_item(body, options, "transactionId is required",
                                  "partitionId is required to ensure message uniqueness"));
    queues::Ack out;
    out.items.push_back(std::move(item));
    return out;
}

inline Result<queues::Ack> parse_ack_batch(std::string_view text, const ApiOptions& options) {
    QUEEN_TRY(auto body, detail::parse_body(text, options.json_depth_max));
    if (!body.is_object()) {
        return bad("acknowledgments array is required");
    }
    const auto list = body.find("acknowledgments");
    if (list == body.end() || !list->is_array()) {
        return bad("acknowledgments array is required");
    }
    if (list->size() > options.ack_items_max) {
        return bad("acknowledgments has " + std::to_string(list->size()) +
                   " entries, more than the limit of " + std::to_string(options.ack_items_max));
    }
    QUEEN_TRY(auto top_group,
              detail::string_field(body, "consumerGroup", "consumerGroup must be a string"));
    const bool has_top_group = top_group.has_value() && !top_group->empty();
    if (has_top_group) {
        QUEEN_TRY(detail::check_name(*top_group, "consumerGroup", options));
    }
    queues::Ack out;
    for (const nlohmann::json& entry : *list) {
        QUEEN_TRY(
            auto item,
            ack_item(entry, options, "Each acknowledgment must have a valid transactionId string",
                     "Each acknowledgment must have a valid partitionId string to ensure "
                     "message uniqueness"));
        if (has_top_group) {
            item.group = *top_group;
        }
        out.items.push_back(std::move(item));
    }
    return out;
}

inline Result<engine::Transaction> parse_transaction(std::string_view text,
                                                     const ApiOptions& options,
                                                     RandomSource& random, std::int64_t now_ms) {
    QUEEN_TRY(auto body, detail::parse_body(text, options.json_depth_max));
    if (!body.is_object()) {
        return bad("operations array required");
    }
    const auto operations = body.find("operations");
    if (operations == body.end() || !operations->is_array()) {
        return bad("operations array required");
    }
    if (operations->empty()) {
        return bad("operations array cannot be empty");
    }
    const auto too_many = [&options] {
        return bad("transaction has more than " +
                   std::to_string(options.transaction_operations_max) + " operations");
    };
    engine::Transaction out;
    const nlohmann::json empty_object = nlohmann::json::object();
    for (const nlohmann::json& operation : *operations) {
        if (!operation.is_object()) {
            return bad("Each operation must be an object");
        }
        const std::size_t first_op = out.ops.size();
        const auto type = operation.find("type");
        const std::string type_name =
            type != operation.end() && type->is_string() ? type->get<std::string>() : "";
        if (type_name == "push") {
            const auto items = operation.find("items");
            if (items != operation.end() && !items->is_null()) {
                if (!items->is_array()) {
                    return bad("push operation items must be an array");
                }
                for (const nlohmann::json& item : *items) {
                    if (out.ops.size() == options.transaction_operations_max) {
                        return too_many();
                    }
                    bool has_client_id = false;
                    engine::TransactionOp op;
                    op.kind = engine::TransactionOp::Kind::push;
                    QUEEN_TRY(op.push, push_item(item, options, random, now_ms, empty_object,
                                                 "payload", has_client_id));
                    QUEEN_TRY(detail::parse_push_delay(item, op.timer));
                    out.ops.push_back(std::move(op));
                }
            } else {
                const bool has_payload = operation.contains("payload");
                bool has_client_id = false;
                engine::TransactionOp op;
                op.kind = engine::TransactionOp::Kind::push;
                QUEEN_TRY(op.push, push_item(operation, options, random, now_ms, empty_object,
                                             has_payload ? "payload" : "data", has_client_id));
                QUEEN_TRY(detail::parse_push_delay(operation, op.timer));
                out.ops.push_back(std::move(op));
            }
        } else if (type_name == "ack") {
            engine::TransactionOp op;
            op.kind = engine::TransactionOp::Kind::ack;
            QUEEN_TRY(op.ack, ack_item(operation, options, "ack operation needs a transactionId",
                                       "ack operation needs a partitionId"));
            out.ops.push_back(std::move(op));
        } else if (const auto kind = detail::extended_operation_kind(type_name)) {
            engine::TransactionOp op;
            QUEEN_TRY(detail::parse_extended_operation(operation, *kind, options, op));
            out.ops.push_back(std::move(op));
        } else {
            return bad("Unknown operation type: " + type_name);
        }
        if (const auto lock = operation.find("lock"); (type_name == "push" || type_name == "ack") &&
                                                      lock != operation.end() && !lock->is_null()) {
            QUEEN_TRY(auto guard, detail::parse_lock_grant(*lock));
            for (std::size_t i = first_op; i < out.ops.size(); ++i) {
                out.ops[i].guard = guard;
            }
        }
        if (out.ops.size() > options.transaction_operations_max) {
            return too_many();
        }
    }
    if (const auto next = body.find("next"); next != body.end() && !next->is_null()) {
        QUEEN_TRY(out.next, detail::parse_next_pop(*next, options));
    }
    return out;
}

/// The first difference between two operations the readers made, "" when they are the same
/// (payloads and values compared as JSON: the two readers write different texts of one value).
inline std::string operation_difference(const engine::TransactionOp& a,
                                        const engine::TransactionOp& b) {
    using Kind = engine::TransactionOp::Kind;
    const auto same_json = [](const Bytes& x, const Bytes& y) {
        const auto px = nlohmann::json::parse(x.begin(), x.end(), nullptr, false);
        const auto py = nlohmann::json::parse(y.begin(), y.end(), nullptr, false);
        return !px.is_discarded() && px == py;
    };
    if (a.kind != b.kind) {
        return "kind";
    }
    if (a.kind == Kind::push || a.kind == Kind::timer_set) {
        if (a.push.queue != b.push.queue || a.push.partition != b.push.partition ||
            a.push.transaction_id.view() != b.push.transaction_id.view() ||
            a.push.trace_id != b.push.trace_id || !same_json(a.push.payload, b.push.payload)) {
            return "push item";
        }
    }
    if (a.kind == Kind::ack) {
        const queues::AckItem& x = a.ack;
        const queues::AckItem& y = b.ack;
        if (x.partition != y.partition || x.transaction_id.view() != y.transaction_id.view() ||
            x.status != y.status || x.has_error != y.has_error || x.error != y.error ||
            x.lease != y.lease || x.group != y.group) {
            return "ack item";
        }
    }
    if (a.kind == Kind::kv_set || a.kind == Kind::kv_delete || a.kind == Kind::kv_check) {
        if (a.kv.bucket != b.kv.bucket || a.kv.key != b.kv.key ||
            a.kv.expected_version != b.kv.expected_version || a.kv.ttl_ms != b.kv.ttl_ms ||
            (a.kind == Kind::kv_set && !same_json(a.kv.value, b.kv.value))) {
            return "kv";
        }
    }
    if (a.timer.id != b.timer.id || a.timer.at != b.timer.at ||
        a.timer.delay_ms != b.timer.delay_ms || a.timer.interval_ms != b.timer.interval_ms ||
        a.timer.end_at != b.timer.end_at || a.timer.replace != b.timer.replace) {
        return "timer or delay";
    }
    if (a.lock.name != b.lock.name || a.lock.token != b.lock.token) {
        return "lock";
    }
    if (a.guard.has_value() != b.guard.has_value() ||
        (a.guard && (a.guard->name != b.guard->name || a.guard->token != b.guard->token))) {
        return "guard";
    }
    return {};
}

}  // namespace queen::api::reference
