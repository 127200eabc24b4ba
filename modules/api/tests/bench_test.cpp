// api/tests/bench_test.cpp — CPU per message of the I/O-thread work of the hot routes (parse a
// push, an ack batch, a transaction; format their answers and a pop's), hidden: [.bench]. Not a
// timed assertion: it prints thread CPU numbers for the report (`api_tests "[.bench]"`).
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "format.hpp"
#include "parse.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"

namespace queen::api::detail {
namespace {

class CountingRandom final : public RandomSource {
public:
    void fill(std::uint8_t* data, std::size_t size) override {
        for (std::size_t i = 0; i < size; ++i) {
            data[i] = static_cast<std::uint8_t>(rng_.next());
        }
    }

private:
    Rng rng_{7};
};

/// CPU time of the calling thread: what the work costs whatever else runs on the machine.
double thread_cpu_ns() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

/// Measures only the sections whose name contains QUEEN_API_BENCH (all when unset).
bool is_selected(const char* name) {
    const char* filter = std::getenv("QUEEN_API_BENCH");
    return filter == nullptr || std::string_view(name).find(filter) != std::string_view::npos;
}

/// Runs `work` (which handles `per_run` messages) until ~0.3 s of CPU and prints ns/message.
template <class Work>
void measure(const char* name, std::size_t per_run, Work&& work) {
    if (!is_selected(name)) {
        return;
    }
    for (int i = 0; i < 50; ++i) {
        work();  // warm up caches and the allocator
    }
    const double start = thread_cpu_ns();
    std::size_t runs = 0;
    double elapsed = 0;
    do {
        for (int i = 0; i < 100; ++i) {
            work();
        }
        runs += 100;
        elapsed = thread_cpu_ns() - start;
    } while (elapsed < 3e8);
    std::printf("%-34s %8.1f ns/message\n", name, elapsed / static_cast<double>(runs * per_run));
}

/// A 256-byte payload as the bench writes it.
std::string bench_payload(std::uint64_t sequence) {
    std::string out =
        "{\"seq\":" + std::to_string(sequence) + ",\"ts\":1764491234567890123,\"pad\":\"";
    out.append(256 - out.size() - 2, 'x');
    return out + "\"}";
}

std::string uuid_v7(Rng& rng) {
    static CountingRandom random;
    return time_uuid(random, 1'764'491'234'567 + static_cast<std::int64_t>(rng.below(9)));
}

queues::PopResult pop_result(std::size_t count) {
    Rng rng(1);
    queues::PopResult out;
    out.outcome = queues::PopResult::Outcome::delivered;
    out.queue = "bench";
    out.group = "__QUEUE_MODE__";
    out.lease = queues::LeaseId{123456};
    out.lease_expires_at = TimestampMs{1'764'491'294'567};
    out.partitions_claimed = 1;
    for (std::size_t i = 0; i < count; ++i) {
        queues::PoppedMessage& message = out.messages.emplace_back();
        message.id = queues::MessageId{queues::PartitionId{7}, queues::Sequence{1000 + i}};
        message.transaction_id = uuid_v7(rng);
        const std::string payload = bench_payload(i);
        message.payload.assign(payload.begin(), payload.end());
        message.created_at = TimestampMs{1'764'491'234'567 + static_cast<std::int64_t>(i)};
        message.partition = "p-7";
    }
    return out;
}

std::string ack_batch_body(const queues::PopResult& popped) {
    std::string body = R"({"acknowledgments":[)";
    for (std::size_t i = 0; i < popped.messages.size(); ++i) {
        const queues::PoppedMessage& message = popped.messages[i];
        body += i == 0 ? "{" : ",{";
        body +=
            R"("transactionId":")" + message.transaction_id + R"(","partitionId":")" +
            queues::format_partition_id(message.id.partition) +
            R"(","status":"completed","error":null,"consumerGroup":"__QUEUE_MODE__","leaseId":")" +
            queues::format_lease_id(popped.lease) + "\"}";
    }
    return body + R"(],"consumerGroup":null})";
}

std::string push_body(std::size_t count) {
    Rng rng(2);
    std::string body = R"({"items":[)";
    for (std::size_t i = 0; i < count; ++i) {
        body += i == 0 ? "" : ",";
        body += R"({"queue":"bench","partition":"p-7","payload":)" + bench_payload(i) +
                R"(,"transactionId":")" + uuid_v7(rng) + "\"}";
    }
    return body + "]}";
}

TEST_CASE("api: CPU per message of parsing and formatting the hot routes", "[.bench]") {
    const ApiOptions options;
    CountingRandom random;
    const queues::PopResult popped = pop_result(100);
    measure("format_pop (batch 100)", 100, [&] {
        auto text = format_pop(popped, nullptr);
        REQUIRE(text.has_value());
    });
    const std::string ack_body = ack_batch_body(popped);
    measure("parse_ack_batch (batch 100)", 100, [&] {
        auto ack = parse_ack_batch(ack_body, options);
        REQUIRE(ack.has_value());
    });
    queues::AckResult acked;
    for (const queues::PoppedMessage& message : popped.messages) {
        queues::AckItemResult& item = acked.items.emplace_back();
        item.transaction_id = message.transaction_id;
        item.success = true;
        item.queue = "bench";
        item.partition = "p-7";
        item.lease_released = queues::LeaseReleased::yes;
    }
    measure("format_ack (batch 100)", 100, [&] { REQUIRE(!format_ack(acked).empty()); });
    const std::string pushed = push_body(100);
    measure("parse_push (batch 100)", 100, [&] {
        auto push = parse_push(pushed, options, random, 1'764'491'234'567);
        REQUIRE(push.has_value());
    });
    queues::PushResult push_result;
    for (const queues::PoppedMessage& message : popped.messages) {
        queues::PushItemResult& item = push_result.items.emplace_back();
        item.status = queues::PushStatus::queued;
        item.transaction_id = message.transaction_id;
        item.message_id = message.id;
        item.queue = "bench";
    }
    const std::vector<bool> client_ids(100, true);
    measure("format_push (batch 100)", 100,
            [&] { REQUIRE(!format_push(push_result, client_ids).empty()); });
    const queues::PopResult popped_one = pop_result(1);
    measure("format_pop (batch 1)", 1, [&] {
        auto text = format_pop(popped_one, nullptr);
        REQUIRE(text.has_value());
    });
    const std::string transaction =
        R"({"operations":[{"type":"ack","transactionId":")" +
        popped_one.messages[0].transaction_id + R"(","partitionId":")" +
        queues::format_partition_id(popped_one.messages[0].id.partition) +
        R"(","status":"completed","leaseId":")" + queues::format_lease_id(popped_one.lease) +
        R"(","consumerGroup":"__QUEUE_MODE__"},{"type":"push","items":[{"queue":"bench","partition":"p-7","payload":)" +
        bench_payload(1) + R"(,"transactionId":")" + popped.messages[1].transaction_id + "\"}]}]}";
    measure("parse_transaction (1+1)", 1, [&] {
        auto parsed = parse_transaction(transaction, options, random, 1'764'491'234'567);
        REQUIRE(parsed.has_value());
    });
    engine::TransactionResult transaction_result;
    transaction_result.success = true;
    engine::TransactionOpResult& ack_op = transaction_result.results.emplace_back();
    ack_op.kind = engine::TransactionOp::Kind::ack;
    ack_op.success = true;
    ack_op.transaction_id = popped_one.messages[0].transaction_id;
    engine::TransactionOpResult& push_op = transaction_result.results.emplace_back();
    push_op.kind = engine::TransactionOp::Kind::push;
    push_op.success = true;
    push_op.transaction_id = popped_one.messages[0].transaction_id;
    push_op.message_id = popped_one.messages[0].id;
    push_op.queue = "bench";
    const std::string transaction_uuid = random_uuid(random);
    measure("format_transaction (1+1)", 1,
            [&] { REQUIRE(!format_transaction(transaction_result, transaction_uuid).empty()); });
}

}  // namespace
}  // namespace queen::api::detail
