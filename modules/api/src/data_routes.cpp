// api/src/data_routes.cpp — the write endpoints of docs/http-api.md, data plane (everything but
// pop).
#include "format.hpp"
#include "parse.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

// Parses the body or answers; returns nullopt when it answered.
std::optional<nlohmann::json> body_or_reply(Context& context, const Request& request,
                                            const Responder& responder, const std::string& tenant) {
    auto body = request_json(context, request);
    if (!body) {
        responder.complete(error_response(context, body.error(), tenant));
        return std::nullopt;
    }
    return std::move(*body);
}

// A hot body (push, ack, ack batch, transaction): the size limit, then `parse` over the raw text
// (parse_fast.cpp), which gives the client-facing error of a bad body itself.
template <class Parse>
auto parse_hot(const Context& context, const Request& request, Parse&& parse)
    -> decltype(parse(std::string_view{})) {
    if (Status size = check_body_size(context, request); !size) {
        return std::move(size).error();
    }
    return parse(std::string_view{request.body});
}

template <class T>
bool parsed_or_reply(Context& context, const Result<T>& parsed, const Responder& responder,
                     const std::string& tenant) {
    if (!parsed) {
        responder.complete(error_response(context, parsed.error(), tenant));
        return false;
    }
    return true;
}

// Acks answer in input order, so `statuses[i]` is the status of result item i.
void count_acks(Metrics& metrics, const std::vector<queues::AckStatus>& statuses,
                const queues::AckResult& result, std::int64_t now_ms) {
    std::uint64_t processed = 0;
    for (std::size_t i = 0; i < result.items.size(); ++i) {
        const queues::AckItemResult& item = result.items[i];
        if (!item.success) {
            metrics.ack_rejected.fetch_add(1, relaxed);
            continue;
        }
        metrics.ack_messages.fetch_add(1, relaxed);
        if (item.dlq) {
            metrics.dlq_messages.fetch_add(1, relaxed);
        }
        const bool is_completed =
            i < statuses.size() && statuses[i] == queues::AckStatus::completed;
        if (item.dlq || is_completed) {
            ++processed;
        }
    }
    metrics.processed.add(now_ms, processed);
}

void handle_configure(Context& context, const ContextPtr& shared, Request& request,
                      Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto body = body_or_reply(context, request, responder, tenant);
    if (!body) {
        return;
    }
    auto command = parse_configure(*body, context.options);
    if (!parsed_or_reply(context, command, responder, tenant)) {
        return;
    }
    if (command->options.is_encryption_enabled && !context.cipher.has_value()) {
        // Accepted (the flag is part of the queue), but every push to it will fail until a key
        // is configured: storing such payloads in clear would silently break the promise.
        QUEEN_LOG(context.logger, Level::warn, "api.encryption_without_key",
                  "tenant=" << tenant << " queue=" << command->queue);
    }
    invalidate_queue_cache(context, tenant, command->queue);
    // An ephemeral queue (docs/request-reply.md): deleted once idle for idleTtlMs.
    auto ephemeral = boolean_field(*body, "ephemeral", false);
    auto idle_ttl = integer_field(*body, "idleTtlMs", 60'000, 1, engine::ephemeral_idle_ttl_ms_max);
    if (!ephemeral || !idle_ttl) {
        responder.complete(
            error_response(context, !ephemeral ? ephemeral.error() : idle_ttl.error(), tenant));
        return;
    }
    if (*ephemeral) {
        submit_and_reply<engine::EphemeralResult>(
            shared, tenant, engine::ConfigureEphemeral{std::move(*command), *idle_ttl},
            std::move(responder),
            [&context, tenant, ttl = *idle_ttl](engine::EphemeralResult& result) {
                invalidate_queue_cache(context, tenant, result.configure.queue);
                std::string answer = format_configure(result.configure);
                // The configure answer plus "ephemeral": {"idleTtlMs", "expiresAt"}.
                JsonWriter extra;
                extra.begin_object()
                    .field("idleTtlMs", ttl)
                    .field("expiresAt", format_iso_ms(result.expires_at.value()))
                    .end_object();
                answer.pop_back();  // the closing brace
                answer += ",\"ephemeral\":" + extra.take() + "}";
                return Response::json(200, std::move(answer));
            });
        return;
    }
    submit_and_reply<queues::ConfigureResult>(
        shared, tenant, std::move(*command), std::move(responder),
        [&context, tenant](queues::ConfigureResult& result) {
            // Again after apply: a push between the first drop and the apply may have cached
            // the old flag.
            invalidate_queue_cache(context, tenant, result.queue);
            return Response::json(200, format_configure(result));
        });
}

void handle_push(Context& context, const ContextPtr& shared, Request& request,
                 Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto parsed = parse_hot(context, request, [&](std::string_view body) {
        return parse_push(body, context.options, context.random, context.backend.wall_ms());
    });
    if (!parsed_or_reply(context, parsed, responder, tenant)) {
        return;
    }
    context.metrics.push_requests.fetch_add(1, relaxed);
    if (!request.auth_subject.empty()) {
        // The token's subject, as the old server stamped the JWT `sub` (the body cannot set it).
        for (queues::PushItem& item : parsed->push.items) {
            item.producer_sub = request.auth_subject;
        }
    }
    if (parsed->push.items.empty()) {
        responder.complete(Response::json(201, "[]"));
        return;
    }
    encrypt_then(
        shared, tenant, responder, std::move(parsed->push),
        [&context, shared, tenant, responder,
         client_ids = std::move(parsed->has_client_transaction_id)](queues::Push push) mutable {
            submit_and_reply<queues::PushResult>(
                shared, tenant, std::move(push), std::move(responder),
                [&context, client_ids = std::move(client_ids)](queues::PushResult& result) {
                    count_pushed(context, result.items);
                    return Response::json(201, format_push(result, client_ids));
                });
        });
}

void submit_ack(Context& context, const ContextPtr& shared, const std::string& tenant,
                queues::Ack command, Responder responder) {
    context.metrics.ack_requests.fetch_add(1, relaxed);
    if (command.items.empty()) {
        // The old server never answered an empty batch; answering [] is the documented fix.
        responder.complete(Response::json(200, "[]"));
        return;
    }
    std::vector<queues::AckStatus> statuses;
    statuses.reserve(command.items.size());
    for (const queues::AckItem& item : command.items) {
        statuses.push_back(item.status);
        if (item.status == queues::AckStatus::completed) {
            context.metrics.ack_completed.fetch_add(1, relaxed);
        } else if (item.status == queues::AckStatus::failed) {
            context.metrics.ack_failed.fetch_add(1, relaxed);
        }
    }
    submit_and_reply<queues::AckResult>(
        shared, tenant, std::move(command), std::move(responder),
        [&context, statuses = std::move(statuses)](queues::AckResult& result) {
            count_acks(context.metrics, statuses, result, context.backend.wall_ms());
            return Response::json(200, format_ack(result));
        });
}

void handle_ack(Context& context, const ContextPtr& shared, Request& request, Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto command = parse_hot(
        context, request, [&](std::string_view body) { return parse_ack(body, context.options); });
    if (!parsed_or_reply(context, command, responder, tenant)) {
        return;
    }
    submit_ack(context, shared, tenant, std::move(*command), std::move(responder));
}

void handle_ack_batch(Context& context, const ContextPtr& shared, Request& request,
                      Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto command = parse_hot(context, request, [&](std::string_view body) {
        return parse_ack_batch(body, context.options);
    });
    if (!parsed_or_reply(context, command, responder, tenant)) {
        return;
    }
    submit_ack(context, shared, tenant, std::move(*command), std::move(responder));
}

void handle_transaction(Context& context, const ContextPtr& shared, Request& request,
                        Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto command = parse_hot(context, request, [&](std::string_view body) {
        return parse_transaction(body, context.options, context.random, context.backend.wall_ms());
    });
    if (!parsed_or_reply(context, command, responder, tenant)) {
        return;
    }
    encrypt_then(shared, tenant, responder, std::move(*command),
                 [&context, shared, tenant, responder](engine::Transaction transaction) mutable {
                     context.metrics.transactions.fetch_add(1, relaxed);
                     submit_and_reply<engine::TransactionResult>(
                         shared, tenant, std::move(transaction), std::move(responder),
                         [&context, tenant,
                          uuid = random_uuid(context.random)](engine::TransactionResult& result) {
                             if (result.success) {
                                 std::uint64_t pushed = 0;
                                 std::uint64_t acked = 0;
                                 for (const engine::TransactionOpResult& op : result.results) {
                                     if (op.kind == engine::TransactionOp::Kind::push) {
                                         pushed += op.timer_id.empty() ? 1 : 0;  // delayed: not yet
                                     } else if (op.kind == engine::TransactionOp::Kind::ack) {
                                         ++acked;
                                         if (op.dlq) {
                                             context.metrics.dlq_messages.fetch_add(1, relaxed);
                                         }
                                     }
                                 }
                                 const std::int64_t now = context.backend.wall_ms();
                                 context.metrics.push_messages.fetch_add(pushed, relaxed);
                                 context.metrics.ack_messages.fetch_add(acked, relaxed);
                                 context.metrics.ingested.add(now, pushed);
                                 context.metrics.processed.add(now, acked);
                             } else {
                                 context.metrics.transactions_failed.fetch_add(1, relaxed);
                             }
                             std::string next;
                             if (result.next.has_value()) {
                                 context.metrics.pop_messages.fetch_add(
                                     result.next->messages.size(), relaxed);
                                 auto popped = format_pop(*result.next, context.cipher_or_null());
                                 if (!popped) {
                                     return error_response(context, popped.error(), tenant);
                                 }
                                 next = std::move(*popped);
                             }
                             return Response::json(transaction_status(result),
                                                   format_transaction(result, uuid, next));
                         });
                 });
}

void handle_extend_lease(Context& context, const ContextPtr& shared, Request& request,
                         Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    // The official Python client renews with no body at all: that means {} (default seconds).
    std::optional<nlohmann::json> body = nlohmann::json::object();
    if (request.body.find_first_not_of(" \t\r\n") != std::string::npos) {
        body = body_or_reply(context, request, responder, tenant);
        if (!body) {
            return;
        }
    }
    const std::string lease_text(request.param("leaseId").value_or(""));
    auto command = parse_extend_lease(lease_text, *body, context.options);
    if (!parsed_or_reply(context, command, responder, tenant)) {
        return;
    }
    context.metrics.lease_extends.fetch_add(1, relaxed);
    submit_and_reply<queues::ExtendLeaseResult>(
        shared, tenant, std::move(*command), std::move(responder),
        [lease_text](queues::ExtendLeaseResult& result) {
            return Response::json(200, format_extend_lease(result, lease_text));
        });
}

void handle_add_trace(Context& context, const ContextPtr& shared, Request& request,
                      Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto body = body_or_reply(context, request, responder, tenant);
    if (!body) {
        return;
    }
    auto command = parse_trace(*body, context.options);
    if (!parsed_or_reply(context, command, responder, tenant)) {
        return;
    }
    submit_and_reply<queues::AddTraceResult>(
        shared, tenant, std::move(*command), std::move(responder),
        [&context](queues::AddTraceResult& result) {
            JsonWriter out;
            if (!result.found) {
                context.metrics.responses_4xx.fetch_add(1, relaxed);
                out.begin_object()
                    .field("success", false)
                    .field("error", "Message not found")
                    .end_object();
                return Response::json(404, out.take());
            }
            out.begin_object()
                .field("success", true)
                .field("traceId",
                       queues::format_uuid(queues::UuidKind::trace, 0, result.trace_id.value()))
                .end_object();
            return Response::json(201, out.take());
        });
}

}  // namespace

void register_data_routes(http::Router& router, const ContextPtr& context) {
    router.post("/api/v1/configure", make_handler(context, handle_configure));
    router.post("/api/v1/push", make_handler(context, handle_push));
    router.post("/api/v1/ack", make_handler(context, handle_ack));
    router.post("/api/v1/ack/batch", make_handler(context, handle_ack_batch));
    router.post("/api/v1/transaction", make_handler(context, handle_transaction));
    router.post("/api/v1/lease/:leaseId/extend", make_handler(context, handle_extend_lease));
    router.post("/api/v1/traces", make_handler(context, handle_add_trace));
}

}  // namespace queen::api::detail
