// api/src/status_routes.cpp — status (docs/http-api.md, admin): dashboard, queue status and
// analytics.
#include <algorithm>
#include <map>
#include <vector>

#include "admin_common.hpp"
#include "format.hpp"
#include "parse.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

Result<Response> status_queues(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const Page page, page_of(context, request, 100));
    QUEEN_TRY(const std::string ns, name_query(request, "namespace", context.options));
    QUEEN_TRY(const std::string task, name_query(request, "task", context.options));
    QUEEN_TRY(auto list, read_queues(context, tenant));
    std::vector<const queues::QueueSummary*> matching;
    for (const queues::QueueSummary& q : list) {
        if ((ns.empty() || q.namespace_name == ns) && (task.empty() || q.task == task)) {
            matching.push_back(&q);
        }
    }
    JsonWriter out;
    out.begin_object().key("queues").begin_array();
    for (std::uint64_t i = page.offset; i < matching.size() && i < page.offset + page.limit; ++i) {
        write_queue_summary(out, *matching[i]);
    }
    out.end_array().field("total", matching.size());
    write_pagination(out, page);
    out.end_object();
    return Response::json(200, out.take());
}

Result<Response> status_queue(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const std::string name, name_param(request, "queue", "queue", context.options));
    QUEEN_TRY(auto detail, read_queue(context, tenant, name));
    if (!detail.has_value()) {
        return error_response(context, 404, "Queue not found");
    }
    QUEEN_TRY(auto cursors, read_cursors(context, tenant, std::string(queues::queue_mode_group)));
    std::map<std::uint64_t, const queues::GroupCursorInfo*> by_partition;
    for (const queues::GroupCursorInfo& c : cursors) {
        if (c.queue == name) {
            by_partition[c.partition_id.value()] = &c;
        }
    }
    const queues::QueueSummary& q = detail->queue;
    JsonWriter out;
    out.begin_object()
        .key("queue")
        .begin_object()
        .field("id", queues::format_queue_id(q.id))
        .field("name", q.name)
        .field("namespace", q.namespace_name)
        .field("task", q.task)
        .field("priority", q.options.priority)
        .field("createdAt", format_iso_ms(q.created_at.value()))
        .key("config")
        .begin_object();
    using Options = queues::QueueOptions;
    write_queue_option_fields(out, q.options, &Options::lease_time_s, &Options::retry_limit,
                              &Options::retry_delay_ms, &Options::ttl_s);
    // The old server's name for maxSize in this view.
    out.field("maxQueueSize", q.options.max_size);
    write_queue_option_fields(out, q.options, &Options::is_dead_letter_queue);
    out.end_object().key("options");
    write_queue_options(out, q.options);
    out.end_object().key("partitions").begin_array();
    Totals totals;
    for (const queues::PartitionSummary& p : detail->partitions) {
        const Totals t = partition_totals(p);
        totals.total += t.total;
        totals.pending += t.pending;
        totals.processing += t.processing;
        totals.completed += t.completed;
        const auto cursor = by_partition.find(p.id.value());
        out.begin_object()
            .field("id", queues::format_partition_id(p.id))
            .field("name", p.name)
            .field("createdAt", format_iso_ms(p.created_at.value()))
            .key("messages")
            .begin_object()
            .field("total", t.total)
            .field("pending", t.pending)
            .field("processing", t.processing)
            .field("completed", t.completed)
            .end_object()
            .key("stats");
        write_totals(out, t);
        out.key("cursor")
            .begin_object()
            .field("totalConsumed",
                   cursor != by_partition.end() ? cursor->second->total_consumed : 0)
            .null_field("batchesConsumed")
            .end_object()
            .field_or_null("lastActivity", cursor != by_partition.end()
                                               ? iso_or_empty(cursor->second->last_consumed_at)
                                               : iso_or_empty(p.newest_at))
            .field_or_null("oldestMessage", iso_or_empty(p.oldest_at))
            .field_or_null("newestMessage", iso_or_empty(p.newest_at))
            .end_object();
    }
    totals.dead_letter = q.dead_letter;
    out.end_array()
        .key("totals")
        .begin_object()
        .key("messages")
        .begin_object()
        .field("total", totals.total)
        .field("pending", totals.pending)
        .field("processing", totals.processing)
        .field("completed", totals.completed)
        .end_object()
        .field("total", totals.total)
        .field("pending", totals.pending)
        .field("processing", totals.processing)
        .field("completed", totals.completed)
        .field("failed", totals.failed)
        .field("deadLetter", totals.dead_letter)
        .end_object()
        .end_object();
    return Response::json(200, out.take());
}

Result<Response> status_queue_messages(Context& context, const std::string& tenant,
                                       Request& request) {
    QUEEN_TRY(const Page page, page_of(context, request, 50));
    QUEEN_TRY(const std::string name, name_param(request, "queue", "queue", context.options));
    const TimestampMs now = wall_now(context);
    QUEEN_TRY(auto messages,
              query(context, tenant,
                    [&](const queues::Tables& tables,
                        const store::Txn& txn) -> Result<std::vector<queues::MessageDetail>> {
                        QUEEN_TRY(auto list, queues::list_messages(tables, txn, name, "",
                                                                   page.limit, page.offset));
                        for (queues::MessageDetail& m : list) {
                            QUEEN_TRY(auto full, queues::get_message(tables, txn, m.id.partition,
                                                                     m.transaction_id, now));
                            if (full.has_value()) {
                                m.groups = std::move(full->groups);
                                m.is_dead_letter = full->is_dead_letter;
                            }
                        }
                        return list;
                    }));
    JsonWriter out;
    out.begin_array();
    for (const queues::MessageDetail& m : messages) {
        out.begin_object()
            .field("id", queues::format_message_id(m.id, m.created_at))
            .field("transactionId", m.transaction_id)
            .field("partitionId", queues::format_partition_id(m.id.partition))
            .field("queuePath", m.queue + "/" + m.partition)
            .field("queue", m.queue)
            .field("partition", m.partition)
            .field("status", message_status(m, std::string(queues::queue_mode_group)))
            .field("createdAt", format_iso_ms(m.created_at.value()))
            .end_object();
    }
    out.end_array();
    return Response::json(200, out.take());
}

struct TimeRange {
    std::int64_t from_ms = 0;
    std::int64_t to_ms = 0;
};

/// Writes the member "timeRange": {"from", "to"} of a dashboard answer.
void write_time_range(JsonWriter& out, const TimeRange& range) {
    out.key("timeRange")
        .begin_object()
        .field("from", format_iso_ms(range.from_ms))
        .field("to", format_iso_ms(range.to_ms))
        .end_object();
}

// `from`/`to` of the dashboard endpoints: default the last hour.
Result<TimeRange> time_range(const Context& context, const Request& request) {
    TimeRange range;
    range.to_ms = context.backend.wall_ms();
    range.from_ms = range.to_ms - 3'600'000;
    if (const auto text = request.query_value("from"); text && !text->empty()) {
        const auto at = parse_iso(*text);
        if (!at) {
            return bad("from must be an ISO-8601 timestamp");
        }
        range.from_ms = *at;
    }
    if (const auto text = request.query_value("to"); text && !text->empty()) {
        const auto at = parse_iso(*text);
        if (!at) {
            return bad("to must be an ISO-8601 timestamp");
        }
        range.to_ms = *at;
    }
    return range;
}

Result<Response> status_dashboard(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const TimeRange range, time_range(context, request));
    QUEEN_TRY(const std::string filter_queue, name_query(request, "queue", context.options));
    QUEEN_TRY(const std::string ns, name_query(request, "namespace", context.options));
    QUEEN_TRY(const std::string task, name_query(request, "task", context.options));
    QUEEN_TRY(auto list, read_queues(context, tenant));
    QUEEN_TRY(auto cursors, read_cursors(context, tenant, ""));
    const TimestampMs now = wall_now(context);
    const std::int64_t now_ms = now.value();
    Totals totals;
    std::uint64_t active_leases = 0;
    double lag_max_ms = 0;
    double lag_sum_ms = 0;
    std::uint64_t lag_count = 0;
    for (const queues::GroupCursorInfo& c : cursors) {
        if (c.is_lease_active) {
            ++active_leases;
        }
        const double lag_ms = static_cast<double>(time_lag_seconds(c, now)) * 1000.0;
        lag_max_ms = std::max(lag_max_ms, lag_ms);
        lag_sum_ms += lag_ms;
        ++lag_count;
    }
    JsonWriter out;
    out.begin_object();
    write_time_range(out, range);
    out.field("bucketMinutes", 1)
        .field("pointCount", 1)
        .key("throughput")
        .begin_array()
        .begin_object()
        .field("timestamp", format_iso_ms(now_ms))
        .key("ingestedPerSecond")
        .number(context.metrics.ingested.per_second(now_ms))
        .key("processedPerSecond")
        .number(context.metrics.processed.per_second(now_ms))
        .key("avgLagMs")
        .number(lag_count == 0 ? 0.0 : lag_sum_ms / static_cast<double>(lag_count))
        .key("maxLagMs")
        .number(lag_max_ms)
        .end_object()
        .end_array()
        .key("queues")
        .begin_array();
    for (const queues::QueueSummary& q : list) {
        if ((!filter_queue.empty() && q.name != filter_queue) ||
            (!ns.empty() && q.namespace_name != ns) || (!task.empty() && q.task != task)) {
            continue;
        }
        totals.total += q.messages;
        totals.pending += q.pending;
        totals.processing += q.processing;
        totals.dead_letter += q.dead_letter;
        write_queue_summary(out, q);
    }
    totals.completed = totals.total - std::min(totals.total, totals.pending);
    out.end_array().key("messages");
    write_totals(out, totals);
    out.key("leases")
        .begin_object()
        .field("active", active_leases)
        .end_object()
        .key("deadLetterQueue")
        .begin_object()
        .field("totalMessages", totals.dead_letter)
        .end_object()
        .key("workers")
        .begin_array()
        .end_array()
        .key("errors")
        .begin_object()
        .field("clientErrors", context.metrics.responses_4xx.load(relaxed))
        .field("serverErrors", context.metrics.responses_5xx.load(relaxed))
        .end_object()
        .field("statsAge", 0)
        .end_object();
    return Response::json(200, out.take());
}

Result<Response> status_analytics(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const TimeRange range, time_range(context, request));
    std::string interval(request.query_value("interval").value_or("hour"));
    QUEEN_TRY(auto list, read_queues(context, tenant));
    QUEEN_TRY(const std::string filter_queue, name_query(request, "queue", context.options));
    std::uint64_t total = 0;
    for (const queues::QueueSummary& q : list) {
        if (filter_queue.empty() || q.name == filter_queue) {
            total += q.messages;
        }
    }
    // No history is kept: one point, the stored message count now.
    JsonWriter out;
    out.begin_object()
        .key("dataPoints")
        .begin_array()
        .begin_object()
        .field("timestamp", format_iso_ms(context.backend.wall_ms()))
        .field("messages", total)
        .end_object()
        .end_array()
        .field("interval", interval)
        .field("from", format_iso_ms(range.from_ms))
        .field("to", format_iso_ms(range.to_ms))
        .end_object();
    return Response::json(200, out.take());
}

Result<Response> status_buffers(Context& context, const std::string& tenant, Request&) {
    QUEEN_TRY(auto state,
              query(context, tenant, [](const queues::Tables& tables, const store::Txn& txn) {
                  return queues::get_maintenance(tables, txn);
              }));
    JsonWriter out;
    out.begin_object()
        .field("pending", state.buffered_messages)
        .field("failed", 0)
        .field("dbHealthy", true)
        .field("worker", context.backend.node_status().node_id)
        .field("note", "pushes buffered during push maintenance are stored in the tenant state")
        .end_object();
    return Response::json(200, out.take());
}

Result<Response> system_metrics(Context& context, const std::string&, Request& request) {
    QUEEN_TRY(const TimeRange range, time_range(context, request));
    const NodeStatus status = context.backend.node_status();
    JsonWriter out;
    out.begin_object();
    write_time_range(out, range);
    out.key("replicas")
        .begin_array()
        .begin_object()
        .field("workerId", status.node_id)
        .key("timeSeries")
        .begin_array()
        .begin_object()
        .field("timestamp", format_iso_ms(context.backend.wall_ms()))
        .key("metrics")
        .begin_object()
        .field("uptimeSeconds", status.uptime_ms / 1000)
        .field("residentMemoryBytes", status.resident_memory_bytes)
        .field("virtualMemoryBytes", status.virtual_memory_bytes)
        .field("cpuUserMicros", status.cpu_user_us)
        .field("cpuSystemMicros", status.cpu_system_us)
        .end_object()
        .end_object()
        .end_array()
        .end_object()
        .end_array()
        .end_object();
    return Response::json(200, out.take());
}

Result<Response> worker_metrics(Context& context, const std::string&, Request& request) {
    QUEEN_TRY(const TimeRange range, time_range(context, request));
    const std::int64_t now_ms = context.backend.wall_ms();
    const Metrics& m = context.metrics;
    JsonWriter out;
    out.begin_object();
    write_time_range(out, range);
    out.key("workers")
        .begin_array()
        .begin_object()
        .field("workerId", context.backend.node_status().node_id)
        .field("timestamp", format_iso_ms(now_ms))
        .key("requestsPerSecond")
        .number(m.request_rate.per_second(now_ms))
        .key("ingestedPerSecond")
        .number(m.ingested.per_second(now_ms))
        .key("processedPerSecond")
        .number(m.processed.per_second(now_ms))
        .field("longPollsWaiting", m.long_polls_waiting.load(relaxed))
        .end_object()
        .end_array()
        .end_object();
    return Response::json(200, out.take());
}

Result<Response> queue_lag(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const TimeRange range, time_range(context, request));
    QUEEN_TRY(const std::string filter_queue, name_query(request, "queue", context.options));
    QUEEN_TRY(auto cursors, read_cursors(context, tenant, ""));
    const TimestampMs now = wall_now(context);
    struct Lag {
        std::uint64_t offset = 0;
        std::int64_t time_s = 0;
    };
    std::map<std::string, Lag> by_queue;
    for (const queues::GroupCursorInfo& c : cursors) {
        if (!filter_queue.empty() && c.queue != filter_queue) {
            continue;
        }
        Lag& lag = by_queue[c.queue];
        lag.offset += c.offset_lag;
        lag.time_s = std::max(lag.time_s, time_lag_seconds(c, now));
    }
    JsonWriter out;
    out.begin_object()
        .field("from", format_iso_ms(range.from_ms))
        .field("to", format_iso_ms(range.to_ms))
        .key("queues")
        .begin_array();
    for (const auto& [queue, lag] : by_queue) {
        out.begin_object()
            .field("queue", queue)
            .field("timestamp", format_iso_ms(now.value()))
            .field("offsetLag", lag.offset)
            .field("maxTimeLagSeconds", lag.time_s)
            .end_object();
    }
    out.end_array().end_object();
    return Response::json(200, out.take());
}

Result<Response> queue_ops(Context& context, const std::string&, Request& request) {
    QUEEN_TRY(const TimeRange range, time_range(context, request));
    const std::int64_t now_ms = context.backend.wall_ms();
    const Metrics& m = context.metrics;
    // Operations are counted per node, not per queue: one series for all queues.
    JsonWriter out;
    out.begin_object()
        .field("from", format_iso_ms(range.from_ms))
        .field("to", format_iso_ms(range.to_ms))
        .key("points")
        .begin_array()
        .begin_object()
        .field("timestamp", format_iso_ms(now_ms))
        .field("pushMessages", m.push_messages.load(relaxed))
        .field("popMessages", m.pop_messages.load(relaxed))
        .field("ackMessages", m.ack_messages.load(relaxed))
        .field("transactions", m.transactions.load(relaxed))
        .key("ingestedPerSecond")
        .number(m.ingested.per_second(now_ms))
        .key("processedPerSecond")
        .number(m.processed.per_second(now_ms))
        .end_object()
        .end_array()
        .end_object();
    return Response::json(200, out.take());
}

Result<Response> parked_replicas(Context& context, const std::string&, Request&) {
    JsonWriter out;
    out.begin_object()
        .key("replicas")
        .begin_array()
        .begin_object()
        .field("workerId", context.backend.node_status().node_id)
        .field("parkedConsumers", context.metrics.long_polls_waiting.load(relaxed))
        .field("timestamp", format_iso_ms(context.backend.wall_ms()))
        .end_object()
        .end_array()
        .end_object();
    return Response::json(200, out.take());
}

Result<Response> retention(Context& context, const std::string& tenant, Request&) {
    QUEEN_TRY(auto list, read_queues(context, tenant));
    JsonWriter out;
    out.begin_object().key("queues").begin_array();
    for (const queues::QueueSummary& q : list) {
        out.begin_object().field("queue", q.name);
        using Options = queues::QueueOptions;
        write_queue_option_fields(out, q.options, &Options::is_retention_enabled,
                                  &Options::retention_s, &Options::completed_retention_s,
                                  &Options::max_wait_time_s, &Options::ttl_s);
        out.field("messages", q.messages).end_object();
    }
    out.end_array().end_object();
    return Response::json(200, out.take());
}

Result<Response> stats_refresh(Context&, const std::string&, Request&) {
    // Counts are computed from the state on every read: there is nothing to refresh.
    JsonWriter out;
    out.begin_object().field("skipped", false);
    for (const char* step : {"partition", "queue", "namespace", "task", "system", "cleanup"}) {
        out.key(step).begin_object().field("live", true).end_object();
    }
    out.end_object();
    return Response::json(200, out.take());
}

}  // namespace

void register_status_routes(http::Router& router, const ContextPtr& context) {
    router.get("/api/v1/status", read_handler(context, status_dashboard));
    router.get("/api/v1/status/queues", read_handler(context, status_queues));
    router.get("/api/v1/status/queues/:queue", read_handler(context, status_queue));
    router.get("/api/v1/status/queues/:queue/messages",
               read_handler(context, status_queue_messages));
    router.get("/api/v1/status/analytics", read_handler(context, status_analytics));
    router.get("/api/v1/status/buffers", read_handler(context, status_buffers));
    router.get("/api/v1/analytics/system-metrics", read_handler(context, system_metrics));
    router.get("/api/v1/analytics/worker-metrics", read_handler(context, worker_metrics));
    router.get("/api/v1/analytics/queue-lag", read_handler(context, queue_lag));
    router.get("/api/v1/analytics/queue-ops", read_handler(context, queue_ops));
    router.get("/api/v1/analytics/queue-parked-replicas", read_handler(context, parked_replicas));
    router.get("/api/v1/analytics/retention", read_handler(context, retention));
    router.post("/api/v1/stats/refresh", read_handler(context, stats_refresh));
}

}  // namespace queen::api::detail
