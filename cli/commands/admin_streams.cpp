// cli/commands/admin_streams.cpp — `queen admin streams list|show|reset|delete`: the stream
// queries of a tenant over /api/v1/streams/queries (docs/http-api.md, streams admin): their
// source and sink, epoch and lag, one query's state rows per partition, and the two operator
// actions, reset (drop every state row: a new epoch) and delete. Tables for people, `--json`
// prints the route's answer. Reset and delete ask nothing: the name is the confirmation (a
// stream query's state is derived from its source queue and can be rebuilt; the tenant and
// queue deletes, which lose messages, ask). The shared helpers and the command line live in
// admin.cpp.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "commands/admin.hpp"
#include "queen/client/client.hpp"

namespace queen::cli {
namespace {

using nlohmann::json;
namespace qc = queen::client;
using namespace admin_internal;

const std::string queries_target = "/api/v1/streams/queries";

std::string query_target(const std::string& name) {
    return queries_target + "/" + qc::percent_encode(name);
}

void print_queries(const json& answer) {
    Table table{{{"QUERY"},
                 {"SOURCE"},
                 {"SINK"},
                 {"EPOCH", true},
                 {"LAG", true},
                 {"UPDATED"},
                 {"QUERY_ID"}}};
    for (const json& query : answer.value("queries", json::array())) {
        table.add({cell(query, "name"), cell(query, "source_queue"), cell(query, "sink_queue"),
                   cell(query, "epoch"), cell(query, "lag"), cell(query, "updated_at"),
                   cell(query, "query_id")});
    }
    table.print();
    const auto next = answer.find("nextAfter");
    if (next != answer.end() && next->is_string()) {
        std::cout << "more: queen admin streams list --after " << next->get<std::string>() << "\n";
    }
}

void print_query(const json& query) {
    Table fields{{{"FIELD"}, {"VALUE"}}};
    for (const char* key : {"name", "query_id", "source_queue", "sink_queue", "config_hash",
                            "epoch", "created_at", "updated_at", "lag", "rows"}) {
        fields.add({key, cell(query, key)});
    }
    fields.print();
    const json partitions = query.value("partitions", json::array());
    if (partitions.empty()) {
        return;
    }
    std::cout << "\n";
    Table table{{{"PARTITION_ID"}, {"ROWS", true}}};
    for (const json& partition : partitions) {
        table.add({cell(partition, "partition_id"), cell(partition, "rows")});
    }
    table.print();
}

}  // namespace

int admin_internal::run_streams_list(const AdminOptions& options, qc::Client& client) {
    std::string target = queries_target + "?limit=" + std::to_string(options.limit);
    if (!options.after.empty()) {
        target += "&after=" + qc::percent_encode(options.after);
    }
    return print_answer(options, object_of("GET " + target, client.get_json(target)),
                        print_queries);
}

int admin_internal::run_streams_show(const AdminOptions& options, qc::Client& client) {
    const std::string target = query_target(options.name);
    return print_answer(options, object_of("GET " + target, client.get_json(target)), print_query);
}

int admin_internal::run_streams_reset(const AdminOptions& options, qc::Client& client) {
    const std::string target = query_target(options.name) + "/reset";
    return print_answer(options, object_of("POST " + target, client.post_json(target, "{}")),
                        [](const json& answer) {
                            std::cout << "reset stream query " << cell(answer, "name")
                                      << ": its state rows are gone, epoch "
                                      << cell(answer, "epoch") << " (query id "
                                      << cell(answer, "query_id") << ")\n";
                        });
}

int admin_internal::run_streams_delete(const AdminOptions& options, qc::Client& client) {
    const std::string target = query_target(options.name);
    return print_answer(options, object_of("DELETE " + target, delete_json(client, target)),
                        [](const json& answer) {
                            std::cout << "deleted stream query " << cell(answer, "name") << "\n";
                        });
}

void admin_internal::register_streams_commands(CLI::App& admin, AdminOptions& options,
                                               const AddLeaf& leaf) {
    auto* streams =
        admin.add_subcommand("streams", "Stream queries: list, show, reset their state, delete");
    streams->require_subcommand(1);
    auto* list = leaf(streams, "list",
                      "Stream queries in name order: source and sink queues, epoch, lag (messages "
                      "of the source queue not consumed yet)",
                      AdminCommand::streams_list);
    list->add_option("--after", options.after, "Start after this query name");
    list->add_option("--limit", options.limit, "Page size")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    leaf(streams, "show",
         "One query with its state rows per partition (counts every row: slow for millions; "
         "exit 1 when unknown)",
         AdminCommand::streams_show)
        ->add_option("name", options.name, "Query name")
        ->required();
    leaf(streams, "reset",
         "Drop every state row of a query (a new epoch; its id and operator chain stay, runners "
         "go on from empty state)",
         AdminCommand::streams_reset)
        ->add_option("name", options.name, "Query name")
        ->required();
    leaf(streams, "delete",
         "Delete a query and its state (registering the name again makes a new query)",
         AdminCommand::streams_delete)
        ->add_option("name", options.name, "Query name")
        ->required();
}

}  // namespace queen::cli
