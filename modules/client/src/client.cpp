// client/src/client.cpp — Client setup, retries and the data-path calls of the Queen v1 API.
#include "queen/client/client.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <type_traits>

#include "json_util.hpp"
#include "protocol_util.hpp"
#include "queen/core/json_scan.hpp"
#include "queen/core/json_writer.hpp"

namespace queen::client {

using detail::boolean_of;
using detail::check_not_rejected;
using detail::check_raw_not_rejected;
using detail::describe;
using detail::integer_of;
using detail::Json;
using detail::object_answer;
using detail::optional_boolean_of;
using detail::parse_ack_result;
using detail::parse_json;
using detail::scan_body;
using detail::shape_error;
using detail::text_of;
using detail::text_of_either;
using json::for_each_element;
using json::is_valid_json;

namespace {

// The option table's keys are string literals, so key.data() is null-terminated.
QueueOptions queue_options_of(const Json& options) {
    QueueOptions out;
    for_each_queue_option([&](const auto& option) {
        if constexpr (std::is_same_v<decltype(option.default_value), bool>) {
            out.*option.member =
                optional_boolean_of(options, option.key.data()).value_or(option.default_value);
        } else {
            out.*option.member = integer_of(options, option.key.data(), option.default_value);
        }
    });
    return out;
}

Json queue_options_json(const QueueOptions& options) {
    Json out = Json::object();
    for_each_queue_option(
        [&](const auto& option) { out[std::string(option.key)] = options.*option.member; });
    return out;
}

}  // namespace

std::string_view to_string(PushStatus status) noexcept {
    switch (status) {
        case PushStatus::queued: return "queued";
        case PushStatus::duplicate: return "duplicate";
        case PushStatus::buffered: return "buffered";
        case PushStatus::failed: return "failed";
    }
    return "failed";
}

std::string_view to_string(AckStatus status) noexcept {
    switch (status) {
        case AckStatus::completed: return "completed";
        case AckStatus::failed: return "failed";
        case AckStatus::dlq: return "dlq";
        case AckStatus::retry: return "retry";
    }
    return "completed";
}

Ack Ack::of(const Message& message, AckStatus status, std::string error) {
    Ack ack;
    ack.transaction_id = message.transaction_id;
    ack.partition_id = message.partition_id;
    ack.status = status;
    ack.error = std::move(error);
    ack.lease_id = message.lease_id;
    ack.consumer_group = message.consumer_group;
    return ack;
}

std::string percent_encode(std::string_view text) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        const bool is_unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                                   (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                                   c == '~';
        if (is_unreserved) {
            out.push_back(ch);
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 0xf]);
        }
    }
    return out;
}

namespace {

ConnectionOptions connection_options_of(const ClientOptions& options) {
    ConnectionOptions connection = options.connection;
    if (!options.bearer_token.empty()) {
        connection.headers.push_back({"Authorization", "Bearer " + options.bearer_token});
    }
    return connection;
}

}  // namespace

Client::Client(ClientOptions options, const queen::Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      pool_(options_.endpoint, connection_options_of(options_), clock, options_.connections_max),
      id_generator_(options_.id_seed, clock) {}

Client::~Client() = default;

ConnectionOptions Client::connection_options() const {
    return connection_options_of(options_);
}

std::unique_ptr<Connection> Client::make_connection() const {
    return pool_.make_connection();  // the pool's endpoint, options and TLS context
}

void Client::close() noexcept {
    {
        const std::lock_guard lock{close_mutex_};
        is_closed_ = true;
    }
    close_changed_.notify_all();
    pool_.abort_all();
}

std::string Client::generate_uuid_v7() {
    std::string text;
    append_uuid_v7(text);
    return text;
}

void Client::append_uuid_v7(std::string& out) {
    const std::lock_guard lock{id_mutex_};
    id_generator_.append_uuid_v7(out);
}

queen::Result<HttpResponse> Client::perform(const HttpRequest& request, Connection* dedicated,
                                            bool is_retried) {
    HttpResponse response;
    QUEEN_TRY(perform_into(request, dedicated, response, is_retried));
    return response;
}

queen::Status Client::perform_into(const HttpRequest& request, Connection* dedicated,
                                   HttpResponse& response, bool is_retried) {
    for (std::uint32_t attempt = 0;; ++attempt) {
        queen::Status exchanged = queen::Error{Errc::cancelled, "not sent"};
        if (dedicated != nullptr) {
            exchanged = dedicated->request_into(request, response);
        } else {
            QUEEN_TRY(auto lease, pool_.acquire(options_.pool_wait_ms));
            exchanged = lease->request_into(request, response);
        }
        queen::Error error;
        if (exchanged) {
            auto checked = check_http_status(request, response);
            if (checked) {
                return {};
            }
            error = std::move(checked).error();
        } else {
            error = std::move(exchanged).error();
        }
        if (!is_retried || !request.is_idempotent || !is_retryable(error) ||
            attempt >= options_.retry_attempts) {
            return error;
        }
        // Exponential backoff like the JS client; close() ends the wait at once.
        const std::int64_t delay_ms = options_.retry_delay_ms
                                      << std::min<std::uint32_t>(attempt, 20);
        std::unique_lock lock{close_mutex_};
        if (close_changed_.wait_for(lock, std::chrono::milliseconds{delay_ms},
                                    [&] { return is_closed_; })) {
            return queen::Error{Errc::cancelled, describe(request) + ": client closed"};
        }
    }
}

queen::Result<ConfigureResult> Client::configure(const ConfigureRequest& request) {
    Json body{{"queue", request.queue},
              {"namespace", request.namespace_name ? Json(*request.namespace_name) : Json(nullptr)},
              {"task", request.task ? Json(*request.task) : Json(nullptr)},
              {"options", queue_options_json(request.options)}};
    const std::string text = body.dump();
    HttpRequest http{"POST", "/api/v1/configure", text, true, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(auto answer, object_answer(http, response.body));
    if (answer.contains("error") && !answer["error"].is_null()) {
        return queen::Error{Errc::rejected, describe(http) + ": " + text_of(answer, "error")};
    }
    ConfigureResult result;
    result.is_configured = boolean_of(answer, "configured");
    result.queue_id = text_of(answer, "queueId");
    result.partition_id = text_of(answer, "partitionId");
    result.queue = text_of(answer, "queue");
    result.namespace_name = text_of(answer, "namespace");
    result.task = text_of(answer, "task");
    if (answer.contains("options")) {
        result.options = queue_options_of(answer["options"]);
    }
    return result;
}

queen::Result<QueueOptions> parse_queue_options(std::string_view json_object) {
    QUEEN_TRY(auto options, parse_json(json_object, "queue options"));
    if (!options.is_object()) {
        return queen::Error{Errc::bad_response, "queue options: expected a JSON object"};
    }
    return queue_options_of(options);
}

queen::Result<std::vector<PushResult>> Client::push(std::span<const PushItem> items) {
    std::vector<PushResult> results;
    QUEEN_TRY(push_into(items, results));
    return results;
}

namespace {

// A request or answer buffer per thread (T is OwnedRequest or HttpResponse), so a loop of
// pushes, pops or acks does not allocate its bodies each time. Bodies above
// body_buffer_bytes_kept give their memory back after use.
constexpr std::size_t body_buffer_bytes_kept = 4 << 20;

template <class T>
class Scratch {
public:
    Scratch() : value_(buffer()) {}
    ~Scratch() {
        if (value_.body.capacity() > body_buffer_bytes_kept) {
            std::string{}.swap(value_.body);
        }
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    T& get() noexcept { return value_; }

private:
    static T& buffer() {
        thread_local T value;
        return value;
    }
    T& value_;
};
using ScratchRequest = Scratch<OwnedRequest>;
using ScratchResponse = Scratch<HttpResponse>;

}  // namespace

queen::Status Client::push_into(std::span<const PushItem> items, std::vector<PushResult>& results) {
    if (items.empty()) {
        results.clear();
        return {};
    }
    // Not reentrant per thread: nothing below pushes again before the body is sent.
    ScratchRequest scratch;
    OwnedRequest& request = scratch.get();
    QUEEN_TRY(build_push(items, options_.is_payload_validated, *this, request));
    const HttpRequest http = request.view();
    ScratchResponse scratch_response;
    HttpResponse& response = scratch_response.get();
    QUEEN_TRY(perform_into(http, nullptr, response));
    return read_push_answer(http, response, items.size(), results);
}

queen::Result<PopResult> Client::pop(const PopRequest& request) {
    PopResult result;
    QUEEN_TRY(pop_on(request, nullptr, result));
    return result;
}

queen::Result<PopResult> Client::pop(const PopRequest& request, Connection& connection) {
    PopResult result;
    QUEEN_TRY(pop_on(request, &connection, result));
    return result;
}

queen::Status Client::pop_into(const PopRequest& request, PopResult& result) {
    return pop_on(request, nullptr, result);
}

queen::Status Client::pop_on(const PopRequest& request, Connection* dedicated, PopResult& result) {
    ScratchRequest scratch;
    OwnedRequest& owned = scratch.get();
    QUEEN_TRY(build_pop(request, options_.pop_wait_margin_ms, owned));
    const HttpRequest http = owned.view();
    ScratchResponse scratch_response;
    HttpResponse& response = scratch_response.get();
    QUEEN_TRY(perform_into(http, dedicated, response));
    return read_pop_answer(http, response, request, result);
}

queen::Result<AckResult> Client::ack(const Ack& ack) {
    json::Writer writer;
    writer.begin_object();
    detail::write_ack_fields(writer, ack, true);
    const std::string body = writer.end_object().take();
    HttpRequest http{"POST", "/api/v1/ack", body, true, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(auto answer, scan_body(http, response.body));
    std::vector<AckResult> results;
    if (answer.front() == '[') {
        const bool is_parsed = for_each_element(answer, [&](std::string_view entry) {
            results.emplace_back();
            return parse_ack_result(entry, results.back());
        });
        if (!is_parsed || results.size() != 1) {
            return shape_error(http, "expected an array with one ack result");
        }
        return std::move(results.front());
    }
    QUEEN_TRY(check_raw_not_rejected(http, answer));
    AckResult result;
    if (!parse_ack_result(answer, result)) {
        return shape_error(http, "expected an array with one ack result");
    }
    return result;
}

queen::Result<std::vector<AckResult>> Client::ack_batch(std::span<const Ack> acks,
                                                        std::string_view consumer_group) {
    if (acks.empty()) {
        return std::vector<AckResult>{};
    }
    ScratchRequest scratch;
    OwnedRequest& request = scratch.get();
    build_ack_batch(acks, consumer_group, request);
    const HttpRequest http = request.view();
    ScratchResponse scratch_response;
    HttpResponse& response = scratch_response.get();
    QUEEN_TRY(perform_into(http, nullptr, response));
    std::vector<AckResult> results;
    QUEEN_TRY(read_ack_batch_answer(http, response, acks.size(), results));
    return results;
}

queen::Result<LeaseExtendResult> Client::extend_lease(std::string_view lease_id,
                                                      std::int64_t seconds) {
    if (lease_id.empty()) {
        return queen::Error{Errc::invalid_argument, "extend_lease: empty lease id"};
    }
    const std::string target = "/api/v1/lease/" + percent_encode(lease_id) + "/extend";
    json::Writer writer;
    writer.begin_object();
    if (seconds > 0) {
        writer.field("seconds", seconds);
    }
    const std::string body = writer.end_object().take();
    HttpRequest http{"POST", target, body, true, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(auto answer, parse_json(response.body, describe(http)));
    const Json* entry = &answer;
    if (answer.is_array()) {
        if (answer.size() != 1) {
            return shape_error(http, "expected one lease result");
        }
        entry = &answer[0];
    }
    if (!entry->is_object()) {
        return shape_error(http, "expected a lease result object");
    }
    LeaseExtendResult result;
    result.lease_id = text_of(*entry, "leaseId");
    if (result.lease_id.empty()) {
        result.lease_id = std::string{lease_id};
    }
    result.is_success = boolean_of(*entry, "success");
    result.error = text_of(*entry, "error");
    result.expires_at = text_of_either(*entry, "expiresAt", "newExpiresAt");
    return result;
}

queen::Result<TransactionResult> Client::transaction(const TransactionRequest& request) {
    ScratchRequest scratch;
    OwnedRequest& owned = scratch.get();
    QUEEN_TRY(build_transaction(request, options_.is_payload_validated, *this, owned));
    const HttpRequest http = owned.view();
    ScratchResponse scratch_response;
    HttpResponse& response = scratch_response.get();
    if (auto sent = perform_into(http, nullptr, response, false); !sent) {
        // A refused transaction (409, 400) answers with its own shape, which says which
        // operation failed; read_transaction_answer() turns it into the error.
        const int status = http_status_of(sent.error());
        if (status != 409 && status != 400) {
            return std::move(sent).error();
        }
    }
    TransactionResult result;
    QUEEN_TRY(read_transaction_answer(http, response, result));
    return result;
}

Client::TransactionThenPop Client::transaction_then_pop(const TransactionRequest& transaction,
                                                        const PopRequest& pop) {
    const auto both = [](const queen::Error& error) { return TransactionThenPop{error, error}; };
    OwnedRequest transaction_request;
    OwnedRequest pop_request;
    if (auto built = build_transaction(transaction, options_.is_payload_validated, *this,
                                       transaction_request);
        !built) {
        return both(built.error());
    }
    if (auto built = build_pop(pop, options_.pop_wait_margin_ms, pop_request); !built) {
        return both(built.error());
    }
    const std::array<HttpRequest, 2> group{transaction_request.view(), pop_request.view()};
    std::array<HttpResponse, 2> responses;
    std::size_t answered = 0;
    auto lease = pool_.acquire(options_.pool_wait_ms);
    if (!lease) {
        return both(lease.error());
    }
    const queen::Status exchanged = (*lease)->request_pipelined(group, responses, answered);
    // Answer k read by `read(request, response, result)` into a Result<R>. An answer that
    // arrived whole is read whatever happened to the other. The readers check the HTTP status
    // themselves (a refused transaction's 409 has a body to read).
    const auto answer_of = [&]<class R>(std::size_t k, R result, auto read) -> queen::Result<R> {
        if (answered <= k) {
            return exchanged.error();
        }
        QUEEN_TRY(read(group[k], responses[k], result));
        return result;
    };
    return TransactionThenPop{
        answer_of(0, TransactionResult{}, read_transaction_answer),
        answer_of(1, PopResult{},
                  [&pop](const auto& http, const auto& response, PopResult& result) {
                      return read_pop_answer(http, response, pop, result);
                  })};
}

queen::Result<std::string> Client::trace(const TraceEvent& event) {
    if (options_.is_payload_validated && !is_valid_json(event.data_json)) {
        return queen::Error{Errc::invalid_argument, "trace: data is not JSON"};
    }
    json::Writer writer;
    writer.begin_object()
        .field("transactionId", event.transaction_id)
        .field("partitionId", event.partition_id)
        .field_or_null("consumerGroup", event.consumer_group)
        .field("eventType", event.event_type)
        .key("traceNames");
    if (event.trace_names.empty()) {
        writer.null();
    } else {
        writer.begin_array();
        for (const std::string& name : event.trace_names) {
            writer.string(name);
        }
        writer.end_array();
    }
    const std::string body = writer.key("data").raw(event.data_json).end_object().take();
    HttpRequest http{"POST", "/api/v1/traces", body, true, false, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(auto answer, parse_json(response.body, describe(http)));
    QUEEN_TRY(check_not_rejected(http, answer));
    return text_of(answer, "traceId");
}

}  // namespace queen::client
