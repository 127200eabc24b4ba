// modules/node/tests/backend_test.cpp — the node's api::Backend behind a real HTTP listener: a read
// waiting for the applier holds no I/O thread.
#include "backend.hpp"

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>

#include "queen/api/api.hpp"
#include "queen/http/router.hpp"
#include "queen/http/server.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "tenant_support.hpp"
#include "test_client.hpp"

using queen::node::testing::push_command;

TEST_CASE(
    "node: a read waiting for the applier does not stall another connection on its I/O "
    "thread",
    "[node][backend][reads]") {
    queen::testing::TempDir dir;
    const queen::Clock& clock = queen::SystemClock::instance();
    queen::node::detail::Waiters waiters(clock);
    queen::node::NodeConfig config;
    config.store.map_size_bytes = 1 << 20;
    // Applied entries are committed to LMDB only when a read waits (or at stop).
    config.tenant.state_commit_interval_us = 600'000'000;
    config.tenant.state_sync_interval_ms = 600'000;
    config.node.data_dir = dir.path();
    queen::node::detail::TenantManager tenants(config, queen::NullLogger::instance(), clock,
                                               waiters, nullptr);
    REQUIRE(tenants.start().has_value());
    queen::node::detail::NodeBackend backend(1, clock, waiters, tenants);
    queen::http::Router router;
    queen::api::ApiOptions api_options;
    queen::api::register_routes(router, backend, api_options, queen::NullLogger::instance());
    queen::http::ServerOptions http_options;
    http_options.bind_address = "127.0.0.1";
    http_options.port = 0;
    http_options.io_threads = 1;  // both connections share the one I/O thread
    auto server = queen::http::Server::start(http_options, std::move(router).into_handler(),
                                             queen::NullLogger::instance());
    REQUIRE(server.has_value());

    // Hold the applier inside the completion of a push: the push is applied and answered, not
    // yet committed to LMDB, so a read has to wait for the applier.
    std::promise<void> answered;
    std::promise<void> release;
    auto released = release.get_future().share();
    backend.submit("default", push_command("p", "held"),
                   [&, released](queen::Result<queen::engine::CommandResult> result) {
                       REQUIRE(result.has_value());
                       answered.set_value();
                       released.wait();
                   });
    answered.get_future().wait();

    queen::http::testing::TestClient reader((*server)->port());
    queen::http::testing::TestClient other((*server)->port());
    REQUIRE(reader.send(
        queen::http::testing::TestClient::format_request("GET", "/api/v1/resources/queues")));
    // The other connection is served by the same I/O thread while the read waits. Before reads
    // completed later, the read held this thread until the applier committed, and this request
    // was only answered after the release below (the client's 20 s read limit failed the test).
    const auto health = other.request("GET", "/health");
    CHECK(health.status == 200);
    release.set_value();
    const auto waited = reader.read_response();
    CHECK(waited.status == 200);
    CHECK(waited.body.find("\"orders\"") != std::string::npos);

    (*server)->stop();
    REQUIRE(tenants.stop().has_value());
    waiters.stop();
}
