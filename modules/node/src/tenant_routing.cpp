// modules/node/src/tenant_routing.cpp — see tenant_routing.hpp.
#include "tenant_routing.hpp"

#include <algorithm>
#include <utility>

#include "cluster.hpp"
#include "queen/api/api.hpp"
#include "request_forward.hpp"
#include "tenant_manager.hpp"

namespace queen::node::detail {

std::optional<ForwardTarget> forward_target(
    const http::Request& request, NodeId self, const TenantRoutingOptions& options,
    const std::function<bool(const std::string&)>& is_hosted,
    const std::function<std::optional<TenantPlacement>(const std::string&)>& placement_of,
    const std::function<bool(NodeId)>& is_connected) {
    if (request.path.rfind("/api/", 0) != 0 || request.header(forwarded_from_header).has_value()) {
        return std::nullopt;
    }
    std::string tenant = options.default_tenant;
    if (const auto header = request.header(options.tenant_header);
        header.has_value() && !header->empty()) {
        if (!api::is_tenant_name(*header)) {
            return std::nullopt;
        }
        tenant = std::string(*header);
    }
    if (is_hosted(tenant)) {
        return std::nullopt;
    }
    const std::optional<TenantPlacement> placement = placement_of(tenant);
    if (!placement || placement->replicas.empty()) {
        return std::nullopt;
    }
    const auto& replicas = placement->replicas;
    if (std::find(replicas.begin(), replicas.end(), self) != replicas.end()) {
        return std::nullopt;
    }
    ForwardTarget target;
    target.node = replicas.front();
    for (const NodeId replica : replicas) {
        if (is_connected(replica)) {
            target.node = replica;
            break;
        }
    }
    std::int64_t timeout_ms = options.forward_timeout_ms;
    if (request.query_bool("wait", false)) {
        const std::int64_t wait = request.query_int("timeout", options.pop_timeout_ms_default);
        timeout_ms += std::clamp<std::int64_t>(wait, 0, options.pop_timeout_ms_max);
    }
    target.timeout = std::chrono::milliseconds(timeout_ms);
    return target;
}

http::Handler route_by_tenant(http::Handler local, const TenantManager& tenants,
                              const Cluster& cluster, std::shared_ptr<RequestForwarder> forwarder,
                              TenantRoutingOptions options) {
    return [local = std::move(local), &tenants, &cluster, forwarder = std::move(forwarder),
            options = std::move(options)](http::Request& request, http::Responder responder) {
        const auto target = forward_target(
            request, cluster.self(), options,
            [&](const std::string& tenant) { return tenants.find(tenant) != nullptr; },
            [&](const std::string& tenant) { return tenants.placement(tenant); },
            [&](NodeId peer) { return cluster.is_connected(peer); });
        if (!target) {
            local(request, std::move(responder));
            return;
        }
        forwarder->forward(target->node, request, std::move(responder), target->timeout);
    };
}

}  // namespace queen::node::detail
