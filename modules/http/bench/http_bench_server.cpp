// modules/http/bench/http_bench_server.cpp — a trivial-handler server for load generators (wrk):
// `http_bench_server [port] [io_threads]`, stops on SIGINT/SIGTERM. Not used by tests.
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "queen/core/logger.hpp"
#include "queen/http/server.hpp"

int main(int argc, char** argv) {
    queen::http::ServerOptions options;
    options.bind_address = "127.0.0.1";
    options.port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 8080);
    options.io_threads = static_cast<std::uint32_t>(argc > 2 ? std::atoi(argv[2]) : 1);

    queen::http::Router router;
    router.get("/hello", [](queen::http::Request&, queen::http::Responder responder) {
        responder.complete(queen::http::Response::json(200, "{\"hello\":true}"));
    });
    router.post("/echo", [](queen::http::Request& request, queen::http::Responder responder) {
        responder.complete(queen::http::Response::json(200, std::move(request.body)));
    });

    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // the I/O threads inherit the mask

    queen::StderrLogger logger;
    auto server = queen::http::Server::start(options, std::move(router).into_handler(), logger);
    if (!server) {
        std::fprintf(stderr, "http_bench_server: %s\n", server.error().message().c_str());
        return 1;
    }
    int received = 0;
    sigwait(&signals, &received);
    const auto metrics = server.value()->metrics();
    server.value()->stop();
    std::fprintf(stderr, "requests=%llu bytes_in=%llu bytes_out=%llu\n",
                 static_cast<unsigned long long>(metrics.requests_total),
                 static_cast<unsigned long long>(metrics.bytes_in_total),
                 static_cast<unsigned long long>(metrics.bytes_out_total));
    return 0;
}
