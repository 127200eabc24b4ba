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
