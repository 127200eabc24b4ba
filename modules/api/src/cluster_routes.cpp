// api/src/cluster_routes.cpp — cluster administration (docs/http-api.md, admin): moving a
// tenant's raft leadership to another node.
#include "admin_common.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

// POST /api/v1/system/cluster/transfer-leader {"tenant": name (optional), "to": node id}.
// The tenant is the body's, else the tenant header's, else the default tenant. Answers 202
// once the transfer was asked for (the caller watches /health for the new leader), 200 when
// the node leads already.
void handle_transfer_leader(Context& context, const ContextPtr&, Request& request,
                            Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto body = json_or_reply(context, request, responder, tenant);
    if (!body) {
        return;
    }
    if (const auto named = body->find("tenant"); named != body->end() && !named->is_null()) {
        if (!named->is_string() || !is_tenant_name(named->get_ref<const std::string&>())) {
            responder.complete(error_response(
                context, 400, "tenant must be a string of 1-64 characters of [A-Za-z0-9._-]"));
            return;
        }
        const auto& name = named->get_ref<const std::string&>();
        const auto header = request.header(context.options.tenant_header);
        if (header.has_value() && !header->empty() && *header != name) {
            responder.complete(error_response(context, 400,
                                              "the body names tenant '" + name + "' but the " +
                                                  context.options.tenant_header + " header '" +
                                                  std::string(*header) + "'"));
            return;
        }
        tenant = name;
    }
    const auto to = body->find("to");
    if (to == body->end() || !to->is_number_unsigned() || to->get<std::uint64_t>() == 0) {
        responder.complete(error_response(
            context, 400, "to (the id of the node to lead, a positive integer) is required"));
        return;
    }
    const auto target = to->get<std::uint64_t>();
    auto transfer = context.backend.transfer_leadership(tenant, target);
    if (!transfer) {
        const Error& error = transfer.error();
        if (error.is(Errc::invalid_argument)) {
            responder.complete(error_response(context, 409, error.context));
        } else if (error.is(Errc::not_leader)) {
            responder.complete(retry_soon(error_response(context, 503, error.context + "; retry")));
        } else if (error.is(Errc::unsupported)) {
            responder.complete(error_response(context, 501, error.context));
        } else {
            responder.complete(error_response(context, error, tenant));
        }
        return;
    }
    QUEEN_LOG(context.logger, Level::info, "api.transfer_leader",
              "tenant=" << tenant << " to=" << target << " leader=" << transfer->leader_id
                        << " term=" << transfer->term << " started=" << transfer->is_started);
    JsonWriter out;
    out.begin_object()
        .field("tenant", tenant)
        .field("to", target)
        .field("leaderId", transfer->leader_id)
        .field("term", transfer->term)
        .field("transferring", transfer->is_started)
        .field("message", transfer->is_started
                              ? "transfer asked for: watch /health for the new leaderId"
                              : "node " + std::to_string(target) + " leads already")
        .end_object();
    responder.complete(Response::json(transfer->is_started ? 202 : 200, out.take()));
}

}  // namespace

void register_cluster_routes(http::Router& router, const ContextPtr& context) {
    router.post("/api/v1/system/cluster/transfer-leader",
                make_handler(context, handle_transfer_leader));
}

}  // namespace queen::api::detail
