// examples/request_reply.cpp — request/reply over a queue (docs/request-reply.md), both sides.
// `--role worker` serves requests {"add": [numbers]} on a queue and replies {"sum": n} by
// pushing to the request's replyTo queue in the same transaction as the request's ack, so a
// request is never consumed without its reply and never answered twice. `--role requester`
// calls Client::request() (POST /api/v1/request) --count times and checks each reply.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common.hpp"
#include "queen/client/consumer.hpp"

namespace {
constexpr const char* usage =
    "usage: example_request_reply --role worker|requester [--url http://127.0.0.1:6632]\n"
    "                             [--queue rpc.add] [--count N] [--timeout-ms 5000]\n"
    "worker: serves --count requests (default 0: until Ctrl-C);\n"
    "requester: sends --count requests (default 10), each waiting up to --timeout-ms.\n";

/// The worker's answer to one request envelope {"replyTo", "requestId", "body"}.
std::string answer(const std::string& body) {
    const std::string numbers = examples::json_member(body, "add");
    std::int64_t sum = 0;
    const bool is_valid = queen::json::for_each_element(numbers, [&](std::string_view raw) {
        sum += queen::json::raw_to_integer(raw);
        return true;
    });
    // A malformed request still gets a reply: the requester should not wait for its timeout.
    return is_valid ? "{\"sum\":" + std::to_string(sum) + "}"
                    : R"({"error":"expected {\"add\": [numbers]}"})";
}

int serve(queen::client::Client& client, const std::string& queue, long count) {
    queen::client::ConsumerOptions consume;
    consume.pop.queue = queue;
    consume.pop.batch = 10;
    consume.is_client_ack = false;  // the reply's transaction acks
    consume.messages_max = static_cast<std::uint64_t>(count);
    queen::client::Consumer consumer{
        client, consume, [&](std::span<const queen::client::Message> batch) -> queen::Status {
            auto transaction = client.transaction();
            for (const auto& request : batch) {
                const std::string reply_to = examples::json_member(request.data_json, "replyTo");
                if (reply_to.empty()) {  // not sent by POST /api/v1/request: nobody to answer
                    transaction.ack(request, queen::client::AckStatus::dlq, "no replyTo");
                    continue;
                }
                transaction.ack(request).queue(reply_to).push(
                    answer(examples::json_member(request.data_json, "body")));
            }
            auto committed = transaction.commit();
            if (!committed) {
                // Nothing was acked or replied: the requests come back after their lease.
                std::fprintf(stderr, "reply failed: %s\n", committed.error().message().c_str());
                return committed.error();
            }
            return {};
        }};
    std::thread interrupt = examples::on_interrupt([&consumer] { consumer.stop(); });
    auto stats = consumer.run();
    pthread_kill(interrupt.native_handle(), SIGTERM);
    interrupt.join();
    if (!stats) {
        std::fprintf(stderr, "worker stopped: %s\n", stats.error().message().c_str());
        return 1;
    }
    std::printf("served %llu requests\n", static_cast<unsigned long long>(stats->messages));
    return 0;
}

int request(queen::client::Client& client, const std::string& queue, long count, long timeout_ms) {
    long replies = 0;
    long wrong = 0;
    long failed = 0;
    for (long i = 1; i <= count; ++i) {
        const std::string payload =
            "{\"add\":[" + std::to_string(i) + "," + std::to_string(i * i) + "]}";
        auto reply = client.request(queue, payload, std::chrono::milliseconds(timeout_ms));
        if (!reply) {
            ++failed;  // Errc::timeout: no worker replied within timeout_ms (HTTP 504)
            std::printf("request %s failed: %s\n", payload.c_str(),
                        reply.error().message().c_str());
            continue;
        }
        ++replies;
        const bool is_right = examples::json_integer(*reply, "sum", -1) == i + i * i;
        wrong += is_right ? 0 : 1;
        std::printf("request %s -> reply %s%s\n", payload.c_str(), reply->c_str(),
                    is_right ? "" : " (WRONG)");
    }
    std::printf("%ld requests: %ld replies, %ld wrong, %ld failed\n", count, replies, wrong,
                failed);
    return wrong == 0 && failed == 0 ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
    const auto flags = examples::parse_flags(argc, argv, usage);
    const queen::client::ClientOptions options = examples::client_options(flags);
    const std::string role = examples::flag(flags, "role", "");
    const std::string queue = examples::flag(flags, "queue", "rpc.add");
    const long count = examples::number_flag(flags, "count", role == "worker" ? 0 : 10);
    const long timeout_ms = examples::number_flag(flags, "timeout-ms", 5'000);
    if (role != "worker" && role != "requester") {
        std::fprintf(stderr, "--role must be worker or requester\n%s", usage);
        return 2;
    }
    queen::client::Client client{options};
    return role == "worker" ? serve(client, queue, count)
                            : request(client, queue, count, timeout_ms);
}
