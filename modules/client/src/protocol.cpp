// client/src/protocol.cpp — request bodies and answer walks of push, pop, batch ack and
// transaction (the hot paths: single-pass JsonCursor walks, storage reused across calls).
#include "queen/client/protocol.hpp"

#include <algorithm>
#include <array>

#include "json_cursor.hpp"
#include "json_util.hpp"
#include "protocol_util.hpp"
#include "queen/client/client.hpp"
#include "queen/client/errc.hpp"
#include "queen/core/assert.hpp"
#include "queen/core/hex.hpp"
#include "queen/core/json_scan.hpp"

namespace queen::client {

// Literals appended as string_views: operator+=(const char*) is an out-of-line call that
// measures the literal with strlen on every append.
using namespace std::string_view_literals;

namespace detail {

using json::for_each_member;
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

// The raw-scanner twin of check_not_rejected() (client.cpp) for the hot paths.
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
bool read_ack_result(JsonCursor& cursor, AckResult& result) {
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

// The members of one ack (no braces): the fields of an Ack, wherever they are stored.
void append_ack_members(std::string& out, std::string_view transaction_id,
                        std::string_view partition_id, AckStatus status, std::string_view error,
                        std::string_view lease_id, const std::string_view* consumer_group) {
    out += R"("transactionId":)"sv;
    append_json_string(out, transaction_id);
    out += R"(,"partitionId":)"sv;
    append_json_string(out, partition_id);
    out += R"(,"status":)"sv;
    append_json_string(out, to_string(status));
    out += R"(,"error":)"sv;
    append_json_string_or_null(out, error);
    if (consumer_group != nullptr) {
        out += R"(,"consumerGroup":)"sv;
        append_json_string_or_null(out, *consumer_group);
    }
    if (!lease_id.empty()) {
        out += R"(,"leaseId":)"sv;
        append_json_string(out, lease_id);
    }
}

}  // namespace

void append_ack_fields(std::string& out, const Ack& ack, bool is_group_included) {
    const std::string_view group = ack.consumer_group;
    append_ack_members(out, ack.transaction_id, ack.partition_id, ack.status, ack.error,
                       ack.lease_id, is_group_included ? &group : nullptr);
}

void append_message_ack_fields(std::string& out, const Message& message, AckStatus status) {
    const std::string_view group = message.consumer_group;
    append_ack_members(out, message.transaction_id, message.partition_id, status, {},
                       message.lease_id, &group);
}

}  // namespace detail

using detail::append_ack_fields;
using detail::append_json_string;
using detail::append_json_string_or_null;
using detail::append_query;
using detail::assign_text;
using detail::check_raw_not_rejected;
using detail::describe;
using detail::is_key;
using detail::JsonCursor;
using detail::read_ack_result;
using detail::scan_body;
using detail::shape_error;
using detail::walk_error;
using json::is_valid_json;
using json::raw_to_bool;
using json::raw_to_integer;

namespace {

PushStatus push_status_of(std::string_view text, bool& is_known) {
    is_known = true;
    if (text == "queued") {
        return PushStatus::queued;
    }
    if (text == "duplicate") {
        return PushStatus::duplicate;
    }
    if (text == "buffered") {
        return PushStatus::buffered;
    }
    is_known = text == "failed";
    return PushStatus::failed;
}

// Empties `result` for reuse: every field back to its default, string capacity kept.
void reset_push_result(PushResult& result) {
    result.status = PushStatus::failed;
    for (std::string* field : {&result.message_id, &result.transaction_id, &result.partition_id,
                               &result.trace_id, &result.queue_name, &result.error}) {
        field->clear();
    }
}

// Empties `result` for reuse: every field back to its default, string capacity kept.
void reset_ack_result(AckResult& result) {
    result.transaction_id.clear();
    result.is_success = false;
    result.error.clear();
    result.queue_name.clear();
    result.partition_name.clear();
    result.is_lease_released.reset();
    result.is_dlq = false;
}

// Empties `message` for reuse: every field back to its default, string capacity kept.
void reset_message(Message& message) {
    for (std::string* field :
         {&message.id, &message.transaction_id, &message.trace_id, &message.data_json,
          &message.producer_sub, &message.created_at, &message.partition_id, &message.partition,
          &message.lease_id, &message.consumer_group, &message.queue}) {
        field->clear();
    }
    message.retry_count = 0;
}

/// The members of a popped message, in the order Queen writes them; `other` is any other key.
enum class MessageMember {
    id,
    transaction_id,
    trace_id,
    data,
    producer_sub,
    created_at,
    partition_id,
    partition,
    lease_id,
    consumer_group,
    retry_count,
    other
};

MessageMember message_member_of(std::string_view key) noexcept {
    if (is_key(key, "id")) {
        return MessageMember::id;
    }
    if (is_key(key, "transactionId")) {
        return MessageMember::transaction_id;
    }
    if (is_key(key, "traceId")) {
        return MessageMember::trace_id;
    }
    if (is_key(key, "data")) {
        return MessageMember::data;
    }
    if (is_key(key, "producerSub")) {
        return MessageMember::producer_sub;
    }
    if (is_key(key, "createdAt")) {
        return MessageMember::created_at;
    }
    if (is_key(key, "partitionId")) {
        return MessageMember::partition_id;
    }
    if (is_key(key, "partition")) {
        return MessageMember::partition;
    }
    if (is_key(key, "leaseId")) {
        return MessageMember::lease_id;
    }
    if (is_key(key, "consumerGroup")) {
        return MessageMember::consumer_group;
    }
    if (is_key(key, "retryCount")) {
        return MessageMember::retry_count;
    }
    return MessageMember::other;
}

/// Inside a message object: true with the next member (false at its end or on failure). The
/// member after the last one read (`expected`) is tried first, written as Queen writes it, so an
/// answer in the server's order is read without looking for its keys.
bool next_message_member(JsonCursor& cursor, MessageMember expected, bool& is_first,
                         MessageMember& member) {
    bool is_expected = false;
    switch (expected) {
        case MessageMember::id: is_expected = cursor.next_member_is(R"("id":)", is_first); break;
        case MessageMember::transaction_id:
            is_expected = cursor.next_member_is(R"("transactionId":)", is_first);
            break;
        case MessageMember::trace_id:
            is_expected = cursor.next_member_is(R"("traceId":)", is_first);
            break;
        case MessageMember::data:
            is_expected = cursor.next_member_is(R"("data":)", is_first);
            break;
        case MessageMember::producer_sub:
            is_expected = cursor.next_member_is(R"("producerSub":)", is_first);
            break;
        case MessageMember::created_at:
            is_expected = cursor.next_member_is(R"("createdAt":)", is_first);
            break;
        case MessageMember::partition_id:
            is_expected = cursor.next_member_is(R"("partitionId":)", is_first);
            break;
        case MessageMember::partition:
            is_expected = cursor.next_member_is(R"("partition":)", is_first);
            break;
        case MessageMember::lease_id:
            is_expected = cursor.next_member_is(R"("leaseId":)", is_first);
            break;
        case MessageMember::consumer_group:
            is_expected = cursor.next_member_is(R"("consumerGroup":)", is_first);
            break;
        case MessageMember::retry_count:
            is_expected = cursor.next_member_is(R"("retryCount":)", is_first);
            break;
        case MessageMember::other: break;
    }
    if (is_expected) {
        member = expected;
        return true;
    }
    std::string_view key;
    if (!cursor.next_member(key, is_first)) {
        return false;
    }
    member = message_member_of(key);
    return true;
}

/// One push item object as /push and a transaction's push operation take it; a missing
/// transactionId gets a UUIDv7 from `ids`.
void append_push_item(std::string& body, const PushItem& item, IdSource& ids) {
    body += R"({"queue":)"sv;
    append_json_string(body, item.queue);
    body += R"(,"partition":)"sv;
    append_json_string(body, item.partition.empty() ? default_partition : item.partition);
    body += R"(,"payload":)"sv;
    // Appended as it is (a ternary over "null" would copy it into a temporary string first).
    if (item.payload_json.empty()) {
        body += "null"sv;
    } else {
        body += item.payload_json;
    }
    body += R"(,"transactionId":)"sv;
    if (item.transaction_id.empty()) {
        body += '"';
        ids.append_uuid_v7(body);  // hex digits and dashes: nothing to escape
        body += '"';
    } else {
        append_json_string(body, item.transaction_id);
    }
    if (!item.trace_id.empty()) {
        body += R"(,"traceId":)"sv;
        append_json_string(body, item.trace_id);
    }
    body += '}';
}

}  // namespace

HttpRequest OwnedRequest::view() const noexcept {
    return HttpRequest{method, target, body, has_body, is_idempotent, timeout_ms};
}

UuidV7Generator::UuidV7Generator(std::uint64_t seed, const queen::Clock& clock)
    : clock_(clock),
      rng_(seed ^ static_cast<std::uint64_t>(clock.monotonic_ns()) ^
           (static_cast<std::uint64_t>(clock.wall_ms()) << 20)) {}

void UuidV7Generator::append_uuid_v7(std::string& out) {
    const std::uint64_t random_a = rng_.next();
    const std::uint64_t random_b = rng_.next();
    const auto ms = static_cast<std::uint64_t>(clock_.wall_ms()) & 0xFFFF'FFFF'FFFFULL;
    const std::uint64_t high = (ms << 16) | 0x7000ULL | (random_a & 0x0FFFULL);
    const std::uint64_t low = (random_b & 0x3FFF'FFFF'FFFF'FFFFULL) | 0x8000'0000'0000'0000ULL;
    // 8-4-4-4-12 lowercase hex digits, written by hand (snprintf was a tenth of the bench's
    // CPU), two digits per table lookup.
    char text[36];
    std::size_t at = 0;
    // Bytes [first, last) of `bits`, counted from the most significant.
    const auto put_bytes = [&](std::uint64_t bits, std::size_t first, std::size_t last) {
        put_hex(text + at, bits >> (8 * (8 - last)), last - first);
        at += 2 * (last - first);
    };
    put_bytes(high, 0, 4);
    text[at++] = '-';
    put_bytes(high, 4, 6);
    text[at++] = '-';
    put_bytes(high, 6, 8);
    text[at++] = '-';
    put_bytes(low, 0, 2);
    text[at++] = '-';
    put_bytes(low, 2, 8);
    QUEEN_ASSERT(at == sizeof text, "a UUID has 36 characters");
    out.append(text, sizeof text);
}

queen::Status check_http_status(const HttpRequest& request, const HttpResponse& response) {
    if (response.status >= 200 && response.status < 300) {
        return {};
    }
    return make_http_error(response.status,
                           detail::describe(request) + ": " + detail::error_message_of(response));
}

queen::Status build_push(std::span<const PushItem> items, bool is_payload_validated, IdSource& ids,
                         OwnedRequest& out) {
    if (items.empty()) {
        return queen::Error{Errc::invalid_argument, "push: no items"};
    }
    out.method = "POST";
    out.target = "/api/v1/push";
    out.has_body = true;
    out.is_idempotent = true;
    out.timeout_ms = 0;
    std::string& body = out.body;
    body.clear();
    body.reserve(64 + items.size() * (160 + items.front().payload_json.size()));
    body += R"({"items":[)"sv;
    for (std::size_t i = 0; i < items.size(); ++i) {
        const PushItem& item = items[i];
        if (is_payload_validated && !is_valid_json(item.payload_json)) {
            return queen::Error{Errc::invalid_argument, "push: item " + std::to_string(i) +
                                                            " has a payload that is not JSON"};
        }
        if (i > 0) {
            body += ',';
        }
        append_push_item(body, item, ids);
    }
    body += "]}"sv;
    return {};
}

// The order Queen writes a push result in.
constexpr std::string_view push_result_members[] = {
    R"("index":)",        R"("transaction_id":)", R"("status":)",   R"("message_id":)",
    R"("partition_id":)", R"("trace_id":)",       R"("queueName":)"};

queen::Status read_push_answer(const HttpRequest& http, const HttpResponse& response,
                               std::size_t item_count, std::vector<PushResult>& results) {
    QUEEN_TRY(check_http_status(http, response));
    std::size_t result_count = 0;
    const auto finish = [&results, &result_count] { results.resize(result_count); };
    JsonCursor cursor{response.body};
    if (cursor.peek() != '[') {
        QUEEN_TRY(auto answer, scan_body(http, response.body));
        QUEEN_TRY(check_raw_not_rejected(http, answer));
        return shape_error(http, "expected an array of push results");
    }
    results.reserve(item_count);
    std::string why_bad;
    std::string status;
    cursor.enter_array();
    bool is_first_entry = true;
    while (cursor.next_element(is_first_entry)) {
        if (result_count == results.size()) {
            results.emplace_back();
        }
        PushResult& result = results[result_count++];
        reset_push_result(result);
        bool has_status = false;
        // snake_case keys are the contract; camelCase spellings are accepted when alone.
        bool has_snake_message = false;
        bool has_snake_transaction = false;
        bool has_snake_partition = false;
        bool has_snake_trace = false;
        bool has_queue_name = false;
        if (cursor.peek() != '{') {
            why_bad = "a push result without a status";
            cursor.fail();
            break;
        }
        cursor.enter_object();
        bool is_first = true;
        std::string_view key;
        std::size_t expected = 0;
        while (cursor.next_member_in_order(push_result_members, expected, key, is_first)) {
            if (is_key(key, "status")) {
                has_status = cursor.peek() == '"';
                cursor.read_text(status);
            } else if (is_key(key, "message_id")) {
                has_snake_message = true;
                cursor.read_text(result.message_id);
            } else if (is_key(key, "messageId") && !has_snake_message) {
                cursor.read_text(result.message_id);
            } else if (is_key(key, "transaction_id")) {
                has_snake_transaction = true;
                cursor.read_text(result.transaction_id);
            } else if (is_key(key, "transactionId") && !has_snake_transaction) {
                cursor.read_text(result.transaction_id);
            } else if (is_key(key, "partition_id")) {
                has_snake_partition = true;
                cursor.read_text(result.partition_id);
            } else if (is_key(key, "partitionId") && !has_snake_partition) {
                cursor.read_text(result.partition_id);
            } else if (is_key(key, "trace_id")) {
                has_snake_trace = true;
                cursor.read_text(result.trace_id);
            } else if (is_key(key, "traceId") && !has_snake_trace) {
                cursor.read_text(result.trace_id);
            } else if (is_key(key, "queueName")) {
                has_queue_name = true;
                cursor.read_text(result.queue_name);
            } else if (is_key(key, "queue") && !has_queue_name) {
                cursor.read_text(result.queue_name);
            } else if (is_key(key, "error")) {
                cursor.read_text(result.error);
            } else {
                cursor.skip_value();
            }
        }
        if (!cursor.is_ok()) {
            break;
        }
        if (!has_status) {
            why_bad = "a push result without a status";
            cursor.fail();
            break;
        }
        bool is_known = true;
        result.status = push_status_of(status, is_known);
        if (!is_known && result.error.empty()) {
            result.error = "unknown push status '" + status + "'";
        }
    }
    finish();
    if (!cursor.is_ok() || !cursor.is_at_end()) {
        return walk_error(http, response.body,
                          why_bad.empty() ? "malformed push results" : why_bad);
    }
    if (results.size() != item_count) {
        return shape_error(http, std::to_string(results.size()) + " results for " +
                                     std::to_string(item_count) + " items");
    }
    return {};
}

queen::Status build_pop(const PopRequest& request, std::int64_t wait_margin_ms, OwnedRequest& out) {
    if (request.batch < 1 || request.partitions < 1 || request.timeout_ms < 0) {
        return queen::Error{Errc::invalid_argument,
                            "pop: batch and partitions must be >= 1, timeout_ms >= 0"};
    }
    std::string& target = out.target;
    target.assign("/api/v1/pop/queue/").append(percent_encode(request.queue));
    if (!request.partition.empty()) {
        target += "/partition/" + percent_encode(request.partition);
    }
    bool is_first = true;
    append_query(target, is_first, "batch", std::to_string(request.batch));
    append_query(target, is_first, "wait", request.is_wait ? "true" : "false");
    append_query(target, is_first, "timeout", std::to_string(request.timeout_ms));
    if (!request.consumer_group.empty()) {
        append_query(target, is_first, "consumerGroup", request.consumer_group);
    }
    if (request.partitions > 1 && request.partition.empty()) {
        append_query(target, is_first, "partitions", std::to_string(request.partitions));
    }
    if (request.is_auto_ack) {
        append_query(target, is_first, "autoAck", "true");
    }
    if (!request.subscription_mode.empty()) {
        append_query(target, is_first, "subscriptionMode", request.subscription_mode);
    }
    if (!request.subscription_from.empty()) {
        append_query(target, is_first, "subscriptionFrom", request.subscription_from);
    }
    out.method = "GET";
    out.body.clear();
    out.has_body = false;
    out.is_idempotent = true;
    out.timeout_ms = request.is_wait ? request.timeout_ms + wait_margin_ms : 0;
    return {};
}

queen::Status read_pop_answer(const HttpRequest& http, const HttpResponse& response,
                              const PopRequest& request, PopResult& result) {
    QUEEN_TRY(check_http_status(http, response));
    // Reset the answer in place; messages keep their strings' storage for reuse.
    std::size_t message_count = 0;
    // Messages beyond this answer's count move to the spares, not to the allocator: a later,
    // larger answer takes them back with their strings' storage.
    const auto finish = [&result, &message_count] {
        for (std::size_t i = message_count; i < result.messages.size(); ++i) {
            result.spare_messages.push_back(std::move(result.messages[i]));
        }
        result.messages.resize(message_count);
    };
    result.queue = request.queue;
    for (std::string* field : {&result.partition, &result.partition_id, &result.lease_id,
                               &result.consumer_group, &result.lease_expires_at}) {
        field->clear();
    }
    result.partitions_claimed = 0;
    if (response.status == 204 || response.body.empty()) {
        finish();
        return {};
    }
    JsonCursor cursor{response.body};
    if (cursor.peek() != '{') {
        QUEEN_TRY(scan_body(http, response.body));  // invalid JSON says so
        return shape_error(http, "expected an object");
    }
    cursor.enter_object();
    // Per message: whether it named its own lease and group (null counts as named).
    constexpr std::uint8_t has_lease_flag = 1;
    constexpr std::uint8_t has_group_flag = 2;
    std::vector<std::uint8_t> message_flags;
    bool has_messages = false;
    bool has_partitions_claimed = false;
    std::string why_bad;
    bool is_first_member = true;
    std::string_view key;
    std::string_view raw;
    while (cursor.next_member(key, is_first_member)) {
        if (!is_key(key, "messages") || cursor.peek() != '[') {
            if (!cursor.read_value(raw)) {
                break;
            }
            if (is_key(key, "queue")) {
                assign_text(result.queue, raw);
            } else if (is_key(key, "partition")) {
                assign_text(result.partition, raw);
            } else if (is_key(key, "partitionId")) {
                assign_text(result.partition_id, raw);
            } else if (is_key(key, "leaseId")) {
                assign_text(result.lease_id, raw);
            } else if (is_key(key, "consumerGroup")) {
                assign_text(result.consumer_group, raw);
            } else if (is_key(key, "leaseExpiresAt")) {
                assign_text(result.lease_expires_at, raw);
            } else if (is_key(key, "partitionsClaimed")) {
                has_partitions_claimed = true;
                result.partitions_claimed = raw_to_integer(raw);
            }
            continue;
        }
        has_messages = true;
        cursor.enter_array();
        bool is_first_message = true;
        while (cursor.next_element(is_first_message)) {
            if (cursor.peek() != '{') {
                why_bad = "a message that is not an object";
                cursor.fail();
                break;
            }
            cursor.enter_object();
            if (message_count == result.messages.size()) {
                if (result.spare_messages.empty()) {
                    result.messages.emplace_back();
                } else {
                    result.messages.push_back(std::move(result.spare_messages.back()));
                    result.spare_messages.pop_back();
                }
            }
            Message& message = result.messages[message_count++];
            reset_message(message);
            std::uint8_t flags = 0;
            message.data_json = "null";
            bool is_first_field = true;
            MessageMember expected = MessageMember::id;
            MessageMember member = MessageMember::other;
            while (next_message_member(cursor, expected, is_first_field, member)) {
                switch (member) {
                    case MessageMember::id: cursor.read_text(message.id); break;
                    case MessageMember::transaction_id:
                        cursor.read_text(message.transaction_id);
                        break;
                    case MessageMember::trace_id: cursor.read_text(message.trace_id); break;
                    case MessageMember::data:
                        if (cursor.read_value(raw)) {
                            // The payload, byte for byte.
                            detail::assign_bytes(message.data_json, raw.data(), raw.size());
                        }
                        break;
                    case MessageMember::producer_sub: cursor.read_text(message.producer_sub); break;
                    case MessageMember::created_at: cursor.read_text(message.created_at); break;
                    case MessageMember::partition_id: cursor.read_text(message.partition_id); break;
                    case MessageMember::partition: cursor.read_text(message.partition); break;
                    case MessageMember::lease_id:
                        flags |= has_lease_flag;
                        cursor.read_text(message.lease_id);
                        break;
                    case MessageMember::consumer_group:
                        flags |= has_group_flag;
                        cursor.read_text(message.consumer_group);
                        break;
                    case MessageMember::retry_count:
                        cursor.read_integer(message.retry_count);
                        break;
                    case MessageMember::other: cursor.skip_value(); break;
                }
                if (member != MessageMember::other) {
                    expected = static_cast<MessageMember>(static_cast<int>(member) + 1);
                }
            }
            message_flags.push_back(flags);
        }
        if (!cursor.is_ok()) {
            break;
        }
    }
    finish();
    if (!cursor.is_ok() || !cursor.is_at_end()) {
        return walk_error(http, response.body, why_bad.empty() ? "malformed messages" : why_bad);
    }
    if (!has_messages) {
        QUEEN_TRY(auto answer, scan_body(http, response.body));
        QUEEN_TRY(check_raw_not_rejected(http, answer));
        return shape_error(http, "no messages array");
    }
    // Fields a message leaves out come from the answer (the first claimed partition's).
    for (std::size_t i = 0; i < result.messages.size(); ++i) {
        Message& message = result.messages[i];
        message.queue = result.queue;
        if ((message_flags[i] & has_lease_flag) == 0) {
            message.lease_id = result.lease_id;
        }
        if ((message_flags[i] & has_group_flag) == 0) {
            message.consumer_group = result.consumer_group;
        }
        if (message.partition_id.empty()) {
            message.partition_id = result.partition_id;
        }
        if (message.partition.empty()) {
            message.partition = result.partition;
        }
        if (message.transaction_id.empty() || message.partition_id.empty()) {
            return shape_error(http, "a message without transactionId or partitionId");
        }
    }
    if (!has_partitions_claimed) {
        result.partitions_claimed = result.messages.empty() ? 0 : 1;
    }
    return {};
}

void build_ack_batch(std::span<const Ack> acks, std::string_view consumer_group,
                     OwnedRequest& out) {
    out.method = "POST";
    out.target = "/api/v1/ack/batch";
    out.has_body = true;
    out.is_idempotent = true;
    out.timeout_ms = 0;
    std::string& body = out.body;
    body.clear();
    body.reserve(32 + acks.size() * 256);
    body += R"({"acknowledgments":[)"sv;
    for (std::size_t i = 0; i < acks.size(); ++i) {
        if (i > 0) {
            body += ',';
        }
        body += '{';
        append_ack_fields(body, acks[i], true);
        body += '}';
    }
    body += R"(],"consumerGroup":)"sv;
    append_json_string_or_null(body, consumer_group);
    body += '}';
}

void build_ack_batch(std::span<const Message> messages, AckStatus status,
                     std::string_view consumer_group, OwnedRequest& out) {
    out.method = "POST";
    out.target = "/api/v1/ack/batch";
    out.has_body = true;
    out.is_idempotent = true;
    out.timeout_ms = 0;
    std::string& body = out.body;
    body.clear();
    body.reserve(32 + messages.size() * 256);
    body += R"({"acknowledgments":[)"sv;
    for (std::size_t i = 0; i < messages.size(); ++i) {
        if (i > 0) {
            body += ',';
        }
        body += '{';
        detail::append_message_ack_fields(body, messages[i], status);
        body += '}';
    }
    body += R"(],"consumerGroup":)"sv;
    append_json_string_or_null(body, consumer_group);
    body += '}';
}

queen::Status read_ack_batch_answer(const HttpRequest& http, const HttpResponse& response,
                                    std::size_t ack_count, std::vector<AckResult>& results) {
    QUEEN_TRY(check_http_status(http, response));
    JsonCursor cursor{response.body};
    if (cursor.peek() != '[') {
        QUEEN_TRY(auto answer, scan_body(http, response.body));
        QUEEN_TRY(check_raw_not_rejected(http, answer));
        return shape_error(http, "expected an array of ack results");
    }
    // Results are read into the entries already there (their strings keep their storage).
    std::size_t result_count = 0;
    results.reserve(ack_count);
    cursor.enter_array();
    bool is_first = true;
    while (cursor.next_element(is_first)) {
        if (result_count == results.size()) {
            results.emplace_back();
        }
        AckResult& result = results[result_count++];
        reset_ack_result(result);
        if (!read_ack_result(cursor, result)) {
            cursor.fail();
            break;
        }
    }
    results.resize(result_count);
    if (!cursor.is_ok() || !cursor.is_at_end()) {
        return walk_error(http, response.body, "malformed ack results");
    }
    if (results.size() != ack_count) {
        return shape_error(http, std::to_string(results.size()) + " results for " +
                                     std::to_string(ack_count) + " acks");
    }
    return {};
}

queen::Status build_transaction(const TransactionRequest& request, bool is_payload_validated,
                                IdSource& ids, OwnedRequest& out) {
    out.method = "POST";
    out.target = "/api/v1/transaction";
    out.has_body = true;
    out.is_idempotent = false;
    out.timeout_ms = 0;
    if (request.operations.empty()) {
        return queen::Error{Errc::invalid_argument, "transaction: no operations"};
    }
    std::string& body = out.body;
    body.assign(R"({"operations":[)");
    bool is_first_operation = true;
    for (const auto& operation : request.operations) {
        if (!is_first_operation) {
            body += ',';
        }
        body += '{';
        is_first_operation = false;
        if (const auto* push = std::get_if<TransactionPush>(&operation)) {
            body += R"("type":"push","items":[)"sv;
            for (std::size_t i = 0; i < push->items.size(); ++i) {
                const PushItem& item = push->items[i];
                if (is_payload_validated && !is_valid_json(item.payload_json)) {
                    return queen::Error{Errc::invalid_argument,
                                        "transaction: a push item has a payload that is not JSON"};
                }
                if (i > 0) {
                    body += ',';
                }
                append_push_item(body, item, ids);
            }
            body += "]}"sv;
        } else {
            body += R"("type":"ack",)"sv;
            append_ack_fields(body, std::get<Ack>(operation), true);
            body += '}';
        }
    }
    body += R"(],"requiredLeases":[)"sv;
    for (std::size_t i = 0; i < request.required_leases.size(); ++i) {
        if (i > 0) {
            body += ',';
        }
        append_json_string(body, request.required_leases[i]);
    }
    body += "]}"sv;
    return {};
}

queen::Status read_transaction_answer(const HttpRequest& http, const HttpResponse& response,
                                      TransactionResult& result) {
    QUEEN_TRY(check_http_status(http, response));
    JsonCursor cursor{response.body};
    if (cursor.peek() != '{') {
        QUEEN_TRY(scan_body(http, response.body));  // invalid JSON says so
        return shape_error(http, "expected an object");
    }
    cursor.enter_object();
    result.transaction_id.clear();
    result.results.clear();
    bool is_success = false;
    std::string why;
    bool is_first = true;
    std::string_view key;
    std::string_view raw;
    while (cursor.next_member(key, is_first)) {
        if (is_key(key, "transactionId")) {
            cursor.read_text(result.transaction_id);
        } else if (is_key(key, "error")) {
            cursor.read_text(why);
        } else if (is_key(key, "results") && cursor.peek() == '[') {
            cursor.enter_array();
            bool is_first_entry = true;
            while (cursor.next_element(is_first_entry)) {
                TransactionOperationResult& r = result.results.emplace_back();
                if (cursor.peek() != '{') {
                    cursor.skip_value();  // lenient, like the other answers: an empty result
                    continue;
                }
                cursor.enter_object();
                bool is_first_field = true;
                while (cursor.next_member(key, is_first_field)) {
                    if (is_key(key, "type")) {
                        cursor.read_text(r.type);
                    } else if (is_key(key, "transactionId")) {
                        cursor.read_text(r.transaction_id);
                    } else if (is_key(key, "messageId")) {
                        cursor.read_text(r.message_id);
                    } else if (is_key(key, "partitionId")) {
                        cursor.read_text(r.partition_id);
                    } else if (is_key(key, "queueName")) {
                        cursor.read_text(r.queue_name);
                    } else if (is_key(key, "error")) {
                        cursor.read_text(r.error);
                    } else if (!cursor.read_value(raw)) {
                        break;
                    } else if (is_key(key, "success")) {
                        r.is_success = raw_to_bool(raw);
                    } else if (is_key(key, "dlq")) {
                        r.is_dlq = raw_to_bool(raw);
                    }
                }
            }
        } else if (!cursor.read_value(raw)) {
            break;
        } else if (is_key(key, "success")) {
            is_success = raw_to_bool(raw);
        }
    }
    if (!cursor.is_ok() || !cursor.is_at_end()) {
        return walk_error(http, response.body, "malformed transaction answer");
    }
    if (!is_success) {
        return queen::Error{Errc::rejected, describe(http) + ": rolled back: " +
                                                (why.empty() ? "no reason given" : why)};
    }
    return {};
}

}  // namespace queen::client
