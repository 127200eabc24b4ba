// modules/core/tests/queue_options_test.cpp — the table of the 15 queue options: unique keys,
// defaults inside their ranges and equal to what a default QueueOptions holds.
#include "queen/core/queue_options.hpp"

#include <set>
#include <string>

#include "queen/testing/catch.hpp"

TEST_CASE("core: the queue option table has 15 rows with unique keys and defaults in range",
          "[core][queue_options]") {
    STATIC_REQUIRE(queen::queue_option_count == 15);
    const queen::QueueOptions defaults;
    std::set<std::string_view> keys;
    std::size_t rows = 0;
    queen::for_each_queue_option([&](const auto& option) {
        INFO(std::string(option.key));
        ++rows;
        CHECK(keys.insert(option.key).second);
        CHECK_FALSE(option.description.empty());
        CHECK(option.min <= option.default_value);
        CHECK(option.default_value <= option.max);
        CHECK(defaults.*option.member == option.default_value);
        CHECK(queen::queue_option_key(option.member) == option.key);
    });
    CHECK(rows == 15);
}

TEST_CASE("core: the queue option defaults are the broker's (ttl off)", "[core][queue_options]") {
    const queen::QueueOptions defaults;
    CHECK(defaults.lease_time_s == 300);
    CHECK(defaults.retry_limit == 3);
    CHECK(defaults.retry_delay_ms == 1000);
    CHECK(defaults.ttl_s == 0);
    CHECK_FALSE(defaults.is_dead_letter_queue);
    STATIC_REQUIRE(queen::queue_option_key(&queen::QueueOptions::ttl_s) == "ttl");
    STATIC_REQUIRE(queen::queue_option_key(&queen::QueueOptions::is_encryption_enabled) ==
                   "encryptionEnabled");
}
