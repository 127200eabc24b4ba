// queen/client/multiplexer.hpp — many non-blocking keep-alive HTTP/1.1 connections to one broker
// on one epoll set, driven by one thread: start a request on a slot, wait() reports the slots
// whose request finished. For load drivers and event loops; the blocking Connection is simpler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "queen/client/connection.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/result.hpp"

namespace queen::client {

/// `slots` connections, each carrying one request at a time, or one pipelined group of requests
/// (start_pipelined: sent back to back, answered in order), all waited on by wait(). A slot
/// connects lazily (non-blocking connect, then the TLS handshake for an https:// endpoint) on its
/// first request, keeps the connection alive between requests, reconnects after the server closed
/// it, honours `Connection: close`, and fails a request that passes its deadline with
/// Errc::timeout (the connect and handshake count against it). Like Connection, a request that
/// fails on a reused connection before any answer byte arrived is sent once more on a new
/// connection when it is idempotent (the server closed an idle connection). Requests are copied
/// when started (start_with_body() takes the body instead): the caller's views may die at once.
/// Answers land in the slot's response(), reusing its storage. Thread-safety: none; one thread
/// drives a multiplexer (run one per thread).
class HttpMultiplexer {
public:
    /// A finished request: the slot, and success (any HTTP status: see check_http_status) or the
    /// transport error.
    struct Completion {
        std::size_t slot = 0;
        queen::Status status;
    };

    /// `clock` measures deadlines and must outlive the multiplexer. ConnectionOptions::
    /// idle_check_after_ms is not used: idle connections are watched by the epoll set, and one
    /// the server closed is dropped when wait() sees it. With TLS the CA and certificate files
    /// are read here, once for every slot (see TlsClientOptions).
    /// Errors: none here; resolution, socket and TLS file failures surface as the requests'
    /// errors.
    HttpMultiplexer(Endpoint endpoint, ConnectionOptions options, const queen::Clock& clock,
                    std::size_t slots);
    ~HttpMultiplexer();
    HttpMultiplexer(const HttpMultiplexer&) = delete;
    HttpMultiplexer& operator=(const HttpMultiplexer&) = delete;

    /// Starts `request` on `slot` (which must be idle): connects when needed and sends as much
    /// as the socket takes at once. Its completion comes from a later wait().
    /// Errors (nothing started, no completion follows): Errc::invalid_argument (slot out of
    /// range or busy), Errc::connect_failed (no address, or the socket could not be opened),
    /// Errc::tls_failed (a TLS file that did not load).
    [[nodiscard]] queen::Status start(std::size_t slot, const HttpRequest& request);
    /// As start(), with `body` as the request's body (request.body and has_body are ignored),
    /// taken instead of copied: `body` is swapped with the slot's previous body buffer and comes
    /// back with unspecified content and that buffer's capacity, so a caller building every body
    /// into the same string neither copies nor allocates per request. When an error is returned
    /// `body` is unchanged. Errors: as start().
    [[nodiscard]] queen::Status start_with_body(std::size_t slot, const HttpRequest& request,
                                                std::string& body);

    /// Starts `requests` (at least one) on `slot` (which must be idle) back to back on its
    /// connection, in one write: HTTP/1.1 pipelining, so the server handles them in this order
    /// and answers in this order. One completion reports the group once every answer arrived,
    /// answer k in response(slot, k); a failure reports the group failed, with answered(slot)
    /// answers whole before it. A group is sent once more on a new connection only when every
    /// request in it is idempotent and no answer byte came (as start()). The group's deadline is
    /// the latest of its requests'. Bodies are copied. Errors: as start(), and
    /// Errc::invalid_argument for an empty group.
    [[nodiscard]] queen::Status start_pipelined(std::size_t slot,
                                                std::span<const HttpRequest> requests);

    /// Waits up to `timeout_ns` (0: only what is ready now) for socket events, advances every
    /// slot they concern, fails the requests past their deadline (Errc::timeout), and appends
    /// each finished request to `completed`. Returns early once something finished. Transport
    /// errors in completions: Errc::connect_failed, timeout, connection_closed, bad_response
    /// (not HTTP, or larger than response_size_bytes_max), tls_failed (a failed handshake:
    /// "tls handshake with https://host:port: certificate verify failed: <why>", a TLS alert;
    /// never sent again).
    /// Errors (of the call itself): Errc::invalid_argument (timeout_ns < 0).
    [[nodiscard]] queen::Status wait(std::int64_t timeout_ns, std::vector<Completion>& completed);

    /// Answer `index` of the last request (or pipelined group) finished on `slot`; valid until
    /// the next start on it.
    [[nodiscard]] HttpResponse& response(std::size_t slot, std::size_t index = 0);
    /// How many answers of the last request or group on `slot` arrived whole (after a failure:
    /// those before it).
    [[nodiscard]] std::size_t answered(std::size_t slot) const;
    /// Whether `slot` carries a request that has not finished.
    [[nodiscard]] bool is_busy(std::size_t slot) const;
    /// Requests started and not yet reported finished by wait().
    [[nodiscard]] std::size_t in_flight() const noexcept { return in_flight_ + pending_.size(); }
    [[nodiscard]] std::size_t size() const noexcept { return slots_.size(); }
    /// TCP connections opened so far (1 per connect): lets tests see keep-alive reuse.
    [[nodiscard]] std::uint64_t connects_total() const noexcept { return connects_total_; }
    /// Closes every connection; requests in flight finish with Errc::cancelled in `completed`.
    void close_all(std::vector<Completion>& completed);

private:
    struct Slot;
    queen::Status check_idle(std::size_t index) const;
    queen::Status launch(Slot& slot, std::span<const HttpRequest> requests);
    queen::Status open(Slot& slot);
    queen::Status begin(Slot& slot, std::vector<Completion>& completed);
    void connected(Slot& slot, std::vector<Completion>& completed);
    void handshake(Slot& slot, std::vector<Completion>& completed);
    void send_some(Slot& slot, std::vector<Completion>& completed);
    void send_some_tls(Slot& slot, std::vector<Completion>& completed);
    void receive(Slot& slot, std::vector<Completion>& completed);
    void receive_tls(Slot& slot, std::vector<Completion>& completed);
    /// A TLS read or write failed: Errc::tls_failed (`is_tls_failure`: the protocol, an alert)
    /// or connection_closed (the socket), with OpenSSL's reason.
    void fail_tls(Slot& slot, bool is_tls_failure, std::vector<Completion>& completed);
    bool parse(Slot& slot, const char* data, std::size_t length,
               std::vector<Completion>& completed);
    void on_event(Slot& slot, std::uint32_t events, std::vector<Completion>& completed);
    void fail(Slot& slot, std::error_code code, const char* why,
              std::vector<Completion>& completed);
    void finish(Slot& slot, queen::Status status, std::vector<Completion>& completed);
    void watch(Slot& slot, std::uint32_t events);
    void close_socket(Slot& slot) noexcept;

    Endpoint endpoint_;
    ConnectionOptions options_;
    const queen::Clock& clock_;
    std::string head_prefix_;
    std::shared_ptr<const detail::TlsContext> tls_context_;  // null: plain HTTP
    int epoll_fd_ = -1;
    std::vector<std::unique_ptr<Slot>> slots_;
    std::vector<char> read_buffer_;    // shared by the slots: one thread reads at a time
    std::vector<Completion> pending_;  // finished inside start(): reported by the next wait()
    std::size_t in_flight_ = 0;
    std::uint64_t connects_total_ = 0;
};

}  // namespace queen::client
