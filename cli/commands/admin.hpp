// cli/commands/admin.hpp — `queen admin`: script a running broker over its HTTP API (client SDK).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "commands/tls_flags.hpp"
#include "queen/core/queue_options.hpp"
#include "queen/core/result.hpp"

namespace CLI {
class App;
}

namespace queen::client {
class Client;
}

namespace queen::cli {

/// The admin command chosen on the command line (one per leaf subcommand).
enum class AdminCommand {
    queues_list,
    queues_show,
    queues_create,
    queues_delete,
    partitions_list,
    groups_list,
    groups_show,
    groups_delete,
    groups_seek,
    dlq_list,
    messages_show,
    maintenance,
    cluster_status,
    cluster_transfer_leader,
    cluster_rebalance,
    cluster_members,
    cluster_add,
    cluster_remove,
    tenant_list,
    tenant_create,
    tenant_delete,
    kv_list,
    kv_get,
    locks_list,
    locks_get,
    timers_list,
    timers_get,
    streams_list,
    streams_show,
    streams_reset,
    streams_delete,
    health,
};

/// Flags of every `queen admin` command; each command reads the fields it documents.
struct AdminOptions {
    AdminCommand command = AdminCommand::health;
    std::string url = "http://127.0.0.1:6632";  ///< --url, or QUEEN_URL
    std::string tenant;                         ///< non-empty: sent as X-Queen-Tenant
    std::string token;                          ///< non-empty: Authorization: Bearer
    TlsFlags tls;                               ///< for an https:// url
    bool json = false;                          ///< print JSON objects instead of tables
    double timeout_s = 10.0;                    ///< connect and request deadline

    std::string queue;
    std::string group;
    std::string partition;
    std::string partition_id;
    std::string transaction_id;
    std::string timestamp;
    bool to_end = false;
    bool keep_metadata = false;
    bool yes = false;  ///< queues delete, tenant delete, cluster remove: no confirmation
    std::int64_t limit = 100;
    std::int64_t offset = 0;
    /// queues create: the options given on the command line (one flag per row of the option
    /// table); the others keep the queue's current values (or the defaults for a new queue).
    struct QueueOptionFlags {
        QueueOptions values;               ///< the given options' values
        std::set<std::string_view> given;  ///< JSON keys of the given options
    };
    QueueOptionFlags queue_flags;
    std::string namespace_name;
    std::string task;
    std::string maintenance_action = "status";  ///< on | off | status
    bool pop = false;                           ///< maintenance: the pop flag, not push
    std::uint64_t to = 0;                       ///< cluster transfer-leader: the node to lead
    double wait_s = 5.0;            ///< cluster transfer-leader: how long to wait for it to lead
    std::string tenant_name;        ///< tenant create/delete: the tenant (not --tenant)
    std::uint32_t replication = 0;  ///< tenant create: 1, 3 or 5 (0: the cluster chooses)
    std::uint64_t node = 0;         ///< cluster add/remove: the member's node id
    std::string peer_address;       ///< cluster add: "<ip>:<port>" of its peer listener
    std::string bucket;             ///< kv list/get: the bucket (kv list without one: every bucket)
    std::string key;                ///< kv get: the key
    std::string prefix;             ///< kv list: only keys starting with this
    std::string after;              ///< kv/locks/timers list: the page after this key, name or id
    std::string name;  ///< locks get: the lock; timers get: the timer id; streams: the query
};

/// Adds `admin` and its subcommands; the chosen command's exit code lands in `exit_code`.
void register_admin(CLI::App& app, int& exit_code);

/// Runs `options.command` against the broker at `options.url`, printing to stdout (errors to
/// stderr). Returns exit_ok; exit_failed for an operation the broker refused (HTTP 4xx/5xx other
/// than 503/504, an unknown queue, group, tenant or member, a rejected seek, a tenant or member
/// that exists already, a member change on a node that runs alone) and for TLS that failed (a
/// certificate that did not verify, a file that does not load); exit_usage for a bad URL or
/// an argument the client rejects (a tenant delete or cluster remove without --yes when stdin
/// is not a terminal); exit_retryable when the broker could not be
/// reached, timed out or answered 503/504, or when a leadership transfer did not finish within
/// --wait.
int run_admin(const AdminOptions& options);

// ---- internal: shared by admin.cpp, admin_tenant.cpp and admin_member.cpp (not for other
// commands) ----
namespace admin_internal {

/// Prints "queen admin: <message>" to stderr; returns the error's exit code.
int report(const queen::Error& error);
/// Prints "queen admin: <message>" to stderr; returns exit_failed.
int report_failure(const std::string& message);

void print_json(const nlohmann::json& value);

/// How a value reads in a table cell: strings bare, null, absent and empty as "-".
std::string cell(const nlohmann::json& value);
std::string cell(const nlohmann::json& object, const char* key);
std::string cell(const std::string& text);
std::string cell(std::int64_t number);
std::string yes_no(bool value);

/// Asks on the terminal; false unless the answer is y or yes.
bool confirm(const std::string& question);
/// Whether a destructive command goes ahead: with --yes, or when the user at the terminal
/// answers yes to `question`. nullopt: go ahead; else the exit code: exit_usage without --yes
/// and without a terminal (saying that `doing` needs --yes), exit_failed with `refused` when
/// the answer is no.
std::optional<int> confirmed(const AdminOptions& options, const std::string& doing,
                             const std::string& question, const std::string& refused);
/// A command's answer: the error reported; else the JSON (--json) or `print_text(answer)`.
int print_answer(const AdminOptions& options, const queen::Result<nlohmann::json>& answer,
                 const std::function<void(const nlohmann::json&)>& print_text);

/// The broker's answer to `what` as a JSON object: a failed request keeps its error, a body
/// that is not a JSON object is client::Errc::bad_response.
queen::Result<nlohmann::json> object_of(const std::string& what,
                                        const queen::Result<std::string>& body);
/// DELETE `target` (the client has no call of its own for it): the answer's body, or the
/// request's error (an HTTP error status included).
queen::Result<std::string> delete_json(queen::client::Client& client, const std::string& target);

/// Columns padded to their widest cell; numeric columns are right-aligned.
class Table {
public:
    struct Column {
        std::string name;
        bool is_numeric = false;
    };

    explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

    void add(std::vector<std::string> row) {
        row.resize(columns_.size(), "-");
        rows_.push_back(std::move(row));
    }

    void print() const;

private:
    void print_row(const std::vector<std::string>& row,
                   const std::vector<std::size_t>& widths) const;

    std::vector<Column> columns_;
    std::vector<std::vector<std::string>> rows_;
};

// The tenant commands (admin_tenant.cpp).
int run_tenant_list(const AdminOptions& options, queen::client::Client& client);
int run_tenant_create(const AdminOptions& options, queen::client::Client& client);
int run_tenant_delete(const AdminOptions& options, queen::client::Client& client);
int run_cluster_rebalance(const AdminOptions& options, queen::client::Client& client);

/// Adds one leaf subcommand that runs `command` (register_admin's helper).
using AddLeaf = std::function<CLI::App*(CLI::App* parent, const char* name, const char* help,
                                        AdminCommand command)>;
/// Adds `cluster rebalance` to `cluster` and `tenant list|create|delete` to `admin`.
void register_tenant_commands(CLI::App& admin, CLI::App& cluster, AdminOptions& options,
                              const AddLeaf& leaf);

// The member commands (admin_member.cpp).
int run_cluster_members(const AdminOptions& options, queen::client::Client& client);
int run_cluster_add(const AdminOptions& options, queen::client::Client& client);
int run_cluster_remove(const AdminOptions& options, queen::client::Client& client);
/// Adds `cluster members|add|remove` to `cluster`.
void register_member_commands(CLI::App& cluster, AdminOptions& options, const AddLeaf& leaf);

// The KV, lock and timer commands (admin_state.cpp).
int run_kv_list(const AdminOptions& options, queen::client::Client& client);
int run_kv_get(const AdminOptions& options, queen::client::Client& client);
int run_locks_list(const AdminOptions& options, queen::client::Client& client);
int run_locks_get(const AdminOptions& options, queen::client::Client& client);
int run_timers_list(const AdminOptions& options, queen::client::Client& client);
int run_timers_get(const AdminOptions& options, queen::client::Client& client);
/// Adds `kv list|get`, `locks list|get` and `timers list|get` to `admin`.
void register_state_commands(CLI::App& admin, AdminOptions& options, const AddLeaf& leaf);

// The stream query commands (admin_streams.cpp).
int run_streams_list(const AdminOptions& options, queen::client::Client& client);
int run_streams_show(const AdminOptions& options, queen::client::Client& client);
int run_streams_reset(const AdminOptions& options, queen::client::Client& client);
int run_streams_delete(const AdminOptions& options, queen::client::Client& client);
/// Adds `streams list|show|reset|delete` to `admin`.
void register_streams_commands(CLI::App& admin, AdminOptions& options, const AddLeaf& leaf);

}  // namespace admin_internal

}  // namespace queen::cli
