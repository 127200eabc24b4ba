// queen/api/backend.hpp — what the HTTP API needs from a node: run commands through the log, read
// applied state, wake parked long polls, and report node health and metrics. The node implements
// it; tests may use an engine directly.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "queen/core/result.hpp"
#include "queen/engine/command.hpp"

namespace queen::engine {
class Engine;
}

namespace queen::api {

/// A registration that can be cancelled (a parked long poll whose client went away).
class WaitToken {
public:
    virtual ~WaitToken() = default;
    /// After cancel() returns the callback will not start (it may be running right now).
    virtual void cancel() = 0;
};

/// One Prometheus sample the node contributes to /metrics/prometheus (log, raft, LMDB, HTTP
/// server, process). The API adds its own request and message counters.
struct MetricSample {
    enum class Kind : std::uint8_t { counter = 0, gauge = 1 };
    std::string name;  ///< "queen_log_bytes"; [a-zA-Z_:][a-zA-Z0-9_:]*
    std::string help;  ///< one line
    Kind kind = Kind::gauge;
    std::vector<std::pair<std::string, std::string>> labels;  ///< e.g. {"tenant", "default"}
    double value = 0;
};

/// A histogram in Prometheus form (e.g. queen_fsync_latency_seconds).
struct HistogramSample {
    std::string name;  ///< without the _bucket/_sum/_count suffixes
    std::string help;
    std::vector<std::pair<std::string, std::string>> labels;
    std::vector<double> upper_bounds;              ///< ascending, without +Inf
    std::vector<std::uint64_t> cumulative_counts;  ///< same size as upper_bounds
    double sum = 0;                                ///< in the unit of the name
    std::uint64_t count = 0;                       ///< the +Inf bucket
};

/// The state of one tenant on this node, for /health, /ready and the metrics.
struct TenantHealth {
    std::string name;
    bool is_writable = false;  ///< this node can get entries committed now (leader, or forwards)
    bool is_poisoned = false;  ///< fail-stop after a disk error; `reason` says which
    std::string reason;        ///< why not writable or poisoned; empty when fine
    /// Why this node is not caught up with its group (a snapshot install, the recovery of a
    /// damaged log); empty when it is. /ready answers 503 meanwhile.
    std::string catching_up;
    std::uint64_t applied_index = 0;
    std::uint64_t committed_index = 0;
    std::string role = "leader";  ///< this node in the tenant's raft group: leader, follower, ...
    std::uint64_t term = 0;       ///< the group's current raft term as this node knows it
    std::uint64_t leader_id = 0;  ///< the node leading the group (0: none known)
    std::uint64_t leader_changes = 0;  ///< new leaders this node learned of (counter)
    /// The group's membership as this node applied it (sorted node ids; empty alone, or on a
    /// node that joins and has not heard from the group yet).
    std::vector<std::uint64_t> voters;
    std::vector<std::uint64_t> learners;  ///< members catching up before they vote
    std::uint64_t log_bytes = 0;          ///< raft log segments on disk
    std::uint64_t state_bytes = 0;        ///< LMDB data file size
};

/// A snapshot of the node for the health and metrics endpoints. Cheap to build (no scans).
struct NodeStatus {
    std::string version;  ///< "0.1.0"
    std::uint64_t node_id = 0;
    std::int64_t uptime_ms = 0;
    bool is_ready = false;         ///< /ready answers 200 only when true
    std::string not_ready_reason;  ///< shown by /ready when false
    std::vector<TenantHealth> tenants;
    std::uint64_t resident_memory_bytes = 0;
    std::uint64_t virtual_memory_bytes = 0;
    std::uint64_t cpu_user_us = 0;
    std::uint64_t cpu_system_us = 0;
    std::vector<MetricSample> metrics;        ///< node-side counters and gauges
    std::vector<HistogramSample> histograms;  ///< node-side histograms (fsync latency, ...)
};

/// What Backend::transfer_leadership() found and did.
struct LeaderTransfer {
    /// False when `target` leads already (nothing to do); true when the transfer was asked
    /// for (the leader's own, or a follower's request forwarded to the leader).
    bool is_started = false;
    std::uint64_t leader_id = 0;  ///< the leader this node knew when asked
    std::uint64_t term = 0;       ///< the term this node knew when asked
};

/// One tenant of the cluster catalogue, as Backend::list_tenants() reports it.
struct TenantInfo {
    std::string name;
    std::uint32_t replication = 1;        ///< replicas (1, 3 or 5; the default tenant: all nodes)
    std::vector<std::uint64_t> replicas;  ///< node ids; the first is the preferred leader
    std::uint64_t leader_id = 0;  ///< the leader this node knows (0: none, or not hosted here)
    bool is_hosted = false;       ///< this node is one of its replicas and has it open
    std::int64_t created_ms = 0;  ///< wall-clock ms (0 for the default tenant)
};

/// One member of the cluster, as Backend::list_members() reports it.
struct MemberInfo {
    std::uint64_t id = 0;
    std::string peer_host;  ///< numeric IP of its peer listener
    std::uint16_t peer_port = 0;
    bool is_self = false;  ///< the node answering
    /// This node has a peer connection to it (always true for itself).
    bool is_connected = false;
    std::uint32_t tenants = 0;  ///< tenants the catalogue places on it (default included)
};

/// The node side of the API. Every member may be called from any thread (I/O threads mostly)
/// and must not block for long: submit() and wait_for_change() complete through callbacks.
class Backend {
public:
    virtual ~Backend() = default;

    using Completion = std::function<void(Result<engine::CommandResult>)>;

    /// Proposes `command` as one log entry of `tenant` and calls `done` (on any thread) once the
    /// entry is committed and applied, with its result. Errors given to `done`: Errc::not_found
    /// (unknown tenant), Errc::busy (proposal queue full: answer 503), Errc::not_leader,
    /// Errc::poisoned (the tenant failed on a disk error), Errc::cancelled (shutting down).
    virtual void submit(std::string_view tenant, engine::Command command, Completion done) = 0;

    using ReadReady = std::function<void(Status)>;

    /// Calls `ready` once the state of `tenant` that read() sees holds every entry whose answer
    /// was handed out before this call (the read index), so a client reads what it was told
    /// about. Never waits: `ready` runs at once on the calling thread when the state already
    /// holds it, else later on another thread (a node's applier, right after the LMDB commit
    /// that makes the entries readable; with Raft, once the applied index reaches the read
    /// index the leader confirmed). `ready` must not block and should hand the read itself to
    /// a thread of the caller's (the API continues on the request's I/O thread).
    /// Errors given to `ready`: Errc::not_found (unknown tenant), Errc::poisoned,
    /// Errc::cancelled (shutting down), Errc::busy (too many reads waiting: answer 503),
    /// Errc::not_leader.
    virtual void when_readable(std::string_view tenant, ReadReady ready) = 0;

    /// Runs `read` now, on the calling thread, with the tenant's engine for read-only queries on
    /// its applied state (each query opens its own read transaction over the last LMDB
    /// commit). Never waits: to see what earlier answers reported, call it from (or after) a
    /// when_readable() callback. Errors: Errc::not_found (unknown tenant), Errc::poisoned,
    /// Errc::not_leader (when this node cannot serve reads of the tenant).
    virtual Status read(std::string_view tenant,
                        const std::function<void(const engine::Engine&)>& read) = 0;

    /// Calls `wake` once (on any thread) when an entry applied after this call may have made
    /// messages of `queue` deliverable (push, ack, nack, lease expiry, seek, maintenance off) or
    /// when `deadline_ms` (a monotonic time from now_ms()) passes, with timed_out = true in that
    /// case. `queue` may also be a queues::matching_wait_key (a pop of a namespace and/or task):
    /// the applier's wakeups name those keys like queues, so the node wakes them the same way.
    /// The API registers before it submits the pop it is waiting on, so a change applied
    /// between that pop and the wait is not missed. Returns a token to cancel the wait.
    virtual std::unique_ptr<WaitToken> wait_for_change(
        std::string_view tenant, std::string_view queue, std::int64_t deadline_ms,
        std::function<void(bool timed_out)> wake) = 0;

    /// Monotonic milliseconds, the clock of wait deadlines.
    [[nodiscard]] virtual std::int64_t now_ms() const = 0;

    /// Wall-clock milliseconds since the Unix epoch: "now" for read queries (is a lease still
    /// active), the default time ranges of listings and the `timestamp` of overviews.
    [[nodiscard]] virtual std::int64_t wall_ms() const = 0;

    /// Health and metrics of this node and its tenants (see NodeStatus). Never fails.
    [[nodiscard]] virtual NodeStatus node_status() const = 0;

    /// Asks `tenant`'s raft group to hand its leadership to node `target` and returns at once:
    /// the leader catches the target up and tells it to campaign (within one election timeout,
    /// else the transfer is abandoned); a follower sends the request to the leader it knows.
    /// Watch node_status() for the outcome. Errors: Errc::not_found (unknown tenant),
    /// Errc::invalid_argument (`target` is not a voter of the group), Errc::not_leader (no
    /// leader known: an election; retry), Errc::poisoned, Errc::unsupported (this backend has
    /// no raft groups).
    [[nodiscard]] virtual Result<LeaderTransfer> transfer_leadership(std::string_view tenant,
                                                                     std::uint64_t target) {
        (void)tenant;
        (void)target;
        return Error{Errc::unsupported, "this backend cannot transfer leadership"};
    }

    using TenantDone = std::function<void(Result<TenantInfo>)>;
    /// Creates tenant `name` with `replication` replicas (0: 3 when the cluster has at least 3
    /// nodes, else 1), placed by the cluster (docs/cluster.md, "Tenants"), and calls `done` (on
    /// any thread) once it is created and, when this node is one of its replicas, open here.
    /// Errors given to `done`: Errc::invalid_argument (a bad name, a replication other than
    /// 1, 3 or 5 or above the number of nodes), Errc::already_exists, Errc::not_leader and
    /// Errc::busy (retry), Errc::poisoned, Errc::unsupported (this backend has no tenants API).
    virtual void create_tenant(std::string_view name, std::uint32_t replication, TenantDone done) {
        (void)name;
        (void)replication;
        done(Error{Errc::unsupported, "this backend cannot create tenants"});
    }
    /// Deletes tenant `name` and all its data on every node. Errors given to `done`:
    /// Errc::not_found, Errc::unsupported (the default tenant), as create_tenant otherwise.
    virtual void delete_tenant(std::string_view name, std::function<void(Status)> done) {
        (void)name;
        done(Error{Errc::unsupported, "this backend cannot delete tenants"});
    }
    /// The tenants of the catalogue as this node applied it (call from a when_readable()
    /// callback of the default tenant to see every change acknowledged before), sorted by name.
    [[nodiscard]] virtual Result<std::vector<TenantInfo>> list_tenants() {
        return Error{Errc::unsupported, "this backend has no tenants API"};
    }
    /// Spreads the tenants' preferred leaders evenly over the nodes (their leaders then move,
    /// one transfer each); `done` gets the new placement. Errors as create_tenant.
    virtual void rebalance(std::function<void(Result<std::vector<TenantInfo>>)> done) {
        done(Error{Errc::unsupported, "this backend cannot rebalance"});
    }

    using MembersDone = std::function<void(Result<std::vector<MemberInfo>>)>;
    /// The members of the catalogue as this node applied it (call from a when_readable()
    /// callback of the default tenant, as list_tenants()), sorted by id.
    [[nodiscard]] virtual Result<std::vector<MemberInfo>> list_members() {
        return Error{Errc::unsupported, "this backend has no cluster members"};
    }
    /// Adds node `id`, whose peer listener is `peer_host`:`peer_port`, to the cluster: `done`
    /// gets the members once the change is applied here. The node then starts with
    /// cluster.join = true and each group it belongs to adds it (docs/cluster.md, "Adding and
    /// removing nodes"). Errors: Errc::invalid_argument (id 0, an address another member
    /// has), Errc::already_exists (a member with that id), as create_tenant otherwise.
    virtual void add_member(std::uint64_t id, std::string peer_host, std::uint16_t peer_port,
                            MembersDone done) {
        (void)id;
        (void)peer_host;
        (void)peer_port;
        done(Error{Errc::unsupported, "this backend has no cluster members"});
    }
    /// Removes node `id` from the cluster: every tenant it replicates gets another member in
    /// its place, then the groups drop it. Errors: Errc::not_found (not a member),
    /// Errc::invalid_argument (a tenant would have fewer nodes than its replication: the
    /// message names it), Errc::unsupported (the last member), as create_tenant otherwise.
    virtual void remove_member(std::uint64_t id, MembersDone done) {
        (void)id;
        done(Error{Errc::unsupported, "this backend has no cluster members"});
    }
};

}  // namespace queen::api
