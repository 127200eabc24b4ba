// api/src/parse.cpp — request JSON and query strings -> queue commands (docs/http-api.md, data
// plane).
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

Status check_name(std::string_view value, std::string_view what, const ApiOptions& options) {
    if (value.empty()) {
        return bad(std::string(what) + " must not be empty");
    }
    if (value.size() > options.name_bytes_max) {
        return bad(std::string(what) + " is longer than " + std::to_string(options.name_bytes_max) +
                   " bytes");
    }
    bool is_ascii = true;
    for (const char c : value) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f) {
            return bad(std::string(what) + " must not contain control characters");
        }
        if (c == '/') {
            return bad(std::string(what) + " must not contain '/'");
        }
        is_ascii = is_ascii && byte < 0x80;
    }
    if (!is_ascii && !is_utf8(value)) {
        return bad(std::string(what) + " must be UTF-8");
    }
    if (value == "." || value == "..") {
        return bad(std::string(what) + " must not be '.' or '..'");
    }
    return {};
}

Status check_id_length(std::string_view value, std::string_view what, const ApiOptions& options) {
    if (value.size() > options.name_bytes_max) {
        return bad(std::string(what) + " is longer than " + std::to_string(options.name_bytes_max) +
                   " bytes");
    }
    return {};
}

Result<std::string> name_param(const http::Request& request, std::string_view param,
                               std::string_view what, const ApiOptions& options) {
    const std::string_view value = request.param(param).value_or("");
    QUEEN_TRY(check_name(value, what, options));
    return std::string(value);
}

Result<std::string> name_query(const http::Request& request, std::string_view key,
                               const ApiOptions& options) {
    const std::string_view value = request.query_value(key).value_or("");
    if (!value.empty()) {
        QUEEN_TRY(check_name(value, key, options));
    }
    return std::string(value);
}

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
        if (!out.namespace_name.empty()) {  // "" = none
            QUEEN_TRY(check_name(out.namespace_name, "namespace", options));
        }
    }
    if (const auto task = body.find("task"); task != body.end() && task->is_string()) {
        out.task = task->get<std::string>();
        if (!out.task.empty()) {  // "" = none
            QUEEN_TRY(check_name(out.task, "task", options));
        }
    }
    const auto found = body.find("options");
    if (found == body.end() || found->is_null()) {
        return out;
    }
    if (!found->is_object()) {
        return bad("options must be an object");
    }
    const nlohmann::json& given = *found;
    // Configure is a full overwrite: a missing key takes its default (docs/http-api.md, configure).
    // Keys are read in table order, so the first bad one (in that order) is the one reported.
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

queues::SubscriptionMode subscription_mode_named(std::string_view mode) noexcept {
    return mode == "new" || mode == "new-only" ? queues::SubscriptionMode::new_only
                                               : queues::SubscriptionMode::all;
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
        QUEEN_TRY(out.namespace_name, name_query(request, "namespace", options));
        QUEEN_TRY(out.task, name_query(request, "task", options));
        if (out.namespace_name.empty() && out.task.empty()) {
            return bad(
                "namespace or task is required to pop without a queue (or pop a queue: "
                "/api/v1/pop/queue/:queue)");
        }
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
    // `partitions` has a minimum of 1 (docs/http-api.md, pop): 0 is read as 1. The partition route
    // ignores it.
    QUEEN_TRY(const std::int64_t partitions,
              query_integer(request, "partitions", 1, 0, options.pop_partitions_max));
    out.partitions = has_partition || partitions < 1 ? 1 : static_cast<std::uint32_t>(partitions);
    out.auto_ack = request.query_bool("autoAck", false);

    if (const auto group = request.query_value("consumerGroup"); group && !group->empty()) {
        out.group = std::string(*group);
        QUEEN_TRY(check_name(out.group, "consumerGroup", options));
    }

    std::string_view mode = options.pop_subscription_mode_default;
    if (const auto given = request.query_value("subscriptionMode"); given && !given->empty()) {
        mode = *given;
    }
    out.subscription_mode = subscription_mode_named(mode);
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

    wait.is_enabled = request.query_bool("wait", false);
    QUEEN_TRY(const std::int64_t timeout,
              query_integer(request, "timeout", options.pop_timeout_ms_default, 0, INT64_MAX));
    // Clients may ask for very long polls; they get at most pop_timeout_ms_max (then 204).
    wait.timeout_ms = timeout > options.pop_timeout_ms_max ? options.pop_timeout_ms_max : timeout;
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
    QUEEN_TRY(check_id_length(out.transaction_id, "transactionId", options));
    QUEEN_TRY(out.partition, parse_client_partition_id(partition_id->get_ref<const std::string&>(),
                                                       "partitionId"));
    QUEEN_TRY(out.group, parse_group(body, "consumerGroup", options));
    QUEEN_TRY(auto event_type, string_field(body, "eventType", "eventType must be a string"));
    if (event_type.has_value() && !event_type->empty()) {
        out.event_type = std::move(*event_type);
        QUEEN_TRY(check_id_length(out.event_type, "eventType", options));
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
            QUEEN_TRY(check_id_length(name, "trace name", options));
        }
    }
    QUEEN_TRY(auto text, payload_text(*data, options, "data"));
    out.data = to_bytes(text);
    return out;
}

}  // namespace queen::api::detail
