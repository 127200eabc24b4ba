// examples/four_step_worker.cpp — the four-step worker: for each order it pops, ONE transaction
// acks the message, moves the order's KV record to "shipped" (compare-and-set on the version it
// read), pushes a "shipped" event to the next queue and sets a reminder timer. The broker applies
// all four or none: after a crash the order is either untouched and its message redelivered, or
// shipped, announced and reminded with its message consumed, never half of it.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common.hpp"
#include "queen/client/client.hpp"

namespace {
constexpr const char* usage =
    "usage: example_four_step_worker [--url http://127.0.0.1:6632] [--queue orders]\n"
    "                                [--next-queue shipping] [--bucket orders]\n"
    "                                [--reminder-queue reminders] [--reminder-ms 86400000]\n"
    "                                [--count 10] [--seed-count <count>]\n"
    "Pushes --seed-count orders {\"order\": 1..n} to --queue (0: none), then processes --count.\n";
}  // namespace

int main(int argc, char** argv) {
    const auto flags = examples::parse_flags(argc, argv, usage);
    const queen::client::ClientOptions options = examples::client_options(flags);
    const std::string queue = examples::flag(flags, "queue", "orders");
    const std::string next_queue = examples::flag(flags, "next-queue", "shipping");
    const std::string bucket = examples::flag(flags, "bucket", "orders");
    const std::string reminder_queue = examples::flag(flags, "reminder-queue", "reminders");
    const long reminder_ms = examples::number_flag(flags, "reminder-ms", 86'400'000);
    const long count = examples::number_flag(flags, "count", 10);
    const long seed_count = examples::number_flag(flags, "seed-count", count);
    queen::client::Client client{options};

    std::vector<queen::client::PushItem> orders(static_cast<std::size_t>(seed_count));
    for (long i = 0; i < seed_count; ++i) {
        orders[i].queue = queue;
        orders[i].payload_json = "{\"order\":" + std::to_string(i + 1) + "}";
    }
    if (auto pushed = client.push(orders); !pushed) {
        std::fprintf(stderr, "push failed: %s\n", pushed.error().message().c_str());
        return 1;
    }

    queen::client::PopRequest pop;
    pop.queue = queue;
    pop.is_wait = true;
    pop.timeout_ms = 10'000;
    long conflicts = 0;
    for (long processed = 0; processed < count; ++processed) {
        auto popped = client.pop(pop);
        if (!popped || popped->messages.empty()) {
            std::fprintf(stderr, "no order to process: %s\n",
                         popped ? "none within 10 s" : popped.error().message().c_str());
            return 1;
        }
        const queen::client::Message& message = popped->messages.front();
        const std::string order = examples::json_member(message.data_json, "order");
        const std::string key = "order-" + order;
        // The next event's id is derived from the input's: a transaction sent twice cannot push
        // it twice (the broker refuses the second one whole).
        const std::string event_id = "shipped-" + message.transaction_id;
        for (int attempt = 1;; ++attempt) {
            // Step 2 is a compare-and-set on the version read here (0: "must not exist yet"): if
            // another writer changed the record in between, nothing is applied and we read again.
            std::uint64_t version = 0;
            if (auto current = client.kv_get(bucket, key); current) {
                version = current->version;
            } else if (queen::client::http_status_of(current.error()) != 404) {
                std::fprintf(stderr, "%s\n", current.error().message().c_str());
                return 1;
            }
            queen::client::PushItem event;
            event.queue = next_queue;
            event.payload_json = "{\"order\":" + order + ",\"event\":\"shipped\"}";
            event.transaction_id = event_id;
            queen::client::TimerSet reminder;
            reminder.id = "remind-" + key;
            reminder.queue = reminder_queue;
            reminder.payload_json = "{\"order\":" + order + ",\"remind\":\"delivery\"}";
            reminder.delay_ms = reminder_ms;
            reminder.is_replace = true;  // an order shipped again re-arms its one reminder
            const std::string record =
                "{\"order\":" + order + ",\"state\":\"shipped\",\"event\":\"" + event_id + "\"}";
            auto done = client.transaction()
                            .ack(message)                          // 1. the order is consumed,
                            .kv_set(bucket, key, record, version)  // 2. its state recorded,
                            .push(std::move(event))                // 3. the next step told,
                            .timer(std::move(reminder))            // 4. a reminder set
                            .commit();
            if (done) {
                std::printf("order %s: acked, %s version %llu, %s pushed to %s, reminder due %s\n",
                            order.c_str(), key.c_str(),
                            static_cast<unsigned long long>(done->results[1].version),
                            event_id.c_str(), next_queue.c_str(), done->results[3].due_at.c_str());
                break;
            }
            if (!done.error().is(queen::client::Errc::conflict) || attempt == 3) {
                std::fprintf(stderr, "order %s: %s\n", order.c_str(),
                             done.error().message().c_str());
                return 1;
            }
            ++conflicts;  // our lease still holds the message: try again with a fresh read
        }
    }
    std::printf(
        "processed %ld orders: each acked, recorded, announced and reminded in one "
        "transaction (%ld conflicts retried)\n",
        count, conflicts);
    return 0;
}
