// api/src/streams_routes.cpp — the Queen v1 streams endpoints the official streams SDKs call
// (docs/http-api.md, streams): a query's registration and a cycle are one log entry each (the
// engine's stream_register and stream_cycle commands, queen/engine/stream.hpp); state/get reads
// the applied rows (modules/streams) once the state holds every answered cycle.
#include "admin_common.hpp"
#include "format.hpp"
#include "parse.hpp"
#include "parse_streams.hpp"
#include "queen/engine/command.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

/// A state/get answer holds at most this many rows ...
constexpr std::size_t state_rows_max = 100'000;
/// ... and at most this many bytes of values: the answer is built in memory, and a partition
/// may hold millions of rows. Past either the request is refused (413) rather than cut short:
/// the SDK restores an operator from the answer, and a silent partial answer would lose state.
constexpr std::size_t state_value_bytes_max = std::size_t{64} << 20;
/// The rows of a partition are listed in pages of this many (streams::Options::list_limit_max).
constexpr std::uint32_t state_page_rows = 1000;

/// `status` with a JSON body written by the caller, counted in the metrics when it is a 4xx.
Response counted_json(Context& context, int status, std::string body) {
    if (status >= 400 && status < 500) {
        context.metrics.responses_4xx.fetch_add(1, relaxed);
    }
    return Response::json(status, std::move(body));
}

// ---------------------------------------------------------------- queries

Response register_answer(Context& context, const std::string& name,
                         const streams::RegisterResult& result) {
    using streams::Status;
    switch (result.status) {
        case Status::fresh:
        case Status::reused:
        case Status::reset: {
            context.metrics.stream_registrations.fetch_add(1, relaxed);
            JsonWriter out;
            out.begin_object()
                .field("success", true)
                .field("query_id", result.query_id)
                .field("name", name)
                .field("config_hash", result.config_hash)
                .field("fresh", result.status == Status::fresh)
                .field("reset", result.status == Status::reset)
                .field("epoch", result.epoch)
                .end_object();
            return Response::json(200, out.take());
        }
        case Status::conflict: {
            context.metrics.stream_registrations.fetch_add(1, relaxed);
            JsonWriter out;
            out.begin_object()
                .field("success", false)
                .field("query_id", result.query_id)
                .field("name", name)
                .field("error", result.message)
                .end_object();
            return counted_json(context, 409, out.take());
        }
        case Status::invalid: return error_response(context, 400, result.message);
        case Status::ok:
        case Status::unknown_query: break;
    }
    return error_response(context, 500, "unexpected stream_register status");
}

void handle_register(Context& context, const ContextPtr& shared, Request& request,
                     Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto body = json_or_reply(context, request, responder, tenant);
    if (!body) {
        return;
    }
    // The id a created query gets, made here so every replica stores the same one.
    auto command = parse_stream_register(*body, context.options, random_uuid(context.random));
    if (!command) {
        responder.complete(error_response(context, command.error(), tenant));
        return;
    }
    std::string name = command->query.name;
    submit_and_reply<engine::StreamRegisterResult>(
        shared, tenant, std::move(*command), std::move(responder),
        [&context, name = std::move(name)](engine::StreamRegisterResult& result) {
            return register_answer(context, name, result.result);
        });
}

// ---------------------------------------------------------------- cycle

/// What the cycle's answer echoes of its request.
struct CycleEcho {
    std::string query_id;
    std::string partition_id;  ///< as the client wrote it
    std::vector<bool> has_client_transaction_id;
    std::int64_t ack_count = 0;
    queues::AckStatus ack_status = queues::AckStatus::completed;
};

/// Counts a committed cycle's pushes and ack as the push and ack routes count theirs.
void count_cycle(Context& context, const CycleEcho& echo, const engine::StreamCycleResult& result) {
    count_pushed(context, result.push_results);
    if (!result.has_ack) {
        return;
    }
    // `count` is the client's word for how many messages its ack closes (the batch up to the
    // acked one): the processed rate follows it.
    const std::int64_t now = context.backend.wall_ms();
    const auto acked = static_cast<std::uint64_t>(echo.ack_count);
    context.metrics.ack_messages.fetch_add(acked, relaxed);
    if (result.dlq) {
        context.metrics.dlq_messages.fetch_add(1, relaxed);
    }
    if (result.dlq || echo.ack_status == queues::AckStatus::completed) {
        context.metrics.processed.add(now, acked);
    }
}

Response cycle_answer(Context& context, const CycleEcho& echo, engine::StreamCycleResult& result) {
    context.metrics.stream_cycles.fetch_add(1, relaxed);
    if (result.success) {
        count_cycle(context, echo, result);
    } else {
        context.metrics.stream_cycles_failed.fetch_add(1, relaxed);
    }
    queues::PushResult pushed;
    pushed.items = std::move(result.push_results);
    JsonWriter out;
    out.begin_object()
        .field("success", result.success)
        .field("query_id", echo.query_id)
        .field("partition_id", echo.partition_id)
        .field_or_null("queueName", result.source_queue)
        .field("state_ops_applied", result.state_ops_applied)
        .key("push_results")
        .raw(format_push(pushed, echo.has_client_transaction_id))
        .key("ack_result");
    if (result.has_ack) {
        out.begin_object()
            .field("success", true)
            .field("count", echo.ack_count)
            .field("lease_released", result.lease_released)
            .field("dlq", result.dlq)
            .end_object();
    } else {
        out.null();
    }
    if (!result.success) {
        out.field("error", result.error);
    }
    out.end_object();
    // A logical failure (a stale lease, an unknown query) is 200 with success false: the v1
    // contract, which the SDKs read to decide between retrying and re-registering.
    return Response::json(200, out.take());
}

void handle_cycle(Context& context, const ContextPtr& shared, Request& request,
                  Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto body = json_or_reply(context, request, responder, tenant);
    if (!body) {
        return;
    }
    auto parsed =
        parse_stream_cycle(*body, context.options, context.random, context.backend.wall_ms());
    if (!parsed) {
        responder.complete(error_response(context, parsed.error(), tenant));
        return;
    }
    CycleEcho echo;
    echo.query_id = parsed->cycle.query_id;
    echo.partition_id = body->find("partition_id")->get_ref<const std::string&>();
    echo.has_client_transaction_id = std::move(parsed->has_client_transaction_id);
    echo.ack_count = parsed->ack_count;
    if (parsed->cycle.ack.has_value()) {
        echo.ack_status = parsed->cycle.ack->status;
    }
    // Sink messages to an encrypted queue are sealed as a push's are.
    encrypt_then(shared, tenant, responder, std::move(parsed->cycle),
                 [&context, shared, tenant, responder,
                  echo = std::move(echo)](engine::StreamCycle cycle) mutable {
                     submit_and_reply<engine::StreamCycleResult>(
                         shared, tenant, std::move(cycle), std::move(responder),
                         [&context, echo = std::move(echo)](engine::StreamCycleResult& result) {
                             return cycle_answer(context, echo, result);
                         });
                 });
}

// ---------------------------------------------------------------- state/get

/// Writes the rows a state/get keeps, refusing an answer over the caps.
class RowWriter {
public:
    RowWriter(JsonWriter& out, const StateGet& get) : out_(out), get_(get) {}

    Status add(const streams::Row& row) {
        if (!get_.key_prefix.empty() && !row.key.starts_with(get_.key_prefix)) {
            return {};
        }
        const std::string_view value = as_chars(row.value);
        if (get_.ripe_at_or_before.has_value() && !is_ripe(value, *get_.ripe_at_or_before)) {
            return {};
        }
        ++rows_;
        value_bytes_ += value.size();
        if (rows_ > state_rows_max || value_bytes_ > state_value_bytes_max) {
            return Error{Errc::out_of_range,
                         "the answer would hold more than " + std::to_string(state_rows_max) +
                             " rows or " + std::to_string(state_value_bytes_max >> 20) +
                             " MiB of values: ask for fewer rows with key_prefix or keys"};
        }
        out_.begin_object().field("key", row.key).key("value");
        if (value.empty()) {
            out_.null();  // not written through the API, which stores JSON text
        } else {
            out_.raw(value);
        }
        out_.field("updated_at", format_iso_ms(row.updated_at.value())).end_object();
        return {};
    }

private:
    JsonWriter& out_;
    const StateGet& get_;
    std::size_t rows_ = 0;
    std::size_t value_bytes_ = 0;
};

/// The rows of `get` in one read txn, in key order; false when the query is unknown.
Result<bool> write_rows(const engine::Engine& engine, const store::Txn& txn, const StateGet& get,
                        JsonWriter& out) {
    const streams::Tables& tables = engine.stream_tables();
    QUEEN_TRY(const auto query, streams::find_query_by_id(tables, txn, get.query_id));
    if (!query.has_value()) {
        return false;
    }
    const std::uint64_t partition = get.partition.value();
    RowWriter writer(out, get);
    if (!get.keys.empty()) {
        QUEEN_TRY(const auto rows,
                  streams::get_rows(tables, txn, get.query_id, partition, get.keys));
        for (const streams::Row& row : rows) {
            QUEEN_TRY(writer.add(row));
        }
        return true;
    }
    // Page by page: one page of rows is in memory besides the answer.
    std::string after;
    for (;;) {
        QUEEN_TRY(const streams::RowPage page,
                  streams::list_rows(tables, txn, get.query_id, partition, get.key_prefix, after,
                                     state_page_rows));
        for (const streams::Row& row : page.rows) {
            QUEEN_TRY(writer.add(row));
        }
        if (page.next_after.empty()) {
            return true;
        }
        after = page.next_after;
    }
}

Result<Response> read_state_rows(Context& context, const std::string& tenant, const StateGet& get) {
    JsonWriter out;
    out.begin_object().field("success", true).key("rows").begin_array();
    QUEEN_TRY(const bool is_known, read_state(context, tenant, [&](const engine::Engine& engine) {
                  return engine.read([&](const queues::Tables&, const store::Txn& txn) {
                      return write_rows(engine, txn, get, out);
                  });
              }));
    if (!is_known) {
        // The engine's words for a cycle of an unknown query.
        return error_response(context, 400, "Unknown query_id " + get.query_id);
    }
    out.end_array().end_object();
    return Response::json(200, out.take());
}

void handle_state_get(Context& context, const ContextPtr& shared, Request& request,
                      Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto body = json_or_reply(context, request, responder, tenant);
    if (!body) {
        return;
    }
    auto get = parse_state_get(*body);
    if (!get) {
        responder.complete(error_response(context, get.error(), tenant));
        return;
    }
    // Consistent with every cycle answered before: read once the state holds them.
    auto held = std::make_shared<const StateGet>(std::move(*get));
    when_readable(shared, tenant, responder, [shared, tenant, responder, held] {
        auto response = read_state_rows(*shared, tenant, *held);
        if (!response) {
            responder.complete(error_response(*shared, response.error(), tenant));
            return;
        }
        responder.complete(std::move(*response));
    });
}

}  // namespace

void register_streams_routes(http::Router& router, const ContextPtr& context) {
    router.post("/streams/v1/queries", make_handler(context, handle_register));
    router.post("/streams/v1/cycle", make_handler(context, handle_cycle));
    router.post("/streams/v1/state/get", make_handler(context, handle_state_get));
}

}  // namespace queen::api::detail
