// queues/tests/memory_test.cpp — measures the memory index per partition (hidden: [.memory];
// QUEEN_MEMORY_PARTITIONS sets the count, default 100000).
#include <malloc.h>

#include <iostream>

#include "harness.hpp"

namespace queen::queues {
namespace {

std::size_t heap_in_use() {
    const auto info = mallinfo2();
    return info.uordblks + info.hblkhd;  // small blocks + big mmapped ones (the vector)
}

TEST_CASE("queues: memory index bytes per partition", "[.memory]") {
    const auto count =
        static_cast<int>(queen::testing::env_int("QUEEN_MEMORY_PARTITIONS", 100'000));
    testing::Harness h;
    for (int done = 0; done < count;) {
        Push push;
        for (int i = 0; i < 1000 && done < count; ++i, ++done) {
            PushItem item;
            item.queue = "q";
            item.partition = "p" + std::to_string(done);
            item.transaction_id = "t";
            item.payload = testing::text("{}");
            push.items.push_back(std::move(item));
        }
        h.run(push);
    }
    h.state.reset();
    malloc_trim(0);
    const std::size_t before = heap_in_use();
    h.state.emplace(QueueState::open(*h.env, Options{}).value());
    const std::size_t idle = heap_in_use() - before;
    REQUIRE(h.state->index_stats().partitions == static_cast<std::uint64_t>(count));
    // One group pops once: its candidate set now holds every partition with a message.
    REQUIRE(h.pop("q", 1).messages.size() == 1);
    const std::size_t with_group = heap_in_use() - before;
    std::cout << "partitions=" << count << " index_heap_bytes=" << idle
              << " per_partition=" << static_cast<double>(idle) / count
              << " with_one_group_per_partition=" << static_cast<double>(with_group) / count
              << '\n';
    REQUIRE(idle / static_cast<std::size_t>(count) < 64);
}

}  // namespace
}  // namespace queen::queues
