// api/src/system_routes.cpp — push and pop maintenance modes, shared-state report
// (docs/http-api.md, admin).
#include "admin_common.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

Result<Response> get_maintenance(Context& context, const std::string& tenant, Request&,
                                 bool is_pop) {
    QUEEN_TRY(auto state,
              query(context, tenant, [](const queues::Tables& tables, const store::Txn& txn) {
                  return queues::get_maintenance(tables, txn);
              }));
    JsonWriter out;
    if (is_pop) {
        out.begin_object()
            .field("popMaintenanceMode", state.pop_enabled)
            .field("message", state.pop_enabled ? "Pop maintenance is on: pops answer 204"
                                                : "Pop maintenance is off")
            .end_object();
        return Response::json(200, out.take());
    }
    out.begin_object()
        .field("maintenanceMode", state.push_enabled)
        .field("popMaintenanceMode", state.pop_enabled)
        .field("bufferedMessages", state.buffered_messages)
        .field("bufferHealthy", true)
        .key("bufferStats")
        .begin_object()
        .field("pendingCount", state.buffered_messages)
        .field("failedCount", 0)
        .field("dbHealthy", true)
        .key("failedFiles")
        .begin_object()
        .field("count", 0)
        .field("totalBytes", 0)
        .field("totalMB", 0)
        .field("failoverCount", 0)
        .field("qos0Count", 0)
        .end_object()
        .end_object()
        .end_object();
    return Response::json(200, out.take());
}

void handle_set_maintenance(Context& context, const ContextPtr& shared, Request& request,
                            Responder responder, bool is_pop) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto body = json_or_reply(context, request, responder, tenant);
    if (!body) {
        return;
    }
    const auto enabled = body->find("enabled");
    if (enabled == body->end() || !enabled->is_boolean()) {
        responder.complete(error_response(context, 400, "enabled (boolean) is required"));
        return;
    }
    queues::SetMaintenance command;
    command.mode = is_pop ? queues::SetMaintenance::Mode::pop : queues::SetMaintenance::Mode::push;
    command.enabled = enabled->get<bool>();
    QUEEN_LOG(context.logger, Level::info, "api.maintenance",
              "tenant=" << tenant << " mode=" << (is_pop ? "pop" : "push")
                        << " enabled=" << command.enabled);
    submit_and_reply<queues::MaintenanceResult>(
        shared, tenant, command, std::move(responder), [is_pop](queues::MaintenanceResult& result) {
            JsonWriter out;
            out.begin_object();
            if (is_pop) {
                out.field("popMaintenanceMode", result.pop_enabled)
                    .field("message", result.pop_enabled
                                          ? "Pop maintenance enabled: pops answer 204"
                                          : "Pop maintenance disabled");
            } else {
                out.field("maintenanceMode", result.push_enabled)
                    .field("popMaintenanceMode", result.pop_enabled)
                    .field("bufferedMessages", result.buffered_messages)
                    .field("drainedMessages", result.drained_messages)
                    .field("bufferHealthy", true)
                    .field("message",
                           result.push_enabled
                               ? "Maintenance mode enabled: pushes are buffered durably and "
                                 "delivered when it ends"
                               : "Maintenance mode disabled: buffered pushes were delivered");
            }
            out.end_object();
            return Response::json(200, out.take());
        });
}

Result<Response> shared_state(Context&, const std::string&, Request&) {
    JsonWriter out;
    out.begin_object()
        .field("enabled", false)
        .field("reason",
               "state is replicated through the log; there is no cross-server cache to report")
        .end_object();
    return Response::json(200, out.take());
}

}  // namespace

void register_system_routes(http::Router& router, const ContextPtr& context) {
    router.get("/api/v1/system/maintenance",
               read_handler(context, [](Context& c, const std::string& tenant, Request& request) {
                   return get_maintenance(c, tenant, request, false);
               }));
    router.post("/api/v1/system/maintenance",
                make_handler(context, [](Context& c, const ContextPtr& shared, Request& request,
                                         Responder responder) {
                    handle_set_maintenance(c, shared, request, std::move(responder), false);
                }));
    router.get("/api/v1/system/maintenance/pop",
               read_handler(context, [](Context& c, const std::string& tenant, Request& request) {
                   return get_maintenance(c, tenant, request, true);
               }));
    router.post("/api/v1/system/maintenance/pop",
                make_handler(context, [](Context& c, const ContextPtr& shared, Request& request,
                                         Responder responder) {
                    handle_set_maintenance(c, shared, request, std::move(responder), true);
                }));
    router.get("/api/v1/system/shared-state", read_handler(context, shared_state));
}

}  // namespace queen::api::detail
