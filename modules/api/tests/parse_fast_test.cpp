// api/tests/parse_fast_test.cpp — the one reader of the hot bodies (push, ack, ack batch,
// transaction) against the DOM reference (reference_parse.hpp): for every generated body (valid,
// odd, mutated) both give the same command, or both refuse it with the same words.
#include <string>
#include <vector>

#include "harness.hpp"
#include "json.hpp"
#include "parse.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "reference_parse.hpp"

namespace queen::api::detail {
namespace {

using queen::api::testing::pick;
using queen::api::testing::SeededRandom;

/// What the comparisons saw: bodies both accepted, both refused, and bodies where one side hit
/// the payload limit (its size is counted on different texts: not compared).
struct Tally {
    std::size_t accepted = 0;
    std::size_t refused = 0;
    std::size_t payload_limit = 0;
};

/// Checks `got` against `want` when one of them failed; true when both succeeded (the caller
/// compares the commands).
template <class T, class U>
bool same_outcome(const Result<T>& got, const Result<U>& want, Tally& tally) {
    if ((!got && reference::is_payload_limit(got.error())) ||
        (!want && reference::is_payload_limit(want.error()))) {
        ++tally.payload_limit;
        return false;
    }
    REQUIRE(got.has_value() == want.has_value());
    if (!got) {
        ++tally.refused;
        CHECK(got.error().code == want.error().code);
        CHECK(got.error().context == want.error().context);
        return false;
    }
    ++tally.accepted;
    return true;
}

void check_same_push_item(const queues::PushItem& a, const queues::PushItem& b) {
    CHECK(a.queue == b.queue);
    CHECK(a.partition == b.partition);
    CHECK(a.transaction_id == b.transaction_id);
    CHECK(a.trace_id == b.trace_id);
    const std::string pa(a.payload.begin(), a.payload.end());
    const std::string pb(b.payload.begin(), b.payload.end());
    CHECK(nlohmann::json::parse(pa) == nlohmann::json::parse(pb));
}

void check_same_ack_item(const queues::AckItem& a, const queues::AckItem& b) {
    CHECK(a.partition == b.partition);
    CHECK(a.transaction_id == b.transaction_id);
    CHECK(a.status == b.status);
    CHECK(a.has_error == b.has_error);
    CHECK(a.error == b.error);
    CHECK(a.lease == b.lease);
    CHECK(a.group == b.group);
}

std::string space(Rng& rng) {
    return rng.chance(0.3) ? pick(rng, {" ", "\n", "\t ", "\r\n  "}) : "";
}

/// A string literal of 0-40 bytes with at most one odd byte (a quote escape, a backslash
/// escape, a raw control byte, DEL, a UTF-8 pair, a lone 0x80-0xff byte) at any offset: the
/// plain-string scanner reads 8 bytes per step, so every offset in a word gets its turn.
std::string odd_string(Rng& rng) {
    std::string inner(rng.below(41), 'a');
    if (!inner.empty() && rng.chance(0.8)) {
        const std::size_t at = rng.below(inner.size());
        inner.replace(at, 1,
                      pick(rng, {"\\\"", "\\\\", "\\n", "\t", "\x01", "\x7f", "\xc3\xa9", "\x80",
                                 "\xff", "\\u0041", "\\"}));
    }
    return "\"" + inner + "\"";
}

std::string string_value(Rng& rng) {
    if (rng.chance(0.2)) {
        return odd_string(rng);
    }
    return pick(rng, {"\"q1\"", "\"orders\"", "\"\"", "\"caf\\u00e9\"", "\"tab\\tbed\"",
                      "\"\xc3\xa9t\xc3\xa9\"", "\"a\\\"b\"", "null", "7",
                      "\"" + std::string(300, 'x') + "\"", "true", "\"\\ud83d\\ude00\""});
}

std::string payload_value(Rng& rng, int depth) {
    switch (rng.below(depth > 3 ? 4 : 7)) {
        case 0: return "null";
        case 1: return std::to_string(static_cast<std::int64_t>(rng.next() % 2000) - 1000);
        case 2: return pick(rng, {"1.5", "-0.25e2", "3E+2", "0", "-0"});
        case 3: return string_value(rng);
        case 4: {
            std::string out = "[" + space(rng);
            const auto n = rng.below(4);
            for (std::uint64_t i = 0; i < n; ++i) {
                out += (i ? "," + space(rng) : "") + payload_value(rng, depth + 1) + space(rng);
            }
            return out + "]";
        }
        default: {
            std::string out = "{" + space(rng);
            const auto n = rng.below(4);
            for (std::uint64_t i = 0; i < n; ++i) {
                out += (i ? "," + space(rng) : "") + pick(rng, {"\"k\"", "\"v\"", "\"x y\""}) +
                       space(rng) + ":" + space(rng) + payload_value(rng, depth + 1);
            }
            return out + space(rng) + "}";
        }
    }
}

std::string item(Rng& rng) {
    std::vector<std::string> members;
    if (!rng.chance(0.05)) {
        members.push_back(
            "\"queue\":" + space(rng) +
            (rng.chance(0.8) ? "\"q" + std::to_string(rng.below(3)) + "\"" : string_value(rng)));
    }
    if (rng.chance(0.5)) {
        members.push_back("\"partition\":" + string_value(rng));
    }
    if (rng.chance(0.5)) {
        members.push_back("\"transactionId\":" + string_value(rng));
    }
    if (rng.chance(0.2)) {
        members.push_back("\"traceId\":" + pick(rng, {"\"0b8d1f7e-4a4b-4c2d-9e3f-1a2b3c4d5e6f\"",
                                                      "\"nope\"", "\"\"", "null"}));
    }
    if (rng.chance(0.8)) {
        members.push_back("\"payload\":" + space(rng) + payload_value(rng, 0));
    }
    if (rng.chance(0.1)) {
        members.push_back("\"extra\":" + payload_value(rng, 0));
    }
    if (rng.chance(0.08)) {  // a delayed push (a transaction's; /push ignores it)
        members.push_back("\"delayMs\":" + pick(rng, {"100", "0", "-1", "\"x\"", "null", "1.5"}));
    }
    if (rng.chance(0.05)) {
        members.push_back("\"visibleAt\":" + pick(rng, {"1700000000000", "\"2026-01-01T00:00:00Z\"",
                                                        "\"bad\"", "null", "0"}));
    }
    if (rng.chance(0.03)) {
        members.push_back("\"queue\":\"dup\"");  // a repeated key
    }
    if (rng.chance(0.03)) {
        members.push_back("\"\\u0071ueue\":\"escaped-key\"");
    }
    std::string out = "{" + space(rng);
    for (std::size_t i = 0; i < members.size(); ++i) {
        out += (i ? "," + space(rng) : "") + members[i] + space(rng);
    }
    return out + "}";
}

std::string body(Rng& rng) {
    if (rng.chance(0.03)) {
        return pick(rng, {"", "[]", "{}", "{\"items\":{}}", "{\"items\":[1]}", "null"});
    }
    std::string out = space(rng) + "{" + space(rng);
    if (rng.chance(0.1)) {
        out += "\"other\":" + payload_value(rng, 0) + ",";
    }
    out += "\"items\":" + space(rng) + "[";
    const auto n = rng.below(5);
    for (std::uint64_t i = 0; i < n; ++i) {
        out += (i ? "," + space(rng) : "") + item(rng);
    }
    out += "]" + space(rng) + "}" + space(rng);
    if (rng.chance(0.2)) {
        // Break it: truncate, flip a byte, or append garbage.
        switch (rng.below(3)) {
            case 0: out.resize(rng.below(out.size() + 1)); break;
            case 1:
                if (!out.empty()) {
                    out[rng.below(out.size())] = static_cast<char>(rng.below(256));
                }
                break;
            default: out += pick(rng, {"x", "}", ",", "\xff"}); break;
        }
    }
    return out;
}

TEST_CASE("api: the push reader agrees with the DOM reference", "[api][parse]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    ApiOptions options;
    options.name_bytes_max = 64;
    options.payload_bytes_max = 200;
    options.push_items_max = 3;
    options.json_depth_max = 6;
    Tally tally;
    for (int round = 0; round < 20'000; ++round) {
        const std::string text = body(rng);
        INFO("body: " << text);
        SeededRandom random_got(static_cast<std::uint64_t>(round));
        SeededRandom random_want(static_cast<std::uint64_t>(round));
        auto got = parse_push(text, options, random_got, 1'700'000'000'000);
        auto want = reference::parse_push(text, options, random_want, 1'700'000'000'000);
        if (!same_outcome(got, want, tally)) {
            continue;
        }
        REQUIRE(got->push.items.size() == want->push.items.size());
        CHECK(got->has_client_transaction_id == want->has_client_transaction_id);
        for (std::size_t i = 0; i < got->push.items.size(); ++i) {
            check_same_push_item(got->push.items[i], want->push.items[i]);
        }
    }
    // Both sides were exercised: most bodies are accepted, the odd ones refused.
    CHECK(tally.accepted > 5'000);
    CHECK(tally.refused > 1'000);
    CHECK(tally.payload_limit < 1'000);
}

std::string ack_item(Rng& rng) {
    std::vector<std::string> members;
    if (!rng.chance(0.05)) {
        members.push_back("\"transactionId\":" + (rng.chance(0.7)
                                                      ? "\"t" + std::to_string(rng.below(9)) + "\""
                                                  : rng.chance(0.5) ? odd_string(rng)
                                                                    : string_value(rng)));
    }
    if (!rng.chance(0.05)) {
        members.push_back("\"partitionId\":" +
                          pick(rng, {"\"0b8d1f7e-4a4b-4c2d-9e3f-1a2b3c4d5e6f\"",
                                     "\"00000000-0000-8100-0000-000000000007\"",
                                     "\"00000000-0000-8200-0000-000000000007\"",
                                     "\"00000000-0000-8200-0000-000000000007\"",
                                     "\"00000000-0000-8200-0000-00000000ABcd\"",
                                     "\"00000001-0000-8200-0000-000000000007\"",
                                     "\"00000000-0000-8200-0000-00000000000\\u0037\"",
                                     "\"00000000-0000-8200-0000-00000000000g\"",
                                     "\"00000000-0000-8200-0000-0000000000070\"",
                                     "\"00000000-0000-8201-0000-000000000007\"",
                                     "\"00000000+0000-8200-0000-000000000007\"", "\"nope\"", "\"\"",
                                     "null", "3"}));
    }
    if (rng.chance(0.5)) {
        members.push_back("\"status\":" +
                          pick(rng, {"\"completed\"", "\"failed\"", "\"retry\"", "\"dlq\"",
                                     "\"success\"", "\"odd\"", "null", "1"}));
    }
    if (rng.chance(0.3)) {
        members.push_back("\"error\":" + string_value(rng));
    }
    if (rng.chance(0.5)) {
        members.push_back("\"leaseId\":" +
                          pick(rng, {"\"00000000-0000-8300-0000-00000000002a\"",
                                     "\"00000000-0000-8400-0000-00000000002a\"",
                                     "\"00000000-0000-8400-0000-00000000002a\"",
                                     "\"00000000-0000-8400-0000-00000000002A\"",
                                     "\"00000000-0000-8400-0000-000000000000\"",
                                     "\"00000000-0001-8400-0000-00000000002a\"",
                                     "\"00000000-0000-8400-0000-0000000000\\u0032a\"", "\"x\"",
                                     "\"\"", "null", "[]"}));
    }
    if (rng.chance(0.4)) {
        members.push_back("\"consumerGroup\":" + pick(rng, {"\"g1\"", "\"\"", "null", "2",
                                                            "\"" + std::string(80, 'g') + "\""}));
    }
    if (rng.chance(0.03)) {
        members.push_back("\"status\":\"failed\"");  // a repeated key
    }
    if (rng.chance(0.1)) {
        members.push_back(odd_string(rng) + ":" + odd_string(rng));  // a key nobody reads
    }
    std::string out = "{" + space(rng);
    for (std::size_t i = 0; i < members.size(); ++i) {
        out += (i ? "," + space(rng) : "") + members[i] + space(rng);
    }
    return out + "}";
}

std::string ack_body(Rng& rng, bool is_batch) {
    std::string out;
    if (!is_batch) {
        out = space(rng) + ack_item(rng) + space(rng);
    } else {
        out = "{";
        if (rng.chance(0.3)) {
            out += "\"consumerGroup\":" + pick(rng, {"\"top\"", "\"\"", "null", "5"}) + ",";
        }
        out += "\"acknowledgments\":" + space(rng) + "[";
        const auto n = rng.below(5);
        for (std::uint64_t i = 0; i < n; ++i) {
            out += (i ? "," + space(rng) : "") + ack_item(rng);
        }
        out += "]}";
    }
    if (rng.chance(0.15) && !out.empty()) {
        out[rng.below(out.size())] = static_cast<char>(rng.below(256));
    }
    return out;
}

TEST_CASE("api: the ack reader agrees with the DOM reference", "[api][parse]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    ApiOptions options;
    options.name_bytes_max = 64;
    options.payload_bytes_max = 100;
    options.ack_items_max = 3;
    options.json_depth_max = 6;
    Tally tally;
    for (int round = 0; round < 20'000; ++round) {
        const bool is_batch = rng.chance(0.5);
        const std::string text = ack_body(rng, is_batch);
        INFO("body: " << text);
        auto got = is_batch ? parse_ack_batch(text, options) : parse_ack(text, options);
        auto want = is_batch ? reference::parse_ack_batch(text, options)
                             : reference::parse_ack(text, options);
        if (!same_outcome(got, want, tally)) {
            continue;
        }
        REQUIRE(got->items.size() == want->items.size());
        for (std::size_t i = 0; i < got->items.size(); ++i) {
            check_same_ack_item(got->items[i], want->items[i]);
        }
    }
    CHECK(tally.accepted > 2'000);
    CHECK(tally.refused > 1'000);
}

/// A KV, timer or lock operation with random members: each present or not, valid or one of
/// its mistakes (the fixed list above covers the usual shapes).
std::string state_operation(Rng& rng) {
    std::vector<std::string> members;
    const auto maybe = [&](double chance, const std::string& name,
                           const std::vector<std::string>& values) {
        if (rng.chance(chance)) {
            members.push_back("\"" + name + "\":" + pick(rng, values));
        }
    };
    const std::string type =
        pick(rng, {"kv.set", "kv.delete", "kv.check", "timer.set", "timer.cancel", "lock.release"});
    members.push_back("\"type\":\"" + type + "\"");
    if (type.starts_with("kv.")) {
        maybe(0.95, "bucket", {"\"b\"", "\"\"", "5", "\"" + std::string(129, 'b') + "\""});
        maybe(0.95, "key", {"\"k\"", "\"k2\"", "null", "\"" + std::string(257, 'k') + "\""});
        maybe(0.7, "expectedVersion", {"0", "3", "-1", "\"1\"", "null", "1.5"});
        if (rng.chance(0.8)) {
            members.push_back("\"value\":" + payload_value(rng, 0));
        }
        maybe(0.4, "ttlMs", {"0", "1000", "-5", "\"9\"", "31622400001"});
    } else if (type.starts_with("timer.")) {
        maybe(0.95, "id",
              {"\"t1\"", "\"~delay.1.0\"", "\"\"", "4", "\"" + std::string(201, 'i') + "\""});
        maybe(0.9, "queue", {"\"q1\"", "7", "\"\""});
        maybe(0.3, "partition", {"\"p\"", "5"});
        if (rng.chance(0.5)) {
            members.push_back("\"payload\":" + payload_value(rng, 0));
        }
        maybe(0.3, "transactionId", {"\"tx\"", "3"});
        maybe(0.2, "traceId", {"\"0b8d1f7e-4a4b-4c2d-9e3f-1a2b3c4d5e6f\"", "\"x\""});
        maybe(0.5, "at", {"1700000000000", "\"2030-01-01T00:00:00Z\"", "\"bad\"", "0", "null"});
        maybe(0.5, "delayMs", {"0", "100", "-1", "null"});
        maybe(0.3, "intervalMs", {"0", "10", "5", "\"x\""});
        maybe(0.2, "endAt", {"1700000009000", "\"2031-01-01\"", "-4"});
        maybe(0.2, "replace", {"true", "false", "\"yes\""});
    } else {
        maybe(0.9, "name", {"\"l\"", "\"\"", "3"});
        maybe(0.9, "token", {"3", "0", "\"3\"", "-2"});
    }
    maybe(0.2, "lock",
          {R"({"name":"g","token":2})", R"({"name":"g"})", R"({"name":"","token":1})", "null", "5",
           R"({"name":7,"token":1})"});
    std::string out = "{";
    for (std::size_t i = 0; i < members.size(); ++i) {
        out += (i ? "," + space(rng) : "") + members[i];
    }
    return out + "}";
}

std::string transaction_body(Rng& rng) {
    std::string out = "{" + space(rng) + "\"operations\":" + space(rng) + "[";
    const auto n = rng.below(4);
    for (std::uint64_t i = 0; i < n; ++i) {
        std::string op;
        const auto which = rng.below(7);
        switch (which) {
            case 0: {  // ack: an ack item with a type
                op = ack_item(rng);
                op.insert(1, "\"type\":\"ack\",");
                if (rng.chance(0.1)) {  // a second type: the last one counts
                    op.insert(op.size() - 1,
                              pick(rng, {",\"type\":\"push\"", ",\"type\":\"ack\""}));
                }
                break;
            }
            case 1: {  // push with items
                op = "{\"type\":\"push\",\"items\":[";
                const auto items = rng.below(3);
                for (std::uint64_t k = 0; k < items; ++k) {
                    op += (k ? "," : "") + item(rng);
                }
                op += "]";
                if (rng.chance(0.15)) {  // another member; a second type or items
                    op += pick(rng, {",\"type\":\"ack\"", ",\"type\":\"push\"", ",\"items\":[]",
                                     ",\"queue\":\"q1\"", ",\"x\":[1,{}]"});
                }
                op += "}";
                break;
            }
            case 2: {  // flat push, payload or data or neither, type anywhere
                op = item(rng);
                if (rng.chance(0.3)) {
                    op.insert(1, "\"data\":" + payload_value(rng, 0) + ",");
                }
                op.insert(op.size() - 1, std::string(op.size() > 2 ? "," : "") +
                                             "\"type\":\"push\"" +
                                             (rng.chance(0.2) ? ",\"items\":null" : ""));
                break;
            }
            case 3: op = pick(rng, {"{\"type\":\"other\"}", "{\"type\":null}", "[]", "{}"}); break;
            case 5: {  // the operations beyond push and ack, good and bad
                op = pick(
                    rng,
                    {
                        R"({"type":"kv.set","bucket":"b","key":"k","value":{"a":1}})",
                        R"({"type":"kv.set","bucket":"b","key":"k","value":1,"expectedVersion":0,"ttlMs":5})",
                        R"({"type":"kv.set","bucket":"b","value":1})",
                        R"({"type":"kv.delete","bucket":"b","key":"k","expectedVersion":"x"})",
                        R"({"type":"kv.check","bucket":"b","key":"k","expectedVersion":3})",
                        R"({"type":"kv.check","bucket":"b","key":"k"})",
                        R"({"type":"timer.set","id":"t","queue":"q","delayMs":10,"payload":[1]})",
                        R"({"type":"timer.set","id":"t","queue":"q","at":"2026-01-01T00:00:00Z","intervalMs":100})",
                        R"({"type":"timer.set","id":"t","queue":"q"})",
                        R"({"type":"timer.set","id":"~delay.1.0","queue":"q","delayMs":1})",
                        R"({"type":"timer.cancel","id":"t"})",
                        R"({"type":"timer.cancel"})",
                        R"({"type":"lock.release","name":"L","token":4})",
                        R"({"type":"lock.release","name":"L","token":0})",
                    });
                if (rng.chance(0.3)) {
                    op.insert(op.size() - 1, pick(rng, {R"(,"lock":{"name":"L","token":2})",
                                                        R"(,"lock":{"name":"L"})", R"(,"lock":3)",
                                                        R"(,"lock":null)"}));
                }
                break;
            }
            case 6: op = state_operation(rng); break;
            default: op = "{\"type\":\"push\",\"items\":" + pick(rng, {"[]", "{}", "3"}) + "}";
        }
        if ((which == 0 || which == 1) && rng.chance(0.1) && op.size() > 2 && op.back() == '}') {
            op.insert(op.size() - 1,
                      pick(rng, {R"(,"lock":{"name":"L","token":2})", R"(,"lock":{"token":2})"}));
        }
        out += (i ? "," + space(rng) : "") + op;
    }
    out += "]" + space(rng) + "}";
    if (rng.chance(0.1) && !out.empty()) {
        out[rng.below(out.size())] = static_cast<char>(rng.below(256));
    }
    return out;
}

TEST_CASE("api: the transaction reader agrees with the DOM reference", "[api][parse]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    ApiOptions options;
    options.name_bytes_max = 64;
    options.payload_bytes_max = 200;
    options.transaction_operations_max = 4;
    options.json_depth_max = 8;
    Tally tally;
    for (int round = 0; round < 20'000; ++round) {
        const std::string text = transaction_body(rng);
        INFO("body: " << text);
        SeededRandom random_got(static_cast<std::uint64_t>(round));
        SeededRandom random_want(static_cast<std::uint64_t>(round));
        auto got = parse_transaction(text, options, random_got, 1'700'000'000'000);
        auto want = reference::parse_transaction(text, options, random_want, 1'700'000'000'000);
        if (!same_outcome(got, want, tally)) {
            continue;
        }
        REQUIRE(got->ops.size() == want->ops.size());
        for (std::size_t i = 0; i < got->ops.size(); ++i) {
            INFO("operation " << i);
            // Every field the operation's kind uses: kv value and TTL, timer end and replace,
            // lock names and guard names included.
            CHECK(reference::operation_difference(got->ops[i], want->ops[i]).empty());
        }
    }
    CHECK(tally.accepted > 1'000);
    CHECK(tally.refused > 1'000);
}

TEST_CASE("api: the push reader keeps payload text and removes only token whitespace",
          "[api][parse]") {
    SeededRandom random(1);
    ApiOptions options;
    const std::string text =
        R"({ "items" : [ { "queue" : "q", "payload" : { "a" : [ 1.50 , "x  y" , 1e2 ] } } ] })";
    auto parsed = parse_push(text, options, random, 1'700'000'000'000);
    REQUIRE(parsed.has_value());
    REQUIRE(parsed->push.items.size() == 1);
    const auto& payload = parsed->push.items[0].payload;
    CHECK(std::string(payload.begin(), payload.end()) == R"({"a":[1.50,"x  y",1e2]})");
    CHECK(parsed->push.items[0].partition == "Default");
    // A generated transactionId is a UUIDv7 carrying the time: ids grow with time.
    const std::string id = parsed->push.items[0].transaction_id.str();
    CHECK(id.size() == 36);
    CHECK(id.substr(0, 13) == "018bcfe5-6800");  // 1'700'000'000'000 ms = 0x018bcfe56800
    CHECK(id[14] == '7');
    CHECK(time_uuid(random, 1'700'000'000'001) > id);
    CHECK_FALSE(parsed->has_client_transaction_id[0]);
}

TEST_CASE("api: the hot bodies read a byte order mark, repeated and escaped keys as a DOM does",
          "[api][parse]") {
    ApiOptions options;
    options.json_depth_max = 4;
    SeededRandom random(1);
    const auto push = [&](std::string_view body) {
        return parse_push(body, options, random, 1'700'000'000'000);
    };
    auto parsed = push("\xEF\xBB\xBF{\"items\":[{\"queue\":\"q\"}]}");
    REQUIRE(parsed.has_value());
    CHECK(parsed->push.items[0].queue == "q");
    // The DOM parser stops reading at a NUL byte after the value.
    using namespace std::string_literals;
    parsed = push("{\"items\":[{\"queue\":\"n\"}]} \0 x"s);
    REQUIRE(parsed.has_value());
    CHECK(parsed->push.items[0].queue == "n");
    CHECK_FALSE(push("{\"items\":[{\"queue\":\"n\0\"}]}"s).has_value());
    // The last of a repeated key counts; an escaped key is its decoded text.
    parsed = push(R"({"items":[{"queue":1,"\u0071ueue":"q2","partition":"p","partition":null}]})");
    REQUIRE(parsed.has_value());
    CHECK(parsed->push.items[0].queue == "q2");
    CHECK(parsed->push.items[0].partition == "Default");
    parsed = push(R"({"items":[{"queue":"a"}],"items":[{"queue":"b"},{"queue":"c"}]})");
    REQUIRE(parsed.has_value());
    REQUIRE(parsed->push.items.size() == 2);
    CHECK(parsed->push.items[1].queue == "c");
    // Depth counts arrays and objects, as parse_body does.
    CHECK(push(R"({"items":[{"queue":"q","payload":{"a":1}}]})").has_value());
    auto deep = push(R"({"items":[{"queue":"q","payload":{"a":[1]}}]})");
    REQUIRE_FALSE(deep.has_value());
    CHECK(deep.error().context == "JSON nested deeper than 4 levels");
    // The first error in item order, after the body-level checks.
    auto bad = push(R"({"items":[{"queue":"q","traceId":"x"},{"queue":7}]})");
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().context == "TraceId must be a UUID");
    options.push_items_max = 1;
    bad = push(R"({"items":[{"queue":7},{"queue":"q"}]})");
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().context == "items has 2 entries, more than the limit of 1");
    bad = push(R"({"items":[{"queue":"q"}]} x)");
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error().context, Catch::StartsWith("Invalid JSON: "));
    CHECK(bad.error().context == parse_body(R"({"items":[{"queue":"q"}]} x)", 4).error().context);

    // A top-level group after the list still wins; a transaction's items before its type.
    options.json_depth_max = 6;
    auto acked = parse_ack_batch(
        R"({"acknowledgments":[{"transactionId":"t","partitionId":"00000000-0000-8200-0000-000000000007","consumerGroup":"mine"}],"consumerGroup":"top"})",
        options);
    REQUIRE(acked.has_value());
    CHECK(acked->items[0].group == "top");
    options.transaction_operations_max = 2;
    auto transaction = parse_transaction(
        R"({"operations":[{"items":[{"queue":"a"},{"queue":"b"}],"type":"push"}]})", options,
        random, 1'700'000'000'000);
    REQUIRE(transaction.has_value());
    REQUIRE(transaction->ops.size() == 2);
    CHECK(transaction->ops[1].push.queue == "b");
    CHECK(transaction->ops[1].push.payload == Bytes{'{', '}'});
    transaction = parse_transaction(
        R"({"operations":[{"type":"push","items":[{"queue":"a"}],"type":"ack"}]})", options, random,
        1'700'000'000'000);
    REQUIRE_FALSE(transaction.has_value());
    CHECK(transaction.error().context == "ack operation needs a transactionId");
    transaction = parse_transaction(
        R"({"operations":[{"type":"push","items":[{"queue":"a"},{"queue":"b"},{"queue":"c"}]}]})",
        options, random, 1'700'000'000'000);
    REQUIRE_FALSE(transaction.has_value());
    CHECK(transaction.error().context == "transaction has more than 2 operations");
}

}  // namespace
}  // namespace queen::api::detail
