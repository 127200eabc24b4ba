// client/tests/multiplexer_test.cpp — HttpMultiplexer against a real socket: many slots at once,
// keep-alive reuse, reconnects, deadlines, errors, large bodies, and the shared protocol
// builders/readers over it.
#include "queen/client/multiplexer.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <set>
#include <span>
#include <utility>

#include "queen/client/errc.hpp"
#include "queen/client/protocol.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "test_server.hpp"

namespace {

using queen::client::ConnectionOptions;
using queen::client::Endpoint;
using queen::client::Errc;
using queen::client::HttpMultiplexer;
using queen::client::HttpRequest;
using queen::client::testing::answer_once_then_drop_first_connection;
using queen::client::testing::close_reply;
using queen::client::testing::get;
using queen::client::testing::json_reply;
using queen::client::testing::local;
using queen::client::testing::post;
using queen::client::testing::RecordedRequest;
using queen::client::testing::Reply;
using queen::client::testing::TestServer;

constexpr std::int64_t wait_slice_ns = 100'000'000;

// Waits until every started request finished (each wait() is bounded by the requests'
// deadlines, so this ends); returns the completions in arrival order.
std::vector<HttpMultiplexer::Completion> drain(HttpMultiplexer& mux) {
    std::vector<HttpMultiplexer::Completion> completed;
    while (mux.in_flight() > 0) {
        REQUIRE(mux.wait(wait_slice_ns, completed));
    }
    REQUIRE(mux.wait(0, completed));  // completions of start() itself
    return completed;
}

}  // namespace

TEST_CASE("multiplexer: many slots carry requests at once over kept-alive connections",
          "[client][multiplexer]") {
    TestServer server;
    server.set_handler([](const RecordedRequest& request) {
        return json_reply(200, "\"" + request.target + "\"");
    });
    constexpr std::size_t slots = 16;
    HttpMultiplexer mux{local(server.port()), {}, queen::SystemClock::instance(), slots};
    for (int round = 0; round < 3; ++round) {
        std::vector<std::string> targets;
        for (std::size_t i = 0; i < slots; ++i) {
            targets.push_back("/r" + std::to_string(round) + "/s" + std::to_string(i));
        }
        for (std::size_t i = 0; i < slots; ++i) {
            REQUIRE(mux.start(i, get(targets[i])));
            CHECK(mux.is_busy(i));
        }
        CHECK(mux.in_flight() == slots);
        const auto completed = drain(mux);
        REQUIRE(completed.size() == slots);
        std::set<std::size_t> seen;
        for (const auto& completion : completed) {
            REQUIRE(completion.status);
            seen.insert(completion.slot);
            CHECK(mux.response(completion.slot).status == 200);
            CHECK(mux.response(completion.slot).body == "\"" + targets[completion.slot] + "\"");
            CHECK_FALSE(mux.is_busy(completion.slot));
        }
        CHECK(seen.size() == slots);
    }
    CHECK(mux.connects_total() == slots);
    CHECK(server.connections_accepted() == static_cast<int>(slots));
    CHECK(server.requests().size() == 3 * slots);
}

TEST_CASE("multiplexer: requests carry method, headers and body, a busy slot refuses another",
          "[client][multiplexer]") {
    TestServer server;
    server.reply_always(json_reply(201, R"([{"status":"queued"}])"));
    ConnectionOptions options;
    options.headers.push_back({"Authorization", "Bearer t0k"});
    HttpMultiplexer mux{local(server.port()), options, queen::SystemClock::instance(), 2};
    {
        const std::string body = R"({"items":[]})";
        REQUIRE(mux.start(1, post("/api/v1/push", body)));
    }  // the request was copied: its body may die
    auto busy = mux.start(1, get("/other"));
    REQUIRE_FALSE(busy);
    CHECK(busy.error().is(Errc::invalid_argument));
    CHECK(mux.start(2, get("/x")).error().is(Errc::invalid_argument));
    const auto completed = drain(mux);
    REQUIRE(completed.size() == 1);
    CHECK(completed[0].slot == 1);
    CHECK(mux.response(1).status == 201);
    const RecordedRequest recorded = server.last_request();
    CHECK(recorded.method == "POST");
    CHECK(recorded.target == "/api/v1/push");
    CHECK(recorded.body == R"({"items":[]})");
    CHECK(recorded.header("Authorization") == "Bearer t0k");
    CHECK(recorded.header("Content-Type") == "application/json");
    CHECK(recorded.header("Content-Length") == "12");
}

TEST_CASE("multiplexer: Connection: close and idle closes make the next request reconnect",
          "[client][multiplexer]") {
    TestServer server;
    SECTION("Connection: close") {
        server.reply_always(json_reply(200, "{}", "Connection: close\r\n"));
    }
    SECTION("closed after answering, without saying so") {
        Reply reply = json_reply(200, "{}");
        reply.is_close_after = true;
        server.reply_always(reply);
    }
    HttpMultiplexer mux{local(server.port()), {}, queen::SystemClock::instance(), 1};
    for (int i = 0; i < 3; ++i) {
        REQUIRE(mux.start(0, get("/n")));
        const auto completed = drain(mux);
        REQUIRE(completed.size() == 1);
        REQUIRE(completed[0].status);
        CHECK(mux.response(0).body == "{}");
    }
    CHECK(mux.connects_total() == 3);
}

TEST_CASE("multiplexer: a request dropped on a reused connection is resent once when idempotent",
          "[client][multiplexer]") {
    TestServer server;
    // The first connection answers one request, then drops the next without answering.
    server.set_handler(answer_once_then_drop_first_connection());
    HttpMultiplexer mux{local(server.port()), {}, queen::SystemClock::instance(), 1};
    REQUIRE(mux.start(0, get("/first")));
    REQUIRE(drain(mux).at(0).status);
    SECTION("idempotent: resent on a new connection") {
        REQUIRE(mux.start(0, get("/second")));
        const auto completed = drain(mux);
        REQUIRE(completed.size() == 1);
        REQUIRE(completed[0].status);
        CHECK(mux.response(0).body == R"({"n":1})");
        CHECK(mux.connects_total() == 2);
        const auto recorded = server.requests();
        REQUIRE(recorded.size() == 3);
        CHECK(recorded[2].target == "/second");
        CHECK(recorded[2].connection_index == 1);
    }
    SECTION("not idempotent: the error is reported, nothing is resent") {
        REQUIRE(mux.start(0, post("/api/v1/transaction", "{}", false)));
        const auto completed = drain(mux);
        REQUIRE(completed.size() == 1);
        REQUIRE_FALSE(completed[0].status);
        CHECK(completed[0].status.error().is(Errc::connection_closed));
        CHECK(server.requests().size() == 2);
    }
}

TEST_CASE("multiplexer: a pipelined group goes out together and its answers come back in order",
          "[client][multiplexer]") {
    TestServer server;
    std::string coalesced;  // answers held back to leave with a later one, in one write
    server.set_handler([&](const RecordedRequest& request) {
        Reply reply = json_reply(200, "\"" + request.target + request.body + "\"");
        if (request.target == "/held") {
            coalesced = reply.raw;
            return Reply{};  // nothing written now
        }
        reply.raw = std::exchange(coalesced, "") + reply.raw;
        return reply;
    });
    HttpMultiplexer mux{local(server.port()), {}, queen::SystemClock::instance(), 2};
    SECTION("answers in separate writes") {
        const std::array<HttpRequest, 3> group{get("/a"), post("/b", "x"), get("/c")};
        REQUIRE(mux.start_pipelined(1, group));
        CHECK(mux.is_busy(1));
        const auto completed = drain(mux);
        REQUIRE(completed.size() == 1);
        REQUIRE(completed[0].status);
        CHECK(completed[0].slot == 1);
        CHECK(mux.answered(1) == 3);
        CHECK(mux.response(1, 0).body == "\"/a\"");
        CHECK(mux.response(1, 1).body == "\"/bx\"");
        CHECK(mux.response(1, 2).body == "\"/c\"");
    }
    SECTION("answers in one write: the bytes after the first answer start the second") {
        const std::array<HttpRequest, 2> group{post("/held", "1"), post("/b", "2")};
        REQUIRE(mux.start_pipelined(1, group));
        const auto completed = drain(mux);
        REQUIRE(completed.size() == 1);
        REQUIRE(completed[0].status);
        CHECK(mux.answered(1) == 2);
        CHECK(mux.response(1, 0).body == "\"/held1\"");
        CHECK(mux.response(1, 1).body == "\"/b2\"");
    }
    const auto recorded = server.requests();
    REQUIRE(recorded.size() >= 2);
    for (const RecordedRequest& request : recorded) {
        CHECK(request.connection_index == 0);  // one connection carried the whole group
    }
    // The slot goes on with single requests on the same connection.
    REQUIRE(mux.start(1, get("/after")));
    const auto completed = drain(mux);
    REQUIRE(completed.size() == 1);
    REQUIRE(completed[0].status);
    CHECK(mux.answered(1) == 1);
    CHECK(mux.response(1).body == "\"/after\"");
    CHECK(mux.connects_total() == 1);
    CHECK(
        mux.start_pipelined(0, std::span<const HttpRequest>{}).error().is(Errc::invalid_argument));
}

TEST_CASE("multiplexer: a pipelined group cut short fails as a whole, answers before it kept",
          "[client][multiplexer]") {
    TestServer server;
    SECTION("the connection drops after the first answer") {
        server.set_handler([](const RecordedRequest& request) {
            return request.target == "/a" ? json_reply(200, "\"a\"") : close_reply();
        });
    }
    SECTION("the first answer says Connection: close") {
        server.set_handler([](const RecordedRequest&) {
            return json_reply(200, "\"a\"", "Connection: close\r\n");
        });
    }
    HttpMultiplexer mux{local(server.port()), {}, queen::SystemClock::instance(), 1};
    // Idempotent GETs, but an answer came: never resent.
    const std::array<HttpRequest, 2> group{get("/a"), get("/b")};
    REQUIRE(mux.start_pipelined(0, group));
    const auto completed = drain(mux);
    REQUIRE(completed.size() == 1);
    REQUIRE_FALSE(completed[0].status);
    CHECK(completed[0].status.error().is(Errc::connection_closed));
    CHECK_THAT(completed[0].status.error().message(),
               Catch::Matchers::Contains("GET /a (+1 pipelined)"));
    CHECK(mux.answered(0) == 1);
    CHECK(mux.response(0, 0).body == "\"a\"");
    CHECK(mux.connects_total() == 1);
}

TEST_CASE("multiplexer: deadlines, closed ports and bad answers fail only their slot",
          "[client][multiplexer]") {
    TestServer server;
    server.set_handler([](const RecordedRequest& request) {
        if (request.target == "/hang") {
            return Reply{"", false, true};
        }
        if (request.target == "/junk") {
            return Reply{"NOT HTTP\r\n\r\n", true, false};
        }
        if (request.target == "/big") {
            return json_reply(200, std::string(2048, 'x'));
        }
        return json_reply(200, "{}");
    });
    ConnectionOptions options;
    options.response_size_bytes_max = 1024;
    HttpMultiplexer mux{local(server.port()), options, queen::SystemClock::instance(), 4};
    HttpRequest hang = get("/hang");
    hang.timeout_ms = 50;
    REQUIRE(mux.start(0, hang));
    REQUIRE(mux.start(1, get("/junk")));
    REQUIRE(mux.start(2, get("/big")));
    REQUIRE(mux.start(3, get("/fine")));
    const auto completed = drain(mux);
    REQUIRE(completed.size() == 4);
    for (const auto& completion : completed) {
        INFO("slot " << completion.slot);
        switch (completion.slot) {
            case 0: CHECK(completion.status.error().is(Errc::timeout)); break;
            case 1: CHECK(completion.status.error().is(Errc::bad_response)); break;
            case 2: CHECK(completion.status.error().is(Errc::bad_response)); break;
            default: CHECK(completion.status); break;
        }
    }

    // Nobody listens on a port bound and closed again.
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(fd);
    HttpMultiplexer refused{local(ntohs(address.sin_port)), {}, queen::SystemClock::instance(), 1};
    auto started = refused.start(0, get("/health"));
    if (started) {
        const auto failed = drain(refused);
        REQUIRE(failed.size() == 1);
        CHECK(failed[0].status.error().is(Errc::connect_failed));
    } else {
        CHECK(started.error().is(Errc::connect_failed));
    }
    std::vector<HttpMultiplexer::Completion> none;
    CHECK(refused.wait(-1, none).error().is(Errc::invalid_argument));
}

TEST_CASE("multiplexer: large bodies cross partial writes and many reads intact",
          "[client][multiplexer]") {
    TestServer server;
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    std::string request_body(6 * 1024 * 1024 + rng.below(4096), ' ');
    for (auto& c : request_body) {
        c = static_cast<char>('a' + rng.below(26));
    }
    std::string response_body(3 * 1024 * 1024 + rng.below(4096), ' ');
    for (auto& c : response_body) {
        c = static_cast<char>('A' + rng.below(26));
    }
    server.reply_always(json_reply(200, response_body));
    ConnectionOptions options;
    options.response_size_bytes_max = 8 << 20;
    HttpMultiplexer mux{local(server.port()), options, queen::SystemClock::instance(), 2};
    for (int round = 0; round < 2; ++round) {
        REQUIRE(mux.start(0, post("/api/v1/push", request_body)));
        REQUIRE(mux.start(1, post("/api/v1/push", request_body)));
        const auto completed = drain(mux);
        REQUIRE(completed.size() == 2);
        for (const auto& completion : completed) {
            REQUIRE(completion.status);
            CHECK(mux.response(completion.slot).body == response_body);
        }
        CHECK(server.last_request().body == request_body);
    }
    CHECK(mux.connects_total() == 2);
}

TEST_CASE("multiplexer: the protocol builders and readers drive push, pop, ack and transaction",
          "[client][multiplexer][protocol]") {
    TestServer server;
    server.set_handler([](const RecordedRequest& request) {
        if (request.target == "/api/v1/push") {
            return json_reply(201,
                              R"([{"status":"queued","message_id":"m1","transaction_id":"t1"},)"
                              R"({"status":"duplicate","message_id":"m2"}])");
        }
        if (request.target.starts_with("/api/v1/pop/")) {
            return json_reply(200, R"({"leaseId":"L","partitionId":"P","partition":"p0",)"
                                   R"("messages":[{"transactionId":"t1","data":{"seq":1}}]})");
        }
        if (request.target == "/api/v1/ack/batch") {
            return json_reply(200, R"([{"transactionId":"t1","success":true}])");
        }
        if (request.target == "/api/v1/transaction") {
            return json_reply(200, R"({"success":false,"error":"lease expired"})");
        }
        return json_reply(404, R"({"error":"no route"})");
    });
    HttpMultiplexer mux{local(server.port()), {}, queen::SystemClock::instance(), 1};
    queen::client::UuidV7Generator ids{7, queen::SystemClock::instance()};
    queen::client::OwnedRequest request;
    const auto exchange = [&] {
        REQUIRE(mux.start(0, request.view()));
        const auto completed = drain(mux);
        REQUIRE(completed.size() == 1);
        REQUIRE(completed[0].status);
    };

    std::vector<queen::client::PushItem> items(2);
    items[0].queue = "q";
    items[0].payload_json = R"({"a":1})";
    items[1].queue = "q";
    items[1].payload_json = R"({"a":2})";
    items[1].transaction_id = "given";
    REQUIRE(queen::client::build_push(items, true, ids, request));
    exchange();
    const RecordedRequest pushed = server.last_request();
    CHECK(pushed.body.find(R"("transactionId":"given")") != std::string::npos);
    std::vector<queen::client::PushResult> results;
    REQUIRE(queen::client::read_push_answer(request.view(), mux.response(0), 2, results));
    REQUIRE(results.size() == 2);
    CHECK(results[0].status == queen::client::PushStatus::queued);
    CHECK(results[1].status == queen::client::PushStatus::duplicate);
    CHECK(queen::client::read_push_answer(request.view(), mux.response(0), 3, results)
              .error()
              .is(Errc::bad_response));

    queen::client::PopRequest pop;
    pop.queue = "q";
    pop.batch = 10;
    pop.is_wait = true;
    pop.timeout_ms = 1000;
    REQUIRE(queen::client::build_pop(pop, 5000, request));
    CHECK(request.timeout_ms == 6000);
    exchange();
    CHECK(server.last_request().target == "/api/v1/pop/queue/q?batch=10&wait=true&timeout=1000");
    queen::client::PopResult popped;
    REQUIRE(queen::client::read_pop_answer(request.view(), mux.response(0), pop, popped));
    REQUIRE(popped.messages.size() == 1);
    CHECK(popped.messages[0].lease_id == "L");
    CHECK(popped.messages[0].partition_id == "P");

    const std::vector<queen::client::Ack> acks{queen::client::Ack::of(popped.messages[0])};
    queen::client::build_ack_batch(acks, "", request);
    exchange();
    std::vector<queen::client::AckResult> acked;
    REQUIRE(queen::client::read_ack_batch_answer(request.view(), mux.response(0), 1, acked));
    REQUIRE(acked.size() == 1);
    CHECK(acked[0].is_success);

    queen::client::TransactionRequest transaction;
    transaction.operations.emplace_back(acks[0]);
    REQUIRE(queen::client::build_transaction(transaction, true, ids, request));
    CHECK_FALSE(request.is_idempotent);
    exchange();
    queen::client::TransactionResult committed;
    auto rolled_back =
        queen::client::read_transaction_answer(request.view(), mux.response(0), committed);
    REQUIRE_FALSE(rolled_back);
    CHECK(rolled_back.error().is(Errc::rejected));

    // A non-2xx answer is its HTTP status error, whichever reader sees it.
    request.method = "GET";
    request.target = "/nowhere";
    request.has_body = false;
    exchange();
    auto missing = queen::client::read_ack_batch_answer(request.view(), mux.response(0), 1, acked);
    REQUIRE_FALSE(missing);
    CHECK(queen::client::http_status_of(missing.error()) == 404);
    CHECK(mux.connects_total() == 1);
}

TEST_CASE(
    "multiplexer: start_with_body takes the body, returns the slot's old buffer, and "
    "sends, resends and splits it like a copied one",
    "[client][multiplexer]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    TestServer server;
    // The first connection answers one request, then drops the next without answering: the
    // taken body must still be there for the resend on a new connection.
    server.set_handler(answer_once_then_drop_first_connection());
    HttpMultiplexer mux{local(server.port()), {}, queen::SystemClock::instance(), 2};
    // Short (inside the string object), medium and large (partial writes) bodies.
    std::vector<std::string> sent_bodies;
    for (const std::size_t size : {std::size_t{1}, std::size_t{300}, std::size_t{3u << 20}}) {
        std::string body(size + rng.below(64), ' ');
        for (char& c : body) {
            c = static_cast<char>('a' + rng.below(26));
        }
        sent_bodies.push_back(body);
        const std::string expected = body;
        REQUIRE(mux.start_with_body(0, post("/api/v1/push", "ignored"), body));
        // Busy: refused, and the caller's body is left as it is.
        std::string refused = "kept";
        CHECK(mux.start_with_body(0, post("/x", ""), refused).error().is(Errc::invalid_argument));
        CHECK(refused == "kept");
        const auto completed = drain(mux);
        REQUIRE(completed.size() == 1);
        REQUIRE(completed[0].status);
        CHECK(mux.response(0).body == R"({"n":1})");
        const RecordedRequest recorded = server.last_request();
        CHECK(recorded.body == expected);
        CHECK(recorded.header("Content-Length") == std::to_string(expected.size()));
        // The returned buffer is the slot's previous one: the first time an empty one.
        if (sent_bodies.size() == 1) {
            CHECK(body.empty());
        } else {
            CHECK(body.capacity() >= sent_bodies[sent_bodies.size() - 2].size());
        }
    }
    CHECK(mux.connects_total() == 2);  // the second request was resent on a new connection
    // Out-of-range slots refuse too.
    std::string body = "x";
    CHECK(mux.start_with_body(9, post("/x", ""), body).error().is(Errc::invalid_argument));
    CHECK(body == "x");
    // A plain start() after start_with_body() sends its own body, not the taken one.
    REQUIRE(mux.start(1, post("/api/v1/push", "plain")));
    REQUIRE(drain(mux).at(0).status);
    CHECK(server.last_request().body == "plain");
    REQUIRE(mux.start(0, get("/no-body")));
    REQUIRE(drain(mux).at(0).status);
    CHECK(server.last_request().body.empty());
    CHECK(server.last_request().header("Content-Length").empty());
}
