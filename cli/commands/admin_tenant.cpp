// cli/commands/admin_tenant.cpp — `queen admin tenant list|create|delete` and `queen admin
// cluster rebalance`: the tenants of a cluster over /api/v1/system/tenants, printed as one table
// (or `--json`). The shared output helpers and the command line live in admin.cpp.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "commands/admin.hpp"
#include "queen/client/client.hpp"
#include "queen/client/protocol.hpp"

namespace queen::cli {
namespace {

using nlohmann::json;
namespace qc = queen::client;
using namespace admin_internal;

// Node ids as "1,2,3" ("-" for none).
std::string id_list(const json& ids) {
    std::string out;
    if (ids.is_array()) {
        for (const json& id : ids) {
            out += (out.empty() ? "" : ",") + cell(id);
        }
    }
    return cell(out);
}

// A node id cell: 0 (none known) and null as "-".
std::string node_cell(const json& object, const char* key) {
    const auto found = object.find(key);
    if (found == object.end() || found->is_null() ||
        (found->is_number_unsigned() && found->get<std::uint64_t>() == 0)) {
        return "-";
    }
    return cell(*found);
}

// The tenants of a {"tenants": [...]} answer as a table.
void print_tenants(const json& answer) {
    Table table{{{"TENANT"},
                 {"REPLICATION", true},
                 {"REPLICAS"},
                 {"PREFERRED", true},
                 {"LEADER", true},
                 {"HOSTED"},
                 {"CREATED"}}};
    const json tenants = answer.value("tenants", json::array());
    for (const json& t : tenants) {
        if (!t.is_object()) {
            continue;
        }
        table.add({cell(t, "name"), cell(t, "replication"), id_list(t.value("replicas", json())),
                   node_cell(t, "preferredLeader"), node_cell(t, "leaderId"),
                   yes_no(t.value("hosted", false)), cell(t, "createdAt")});
    }
    table.print();
}

std::string tenant_target(const std::string& name) {
    return "/api/v1/system/tenants/" + qc::percent_encode(name);
}

}  // namespace

int admin_internal::run_tenant_list(const AdminOptions& options, qc::Client& client) {
    return print_answer(
        options, object_of("GET /api/v1/system/tenants", client.get_json("/api/v1/system/tenants")),
        print_tenants);
}

int admin_internal::run_tenant_create(const AdminOptions& options, qc::Client& client) {
    json request = {{"name", options.tenant_name}};
    if (options.replication != 0) {
        request["replication"] = options.replication;
    }
    auto answer = object_of("POST /api/v1/system/tenants",
                            client.post_json("/api/v1/system/tenants", request.dump()));
    return print_answer(options, answer, [](const json& t) {
        std::cout << "created tenant " << cell(t, "name") << " (replication "
                  << cell(t, "replication") << ", replicas " << id_list(t.value("replicas", json()))
                  << ", preferred leader " << node_cell(t, "preferredLeader") << ", "
                  << (t.value("hosted", false) ? "hosted on this node" : "not hosted on this node")
                  << ")\n";
    });
}

int admin_internal::run_tenant_delete(const AdminOptions& options, qc::Client& client) {
    const std::string& name = options.tenant_name;
    if (auto refused = confirmed(
            options, "deleting tenant " + name + " (its queues and messages, on every node)",
            "Delete tenant " + name + " with all its queues and messages, on every node?",
            "tenant " + name + " not deleted")) {
        return *refused;
    }
    const std::string target = tenant_target(name);
    return print_answer(options, object_of("DELETE " + target, delete_json(client, target)),
                        [&](const json&) { std::cout << "deleted tenant " << name << "\n"; });
}

int admin_internal::run_cluster_rebalance(const AdminOptions& options, qc::Client& client) {
    return print_answer(options,
                        object_of("POST /api/v1/system/cluster/rebalance",
                                  client.post_json("/api/v1/system/cluster/rebalance", "{}")),
                        print_tenants);
}

void admin_internal::register_tenant_commands(CLI::App& admin, CLI::App& cluster,
                                              AdminOptions& options, const AddLeaf& leaf) {
    leaf(&cluster, "rebalance",
         "Spread the tenants' preferred leaders evenly over the nodes (their leaders then move) "
         "and print the new placement",
         AdminCommand::cluster_rebalance);

    auto* tenant = admin.add_subcommand(
        "tenant", "List, create and delete the tenants of the cluster (--tenant is not used)");
    tenant->require_subcommand(1);
    leaf(tenant, "list",
         "Every tenant: replication, replicas, preferred and current leader, hosted here",
         AdminCommand::tenant_list);
    auto* tenant_create =
        leaf(tenant, "create", "Create a tenant, placed on --replication nodes by the cluster",
             AdminCommand::tenant_create);
    tenant_create->add_option("name", options.tenant_name, "Tenant name (1-64 of [A-Za-z0-9._-])")
        ->required();
    tenant_create
        ->add_option(
            "--replication", options.replication,
            "Replicas: 1, 3 or 5 (default: 3 when the cluster has 3 nodes or more, else 1)")
        ->check(CLI::IsMember({1, 3, 5}));
    auto* tenant_delete =
        leaf(tenant, "delete", "Delete a tenant with all its queues and messages, on every node",
             AdminCommand::tenant_delete);
    tenant_delete->add_option("name", options.tenant_name, "Tenant name")->required();
    tenant_delete->add_flag("--yes,-y", options.yes,
                            "Do not ask (required when stdin is no terminal)");
}

}  // namespace queen::cli
