// client/tests/perf_test.cpp — hidden measurements (run with `client_tests "[.perf]"`): client
// round trips against the in-process test server. They print numbers and assert no timings.
#include <chrono>
#include <iostream>
#include <thread>

#include "queen/client/client.hpp"
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
