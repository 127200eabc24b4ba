// api/fuzz/parse_fuzz.cpp — libFuzzer target `api_parse`: the scanner fast paths of /push, /ack,
// /ack/batch and /transaction against the nlohmann DOM path. The first byte picks the endpoint,
// the rest is the body. Whenever a fast path accepts a body, the DOM path must accept it too and
// give the same command (payloads compared as JSON values).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "json.hpp"
#include "parse.hpp"
#include "queen/core/assert.hpp"

namespace {

using namespace queen::api;
using namespace queen::api::detail;
namespace queues = queen::queues;

class CountingRandom final : public RandomSource {
public:
    void fill(std::uint8_t* data, std::size_t size) override {
        for (std::size_t i = 0; i < size; ++i) {
            data[i] = static_cast<std::uint8_t>(counter_++ * 131u + 7u);
        }
    }

private:
    std::uint32_t counter_ = 0;
};

ApiOptions small_options() {
    ApiOptions options;
    options.name_bytes_max = 64;
    options.payload_bytes_max = 256;
    options.push_items_max = 8;
    options.ack_items_max = 8;
    options.transaction_operations_max = 8;
    options.json_depth_max = 8;
    return options;
}

bool same_json(const queen::Bytes& a, const queen::Bytes& b) {
    const auto pa = nlohmann::json::parse(a.begin(), a.end(), nullptr, false);
    const auto pb = nlohmann::json::parse(b.begin(), b.end(), nullptr, false);
    return !pa.is_discarded() && pa == pb;
}

void check_push_items(const queues::PushItem& a, const queues::PushItem& b) {
    QUEEN_ASSERT(a.queue == b.queue, "fast push: queue differs");
    QUEEN_ASSERT(a.partition == b.partition, "fast push: partition differs");
    QUEEN_ASSERT(a.transaction_id == b.transaction_id, "fast push: transactionId differs");
    QUEEN_ASSERT(a.trace_id == b.trace_id, "fast push: traceId differs");
    QUEEN_ASSERT(same_json(a.payload, b.payload), "fast push: payload differs");
}

void check_ack_items(const queues::AckItem& a, const queues::AckItem& b) {
    QUEEN_ASSERT(a.partition == b.partition && a.transaction_id == b.transaction_id &&
                     a.status == b.status && a.has_error == b.has_error && a.error == b.error &&
                     a.lease == b.lease && a.group == b.group,
                 "fast ack differs from the DOM path");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const ApiOptions options = small_options();
    const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
    constexpr std::int64_t now_ms = 1'700'000'000'000;
    auto dom = parse_body(body, options.json_depth_max);
    switch (data[0] % 4) {
        case 0: {
            CountingRandom fast_random;
            CountingRandom slow_random;
            auto fast = parse_push_fast(body, options, fast_random, now_ms);
            if (!fast) {
                break;
            }
            QUEEN_ASSERT(dom.has_value(), "fast push accepted a body the parser refuses");
            auto slow = parse_push(*dom, options, slow_random, now_ms);
            QUEEN_ASSERT(slow.has_value(), "fast push accepted a body parse_push refuses");
            QUEEN_ASSERT(fast->push.items.size() == slow->push.items.size(), "item counts differ");
            for (std::size_t i = 0; i < fast->push.items.size(); ++i) {
                check_push_items(fast->push.items[i], slow->push.items[i]);
            }
            break;
        }
        case 1:
        case 2: {
            const bool is_batch = data[0] % 4 == 2;
            auto fast = parse_ack_fast(body, is_batch, options);
            if (!fast) {
                break;
            }
            QUEEN_ASSERT(dom.has_value(), "fast ack accepted a body the parser refuses");
            auto slow = is_batch ? parse_ack_batch(*dom, options) : parse_ack(*dom, options);
            QUEEN_ASSERT(slow.has_value(), "fast ack accepted a body parse_ack refuses");
            QUEEN_ASSERT(fast->items.size() == slow->items.size(), "ack counts differ");
            for (std::size_t i = 0; i < fast->items.size(); ++i) {
                check_ack_items(fast->items[i], slow->items[i]);
            }
            break;
        }
        default: {
            CountingRandom fast_random;
            CountingRandom slow_random;
            auto fast = parse_transaction_fast(body, options, fast_random, now_ms);
            if (!fast) {
                break;
            }
            QUEEN_ASSERT(dom.has_value(), "fast transaction accepted a body the parser refuses");
            auto slow = parse_transaction(*dom, options, slow_random, now_ms);
            QUEEN_ASSERT(slow.has_value(), "fast transaction accepted what the DOM path refuses");
            QUEEN_ASSERT(fast->ops.size() == slow->ops.size(), "operation counts differ");
            for (std::size_t i = 0; i < fast->ops.size(); ++i) {
                QUEEN_ASSERT(fast->ops[i].kind == slow->ops[i].kind, "operation kinds differ");
                if (fast->ops[i].kind == queues::TransactionOp::Kind::push) {
                    check_push_items(fast->ops[i].push, slow->ops[i].push);
                } else {
                    check_ack_items(fast->ops[i].ack, slow->ops[i].ack);
                }
            }
        }
    }
    return 0;
}
