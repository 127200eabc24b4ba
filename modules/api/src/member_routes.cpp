// api/src/member_routes.cpp — the members of the cluster (docs/http-api.md, admin): list them,
// add a node, remove one, through the catalogue the default tenant's raft group holds.
// Node-wide routes: they never read the tenant header.
#include <charconv>

#include "admin_common.hpp"
#include "queen/http/address.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

const char* const address_rule =
    "<ip>:<port>, the new node's peer listener: a numeric IPv4 or IPv6 address (no brackets, "
    "as in cluster.peers) and a port in 1..65535";

// A member's peer listener.
struct PeerAddress {
    std::string host;
    std::uint16_t port = 0;
};

// "<ip>:<port>" by the rules of an entry of cluster.peers (without its "<id>@"): the host is
// everything before the last ':', the port 1..65535 in decimal. The host must moreover be a
// numeric IP address, as the peer transport needs.
std::optional<PeerAddress> parse_peer_address(std::string_view text) {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
        return std::nullopt;
    }
    const std::string_view port_text = text.substr(colon + 1);
    std::uint32_t port = 0;
    const auto [stop, error] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (port_text.empty() || port_text.size() > 5 || error != std::errc() ||
        stop != port_text.data() + port_text.size() || port == 0 || port > 65535) {
        return std::nullopt;
    }
    PeerAddress address{std::string(text.substr(0, colon)), static_cast<std::uint16_t>(port)};
    if (!http::is_numeric_address(address.host)) {
        return std::nullopt;
    }
    return address;
}

// A node id of the path: a positive decimal integer.
std::optional<std::uint64_t> parse_node_id(std::string_view text) {
    std::uint64_t id = 0;
    const auto [stop, error] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (text.empty() || error != std::errc() || stop != text.data() + text.size() || id == 0) {
        return std::nullopt;
    }
    return id;
}

CatalogueSubject node_subject(std::uint64_t id) {
    const std::string node = "node " + std::to_string(id);
    return {node + " is a member already", node + " is not a member", node};
}

Response members_response(int status, const std::vector<MemberInfo>& members) {
    JsonWriter out;
    out.begin_object().key("members").begin_array();
    for (const MemberInfo& member : members) {
        out.begin_object().field("id", member.id);
        // A node that runs alone has no peer listener.
        if (member.peer_host.empty()) {
            out.null_field("peerAddress");
        } else {
            out.field("peerAddress", member.peer_host + ":" + std::to_string(member.peer_port));
        }
        out.field("self", member.is_self)
            .field("connected", member.is_connected)
            .field("tenants", member.tenants)
            .end_object();
    }
    out.end_array().end_object();
    return Response::json(status, out.take());
}

// The answer of an add or a remove: `status` with the members, or the error.
Backend::MembersDone reply_members(const ContextPtr& shared, const Responder& responder, int status,
                                   std::uint64_t id) {
    return [shared, responder, status, id](Result<std::vector<MemberInfo>> members) {
        if (!members) {
            responder.complete(catalogue_error(*shared, members.error(), node_subject(id)));
            return;
        }
        responder.complete_with(
            [status, members = std::move(*members)] { return members_response(status, members); });
    };
}

// GET /api/v1/system/cluster/members: the members as this node applied them, once the node's
// state holds every change answered before (a node just added is listed).
void handle_list(Context&, const ContextPtr& shared, Request&, Responder responder) {
    when_readable(shared, std::string(catalogue_tenant), responder, [shared, responder] {
        auto members = shared->backend.list_members();
        if (!members) {
            responder.complete(catalogue_error(*shared, members.error(), whole_catalogue()));
            return;
        }
        responder.complete(members_response(200, *members));
    });
}

// POST /api/v1/system/cluster/members {"id": positive integer, "address": "<ip>:<port>"}: 201
// with the members once the node is one of them here.
void handle_add(Context& context, const ContextPtr& shared, Request& request, Responder responder) {
    auto body = json_or_reply(context, request, responder, std::string(catalogue_tenant));
    if (!body) {
        return;
    }
    for (const auto& [key, value] : body->items()) {
        if (key != "id" && key != "address") {
            responder.complete(error_response(
                context, 400, "unknown field '" + key + "' (the body takes id and address)"));
            return;
        }
    }
    const auto id_field = body->find("id");
    if (id_field == body->end() || !id_field->is_number_unsigned() ||
        id_field->get<std::uint64_t>() == 0) {
        responder.complete(error_response(
            context, 400, "id (the new node's node.id, a positive integer) is required"));
        return;
    }
    const auto id = id_field->get<std::uint64_t>();
    const auto address_field = body->find("address");
    if (address_field == body->end() || !address_field->is_string()) {
        responder.complete(error_response(
            context, 400, std::string("address (a string: ") + address_rule + ") is required"));
        return;
    }
    const auto& address_text = address_field->get_ref<const std::string&>();
    auto address = parse_peer_address(address_text);
    if (!address) {
        responder.complete(error_response(
            context, 400, "address '" + address_text + "' is not " + std::string(address_rule)));
        return;
    }
    QUEEN_LOG(context.logger, Level::info, "api.member_add",
              "node=" << id << " address=" << address->host << ":" << address->port);
    context.backend.add_member(id, std::move(address->host), address->port,
                               reply_members(shared, responder, 201, id));
}

// DELETE /api/v1/system/cluster/members/:id: the node leaves the cluster (its tenants move to
// other members first); 200 with the members after.
void handle_remove(Context& context, const ContextPtr& shared, Request& request,
                   Responder responder) {
    const auto id = parse_node_id(param(request, "id"));
    if (!id) {
        responder.complete(error_response(context, 400, "the node id must be a positive integer"));
        return;
    }
    QUEEN_LOG(context.logger, Level::info, "api.member_remove", "node=" << *id);
    context.backend.remove_member(*id, reply_members(shared, responder, 200, *id));
}

}  // namespace

void register_member_routes(http::Router& router, const ContextPtr& context) {
    router.get("/api/v1/system/cluster/members", make_handler(context, handle_list));
    router.post("/api/v1/system/cluster/members", make_handler(context, handle_add));
    router.del("/api/v1/system/cluster/members/:id", make_handler(context, handle_remove));
}

}  // namespace queen::api::detail
