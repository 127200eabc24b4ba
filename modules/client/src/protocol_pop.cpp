// client/src/protocol_pop.cpp — the pop request target and the single-pass walk of its answer
// (also of a transaction answer's "next", which is the same object).
#include "protocol_util.hpp"
#include "queen/client/client.hpp"
#include "queen/client/errc.hpp"
#include "queen/client/protocol.hpp"
#include "queen/core/json_cursor.hpp"
#include "queen/core/json_scan.hpp"

namespace queen::client {

using detail::append_query;
using detail::check_raw_not_rejected;
using detail::scan_body;
using detail::shape_error;
using detail::walk_error;
using json::assign_text;
using json::Cursor;
using json::is_key;
using json::raw_to_integer;

namespace {

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
    queue,
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
    if (is_key(key, "queue")) {
        return MessageMember::queue;
    }
    if (is_key(key, "retryCount")) {
        return MessageMember::retry_count;
    }
    return MessageMember::other;
}

/// Inside a message object: true with the next member (false at its end or on failure). The
/// member after the last one read (`expected`) is tried first, written as Queen writes it, so an
/// answer in the server's order is read without looking for its keys.
[[gnu::always_inline]] inline bool next_message_member(Cursor& cursor, MessageMember expected,
                                                       bool& is_first, MessageMember& member) {
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
        case MessageMember::queue:
            is_expected = cursor.next_member_is(R"("queue":)", is_first);
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

}  // namespace

queen::Status build_pop(const PopRequest& request, std::int64_t wait_margin_ms, OwnedRequest& out) {
    if (request.batch < 1 || request.partitions < 1 || request.timeout_ms < 0) {
        return queen::Error{Errc::invalid_argument,
                            "pop: batch and partitions must be >= 1, timeout_ms >= 0"};
    }
    const bool is_matching = request.queue.empty();
    if (is_matching && request.namespace_name.empty() && request.task.empty()) {
        return queen::Error{Errc::invalid_argument,
                            "pop: a queue, a namespace or a task is required"};
    }
    if (is_matching && !request.partition.empty()) {
        return queen::Error{Errc::invalid_argument, "pop: a partition needs a queue"};
    }
    std::string& target = out.target;
    bool is_first = true;
    if (is_matching) {
        // What the official clients send for a consumer that names no queue.
        target.assign("/api/v1/pop");
        if (!request.namespace_name.empty()) {
            append_query(target, is_first, "namespace", request.namespace_name);
        }
        if (!request.task.empty()) {
            append_query(target, is_first, "task", request.task);
        }
    } else {
        target.assign("/api/v1/pop/queue/").append(percent_encode(request.queue));
        if (!request.partition.empty()) {
            target += "/partition/" + percent_encode(request.partition);
        }
    }
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

namespace detail {

namespace {

// Every member of `result` but its messages back to an empty answer of `queue`.
void reset_pop_members(std::string_view queue, PopResult& result) {
    result.queue = queue;
    for (std::string* field : {&result.partition, &result.partition_id, &result.lease_id,
                               &result.consumer_group, &result.lease_expires_at}) {
        field->clear();
    }
    result.partitions_claimed = 0;
}

}  // namespace

const char* pop_object_problem(PopObjectRead read) noexcept {
    switch (read) {
        case PopObjectRead::ok: return "";
        case PopObjectRead::malformed: return "malformed messages";
        case PopObjectRead::no_messages: return "no messages array";
        case PopObjectRead::message_without_ids:
            return "a message without transactionId or partitionId";
    }
    return "";
}

void clear_pop_result(std::string_view queue, PopResult& result) {
    reset_pop_members(queue, result);
    // Messages go to the spares, not to the allocator: a later answer takes them back with
    // their strings' storage.
    for (Message& message : result.messages) {
        result.spare_messages.push_back(std::move(message));
    }
    result.messages.clear();
}

PopObjectRead read_pop_object(Cursor& cursor, std::string_view queue, PopResult& result,
                              std::string& why_bad) {
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
    reset_pop_members(queue, result);
    if (!cursor.enter_object()) {
        finish();
        return PopObjectRead::malformed;
    }
    // Per message: whether it named its own lease and group (null counts as named).
    constexpr std::uint8_t has_lease_flag = 1;
    constexpr std::uint8_t has_group_flag = 2;
    std::vector<std::uint8_t> message_flags;
    bool has_messages = false;
    bool has_partitions_claimed = false;
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
                            json::assign_bytes(message.data_json, raw.data(), raw.size());
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
                    case MessageMember::queue: cursor.read_text(message.queue); break;
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
    if (!cursor.is_ok()) {
        return PopObjectRead::malformed;
    }
    if (!has_messages) {
        return PopObjectRead::no_messages;
    }
    // Fields a message leaves out come from the answer (the first claimed partition's).
    for (std::size_t i = 0; i < result.messages.size(); ++i) {
        Message& message = result.messages[i];
        if (message.queue.empty()) {
            message.queue = result.queue;
        }
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
            return PopObjectRead::message_without_ids;
        }
    }
    if (!has_partitions_claimed) {
        result.partitions_claimed = result.messages.empty() ? 0 : 1;
    }
    return PopObjectRead::ok;
}

}  // namespace detail

queen::Status read_pop_answer(const HttpRequest& http, const HttpResponse& response,
                              const PopRequest& request, PopResult& result) {
    QUEEN_TRY(check_http_status(http, response));
    if (response.status == 204 || response.body.empty()) {
        detail::clear_pop_result(request.queue, result);
        return {};
    }
    Cursor cursor{response.body};
    if (cursor.peek() != '{') {
        detail::clear_pop_result(request.queue, result);
        QUEEN_TRY(scan_body(http, response.body));  // invalid JSON says so
        return shape_error(http, "expected an object");
    }
    std::string why_bad;
    const detail::PopObjectRead read =
        detail::read_pop_object(cursor, request.queue, result, why_bad);
    if (read == detail::PopObjectRead::malformed || !cursor.is_at_end()) {
        return walk_error(http, response.body, why_bad.empty() ? "malformed messages" : why_bad);
    }
    if (read == detail::PopObjectRead::no_messages) {
        // {"success": false, "error": ...} says why; anything else is the wrong shape.
        QUEEN_TRY(auto answer, scan_body(http, response.body));
        QUEEN_TRY(check_raw_not_rejected(http, answer));
    }
    if (read != detail::PopObjectRead::ok) {
        return shape_error(http, detail::pop_object_problem(read));
    }
    return {};
}

}  // namespace queen::client
