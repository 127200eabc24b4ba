// api/src/long_poll.cpp — the long-poll driver (long_poll.hpp): the phase machine shared by the
// waiting pop, the waiting lock acquire and the wait of POST /api/v1/request.
#include "long_poll.hpp"

#include <algorithm>

#include "queen/core/assert.hpp"

namespace queen::api::detail {
namespace {

/// No leader, a busy one, or one replaced before it answered: another try may find one.
bool is_retryable(const Error& error) noexcept {
    return error.is(Errc::not_leader) || error.is(Errc::busy) || error.is(Errc::timeout);
}

}  // namespace

Response unexpected_result(Context& context) {
    return error_response(context, 500, "unexpected result type from apply");
}

void LongPoll::start(ContextPtr context, Spec spec, Responder responder) {
    std::make_shared<LongPoll>(std::move(context), std::move(spec), std::move(responder))->begin();
}

LongPoll::LongPoll(ContextPtr context, Spec spec, Responder responder)
    : context_(std::move(context)), spec_(std::move(spec)), responder_(std::move(responder)) {
    QUEEN_ASSERT(spec_.classify, "a long poll needs a classify function");
}

void LongPoll::begin() {
    if (spec_.is_waiting) {
        deadline_ms_ = context_->backend.now_ms() + spec_.wait_ms;
        if (spec_.is_counted) {
            context_->metrics.long_polls_waiting.fetch_add(1, relaxed);
        }
        std::weak_ptr<LongPoll> weak = weak_from_this();
        responder_.on_cancel([weak] {
            if (auto self = weak.lock()) {
                self->on_client_gone();
            }
        });
    }
    arm_and_submit();
}

void LongPoll::arm_and_submit() {
    std::uint64_t generation = 0;
    {
        std::lock_guard lock(mutex_);
        if (phase_ == Phase::done) {
            return;
        }
        phase_ = Phase::arming;
        generation = ++generation_;
        is_woken_ = false;
    }
    if (spec_.is_waiting) {
        register_wait(generation, deadline_ms_);
    }
    {
        std::lock_guard lock(mutex_);
        // A wake-up the backend delivered synchronously may have ended the poll or started
        // the next try already.
        if (phase_ == Phase::done || generation != generation_) {
            return;
        }
        phase_ = Phase::submitting;
    }
    engine::Command command;
    command.body = spec_.command;
    context_->backend.submit(spec_.tenant, std::move(command),
                             [self = shared_from_this()](Result<engine::CommandResult> result) {
                                 self->on_result(std::move(result));
                             });
}

void LongPoll::register_wait(std::uint64_t generation, std::int64_t deadline_ms) {
    // The registration holds the poll alive while it waits; close() cancels it, which
    // releases the poll.
    auto token =
        context_->backend.wait_for_change(spec_.tenant, spec_.wait_key, deadline_ms,
                                          [self = shared_from_this(), generation](bool timed_out) {
                                              self->on_wake(generation, timed_out);
                                          });
    std::unique_ptr<WaitToken> stale;
    {
        std::lock_guard lock(mutex_);
        if (phase_ == Phase::done || generation != generation_) {
            stale = std::move(token);
        } else {
            stale = std::exchange(token_, std::move(token));
        }
    }
    if (stale) {
        stale->cancel();
    }
}

void LongPoll::on_result(Result<engine::CommandResult> result) {
    if (!result) {
        if (!pause_before_retry(result.error())) {
            finish_error(result.error());
        }
        return;
    }
    if (const auto* failed = std::get_if<engine::ErrorResult>(&*result)) {
        finish([context = context_, failed = *failed] {
            return error_result_response(*context, failed);
        });
        return;
    }
    on_verdict(spec_.classify(*result));
}

void LongPoll::on_verdict(Verdict verdict) {
    if (verdict.is_final) {
        finish(std::move(verdict.answer));
        return;
    }
    bool retry = false;
    {
        std::lock_guard lock(mutex_);
        if (phase_ == Phase::done) {
            return;
        }
        if (!spec_.is_waiting || is_timed_out_) {
            // no wait, or it is over: this verdict's answer, below
        } else if (is_woken_) {
            is_woken_ = false;
            retry = true;  // a change arrived while the command was in flight
        } else {
            waiting_answer_ = std::move(verdict.answer);
            phase_ = Phase::parked;
            return;
        }
    }
    if (retry) {
        arm_and_submit();
        return;
    }
    finish(verdict.answer ? std::move(verdict.answer) : spec_.at_deadline);
}

bool LongPoll::pause_before_retry(const Error& error) {
    if (!spec_.is_waiting || !is_retryable(error)) {
        return false;
    }
    const std::int64_t now = context_->backend.now_ms();
    const std::int64_t resume = std::min(now + retry_pause_ms, deadline_ms_);
    if (resume <= now) {
        return false;
    }
    std::uint64_t generation = 0;
    {
        std::lock_guard lock(mutex_);
        if (phase_ == Phase::done) {
            return true;  // the client left: nobody to answer
        }
        if (is_timed_out_) {
            return false;
        }
        generation = ++generation_;
        phase_ = Phase::pausing;
        is_woken_ = false;
        failure_ = error;
    }
    // A change of the key ends the pause early; otherwise `resume` does.
    register_wait(generation, resume);
    return true;
}

void LongPoll::on_wake(std::uint64_t generation, bool timed_out) {
    bool retry = false;
    std::function<Response()> answer;
    std::optional<Error> failed;
    {
        std::lock_guard lock(mutex_);
        if (phase_ == Phase::done || generation != generation_) {
            return;
        }
        switch (phase_) {
            case Phase::arming:
            case Phase::submitting:
                // The result decides: submit again (woken) or answer (timed out).
                (timed_out ? is_timed_out_ : is_woken_) = true;
                break;
            case Phase::parked:
                if (timed_out) {
                    answer = waiting_answer_ ? waiting_answer_ : spec_.at_deadline;
                } else {
                    retry = true;
                }
                break;
            case Phase::pausing:
                if (!timed_out || context_->backend.now_ms() < deadline_ms_) {
                    failure_.reset();  // the pause is over (or a change came): try again
                    retry = true;
                    context_->metrics.long_poll_retries.fetch_add(1, relaxed);
                } else {
                    failed = std::exchange(failure_, std::nullopt);
                }
                break;
            case Phase::done: break;
        }
    }
    if (retry) {
        arm_and_submit();
    } else if (failed.has_value()) {
        finish_error(*failed);
    } else if (answer) {
        finish(std::move(answer));
    }
}

void LongPoll::on_client_gone() {
    // A command already in flight still runs: a pop may take a lease (its messages are
    // redelivered when it expires, as with any consumer that vanishes), an acquire may be
    // granted (the grant ends at its TTL, or the owner's next acquire renews it).
    (void)close();
}

bool LongPoll::close() {
    // Cancelling the wait may drop the last other reference to this poll.
    const auto self = shared_from_this();
    std::unique_ptr<WaitToken> token;
    {
        std::lock_guard lock(mutex_);
        if (phase_ == Phase::done) {
            return false;
        }
        phase_ = Phase::done;
        token = std::move(token_);
    }
    if (token) {
        token->cancel();
    }
    if (spec_.is_waiting && spec_.is_counted) {
        context_->metrics.long_polls_waiting.fetch_sub(1, relaxed);
    }
    return true;
}

void LongPoll::finish(std::function<Response()> answer) {
    QUEEN_ASSERT(answer, "a long poll ended without an answer");
    if (close()) {
        responder_.complete_with(std::move(answer));
    }
}

void LongPoll::finish_error(const Error& error) {
    finish([context = context_, tenant = spec_.tenant, error] {
        return error_response(*context, error, tenant);
    });
}

}  // namespace queen::api::detail
