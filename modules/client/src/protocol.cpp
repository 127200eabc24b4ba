// client/src/protocol.cpp — push, batch ack and transaction bodies (the core writer) and answers
// (the core reader); UUIDv7 ids.
#include "queen/client/protocol.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "protocol_util.hpp"
#include "queen/client/client.hpp"
#include "queen/client/errc.hpp"
#include "queen/core/assert.hpp"
#include "queen/core/hex.hpp"
#include "queen/core/json_cursor.hpp"
#include "queen/core/json_scan.hpp"
#include "queen/core/json_writer.hpp"

namespace queen::client {

using detail::check_raw_not_rejected;
using detail::describe;
using detail::read_ack_result;
using detail::scan_body;
using detail::shape_error;
using detail::walk_error;
using detail::write_ack_fields;
using json::Cursor;
using json::is_key;
using json::is_valid_json;
using json::raw_to_bool;

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

/// One push item object as /push and a transaction's push operation take it; a missing
/// transactionId gets a UUIDv7 from `ids`.
void write_push_item(json::Writer& body, const PushItem& item, IdSource& ids) {
    body.begin_object()
        .field("queue", item.queue)
        .field("partition",
               item.partition.empty() ? default_partition : std::string_view{item.partition})
        .key("payload")
        .raw(item.payload_json)  // empty: null
        .key("transactionId");
    if (item.transaction_id.empty()) {
        thread_local std::string id;  // the storage stays from body to body
        id.clear();
        ids.append_uuid_v7(id);
        // Hex digits and dashes: nothing to escape.
        std::memcpy(body.string_slot(id.size()), id.data(), id.size());
    } else {
        body.string(item.transaction_id);
    }
    if (!item.trace_id.empty()) {
        body.field("traceId", item.trace_id);
    }
    if (item.delay_ms != 0) {
        body.field("delayMs", item.delay_ms);
    }
    if (item.visible_at_ms != 0) {
        body.field("visibleAt", item.visible_at_ms);
    }
    body.end_object();
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
    const auto ms = static_cast<std::uint64_t>(clock_.wall_ms()) & 0xFFFF'FFFF'FFFFULL;
    std::uint64_t high = 0;
    std::uint64_t low = 0;
    if (ms > last_ms_) {
        // A new millisecond: 74 fresh random bits (rand_a 12, rand_b 62).
        high = (ms << 16) | 0x7000ULL | (rng_.next() & 0x0FFFULL);
        low = (rng_.next() & 0x3FFF'FFFF'FFFF'FFFFULL) | 0x8000'0000'0000'0000ULL;
        last_ms_ = ms;
    } else {
        // The same millisecond (or the wall clock stepped back): the previous id plus one, so
        // the ids of one generator sort in the order it made them (RFC 9562 6.2, method 2),
        // as the JS client's. rand_b carries into rand_a, and rand_a into the timestamp.
        high = last_high_;
        low = last_low_ + 1;
        if ((low & 0x3FFF'FFFF'FFFF'FFFFULL) == 0) {
            low = 0x8000'0000'0000'0000ULL;
            high =
                (high & 0x0FFFULL) == 0x0FFFULL ? (((high >> 16) + 1) << 16) | 0x7000ULL : high + 1;
            last_ms_ = high >> 16;
        }
    }
    last_high_ = high;
    last_low_ = low;
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
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (is_payload_validated && !is_valid_json(items[i].payload_json)) {
            return queen::Error{Errc::invalid_argument, "push: item " + std::to_string(i) +
                                                            " has a payload that is not JSON"};
        }
        if (items[i].delay_ms != 0 || items[i].visible_at_ms != 0) {
            return queen::Error{Errc::invalid_argument,
                                "push: item " + std::to_string(i) +
                                    " has a delay; delayed pushes go through a transaction"};
        }
    }
    out.method = "POST";
    out.target = "/api/v1/push";
    out.has_body = true;
    out.is_idempotent = true;
    out.timeout_ms = 0;
    json::Writer body(std::move(out.body),
                      64 + items.size() * (160 + items.front().payload_json.size()));
    body.begin_object().key("items").begin_array();
    for (const PushItem& item : items) {
        write_push_item(body, item, ids);
    }
    body.end_array().end_object();
    out.body = body.take();
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
    Cursor cursor{response.body};
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

void build_ack_batch(std::span<const Ack> acks, std::string_view consumer_group,
                     OwnedRequest& out) {
    out.method = "POST";
    out.target = "/api/v1/ack/batch";
    out.has_body = true;
    out.is_idempotent = true;
    out.timeout_ms = 0;
    json::Writer body(std::move(out.body), 32 + acks.size() * 256);
    body.begin_object().key("acknowledgments").begin_array();
    for (const Ack& ack : acks) {
        body.begin_object();
        write_ack_fields(body, ack, true);
        body.end_object();
    }
    body.end_array().field_or_null("consumerGroup", consumer_group).end_object();
    out.body = body.take();
}

void build_ack_batch(std::span<const Message> messages, AckStatus status,
                     std::string_view consumer_group, OwnedRequest& out) {
    out.method = "POST";
    out.target = "/api/v1/ack/batch";
    out.has_body = true;
    out.is_idempotent = true;
    out.timeout_ms = 0;
    json::Writer body(std::move(out.body), 32 + messages.size() * 256);
    body.begin_object().key("acknowledgments").begin_array();
    for (const Message& message : messages) {
        body.begin_object();
        detail::write_message_ack_fields(body, message, status);
        body.end_object();
    }
    body.end_array().field_or_null("consumerGroup", consumer_group).end_object();
    out.body = body.take();
}

queen::Status read_ack_batch_answer(const HttpRequest& http, const HttpResponse& response,
                                    std::size_t ack_count, std::vector<AckResult>& results) {
    QUEEN_TRY(check_http_status(http, response));
    Cursor cursor{response.body};
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

namespace {

// The first problem of a transaction request that the broker would refuse as a whole, or "".
std::string transaction_problem(const TransactionRequest& request, bool is_payload_validated) {
    if (request.operations.empty()) {
        return "no operations";
    }
    if (request.guards.size() > request.operations.size()) {
        return std::to_string(request.guards.size()) + " guards for " +
               std::to_string(request.operations.size()) +
               " operations (at most one guard per operation)";
    }
    if (request.next) {
        if (request.next->queue.empty()) {
            return "next: the pop needs a queue";
        }
        if (request.next->batch < 1) {
            return "next: batch must be >= 1";
        }
    }
    const auto check_json = [is_payload_validated](std::string_view text) {
        return !is_payload_validated || is_valid_json(text);
    };
    for (std::size_t k = 0; k < request.operations.size(); ++k) {
        const std::string at = "operation " + std::to_string(k) + ": ";
        const auto& operation = request.operations[k];
        if (const auto* push = std::get_if<TransactionPush>(&operation)) {
            for (const PushItem& item : push->items) {
                if (!check_json(item.payload_json)) {
                    return at + "a push item has a payload that is not JSON";
                }
                if (const std::string why = detail::push_delay_problem(item); !why.empty()) {
                    return at + why;
                }
            }
        } else if (const auto* set = std::get_if<KvSet>(&operation)) {
            if (!check_json(set->value_json)) {
                return at + "kv.set value is not JSON";
            }
        } else if (const auto* timer = std::get_if<TimerSet>(&operation)) {
            if (!check_json(timer->payload_json)) {
                return at + "timer.set payload is not JSON";
            }
            if (const std::string why = detail::timer_set_problem(*timer); !why.empty()) {
                return at + why;
            }
        }
    }
    return {};
}

// The members of one operation after its "type".
struct OperationWriter {
    json::Writer& body;
    IdSource& ids;

    void operator()(const TransactionPush& push) const {
        body.key("type").literal("push").key("items").begin_array();
        for (const PushItem& item : push.items) {
            write_push_item(body, item, ids);
        }
        body.end_array();
    }
    void operator()(const Ack& ack) const {
        body.key("type").literal("ack");
        write_ack_fields(body, ack, true);
    }
    void operator()(const KvSet& set) const {
        body.key("type").literal("kv.set");
        detail::write_kv_set_fields(body, set);
    }
    void operator()(const KvDelete& del) const {
        body.key("type").literal("kv.delete").field("bucket", del.bucket).field("key", del.key);
        if (del.expected_version) {
            body.field("expectedVersion", *del.expected_version);
        }
    }
    void operator()(const KvCheck& check) const {
        body.key("type")
            .literal("kv.check")
            .field("bucket", check.bucket)
            .field("key", check.key)
            .field("expectedVersion", check.expected_version);
    }
    void operator()(const TimerSet& timer) const {
        body.key("type").literal("timer.set");
        detail::write_timer_set_fields(body, timer);
    }
    void operator()(const TimerCancel& cancel) const {
        body.key("type").literal("timer.cancel").field("id", cancel.id);
    }
    void operator()(const LockRelease& release) const {
        body.key("type")
            .literal("lock.release")
            .field("name", release.name)
            .field("token", release.token);
    }
};

}  // namespace

queen::Status build_transaction(const TransactionRequest& request, bool is_payload_validated,
                                IdSource& ids, OwnedRequest& out) {
    out.method = "POST";
    out.target = "/api/v1/transaction";
    out.has_body = true;
    out.is_idempotent = false;
    out.timeout_ms = 0;
    if (const std::string why = transaction_problem(request, is_payload_validated); !why.empty()) {
        return queen::Error{Errc::invalid_argument, "transaction: " + why};
    }
    json::Writer body(std::move(out.body));
    body.begin_object().key("operations").begin_array();
    const OperationWriter write{body, ids};
    for (std::size_t k = 0; k < request.operations.size(); ++k) {
        body.begin_object();
        std::visit(write, request.operations[k]);
        if (k < request.guards.size()) {
            const LockGuard& guard = request.guards[k];
            body.key("lock")
                .begin_object()
                .field("name", guard.name)
                .field("token", guard.token)
                .end_object();
        }
        body.end_object();
    }
    body.end_array().key("requiredLeases").begin_array();
    for (const std::string& lease : request.required_leases) {
        body.string(lease);
    }
    body.end_array();
    if (const auto& next = request.next) {
        body.key("next").begin_object().field("queue", next->queue);
        if (!next->partition.empty()) {
            body.field("partition", next->partition);
        }
        if (!next->consumer_group.empty()) {
            body.field("consumerGroup", next->consumer_group);
        }
        body.field("batch", next->batch).end_object();
    }
    body.end_object();
    out.body = body.take();
    return {};
}

namespace {

// Reads one member of an operation result; false when the value is not valid JSON.
bool read_operation_member(Cursor& cursor, std::string_view key, TransactionOperationResult& r) {
    std::int64_t number = 0;
    std::string_view raw;
    if (is_key(key, "type")) {
        return cursor.read_text(r.type);
    }
    if (is_key(key, "transactionId")) {
        return cursor.read_text(r.transaction_id);
    }
    if (is_key(key, "messageId")) {
        return cursor.read_text(r.message_id);
    }
    if (is_key(key, "partitionId")) {
        return cursor.read_text(r.partition_id);
    }
    if (is_key(key, "queueName")) {
        return cursor.read_text(r.queue_name);
    }
    if (is_key(key, "error")) {
        return cursor.read_text(r.error);
    }
    if (is_key(key, "timerId")) {
        return cursor.read_text(r.timer_id);
    }
    if (is_key(key, "dueAt")) {
        return cursor.read_text(r.due_at);
    }
    if (is_key(key, "visibleAt")) {
        return cursor.read_text(r.visible_at);
    }
    if (is_key(key, "success")) {
        return cursor.read_bool(r.is_success);
    }
    if (is_key(key, "dlq")) {
        return cursor.read_bool(r.is_dlq);
    }
    if (is_key(key, "deleted")) {
        return cursor.read_bool(r.is_deleted);
    }
    if (is_key(key, "replaced")) {
        return cursor.read_bool(r.is_replaced);
    }
    if (is_key(key, "cancelled")) {
        return cursor.read_bool(r.is_cancelled);
    }
    if (is_key(key, "index")) {
        return cursor.read_integer(r.index);
    }
    if (is_key(key, "version")) {
        const bool is_read = cursor.read_integer(number);
        r.version = number > 0 ? static_cast<std::uint64_t>(number) : 0;
        return is_read;
    }
    return cursor.read_value(raw);
}

}  // namespace

queen::Status read_transaction_answer(const HttpRequest& http, const HttpResponse& response,
                                      TransactionResult& result) {
    result.transaction_id.clear();
    result.results.clear();
    result.failed_index.reset();
    result.error.clear();
    // Read into the result's own PopResult, so a loop reading answer after answer into one
    // TransactionResult keeps the messages' storage; dropped below when the answer has none.
    bool has_next = false;
    detail::PopObjectRead next_read = detail::PopObjectRead::ok;
    std::string next_why_bad;
    // A refused transaction answers 409 (conflict) or 400 (invalid) with the transaction's own
    // answer; any other error status is the HTTP error. A 409 is a conflict whatever its body
    // says; a 400 that is not a transaction answer is the HTTP error.
    const bool is_refusal = response.status == 409 || response.status == 400;
    if (!is_refusal) {
        QUEEN_TRY(check_http_status(http, response));
    }
    const auto refusal_error = [&]() -> queen::Error {
        queen::Error error = check_http_status(http, response).error();
        if (response.status == 409) {
            return queen::Error{Errc::conflict, std::move(error.context)};
        }
        return error;
    };
    Cursor cursor{response.body};
    if (cursor.peek() != '{') {
        if (is_refusal) {
            return refusal_error();
        }
        QUEEN_TRY(scan_body(http, response.body));  // invalid JSON says so
        return shape_error(http, "expected an object");
    }
    cursor.enter_object();
    bool is_success = false;
    bool has_success = false;
    std::string reason;
    bool is_first = true;
    std::string_view key;
    std::string_view raw;
    while (cursor.next_member(key, is_first)) {
        if (is_key(key, "transactionId")) {
            cursor.read_text(result.transaction_id);
        } else if (is_key(key, "error")) {
            cursor.read_text(result.error);
        } else if (is_key(key, "reason")) {
            cursor.read_text(reason);
        } else if (is_key(key, "failedIndex") && cursor.peek() != 'n') {
            std::int64_t index = 0;
            cursor.read_integer(index);
            result.failed_index = index;
        } else if (is_key(key, "results") && cursor.peek() == '[') {
            cursor.enter_array();
            bool is_first_entry = true;
            while (cursor.next_element(is_first_entry)) {
                TransactionOperationResult& r = result.results.emplace_back();
                r.index = static_cast<std::int64_t>(result.results.size() - 1);
                if (cursor.peek() != '{') {
                    cursor.skip_value();  // lenient, like the other answers: an empty result
                    continue;
                }
                cursor.enter_object();
                bool is_first_field = true;
                while (cursor.next_member(key, is_first_field)) {
                    if (!read_operation_member(cursor, key, r)) {
                        break;
                    }
                }
            }
        } else if (is_key(key, "next") && cursor.peek() == '{') {
            has_next = true;
            if (!result.next) {
                result.next.emplace();
            }
            // The pop answer names its queue (the request's is not known here).
            next_read = detail::read_pop_object(cursor, {}, *result.next, next_why_bad);
            if (next_read == detail::PopObjectRead::malformed) {
                break;
            }
        } else if (!cursor.read_value(raw)) {
            break;
        } else if (is_key(key, "success")) {
            has_success = true;
            is_success = raw_to_bool(raw);
        }
    }
    if (!has_next || !is_success || is_refusal || !cursor.is_ok() || !cursor.is_at_end()) {
        // Only a committed transaction pops: whatever else came has no messages to hand out.
        result.next.reset();
    }
    if (!cursor.is_ok() || !cursor.is_at_end()) {
        if (is_refusal) {
            return refusal_error();
        }
        return walk_error(http, response.body,
                          next_why_bad.empty() ? "malformed transaction answer"
                                               : "malformed next: " + next_why_bad);
    }
    if (is_refusal && (!has_success || is_success)) {
        return refusal_error();  // not a transaction answer: {"error"} only
    }
    if (is_success) {
        result.error.clear();
        if (result.next && next_read != detail::PopObjectRead::ok) {
            result.next.reset();
            return shape_error(http, std::string{"next: "} + detail::pop_object_problem(next_read));
        }
        return {};
    }
    std::string why = describe(http) + ": rolled back";
    if (result.failed_index) {
        why += " at operation " + std::to_string(*result.failed_index);
    }
    why += ": " + (result.error.empty() ? std::string{"no reason given"} : result.error);
    if (response.status == 409 || reason == "conflict") {
        return queen::Error{Errc::conflict, why};
    }
    if (response.status == 400) {
        return make_http_error(400, why);
    }
    return queen::Error{Errc::rejected, why};
}

}  // namespace queen::client
