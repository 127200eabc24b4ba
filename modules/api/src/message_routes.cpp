// api/src/message_routes.cpp — messages, the DLQ and the trace reads (docs/http-api.md, admin).
#include <algorithm>
#include <set>
#include <vector>

#include "admin_common.hpp"
#include "format.hpp"
#include "parse.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

Result<Response> list_messages(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const Page page, page_of(context, request, 200));
    QUEEN_TRY(const std::string queue, name_query(request, "queue", context.options));
    QUEEN_TRY(const std::string partition, name_query(request, "partition", context.options));
    QUEEN_TRY(const std::string ns, name_query(request, "ns", context.options));
    QUEEN_TRY(const std::string task, name_query(request, "task", context.options));
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
            .field("id", queues::format_message_id(m.id, m.created_at))
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
        .field("id", queues::format_message_id(m.id, m.created_at))
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
        .begin_object();
    using Options = queues::QueueOptions;
    write_queue_option_fields(out, m.options, &Options::lease_time_s, &Options::retry_limit,
                              &Options::retry_delay_ms, &Options::ttl_s, &Options::priority);
    out.end_object()
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
    QUEEN_TRY(const std::string queue, name_query(request, "queue", context.options));
    QUEEN_TRY(const std::string group, name_query(request, "consumerGroup", context.options));
    std::uint64_t total = 0;
    QUEEN_TRY(auto entries,
              query(context, tenant, [&](const queues::Tables& tables, const store::Txn& txn) {
                  return queues::list_dlq(tables, txn, queue, group, page.limit, page.offset,
                                          total);
              }));
    JsonWriter out;
    out.begin_object().key("messages").begin_array();
    for (const queues::DlqEntry& e : entries) {
        QUEEN_TRY(const std::string data,
                  payload_json(e.payload, e.is_encrypted, context.cipher_or_null()));
        out.begin_object()
            .field("id", queues::format_message_id(e.id, e.created_at))
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
    out.end_array().field("total", total);
    write_pagination(out, page);
    out.end_object();
    return Response::json(200, out.take());
}

// ---------------------------------------------------------------------------------------------
// Traces (read)

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

}  // namespace

void register_message_routes(http::Router& router, const ContextPtr& context) {
    router.get("/api/v1/messages", read_handler(context, list_messages));
    router.get("/api/v1/messages/:partitionId/:transactionId", read_handler(context, get_message));
    router.del("/api/v1/messages/:partitionId/:transactionId",
               make_handler(context, handle_delete_message));
    router.get("/api/v1/dlq", read_handler(context, list_dlq));
    // Traces
    router.get("/api/v1/traces/:partitionId/:transactionId", read_handler(context, message_traces));
    router.get("/api/v1/traces/by-name/:traceName", read_handler(context, traces_by_name));
    router.get("/api/v1/traces/names", read_handler(context, trace_names));
}

}  // namespace queen::api::detail
