// examples/producer.cpp — pushes N JSON messages in batches, spread over partitions.
#include <cstdio>
#include <string>
#include <vector>

#include "common.hpp"
#include "queen/client/client.hpp"

namespace {
constexpr const char* usage =
    "usage: example_producer [--url http://127.0.0.1:6632] [--queue demo] [--count 1000]\n"
    "                        [--batch 100] [--partitions 4]\n";
}  // namespace

int main(int argc, char** argv) {
    const auto flags = examples::parse_flags(argc, argv, usage);
    const queen::client::ClientOptions options = examples::client_options(flags);
    const std::string queue = examples::flag(flags, "queue", "demo");
    const long count = examples::number_flag(flags, "count", 1000);
    const long batch = examples::number_flag(flags, "batch", 100);
    const long partitions = examples::number_flag(flags, "partitions", 4);
    if (batch < 1 || partitions < 1) {
        std::fprintf(stderr, "--batch and --partitions must be at least 1\n%s", usage);
        return 2;
    }

    queen::client::Client client{options};

    long queued = 0;
    long duplicates = 0;
    long failed = 0;
    std::vector<queen::client::PushItem> items;
    for (long sent = 0; sent < count;) {
        items.clear();
        for (long i = 0; i < batch && sent < count; ++i, ++sent) {
            queen::client::PushItem item;
            item.queue = queue;
            item.partition = "p-" + std::to_string(sent % partitions);
            item.payload_json = "{\"sequence\":" + std::to_string(sent) + ",\"text\":\"hello\"}";
            items.push_back(std::move(item));
        }
        auto results = client.push(items);
        if (!results) {
            std::fprintf(stderr, "push failed: %s\n", results.error().message().c_str());
            return 1;
        }
        for (const auto& result : *results) {
            switch (result.status) {
                case queen::client::PushStatus::queued:
                case queen::client::PushStatus::buffered: ++queued; break;
                case queen::client::PushStatus::duplicate: ++duplicates; break;
                case queen::client::PushStatus::failed:
                    ++failed;
                    std::fprintf(stderr, "item failed: %s\n", result.error.c_str());
                    break;
            }
        }
    }
    std::printf("queue %s: %ld queued, %ld duplicates, %ld failed\n", queue.c_str(), queued,
                duplicates, failed);
    return failed == 0 ? 0 : 1;
}
