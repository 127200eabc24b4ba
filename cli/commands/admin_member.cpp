// cli/commands/admin_member.cpp — `queen admin cluster members|add|remove`: the members of a
// cluster over /api/v1/system/cluster/members, printed as one table (or `--json`). The shared
// output helpers and the command line live in admin.cpp.
#include <CLI/CLI.hpp>
#include <cstdint>
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

const char* const members_route = "/api/v1/system/cluster/members";

// The members of a {"members": [...]} answer as a table.
void print_members(const json& answer) {
    Table table{{{"ID", true}, {"PEER_ADDRESS"}, {"SELF"}, {"CONNECTED"}, {"TENANTS", true}}};
    for (const json& m : answer.value("members", json::array())) {
        if (!m.is_object()) {
            continue;
        }
        table.add({cell(m, "id"), cell(m, "peerAddress"), yes_no(m.value("self", false)),
                   yes_no(m.value("connected", false)), cell(m, "tenants")});
    }
    table.print();
}

// The member `id` of a {"members": [...]} answer, or nullptr.
const json* member_of(const json& answer, std::uint64_t id) {
    const auto members = answer.find("members");
    if (members == answer.end() || !members->is_array()) {
        return nullptr;
    }
    for (const json& m : *members) {
        if (m.is_object() && m.value("id", std::uint64_t{0}) == id) {
            return &m;
        }
    }
    return nullptr;
}

// Member ids as "1, 2, 3" ("none" for none).
std::string member_ids(const json& answer) {
    std::string out;
    for (const json& m : answer.value("members", json::array())) {
        if (m.is_object()) {
            out += (out.empty() ? "" : ", ") + cell(m, "id");
        }
    }
    return out.empty() ? "none" : out;
}

}  // namespace

int admin_internal::run_cluster_members(const AdminOptions& options, qc::Client& client) {
    return print_answer(
        options, object_of(std::string("GET ") + members_route, client.get_json(members_route)),
        print_members);
}

int admin_internal::run_cluster_add(const AdminOptions& options, qc::Client& client) {
    const json request = {{"id", options.node}, {"address", options.peer_address}};
    auto answer = object_of(std::string("POST ") + members_route,
                            client.post_json(members_route, request.dump()));
    return print_answer(options, answer, [&](const json& members) {
        const json* added = member_of(members, options.node);
        std::cout << "added node " << options.node << " (peer "
                  << (added != nullptr ? cell(*added, "peerAddress") : options.peer_address)
                  << "): start it with cluster.join = true and cluster.peers listing it and a "
                     "running member\n";
    });
}

int admin_internal::run_cluster_remove(const AdminOptions& options, qc::Client& client) {
    const std::string node = std::to_string(options.node);
    if (auto refused =
            confirmed(options, "removing node " + node + " from the cluster",
                      "Remove node " + node +
                          " from the cluster (its tenants move to the other members first)?",
                      "node " + node + " not removed")) {
        return *refused;
    }
    const std::string target = std::string(members_route) + "/" + node;
    return print_answer(options, object_of("DELETE " + target, delete_json(client, target)),
                        [&](const json& members) {
                            std::cout << "removed node " << node
                                      << " from the cluster (members now: " << member_ids(members)
                                      << "): its tenants move to other members (queen admin "
                                         "cluster status shows the groups); then stop it and "
                                         "remove its data directory\n";
                        });
}

void admin_internal::register_member_commands(CLI::App& cluster, AdminOptions& options,
                                              const AddLeaf& leaf) {
    leaf(&cluster, "members",
         "Every member: its id, peer address, whether it is this node, connected to it, and "
         "how many tenants it replicates",
         AdminCommand::cluster_members);
    auto* add =
        leaf(&cluster, "add", "Add a node to the cluster (then start it with cluster.join = true)",
             AdminCommand::cluster_add);
    add->add_option("id", options.node, "The new node's node.id (a positive integer)")
        ->required()
        ->check(CLI::PositiveNumber);
    add->add_option("address", options.peer_address,
                    "Its peer listener, <ip>:<port> (a numeric IP, as in cluster.peers)")
        ->required();
    auto* remove = leaf(&cluster, "remove",
                        "Remove a node from the cluster: its tenants move to the other members",
                        AdminCommand::cluster_remove);
    remove->add_option("id", options.node, "The node's id")->required()->check(CLI::PositiveNumber);
    remove->add_flag("--yes,-y", options.yes, "Do not ask (required when stdin is no terminal)");
}

}  // namespace queen::cli
