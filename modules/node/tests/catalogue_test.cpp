// modules/node/tests/catalogue_test.cpp — the cluster catalogue: its codecs, and placement by
// apply_op() (replicas and preferred leaders spread over the members, refusals change nothing).
#include "catalogue.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "queen/testing/catch.hpp"

namespace {
using queen::Errc;
using queen::NodeId;
using namespace queen::node::detail;

std::vector<Member> members(std::uint64_t count) {
    std::vector<Member> out;
    for (std::uint64_t id = 1; id <= count; ++id) {
        out.push_back(Member{NodeId{id}, "127.0.0." + std::to_string(id), 7001});
    }
    return out;
}

CatalogueOp create(std::string name, std::uint32_t replication) {
    CatalogueOp op;
    op.type = CatalogueOpType::create_tenant;
    op.tenant = std::move(name);
    op.replication = replication;
    return op;
}

Catalogue applied(const Catalogue& catalogue, const CatalogueOp& op, std::uint64_t index = 7) {
    auto next = apply_op(catalogue, op, index, 1'000);
    REQUIRE(next.has_value());
    return *next;
}
}  // namespace

TEST_CASE("catalogue: a new cluster's catalogue is its founders and the default tenant",
          "[node][catalogue]") {
    const Catalogue catalogue = founding_catalogue({members(3)[2], members(3)[0], members(3)[1]});
    CHECK(catalogue.version == 0);
    REQUIRE(catalogue.members.size() == 3);
    CHECK(catalogue.members[0].id == NodeId{1});  // sorted
    const TenantPlacement* tenant = catalogue.find(default_tenant_name);
    REQUIRE(tenant != nullptr);
    CHECK(tenant->replicas == std::vector<NodeId>{NodeId{1}, NodeId{2}, NodeId{3}});
    CHECK(tenant->replication == 3);
    CHECK_FALSE(tenant->is_leader_placed);
    CHECK(catalogue.is_replica(default_tenant_name, NodeId{2}));
    CHECK_FALSE(catalogue.is_replica(default_tenant_name, NodeId{4}));
}

TEST_CASE("catalogue: records and operations round-trip, damaged bytes are refused",
          "[node][catalogue]") {
    Catalogue catalogue = founding_catalogue(members(5));
    catalogue = applied(catalogue, create("acme", 3), 11);
    catalogue = applied(catalogue, create("solo", 1), 12);
    const auto bytes = encode_catalogue(catalogue);
    auto decoded = decode_catalogue(bytes);
    REQUIRE(decoded.has_value());
    CHECK(*decoded == catalogue);
    for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
        auto truncated = decode_catalogue(queen::ByteSpan(bytes.data(), cut));
        REQUIRE_FALSE(truncated.has_value());
        CHECK(truncated.error().is(Errc::corruption));
    }

    CatalogueOp bootstrap;
    bootstrap.type = CatalogueOpType::bootstrap;
    bootstrap.members = members(3);
    for (const CatalogueOp& op : {bootstrap, create("acme", 5), create("x", 0)}) {
        const auto encoded = encode_op(op);
        CHECK(is_catalogue_op(encoded));
        auto back = decode_op(encoded);
        REQUIRE(back.has_value());
        CHECK(back->type == op.type);
        CHECK(back->tenant == op.tenant);
        CHECK(back->replication == op.replication);
        CHECK(back->members == op.members);
    }
    auto bad = encode_op(create("acme", 3));
    bad[2] = 99;  // unknown type
    CHECK(decode_op(bad).error().is(Errc::corruption));
}

TEST_CASE("catalogue: tenants spread their replicas and preferred leaders over the members",
          "[node][catalogue]") {
    Catalogue catalogue = founding_catalogue(members(5));
    for (int i = 0; i < 10; ++i) {
        catalogue = applied(catalogue, create("t" + std::to_string(i), 3),
                            100 + static_cast<std::uint64_t>(i));
    }
    std::map<NodeId, int> replicas;
    std::map<NodeId, int> leaders;
    for (const TenantPlacement& tenant : catalogue.tenants) {
        if (tenant.name == default_tenant_name) {
            continue;
        }
        REQUIRE(tenant.replicas.size() == 3);
        CHECK(tenant.is_leader_placed);
        leaders[tenant.replicas.front()]++;
        for (const NodeId replica : tenant.replicas) {
            replicas[replica]++;
        }
    }
    // 10 tenants x 3 replicas over 5 nodes: 6 each; 10 leaders: 2 each.
    for (std::uint64_t id = 1; id <= 5; ++id) {
        CHECK(replicas[NodeId{id}] == 6);
        CHECK(leaders[NodeId{id}] == 2);
    }
    CHECK(catalogue.version == 10);
    CHECK(catalogue.find("t3")->incarnation == 103);
    CHECK(catalogue.find("t3")->created_ms == 1'000);
}

TEST_CASE("catalogue: refused operations say why", "[node][catalogue]") {
    const Catalogue three = founding_catalogue(members(3));
    const Catalogue one = founding_catalogue(members(1));
    CHECK(apply_op(three, create("acme", 5), 1, 0).error().is(Errc::invalid_argument));
    CHECK(apply_op(three, create("acme", 2), 1, 0).error().is(Errc::invalid_argument));
    CHECK(apply_op(one, create("acme", 3), 1, 0).error().is(Errc::invalid_argument));
    CHECK(apply_op(three, create("bad name", 1), 1, 0).error().is(Errc::invalid_argument));
    CHECK(apply_op(three, create("default", 1), 1, 0).error().is(Errc::already_exists));
    const Catalogue with = applied(three, create("acme", 0));
    CHECK(with.find("acme")->replication == 3);  // 0: 3 on three nodes
    CHECK(applied(one, create("acme", 0)).find("acme")->replication == 1);
    CHECK(apply_op(with, create("acme", 1), 2, 0).error().is(Errc::already_exists));

    CatalogueOp remove;
    remove.type = CatalogueOpType::delete_tenant;
    remove.tenant = "nope";
    CHECK(apply_op(with, remove, 3, 0).error().is(Errc::not_found));
    remove.tenant = "default";
    CHECK(apply_op(with, remove, 3, 0).error().is(Errc::unsupported));
    remove.tenant = "acme";
    const Catalogue without = applied(with, remove);
    CHECK(without.find("acme") == nullptr);
    CHECK(without.version == with.version + 1);

    CatalogueOp bootstrap;
    bootstrap.type = CatalogueOpType::bootstrap;
    bootstrap.members = members(3);
    const Catalogue booted = applied(three, bootstrap);
    CHECK(booted.version == 1);
    CHECK(apply_op(booted, bootstrap, 2, 0).error().is(Errc::already_exists));
}

TEST_CASE("catalogue: rebalance evens out preferred leaders", "[node][catalogue]") {
    Catalogue catalogue = founding_catalogue(members(3));
    // Three tenants of one replica each on node... whatever placement chose; then make every
    // tenant prefer node 1 by hand, as a skewed history would.
    for (int i = 0; i < 6; ++i) {
        catalogue = applied(catalogue, create("t" + std::to_string(i), 3));
    }
    for (TenantPlacement& tenant : catalogue.tenants) {
        tenant.replicas = {NodeId{1}, NodeId{2}, NodeId{3}};
    }
    CatalogueOp rebalance;
    rebalance.type = CatalogueOpType::rebalance;
    const Catalogue balanced = applied(catalogue, rebalance);
    std::map<NodeId, int> leaders;
    for (const TenantPlacement& tenant : balanced.tenants) {
        CHECK(tenant.is_leader_placed);
        leaders[tenant.replicas.front()]++;
    }
    // 7 tenants (6 + default) over 3 nodes: 3, 2, 2.
    CHECK(leaders[NodeId{1}] + leaders[NodeId{2}] + leaders[NodeId{3}] == 7);
    for (const auto& [node, count] : leaders) {
        CHECK(count >= 2);
        CHECK(count <= 3);
    }
}

namespace {
CatalogueOp add_member(std::uint64_t id) {
    CatalogueOp op;
    op.type = CatalogueOpType::add_member;
    op.members = {Member{NodeId{id}, "127.0.0." + std::to_string(id), 7001}};
    return op;
}

CatalogueOp remove_member(std::uint64_t id) {
    CatalogueOp op;
    op.type = CatalogueOpType::remove_member;
    op.node = NodeId{id};
    return op;
}

std::size_t replicas_on(const Catalogue& catalogue, NodeId node) {
    std::size_t count = 0;
    for (const TenantPlacement& tenant : catalogue.tenants) {
        count += std::count(tenant.replicas.begin(), tenant.replicas.end(), node);
    }
    return count;
}
}  // namespace

TEST_CASE("catalogue: a member added joins the default tenant and later placements",
          "[node][catalogue]") {
    Catalogue catalogue = applied(founding_catalogue(members(3)), create("acme", 3));
    const Catalogue before = catalogue;
    catalogue = applied(catalogue, add_member(4));
    CHECK(catalogue.version == before.version + 1);
    REQUIRE(catalogue.members.size() == 4);
    CHECK(catalogue.members.back().id == NodeId{4});
    const TenantPlacement* everyone = catalogue.find(default_tenant_name);
    CHECK(everyone->replicas == std::vector<NodeId>{NodeId{1}, NodeId{2}, NodeId{3}, NodeId{4}});
    CHECK(everyone->replication == 4);
    CHECK(everyone->founders == before.find(default_tenant_name)->founders);  // unchanged
    CHECK(*catalogue.find("acme") == *before.find("acme"));  // existing tenants stay
    // The next tenant goes to the member with the fewest replicas: the new one among them.
    catalogue = applied(catalogue, create("next", 1));
    CHECK(catalogue.find("next")->replicas == std::vector<NodeId>{NodeId{4}});

    // Round trip of both operations.
    for (const CatalogueOp& op : {add_member(9), remove_member(9)}) {
        auto back = decode_op(encode_op(op));
        REQUIRE(back.has_value());
        CHECK(back->type == op.type);
        CHECK(back->members == op.members);
        CHECK(back->node == op.node);
    }
}

TEST_CASE("catalogue: a member removed is replaced in each tenant it held", "[node][catalogue]") {
    Catalogue catalogue = founding_catalogue(members(5));
    catalogue = applied(catalogue, create("a", 3));
    catalogue = applied(catalogue, create("b", 3));
    catalogue = applied(catalogue, create("c", 1));
    const NodeId leaving = catalogue.find("a")->replicas.front();  // a's preferred leader
    const Catalogue before = catalogue;
    catalogue = applied(catalogue, remove_member(leaving.value()));
    CHECK(catalogue.member(leaving) == nullptr);
    CHECK(catalogue.members.size() == 4);
    CHECK(replicas_on(catalogue, leaving) == 0);
    for (const TenantPlacement& tenant : catalogue.tenants) {
        const TenantPlacement* old = before.find(tenant.name);
        REQUIRE(old != nullptr);
        if (tenant.name == default_tenant_name) {
            CHECK(tenant.replicas.size() == 4);
            continue;
        }
        CHECK(tenant.replicas.size() == old->replicas.size());  // as many replicas as before
        CHECK(std::set<NodeId>(tenant.replicas.begin(), tenant.replicas.end()).size() ==
              tenant.replicas.size());
        for (const NodeId replica : tenant.replicas) {
            CHECK(catalogue.member(replica) != nullptr);
        }
        // The others keep their place; the preferred leader moves only when it left.
        for (const NodeId replica : old->replicas) {
            if (replica != leaving) {
                CHECK(std::count(tenant.replicas.begin(), tenant.replicas.end(), replica) == 1);
            }
        }
        if (old->replicas.front() != leaving) {
            CHECK(tenant.replicas.front() == old->replicas.front());
        }
        CHECK(std::is_sorted(tenant.replicas.begin() + 1, tenant.replicas.end()));
        CHECK(tenant.founders == old->founders);
        CHECK(tenant.incarnation == old->incarnation);
    }
}

TEST_CASE("catalogue: membership changes that cannot be made say why and change nothing",
          "[node][catalogue]") {
    Catalogue catalogue = applied(founding_catalogue(members(3)), create("wide", 3));
    auto refused = [&](const CatalogueOp& op, Errc code, const std::string& words) {
        auto next = apply_op(catalogue, op, 9, 1'000);
        REQUIRE_FALSE(next.has_value());
        CHECK(next.error().is(code));
        CHECK_THAT(next.error().message(), Catch::Matchers::Contains(words));
    };
    refused(add_member(2), Errc::already_exists, "node 2 is a member already");
    CatalogueOp same_address = add_member(4);
    same_address.members[0].peer_host = "127.0.0.1";
    refused(same_address, Errc::invalid_argument, "node 1 listens on 127.0.0.1:7001");
    CatalogueOp no_address = add_member(4);
    no_address.members[0].peer_port = 0;
    refused(no_address, Errc::invalid_argument, "peer address");
    refused(add_member(0), Errc::invalid_argument, "id above 0");
    refused(remove_member(7), Errc::not_found, "node 7 is not a member");
    // Three replicas on three nodes: none can go.
    refused(remove_member(2), Errc::invalid_argument, "tenant 'wide' has 3 replicas");
    Catalogue alone = founding_catalogue(members(1));
    auto last = apply_op(alone, remove_member(1), 9, 1'000);
    REQUIRE_FALSE(last.has_value());
    CHECK(last.error().is(Errc::unsupported));
    // With a fourth node, the removal goes through.
    catalogue = applied(catalogue, add_member(4));
    catalogue = applied(catalogue, remove_member(2));
    CHECK(catalogue.find("wide")->replicas.size() == 3);
    CHECK_FALSE(catalogue.is_replica("wide", NodeId{2}));
    CHECK(catalogue.is_replica("wide", NodeId{4}));
    // A removed founder does not come back under its old id.
    refused(add_member(2), Errc::invalid_argument, "node 2 was a member before");
}
