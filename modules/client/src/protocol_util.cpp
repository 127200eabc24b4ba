// client/src/protocol_util.cpp — the answer helpers of protocol_util.hpp: errors, checks, acks.
#include "protocol_util.hpp"

#include "json_util.hpp"
#include "queen/client/client.hpp"
#include "queen/client/errc.hpp"
#include "queen/core/json_scan.hpp"

namespace queen::client::detail {

using json::for_each_member;
using json::is_key;
using json::is_valid_json;
using json::raw_to_bool;
using json::raw_to_text;
using json::scan_json;

std::string describe(const HttpRequest& request) {
    return std::string{request.method} + " " + std::string{request.target};
}

queen::Error shape_error(const HttpRequest& request, const std::string& why) {
    return queen::Error{Errc::bad_response, describe(request) + ": " + why};
}

queen::Result<Json> object_answer(const HttpRequest& request, std::string_view body) {
    QUEEN_TRY(auto answer, parse_json(body, describe(request)));
    if (!answer.is_object()) {
        return shape_error(request, "expected an object");
    }
    return answer;
}

queen::Result<Json> array_answer(const HttpRequest& request, std::string_view body,
                                 const char* key) {
    QUEEN_TRY(auto answer, parse_json(body, describe(request)));
    if (key != nullptr && answer.is_object()) {
        if (const auto member = answer.find(key); member != answer.end()) {
            Json array = std::move(*member);
            answer = std::move(array);
        }
    }
    if (!answer.is_array()) {
        return shape_error(
            request, key == nullptr ? std::string{"expected an array"}
                                    : "expected {\"" + std::string{key} + "\": [...]} or an array");
    }
    return answer;
}

// The server's {"error": "..."} text, or "HTTP <status>" with a little of an unexpected body.
std::string error_message_of(const HttpResponse& response) {
    try {
        const Json body = Json::parse(response.body);
        if (body.is_object() && body.contains("error") && body["error"].is_string()) {
            return body["error"].get<std::string>();
        }
    } catch (const Json::exception&) {
        // Not JSON: fall through to the status line.
    }
    std::string message = "HTTP " + std::to_string(response.status);
    if (!response.body.empty()) {
        message += ": " + response.body.substr(0, 200);
    }
    return message;
}

void append_query(std::string& target, bool& is_first, std::string_view key,
                  std::string_view value) {
    target += is_first ? '?' : '&';
    is_first = false;
    target.append(key).append("=").append(percent_encode(value));
}

// The raw-scanner twin of check_not_rejected() (below) for the hot paths.
queen::Status check_raw_not_rejected(const HttpRequest& request, std::string_view object) {
    bool has_success = false;
    bool is_success = true;
    std::string why;
    for_each_member(object, [&](std::string_view key, std::string_view raw) {
        if (is_key(key, "success")) {
            has_success = true;
            is_success = raw_to_bool(raw);
        } else if (is_key(key, "error")) {
            why = raw_to_text(raw);
        }
        return true;
    });
    if (has_success && !is_success) {
        return queen::Error{Errc::rejected,
                            describe(request) + ": " + (why.empty() ? "success=false" : why)};
    }
    return {};
}

// A 2xx object that reports failure ({"success": false, "error": ...}) is rejected.
queen::Status check_not_rejected(const HttpRequest& request, const Json& body) {
    if (body.is_object() && body.contains("success") && !boolean_of(body, "success")) {
        const std::string why = text_of(body, "error");
        return queen::Error{Errc::rejected,
                            describe(request) + ": " + (why.empty() ? "success=false" : why)};
    }
    return {};
}

queen::Result<std::string_view> scan_body(const HttpRequest& request, std::string_view body) {
    std::string_view value;
    if (!scan_json(body, value)) {
        return shape_error(request, "invalid JSON in the answer");
    }
    return value;
}

// The error of an answer the single-pass walk rejected: invalid JSON, or valid JSON of the
// wrong shape (`why`).
queen::Error walk_error(const HttpRequest& request, std::string_view body, const std::string& why) {
    if (!is_valid_json(body)) {
        return shape_error(request, "invalid JSON in the answer");
    }
    return shape_error(request, why);
}

// Reads the members of one ack result at the cursor (an object) into `result`.
bool read_ack_result(json::Cursor& cursor, AckResult& result) {
    if (!cursor.enter_object()) {
        return false;
    }
    // The order Queen writes an ack result in.
    static constexpr std::string_view members[] = {
        R"("index":)",     R"("transactionId":)", R"("success":)",       R"("error":)",
        R"("queueName":)", R"("partitionName":)", R"("leaseReleased":)", R"("dlq":)"};
    std::size_t expected = 0;
    bool is_first = true;
    std::string_view key;
    std::string_view raw;
    while (cursor.next_member_in_order(members, expected, key, is_first)) {
        if (is_key(key, "transactionId")) {
            cursor.read_text(result.transaction_id);
        } else if (is_key(key, "success")) {
            cursor.read_bool(result.is_success);
        } else if (is_key(key, "error")) {
            cursor.read_text(result.error);
        } else if (is_key(key, "queueName")) {
            cursor.read_text(result.queue_name);
        } else if (is_key(key, "partitionName")) {
            cursor.read_text(result.partition_name);
        } else if (is_key(key, "dlq")) {
            cursor.read_bool(result.is_dlq);
        } else if (is_key(key, "leaseReleased") && cursor.peek() != 'n') {
            bool is_released = false;
            cursor.read_bool(is_released);
            result.is_lease_released = is_released;
        } else if (!cursor.read_value(raw)) {
            return false;
        } else if (is_key(key, "leaseReleased")) {
            result.is_lease_released = std::nullopt;  // null
        }
    }
    return cursor.is_ok();
}

bool parse_ack_result(std::string_view raw, AckResult& result) {
    return for_each_member(raw, [&](std::string_view key, std::string_view value) {
        if (is_key(key, "transactionId")) {
            result.transaction_id = raw_to_text(value);
        } else if (is_key(key, "success")) {
            result.is_success = raw_to_bool(value);
        } else if (is_key(key, "error")) {
            result.error = raw_to_text(value);
        } else if (is_key(key, "queueName")) {
            result.queue_name = raw_to_text(value);
        } else if (is_key(key, "partitionName")) {
            result.partition_name = raw_to_text(value);
        } else if (is_key(key, "leaseReleased")) {
            result.is_lease_released =
                json::raw_is_null(value) ? std::nullopt : std::optional<bool>{raw_to_bool(value)};
        } else if (is_key(key, "dlq")) {
            result.is_dlq = raw_to_bool(value);
        }
        return true;
    });
}

namespace {

// The members of one ack: the fields of an Ack, wherever they are stored.
void write_ack_members(json::Writer& out, std::string_view transaction_id,
                       std::string_view partition_id, AckStatus status, std::string_view error,
                       std::string_view lease_id, const std::string_view* consumer_group) {
    out.field("transactionId", transaction_id)
        .field("partitionId", partition_id)
        .field("status", to_string(status))
        .field_or_null("error", error);
    if (consumer_group != nullptr) {
        out.field_or_null("consumerGroup", *consumer_group);
    }
    if (!lease_id.empty()) {
        out.field("leaseId", lease_id);
    }
}

}  // namespace

void write_ack_fields(json::Writer& out, const Ack& ack, bool is_group_included) {
    const std::string_view group = ack.consumer_group;
    write_ack_members(out, ack.transaction_id, ack.partition_id, ack.status, ack.error,
                      ack.lease_id, is_group_included ? &group : nullptr);
}

void write_message_ack_fields(json::Writer& out, const Message& message, AckStatus status) {
    const std::string_view group = message.consumer_group;
    write_ack_members(out, message.transaction_id, message.partition_id, status, {},
                      message.lease_id, &group);
}

std::string push_delay_problem(const PushItem& item) {
    if (item.delay_ms < 0 || item.visible_at_ms < 0) {
        return "a push item has a negative delay_ms or visible_at_ms";
    }
    if (item.delay_ms != 0 && item.visible_at_ms != 0) {
        return "a push item has both delay_ms and visible_at_ms";
    }
    return {};
}

std::string timer_set_problem(const TimerSet& timer) {
    if (timer.id.empty()) {
        return "timer.set needs an id";
    }
    if (timer.queue.empty()) {
        return "timer.set needs a queue";
    }
    if (timer.at_ms < 0 || timer.delay_ms < 0 || timer.interval_ms < 0 || timer.end_at_ms < 0) {
        return "timer.set times must not be negative";
    }
    if (timer.at_ms != 0 && timer.delay_ms != 0) {
        return "timer.set takes at_ms or delay_ms, not both";
    }
    return {};
}

void write_kv_set_fields(json::Writer& out, const KvSet& set) {
    out.field("bucket", set.bucket).field("key", set.key).key("value").raw(set.value_json);
    if (set.expected_version) {
        out.field("expectedVersion", *set.expected_version);
    }
    if (set.ttl_ms != 0) {
        out.field("ttlMs", set.ttl_ms);
    }
}

void write_timer_set_fields(json::Writer& out, const TimerSet& timer) {
    out.field("id", timer.id).field("queue", timer.queue);
    if (!timer.partition.empty()) {
        out.field("partition", timer.partition);
    }
    out.key("payload").raw(timer.payload_json);
    if (!timer.transaction_id.empty()) {
        out.field("transactionId", timer.transaction_id);
    }
    if (!timer.trace_id.empty()) {
        out.field("traceId", timer.trace_id);
    }
    if (timer.at_ms != 0) {
        out.field("at", timer.at_ms);
    } else {
        out.field("delayMs", timer.delay_ms);
    }
    if (timer.interval_ms != 0) {
        out.field("intervalMs", timer.interval_ms);
    }
    if (timer.end_at_ms != 0) {
        out.field("endAt", timer.end_at_ms);
    }
    if (timer.is_replace) {
        out.field("replace", true);
    }
}

}  // namespace queen::client::detail
