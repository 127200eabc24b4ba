// api/src/access.cpp — the role each route needs, and the bearer-token check in front of them.
#include <string>
#include <utility>

#include "queen/api/api.hpp"
#include "queen/core/logger.hpp"

namespace queen::api {

namespace {

using auth::Role;
using http::Method;

}  // namespace

std::optional<Access> required_access(Method method, std::string_view path) {
    if (method == Method::get && (path == "/health" || path == "/ready" || path == "/metrics" ||
                                  path == "/metrics/prometheus")) {
        return std::nullopt;
    }
    if (path.starts_with("/api/v1/system/cluster/") || path == "/api/v1/system/tenants" ||
        path.starts_with("/api/v1/system/tenants/") || path == "/api/v1/system/shared-state") {
        return Access{Role::admin, true};
    }
    const bool is_change = method != Method::get && method != Method::head;
    const bool is_admin = path.starts_with("/api/v1/system/") || path == "/api/v1/configure" ||
                          path == "/api/v1/stats/refresh" ||
                          (is_change && (path.starts_with("/api/v1/consumer-groups/") ||
                                         path.starts_with("/api/v1/resources/queues/") ||
                                         path.starts_with("/api/v1/streams/queries/")));
    if (is_admin) {
        return Access{Role::admin, false};
    }
    if (path == "/streams/v1/state/get") {
        return Access{Role::read, false};
    }
    if (path.starts_with("/api/v1/pop")) {
        return Access{Role::write, false};  // a pop leases messages
    }
    return Access{is_change ? Role::write : Role::read, false};
}

http::Handler with_authentication(http::Handler handler,
                                  std::shared_ptr<auth::ReloadableAuthenticator> authenticator,
                                  const ApiOptions& options, Logger& logger,
                                  std::function<std::int64_t()> now_s) {
    return [handler = std::move(handler), authenticator = std::move(authenticator),
            tenant_header = options.tenant_header, default_tenant = options.default_tenant, &logger,
            now_s = std::move(now_s)](http::Request& request, http::Responder responder) {
        // The path the router matches: decoded segments, empty ones dropped (the raw path could
        // spell "/api/v1/%73ystem/..." or "//api/v1/system" past the prefix rules).
        std::string path;
        for (const std::string& segment : request.segments) {
            path += '/';
            path += segment;
        }
        if (path.empty()) {
            path = "/";
        }
        const std::optional<Access> access = required_access(request.method, path);
        if (!access) {
            handler(request, std::move(responder));
            return;
        }
        const auto grant = authenticator->current()->authenticate(
            request.header("Authorization").value_or(""), now_s());
        if (!grant) {
            QUEEN_LOG(logger, Level::debug, "api.unauthenticated",
                      "peer=" << request.peer_address << " path=" << request.path
                              << " reason=" << grant.error().context);
            http::Response response = http::Response::error(401, grant.error().context);
            response.headers.push_back(http::Header{"WWW-Authenticate", "Bearer"});
            responder.complete(std::move(response));
            return;
        }
        const std::string_view tenant =
            access->is_cluster_wide ? std::string_view("*")
                                    : request.header(tenant_header).value_or(default_tenant);
        if (!grant->allows(tenant, access->role)) {
            QUEEN_LOG(
                logger, Level::debug, "api.forbidden",
                "peer=" << request.peer_address << " path=" << request.path
                        << " subject=" << grant->subject << " role=" << auth::role_name(grant->role)
                        << " needs=" << auth::role_name(access->role) << " tenant=" << tenant);
            responder.complete(http::Response::error(403, "Insufficient permissions"));
            return;
        }
        request.auth_subject = grant->subject;
        handler(request, std::move(responder));
    };
}

}  // namespace queen::api
