// modules/node/src/catalogue.cpp — the catalogue's codecs and its operations.
#include "catalogue.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "queen/api/api.hpp"
#include "queen/core/assert.hpp"

namespace queen::node::detail {
namespace {

constexpr std::uint8_t op_format_version = 1;
constexpr std::uint8_t catalogue_format_version = 1;

void write_ids(ByteWriter& writer, const std::vector<NodeId>& ids) {
    writer.varint(ids.size());
    for (const NodeId id : ids) {
        writer.varint(id.value());
    }
}

std::vector<NodeId> read_ids(ByteReader& reader) {
    const std::uint64_t count = reader.varint();
    std::vector<NodeId> ids;
    if (count > reader.remaining()) {
        reader.fail();
        return ids;
    }
    ids.reserve(count);
    for (std::uint64_t i = 0; i < count && reader.ok(); ++i) {
        ids.push_back(NodeId{reader.varint()});
    }
    return ids;
}

void write_members(ByteWriter& writer, const std::vector<Member>& members) {
    writer.varint(members.size());
    for (const Member& member : members) {
        writer.varint(member.id.value());
        writer.str(member.peer_host);
        writer.fixed<std::uint16_t>(member.peer_port);
    }
}

std::vector<Member> read_members(ByteReader& reader) {
    const std::uint64_t count = reader.varint();
    std::vector<Member> members;
    if (count > reader.remaining()) {
        reader.fail();
        return members;
    }
    for (std::uint64_t i = 0; i < count && reader.ok(); ++i) {
        Member member;
        member.id = NodeId{reader.varint()};
        member.peer_host = std::string(reader.str());
        member.peer_port = reader.fixed<std::uint16_t>();
        members.push_back(std::move(member));
    }
    return members;
}

Error corrupt(std::string_view what) {
    return Error{Errc::corruption, "catalogue: " + std::string(what)};
}

/// How many tenants each member replicates, and leads by preference.
struct Load {
    std::size_t replicas = 0;
    std::size_t preferred = 0;
};

std::map<NodeId, Load> loads(const Catalogue& catalogue) {
    std::map<NodeId, Load> load;
    for (const Member& member : catalogue.members) {
        load[member.id];
    }
    for (const TenantPlacement& tenant : catalogue.tenants) {
        for (const NodeId replica : tenant.replicas) {
            ++load[replica].replicas;
        }
        if (tenant.is_leader_placed && !tenant.replicas.empty()) {
            ++load[tenant.replicas.front()].preferred;
        }
    }
    return load;
}

/// Moves the replica that is preferred leader of the fewest tenants (ties: fewest replicas,
/// smallest id) to the front of `replicas`, and sorts the rest.
void order_replicas(std::vector<NodeId>& replicas, const std::map<NodeId, Load>& load) {
    std::sort(replicas.begin(), replicas.end());
    auto lighter = [&](NodeId a, NodeId b) {
        const auto la = load.count(a) ? load.at(a) : Load{};
        const auto lb = load.count(b) ? load.at(b) : Load{};
        if (la.preferred != lb.preferred) {
            return la.preferred < lb.preferred;
        }
        return la.replicas < lb.replicas;  // stable on ties: the smaller id stays first
    };
    auto best = std::min_element(replicas.begin(), replicas.end(), lighter);
    std::rotate(replicas.begin(), best, best + 1);
}

void sort_tenants(Catalogue& catalogue) {
    std::sort(catalogue.tenants.begin(), catalogue.tenants.end(),
              [](const TenantPlacement& a, const TenantPlacement& b) { return a.name < b.name; });
}

}  // namespace

const TenantPlacement* Catalogue::find(std::string_view tenant) const {
    for (const TenantPlacement& placement : tenants) {
        if (placement.name == tenant) {
            return &placement;
        }
    }
    return nullptr;
}

const Member* Catalogue::member(NodeId id) const {
    for (const Member& m : members) {
        if (m.id == id) {
            return &m;
        }
    }
    return nullptr;
}

bool Catalogue::is_replica(std::string_view tenant, NodeId node) const {
    const TenantPlacement* placement = find(tenant);
    return placement != nullptr && std::find(placement->replicas.begin(), placement->replicas.end(),
                                             node) != placement->replicas.end();
}

Catalogue founding_catalogue(std::vector<Member> founders) {
    Catalogue catalogue;
    std::sort(founders.begin(), founders.end(),
              [](const Member& a, const Member& b) { return a.id < b.id; });
    catalogue.members = std::move(founders);
    TenantPlacement default_tenant;
    default_tenant.name = std::string(default_tenant_name);
    for (const Member& member : catalogue.members) {
        default_tenant.replicas.push_back(member.id);
    }
    default_tenant.replication = static_cast<std::uint32_t>(default_tenant.replicas.size());
    default_tenant.founders = default_tenant.replicas;
    catalogue.tenants.push_back(std::move(default_tenant));
    return catalogue;
}

Bytes encode_op(const CatalogueOp& op) {
    Bytes out;
    ByteWriter writer(out);
    writer.u8(catalogue_op_marker);
    writer.u8(op_format_version);
    writer.u8(static_cast<std::uint8_t>(op.type));
    switch (op.type) {
        case CatalogueOpType::bootstrap: write_members(writer, op.members); break;
        case CatalogueOpType::create_tenant:
            writer.str(op.tenant);
            writer.varint(op.replication);
            break;
        case CatalogueOpType::delete_tenant: writer.str(op.tenant); break;
        case CatalogueOpType::rebalance: break;
        case CatalogueOpType::add_member: write_members(writer, op.members); break;
        case CatalogueOpType::remove_member: writer.varint(op.node.value()); break;
    }
    return out;
}

Result<CatalogueOp> decode_op(ByteSpan bytes) {
    ByteReader reader(bytes);
    if (reader.u8() != catalogue_op_marker) {
        return corrupt("not an operation");
    }
    if (const auto version = reader.u8(); version != op_format_version) {
        return corrupt("unknown operation version " + std::to_string(version));
    }
    CatalogueOp op;
    const auto type = reader.u8();
    switch (type) {
        case static_cast<std::uint8_t>(CatalogueOpType::bootstrap):
            op.type = CatalogueOpType::bootstrap;
            op.members = read_members(reader);
            break;
        case static_cast<std::uint8_t>(CatalogueOpType::create_tenant):
            op.type = CatalogueOpType::create_tenant;
            op.tenant = std::string(reader.str());
            op.replication = static_cast<std::uint32_t>(reader.varint());
            break;
        case static_cast<std::uint8_t>(CatalogueOpType::delete_tenant):
            op.type = CatalogueOpType::delete_tenant;
            op.tenant = std::string(reader.str());
            break;
        case static_cast<std::uint8_t>(CatalogueOpType::rebalance):
            op.type = CatalogueOpType::rebalance;
            break;
        case static_cast<std::uint8_t>(CatalogueOpType::add_member):
            op.type = CatalogueOpType::add_member;
            op.members = read_members(reader);
            if (reader.ok() && op.members.size() != 1) {
                return corrupt("add_member with " + std::to_string(op.members.size()) + " members");
            }
            break;
        case static_cast<std::uint8_t>(CatalogueOpType::remove_member):
            op.type = CatalogueOpType::remove_member;
            op.node = NodeId{reader.varint()};
            break;
        default: return corrupt("unknown operation type " + std::to_string(type));
    }
    if (!reader.ok() || !reader.at_end()) {
        return corrupt("truncated or trailing bytes in an operation");
    }
    return op;
}

Bytes encode_catalogue(const Catalogue& catalogue) {
    Bytes out;
    ByteWriter writer(out);
    writer.u8(catalogue_format_version);
    writer.varint(catalogue.version);
    write_members(writer, catalogue.members);
    writer.varint(catalogue.tenants.size());
    for (const TenantPlacement& tenant : catalogue.tenants) {
        writer.str(tenant.name);
        writer.varint(tenant.replication);
        write_ids(writer, tenant.replicas);
        write_ids(writer, tenant.founders);
        writer.u8(tenant.is_leader_placed ? 1 : 0);
        writer.varint(tenant.incarnation);
        writer.svarint(tenant.created_ms);
    }
    return out;
}

Result<Catalogue> decode_catalogue(ByteSpan bytes) {
    ByteReader reader(bytes);
    if (const auto version = reader.u8(); version != catalogue_format_version) {
        return corrupt("unknown record version " + std::to_string(version));
    }
    Catalogue catalogue;
    catalogue.version = reader.varint();
    catalogue.members = read_members(reader);
    const std::uint64_t count = reader.varint();
    if (count > reader.remaining()) {
        return corrupt("truncated record");
    }
    for (std::uint64_t i = 0; i < count && reader.ok(); ++i) {
        TenantPlacement tenant;
        tenant.name = std::string(reader.str());
        tenant.replication = static_cast<std::uint32_t>(reader.varint());
        tenant.replicas = read_ids(reader);
        tenant.founders = read_ids(reader);
        const auto placed = reader.u8();
        if (placed > 1) {
            return corrupt("bad is_leader_placed flag");
        }
        tenant.is_leader_placed = placed == 1;
        tenant.incarnation = reader.varint();
        tenant.created_ms = reader.svarint();
        catalogue.tenants.push_back(std::move(tenant));
    }
    if (!reader.ok() || !reader.at_end()) {
        return corrupt("truncated or trailing bytes in the record");
    }
    return catalogue;
}

namespace {
TenantPlacement& default_placement(Catalogue& catalogue) {
    for (TenantPlacement& tenant : catalogue.tenants) {
        if (tenant.name == default_tenant_name) {
            return tenant;
        }
    }
    QUEEN_ASSERT(false, "a catalogue without the default tenant");
    return catalogue.tenants.front();
}

/// Puts `replicas` back in catalogue order after a change: the preferred leader first when the
/// tenant's leader is placed (it stays, unless it left: then the lightest replica), the rest
/// sorted.
void reorder(TenantPlacement& tenant, NodeId preferred, const std::map<NodeId, Load>& load) {
    const bool kept = std::find(tenant.replicas.begin(), tenant.replicas.end(), preferred) !=
                      tenant.replicas.end();
    if (!tenant.is_leader_placed || !kept) {
        if (tenant.is_leader_placed) {
            order_replicas(tenant.replicas, load);
        } else {
            std::sort(tenant.replicas.begin(), tenant.replicas.end());
        }
        return;
    }
    std::sort(tenant.replicas.begin(), tenant.replicas.end());
    const auto at = std::find(tenant.replicas.begin(), tenant.replicas.end(), preferred);
    std::rotate(tenant.replicas.begin(), at, at + 1);
}
/// add_member and remove_member (apply_op()).
Result<Catalogue> apply_membership_op(const Catalogue& catalogue, const CatalogueOp& op) {
    Catalogue next = catalogue;
    if (op.type == CatalogueOpType::add_member) {
        QUEEN_ASSERT(op.members.size() == 1, "add_member carries one member");
        const Member& joining = op.members.front();
        if (joining.id.value() == 0 || joining.peer_host.empty() || joining.peer_port == 0) {
            return Error{Errc::invalid_argument, "a member needs an id above 0 and a peer address"};
        }
        if (catalogue.member(joining.id) != nullptr) {
            return Error{Errc::already_exists,
                         "node " + std::to_string(joining.id.value()) + " is a member already"};
        }
        // A tenant founded with this id would make the node start its group from the founding
        // membership instead of joining it (with a fresh log: it must not count as a founder).
        for (const TenantPlacement& tenant : catalogue.tenants) {
            if (std::find(tenant.founders.begin(), tenant.founders.end(), joining.id) !=
                tenant.founders.end()) {
                return Error{Errc::invalid_argument,
                             "node " + std::to_string(joining.id.value()) +
                                 " was a member before (tenant '" + tenant.name +
                                 "' was founded with it): give the node a new id"};
            }
        }
        for (const Member& member : catalogue.members) {
            if (member.peer_host == joining.peer_host && member.peer_port == joining.peer_port) {
                return Error{Errc::invalid_argument, "node " + std::to_string(member.id.value()) +
                                                         " listens on " + member.peer_host + ":" +
                                                         std::to_string(member.peer_port)};
            }
        }
        next.members.insert(
            std::upper_bound(next.members.begin(), next.members.end(), joining,
                             [](const Member& a, const Member& b) { return a.id < b.id; }),
            joining);
        TenantPlacement& everyone = default_placement(next);
        const NodeId preferred = everyone.replicas.empty() ? NodeId{} : everyone.replicas.front();
        everyone.replicas.push_back(joining.id);
        everyone.replication = static_cast<std::uint32_t>(everyone.replicas.size());
        reorder(everyone, preferred, loads(next));
    } else {
        QUEEN_ASSERT(op.type == CatalogueOpType::remove_member, "a membership operation");
        const NodeId leaving = op.node;
        const std::string leaving_text = "node " + std::to_string(leaving.value());
        if (catalogue.member(leaving) == nullptr) {
            return Error{Errc::not_found, leaving_text + " is not a member"};
        }
        if (catalogue.members.size() == 1) {
            return Error{Errc::unsupported, "the last member cannot be removed"};
        }
        next.members.erase(std::remove_if(next.members.begin(), next.members.end(),
                                          [&](const Member& m) { return m.id == leaving; }),
                           next.members.end());
        // Tenants in name order; each takes the member with the fewest replicas (ties: the
        // smallest id) that does not hold it yet, counting the replacements made so far.
        for (TenantPlacement& tenant : next.tenants) {
            const auto at = std::find(tenant.replicas.begin(), tenant.replicas.end(), leaving);
            if (at == tenant.replicas.end()) {
                continue;
            }
            const NodeId preferred = tenant.replicas.front();
            tenant.replicas.erase(at);
            if (tenant.name == default_tenant_name) {
                tenant.replication = static_cast<std::uint32_t>(tenant.replicas.size());
                reorder(tenant, preferred, loads(next));
                continue;
            }
            const auto load = loads(next);
            std::optional<NodeId> replacement;
            for (const Member& member : next.members) {
                if (std::find(tenant.replicas.begin(), tenant.replicas.end(), member.id) !=
                    tenant.replicas.end()) {
                    continue;
                }
                if (!replacement || load.at(member.id).replicas < load.at(*replacement).replicas) {
                    replacement = member.id;
                }
            }
            if (!replacement) {
                return Error{Errc::invalid_argument,
                             "tenant '" + tenant.name + "' has " +
                                 std::to_string(tenant.replication) + " replicas and without " +
                                 leaving_text + " the cluster has " +
                                 std::to_string(next.members.size()) +
                                 " nodes: add a node first, or delete the tenant"};
            }
            tenant.replicas.push_back(*replacement);
            reorder(tenant, preferred, loads(next));
        }
    }
    next.version = catalogue.version + 1;
    return next;
}
}  // namespace

Result<Catalogue> apply_op(const Catalogue& catalogue, const CatalogueOp& op, std::uint64_t index,
                           std::int64_t now_ms) {
    Catalogue next = catalogue;
    switch (op.type) {
        case CatalogueOpType::bootstrap: {
            if (catalogue.version != 0) {
                return Error{Errc::already_exists, "the catalogue was bootstrapped already"};
            }
            if (op.members.empty()) {
                return Error{Errc::invalid_argument, "bootstrap without members"};
            }
            next = founding_catalogue(op.members);
            break;
        }
        case CatalogueOpType::create_tenant: {
            if (!api::is_tenant_name(op.tenant)) {
                return Error{Errc::invalid_argument,
                             "tenant name must be 1-64 characters of [A-Za-z0-9._-]"};
            }
            if (catalogue.find(op.tenant) != nullptr) {
                return Error{Errc::already_exists, "tenant '" + op.tenant + "' exists"};
            }
            const auto members = static_cast<std::uint32_t>(catalogue.members.size());
            std::uint32_t replication = op.replication;
            if (replication == 0) {
                replication = members >= 3 ? 3 : 1;
            }
            if (std::find(std::begin(replication_factors), std::end(replication_factors),
                          replication) == std::end(replication_factors)) {
                return Error{Errc::invalid_argument, "replication must be 1, 3 or 5"};
            }
            if (replication > members) {
                return Error{Errc::invalid_argument, "replication " + std::to_string(replication) +
                                                         " needs " + std::to_string(replication) +
                                                         " nodes; the cluster has " +
                                                         std::to_string(members)};
            }
            const auto load = loads(catalogue);
            std::vector<NodeId> candidates;
            for (const Member& member : catalogue.members) {
                candidates.push_back(member.id);
            }
            std::stable_sort(candidates.begin(), candidates.end(), [&](NodeId a, NodeId b) {
                return load.at(a).replicas < load.at(b).replicas;
            });
            candidates.resize(replication);
            order_replicas(candidates, load);
            TenantPlacement tenant;
            tenant.name = op.tenant;
            tenant.replication = replication;
            tenant.replicas = candidates;
            tenant.founders = candidates;
            std::sort(tenant.founders.begin(), tenant.founders.end());
            tenant.is_leader_placed = true;
            tenant.incarnation = index;
            tenant.created_ms = now_ms;
            next.tenants.push_back(std::move(tenant));
            sort_tenants(next);
            break;
        }
        case CatalogueOpType::delete_tenant: {
            if (op.tenant == default_tenant_name) {
                return Error{Errc::unsupported, "the default tenant cannot be deleted"};
            }
            auto found =
                std::find_if(next.tenants.begin(), next.tenants.end(),
                             [&](const TenantPlacement& t) { return t.name == op.tenant; });
            if (found == next.tenants.end()) {
                return Error{Errc::not_found, "unknown tenant '" + op.tenant + "'"};
            }
            next.tenants.erase(found);
            break;
        }
        case CatalogueOpType::add_member:
        case CatalogueOpType::remove_member: return apply_membership_op(catalogue, op);
        case CatalogueOpType::rebalance: {
            // Every tenant's preferred leader again, in name order, each time the replica
            // with the fewest preferences so far.
            std::map<NodeId, Load> load = loads(next);
            for (auto& [node, counts] : load) {
                counts.preferred = 0;
            }
            for (TenantPlacement& tenant : next.tenants) {
                if (tenant.replicas.empty()) {
                    continue;
                }
                order_replicas(tenant.replicas, load);
                tenant.is_leader_placed = true;
                ++load[tenant.replicas.front()].preferred;
            }
            break;
        }
    }
    next.version = catalogue.version + 1;
    return next;
}

}  // namespace queen::node::detail
