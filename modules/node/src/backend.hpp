// modules/node/src/backend.hpp — the node's implementation of api::Backend over its tenants.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "queen/api/backend.hpp"
#include "queen/core/clock.hpp"
#include "tenant_manager.hpp"
#include "waiters.hpp"

namespace queen::http {
class Server;
}

namespace queen::node::detail {

class RequestForwarder;
class Cluster;

/// Routes API calls to the tenants this node hosts (TenantManager).
class NodeBackend final : public api::Backend {
public:
    NodeBackend(std::uint64_t node_id, const Clock& clock, Waiters& waiters, TenantManager& tenants)
        : node_id_(node_id),
          clock_(clock),
          waiters_(waiters),
          tenants_(tenants),
          started_ms_(clock.monotonic_ns() / 1'000'000) {}

    void set_http_server(const http::Server* server) {
        http_server_.store(server, std::memory_order_release);
    }
    /// The request forwarder of a cluster node (null alone), for its metrics.
    void set_forwarder(const RequestForwarder* forwarder) {
        forwarder_.store(forwarder, std::memory_order_release);
    }
    /// The cluster layer of a cluster node (null alone), for its metrics.
    void set_cluster(const Cluster* cluster) { cluster_.store(cluster, std::memory_order_release); }

    void submit(std::string_view tenant, engine::Command command, Completion done) override;
    void when_readable(std::string_view tenant, ReadReady ready) override;
    Status read(std::string_view tenant,
                const std::function<void(const engine::Engine&)>& read) override;
    std::unique_ptr<api::WaitToken> wait_for_change(
        std::string_view tenant, std::string_view queue, std::int64_t deadline_ms,
        std::function<void(bool timed_out)> wake) override;
    std::int64_t now_ms() const override { return clock_.monotonic_ns() / 1'000'000; }
    std::int64_t wall_ms() const override { return clock_.wall_ms(); }
    api::NodeStatus node_status() const override;
    Result<api::LeaderTransfer> transfer_leadership(std::string_view tenant,
                                                    std::uint64_t target) override;
    void create_tenant(std::string_view name, std::uint32_t replication, TenantDone done) override;
    void delete_tenant(std::string_view name, std::function<void(Status)> done) override;
    Result<std::vector<api::TenantInfo>> list_tenants() override;
    void rebalance(std::function<void(Result<std::vector<api::TenantInfo>>)> done) override;
    Result<std::vector<api::MemberInfo>> list_members() override;
    void add_member(std::uint64_t id, std::string peer_host, std::uint16_t peer_port,
                    MembersDone done) override;
    void remove_member(std::uint64_t id, MembersDone done) override;

private:
    std::uint64_t node_id_;
    const Clock& clock_;
    Waiters& waiters_;
    TenantManager& tenants_;
    std::int64_t started_ms_;
    /// Set once the HTTP server runs, read by its I/O threads (status and metrics).
    std::atomic<const http::Server*> http_server_{nullptr};
    std::atomic<const RequestForwarder*> forwarder_{nullptr};
    std::atomic<const Cluster*> cluster_{nullptr};
};

}  // namespace queen::node::detail
