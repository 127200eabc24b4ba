// api/src/pop_routes.cpp — the pop routes (docs/http-api.md, pop, and GET /api/v1/pop of a
// namespace/task) and long polling: park on Backend::wait_for_change, retry the pop when woken, 204
// at the deadline, stop on disconnect.
#include "format.hpp"
#include "json.hpp"
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
    /// How the poll answers: `delivered` formats the messages of a pop that got some (on the
    /// I/O thread), `nothing` is the answer when it got none by the deadline. Unset: the pop
    /// routes' answers (200 with the messages, 204).
    struct Answers {
        std::function<Response(Context&, const std::string& tenant, queues::PopResult&)> delivered;
        std::function<Response(Context&)> nothing;
    };

    PopPoll(ContextPtr context, std::string tenant, queues::Pop pop, PopWait wait,
            Responder responder, Answers answers = {})
        : context_(std::move(context)),
          tenant_(std::move(tenant)),
          pop_(std::move(pop)),
          wait_key_(pop_.queue.empty() ? queues::matching_wait_key(pop_.namespace_name, pop_.task)
                                       : pop_.queue),
          wait_(wait),
          responder_(std::move(responder)),
          answers_(std::move(answers)) {}

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
            responder_.complete_with([context = context_, tenant = tenant_,
                                      popped = std::move(*popped),
                                      delivered = answers_.delivered]() mutable {
                if (delivered) {
                    return delivered(*context, tenant, popped);
                }
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
        finish_empty();
    }

    void finish_empty() {
        context_->metrics.pop_empty.fetch_add(1, relaxed);
        finish(answers_.nothing ? answers_.nothing(*context_) : Response::empty(204));
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
            finish_empty();
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
    Answers answers_;
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

/// POST /api/v1/request (docs/request-reply.md): makes an ephemeral reply queue, pushes the
/// request to `queue` with {"replyTo","requestId","body"} as its payload, and waits (a long
/// poll of the reply queue, bounded by timeoutMs) for the first message a worker pushes there.
class RequestCall : public std::enable_shared_from_this<RequestCall> {
public:
    RequestCall(ContextPtr context, std::string tenant, Responder responder)
        : context_(std::move(context)),
          tenant_(std::move(tenant)),
          responder_(std::move(responder)) {}

    void start(const nlohmann::json& body) {
        Context& context = *context_;
        auto queue = string_field(body, "queue", "queue must be a string");
        if (!queue || !queue->has_value() || (*queue)->empty()) {
            reply_error(queue ? bad_request("queue is required") : queue.error());
            return;
        }
        auto partition = string_field(body, "partition", "partition must be a string");
        auto timeout =
            integer_field(body, "timeoutMs", 30'000, 1, context.options.pop_timeout_ms_max);
        if (!partition || !timeout) {
            reply_error(!partition ? partition.error() : timeout.error());
            return;
        }
        if (Status named = check_name(**queue, "Queue name", context.options); !named) {
            reply_error(named.error());
            return;
        }
        started_ms_ = context.backend.now_ms();
        timeout_ms_ = *timeout;
        request_id_ = random_uuid(context.random);
        reply_to_ = "reply." + request_id_;
        queues::PushItem item;
        item.queue = std::move(**queue);
        item.partition = partition->value_or(std::string(queues::default_partition_name));
        item.transaction_id = request_id_;
        const auto payload = body.find("payload");
        JsonWriter envelope;
        envelope.begin_object().field("replyTo", reply_to_).field("requestId", request_id_);
        envelope.key("body").raw(payload == body.end() ? "null" : dump_json(*payload));
        envelope.end_object();
        const std::string text = envelope.take();
        if (text.size() > context.options.payload_bytes_max) {
            reply_error(bad_request("payload is larger than " +
                                    std::to_string(context.options.payload_bytes_max) + " bytes"));
            return;
        }
        item.payload.assign(text.begin(), text.end());
        request_ = queues::Push{{std::move(item)}};
        // The reply queue lives a minute past the wait, then deletes itself (and a late reply).
        engine::ConfigureEphemeral make;
        make.configure.queue = reply_to_;
        make.idle_ttl_ms = timeout_ms_ + 60'000;
        submit(std::move(make), [](RequestCall& self, engine::CommandResult& result) {
            if (std::get_if<engine::EphemeralResult>(&result) == nullptr) {
                self.reply_unexpected(result);
                return;
            }
            self.push_request();
        });
    }

private:
    static Error bad_request(std::string message) {
        return Error{Errc::invalid_argument, std::move(message)};
    }

    void push_request() {
        auto self = shared_from_this();
        encrypt_then(context_, tenant_, responder_, std::move(request_), [self](queues::Push push) {
            self->submit(std::move(push), [](RequestCall& call, engine::CommandResult& result) {
                const auto* pushed = std::get_if<queues::PushResult>(&result);
                if (pushed == nullptr || pushed->items.size() != 1) {
                    call.reply_unexpected(result);
                    return;
                }
                if (pushed->items[0].status != queues::PushStatus::queued) {
                    call.reply_error(
                        bad_request("request not queued: " + (pushed->items[0].error.empty()
                                                                  ? std::string("duplicate")
                                                                  : pushed->items[0].error)));
                    return;
                }
                call.wait_for_reply();
            });
        });
    }

    void wait_for_reply() {
        queues::Pop pop;
        pop.queue = reply_to_;
        pop.batch = 1;
        pop.auto_ack = true;
        PopWait wait;
        wait.is_enabled = true;
        wait.timeout_ms =
            std::max<std::int64_t>(1, timeout_ms_ - (context_->backend.now_ms() - started_ms_));
        PopPoll::Answers answers;
        answers.delivered = [request_id = request_id_, reply_to = reply_to_](
                                Context& context, const std::string& tenant,
                                queues::PopResult& popped) {
            const queues::PoppedMessage& message = popped.messages.front();
            auto reply =
                payload_json(message.payload, message.is_encrypted, context.cipher_or_null());
            if (!reply) {
                return error_response(context, reply.error(), tenant);
            }
            JsonWriter out;
            out.begin_object()
                .field("requestId", request_id)
                .field("replyTo", reply_to)
                .key("reply")
                .raw(*reply)
                .end_object();
            return Response::json(200, out.take());
        };
        answers.nothing = [request_id = request_id_, timeout = timeout_ms_](Context& context) {
            return error_response(
                context, 504,
                "no reply to request " + request_id + " within " + std::to_string(timeout) + " ms");
        };
        auto poll = std::make_shared<PopPoll>(context_, tenant_, std::move(pop), wait,
                                              std::move(responder_), std::move(answers));
        poll->start();
    }

    using Next = void (*)(RequestCall&, engine::CommandResult&);
    void submit(engine::CommandBody body, Next next) {
        engine::Command command;
        command.body = std::move(body);
        context_->backend.submit(
            tenant_, std::move(command),
            [self = shared_from_this(), next](Result<engine::CommandResult> result) {
                if (!result) {
                    self->reply_error(result.error());
                    return;
                }
                if (const auto* failed = std::get_if<engine::ErrorResult>(&*result)) {
                    self->responder_.complete(error_result_response(*self->context_, *failed));
                    return;
                }
                next(*self, *result);
            });
    }

    void reply_error(const Error& error) {
        responder_.complete(error_response(*context_, error, tenant_));
    }
    void reply_unexpected(const engine::CommandResult&) {
        responder_.complete(error_response(*context_, 500, "unexpected result type from apply"));
    }

    ContextPtr context_;
    std::string tenant_;
    Responder responder_;
    std::int64_t started_ms_ = 0;
    std::int64_t timeout_ms_ = 0;
    std::string request_id_;
    std::string reply_to_;
    queues::Push request_;
};

void handle_request(Context& context, const ContextPtr& shared, Request& request,
                    Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto body = request_json(context, request);
    if (!body) {
        responder.complete(error_response(context, body.error(), tenant));
        return;
    }
    if (!body->is_object()) {
        responder.complete(error_response(context, 400, "the body must be a JSON object"));
        return;
    }
    context.metrics.pop_requests.fetch_add(1, relaxed);
    std::make_shared<RequestCall>(shared, std::move(tenant), std::move(responder))->start(*body);
}

}  // namespace

void register_pop_routes(http::Router& router, const ContextPtr& context) {
    router.post("/api/v1/request", make_handler(context, handle_request));
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
