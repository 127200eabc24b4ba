// bench/tests/workload_test.cpp — payload stamps, workload names and option limits. (The loops
// run against a real server in tests/integration/test_bench.py.)
#include "queen/bench/workload.hpp"

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
