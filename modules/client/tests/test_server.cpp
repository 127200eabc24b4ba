// client/tests/test_server.cpp — the canned-reply HTTP server used by the client tests.
#include "test_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace queen::client::testing {
namespace {

std::string lower(std::string text) {
    for (auto& c : text) {
        if (c >= 'A' && c <= 'Z') {
            c = static_cast<char>(c - 'A' + 'a');
        }
    }
    return text;
}

[[noreturn]] void fail_tls(const std::string& step) {
    char reason[256] = "no OpenSSL error";
    if (const unsigned long code = ERR_get_error(); code != 0) {
        ERR_error_string_n(code, reason, sizeof reason);
    }
    throw std::runtime_error("test server: " + step + ": " + reason);
}

/// One accepted connection, plain or TLS (blocking calls either way).
struct Stream {
    int fd;
    SSL* ssl;

    /// Bytes read, or <= 0 at the end of the stream or on an error.
    ssize_t receive(char* data, std::size_t size) const {
        if (ssl != nullptr) {
            return SSL_read(ssl, data, static_cast<int>(size));
        }
        return ::recv(fd, data, size, 0);
    }

    bool write_all(const std::string& bytes) const {
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n =
                ssl != nullptr
                    ? SSL_write(ssl, bytes.data() + done, static_cast<int>(bytes.size() - done))
                    : ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
            if (n <= 0) {
                return false;
            }
            done += static_cast<std::size_t>(n);
        }
        return true;
    }
};

const char* reason_of(int status) {
    switch (status) {
        case 200: return "OK";
        case 201: return "Created";
        case 204: return "No Content";
        case 400: return "Bad Request";
        case 404: return "Not Found";
        case 500: return "Internal Server Error";
        case 503: return "Service Unavailable";
        default: return "Status";
    }
}

}  // namespace

std::string RecordedRequest::header(const std::string& name) const {
    for (const auto& [key, value] : headers) {
        if (lower(key) == lower(name)) {
            return value;
        }
    }
    return "";
}

Reply json_reply(int status, const std::string& body, const std::string& extra_headers) {
    return Reply{"HTTP/1.1 " + std::to_string(status) + " " + reason_of(status) +
                     "\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n" + extra_headers + "\r\n" + body,
                 false, false};
}

Reply no_content_reply() {
    return Reply{"HTTP/1.1 204 No Content\r\n\r\n", false, false};
}

Reply close_reply() {
    return Reply{"", true, false};
}

Handler answer_once_then_drop_first_connection() {
    auto answered_on_first = std::make_shared<std::atomic<int>>(0);
    return [answered_on_first](const RecordedRequest& request) {
        if (request.connection_index == 0 && answered_on_first->fetch_add(1) > 0) {
            return close_reply();
        }
        return json_reply(200, R"({"n":1})");
    };
}

TestServer::TestServer() : handler_([](const RecordedRequest&) { return json_reply(200, "{}"); }) {
    start();
}

TestServer::TestServer(const TestServerTls& tls)
    : handler_([](const RecordedRequest&) { return json_reply(200, "{}"); }) {
    // OpenSSL writes with write(): a client gone away must not kill the test with SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    tls_context_ = SSL_CTX_new(TLS_server_method());
    if (tls_context_ == nullptr) {
        fail_tls("SSL_CTX_new");
    }
    if (SSL_CTX_use_certificate_chain_file(tls_context_, tls.certificate_file.c_str()) != 1) {
        fail_tls(tls.certificate_file);
    }
    if (SSL_CTX_use_PrivateKey_file(tls_context_, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
        fail_tls(tls.key_file);
    }
    if (!tls.client_ca_file.empty()) {
        if (SSL_CTX_load_verify_locations(tls_context_, tls.client_ca_file.c_str(), nullptr) != 1) {
            fail_tls(tls.client_ca_file);
        }
        SSL_CTX_set_verify(tls_context_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                           nullptr);
    }
    if (tls.is_tls12_only) {
        SSL_CTX_set_max_proto_version(tls_context_, TLS1_2_VERSION);
    }
    start();
}

void TestServer::start() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listen_fd_, 128) != 0) {
        throw std::runtime_error(std::string{"test server: "} + std::strerror(errno));
    }
    socklen_t length = sizeof address;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    if (::pipe(wake_fds_) != 0) {
        throw std::runtime_error("test server: pipe");
    }
    acceptor_ = std::thread([this] { accept_loop(); });
}

TestServer::~TestServer() {
    {
        const std::lock_guard lock{mutex_};
        is_stopping_ = true;
        for (const int fd : connection_fds_) {
            ::shutdown(fd, SHUT_RDWR);
        }
    }
    changed_.notify_all();
    const char byte = 0;
    [[maybe_unused]] const auto written = ::write(wake_fds_[1], &byte, 1);
    acceptor_.join();
    for (auto& thread : threads_) {
        thread.join();
    }
    ::close(listen_fd_);
    ::close(wake_fds_[0]);
    ::close(wake_fds_[1]);
    SSL_CTX_free(tls_context_);
}

void TestServer::set_handler(Handler handler) {
    const std::lock_guard lock{mutex_};
    handler_ = std::move(handler);
}

void TestServer::reply_always(Reply reply) {
    set_handler([reply](const RecordedRequest&) { return reply; });
}

std::vector<RecordedRequest> TestServer::requests() const {
    const std::lock_guard lock{mutex_};
    return requests_;
}

RecordedRequest TestServer::last_request() const {
    const std::lock_guard lock{mutex_};
    if (requests_.empty()) {
        throw std::runtime_error("test server: no request recorded");
    }
    return requests_.back();
}

int TestServer::connections_accepted() const {
    const std::lock_guard lock{mutex_};
    return connections_accepted_;
}

int TestServer::handshakes_failed() const {
    const std::lock_guard lock{mutex_};
    return handshakes_failed_;
}

void TestServer::wait_for_count(const int& counter, int count) const {
    std::unique_lock lock{mutex_};
    changed_.wait(lock, [&] { return counter >= count; });
}

void TestServer::wait_for_failed_handshakes(int count) const {
    wait_for_count(handshakes_failed_, count);
}

void TestServer::wait_for_closed_connections(int count) const {
    wait_for_count(connections_closed_, count);
}

void TestServer::wait_for_tickets(int count) const {
    wait_for_count(tickets_sent_, count);
}

void TestServer::wait_for_requests(std::size_t count) const {
    std::unique_lock lock{mutex_};
    changed_.wait(lock, [&] { return requests_.size() >= count; });
}

void TestServer::wait_until(
    const std::function<bool(const std::vector<RecordedRequest>&)>& predicate) const {
    std::unique_lock lock{mutex_};
    changed_.wait(lock, [&] { return predicate(requests_); });
}

void TestServer::accept_loop() {
    for (;;) {
        pollfd descriptors[2] = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
        if (::poll(descriptors, 2, -1) < 0) {
            continue;
        }
        if (descriptors[1].revents != 0) {
            return;
        }
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        const std::lock_guard lock{mutex_};
        if (is_stopping_) {
            ::close(fd);
            return;
        }
        connection_fds_.push_back(fd);
        const int index = connections_accepted_++;
        threads_.emplace_back([this, fd, index] { serve(fd, index); });
    }
}

void TestServer::serve(int fd, int connection_index) {
    Stream stream{fd, nullptr};
    // Forget the fd before closing it, so the destructor never shuts down a reused descriptor.
    const auto close_connection = [this, &stream](int descriptor) {
        if (stream.ssl != nullptr) {
            SSL_shutdown(stream.ssl);  // close_notify, not waiting for the client's
            SSL_free(stream.ssl);
        }
        {
            const std::lock_guard lock{mutex_};
            std::erase(connection_fds_, descriptor);
            ::close(descriptor);
            ++connections_closed_;
        }
        changed_.notify_all();
    };
    if (tls_context_ != nullptr) {
        SSL* ssl = SSL_new(tls_context_);
        SSL_set_fd(ssl, fd);
        if (SSL_accept(ssl) != 1) {
            ERR_clear_error();
            SSL_free(ssl);
            {
                const std::lock_guard lock{mutex_};
                ++handshakes_failed_;
            }
            // Read what the client still sends until it closes: closing with unread bytes
            // would reset the connection, and the reset could overtake the alert just sent.
            ::shutdown(fd, SHUT_WR);
            char drained[4096];
            while (::recv(fd, drained, sizeof drained, 0) > 0) {
            }
            close_connection(fd);
            return;
        }
        stream.ssl = ssl;
    }
    std::string buffer;
    char chunk[16384];
    for (;;) {
        // Read one request: head up to the blank line, then Content-Length bytes of body.
        std::size_t head_end = std::string::npos;
        while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
            const ssize_t n = stream.receive(chunk, sizeof chunk);
            if (n <= 0) {
                close_connection(fd);
                return;
            }
            buffer.append(chunk, static_cast<std::size_t>(n));
        }
        RecordedRequest request;
        request.connection_index = connection_index;
        const std::string head = buffer.substr(0, head_end);
        std::size_t line_end = head.find("\r\n");
        const std::string request_line = head.substr(0, line_end);
        const auto first_space = request_line.find(' ');
        const auto second_space = request_line.find(' ', first_space + 1);
        request.method = request_line.substr(0, first_space);
        request.target = request_line.substr(first_space + 1, second_space - first_space - 1);
        std::size_t content_length = 0;
        while (line_end != std::string::npos && line_end < head.size()) {
            const std::size_t start = line_end + 2;
            line_end = head.find("\r\n", start);
            const std::string line = head.substr(
                start, line_end == std::string::npos ? std::string::npos : line_end - start);
            const auto colon = line.find(':');
            if (colon == std::string::npos) {
                continue;
            }
            std::string value = line.substr(colon + 1);
            while (!value.empty() && value.front() == ' ') {
                value.erase(0, 1);
            }
            request.headers.emplace_back(line.substr(0, colon), value);
            if (lower(line.substr(0, colon)) == "content-length") {
                content_length = std::stoul(value);
            }
        }
        buffer.erase(0, head_end + 4);
        while (buffer.size() < content_length) {
            const ssize_t n = stream.receive(chunk, sizeof chunk);
            if (n <= 0) {
                close_connection(fd);
                return;
            }
            buffer.append(chunk, static_cast<std::size_t>(n));
        }
        request.body = buffer.substr(0, content_length);
        buffer.erase(0, content_length);

        Handler handler;
        {
            const std::lock_guard lock{mutex_};
            requests_.push_back(request);
            handler = handler_;
        }
        changed_.notify_all();
        const Reply reply = handler(request);
        if (reply.is_hang) {
            std::unique_lock lock{mutex_};
            changed_.wait(lock, [&] { return is_stopping_; });
            lock.unlock();
            close_connection(fd);
            return;
        }
        if (!stream.write_all(reply.raw) || reply.is_close_after) {
            close_connection(fd);
            return;
        }
        if (reply.is_ticket_after && stream.ssl != nullptr) {
            if (SSL_new_session_ticket(stream.ssl) != 1 || SSL_do_handshake(stream.ssl) != 1) {
                close_connection(fd);
                return;
            }
            {
                const std::lock_guard lock{mutex_};
                ++tickets_sent_;
            }
            changed_.notify_all();
        }
    }
}

}  // namespace queen::client::testing
