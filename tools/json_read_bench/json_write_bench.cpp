// tools/json_read_bench/json_write_bench.cpp — issue 22: CPU per call of the hand-built JSON of
// the hot paths, which the one writer (queen/core/json_writer.hpp) produces: the client's push,
// ack batch and transaction bodies, the server's push, pop and ack answers, the bench's payload.
// Uses only functions whose signatures predate the one writer, so the same file measures a tree
// before and after it. Built only with -DQUEEN_JSON_EVAL=ON; usage: docs/benchmarks.md.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bodies.hpp"
#include "format.hpp"
#include "queen/bench/workload.hpp"
#include "queen/client/connection.hpp"
#include "queen/client/protocol.hpp"
#include "queen/core/assert.hpp"
#include "queen/core/clock.hpp"

namespace queen::json_eval {
namespace {

constexpr std::int64_t now_ms = 1'764'491'234'567;

struct Writer {
    std::string name;
    std::function<std::size_t()> run;  ///< returns the bytes written
};

/// Everything the writers need, built once (storage reused as in the real callers).
struct Inputs {
    ManualClock clock{now_ms};
    client::UuidV7Generator ids{7, clock};
    std::vector<client::PushItem> push_items;
    client::PopResult popped;
    client::TransactionRequest transaction;
    client::OwnedRequest request;
    queues::PopResult pop_result;
    queues::PushResult push_result;
    std::vector<bool> client_ids;
    queues::AckResult ack_result;
    std::string payload;

    Inputs() {
        for (std::uint64_t i = 0; i < 100; ++i) {
            client::PushItem& item = push_items.emplace_back();
            item.queue = "bench";
            item.partition = "p-17";
            item.payload_json = bench_payload(i);
        }
        const std::string answer = [] {
            for (const Body& body : make_bodies()) {
                if (body.name == "pop-100-bench") {
                    return body.text;
                }
            }
            return std::string{};
        }();
        client::HttpRequest http{"GET", "/api/v1/pop/queue/bench", {}, false, true, 0};
        client::HttpResponse response;
        response.status = 200;
        response.body = answer;
        client::PopRequest pop;
        pop.queue = "bench";
        QUEEN_ASSERT(client::read_pop_answer(http, response, pop, popped).has_value(),
                     "the pop answer reads");
        client::TransactionPush push;
        push.items.push_back(push_items.front());
        transaction.operations.emplace_back(
            client::Ack::of(popped.messages.front(), client::AckStatus::completed));
        transaction.operations.emplace_back(std::move(push));

        pop_result.outcome = queues::PopResult::Outcome::delivered;
        pop_result.queue = "bench";
        pop_result.group = "__QUEUE_MODE__";
        pop_result.lease = queues::LeaseId{123456};
        pop_result.lease_expires_at = TimestampMs{now_ms + 60'000};
        pop_result.partitions_claimed = 1;
        for (std::uint64_t i = 0; i < 100; ++i) {
            queues::PoppedMessage& message = pop_result.messages.emplace_back();
            message.id = queues::MessageId{queues::PartitionId{17}, queues::Sequence{1000 + i}};
            message.transaction_id = popped.messages[i].transaction_id;
            const std::string text = bench_payload(i);
            message.payload.assign(text.begin(), text.end());
            message.created_at = TimestampMs{now_ms + static_cast<std::int64_t>(i)};
            message.partition = "p-17";

            queues::PushItemResult& pushed = push_result.items.emplace_back();
            pushed.status = queues::PushStatus::queued;
            pushed.transaction_id = message.transaction_id;
            pushed.message_id = message.id;
            pushed.queue = "bench";
            client_ids.push_back(true);

            queues::AckItemResult& acked = ack_result.items.emplace_back();
            acked.transaction_id = message.transaction_id;
            acked.success = true;
            acked.queue = "bench";
            acked.partition = "p-17";
            acked.lease_released = queues::LeaseReleased::yes;
        }
    }
};

std::vector<Writer> writers_of(Inputs& in) {
    return {
        {"client-push-100",
         [&in] {
             QUEEN_ASSERT(client::build_push(in.push_items, false, in.ids, in.request).has_value(),
                          "builds");
             return in.request.body.size();
         }},
        {"client-ack-100",
         [&in] {
             client::build_ack_batch(in.popped.messages, client::AckStatus::completed,
                                     "__QUEUE_MODE__", in.request);
             return in.request.body.size();
         }},
        {"client-txn-1+1",
         [&in] {
             QUEEN_ASSERT(
                 client::build_transaction(in.transaction, false, in.ids, in.request).has_value(),
                 "builds");
             return in.request.body.size();
         }},
        {"server-push-100",
         [&in] { return api::detail::format_push(in.push_result, in.client_ids).size(); }},
        {"server-pop-100",
         [&in] {
             auto text = api::detail::format_pop(in.pop_result, nullptr);
             return text ? text->size() : 0;
         }},
        {"server-ack-100", [&in] { return api::detail::format_ack(in.ack_result).size(); }},
        {"bench-payload",
         [&in] {
             in.payload = bench::make_payload(12345, 1'764'491'234'567'890'123, 256);
             return in.payload.size();
         }},
    };
}

double thread_cpu_ns() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

/// The loop callgrind collects (--toggle-collect='*json_eval_measured_loop*').
[[gnu::noinline]] std::size_t json_eval_measured_loop(Writer* writer, int iterations) {
    std::size_t bytes = 0;
    for (int i = 0; i < iterations; ++i) {
        bytes += writer->run();
    }
    return bytes;
}

int run(int argc, char** argv) {
    int rounds = 21;
    int iterations = 2000;
    std::string only;
    int callgrind_iterations = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--rounds" && i + 1 < argc) {
            rounds = std::atoi(argv[++i]);
        } else if (arg == "--iterations" && i + 1 < argc) {
            iterations = std::atoi(argv[++i]);
        } else if (arg == "--callgrind" && i + 2 < argc) {
            only = argv[++i];
            callgrind_iterations = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr,
                         "usage: json_write_bench [--rounds N] [--iterations N]\n"
                         "       json_write_bench --callgrind WRITER ITERATIONS\n");
            return 2;
        }
    }
    Inputs inputs;
    std::vector<Writer> writers = writers_of(inputs);
    if (callgrind_iterations > 0) {
        for (Writer& writer : writers) {
            if (writer.name == only) {
                writer.run();  // warm-up: first allocations
                const std::size_t bytes = json_eval_measured_loop(&writer, callgrind_iterations);
                std::printf("%s %zu bytes\n", writer.name.c_str(), bytes / callgrind_iterations);
                return 0;
            }
        }
        return 2;
    }
    std::printf("%-18s %8s %10s\n", "writer", "bytes", "cpu ns");
    for (Writer& writer : writers) {
        const std::size_t bytes = writer.run();
        std::vector<double> cpu;
        for (int round = 0; round < rounds; ++round) {
            const double start = thread_cpu_ns();
            for (int i = 0; i < iterations; ++i) {
                writer.run();
            }
            cpu.push_back((thread_cpu_ns() - start) / iterations);
        }
        std::sort(cpu.begin(), cpu.end());
        std::printf("%-18s %8zu %10.0f\n", writer.name.c_str(), bytes, cpu[cpu.size() / 2]);
    }
    return 0;
}

}  // namespace
}  // namespace queen::json_eval

int main(int argc, char** argv) {
    return queen::json_eval::run(argc, argv);
}
