// api/tests/format_test.cpp — the answers of the hot routes (pop, ack, push, transaction) against
// an independent rendering of docs/http-api.md, data plane with nlohmann::ordered_json: same
// fields, same order, same bytes, for random results (escapes, runs of partitions, encrypted
// payloads, times across seconds and odd years).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format.hpp"
#include "harness.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace queen::api::detail {
namespace {

using Json = nlohmann::ordered_json;

using queen::api::testing::pick;
using queen::api::testing::SeededRandom;

/// Valid UTF-8 text, plain or needing escapes.
std::string text(Rng& rng) {
    return pick(rng, {"", "q1", "orders", "a\"b", "tab\tbed", "caf\xc3\xa9",
                      "\x01"
                      "ctl",
                      "back\\slash", "new\nline", std::string(40, 'x'),
                      "01890a5d-ac96-774b-bcce-b302099a8057"});
}

/// Compact JSON that nlohmann writes back byte for byte.
std::string payload(Rng& rng) {
    return pick(rng, {"", "null", "true", "17", "-3", "\"s\"", "{\"a\":1,\"b\":[1,2,{}]}",
                      "{\"seq\":12,\"pad\":\"" + std::string(rng.below(300), 'x') + "\"}",
                      "[\"caf\xc3\xa9\",\"a\\\"b\"]"});
}

/// A time in ms: mostly close together (shared seconds), sometimes before 1970 or past 9999.
std::int64_t time_ms(Rng& rng, std::int64_t base) {
    switch (rng.below(8)) {
        case 0: return -static_cast<std::int64_t>(rng.below(100'000'000'000'000));
        case 1: return 253'402'300'800'000 + static_cast<std::int64_t>(rng.below(1'000'000'000));
        default: return base + static_cast<std::int64_t>(rng.below(2500));
    }
}

std::string iso_text(std::int64_t ms, bool microseconds) {
    return microseconds ? format_iso_us(ms) : format_iso_ms(ms);
}

Json string_or_null(const std::string& value) {
    return value.empty() ? Json(nullptr) : Json(value);
}

TEST_CASE("api: pop answers equal an independent rendering", "[api][format]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    SeededRandom random(seed);
    auto cipher = PayloadCipher::from_hex(std::string(64, '7'));
    REQUIRE(cipher.has_value());
    for (int round = 0; round < 2000; ++round) {
        queues::PopResult result;
        result.outcome = queues::PopResult::Outcome::delivered;
        result.queue = text(rng);
        result.group = rng.chance(0.5) ? "__QUEUE_MODE__" : text(rng);
        result.lease = rng.chance(0.2) ? queues::LeaseId{0} : queues::LeaseId{rng.next()};
        result.lease_expires_at =
            TimestampMs{rng.chance(0.2) ? 0 : time_ms(rng, 1'764'491'234'000)};
        result.partitions_claimed = static_cast<std::uint32_t>(rng.below(4));
        const std::int64_t base = time_ms(rng, 1'764'491'234'000);
        queues::PartitionId partition{rng.below(5)};
        std::string partition_name = text(rng);
        const auto count = rng.below(12);
        std::vector<std::string> plain;
        for (std::uint64_t i = 0; i < count; ++i) {
            if (rng.chance(0.25)) {  // the next partition (or only its name changes)
                if (rng.chance(0.5)) {
                    partition = queues::PartitionId{rng.below(5)};
                }
                partition_name = text(rng);
            }
            queues::PoppedMessage& message = result.messages.emplace_back();
            message.id =
                queues::MessageId{partition, queues::Sequence{rng.next() >> rng.below(64)}};
            message.transaction_id = text(rng);
            message.trace_id = rng.chance(0.7) ? "" : text(rng);
            message.producer_sub = rng.chance(0.7) ? "" : text(rng);
            plain.push_back(payload(rng));
            const auto* bytes = reinterpret_cast<const std::uint8_t*>(plain.back().data());
            message.payload.assign(bytes, bytes + plain.back().size());
            if (!plain.back().empty() && rng.chance(0.1)) {
                auto sealed = cipher->encrypt(message.payload, random);
                REQUIRE(sealed.has_value());
                message.payload = std::move(*sealed);
                message.is_encrypted = true;
            }
            message.created_at = TimestampMs{rng.chance(0.9) ? base + static_cast<std::int64_t>(i)
                                                             : time_ms(rng, base)};
            message.partition = partition_name;
            message.retry_count = static_cast<std::uint32_t>(rng.below(3));
        }
        const bool has_lease = result.lease != queues::LeaseId{0};
        const std::string lease_text = has_lease ? queues::format_lease_id(result.lease) : "";
        const queues::PoppedMessage* first = count > 0 ? &result.messages[0] : nullptr;
        Json expected;
        expected["success"] = true;
        expected["queue"] = result.queue;
        expected["partition"] = first != nullptr ? first->partition : "";
        expected["partitionId"] =
            first != nullptr ? queues::format_partition_id(first->id.partition) : "";
        expected["leaseId"] = lease_text;
        expected["consumerGroup"] = result.group;
        expected["leaseExpiresAt"] = has_lease && result.lease_expires_at.value() > 0
                                         ? Json(iso_text(result.lease_expires_at.value(), false))
                                         : Json(nullptr);
        expected["messages"] = Json::array();
        for (std::size_t i = 0; i < result.messages.size(); ++i) {
            const queues::PoppedMessage& message = result.messages[i];
            Json m;
            m["id"] = queues::format_message_id(message.id, message.created_at);
            m["transactionId"] = message.transaction_id;
            m["traceId"] = string_or_null(message.trace_id);
            m["data"] = plain[i].empty() ? Json(nullptr) : Json::parse(plain[i]);
            m["producerSub"] = string_or_null(message.producer_sub);
            m["createdAt"] = iso_text(message.created_at.value(), true);
            m["partitionId"] = queues::format_partition_id(message.id.partition);
            m["partition"] = message.partition;
            m["leaseId"] = lease_text;
            m["consumerGroup"] = result.group;
            m["queue"] = result.queue;
            m["retryCount"] = message.retry_count;
            expected["messages"].push_back(std::move(m));
        }
        expected["partitionsClaimed"] = result.partitions_claimed;
        auto written = format_pop(result, &*cipher);
        REQUIRE(written.has_value());
        REQUIRE(*written == expected.dump());
    }
}

TEST_CASE("api: ack answers equal an independent rendering", "[api][format]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    for (int round = 0; round < 2000; ++round) {
        queues::AckResult result;
        Json expected = Json::array();
        const auto count = rng.below(8);
        for (std::uint64_t i = 0; i < count; ++i) {
            queues::AckItemResult& item = result.items.emplace_back();
            item.transaction_id = text(rng);
            item.success = rng.chance(0.7);
            item.error = rng.chance(0.6) ? "" : text(rng);
            item.queue = text(rng);
            item.partition = text(rng);
            item.lease_released = static_cast<queues::LeaseReleased>(rng.below(3));
            item.dlq = rng.chance(0.2);
            Json e;
            e["index"] = i;
            e["transactionId"] = item.transaction_id;
            e["success"] = item.success;
            e["error"] = string_or_null(item.error);
            e["queueName"] = string_or_null(item.queue);
            e["partitionName"] = string_or_null(item.partition);
            e["leaseReleased"] = item.lease_released == queues::LeaseReleased::unknown
                                     ? Json(nullptr)
                                     : Json(item.lease_released == queues::LeaseReleased::yes);
            e["dlq"] = item.dlq;
            expected.push_back(std::move(e));
        }
        REQUIRE(format_ack(result) == expected.dump());
    }
}

TEST_CASE("api: push answers equal an independent rendering", "[api][format]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    for (int round = 0; round < 2000; ++round) {
        queues::PushResult result;
        std::vector<bool> client_ids;
        Json expected = Json::array();
        const auto count = rng.below(8);
        for (std::uint64_t i = 0; i < count; ++i) {
            queues::PushItemResult& item = result.items.emplace_back();
            item.status = static_cast<queues::PushStatus>(rng.below(4));
            item.transaction_id = text(rng);
            item.message_id =
                queues::MessageId{queues::PartitionId{rng.below(9)}, queues::Sequence{rng.next()}};
            item.created_at = TimestampMs{time_ms(rng, 1'700'000'000'000)};
            item.queue = text(rng);
            item.partition = text(rng);
            item.trace_id = rng.chance(0.5) ? "" : text(rng);
            item.error = text(rng);
            client_ids.push_back(rng.chance(0.5));
            Json e;
            e["index"] = i;
            switch (item.status) {
                case queues::PushStatus::queued:
                    e["transaction_id"] = item.transaction_id;
                    e["status"] = "queued";
                    e["message_id"] = queues::format_message_id(item.message_id, item.created_at);
                    e["partition_id"] = queues::format_partition_id(item.message_id.partition);
                    e["trace_id"] = string_or_null(item.trace_id);
                    e["queueName"] = item.queue;
                    break;
                case queues::PushStatus::duplicate:
                    e["transaction_id"] = item.transaction_id;
                    e["status"] = "duplicate";
                    e["message_id"] = queues::format_message_id(item.message_id, item.created_at);
                    e["queueName"] = item.queue;
                    break;
                case queues::PushStatus::buffered:
                    e["status"] = "buffered";
                    e["queue"] = item.queue;
                    e["partition"] = item.partition;
                    if (client_ids.back()) {
                        e["transactionId"] = item.transaction_id;
                    }
                    break;
                case queues::PushStatus::failed:
                    e["transaction_id"] = item.transaction_id;
                    e["status"] = "failed";
                    e["error"] = item.error;
                    e["queueName"] = item.queue;
                    break;
            }
            expected.push_back(std::move(e));
        }
        REQUIRE(format_push(result, client_ids) == expected.dump());
    }
}

TEST_CASE("api: transaction answers equal an independent rendering", "[api][format]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    for (int round = 0; round < 2000; ++round) {
        engine::TransactionResult result;
        result.success = rng.chance(0.7);
        result.error = rng.chance(0.5) ? "" : text(rng);
        const std::string uuid = text(rng);
        Json expected;
        expected["transactionId"] = uuid;
        expected["success"] = result.success;
        if (!result.success) {
            expected["error"] = result.error.empty() ? "Transaction failed" : result.error;
        }
        expected["results"] = Json::array();
        const auto count = rng.below(5);
        if (!result.success) {
            result.failed_op = static_cast<std::uint32_t>(rng.below(count + 1));
        }
        for (std::uint64_t i = 0; i < count; ++i) {
            engine::TransactionOpResult& op = result.results.emplace_back();
            op.kind = rng.chance(0.5) ? engine::TransactionOp::Kind::push
                                      : engine::TransactionOp::Kind::ack;
            op.success = rng.chance(0.7);
            op.transaction_id = text(rng);
            op.message_id =
                queues::MessageId{queues::PartitionId{rng.below(9)}, queues::Sequence{rng.next()}};
            op.created_at = TimestampMs{time_ms(rng, 1'700'000'000'000)};
            op.queue = text(rng);
            op.dlq = rng.chance(0.3);
            op.error = rng.chance(0.5) ? "" : text(rng);
            Json e;
            e["index"] = i;
            if (op.kind == engine::TransactionOp::Kind::push) {
                e["type"] = "push";
                e["success"] = op.success;
                e["transactionId"] = op.transaction_id;
                if (op.success) {
                    e["messageId"] = queues::format_message_id(op.message_id, op.created_at);
                    e["partitionId"] = queues::format_partition_id(op.message_id.partition);
                }
                e["queueName"] = op.queue;
                if (!op.error.empty()) {
                    e["error"] = op.error;
                }
            } else {
                e["type"] = "ack";
                e["success"] = op.success;
                e["transactionId"] = op.transaction_id;
                e["error"] = string_or_null(op.error);
                e["dlq"] = op.dlq;
            }
            // A refused transaction lists the operations before the failing one (Queen v1);
            // the engine's result also holds the failing one's, which the answer leaves out.
            if (result.success || i < result.failed_op) {
                expected["results"].push_back(std::move(e));
            }
        }
        REQUIRE(format_transaction(result, uuid) == expected.dump());
    }
}

TEST_CASE("api: JsonWriter times equal format_iso in and across seconds", "[api][format]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    JsonWriter out;
    std::string expected = "[";
    out.begin_array();
    std::int64_t ms = -2'000;
    for (int i = 0; i < 5000; ++i) {
        // Steps of 0-1999 ms (so both repeats of a second and new seconds), then jumps.
        ms = rng.chance(0.02) ? time_ms(rng, 0) : ms + static_cast<std::int64_t>(rng.below(2000));
        const bool microseconds = rng.chance(0.5);
        out.iso_time(ms, microseconds);
        expected += (i > 0 ? ",\"" : "\"") + iso_text(ms, microseconds) + "\"";
    }
    out.end_array();
    CHECK(out.take() == expected + "]");
}

TEST_CASE("api: JsonWriter copies its own items, also when the copy moves the buffer",
          "[api][format]") {
    for (std::size_t capacity :
         {std::size_t{0}, std::size_t{1}, std::size_t{40}, std::size_t{4096}}) {
        JsonWriter out(capacity);
        out.begin_array().begin_object().field("a", 1);
        const std::size_t from = out.text().size() + 1;
        out.field("b", std::string(300, 'x')).field("c", "q\"1");
        const std::size_t size = out.text().size() - from;
        out.end_object().begin_object().copy_items(from, size).end_object();
        out.begin_object().field("z", true).copy_items(from, size).copy_items(from, 0);
        out.end_object().end_array();
        const std::string members = "\"b\":\"" + std::string(300, 'x') + "\",\"c\":\"q\\\"1\"";
        CHECK(out.take() ==
              "[{\"a\":1," + members + "},{" + members + "},{\"z\":true," + members + "}]");
    }
}

TEST_CASE("api: JsonWriter refuses a key out of place", "[api][format]") {
    queen::testing::AssertCapture capture;
    JsonWriter top;
    CHECK_THROWS_AS(top.key("k"), queen::testing::AssertionFired);
    JsonWriter twice;
    twice.begin_object().key("a");
    CHECK_THROWS_AS(twice.key("b"), queen::testing::AssertionFired);
    JsonWriter dynamic;
    dynamic.begin_object().key(std::string("a"));
    CHECK_THROWS_AS(dynamic.key(std::string("b")), queen::testing::AssertionFired);
}

}  // namespace
}  // namespace queen::api::detail
