// modules/http/tests/test_client.cpp — TestClient: POSIX sockets, no third-party code.
#include "test_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "queen/http/request.hpp"

namespace queen::http::testing {

std::optional<std::string> ClientResponse::header(std::string_view name) const {
    for (const auto& [key, value] : headers) {
        if (iequals(key, name)) {
            return value;
        }
    }
    return std::nullopt;
}

TestClient::TestClient(std::uint16_t port, int read_timeout_ms) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) {
        throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    }
    timeval timeout{};
    timeout.tv_sec = read_timeout_ms / 1000;
    timeout.tv_usec = (read_timeout_ms % 1000) * 1000;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        const int error = errno;
        ::close(fd_);
        fd_ = -1;
        throw std::runtime_error(std::string("connect: ") + std::strerror(error));
    }
}

TestClient::~TestClient() {
    close();
}

void TestClient::close() {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

void TestClient::shutdown_write() {
    ::shutdown(fd_, SHUT_WR);
}

bool TestClient::send(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

bool TestClient::fill() {
    char chunk[16384];
    for (;;) {
        const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
        if (n > 0) {
            buffer_.append(chunk, static_cast<std::size_t>(n));
            return true;
        }
        if (n == 0) {
            return false;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            throw std::runtime_error("test client: read timed out");
        }
        if (errno == ECONNRESET) {
            return false;
        }
        throw std::runtime_error(std::string("recv: ") + std::strerror(errno));
    }
}

ClientResponse TestClient::read_response(bool is_head) {
    std::size_t end = 0;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
        if (!fill()) {
            throw std::runtime_error("test client: connection closed before a response (have '" +
                                     buffer_ + "')");
        }
    }
    const std::string head = buffer_.substr(0, end);
    buffer_.erase(0, end + 4);
    ClientResponse response;
    std::size_t line_end = head.find("\r\n");
    const std::string status_line = head.substr(0, line_end);
    const std::size_t first_space = status_line.find(' ');
    response.version = status_line.substr(0, first_space);
    response.status = std::stoi(status_line.substr(first_space + 1, 3));
    while (line_end != std::string::npos) {
        const std::size_t start = line_end + 2;
        line_end = head.find("\r\n", start);
        const std::string line = head.substr(
            start, line_end == std::string::npos ? std::string::npos : line_end - start);
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) {
            throw std::runtime_error("test client: bad header line '" + line + "'");
        }
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') {
            value.erase(0, 1);
        }
        response.headers.emplace_back(line.substr(0, colon), value);
    }
    const bool has_no_body =
        is_head || response.status < 200 || response.status == 204 || response.status == 304;
    if (has_no_body) {
        return response;
    }
    if (const auto length = response.header("Content-Length")) {
        const std::size_t size = std::stoul(*length);
        while (buffer_.size() < size) {
            if (!fill()) {
                throw std::runtime_error("test client: connection closed inside a body");
            }
        }
        response.body = buffer_.substr(0, size);
        buffer_.erase(0, size);
        return response;
    }
    while (fill()) {
    }
    response.body = std::move(buffer_);
    buffer_.clear();
    return response;
}

std::string TestClient::format_request(std::string_view method, std::string_view target,
                                       std::string_view body, std::string_view extra_headers) {
    std::string out;
    out.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    if (!body.empty() || method == "POST" || method == "PUT") {
        out.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
    }
    out.append(extra_headers);
    out.append("\r\n");
    out.append(body);
    return out;
}

ClientResponse TestClient::request(std::string_view method, std::string_view target,
                                   std::string_view body, std::string_view extra_headers) {
    if (!send(format_request(method, target, body, extra_headers))) {
        throw std::runtime_error("test client: send failed");
    }
    return read_response(method == "HEAD");
}

bool TestClient::wait_closed() {
    try {
        while (fill()) {
        }
        return true;
    } catch (const std::runtime_error&) {
        return false;
    }
}

}  // namespace queen::http::testing
