// api/src/tenant_routes.cpp — the cluster's tenant catalogue (docs/http-api.md, admin): list,
// create and delete tenants, spread their preferred leaders over the nodes. Node-wide routes:
// they never read the tenant header.
#include "admin_common.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

const char* const name_rule = "1-64 characters of [A-Za-z0-9._-]";

void write_tenant(JsonWriter& out, const TenantInfo& tenant) {
    out.begin_object()
        .field("name", tenant.name)
        .field("replication", tenant.replication)
        .key("replicas")
        .begin_array();
    for (const std::uint64_t id : tenant.replicas) {
        out.number(id);
    }
    out.end_array();
    if (tenant.replicas.empty()) {
        out.null_field("preferredLeader");
    } else {
        out.field("preferredLeader", tenant.replicas.front());
    }
    out.field("leaderId", tenant.leader_id).field("hosted", tenant.is_hosted);
    if (tenant.created_ms == 0) {
        out.null_field("createdAt");
    } else {
        out.field("createdAt", format_iso_ms(tenant.created_ms));
    }
    out.end_object();
}

Response tenants_response(int status, const std::vector<TenantInfo>& tenants) {
    JsonWriter out;
    out.begin_object().key("tenants").begin_array();
    for (const TenantInfo& tenant : tenants) {
        write_tenant(out, tenant);
    }
    out.end_array().end_object();
    return Response::json(status, out.take());
}

// A backend error of a catalogue change or read as a response. `name` is the tenant the
// request named ("" for the whole catalogue).
Response tenant_error(Context& context, const Error& error, std::string_view name) {
    if (name.empty()) {
        return catalogue_error(context, error, whole_catalogue());
    }
    const std::string quoted = "'" + std::string(name) + "'";
    return catalogue_error(
        context, error,
        {"tenant " + quoted + " exists already", "unknown tenant " + quoted, quoted});
}

// GET /api/v1/system/tenants: the catalogue as this node applied it, once the node's state
// holds every change answered before (a tenant just created is listed).
void handle_list(Context&, const ContextPtr& shared, Request&, Responder responder) {
    when_readable(shared, std::string(catalogue_tenant), responder, [shared, responder] {
        auto tenants = shared->backend.list_tenants();
        if (!tenants) {
            responder.complete(tenant_error(*shared, tenants.error(), ""));
            return;
        }
        responder.complete(tenants_response(200, *tenants));
    });
}

// POST /api/v1/system/tenants {"name": string, "replication": 1|3|5 (optional)}: 201 with the
// tenant once it is created (and open here when this node is one of its replicas).
void handle_create(Context& context, const ContextPtr& shared, Request& request,
                   Responder responder) {
    auto body = json_or_reply(context, request, responder, std::string(catalogue_tenant));
    if (!body) {
        return;
    }
    for (const auto& [key, value] : body->items()) {
        if (key != "name" && key != "replication") {
            responder.complete(error_response(
                context, 400, "unknown field '" + key + "' (the body takes name and replication)"));
            return;
        }
    }
    const auto name_field = body->find("name");
    if (name_field == body->end() || !name_field->is_string()) {
        responder.complete(error_response(
            context, 400,
            std::string("name (the tenant's name, a string of ") + name_rule + ") is required"));
        return;
    }
    const std::string name = name_field->get<std::string>();
    if (!is_tenant_name(name)) {
        responder.complete(error_response(context, 400, std::string("name must be ") + name_rule));
        return;
    }
    std::uint32_t replication = 0;  // the cluster's choice (3 with at least 3 nodes, else 1)
    if (const auto field = body->find("replication"); field != body->end() && !field->is_null()) {
        const std::uint64_t value = field->is_number_unsigned() ? field->get<std::uint64_t>() : 0;
        if (value != 1 && value != 3 && value != 5) {
            responder.complete(error_response(context, 400, "replication must be 1, 3 or 5"));
            return;
        }
        replication = static_cast<std::uint32_t>(value);
    }
    QUEEN_LOG(context.logger, Level::info, "api.tenant_create",
              "tenant=" << name << " replication=" << replication);
    context.backend.create_tenant(
        name, replication, [shared, responder, name](Result<TenantInfo> created) {
            if (!created) {
                responder.complete(tenant_error(*shared, created.error(), name));
                return;
            }
            responder.complete_with([tenant = std::move(*created)] {
                JsonWriter out;
                write_tenant(out, tenant);
                return Response::json(201, out.take());
            });
        });
}

// DELETE /api/v1/system/tenants/:name: the tenant and all its data, on every node.
void handle_delete(Context& context, const ContextPtr& shared, Request& request,
                   Responder responder) {
    const std::string name = param(request, "name");
    if (!is_tenant_name(name)) {
        responder.complete(
            error_response(context, 400, std::string("the tenant name must be ") + name_rule));
        return;
    }
    if (name == catalogue_tenant) {
        responder.complete(error_response(context, 400, "the default tenant cannot be deleted"));
        return;
    }
    QUEEN_LOG(context.logger, Level::info, "api.tenant_delete", "tenant=" << name);
    context.backend.delete_tenant(name, [shared, responder, name](Status deleted) {
        if (!deleted) {
            responder.complete(tenant_error(*shared, deleted.error(), name));
            return;
        }
        JsonWriter out;
        out.begin_object().field("deleted", name).end_object();
        responder.complete(Response::json(200, out.take()));
    });
}

// POST /api/v1/system/cluster/rebalance (no body, or {}): spreads the preferred leaders of the
// tenants over the nodes; answers the new placement.
void handle_rebalance(Context& context, const ContextPtr& shared, Request& request,
                      Responder responder) {
    const bool is_blank = request.body.find_first_not_of(" \t\r\n") == std::string::npos;
    if (!is_blank) {
        auto body = json_or_reply(context, request, responder, std::string(catalogue_tenant));
        if (!body) {
            return;
        }
        if (!body->empty()) {
            responder.complete(error_response(
                context, 400, "the rebalance body takes no fields: send none, or {}"));
            return;
        }
    }
    QUEEN_LOG(context.logger, Level::info, "api.rebalance", "asked");
    context.backend.rebalance([shared, responder](Result<std::vector<TenantInfo>> placed) {
        if (!placed) {
            responder.complete(tenant_error(*shared, placed.error(), ""));
            return;
        }
        responder.complete_with(
            [tenants = std::move(*placed)] { return tenants_response(200, tenants); });
    });
}

}  // namespace

void register_tenant_routes(http::Router& router, const ContextPtr& context) {
    router.get("/api/v1/system/tenants", make_handler(context, handle_list));
    router.post("/api/v1/system/tenants", make_handler(context, handle_create));
    router.del("/api/v1/system/tenants/:name", make_handler(context, handle_delete));
    router.post("/api/v1/system/cluster/rebalance", make_handler(context, handle_rebalance));
}

}  // namespace queen::api::detail
