// cli/commands/admin.cpp — `queen admin`: list and show queues, partitions, consumer groups, the
// DLQ and single messages of a running broker; create/delete queues, delete/seek groups,
// maintenance modes and health. Aligned tables for people, `--json` for scripts. Not a client
// library: every request goes through queen::client. The tenant commands (`tenant`, `cluster
// rebalance`) are in admin_tenant.cpp, the member commands (`cluster members|add|remove`) in
// admin_member.cpp, `kv`, `locks`, `timers` in admin_state.cpp, `streams` in admin_streams.cpp.
#include "commands/admin.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "exit_codes.hpp"
#include "queen/client/client.hpp"
#include "queen/client/protocol.hpp"

namespace queen::cli {
namespace {

using nlohmann::json;
namespace qc = queen::client;
using namespace admin_internal;  // the helpers admin_tenant/member.cpp share (admin.hpp)

// ---- errors and exit codes ----

// Transport failures and "unavailable"/"gateway timeout" answers may succeed on a retry (exit 3);
// a request the client could not build is a usage error (exit 2); the rest failed (exit 1).
int exit_code_of(const queen::Error& error) {
    if (const int status = qc::http_status_of(error); status != 0) {
        return status == 503 || status == 504 ? exit_retryable : exit_failed;
    }
    if (error.is(qc::Errc::connect_failed) || error.is(qc::Errc::timeout) ||
        error.is(qc::Errc::connection_closed) || error.is(qc::Errc::busy)) {
        return exit_retryable;
    }
    if (error.is(qc::Errc::invalid_argument)) {
        return exit_usage;
    }
    return exit_failed;
}

}  // namespace

int admin_internal::report(const queen::Error& error) {
    std::fprintf(stderr, "queen admin: %s\n", error.message().c_str());
    return exit_code_of(error);
}

int admin_internal::report_failure(const std::string& message) {
    std::fprintf(stderr, "queen admin: %s\n", message.c_str());
    return exit_failed;
}

// ---- output ----

void admin_internal::print_json(const json& value) {
    std::cout << value.dump(2) << "\n";
}

// How a JSON value reads in a table cell: strings bare, null and absent as "-".
std::string admin_internal::cell(const json& value) {
    if (value.is_null()) {
        return "-";
    }
    if (value.is_string()) {
        const auto& text = value.get_ref<const std::string&>();
        return text.empty() ? "-" : text;
    }
    return value.dump();
}

std::string admin_internal::cell(const json& object, const char* key) {
    const auto found = object.find(key);
    return found == object.end() ? "-" : cell(*found);
}

std::string admin_internal::cell(const std::string& text) {
    return text.empty() ? "-" : text;
}

std::string admin_internal::cell(std::int64_t number) {
    return std::to_string(number);
}

std::string admin_internal::yes_no(bool value) {
    return value ? "yes" : "no";
}

void admin_internal::Table::print() const {
    std::vector<std::size_t> widths;
    for (const Column& column : columns_) {
        widths.push_back(column.name.size());
    }
    for (const auto& row : rows_) {
        for (std::size_t i = 0; i < row.size(); ++i) {
            widths[i] = std::max(widths[i], row[i].size());
        }
    }
    std::vector<std::string> header;
    for (const Column& column : columns_) {
        header.push_back(column.name);
    }
    print_row(header, widths);
    for (const auto& row : rows_) {
        print_row(row, widths);
    }
}

void admin_internal::Table::print_row(const std::vector<std::string>& row,
                                      const std::vector<std::size_t>& widths) const {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
        const std::string padding(widths[i] - row[i].size(), ' ');
        if (i > 0) {
            line += "  ";
        }
        if (columns_[i].is_numeric) {
            line += padding + row[i];
        } else if (i + 1 < row.size()) {
            line += row[i] + padding;
        } else {
            line += row[i];  // no trailing blanks
        }
    }
    std::cout << line << "\n";
}

queen::Result<json> admin_internal::object_of(const std::string& what,
                                              const queen::Result<std::string>& body) {
    if (!body) {
        return body.error();
    }
    json value = json::parse(*body, nullptr, false);
    if (value.is_discarded() || !value.is_object()) {
        return queen::Error{qc::Errc::bad_response, what + ": the answer is not a JSON object"};
    }
    return value;
}

// One request on a connection of the client's.
queen::Result<std::string> admin_internal::delete_json(qc::Client& client,
                                                       const std::string& target) {
    const auto connection = client.make_connection();
    const qc::HttpRequest http{"DELETE", target, {}, false, false, 0};
    QUEEN_TRY(const auto response, connection->request(http));
    QUEEN_TRY(qc::check_http_status(http, response));
    return response.body;
}

// Asks on the terminal; false unless the answer is y or yes.
bool admin_internal::confirm(const std::string& question) {
    std::fprintf(stderr, "%s [y/N] ", question.c_str());
    std::fflush(stderr);
    std::string answer;
    if (!std::getline(std::cin, answer)) {
        return false;
    }
    return answer == "y" || answer == "Y" || answer == "yes";
}

std::optional<int> admin_internal::confirmed(const AdminOptions& options, const std::string& doing,
                                             const std::string& question,
                                             const std::string& refused) {
    if (options.yes) {
        return std::nullopt;
    }
    if (isatty(STDIN_FILENO) == 0) {
        std::fprintf(stderr, "queen admin: %s needs --yes when stdin is not a terminal\n",
                     doing.c_str());
        return exit_usage;
    }
    if (!confirm(question)) {
        return report_failure(refused);
    }
    return std::nullopt;
}

int admin_internal::print_answer(const AdminOptions& options, const queen::Result<json>& answer,
                                 const std::function<void(const json&)>& print_text) {
    if (!answer) {
        return report(answer.error());
    }
    if (options.json) {
        print_json(*answer);
    } else {
        print_text(*answer);
    }
    return exit_ok;
}

namespace {

// A payload the broker sent, embedded as JSON rather than as a string when it parses.
json embedded(const std::string& text) {
    json value = json::parse(text, nullptr, false);
    return value.is_discarded() ? json(text) : value;
}

// Two-column "name  value" lines, names padded to the widest.
void print_fields(const std::vector<std::pair<std::string, std::string>>& fields) {
    std::size_t width = 0;
    for (const auto& field : fields) {
        width = std::max(width, field.first.size());
    }
    for (const auto& [name, value] : fields) {
        std::cout << name << std::string(width - name.size() + 2, ' ') << value << "\n";
    }
}

// ---- JSON mapping ----

json counts_json(const qc::MessageCounts& c) {
    return json{{"total", c.total},         {"pending", c.pending}, {"processing", c.processing},
                {"completed", c.completed}, {"failed", c.failed},   {"deadLetter", c.dead_letter}};
}

json options_json(const qc::QueueOptions& options) {
    json out = json::object();
    queen::for_each_queue_option(
        [&](const auto& option) { out[std::string(option.key)] = options.*option.member; });
    return out;
}

// The options object of GET /api/v1/resources/queues/:queue; a key that is absent (or the whole
// object, when it is not one) keeps the default.
qc::QueueOptions options_from_json(const json& o) {
    auto options = qc::parse_queue_options(o.dump());
    return options ? *options : qc::QueueOptions{};
}

void apply_overrides(const AdminOptions::QueueOptionFlags& flags, qc::QueueOptions& options) {
    queen::for_each_queue_option([&](const auto& option) {
        if (flags.given.contains(option.key)) {
            options.*option.member = flags.values.*option.member;
        }
    });
}

// GET of a JSON object; a body that is not a JSON object is bad_response.
queen::Result<json> get_object(qc::Client& client, const std::string& target) {
    QUEEN_TRY(auto body, client.get_json(target));
    json value = json::parse(body, nullptr, false);
    if (value.is_discarded() || !value.is_object()) {
        return queen::Error{qc::Errc::bad_response, "GET " + target + ": not a JSON object"};
    }
    return value;
}

std::string queue_target(const std::string& queue) {
    return "/api/v1/resources/queues/" + qc::percent_encode(queue);
}

// The queue's detail object, or nullopt when the broker does not know it (404).
queen::Result<std::optional<json>> find_queue(qc::Client& client, const std::string& queue) {
    auto detail = get_object(client, queue_target(queue));
    if (!detail) {
        if (qc::http_status_of(detail.error()) == 404) {
            return std::optional<json>{};
        }
        return std::move(detail).error();
    }
    return std::optional<json>{std::move(*detail)};
}

// ---- commands ----

int run_queues_list(const AdminOptions& options, qc::Client& client) {
    auto queues = client.list_queues();
    if (!queues) {
        return report(queues.error());
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
    Table table{{{"QUEUE"},
                 {"NAMESPACE"},
                 {"TASK"},
                 {"PARTITIONS", true},
                 {"TOTAL", true},
                 {"PENDING", true},
                 {"PROCESSING", true},
                 {"CREATED"}}};
    for (const auto& q : *queues) {
        table.add({q.name, cell(q.namespace_name), cell(q.task), cell(q.partitions),
                   cell(q.messages.total), cell(q.messages.pending), cell(q.messages.processing),
                   cell(q.created_at)});
    }
    table.print();
    return exit_ok;
}

int run_queues_show(const AdminOptions& options, qc::Client& client) {
    auto detail = get_object(client, queue_target(options.queue));
    if (!detail) {
        return report(detail.error());
    }
    const json& q = *detail;
    if (options.json) {
        print_json(q);
        return exit_ok;
    }
    std::vector<std::pair<std::string, std::string>> fields = {{"queue", cell(q, "name")},
                                                               {"id", cell(q, "id")},
                                                               {"namespace", cell(q, "namespace")},
                                                               {"task", cell(q, "task")},
                                                               {"created", cell(q, "createdAt")}};
    if (const auto o = q.find("options"); o != q.end() && o->is_object()) {
        std::string line;
        for (const auto& [key, value] : o->items()) {
            line += (line.empty() ? "" : " ") + key + "=" + cell(value);
        }
        fields.emplace_back("options", line);
    }
    print_fields(fields);
    std::cout << "\n";
    Table table{{{"PARTITION"},
                 {"TOTAL", true},
                 {"PENDING", true},
                 {"PROCESSING", true},
                 {"COMPLETED", true},
                 {"FAILED", true},
                 {"DLQ", true}}};
    const auto counts = [](const std::string& name, const json& c) {
        return std::vector<std::string>{name,
                                        cell(c, "total"),
                                        cell(c, "pending"),
                                        cell(c, "processing"),
                                        cell(c, "completed"),
                                        cell(c, "failed"),
                                        cell(c, "deadLetter")};
    };
    if (const auto partitions = q.find("partitions");
        partitions != q.end() && partitions->is_array()) {
        for (const json& p : *partitions) {
            table.add(counts(cell(p, "name"), p.value("stats", json::object())));
        }
    }
    table.add(counts("(total)", q.value("totals", json::object())));
    table.print();
    return exit_ok;
}

int run_partitions_list(const AdminOptions& options, qc::Client& client) {
    auto detail = client.get_queue(options.queue);
    if (!detail) {
        return report(detail.error());
    }
    if (options.json) {
        json out = json::array();
        for (const auto& p : detail->partitions) {
            out.push_back({{"id", p.id},
                           {"name", p.name},
                           {"createdAt", p.created_at},
                           {"stats", counts_json(p.stats)},
                           {"oldestMessage",
                            p.oldest_message.empty() ? json(nullptr) : json(p.oldest_message)},
                           {"newestMessage",
                            p.newest_message.empty() ? json(nullptr) : json(p.newest_message)}});
        }
        print_json(out);
        return exit_ok;
    }
    Table table{{{"PARTITION"},
                 {"ID"},
                 {"TOTAL", true},
                 {"PENDING", true},
                 {"PROCESSING", true},
                 {"COMPLETED", true},
                 {"OLDEST"},
                 {"NEWEST"}}};
    for (const auto& p : detail->partitions) {
        table.add({p.name, p.id, cell(p.stats.total), cell(p.stats.pending),
                   cell(p.stats.processing), cell(p.stats.completed), cell(p.oldest_message),
                   cell(p.newest_message)});
    }
    table.print();
    return exit_ok;
}

int run_queues_create(const AdminOptions& options, qc::Client& client) {
    // configure() overwrites every option, so start from the queue's current ones: a flag that is
    // not given keeps its value (or the default for a new queue).
    auto existing = find_queue(client, options.queue);
    if (!existing) {
        return report(existing.error());
    }
    qc::ConfigureRequest request;
    request.queue = options.queue;
    if (existing->has_value()) {
        const json& q = **existing;
        request.options = options_from_json(q.value("options", json::object()));
        if (q.contains("namespace") && q["namespace"].is_string() &&
            !q["namespace"].get_ref<const std::string&>().empty()) {
            request.namespace_name = q["namespace"].get<std::string>();
        }
        if (q.contains("task") && q["task"].is_string() &&
            !q["task"].get_ref<const std::string&>().empty()) {
            request.task = q["task"].get<std::string>();
        }
    }
    apply_overrides(options.queue_flags, request.options);
    if (!options.namespace_name.empty()) {
        request.namespace_name = options.namespace_name;
    }
    if (!options.task.empty()) {
        request.task = options.task;
    }
    auto configured = client.configure(request);
    if (!configured) {
        return report(configured.error());
    }
    if (options.json) {
        print_json({{"configured", configured->is_configured},
                    {"created", !existing->has_value()},
                    {"queueId", configured->queue_id},
                    {"partitionId", configured->partition_id},
                    {"queue", configured->queue},
                    {"namespace", configured->namespace_name},
                    {"task", configured->task},
                    {"options", options_json(configured->options)}});
        return exit_ok;
    }
    std::cout << (existing->has_value() ? "updated" : "created") << " queue " << configured->queue
              << " (id " << configured->queue_id << ")\n";
    Table table{{{"OPTION"}, {"VALUE"}}};
    const json echoed = options_json(configured->options);  // items() must not see a temporary
    for (const auto& [key, value] : echoed.items()) {
        table.add({key, cell(value)});
    }
    table.print();
    return exit_ok;
}

int run_queues_delete(const AdminOptions& options, qc::Client& client) {
    if (!options.yes) {
        if (isatty(STDIN_FILENO) == 0) {
            std::fprintf(
                stderr, "queen admin: deleting queue %s needs --yes when stdin is not a terminal\n",
                options.queue.c_str());
            return exit_usage;
        }
        auto existing = find_queue(client, options.queue);
        if (!existing) {
            return report(existing.error());
        }
        std::string question = "Delete queue " + options.queue;
        if (existing->has_value()) {
            const json totals = (*existing)->value("totals", json::object());
            question += " and its " + cell(totals, "total") + " messages";
        }
        if (!confirm(question + "?")) {
            return report_failure("queue " + options.queue + " not deleted");
        }
    }
    auto deleted = client.delete_queue(options.queue);
    if (!deleted) {
        return report(deleted.error());
    }
    if (options.json) {
        print_json({{"deleted", deleted->is_deleted},
                    {"queue", deleted->queue},
                    {"existed", deleted->is_existed}});
    } else if (deleted->is_existed) {
        std::cout << "deleted queue " << options.queue << "\n";
    } else {
        std::cout << "no queue named " << options.queue << ": nothing deleted\n";
    }
    return exit_ok;
}

int run_groups_list(const AdminOptions& options, qc::Client& client) {
    auto groups = client.list_consumer_groups();
    if (!groups) {
        return report(groups.error());
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
    Table table{{{"GROUP"},
                 {"QUEUE"},
                 {"PARTITIONS", true},
                 {"LAGGING", true},
                 {"MAX_LAG_S", true},
                 {"STATE"},
                 {"SUBSCRIPTION"}}};
    for (const auto& g : *groups) {
        table.add({g.name, g.queue_name, cell(g.members), cell(g.partitions_with_lag),
                   cell(g.max_time_lag_s), g.state, cell(g.subscription_mode)});
    }
    table.print();
    return exit_ok;
}

int run_groups_show(const AdminOptions& options, qc::Client& client) {
    auto detail =
        get_object(client, "/api/v1/consumer-groups/" + qc::percent_encode(options.group));
    if (!detail) {
        return report(detail.error());
    }
    // The broker answers {} for a group without cursors: for a script that is "no such group".
    if (detail->empty()) {
        return report_failure("consumer group " + options.group + " has no cursors on any queue");
    }
    if (options.json) {
        print_json(*detail);
        return exit_ok;
    }
    Table table{{{"QUEUE"},
                 {"PARTITION"},
                 {"CONSUMED", true},
                 {"OFFSET_LAG", true},
                 {"TIME_LAG_S", true},
                 {"LEASED"},
                 {"LAST_CONSUMED"}}};
    for (const auto& [queue, entry] : detail->items()) {
        const json partitions =
            entry.is_object() ? entry.value("partitions", json::array()) : json::array();
        for (const json& p : partitions) {
            table.add({queue, cell(p, "partition"), cell(p, "totalConsumed"), cell(p, "offsetLag"),
                       cell(p, "timeLagSeconds"), yes_no(p.value("leaseActive", false)),
                       cell(p, "lastConsumedAt")});
        }
    }
    table.print();
    return exit_ok;
}

int run_groups_delete(const AdminOptions& options, qc::Client& client) {
    auto deleted = options.queue.empty()
                       ? client.delete_consumer_group(options.group, !options.keep_metadata)
                       : client.delete_consumer_group_for_queue(options.group, options.queue,
                                                                !options.keep_metadata);
    if (!deleted) {
        return report(deleted.error());
    }
    if (options.json) {
        json out = {{"consumerGroup", deleted->consumer_group},
                    {"deletedPartitions", deleted->deleted_partitions},
                    {"metadataDeleted", deleted->is_metadata_deleted}};
        if (!options.queue.empty()) {
            out["queueName"] = deleted->queue_name;
        }
        print_json(out);
        return exit_ok;
    }
    std::cout << "deleted group " << options.group
              << (options.queue.empty() ? std::string() : " on queue " + options.queue) << ": "
              << deleted->deleted_partitions << " partition cursors"
              << (deleted->is_metadata_deleted ? ", subscription metadata deleted" : "") << "\n";
    return exit_ok;
}

int run_groups_seek(const AdminOptions& options, qc::Client& client) {
    if (!options.partition.empty()) {
        auto moved = client.seek_partition_to_end(options.group, options.queue, options.partition);
        if (!moved) {
            return report(moved.error());
        }
        if (options.json) {
            print_json(
                {{"consumerGroup", moved->consumer_group},
                 {"queueName", moved->queue_name},
                 {"partitionName", moved->partition_name},
                 {"updated", moved->is_updated},
                 {"cursorMovedTo",
                  moved->cursor_moved_to.empty() ? json(nullptr) : json(moved->cursor_moved_to)}});
        } else {
            std::cout << "group " << options.group << ", " << options.queue << "/"
                      << options.partition << ": "
                      << (moved->is_updated ? "cursor moved to the end" : "cursor unchanged")
                      << "\n";
        }
        return exit_ok;
    }
    auto moved = client.seek(options.group, options.queue,
                             qc::SeekTarget{options.to_end, options.timestamp});
    if (!moved) {
        return report(moved.error());
    }
    if (options.json) {
        print_json(
            {{"consumerGroup", moved->consumer_group},
             {"queueName", moved->queue_name},
             {"seekToEnd", moved->is_seek_to_end},
             {"targetTimestamp",
              moved->target_timestamp.empty() ? json(nullptr) : json(moved->target_timestamp)},
             {"partitionsUpdated", moved->partitions_updated}});
    } else {
        std::cout << "group " << options.group << " on " << options.queue << ": "
                  << moved->partitions_updated << " partition cursors moved "
                  << (options.to_end ? "to the end" : "to " + options.timestamp) << "\n";
    }
    return exit_ok;
}

int run_dlq_list(const AdminOptions& options, qc::Client& client) {
    qc::DlqQuery query;
    query.queue = options.queue;
    query.consumer_group = options.group;
    query.limit = options.limit;
    query.offset = options.offset;
    auto page = client.dlq(query);
    if (!page) {
        return report(page.error());
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
    Table table{{{"FAILED_AT"},
                 {"QUEUE"},
                 {"PARTITION"},
                 {"PARTITION_ID"},
                 {"TRANSACTION"},
                 {"GROUP"},
                 {"RETRIES", true},
                 {"ERROR"}}};
    for (const auto& m : page->messages) {
        table.add({cell(m.failed_at), m.queue, m.partition, m.partition_id, m.transaction_id,
                   cell(m.consumer_group), cell(m.retry_count), cell(m.error_message)});
    }
    table.print();
    return exit_ok;
}

int run_messages_show(const AdminOptions& options, qc::Client& client) {
    auto message =
        get_object(client, "/api/v1/messages/" + qc::percent_encode(options.partition_id) + "/" +
                               qc::percent_encode(options.transaction_id));
    if (!message) {
        return report(message.error());
    }
    const json& m = *message;
    if (options.json) {
        print_json(m);
        return exit_ok;
    }
    print_fields({{"message", cell(m, "id")},
                  {"queue", cell(m, "queuePath")},
                  {"partition id", cell(m, "partitionId")},
                  {"transaction", cell(m, "transactionId")},
                  {"status", cell(m, "status")},
                  {"created", cell(m, "createdAt")},
                  {"retries", cell(m, "retryCount")},
                  {"error", cell(m, "errorMessage")},
                  {"lease expires", cell(m, "leaseExpiresAt")},
                  {"trace", cell(m, "traceId")},
                  {"encrypted", yes_no(m.value("isEncrypted", false))},
                  {"payload", m.contains("payload") ? m["payload"].dump() : "-"}});
    const json groups = m.value("consumerGroups", json::array());
    if (!groups.empty()) {
        std::cout << "\n";
        Table table{{{"GROUP"}, {"CONSUMED"}, {"LEASE_EXPIRES"}}};
        for (const json& g : groups) {
            table.add(
                {cell(g, "name"), yes_no(g.value("consumed", false)), cell(g, "leaseExpiresAt")});
        }
        table.print();
    }
    return exit_ok;
}

int run_maintenance(const AdminOptions& options, qc::Client& client) {
    if (options.maintenance_action != "status") {
        auto changed = client.set_maintenance(options.pop, options.maintenance_action == "on");
        if (!changed) {
            return report(changed.error());
        }
    }
    // The answer of a change names only the flag it changed; read both.
    auto status = client.maintenance();
    if (!status) {
        return report(status.error());
    }
    if (options.json) {
        print_json({{"maintenanceMode", status->is_push_maintenance},
                    {"popMaintenanceMode", status->is_pop_maintenance},
                    {"bufferedMessages", status->buffered_messages}});
        return exit_ok;
    }
    print_fields({{"push maintenance", status->is_push_maintenance ? "on" : "off"},
                  {"pop maintenance", status->is_pop_maintenance ? "on" : "off"},
                  {"buffered messages", cell(status->buffered_messages)}});
    return exit_ok;
}

int run_health(const AdminOptions& options, qc::Client& client) {
    auto health = client.health();
    if (!health) {
        return report(health.error());
    }
    const json body = health->json.empty() ? json::object() : embedded(health->json);
    if (options.json) {
        print_json(body.is_object() ? body : json{{"status", health->status}});
    } else {
        std::cout << cell(health->status) << " (HTTP " << health->http_status << ")\n";
        if (body.is_object() && body.contains("tenants") && body["tenants"].is_array()) {
            Table table{{{"TENANT"},
                         {"WRITABLE"},
                         {"APPLIED", true},
                         {"COMMITTED", true},
                         {"LOG_BYTES", true},
                         {"REASON"}}};
            for (const json& t : body["tenants"]) {
                table.add({cell(t, "name"), yes_no(t.value("writable", false)),
                           cell(t, "appliedIndex"), cell(t, "committedIndex"), cell(t, "logBytes"),
                           cell(t, "reason")});
            }
            table.print();
        }
    }
    // An unhealthy broker (503) may recover: retryable, like any 503.
    return health->is_healthy ? exit_ok : exit_retryable;
}

int run_cluster_status(const AdminOptions& options, qc::Client& client) {
    auto health = client.health();
    if (!health) {
        return report(health.error());
    }
    const json body = health->json.empty() ? json::object() : embedded(health->json);
    if (!body.is_object() || !body.contains("tenants") || !body["tenants"].is_array()) {
        return report(Error{Errc::corruption, "the /health answer has no tenants"});
    }
    if (options.json) {
        json out = json::array();
        for (const json& t : body["tenants"]) {
            out.push_back({{"tenant", t.value("name", "")},
                           {"node", body.value("node_id", 0)},
                           {"role", t.value("role", "")},
                           {"term", t.value("term", 0)},
                           {"leader", t.value("leaderId", 0)},
                           {"applied", t.value("appliedIndex", 0)},
                           {"committed", t.value("committedIndex", 0)}});
        }
        print_json(out);
    } else {
        std::cout << "node " << body.value("node_id", 0) << "\n";
        Table table{{{"TENANT"},
                     {"ROLE"},
                     {"TERM", true},
                     {"LEADER", true},
                     {"APPLIED", true},
                     {"COMMITTED", true},
                     {"REASON"}}};
        for (const json& t : body["tenants"]) {
            table.add({cell(t, "name"), cell(t, "role"), cell(t, "term"), cell(t, "leaderId"),
                       cell(t, "appliedIndex"), cell(t, "committedIndex"), cell(t, "reason")});
        }
        table.print();
    }
    // A tenant without a leader (an election, or no majority) may recover: retryable.
    for (const json& t : body["tenants"]) {
        if (t.value("leaderId", 0) == 0) {
            return exit_retryable;
        }
    }
    return exit_ok;
}

// The tenant's entry of a /health answer, or nullptr.
const json* tenant_of(const json& health, const std::string& tenant) {
    if (!health.is_object() || !health.contains("tenants") || !health["tenants"].is_array()) {
        return nullptr;
    }
    for (const json& t : health["tenants"]) {
        if (t.is_object() && t.value("name", "") == tenant) {
            return &t;
        }
    }
    return nullptr;
}

// Asks the node to move the tenant's leadership to --to (the node forwards the request to the
// leader when it follows), then polls the node's /health until the tenant's leader is --to, for
// at most --wait seconds. Fails early when another node won the election instead.
int run_cluster_transfer_leader(const AdminOptions& options, qc::Client& client) {
    json request = {{"to", options.to}};
    if (!options.tenant.empty()) {
        request["tenant"] = options.tenant;
    }
    const auto started = std::chrono::steady_clock::now();
    auto answered = client.post_json("/api/v1/system/cluster/transfer-leader", request.dump());
    if (!answered) {
        return report(answered.error());
    }
    const json answer = embedded(*answered);
    if (!answer.is_object()) {
        return report(Error{Errc::corruption, "the transfer-leader answer is not a JSON object"});
    }
    const std::string tenant = answer.value("tenant", options.tenant);
    const std::uint64_t previous_leader = answer.value("leaderId", std::uint64_t{0});
    const std::uint64_t first_term = answer.value("term", std::uint64_t{0});
    std::uint64_t leader = previous_leader;
    std::uint64_t term = first_term;
    const auto elapsed_ms = [&] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
            .count();
    };
    const auto deadline =
        started + std::chrono::milliseconds(std::llround(options.wait_s * 1000.0));
    const bool is_moving = answer.value("transferring", false);
    while (is_moving && leader != options.to) {
        if (std::chrono::steady_clock::now() >= deadline) {
            std::fprintf(
                stderr,
                "queen admin: tenant %s: node %llu did not take the leadership within "
                "%.1f s (leader now: %s, term %llu). The leader abandons a transfer "
                "after one election timeout: check that node %llu is up and has "
                "caught up (queen admin cluster status), then retry\n",
                tenant.c_str(), static_cast<unsigned long long>(options.to), options.wait_s,
                leader == 0 ? "none known" : ("node " + std::to_string(leader)).c_str(),
                static_cast<unsigned long long>(term), static_cast<unsigned long long>(options.to));
            return exit_retryable;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        auto health = client.health();
        if (!health || health->json.empty()) {
            continue;  // a node between roles may not answer at once: ask again until --wait
        }
        const json body = embedded(health->json);
        const json* t = tenant_of(body, tenant);
        if (t == nullptr) {
            continue;
        }
        leader = t->value("leaderId", std::uint64_t{0});
        term = t->value("term", std::uint64_t{0});
        if (leader != 0 && leader != options.to && term > first_term) {
            std::fprintf(stderr,
                         "queen admin: tenant %s: node %llu was elected in term %llu instead of "
                         "node %llu (did node %llu fall behind or stop?); retry\n",
                         tenant.c_str(), static_cast<unsigned long long>(leader),
                         static_cast<unsigned long long>(term),
                         static_cast<unsigned long long>(options.to),
                         static_cast<unsigned long long>(options.to));
            return exit_retryable;
        }
    }
    if (options.json) {
        print_json({{"tenant", tenant},
                    {"leader", options.to},
                    {"previousLeader", previous_leader},
                    {"term", term},
                    {"moved", is_moving},
                    {"elapsedMs", elapsed_ms()}});
    } else if (is_moving) {
        std::cout << "tenant " << tenant << ": node " << options.to << " leads now (term " << term
                  << "; was node " << previous_leader << ", " << elapsed_ms() << " ms)\n";
    } else {
        std::cout << "tenant " << tenant << ": node " << options.to << " leads already (term "
                  << term << ")\n";
    }
    return exit_ok;
}

// ---- flags ----

// The flag of a queue option is its JSON key in kebab case: leaseTime -> lease-time.
std::string flag_name(std::string_view key) {
    std::string out;
    for (const char c : key) {
        if (c >= 'A' && c <= 'Z') {
            out += '-';
            out += static_cast<char>(c - 'A' + 'a');
        } else {
            out += c;
        }
    }
    return out;
}

// One flag per row of the option table, with its range and its default.
void add_queue_option_flags(CLI::App* command, AdminOptions& o) {
    auto& flags = o.queue_flags;
    queen::for_each_queue_option([&](const auto& option) {
        const std::string name = flag_name(option.key);
        auto& value = flags.values.*option.member;
        auto* given = &flags.given;
        const std::string_view key = option.key;
        if constexpr (std::is_same_v<decltype(option.default_value), bool>) {
            // --x sets the option, --no-x clears it; neither keeps the queue's current value.
            command->add_flag_function(
                "--" + name + ",!--no-" + name,
                [&value, given, key](std::int64_t count) {
                    value = count > 0;
                    given->insert(key);
                },
                std::string(option.description) +
                    (option.default_value ? " (default on)" : " (default off)"));
        } else {
            command
                ->add_option_function<std::int64_t>(
                    "--" + name,
                    [&value, given, key](const std::int64_t& number) {
                        value = number;
                        given->insert(key);
                    },
                    std::string(option.description) + " (default " +
                        std::to_string(option.default_value) + ")")
                ->check(CLI::Range(option.min, option.max));
        }
    });
    command->add_option("--namespace", o.namespace_name, "Namespace label");
    command->add_option("--task", o.task, "Task label");
}

}  // namespace

int run_admin(const AdminOptions& options) {
    auto endpoint = qc::parse_url(options.url);
    if (!endpoint) {
        std::fprintf(stderr, "queen admin: --url %s: %s\n", options.url.c_str(),
                     endpoint.error().message().c_str());
        return exit_usage;
    }
    auto tls = tls_options_of(options.tls, *endpoint, "queen admin");
    if (!tls) {
        std::fprintf(stderr, "queen admin: %s\n", tls.error().message().c_str());
        return exit_usage;
    }
    qc::ClientOptions client_options;
    client_options.endpoint = *endpoint;
    client_options.bearer_token = options.token;
    client_options.connection.tls = std::move(*tls);
    const auto timeout_ms = static_cast<std::int64_t>(std::llround(options.timeout_s * 1000.0));
    client_options.connection.request_timeout_ms = timeout_ms;
    client_options.connection.connect_timeout_ms = timeout_ms;
    client_options.pool_wait_ms = timeout_ms;
    if (!options.tenant.empty()) {
        client_options.connection.headers.push_back({"X-Queen-Tenant", options.tenant});
    }
    client_options.connections_max = 1;
    // A script decides about retries from exit code 3; one command is one attempt.
    client_options.retry_attempts = 0;
    qc::Client client{client_options};
    switch (options.command) {
        case AdminCommand::queues_list: return run_queues_list(options, client);
        case AdminCommand::queues_show: return run_queues_show(options, client);
        case AdminCommand::queues_create: return run_queues_create(options, client);
        case AdminCommand::queues_delete: return run_queues_delete(options, client);
        case AdminCommand::partitions_list: return run_partitions_list(options, client);
        case AdminCommand::groups_list: return run_groups_list(options, client);
        case AdminCommand::groups_show: return run_groups_show(options, client);
        case AdminCommand::groups_delete: return run_groups_delete(options, client);
        case AdminCommand::groups_seek: return run_groups_seek(options, client);
        case AdminCommand::dlq_list: return run_dlq_list(options, client);
        case AdminCommand::messages_show: return run_messages_show(options, client);
        case AdminCommand::maintenance: return run_maintenance(options, client);
        case AdminCommand::health: return run_health(options, client);
        case AdminCommand::cluster_status: return run_cluster_status(options, client);
        case AdminCommand::cluster_transfer_leader:
            return run_cluster_transfer_leader(options, client);
        case AdminCommand::cluster_rebalance: return run_cluster_rebalance(options, client);
        case AdminCommand::tenant_list: return run_tenant_list(options, client);
        case AdminCommand::tenant_create: return run_tenant_create(options, client);
        case AdminCommand::tenant_delete: return run_tenant_delete(options, client);
        case AdminCommand::cluster_members: return run_cluster_members(options, client);
        case AdminCommand::cluster_add: return run_cluster_add(options, client);
        case AdminCommand::cluster_remove: return run_cluster_remove(options, client);
        case AdminCommand::kv_list: return run_kv_list(options, client);
        case AdminCommand::kv_get: return run_kv_get(options, client);
        case AdminCommand::locks_list: return run_locks_list(options, client);
        case AdminCommand::locks_get: return run_locks_get(options, client);
        case AdminCommand::timers_list: return run_timers_list(options, client);
        case AdminCommand::timers_get: return run_timers_get(options, client);
        case AdminCommand::streams_list: return run_streams_list(options, client);
        case AdminCommand::streams_show: return run_streams_show(options, client);
        case AdminCommand::streams_reset: return run_streams_reset(options, client);
        case AdminCommand::streams_delete: return run_streams_delete(options, client);
    }
    return exit_usage;
}

void register_admin(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<AdminOptions>();
    auto* admin = app.add_subcommand("admin",
                                     "Script a running broker: queues, partitions, consumer "
                                     "groups, DLQ, messages, KV, locks, timers, stream queries");
    admin->require_subcommand(1);
    // Global flags may also follow the subcommand (`queen admin queues list --json`); CLI11
    // passes what a subcommand does not know to its parent. Inherited by every subcommand.
    admin->fallthrough();
    admin->add_option("--url", options->url, "Broker URL (or QUEEN_URL)")
        ->envname("QUEEN_URL")
        ->capture_default_str();
    admin->add_option("--tenant", options->tenant, "Tenant (X-Queen-Tenant header)");
    admin->add_option("--token", options->token,
                      "Bearer token (a static API token or a JWT) for a broker with auth on");
    add_tls_flags(admin, options->tls, "QUEEN_CA_FILE");
    admin->add_option("--timeout", options->timeout_s, "Connect and request timeout, seconds")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    admin->add_flag("--json", options->json, "Print JSON objects instead of tables");

    const auto leaf = [&exit_code, options](CLI::App* parent, const char* name, const char* help,
                                            AdminCommand command) {
        auto* sub = parent->add_subcommand(name, help);
        sub->callback([&exit_code, options, command] {
            options->command = command;
            exit_code = run_admin(*options);
        });
        return sub;
    };

    auto* queues = admin->add_subcommand("queues", "List, show, create and delete queues");
    queues->require_subcommand(1);
    leaf(queues, "list", "List queues with message counts", AdminCommand::queues_list);
    leaf(queues, "show", "Show a queue: labels, options, partitions with their counts",
         AdminCommand::queues_show)
        ->add_option("queue", options->queue, "Queue name")
        ->required();
    auto* create = leaf(queues, "create",
                        "Create a queue, or change the given options of an existing one (options "
                        "not given keep their current values; a new queue takes the defaults)",
                        AdminCommand::queues_create);
    create->add_option("queue", options->queue, "Queue name")->required();
    add_queue_option_flags(create, *options);
    auto* remove = leaf(queues, "delete", "Delete a queue with its messages, cursors and DLQ",
                        AdminCommand::queues_delete);
    remove->add_option("queue", options->queue, "Queue name")->required();
    remove->add_flag("--yes,-y", options->yes, "Do not ask (required when stdin is no terminal)");

    auto* partitions = admin->add_subcommand("partitions", "List the partitions of a queue");
    partitions->require_subcommand(1);
    leaf(partitions, "list", "Partitions with ids, counts and oldest/newest message times",
         AdminCommand::partitions_list)
        ->add_option("queue", options->queue, "Queue name")
        ->required();

    auto* groups = admin->add_subcommand("groups", "List, show, delete and seek consumer groups");
    groups->require_subcommand(1);
    leaf(groups, "list", "Consumer groups per queue with their lag", AdminCommand::groups_list);
    leaf(groups, "show", "A group's cursor on every partition it consumed",
         AdminCommand::groups_show)
        ->add_option("group", options->group, "Consumer group")
        ->required();
    auto* group_delete = leaf(groups, "delete", "Delete a group's cursors and leases (it restarts)",
                              AdminCommand::groups_delete);
    group_delete->add_option("group", options->group, "Consumer group")->required();
    group_delete->add_option("--queue", options->queue, "Only on this queue");
    group_delete->add_flag("--keep-metadata", options->keep_metadata,
                           "Keep the group's stored subscriptions");
    auto* seek = groups->add_subcommand(
        "seek",
        "Move a group's cursors on a queue: to the end, to a time, or one partition to end");
    seek->add_option("group", options->group, "Consumer group")->required();
    seek->add_option("--queue", options->queue, "Queue")->required();
    auto* to_end = seek->add_flag("--to-end", options->to_end, "Skip everything pushed so far");
    auto* timestamp = seek->add_option("--timestamp", options->timestamp,
                                       "Resume after this ISO-8601 time (may go backwards)");
    auto* partition =
        seek->add_option("--partition", options->partition, "Move only this partition, to its end");
    to_end->excludes(timestamp);
    partition->excludes(timestamp);
    seek->callback([&exit_code, options] {
        if (!options->to_end && options->timestamp.empty() && options->partition.empty()) {
            std::fprintf(stderr,
                         "queen admin groups seek: give --to-end, --timestamp or --partition\n");
            exit_code = exit_usage;
            return;
        }
        options->command = AdminCommand::groups_seek;
        exit_code = run_admin(*options);
    });

    auto* dlq = admin->add_subcommand("dlq", "Dead-lettered messages");
    dlq->require_subcommand(1);
    auto* dlq_list =
        leaf(dlq, "list", "Dead-lettered messages, newest failure first", AdminCommand::dlq_list);
    dlq_list->add_option("--queue", options->queue, "Only this queue");
    dlq_list->add_option("--group", options->group, "Only this consumer group");
    dlq_list->add_option("--limit", options->limit, "Page size")
        ->check(CLI::Range(1, 10'000))
        ->capture_default_str();
    dlq_list->add_option("--offset", options->offset, "Page start")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();

    auto* messages = admin->add_subcommand("messages", "Single messages");
    messages->require_subcommand(1);
    auto* message_show =
        leaf(messages, "show", "A message with its payload, status and per-group state",
             AdminCommand::messages_show);
    message_show->add_option("partition_id", options->partition_id, "Partition id (a UUID)")
        ->required();
    message_show->add_option("transaction_id", options->transaction_id, "Transaction id")
        ->required();

    auto* maintenance = leaf(admin, "maintenance",
                             "Show or switch maintenance mode (push: accepted pushes are held "
                             "back; --pop: pops deliver nothing)",
                             AdminCommand::maintenance);
    maintenance->add_option("action", options->maintenance_action, "on, off or status")
        ->check(CLI::IsMember({"on", "off", "status"}))
        ->capture_default_str();
    maintenance->add_flag("--pop", options->pop, "The pop maintenance flag");

    leaf(admin, "health", "The broker's /health (exit 3 when unhealthy)", AdminCommand::health);

    auto* cluster = admin->add_subcommand(
        "cluster", "The raft groups as this node sees them, the members, the tenants' leaders");
    leaf(cluster, "status",
         "Per tenant: this node's role, the term, the leader, applied and committed indexes "
         "(exit 3 while a tenant has no leader)",
         AdminCommand::cluster_status);
    auto* transfer = leaf(cluster, "transfer-leader",
                          "Move a tenant's leadership (--tenant, else the default tenant) to "
                          "node --to and wait until it leads (exit 3 when it did not within "
                          "--wait); any node may be asked",
                          AdminCommand::cluster_transfer_leader);
    transfer->add_option("--to", options->to, "Id of the node to lead (a voter)")
        ->required()
        ->check(CLI::PositiveNumber);
    transfer->add_option("--wait", options->wait_s, "Seconds to wait for node --to to lead")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    cluster->require_subcommand(1);
    register_tenant_commands(*admin, *cluster, *options, leaf);
    register_member_commands(*cluster, *options, leaf);
    register_state_commands(*admin, *options, leaf);
    register_streams_commands(*admin, *options, leaf);
}

}  // namespace queen::cli
