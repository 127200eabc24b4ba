// tools/json_read_bench/bodies.cpp — the bodies of bodies.hpp (pop answers are written by the
// server's own format_pop, the other bodies the way the C++ client writes them).
#include "bodies.hpp"

#include <cstdio>

#include "format.hpp"
#include "parse.hpp"
#include "queen/client/protocol.hpp"
#include "queen/core/rng.hpp"
#include "queen/queues/types.hpp"

namespace queen::json_eval {
namespace {

constexpr std::int64_t now_ms = 1'764'491'234'567;

/// Deterministic bytes for the UUIDv7 texts.
class SeededRandom final : public api::RandomSource {
public:
    void fill(std::uint8_t* data, std::size_t size) override {
        for (std::size_t i = 0; i < size; ++i) {
            data[i] = static_cast<std::uint8_t>(rng_.next());
        }
    }

private:
    Rng rng_{42};
};

SeededRandom& ids() {
    static SeededRandom random;
    return random;
}

/// `compact` with a space after every ':' and ',' outside strings.
std::string spaced_out(const std::string& compact) {
    std::string out;
    bool in_string = false;
    bool escaped = false;
    for (const char c : compact) {
        out.push_back(c);
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == ':' || c == ',') {
            out.push_back(' ');
        }
    }
    return out;
}

std::string push_item(const std::string& payload) {
    return R"({"queue":"orders","partition":"p-17","payload":)" + payload +
           R"(,"transactionId":")" + api::detail::time_uuid(ids(), now_ms) + "\"}";
}

std::string push_body(std::size_t count, int payload_kind) {
    std::string body = R"({"items":[)";
    for (std::size_t i = 0; i < count; ++i) {
        body += i == 0 ? "" : ",";
        const std::string payload = payload_kind == 2   ? bench_payload(i)
                                    : payload_kind == 1 ? order_payload(i, true)
                                                        : order_payload(i, false);
        body += push_item(payload);
    }
    return body + "]}";
}

std::string ack_batch(std::size_t count) {
    std::string body = R"({"acknowledgments":[)";
    const std::string partition = queues::format_partition_id(queues::PartitionId{17});
    for (std::size_t i = 0; i < count; ++i) {
        body += i == 0 ? "{" : ",{";
        body += R"("transactionId":")" + api::detail::time_uuid(ids(), now_ms) +
                R"(","partitionId":")" + partition +
                R"(","status":"completed","consumerGroup":null})";
    }
    return body + "]}";
}

std::string transaction_body() {
    return R"({"operations":[{"type":"ack","transactionId":")" +
           api::detail::time_uuid(ids(), now_ms) + R"(","partitionId":")" +
           queues::format_partition_id(queues::PartitionId{17}) +
           R"(","status":"completed","leaseId":")" +
           queues::format_lease_id(queues::LeaseId{123456}) +
           R"(","consumerGroup":"__QUEUE_MODE__"},{"type":"push","items":[)" +
           push_item(order_payload(7, false)) + "]}]}";
}

/// The four-step worker's transaction as `queen bench transaction --steps one-call-next` sends
/// it (batch 1, 256-byte payload): ack, push, kv.set, timer.set and the next pop.
std::string worker_body() {
    /// The client's ids, the same for every run.
    class FixedIds final : public client::IdSource {
    public:
        void append_uuid_v7(std::string& out) override {
            out += api::detail::time_uuid(ids(), now_ms);
        }
    };
    client::TransactionRequest request;
    client::Ack ack;
    ack.transaction_id = api::detail::time_uuid(ids(), now_ms);
    ack.partition_id = queues::format_partition_id(queues::PartitionId{17});
    ack.lease_id = queues::format_lease_id(queues::LeaseId{123456});
    request.operations.emplace_back(ack);
    client::TransactionPush push;
    client::PushItem& item = push.items.emplace_back();
    item.queue = "bench";
    item.partition = "p-17";
    item.payload_json = bench_payload(7);
    request.operations.emplace_back(push);
    client::KvSet kv;
    kv.bucket = "bench";
    kv.key = "p-17";
    kv.value_json = R"({"seq":123457})";
    request.operations.emplace_back(kv);
    client::TimerSet timer;
    timer.id = "bench-p-17";
    timer.queue = "bench-reminders";
    timer.payload_json = "{}";
    timer.delay_ms = 60'000;
    timer.is_replace = true;
    request.operations.emplace_back(timer);
    request.next = client::NextPop{"bench", "p-17", "", 1};
    FixedIds fixed;
    client::OwnedRequest out;
    if (!client::build_transaction(request, false, fixed, out)) {
        return {};
    }
    return out.body;
}

std::string pop_answer(std::size_t count, bool is_bench_payload) {
    queues::PopResult popped;
    popped.outcome = queues::PopResult::Outcome::delivered;
    popped.queue = "orders";
    popped.group = "__QUEUE_MODE__";
    popped.lease = queues::LeaseId{123456};
    popped.lease_expires_at = TimestampMs{now_ms + 60'000};
    popped.partitions_claimed = 1;
    for (std::size_t i = 0; i < count; ++i) {
        queues::PoppedMessage& message = popped.messages.emplace_back();
        message.id = queues::MessageId{queues::PartitionId{17}, queues::Sequence{1000 + i}};
        message.transaction_id = api::detail::time_uuid(ids(), now_ms);
        const std::string payload = is_bench_payload ? bench_payload(i) : order_payload(i, false);
        message.payload.assign(payload.begin(), payload.end());
        message.created_at = TimestampMs{now_ms + static_cast<std::int64_t>(i)};
        message.partition = "p-17";
    }
    auto text = api::detail::format_pop(popped, nullptr);
    return text ? *text : std::string{};
}

}  // namespace

std::string order_payload(std::uint64_t sequence, bool spaced) {
    char number[16];
    std::snprintf(number, sizeof number, "%08llu", static_cast<unsigned long long>(sequence));
    const std::string compact =
        std::string(R"({"orderId":"ord-)") + number + R"(","customer":{"id":)" +
        std::to_string(40'000 + sequence * 7 % 10'000) +
        R"(,"name":"Ana Souza","email":"ana.souza@example.com","tier":"gold"},)"
        R"("lines":[{"sku":"SKU-1001","qty":2,"price":19.99},{"sku":"SKU-2002","qty":1,)"
        R"("price":5.5}],"total":45.48,"currency":"EUR","paid":true,"note":null,)"
        R"("createdAt":1764491234567})";
    return spaced ? spaced_out(compact) : compact;
}

std::string bench_payload(std::uint64_t sequence) {
    std::string out =
        "{\"seq\":" + std::to_string(sequence) + ",\"ts\":1764491234567890123,\"pad\":\"";
    out.append(256 - out.size() - 2, 'x');
    return out + "\"}";
}

std::string padded(std::string text) {
    const std::size_t size = text.size();
    text.append(64, ' ');
    text.resize(size);  // the spaces stay behind the end, inside the capacity
    return text;
}

std::vector<Body> make_bodies() {
    std::vector<Body> out;
    out.push_back({"push-100", BodyKind::push, padded(push_body(100, 0))});
    out.push_back({"push-100-spaced", BodyKind::push, padded(push_body(100, 1))});
    out.push_back({"push-100-bench", BodyKind::push, padded(push_body(100, 2))});
    out.push_back({"push-1", BodyKind::push, padded(push_body(1, 0))});
    out.push_back({"ack-100", BodyKind::ack_batch, padded(ack_batch(100))});
    out.push_back({"txn-1+1", BodyKind::transaction, padded(transaction_body())});
    out.push_back({"txn-worker", BodyKind::transaction, padded(worker_body())});
    out.push_back({"pop-100", BodyKind::pop_answer, padded(pop_answer(100, false))});
    out.push_back({"pop-100-bench", BodyKind::pop_answer, padded(pop_answer(100, true))});
    return out;
}

std::string push_one(const std::string& payload) {
    return R"({"items":[)" + push_item(payload) + "]}";
}

std::string ack_two() {
    return ack_batch(2);
}

std::string pop_three() {
    return pop_answer(3, false);
}

}  // namespace queen::json_eval
