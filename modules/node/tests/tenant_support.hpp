// modules/node/tests/tenant_support.hpp — what the node's tests share: a push command, a tenant
// opened in a temp dir, and reads that wait (on the test thread) for what was answered.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include "queen/core/clock.hpp"
#include "queen/core/logger.hpp"
#include "queen/queues/queries.hpp"
#include "queen/testing/catch.hpp"
#include "tenant.hpp"

namespace queen::node::testing {

inline queen::engine::Command push_command(const std::string& partition,
                                           const std::string& transaction_id) {
    queen::queues::PushItem item;
    item.queue = "orders";
    item.partition = partition;
    item.transaction_id = transaction_id;
    const std::string payload = "\"" + transaction_id + "\"";
    item.payload.assign(payload.begin(), payload.end());
    queen::queues::Push push;
    push.items.push_back(std::move(item));
    queen::engine::Command command;
    command.body = std::move(push);
    return command;
}

/// The tenant "default" in `dir`, logging nowhere, on the system clock.
inline queen::Result<std::unique_ptr<queen::node::detail::Tenant>> open_tenant(
    const std::filesystem::path& dir, const queen::node::NodeConfig& config,
    queen::node::detail::Waiters& waiters) {
    return queen::node::detail::Tenant::open("default", dir, config, queen::NullLogger::instance(),
                                             queen::SystemClock::instance(), waiters);
}

/// Waits (this test thread only) until everything answered is readable, then runs `read`.
inline bool read_answered(queen::node::detail::Tenant& tenant,
                          const std::function<void(const queen::engine::Engine&)>& read) {
    std::promise<queen::Status> ready;
    tenant.when_readable([&](queen::Status status) { ready.set_value(std::move(status)); });
    if (!ready.get_future().get()) {
        return false;
    }
    return tenant.read(read).has_value();
}

inline queen::node::NodeConfig small_config() {
    queen::node::NodeConfig config;
    config.tenant.batch_entries_max = 16;  // many batches, so batching and ordering are exercised
    config.store.map_size_bytes = 1 << 20;
    return config;
}

/// The number of messages of the first queue, once everything answered is readable.
inline std::uint64_t messages_of(queen::node::detail::Tenant& tenant) {
    std::uint64_t messages = 0;
    REQUIRE(read_answered(tenant, [&](const queen::engine::Engine& engine) {
        auto queues = engine.read([](const queen::queues::Tables& t, const queen::store::Txn& txn) {
            return queen::queues::list_queues(t, txn, queen::TimestampMs{0});
        });
        REQUIRE(queues.has_value());
        messages = queues->empty() ? 0 : queues->front().messages;
    }));
    return messages;
}

}  // namespace queen::node::testing
