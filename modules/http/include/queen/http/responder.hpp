// queen/http/responder.hpp — the handle a handler completes, now or later, from any thread.
#pragma once

#include <functional>
#include <memory>

#include "queen/http/response.hpp"

namespace queen::http {

namespace detail {
struct Exchange;  // shared state of one request/response; defined in src/exchange.hpp
}  // namespace detail

/// The answer slot of one request. A handler may complete it before returning (the common
/// case) or keep a copy and complete it later from any thread (long polls). Copies share one
/// slot. Parking a Responder costs no CPU: nothing polls it.
///
/// Exactly one complete() per request: a second one is a programmer error and asserts. When the
/// last copy is destroyed without complete(), the client gets `500 {"error": "..."}` so a
/// forgotten request never wedges its connection (HTTP/1.1 answers in request order).
///
/// Thread-safety: every member may be called from any thread, concurrently.
class Responder {
public:
    /// Sends `response`. After the client went away (is_cancelled()) this is a no-op, so a
    /// completion racing with a disconnect is safe. Asserts when called a second time.
    void complete(Response response) const;
    /// Like complete(make()), but `make` runs on the connection's I/O thread when there is one
    /// (detached responders run it right here): a worker thread that finished a command hands
    /// the formatting of its answer to the I/O threads. `make` must be safe to run on another
    /// thread and must not throw. Asserts when called after complete().
    void complete_with(std::function<Response()> make) const;

    /// Runs `work` on the connection's I/O thread: right here when called on it (or for a
    /// detached responder), else posted to it. A handler that waited for something on another
    /// thread (a read waiting for the state) continues there without holding that thread.
    /// After the server stopped the work is dropped (the client is gone anyway). `work` must
    /// not block and must not throw.
    void dispatch(std::function<void()> work) const;

    /// Registers the function to run once when the client disconnects (or the server stops)
    /// before complete(). It runs on the connection's I/O thread, or right now on the calling
    /// thread when the request is already cancelled; never after complete(). It must not block.
    /// A later call replaces an earlier registration.
    void on_cancel(std::function<void()> callback) const;

    /// True once the client disconnected or the server stopped before complete().
    [[nodiscard]] bool is_cancelled() const noexcept;
    /// True once complete() was called.
    [[nodiscard]] bool is_completed() const noexcept;

    /// A responder not tied to a socket: `deliver` receives the response on complete() (on the
    /// completing thread), and cancel() of the returned canceller cancels it. For unit tests of
    /// handlers and for adapters (e.g. an in-process client).
    [[nodiscard]] static Responder detached(std::function<void(Response)> deliver);
    /// Cancels a responder as a disconnect would (runs its on_cancel callback once).
    static void cancel(const Responder& responder);

    /// Internal: the server and detached() build responders over their exchange.
    explicit Responder(std::shared_ptr<detail::Exchange> exchange) noexcept;

private:
    std::shared_ptr<detail::Exchange> exchange_;
};

}  // namespace queen::http
