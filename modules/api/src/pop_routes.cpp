// api/src/pop_routes.cpp — the pop routes (docs/http-api.md, pop, and GET /api/v1/pop of a
// namespace/task) and long polling: park on Backend::wait_for_change, retry the pop when woken, 204
// at the deadline, stop on disconnect.
#include "format.hpp"
#include "parse.hpp"
#include "queen/queues/queues.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

/// One pop request from arrival to answer. The mutex guards the phase; backend calls are made
/// outside it because they may call back synchronously.
///
/// Phases: arming (registering the wait, then submitting the pop), popping (a pop entry is in
/// flight), parked (waiting for a wake-up), done. The wait is registered before each pop is
/// submitted, so a push applied after that pop cannot be missed: its wake-up arrives while we
/// are popping (remembered in `is_woken`) or parked (we pop again).
class PopPoll : public std::enable_shared_from_this<PopPoll> {
public:
    PopPoll(ContextPtr context, std::string tenant, queues::Pop pop, PopWait wait,
            Responder responder)
        : context_(std::move(context)),
          tenant_(std::move(tenant)),
          pop_(std::move(pop)),
          wait_key_(pop_.queue.empty() ? queues::matching_wait_key(pop_.namespace_name, pop_.task)
                                       : pop_.queue),
          wait_(wait),
          responder_(std::move(responder)) {}

    void start() {
        if (wait_.is_enabled) {
            deadline_ms_ = context_->backend.now_ms() + wait_.timeout_ms;
            context_->metrics.long_polls_waiting.fetch_add(1, relaxed);
            std::weak_ptr<PopPoll> weak = weak_from_this();
            responder_.on_cancel([weak] {
                if (auto self = weak.lock()) {
                    self->on_client_gone();
                }
            });
        }
        arm_and_pop();
    }

private:
    enum class Phase : std::uint8_t { arming, popping, parked, done };

    void arm_and_pop() {
        std::uint64_t generation = 0;
        {
            std::lock_guard lock(mutex_);
            if (phase_ == Phase::done) {
                return;
            }
            phase_ = Phase::arming;
            generation = ++generation_;
        }
        std::unique_ptr<WaitToken> token;
        if (wait_.is_enabled) {
            // The registration holds the poll alive while it is parked; finish() and a
            // disconnect cancel it, which releases the poll.
            token = context_->backend.wait_for_change(
                tenant_, wait_key_, deadline_ms_,
                [self = shared_from_this(), generation](bool timed_out) {
                    self->on_wake(generation, timed_out);
                });
        }
        std::unique_ptr<WaitToken> stale;
        {
            std::lock_guard lock(mutex_);
            if (phase_ == Phase::done) {
                stale = std::move(token);
            } else {
                stale = std::exchange(token_, std::move(token));
                phase_ = Phase::popping;
            }
        }
        if (stale) {
            stale->cancel();
        }
        if (phase_is_done()) {
            return;
        }
        engine::Command command;
        command.body = pop_;
        auto self = shared_from_this();
        context_->backend.submit(
            tenant_, std::move(command),
            [self](Result<engine::CommandResult> result) { self->on_pop(std::move(result)); });
    }

    bool phase_is_done() {
        std::lock_guard lock(mutex_);
        return phase_ == Phase::done;
    }

    void on_pop(Result<engine::CommandResult> result) {
        if (!result) {
            finish(error_response(*context_, result.error(), tenant_));
            return;
        }
        if (const auto* failed = std::get_if<engine::ErrorResult>(&*result)) {
            finish(error_result_response(*context_, *failed));
            return;
        }
        auto* popped = std::get_if<queues::PopResult>(&*result);
        if (popped == nullptr) {
            finish(error_response(*context_, 500, "unexpected result type from apply"));
            return;
        }
        if (popped->outcome == queues::PopResult::Outcome::delivered && !popped->messages.empty()) {
            if (!close()) {
                return;
            }
            context_->metrics.pop_messages.fetch_add(popped->messages.size(), relaxed);
            // Formatting (and decrypting) the messages is the I/O thread's job.
            responder_.complete_with(
                [context = context_, tenant = tenant_, popped = std::move(*popped)]() {
                    auto body = format_pop(popped, context->cipher_or_null());
                    if (!body) {
                        return error_response(*context, body.error(), tenant);
                    }
                    return Response::json(200, std::move(*body));
                });
            return;
        }
        // Empty, or paused by pop maintenance (which answers 204 at once, docs/http-api.md,
        // maintenance modes).
        const bool is_paused = popped->outcome == queues::PopResult::Outcome::paused;
        bool retry = false;
        {
            std::lock_guard lock(mutex_);
            if (phase_ == Phase::done) {
                return;
            }
            if (!wait_.is_enabled || is_paused || is_timed_out_) {
                // fall through to the 204 below
            } else if (is_woken_) {
                is_woken_ = false;
                retry = true;
            } else {
                phase_ = Phase::parked;
                return;
            }
        }
        if (retry) {
            arm_and_pop();
            return;
        }
        context_->metrics.pop_empty.fetch_add(1, relaxed);
        finish(Response::empty(204));
    }

    void on_wake(std::uint64_t generation, bool timed_out) {
        bool answer_now = false;
        bool retry = false;
        {
            std::lock_guard lock(mutex_);
            if (phase_ == Phase::done || generation != generation_) {
                return;
            }
            if (timed_out) {
                is_timed_out_ = true;
                answer_now = phase_ == Phase::parked;
            } else if (phase_ == Phase::parked) {
                retry = true;
            } else {
                is_woken_ = true;  // arming or popping: on_pop retries once it sees it
            }
        }
        if (answer_now) {
            context_->metrics.pop_empty.fetch_add(1, relaxed);
            finish(Response::empty(204));
        } else if (retry) {
            arm_and_pop();
        }
    }

    void on_client_gone() {
        std::unique_ptr<WaitToken> token;
        {
            std::lock_guard lock(mutex_);
            if (phase_ == Phase::done) {
                return;
            }
            phase_ = Phase::done;
            token = std::move(token_);
        }
        if (token) {
            token->cancel();
        }
        context_->metrics.long_polls_waiting.fetch_sub(1, relaxed);
        // A pop already in flight may still take a lease; its messages are redelivered after the
        // lease expires, as with any consumer that vanishes.
    }

    /// Ends the poll (cancels its wait); false when it had already ended. The caller answers.
    bool close() {
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
        if (wait_.is_enabled) {
            context_->metrics.long_polls_waiting.fetch_sub(1, relaxed);
        }
        return true;
    }

    void finish(Response response) {
        if (close()) {
            responder_.complete(std::move(response));
        }
    }

    ContextPtr context_;
    std::string tenant_;
    queues::Pop pop_;
    std::string wait_key_;  ///< the queue, or the wait key of a namespace/task pop
    PopWait wait_;
    Responder responder_;
    std::int64_t deadline_ms_ = 0;

    std::mutex mutex_;
    Phase phase_ = Phase::arming;
    std::uint64_t generation_ = 0;
    bool is_woken_ = false;
    bool is_timed_out_ = false;
    std::unique_ptr<WaitToken> token_;
};

void handle_pop(Context& context, const ContextPtr& shared, Request& request, Responder responder,
                bool has_partition) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    PopWait wait;
    auto pop = parse_pop(request, has_partition, context.options, wait);
    if (!pop) {
        responder.complete(error_response(context, pop.error(), tenant));
        return;
    }
    context.metrics.pop_requests.fetch_add(1, relaxed);
    auto poll = std::make_shared<PopPoll>(shared, std::move(tenant), std::move(*pop), wait,
                                          std::move(responder));
    poll->start();
}

}  // namespace

void register_pop_routes(http::Router& router, const ContextPtr& context) {
    router.get("/api/v1/pop", make_handler(context, [](Context& c, const ContextPtr& shared,
                                                       Request& request, Responder responder) {
                   handle_pop(c, shared, request, std::move(responder), false);
               }));
    router.get("/api/v1/pop/queue/:queue",
               make_handler(context, [](Context& c, const ContextPtr& shared, Request& request,
                                        Responder responder) {
                   handle_pop(c, shared, request, std::move(responder), false);
               }));
    router.get("/api/v1/pop/queue/:queue/partition/:partition",
               make_handler(context, [](Context& c, const ContextPtr& shared, Request& request,
                                        Responder responder) {
                   handle_pop(c, shared, request, std::move(responder), true);
               }));
}

}  // namespace queen::api::detail
