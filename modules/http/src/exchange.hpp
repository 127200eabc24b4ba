// modules/http/src/exchange.hpp — the state shared by the copies of one Responder.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>

#include "queen/http/response.hpp"

namespace queen::http::detail {

/// One request's answer slot. `deliver` is set at creation and called at most once, outside the
/// mutex; `on_cancel` runs at most once, only when cancel() comes before complete().
struct Exchange {
    explicit Exchange(std::function<void(Response)> deliver_function)
        : deliver(std::move(deliver_function)) {}
    ~Exchange();
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    /// Marks the exchange completed; returns false when it was cancelled (nothing to send).
    /// Asserts when called twice.
    bool mark_completed();
    /// Like mark_completed() but returns false instead of asserting when already completed.
    bool try_mark_completed();
    /// Marks it cancelled, bumps `cancelled_total` (when given) and then runs the callback;
    /// returns false (and does nothing) when it was already completed or cancelled.
    bool cancel(std::atomic<std::uint64_t>* cancelled_total = nullptr);

    std::function<void(Response)> deliver;
    /// Optional: runs the response maker where the connection lives (its I/O thread) and
    /// delivers its result; without it, complete_with() makes the response on the calling thread.
    std::function<void(std::function<Response()>)> deliver_made;
    /// Optional: runs work on the connection's I/O thread (dropped once the server stopped);
    /// without it, Responder::dispatch() runs the work on the calling thread.
    std::function<void(std::function<void()>)> dispatch;
    mutable std::mutex mutex;
    bool is_completed = false;
    bool is_cancelled = false;
    std::function<void()> on_cancel;
};

}  // namespace queen::http::detail
