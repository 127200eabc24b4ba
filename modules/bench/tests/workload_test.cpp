// bench/tests/workload_test.cpp — payload stamps (with a lane or not), workload and steps names,
// option limits and what a transaction loop is said to be. (The loops run against a real server in
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
    CHECK(queen::bench::parse_payload(R"({"seq":7,"ts":5})", stamp));
    CHECK(stamp.lane == -1);  // no lane: e2e's payloads
}

TEST_CASE("bench: lanes payloads carry their lane first and read it back", "[bench][workload]") {
    for (const std::int64_t size : {1, 60, 256}) {
        const std::string payload = queen::bench::make_payload(42, 987654321012, size, 9'999);
        INFO(payload);
        const std::string header = R"({"lane":9999,"seq":42,"ts":987654321012,"pad":""})";
        CHECK(payload.size() ==
              std::max<std::size_t>(static_cast<std::size_t>(size), header.size()));
        CHECK(payload.starts_with(R"({"lane":9999,"seq":42,"ts":987654321012,"pad":")"));
        PayloadStamp stamp;
        REQUIRE(queen::bench::parse_payload(payload, stamp));
        CHECK(stamp.lane == 9'999);
        CHECK(stamp.sequence == 42);
        CHECK(stamp.timestamp_ns == 987654321012);
        // A stamp read before is reset: the next payload without a lane says so.
        REQUIRE(queen::bench::parse_payload(queen::bench::make_payload(1, 2, size), stamp));
        CHECK(stamp.lane == -1);
    }
    PayloadStamp stamp;
    CHECK(queen::bench::parse_payload(R"({ "seq" : 3, "lane" : 4, "ts" : 5 })", stamp));
    CHECK(stamp.lane == 4);
    CHECK(stamp.sequence == 3);
    CHECK_FALSE(queen::bench::parse_payload(R"({"lane":-1,"seq":3,"ts":5})", stamp));
    CHECK_FALSE(queen::bench::parse_payload(R"({"lane":"l1","seq":3,"ts":5})", stamp));
    CHECK_FALSE(queen::bench::parse_payload(R"({"lane":1,"ts":5})", stamp));
}

TEST_CASE("bench: lanes options: a rate, and one producer per lane at most", "[bench][workload]") {
    using queen::bench::Workload;
    queen::bench::WorkloadOptions options;
    options.workload = Workload::lanes;
    options.partitions = 10'000;
    options.producers = 4;
    options.consumers = 8;
    options.rate_msgs_per_s = 100'000;
    options.seed = 1234;
    const auto error_of = [&options] {
        auto valid = options.validate();
        return valid.has_value() ? std::string{} : valid.error().context;
    };
    CHECK(error_of().empty());
    options.partitions = 4;  // one lane each
    CHECK(error_of().empty());
    options.partitions = 3;  // a producer without a lane
    CHECK(error_of() ==
          "lanes: producers must not exceed partitions (each lane is one producer's)");
}

TEST_CASE("bench: workload names round-trip and options are bounded", "[bench][workload]") {
    using queen::bench::Workload;
    for (const Workload w :
         {Workload::produce, Workload::consume, Workload::e2e, Workload::transaction,
          Workload::partitions, Workload::stream, Workload::lanes}) {
        auto parsed = queen::bench::parse_workload(queen::bench::to_string(w));
        REQUIRE(parsed.has_value());
        CHECK(*parsed == w);
    }
    CHECK_FALSE(queen::bench::parse_workload("log").has_value());
    CHECK(queen::bench::to_string(Workload::lanes) == "lanes");
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

TEST_CASE("bench: a rate is for produce, e2e, lanes and stream, and is bounded",
          "[bench][workload]") {
    using queen::bench::Workload;
    queen::bench::WorkloadOptions options;
    options.rate_msgs_per_s = 150'000;
    for (const Workload w : {Workload::produce, Workload::e2e, Workload::lanes, Workload::stream}) {
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
    const Steps all[] = {Steps::ack_push,      Steps::one_call,     Steps::four_requests,
                         Steps::one_call_next, Steps::stream_cycle, Steps::ack_kv_push};
    for (const Steps steps : all) {
        auto parsed = queen::bench::parse_steps(queen::bench::to_string(steps));
        REQUIRE(parsed.has_value());
        CHECK(*parsed == steps);
    }
    CHECK(queen::bench::to_string(Steps::one_call_next) == "one-call-next");
    CHECK(queen::bench::to_string(Steps::stream_cycle) == "stream-cycle");
    CHECK(queen::bench::to_string(Steps::ack_kv_push) == "ack-kv-push");
    auto unknown = queen::bench::parse_steps("one-call-then-pop");
    REQUIRE_FALSE(unknown.has_value());
    for (const char* name : {"one-call-next", "stream-cycle", "ack-kv-push"}) {
        CHECK(unknown.error().context.find(name) != std::string::npos);  // names them
    }

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
                is_pipelined && steps != Steps::ack_push && steps != Steps::one_call;
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
    CHECK(describe_transaction_loop(Steps::stream_cycle, false).find("streams cycle") !=
          std::string::npos);
    CHECK(describe_transaction_loop(Steps::ack_kv_push, false) ==
          "pop (consumer group) + transaction (ack, kv.set, push)");
    // Every loop reads differently.
    const std::string_view all[] = {describe_transaction_loop(Steps::ack_push, false),
                                    describe_transaction_loop(Steps::ack_push, true),
                                    describe_transaction_loop(Steps::one_call, false),
                                    describe_transaction_loop(Steps::one_call, true),
                                    describe_transaction_loop(Steps::four_requests, false),
                                    describe_transaction_loop(Steps::one_call_next, false),
                                    describe_transaction_loop(Steps::stream_cycle, false),
                                    describe_transaction_loop(Steps::ack_kv_push, false)};
    for (std::size_t i = 0; i < std::size(all); ++i) {
        for (std::size_t j = i + 1; j < std::size(all); ++j) {
            CHECK(all[i] != all[j]);
        }
    }
}

TEST_CASE("bench: stream events have the requested size and the documented members",
          "[bench][workload]") {
    for (const std::int64_t size : {1, 50, 256, 4096}) {
        std::string event = "previous text is replaced";
        queen::bench::write_stream_event(event, 17, 1'764'000'000'123, 42, size);
        INFO(event);
        const std::string header = R"({"user":"u17","ts":1764000000123,"amount":42,"pad":""})";
        CHECK(event.size() == std::max<std::size_t>(static_cast<std::size_t>(size), header.size()));
        CHECK(event.starts_with(R"({"user":"u17","ts":1764000000123,"amount":42,"pad":")"));
        CHECK(event.ends_with("\"}"));
    }
}

TEST_CASE("bench: stream options: window, verify, one producer per partition at most",
          "[bench][workload]") {
    using queen::bench::Workload;
    queen::bench::WorkloadOptions options;
    options.workload = Workload::stream;
    options.partitions = 20;
    options.producers = 20;
    options.consumers = 3;
    options.is_verified = true;
    const auto error_of = [&options] {
        auto valid = options.validate();
        return valid.has_value() ? std::string{} : valid.error().context;
    };
    CHECK(error_of().empty());
    options.producers = 21;  // a partition written by two producers could go back in event time
    CHECK(error_of().find("producers must not exceed partitions") != std::string::npos);
    options.producers = 2;
    for (const std::int64_t window_ms : {0, 86'400'001}) {
        options.window_ms = window_ms;
        CHECK(error_of() == "window must be in [1, 86400000] ms");
    }
    options.window_ms = 1;
    CHECK(error_of().empty());
    options.workload = Workload::e2e;
    CHECK(error_of() == "verify applies to the stream workload only");
    options.is_verified = false;
    CHECK(error_of().empty());  // producers > partitions is fine outside stream
    options.producers = 21;
    CHECK(error_of().empty());
}
