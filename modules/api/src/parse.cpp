// api/src/parse.cpp — request JSON and query strings -> queue commands (spec section 4).
#include "parse.hpp"

#include <array>
#include <charconv>
#include <type_traits>

#include "json.hpp"

namespace queen::api::detail {
namespace {

Error bad(std::string message) {
    return Error{Errc::invalid_argument, std::move(message)};
}

Status check_name(std::string_view value, std::string_view what, const ApiOptions& options) {
    if (value.size() > options.name_bytes_max) {
        return bad(std::string(what) + " is longer than " + std::to_string(options.name_bytes_max) +
                   " bytes");
    }
    return {};
}

// The compact JSON text of a payload, bounded.
Result<std::string> payload_text(const nlohmann::json& value, const ApiOptions& options,
                                 std::string_view what) {
    std::string text = dump_json(value);
    if (text.size() > options.payload_bytes_max) {
        return bad(std::string(what) + " is " + std::to_string(text.size()) +
                   " bytes, more than the limit of " + std::to_string(options.payload_bytes_max));
    }
    return text;
}

Bytes to_bytes(const std::string& text) {
    return Bytes(text.begin(), text.end());
}

// Shared by /push and transaction push operations. `default_payload` differs: null for /push,
// {} for transactions (spec 4.2 and 4.6).
Result<queues::PushItem> parse_push_item(const nlohmann::json& item, const ApiOptions& options,
                                         RandomSource& random, std::int64_t now_ms,
                                         const nlohmann::json& default_payload,
                                         std::string_view payload_key, bool& has_client_id) {
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
        QUEEN_TRY(check_name(out.transaction_id, "TransactionId", options));
    } else {
        // Generated here, at the edge, so the log entry (and every replica) has the same id.
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
    QUEEN_TRY(auto text,
              payload_text(payload == item.end() ? default_payload : *payload, options, "payload"));
    out.payload = to_bytes(text);
    return out;
}

Result<queues::AckItem> parse_ack_item(const nlohmann::json& item, const ApiOptions& options,
                                       std::string_view missing_transaction,
                                       std::string_view missing_partition) {
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
    QUEEN_TRY(check_name(out.transaction_id, "transactionId", options));

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
    // A lease id that is not one of ours never matches: the ack answers "Invalid or expired
    // lease" as the old server did for a foreign lease.
    out.lease = lease.has_value() ? queues::parse_lease_id(*lease) : queues::LeaseId{0};
    QUEEN_TRY(out.group, parse_group(item, "consumerGroup", options));
    return out;
}

Error too_many_operations(const ApiOptions& options) {
    return bad("transaction has more than " + std::to_string(options.transaction_operations_max) +
               " operations");
}

std::string format_uuid_bytes(const std::array<std::uint8_t, 16>& bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out(36, '-');  // filled in place: the dashes stay at 8, 13, 18 and 23
    std::size_t at = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            ++at;
        }
        out[at++] = digits[bytes[i] >> 4];
        out[at++] = digits[bytes[i] & 0xf];
    }
    return out;
}

std::string query_error(std::string_view name, std::int64_t min, std::int64_t max) {
    return std::string(name) + " must be an integer between " + std::to_string(min) + " and " +
           std::to_string(max);
}

}  // namespace

std::string time_uuid(RandomSource& random, std::int64_t now_ms) {
    std::array<std::uint8_t, 16> bytes{};
    random.fill(bytes.data(), bytes.size());
    const auto ms = static_cast<std::uint64_t>(std::max<std::int64_t>(now_ms, 0));
    for (int i = 0; i < 6; ++i) {
        bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(ms >> (8 * (5 - i)));
    }
    bytes[6] = static_cast<std::uint8_t>((bytes[6] & 0x0f) | 0x70);  // version 7
    bytes[8] = static_cast<std::uint8_t>((bytes[8] & 0x3f) | 0x80);  // RFC 9562 variant
    return format_uuid_bytes(bytes);
}

std::string random_uuid(RandomSource& random) {
    std::array<std::uint8_t, 16> bytes{};
    random.fill(bytes.data(), bytes.size());
    bytes[6] = static_cast<std::uint8_t>((bytes[6] & 0x0f) | 0x40);  // version 4
    bytes[8] = static_cast<std::uint8_t>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
    return format_uuid_bytes(bytes);
}

queues::AckStatus parse_ack_status(std::string_view text) noexcept {
    if (text == "completed" || text == "success") {
        return queues::AckStatus::completed;
    }
    if (text == "failed") {
        return queues::AckStatus::failed;
    }
    if (text == "dlq") {
        return queues::AckStatus::dlq;
    }
    if (text == "retry") {
        return queues::AckStatus::retry;
    }
    return queues::AckStatus::unknown;
}

Result<queues::PartitionId> parse_client_partition_id(std::string_view text,
                                                      std::string_view field) {
    if (!is_uuid_text(text)) {
        return bad(std::string(field) + " must be a UUID");
    }
    return queues::parse_partition_id(text);
}

Result<std::string> parse_group(const nlohmann::json& object, std::string_view key,
                                const ApiOptions& options) {
    QUEEN_TRY(auto group, string_field(object, key, std::string(key) + " must be a string"));
    if (!group.has_value() || group->empty()) {
        return std::string(queues::queue_mode_group);
    }
    QUEEN_TRY(check_name(*group, key, options));
    return std::move(*group);
}

Result<queues::ConfigureQueue> parse_configure(const nlohmann::json& body,
                                               const ApiOptions& options) {
    if (!body.is_object()) {
        return bad("queue is required");
    }
    const auto queue = body.find("queue");
    if (queue == body.end() || !queue->is_string()) {
        return bad("queue is required");
    }
    queues::ConfigureQueue out;
    out.queue = queue->get<std::string>();
    QUEEN_TRY(check_name(out.queue, "queue", options));
    // Non-string namespace/task are ignored (stored as ""), as the old server did.
    if (const auto ns = body.find("namespace"); ns != body.end() && ns->is_string()) {
        out.namespace_name = ns->get<std::string>();
        QUEEN_TRY(check_name(out.namespace_name, "namespace", options));
    }
    if (const auto task = body.find("task"); task != body.end() && task->is_string()) {
        out.task = task->get<std::string>();
        QUEEN_TRY(check_name(out.task, "task", options));
    }
    const auto found = body.find("options");
    if (found == body.end() || found->is_null()) {
        return out;
    }
    if (!found->is_object()) {
        return bad("options must be an object");
    }
    const nlohmann::json& given = *found;
    // Configure is a full overwrite: a missing key takes its default (spec 4.1). Keys are read
    // in table order, so the first bad one (in that order) is the one reported.
    Status status;
    for_each_queue_option([&](const auto& option) {
        using T = decltype(option.default_value);
        if (!status) {
            return;
        }
        Result<T> value = [&]() -> Result<T> {
            if constexpr (std::is_same_v<T, bool>) {
                return boolean_field(given, option.key, option.default_value);
            } else {
                return integer_field(given, option.key, option.default_value, option.min,
                                     option.max);
            }
        }();
        if (!value) {
            status = std::move(value).error();
            return;
        }
        out.options.*option.member = *value;
    });
    QUEEN_TRY(std::move(status));
    return out;
}

Result<ParsedPush> parse_push(const nlohmann::json& body, const ApiOptions& options,
                              RandomSource& random, std::int64_t now_ms) {
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
    out.push.items.reserve(items->size());
    out.has_client_transaction_id.reserve(items->size());
    const nlohmann::json null_payload;
    for (const nlohmann::json& item : *items) {
        bool has_client_id = false;
        QUEEN_TRY(auto parsed, parse_push_item(item, options, random, now_ms, null_payload,
                                               "payload", has_client_id));
        out.push.items.push_back(std::move(parsed));
        out.has_client_transaction_id.push_back(has_client_id);
    }
    return out;
}

Result<std::int64_t> query_integer(const http::Request& request, std::string_view name,
                                   std::int64_t fallback, std::int64_t min, std::int64_t max) {
    const auto text = request.query_value(name);
    if (!text.has_value() || text->empty()) {
        return fallback;
    }
    std::int64_t value = 0;
    const char* begin = text->data();
    const char* end = begin + text->size();
    const auto [stop, error] = std::from_chars(begin, end, value);
    if (error != std::errc{} || stop != end || value < min || value > max) {
        return bad(query_error(name, min, max));
    }
    return value;
}

bool query_boolean(const http::Request& request, std::string_view name, bool fallback) {
    const auto text = request.query_value(name);
    if (!text.has_value()) {
        return fallback;
    }
    return *text == "true" || *text == "1";
}

Result<queues::Pop> parse_pop(const http::Request& request, bool has_partition,
                              const ApiOptions& options, PopWait& wait) {
    queues::Pop out;
    if (const auto queue = request.param("queue"); queue.has_value()) {
        if (queue->empty()) {
            return bad("queue is required");
        }
        out.queue = std::string(*queue);
        QUEEN_TRY(check_name(out.queue, "queue", options));
    } else {
        // GET /api/v1/pop: the queues of a namespace and/or a task (what the official clients
        // send for a consumer that names no queue).
        out.namespace_name = std::string(request.query_value("namespace").value_or(""));
        out.task = std::string(request.query_value("task").value_or(""));
        if (out.namespace_name.empty() && out.task.empty()) {
            return bad(
                "namespace or task is required to pop without a queue (or pop a queue: "
                "/api/v1/pop/queue/:queue)");
        }
        QUEEN_TRY(check_name(out.namespace_name, "namespace", options));
        QUEEN_TRY(check_name(out.task, "task", options));
    }
    if (has_partition) {
        const auto partition = request.param("partition");
        if (!partition.has_value() || partition->empty()) {
            return bad("partition is required");
        }
        out.has_partition = true;
        out.partition = std::string(*partition);
        QUEEN_TRY(check_name(out.partition, "partition", options));
    }
    QUEEN_TRY(const std::int64_t batch,
              query_integer(request, "batch", options.pop_batch_default, 1, options.pop_batch_max));
    out.batch = static_cast<std::uint32_t>(batch);
    // `partitions` has a minimum of 1 (spec 4.3): 0 is read as 1. The partition route ignores it.
    QUEEN_TRY(const std::int64_t partitions,
              query_integer(request, "partitions", 1, 0, options.pop_partitions_max));
    out.partitions = has_partition || partitions < 1 ? 1 : static_cast<std::uint32_t>(partitions);
    out.auto_ack = query_boolean(request, "autoAck", false);

    if (const auto group = request.query_value("consumerGroup"); group && !group->empty()) {
        out.group = std::string(*group);
        QUEEN_TRY(check_name(out.group, "consumerGroup", options));
    }

    std::string_view mode = options.pop_subscription_mode_default;
    if (const auto given = request.query_value("subscriptionMode"); given && !given->empty()) {
        mode = *given;
    }
    out.subscription_mode = mode == "new" || mode == "new-only" ? queues::SubscriptionMode::new_only
                                                                : queues::SubscriptionMode::all;
    if (const auto from = request.query_value("subscriptionFrom"); from && !from->empty()) {
        if (*from == "now") {
            out.subscription_from = queues::SubscriptionFrom::now;
        } else {
            const auto at = parse_iso(*from);
            if (!at.has_value()) {
                return bad("subscriptionFrom must be 'now' or an ISO-8601 timestamp");
            }
            out.subscription_from = queues::SubscriptionFrom::timestamp;
            out.subscription_from_ms = TimestampMs{*at};
        }
    }

    wait.is_enabled = query_boolean(request, "wait", false);
    QUEEN_TRY(const std::int64_t timeout,
              query_integer(request, "timeout", options.pop_timeout_ms_default, 0, INT64_MAX));
    // Clients may ask for very long polls; they get at most pop_timeout_ms_max (then 204).
    wait.timeout_ms = timeout > options.pop_timeout_ms_max ? options.pop_timeout_ms_max : timeout;
    return out;
}

Result<queues::Ack> parse_ack(const nlohmann::json& body, const ApiOptions& options) {
    if (!body.is_object()) {
        return bad("transactionId is required");
    }
    QUEEN_TRY(auto item, parse_ack_item(body, options, "transactionId is required",
                                        "partitionId is required to ensure message uniqueness"));
    queues::Ack out;
    out.items.push_back(std::move(item));
    return out;
}

Result<queues::Ack> parse_ack_batch(const nlohmann::json& body, const ApiOptions& options) {
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
    // The top-level group wins over per-item groups (spec 4.5); without one, per-item groups.
    QUEEN_TRY(auto top_group,
              string_field(body, "consumerGroup", "consumerGroup must be a string"));
    const bool has_top_group = top_group.has_value() && !top_group->empty();
    if (has_top_group) {
        QUEEN_TRY(check_name(*top_group, "consumerGroup", options));
    }
    queues::Ack out;
    out.items.reserve(list->size());
    for (const nlohmann::json& entry : *list) {
        QUEEN_TRY(auto item,
                  parse_ack_item(entry, options,
                                 "Each acknowledgment must have a valid transactionId string",
                                 "Each acknowledgment must have a valid partitionId string to "
                                 "ensure message uniqueness"));
        if (has_top_group) {
            item.group = *top_group;
        }
        out.items.push_back(std::move(item));
    }
    return out;
}

Result<queues::Transaction> parse_transaction(const nlohmann::json& body, const ApiOptions& options,
                                              RandomSource& random, std::int64_t now_ms) {
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
    queues::Transaction out;
    const nlohmann::json empty_object = nlohmann::json::object();
    for (const nlohmann::json& operation : *operations) {
        if (!operation.is_object()) {
            return bad("Each operation must be an object");
        }
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
                        return too_many_operations(options);
                    }
                    bool has_client_id = false;
                    queues::TransactionOp op;
                    op.kind = queues::TransactionOp::Kind::push;
                    QUEEN_TRY(op.push, parse_push_item(item, options, random, now_ms, empty_object,
                                                       "payload", has_client_id));
                    out.ops.push_back(std::move(op));
                }
            } else {
                // A flat push: {type, queue, partition, payload|data, transactionId, traceId}.
                const bool has_payload = operation.contains("payload");
                bool has_client_id = false;
                queues::TransactionOp op;
                op.kind = queues::TransactionOp::Kind::push;
                QUEEN_TRY(op.push,
                          parse_push_item(operation, options, random, now_ms, empty_object,
                                          has_payload ? "payload" : "data", has_client_id));
                out.ops.push_back(std::move(op));
            }
        } else if (type_name == "ack") {
            queues::TransactionOp op;
            op.kind = queues::TransactionOp::Kind::ack;
            QUEEN_TRY(op.ack,
                      parse_ack_item(operation, options, "ack operation needs a transactionId",
                                     "ack operation needs a partitionId"));
            out.ops.push_back(std::move(op));
        } else {
            return bad("Unknown operation type: " + type_name);
        }
        if (out.ops.size() > options.transaction_operations_max) {
            return too_many_operations(options);
        }
    }
    return out;
}

Result<queues::ExtendLease> parse_extend_lease(std::string_view lease_text,
                                               const nlohmann::json& body,
                                               const ApiOptions& options) {
    if (!body.is_object()) {
        return bad("body must be a JSON object");
    }
    queues::ExtendLease out;
    // A lease id that is not one of ours is answered "Lease not found" by apply.
    out.lease = queues::parse_lease_id(lease_text);
    if (out.lease == queues::LeaseId{0}) {
        out.lease = queues::LeaseId{UINT64_MAX};
    }
    QUEEN_TRY(out.seconds, integer_field(body, "seconds", options.lease_extend_seconds_default, 1,
                                         options.lease_extend_seconds_max));
    return out;
}

Result<queues::AddTrace> parse_trace(const nlohmann::json& body, const ApiOptions& options) {
    if (!body.is_object()) {
        return bad("transactionId and partitionId are required");
    }
    const auto transaction_id = body.find("transactionId");
    const auto partition_id = body.find("partitionId");
    if (transaction_id == body.end() || !transaction_id->is_string() ||
        transaction_id->get_ref<const std::string&>().empty() || partition_id == body.end() ||
        !partition_id->is_string() || partition_id->get_ref<const std::string&>().empty()) {
        return bad("transactionId and partitionId are required");
    }
    const auto data = body.find("data");
    if (data == body.end()) {
        return bad("data is required");
    }
    queues::AddTrace out;
    out.transaction_id = transaction_id->get<std::string>();
    QUEEN_TRY(check_name(out.transaction_id, "transactionId", options));
    QUEEN_TRY(out.partition, parse_client_partition_id(partition_id->get_ref<const std::string&>(),
                                                       "partitionId"));
    QUEEN_TRY(out.group, parse_group(body, "consumerGroup", options));
    QUEEN_TRY(auto event_type, string_field(body, "eventType", "eventType must be a string"));
    if (event_type.has_value() && !event_type->empty()) {
        out.event_type = std::move(*event_type);
        QUEEN_TRY(check_name(out.event_type, "eventType", options));
    }
    if (const auto names = body.find("traceNames"); names != body.end() && !names->is_null()) {
        if (names->is_string()) {
            out.names.push_back(names->get<std::string>());
        } else if (names->is_array()) {
            for (const nlohmann::json& name : *names) {
                if (!name.is_string()) {
                    return bad("traceNames must be a string or an array of strings");
                }
                out.names.push_back(name.get<std::string>());
            }
        } else {
            return bad("traceNames must be a string or an array of strings");
        }
        if (out.names.size() > 64) {
            return bad("traceNames has more than 64 names");
        }
        for (const std::string& name : out.names) {
            QUEEN_TRY(check_name(name, "trace name", options));
        }
    }
    QUEEN_TRY(auto text, payload_text(*data, options, "data"));
    out.data = to_bytes(text);
    return out;
}

}  // namespace queen::api::detail
