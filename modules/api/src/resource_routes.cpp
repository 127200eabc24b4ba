// api/src/resource_routes.cpp — resources (docs/http-api.md, admin): queues, namespaces, tasks,
// overview, queue delete.
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "admin_common.hpp"
#include "format.hpp"
#include "parse.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

Result<Response> list_resource_queues(Context& context, const std::string& tenant, Request&) {
    QUEEN_TRY(auto list, read_queues(context, tenant));
    JsonWriter out;
    out.begin_object().key("queues").begin_array();
    for (const queues::QueueSummary& q : list) {
        write_queue_summary(out, q);
    }
    out.end_array().end_object();
    return Response::json(200, out.take());
}

Result<Response> get_resource_queue(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const std::string name, name_param(request, "queue", "queue", context.options));
    QUEEN_TRY(auto detail, read_queue(context, tenant, name));
    if (!detail.has_value()) {
        return error_response(context, 404, "Queue not found");
    }
    const queues::QueueSummary& q = detail->queue;
    Totals totals;
    JsonWriter out;
    out.begin_object()
        .field("id", queues::format_queue_id(q.id))
        .field("name", q.name)
        .field("namespace", q.namespace_name)
        .field("task", q.task)
        .field("createdAt", format_iso_ms(q.created_at.value()))
        .key("options");
    write_queue_options(out, q.options);
    out.key("partitions").begin_array();
    for (const queues::PartitionSummary& p : detail->partitions) {
        const Totals t = partition_totals(p);
        totals.total += t.total;
        totals.pending += t.pending;
        totals.processing += t.processing;
        totals.completed += t.completed;
        out.begin_object()
            .field("id", queues::format_partition_id(p.id))
            .field("name", p.name)
            .field("createdAt", format_iso_ms(p.created_at.value()))
            .key("stats");
        write_totals(out, t);
        out.field_or_null("oldestMessage", iso_or_empty(p.oldest_at))
            .field_or_null("newestMessage", iso_or_empty(p.newest_at))
            .end_object();
    }
    totals.dead_letter = q.dead_letter;
    out.end_array().key("totals");
    write_totals(out, totals);
    out.end_object();
    return Response::json(200, out.take());
}

// Namespaces and tasks group the queue list by one of its labels.
template <class Key>
Result<Response> grouped_queues(Context& context, const std::string& tenant, std::string_view list,
                                std::string_view label, Key key) {
    QUEEN_TRY(auto queues_list, read_queues(context, tenant));
    struct Group {
        std::uint64_t queues = 0;
        std::uint64_t partitions = 0;
        std::uint64_t total = 0;
        std::uint64_t pending = 0;
    };
    std::map<std::string, Group> groups;
    for (const queues::QueueSummary& q : queues_list) {
        Group& g = groups[key(q)];
        g.queues += 1;
        g.partitions += q.partitions;
        g.total += q.messages;
        g.pending += q.pending;
    }
    JsonWriter out;
    out.begin_object().key(list).begin_array();
    for (const auto& [name, g] : groups) {
        out.begin_object()
            .key(label)
            .string(name)
            .field("queues", g.queues)
            .field("partitions", g.partitions)
            .key("messages")
            .begin_object()
            .field("total", g.total)
            .field("pending", g.pending)
            .end_object()
            .end_object();
    }
    out.end_array().end_object();
    return Response::json(200, out.take());
}

struct LagStats {
    std::vector<double> time_s;
    std::vector<double> offset;
};

void write_stat(JsonWriter& out, std::string_view name, std::vector<double> values) {
    std::sort(values.begin(), values.end());
    double sum = 0;
    for (const double v : values) {
        sum += v;
    }
    out.key(name).begin_object();
    if (values.empty()) {
        out.field("avg", 0).field("median", 0).field("min", 0).field("max", 0);
    } else {
        out.key("avg")
            .number(sum / static_cast<double>(values.size()))
            .key("median")
            .number(values[values.size() / 2])
            .key("min")
            .number(values.front())
            .key("max")
            .number(values.back());
    }
    out.end_object();
}

Result<Response> overview(Context& context, const std::string& tenant, Request&) {
    QUEEN_TRY(auto queues_list, read_queues(context, tenant));
    QUEEN_TRY(auto cursors, read_cursors(context, tenant, ""));
    const TimestampMs now = wall_now(context);
    Totals totals;
    std::uint64_t partitions = 0;
    std::set<std::string> namespaces;
    std::set<std::string> tasks;
    for (const queues::QueueSummary& q : queues_list) {
        partitions += q.partitions;
        totals.total += q.messages;
        totals.pending += q.pending;
        totals.processing += q.processing;
        totals.dead_letter += q.dead_letter;
        if (!q.namespace_name.empty()) {
            namespaces.insert(q.namespace_name);
        }
        if (!q.task.empty()) {
            tasks.insert(q.task);
        }
    }
    totals.completed = totals.total - std::min(totals.total, totals.pending);
    LagStats lag;
    for (const queues::GroupCursorInfo& c : cursors) {
        lag.offset.push_back(static_cast<double>(c.offset_lag));
        lag.time_s.push_back(static_cast<double>(time_lag_seconds(c, now)));
    }
    const std::int64_t now_ms = now.value();
    JsonWriter out;
    out.begin_object()
        .field("queues", queues_list.size())
        .field("partitions", partitions)
        .field("namespaces", namespaces.size())
        .field("tasks", tasks.size())
        .key("messages");
    write_totals(out, totals);
    out.key("lag").begin_object();
    write_stat(out, "time", lag.time_s);
    write_stat(out, "offset", lag.offset);
    out.end_object()
        .key("throughput")
        .begin_object()
        .key("ingestedPerSecond")
        .number(context.metrics.ingested.per_second(now_ms))
        .key("processedPerSecond")
        .number(context.metrics.processed.per_second(now_ms))
        .end_object()
        .field("timestamp", format_iso_ms(now_ms))
        .field("statsAge", 0)
        .end_object();
    return Response::json(200, out.take());
}

void handle_delete_queue(Context& context, const ContextPtr& shared, Request& request,
                         Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    queues::DeleteQueue command;
    auto name = name_param(request, "queue", "queue", context.options);
    if (!name) {
        responder.complete(error_response(context, name.error(), tenant));
        return;
    }
    command.queue = std::move(*name);
    invalidate_queue_cache(context, tenant, command.queue);
    submit_and_reply<queues::DeleteQueueResult>(
        shared, tenant, command, std::move(responder),
        [&context, tenant, queue = command.queue](queues::DeleteQueueResult& result) {
            invalidate_queue_cache(context, tenant, queue);
            JsonWriter out;
            out.begin_object()
                .field("deleted", true)
                .field("queue", queue)
                .field("existed", result.existed)
                .end_object();
            return Response::json(200, out.take());
        });
}

}  // namespace

void register_resource_routes(http::Router& router, const ContextPtr& context) {
    router.get("/api/v1/resources/queues", read_handler(context, list_resource_queues));
    router.get("/api/v1/resources/queues/:queue", read_handler(context, get_resource_queue));
    router.del("/api/v1/resources/queues/:queue", make_handler(context, handle_delete_queue));
    router.get("/api/v1/resources/namespaces",
               read_handler(context, [](Context& c, const std::string& tenant, Request&) {
                   return grouped_queues(
                       c, tenant, "namespaces", "namespace",
                       [](const queues::QueueSummary& q) { return q.namespace_name; });
               }));
    router.get("/api/v1/resources/tasks",
               read_handler(context, [](Context& c, const std::string& tenant, Request&) {
                   return grouped_queues(c, tenant, "tasks", "task",
                                         [](const queues::QueueSummary& q) { return q.task; });
               }));
    router.get("/api/v1/resources/overview", read_handler(context, overview));
}

}  // namespace queen::api::detail
