// modules/http/tests/options_test.cpp — ServerOptions::validate().
#include "queen/http/options.hpp"

#include "queen/testing/catch.hpp"

TEST_CASE("http: default options are valid and each bad field is named", "[http][options]") {
    queen::http::ServerOptions options;
    REQUIRE(options.validate().has_value());

    const auto rejects = [](auto mutate, const char* field) {
        queen::http::ServerOptions bad;
        mutate(bad);
        auto status = bad.validate();
        REQUIRE_FALSE(status.has_value());
        CHECK(status.error().is(queen::Errc::invalid_argument));
        CHECK(status.error().context.find(field) != std::string::npos);
    };
    rejects([](auto& o) { o.bind_address = "localhost"; }, "http.address");
    rejects([](auto& o) { o.io_threads = 0; }, "io_threads");
    rejects([](auto& o) { o.header_size_bytes_max = 10; }, "header_size_bytes_max");
    rejects([](auto& o) { o.headers_count_max = 0; }, "headers_count_max");
    rejects([](auto& o) { o.body_size_bytes_max = (std::uint64_t{1} << 32) + 1; },
            "body_size_bytes_max");
    rejects([](auto& o) { o.connections_max = 0; }, "connections_max");
    rejects([](auto& o) { o.keep_alive_idle_timeout_ms = 0; }, "keep_alive_idle_timeout_ms");
    rejects([](auto& o) { o.header_read_timeout_ms = 0; }, "header_read_timeout_ms");
    rejects([](auto& o) { o.body_read_timeout_ms = 0; }, "body_read_timeout_ms");
    rejects([](auto& o) { o.request_read_timeout_ms = 0; }, "request_read_timeout_ms");
    rejects([](auto& o) { o.close_linger_timeout_ms = 0; }, "close_linger_timeout_ms");
    rejects([](auto& o) { o.pipelined_requests_max = 0; }, "pipelined_requests_max");
    rejects([](auto& o) { o.read_buffer_bytes = 1; }, "read_buffer_bytes");

    rejects([](auto& o) { o.cors.allowed_origins = {"http://localhost:3000/"}; },
            "http.cors_allowed_origins");
    rejects([](auto& o) { o.cors.allowed_origins = {"localhost:3000"}; },
            "http.cors_allowed_origins");
    rejects([](auto& o) { o.cors.allowed_origins = {"null"}; }, "http.cors_allowed_origins");
    rejects([](auto& o) { o.cors.allowed_origins = {""}; }, "http.cors_allowed_origins");
    rejects([](auto& o) { o.cors.allowed_origins = {"http://a.example, http://b.example"}; },
            "http.cors_allowed_origins");

    queen::http::ServerOptions v6;
    v6.bind_address = "::1";
    CHECK(v6.validate().has_value());
}

TEST_CASE("http: the defaults listen on loopback and grant no origin", "[http][options]") {
    const queen::http::ServerOptions options;
    CHECK(options.bind_address == "127.0.0.1");
    CHECK(options.cors.allowed_origins.empty());
    CHECK(options.cors.allow_origin_for("http://localhost:3000").empty());
}

TEST_CASE("http: allow_origin_for echoes a listed origin and answers * only when listed",
          "[http][options]") {
    queen::http::CorsOptions cors;
    cors.allowed_origins = {"http://localhost:3000", "https://Admin.Example"};
    CHECK(cors.allow_origin_for("http://localhost:3000") == "http://localhost:3000");
    CHECK(cors.allow_origin_for("https://admin.example") == "https://admin.example");
    CHECK(cors.allow_origin_for("http://localhost:3001").empty());
    CHECK(cors.allow_origin_for(std::nullopt).empty());
    cors.allowed_origins.push_back("*");
    CHECK(cors.allow_origin_for("http://other.example") == "*");
    CHECK(cors.allow_origin_for("http://localhost:3000") == "http://localhost:3000");
    CHECK(cors.allow_origin_for(std::nullopt).empty());
    queen::http::ServerOptions options;
    options.cors = cors;
    CHECK(options.validate().has_value());
}
