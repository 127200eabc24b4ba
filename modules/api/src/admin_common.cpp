// api/src/admin_common.cpp — helpers shared by the admin route files (docs/http-api.md, admin).
#include "admin_common.hpp"

#include "parse.hpp"
#include "routes.hpp"

namespace queen::api::detail {

using http::Request;
using http::Responder;

// Runs `fn` once the tenant's state holds every entry answered so far (when_readable), on the
// request's I/O thread: at once when nothing waits, else after the LMDB commit, without any
// thread waiting for it.
http::Handler read_handler(const ContextPtr& context, ReadFn fn) {
    return make_handler(
        context, [fn = std::make_shared<const ReadFn>(std::move(fn))](
                     Context& c, const ContextPtr& shared, Request& request, Responder responder) {
            std::string tenant;
            if (!resolve_tenant(c, request, responder, tenant)) {
                return;
            }
            auto held = std::make_shared<Request>(std::move(request));
            when_readable(shared, tenant, responder, [shared, fn, held, tenant, responder] {
                auto response = (*fn)(*shared, tenant, *held);
                if (!response) {
                    responder.complete(error_response(*shared, response.error(), tenant));
                    return;
                }
                responder.complete(std::move(*response));
            });
        });
}

CatalogueSubject whole_catalogue() {
    return {"exists already", "not found", ""};
}

http::Response catalogue_error(Context& context, const Error& error,
                               const CatalogueSubject& subject) {
    const bool is_news =
        !error.context.empty() &&
        (subject.mention.empty() || error.context.find(subject.mention) == std::string::npos);
    const std::string detail = is_news ? ": " + error.context : std::string();
    if (error.is(Errc::already_exists)) {
        return error_response(context, 409, subject.exists + detail);
    }
    if (error.is(Errc::not_found)) {
        return error_response(context, 404, subject.unknown + detail);
    }
    if (error.is(Errc::unsupported)) {
        return error_response(context, 501, error.context);
    }
    return error_response(context, error, catalogue_tenant);
}

Error bad(std::string message) {
    return Error{Errc::invalid_argument, std::move(message)};
}

Result<Page> page_of(const Context& context, const Request& request, std::uint64_t limit_default) {
    Page page;
    QUEEN_TRY(const std::int64_t limit,
              query_integer(request, "limit", static_cast<std::int64_t>(limit_default), 0,
                            context.options.listing_limit_max));
    QUEEN_TRY(const std::int64_t offset, query_integer(request, "offset", 0, 0, INT64_MAX / 2));
    page.limit = static_cast<std::uint64_t>(limit);
    page.offset = static_cast<std::uint64_t>(offset);
    return page;
}

void write_pagination(JsonWriter& out, const Page& page) {
    out.key("pagination")
        .begin_object()
        .field("limit", page.limit)
        .field("offset", page.offset)
        .end_object();
}

std::string iso_or_empty(TimestampMs at) {
    return at.value() == 0 ? std::string() : format_iso_ms(at.value());
}

TimestampMs wall_now(const Context& context) {
    return TimestampMs{context.backend.wall_ms()};
}

std::string param(const Request& request, std::string_view name) {
    return std::string(request.param(name).value_or(""));
}

void write_queue_summary(JsonWriter& out, const queues::QueueSummary& q) {
    out.begin_object()
        .field("id", queues::format_queue_id(q.id))
        .field("name", q.name)
        .field("namespace", q.namespace_name)
        .field("task", q.task)
        .field("priority", q.options.priority)
        .field("createdAt", format_iso_ms(q.created_at.value()))
        .field("partitions", q.partitions)
        .key("messages")
        .begin_object()
        .field("total", q.messages)
        .field("pending", q.pending)
        .field("processing", q.processing)
        .field("deadLetter", q.dead_letter)
        .end_object()
        .end_object();
}

Result<std::vector<queues::QueueSummary>> read_queues(Context& context, const std::string& tenant) {
    const TimestampMs now = wall_now(context);
    return query(context, tenant, [now](const queues::Tables& tables, const store::Txn& txn) {
        return queues::list_queues(tables, txn, now);
    });
}

Result<std::optional<queues::QueueDetail>> read_queue(Context& context, const std::string& tenant,
                                                      const std::string& name) {
    const TimestampMs now = wall_now(context);
    return query(context, tenant, [&](const queues::Tables& tables, const store::Txn& txn) {
        return queues::get_queue(tables, txn, name, now);
    });
}

void write_totals(JsonWriter& out, const Totals& t) {
    out.begin_object()
        .field("total", t.total)
        .field("pending", t.pending)
        .field("processing", t.processing)
        .field("completed", t.completed)
        .field("failed", t.failed)
        .field("deadLetter", t.dead_letter)
        .end_object();
}

Totals partition_totals(const queues::PartitionSummary& p) {
    Totals t;
    t.total = p.messages;
    t.pending = p.pending;
    t.processing = p.processing;
    t.completed = p.completed;
    return t;
}

Result<std::vector<queues::GroupCursorInfo>> read_cursors(Context& context,
                                                          const std::string& tenant,
                                                          const std::string& group) {
    const TimestampMs now = wall_now(context);
    return query(context, tenant, [&](const queues::Tables& tables, const store::Txn& txn) {
        return queues::list_group_cursors(tables, txn, group, now);
    });
}

std::int64_t time_lag_seconds(const queues::GroupCursorInfo& c, TimestampMs now) {
    if (c.offset_lag == 0 || c.oldest_unconsumed_at.value() == 0) {
        return 0;
    }
    const std::int64_t lag = (now.value() - c.oldest_unconsumed_at.value()) / 1000;
    return lag < 0 ? 0 : lag;
}

std::string message_status(const queues::MessageDetail& m, const std::string& group) {
    if (m.is_dead_letter) {
        return "dead_letter";
    }
    for (const queues::GroupCursorInfo& c : m.groups) {
        if (c.group != group) {
            continue;
        }
        if (c.consumed >= m.id.sequence) {
            return "completed";
        }
        return c.is_lease_active ? "processing" : "pending";
    }
    return "pending";
}

std::optional<nlohmann::json> json_or_reply(Context& context, const Request& request,
                                            const Responder& responder, const std::string& tenant) {
    auto body = request_json(context, request);
    if (!body) {
        responder.complete(error_response(context, body.error(), tenant));
        return std::nullopt;
    }
    if (!body->is_object()) {
        responder.complete(error_response(context, 400, "body must be a JSON object"));
        return std::nullopt;
    }
    return std::move(*body);
}

}  // namespace queen::api::detail
