// client/tests/protocol_test.cpp — the answer readers of protocol.hpp without a server: their fast
// paths (plain strings, literals, short integers, reused results) against the scanner's rules, on
// answers with any key order, whitespace, unknown keys, escapes and malformed literals.
#include "queen/client/protocol.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "queen/client/errc.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/json_cursor.hpp"  // json::detail::is_equal_bytes
#include "queen/core/json_scan.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace {

using namespace queen::client;

HttpResponse response_of(int status, std::string body) {
    HttpResponse response;
    response.status = status;
    response.body = std::move(body);
    return response;
}

const HttpRequest ack_request{"POST", "/api/v1/ack/batch", "", true, true, 0};
const HttpRequest pop_request{"GET", "/api/v1/pop/queue/q", "", false, true, 0};
const HttpRequest push_request{"POST", "/api/v1/push", "", true, true, 0};

PopRequest pop_of_q() {
    PopRequest pop;
    pop.queue = "q";
    return pop;
}

/// Whitespace of any JSON kind (often none), to put between tokens.
std::string random_space(queen::Rng& rng) {
    static const char* const spaces[] = {"", "", "", " ", "\n  ", "\t", "\r\n"};
    return spaces[rng.below(std::size(spaces))];
}

/// Members `"key":value` joined into an object in a random order with random whitespace.
std::string object_of(std::vector<std::pair<std::string, std::string>> members, queen::Rng& rng) {
    for (std::size_t i = members.size(); i > 1; --i) {
        std::swap(members[i - 1], members[rng.below(i)]);
    }
    std::string out = "{" + random_space(rng);
    for (std::size_t i = 0; i < members.size(); ++i) {
        if (i > 0) {
            out += random_space(rng) + "," + random_space(rng);
        }
        out += "\"" + members[i].first + "\"" + random_space(rng) + ":" + random_space(rng) +
               members[i].second;
    }
    return out + random_space(rng) + "}";
}

/// A value text the lenient boolean and integer readers may meet: valid ones of every type and
/// near misses of the literals and numbers the fast paths read.
std::string random_scalar(queen::Rng& rng) {
    static const char* const fixed[] = {
        "true", "false",  "null", "\"true\"", "\"1\"", "\"0\"", "\"x\"",      "0",
        "1",    "-0",     "2.5",  "0.0",      "1e5",   "1E+2",  "-7",         "[]",
        "{}",   "[true]", "tru",  "fals",     "nul",   "truex", "nulll",      "01",
        "1.",   "-",      "1e",   ".5",       "+1",    "0x1",   "\"\\u0031\""};
    if (rng.below(3) == 0) {
        // Plain digits of any length: the integer fast path stops at 18.
        std::string digits = rng.below(4) == 0 ? "-" : "";
        const std::uint64_t length = 1 + rng.below(22);
        for (std::uint64_t i = 0; i < length; ++i) {
            digits += static_cast<char>('0' + rng.below(10));
        }
        if (rng.below(4) == 0) {
            digits += rng.below(2) == 0 ? ".25" : "e1";
        }
        return digits;
    }
    return fixed[rng.below(std::size(fixed))];
}

}  // namespace

TEST_CASE("client: ack results read any boolean spelling like raw_to_bool, in any member order",
          "[client][protocol][ack]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    std::vector<AckResult> results;
    for (int round = 0; round < 500; ++round) {
        INFO("round=" << round);
        const std::uint64_t count = 1 + rng.below(3);
        std::vector<std::string> success_texts;
        std::vector<std::string> released_texts;
        std::vector<std::string> dlq_texts;
        std::string body = "[" + random_space(rng);
        for (std::uint64_t i = 0; i < count; ++i) {
            success_texts.push_back(random_scalar(rng));
            released_texts.push_back(random_scalar(rng));
            dlq_texts.push_back(random_scalar(rng));
            std::vector<std::pair<std::string, std::string>> members = {
                {"index", std::to_string(i)},
                {"transactionId", "\"t-" + std::to_string(i) + "\""},
                {"success", success_texts.back()},
                {"error", rng.below(2) == 0 ? "null" : "\"Message not found\""},
                {"queueName", "\"q\""},
                {"partitionName", "\"p\\u00e9\""},
                {"leaseReleased", released_texts.back()},
                {"dlq", dlq_texts.back()},
                {"extra", R"({"a":[1,"x",null,{"b":false}]})"}};
            if (rng.below(4) == 0) {
                members.erase(members.begin() +
                              static_cast<std::ptrdiff_t>(1 + rng.below(members.size() - 1)));
            }
            body += (i > 0 ? "," + random_space(rng) : "") + object_of(members, rng);
        }
        body += random_space(rng) + "]";
        INFO("body=" << body);
        const auto answer =
            read_ack_batch_answer(ack_request, response_of(200, body), count, results);
        if (!nlohmann::json::accept(body)) {
            REQUIRE_FALSE(answer);
            CHECK(answer.error().is(Errc::bad_response));
            continue;
        }
        REQUIRE(answer);
        REQUIRE(results.size() == count);
        const nlohmann::json parsed = nlohmann::json::parse(body);
        for (std::uint64_t i = 0; i < count; ++i) {
            const nlohmann::json& entry = parsed[i];
            const AckResult& result = results[i];
            CHECK(result.transaction_id ==
                  (entry.contains("transactionId") ? "t-" + std::to_string(i) : ""));
            CHECK(result.is_success ==
                  (entry.contains("success") && queen::json::raw_to_bool(success_texts[i])));
            CHECK(result.is_dlq ==
                  (entry.contains("dlq") && queen::json::raw_to_bool(dlq_texts[i])));
            if (!entry.contains("leaseReleased") || entry["leaseReleased"].is_null()) {
                CHECK_FALSE(result.is_lease_released.has_value());
            } else {
                REQUIRE(result.is_lease_released.has_value());
                CHECK(*result.is_lease_released == queen::json::raw_to_bool(released_texts[i]));
            }
            const bool has_error = entry.contains("error") && entry["error"].is_string();
            CHECK(result.error == (has_error ? "Message not found" : ""));
            CHECK(result.queue_name == (entry.contains("queueName") ? "q" : ""));
            CHECK(result.partition_name == (entry.contains("partitionName") ? "p\xc3\xa9" : ""));
        }
    }
}

TEST_CASE("client: a reused ack result vector keeps nothing of the previous answer",
          "[client][protocol][ack]") {
    std::vector<AckResult> results;
    REQUIRE(read_ack_batch_answer(
        ack_request,
        response_of(200, R"([{"transactionId":"a","success":true,"error":"e","queueName":"q",
            "partitionName":"p","leaseReleased":true,"dlq":true},{"transactionId":"b"}])"),
        2, results));
    REQUIRE(results.size() == 2);
    CHECK(results[0].is_lease_released == std::optional<bool>{true});
    CHECK(results[0].is_dlq);
    REQUIRE(read_ack_batch_answer(ack_request, response_of(200, R"([{"transactionId":"c"}])"), 1,
                                  results));
    REQUIRE(results.size() == 1);
    CHECK(results[0].transaction_id == "c");
    CHECK_FALSE(results[0].is_success);
    CHECK(results[0].error.empty());
    CHECK(results[0].queue_name.empty());
    CHECK(results[0].partition_name.empty());
    CHECK_FALSE(results[0].is_lease_released.has_value());
    CHECK_FALSE(results[0].is_dlq);
    // Wrong shapes: not an object, a count that does not match, a truncated literal.
    for (const char* body : {R"([1])", R"([{"success":true},])", R"([{"success":tru}])",
                             R"([{"success":true} {"success":true}])", R"([{"dlq":nul}])"}) {
        INFO(body);
        const auto answer = read_ack_batch_answer(ack_request, response_of(200, body), 1, results);
        REQUIRE_FALSE(answer);
        CHECK(answer.error().is(Errc::bad_response));
    }
    const auto short_answer =
        read_ack_batch_answer(ack_request, response_of(200, R"([{"success":true}])"), 2, results);
    REQUIRE_FALSE(short_answer);
    CHECK(short_answer.error().is(Errc::bad_response));
}

TEST_CASE("client: pop answers read retryCount like raw_to_integer, in any member order",
          "[client][protocol][pop]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    const PopRequest pop = pop_of_q();
    PopResult result;
    for (int round = 0; round < 500; ++round) {
        INFO("round=" << round);
        const std::string retry_text = random_scalar(rng);
        const std::string trace_text = rng.below(2) == 0 ? "null" : R"("tr\"ace")";
        const std::string message =
            object_of({{"id", R"("m-1")"},
                       {"transactionId", R"("t-1")"},
                       {"traceId", trace_text},
                       {"data", R"({"seq":1, "pad":"x\u00e9y"})"},
                       {"producerSub", "null"},
                       {"createdAt", R"("2026-11-30T06:27:15.673000Z")"},
                       {"partitionId", R"("pid")"},
                       {"partition", R"("p0")"},
                       {"leaseId", rng.below(2) == 0 ? "null" : R"("lease")"},
                       {"consumerGroup", R"("__QUEUE_MODE__")"},
                       {"retryCount", retry_text},
                       {"unknown", R"([{"retryCount":99}])"}},
                      rng);
        const std::string body =
            object_of({{"success", "true"},
                       {"queue", R"("q")"},
                       {"leaseId", R"("answer-lease")"},
                       {"messages", "[" + random_space(rng) + message + random_space(rng) + "]"},
                       {"partitionsClaimed", "1"}},
                      rng);
        INFO("body=" << body);
        const auto answer = read_pop_answer(pop_request, response_of(200, body), pop, result);
        if (!nlohmann::json::accept(body)) {
            REQUIRE_FALSE(answer);
            CHECK(answer.error().is(Errc::bad_response));
            continue;
        }
        REQUIRE(answer);
        REQUIRE(result.messages.size() == 1);
        const nlohmann::json expected = nlohmann::json::parse(body)["messages"][0];
        const Message& got = result.messages[0];
        CHECK(got.retry_count == queen::json::raw_to_integer(retry_text));
        CHECK(got.id == "m-1");
        CHECK(got.transaction_id == "t-1");
        CHECK(got.trace_id == (expected["traceId"].is_null() ? "" : "tr\"ace"));
        CHECK(got.producer_sub.empty());
        CHECK(got.created_at == "2026-11-30T06:27:15.673000Z");
        CHECK(got.partition_id == "pid");
        CHECK(got.partition == "p0");
        CHECK(got.lease_id == (expected["leaseId"].is_null() ? "" : "lease"));  // null is named
        CHECK(got.consumer_group == "__QUEUE_MODE__");
        CHECK(got.queue == "q");
        CHECK(nlohmann::json::parse(got.data_json) == expected["data"]);
    }
}

TEST_CASE("client: the literal and number fast paths reject what the scanner rejects",
          "[client][protocol]") {
    const PopRequest pop = pop_of_q();
    PopResult popped;
    const char* const bad_pops[] = {
        R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p","traceId":nul}]})",
        R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p","traceId":nullx}]})",
        R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p","retryCount":01}]})",
        R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p","retryCount":1.}]})",
        R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p","retryCount":2x}]})",
        R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p","retryCount":-}]})",
        R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p","retryCount":1)",
        R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p"}],"leaseId":nul})",
        "{\"messages\":[{\"id\":\"m\x80\",\"transactionId\":\"t\",\"partitionId\":\"p\"}]}",
        "{\"messages\":[{\"id\":\"m\",\"transactionId\":\"t\",\"partitionId\":\"p\x1f\"}]}",
        R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p","x":"\q"}]})",
        R"({"messages":[{"id":"m","transactionId":"t","partitionId":"p)"};
    for (const char* body : bad_pops) {
        INFO(body);
        REQUIRE_FALSE(nlohmann::json::accept(body));
        const auto answer = read_pop_answer(pop_request, response_of(200, body), pop, popped);
        REQUIRE_FALSE(answer);
        CHECK(answer.error().is(Errc::bad_response));
    }
    // Valid spellings that leave the fast paths: escapes, UTF-8, long and negative numbers.
    const std::string good = R"({ "messages" : [ { "id" : "m\u00e9\n" , "transactionId":"t)"
                             "\xe2\x82\xac"
                             R"(", "partitionId":"p", "retryCount" : 1234567890123456789 },
        {"id":"m2","transactionId":"t2","partitionId":"p","retryCount":-3,"traceId":null},
        {"id":"m3","transactionId":"t3","partitionId":"p","retryCount":123456789012345678},
        {"id":"m4","transactionId":"t4","partitionId":"p","retryCount":0,"traceId":"x"} ] } )";
    REQUIRE(read_pop_answer(pop_request, response_of(200, good), pop, popped));
    REQUIRE(popped.messages.size() == 4);
    CHECK(popped.messages[0].id == "m\xc3\xa9\n");
    CHECK(popped.messages[0].transaction_id == "t\xe2\x82\xac");
    CHECK(popped.messages[0].retry_count == 1234567890123456789);
    CHECK(popped.messages[1].retry_count == -3);
    CHECK(popped.messages[2].retry_count == 123456789012345678);
    CHECK(popped.messages[3].retry_count == 0);
    CHECK(popped.messages[3].trace_id == "x");

    std::vector<PushResult> pushed;
    for (const char* body :
         {R"([{"status":"queued","trace_id":nul}])", R"([{"status":"queued","trace_id":null,}])",
          R"([{"status":"queued","trace_id":nullnull}])"}) {
        INFO(body);
        const auto answer = read_push_answer(push_request, response_of(201, body), 1, pushed);
        REQUIRE_FALSE(answer);
        CHECK(answer.error().is(Errc::bad_response));
    }
    REQUIRE(read_push_answer(push_request,
                             response_of(201,
                                         " [ {\"trace_id\" : null , \"status\" : \"queu\\u0065d\" ,"
                                         " \"message_id\":\"m\\/1\"} ] "),
                             1, pushed));
    REQUIRE(pushed.size() == 1);
    CHECK(pushed[0].status == PushStatus::queued);
    CHECK(pushed[0].message_id == "m/1");
    CHECK(pushed[0].trace_id.empty());
}

TEST_CASE("client: UuidV7Generator writes the clock's milliseconds and its random bits as hex",
          "[client][protocol]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::ManualClock clock{0x0123'4567'89ab, 77};
    UuidV7Generator ids{seed, clock};
    // The generator's own mix of seed and clock, replayed: the same two random words per id.
    queen::Rng rng{seed ^ 77ULL ^ (0x0123'4567'89abULL << 20)};
    for (int round = 0; round < 100; ++round) {
        // A new millisecond each time: fresh random bits.
        const auto ms = static_cast<std::uint64_t>(clock.wall_ms());
        const std::uint64_t random_a = rng.next();
        const std::uint64_t random_b = rng.next();
        const std::uint64_t high = (ms << 16) | 0x7000ULL | (random_a & 0xFFFULL);
        const std::uint64_t low = (random_b & 0x3FFF'FFFF'FFFF'FFFFULL) | (1ULL << 63);
        char expected[40];
        std::snprintf(expected, sizeof expected, "%08llx-%04llx-%04llx-%04llx-%012llx",
                      static_cast<unsigned long long>(high >> 32),
                      static_cast<unsigned long long>((high >> 16) & 0xFFFF),
                      static_cast<unsigned long long>(high & 0xFFFF),
                      static_cast<unsigned long long>(low >> 48),
                      static_cast<unsigned long long>(low & 0xFFFF'FFFF'FFFFULL));
        std::string out = "x";
        ids.append_uuid_v7(out);
        CHECK(out == std::string{"x"} + expected);
        CHECK(out.substr(1, 9) == "01234567-");
        clock.advance_ms(1);
    }
}

TEST_CASE("client: UuidV7Generator's ids of one millisecond ascend one by one",
          "[client][protocol]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    const queen::ManualClock clock{0x0123'4567'89ab, 77};
    UuidV7Generator ids{seed, clock};
    const auto value_of = [](const std::string& id) {
        std::string hex;
        for (char c : id) {
            if (c != '-') {
                hex += c;
            }
        }
        REQUIRE(hex.size() == 32);
        return std::make_pair(std::stoull(hex.substr(0, 16), nullptr, 16),
                              std::stoull(hex.substr(16), nullptr, 16));
    };
    std::string previous;
    ids.append_uuid_v7(previous);
    for (int i = 0; i < 1000; ++i) {
        std::string next;
        ids.append_uuid_v7(next);
        INFO(previous << " then " << next);
        CHECK(next > previous);  // fixed-width lowercase hex: text order is numeric order
        CHECK(next.substr(0, 13) == "01234567-89ab");
        CHECK(next[14] == '7');                                          // version 7
        CHECK(std::string("89ab").find(next[19]) != std::string::npos);  // variant 10
        const auto [high_before, low_before] = value_of(previous);
        const auto [high, low] = value_of(next);
        // rand_b plus one (a carry into rand_a happens once in 2^62 ids).
        if (high == high_before) {
            CHECK(low == low_before + 1);
        } else {
            CHECK(high == high_before + 1);
            CHECK(low == (1ULL << 63));
        }
        previous = next;
    }
}

TEST_CASE("client: request bodies quote ids and names exactly as append_quoted does",
          "[client][protocol]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    const std::vector<std::string> pieces = {"a",
                                             "0",
                                             "-",
                                             " ",
                                             "~",
                                             "\x7f",
                                             "\"",
                                             "\\",
                                             "\n",
                                             "\x01",
                                             "\x1f",
                                             "\xc3\xa9",
                                             "\xf0\x9f\x98\x80",
                                             "/"};
    const auto random_text = [&] {
        std::string text;
        for (std::uint64_t n = rng.below(40); n > 0; --n) {
            text += pieces[rng.below(pieces.size())];
        }
        return text;
    };
    for (int round = 0; round < 300; ++round) {
        Ack ack;
        ack.transaction_id = random_text();
        ack.partition_id = random_text();
        ack.lease_id = random_text();
        ack.consumer_group = random_text();
        ack.error = random_text();
        OwnedRequest request;
        build_ack_batch(std::span<const Ack>{&ack, 1}, "", request);
        std::string expected = R"({"acknowledgments":[{"transactionId":)";
        queen::json::scan::append_quoted(expected, ack.transaction_id);
        expected += R"(,"partitionId":)";
        queen::json::scan::append_quoted(expected, ack.partition_id);
        expected += R"(,"status":"completed","error":)";
        if (ack.error.empty()) {
            expected += "null";
        } else {
            queen::json::scan::append_quoted(expected, ack.error);
        }
        expected += R"(,"consumerGroup":)";
        if (ack.consumer_group.empty()) {
            expected += "null";
        } else {
            queen::json::scan::append_quoted(expected, ack.consumer_group);
        }
        if (!ack.lease_id.empty()) {
            expected += R"(,"leaseId":)";
            queen::json::scan::append_quoted(expected, ack.lease_id);
        }
        expected += R"(}],"consumerGroup":null})";
        REQUIRE(request.body == expected);
        if (nlohmann::json::accept(request.body)) {  // UTF-8 pieces may split: then not JSON
            const auto parsed = nlohmann::json::parse(request.body);
            CHECK(parsed["acknowledgments"][0]["transactionId"] == ack.transaction_id);
        }
    }
}

TEST_CASE(
    "client: pop messages in the server's member order, with members added, repeated or "
    "escaped, read like any order",
    "[client][protocol][pop]") {
    const PopRequest pop = pop_of_q();
    PopResult popped;
    const std::string body =
        R"({"queue":"q","partitionId":"answer-pid","leaseId":"answer-lease","messages":[)"
        // The server's order, compact: every member is the one expected.
        R"({"id":"m1","transactionId":"t1","traceId":null,"data":{"seq":1},"producerSub":null,)"
        R"("createdAt":"c1","partitionId":"pid1","partition":"p1","leaseId":"l1",)"
        R"("consumerGroup":"g1","retryCount":1},)"
        // An unknown member between expected ones, a repeated one, a key prefix of the next.
        R"({"id":"m2","extra":{"transactionId":"nested"},"transactionId":"t2","id":"m2b",)"
        R"("partition":"p2","partitionId":"pid2","retryCount":2,"retryCount":3},)"
        // Escaped keys, and whitespace between the members.
        R"({"\u0069d":"m3", "transactionId" :"t3","partit\u0069onId":"pid3","data":[1]})"
        R"(]})";
    REQUIRE(read_pop_answer(pop_request, response_of(200, body), pop, popped));
    REQUIRE(popped.messages.size() == 3);
    const Message& first = popped.messages[0];
    CHECK(first.id == "m1");
    CHECK(first.transaction_id == "t1");
    CHECK(first.data_json == R"({"seq":1})");
    CHECK(first.created_at == "c1");
    CHECK(first.partition_id == "pid1");
    CHECK(first.partition == "p1");
    CHECK(first.lease_id == "l1");
    CHECK(first.consumer_group == "g1");
    CHECK(first.retry_count == 1);
    const Message& second = popped.messages[1];
    CHECK(second.id == "m2b");  // the last of a repeated member wins
    CHECK(second.transaction_id == "t2");
    CHECK(second.partition == "p2");
    CHECK(second.partition_id == "pid2");
    CHECK(second.retry_count == 3);
    CHECK(second.lease_id == "answer-lease");  // left out: the answer's
    CHECK(second.data_json == "null");
    const Message& third = popped.messages[2];
    CHECK(third.id == "m3");
    CHECK(third.transaction_id == "t3");
    CHECK(third.partition_id == "pid3");
    CHECK(third.data_json == "[1]");
}

TEST_CASE("client: push and ack results in the server's member order or not read the same",
          "[client][protocol][push][ack]") {
    std::vector<PushResult> pushed;
    const char* const push_bodies[] = {
        R"([{"index":0,"transaction_id":"t","status":"queued","message_id":"m",)"
        R"("partition_id":"p","trace_id":"tr","queueName":"q"}])",
        R"([{"queueName":"q","trace_id":"tr","partition_id":"p","message_id":"m",)"
        R"("status":"queued","transaction_id":"t","index":0}])",
        R"([{"index":0,"transactionId":"camel","transaction_id":"t","status":"queued",)"
        R"("messageId":"camel","message_id":"m","partition_id":"p","partitionId":"camel",)"
        R"("trace_id":"tr","queue":"camel","queueName":"q"}])",
        R"([ { "index" : 0 , "transaction_id" : "t" , "status" : "queued" , "message_id" : "m" ,)"
        R"( "partition_id" : "p" , "trace_id" : "tr" , "queueName" : "q" } ])"};
    for (const char* body : push_bodies) {
        INFO(body);
        REQUIRE(read_push_answer(push_request, response_of(201, body), 1, pushed));
        REQUIRE(pushed.size() == 1);
        CHECK(pushed[0].status == PushStatus::queued);
        CHECK(pushed[0].transaction_id == "t");
        CHECK(pushed[0].message_id == "m");
        CHECK(pushed[0].partition_id == "p");
        CHECK(pushed[0].trace_id == "tr");
        CHECK(pushed[0].queue_name == "q");
    }
    std::vector<AckResult> acked;
    const char* const ack_bodies[] = {
        R"([{"index":0,"transactionId":"t","success":true,"error":null,"queueName":"q",)"
        R"("partitionName":"p","leaseReleased":false,"dlq":true}])",
        R"([{"dlq":true,"leaseReleased":false,"partitionName":"p","queueName":"q",)"
        R"("error":null,"success":true,"transactionId":"t","index":0}])",
        R"([{"index":0,"transactionId":"x","success":false,"transactionId":"t","success":true,)"
        R"("queueName":"q","partitionName":"p","extra":1,"leaseReleased":false,"dlq":true}])"};
    for (const char* body : ack_bodies) {
        INFO(body);
        REQUIRE(read_ack_batch_answer(ack_request, response_of(200, body), 1, acked));
        REQUIRE(acked.size() == 1);
        CHECK(acked[0].transaction_id == "t");
        CHECK(acked[0].is_success);
        CHECK(acked[0].error.empty());
        CHECK(acked[0].queue_name == "q");
        CHECK(acked[0].partition_name == "p");
        CHECK(acked[0].is_lease_released == std::optional<bool>{false});
        CHECK(acked[0].is_dlq);
    }
}

TEST_CASE("client: acking popped messages in place builds what acking Ack::of them builds",
          "[client][protocol][ack]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    const std::vector<std::string> texts = {
        "",          "t-1",     "00000000-0000-8400-0000-000000000001", "q\"uote", "back\\slash",
        "new\nline", "\xc3\xa9"};
    const auto random_text = [&] { return texts[rng.below(texts.size())]; };
    for (int round = 0; round < 200; ++round) {
        std::vector<Message> messages(1 + rng.below(4));
        std::vector<Ack> acks;
        const auto status = static_cast<AckStatus>(rng.below(4));
        for (Message& message : messages) {
            message.transaction_id = random_text();
            message.partition_id = random_text();
            message.lease_id = random_text();
            message.consumer_group = random_text();
            message.id = random_text();  // not part of an ack
            acks.push_back(Ack::of(message, status));
        }
        const std::string group = random_text();
        OwnedRequest expected;
        build_ack_batch(acks, group, expected);
        OwnedRequest built;
        built.body = "left over from an earlier request";
        build_ack_batch(messages, status, group, built);
        CHECK(built.body == expected.body);
        CHECK(built.method == expected.method);
        CHECK(built.target == expected.target);
        CHECK(built.has_body);
        CHECK(built.is_idempotent);
        CHECK(nlohmann::json::accept(built.body));
    }
}

TEST_CASE("client: the cursor's short byte compare finds a difference at any position",
          "[client][protocol]") {
    const std::string base = "\"transaction_id_and_more\":";
    for (std::size_t size = 0; size <= base.size(); ++size) {
        INFO("size=" << size);
        std::string copy = base;
        CHECK(queen::json::detail::is_equal_bytes(base.data(), copy.data(), size));
        for (std::size_t at = 0; at < size; ++at) {
            INFO("at=" << at);
            copy = base;
            copy[at] = static_cast<char>(copy[at] ^ 0x20);
            CHECK_FALSE(queen::json::detail::is_equal_bytes(base.data(), copy.data(), size));
        }
    }
}

TEST_CASE("client: a pop result read again keeps the storage of messages a shorter answer left",
          "[client][protocol][pop]") {
    const PopRequest pop = pop_of_q();
    const auto answer_of = [](int count, char tag) {
        std::string body = R"({"queue":"q","leaseId":"l","messages":[)";
        for (int i = 0; i < count; ++i) {
            // Ids longer than any small-string buffer: they live in allocated storage.
            body += std::string(i > 0 ? "," : "") + R"({"id":")" + std::string(40, tag) +
                    std::to_string(i) + R"(","transactionId":"t)" + std::to_string(i) +
                    R"(","partitionId":"p","data":{"i":)" + std::to_string(i) + "}}";
        }
        return body + "]}";
    };
    PopResult result;
    REQUIRE(read_pop_answer(pop_request, response_of(200, answer_of(3, 'a')), pop, result));
    REQUIRE(result.messages.size() == 3);
    std::vector<const char*> storage;
    for (const Message& message : result.messages) {
        storage.push_back(message.id.data());
    }
    const std::pair<int, char> rounds[] = {{1, 'b'}, {0, 'c'}, {2, 'd'}, {3, 'e'}, {1, 'f'}};
    for (const auto& [count, tag] : rounds) {
        INFO("count=" << count);
        const std::string body = answer_of(count, tag);
        const HttpResponse response = count == 0 ? response_of(204, "") : response_of(200, body);
        REQUIRE(read_pop_answer(pop_request, response, pop, result));
        REQUIRE(result.messages.size() == static_cast<std::size_t>(count));
        CHECK(result.messages.size() + result.spare_messages.size() == 3);
        for (int i = 0; i < count; ++i) {
            const Message& message = result.messages[static_cast<std::size_t>(i)];
            CHECK(message.id == std::string(40, tag) + std::to_string(i));
            CHECK(message.transaction_id == "t" + std::to_string(i));
            CHECK(message.data_json == R"({"i":)" + std::to_string(i) + "}");
            CHECK(message.lease_id == "l");
            CHECK(std::find(storage.begin(), storage.end(), message.id.data()) != storage.end());
        }
    }
}

TEST_CASE("client: payload objects the flat-object fast path reads are exactly the valid ones",
          "[client][protocol][pop]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    const PopRequest pop = pop_of_q();
    PopResult result;
    const std::vector<std::string> strings = {
        R"("")",        R"("plain text")", R"("x\"y")",        R"("\u00e9")",
        "\"\xc3\xa9\"", "\"tab\t\"",       R"("unterminated)", R"("long padding padding padding")"};
    for (int round = 0; round < 1000; ++round) {
        INFO("round=" << round);
        // Mostly compact flat objects (the fast path), with near misses of every kind.
        std::string data = "{";
        const std::uint64_t members = rng.below(4);
        for (std::uint64_t i = 0; i < members; ++i) {
            if (i > 0) {
                data += rng.below(20) == 0 ? " ," : ",";
            }
            data += rng.below(20) == 0 ? R"("k\u0031")" : "\"k" + std::to_string(i) + "\"";
            data += rng.below(20) == 0 ? ": " : ":";
            const std::uint64_t kind = rng.below(8);
            if (kind < 3) {
                data += strings[rng.below(strings.size())];
            } else if (kind < 6) {
                data += random_scalar(rng);
            } else if (kind == 6) {
                data += R"({"nested":[1,2]})";
            } else {
                data += std::to_string(rng.next() >> rng.below(64));
            }
        }
        data += rng.below(30) == 0 ? "" : "}";
        const std::string body = R"({"messages":[{"id":"m","transactionId":"t",)"
                                 R"("partitionId":"p","data":)" +
                                 data + R"(,"retryCount":0}]})";
        INFO("data=" << data);
        const auto answer = read_pop_answer(pop_request, response_of(200, body), pop, result);
        if (!nlohmann::json::accept(body)) {
            REQUIRE_FALSE(answer);
            CHECK(answer.error().is(Errc::bad_response));
            continue;
        }
        REQUIRE(answer);
        REQUIRE(result.messages.size() == 1);
        CHECK(result.messages[0].data_json == data);
    }
}
