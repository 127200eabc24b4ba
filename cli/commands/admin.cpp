// cli/commands/admin.cpp — `queen admin`: list and show queues, partitions, consumer groups and the
// DLQ of a running broker, create/delete queues, delete/seek groups; `--json` for scripts.
#include "commands/admin.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "exit_codes.hpp"
#include "queen/client/client.hpp"

namespace queen::cli {
namespace {

using nlohmann::json;
namespace qc = queen::client;

struct AdminOptions {
    std::string url = "http://127.0.0.1:6632";
    std::string token;
    bool json = false;
    std::int64_t timeout_ms = 10'000;

    std::string queue;
    std::string group;
    std::string partition;
    std::string timestamp;
    bool to_end = false;
    bool keep_metadata = false;
    std::int64_t limit = 100;
    std::int64_t offset = 0;
    qc::QueueOptions queue_options;
    std::string namespace_name;
    std::string task;
};

// 3 for what may work on a retry (network, timeout, 5xx), 1 for the rest.
int report_error(const queen::Error& error) {
    std::fprintf(stderr, "queen admin: %s\n", error.message().c_str());
    return qc::is_retryable(error) ? exit_retryable : exit_failed;
}

queen::Result<std::unique_ptr<qc::Client>> connect(const AdminOptions& options) {
    QUEEN_TRY(auto endpoint, qc::parse_url(options.url));
    qc::ClientOptions client_options;
    client_options.endpoint = endpoint;
    client_options.bearer_token = options.token;
    client_options.connection.request_timeout_ms = options.timeout_ms;
    client_options.connection.connect_timeout_ms = options.timeout_ms;
    client_options.connections_max = 1;
    client_options.retry_attempts = 1;
    client_options.retry_delay_ms = 200;
    return std::make_unique<qc::Client>(client_options);
}

json counts_json(const qc::MessageCounts& c) {
    return json{{"total", c.total},         {"pending", c.pending}, {"processing", c.processing},
                {"completed", c.completed}, {"failed", c.failed},   {"deadLetter", c.dead_letter}};
}

json options_json(const qc::QueueOptions& o) {
    return json{{"leaseTime", o.lease_time_s},
                {"retryLimit", o.retry_limit},
                {"retryDelay", o.retry_delay_ms},
                {"maxSize", o.max_size},
                {"ttl", o.ttl_s},
                {"priority", o.priority},
                {"deadLetterQueue", o.is_dead_letter_queue},
                {"dlqAfterMaxRetries", o.is_dlq_after_max_retries},
                {"delayedProcessing", o.delayed_processing_s},
                {"windowBuffer", o.window_buffer_s},
                {"retentionSeconds", o.retention_s},
                {"completedRetentionSeconds", o.completed_retention_s},
                {"retentionEnabled", o.is_retention_enabled},
                {"encryptionEnabled", o.is_encryption_enabled},
                {"maxWaitTimeSeconds", o.max_wait_time_s}};
}

// Parses a payload the broker sent so --json output embeds it as JSON, not as a string.
json embedded(const std::string& text) {
    return json::parse(text, nullptr, false).is_discarded() ? json(text) : json::parse(text);
}

void print_json(const json& value) {
    std::cout << value.dump(2) << "\n";
}

int run_queues_list(const AdminOptions& options) {
    auto client = connect(options);
    if (!client) {
        return report_error(client.error());
    }
    auto queues = (*client)->list_queues();
    if (!queues) {
        return report_error(queues.error());
    }
    if (options.json) {
        json out = json::array();
        for (const auto& q : *queues) {
            out.push_back({{"id", q.id},
                           {"name", q.name},
                           {"namespace", q.namespace_name},
                           {"task", q.task},
                           {"createdAt", q.created_at},
                           {"partitions", q.partitions},
                           {"messages",
                            {{"total", q.messages.total},
                             {"pending", q.messages.pending},
                             {"processing", q.messages.processing}}}});
        }
        print_json(out);
        return exit_ok;
    }
    std::printf("%-32s %10s %10s %10s %10s\n", "QUEUE", "PARTITIONS", "TOTAL", "PENDING",
                "PROCESSING");
    for (const auto& q : *queues) {
        std::printf("%-32s %10lld %10lld %10lld %10lld\n", q.name.c_str(),
                    static_cast<long long>(q.partitions), static_cast<long long>(q.messages.total),
                    static_cast<long long>(q.messages.pending),
                    static_cast<long long>(q.messages.processing));
    }
    return exit_ok;
}

int run_queues_show(const AdminOptions& options) {
    auto client = connect(options);
    if (!client) {
        return report_error(client.error());
    }
    auto detail = (*client)->get_queue(options.queue);
    if (!detail) {
        return report_error(detail.error());
    }
    if (options.json) {
        json partitions = json::array();
        for (const auto& p : detail->partitions) {
            partitions.push_back({{"id", p.id},
                                  {"name", p.name},
                                  {"createdAt", p.created_at},
                                  {"stats", counts_json(p.stats)},
                                  {"oldestMessage", p.oldest_message},
                                  {"newestMessage", p.newest_message}});
        }
        print_json({{"id", detail->id},
                    {"name", detail->name},
                    {"namespace", detail->namespace_name},
                    {"task", detail->task},
                    {"createdAt", detail->created_at},
                    {"partitions", partitions},
                    {"totals", counts_json(detail->totals)}});
        return exit_ok;
    }
    std::printf("queue %s (namespace '%s', task '%s', created %s)\n", detail->name.c_str(),
                detail->namespace_name.c_str(), detail->task.c_str(), detail->created_at.c_str());
    std::printf("%-32s %8s %8s %10s %9s %6s %4s\n", "PARTITION", "TOTAL", "PENDING", "PROCESSING",
                "COMPLETED", "FAILED", "DLQ");
    const auto row = [](const std::string& name, const qc::MessageCounts& c) {
        std::printf("%-32s %8lld %8lld %10lld %9lld %6lld %4lld\n", name.c_str(),
                    static_cast<long long>(c.total), static_cast<long long>(c.pending),
                    static_cast<long long>(c.processing), static_cast<long long>(c.completed),
                    static_cast<long long>(c.failed), static_cast<long long>(c.dead_letter));
    };
    for (const auto& p : detail->partitions) {
        row(p.name, p.stats);
    }
    row("(total)", detail->totals);
    return exit_ok;
}

int run_queues_create(const AdminOptions& options) {
    auto client = connect(options);
    if (!client) {
        return report_error(client.error());
    }
    qc::ConfigureRequest request;
    request.queue = options.queue;
    if (!options.namespace_name.empty()) {
        request.namespace_name = options.namespace_name;
    }
    if (!options.task.empty()) {
        request.task = options.task;
    }
    request.options = options.queue_options;
    auto configured = (*client)->configure(request);
    if (!configured) {
        return report_error(configured.error());
    }
    if (options.json) {
        print_json({{"configured", configured->is_configured},
                    {"queueId", configured->queue_id},
                    {"partitionId", configured->partition_id},
                    {"queue", configured->queue},
                    {"namespace", configured->namespace_name},
                    {"task", configured->task},
                    {"options", options_json(configured->options)}});
    } else {
        std::printf("configured queue %s (id %s)\n", configured->queue.c_str(),
                    configured->queue_id.c_str());
    }
    return exit_ok;
}

int run_queues_delete(const AdminOptions& options) {
    auto client = connect(options);
    if (!client) {
        return report_error(client.error());
    }
    auto deleted = (*client)->delete_queue(options.queue);
    if (!deleted) {
        return report_error(deleted.error());
    }
    if (options.json) {
        print_json({{"deleted", deleted->is_deleted},
                    {"queue", deleted->queue},
                    {"existed", deleted->is_existed}});
    } else {
        std::printf("%s queue %s\n", deleted->is_existed ? "deleted" : "no such",
                    options.queue.c_str());
    }
    return exit_ok;
}

int run_groups_list(const AdminOptions& options) {
    auto client = connect(options);
    if (!client) {
        return report_error(client.error());
    }
    auto groups = (*client)->list_consumer_groups();
    if (!groups) {
        return report_error(groups.error());
    }
    if (options.json) {
        json out = json::array();
        for (const auto& g : *groups) {
            out.push_back({{"name", g.name},
                           {"queueName", g.queue_name},
                           {"topics", g.topics},
                           {"members", g.members},
                           {"partitionsWithLag", g.partitions_with_lag},
                           {"maxTimeLag", g.max_time_lag_s},
                           {"state", g.state},
                           {"subscriptionMode", g.subscription_mode},
                           {"subscriptionTimestamp", g.subscription_timestamp}});
        }
        print_json(out);
        return exit_ok;
    }
    std::printf("%-28s %-28s %8s %8s %10s %-8s\n", "GROUP", "QUEUE", "MEMBERS", "LAGGING",
                "MAX_LAG_S", "STATE");
    for (const auto& g : *groups) {
        std::printf("%-28s %-28s %8lld %8lld %10lld %-8s\n", g.name.c_str(), g.queue_name.c_str(),
                    static_cast<long long>(g.members),
                    static_cast<long long>(g.partitions_with_lag),
                    static_cast<long long>(g.max_time_lag_s), g.state.c_str());
    }
    return exit_ok;
}

int run_groups_delete(const AdminOptions& options) {
    auto client = connect(options);
    if (!client) {
        return report_error(client.error());
    }
    auto deleted = options.queue.empty()
                       ? (*client)->delete_consumer_group(options.group, !options.keep_metadata)
                       : (*client)->delete_consumer_group_for_queue(options.group, options.queue,
                                                                    !options.keep_metadata);
    if (!deleted) {
        return report_error(deleted.error());
    }
    if (options.json) {
        print_json({{"consumerGroup", deleted->consumer_group},
                    {"queueName", deleted->queue_name},
                    {"deletedPartitions", deleted->deleted_partitions},
                    {"metadataDeleted", deleted->is_metadata_deleted}});
    } else {
        std::printf("deleted group %s: %lld partition cursors\n", options.group.c_str(),
                    static_cast<long long>(deleted->deleted_partitions));
    }
    return exit_ok;
}

int run_groups_seek(const AdminOptions& options) {
    auto client = connect(options);
    if (!client) {
        return report_error(client.error());
    }
    if (!options.partition.empty()) {
        auto moved =
            (*client)->seek_partition_to_end(options.group, options.queue, options.partition);
        if (!moved) {
            return report_error(moved.error());
        }
        if (options.json) {
            print_json({{"consumerGroup", moved->consumer_group},
                        {"queueName", moved->queue_name},
                        {"partitionName", moved->partition_name},
                        {"updated", moved->is_updated},
                        {"cursorMovedTo", moved->cursor_moved_to}});
        } else {
            std::printf("group %s, partition %s: cursor %s\n", options.group.c_str(),
                        options.partition.c_str(),
                        moved->is_updated ? "moved to the end" : "unchanged");
        }
        return exit_ok;
    }
    auto moved = (*client)->seek(options.group, options.queue,
                                 qc::SeekTarget{options.to_end, options.timestamp});
    if (!moved) {
        return report_error(moved.error());
    }
    if (options.json) {
        print_json({{"consumerGroup", moved->consumer_group},
                    {"queueName", moved->queue_name},
                    {"seekToEnd", moved->is_seek_to_end},
                    {"targetTimestamp", moved->target_timestamp},
                    {"partitionsUpdated", moved->partitions_updated}});
    } else {
        std::printf("group %s on %s: %lld partitions moved\n", options.group.c_str(),
                    options.queue.c_str(), static_cast<long long>(moved->partitions_updated));
    }
    return exit_ok;
}

int run_dlq(const AdminOptions& options) {
    auto client = connect(options);
    if (!client) {
        return report_error(client.error());
    }
    qc::DlqQuery query;
    query.queue = options.queue;
    query.consumer_group = options.group;
    query.limit = options.limit;
    query.offset = options.offset;
    auto page = (*client)->dlq(query);
    if (!page) {
        return report_error(page.error());
    }
    if (options.json) {
        json messages = json::array();
        for (const auto& m : page->messages) {
            messages.push_back({{"id", m.id},
                                {"transactionId", m.transaction_id},
                                {"partitionId", m.partition_id},
                                {"queue", m.queue},
                                {"partition", m.partition},
                                {"consumerGroup", m.consumer_group},
                                {"errorMessage", m.error_message},
                                {"retryCount", m.retry_count},
                                {"data", embedded(m.data_json)},
                                {"createdAt", m.created_at},
                                {"failedAt", m.failed_at}});
        }
        print_json({{"messages", messages},
                    {"pagination", {{"limit", page->limit}, {"offset", page->offset}}}});
        return exit_ok;
    }
    std::printf("%-24s %-20s %-36s %5s %s\n", "FAILED_AT", "PARTITION", "TRANSACTION", "TRIES",
                "ERROR");
    for (const auto& m : page->messages) {
        std::printf("%-24s %-20s %-36s %5lld %s\n", m.failed_at.c_str(), m.partition.c_str(),
                    m.transaction_id.c_str(), static_cast<long long>(m.retry_count),
                    m.error_message.c_str());
    }
    return exit_ok;
}

int run_health(const AdminOptions& options) {
    auto client = connect(options);
    if (!client) {
        return report_error(client.error());
    }
    auto health = (*client)->health();
    if (!health) {
        return report_error(health.error());
    }
    if (options.json) {
        std::cout << (health->json.empty() ? json{{"status", health->status}}.dump(2)
                                           : embedded(health->json).dump(2))
                  << "\n";
    } else {
        std::printf("%s (HTTP %d)\n", health->status.c_str(), health->http_status);
    }
    return health->is_healthy ? exit_ok : exit_retryable;
}

void add_queue_option_flags(CLI::App* command, AdminOptions& o) {
    auto& q = o.queue_options;
    command->add_option("--lease-time", q.lease_time_s, "Lease length in seconds")
        ->capture_default_str();
    command->add_option("--retry-limit", q.retry_limit, "Redeliveries before the DLQ")
        ->capture_default_str();
    command->add_option("--retry-delay", q.retry_delay_ms, "Hold-back of a failed batch, ms")
        ->capture_default_str();
    command
        ->add_option("--max-size", q.max_size,
                     "Reject pushes beyond this many messages (0: no limit)")
        ->capture_default_str();
    command->add_option("--ttl", q.ttl_s, "Expire unconsumed messages after seconds")
        ->capture_default_str();
    command->add_option("--priority", q.priority, "Queue priority")->capture_default_str();
    command
        ->add_option("--delayed-processing", q.delayed_processing_s,
                     "Deliver messages only after seconds")
        ->capture_default_str();
    command
        ->add_option("--window-buffer", q.window_buffer_s,
                     "Deliver a partition only when its newest message is this old, s")
        ->capture_default_str();
    command->add_option("--retention-seconds", q.retention_s, "Delete messages older than, s")
        ->capture_default_str();
    command
        ->add_option("--completed-retention-seconds", q.completed_retention_s,
                     "Delete consumed messages older than, s")
        ->capture_default_str();
    command
        ->add_option("--max-wait-time-seconds", q.max_wait_time_s,
                     "Evict messages waiting longer than, s")
        ->capture_default_str();
    command->add_flag("--dead-letter-queue", q.is_dead_letter_queue, "Echoed option");
    command->add_flag("--dlq-after-max-retries", q.is_dlq_after_max_retries, "Echoed option");
    command->add_flag("--retention-enabled", q.is_retention_enabled, "Enable retention sweeps");
    command->add_flag("--encryption-enabled", q.is_encryption_enabled, "Encrypt payloads at rest");
    command->add_option("--namespace", o.namespace_name, "Namespace metadata");
    command->add_option("--task", o.task, "Task metadata");
}

}  // namespace

void register_admin(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<AdminOptions>();
    auto* admin = app.add_subcommand(
        "admin", "Script a running broker: queues, partitions, consumer groups, DLQ, health");
    admin->require_subcommand(1);
    admin->add_option("--url", options->url, "Broker URL")->capture_default_str();
    admin->add_option("--token", options->token, "Bearer token (JWT)");
    admin->add_option("--timeout-ms", options->timeout_ms, "Connect and request timeout")
        ->capture_default_str();
    admin->add_flag("--json", options->json, "Print JSON");
    const auto bind = [&exit_code, options](CLI::App* command, int (*run)(const AdminOptions&)) {
        command->callback([&exit_code, options, run] { exit_code = run(*options); });
    };

    auto* queues = admin->add_subcommand("queues", "List, show, create and delete queues");
    queues->require_subcommand(1);
    bind(queues->add_subcommand("list", "List queues with message counts"), run_queues_list);
    auto* show = queues->add_subcommand("show", "Show a queue and its partitions");
    show->add_option("queue", options->queue, "Queue name")->required();
    bind(show, run_queues_show);
    auto* create = queues->add_subcommand(
        "create", "Create a queue or overwrite all its options (unset options take defaults)");
    create->add_option("queue", options->queue, "Queue name")->required();
    add_queue_option_flags(create, *options);
    bind(create, run_queues_create);
    auto* remove = queues->add_subcommand("delete", "Delete a queue with its messages");
    remove->add_option("queue", options->queue, "Queue name")->required();
    bind(remove, run_queues_delete);

    auto* groups = admin->add_subcommand("groups", "List, delete and seek consumer groups");
    groups->require_subcommand(1);
    bind(groups->add_subcommand("list", "List consumer groups per queue with lag"),
         run_groups_list);
    auto* group_delete = groups->add_subcommand("delete", "Delete a group's cursors and leases");
    group_delete->add_option("group", options->group, "Consumer group")->required();
    group_delete->add_option("--queue", options->queue, "Only on this queue");
    group_delete->add_flag("--keep-metadata", options->keep_metadata,
                           "Keep the group's stored subscriptions");
    bind(group_delete, run_groups_delete);
    auto* seek = groups->add_subcommand(
        "seek",
        "Move a group's cursors on a queue: to the end, to a time, or one partition to end");
    seek->add_option("group", options->group, "Consumer group")->required();
    seek->add_option("--queue", options->queue, "Queue")->required();
    auto* to_end = seek->add_flag("--to-end", options->to_end, "Skip everything pushed so far");
    auto* timestamp =
        seek->add_option("--timestamp", options->timestamp, "Resume after this ISO-8601 time");
    auto* partition =
        seek->add_option("--partition", options->partition, "Move only this partition, to its end");
    to_end->excludes(timestamp);
    partition->excludes(timestamp);
    seek->callback([&exit_code, options] {
        if (!options->to_end && options->timestamp.empty() && options->partition.empty()) {
            std::fprintf(stderr,
                         "queen admin groups seek: give --to-end, --timestamp or "
                         "--partition\n");
            exit_code = exit_usage;
            return;
        }
        exit_code = run_groups_seek(*options);
    });

    auto* dlq = admin->add_subcommand("dlq", "List dead-lettered messages, newest first");
    dlq->add_option("--queue", options->queue, "Queue");
    dlq->add_option("--group", options->group, "Consumer group");
    dlq->add_option("--limit", options->limit, "Page size")->capture_default_str();
    dlq->add_option("--offset", options->offset, "Page start")->capture_default_str();
    bind(dlq, run_dlq);

    bind(admin->add_subcommand("health", "Check the broker's /health (exit 3 when unhealthy)"),
         run_health);
}

}  // namespace queen::cli
