// modules/http/src/responder.cpp — Responder: complete once from any thread, cancellation.
#include "queen/http/responder.hpp"

#include "exchange.hpp"
#include "queen/core/assert.hpp"

namespace queen::http {

namespace detail {

Exchange::~Exchange() {
    // The last Responder copy is gone. Without an answer the connection would wait forever for
    // this slot (responses leave in request order), so answer for the handler.
    if (!is_completed && !is_cancelled && deliver) {
        is_completed = true;
        deliver(Response::error(500, "The request handler finished without a response"));
    }
}

bool Exchange::mark_completed() {
    std::lock_guard lock(mutex);
    QUEEN_ASSERT(!is_completed, "Responder::complete() called twice for one request");
    is_completed = true;
    return !is_cancelled;
}

bool Exchange::try_mark_completed() {
    std::lock_guard lock(mutex);
    if (is_completed || is_cancelled) {
        return false;
    }
    is_completed = true;
    return true;
}

bool Exchange::cancel(std::atomic<std::uint64_t>* cancelled_total) {
    std::function<void()> callback;
    {
        std::lock_guard lock(mutex);
        if (is_completed || is_cancelled) {
            return false;
        }
        is_cancelled = true;
        if (cancelled_total != nullptr) {
            cancelled_total->fetch_add(1, std::memory_order_relaxed);
        }
        callback = std::move(on_cancel);
        on_cancel = nullptr;
    }
    if (callback) {
        callback();
    }
    return true;
}

}  // namespace detail

Responder::Responder(std::shared_ptr<detail::Exchange> exchange) noexcept
    : exchange_(std::move(exchange)) {}

void Responder::complete(Response response) const {
    QUEEN_ASSERT(exchange_ != nullptr, "complete() on an empty Responder");
    if (exchange_->mark_completed()) {
        exchange_->deliver(std::move(response));
    }
}

void Responder::complete_with(std::function<Response()> make) const {
    QUEEN_ASSERT(exchange_ != nullptr, "complete_with() on an empty Responder");
    if (!exchange_->mark_completed()) {
        return;
    }
    if (exchange_->deliver_made) {
        exchange_->deliver_made(std::move(make));
    } else {
        exchange_->deliver(make());
    }
}

void Responder::dispatch(std::function<void()> work) const {
    QUEEN_ASSERT(exchange_ != nullptr, "dispatch() on an empty Responder");
    if (exchange_->dispatch) {
        exchange_->dispatch(std::move(work));
    } else {
        work();
    }
}

void Responder::on_cancel(std::function<void()> callback) const {
    QUEEN_ASSERT(exchange_ != nullptr, "on_cancel() on an empty Responder");
    {
        std::lock_guard lock(exchange_->mutex);
        if (!exchange_->is_cancelled) {
            if (!exchange_->is_completed) {
                exchange_->on_cancel = std::move(callback);
            }
            return;
        }
    }
    if (callback) {
        callback();
    }
}

bool Responder::is_cancelled() const noexcept {
    std::lock_guard lock(exchange_->mutex);
    return exchange_->is_cancelled;
}

bool Responder::is_completed() const noexcept {
    std::lock_guard lock(exchange_->mutex);
    return exchange_->is_completed;
}

Responder Responder::detached(std::function<void(Response)> deliver) {
    return Responder(std::make_shared<detail::Exchange>(std::move(deliver)));
}

void Responder::cancel(const Responder& responder) {
    responder.exchange_->cancel();
}

}  // namespace queen::http
