// api/src/pop_routes.cpp — the pop routes (docs/http-api.md, pop, and GET /api/v1/pop of a
// namespace/task) and POST /api/v1/request; their waits are long polls (long_poll.hpp): retry
// the pop when woken, 204 (504 for a request) at the deadline, stop on disconnect.
#include "format.hpp"
#include "json.hpp"
#include "long_poll.hpp"
#include "parse.hpp"
#include "queen/queues/queues.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

/// How a pop's long poll answers: `delivered` formats the messages of a pop that got some (on
/// the I/O thread), `nothing` is the answer when it got none by the deadline. Unset: the pop
/// routes' answers (200 with the messages, 204).
struct PopAnswers {
    std::function<Response(Context&, const std::string& tenant, queues::PopResult&)> delivered;
    std::function<Response(Context&)> nothing;
};

/// Pops, and with `wait` long-polls (LongPoll): parks until a change of the queue (or of a
/// queue the namespace/task matches), pops again, answers `nothing` at the deadline.
///
/// A pop that met no leader or a busy one never reached the log, so popping again is safe.
/// One whose leader was replaced before it answered (Errc::timeout) may have been applied and
/// taken a lease: its messages are then delivered again once the lease expires (with autoAck
/// they are consumed), as when a client pops again after that 503; acceptable for the same
/// reason.
void start_pop(const ContextPtr& context, std::string tenant, queues::Pop pop, PopWait wait,
               Responder responder, PopAnswers answers = {}) {
    LongPoll::Spec spec;
    spec.wait_key =
        pop.queue.empty() ? queues::matching_wait_key(pop.namespace_name, pop.task) : pop.queue;
    spec.is_waiting = wait.is_enabled;
    spec.wait_ms = wait.timeout_ms;
    spec.is_counted = true;
    spec.at_deadline = [context, nothing = std::move(answers.nothing)] {
        context->metrics.pop_empty.fetch_add(1, relaxed);
        return nothing ? nothing(*context) : Response::empty(204);
    };
    spec.classify = [context, tenant, delivered = std::move(answers.delivered),
                     empty = spec.at_deadline](engine::CommandResult& result) {
        auto* popped = std::get_if<queues::PopResult>(&result);
        if (popped == nullptr) {
            return Verdict::final([context] { return unexpected_result(*context); });
        }
        if (popped->outcome == queues::PopResult::Outcome::paused) {
            return Verdict::final(empty);  // pop maintenance answers 204 at once
        }
        if (popped->outcome != queues::PopResult::Outcome::delivered || popped->messages.empty()) {
            return Verdict::wait();
        }
        return Verdict::final([context, tenant, delivered, popped = std::move(*popped)]() mutable {
            context->metrics.pop_messages.fetch_add(popped.messages.size(), relaxed);
            if (delivered) {
                return delivered(*context, tenant, popped);
            }
            auto body = format_pop(popped, context->cipher_or_null());
            if (!body) {
                return error_response(*context, body.error(), tenant);
            }
            return Response::json(200, std::move(*body));
        });
    };
    spec.tenant = std::move(tenant);
    spec.command = std::move(pop);
    LongPoll::start(context, std::move(spec), std::move(responder));
}

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
    start_pop(shared, std::move(tenant), std::move(*pop), wait, std::move(responder));
}

/// POST /api/v1/request (docs/request-reply.md): makes an ephemeral reply queue, pushes the
/// request to `queue` with {"replyTo","requestId","body"} as its payload, and waits (a long
/// poll of the reply queue, bounded by timeoutMs) for the first message a worker pushes there.
/// Only the wait rides through a leader change (start_pop); an error of the queue's creation or
/// of the push is the answer (submitted again, the push would send a second request).
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
        if (partition->has_value()) {
            if (Status named = check_name(**partition, "Partition name", context.options); !named) {
                reply_error(named.error());
                return;
            }
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

    /// The reply pop is auto-acked: when the leader of a pop is replaced after applying it
    /// (Errc::timeout, which the wait retries on), the reply left with that pop and the wait
    /// ends 504 as if no reply had come; without the retry it would answer the 503 at once.
    void wait_for_reply() {
        queues::Pop pop;
        pop.queue = reply_to_;
        pop.batch = 1;
        pop.auto_ack = true;
        PopWait wait;
        wait.is_enabled = true;
        wait.timeout_ms =
            std::max<std::int64_t>(1, timeout_ms_ - (context_->backend.now_ms() - started_ms_));
        PopAnswers answers;
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
        start_pop(context_, tenant_, std::move(pop), wait, std::move(responder_),
                  std::move(answers));
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
        responder_.complete(unexpected_result(*context_));
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
