// modules/node/src/backend.cpp — api::Backend over the node's tenants, plus process metrics.
#include "backend.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "cluster.hpp"
#include "queen/http/server.hpp"
#include "queen/raft/errc.hpp"
#include "request_forward.hpp"

namespace queen::node::detail {
namespace {
/// Why a tenant is not open here: not in the catalogue, still opening, or hosted elsewhere.
Error missing_tenant(const TenantManager& tenants, std::string_view tenant, NodeId self) {
    const Catalogue catalogue = tenants.catalogue();
    const TenantPlacement* placement = catalogue.find(tenant);
    if (placement == nullptr) {
        return Error{Errc::not_found,
                     "no such tenant in the cluster (create it: POST /api/v1/system/tenants)"};
    }
    if (catalogue.is_replica(tenant, self)) {
        return Error{Errc::busy, "still opening on this node"};
    }
    std::string nodes;
    for (const NodeId replica : placement->replicas) {
        nodes += (nodes.empty() ? "" : ",") + std::to_string(replica.value());
    }
    return Error{Errc::not_leader, "tenant '" + std::string(tenant) + "' lives on nodes " + nodes +
                                       ", not on this one; send the request there"};
}

api::TenantInfo info_of(const std::vector<api::TenantInfo>& infos, std::string_view name) {
    for (const api::TenantInfo& info : infos) {
        if (info.name == name) {
            return info;
        }
    }
    api::TenantInfo info;
    info.name = std::string(name);
    return info;
}
}  // namespace

void NodeBackend::submit(std::string_view tenant, engine::Command command, Completion done) {
    auto found = tenants_.find(tenant);
    if (!found) {
        done(missing_tenant(tenants_, tenant, NodeId{node_id_}));
        return;
    }
    found->submit(std::move(command), std::move(done));
}

void NodeBackend::when_readable(std::string_view tenant, ReadReady ready) {
    auto found = tenants_.find(tenant);
    if (!found) {
        ready(missing_tenant(tenants_, tenant, NodeId{node_id_}));
        return;
    }
    found->when_readable(std::move(ready));
}

Status NodeBackend::read(std::string_view tenant,
                         const std::function<void(const engine::Engine&)>& read) {
    auto found = tenants_.find(tenant);
    if (!found) {
        return missing_tenant(tenants_, tenant, NodeId{node_id_});
    }
    return found->read(read);
}

void NodeBackend::create_tenant(std::string_view name, std::uint32_t replication, TenantDone done) {
    CatalogueOp op;
    op.type = CatalogueOpType::create_tenant;
    op.tenant = std::string(name);
    op.replication = replication;
    tenants_.submit(op, [this, name = op.tenant, done = std::move(done)](Status status) {
        if (!status) {
            done(std::move(status).error());
            return;
        }
        done(info_of(tenants_.tenant_infos(), name));
    });
}

void NodeBackend::delete_tenant(std::string_view name, std::function<void(Status)> done) {
    CatalogueOp op;
    op.type = CatalogueOpType::delete_tenant;
    op.tenant = std::string(name);
    tenants_.submit(op, std::move(done));
}

Result<std::vector<api::TenantInfo>> NodeBackend::list_tenants() {
    return tenants_.tenant_infos();
}

void NodeBackend::rebalance(std::function<void(Result<std::vector<api::TenantInfo>>)> done) {
    CatalogueOp op;
    op.type = CatalogueOpType::rebalance;
    tenants_.submit(op, [this, done = std::move(done)](Status status) {
        if (!status) {
            done(std::move(status).error());
            return;
        }
        done(tenants_.tenant_infos());
    });
}

Result<std::vector<api::MemberInfo>> NodeBackend::list_members() {
    return tenants_.member_infos();
}

void NodeBackend::add_member(std::uint64_t id, std::string peer_host, std::uint16_t peer_port,
                             MembersDone done) {
    if (!tenants_.is_clustered()) {
        done(Error{Errc::unsupported,
                   "this node runs alone (no cluster.peers): a cluster starts with cluster.peers "
                   "on every founding node (docs/cluster.md)"});
        return;
    }
    CatalogueOp op;
    op.type = CatalogueOpType::add_member;
    op.members = {Member{NodeId{id}, std::move(peer_host), peer_port}};
    tenants_.submit(op, [this, done = std::move(done)](Status status) {
        if (!status) {
            done(std::move(status).error());
            return;
        }
        done(tenants_.member_infos());
    });
}

void NodeBackend::remove_member(std::uint64_t id, MembersDone done) {
    if (!tenants_.is_clustered()) {
        done(
            Error{Errc::unsupported, "this node runs alone (no cluster.peers): nothing to remove"});
        return;
    }
    CatalogueOp op;
    op.type = CatalogueOpType::remove_member;
    op.node = NodeId{id};
    tenants_.submit(op, [this, done = std::move(done)](Status status) {
        if (!status) {
            done(std::move(status).error());
            return;
        }
        done(tenants_.member_infos());
    });
}

std::unique_ptr<api::WaitToken> NodeBackend::wait_for_change(
    std::string_view tenant, std::string_view queue, std::int64_t deadline_ms,
    std::function<void(bool timed_out)> wake) {
    return waiters_.add(std::string(tenant), std::string(queue), deadline_ms, std::move(wake));
}

Result<api::LeaderTransfer> NodeBackend::transfer_leadership(std::string_view tenant,
                                                             std::uint64_t target) {
    auto found = tenants_.find(tenant);
    if (!found) {
        return missing_tenant(tenants_, tenant, NodeId{node_id_});
    }
    const api::TenantHealth health = found->health();
    if (health.is_poisoned) {
        return Error{Errc::poisoned, health.reason};
    }
    api::LeaderTransfer transfer;
    transfer.leader_id = health.leader_id;
    transfer.term = health.term;
    if (target != 0 && health.leader_id == target) {
        return transfer;  // it leads already
    }
    const std::string tenant_text = "tenant '" + std::string(tenant) + "'";
    auto asked = found->transfer_leadership(NodeId{target});
    if (!asked) {
        const Error& error = asked.error();
        if (error.is(raft::Errc::invalid_conf_change)) {
            return Error{Errc::invalid_argument,
                         "node " + std::to_string(target) + " is not a voter of " + tenant_text};
        }
        if (error.is(raft::Errc::not_leader)) {
            return Error{Errc::not_leader,
                         "no leader of " + tenant_text + " is known (an election is under way)"};
        }
        return error;
    }
    transfer.is_started = true;
    return transfer;
}

api::NodeStatus NodeBackend::node_status() const {
    api::NodeStatus status;
    status.version = QUEEN_NODE_VERSION;
    status.node_id = node_id_;
    status.uptime_ms = now_ms() - started_ms_;
    status.is_ready = true;
    if (tenants_.is_removed()) {
        status.is_ready = false;
        status.not_ready_reason = "the cluster removed this node (queen admin cluster remove)";
    }
    for (const auto& tenant : tenants_.all()) {
        const std::string& name = tenant->name();
        status.tenants.push_back(tenant->health());
        const auto& health = status.tenants.back();
        if (!health.is_writable && status.is_ready) {
            status.is_ready = false;
            status.not_ready_reason = "tenant " + name + ": " + health.reason;
        } else if (!health.catching_up.empty() && status.is_ready) {
            status.is_ready = false;
            status.not_ready_reason = "tenant " + name + ": catching up: " + health.catching_up;
        }
        tenant->collect_metrics(status.metrics, status.histograms);
    }
    // Process figures from /proc (Linux).
    std::ifstream statm("/proc/self/statm");
    std::uint64_t pages_virtual = 0;
    std::uint64_t pages_resident = 0;
    if (statm >> pages_virtual >> pages_resident) {
        const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
        status.virtual_memory_bytes = pages_virtual * page;
        status.resident_memory_bytes = pages_resident * page;
    }
    rusage usage{};
    if (::getrusage(RUSAGE_SELF, &usage) == 0) {
        status.cpu_user_us = static_cast<std::uint64_t>(usage.ru_utime.tv_sec) * 1'000'000 +
                             static_cast<std::uint64_t>(usage.ru_utime.tv_usec);
        status.cpu_system_us = static_cast<std::uint64_t>(usage.ru_stime.tv_sec) * 1'000'000 +
                               static_cast<std::uint64_t>(usage.ru_stime.tv_usec);
    }
    using Kind = api::MetricSample::Kind;
    status.metrics.push_back({"queen_longpoll_parked",
                              "Long-poll pops waiting for messages",
                              Kind::gauge,
                              {},
                              static_cast<double>(waiters_.parked())});
    if (const http::Server* http_server = http_server_.load(std::memory_order_acquire)) {
        const auto m = http_server->metrics();
        auto add = [&](const char* name, const char* help, Kind kind, std::uint64_t value,
                       std::vector<std::pair<std::string, std::string>> labels = {}) {
            status.metrics.push_back(
                {name, help, kind, std::move(labels), static_cast<double>(value)});
        };
        add("queen_http_requests_total", "HTTP requests received", Kind::counter, m.requests_total);
        add("queen_http_responses_total", "HTTP responses by status class", Kind::counter,
            m.responses_2xx_total, {{"class", "2xx"}});
        add("queen_http_responses_total", "HTTP responses by status class", Kind::counter,
            m.responses_4xx_total, {{"class", "4xx"}});
        add("queen_http_responses_total", "HTTP responses by status class", Kind::counter,
            m.responses_5xx_total, {{"class", "5xx"}});
        add("queen_http_connections_open", "Open HTTP connections", Kind::gauge,
            m.connections_open);
        add("queen_http_connections_accepted_total", "HTTP connections accepted", Kind::counter,
            m.connections_accepted_total);
        add("queen_http_connections_rejected_total",
            "HTTP connections refused over connections_max", Kind::counter,
            m.connections_rejected_total);
        add("queen_http_bad_requests_total", "Malformed or over-limit HTTP requests", Kind::counter,
            m.bad_requests_total);
        add("queen_http_timeouts_total", "HTTP connections closed by a timeout", Kind::counter,
            m.timeouts_total);
        add("queen_http_requests_cancelled_total", "Requests whose client left before the answer",
            Kind::counter, m.requests_cancelled_total);
        add("queen_http_bytes_in_total", "Bytes received", Kind::counter, m.bytes_in_total);
        add("queen_http_bytes_out_total", "Bytes sent", Kind::counter, m.bytes_out_total);
        if (http_server->is_tls()) {
            add("queen_http_tls_handshakes_total", "TLS handshakes completed", Kind::counter,
                m.tls_handshakes_total);
            add("queen_http_tls_handshake_failures_total",
                "TLS handshakes that failed or timed out (connection closed)", Kind::counter,
                m.tls_handshake_failures_total);
            status.metrics.push_back({"queen_http_tls_certificate_expiry_seconds",
                                      "Unix time when the served certificate expires (notAfter)",
                                      Kind::gauge,
                                      {},
                                      static_cast<double>(m.tls_certificate_not_after_seconds)});
        }
    }
    if (const RequestForwarder* forwarder = forwarder_.load(std::memory_order_acquire)) {
        const RequestForwarderStats f = forwarder->stats();
        auto add = [&](const char* name, const char* help, Kind kind, std::uint64_t value) {
            status.metrics.push_back({name, help, kind, {}, static_cast<double>(value)});
        };
        add("queen_forward_requests_total",
            "API requests sent to a replica of their tenant (hosted on other nodes)", Kind::counter,
            f.forwarded_total);
        add("queen_forward_answered_total", "Forwarded requests answered by the replica",
            Kind::counter, f.answered_total);
        add("queen_forward_failed_total",
            "Forwarded requests answered here (503 unreachable or timed out, 413, 502)",
            Kind::counter, f.failed_total);
        add("queen_forward_timed_out_total",
            "Forwarded requests the replica did not answer in time", Kind::counter,
            f.timed_out_total);
        add("queen_forward_cancelled_total", "Forwarded requests whose client left first",
            Kind::counter, f.cancelled_total);
        add("queen_forward_pending", "Forwarded requests waiting for an answer", Kind::gauge,
            f.pending);
        add("queen_forward_served_total", "Requests other nodes forwarded, served here",
            Kind::counter, f.served_total);
        add("queen_forward_serving", "Requests of other nodes open here", Kind::gauge, f.serving);
        add("queen_forward_too_large_total",
            "Answers to other nodes over the frame limit, replaced by a 502", Kind::counter,
            f.too_large_total);
    }
    if (const Cluster* cluster = cluster_.load(std::memory_order_acquire)) {
        const ClusterStats c = cluster->stats();
        auto add = [&](const char* name, const char* help, Kind kind, std::uint64_t value) {
            status.metrics.push_back({name, help, kind, {}, static_cast<double>(value)});
        };
        add("queen_cluster_bytes_sent_total", "Bytes sent to peer nodes (frames, all types)",
            Kind::counter, c.transport.bytes_sent_total);
        add("queen_cluster_bytes_received_total", "Bytes received from peer nodes", Kind::counter,
            c.transport.bytes_received_total);
        add("queen_cluster_frames_sent_total", "Frames sent to peer nodes", Kind::counter,
            c.transport.frames_sent_total);
        add("queen_cluster_frames_dropped_total",
            "Frames dropped (peer queue full or unknown peer)", Kind::counter,
            c.transport.frames_dropped_total);
        add("queen_cluster_connections_open", "Authenticated peer connections", Kind::gauge,
            c.transport.connections_open);
        add("queen_raft_messages_sent_total", "Raft messages this node sent (every tenant group)",
            Kind::counter, c.raft_messages_sent_total);
        add("queen_raft_messages_received_total",
            "Raft messages this node received (every tenant group)", Kind::counter,
            c.raft_messages_received_total);
        add("queen_raft_groups", "Tenant raft groups this node takes part in", Kind::gauge,
            c.groups);
        add("queen_raft_quiet_groups",
            "Tenant raft groups quiet on this node (idle: no heartbeats, no election timer)",
            Kind::gauge, c.quiet_groups);
        add("queen_raft_groups_woken_total",
            "Quiet groups woken because a member's node was believed gone or restarted",
            Kind::counter, c.groups_woken_total);
        add("queen_cluster_node_heartbeats_sent_total", "Node heartbeats sent to peers",
            Kind::counter, c.node_heartbeats_sent_total);
        add("queen_cluster_node_heartbeats_received_total", "Node heartbeats received from peers",
            Kind::counter, c.node_heartbeats_received_total);
        add("queen_cluster_peers_gone", "Peers believed gone (no connection, or silent)",
            Kind::gauge, c.peers_gone);
        add("queen_cluster_peers_gone_total", "Times a peer was believed gone", Kind::counter,
            c.peers_gone_total);
        add("queen_cluster_peers_restarted_total",
            "Times a peer's node heartbeat named a new incarnation (it restarted)", Kind::counter,
            c.peers_restarted_total);
    }
    return status;
}

}  // namespace queen::node::detail
