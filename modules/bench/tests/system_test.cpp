// bench/tests/system_test.cpp — /proc readers and the Prometheus and /health parsers.
#include "queen/bench/system.hpp"

#include <unistd.h>

#include "queen/testing/catch.hpp"

TEST_CASE("bench: RSS of this process is read from /proc", "[bench][system]") {
    auto rss = queen::bench::read_process_rss_bytes(getpid());
    REQUIRE(rss.has_value());
    CHECK(*rss > 1024);
    CHECK(*rss % 1024 == 0);
    CHECK_FALSE(queen::bench::read_process_rss_bytes(-7).has_value());
    CHECK(queen::bench::read_load_average_1m().value_or(-1) >= 0);
}

TEST_CASE("bench: CPU times come from /proc/<pid>/stat, after a command name with spaces",
          "[bench][system]") {
    using queen::bench::parse_proc_stat_cpu_ticks;
    // utime 1234 and stime 56 are fields 14 and 15; the name holds spaces and a parenthesis.
    const std::string stat =
        "4242 (queen (serve) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 7 0 9 1 2";
    CHECK(parse_proc_stat_cpu_ticks(stat) == std::optional<std::int64_t>{1290});
    CHECK_FALSE(parse_proc_stat_cpu_ticks("4242 (queen) S 1 2 3").has_value());  // too short
    CHECK_FALSE(parse_proc_stat_cpu_ticks("4242 queen S 1 2 3 4 5 6 7 8 9 10 11").has_value());
    CHECK_FALSE(parse_proc_stat_cpu_ticks("1 (q) S 1 1 1 0 -1 0 0 0 0 0 12x 5 0")
                    .has_value());  // not a number

    // This process: its CPU time only grows, and getrusage agrees with /proc within a tick.
    const auto before = queen::bench::read_process_cpu_us(getpid());
    REQUIRE(before.has_value());
    volatile std::uint64_t spin = 0;
    const double own_before = queen::bench::own_cpu_us();
    while (queen::bench::own_cpu_us() - own_before < 30'000) {  // 30 ms of CPU
        spin = spin + 1;
    }
    const auto after = queen::bench::read_process_cpu_us(getpid());
    REQUIRE(after.has_value());
    CHECK(*after >= *before);
    CHECK(*after - *before >= 30'000 - 2 * 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK)));
    CHECK_FALSE(queen::bench::read_process_cpu_us(-7).has_value());
}

TEST_CASE("bench: Prometheus samples are found by exact name", "[bench][system]") {
    const std::string text =
        "# HELP queen_process_resident_memory_bytes_extra Not this one.\n"
        "queen_process_resident_memory_bytes_extra 1\n"
        "# TYPE queen_process_resident_memory_bytes gauge\n"
        "queen_process_resident_memory_bytes 123456789\n"
        "queen_http_error_responses_total{class=\"4xx\"} 7\n"
        "queen_broken notanumber\n";
    using queen::bench::find_prometheus_sample;
    CHECK(find_prometheus_sample(text, "queen_process_resident_memory_bytes") == 123456789.0);
    CHECK(find_prometheus_sample(text, "queen_http_error_responses_total") == 7.0);
    CHECK_FALSE(find_prometheus_sample(text, "queen_broken").has_value());
    CHECK_FALSE(find_prometheus_sample(text, "queen_missing").has_value());
    CHECK_FALSE(find_prometheus_sample("", "x").has_value());
}

TEST_CASE("bench: /health gives the server version", "[bench][system]") {
    auto facts = queen::bench::parse_health(
        R"({"status":"healthy","server":"Queen","version":"0.3.1","tenants":[]})");
    REQUIRE(facts.has_value());
    CHECK(facts->version == "0.3.1");
    CHECK(facts->status == "healthy");
    CHECK_FALSE(queen::bench::parse_health("[1,2]").has_value());
    CHECK_FALSE(queen::bench::parse_health("{oops").has_value());
}
