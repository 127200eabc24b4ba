// api/src/admin_routes.cpp — spec section 7: resources, messages, DLQ, traces (read), status and
// analytics, consumer groups (listing, delete, subscription, seek) and the maintenance modes.
#include <algorithm>
#include <map>
#include <set>

#include "format.hpp"
#include "parse.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

using http::Request;
using http::Responder;
using http::Response;

constexpr auto relaxed = std::memory_order_relaxed;

// A handler body that reads state: returns the response or an error to map.
using ReadFn = std::function<Result<Response>(Context&, const std::string& tenant, Request&)>;

// Runs `fn` once the tenant's state holds every entry answered so far (when_readable), on the
// request's I/O thread: at once when nothing waits, else after the LMDB commit, without any
// thread waiting for it.
http::Handler read_handler(const ContextPtr& context, ReadFn fn) {
    return make_handler(
        context, [fn = std::make_shared<const ReadFn>(std::move(fn))](
                     Context& c, const ContextPtr& shared, Request& request, Responder responder) {
            std::string tenant;
            if (!resolve_tenant(c, request, responder, tenant)) {
                return;
            }
            auto held = std::make_shared<Request>(std::move(request));
            when_readable(shared, tenant, responder, [shared, fn, held, tenant, responder] {
                auto response = (*fn)(*shared, tenant, *held);
                if (!response) {
                    responder.complete(error_response(*shared, response.error(), tenant));
                    return;
                }
                responder.complete(std::move(*response));
            });
        });
}

Error bad(std::string message) {
    return Error{Errc::invalid_argument, std::move(message)};
}

struct Page {
    std::uint64_t limit = 0;
    std::uint64_t offset = 0;
};

Result<Page> page_of(const Context& context, const Request& request, std::uint64_t limit_default) {
    Page page;
    QUEEN_TRY(const std::int64_t limit,
              query_integer(request, "limit", static_cast<std::int64_t>(limit_default), 0,
                            context.options.listing_limit_max));
    QUEEN_TRY(const std::int64_t offset, query_integer(request, "offset", 0, 0, INT64_MAX / 2));
    page.limit = static_cast<std::uint64_t>(limit);
    page.offset = static_cast<std::uint64_t>(offset);
    return page;
}

void write_pagination(JsonWriter& out, const Page& page) {
    out.key("pagination")
        .begin_object()
        .field("limit", page.limit)
        .field("offset", page.offset)
        .end_object();
}

std::string iso_or_empty(TimestampMs at) {
    return at.value() == 0 ? std::string() : format_iso_ms(at.value());
}

TimestampMs wall_now(const Context& context) {
    return TimestampMs{context.backend.wall_ms()};
}

std::string param(const Request& request, std::string_view name) {
    return std::string(request.param(name).value_or(""));
}

// ---------------------------------------------------------------------------------------------
// 7.1 Resources

void write_queue_summary(JsonWriter& out, const queues::QueueSummary& q) {
    out.begin_object()
        .field("id", queues::format_queue_id(q.id))
        .field("name", q.name)
        .field("namespace", q.namespace_name)
        .field("task", q.task)
        .field("priority", q.options.priority)
        .field("createdAt", format_iso_ms(q.created_at.value()))
        .field("partitions", q.partitions)
        .key("messages")
        .begin_object()
        .field("total", q.messages)
        .field("pending", q.pending)
        .field("processing", q.processing)
        .field("deadLetter", q.dead_letter)
        .end_object()
        .end_object();
}

Result<std::vector<queues::QueueSummary>> read_queues(Context& context, const std::string& tenant) {
    const TimestampMs now = wall_now(context);
    return query(context, tenant, [now](const queues::Tables& tables, const store::Txn& txn) {
        return queues::list_queues(tables, txn, now);
    });
}

Result<std::optional<queues::QueueDetail>> read_queue(Context& context, const std::string& tenant,
                                                      const std::string& name) {
    const TimestampMs now = wall_now(context);
    return query(context, tenant, [&](const queues::Tables& tables, const store::Txn& txn) {
        return queues::get_queue(tables, txn, name, now);
    });
}

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

struct Totals {
    std::uint64_t total = 0;
    std::uint64_t pending = 0;
    std::uint64_t processing = 0;
    std::uint64_t completed = 0;
    std::uint64_t failed = 0;
    std::uint64_t dead_letter = 0;
};

void write_totals(JsonWriter& out, const Totals& t) {
    out.begin_object()
        .field("total", t.total)
        .field("pending", t.pending)
        .field("processing", t.processing)
        .field("completed", t.completed)
        .field("failed", t.failed)
        .field("deadLetter", t.dead_letter)
        .end_object();
}

Totals partition_totals(const queues::PartitionSummary& p) {
    Totals t;
    t.total = p.messages;
    t.pending = p.pending;
    t.processing = p.processing;
    t.completed = p.completed;
    return t;
}

Result<Response> get_resource_queue(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(auto detail, read_queue(context, tenant, param(request, "queue")));
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

Result<std::vector<queues::GroupCursorInfo>> read_cursors(Context& context,
                                                          const std::string& tenant,
                                                          const std::string& group) {
    const TimestampMs now = wall_now(context);
    return query(context, tenant, [&](const queues::Tables& tables, const store::Txn& txn) {
        return queues::list_group_cursors(tables, txn, group, now);
    });
}

std::int64_t time_lag_seconds(const queues::GroupCursorInfo& c, TimestampMs now) {
    if (c.offset_lag == 0 || c.oldest_unconsumed_at.value() == 0) {
        return 0;
    }
    const std::int64_t lag = (now.value() - c.oldest_unconsumed_at.value()) / 1000;
    return lag < 0 ? 0 : lag;
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
    command.queue = param(request, "queue");
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

// ---------------------------------------------------------------------------------------------
// 7.2 Messages and DLQ

std::string message_status(const queues::MessageDetail& m, const std::string& group) {
    if (m.is_dead_letter) {
        return "dead_letter";
    }
    for (const queues::GroupCursorInfo& c : m.groups) {
        if (c.group != group) {
            continue;
        }
        if (c.consumed >= m.id.sequence) {
            return "completed";
        }
        return c.is_lease_active ? "processing" : "pending";
    }
    return "pending";
}

Result<Response> list_messages(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const Page page, page_of(context, request, 200));
    const std::string queue(request.query_value("queue").value_or(""));
    const std::string partition(request.query_value("partition").value_or(""));
    const std::string ns(request.query_value("ns").value_or(""));
    const std::string task(request.query_value("task").value_or(""));
    const std::string status(request.query_value("status").value_or(""));
    if (!status.empty() && status != "pending" && status != "processing" && status != "completed" &&
        status != "dead_letter") {
        return bad("status must be pending, processing, completed or dead_letter");
    }
    std::optional<std::int64_t> from;
    std::optional<std::int64_t> to;
    if (const auto text = request.query_value("from"); text && !text->empty()) {
        from = parse_iso(*text);
        if (!from) {
            return bad("from must be an ISO-8601 timestamp");
        }
    }
    if (const auto text = request.query_value("to"); text && !text->empty()) {
        to = parse_iso(*text);
        if (!to) {
            return bad("to must be an ISO-8601 timestamp");
        }
    }
    QUEEN_TRY(auto queues_list, read_queues(context, tenant));
    // Filters other than queue/partition need every candidate: read a bounded window from the
    // start, filter, then page.
    const bool is_filtered = !status.empty() || from || to;
    const std::uint64_t window =
        is_filtered ? context.options.listing_limit_max : page.offset + page.limit;
    struct Row {
        queues::MessageDetail message;
        std::string status;
        std::uint64_t bus_consumed = 0;
        std::uint64_t bus_groups = 0;
        std::int64_t priority = 0;
        TimestampMs lease_expires_at{0};
    };
    std::vector<Row> rows;
    bool has_queue_mode = false;
    std::set<std::string> bus_groups;
    for (const queues::QueueSummary& q : queues_list) {
        if ((!queue.empty() && q.name != queue) || (!ns.empty() && q.namespace_name != ns) ||
            (!task.empty() && q.task != task)) {
            continue;
        }
        const TimestampMs now = wall_now(context);
        QUEEN_TRY(
            auto messages,
            query(context, tenant,
                  [&](const queues::Tables& tables,
                      const store::Txn& txn) -> Result<std::vector<queues::MessageDetail>> {
                      QUEEN_TRY(auto list,
                                queues::list_messages(tables, txn, q.name, partition, window, 0));
                      // Cursor state per message for its status (list_messages omits it).
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
        for (queues::MessageDetail& m : messages) {
            Row row;
            for (const queues::GroupCursorInfo& c : m.groups) {
                if (c.group == queues::queue_mode_group) {
                    has_queue_mode = true;
                    if (c.is_lease_active) {
                        row.lease_expires_at = c.lease_expires_at;
                    }
                } else {
                    bus_groups.insert(c.group);
                    ++row.bus_groups;
                    row.bus_consumed += c.consumed >= m.id.sequence ? 1 : 0;
                }
            }
            row.status = message_status(m, std::string(queues::queue_mode_group));
            row.priority = q.options.priority;
            if ((!status.empty() && row.status != status) ||
                (from && m.created_at.value() < *from) || (to && m.created_at.value() > *to)) {
                continue;
            }
            row.message = std::move(m);
            rows.push_back(std::move(row));
        }
    }
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
        return a.message.created_at > b.message.created_at;
    });
    JsonWriter out;
    out.begin_object().key("messages").begin_array();
    for (std::uint64_t i = page.offset; i < rows.size() && i < page.offset + page.limit; ++i) {
        const Row& row = rows[i];
        const queues::MessageDetail& m = row.message;
        out.begin_object()
            .field("id", queues::format_message_id(m.id))
            .field("transactionId", m.transaction_id)
            .field("partitionId", queues::format_partition_id(m.id.partition))
            .field("queuePath", m.queue + "/" + m.partition)
            .field("queue", m.queue)
            .field("partition", m.partition)
            .field("namespace", m.namespace_name)
            .field("task", m.task)
            .field("status", row.status)
            .field("queueStatus", row.status)
            .key("busStatus")
            .begin_object()
            .field("consumedBy", row.bus_consumed)
            .field("totalGroups", row.bus_groups)
            .end_object()
            .field_or_null("traceId", m.trace_id)
            .field_or_null("producerSub", m.producer_sub)
            .field("queuePriority", row.priority)
            .field("createdAt", format_iso_ms(m.created_at.value()))
            .field_or_null("leaseExpiresAt", iso_or_empty(row.lease_expires_at))
            .end_object();
    }
    const char* type = has_queue_mode ? (bus_groups.empty() ? "queue" : "hybrid")
                                      : (bus_groups.empty() ? "none" : "bus");
    out.end_array()
        .key("mode")
        .begin_object()
        .field("hasQueueMode", has_queue_mode)
        .field("busGroupsCount", bus_groups.size())
        .field("type", type)
        .end_object();
    write_pagination(out, page);
    out.end_object();
    return Response::json(200, out.take());
}

Result<queues::PartitionId> partition_param(const Request& request) {
    return parse_client_partition_id(request.param("partitionId").value_or(""), "partitionId");
}

Result<Response> get_message(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const queues::PartitionId partition, partition_param(request));
    const std::string transaction_id = param(request, "transactionId");
    const TimestampMs now = wall_now(context);
    QUEEN_TRY(auto found,
              query(context, tenant, [&](const queues::Tables& tables, const store::Txn& txn) {
                  return queues::get_message(tables, txn, partition, transaction_id, now);
              }));
    if (!found.has_value()) {
        return error_response(context, 404, "Message not found");
    }
    const queues::MessageDetail& m = *found;
    QUEEN_TRY(const std::string payload,
              payload_json(m.payload, m.is_encrypted, context.cipher_or_null()));
    const std::string status = message_status(m, std::string(queues::queue_mode_group));
    bool has_queue_mode = false;
    std::uint64_t bus_groups = 0;
    std::uint64_t consumed_by = 0;
    TimestampMs lease_expires_at{0};
    for (const queues::GroupCursorInfo& c : m.groups) {
        if (c.group == queues::queue_mode_group) {
            has_queue_mode = true;
            if (c.is_lease_active) {
                lease_expires_at = c.lease_expires_at;
            }
        } else {
            ++bus_groups;
            consumed_by += c.consumed >= m.id.sequence ? 1 : 0;
        }
    }
    JsonWriter out;
    out.begin_object()
        .field("id", queues::format_message_id(m.id))
        .field("transactionId", m.transaction_id)
        .field("partitionId", queues::format_partition_id(m.id.partition))
        .field("queuePath", m.queue + "/" + m.partition)
        .field("queue", m.queue)
        .field("partition", m.partition)
        .field("namespace", m.namespace_name)
        .field("task", m.task)
        .field("status", status)
        .key("payload")
        .raw(payload)
        .field("isEncrypted", m.is_encrypted)
        .field_or_null("traceId", m.trace_id)
        .field_or_null("producerSub", m.producer_sub)
        .field("createdAt", format_iso_ms(m.created_at.value()))
        .field_or_null("errorMessage", m.error)
        .field("retryCount", m.retry_count)
        .field_or_null("leaseExpiresAt", iso_or_empty(lease_expires_at))
        .key("queueConfig")
        .begin_object()
        .field("leaseTime", m.options.lease_time_s)
        .field("retryLimit", m.options.retry_limit)
        .field("retryDelay", m.options.retry_delay_ms)
        .field("ttl", m.options.ttl_s)
        .field("priority", m.options.priority)
        .end_object()
        .key("mode")
        .begin_object()
        .field("hasQueueMode", has_queue_mode)
        .field("busGroupsCount", bus_groups)
        .field("type", has_queue_mode ? (bus_groups == 0 ? "queue" : "hybrid")
                                      : (bus_groups == 0 ? "none" : "bus"))
        .field("consumedByGroups", consumed_by)
        .end_object()
        .key("consumerGroups")
        .begin_array();
    for (const queues::GroupCursorInfo& c : m.groups) {
        out.begin_object()
            .field("name", c.group)
            .field("consumed", c.consumed >= m.id.sequence)
            .field_or_null("leaseExpiresAt",
                           c.is_lease_active ? iso_or_empty(c.lease_expires_at) : std::string())
            .end_object();
    }
    out.end_array().end_object();
    return Response::json(200, out.take());
}

void handle_delete_message(Context& context, const ContextPtr& shared, Request& request,
                           Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto partition = partition_param(request);
    if (!partition) {
        responder.complete(error_response(context, partition.error(), tenant));
        return;
    }
    queues::DeleteMessage command;
    command.partition = *partition;
    command.transaction_id = param(request, "transactionId");
    submit_and_reply<queues::DeleteMessageResult>(
        shared, tenant, command, std::move(responder),
        [partition_text = param(request, "partitionId"),
         transaction_id = command.transaction_id](queues::DeleteMessageResult& result) {
            JsonWriter out;
            out.begin_object()
                .field("success", result.found)
                .field("partitionId", partition_text)
                .field("transactionId", transaction_id)
                .field("message",
                       result.found ? "Message deleted successfully" : "Message not found")
                .end_object();
            return Response::json(200, out.take());
        });
}

Result<Response> list_dlq(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const Page page, page_of(context, request, 100));
    const std::string queue(request.query_value("queue").value_or(""));
    const std::string group(request.query_value("consumerGroup").value_or(""));
    QUEEN_TRY(auto entries,
              query(context, tenant, [&](const queues::Tables& tables, const store::Txn& txn) {
                  return queues::list_dlq(tables, txn, queue, group, page.limit, page.offset);
              }));
    JsonWriter out;
    out.begin_object().key("messages").begin_array();
    for (const queues::DlqEntry& e : entries) {
        QUEEN_TRY(const std::string data,
                  payload_json(e.payload, e.is_encrypted, context.cipher_or_null()));
        out.begin_object()
            .field("id", queues::format_message_id(e.id))
            .field("transactionId", e.transaction_id)
            .field("partitionId", queues::format_partition_id(e.id.partition))
            .field("queue", e.queue)
            .field("partition", e.partition)
            .field("consumerGroup", e.group)
            .field_or_null("errorMessage", e.error)
            .field("retryCount", e.retry_count)
            .key("data")
            .raw(data)
            .field_or_null("traceId", e.trace_id)
            .field_or_null("producerSub", e.producer_sub)
            .field("createdAt", format_iso_ms(e.created_at.value()))
            .field("failedAt", format_iso_ms(e.failed_at.value()))
            .end_object();
    }
    out.end_array();
    write_pagination(out, page);
    out.end_object();
    return Response::json(200, out.take());
}

// ---------------------------------------------------------------------------------------------
// 7.3 Traces (read)

Result<Response> message_traces(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const queues::PartitionId partition, partition_param(request));
    const std::string transaction_id = param(request, "transactionId");
    QUEEN_TRY(auto traces,
              query(context, tenant, [&](const queues::Tables& tables, const store::Txn& txn) {
                  return queues::list_traces(tables, txn, partition, transaction_id);
              }));
    JsonWriter out;
    out.begin_object().key("traces").begin_array();
    for (const queues::TraceEvent& t : traces) {
        out.begin_object()
            .field("id", queues::format_uuid(queues::UuidKind::trace, 0, t.id))
            .field("event_type", t.event_type)
            .key("data")
            .raw(as_chars(t.data))
            .field("consumer_group", t.group)
            .null_field("worker_id")
            .field("created_at", format_iso_ms(t.created_at.value()))
            .key("trace_names")
            .begin_array();
        for (const std::string& name : t.names) {
            out.string(name);
        }
        out.end_array().end_object();
    }
    out.end_array().end_object();
    return Response::json(200, out.take());
}

Result<Response> traces_by_name(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const Page page, page_of(context, request, 100));
    const std::string name = param(request, "traceName");
    std::uint64_t total = 0;
    QUEEN_TRY(
        auto hits, query(context, tenant, [&](const queues::Tables& tables, const store::Txn& txn) {
            return queues::list_traces_by_name(tables, txn, name, page.limit, page.offset, total);
        }));
    JsonWriter out;
    out.begin_object().key("traces").begin_array();
    for (const queues::TraceHit& hit : hits) {
        const queues::TraceEvent& t = hit.event;
        // A payload this node cannot decrypt is shown as null rather than failing the listing.
        auto payload = payload_json(hit.payload, hit.is_encrypted, context.cipher_or_null());
        out.begin_object()
            .field("id", queues::format_uuid(queues::UuidKind::trace, 0, t.id))
            .field("transaction_id", hit.transaction_id)
            .field("partition_id", queues::format_partition_id(hit.message.partition))
            .field("event_type", t.event_type)
            .key("data")
            .raw(as_chars(t.data))
            .field("consumer_group", t.group)
            .null_field("worker_id")
            .field("created_at", format_iso_ms(t.created_at.value()))
            .field("queue_name", hit.queue)
            .field("partition_name", hit.partition);
        if (payload) {
            out.key("message_payload").raw(*payload);
        } else {
            out.null_field("message_payload");
        }
        out.key("trace_names").begin_array();
        for (const std::string& trace_name : t.names) {
            out.string(trace_name);
        }
        out.end_array().end_object();
    }
    out.end_array();
    out.key("total").number(static_cast<double>(total));
    write_pagination(out, page);
    out.end_object();
    return Response::json(200, out.take());
}

Result<Response> trace_names(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const Page page, page_of(context, request, 50));
    std::uint64_t total = 0;
    QUEEN_TRY(auto names,
              query(context, tenant, [&](const queues::Tables& tables, const store::Txn& txn) {
                  return queues::list_trace_names(tables, txn, page.limit, page.offset, total);
              }));
    JsonWriter out;
    out.begin_object().key("trace_names").begin_array();
    for (const queues::TraceNameInfo& info : names) {
        out.begin_object()
            .field("trace_name", info.name)
            .field("trace_count", info.trace_count)
            .field("message_count", info.message_count)
            .field("last_seen", format_iso_ms(info.last_seen.value()))
            .end_object();
    }
    out.end_array();
    out.key("total").number(static_cast<double>(total));
    write_pagination(out, page);
    out.end_object();
    return Response::json(200, out.take());
}

// ---------------------------------------------------------------------------------------------
// 7.4 Status and analytics

Result<Response> status_queues(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const Page page, page_of(context, request, 100));
    const std::string ns(request.query_value("namespace").value_or(""));
    const std::string task(request.query_value("task").value_or(""));
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
    const std::string name = param(request, "queue");
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
        .begin_object()
        .field("leaseTime", q.options.lease_time_s)
        .field("retryLimit", q.options.retry_limit)
        .field("retryDelay", q.options.retry_delay_ms)
        .field("ttl", q.options.ttl_s)
        .field("maxQueueSize", q.options.max_size)
        .field("deadLetterQueue", q.options.dead_letter_queue)
        .end_object()
        .key("options");
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
    const std::string name = param(request, "queue");
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
            .field("id", queues::format_message_id(m.id))
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
    const std::string filter_queue(request.query_value("queue").value_or(""));
    const std::string ns(request.query_value("namespace").value_or(""));
    const std::string task(request.query_value("task").value_or(""));
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
    out.begin_object()
        .key("timeRange")
        .begin_object()
        .field("from", format_iso_ms(range.from_ms))
        .field("to", format_iso_ms(range.to_ms))
        .end_object()
        .field("bucketMinutes", 1)
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
    const std::string filter_queue(request.query_value("queue").value_or(""));
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
    out.begin_object()
        .key("timeRange")
        .begin_object()
        .field("from", format_iso_ms(range.from_ms))
        .field("to", format_iso_ms(range.to_ms))
        .end_object()
        .key("replicas")
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
    out.begin_object()
        .key("timeRange")
        .begin_object()
        .field("from", format_iso_ms(range.from_ms))
        .field("to", format_iso_ms(range.to_ms))
        .end_object()
        .key("workers")
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
    const std::string filter_queue(request.query_value("queue").value_or(""));
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
        out.begin_object()
            .field("queue", q.name)
            .field("retentionEnabled", q.options.retention_enabled)
            .field("retentionSeconds", q.options.retention_s)
            .field("completedRetentionSeconds", q.options.completed_retention_s)
            .field("maxWaitTimeSeconds", q.options.max_wait_time_s)
            .field("ttl", q.options.ttl_s)
            .field("messages", q.messages)
            .end_object();
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

// ---------------------------------------------------------------------------------------------
// 7.5 Consumer groups

const char* group_state(std::uint64_t partitions_with_lag, std::int64_t max_time_lag_s,
                        std::int64_t since_last_consumed_s) {
    if (partitions_with_lag == 0) {
        return "Stable";
    }
    if (since_last_consumed_s > 3600) {
        return "Dead";
    }
    return max_time_lag_s > 60 ? "Lagging" : "Stable";
}

Result<Response> list_groups(Context& context, const std::string& tenant, Request&) {
    QUEEN_TRY(auto cursors, read_cursors(context, tenant, ""));
    QUEEN_TRY(auto pairs,
              query(context, tenant, [](const queues::Tables& tables, const store::Txn& txn) {
                  return queues::list_group_queues(tables, txn);
              }));
    QUEEN_TRY(auto subscriptions,
              query(context, tenant, [](const queues::Tables& tables, const store::Txn& txn) {
                  return queues::list_subscriptions(tables, txn);
              }));
    const TimestampMs now = wall_now(context);
    struct Summary {
        std::uint64_t members = 0;
        std::uint64_t with_lag = 0;
        std::uint64_t total_lag = 0;
        std::int64_t max_time_lag_s = 0;
        std::int64_t last_consumed_ms = 0;
    };
    std::map<std::pair<std::string, std::string>, Summary> groups;
    for (const auto& pair : pairs) {
        groups[pair];
    }
    for (const queues::GroupCursorInfo& c : cursors) {
        Summary& s = groups[{c.group, c.queue}];
        ++s.members;
        s.total_lag += c.offset_lag;
        s.with_lag += c.offset_lag > 0 ? 1 : 0;
        s.max_time_lag_s = std::max(s.max_time_lag_s, time_lag_seconds(c, now));
        s.last_consumed_ms = std::max(s.last_consumed_ms, c.last_consumed_at.value());
    }
    JsonWriter out;
    out.begin_array();
    for (const auto& [key, s] : groups) {
        const auto& [group, queue] = key;
        const queues::SubscriptionInfo* subscription = nullptr;
        for (const queues::SubscriptionInfo& info : subscriptions) {
            if (info.group == group && info.queue == queue &&
                (subscription == nullptr || info.partition == queues::PartitionId{0})) {
                subscription = &info;
            }
        }
        const std::int64_t since_last_s =
            s.last_consumed_ms == 0 ? 0 : (now.value() - s.last_consumed_ms) / 1000;
        out.begin_object()
            .field("name", group)
            .key("topics")
            .begin_array()
            .string(queue)
            .end_array()
            .field("queueName", queue)
            .field("members", s.members)
            .field("partitionsWithLag", s.with_lag)
            .field("totalLag", s.total_lag)
            .field("maxTimeLag", s.max_time_lag_s)
            .field("state", group_state(s.with_lag, s.max_time_lag_s, since_last_s));
        if (subscription != nullptr) {
            out.field("subscriptionMode", subscription->mode == queues::SubscriptionMode::new_only
                                              ? "new"
                                              : "timestamp")
                .field("subscriptionTimestamp", format_iso_ms(subscription->timestamp.value()))
                .field("subscriptionCreatedAt", format_iso_ms(subscription->created_at.value()));
        } else {
            out.null_field("subscriptionMode")
                .null_field("subscriptionTimestamp")
                .null_field("subscriptionCreatedAt");
        }
        out.end_object();
    }
    out.end_array();
    return Response::json(200, out.take());
}

Result<Response> lagging_groups(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const std::int64_t min_lag_s,
              query_integer(request, "minLagSeconds", 3600, 0, INT64_MAX / 1000));
    QUEEN_TRY(auto cursors, read_cursors(context, tenant, ""));
    const TimestampMs now = wall_now(context);
    std::vector<std::pair<std::int64_t, const queues::GroupCursorInfo*>> lagging;
    for (const queues::GroupCursorInfo& c : cursors) {
        const std::int64_t lag = time_lag_seconds(c, now);
        if (c.offset_lag > 0 && lag > min_lag_s) {
            lagging.emplace_back(lag, &c);
        }
    }
    std::stable_sort(lagging.begin(), lagging.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    JsonWriter out;
    out.begin_array();
    for (const auto& [lag, c] : lagging) {
        out.begin_object()
            .field("consumer_group", c->group)
            .field("queue_name", c->queue)
            .field("partition_name", c->partition)
            .field("partition_id", queues::format_partition_id(c->partition_id))
            .field_or_null("worker_id",
                           c->is_lease_active ? queues::format_lease_id(c->lease) : std::string())
            .field("offset_lag", c->offset_lag)
            .field("time_lag_seconds", lag)
            .key("lag_hours")
            .number(static_cast<double>(lag) / 3600.0)
            .field_or_null("oldest_unconsumed_at", iso_or_empty(c->oldest_unconsumed_at))
            .field_or_null("last_consumed_at", iso_or_empty(c->last_consumed_at))
            .end_object();
    }
    out.end_array();
    return Response::json(200, out.take());
}

Result<Response> group_detail(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(auto cursors, read_cursors(context, tenant, param(request, "group")));
    const TimestampMs now = wall_now(context);
    JsonWriter out;
    out.begin_object();
    std::string current;
    bool is_open = false;
    for (const queues::GroupCursorInfo& c : cursors) {  // sorted by queue, group, partition
        if (!is_open || c.queue != current) {
            if (is_open) {
                out.end_array().end_object();
            }
            current = c.queue;
            is_open = true;
            out.key(c.queue).begin_object().key("partitions").begin_array();
        }
        out.begin_object()
            .field("partition", c.partition)
            .field_or_null("workerId",
                           c.is_lease_active ? queues::format_lease_id(c.lease) : std::string())
            .field_or_null("lastConsumedAt", iso_or_empty(c.last_consumed_at))
            .field("totalConsumed", c.total_consumed)
            .field("offsetLag", c.offset_lag)
            .field("timeLagSeconds", time_lag_seconds(c, now))
            .field("leaseActive", c.is_lease_active)
            .end_object();
    }
    if (is_open) {
        out.end_array().end_object();
    }
    out.end_object();
    return Response::json(200, out.take());
}

std::optional<std::string> group_or_reply(Context& context, const Request& request,
                                          const Responder& responder) {
    std::string group = param(request, "group");
    if (group.size() > context.options.name_bytes_max) {
        responder.complete(error_response(context, 400, "consumer group name is too long"));
        return std::nullopt;
    }
    return group;
}

void handle_delete_group(Context& context, const ContextPtr& shared, Request& request,
                         Responder responder, bool for_queue) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto group = group_or_reply(context, request, responder);
    if (!group) {
        return;
    }
    queues::DeleteGroup command;
    command.group = *group;
    command.queue = for_queue ? param(request, "queue") : std::string();
    command.delete_metadata = query_boolean(request, "deleteMetadata", true);
    submit_and_reply<queues::DeleteGroupResult>(
        shared, tenant, command, std::move(responder),
        [command, for_queue](queues::DeleteGroupResult& result) {
            JsonWriter out;
            out.begin_object().field("success", true).field("consumerGroup", command.group);
            if (for_queue) {
                out.field("queueName", command.queue);
            }
            out.field("deletedPartitions", result.deleted_partitions)
                .field("metadataDeleted", result.metadata_deleted)
                .end_object();
            return Response::json(200, out.take());
        });
}

std::optional<nlohmann::json> json_or_reply(Context& context, const Request& request,
                                            const Responder& responder, const std::string& tenant) {
    auto body = request_json(context, request);
    if (!body) {
        responder.complete(error_response(context, body.error(), tenant));
        return std::nullopt;
    }
    if (!body->is_object()) {
        responder.complete(error_response(context, 400, "body must be a JSON object"));
        return std::nullopt;
    }
    return std::move(*body);
}

void handle_update_subscription(Context& context, const ContextPtr& shared, Request& request,
                                Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto group = group_or_reply(context, request, responder);
    if (!group) {
        return;
    }
    auto body = json_or_reply(context, request, responder, tenant);
    if (!body) {
        return;
    }
    const auto found = body->find("subscriptionTimestamp");
    if (found == body->end() || found->is_null()) {
        responder.complete(
            error_response(context, 400, "Missing subscriptionTimestamp in request body"));
        return;
    }
    const auto at = found->is_string() ? parse_iso(found->get_ref<const std::string&>())
                                       : std::optional<std::int64_t>{};
    if (!at) {
        responder.complete(
            error_response(context, 400, "subscriptionTimestamp must be an ISO-8601 timestamp"));
        return;
    }
    queues::UpdateSubscription command;
    command.group = *group;
    command.timestamp = TimestampMs{*at};
    submit_and_reply<queues::UpdateSubscriptionResult>(
        shared, tenant, command, std::move(responder),
        [command](queues::UpdateSubscriptionResult& result) {
            JsonWriter out;
            out.begin_object()
                .field("success", true)
                .field("consumerGroup", command.group)
                .field("newTimestamp", format_iso_ms(command.timestamp.value()))
                .field("rowsUpdated", result.rows_updated)
                .end_object();
            return Response::json(200, out.take());
        });
}

void handle_seek(Context& context, const ContextPtr& shared, Request& request,
                 Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto group = group_or_reply(context, request, responder);
    if (!group) {
        return;
    }
    auto body = json_or_reply(context, request, responder, tenant);
    if (!body) {
        return;
    }
    queues::SeekGroup command;
    command.group = *group;
    command.queue = param(request, "queue");
    auto to_end = boolean_field(*body, "toEnd", false);
    if (!to_end) {
        responder.complete(error_response(context, to_end.error(), tenant));
        return;
    }
    command.to_end = *to_end;
    if (!command.to_end) {
        const auto found = body->find("timestamp");
        if (found == body->end() || found->is_null()) {
            responder.complete(
                error_response(context, 400, "Must specify either 'toEnd': true or 'timestamp'"));
            return;
        }
        const auto at = found->is_string() ? parse_iso(found->get_ref<const std::string&>())
                                           : std::optional<std::int64_t>{};
        if (!at) {
            responder.complete(
                error_response(context, 400, "timestamp must be an ISO-8601 timestamp"));
            return;
        }
        command.timestamp = TimestampMs{*at};
    }
    submit_and_reply<queues::SeekGroupResult>(
        shared, tenant, command, std::move(responder), [command](queues::SeekGroupResult& result) {
            JsonWriter out;
            out.begin_object()
                .field("success", true)
                .field("consumerGroup", command.group)
                .field("queueName", command.queue)
                .field("seekToEnd", command.to_end)
                .field_or_null("targetTimestamp", command.to_end
                                                      ? std::string()
                                                      : format_iso_ms(command.timestamp.value()))
                .field("partitionsUpdated", result.partitions_updated)
                .end_object();
            return Response::json(200, out.take());
        });
}

void handle_seek_partition(Context& context, const ContextPtr& shared, Request& request,
                           Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto group = group_or_reply(context, request, responder);
    if (!group) {
        return;
    }
    queues::SeekPartition command;
    command.group = *group;
    command.queue = param(request, "queue");
    command.partition = param(request, "partition");
    submit_and_reply<queues::SeekPartitionResult>(
        shared, tenant, command, std::move(responder),
        [command, &context](queues::SeekPartitionResult& result) {
            JsonWriter out;
            if (!result.found) {
                context.metrics.responses_4xx.fetch_add(1, relaxed);
                out.begin_object()
                    .field("success", false)
                    .field("error", "Partition not found")
                    .end_object();
                return Response::json(404, out.take());
            }
            out.begin_object()
                .field("success", true)
                .field("consumerGroup", command.group)
                .field("queueName", command.queue)
                .field("partitionName", command.partition)
                .field("updated", result.updated)
                .field_or_null("cursorMovedTo", result.cursor.sequence.value() == 0
                                                    ? std::string()
                                                    : queues::format_message_id(result.cursor))
                .end_object();
            return Response::json(200, out.take());
        });
}

// ---------------------------------------------------------------------------------------------
// 7.6 System

Result<Response> get_maintenance(Context& context, const std::string& tenant, Request&,
                                 bool is_pop) {
    QUEEN_TRY(auto state,
              query(context, tenant, [](const queues::Tables& tables, const store::Txn& txn) {
                  return queues::get_maintenance(tables, txn);
              }));
    JsonWriter out;
    if (is_pop) {
        out.begin_object()
            .field("popMaintenanceMode", state.pop_enabled)
            .field("message", state.pop_enabled ? "Pop maintenance is on: pops answer 204"
                                                : "Pop maintenance is off")
            .end_object();
        return Response::json(200, out.take());
    }
    out.begin_object()
        .field("maintenanceMode", state.push_enabled)
        .field("popMaintenanceMode", state.pop_enabled)
        .field("bufferedMessages", state.buffered_messages)
        .field("bufferHealthy", true)
        .key("bufferStats")
        .begin_object()
        .field("pendingCount", state.buffered_messages)
        .field("failedCount", 0)
        .field("dbHealthy", true)
        .key("failedFiles")
        .begin_object()
        .field("count", 0)
        .field("totalBytes", 0)
        .field("totalMB", 0)
        .field("failoverCount", 0)
        .field("qos0Count", 0)
        .end_object()
        .end_object()
        .end_object();
    return Response::json(200, out.take());
}

void handle_set_maintenance(Context& context, const ContextPtr& shared, Request& request,
                            Responder responder, bool is_pop) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto body = json_or_reply(context, request, responder, tenant);
    if (!body) {
        return;
    }
    const auto enabled = body->find("enabled");
    if (enabled == body->end() || !enabled->is_boolean()) {
        responder.complete(error_response(context, 400, "enabled (boolean) is required"));
        return;
    }
    queues::SetMaintenance command;
    command.mode = is_pop ? queues::SetMaintenance::Mode::pop : queues::SetMaintenance::Mode::push;
    command.enabled = enabled->get<bool>();
    QUEEN_LOG(context.logger, Level::info, "api.maintenance",
              "tenant=" << tenant << " mode=" << (is_pop ? "pop" : "push")
                        << " enabled=" << command.enabled);
    submit_and_reply<queues::MaintenanceResult>(
        shared, tenant, command, std::move(responder), [is_pop](queues::MaintenanceResult& result) {
            JsonWriter out;
            out.begin_object();
            if (is_pop) {
                out.field("popMaintenanceMode", result.pop_enabled)
                    .field("message", result.pop_enabled
                                          ? "Pop maintenance enabled: pops answer 204"
                                          : "Pop maintenance disabled");
            } else {
                out.field("maintenanceMode", result.push_enabled)
                    .field("popMaintenanceMode", result.pop_enabled)
                    .field("bufferedMessages", result.buffered_messages)
                    .field("drainedMessages", result.drained_messages)
                    .field("bufferHealthy", true)
                    .field("message",
                           result.push_enabled
                               ? "Maintenance mode enabled: pushes are buffered durably and "
                                 "delivered when it ends"
                               : "Maintenance mode disabled: buffered pushes were delivered");
            }
            out.end_object();
            return Response::json(200, out.take());
        });
}

Result<Response> shared_state(Context&, const std::string&, Request&) {
    JsonWriter out;
    out.begin_object()
        .field("enabled", false)
        .field("reason",
               "state is replicated through the log; there is no cross-server cache to report")
        .end_object();
    return Response::json(200, out.take());
}

}  // namespace

void register_admin_routes(http::Router& router, const ContextPtr& context) {
    // 7.1 Resources
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
    // 7.2 Messages and DLQ
    router.get("/api/v1/messages", read_handler(context, list_messages));
    router.get("/api/v1/messages/:partitionId/:transactionId", read_handler(context, get_message));
    router.del("/api/v1/messages/:partitionId/:transactionId",
               make_handler(context, handle_delete_message));
    router.get("/api/v1/dlq", read_handler(context, list_dlq));
    // 7.3 Traces
    router.get("/api/v1/traces/:partitionId/:transactionId", read_handler(context, message_traces));
    router.get("/api/v1/traces/by-name/:traceName", read_handler(context, traces_by_name));
    router.get("/api/v1/traces/names", read_handler(context, trace_names));
    // 7.4 Status and analytics
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
    // 7.5 Consumer groups
    router.get("/api/v1/consumer-groups", read_handler(context, list_groups));
    router.get("/api/v1/consumer-groups/lagging", read_handler(context, lagging_groups));
    router.get("/api/v1/consumer-groups/:group", read_handler(context, group_detail));
    router.del("/api/v1/consumer-groups/:group",
               make_handler(context, [](Context& c, const ContextPtr& shared, Request& request,
                                        Responder responder) {
                   handle_delete_group(c, shared, request, std::move(responder), false);
               }));
    router.post("/api/v1/consumer-groups/:group/subscription",
                make_handler(context, handle_update_subscription));
    router.del("/api/v1/consumer-groups/:group/queues/:queue",
               make_handler(context, [](Context& c, const ContextPtr& shared, Request& request,
                                        Responder responder) {
                   handle_delete_group(c, shared, request, std::move(responder), true);
               }));
    router.post("/api/v1/consumer-groups/:group/queues/:queue/seek",
                make_handler(context, handle_seek));
    router.post("/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek",
                make_handler(context, handle_seek_partition));
    // 7.6 System
    router.get("/api/v1/system/maintenance",
               read_handler(context, [](Context& c, const std::string& tenant, Request& request) {
                   return get_maintenance(c, tenant, request, false);
               }));
    router.post("/api/v1/system/maintenance",
                make_handler(context, [](Context& c, const ContextPtr& shared, Request& request,
                                         Responder responder) {
                    handle_set_maintenance(c, shared, request, std::move(responder), false);
                }));
    router.get("/api/v1/system/maintenance/pop",
               read_handler(context, [](Context& c, const std::string& tenant, Request& request) {
                   return get_maintenance(c, tenant, request, true);
               }));
    router.post("/api/v1/system/maintenance/pop",
                make_handler(context, [](Context& c, const ContextPtr& shared, Request& request,
                                         Responder responder) {
                    handle_set_maintenance(c, shared, request, std::move(responder), true);
                }));
    router.get("/api/v1/system/shared-state", read_handler(context, shared_state));
}

}  // namespace queen::api::detail
