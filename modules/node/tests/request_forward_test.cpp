// modules/node/tests/request_forward_test.cpp — HTTP requests served by another node over the peer
// link: the frames (round trips, malformed ones refused), the request the serving side rebuilds,
// and the protocol over real peer transports on loopback (an echo, a long poll answered later,
// a timeout, a client disconnect reaching the peer, unknown and unreachable nodes, answers over
// the frame limit, stop()).
#include "request_forward.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "peer_support.hpp"
#include "queen/testing/catch.hpp"

namespace {
using queen::Bytes;
using queen::NodeId;
using namespace queen::node::detail;
namespace http = queen::http;
using namespace std::chrono_literals;

const std::string secret = "a cluster secret of at least 16 bytes";
/// How long a test waits for an event before it gives up (a hang guard, not a timing check).
constexpr auto patience = 30s;

using queen::node::testing::free_port;

std::string thread_name() {
    char name[16] = {};
    (void)pthread_getname_np(pthread_self(), name, sizeof name);
    return name;
}

/// What the serving node's handler saw and kept, shared with the test thread.
struct Served {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<http::Request> requests;
    std::vector<std::string> threads;     // the thread each request ran on
    std::vector<http::Responder> parked;  // long polls: completed by the test, or never
    int cancelled = 0;                    // on_cancel callbacks that ran

    /// Waits until `done` holds (under the lock); false after `patience`.
    bool wait(const std::function<bool()>& done) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, patience, done);
    }
    void note(http::Request& request) {
        std::lock_guard lock(mutex);
        requests.push_back(request);
        threads.push_back(thread_name());
    }
    /// Keeps `responder` open (a parked long poll) and counts its cancellation.
    void park(const std::shared_ptr<Served>& self, http::Responder responder) {
        std::weak_ptr<Served> weak = self;
        responder.on_cancel([weak] {
            if (auto served = weak.lock()) {
                {
                    std::lock_guard lock(served->mutex);
                    ++served->cancelled;
                }
                served->changed.notify_all();
            }
        });
        {
            std::lock_guard lock(mutex);
            parked.push_back(std::move(responder));
        }
        changed.notify_all();
    }
};

/// The client of the origin node: a detached responder whose answer the test awaits.
struct Client {
    struct State {
        std::mutex mutex;
        std::condition_variable changed;
        std::optional<http::Response> response;
    };
    std::shared_ptr<State> state = std::make_shared<State>();
    http::Responder responder = http::Responder::detached([shared = state](http::Response answer) {
        {
            std::lock_guard lock(shared->mutex);
            shared->response = std::move(answer);
        }
        shared->changed.notify_all();
    });

    http::Response wait() {
        std::unique_lock lock(state->mutex);
        REQUIRE(
            state->changed.wait_for(lock, patience, [&] { return state->response.has_value(); }));
        return *state->response;
    }
    bool has_answer() {
        std::lock_guard lock(state->mutex);
        return state->response.has_value();
    }
};

std::optional<std::string> header_of(const http::Response& response, std::string_view name) {
    for (const auto& header : response.headers) {
        if (http::iequals(header.name, name)) {
            return header.value;
        }
    }
    return std::nullopt;
}

http::Request make_request(const std::string& method, const std::string& target,
                           std::vector<http::Header> headers = {}, std::string body = {}) {
    auto request = rebuild_request(method, target);
    REQUIRE(request.has_value());
    request->headers = std::move(headers);
    request->body = std::move(body);
    request->peer_address = "10.1.2.3";
    return std::move(request).value();
}

/// Peer transports of a `size`-node cluster on 127.0.0.1, each started node with a forwarder.
struct Nodes {
    Nodes(std::size_t size, const std::vector<std::size_t>& running,
          RequestForwarderOptions options = {}) {
        std::vector<std::string> peers;
        for (std::size_t i = 1; i <= size; ++i) {
            peers.push_back(std::to_string(i) + "@127.0.0.1:" + std::to_string(free_port()));
        }
        clusters.resize(size);
        forwarders.resize(size);
        for (const std::size_t id : running) {
            queen::node::NodeConfig config;
            config.node.id = id;
            config.cluster.peers = peers;
            config.cluster.secret = secret;
            auto cluster = Cluster::start(config, queen::SystemClock::instance(), logger);
            REQUIRE(cluster.has_value());
            clusters[id - 1] = std::move(cluster).value();
            forwarders[id - 1] = RequestForwarder::start(
                *clusters[id - 1], queen::SystemClock::instance(), logger, options);
        }
    }
    ~Nodes() {
        for (auto& forwarder : forwarders) {
            if (forwarder) {
                forwarder->stop();
            }
        }
        for (auto& cluster : clusters) {
            if (cluster) {
                cluster->stop();
            }
        }
    }
    RequestForwarder& operator[](std::size_t id) { return *forwarders[id - 1]; }

    queen::NullLogger logger;
    std::vector<std::unique_ptr<Cluster>> clusters;
    std::vector<std::shared_ptr<RequestForwarder>> forwarders;
};

}  // namespace

TEST_CASE("node: http_request and http_response frames round-trip", "[node][request_forward]") {
    const std::string body("binary \0 body \xff", 15);
    Bytes payload;
    encode_http_request(42, 35'000, "POST", "/api/v1/push?x=1",
                        {{"Content-Type", "application/json"}, {"X-A", "1"}, {"X-A", "2"}}, body,
                        payload);
    auto request = decode_http_request(payload);
    REQUIRE(request.has_value());
    CHECK(request->id == 42);
    CHECK(request->timeout_ms == 35'000);
    CHECK(request->method_name == "POST");
    CHECK(request->target == "/api/v1/push?x=1");
    REQUIRE(request->headers.size() == 3);
    CHECK(request->headers[2].name == "X-A");
    CHECK(request->headers[2].value == "2");
    CHECK(request->body == body);
    // Every shorter prefix, and a byte too many, is refused.
    for (std::size_t size = 0; size < payload.size(); ++size) {
        CHECK_FALSE(decode_http_request(queen::ByteSpan(payload).first(size)).has_value());
    }
    payload.push_back(0);
    CHECK_FALSE(decode_http_request(payload).has_value());

    http::Response response = http::Response::text(201, body);
    response.headers.push_back({"Retry-After", "1"});
    Bytes encoded;
    encode_http_response(7, response, encoded);
    auto decoded = decode_http_response(encoded);
    REQUIRE(decoded.has_value());
    CHECK(decoded->first == 7);
    CHECK(decoded->second.status == 201);
    CHECK(decoded->second.content_type == response.content_type);
    REQUIRE(decoded->second.headers.size() == 1);
    CHECK(decoded->second.headers[0].name == "Retry-After");
    CHECK(decoded->second.body == body);

    // Without a content type none comes back.
    http::Response bare = http::Response::empty(204);
    bare.content_type.clear();
    encoded.clear();
    encode_http_response(8, bare, encoded);
    decoded = decode_http_response(encoded);
    REQUIRE(decoded.has_value());
    CHECK(decoded->second.status == 204);
    CHECK(decoded->second.content_type.empty());
    CHECK(decoded->second.headers.empty());

    // What the HTTP server could not send is refused: a status outside 100..599, header bytes
    // that would split the response.
    http::Response bad_status = http::Response::empty(204);
    bad_status.status = 700;
    encoded.clear();
    encode_http_response(9, bad_status, encoded);
    CHECK_FALSE(decode_http_response(encoded).has_value());
    http::Response split = http::Response::empty(200);
    split.headers.push_back({"X-A", "1\r\nSet-Cookie: x"});
    encoded.clear();
    encode_http_response(9, split, encoded);
    CHECK_FALSE(decode_http_response(encoded).has_value());
    http::Response bad_name = http::Response::empty(200);
    bad_name.headers.push_back({"X A", "1"});
    encoded.clear();
    encode_http_response(9, bad_name, encoded);
    CHECK_FALSE(decode_http_response(encoded).has_value());
}

TEST_CASE("node: a forwarded request is rebuilt as the HTTP server builds it",
          "[node][request_forward]") {
    auto request =
        rebuild_request("GET", "/api/v1/pop/queue/q%20a/partition/p%2F1?wait=true&x=a+b&k");
    REQUIRE(request.has_value());
    CHECK(request->method == http::Method::get);
    CHECK(request->method_name == "GET");
    CHECK(request->target == "/api/v1/pop/queue/q%20a/partition/p%2F1?wait=true&x=a+b&k");
    CHECK(request->path == "/api/v1/pop/queue/q%20a/partition/p%2F1");
    CHECK(request->raw_query == "wait=true&x=a+b&k");
    CHECK(request->segments ==
          std::vector<std::string>{"api", "v1", "pop", "queue", "q a", "partition", "p/1"});
    using Query = std::vector<std::pair<std::string, std::string>>;
    CHECK(request->query == Query{{"wait", "true"}, {"x", "a b"}, {"k", ""}});

    auto other = rebuild_request("PROPFIND", "//a//b/?");
    REQUIRE(other.has_value());
    CHECK(other->method == http::Method::other);
    CHECK(other->method_name == "PROPFIND");
    CHECK(other->path == "//a//b/");
    CHECK(other->segments == std::vector<std::string>{"a", "b"});
    CHECK(other->raw_query.empty());
    CHECK(other->query.empty());

    auto absolute = rebuild_request("DELETE", "http://node-1:6632/api/v1/x?y=1#frag");
    REQUIRE(absolute.has_value());
    CHECK(absolute->method == http::Method::delete_);
    CHECK(absolute->path == "/api/v1/x");
    CHECK(absolute->raw_query == "y=1");
    auto no_path = rebuild_request("GET", "http://node-1?a=1");
    REQUIRE(no_path.has_value());
    CHECK(no_path->path == "/");
    CHECK(no_path->raw_query == "a=1");

    CHECK(rebuild_request("OPTIONS", "*")->path == "*");

    const auto refused = [](const std::string& method, const std::string& target) {
        auto result = rebuild_request(method, target);
        REQUIRE_FALSE(result.has_value());
        CHECK(result.error().is(queen::Errc::invalid_argument));
        return result.error().context;
    };
    CHECK(refused("GET", "/a%zz/b").find("Bad percent-encoding in the path") != std::string::npos);
    CHECK(refused("GET", "/a?b=%0").find("Bad percent-encoding in the query") != std::string::npos);
    CHECK(refused("GET", "/a%00").find("Bad percent-encoding in the path") != std::string::npos);
    CHECK(refused("GET", "") == "Malformed request target");
    CHECK(refused("GET", "a/b") == "Malformed request target");
    CHECK(refused("GET", "/a b") == "Malformed request target");
    CHECK(refused("CONNECT", "node:443") == "CONNECT is not supported");
    CHECK(refused("", "/") == "Malformed request method");
}

TEST_CASE("node: a forwarded request is served by the peer and answered as if served here",
          "[node][request_forward]") {
    auto served = std::make_shared<Served>();
    Nodes nodes(2, {1, 2});
    nodes[2].set_local_handler([served](http::Request& request, http::Responder responder) {
        served->note(request);
        if (request.path == "/health") {
            responder.complete(http::Response::empty(204));
            return;
        }
        http::Response response = http::Response::text(201, request.body);
        response.headers.push_back({"X-Echo", request.method_name + " " + request.target});
        response.headers.push_back({"Location", "/api/v1/x"});
        responder.complete(std::move(response));
    });

    std::string body(100'000, 'b');
    body[10] = '\0';
    const std::string target = "/api/v1/push/a%20b?wait=true&x=1+2";
    const http::Request request =
        make_request("POST", target,
                     {{"Content-Type", "application/json"},
                      {"X-Queen-Forwarded-From", "7"},  // a client's: replaced
                      {"X-Dup", "1"},
                      {"x-dup", "2"}},
                     body);
    Client client;
    nodes[1].forward(NodeId{2}, request, client.responder, 20s);
    const http::Response answer = client.wait();
    CHECK(answer.status == 201);
    CHECK(answer.content_type == "text/plain; charset=utf-8");
    CHECK(answer.body == body);
    CHECK(header_of(answer, "X-Echo") == "POST " + target);
    CHECK(header_of(answer, "Location") == "/api/v1/x");
    CHECK_FALSE(header_of(answer, "Content-Type").has_value());  // it is content_type

    Client health;
    nodes[1].forward(NodeId{2}, make_request("GET", "/health"), health.responder, 20s);
    const http::Response empty = health.wait();
    CHECK(empty.status == 204);
    CHECK(empty.body.empty());

    std::lock_guard lock(served->mutex);
    REQUIRE(served->requests.size() == 2);
    const http::Request& seen = served->requests[0];
    CHECK(seen.method == http::Method::post);
    CHECK(seen.method_name == "POST");
    CHECK(seen.target == target);
    CHECK(seen.path == "/api/v1/push/a%20b");
    CHECK(seen.raw_query == "wait=true&x=1+2");
    CHECK(seen.segments == std::vector<std::string>{"api", "v1", "push", "a b"});
    using Query = std::vector<std::pair<std::string, std::string>>;
    CHECK(seen.query == Query{{"wait", "true"}, {"x", "1 2"}});
    CHECK(seen.body == body);
    CHECK(seen.header("Content-Type") == "application/json");
    int forwarded_from = 0;
    std::vector<std::string> dups;
    for (const auto& header : seen.headers) {
        if (http::iequals(header.name, forwarded_from_header)) {
            ++forwarded_from;
            CHECK(header.value == "1");
        }
        if (http::iequals(header.name, "X-Dup")) {
            dups.push_back(header.value);
        }
    }
    CHECK(forwarded_from == 1);
    CHECK(dups == std::vector<std::string>{"1", "2"});
    CHECK(seen.peer_address == "127.0.0.1");  // node 1's peer address
    CHECK(served->requests[1].method == http::Method::get);
    CHECK(served->requests[1].segments == std::vector<std::string>{"health"});
    // Handlers run on the forwarder's pool, never on the transport thread.
    for (const auto& name : served->threads) {
        CHECK(name.rfind("queen-fwd-", 0) == 0);
    }

    const RequestForwarderStats origin = nodes[1].stats();
    CHECK(origin.forwarded_total == 2);
    CHECK(origin.answered_total == 2);
    CHECK(origin.failed_total == 0);
    CHECK(origin.pending == 0);
    const RequestForwarderStats serving = nodes[2].stats();
    CHECK(serving.served_total == 2);
    CHECK(serving.serving == 0);
}

TEST_CASE("node: a long poll parked on the peer is answered when the peer completes it",
          "[node][request_forward]") {
    auto served = std::make_shared<Served>();
    Nodes nodes(2, {1, 2});
    nodes[2].set_local_handler([served](http::Request& request, http::Responder responder) {
        served->note(request);
        served->park(served, std::move(responder));  // completes later, from another thread
    });
    Client client;
    nodes[1].forward(NodeId{2}, make_request("GET", "/api/v1/pop/queue/q?wait=true&timeout=30000"),
                     client.responder, 35s);
    REQUIRE(served->wait([&] { return served->parked.size() == 1; }));
    CHECK_FALSE(client.has_answer());
    CHECK(nodes[1].stats().pending == 1);
    CHECK(nodes[2].stats().serving == 1);

    http::Responder parked = [&] {
        std::lock_guard lock(served->mutex);
        return served->parked[0];
    }();
    parked.complete(http::Response::json(200, R"({"messages":[{"id":1}]})"));
    const http::Response answer = client.wait();
    CHECK(answer.status == 200);
    CHECK(answer.content_type == "application/json");
    CHECK(answer.body == R"({"messages":[{"id":1}]})");
    CHECK(nodes[1].stats().pending == 0);
    CHECK(nodes[2].stats().serving == 0);
    std::lock_guard lock(served->mutex);
    CHECK(served->cancelled == 0);
}

TEST_CASE("node: a forward without an answer in time fails with 503 and is cancelled on the peer",
          "[node][request_forward]") {
    auto served = std::make_shared<Served>();
    Nodes nodes(2, {1, 2});
    nodes[2].set_local_handler([served](http::Request& request, http::Responder responder) {
        served->note(request);
        served->park(served, std::move(responder));  // never completed
    });
    Client client;
    nodes[1].forward(NodeId{2}, make_request("GET", "/api/v1/pop/queue/q?wait=true"),
                     client.responder, 100ms);
    const http::Response answer = client.wait();
    CHECK(answer.status == 503);
    CHECK(header_of(answer, "Retry-After") == "1");
    CHECK(answer.content_type == "application/json");
    CHECK(answer.body.find(R"({"error":)") == 0);
    CHECK(answer.body.find("Node 2") != std::string::npos);
    CHECK(answer.body.find("did not answer in time") != std::string::npos);
    const RequestForwarderStats stats = nodes[1].stats();
    CHECK(stats.timed_out_total == 1);
    CHECK(stats.failed_total == 1);
    CHECK(stats.pending == 0);
    // The origin tells the peer, whose parked request is released.
    REQUIRE(served->wait([&] { return served->cancelled == 1; }));
    CHECK(nodes[2].stats().serving == 0);
}

TEST_CASE("node: a client that disconnects cancels the request on the peer",
          "[node][request_forward]") {
    auto served = std::make_shared<Served>();
    Nodes nodes(2, {1, 2});
    nodes[2].set_local_handler([served](http::Request& request, http::Responder responder) {
        served->note(request);
        served->park(served, std::move(responder));
    });
    Client client;
    nodes[1].forward(NodeId{2}, make_request("GET", "/api/v1/pop/queue/q?wait=true"),
                     client.responder, 35s);
    REQUIRE(served->wait([&] { return served->parked.size() == 1; }));

    http::Responder::cancel(client.responder);  // the client went away
    REQUIRE(served->wait([&] { return served->cancelled == 1; }));
    CHECK(nodes[2].stats().serving == 0);
    const RequestForwarderStats stats = nodes[1].stats();
    CHECK(stats.cancelled_total == 1);
    CHECK(stats.pending == 0);
    CHECK(stats.failed_total == 0);
    // A completion racing with the cancel goes nowhere.
    http::Responder parked = [&] {
        std::lock_guard lock(served->mutex);
        return served->parked[0];
    }();
    parked.complete(http::Response::json(200, "{}"));
    CHECK_FALSE(client.has_answer());
}

TEST_CASE("node: a forward to an unknown or unreachable node fails with 503",
          "[node][request_forward]") {
    Nodes nodes(3, {1, 2});  // node 3 is configured but never starts

    SECTION("unknown: the peer link refuses the frame at once") {
        Client client;
        nodes[1].forward(NodeId{9}, make_request("GET", "/api/v1/resources/queues"),
                         client.responder, 20s);
        const http::Response answer = client.wait();
        CHECK(answer.status == 503);
        CHECK(header_of(answer, "Retry-After") == "1");
        CHECK(answer.body.find("Node 9") != std::string::npos);
        CHECK(answer.body.find("cannot be reached") != std::string::npos);
        CHECK(nodes[1].stats().forwarded_total == 0);
        CHECK(nodes[1].stats().failed_total == 1);
    }
    SECTION("unreachable: queued for a peer that never answers") {
        Client client;
        nodes[1].forward(NodeId{3}, make_request("GET", "/api/v1/resources/queues"),
                         client.responder, 100ms);
        const http::Response answer = client.wait();
        CHECK(answer.status == 503);
        CHECK(header_of(answer, "Retry-After") == "1");
        CHECK(answer.body.find("Node 3") != std::string::npos);
        CHECK(nodes[1].stats().timed_out_total == 1);
    }
}

TEST_CASE("node: answers and requests over the frame limit fail clearly",
          "[node][request_forward]") {
    RequestForwarderOptions options;
    options.frame_bytes_max = 64 * 1024;
    Nodes nodes(2, {1, 2}, options);
    nodes[2].set_local_handler([](http::Request& request, http::Responder responder) {
        const auto size = static_cast<std::size_t>(request.query_int("size", 0));
        responder.complete(http::Response::json(200, std::string(size, '1')));
    });

    Client fits;
    nodes[1].forward(NodeId{2}, make_request("GET", "/big?size=60000"), fits.responder, 20s);
    CHECK(fits.wait().body.size() == 60'000);

    Client over;
    nodes[1].forward(NodeId{2}, make_request("GET", "/big?size=100000"), over.responder, 20s);
    const http::Response answer = over.wait();
    CHECK(answer.status == 502);
    CHECK(answer.body.find("node 2") != std::string::npos);
    CHECK(answer.body.find("100044 bytes") != std::string::npos);  // id, status, type, body
    CHECK(answer.body.find("65536 bytes") != std::string::npos);
    CHECK(answer.body.find("ask for less") != std::string::npos);
    CHECK(nodes[2].stats().too_large_total == 1);

    Client request_over;
    nodes[1].forward(NodeId{2}, make_request("POST", "/api/v1/push", {}, std::string(70'000, 'x')),
                     request_over.responder, 20s);
    const http::Response refused = request_over.wait();
    CHECK(refused.status == 413);
    CHECK(refused.body.find("too large") != std::string::npos);
    CHECK(nodes[2].stats().served_total == 2);
}

TEST_CASE("node: the serving side refuses what it cannot run", "[node][request_forward]") {
    Nodes nodes(2, {1, 2});

    SECTION("no local handler yet: 503") {
        Client client;
        nodes[1].forward(NodeId{2}, make_request("GET", "/health"), client.responder, 20s);
        const http::Response answer = client.wait();
        CHECK(answer.status == 503);
        CHECK(header_of(answer, "Retry-After") == "1");
        CHECK(answer.body.find("does not serve forwarded requests yet") != std::string::npos);
    }
    SECTION("a bad target: 400 as the HTTP server answers it") {
        nodes[2].set_local_handler([](http::Request&, http::Responder responder) {
            responder.complete(http::Response::empty(204));
        });
        http::Request request = make_request("GET", "/health");
        request.target = "/a%zz";
        Client client;
        nodes[1].forward(NodeId{2}, request, client.responder, 20s);
        const http::Response answer = client.wait();
        CHECK(answer.status == 400);
        CHECK(answer.body.find("Bad percent-encoding in the path") != std::string::npos);
    }
    SECTION("a handler that throws: 500") {
        nodes[2].set_local_handler(
            [](http::Request&, http::Responder) { throw std::runtime_error("boom"); });
        Client client;
        nodes[1].forward(NodeId{2}, make_request("GET", "/health"), client.responder, 20s);
        const http::Response answer = client.wait();
        CHECK(answer.status == 500);
        CHECK(answer.body.find("boom") != std::string::npos);
    }
}

TEST_CASE("node: stop() fails pending forwards and cancels them on the peer",
          "[node][request_forward]") {
    auto served = std::make_shared<Served>();
    Nodes nodes(2, {1, 2});
    nodes[2].set_local_handler([served](http::Request& request, http::Responder responder) {
        served->note(request);
        served->park(served, std::move(responder));
    });
    Client client;
    nodes[1].forward(NodeId{2}, make_request("GET", "/api/v1/pop/queue/q?wait=true"),
                     client.responder, 35s);
    REQUIRE(served->wait([&] { return served->parked.size() == 1; }));

    nodes[1].stop();
    nodes[1].stop();  // idempotent
    const http::Response answer = client.wait();
    CHECK(answer.status == 503);
    CHECK(header_of(answer, "Retry-After") == "1");
    CHECK(answer.body.find("stopping") != std::string::npos);
    REQUIRE(served->wait([&] { return served->cancelled == 1; }));

    // A stopped forwarder answers at once.
    Client late;
    nodes[1].forward(NodeId{2}, make_request("GET", "/health"), late.responder, 20s);
    CHECK(late.wait().status == 503);
}
