// api/tests/auth_routes_test.cpp — bearer tokens in front of every route: no token, a bad token,
// a token of a lower role and one of another tenant are refused (401/403) before anything is
// submitted; the role that suffices gets through; the route table's classes.
#include <sys/stat.h>

#include <fstream>

#include "harness.hpp"

namespace queen::api::testing {
namespace {

using auth::Role;
using http::Method;

struct Route {
    Method method;
    const char* path;  ///< a concrete path of the route
};

/// Every route register_routes() adds (the list of docs/security.md, "Roles per route").
const std::vector<Route> routes = {
    {Method::post, "/api/v1/ack"},
    {Method::post, "/api/v1/ack/batch"},
    {Method::get, "/api/v1/analytics/queue-lag"},
    {Method::get, "/api/v1/analytics/queue-ops"},
    {Method::get, "/api/v1/analytics/queue-parked-replicas"},
    {Method::get, "/api/v1/analytics/retention"},
    {Method::get, "/api/v1/analytics/system-metrics"},
    {Method::get, "/api/v1/analytics/worker-metrics"},
    {Method::post, "/api/v1/configure"},
    {Method::get, "/api/v1/consumer-groups"},
    {Method::delete_, "/api/v1/consumer-groups/g"},
    {Method::get, "/api/v1/consumer-groups/g"},
    {Method::delete_, "/api/v1/consumer-groups/g/queues/q"},
    {Method::post, "/api/v1/consumer-groups/g/queues/q/partitions/p/seek"},
    {Method::post, "/api/v1/consumer-groups/g/queues/q/seek"},
    {Method::post, "/api/v1/consumer-groups/g/subscription"},
    {Method::get, "/api/v1/consumer-groups/lagging"},
    {Method::get, "/api/v1/dlq"},
    {Method::get, "/api/v1/kv"},
    {Method::get, "/api/v1/kv/b"},
    {Method::delete_, "/api/v1/kv/b/k"},
    {Method::get, "/api/v1/kv/b/k"},
    {Method::put, "/api/v1/kv/b/k"},
    {Method::post, "/api/v1/lease/00000000-0000-7000-8000-000000000001/extend"},
    {Method::get, "/api/v1/locks"},
    {Method::get, "/api/v1/locks/l"},
    {Method::post, "/api/v1/locks/l/acquire"},
    {Method::post, "/api/v1/locks/l/release"},
    {Method::post, "/api/v1/locks/l/renew"},
    {Method::get, "/api/v1/messages"},
    {Method::delete_, "/api/v1/messages/00000000-0000-8000-8000-000000000001/t"},
    {Method::get, "/api/v1/messages/00000000-0000-8000-8000-000000000001/t"},
    {Method::get, "/api/v1/pop?namespace=n&wait=false"},
    {Method::get, "/api/v1/pop/queue/q?wait=false"},
    {Method::get, "/api/v1/pop/queue/q/partition/p?wait=false"},
    {Method::post, "/api/v1/push"},
    {Method::post, "/api/v1/request"},
    {Method::get, "/api/v1/resources/namespaces"},
    {Method::get, "/api/v1/resources/overview"},
    {Method::get, "/api/v1/resources/queues"},
    {Method::delete_, "/api/v1/resources/queues/q"},
    {Method::get, "/api/v1/resources/queues/q"},
    {Method::get, "/api/v1/resources/tasks"},
    {Method::post, "/api/v1/stats/refresh"},
    {Method::get, "/api/v1/status"},
    {Method::get, "/api/v1/status/analytics"},
    {Method::get, "/api/v1/status/buffers"},
    {Method::get, "/api/v1/status/queues"},
    {Method::get, "/api/v1/status/queues/q"},
    {Method::get, "/api/v1/status/queues/q/messages"},
    {Method::get, "/api/v1/streams/queries"},
    {Method::delete_, "/api/v1/streams/queries/s"},
    {Method::get, "/api/v1/streams/queries/s"},
    {Method::post, "/api/v1/streams/queries/s/reset"},
    {Method::get, "/api/v1/system/cluster/members"},
    {Method::post, "/api/v1/system/cluster/members"},
    {Method::delete_, "/api/v1/system/cluster/members/9"},
    {Method::post, "/api/v1/system/cluster/rebalance"},
    {Method::post, "/api/v1/system/cluster/transfer-leader"},
    {Method::get, "/api/v1/system/maintenance"},
    {Method::post, "/api/v1/system/maintenance"},
    {Method::get, "/api/v1/system/maintenance/pop"},
    {Method::post, "/api/v1/system/maintenance/pop"},
    {Method::get, "/api/v1/system/shared-state"},
    {Method::get, "/api/v1/system/tenants"},
    {Method::post, "/api/v1/system/tenants"},
    {Method::delete_, "/api/v1/system/tenants/acme"},
    {Method::get, "/api/v1/timers"},
    {Method::post, "/api/v1/timers"},
    {Method::delete_, "/api/v1/timers/t"},
    {Method::get, "/api/v1/timers/t"},
    {Method::post, "/api/v1/traces"},
    {Method::get, "/api/v1/traces/00000000-0000-8000-8000-000000000001/t"},
    {Method::get, "/api/v1/traces/by-name/n"},
    {Method::get, "/api/v1/traces/names"},
    {Method::post, "/api/v1/transaction"},
    {Method::get, "/health"},
    {Method::get, "/metrics"},
    {Method::get, "/metrics/prometheus"},
    {Method::get, "/ready"},
    {Method::post, "/streams/v1/cycle"},
    {Method::post, "/streams/v1/queries"},
    {Method::post, "/streams/v1/state/get"},
};

/// One token per kind of caller, from a tokens file.
struct Tokens {
    static constexpr const char* reader = "tok-reader-0123456789";
    static constexpr const char* writer = "tok-writer-0123456789";
    static constexpr const char* admin = "tok-admin-01234567890";
    static constexpr const char* elsewhere = "tok-elsewhere-0123456";  // admin of tenant "other"
    static constexpr const char* root = "tok-root-012345678901";       // admin of every tenant

    static std::shared_ptr<auth::ReloadableAuthenticator> load(const std::filesystem::path& dir) {
        const auto path = dir / "tokens";
        std::ofstream(path) << "reader read default " << reader << "\n"
                            << "writer write default " << writer << "\n"
                            << "admin admin default " << admin << "\n"
                            << "elsewhere admin other " << elsewhere << "\n"
                            << "root admin * " << root << "\n";
        ::chmod(path.c_str(), 0600);
        auth::Options options;
        options.is_enabled = true;
        options.tokens_file = path;
        auto loaded = auth::ReloadableAuthenticator::load(options);
        REQUIRE(loaded.has_value());
        return *loaded;
    }
};

Reply call(Harness& h, const Route& route, const char* token) {
    std::vector<http::Header> headers;
    if (token != nullptr) {
        headers.push_back({"Authorization", std::string("Bearer ") + token});
    }
    auto pending = h.start(route.method, route.path, "{}", std::move(headers));
    // A parked request (a long poll, a lock wait) got through; it is answered later.
    return pending.reply->is_done ? *pending.reply : Reply{};
}

bool has_header(const Reply& reply, std::string_view name) {
    return std::any_of(reply.headers.begin(), reply.headers.end(),
                       [&](const http::Header& h) { return h.name == name; });
}

bool is_refused(const Reply& reply) {
    return reply.status == 401 || reply.status == 403;
}

TEST_CASE("api: the route table's classes", "[api][auth]") {
    CHECK_FALSE(required_access(Method::get, "/health").has_value());
    CHECK_FALSE(required_access(Method::get, "/metrics/prometheus").has_value());
    CHECK(required_access(Method::post, "/health")->role == Role::write);  // only GET is public
    CHECK(required_access(Method::get, "/api/v1/resources/queues")->role == Role::read);
    CHECK(required_access(Method::post, "/api/v1/push")->role == Role::write);
    CHECK(required_access(Method::get, "/api/v1/pop/queue/q")->role == Role::write);
    CHECK(required_access(Method::post, "/streams/v1/state/get")->role == Role::read);
    CHECK(required_access(Method::post, "/api/v1/configure")->role == Role::admin);
    CHECK(required_access(Method::post, "/api/v1/consumer-groups/g/queues/q/seek")->role ==
          Role::admin);
    CHECK(required_access(Method::get, "/api/v1/consumer-groups/g")->role == Role::read);
    CHECK(required_access(Method::get, "/api/v1/system/maintenance")->role == Role::admin);
    CHECK_FALSE(required_access(Method::get, "/api/v1/system/maintenance")->is_cluster_wide);
    CHECK(required_access(Method::post, "/api/v1/system/tenants")->is_cluster_wide);
    CHECK(required_access(Method::get, "/api/v1/system/cluster/members")->is_cluster_wide);
    CHECK(required_access(Method::post, "/api/v1/some/future/route")->role == Role::write);
}

TEST_CASE("api: every route refuses a missing, bad, weaker or foreign token and submits nothing",
          "[api][auth]") {
    Harness h;
    h.push("q", "p", {nlohmann::json(1)});
    const auto authenticator = Tokens::load(h.dir.path());
    ApiOptions options;
    h.front = with_authentication(
        [&h](http::Request& request, http::Responder responder) {
            h.router.handle(request, responder);
        },
        authenticator, options, NullLogger::instance(), [] { return std::int64_t{1'800'000'000}; });
    const auto submitted = h.backend.submitted();
    std::size_t public_routes = 0;
    for (const Route& route : routes) {
        INFO(http::method_name(route.method) << " " << route.path);
        const auto access = required_access(
            route.method,
            std::string_view(route.path).substr(0, std::string_view(route.path).find('?')));
        if (!access) {
            ++public_routes;
            CHECK_FALSE(is_refused(call(h, route, nullptr)));
            continue;
        }
        const Reply none = call(h, route, nullptr);
        CHECK(none.status == 401);
        CHECK(none.json()["error"] == "Authentication required");
        CHECK(has_header(none, "WWW-Authenticate"));
        const Reply bad = call(h, route, "tok-nobody-0123456789");
        CHECK(bad.status == 401);
        CHECK(bad.json()["error"] == "Invalid token");
        const Reply foreign = call(h, route, Tokens::elsewhere);
        CHECK(foreign.status == 403);
        CHECK(foreign.json()["error"] == "Insufficient permissions");
        if (access->role >= Role::write) {
            CHECK(call(h, route, Tokens::reader).status == 403);
        }
        if (access->role == Role::admin) {
            CHECK(call(h, route, Tokens::writer).status == 403);
        }
        if (access->is_cluster_wide) {
            CHECK(call(h, route, Tokens::admin).status == 403);  // one tenant's admin
        }
        CHECK(h.backend.submitted() == submitted);  // nothing refused reached the backend
    }
    CHECK(public_routes == 4);
    SECTION("the role that suffices gets through, on its tenant only") {
        for (const Route& route : routes) {
            INFO(http::method_name(route.method) << " " << route.path);
            const std::string_view path =
                std::string_view(route.path).substr(0, std::string_view(route.path).find('?'));
            const auto access = required_access(route.method, path);
            if (!access) {
                continue;
            }
            const char* enough = access->is_cluster_wide       ? Tokens::root
                                 : access->role == Role::read  ? Tokens::reader
                                 : access->role == Role::write ? Tokens::writer
                                                               : Tokens::admin;
            CHECK_FALSE(is_refused(call(h, route, enough)));
        }
        // The route is classed by the path the router matches, not by the raw target: an
        // encoded or doubled path to an admin route needs admin all the same.
        for (const char* spelled : {"/api/v1/%73ystem/tenants", "//api/v1//system/tenants/"}) {
            INFO(spelled);
            auto sneaky = h.start(Method::post, spelled, R"({"name":"x"})",
                                  {{"Authorization", std::string("Bearer ") + Tokens::writer}});
            REQUIRE(sneaky.reply->is_done);
            CHECK(sneaky.reply->status == 403);
        }
        // A default-tenant token addressing another tenant is refused.
        auto pending = h.start(Method::get, "/api/v1/resources/queues", {},
                               {{"Authorization", std::string("Bearer ") + Tokens::admin},
                                {"X-Queen-Tenant", "other"}});
        REQUIRE(pending.reply->is_done);
        CHECK(pending.reply->status == 403);
        // The pushed message is still there for the reader.
        auto listed = h.start(Method::get, "/api/v1/resources/queues", {},
                              {{"Authorization", std::string("Bearer ") + Tokens::reader}});
        REQUIRE(listed.reply->is_done);
        CHECK(listed.reply->status == 200);
    }
}

}  // namespace
}  // namespace queen::api::testing
