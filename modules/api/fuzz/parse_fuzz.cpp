// api/fuzz/parse_fuzz.cpp — libFuzzer target `api_parse`: the one reader of /push, /ack,
// /ack/batch and /transaction (parse_fast.cpp) against the nlohmann DOM reference
// (tests/reference_parse.hpp) and nlohmann::json::accept. The first byte picks the endpoint, the
// rest is the body. Both must accept the same bodies and give the same command, or refuse them
// with the same words (the payload limit, counted on different texts, excepted); the core
// scanner must accept exactly the texts nlohmann accepts. First bytes 4-7 (mod 8) feed the
// bodies of the KV, lock and timer routes (parse_state.hpp): each is refused as bad input or
// gives a command within the limits the engine checks again.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "json.hpp"
#include "parse.hpp"
#include "parse_state.hpp"
#include "queen/core/assert.hpp"
#include "queen/core/json_scan.hpp"
#include "reference_parse.hpp"

namespace {

using namespace queen::api;
using namespace queen::api::detail;
namespace queues = queen::queues;
namespace engine = queen::engine;
namespace reference = queen::api::reference;

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
    QUEEN_ASSERT(a.queue == b.queue, "push: queue differs");
    QUEEN_ASSERT(a.partition == b.partition, "push: partition differs");
    QUEEN_ASSERT(a.transaction_id == b.transaction_id, "push: transactionId differs");
    QUEEN_ASSERT(a.trace_id == b.trace_id, "push: traceId differs");
    QUEEN_ASSERT(same_json(a.payload, b.payload), "push: payload differs");
}

void check_ack_items(const queues::AckItem& a, const queues::AckItem& b) {
    QUEEN_ASSERT(a.partition == b.partition && a.transaction_id == b.transaction_id &&
                     a.status == b.status && a.has_error == b.has_error && a.error == b.error &&
                     a.lease == b.lease && a.group == b.group,
                 "ack differs from the DOM reference");
}

/// True when both accepted (the caller compares the commands); asserts the same error otherwise.
template <class T>
bool same_outcome(const queen::Result<T>& got, const queen::Result<T>& want) {
    if ((!got && reference::is_payload_limit(got.error())) ||
        (!want && reference::is_payload_limit(want.error()))) {
        return false;
    }
    QUEEN_ASSERT(got.has_value() == want.has_value(), "the reader and the DOM reference disagree");
    if (!got) {
        QUEEN_ASSERT(got.error().context != "Invalid JSON", "the reader refused valid JSON");
        QUEEN_ASSERT(got.error().context == want.error().context,
                     "different error: ", got.error().context, " / ", want.error().context);
        return false;
    }
    return true;
}

bool is_json_text(const queen::Bytes& bytes) {
    return nlohmann::json::accept(bytes.begin(), bytes.end());
}

/// A refusal of the state routes' parsers is bad input (or the 413 of a large body), never
/// anything else.
template <class T>
bool accepted(const queen::Result<T>& parsed) {
    if (!parsed) {
        QUEEN_ASSERT(parsed.error().is(queen::Errc::invalid_argument) ||
                         parsed.error().is(queen::Errc::out_of_range),
                     "a state route parser failed with ", parsed.error().message());
    }
    return parsed.has_value();
}

/// PUT /api/v1/kv/b/k: the first line of `input` is an If-Match header (when not empty), the
/// rest the body.
void fuzz_kv_put(std::string_view input, const ApiOptions& options) {
    queen::http::Request request;
    request.method = queen::http::Method::put;
    request.params = {{"bucket", "b"}, {"key", "k"}};
    const std::size_t line = input.find('\n');
    if (line != std::string_view::npos) {
        if (line > 0) {
            request.headers.push_back({"If-Match", std::string(input.substr(0, line))});
        }
        input.remove_prefix(line + 1);
    }
    request.body = std::string(input);
    const auto parsed = parse_kv_put(request, options);
    if (!accepted(parsed)) {
        return;
    }
    QUEEN_ASSERT(parsed->ops.size() == 1, "a KV put is one operation");
    const engine::TransactionOp& op = parsed->ops[0];
    QUEEN_ASSERT(op.kind == engine::TransactionOp::Kind::kv_set, "a KV put is a kv.set");
    QUEEN_ASSERT(op.kv.bucket == "b" && op.kv.key == "k", "bucket and key come from the path");
    QUEEN_ASSERT(op.kv.value.size() <= kv_limits().value_bytes_max, "value over the limit");
    QUEEN_ASSERT(is_json_text(op.kv.value), "the stored value is not JSON");
    QUEEN_ASSERT(op.kv.expected_version.has_value() == (line != std::string_view::npos && line > 0),
                 "If-Match was lost or made up");
}

void fuzz_locks(std::string_view body, const ApiOptions& options) {
    const auto json = parse_body(body, options.json_depth_max);
    if (!accepted(json)) {
        return;
    }
    if (const auto acquire = parse_lock_acquire("l", *json, options); accepted(acquire)) {
        QUEEN_ASSERT(!acquire->command.owner.empty() &&
                         acquire->command.owner.size() <= lock_limits().owner_bytes_max,
                     "owner out of bounds");
        QUEEN_ASSERT(acquire->command.ttl_ms >= lock_limits().ttl_ms_min &&
                         acquire->command.ttl_ms <= lock_limits().ttl_ms_max,
                     "ttlMs out of bounds");
        QUEEN_ASSERT(acquire->wait_ms >= 0 && acquire->wait_ms <= options.pop_timeout_ms_max,
                     "waitMs out of bounds");
    }
    if (const auto renew = parse_lock_renew("l", *json); accepted(renew)) {
        QUEEN_ASSERT(renew->token.value() > 0, "a renew needs a token");
    }
    if (const auto release = parse_lock_release("l", *json); accepted(release)) {
        QUEEN_ASSERT(release->ops.size() == 1 && release->ops[0].lock.token.value() > 0,
                     "a release is one operation with a token");
    }
}

void fuzz_timer(std::string_view body, const ApiOptions& options) {
    const auto json = parse_body(body, options.json_depth_max);
    if (!accepted(json)) {
        return;
    }
    const auto parsed = parse_timer_set(*json, options);
    if (!accepted(parsed)) {
        return;
    }
    QUEEN_ASSERT(parsed->ops.size() == 1, "a timer set is one operation");
    const engine::TransactionOp& op = parsed->ops[0];
    QUEEN_ASSERT(op.kind == engine::TransactionOp::Kind::timer_set, "not a timer.set");
    QUEEN_ASSERT(!op.timer.id.empty() && op.timer.id.size() <= timer_limits().id_bytes_max,
                 "timer id out of bounds");
    QUEEN_ASSERT(!std::string_view(op.timer.id).starts_with(engine::delayed_push_timer_prefix),
                 "a client set a delayed push's timer");
    QUEEN_ASSERT(!op.push.queue.empty(), "a timer delivers to a queue");
    QUEEN_ASSERT(op.timer.at.value() >= 0 && op.timer.delay_ms >= 0, "negative time");
    QUEEN_ASSERT(is_json_text(op.push.payload), "the payload is not JSON");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const ApiOptions options = small_options();
    const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
    constexpr std::int64_t now_ms = 1'700'000'000'000;
    // The scanner accepts what nlohmann accepts (nlohmann also skips a byte order mark, stops
    // reading at a NUL byte and has no depth limit).
    if (!body.starts_with("\xEF\xBB\xBF") && body.find('\0') == std::string_view::npos &&
        json_depth(body) <= 500) {
        QUEEN_ASSERT(queen::json::is_valid_json(body) == nlohmann::json::accept(body),
                     "the scanner and nlohmann::json::accept disagree");
    }
    switch (data[0] % 8) {
        case 0: {
            CountingRandom got_random;
            CountingRandom want_random;
            auto got = parse_push(body, options, got_random, now_ms);
            auto want = reference::parse_push(body, options, want_random, now_ms);
            if (!same_outcome(got, want)) {
                break;
            }
            QUEEN_ASSERT(got->push.items.size() == want->push.items.size(), "item counts differ");
            QUEEN_ASSERT(got->has_client_transaction_id == want->has_client_transaction_id,
                         "client transaction ids differ");
            for (std::size_t i = 0; i < got->push.items.size(); ++i) {
                check_push_items(got->push.items[i], want->push.items[i]);
            }
            break;
        }
        case 1:
        case 2: {
            const bool is_batch = data[0] % 4 == 2;
            auto got = is_batch ? parse_ack_batch(body, options) : parse_ack(body, options);
            auto want = is_batch ? reference::parse_ack_batch(body, options)
                                 : reference::parse_ack(body, options);
            if (!same_outcome(got, want)) {
                break;
            }
            QUEEN_ASSERT(got->items.size() == want->items.size(), "ack counts differ");
            for (std::size_t i = 0; i < got->items.size(); ++i) {
                check_ack_items(got->items[i], want->items[i]);
            }
            break;
        }
        case 4: fuzz_kv_put(body, options); break;
        case 5:
        case 6: fuzz_locks(body, options); break;
        case 7: fuzz_timer(body, options); break;
        default: {
            CountingRandom got_random;
            CountingRandom want_random;
            auto got = parse_transaction(body, options, got_random, now_ms);
            auto want = reference::parse_transaction(body, options, want_random, now_ms);
            if (!same_outcome(got, want)) {
                break;
            }
            QUEEN_ASSERT(got->ops.size() == want->ops.size(), "operation counts differ");
            for (std::size_t i = 0; i < got->ops.size(); ++i) {
                const std::string difference =
                    reference::operation_difference(got->ops[i], want->ops[i]);
                QUEEN_ASSERT(difference.empty(), "operation ", i, " differs: ", difference);
            }
            QUEEN_ASSERT(got->next.has_value() == want->next.has_value(), "next differs");
            if (got->next.has_value()) {
                const queues::Pop& a = *got->next;
                const queues::Pop& b = *want->next;
                QUEEN_ASSERT(a.queue == b.queue && a.has_partition == b.has_partition &&
                                 a.partition == b.partition && a.group == b.group &&
                                 a.batch == b.batch,
                             "next pops differ");
            }
        }
    }
    return 0;
}
