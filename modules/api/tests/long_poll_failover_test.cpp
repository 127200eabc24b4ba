// api/tests/long_poll_failover_test.cpp — long polls across a leader change (long_poll.hpp): a
// waiting pop, and the wait of POST /api/v1/request, that meet no leader (or one replaced
// before it answered) pop again after a pause and deliver; without a wait, or once the wait is
// over, the error is the answer. The fake backend fails scripted submits; time is manual.
#include <algorithm>
#include <sstream>

#include "harness.hpp"
#include "queen/core/result.hpp"

namespace queen::api::testing {
namespace {

using http::Method;
using nlohmann::json;

const Error no_leader{Errc::not_leader, "no leader of tenant 'default' is known"};
const Error replaced{Errc::timeout,
                     "the leader changed before it answered a forwarded command; it may or may "
                     "not be applied"};

/// The value of the Prometheus sample `name` (no labels); -1 when absent.
double prometheus_value(Harness& h, std::string_view name) {
    const Reply reply = h.get("/metrics/prometheus");
    REQUIRE(reply.status == 200);
    std::istringstream lines(reply.body);
    const std::string prefix = std::string(name) + " ";
    for (std::string line; std::getline(lines, line);) {
        if (line.starts_with(prefix)) {
            return std::stod(line.substr(prefix.size()));
        }
    }
    return -1;
}

std::uint64_t polls_waiting(Harness& h) {
    return h.get("/metrics").json()["longPolls"]["waiting"].get<std::uint64_t>();
}

std::size_t count_of(const std::vector<engine::CommandType>& types, engine::CommandType type) {
    return static_cast<std::size_t>(std::count(types.begin(), types.end(), type));
}

TEST_CASE("api: a waiting pop that meets no leader pops again after a pause and delivers",
          "[api][pop][longpoll][failover]") {
    Harness h;
    h.push("q", "Default", {json{{"n", 1}}});
    h.backend.fail_with(no_leader);
    auto pending = h.start(Method::get, "/api/v1/pop/queue/q?wait=true&timeout=5000");
    REQUIRE_FALSE(pending.reply->is_done);
    CHECK(h.backend.failed() == 1);
    CHECK(h.backend.waiting() == 1);  // the pause
    h.backend.advance(99);
    CHECK(h.backend.failed() == 1);  // no try before the pause is over
    h.backend.advance(1);
    CHECK(h.backend.failed() == 2);  // still no leader: another pause
    REQUIRE_FALSE(pending.reply->is_done);

    h.backend.fail_with(std::nullopt);  // a leader again
    h.backend.advance(100);
    REQUIRE(pending.reply->is_done);
    REQUIRE(pending.reply->status == 200);
    const json body = pending.reply->json();
    REQUIRE(body["messages"].size() == 1);
    CHECK(body["messages"][0]["data"] == json{{"n", 1}});
    CHECK(h.backend.waiting() == 0);
    CHECK(polls_waiting(h) == 0);
    CHECK(prometheus_value(h, "queen_long_poll_retries_total") == 2);
    CHECK(prometheus_value(h, "queen_pop_messages_total") == 1);
    CHECK(prometheus_value(h, "queen_pop_empty_total") == 0);
}

TEST_CASE("api: a parked pop woken by a push whose pop meets a replaced leader still gets it",
          "[api][pop][longpoll][failover]") {
    // What a follower sees when the leader it forwarded the woken pop to dies: the pop's
    // outcome is unknown (Errc::timeout); here it was not applied, so the message waits.
    Harness h;
    auto pending = h.start(Method::get, "/api/v1/pop/queue/q?wait=true&timeout=5000");
    REQUIRE_FALSE(pending.reply->is_done);
    h.backend.fail_next(engine::CommandType::pop, replaced);
    h.push("q", "Default", {json{{"n", 2}}});
    CHECK(h.backend.failed() == 1);  // woken, popped again, lost
    REQUIRE_FALSE(pending.reply->is_done);
    CHECK(h.backend.waiting() == 1);
    h.backend.advance(100);
    REQUIRE(pending.reply->is_done);
    REQUIRE(pending.reply->status == 200);
    CHECK(pending.reply->json()["messages"][0]["data"] == json{{"n", 2}});
    CHECK(h.backend.waiting() == 0);
    CHECK(polls_waiting(h) == 0);
}

TEST_CASE("api: a pop that does not wait answers a leader error at once",
          "[api][pop][longpoll][failover]") {
    Harness h;
    SECTION("without wait") {
        h.backend.fail_with(no_leader);
        const Reply reply = h.get("/api/v1/pop/queue/q");
        CHECK(reply.status == 503);
        CHECK(has_retry_after(reply));
        CHECK_THAT(reply.json()["error"].get<std::string>(),
                   Catch::Contains("not the leader") && Catch::Contains("no leader"));
    }
    SECTION("with a wait of 0 ms") {
        h.backend.fail_with(replaced);
        const Reply reply = h.get("/api/v1/pop/queue/q?wait=true&timeout=0");
        CHECK(reply.status == 503);
        CHECK_THAT(reply.json()["error"].get<std::string>(), Catch::Contains("leader changed"));
    }
    SECTION("an error no other try can mend, with a long wait") {
        h.backend.fail_with(Error{Errc::poisoned, "fdatasync failed: EIO"});
        const Reply reply = h.get("/api/v1/pop/queue/q?wait=true&timeout=30000");
        CHECK(reply.status == 503);
        CHECK_THAT(reply.json()["error"].get<std::string>(), Catch::Contains("EIO"));
    }
    CHECK(h.backend.failed() == 1);  // one try
    CHECK(h.backend.waiting() == 0);
    CHECK(polls_waiting(h) == 0);
    CHECK(prometheus_value(h, "queen_long_poll_retries_total") == 0);
}

TEST_CASE("api: a waiting pop whose every try fails answers the error at its deadline, not before",
          "[api][pop][longpoll][failover]") {
    Harness h;
    h.backend.fail_with(no_leader);
    auto pending = h.start(Method::get, "/api/v1/pop/queue/q?wait=true&timeout=1000");
    SECTION("the deadline") {
        for (int step = 1; step <= 9; ++step) {
            h.backend.advance(100);
            INFO("at " << step * 100 << " ms");
            REQUIRE_FALSE(pending.reply->is_done);
        }
        CHECK(h.backend.failed() == 10);  // a try every 100 ms
        CHECK(polls_waiting(h) == 1);
        h.backend.advance(99);
        REQUIRE_FALSE(pending.reply->is_done);
        h.backend.advance(1);
        REQUIRE(pending.reply->is_done);
        CHECK(pending.reply->status == 503);
        CHECK(has_retry_after(*pending.reply));
        CHECK_THAT(pending.reply->json()["error"].get<std::string>(),
                   Catch::Contains("not the leader"));
        CHECK(h.backend.failed() == 10);  // none at the deadline itself
        CHECK(prometheus_value(h, "queen_long_poll_retries_total") == 9);
        CHECK(prometheus_value(h, "queen_pop_empty_total") == 0);  // not a 204
    }
    SECTION("a client that leaves during a pause stops trying") {
        h.backend.advance(250);
        const std::uint64_t tries = h.backend.failed();
        http::Responder::cancel(pending.responder);
        h.backend.advance(2000);
        CHECK(h.backend.failed() == tries);
        CHECK_FALSE(pending.reply->is_done);
    }
    CHECK(h.backend.waiting() == 0);
    CHECK(polls_waiting(h) == 0);
}

TEST_CASE("api: a request whose reply wait meets no leader once still gets the reply",
          "[api][request][longpoll][failover]") {
    Harness h;
    h.backend.fail_next(engine::CommandType::pop, no_leader);
    auto pending =
        h.start(Method::post, "/api/v1/request",
                json{{"queue", "rpc"}, {"payload", {{"add", {2, 3}}}}, {"timeoutMs", 5000}}.dump());
    REQUIRE_FALSE(pending.reply->is_done);
    CHECK(h.backend.failed() == 1);  // the reply queue's first pop
    CHECK(h.backend.waiting() == 1);

    // A worker takes the request and replies; the reply ends the wait's pause early.
    const Reply taken = h.get("/api/v1/pop/queue/rpc?autoAck=true");
    REQUIRE(taken.status == 200);
    const json request = taken.json()["messages"][0]["data"];
    h.push(request["replyTo"].get<std::string>(), "Default", {json{{"sum", 5}}});
    REQUIRE(pending.reply->is_done);
    REQUIRE(pending.reply->status == 200);
    const json answer = pending.reply->json();
    CHECK(answer["requestId"] == request["requestId"]);
    CHECK(answer["reply"] == json{{"sum", 5}});
    // The reply queue was made once and the request pushed once (the other push is the reply).
    const auto& types = h.backend.submitted_types();
    CHECK(count_of(types, engine::CommandType::configure_ephemeral) == 1);
    CHECK(count_of(types, engine::CommandType::push) == 2);
    CHECK(h.backend.waiting() == 0);
    CHECK(polls_waiting(h) == 0);
    CHECK(prometheus_value(h, "queen_long_poll_retries_total") == 1);
}

TEST_CASE("api: a request whose reply queue or push meets no leader answers 503 and sends nothing",
          "[api][request][longpoll][failover]") {
    Harness h;
    const engine::CommandType failing =
        GENERATE(engine::CommandType::configure_ephemeral, engine::CommandType::push);
    INFO("failing " << static_cast<int>(failing));
    h.backend.fail_next(failing, no_leader);
    const Reply reply =
        h.post("/api/v1/request", {{"queue", "rpc"}, {"payload", 1}, {"timeoutMs", 5000}});
    CHECK(reply.status == 503);
    CHECK(has_retry_after(reply));
    CHECK(h.backend.failed() == 1);
    const auto& types = h.backend.submitted_types();
    CHECK(count_of(types, engine::CommandType::push) == 0);
    CHECK(count_of(types, engine::CommandType::pop) == 0);
    CHECK(count_of(types, engine::CommandType::configure_ephemeral) ==
          (failing == engine::CommandType::push ? 1 : 0));
    CHECK(h.backend.waiting() == 0);
    CHECK(h.get("/api/v1/pop/queue/rpc").status == 204);  // no request was queued
}

}  // namespace
}  // namespace queen::api::testing
