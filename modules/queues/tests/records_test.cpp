// queues/tests/records_test.cpp — the LMDB queue record keeps its bytes: records written before
// the queue options came from one table (queen/core/queue_options.hpp) decode to the same values
// and encode to the same bytes.
#include <array>
#include <string_view>
#include <vector>

#include "queen/core/hex.hpp"
#include "queen/testing/catch.hpp"
#include "records.hpp"

namespace queen::queues {
namespace {

Bytes bytes_of(std::string_view hex) {
    Bytes out(hex.size() / 2);
    REQUIRE(decode_hex(hex, out));
    return out;
}

/// A record with every option away from its default; the bools as `bools` (in table order).
detail::QueueRecord record_with(std::array<bool, 4> bools) {
    detail::QueueRecord record;
    record.name = "orders";
    record.namespace_name = "shop";
    record.task = "billing";
    record.created_at = TimestampMs{1'700'000'000'123};
    QueueOptions& o = record.options;
    o.lease_time_s = 42;
    o.retry_limit = 7;
    o.retry_delay_ms = 250;
    o.max_size = 5000;
    o.ttl_s = 900;
    o.priority = -4;
    o.is_dead_letter_queue = bools[0];
    o.is_dlq_after_max_retries = bools[1];
    o.delayed_processing_s = 2;
    o.window_buffer_s = 3;
    o.is_retention_enabled = bools[2];
    o.retention_s = 600;
    o.completed_retention_s = 60;
    o.is_encryption_enabled = bools[3];
    o.max_wait_time_s = 120;
    return record;
}

void check_same(const detail::QueueRecord& a, const detail::QueueRecord& b) {
    CHECK(a.name == b.name);
    CHECK(a.namespace_name == b.namespace_name);
    CHECK(a.task == b.task);
    CHECK(a.created_at == b.created_at);
    CHECK(a.options == b.options);
}

}  // namespace

TEST_CASE("queues: queue records written before the option table decode and re-encode the same",
          "[queues][records]") {
    detail::QueueRecord defaults;
    defaults.name = "q";
    // Captured from the encoder as it was before the table (commit d16b181): two patterns of
    // the four bools tell every pair of them apart.
    const std::vector<std::pair<std::string_view, detail::QueueRecord>> cases = {
        {"01066f72646572730473686f700762696c6c696e67f6a1abfef962540ef403904e880e070100040601b00978"
         "00f001",
         record_with({true, false, true, false})},
        {"01066f72646572730473686f700762696c6c696e67f6a1abfef962540ef403904e880e070101040600b00978"
         "00f001",
         record_with({true, true, false, false})},
        {"010171000000d80406d00f000000000000000000000000", defaults},
    };
    for (const auto& [hex, expected] : cases) {
        INFO(hex);
        const Bytes old_bytes = bytes_of(hex);
        auto decoded = detail::decode_queue(old_bytes);
        REQUIRE(decoded.has_value());
        check_same(*decoded, expected);
        CHECK(detail::encode(expected) == old_bytes);
    }
}

}  // namespace queen::queues
