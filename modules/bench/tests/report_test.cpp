// bench/tests/report_test.cpp — the JSON fields scripts rely on, and the table people read.
#include "queen/bench/report.hpp"

#include <nlohmann/json.hpp>

#include "queen/testing/catch.hpp"

using queen::bench::Report;

namespace {
Report sample_report() {
    Report report;
    report.workload = "produce";
    report.profile = "push-100";
    report.latency_of = "push request";
    report.elapsed_s = 2.0;
    report.messages = 100'000;
    report.produced = 100'000;
    report.bytes = 25'600'000;
    report.errors = 3;
    report.error_samples.push_back({"push: HTTP 413 body too large", 2});
    report.error_samples.push_back({"push: item failed: queue paused", 1});
    for (std::int64_t ms = 1; ms <= 100; ++ms) {
        report.latency_ns.record(ms * 1'000'000);
    }
    report.metrics.push_back({"fill_msgs_per_s", 1234.5});
    report.conditions.url = "http://127.0.0.1:6632";
    report.conditions.server_version = "0.1.0";
    report.conditions.durability = "log fdatasync before ack";
    report.conditions.batch = 100;
    report.conditions.size_bytes = 256;
    report.conditions.partitions = 1;
    report.conditions.producers = 4;
    report.conditions.driver_threads = 1;
    report.conditions.cores = 2;
    report.conditions.load_average_1m = 3.5;
    return report;
}
}  // namespace

TEST_CASE("bench: report rates divide by the elapsed time", "[bench][report]") {
    Report report = sample_report();
    CHECK(report.msgs_per_s() == Approx(50'000));
    CHECK(report.mb_per_s() == Approx(12.8));
    report.elapsed_s = 0;
    CHECK(report.msgs_per_s() == 0);
    CHECK(report.mb_per_s() == 0);
}

TEST_CASE("bench: report JSON has the documented fields and units", "[bench][report]") {
    const auto json = nlohmann::json::parse(queen::bench::format_json(sample_report()));
    CHECK(json["workload"] == "produce");
    CHECK(json["profile"] == "push-100");
    CHECK(json["msgs_per_s"].get<double>() == Approx(50'000));
    CHECK(json["mb_per_s"].get<double>() == Approx(12.8));
    const auto& latency = json["latency_ms"];
    CHECK(latency["p50"].get<double>() == Approx(50).epsilon(0.01));
    CHECK(latency["p90"].get<double>() == Approx(90).epsilon(0.01));
    CHECK(latency["p99"].get<double>() == Approx(99).epsilon(0.01));
    CHECK(latency["p999"].get<double>() == Approx(100).epsilon(0.01));
    CHECK(latency["max"].get<double>() == Approx(100));
    CHECK(latency["count"] == 100);
    CHECK(json["errors"] == 3);
    REQUIRE(json["error_samples"].size() == 2);
    CHECK(json["error_samples"][0]["error"] == "push: HTTP 413 body too large");
    CHECK(json["error_samples"][0]["count"] == 2);
    CHECK(json["error_samples"][1]["error"] == "push: item failed: queue paused");
    CHECK(json["error_samples"][1]["count"] == 1);
    CHECK(json["metrics"]["fill_msgs_per_s"].get<double>() == Approx(1234.5));
    const auto& conditions = json["conditions"];
    CHECK(conditions["server_version"] == "0.1.0");
    CHECK(conditions["durability"] == "log fdatasync before ack");
    CHECK(conditions["batch"] == 100);
    CHECK(conditions["size_bytes"] == 256);
    CHECK(conditions["partitions"] == 1);
    CHECK(conditions["producers"] == 4);
    CHECK(conditions["consumers"] == 0);
    CHECK(conditions["driver_threads"] == 1);
    CHECK(conditions["cores"] == 2);
    CHECK(conditions["load_average_1m"].get<double>() == Approx(3.5));
    CHECK(conditions["server_rss_bytes"].is_null());
    CHECK(conditions["pop_partitions"] == 0);  // produce pops nothing
    CHECK(conditions["seed"].is_null());       // only lanes draws
}

TEST_CASE("bench: a lanes report names its lanes, pop partitions and seed", "[bench][report]") {
    auto report = sample_report();
    report.workload = "lanes";
    report.conditions.partitions = 10'000;
    report.conditions.pop_partitions = 1;
    report.conditions.seed = 18'446'744'073'709'551'615ULL;  // any 64-bit seed survives
    const std::string table = queen::bench::format_table(report);
    CHECK(table.find("    lanes               10000, pops claim up to 1 partition\n") !=
          std::string::npos);
    CHECK(table.find("    seed                18446744073709551615") != std::string::npos);
    const auto json = nlohmann::json::parse(queen::bench::format_json(report));
    CHECK(json["conditions"]["partitions"] == 10'000);
    CHECK(json["conditions"]["pop_partitions"] == 1);
    CHECK(json["conditions"]["seed"].get<std::uint64_t>() == 18'446'744'073'709'551'615ULL);
    report.workload = "e2e";
    report.conditions.pop_partitions = 16;
    CHECK(queen::bench::format_table(report).find(
              "    partitions          10000, pops claim up to 16 partitions\n") !=
          std::string::npos);
}

TEST_CASE("bench: report table shows rates, percentiles, errors and conditions",
          "[bench][report]") {
    const std::string table = queen::bench::format_table(sample_report());
    CHECK(table.find("queen bench produce (profile push-100)") != std::string::npos);
    CHECK(table.find("50000 msgs/s, 12.80 MB/s") != std::string::npos);
    CHECK(table.find("p99 99.") != std::string::npos);
    CHECK(table.find("max 100.000") != std::string::npos);
    CHECK(table.find("errors                3") != std::string::npos);
    // Each kind of error on its own line under the count, in the order they first happened.
    const auto first = table.find("2 x push: HTTP 413 body too large\n");
    const auto second = table.find("1 x push: item failed: queue paused\n");
    CHECK(first != std::string::npos);
    CHECK(second != std::string::npos);
    CHECK(first < second);
    CHECK(table.find("fill_msgs_per_s") != std::string::npos);
    CHECK(table.find("100 msgs x 256 bytes") != std::string::npos);
    CHECK(table.find("2 cores, load average 3.50") != std::string::npos);
    CHECK(queen::bench::format_ms(1'234'567) == "1.235");
    CHECK(table.find("paced rate") == std::string::npos);  // unpaced: no target to show
    CHECK(table.find("check") == std::string::npos);       // no check: no line
    CHECK(nlohmann::json::parse(queen::bench::format_json(sample_report()))["check"].is_null());
}

TEST_CASE("bench: a report with a check says whether it passed and what it compared",
          "[bench][report]") {
    auto report = sample_report();
    report.check = "lag 0 after the drain; 10 + 5 == 15 events pushed";
    for (const bool is_passed : {true, false}) {
        report.check_passed = is_passed;
        const std::string table = queen::bench::format_table(report);
        CHECK(table.find(std::string("  check                 ") +
                         (is_passed ? "passed: " : "FAILED: ") + report.check + "\n") !=
              std::string::npos);
        const auto json = nlohmann::json::parse(queen::bench::format_json(report));
        CHECK(json["check"]["passed"] == is_passed);
        CHECK(json["check"]["what"] == report.check);
    }
}

TEST_CASE("bench: a paced report shows its target next to the achieved rate", "[bench][report]") {
    auto report = sample_report();
    report.target_msgs_per_s = 150'000;
    report.produce_msgs_per_s = 120'000;
    report.metrics.push_back({"consumer_lag_msgs_at_produce_end", 42});
    const std::string table = queen::bench::format_table(report);
    CHECK(table.find("paced rate            target 150000 msgs/s, producers achieved 120000 "
                     "msgs/s (80.0%)") != std::string::npos);
    // A name longer than the column keeps a space before its value.
    CHECK(table.find("consumer_lag_msgs_at_produce_end 42") != std::string::npos);
    const auto json = nlohmann::json::parse(queen::bench::format_json(report));
    CHECK(json["target_msgs_per_s"].get<double>() == Approx(150'000));
    CHECK(json["produce_msgs_per_s"].get<double>() == Approx(120'000));
}

TEST_CASE("bench: a report checks its profile's goal on rate, p99 and errors", "[bench][report]") {
    auto report = sample_report();  // 50,000 msgs/s, p99 ~99 ms, 3 errors
    CHECK_FALSE(report.goal_met().has_value());
    CHECK(queen::bench::format_table(report).find("goal") == std::string::npos);
    CHECK(nlohmann::json::parse(queen::bench::format_json(report))["goal"].is_null());

    report.errors = 0;
    report.goal.msgs_per_s_min = 50'000;
    CHECK(report.goal_met() == std::optional<bool>(true));
    report.goal.msgs_per_s_min = 50'001;
    CHECK(report.goal_met() == std::optional<bool>(false));
    report.goal.msgs_per_s_min = 0;
    report.goal.p99_ms_max = 100;
    CHECK(report.goal_met() == std::optional<bool>(true));
    report.goal.p99_ms_max = 99;  // p99 is 99 ms: not under it
    CHECK(report.goal_met() == std::optional<bool>(false));
    report.goal = {40'000, 150};
    CHECK(report.goal_met() == std::optional<bool>(true));
    CHECK(queen::bench::format_table(report).find(
              "goal                  >= 40000 msgs/s, p99 < 150.0 ms: met") != std::string::npos);
    report.errors = 1;  // errors never meet a goal
    CHECK(report.goal_met() == std::optional<bool>(false));
    CHECK(queen::bench::format_table(report).find(": NOT met") != std::string::npos);
    const auto json = nlohmann::json::parse(queen::bench::format_json(report));
    CHECK(json["goal"]["msgs_per_s_min"].get<double>() == Approx(40'000));
    CHECK(json["goal"]["p99_ms_max"].get<double>() == Approx(150));
    CHECK(json["goal"]["met"] == false);
}

TEST_CASE("bench: a comparison gives each run's rate and the first's ratio to the others",
          "[bench][report]") {
    Report fast = sample_report();
    fast.metrics.push_back({"transactions_per_s", 3000});
    fast.metrics.push_back({"server_cpu_us_per_msg", 40});
    Report slow = sample_report();  // no transactions_per_s: its msgs_per_s (50,000)
    const std::vector<queen::bench::NamedReport> runs = {{"one-call-next", &fast},
                                                         {"four-requests", &slow}};
    const std::string text = queen::bench::format_comparison(runs, false);
    CHECK_THAT(text, Catch::Contains("one-call-next") && Catch::Contains("3000.00 /s") &&
                         Catch::Contains("server 40.00 us each") &&
                         Catch::Contains("one-call-next/four-requests 0.06"));
    const auto json = nlohmann::json::parse(queen::bench::format_comparison(runs, true));
    CHECK(json["compare"][0]["per_s"] == 3000);
    CHECK(json["compare"][1]["per_s"] == 50'000);
    CHECK(json["compare"][1]["server_cpu_us"] == -1);
    CHECK(json["ratios"]["one-call-next/four-requests"].get<double>() == Approx(0.06));
}
