// modules/http/tests/test_client.hpp — a tiny blocking HTTP/1.1 client on raw sockets for tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace queen::http::testing {

/// One response as read off the wire.
struct ClientResponse {
    std::string version;  ///< "HTTP/1.1"
    int status = 0;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    [[nodiscard]] std::optional<std::string> header(std::string_view name) const;
};

/// A blocking client connection to 127.0.0.1:<port>. Every read gives up after
/// `read_timeout_ms` (a safety net against a hung test, not a timed assertion) by throwing.
/// Throws std::runtime_error on socket failures and on EOF inside a response.
class TestClient {
public:
    explicit TestClient(std::uint16_t port, int read_timeout_ms = 20'000);
    ~TestClient();
    TestClient(const TestClient&) = delete;
    TestClient& operator=(const TestClient&) = delete;

    /// Writes all of `bytes`; returns false when the peer already closed.
    bool send(std::string_view bytes);
    /// Reads one response (no body for HEAD, 1xx, 204 and 304).
    ClientResponse read_response(bool is_head = false);
    /// Sends one request with Host and (when a body is given or the method is POST)
    /// Content-Length, then reads its response.
    ClientResponse request(std::string_view method, std::string_view target,
                           std::string_view body = {}, std::string_view extra_headers = {});
    /// Builds the bytes request() sends.
    static std::string format_request(std::string_view method, std::string_view target,
                                      std::string_view body = {},
                                      std::string_view extra_headers = {});
    /// Reads until the server closes; true on EOF (or reset), false when the read timed out.
    bool wait_closed();
    /// shutdown(SHUT_WR).
    void shutdown_write();
    /// Closes the socket now.
    void close();
    /// Bytes received but not consumed by read_response().
    [[nodiscard]] const std::string& buffered() const noexcept { return buffer_; }

private:
    bool fill();  // one recv into buffer_; false on EOF
    int fd_ = -1;
    std::string buffer_;
};

}  // namespace queen::http::testing
