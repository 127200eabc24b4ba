// queues/tests/harness.hpp — a QueueState over a temporary LMDB env, one write txn per command.
#pragma once

#include <optional>
#include <string>

#include "queen/queues/queries.hpp"
#include "queen/queues/queues.hpp"
#include "queen/store/env.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace queen::queues::testing {

inline Bytes text(std::string_view s) {
    return Bytes(s.begin(), s.end());
}
inline std::string text(const Bytes& b) {
    return std::string(b.begin(), b.end());
}

struct Harness {
    queen::testing::TempDir dir;
    std::optional<store::Env> env;
    std::optional<QueueState> state;
    std::int64_t now_ms = 1'700'000'000'000;

    Harness() { open(); }
    void open() {
        store::Options options;
        options.sync_mode = store::SyncMode::no_sync;  // semantics tests; a reopen keeps pages
        // The harness does not rerun txns on map growth (Engine does): start with a big map.
        options.map_size_bytes = std::uint64_t{4} << 30;
        env.emplace(store::Env::open(dir.path(), options).value());
        state.emplace(QueueState::open(*env, Options{}).value());
    }
    void reopen() {
        state.reset();
        env.reset();
        open();
    }
    void advance_s(std::int64_t seconds) { now_ms += seconds * 1000; }
    void advance_ms(std::int64_t ms) { now_ms += ms; }

    template <class Command>
    auto run(const Command& command) {
        auto txn = env->begin_write();
        REQUIRE(txn.has_value());
        auto result = state->apply(*txn, command, TimestampMs{now_ms});
        if (!result) {
            FAIL("apply failed: " << result.error().message());
        }
        REQUIRE(state->end_batch(*txn).has_value());
        auto committed = txn->commit();
        REQUIRE(committed.has_value());
        return std::move(result).value();
    }

    PushResult push(const std::string& queue, const std::string& partition, const std::string& txid,
                    const std::string& payload = "{}") {
        PushItem item;
        item.queue = queue;
        item.partition = partition;
        item.transaction_id = txid;
        item.payload = text(payload);
        return run(Push{{item}});
    }

    PopResult pop(const std::string& queue, std::uint32_t batch = 1,
                  const std::string& group = std::string(queue_mode_group),
                  std::uint32_t partitions = 1) {
        Pop command;
        command.queue = queue;
        command.batch = batch;
        command.group = group;
        command.partitions = partitions;
        return run(command);
    }

    PopResult pop_partition(const std::string& queue, const std::string& partition,
                            std::uint32_t batch = 1,
                            const std::string& group = std::string(queue_mode_group)) {
        Pop command;
        command.queue = queue;
        command.has_partition = true;
        command.partition = partition;
        command.batch = batch;
        command.group = group;
        return run(command);
    }

    AckItemResult ack(const PoppedMessage& message, LeaseId lease,
                      AckStatus status = AckStatus::completed,
                      const std::string& group = std::string(queue_mode_group),
                      const std::string& error = {}) {
        AckItem item;
        item.partition = message.id.partition;
        item.transaction_id = message.transaction_id;
        item.status = status;
        item.lease = lease;
        item.group = group;
        item.has_error = !error.empty();
        item.error = error;
        auto result = run(Ack{{item}});
        REQUIRE(result.items.size() == 1);
        return result.items[0];
    }

    ConfigureResult configure(const std::string& queue, QueueOptions options) {
        ConfigureQueue command;
        command.queue = queue;
        command.options = options;
        return run(command);
    }

    template <class Fn>
    auto read(Fn fn) {
        auto txn = env->begin_read();
        REQUIRE(txn.has_value());
        auto result = fn(state->tables(), *txn);
        REQUIRE(result.has_value());
        return std::move(result).value();
    }
};

}  // namespace queen::queues::testing
