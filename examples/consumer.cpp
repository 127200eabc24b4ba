// examples/consumer.cpp — consumes a queue (optionally as a consumer group) until Ctrl-C, acking
// each batch; a message whose payload has "fail": true is nacked (retried, then dead-lettered).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common.hpp"
#include "queen/client/consumer.hpp"

namespace {

constexpr const char* usage =
    "usage: example_consumer [--url http://127.0.0.1:6632] [--queue demo] [--group \"\"]\n"
    "                        [--batch 10] [--limit 0]\n";

// True when the payload has "fail": true (a plain text check keeps the example dependency-free).
bool wants_failure(const std::string& json) {
    const auto key = json.find("\"fail\"");
    if (key == std::string::npos) {
        return false;
    }
    const auto value = json.find_first_not_of(" :\t\n\r", key + 6);
    return value != std::string::npos && json.compare(value, 4, "true") == 0;
}

}  // namespace

int main(int argc, char** argv) {
    const auto flags = examples::parse_flags(argc, argv, usage);
    const queen::client::ClientOptions options = examples::client_options(flags);
    queen::client::Client client{options};

    queen::client::ConsumerOptions consume;
    consume.pop.queue = examples::flag(flags, "queue", "demo");
    consume.pop.consumer_group = examples::flag(flags, "group", "");
    consume.pop.batch = std::max(1L, examples::number_flag(flags, "batch", 10));
    consume.messages_max = static_cast<std::uint64_t>(examples::number_flag(flags, "limit", 0));
    consume.renew_lease_interval_ms = 10'000;  // keep the lease while a slow batch runs

    queen::client::Consumer consumer{
        client, consume, [](std::span<const queen::client::Message> batch) -> queen::Status {
            for (const auto& message : batch) {
                std::printf("%s %s/%s %s\n", message.created_at.c_str(), message.queue.c_str(),
                            message.partition.c_str(), message.data_json.c_str());
                if (wants_failure(message.data_json)) {
                    return queen::Error{queen::Errc::invalid_argument,
                                        "refused message " + message.transaction_id};
                }
            }
            return {};
        }};
    std::thread interrupt = examples::on_interrupt([&consumer] { consumer.stop(); });
    auto stats = consumer.run();
    // run() may have ended on its own (limit or error): wake the signal thread to join it.
    pthread_kill(interrupt.native_handle(), SIGTERM);
    interrupt.join();
    if (!stats) {
        std::fprintf(stderr, "consumer stopped: %s\n", stats.error().message().c_str());
        return 1;
    }
    std::fprintf(stderr, "%llu messages (%llu failed) in %llu pops\n",
                 static_cast<unsigned long long>(stats->messages),
                 static_cast<unsigned long long>(stats->messages_failed),
                 static_cast<unsigned long long>(stats->pops));
    return 0;
}
