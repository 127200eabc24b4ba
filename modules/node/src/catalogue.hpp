// modules/node/src/catalogue.hpp — the cluster catalogue: which nodes are members, which tenants
// exist, and where each tenant's raft group lives.
//
// The catalogue is replicated by the default tenant's raft group (which spans every member): it
// is a system record of that tenant's state (engine::PutSystem, key catalogue_record_key), so the
// log, crash replay and snapshots carry it like any other state. It changes only through
// catalogue operations, proposed to the default tenant as entries whose command starts with
// catalogue_op_marker (a byte no engine command starts with). The default tenant's applier
// applies an operation to the catalogue it holds (apply_op(), a pure function of the two, so every
// replica computes the same catalogue) and stores the result as the record in the same LMDB txn.
//
// Placement is decided in apply_op() too: a new tenant's replicas are the members that replicate
// the fewest tenants (ties: smallest id), and its preferred leader the replica that is preferred
// leader of the fewest tenants. The node whose raft member leads a tenant hands the leadership to
// the preferred leader when it is another node (Tenant::on_tick), so leaders of different
// tenants live on different nodes; `rebalance` recomputes the preferred leaders evenly.
//
// Before the first operation (a cluster's first start) the record does not exist: the members
// are the founding members of cluster.peers and the default tenant is their group. The first
// leader of the default tenant then proposes `bootstrap` with that list, which later starts and
// joining nodes read instead of their configuration.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"

namespace queen::node::detail {

/// The tenant that exists in every cluster: it holds the catalogue and spans every member.
inline constexpr std::string_view default_tenant_name = "default";
/// The system record (engine::PutSystem key) of the default tenant that holds the catalogue.
inline constexpr std::string_view catalogue_record_key = "catalogue";
/// The first byte of a catalogue operation in an entry's command bytes (engine commands start
/// with their format version, 1 or 2).
inline constexpr std::uint8_t catalogue_op_marker = 0xC0;
/// The replication factors a tenant may have.
inline constexpr std::uint32_t replication_factors[] = {1, 3, 5};

/// One node of the cluster.
struct Member {
    NodeId id;
    std::string peer_host;  ///< numeric IP of its peer listener
    std::uint16_t peer_port = 0;
    friend bool operator==(const Member&, const Member&) = default;
};

/// One tenant and its raft group's placement.
struct TenantPlacement {
    std::string name;
    std::uint32_t replication = 1;
    /// The members that hold the tenant (its raft group's voters, once the group caught up
    /// with a change); replicas[0] is the preferred leader when is_leader_placed. Sorted after
    /// the first.
    std::vector<NodeId> replicas;
    /// The leader belongs on replicas[0] (tenants created through the API, every tenant after
    /// a rebalance); false: wherever the group elected it (the default tenant of a new cluster).
    bool is_leader_placed = false;
    /// The voters the group was created with (a node that opens the group for the first time
    /// starts from them when it is one of them; raft's log carries every change since).
    std::vector<NodeId> founders;
    /// The default tenant's log index of the operation that created it: a tenant deleted and
    /// created again under the same name is another group, and a node that kept the old one's
    /// files (it was down) throws them away.
    std::uint64_t incarnation = 0;
    std::int64_t created_ms = 0;  ///< the leader's time of the create operation
    friend bool operator==(const TenantPlacement&, const TenantPlacement&) = default;
};

/// The whole catalogue (small: it is read and written whole).
struct Catalogue {
    /// Operations applied so far (0: no record yet: founding members, default tenant only).
    std::uint64_t version = 0;
    std::vector<Member> members;           ///< sorted by id
    std::vector<TenantPlacement> tenants;  ///< sorted by name; "default" included
    friend bool operator==(const Catalogue&, const Catalogue&) = default;

    [[nodiscard]] const TenantPlacement* find(std::string_view tenant) const;
    [[nodiscard]] const Member* member(NodeId id) const;
    /// True when `node` is a replica of `tenant`.
    [[nodiscard]] bool is_replica(std::string_view tenant, NodeId node) const;
};

/// The catalogue of a cluster that has applied no operation: `founders` (this node alone for a
/// one-node cluster) and the default tenant over all of them.
[[nodiscard]] Catalogue founding_catalogue(std::vector<Member> founders);

enum class CatalogueOpType : std::uint8_t {
    bootstrap = 1,      ///< members := `members` (only when the record does not exist yet)
    create_tenant = 2,  ///< `tenant` with `replication` replicas, placed by apply_op()
    delete_tenant = 3,  ///< `tenant` (never "default")
    rebalance = 4,      ///< recompute every tenant's preferred leader evenly
    /// `members[0]` joins: a member, and a replica of the default tenant (its other tenants
    /// come with later creates and removals)
    add_member = 5,
    /// `node` leaves: each tenant it replicates gets another member in its place (the member
    /// with the fewest replicas not yet holding it); the default tenant shrinks
    remove_member = 6,
};

struct CatalogueOp {
    CatalogueOpType type = CatalogueOpType::bootstrap;
    std::vector<Member> members;    ///< bootstrap; add_member (the one member)
    std::string tenant;             ///< create_tenant, delete_tenant
    std::uint32_t replication = 0;  ///< create_tenant; 0: min(3, members) (1 alone)
    NodeId node;                    ///< remove_member
};

/// marker, version 1, type, fields (docs/cluster-protocol.md, "Catalogue operations").
[[nodiscard]] Bytes encode_op(const CatalogueOp& op);
/// Errors: Errc::corruption (not an operation, unknown version or type, truncated).
[[nodiscard]] Result<CatalogueOp> decode_op(ByteSpan bytes);
/// True when `command` (an entry's command bytes) is a catalogue operation.
[[nodiscard]] inline bool is_catalogue_op(ByteSpan command) {
    return !command.empty() && command[0] == catalogue_op_marker;
}

/// The record's bytes. decode_catalogue errors: Errc::corruption.
[[nodiscard]] Bytes encode_catalogue(const Catalogue& catalogue);
[[nodiscard]] Result<Catalogue> decode_catalogue(ByteSpan bytes);

/// `catalogue` after `op`, applied at log index `index` with the leader's time `now_ms`.
/// Deterministic: every replica computes the same. Errors (the operation changes nothing):
/// Errc::invalid_argument (a bad name or replication factor, more replicas than members; a
/// member with id 0, no address, or the address of another member; removing a member a tenant
/// cannot do without: no other member can take its place), Errc::already_exists (a tenant of
/// that name, a member with that id, a second bootstrap), Errc::not_found (no such tenant or
/// member), Errc::unsupported (deleting the default tenant, removing the last member).
[[nodiscard]] Result<Catalogue> apply_op(const Catalogue& catalogue, const CatalogueOp& op,
                                         std::uint64_t index, std::int64_t now_ms);

}  // namespace queen::node::detail
