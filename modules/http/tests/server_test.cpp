// modules/http/tests/server_test.cpp — the server over real sockets on 127.0.0.1 (port 0).
#include "queen/http/server.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "test_client.hpp"

using queen::http::Method;
using queen::http::Request;
using queen::http::Responder;
using queen::http::Response;
using queen::http::Router;
using queen::http::Server;
using queen::http::ServerOptions;
using queen::http::testing::ClientResponse;
using queen::http::testing::TestClient;

namespace {

/// A thread-safe hand-off of parked responders (what a long-poll pop does with its Responder).
template <class T>
class Mailbox {
public:
    void push(T value) {
        {
            std::lock_guard lock(mutex_);
            items_.push_back(std::move(value));
        }
        ready_.notify_all();
    }
    /// Waits for an item (the 30 s bound only keeps a broken test from hanging forever).
    T pop() {
        std::unique_lock lock(mutex_);
        REQUIRE(ready_.wait_for(lock, std::chrono::seconds(30), [&] { return !items_.empty(); }));
        T value = std::move(items_.front());
        items_.pop_front();
        return value;
    }
    /// Waits until `count` items are queued.
    void wait_size(std::size_t count) {
        std::unique_lock lock(mutex_);
        REQUIRE(ready_.wait_for(lock, std::chrono::seconds(30),
                                [&] { return items_.size() >= count; }));
    }

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<T> items_;
};

struct Parked {
    std::string id;
    Responder responder;
};

std::string echo_json(const Request& request) {
    std::string out = "{\"method\":" + queen::http::json_quote(request.method_name) +
                      ",\"path\":" + queen::http::json_quote(request.path) + ",\"params\":{";
    for (std::size_t i = 0; i < request.params.size(); ++i) {
        out += (i ? "," : "") + queen::http::json_quote(request.params[i].first) + ":" +
               queen::http::json_quote(request.params[i].second);
    }
    out += "},\"query\":{";
    for (std::size_t i = 0; i < request.query.size(); ++i) {
        out += (i ? "," : "") + queen::http::json_quote(request.query[i].first) + ":" +
               queen::http::json_quote(request.query[i].second);
    }
    out += "},\"body\":" + queen::http::json_quote(request.body) + "}";
    return out;
}

/// A server with the routes the tests use; parked requests land in `parked`.
struct Fixture {
    explicit Fixture(ServerOptions options = test_options()) {
        logger.set_level(queen::Level::off);
        Router router;
        router.get("/echo/:a/:b", [](Request& request, Responder responder) {
            responder.complete(Response::json(200, echo_json(request)));
        });
        router.post("/echo", [](Request& request, Responder responder) {
            responder.complete(Response::json(200, echo_json(request)));
        });
        router.get("/hello", [](Request&, Responder responder) {
            responder.complete(Response::json(200, "{\"hello\":true}"));
        });
        router.get("/empty",
                   [](Request&, Responder responder) { responder.complete(Response::empty(204)); });
        router.get("/park/:id", [this](Request& request, Responder responder) {
            parked.push(Parked{std::string(*request.param("id")), std::move(responder)});
        });
        router.get("/throw",
                   [](Request&, Responder) -> void { throw std::runtime_error("handler bug"); });
        router.get("/drop", [](Request&, Responder) {});
        router.get("/inject", [](Request& request, Responder responder) {
            Response response = Response::json(200, "{}");
            response.headers.push_back({"X-Echo", std::string(*request.query_value("v"))});
            responder.complete(std::move(response));
        });
        router.post("/wake/:id", [this](Request& request, Responder responder) {
            // Completes another connection's parked request from this I/O thread.
            Parked waiting = parked.pop();
            waiting.responder.complete(Response::json(
                200, "{\"woken_by\":" + queen::http::json_quote(request.body) + "}"));
            responder.complete(
                Response::json(200, "{\"woke\":" + queen::http::json_quote(waiting.id) + "}"));
        });
        if (std::getenv("QUEEN_HTTP_TEST_LOG") != nullptr) {
            logger.set_level(queen::Level::debug);
        }
        auto started = Server::start(options, std::move(router).into_handler(), logger);
        REQUIRE(started.has_value());
        server = std::move(started).value();
    }

    static ServerOptions test_options() {
        ServerOptions options;
        options.bind_address = "127.0.0.1";
        options.port = 0;
        options.io_threads = 2;
        return options;
    }

    queen::StderrLogger logger;  // off unless QUEEN_HTTP_TEST_LOG is set
    Mailbox<Parked> parked;
    std::unique_ptr<Server> server;
};

}  // namespace

TEST_CASE("http: server binds an ephemeral port and routes with decoded params and query",
          "[http][server]") {
    Fixture fixture;
    REQUIRE(fixture.server->port() != 0);
    CHECK(fixture.server->address() == "127.0.0.1");
    TestClient client(fixture.server->port());
    ClientResponse response =
        client.request("GET", "/echo/a%20b/c%2Fd?wait=true&consumerGroup=&x=1+2%2B3");
    CHECK(response.status == 200);
    CHECK(response.header("Content-Type") == "application/json");
    CHECK_FALSE(response.header("Access-Control-Allow-Origin").has_value());
    CHECK(response.body ==
          "{\"method\":\"GET\",\"path\":\"/echo/a%20b/c%2Fd\",\"params\":{\"a\":\"a b\","
          "\"b\":\"c/d\"},\"query\":{\"wait\":\"true\",\"consumerGroup\":\"\",\"x\":\"1 2+3\"},"
          "\"body\":\"\"}");

    ClientResponse missing = client.request("GET", "/nope");
    CHECK(missing.status == 404);
    CHECK(missing.body.rfind("{\"error\":", 0) == 0);
    ClientResponse wrong = client.request("DELETE", "/hello");
    CHECK(wrong.status == 405);
    CHECK(wrong.header("Allow") == "GET, HEAD");

    ClientResponse head = client.request("HEAD", "/hello");
    CHECK(head.status == 200);
    CHECK(head.header("Content-Length") == "14");
    CHECK(head.body.empty());
    ClientResponse empty = client.request("GET", "/empty");
    CHECK(empty.status == 204);
    CHECK_FALSE(empty.header("Content-Length").has_value());
    // Still in sync after HEAD and 204: the next response parses.
    CHECK(client.request("GET", "/hello").body == "{\"hello\":true}");
    CHECK(client.buffered().empty());
}

namespace {
ServerOptions cors_options(std::vector<std::string> origins) {
    ServerOptions options = Fixture::test_options();
    options.cors.allowed_origins = std::move(origins);
    return options;
}
std::string preflight_from(const std::string& origin) {
    return "Origin: " + origin + "\r\nAccess-Control-Request-Method: DELETE\r\n";
}
bool has_any_cors_header(const ClientResponse& response) {
    for (const auto& [name, value] : response.headers) {
        if (name.rfind("Access-Control-", 0) == 0) {
            return true;
        }
    }
    return false;
}
}  // namespace

TEST_CASE("http: with no allowed origins configured no answer carries CORS headers",
          "[http][server][cors]") {
    Fixture fixture;  // the defaults: cors.allowed_origins is empty
    TestClient client(fixture.server->port());
    ClientResponse plain = client.request("GET", "/hello", {}, "Origin: http://localhost:3000\r\n");
    CHECK(plain.status == 200);
    CHECK_FALSE(has_any_cors_header(plain));
    CHECK_FALSE(plain.header("Vary").has_value());

    // The preflight is still answered (204) but grants nothing, so a browser stops there.
    ClientResponse preflight = client.request("OPTIONS", "/api/v1/resources/queues/q", {},
                                              preflight_from("http://localhost:3000"));
    CHECK(preflight.status == 204);
    CHECK_FALSE(has_any_cors_header(preflight));
}

TEST_CASE("http: a listed origin is echoed with Vary: Origin on answers and preflights",
          "[http][server][cors]") {
    Fixture fixture(cors_options({"http://localhost:3000", "https://admin.example"}));
    TestClient client(fixture.server->port());
    ClientResponse plain = client.request("GET", "/hello", {}, "Origin: https://admin.example\r\n");
    CHECK(plain.status == 200);
    CHECK(plain.header("Access-Control-Allow-Origin") == "https://admin.example");
    CHECK(plain.header("Vary") == "Origin");
    CHECK(plain.header("Access-Control-Allow-Methods") == "GET, POST, PUT, DELETE, OPTIONS");
    CHECK(plain.header("Access-Control-Allow-Headers") ==
          "Content-Type, Authorization, If-Match, If-None-Match, X-Queen-TTL-Ms, X-Queen-Tenant");
    CHECK_FALSE(plain.header("Access-Control-Max-Age").has_value());

    // Errors the router or the server give to that origin carry the grant too.
    ClientResponse missing =
        client.request("GET", "/nope", {}, "Origin: http://localhost:3000\r\n");
    CHECK(missing.status == 404);
    CHECK(missing.header("Access-Control-Allow-Origin") == "http://localhost:3000");

    ClientResponse preflight = client.request("OPTIONS", "/api/v1/resources/queues/q", {},
                                              preflight_from("http://localhost:3000"));
    CHECK(preflight.status == 204);
    CHECK(preflight.header("Access-Control-Allow-Origin") == "http://localhost:3000");
    CHECK(preflight.header("Access-Control-Allow-Methods") == "GET, POST, PUT, DELETE, OPTIONS");
    CHECK(preflight.header("Access-Control-Allow-Headers") ==
          "Content-Type, Authorization, If-Match, If-None-Match, X-Queen-TTL-Ms, X-Queen-Tenant");
    CHECK(preflight.header("Access-Control-Max-Age") == "86400");
    CHECK(preflight.header("Vary") == "Origin");

    // Without an Origin header (not a browser's cross-origin request) there is nothing to grant,
    // but the answer still says it depends on Origin.
    ClientResponse local = client.request("GET", "/hello");
    CHECK_FALSE(has_any_cors_header(local));
    CHECK(local.header("Vary") == "Origin");
}

TEST_CASE("http: an origin that is not listed gets no CORS headers, nor does its preflight",
          "[http][server][cors]") {
    Fixture fixture(cors_options({"http://localhost:3000"}));
    TestClient client(fixture.server->port());
    for (const char* origin : {"http://evil.example", "http://localhost:3001",
                               "https://localhost:3000", "null", "http://localhost:3000.evil"}) {
        INFO(origin);
        ClientResponse plain =
            client.request("GET", "/hello", {}, std::string("Origin: ") + origin + "\r\n");
        CHECK(plain.status == 200);
        CHECK_FALSE(has_any_cors_header(plain));
        ClientResponse preflight =
            client.request("OPTIONS", "/api/v1/resources/queues/q", {}, preflight_from(origin));
        CHECK(preflight.status == 204);
        CHECK_FALSE(has_any_cors_header(preflight));
        CHECK(preflight.header("Vary") == "Origin");
    }
}

TEST_CASE("http: \"*\" written in the list allows every origin with a wildcard answer",
          "[http][server][cors]") {
    Fixture fixture(cors_options({"*"}));
    TestClient client(fixture.server->port());
    ClientResponse plain =
        client.request("GET", "/hello", {}, "Origin: http://anywhere.example\r\n");
    CHECK(plain.header("Access-Control-Allow-Origin") == "*");
    ClientResponse preflight = client.request("OPTIONS", "/api/v1/resources/queues/q", {},
                                              preflight_from("http://anywhere.example"));
    CHECK(preflight.status == 204);
    CHECK(preflight.header("Access-Control-Allow-Origin") == "*");
    CHECK(preflight.header("Access-Control-Max-Age") == "86400");
}

TEST_CASE("http: bad percent-encoding answers 400 JSON and keeps the connection",
          "[http][server]") {
    Fixture fixture;
    TestClient client(fixture.server->port());
    ClientResponse bad_path = client.request("GET", "/echo/%zz/b");
    CHECK(bad_path.status == 400);
    CHECK(bad_path.body.find("percent-encoding") != std::string::npos);
    ClientResponse bad_query = client.request("GET", "/echo/a/b?x=%4");
    CHECK(bad_query.status == 400);
    CHECK(client.request("GET", "/hello").status == 200);
}

TEST_CASE("http: CR and LF cannot split a response header", "[http][server]") {
    Fixture fixture;
    TestClient client(fixture.server->port());
    ClientResponse response = client.request("GET", "/inject?v=a%0D%0AInjected:%20b");
    CHECK(response.status == 200);
    CHECK(response.header("X-Echo") == "aInjected: b");
    CHECK_FALSE(response.header("Injected").has_value());
}

TEST_CASE("http: keep-alive serves many requests on one connection", "[http][server]") {
    Fixture fixture;
    TestClient client(fixture.server->port());
    for (int i = 0; i < 200; ++i) {
        const std::string body = "payload-" + std::to_string(i);
        ClientResponse response = client.request("POST", "/echo", body);
        REQUIRE(response.status == 200);
        REQUIRE(response.body.find(body) != std::string::npos);
    }
    const auto metrics = fixture.server->metrics();
    CHECK(metrics.connections_accepted_total == 1);
    CHECK(metrics.requests_total == 200);
    CHECK(metrics.responses_2xx_total == 200);
    CHECK(metrics.bytes_in_total > 200 * 20);
    CHECK(metrics.bytes_out_total > metrics.bytes_in_total);
}

TEST_CASE("http: HTTP/1.0 and Connection: close end the connection after the answer",
          "[http][server]") {
    Fixture fixture;
    {
        TestClient client(fixture.server->port());
        client.send("GET /hello HTTP/1.0\r\n\r\n");
        ClientResponse response = client.read_response();
        CHECK(response.version == "HTTP/1.0");
        CHECK(response.status == 200);
        CHECK(response.header("Connection") == "close");
        CHECK(client.wait_closed());
    }
    {
        TestClient client(fixture.server->port());
        client.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        ClientResponse first = client.read_response();
        CHECK(first.header("Connection") == "keep-alive");
        client.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        CHECK(client.read_response().status == 200);
    }
    {
        TestClient client(fixture.server->port());
        // The request after `Connection: close` is ignored.
        client.send(TestClient::format_request("GET", "/hello", {}, "Connection: close\r\n") +
                    TestClient::format_request("GET", "/hello"));
        ClientResponse response = client.read_response();
        CHECK(response.header("Connection") == "close");
        CHECK(client.wait_closed());
        CHECK(client.buffered().empty());
    }
}

TEST_CASE("http: pipelined answers leave in request order when handlers finish out of order",
          "[http][server]") {
    Fixture fixture;
    TestClient client(fixture.server->port());
    client.send(TestClient::format_request("GET", "/park/1") +
                TestClient::format_request("GET", "/hello") +
                TestClient::format_request("GET", "/park/3") +
                TestClient::format_request("GET", "/park/4"));
    fixture.parked.wait_size(3);
    Parked one = fixture.parked.pop();
    Parked three = fixture.parked.pop();
    Parked four = fixture.parked.pop();
    CHECK(one.id == "1");
    CHECK(three.id == "3");
    // Complete from other threads, last first.
    std::thread([&] { four.responder.complete(Response::json(200, "\"4\"")); }).join();
    std::thread([&] { three.responder.complete(Response::json(200, "\"3\"")); }).join();
    std::thread([&] { one.responder.complete(Response::json(200, "\"1\"")); }).join();
    CHECK(client.read_response().body == "\"1\"");
    CHECK(client.read_response().body == "{\"hello\":true}");
    CHECK(client.read_response().body == "\"3\"");
    CHECK(client.read_response().body == "\"4\"");
}

TEST_CASE("http: complete_with makes the answer on the I/O thread, in request order",
          "[http][server]") {
    Fixture fixture;
    TestClient client(fixture.server->port());
    client.send(TestClient::format_request("GET", "/park/1") +
                TestClient::format_request("GET", "/park/2"));
    fixture.parked.wait_size(2);
    Parked one = fixture.parked.pop();
    Parked two = fixture.parked.pop();
    std::atomic<std::thread::id> worker;
    std::atomic<std::thread::id> maker_two;
    std::atomic<std::thread::id> maker_one;
    std::thread([&] {
        worker = std::this_thread::get_id();
        two.responder.complete_with([&] {
            maker_two = std::this_thread::get_id();
            return Response::json(200, "\"2\"");
        });
        one.responder.complete_with([&] {
            maker_one = std::this_thread::get_id();
            return Response::json(200, "\"1\"");
        });
    }).join();
    CHECK(client.read_response().body == "\"1\"");
    CHECK(client.read_response().body == "\"2\"");
    // Both makers ran, on the connection's thread: neither the worker nor this test thread.
    CHECK(maker_one.load() != std::thread::id{});
    CHECK(maker_one.load() != worker.load());
    CHECK(maker_two.load() != worker.load());
    CHECK(maker_one.load() != std::this_thread::get_id());
}

TEST_CASE("http: complete_with on a detached responder makes the answer right away",
          "[http][responder]") {
    std::string delivered;
    Responder responder =
        Responder::detached([&](Response response) { delivered = response.body; });
    responder.complete_with([] { return Response::json(200, "{}"); });
    CHECK(delivered == "{}");
    CHECK(responder.is_completed());
}

TEST_CASE("http: dispatch continues a parked request on its connection's I/O thread",
          "[http][server]") {
    Fixture fixture;
    TestClient client(fixture.server->port());
    client.send(TestClient::format_request("GET", "/park/1"));
    Parked parked = fixture.parked.pop();
    std::atomic<std::thread::id> worker;
    std::atomic<std::thread::id> continued;
    std::thread([&] {
        worker = std::this_thread::get_id();
        const Responder responder = parked.responder;
        responder.dispatch([responder, &continued] {
            continued = std::this_thread::get_id();
            // On the I/O thread a further dispatch runs at once, before this one returns.
            bool is_nested_inline = false;
            responder.dispatch([&] { is_nested_inline = true; });
            responder.complete(Response::json(200, is_nested_inline ? "\"inline\"" : "\"posted\""));
        });
    }).join();
    CHECK(client.read_response().body == "\"inline\"");
    CHECK(continued.load() != std::thread::id{});
    CHECK(continued.load() != worker.load());
    CHECK(continued.load() != std::this_thread::get_id());
}

TEST_CASE("http: dispatch on a detached responder runs right away", "[http][responder]") {
    bool has_run = false;
    Responder responder = Responder::detached([](Response) {});
    responder.dispatch([&] { has_run = true; });
    CHECK(has_run);
}

TEST_CASE("http: the pipelining limit pauses parsing and resumes as answers leave",
          "[http][server]") {
    ServerOptions options = Fixture::test_options();
    options.pipelined_requests_max = 2;
    Fixture fixture(options);
    TestClient client(fixture.server->port());
    std::string wire;
    for (int i = 0; i < 6; ++i) {
        wire += TestClient::format_request("GET", "/park/" + std::to_string(i));
    }
    client.send(wire);
    for (int i = 0; i < 6; ++i) {
        // Only two are ever parked at once; completing one lets the next be parsed.
        Parked parked = fixture.parked.pop();
        CHECK(parked.id == std::to_string(i));
        parked.responder.complete(Response::json(200, std::to_string(i)));
        CHECK(client.read_response().body == std::to_string(i));
    }
}

TEST_CASE("http: a long poll parked on one connection is completed by another", "[http][server]") {
    Fixture fixture;
    TestClient consumer(fixture.server->port());
    TestClient producer(fixture.server->port());
    consumer.send(TestClient::format_request("GET", "/park/pop"));
    ClientResponse woke = producer.request("POST", "/wake/x", "push-1");
    CHECK(woke.body == "{\"woke\":\"pop\"}");
    CHECK(consumer.read_response().body == "{\"woken_by\":\"push-1\"}");
}

TEST_CASE("http: a client disconnect cancels its parked request", "[http][server]") {
    Fixture fixture;
    std::promise<void> cancelled;
    {
        TestClient client(fixture.server->port());
        client.send(TestClient::format_request("GET", "/park/gone"));
        Parked parked = fixture.parked.pop();
        parked.responder.on_cancel([&] { cancelled.set_value(); });
        client.close();
        REQUIRE(cancelled.get_future().wait_for(std::chrono::seconds(30)) ==
                std::future_status::ready);
        CHECK(parked.responder.is_cancelled());
        parked.responder.complete(Response::json(200, "{}"));  // late: ignored, no crash
    }
    CHECK(fixture.server->metrics().requests_cancelled_total == 1);
    TestClient again(fixture.server->port());
    CHECK(again.request("GET", "/hello").status == 200);
}

TEST_CASE("http: stopping the server cancels parked requests", "[http][server]") {
    Fixture fixture;
    std::promise<void> cancelled;
    TestClient client(fixture.server->port());
    client.send(TestClient::format_request("GET", "/park/stop"));
    Parked parked = fixture.parked.pop();
    parked.responder.on_cancel([&] { cancelled.set_value(); });
    fixture.server->stop();
    CHECK(cancelled.get_future().wait_for(std::chrono::seconds(0)) == std::future_status::ready);
    CHECK(client.wait_closed());
    parked.responder.complete(Response::json(200, "{}"));  // after stop: ignored
    fixture.server.reset();
}

TEST_CASE("http: handler exceptions and dropped responders become 500", "[http][server]") {
    Fixture fixture;
    TestClient client(fixture.server->port());
    ClientResponse thrown = client.request("GET", "/throw");
    CHECK(thrown.status == 500);
    CHECK(thrown.body == "{\"error\":\"Internal server error\"}");
    ClientResponse dropped = client.request("GET", "/drop");
    CHECK(dropped.status == 500);
    CHECK(client.request("GET", "/hello").status == 200);
    const auto metrics = fixture.server->metrics();
    CHECK(metrics.handler_exceptions_total == 1);
    CHECK(metrics.responses_5xx_total == 2);
}

TEST_CASE("http: bodies over the limit get 413, headers over it 431, then close",
          "[http][server]") {
    ServerOptions options = Fixture::test_options();
    options.body_size_bytes_max = 1000;
    options.header_size_bytes_max = 1024;
    options.headers_count_max = 10;
    Fixture fixture(options);
    {
        TestClient client(fixture.server->port());
        // Announced: answered before the body is sent.
        client.send("POST /echo HTTP/1.1\r\nContent-Length: 1001\r\n\r\n");
        ClientResponse response = client.read_response();
        CHECK(response.status == 413);
        CHECK(response.body.rfind("{\"error\":", 0) == 0);
        CHECK(response.header("Connection") == "close");
        CHECK(client.wait_closed());
    }
    {
        TestClient client(fixture.server->port());
        std::string chunked = "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        for (int i = 0; i < 3; ++i) {
            chunked += "190\r\n" + std::string(400, 'x') + "\r\n";
        }
        chunked += "0\r\n\r\n";
        client.send(chunked);
        CHECK(client.read_response().status == 413);
        CHECK(client.wait_closed());
    }
    {
        TestClient client(fixture.server->port());
        client.send("GET /hello HTTP/1.1\r\nX-Big: " + std::string(2000, 'h') + "\r\n\r\n");
        CHECK(client.read_response().status == 431);
        CHECK(client.wait_closed());
    }
    {
        TestClient client(fixture.server->port());
        std::string many = "GET /hello HTTP/1.1\r\n";
        for (int i = 0; i < 11; ++i) {
            many += "X-" + std::to_string(i) + ": v\r\n";
        }
        client.send(many + "\r\n");
        CHECK(client.read_response().status == 431);
    }
    {
        TestClient client(fixture.server->port());
        ClientResponse fits = client.request("POST", "/echo", std::string(1000, 'b'));
        CHECK(fits.status == 200);
    }
    CHECK(fixture.server->metrics().bad_requests_total == 4);
}

TEST_CASE("http: Expect: 100-continue gets an interim answer, or 413 when too big",
          "[http][server]") {
    ServerOptions options = Fixture::test_options();
    options.body_size_bytes_max = 100;
    Fixture fixture(options);
    TestClient client(fixture.server->port());
    client.send("POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    ClientResponse interim = client.read_response();
    CHECK(interim.status == 100);
    client.send("hello");
    ClientResponse final_response = client.read_response();
    CHECK(final_response.status == 200);
    CHECK(final_response.body.find("\"body\":\"hello\"") != std::string::npos);

    client.send("POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 500\r\n\r\n");
    CHECK(client.read_response().status == 413);
    CHECK(client.wait_closed());
}

TEST_CASE("http: chunked request bodies are decoded", "[http][server]") {
    Fixture fixture;
    TestClient client(fixture.server->port());
    client.send(
        "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n"
        "0\r\n\r\n");
    ClientResponse response = client.read_response();
    CHECK(response.status == 200);
    CHECK(response.body.find("\"body\":\"hello world\"") != std::string::npos);
}

TEST_CASE("http: malformed requests get 400 JSON and the connection closes", "[http][server]") {
    Fixture fixture;
    for (const char* bad :
         {"HELLO WORLD\r\n\r\n", "GET / HTTP/1.1\r\nNo-Colon\r\n\r\n",
          "GET /hello HTTP/1.1\r\nContent-Length: x\r\n\r\n", "GET /hello HTTP/3.0\r\n\r\n"}) {
        INFO(bad);
        TestClient client(fixture.server->port());
        client.send(bad);
        ClientResponse response = client.read_response();
        CHECK(response.status >= 400);
        CHECK(response.status < 600);
        CHECK(response.body.rfind("{\"error\":", 0) == 0);
        CHECK(client.wait_closed());
    }
}

TEST_CASE("http: random garbage never crashes or wedges the server (seeded)", "[http][server]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng(seed);
    ServerOptions options = Fixture::test_options();
    options.header_read_timeout_ms = 200;
    options.body_read_timeout_ms = 200;
    options.close_linger_timeout_ms = 200;
    Fixture fixture(options);
    const std::string prefixes[] = {"GET /echo/a/b HTTP/1.1\r\n", "POST /echo HTTP/1.1\r\n", "",
                                    "GET /park/x HTTP/1.1\r\n"};
    for (int round = 0; round < 60; ++round) {
        TestClient client(fixture.server->port());
        std::string bytes = prefixes[rng.below(3)];
        const std::size_t size = rng.below(300);
        for (std::size_t i = 0; i < size; ++i) {
            bytes.push_back(static_cast<char>(rng.below(256)));
        }
        client.send(bytes);
        client.shutdown_write();
        // Whatever the server makes of it, it ends the connection (answer, timeout or EOF).
        CHECK(client.wait_closed());
    }
    TestClient healthy(fixture.server->port());
    CHECK(healthy.request("GET", "/hello").status == 200);
}

TEST_CASE("http: slow headers (slowloris) time out with 408 and close", "[http][server]") {
    ServerOptions options = Fixture::test_options();
    options.header_read_timeout_ms = 150;
    options.body_read_timeout_ms = 150;
    Fixture fixture(options);
    {
        TestClient client(fixture.server->port());
        client.send("GET /hello HTTP/1.1\r\nHost: x\r\n");
        ClientResponse response = client.read_response();
        CHECK(response.status == 408);
        CHECK(client.wait_closed());
    }
    {
        TestClient client(fixture.server->port());
        client.send("POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
        CHECK(client.read_response().status == 408);
        CHECK(client.wait_closed());
    }
    CHECK(fixture.server->metrics().timeouts_total == 2);
}

TEST_CASE("http: a body trickled in steadily is cut off at the request deadline",
          "[http][server]") {
    ServerOptions options = Fixture::test_options();
    options.body_read_timeout_ms = 500;     // a byte every 20 ms never pauses this long
    options.request_read_timeout_ms = 300;  // the whole request must be in by then
    Fixture fixture(options);
    TestClient client(fixture.server->port());
    REQUIRE(client.send("POST /echo HTTP/1.1\r\nContent-Length: 1000\r\n\r\n"));
    constexpr int trickle_bytes = 100;  // 2 s of trickling, far past the deadline
    std::atomic<bool> answered{false};
    std::atomic<int> sent{0};
    std::thread trickle([&] {
        for (int i = 0; i < trickle_bytes && !answered.load(); ++i) {
            if (!client.send("x")) {
                return;
            }
            sent.fetch_add(1);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the trickle's pace
        }
    });
    const ClientResponse response = client.read_response();
    answered.store(true);
    trickle.join();
    CHECK(response.status == 408);
    // Answered while the bytes still came: the deadline, not a pause, cut it off.
    CHECK(sent.load() < trickle_bytes);
    CHECK(fixture.server->metrics().timeouts_total == 1);
}

TEST_CASE("http: idle keep-alive connections are closed", "[http][server]") {
    ServerOptions options = Fixture::test_options();
    options.keep_alive_idle_timeout_ms = 100;
    Fixture fixture(options);
    TestClient client(fixture.server->port());
    CHECK(client.request("GET", "/hello").status == 200);
    CHECK(client.wait_closed());
}

TEST_CASE("http: a parked request is not subject to the idle timeout", "[http][server]") {
    ServerOptions options = Fixture::test_options();
    options.keep_alive_idle_timeout_ms = 50;
    Fixture fixture(options);
    TestClient client(fixture.server->port());
    client.send(TestClient::format_request("GET", "/park/long"));
    Parked parked = fixture.parked.pop();
    // Await proof that an idle period passed: another connection, idle, gets closed by it.
    TestClient idle(fixture.server->port());
    CHECK(idle.request("GET", "/hello").status == 200);
    CHECK(idle.wait_closed());
    parked.responder.complete(Response::json(200, "\"late\""));
    CHECK(client.read_response().body == "\"late\"");
}

TEST_CASE("http: many connections at once, and connections_max rejects with 503",
          "[http][server]") {
    {
        Fixture fixture;
        std::vector<std::unique_ptr<TestClient>> clients;
        for (int i = 0; i < 300; ++i) {
            clients.push_back(std::make_unique<TestClient>(fixture.server->port()));
            clients.back()->send(TestClient::format_request("GET", "/hello"));
        }
        for (auto& client : clients) {
            CHECK(client->read_response().status == 200);
        }
        const auto metrics = fixture.server->metrics();
        CHECK(metrics.connections_accepted_total == 300);
        CHECK(metrics.connections_open == 300);
    }
    {
        ServerOptions options = Fixture::test_options();
        options.connections_max = 3;
        Fixture fixture(options);
        std::vector<std::unique_ptr<TestClient>> clients;
        for (int i = 0; i < 3; ++i) {
            clients.push_back(std::make_unique<TestClient>(fixture.server->port()));
            CHECK(clients.back()->request("GET", "/hello").status == 200);
        }
        TestClient extra(fixture.server->port());
        ClientResponse rejected = extra.read_response();
        CHECK(rejected.status == 503);
        CHECK(rejected.body.rfind("{\"error\":", 0) == 0);
        CHECK(extra.wait_closed());
        CHECK(fixture.server->metrics().connections_rejected_total == 1);
    }
}

TEST_CASE("http: concurrent keep-alive clients all get their own answers", "[http][server]") {
    Fixture fixture;
    constexpr int clients = 8;
    constexpr int requests = 250;
    std::atomic<int> correct{0};
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
        threads.emplace_back([&, c] {
            TestClient client(fixture.server->port());
            for (int r = 0; r < requests; ++r) {
                const std::string body = std::to_string(c) + ":" + std::to_string(r);
                ClientResponse response = client.request("POST", "/echo", body);
                if (response.status == 200 &&
                    response.body.find("\"body\":\"" + body + "\"") != std::string::npos) {
                    ++correct;
                }
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    CHECK(correct == clients * requests);
    CHECK(fixture.server->metrics().requests_total == clients * requests);
}

TEST_CASE("http: start fails cleanly on a port in use and on bad options", "[http][server]") {
    Fixture fixture;
    ServerOptions options = Fixture::test_options();
    options.port = fixture.server->port();
    auto clash = Server::start(
        options, [](Request&, Responder) {}, queen::NullLogger::instance());
    REQUIRE_FALSE(clash.has_value());
    CHECK(clash.error().is(queen::Errc::io));
    options.io_threads = 0;
    auto invalid = Server::start(
        options, [](Request&, Responder) {}, queen::NullLogger::instance());
    REQUIRE_FALSE(invalid.has_value());
    CHECK(invalid.error().is(queen::Errc::invalid_argument));
}
