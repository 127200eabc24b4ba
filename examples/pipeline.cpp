// examples/pipeline.cpp — a transactional stage: pops from one queue, pushes a derived message to
// another and acks the input in one transaction, so each input yields exactly one output even
// across crashes (a rolled-back transaction leaves the input leased, to be redelivered).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common.hpp"
#include "queen/client/consumer.hpp"

namespace {
constexpr const char* usage =
    "usage: example_pipeline [--url http://127.0.0.1:6632] [--from demo] [--to demo.out]\n"
    "                        [--group pipeline] [--batch 10] [--limit 0]\n";
}  // namespace

int main(int argc, char** argv) {
    const auto flags = examples::parse_flags(argc, argv, usage);
    const queen::client::ClientOptions options = examples::client_options(flags);
    const std::string target = examples::flag(flags, "to", "demo.out");
    queen::client::Client client{options};

    queen::client::ConsumerOptions consume;
    consume.pop.queue = examples::flag(flags, "from", "demo");
    consume.pop.consumer_group = examples::flag(flags, "group", "pipeline");
    consume.pop.batch = std::max(1L, examples::number_flag(flags, "batch", 10));
    consume.is_client_ack = false;  // the transaction acks
    consume.messages_max = static_cast<std::uint64_t>(examples::number_flag(flags, "limit", 0));

    queen::client::Consumer consumer{
        client, consume, [&](std::span<const queen::client::Message> batch) -> queen::Status {
            queen::client::TransactionRequest transaction;
            queen::client::TransactionPush outputs;
            for (const auto& message : batch) {
                queen::client::PushItem output;
                output.queue = target;
                output.partition = message.partition;  // keep per-partition order downstream
                output.payload_json =
                    "{\"source\":" + message.data_json + ",\"stage\":\"enriched\"}";
                // Derived from the input's id: a retried transaction cannot push twice.
                output.transaction_id = "pipeline-" + message.transaction_id;
                outputs.items.push_back(std::move(output));
            }
            transaction.operations.emplace_back(std::move(outputs));
            for (const auto& message : batch) {
                transaction.operations.emplace_back(queen::client::Ack::of(message));
            }
            transaction.required_leases = {batch.front().lease_id};
            auto committed = client.transaction(transaction);
            if (!committed) {
                // Nothing happened; the batch comes back after its lease expires.
                std::fprintf(stderr, "transaction failed: %s\n",
                             committed.error().message().c_str());
                return committed.error();
            }
            std::printf("moved %zu messages to %s (transaction %s)\n", batch.size(), target.c_str(),
                        committed->transaction_id.c_str());
            return {};
        }};
    std::thread interrupt = examples::on_interrupt([&consumer] { consumer.stop(); });
    auto stats = consumer.run();
    pthread_kill(interrupt.native_handle(), SIGTERM);
    interrupt.join();
    if (!stats) {
        std::fprintf(stderr, "pipeline stopped: %s\n", stats.error().message().c_str());
        return 1;
    }
    return 0;
}
