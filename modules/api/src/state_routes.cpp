// api/src/state_routes.cpp — the KV, lock and timer routes (docs/http-api.md, KV, locks, timers):
// writes as one-operation transactions (the write path of POST /api/v1/transaction), lock
// acquire and renew as lock commands, a waiting acquire as a long poll (long_poll.hpp), and
// linearizable reads of the applied state.
#include <algorithm>

#include "admin_common.hpp"
#include "format.hpp"
#include "long_poll.hpp"
#include "parse_state.hpp"
#include "queen/engine/command.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

using Kind = engine::TransactionOp::Kind;

/// A KV listing page stops early (nextAfter set) once its values pass this many bytes, so one
/// answer stays bounded whatever the limit (values are up to 1 MiB each).
constexpr std::size_t kv_page_value_bytes_max = std::size_t{4} << 20;
/// KV keys and timers are read in chunks of this many while a page is built: one chunk at a time
/// is in memory besides the answer (timer payloads are read to show their queue).
constexpr std::uint32_t listing_chunk = 64;

/// Runs `fn(const engine::Engine&, const store::Txn&)` in one read txn of the tenant's state,
/// now (call it once the state is readable: read_handler routes do).
template <class Fn>
auto read_txn(Context& context, std::string_view tenant, Fn&& fn)
    -> decltype(fn(std::declval<const engine::Engine&>(), std::declval<const store::Txn&>())) {
    return read_state(context, tenant, [&](const engine::Engine& engine) {
        return engine.read(
            [&](const queues::Tables&, const store::Txn& txn) { return fn(engine, txn); });
    });
}

/// `status` with a JSON body written by the caller, counted in the metrics when it is a 4xx.
Response counted_json(Context& context, int status, std::string body) {
    if (status >= 400 && status < 500) {
        context.metrics.responses_4xx.fetch_add(1, relaxed);
    }
    return Response::json(status, std::move(body));
}

std::string in_quotes(std::string_view text) {
    return "'" + std::string(text) + "'";
}

std::string iso(TimestampMs at) {
    return format_iso_ms(at.value());
}

void iso_or_null(JsonWriter& out, JsonKey key, TimestampMs at) {
    if (at.value() == 0) {
        out.null_field(key);
    } else {
        out.field(key, iso(at));
    }
}

void next_after_field(JsonWriter& out, std::string_view next_after) {
    if (next_after.empty()) {
        out.null_field("nextAfter");
    } else {
        out.field("nextAfter", next_after);
    }
}

/// Submits `body` and hands its result, when it is an R, to `then` on the request's I/O thread
/// (which completes `responder`, maybe after a read). Backend errors and error results complete
/// `responder` as submit_and_reply does.
template <class R>
void submit_then(const ContextPtr& context, const std::string& tenant, engine::CommandBody body,
                 const Responder& responder, std::function<void(R&)> then) {
    engine::Command command;
    command.body = std::move(body);
    context->backend.submit(
        tenant, std::move(command),
        [context, tenant, responder, then = std::move(then)](Result<engine::CommandResult> result) {
            if (!result) {
                responder.complete(error_response(*context, result.error(), tenant));
                return;
            }
            if (auto* typed = std::get_if<R>(&*result)) {
                responder.dispatch([then, typed = std::move(*typed)]() mutable { then(typed); });
                return;
            }
            if (const auto* failed = std::get_if<engine::ErrorResult>(&*result)) {
                responder.complete(error_result_response(*context, *failed));
                return;
            }
            responder.complete(error_response(*context, 500, "unexpected result type from apply"));
        });
}

/// The answer to a refused one-operation transaction: 409 for a conflict (a version, a lock
/// token, an existing timer), 400 for a limit, 500 for anything else (no KV, lock or timer
/// operation fails that way).
Response refusal(Context& context, const engine::TransactionResult& result) {
    switch (result.failure) {
        case engine::TransactionFailure::conflict:
            return error_response(context, 409, result.error);
        case engine::TransactionFailure::invalid: return error_response(context, 400, result.error);
        case engine::TransactionFailure::none:
        case engine::TransactionFailure::operation: break;
    }
    return error_response(context, 500, "the operation failed: " + result.error);
}

/// The one operation result of a transaction that succeeded.
const engine::TransactionOpResult& only_result(const engine::TransactionResult& result) {
    QUEEN_ASSERT(result.success, "only the results of a committed transaction are read");
    QUEEN_ASSERT(result.results.size() == 1, "a route submits one operation");
    return result.results.front();
}

// ---------------------------------------------------------------- KV

void write_kv_entry(JsonWriter& out, const kv::Entry& entry) {
    out.key("value");
    if (entry.value.empty()) {
        out.null();  // the API stores JSON text; an empty value was not written through it
    } else {
        out.raw(as_chars(entry.value));
    }
    out.field("version", entry.version).field("updatedAt", iso(entry.updated_at));
    iso_or_null(out, "expiresAt", entry.expires_at);
}

std::string etag(std::uint64_t version) {
    return "\"" + std::to_string(version) + "\"";
}

/// 409 {"error", "currentVersion"} for a KV write whose version did not match: the version
/// the key had when the entry was applied (the failing operation's result).
http::Response kv_conflict(Context& context, const engine::TransactionResult& result) {
    const std::uint64_t current =
        result.results.size() > result.failed_op ? result.results[result.failed_op].version : 0;
    JsonWriter out;
    out.begin_object().field("error", result.error).field("currentVersion", current).end_object();
    return counted_json(context, 409, out.take());
}

/// PUT and DELETE: one kv.set or kv.delete.
void submit_kv_write(const ContextPtr& context, const std::string& tenant,
                     engine::Transaction transaction, const Responder& responder) {
    const engine::TransactionOp& op = transaction.ops.front();
    const bool is_set = op.kind == Kind::kv_set;
    std::string bucket = op.kv.bucket;
    std::string key = op.kv.key;
    submit_then<engine::TransactionResult>(
        context, tenant, std::move(transaction), responder,
        [context, responder, is_set, bucket = std::move(bucket),
         key = std::move(key)](engine::TransactionResult& result) {
            if (result.failure == engine::TransactionFailure::conflict) {
                responder.complete(kv_conflict(*context, result));
                return;
            }
            if (!result.success) {
                responder.complete(refusal(*context, result));
                return;
            }
            const engine::TransactionOpResult& done = only_result(result);
            JsonWriter out;
            if (!is_set) {
                out.begin_object().field("deleted", done.existed).end_object();
                responder.complete(Response::json(200, out.take()));
                return;
            }
            out.begin_object()
                .field("bucket", bucket)
                .field("key", key)
                .field("version", done.version)
                .end_object();
            Response response = Response::json(200, out.take());
            response.headers.push_back(http::Header{"ETag", etag(done.version)});
            responder.complete(std::move(response));
        });
}

void handle_kv_put(Context& context, const ContextPtr& shared, Request& request,
                   Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto transaction = parse_kv_put(request, context.options);
    if (!transaction) {
        responder.complete(error_response(context, transaction.error(), tenant));
        return;
    }
    submit_kv_write(shared, tenant, std::move(*transaction), responder);
}

void handle_kv_delete(Context& context, const ContextPtr& shared, Request& request,
                      Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto transaction = parse_kv_delete(request);
    if (!transaction) {
        responder.complete(error_response(context, transaction.error(), tenant));
        return;
    }
    submit_kv_write(shared, tenant, std::move(*transaction), responder);
}

Result<Response> read_kv_key(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const std::string bucket,
              parse_path_name(request, "bucket", "bucket", kv_limits().bucket_bytes_max));
    QUEEN_TRY(const std::string key,
              parse_path_name(request, "key", "key", kv_limits().key_bytes_max));
    const TimestampMs now = wall_now(context);
    QUEEN_TRY(const auto entry,
              read_txn(context, tenant, [&](const engine::Engine& engine, const store::Txn& txn) {
                  return kv::get(engine.kv_tables(), txn, bucket, key, now);
              }));
    if (!entry.has_value()) {
        return error_response(
            context, 404, "key " + in_quotes(key) + " not found in bucket " + in_quotes(bucket));
    }
    JsonWriter out(256 + entry->value.size());
    out.begin_object().field("bucket", bucket).field("key", key);
    write_kv_entry(out, *entry);
    out.end_object();
    Response response = Response::json(200, out.take());
    response.headers.push_back(http::Header{"ETag", etag(entry->version)});
    return response;
}

Result<Response> read_kv_list(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const KvListQuery query, parse_kv_list(request));
    const TimestampMs now = wall_now(context);
    JsonWriter out;
    out.begin_object().field("bucket", query.bucket).key("keys").begin_array();
    QUEEN_TRY(
        const std::string next_after,
        read_txn(context, tenant,
                 [&](const engine::Engine& engine, const store::Txn& txn) -> Result<std::string> {
                     std::string after = query.after;
                     std::uint32_t listed = 0;
                     std::size_t value_bytes = 0;
                     for (;;) {
                         const std::uint32_t chunk = std::min(query.limit - listed, listing_chunk);
                         QUEEN_TRY(const kv::ListPage page,
                                   kv::list(engine.kv_tables(), txn, query.bucket, query.prefix,
                                            after, chunk, now));
                         for (const kv::Entry& entry : page.entries) {
                             out.begin_object().field("key", entry.key);
                             write_kv_entry(out, entry);
                             out.end_object();
                             value_bytes += entry.value.size();
                         }
                         listed += static_cast<std::uint32_t>(page.entries.size());
                         if (page.next_after.empty()) {
                             return std::string();  // nothing with the prefix follows
                         }
                         after = page.next_after;
                         if (listed >= query.limit || value_bytes >= kv_page_value_bytes_max) {
                             return after;
                         }
                     }
                 }));
    out.end_array();
    next_after_field(out, next_after);
    out.end_object();
    return Response::json(200, out.take());
}

Result<Response> read_kv_buckets(Context& context, const std::string& tenant, Request&) {
    QUEEN_TRY(const auto buckets,
              read_txn(context, tenant, [&](const engine::Engine& engine, const store::Txn& txn) {
                  return kv::list_buckets(engine.kv_tables(), txn);
              }));
    JsonWriter out;
    out.begin_object().key("buckets").begin_array();
    for (const kv::BucketInfo& bucket : buckets) {
        out.begin_object().field("bucket", bucket.bucket).field("keys", bucket.keys).end_object();
    }
    out.end_array().end_object();
    return Response::json(200, out.take());
}

// ---------------------------------------------------------------- locks

void write_grant(JsonWriter& out, const locks::Grant& grant) {
    out.begin_object()
        .field("name", grant.name)
        .field("owner", grant.owner)
        .field("token", grant.token.value())
        .field("acquiredAt", iso(grant.acquired_at))
        .field("expiresAt", iso(grant.expires_at))
        .end_object();
}

/// The answer to an acquire or renew: 200 the grant; held 409 {"error","owner","expiresAt"};
/// stale token 409; invalid 400.
Response lock_answer(Context& context, const engine::LockResult& result) {
    const locks::Grant& grant = result.grant;
    switch (result.status) {
        case locks::Status::ok: {
            JsonWriter out;
            write_grant(out, grant);
            return Response::json(200, out.take());
        }
        case locks::Status::held: {
            JsonWriter out;
            out.begin_object()
                .field("error", "lock " + in_quotes(grant.name) +
                                    " is held by another owner until " + iso(grant.expires_at))
                .field("owner", grant.owner)
                .field("expiresAt", iso(grant.expires_at))
                .end_object();
            return counted_json(context, 409, out.take());
        }
        case locks::Status::stale_token:
            return error_response(context, 409,
                                  "lock " + in_quotes(grant.name) + ": " +
                                      (result.message.empty() ? "the token is not the current grant"
                                                              : result.message));
        case locks::Status::invalid: break;
    }
    return error_response(context, 400, result.message);
}

/// Acquires, and with waitMs long-polls (LongPoll): while the lock is held by another owner,
/// parks until a release or an expiry of the lock wakes it, acquires again, and answers the
/// holder's 409 if waitMs passes first. Acquiring again after a leader change is safe even when
/// the first acquire was applied unseen: the owner's own grant is renewed, not granted twice.
void start_acquire(const ContextPtr& context, std::string tenant, LockAcquire acquire,
                   Responder responder) {
    LongPoll::Spec spec;
    spec.tenant = std::move(tenant);
    spec.wait_key = engine::lock_wait_key(acquire.command.name);
    spec.is_waiting = acquire.wait_ms > 0;
    spec.wait_ms = acquire.wait_ms;
    spec.classify = [context](engine::CommandResult& result) {
        const auto* acquired = std::get_if<engine::LockResult>(&result);
        if (acquired == nullptr) {
            return Verdict::final([context] { return unexpected_result(*context); });
        }
        auto answer = [context, outcome = *acquired] { return lock_answer(*context, outcome); };
        // Held: the last holder seen is the answer if the wait ends first.
        return acquired->status == locks::Status::held ? Verdict::wait(std::move(answer))
                                                       : Verdict::final(std::move(answer));
    };
    spec.command = std::move(acquire.command);
    LongPoll::start(context, std::move(spec), std::move(responder));
}

/// The lock name of the route and the body as a JSON object, or answers 400.
std::optional<std::pair<std::string, nlohmann::json>> lock_request(Context& context,
                                                                   Request& request,
                                                                   const Responder& responder,
                                                                   const std::string& tenant) {
    auto name = parse_path_name(request, "name", "lock name", lock_limits().name_bytes_max);
    if (!name) {
        responder.complete(error_response(context, name.error(), tenant));
        return std::nullopt;
    }
    auto body = json_or_reply(context, request, responder, tenant);
    if (!body) {
        return std::nullopt;
    }
    return std::make_pair(std::move(*name), std::move(*body));
}

void handle_lock_acquire(Context& context, const ContextPtr& shared, Request& request,
                         Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto parts = lock_request(context, request, responder, tenant);
    if (!parts) {
        return;
    }
    auto acquire = parse_lock_acquire(parts->first, parts->second, context.options);
    if (!acquire) {
        responder.complete(error_response(context, acquire.error(), tenant));
        return;
    }
    start_acquire(shared, std::move(tenant), std::move(*acquire), std::move(responder));
}

void handle_lock_renew(Context& context, const ContextPtr& shared, Request& request,
                       Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto parts = lock_request(context, request, responder, tenant);
    if (!parts) {
        return;
    }
    auto renew = parse_lock_renew(parts->first, parts->second);
    if (!renew) {
        responder.complete(error_response(context, renew.error(), tenant));
        return;
    }
    submit_and_reply<engine::LockResult>(
        shared, tenant, std::move(*renew), std::move(responder),
        [&context](engine::LockResult& result) { return lock_answer(context, result); });
}

void handle_lock_release(Context& context, const ContextPtr& shared, Request& request,
                         Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto parts = lock_request(context, request, responder, tenant);
    if (!parts) {
        return;
    }
    auto release = parse_lock_release(parts->first, parts->second);
    if (!release) {
        responder.complete(error_response(context, release.error(), tenant));
        return;
    }
    submit_and_reply<engine::TransactionResult>(
        shared, tenant, std::move(*release), std::move(responder),
        [&context](engine::TransactionResult& result) {
            if (!result.success) {
                return refusal(context, result);
            }
            return Response::json(200, R"({"released":true})");
        });
}

Result<Response> read_lock(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const std::string name,
              parse_path_name(request, "name", "lock name", lock_limits().name_bytes_max));
    const TimestampMs now = wall_now(context);
    QUEEN_TRY(const auto grant,
              read_txn(context, tenant, [&](const engine::Engine& engine, const store::Txn& txn) {
                  return locks::get(engine.lock_tables(), txn, name, now);
              }));
    if (!grant.has_value()) {
        return error_response(context, 404, "lock " + in_quotes(name) + " is not held");
    }
    JsonWriter out;
    write_grant(out, *grant);
    return Response::json(200, out.take());
}

Result<Response> read_lock_list(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const ListQuery query, parse_list_query(request, lock_limits().name_bytes_max,
                                                      lock_limits().list_limit_max));
    const TimestampMs now = wall_now(context);
    // One more than the page: whether another grant follows.
    QUEEN_TRY(auto grants,
              read_txn(context, tenant, [&](const engine::Engine& engine, const store::Txn& txn) {
                  return locks::list(engine.lock_tables(), txn, query.after, query.limit + 1, now);
              }));
    std::string next_after;
    if (grants.size() > query.limit) {
        grants.resize(query.limit);
        next_after = grants.back().name;
    }
    JsonWriter out;
    out.begin_object().key("locks").begin_array();
    for (const locks::Grant& grant : grants) {
        write_grant(out, grant);
    }
    out.end_array();
    next_after_field(out, next_after);
    out.end_object();
    return Response::json(200, out.take());
}

// ---------------------------------------------------------------- timers

/// Writes a timer with the message it delivers (engine::decode_timer_message), and its payload
/// (decrypted like a pop's) when `cipher_for_payload` is given. Errors: Errc::corruption (the
/// stored message does not decode), those of payload_json.
Status write_timer(JsonWriter& out, const timers::Timer& timer, bool with_payload,
                   const PayloadCipher* cipher) {
    auto item = engine::decode_timer_message(timer.payload);
    if (!item) {
        return Error{Errc::corruption,
                     "timer " + in_quotes(timer.id) +
                         ": its message does not decode: " + item.error().message()};
    }
    out.begin_object()
        .field("id", timer.id)
        .field("dueAt", iso(timer.due_at))
        .field("intervalMs", timer.interval_ms);
    iso_or_null(out, "endAt", timer.end_at);
    out.field("fired", timer.fired)
        .field("createdAt", iso(timer.created_at))
        .field("queue", item->queue)
        .field("partition", item->partition)
        .field_or_null("transactionId", item->transaction_id)
        .field_or_null("traceId", item->trace_id);
    if (with_payload) {
        QUEEN_TRY(const std::string payload,
                  payload_json(item->payload, item->is_encrypted, cipher));
        out.key("payload").raw(payload.empty() ? std::string_view("null") : payload);
    }
    out.end_object();
    return {};
}

void handle_timer_set(Context& context, const ContextPtr& shared, Request& request,
                      Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto body = json_or_reply(context, request, responder, tenant);
    if (!body) {
        return;
    }
    auto transaction = parse_timer_set(*body, context.options);
    if (!transaction) {
        responder.complete(error_response(context, transaction.error(), tenant));
        return;
    }
    // The message is stored as it will be delivered: sealed when its queue is encrypted.
    encrypt_then(shared, tenant, responder, std::move(*transaction),
                 [&context, shared, tenant, responder](engine::Transaction sealed) mutable {
                     submit_and_reply<engine::TransactionResult>(
                         shared, tenant, std::move(sealed), std::move(responder),
                         [&context](engine::TransactionResult& result) {
                             if (!result.success) {
                                 return refusal(context, result);
                             }
                             const engine::TransactionOpResult& set = only_result(result);
                             JsonWriter out;
                             out.begin_object()
                                 .field("id", set.timer_id)
                                 .field("dueAt", iso(set.due_at))
                                 .field("replaced", set.existed)
                                 .end_object();
                             return Response::json(201, out.take());
                         });
                 });
}

void handle_timer_cancel(Context& context, const ContextPtr& shared, Request& request,
                         Responder responder) {
    std::string tenant;
    if (!resolve_tenant(context, request, responder, tenant)) {
        return;
    }
    auto transaction = parse_timer_cancel(request, context.options);
    if (!transaction) {
        responder.complete(error_response(context, transaction.error(), tenant));
        return;
    }
    submit_and_reply<engine::TransactionResult>(
        shared, tenant, std::move(*transaction), std::move(responder),
        [&context](engine::TransactionResult& result) {
            if (!result.success) {
                return refusal(context, result);
            }
            JsonWriter out;
            out.begin_object().field("cancelled", only_result(result).existed).end_object();
            return Response::json(200, out.take());
        });
}

Result<Response> read_timer(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const std::string id,
              parse_path_name(request, "id", "timer id", timer_limits().id_bytes_max));
    QUEEN_TRY(const auto timer,
              read_txn(context, tenant, [&](const engine::Engine& engine, const store::Txn& txn) {
                  return timers::get(engine.timer_tables(), txn, id);
              }));
    if (!timer.has_value()) {
        return error_response(context, 404, "timer " + in_quotes(id) + " not found");
    }
    JsonWriter out(256 + timer->payload.size());
    QUEEN_TRY(write_timer(out, *timer, true, context.cipher_or_null()));
    return Response::json(200, out.take());
}

Result<Response> read_timer_list(Context& context, const std::string& tenant, Request& request) {
    QUEEN_TRY(const ListQuery query, parse_list_query(request, timer_limits().id_bytes_max,
                                                      timer_limits().list_limit_max));
    JsonWriter out;
    out.begin_object().key("timers").begin_array();
    QUEEN_TRY(
        const std::string next_after,
        read_txn(context, tenant,
                 [&](const engine::Engine& engine, const store::Txn& txn) -> Result<std::string> {
                     // Chunks with payloads (the message names the queue), each written
                     // and dropped before the next is read.
                     std::string after = query.after;
                     std::uint32_t listed = 0;
                     while (listed < query.limit) {
                         const std::uint32_t chunk = std::min(query.limit - listed, listing_chunk);
                         QUEEN_TRY(const auto timers,
                                   timers::list(engine.timer_tables(), txn, after, chunk, true));
                         for (const timers::Timer& timer : timers) {
                             QUEEN_TRY(write_timer(out, timer, false, nullptr));
                         }
                         listed += static_cast<std::uint32_t>(timers.size());
                         if (timers.size() < chunk) {
                             return std::string();  // the last timer was listed
                         }
                         after = timers.back().id;
                     }
                     QUEEN_TRY(const auto more,
                               timers::list(engine.timer_tables(), txn, after, 1, false));
                     return more.empty() ? std::string() : after;
                 }));
    out.end_array();
    next_after_field(out, next_after);
    out.end_object();
    return Response::json(200, out.take());
}

}  // namespace

void register_state_routes(http::Router& router, const ContextPtr& context) {
    router.get("/api/v1/kv", read_handler(context, read_kv_buckets));
    router.get("/api/v1/kv/:bucket", read_handler(context, read_kv_list));
    router.get("/api/v1/kv/:bucket/:key", read_handler(context, read_kv_key));
    router.put("/api/v1/kv/:bucket/:key", make_handler(context, handle_kv_put));
    router.del("/api/v1/kv/:bucket/:key", make_handler(context, handle_kv_delete));

    router.get("/api/v1/locks", read_handler(context, read_lock_list));
    router.get("/api/v1/locks/:name", read_handler(context, read_lock));
    router.post("/api/v1/locks/:name/acquire", make_handler(context, handle_lock_acquire));
    router.post("/api/v1/locks/:name/renew", make_handler(context, handle_lock_renew));
    router.post("/api/v1/locks/:name/release", make_handler(context, handle_lock_release));

    router.get("/api/v1/timers", read_handler(context, read_timer_list));
    router.get("/api/v1/timers/:id", read_handler(context, read_timer));
    router.post("/api/v1/timers", make_handler(context, handle_timer_set));
    router.del("/api/v1/timers/:id", make_handler(context, handle_timer_cancel));
}

}  // namespace queen::api::detail
