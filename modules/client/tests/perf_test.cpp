// client/tests/perf_test.cpp — hidden measurements (run with `client_tests "[.perf]"`): client
// round trips against the in-process test server. They print numbers and assert no timings.
#include <time.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "queen/client/client.hpp"
#include "queen/client/protocol.hpp"
#include "queen/testing/catch.hpp"
#include "test_server.hpp"

namespace {

using namespace queen::client;
using queen::client::testing::json_reply;
using queen::client::testing::TestServer;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("client: push round trips per second over keep-alive (loopback, test server)",
          "[.perf][client]") {
    TestServer server;
    std::string reply = "[";
    for (int i = 0; i < 100; ++i) {
        reply +=
            std::string(i == 0 ? "" : ",") +
            R"({"index":0,"transaction_id":"t","status":"queued","message_id":"m","partition_id":"p","trace_id":null,"queueName":"q"})";
    }
    reply += "]";
    const auto batch_reply = json_reply(201, reply);
    const auto single_reply =
        json_reply(201, R"([{"index":0,"transaction_id":"t","status":"queued","message_id":"m"}])");
    ClientOptions options;
    options.endpoint = Endpoint{"127.0.0.1", server.port()};
    const std::string payload = R"({"data":")" + std::string(240, 'x') + R"("})";  // ~256 bytes
    for (const std::size_t batch : {std::size_t{1}, std::size_t{100}}) {
        server.reply_always(batch == 1 ? single_reply : batch_reply);
        Client client{options};
        std::vector<PushItem> items(batch);
        for (auto& item : items) {
            item.queue = "q";
            item.payload_json = payload;
        }
        for (const int threads_count : {1, 4}) {
            constexpr int requests_per_thread = 2000;
            const auto start = std::chrono::steady_clock::now();
            std::vector<std::thread> threads;
            for (int t = 0; t < threads_count; ++t) {
                threads.emplace_back([&] {
                    for (int i = 0; i < requests_per_thread; ++i) {
                        auto result = client.push(items);
                        REQUIRE(result);
                    }
                });
            }
            for (auto& thread : threads) {
                thread.join();
            }
            const double elapsed = seconds_since(start);
            const double requests = static_cast<double>(threads_count * requests_per_thread);
            std::cout << "push batch=" << batch << " threads=" << threads_count << ": "
                      << static_cast<long>(requests / elapsed) << " requests/s, "
                      << static_cast<long>(requests * static_cast<double>(batch) / elapsed)
                      << " msgs/s, connects=" << client.connects_total() << "\n";
        }
    }
}

TEST_CASE("client: reading a 100-message pop answer and building its acks (CPU, no network)",
          "[.perf][client][protocol]") {
    // The shape and sizes of a Queen pop answer: 12 fields per message, UUIDs, 256-byte payload.
    std::string body =
        R"({"success":true,"queue":"bench","partition":"p0","partitionId":"00000000-0000-8200-0000-000000000001",)"
        R"("leaseId":"00000000-0000-8400-0000-000000000001","consumerGroup":"__QUEUE_MODE__",)"
        R"("leaseExpiresAt":"2026-11-30T06:32:15.701Z","messages":[)";
    for (int i = 0; i < 100; ++i) {
        body +=
            std::string(i == 0 ? "" : ",") + R"({"id":"00000000-0001-8300-0000-0000000000)" +
            std::to_string(10 + i) + R"(","transactionId":"01a22b22-e057-7283-8cc6-dfd457e29f)" +
            std::to_string(10 + i) + R"(","traceId":null,"data":{"seq":)" + std::to_string(i) +
            R"(,"ts":123456789012,"pad":")" + std::string(200, 'x') +
            R"("},"producerSub":null,"createdAt":"2026-11-30T06:27:15.673000Z",)"
            R"("partitionId":"00000000-0000-8200-0000-000000000001","partition":"p0",)"
            R"("leaseId":"00000000-0000-8400-0000-000000000001","consumerGroup":"__QUEUE_MODE__",)"
            R"("retryCount":0})";
    }
    body += R"(],"partitionsClaimed":1})";
    HttpResponse response;
    response.status = 200;
    response.body = body;
    PopRequest pop;
    pop.queue = "bench";
    OwnedRequest request;
    REQUIRE(build_pop(pop, 0, request));
    PopResult result;
    std::vector<Ack> acks;
    OwnedRequest ack_request;
    constexpr int rounds = 2000;
    const auto cpu_ns = [] {
        timespec now{};
        ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
        return now.tv_sec * 1'000'000'000LL + now.tv_nsec;
    };
    std::int64_t read_ns = 0;
    std::int64_t ack_ns = 0;
    for (int round = 0; round < rounds; ++round) {
        const std::int64_t start_ns = cpu_ns();
        REQUIRE(read_pop_answer(request.view(), response, pop, result));
        const std::int64_t read_end_ns = cpu_ns();
        acks.resize(result.messages.size());
        for (std::size_t m = 0; m < acks.size(); ++m) {
            acks[m] = Ack::of(result.messages[m]);
        }
        build_ack_batch(acks, result.consumer_group, ack_request);
        ack_ns += cpu_ns() - read_end_ns;
        read_ns += read_end_ns - start_ns;
    }
    REQUIRE(result.messages.size() == 100);
    const double messages = 100.0 * rounds;
    std::cout << "pop answer of 100 messages (" << body.size()
              << " bytes): " << static_cast<double>(read_ns) / messages / 1000.0
              << " us per message read, " << static_cast<double>(ack_ns) / messages / 1000.0
              << " us per message acked\n";
}
