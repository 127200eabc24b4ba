// api/src/api.cpp — register_routes(): builds the shared context and every route group.
#include "queen/api/api.hpp"

#include "routes.hpp"

namespace queen::api {

namespace detail {

http::Handler make_handler(const ContextPtr& context, ApiHandler handler) {
    return
        [context, handler = std::move(handler)](http::Request& request, http::Responder responder) {
            context->metrics.requests.fetch_add(1, std::memory_order_relaxed);
            context->metrics.request_rate.add(context->backend.wall_ms(), 1);
            handler(*context, context, request, std::move(responder));
        };
}

bool resolve_tenant(Context& context, const http::Request& request,
                    const http::Responder& responder, std::string& tenant) {
    auto resolved = tenant_of(context, request);
    if (!resolved) {
        responder.complete(error_response(context, 400, resolved.error().context));
        return false;
    }
    tenant = std::move(*resolved);
    return true;
}

}  // namespace detail

void register_routes(http::Router& router, Backend& backend, const ApiOptions& options,
                     Logger& logger, RandomSource& random) {
    const Status valid = options.validate();
    QUEEN_ASSERT(valid.has_value(), "register_routes: invalid ApiOptions: ",
                 valid.has_value() ? std::string() : valid.error().message());
    auto context = std::make_shared<detail::Context>(backend, options, logger, random);
    detail::register_data_routes(router, context);
    detail::register_pop_routes(router, context);
    detail::register_resource_routes(router, context);
    detail::register_message_routes(router, context);
    detail::register_status_routes(router, context);
    detail::register_group_routes(router, context);
    detail::register_system_routes(router, context);
    detail::register_cluster_routes(router, context);
    detail::register_tenant_routes(router, context);
    detail::register_member_routes(router, context);
    detail::register_state_routes(router, context);
    detail::register_streams_routes(router, context);
    detail::register_streams_admin_routes(router, context);
    detail::register_health_routes(router, context);
}

void register_routes(http::Router& router, Backend& backend, const ApiOptions& options,
                     Logger& logger) {
    register_routes(router, backend, options, logger, system_random());
}

}  // namespace queen::api
