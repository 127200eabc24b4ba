// client/src/client_admin.cpp — Client's admin calls: queues, messages, DLQ, groups, maintenance.
#include "json_util.hpp"
#include "protocol_util.hpp"
#include "queen/client/client.hpp"
#include "queen/core/json_scan.hpp"
#include "queen/core/json_writer.hpp"

namespace queen::client {

using detail::append_query;
using detail::array_answer;
using detail::boolean_of;
using detail::check_not_rejected;
using detail::describe;
using detail::integer_of;
using detail::Json;
using detail::object_answer;
using detail::parse_json;
using detail::shape_error;
using detail::text_of;

namespace {

MessageCounts counts_of(const Json& counts) {
    MessageCounts c;
    c.total = integer_of(counts, "total");
    c.pending = integer_of(counts, "pending");
    c.processing = integer_of(counts, "processing");
    c.completed = integer_of(counts, "completed");
    c.failed = integer_of(counts, "failed");
    c.dead_letter = integer_of(counts, "deadLetter");
    return c;
}

}  // namespace

queen::Result<DeleteQueueResult> Client::delete_queue(std::string_view queue) {
    const std::string target = "/api/v1/resources/queues/" + percent_encode(queue);
    HttpRequest http{"DELETE", target, {}, false, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(auto answer, object_answer(http, response.body));
    DeleteQueueResult result;
    result.is_deleted = boolean_of(answer, "deleted");
    result.queue = text_of(answer, "queue");
    result.is_existed = boolean_of(answer, "existed");
    return result;
}

queen::Result<std::vector<QueueSummary>> Client::list_queues() {
    HttpRequest http{"GET", "/api/v1/resources/queues", {}, false, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(const auto queues, array_answer(http, response.body, "queues"));
    std::vector<QueueSummary> result;
    for (const Json& entry : queues) {
        QueueSummary q;
        q.id = text_of(entry, "id");
        q.name = text_of(entry, "name");
        q.namespace_name = text_of(entry, "namespace");
        q.task = text_of(entry, "task");
        q.created_at = text_of(entry, "createdAt");
        q.partitions = integer_of(entry, "partitions");
        if (entry.is_object() && entry.contains("messages")) {
            q.messages = counts_of(entry["messages"]);
        }
        result.push_back(std::move(q));
    }
    return result;
}

queen::Result<QueueDetail> Client::get_queue(std::string_view queue) {
    const std::string target = "/api/v1/resources/queues/" + percent_encode(queue);
    HttpRequest http{"GET", target, {}, false, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(auto answer, object_answer(http, response.body));
    QueueDetail detail;
    detail.id = text_of(answer, "id");
    detail.name = text_of(answer, "name");
    detail.namespace_name = text_of(answer, "namespace");
    detail.task = text_of(answer, "task");
    detail.created_at = text_of(answer, "createdAt");
    if (answer.contains("totals")) {
        detail.totals = counts_of(answer["totals"]);
    }
    if (const auto partitions = answer.find("partitions");
        partitions != answer.end() && partitions->is_array()) {
        for (const Json& entry : *partitions) {
            PartitionDetail p;
            p.id = text_of(entry, "id");
            p.name = text_of(entry, "name");
            p.created_at = text_of(entry, "createdAt");
            if (entry.is_object() && entry.contains("stats")) {
                p.stats = counts_of(entry["stats"]);
            }
            p.oldest_message = text_of(entry, "oldestMessage");
            p.newest_message = text_of(entry, "newestMessage");
            detail.partitions.push_back(std::move(p));
        }
    }
    return detail;
}

queen::Result<DlqPage> Client::dlq(const DlqQuery& query) {
    std::string target = "/api/v1/dlq";
    bool is_first = true;
    if (!query.queue.empty()) {
        append_query(target, is_first, "queue", query.queue);
    }
    if (!query.consumer_group.empty()) {
        append_query(target, is_first, "consumerGroup", query.consumer_group);
    }
    if (!query.partition.empty()) {
        append_query(target, is_first, "partition", query.partition);
    }
    if (!query.from.empty()) {
        append_query(target, is_first, "from", query.from);
    }
    if (!query.to.empty()) {
        append_query(target, is_first, "to", query.to);
    }
    append_query(target, is_first, "limit", std::to_string(query.limit));
    append_query(target, is_first, "offset", std::to_string(query.offset));
    HttpRequest http{"GET", target, {}, false, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(auto answer, object_answer(http, response.body));
    DlqPage page;
    page.limit = query.limit;
    page.offset = query.offset;
    if (const auto pagination = answer.find("pagination"); pagination != answer.end()) {
        page.limit = integer_of(*pagination, "limit", query.limit);
        page.offset = integer_of(*pagination, "offset", query.offset);
    }
    const auto messages = answer.find("messages");
    if (messages == answer.end() || !messages->is_array()) {
        QUEEN_TRY(check_not_rejected(http, answer));
        return shape_error(http, "no messages array");
    }
    try {
        for (const Json& entry : *messages) {
            DlqMessage m;
            m.id = text_of(entry, "id");
            m.transaction_id = text_of(entry, "transactionId");
            m.partition_id = text_of(entry, "partitionId");
            m.queue = text_of(entry, "queue");
            m.partition = text_of(entry, "partition");
            m.consumer_group = text_of(entry, "consumerGroup");
            m.error_message = text_of(entry, "errorMessage");
            m.retry_count = integer_of(entry, "retryCount");
            const auto data = entry.is_object() ? entry.find("data") : entry.end();
            m.data_json = entry.is_object() && data != entry.end() ? data->dump() : "null";
            m.producer_sub = text_of(entry, "producerSub");
            m.created_at = text_of(entry, "createdAt");
            m.failed_at = text_of(entry, "failedAt");
            page.messages.push_back(std::move(m));
        }
    } catch (const Json::exception& error) {
        return shape_error(http, error.what());
    }
    return page;
}

queen::Result<std::vector<MessageSummary>> Client::list_messages(const MessagesQuery& query) {
    std::string target = "/api/v1/messages";
    bool is_first = true;
    const std::pair<std::string_view, const std::string*> filters[] = {
        {"queue", &query.queue}, {"partition", &query.partition}, {"ns", &query.namespace_name},
        {"task", &query.task},   {"status", &query.status},       {"from", &query.from},
        {"to", &query.to}};
    for (const auto& [key, value] : filters) {
        if (!value->empty()) {
            append_query(target, is_first, key, *value);
        }
    }
    append_query(target, is_first, "limit", std::to_string(query.limit));
    append_query(target, is_first, "offset", std::to_string(query.offset));
    HttpRequest http{"GET", target, {}, false, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(const auto messages, array_answer(http, response.body, "messages"));
    std::vector<MessageSummary> result;
    for (const Json& entry : messages) {
        MessageSummary m;
        m.id = text_of(entry, "id");
        m.transaction_id = text_of(entry, "transactionId");
        m.partition_id = text_of(entry, "partitionId");
        m.queue_path = text_of(entry, "queuePath");
        m.queue = text_of(entry, "queue");
        m.partition = text_of(entry, "partition");
        m.namespace_name = text_of(entry, "namespace");
        m.task = text_of(entry, "task");
        m.status = text_of(entry, "status");
        m.trace_id = text_of(entry, "traceId");
        m.created_at = text_of(entry, "createdAt");
        m.lease_expires_at = text_of(entry, "leaseExpiresAt");
        result.push_back(std::move(m));
    }
    return result;
}

queen::Result<std::vector<ConsumerGroupSummary>> Client::list_consumer_groups() {
    HttpRequest http{"GET", "/api/v1/consumer-groups", {}, false, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(const auto answer, array_answer(http, response.body, nullptr));
    std::vector<ConsumerGroupSummary> result;
    for (const Json& entry : answer) {
        ConsumerGroupSummary g;
        g.name = text_of(entry, "name");
        g.queue_name = text_of(entry, "queueName");
        if (entry.is_object() && entry.contains("topics") && entry["topics"].is_array()) {
            for (const Json& topic : entry["topics"]) {
                g.topics.push_back(topic.is_string() ? topic.get<std::string>() : topic.dump());
            }
        }
        g.members = integer_of(entry, "members");
        g.partitions_with_lag = integer_of(entry, "partitionsWithLag");
        g.max_time_lag_s = integer_of(entry, "maxTimeLag");
        g.state = text_of(entry, "state");
        g.subscription_mode = text_of(entry, "subscriptionMode");
        g.subscription_timestamp = text_of(entry, "subscriptionTimestamp");
        g.subscription_created_at = text_of(entry, "subscriptionCreatedAt");
        result.push_back(std::move(g));
    }
    return result;
}

queen::Result<DeleteConsumerGroupResult> Client::delete_consumer_group(std::string_view group,
                                                                       bool is_metadata_deleted) {
    return delete_consumer_group_at("/api/v1/consumer-groups/" + percent_encode(group),
                                    is_metadata_deleted);
}

queen::Result<DeleteConsumerGroupResult> Client::delete_consumer_group_for_queue(
    std::string_view group, std::string_view queue, bool is_metadata_deleted) {
    return delete_consumer_group_at(
        "/api/v1/consumer-groups/" + percent_encode(group) + "/queues/" + percent_encode(queue),
        is_metadata_deleted);
}

queen::Result<DeleteConsumerGroupResult> Client::delete_consumer_group_at(
    std::string path, bool is_metadata_deleted) {
    path += is_metadata_deleted ? "?deleteMetadata=true" : "?deleteMetadata=false";
    HttpRequest http{"DELETE", path, {}, false, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(auto answer, parse_json(response.body, describe(http)));
    QUEEN_TRY(check_not_rejected(http, answer));
    DeleteConsumerGroupResult result;
    result.consumer_group = text_of(answer, "consumerGroup");
    result.queue_name = text_of(answer, "queueName");  // "" when the group was deleted everywhere
    result.deleted_partitions = integer_of(answer, "deletedPartitions");
    result.is_metadata_deleted = boolean_of(answer, "metadataDeleted");
    return result;
}

queen::Result<SubscriptionUpdateResult> Client::update_subscription_timestamp(
    std::string_view group, std::string_view timestamp) {
    const std::string target = "/api/v1/consumer-groups/" + percent_encode(group) + "/subscription";
    json::Writer writer;
    writer.begin_object().field("subscriptionTimestamp", timestamp).end_object();
    const std::string body = writer.take();
    HttpRequest http{"POST", target, body, true, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(auto answer, parse_json(response.body, describe(http)));
    QUEEN_TRY(check_not_rejected(http, answer));
    SubscriptionUpdateResult result;
    result.consumer_group = text_of(answer, "consumerGroup");
    result.new_timestamp = text_of(answer, "newTimestamp");
    result.rows_updated = integer_of(answer, "rowsUpdated");
    return result;
}

queen::Result<SeekResult> Client::seek(std::string_view group, std::string_view queue,
                                       const SeekTarget& seek_target) {
    if (!seek_target.is_to_end && seek_target.timestamp.empty()) {
        return queen::Error{Errc::invalid_argument, "seek: neither to end nor a timestamp"};
    }
    const std::string target = "/api/v1/consumer-groups/" + percent_encode(group) + "/queues/" +
                               percent_encode(queue) + "/seek";
    json::Writer writer;
    writer.begin_object();
    if (seek_target.is_to_end) {
        writer.field("toEnd", true);
    } else {
        writer.field("timestamp", seek_target.timestamp);
    }
    const std::string body = writer.end_object().take();
    HttpRequest http{"POST", target, body, true, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(auto answer, parse_json(response.body, describe(http)));
    QUEEN_TRY(check_not_rejected(http, answer));
    SeekResult result;
    result.consumer_group = text_of(answer, "consumerGroup");
    result.queue_name = text_of(answer, "queueName");
    result.is_seek_to_end = boolean_of(answer, "seekToEnd");
    result.target_timestamp = text_of(answer, "targetTimestamp");
    result.partitions_updated = integer_of(answer, "partitionsUpdated");
    return result;
}

queen::Result<PartitionSeekResult> Client::seek_partition_to_end(std::string_view group,
                                                                 std::string_view queue,
                                                                 std::string_view partition) {
    const std::string target = "/api/v1/consumer-groups/" + percent_encode(group) + "/queues/" +
                               percent_encode(queue) + "/partitions/" + percent_encode(partition) +
                               "/seek";
    HttpRequest http{"POST", target, "{}", true, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(auto answer, parse_json(response.body, describe(http)));
    QUEEN_TRY(check_not_rejected(http, answer));
    PartitionSeekResult result;
    result.consumer_group = text_of(answer, "consumerGroup");
    result.queue_name = text_of(answer, "queueName");
    result.partition_name = text_of(answer, "partitionName");
    result.is_updated = boolean_of(answer, "updated");
    result.cursor_moved_to = text_of(answer, "cursorMovedTo");
    return result;
}

queen::Result<MaintenanceStatus> Client::maintenance() {
    HttpRequest http{"GET", "/api/v1/system/maintenance", {}, false, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(auto answer, object_answer(http, response.body));
    MaintenanceStatus status;
    status.is_push_maintenance = boolean_of(answer, "maintenanceMode");
    status.is_pop_maintenance = boolean_of(answer, "popMaintenanceMode");
    status.buffered_messages = integer_of(answer, "bufferedMessages");
    return status;
}

queen::Result<MaintenanceStatus> Client::set_maintenance(bool is_pop, bool is_enabled) {
    const std::string_view target =
        is_pop ? "/api/v1/system/maintenance/pop" : "/api/v1/system/maintenance";
    json::Writer writer;
    const std::string body = writer.begin_object().field("enabled", is_enabled).end_object().take();
    HttpRequest http{"POST", target, body, true, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    QUEEN_TRY(auto answer, object_answer(http, response.body));
    // The answer carries only the flag it changed; read both to return the whole state.
    MaintenanceStatus status;
    status.is_push_maintenance = boolean_of(answer, "maintenanceMode");
    status.is_pop_maintenance = boolean_of(answer, "popMaintenanceMode");
    status.buffered_messages = integer_of(answer, "bufferedMessages");
    if (!answer.contains("maintenanceMode") || !answer.contains("popMaintenanceMode")) {
        QUEEN_TRY(auto full, maintenance());
        if (is_pop) {
            full.is_pop_maintenance = status.is_pop_maintenance;
        } else {
            full.is_push_maintenance = status.is_push_maintenance;
        }
        return full;
    }
    return status;
}

queen::Result<Health> Client::health() {
    HttpRequest http{"GET", "/health", {}, false, true, 0};
    auto response = perform(http, nullptr, false);
    Health health;
    if (!response) {
        // 503 is an answer here (an unhealthy broker), not a failure of the call.
        if (http_status_of(response.error()) != 503) {
            return std::move(response).error();
        }
        health.http_status = 503;
        health.status = "unhealthy";
        return health;
    }
    health.http_status = response->status;
    health.json = response->body;
    QUEEN_TRY(auto answer, parse_json(response->body, describe(http)));
    health.status = text_of(answer, "status");
    health.is_healthy = health.status.empty() || health.status == "healthy";
    return health;
}

queen::Result<std::string> Client::get_json(std::string_view target) {
    HttpRequest http{"GET", target, {}, false, true, 0};
    QUEEN_TRY(auto response, perform(http, nullptr));
    return std::move(response.body);
}

queen::Result<std::string> Client::post_json(std::string_view target, std::string_view body) {
    HttpRequest http{"POST", target, body, true, false, 0};
    QUEEN_TRY(auto response, perform(http, nullptr, false));
    return std::move(response.body);
}

}  // namespace queen::client
