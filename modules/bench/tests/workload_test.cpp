// bench/tests/workload_test.cpp — payload stamps, workload and steps names, option limits and
// what a transaction loop is said to be. (The loops run against a real server in
// tests/integration/test_bench.py.)
#include "queen/bench/workload.hpp"

#include <iterator>
#include <string>
#include <string_view>

#include "queen/testing/catch.hpp"

using queen::bench::PayloadStamp;

TEST_CASE("bench: payloads have the requested size and carry their stamp", "[bench][workload]") {
    for (const std::int64_t size : {1, 16, 40, 256, 4096}) {
        const std::string payload = queen::bench::make_payload(123456789, 987654321012, size);
        INFO(payload);
        CHECK(payload.size() ==
              std::max<std::size_t>(
                  static_cast<std::size_t>(size),
                  std::string(R"({"seq":123456789,"ts":987654321012,"pad":""})").size()));
        PayloadStamp stamp;
        REQUIRE(queen::bench::parse_payload(payload, stamp));
        CHECK(stamp.sequence == 123456789);
        CHECK(stamp.timestamp_ns == 987654321012);
    }
    PayloadStamp stamp;
    CHECK(queen::bench::parse_payload(R"({ "pad": "x", "ts" : 5, "seq" : 7 })", stamp));
    CHECK(stamp.sequence == 7);
    CHECK(stamp.timestamp_ns == 5);
    CHECK_FALSE(queen::bench::parse_payload(R"({"seq":7})", stamp));
    CHECK_FALSE(queen::bench::parse_payload(R"({"seq":-1,"ts":3})", stamp));
    CHECK_FALSE(queen::bench::parse_payload(R"({"seq":"a","ts":3})", stamp));
    // Near misses of the in-place layout take the search and read the same stamp, or fail.
    CHECK(queen::bench::parse_payload(R"({"seq":7 ,"ts":5})", stamp));
    CHECK(stamp.sequence == 7);
    CHECK(stamp.timestamp_ns == 5);
    CHECK(queen::bench::parse_payload(R"({"seq":8,"pad":"","ts":-6})", stamp));
    CHECK(stamp.sequence == 8);
    CHECK(stamp.timestamp_ns == -6);
    CHECK(queen::bench::parse_payload(R"({"seq":9,"ts":-4,"pad":"x"})", stamp));
    CHECK(stamp.sequence == 9);
    CHECK(stamp.timestamp_ns == -4);
    CHECK_FALSE(queen::bench::parse_payload(R"({"seq":7,"ts":x})", stamp));
    CHECK_FALSE(queen::bench::parse_payload(R"({"seq":7,"ts":)", stamp));
    CHECK_FALSE(queen::bench::parse_payload(R"({"seq":,"ts":1})", stamp));
    CHECK_FALSE(queen::bench::parse_payload(R"({"seq":99999999999999999999,"ts":1})", stamp));
}

TEST_CASE("bench: workload names round-trip and options are bounded", "[bench][workload]") {
    using queen::bench::Workload;
    for (const Workload w : {Workload::produce, Workload::consume, Workload::e2e,
                             Workload::transaction, Workload::partitions}) {
        auto parsed = queen::bench::parse_workload(queen::bench::to_string(w));
        REQUIRE(parsed.has_value());
        CHECK(*parsed == w);
    }
    CHECK_FALSE(queen::bench::parse_workload("log").has_value());
    queen::bench::WorkloadOptions options;
    CHECK(options.validate().has_value());
    options.batch = 0;
    CHECK_FALSE(options.validate().has_value());
    options.batch = 10;
    options.partitions = 10'000'001;
    CHECK_FALSE(options.validate().has_value());
    options.partitions = 10'000'000;
    CHECK(options.validate().has_value());
    options.duration_s = 0;
    CHECK_FALSE(options.validate().has_value());
}

TEST_CASE("bench: a rate is for produce and e2e, and is bounded", "[bench][workload]") {
    using queen::bench::Workload;
    queen::bench::WorkloadOptions options;
    options.rate_msgs_per_s = 150'000;
    for (const Workload w : {Workload::produce, Workload::e2e}) {
        options.workload = w;
        CHECK(options.validate().has_value());
    }
    for (const Workload w : {Workload::consume, Workload::transaction, Workload::partitions}) {
        options.workload = w;
        CHECK_FALSE(options.validate().has_value());
    }
    options.workload = Workload::e2e;
    options.rate_msgs_per_s = -1;
    CHECK_FALSE(options.validate().has_value());
    options.rate_msgs_per_s = 2e9;
    CHECK_FALSE(options.validate().has_value());
}

TEST_CASE("bench: transaction steps round-trip, and pipelining only follows a transaction",
          "[bench][workload]") {
    using queen::bench::Steps;
    using queen::bench::Workload;
    const Steps all[] = {Steps::ack_push, Steps::one_call, Steps::four_requests,
                         Steps::one_call_next};
    for (const Steps steps : all) {
        auto parsed = queen::bench::parse_steps(queen::bench::to_string(steps));
        REQUIRE(parsed.has_value());
        CHECK(*parsed == steps);
    }
    CHECK(queen::bench::to_string(Steps::one_call_next) == "one-call-next");
    auto unknown = queen::bench::parse_steps("one-call-then-pop");
    REQUIRE_FALSE(unknown.has_value());
    CHECK(unknown.error().context.find("one-call-next") != std::string::npos);  // names them

    queen::bench::WorkloadOptions options;
    options.workload = Workload::transaction;
    const auto error_of = [&options] {
        auto valid = options.validate();
        return valid.has_value() ? std::string{} : valid.error().context;
    };
    for (const Steps steps : all) {
        options.steps = steps;
        for (const bool is_pipelined : {false, true}) {
            options.is_pipelined = is_pipelined;
            INFO(queen::bench::to_string(steps) << (is_pipelined ? " pipelined" : ""));
            // Only a loop whose pop travels alone can ride behind its transaction.
            const bool is_refused =
                is_pipelined && (steps == Steps::four_requests || steps == Steps::one_call_next);
            CHECK(error_of().empty() == !is_refused);
            if (is_refused) {
                CHECK(error_of().find("pipelining applies to the steps ack-push and one-call") !=
                      std::string::npos);
            }
        }
    }
    options.is_pipelined = false;
    options.steps = Steps::one_call_next;
    options.workload = Workload::e2e;
    CHECK(error_of() == "steps apply to the transaction workload only");
}

TEST_CASE("bench: the transaction report says what one loop is for every steps value",
          "[bench][workload]") {
    using queen::bench::describe_transaction_loop;
    using queen::bench::Steps;
    // Unchanged for the default loop, which results in docs/benchmarks.md were taken with.
    CHECK(describe_transaction_loop(Steps::ack_push, false) == "pop + transaction (ack and push)");
    CHECK(describe_transaction_loop(Steps::one_call, false) ==
          "pop + transaction (ack, kv.set, push, timer.set)");
    CHECK(describe_transaction_loop(Steps::ack_push, true).find("pipelined") != std::string::npos);
    CHECK(describe_transaction_loop(Steps::one_call, true).find("kv.set") != std::string::npos);
    CHECK(describe_transaction_loop(Steps::four_requests, false).find("five requests") !=
          std::string::npos);
    CHECK(describe_transaction_loop(Steps::one_call_next, false).find("one request a loop") !=
          std::string::npos);
    // Every loop reads differently.
    const std::string_view all[] = {describe_transaction_loop(Steps::ack_push, false),
                                    describe_transaction_loop(Steps::ack_push, true),
                                    describe_transaction_loop(Steps::one_call, false),
                                    describe_transaction_loop(Steps::one_call, true),
                                    describe_transaction_loop(Steps::four_requests, false),
                                    describe_transaction_loop(Steps::one_call_next, false)};
    for (std::size_t i = 0; i < std::size(all); ++i) {
        for (std::size_t j = i + 1; j < std::size(all); ++j) {
            CHECK(all[i] != all[j]);
        }
    }
}
