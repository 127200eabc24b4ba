// engine/tests/bench_test.cpp — apply throughput of push, pop and ack (hidden: [.bench]). Not a
// timed assertion: it prints numbers for the report. LMDB runs with no_sync here, as in the
// node, where the log's fdatasync is the durability point.
#include <chrono>
#include <iostream>

#include "queen/engine/engine.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace queen::engine {
namespace {

using namespace queen::queues;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_CASE("engine: apply throughput of push, pop and ack", "[.bench]") {
    queen::testing::TempDir dir;
    Options options;
    options.store.sync_mode = store::SyncMode::no_sync;
    options.store.map_size_bytes = std::uint64_t{1} << 30;
    auto engine = Engine::open(dir.path(), options).value();
    const int partitions = static_cast<int>(queen::testing::env_int("QUEEN_BENCH_PARTITIONS", 100));
    const int messages = static_cast<int>(queen::testing::env_int("QUEEN_BENCH_MESSAGES", 200'000));
    const std::string payload(256, 'x');
    for (const int items_per_push : {1, 10, 100}) {
        const std::string queue = "bench" + std::to_string(items_per_push);
        std::vector<Command> batch;
        int pushed = 0;
        std::int64_t now = 1'000'000;
        const auto start = std::chrono::steady_clock::now();
        while (pushed < messages) {
            Push push;
            for (int i = 0; i < items_per_push; ++i, ++pushed) {
                PushItem item;
                item.queue = queue;
                item.partition = "p" + std::to_string(pushed % partitions);
                item.transaction_id = "t" + std::to_string(pushed);
                item.payload = Bytes(payload.begin(), payload.end());
                push.items.push_back(std::move(item));
            }
            batch.push_back(Command{0, 0, std::move(push)});
            if (batch.size() == 256 || pushed >= messages) {
                REQUIRE(engine.apply_commands(batch, TimestampMs{++now}).has_value());
                batch.clear();
            }
        }
        const double push_s = seconds_since(start);
        // Pop (batch 100) + ack (batch ack of the popped messages), 64 consumers' worth of
        // entries per apply.
        const auto pop_start = std::chrono::steady_clock::now();
        int consumed = 0;
        for (;;) {
            std::vector<Command> pops;
            for (int i = 0; i < 64; ++i) {
                Pop pop;
                pop.queue = queue;
                pop.batch = 100;
                pops.push_back(Command{0, 0, pop});
            }
            auto popped = engine.apply_commands(pops, TimestampMs{++now}).value();
            std::vector<Command> acks;
            for (const auto& result : popped) {
                const auto& pop = std::get<PopResult>(result);
                Ack ack;
                for (const auto& m : pop.messages) {
                    ack.items.push_back(AckItem{m.id.partition,
                                                m.transaction_id,
                                                AckStatus::completed,
                                                false,
                                                {},
                                                pop.lease,
                                                std::string(queue_mode_group)});
                }
                consumed += static_cast<int>(pop.messages.size());
                if (!ack.items.empty()) {
                    acks.push_back(Command{0, 0, std::move(ack)});
                }
            }
            if (acks.empty()) {
                break;
            }
            REQUIRE(engine.apply_commands(acks, TimestampMs{++now}).has_value());
        }
        const double pop_s = seconds_since(pop_start);
        REQUIRE(consumed == messages);
        std::cout << "items_per_push=" << items_per_push << " partitions=" << partitions
                  << " messages=" << messages << " push_msgs_per_s=" << messages / push_s
                  << " pop_ack_msgs_per_s=" << messages / pop_s << '\n';
    }
}

}  // namespace
}  // namespace queen::engine
