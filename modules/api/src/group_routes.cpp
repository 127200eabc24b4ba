// api/src/group_routes.cpp — consumer groups (docs/http-api.md): listing, lag, delete,
// subscription, seek.
#include <algorithm>
#include <map>
#include <vector>

#include "admin_common.hpp"
#include "parse.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

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
    QUEEN_TRY(const std::string group,
              name_param(request, "group", "consumer group", context.options));
    QUEEN_TRY(auto cursors, read_cursors(context, tenant, group));
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

/// The tenant and the :group parameter of a group route.
struct GroupTarget {
    std::string tenant;
    std::string group;
    std::string queue;      ///< "" when the route names none
    std::string partition;  ///< "" when the route names none
};

/// The route's GroupTarget, its names checked (check_name), or nullopt once the error is
/// answered.
std::optional<GroupTarget> group_or_reply(Context& context, const Request& request,
                                          const Responder& responder) {
    GroupTarget target;
    if (!resolve_tenant(context, request, responder, target.tenant)) {
        return std::nullopt;
    }
    const auto name = [&](std::string_view key, std::string_view what, std::string& out) {
        if (!request.param(key).has_value()) {
            return true;
        }
        auto checked = name_param(request, key, what, context.options);
        if (!checked) {
            responder.complete(error_response(context, checked.error(), target.tenant));
            return false;
        }
        out = std::move(*checked);
        return true;
    };
    if (!name("group", "consumer group", target.group) || !name("queue", "queue", target.queue) ||
        !name("partition", "partition", target.partition)) {
        return std::nullopt;
    }
    return target;
}

void handle_delete_group(Context& context, const ContextPtr& shared, Request& request,
                         Responder responder, bool for_queue) {
    auto target = group_or_reply(context, request, responder);
    if (!target) {
        return;
    }
    const std::string& tenant = target->tenant;
    queues::DeleteGroup command;
    command.group = target->group;
    command.queue = for_queue ? target->queue : std::string();
    command.delete_metadata = request.query_bool("deleteMetadata", true);
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

void handle_update_subscription(Context& context, const ContextPtr& shared, Request& request,
                                Responder responder) {
    auto target = group_or_reply(context, request, responder);
    if (!target) {
        return;
    }
    const std::string& tenant = target->tenant;
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
    command.group = target->group;
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
    auto target = group_or_reply(context, request, responder);
    if (!target) {
        return;
    }
    const std::string& tenant = target->tenant;
    auto body = json_or_reply(context, request, responder, tenant);
    if (!body) {
        return;
    }
    queues::SeekGroup command;
    command.group = target->group;
    command.queue = target->queue;
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
    auto target = group_or_reply(context, request, responder);
    if (!target) {
        return;
    }
    const std::string& tenant = target->tenant;
    queues::SeekPartition command;
    command.group = target->group;
    command.queue = target->queue;
    command.partition = target->partition;
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
                                                    : queues::format_message_id(
                                                          result.cursor, result.cursor_created_at))
                .end_object();
            return Response::json(200, out.take());
        });
}

}  // namespace

void register_group_routes(http::Router& router, const ContextPtr& context) {
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
}

}  // namespace queen::api::detail
