// api/src/streams_admin_routes.cpp — the stream queries of a tenant for operators
// (docs/http-api.md, streams admin; `queen admin streams`): the queries with the lag of their
// consumer group, one query with its state rows per partition, reset (a new epoch: every row
// gone at once) and delete. The runners' endpoints (/streams/v1/*) are streams_routes.cpp; the
// Prometheus block of the streams is read here (read_stream_metrics) and written by
// health_routes.cpp.
#include <algorithm>

#include "admin_common.hpp"
#include "format.hpp"
#include "parse_state.hpp"
#include "queen/engine/command.hpp"
#include "queen/queues/queries.hpp"
#include "queen/streams/streams.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

/// The limits of the streams module the engine opens (its defaults), checked here first.
const streams::Options& stream_limits() noexcept {
    static const streams::Options options;
    return options;
}

/// Runs `fn(const engine::Engine&, const queues::Tables&, const store::Txn&)` in one read txn of
/// the tenant's state (call it once the state is readable: read_handler routes do).
template <class Fn>
auto read_txn(Context& context, std::string_view tenant, Fn&& fn)
    -> decltype(fn(std::declval<const engine::Engine&>(), std::declval<const queues::Tables&>(),
                   std::declval<const store::Txn&>())) {
    return read_state(context, tenant, [&](const engine::Engine& engine) {
        return engine.read([&](const queues::Tables& queues, const store::Txn& txn) {
            return fn(engine, queues, txn);
        });
    });
}

std::string not_found(std::string_view name) {
    return "stream query '" + std::string(name) + "' not found";
}

/// The :name of a route: 1..name_bytes_max bytes of UTF-8 (400 otherwise).
Result<std::string> query_name(const Request& request) {
    return parse_path_name(request, "name", "stream query name", stream_limits().name_bytes_max);
}

/// The messages of the query's source queue its runners have not consumed: the lag of its
/// consumer group `streams.<name>` (the group the runner pops with) on that queue.
Result<std::uint64_t> query_lag(const queues::Tables& queues, const store::Txn& txn,
                                const streams::Query& query) {
    return queues::group_lag(queues, txn, query.source_queue, stream_group(query.name));
}

/// The fields every answer about a query holds (the caller opens and closes the object).
void write_query_fields(JsonWriter& out, const streams::Query& query, std::uint64_t lag) {
    out.field("name", query.name)
        .field("query_id", query.query_id)
        .field("source_queue", query.source_queue)
        .field_or_null("sink_queue", query.sink_queue)
        .field("config_hash", query.config_hash)
        .field("epoch", query.epoch)
        .field("created_at", format_iso_ms(query.created_at.value()))
        .field("updated_at", format_iso_ms(query.updated_at.value()))
        .field("lag", lag);
}

Result<Response> list_queries(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const ListQuery page_query, parse_list_query(request, stream_limits().name_bytes_max,
                                                           stream_limits().list_limit_max));
    JsonWriter out;
    out.begin_object().key("queries").begin_array();
    QUEEN_TRY(const std::string next_after,
              read_txn(context, tenant,
                       [&](const engine::Engine& engine, const queues::Tables& queues,
                           const store::Txn& txn) -> Result<std::string> {
                           QUEEN_TRY(const streams::QueryPage page,
                                     streams::list_queries(engine.stream_tables(), txn,
                                                           page_query.after, page_query.limit));
                           for (const streams::Query& query : page.queries) {
                               QUEEN_TRY(const std::uint64_t lag, query_lag(queues, txn, query));
                               out.begin_object();
                               write_query_fields(out, query, lag);
                               out.end_object();
                           }
                           return page.next_after;
                       }));
    out.end_array();
    if (next_after.empty()) {
        out.null_field("nextAfter");
    } else {
        out.field("nextAfter", next_after);
    }
    out.end_object();
    return Response::json(200, out.take());
}

Result<Response> show_query(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const std::string name, query_name(request));
    JsonWriter out;
    QUEEN_TRY(
        const bool is_found,
        read_txn(context, tenant,
                 [&](const engine::Engine& engine, const queues::Tables& queues,
                     const store::Txn& txn) -> Result<bool> {
                     const streams::Tables& tables = engine.stream_tables();
                     QUEEN_TRY(const auto query, streams::find_query(tables, txn, name));
                     if (!query.has_value()) {
                         return false;
                     }
                     QUEEN_TRY(const std::uint64_t lag, query_lag(queues, txn, *query));
                     // One walk over the rows (O(rows): an operator's command).
                     QUEEN_TRY(const auto partitions,
                               streams::count_rows_per_partition(tables, txn, query->query_id));
                     std::uint64_t rows = 0;
                     for (const streams::PartitionRows& partition : partitions) {
                         rows += partition.rows;
                     }
                     out.begin_object();
                     write_query_fields(out, *query, lag);
                     out.field("rows", rows).key("partitions").begin_array();
                     for (const streams::PartitionRows& partition : partitions) {
                         out.begin_object()
                             .field("partition_id", queues::format_partition_id(
                                                        queues::PartitionId{partition.partition}))
                             .field("rows", partition.rows)
                             .end_object();
                     }
                     out.end_array().end_object();
                     return true;
                 }));
    if (!is_found) {
        return error_response(context, 404, not_found(name));
    }
    return Response::json(200, out.take());
}

/// POST .../reset and DELETE: a StreamAdmin command; its result names the query's id and the
/// epoch a reset made. 404 for an unknown query.
void handle_admin(Context& context, const ContextPtr& shared, Request& request, Responder responder,
                  engine::StreamAdmin::Op op) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto name = query_name(request);
    if (!name) {
        responder.complete(error_response(context, name.error(), tenant));
        return;
    }
    submit_and_reply<engine::StreamAdminResult>(
        shared, tenant, engine::StreamAdmin{op, *name}, std::move(responder),
        [&context, op, name = *name](engine::StreamAdminResult& done) {
            const streams::WriteResult& write = done.result;
            if (write.status == streams::Status::unknown_query) {
                return error_response(context, 404, not_found(name));
            }
            if (write.status != streams::Status::ok) {
                return error_response(context, 400, write.message);
            }
            JsonWriter out;
            out.begin_object().field("success", true).field("name", name);
            if (op == engine::StreamAdmin::Op::clear) {
                out.field("query_id", done.query_id).field("epoch", done.epoch);
            }
            out.end_object();
            return Response::json(200, out.take());
        });
}

}  // namespace

std::string stream_group(std::string_view query_name) {
    return "streams." + std::string(query_name);
}

Result<StreamMetrics> read_stream_metrics(Context& context, std::string_view tenant) {
    return read_txn(context, tenant,
                    [&](const engine::Engine& engine, const queues::Tables& queues,
                        const store::Txn& txn) -> Result<StreamMetrics> {
                        const streams::Tables& tables = engine.stream_tables();
                        StreamMetrics metrics;
                        // LMDB's entry counts: O(1) whatever the number of rows.
                        QUEEN_TRY(const store::TableStats queries, txn.stats(tables.queries));
                        QUEEN_TRY(const store::TableStats rows, txn.stats(tables.rows));
                        metrics.queries = queries.entries;
                        metrics.state_rows = rows.entries;
                        std::string after;
                        for (;;) {
                            QUEEN_TRY(const streams::QueryPage page,
                                      streams::list_queries(tables, txn, after,
                                                            stream_limits().list_limit_max));
                            for (const streams::Query& query : page.queries) {
                                QUEEN_TRY(const std::uint64_t lag, query_lag(queues, txn, query));
                                metrics.lags.emplace_back(query.name, lag);
                            }
                            if (page.next_after.empty()) {
                                return metrics;
                            }
                            after = page.next_after;
                        }
                    });
}

void register_streams_admin_routes(http::Router& router, const ContextPtr& context) {
    router.get("/api/v1/streams/queries", read_handler(context, list_queries));
    router.get("/api/v1/streams/queries/:name", read_handler(context, show_query));
    router.post("/api/v1/streams/queries/:name/reset",
                make_handler(context, [](Context& c, const ContextPtr& shared, Request& request,
                                         Responder responder) {
                    handle_admin(c, shared, request, std::move(responder),
                                 engine::StreamAdmin::Op::clear);
                }));
    router.del("/api/v1/streams/queries/:name",
               make_handler(context, [](Context& c, const ContextPtr& shared, Request& request,
                                        Responder responder) {
                   handle_admin(c, shared, request, std::move(responder),
                                engine::StreamAdmin::Op::remove);
               }));
}

}  // namespace queen::api::detail
