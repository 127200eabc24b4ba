// modules/node/src/request_forward.hpp — an HTTP request served by another node over the
// authenticated peer link, answered to the client as if this node had served it.
//
// Why. A tenant lives on a subset of the cluster's nodes. A node that receives an API request
// for a tenant it does not host hands the whole request to a node that does, and relays the
// answer: status, headers and body, long polls and client disconnects included. The peer link
// (net::Transport through Cluster) is already authenticated, so no HTTP connection is opened
// between nodes and no second credential exists.
//
// The two sides. Every node runs one RequestForwarder (start(), right after Cluster::start):
//   origin   forward(node, request, responder, timeout) sends http_request to `node` and keeps
//            the client's responder as a pending forward (id -> responder, deadline). The
//            matching http_response (from that node only) completes it. When no answer came
//            within `timeout`, the deadline thread answers 503 and tells the peer to cancel.
//            When the client disconnects first (responder.on_cancel), an http_cancel tells the
//            peer to cancel, and the entry is dropped.
//   serving  an http_request from a peer is rebuilt as the HTTP server would have built it
//            (method, target split into path and query, decoded segments and query; a bad target
//            answers 400), marked with `X-Queen-Forwarded-From: <origin id>` (any such header
//            the frame carried is removed first), and run by the local handler (the node's
//            router) with a detached responder whose completion goes back as http_response. An
//            http_cancel cancels that responder (http::Responder::cancel): a parked long poll is
//            released. The serving side cancels by itself, without answering, a request still
//            open serve_grace_ms after the origin's timeout (a lost cancel, an origin that died).
//
// Threads. Frames arrive on the transport thread, which must not block. The API's handlers may
// do real work before they return (a read runs on the calling thread: an LMDB transaction), so
// the serving side hands every request to its own small pool (serve_threads, 2 by default); the
// transport thread only decodes frames and queues work. The answer is encoded and queued on the
// thread that completes the responder (a pool thread, or the thread that finished the command;
// a detached responder has no I/O thread, so complete_with() formats there too); send_frame()
// never blocks. A response frame completes the client's responder with
// complete_with(), so the HTTP server formats it on the connection's I/O thread.
//
// Errors the client sees (each a JSON body {"error": "..."}):
//   503 + Retry-After: 1  the peer cannot be reached (send_frame() refused the frame: unknown
//                         node, its queue full, stopped), no answer within the timeout (also
//                         what a client sees when the peer restarted or the link broke while it
//                         served the request: the origin has no other signal), the forwarder
//                         stopped, the serving side's pool queue is full, or the peer's
//                         answer could not be queued on its link
//   502                   the answer does not fit in one frame (see "Size limit"), or the peer
//                         sent a response that is not valid HTTP (status, header bytes)
//   413                   the request itself does not fit in one frame
//
// Size limit. One request and one response each travel as one frame. net::Transport closes the
// connection on a frame body over its frame_body_bytes_max (64 MiB) and drops frames once
// queue_bytes_max (64 MiB) wait for a peer, and a huge frame delays the raft messages behind
// it, so a frame of this module carries at most frame_bytes_max payload bytes: 32 MiB by
// default (http_frame_bytes_max). The encoded response is checked before it is queued; one
// over the limit is replaced by a 502 naming both sizes (a pop asking for fewer messages fits),
// never dropped silently. HTTP request bodies are at most 16 MiB (http.body_size_bytes_max), so
// requests fit.
//
// The frames (little-endian; str and blob: varint length, bytes):
//   http_request  (23)  u64 id | u32 timeout_ms | str method name | str target (raw
//                       request-target, query included) | varint header count |
//                       (str name | str value)* | blob body
//   http_response (24)  u64 id | u16 status | varint header count | (str name | str value)* |
//                       blob body. Response::content_type travels as a first "Content-Type"
//                       header (none when empty); the receiver takes the first Content-Type
//                       header back out into content_type.
//   http_cancel   (25)  u64 id
// Ids are chosen by the origin (unique per origin node: they start from the wall clock at each
// start, so ids of an earlier start of the node do not collide); the serving side keys its
// in-flight requests by (origin node, id).
//
//     auto forwarder = RequestForwarder::start(cluster, clock, logger, {});
//     forwarder->set_local_handler(router_handler);          // before peers can send
//     forwarder->forward(NodeId{3}, request, responder, std::chrono::seconds(35));
//     ...
//     forwarder->stop();                                     // before the cluster stops
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "queen/core/bytes.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"
#include "queen/http/request.hpp"
#include "queen/http/responder.hpp"
#include "queen/http/response.hpp"
#include "queen/http/router.hpp"

namespace queen::node::detail {

/// Frame types of forwarded HTTP requests (to move to cluster.hpp's list).
inline constexpr std::uint8_t frame_type_http_request = 23;
inline constexpr std::uint8_t frame_type_http_response = 24;
inline constexpr std::uint8_t frame_type_http_cancel = 25;

/// The header the serving side adds to a forwarded request: the origin node's id. The node's
/// API wrapper never forwards a request carrying it again (loop guard).
inline constexpr std::string_view forwarded_from_header = "X-Queen-Forwarded-From";

/// Default largest payload of one http_request or http_response frame (see "Size limit").
inline constexpr std::size_t http_frame_bytes_max = 32u << 20;

struct RequestForwarderOptions {
    /// Largest payload of one frame of this module; at most the transport's
    /// frame_body_bytes_max - 1 (start() asserts).
    std::size_t frame_bytes_max = http_frame_bytes_max;
    /// Threads running the requests peers send (the local handler).
    std::size_t serve_threads = 2;
    /// Requests of peers waiting for a pool thread; beyond, a request is answered 503.
    std::size_t serve_queue_max = 10'000;
    /// The serving side cancels (without answering) a request still open this long after the
    /// origin's timeout: the origin gave up and its cancel was lost.
    std::int64_t serve_grace_ms = 5'000;
    /// The deadline thread's longest sleep (it also wakes for every earlier deadline): bounds
    /// the lateness of timeouts when the clock is not the system's.
    std::int64_t check_interval_ms = 100;
};

/// Counters since start (for metrics). Thread-safe snapshot.
struct RequestForwarderStats {
    std::uint64_t forwarded_total = 0;  ///< requests sent to a peer (http_request queued)
    std::uint64_t answered_total = 0;   ///< forwards completed with the peer's response
    std::uint64_t served_total = 0;     ///< requests of peers run by the local handler
    /// Forwards answered 503/413/502 here: unreachable, timed out, stopped, too large, bad
    /// response.
    std::uint64_t failed_total = 0;
    std::uint64_t timed_out_total = 0;  ///< of failed_total: no answer within the timeout
    std::uint64_t cancelled_total = 0;  ///< forwards whose client disconnected first
    std::uint64_t too_large_total = 0;  ///< responses served here replaced by a 502
    std::uint64_t pending = 0;          ///< forwards waiting for an answer now
    std::uint64_t serving = 0;          ///< requests of peers open here now
};

/// One http_request frame, decoded (the wire form of what forward() sends).
struct HttpRequestFrame {
    std::uint64_t id = 0;
    std::uint32_t timeout_ms = 0;
    std::string method_name;
    std::string target;
    std::vector<http::Header> headers;
    std::string body;
};

/// Encodes one http_request (appended to `out`).
void encode_http_request(std::uint64_t id, std::uint32_t timeout_ms, std::string_view method_name,
                         std::string_view target, const std::vector<http::Header>& headers,
                         std::string_view body, Bytes& out);
/// Errors: Errc::corruption (short, or bytes left over).
[[nodiscard]] Result<HttpRequestFrame> decode_http_request(ByteSpan payload);
/// Encodes the answer to request `id` (appended to `out`): content_type first as a
/// Content-Type header when not empty, then response.headers.
void encode_http_response(std::uint64_t id, const http::Response& response, Bytes& out);
/// The id and the response. Errors: Errc::corruption (short, bytes left over, a status outside
/// 100..599, a header name that is not a token or a value holding CR, LF or NUL).
[[nodiscard]] Result<std::pair<std::uint64_t, http::Response>> decode_http_response(
    ByteSpan payload);
/// The request the HTTP server would have handed a handler for `method_name` and `target`:
/// method, target, path, raw_query, segments, query (headers, body and peer are the caller's).
/// Errors: Errc::invalid_argument with the text a 400 carries (empty or malformed target, bad
/// percent-encoding, CONNECT).
[[nodiscard]] Result<http::Request> rebuild_request(std::string_view method_name,
                                                    std::string_view target);

/// This node's side of forwarded HTTP requests (see the top of this file). The frame handlers
/// it registers on the cluster keep it alive until stop().
///
/// Thread-safety: every member may be called from any thread. stop() must not be called from
/// the local handler.
class RequestForwarder : public std::enable_shared_from_this<RequestForwarder> {
public:
    /// Registers the handlers of frames 23-25 on `cluster` and starts the deadline thread and
    /// the serving pool. `cluster`, `clock` and `logger` must outlive stop().
    [[nodiscard]] static std::shared_ptr<RequestForwarder> start(Cluster& cluster,
                                                                 const Clock& clock, Logger& logger,
                                                                 RequestForwarderOptions options);
    ~RequestForwarder();
    RequestForwarder(const RequestForwarder&) = delete;
    RequestForwarder& operator=(const RequestForwarder&) = delete;

    /// How this node runs a request a peer sent (the node's HTTP router handler). It runs on a
    /// pool thread with a detached responder; it may complete now or later from any thread.
    /// Set before peers can send; until then their requests are answered 503.
    void set_local_handler(http::Handler handler);

    /// Sends `request` to `node` and completes `responder` with the peer's response, or with
    /// 503 + Retry-After: 1 and {"error": "..."} when the peer cannot be reached (send_frame()
    /// false) or no answer came within `timeout` (the caller computes it: for a long poll its
    /// wait timeout plus a margin), 413 when the request does not fit in one frame, 502 when
    /// the peer's answer does not fit or is not valid HTTP. Takes over responder.on_cancel:
    /// when the client disconnects, an http_cancel tells the peer to cancel its responder (a
    /// parked long poll there is released). A timed-out forward is cancelled on the peer too.
    /// Never blocks; `request` is only read during the call.
    void forward(NodeId node, const http::Request& request, http::Responder responder,
                 std::chrono::milliseconds timeout);

    /// Fails every pending forward (503, and a cancel to its peer), cancels the requests of
    /// peers open here (answering 503 to their origin), stops the deadline thread and the pool,
    /// and releases the cluster's handlers. Idempotent.
    void stop();

    [[nodiscard]] RequestForwarderStats stats() const;

private:
    RequestForwarder(Cluster& cluster, const Clock& clock, Logger& logger,
                     RequestForwarderOptions options);

    /// A forward waiting for its answer (origin side).
    struct Pending {
        NodeId node;
        http::Responder responder;
        std::int64_t deadline_ns = 0;
    };
    /// A peer's request open here (serving side).
    using ServedKey = std::pair<std::uint64_t, std::uint64_t>;  // origin node, its id
    struct Served {
        std::uint64_t serial = 0;  // tells a later request with the same key apart
        http::Responder responder;
        std::int64_t deadline_ns = 0;
    };

    void on_request(NodeId from, ByteSpan payload);
    void on_response(NodeId from, ByteSpan payload);
    void on_cancel_frame(NodeId from, ByteSpan payload);
    /// The client of forward `id` disconnected.
    void on_client_cancel(std::uint64_t id);
    /// The local handler completed the request `key` (any thread): encode and send it back.
    void deliver(ServedKey key, std::uint64_t serial, http::Response response);
    /// Sends the answer to `key` (origin `to`), replacing one over the limit by a 502.
    void send_response(NodeId to, std::uint64_t id, const http::Response& response);
    void send_cancel(NodeId to, std::uint64_t id);
    /// A request of a peer waiting for a pool thread.
    struct Job {
        http::Request request;
        http::Responder responder;
    };

    /// Completes `responder` with `status` and {"error": message} (503s with Retry-After: 1).
    static void fail(const http::Responder& responder, int status, const std::string& message);
    /// Removes forward `id` (takes the lock); nullopt when it is gone.
    std::optional<Pending> take_pending(std::uint64_t id);
    /// stop(); `is_cluster_usable` false from the destructor (the cluster may be going away).
    void stop_impl(bool is_cluster_usable);
    void run_deadlines();
    void run_worker(std::size_t index);
    void wake_deadlines_if_earlier(std::int64_t deadline_ns);  // under the lock

    Cluster& cluster_;
    const Clock& clock_;
    Logger& logger_;
    const RequestForwarderOptions options_;
    const NodeId self_;

    mutable std::mutex mutex_;
    std::condition_variable deadline_wakeup_;
    std::condition_variable work_ready_;
    bool is_stopped_ = false;
    std::int64_t awaited_ns_ = 0;  // the deadline the deadline thread sleeps towards (0: none)
    http::Handler local_handler_;
    std::uint64_t next_id_ = 1;
    std::map<std::uint64_t, Pending> pending_;  // by id
    std::set<std::pair<std::int64_t, std::uint64_t>> pending_deadlines_;
    std::uint64_t next_serial_ = 1;
    std::map<ServedKey, Served> served_;
    std::set<std::tuple<std::int64_t, std::uint64_t, std::uint64_t>> served_deadlines_;
    std::deque<Job> work_;
    std::thread deadline_thread_;
    std::vector<std::thread> workers_;
    RequestForwarderStats stats_;  // counters only; pending/serving are filled in stats()
};

}  // namespace queen::node::detail
