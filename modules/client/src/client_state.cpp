// client/src/client_state.cpp — Client's calls of the KV, lock and timer routes and of request/
// reply. Answers are read with the core scanner, so stored values and payloads come back byte for
// byte; a 409 becomes Errc::conflict with the server's details.
#include <utility>

#include "protocol_util.hpp"
#include "queen/client/client.hpp"
#include "queen/core/json_scan.hpp"
#include "queen/core/json_writer.hpp"

namespace queen::client {

using detail::append_query;
using detail::describe;
using detail::scan_body;
using detail::shape_error;
using json::for_each_element;
using json::for_each_member;
using json::is_valid_json;
using json::raw_to_bool;
using json::raw_to_integer;
using json::raw_to_text;

namespace {

// The error of a state call: a 409 is Errc::conflict, its context completed with what the
// answer says about the conflict (the current version; the owner and expiry of a held lock).
queen::Status with_conflict(queen::Status sent, const HttpResponse& response) {
    if (sent || http_status_of(sent.error()) != 409) {
        return sent;
    }
    std::string context = std::move(sent).error().context;
    std::string owner;
    std::string expires_at;
    std::string current_version;
    std::string_view object;
    if (json::scan_json(response.body, object)) {
        for_each_member(object, [&](std::string_view key, std::string_view raw) {
            if (key == "owner") {
                owner = raw_to_text(raw);
            } else if (key == "expiresAt") {
                expires_at = raw_to_text(raw);
            } else if (key == "currentVersion") {
                current_version = raw_to_text(raw);
            }
            return true;
        });
    }
    if (!current_version.empty()) {
        context += " (current version " + current_version + ")";
    }
    if (!owner.empty()) {
        context += " (held by " + owner + (expires_at.empty() ? "" : " until " + expires_at) + ")";
    }
    return queen::Error{Errc::conflict, std::move(context)};
}

// The raw JSON object of an answer. Errors: Errc::bad_response.
queen::Result<std::string_view> object_body(const HttpRequest& http, const HttpResponse& response) {
    QUEEN_TRY(auto value, scan_body(http, response.body));
    if (value.front() != '{') {
        return shape_error(http, "expected an object");
    }
    return value;
}

std::uint64_t unsigned_of(std::string_view raw) {
    const std::int64_t value = raw_to_integer(raw);
    return value > 0 ? static_cast<std::uint64_t>(value) : 0;
}

// One key of GET /api/v1/kv/:bucket/:key or of a listing (an object, or a bare key string).
bool read_kv_entry(std::string_view raw, KvEntry& entry) {
    if (!raw.empty() && raw.front() == '"') {
        entry.key = raw_to_text(raw);
        return true;
    }
    return for_each_member(raw, [&](std::string_view key, std::string_view value) {
        if (key == "bucket") {
            entry.bucket = raw_to_text(value);
        } else if (key == "key") {
            entry.key = raw_to_text(value);
        } else if (key == "value") {
            entry.value_json = value;
        } else if (key == "version") {
            entry.version = unsigned_of(value);
        } else if (key == "updatedAt") {
            entry.updated_at = raw_to_text(value);
        } else if (key == "expiresAt") {
            entry.expires_at = raw_to_text(value);
        }
        return true;
    });
}

bool read_lock_grant(std::string_view raw, LockGrant& grant) {
    return for_each_member(raw, [&](std::string_view key, std::string_view value) {
        if (key == "name") {
            grant.name = raw_to_text(value);
        } else if (key == "owner") {
            grant.owner = raw_to_text(value);
        } else if (key == "token") {
            grant.token = unsigned_of(value);
        } else if (key == "acquiredAt") {
            grant.acquired_at = raw_to_text(value);
        } else if (key == "expiresAt") {
            grant.expires_at = raw_to_text(value);
        }
        return true;
    });
}

bool read_timer_info(std::string_view raw, TimerInfo& timer) {
    return for_each_member(raw, [&](std::string_view key, std::string_view value) {
        if (key == "id") {
            timer.id = raw_to_text(value);
        } else if (key == "dueAt") {
            timer.due_at = raw_to_text(value);
        } else if (key == "intervalMs") {
            timer.interval_ms = raw_to_integer(value);
        } else if (key == "endAt") {
            timer.end_at = raw_to_text(value);
        } else if (key == "fired") {
            timer.fired = raw_to_integer(value);
        } else if (key == "createdAt") {
            timer.created_at = raw_to_text(value);
        } else if (key == "queue") {
            timer.queue = raw_to_text(value);
        } else if (key == "partition") {
            timer.partition = raw_to_text(value);
        } else if (key == "transactionId") {
            timer.transaction_id = raw_to_text(value);
        } else if (key == "traceId") {
            timer.trace_id = raw_to_text(value);
        } else if (key == "payload") {
            timer.payload_json = value;
        }
        return true;
    });
}

// The array member `name` of a listing answer (each element read by `read_one` into a new T)
// and its "nextAfter" (null: "").
template <class T, class Read>
queen::Status read_page(const HttpRequest& http, std::string_view object, std::string_view name,
                        std::vector<T>& out, std::string& next_after, Read read_one) {
    bool has_array = false;
    bool is_ok = true;
    const bool is_object = for_each_member(object, [&](std::string_view key, std::string_view raw) {
        if (key == name) {
            has_array = !raw.empty() && raw.front() == '[';
            is_ok = has_array && for_each_element(raw, [&](std::string_view element) {
                        return read_one(element, out.emplace_back());
                    });
        } else if (key == "nextAfter") {
            next_after = raw_to_text(raw);
        }
        return true;
    });
    if (!is_object || !has_array || !is_ok) {
        return shape_error(http, "expected {\"" + std::string(name) + "\": [...], \"nextAfter\"}");
    }
    return {};
}

std::string kv_target(std::string_view bucket, std::string_view key) {
    return "/api/v1/kv/" + percent_encode(bucket) + "/" + percent_encode(key);
}

std::string lock_target(std::string_view name, std::string_view action) {
    std::string target = "/api/v1/locks/" + percent_encode(name);
    if (!action.empty()) {
        target.append("/").append(action);
    }
    return target;
}

// "?after=&limit=" of the lock and timer listings.
std::string page_target(std::string target, std::string_view after, std::int64_t limit) {
    bool is_first = true;
    if (!after.empty()) {
        append_query(target, is_first, "after", after);
    }
    append_query(target, is_first, "limit", std::to_string(limit));
    return target;
}

}  // namespace

// ---- request / reply ----

queen::Result<std::string> Client::request(std::string_view queue, std::string_view payload_json,
                                           std::chrono::milliseconds timeout,
                                           std::string_view partition) {
    if (queue.empty()) {
        return queen::Error{Errc::invalid_argument, "request: empty queue"};
    }
    if (timeout.count() < 0) {
        return queen::Error{Errc::invalid_argument, "request: negative timeout"};
    }
    if (options_.is_payload_validated && !is_valid_json(payload_json)) {
        return queen::Error{Errc::invalid_argument, "request: payload is not JSON"};
    }
    json::Writer writer;
    writer.begin_object().field("queue", queue);
    if (!partition.empty()) {
        writer.field("partition", partition);
    }
    writer.key("payload").raw(payload_json).field("timeoutMs", timeout.count());
    const std::string body = writer.end_object().take();
    const HttpRequest http{"POST", "/api/v1/request",
                           body,   true,
                           false,  timeout.count() + options_.pop_wait_margin_ms};
    HttpResponse response;
    if (auto sent = perform_into(http, nullptr, response, false); !sent) {
        if (http_status_of(sent.error()) == 504) {
            return queen::Error{Errc::timeout, std::move(sent).error().context};
        }
        return std::move(sent).error();
    }
    QUEEN_TRY(auto object, object_body(http, response));
    std::optional<std::string> reply;
    (void)for_each_member(object, [&](std::string_view key, std::string_view raw) {
        if (key == "reply") {
            reply = std::string(raw);
        }
        return true;
    });
    if (!reply) {
        return shape_error(http, "expected {\"reply\": ...}");
    }
    return std::move(*reply);
}

// ---- KV ----

queen::Result<std::uint64_t> Client::kv_put(const KvSet& set) {
    if (set.bucket.empty() || set.key.empty()) {
        return queen::Error{Errc::invalid_argument, "kv_put: empty bucket or key"};
    }
    if (set.ttl_ms < 0) {
        return queen::Error{Errc::invalid_argument, "kv_put: negative ttl_ms"};
    }
    if (options_.is_payload_validated && !is_valid_json(set.value_json)) {
        return queen::Error{Errc::invalid_argument, "kv_put: value is not JSON"};
    }
    std::string target = kv_target(set.bucket, set.key);
    bool is_first = true;
    if (set.expected_version) {
        append_query(target, is_first, "expectedVersion", std::to_string(*set.expected_version));
    }
    if (set.ttl_ms != 0) {
        append_query(target, is_first, "ttlMs", std::to_string(set.ttl_ms));
    }
    const bool is_idempotent = !set.expected_version.has_value();
    const HttpRequest http{"PUT", target, set.value_json, true, is_idempotent, 0};
    HttpResponse response;
    QUEEN_TRY(with_conflict(perform_into(http, nullptr, response, is_idempotent), response));
    QUEEN_TRY(auto object, object_body(http, response));
    KvEntry entry;
    if (!read_kv_entry(object, entry) || entry.version == 0) {
        return shape_error(http, "expected {\"version\": a positive integer}");
    }
    return entry.version;
}

queen::Result<KvEntry> Client::kv_get(std::string_view bucket, std::string_view key) {
    if (bucket.empty() || key.empty()) {
        return queen::Error{Errc::invalid_argument, "kv_get: empty bucket or key"};
    }
    const std::string target = kv_target(bucket, key);
    const HttpRequest http{"GET", target, {}, false, true, 0};
    HttpResponse response;
    QUEEN_TRY(perform_into(http, nullptr, response));
    QUEEN_TRY(auto object, object_body(http, response));
    KvEntry entry;
    if (!read_kv_entry(object, entry) || entry.value_json.empty()) {
        return shape_error(http, "expected {\"value\", \"version\", ...}");
    }
    if (entry.bucket.empty()) {
        entry.bucket = bucket;
    }
    if (entry.key.empty()) {
        entry.key = key;
    }
    return entry;
}

queen::Result<bool> Client::kv_delete(const KvDelete& del) {
    if (del.bucket.empty() || del.key.empty()) {
        return queen::Error{Errc::invalid_argument, "kv_delete: empty bucket or key"};
    }
    std::string target = kv_target(del.bucket, del.key);
    bool is_first = true;
    if (del.expected_version) {
        append_query(target, is_first, "expectedVersion", std::to_string(*del.expected_version));
    }
    const bool is_idempotent = !del.expected_version.has_value();
    const HttpRequest http{"DELETE", target, {}, false, is_idempotent, 0};
    HttpResponse response;
    QUEEN_TRY(with_conflict(perform_into(http, nullptr, response, is_idempotent), response));
    QUEEN_TRY(auto object, object_body(http, response));
    std::optional<bool> is_deleted;
    (void)for_each_member(object, [&](std::string_view key, std::string_view raw) {
        if (key == "deleted") {
            is_deleted = raw_to_bool(raw);
        }
        return true;
    });
    if (!is_deleted) {
        return shape_error(http, "expected {\"deleted\": true|false}");
    }
    return *is_deleted;
}

queen::Result<KvPage> Client::kv_list(const KvListQuery& query) {
    if (query.bucket.empty() || query.limit < 1) {
        return queen::Error{Errc::invalid_argument, "kv_list: empty bucket or limit < 1"};
    }
    std::string target = "/api/v1/kv/" + percent_encode(query.bucket);
    bool is_first = true;
    if (!query.prefix.empty()) {
        append_query(target, is_first, "prefix", query.prefix);
    }
    if (!query.after.empty()) {
        append_query(target, is_first, "after", query.after);
    }
    append_query(target, is_first, "limit", std::to_string(query.limit));
    const HttpRequest http{"GET", target, {}, false, true, 0};
    HttpResponse response;
    QUEEN_TRY(perform_into(http, nullptr, response));
    QUEEN_TRY(auto object, object_body(http, response));
    KvPage page;
    QUEEN_TRY(read_page(http, object, "keys", page.entries, page.next_after, read_kv_entry));
    page.bucket = query.bucket;
    for (KvEntry& entry : page.entries) {
        if (entry.bucket.empty()) {
            entry.bucket = query.bucket;
        }
    }
    return page;
}

queen::Result<std::vector<KvBucket>> Client::kv_buckets() {
    const HttpRequest http{"GET", "/api/v1/kv", {}, false, true, 0};
    HttpResponse response;
    QUEEN_TRY(perform_into(http, nullptr, response));
    QUEEN_TRY(auto object, object_body(http, response));
    std::vector<KvBucket> buckets;
    std::string ignored;
    QUEEN_TRY(read_page(
        http, object, "buckets", buckets, ignored, [](std::string_view raw, KvBucket& bucket) {
            return for_each_member(raw, [&](std::string_view key, std::string_view value) {
                if (key == "bucket") {
                    bucket.bucket = raw_to_text(value);
                } else if (key == "keys") {
                    bucket.keys = raw_to_integer(value);
                }
                return true;
            });
        }));
    return buckets;
}

// ---- locks ----

queen::Result<LockGrant> Client::lock_acquire(std::string_view name, std::string_view owner,
                                              std::chrono::milliseconds ttl,
                                              std::chrono::milliseconds wait) {
    if (name.empty() || owner.empty() || ttl.count() < 1 || wait.count() < 0) {
        return queen::Error{Errc::invalid_argument,
                            "lock_acquire: needs a name, an owner, ttl >= 1 ms and wait >= 0"};
    }
    const std::string target = lock_target(name, "acquire");
    json::Writer writer;
    const std::string body = writer.begin_object()
                                 .field("owner", owner)
                                 .field("ttlMs", ttl.count())
                                 .field("waitMs", wait.count())
                                 .end_object()
                                 .take();
    const std::int64_t timeout_ms =
        wait.count() > 0 ? wait.count() + options_.pop_wait_margin_ms : 0;
    const HttpRequest http{"POST", target, body, true, true, timeout_ms};
    HttpResponse response;
    QUEEN_TRY(with_conflict(perform_into(http, nullptr, response), response));
    QUEEN_TRY(auto object, object_body(http, response));
    LockGrant grant;
    if (!read_lock_grant(object, grant) || grant.token == 0) {
        return shape_error(http, "expected a grant with a token");
    }
    return grant;
}

queen::Result<LockGrant> Client::lock_renew(std::string_view name, std::uint64_t token,
                                            std::chrono::milliseconds ttl) {
    if (name.empty() || ttl.count() < 1) {
        return queen::Error{Errc::invalid_argument, "lock_renew: needs a name and ttl >= 1 ms"};
    }
    const std::string target = lock_target(name, "renew");
    json::Writer writer;
    const std::string body =
        writer.begin_object().field("token", token).field("ttlMs", ttl.count()).end_object().take();
    const HttpRequest http{"POST", target, body, true, true, 0};
    HttpResponse response;
    QUEEN_TRY(with_conflict(perform_into(http, nullptr, response), response));
    QUEEN_TRY(auto object, object_body(http, response));
    LockGrant grant;
    if (!read_lock_grant(object, grant) || grant.token == 0) {
        return shape_error(http, "expected a grant with a token");
    }
    return grant;
}

queen::Status Client::lock_release(std::string_view name, std::uint64_t token) {
    if (name.empty()) {
        return queen::Error{Errc::invalid_argument, "lock_release: empty name"};
    }
    const std::string target = lock_target(name, "release");
    json::Writer writer;
    const std::string body = writer.begin_object().field("token", token).end_object().take();
    const HttpRequest http{"POST", target, body, true, false, 0};
    HttpResponse response;
    QUEEN_TRY(with_conflict(perform_into(http, nullptr, response, false), response));
    QUEEN_TRY(auto object, object_body(http, response));
    bool is_released = false;
    (void)for_each_member(object, [&](std::string_view key, std::string_view raw) {
        if (key == "released") {
            is_released = raw_to_bool(raw);
        }
        return true;
    });
    if (!is_released) {
        return shape_error(http, "expected {\"released\": true}");
    }
    return {};
}

queen::Result<LockGrant> Client::lock_get(std::string_view name) {
    if (name.empty()) {
        return queen::Error{Errc::invalid_argument, "lock_get: empty name"};
    }
    const std::string target = lock_target(name, {});
    const HttpRequest http{"GET", target, {}, false, true, 0};
    HttpResponse response;
    QUEEN_TRY(perform_into(http, nullptr, response));
    QUEEN_TRY(auto object, object_body(http, response));
    LockGrant grant;
    if (!read_lock_grant(object, grant) || grant.token == 0) {
        return shape_error(http, "expected a grant with a token");
    }
    return grant;
}

queen::Result<LockPage> Client::lock_list(std::string_view after, std::int64_t limit) {
    if (limit < 1) {
        return queen::Error{Errc::invalid_argument, "lock_list: limit < 1"};
    }
    const std::string target = page_target("/api/v1/locks", after, limit);
    const HttpRequest http{"GET", target, {}, false, true, 0};
    HttpResponse response;
    QUEEN_TRY(perform_into(http, nullptr, response));
    QUEEN_TRY(auto object, object_body(http, response));
    LockPage page;
    QUEEN_TRY(read_page(http, object, "locks", page.locks, page.next_after, read_lock_grant));
    return page;
}

// ---- timers ----

queen::Result<TimerSetResult> Client::timer_set(const TimerSet& timer) {
    if (const std::string why = detail::timer_set_problem(timer); !why.empty()) {
        return queen::Error{Errc::invalid_argument, "timer_set: " + why};
    }
    if (options_.is_payload_validated && !is_valid_json(timer.payload_json)) {
        return queen::Error{Errc::invalid_argument, "timer_set: payload is not JSON"};
    }
    json::Writer writer;
    writer.begin_object();
    detail::write_timer_set_fields(writer, timer);
    const std::string body = writer.end_object().take();
    const HttpRequest http{"POST", "/api/v1/timers", body, true, timer.is_replace, 0};
    HttpResponse response;
    QUEEN_TRY(with_conflict(perform_into(http, nullptr, response, timer.is_replace), response));
    QUEEN_TRY(auto object, object_body(http, response));
    TimerSetResult result;
    (void)for_each_member(object, [&](std::string_view key, std::string_view raw) {
        if (key == "id") {
            result.id = raw_to_text(raw);
        } else if (key == "dueAt") {
            result.due_at = raw_to_text(raw);
        } else if (key == "replaced") {
            result.is_replaced = raw_to_bool(raw);
        }
        return true;
    });
    if (result.due_at.empty()) {
        return shape_error(http, "expected {\"id\", \"dueAt\", \"replaced\"}");
    }
    if (result.id.empty()) {
        result.id = timer.id;
    }
    return result;
}

queen::Result<bool> Client::timer_cancel(std::string_view id) {
    if (id.empty()) {
        return queen::Error{Errc::invalid_argument, "timer_cancel: empty id"};
    }
    const std::string target = "/api/v1/timers/" + percent_encode(id);
    const HttpRequest http{"DELETE", target, {}, false, true, 0};
    HttpResponse response;
    QUEEN_TRY(with_conflict(perform_into(http, nullptr, response), response));
    QUEEN_TRY(auto object, object_body(http, response));
    std::optional<bool> is_cancelled;
    (void)for_each_member(object, [&](std::string_view key, std::string_view raw) {
        if (key == "cancelled") {
            is_cancelled = raw_to_bool(raw);
        }
        return true;
    });
    if (!is_cancelled) {
        return shape_error(http, "expected {\"cancelled\": true|false}");
    }
    return *is_cancelled;
}

queen::Result<TimerInfo> Client::timer_get(std::string_view id) {
    if (id.empty()) {
        return queen::Error{Errc::invalid_argument, "timer_get: empty id"};
    }
    const std::string target = "/api/v1/timers/" + percent_encode(id);
    const HttpRequest http{"GET", target, {}, false, true, 0};
    HttpResponse response;
    QUEEN_TRY(perform_into(http, nullptr, response));
    QUEEN_TRY(auto object, object_body(http, response));
    TimerInfo timer;
    if (!read_timer_info(object, timer) || timer.id.empty()) {
        return shape_error(http, "expected a timer with an id");
    }
    return timer;
}

queen::Result<TimerPage> Client::timer_list(std::string_view after, std::int64_t limit) {
    if (limit < 1) {
        return queen::Error{Errc::invalid_argument, "timer_list: limit < 1"};
    }
    const std::string target = page_target("/api/v1/timers", after, limit);
    const HttpRequest http{"GET", target, {}, false, true, 0};
    HttpResponse response;
    QUEEN_TRY(perform_into(http, nullptr, response));
    QUEEN_TRY(auto object, object_body(http, response));
    TimerPage page;
    QUEEN_TRY(read_page(http, object, "timers", page.timers, page.next_after, read_timer_info));
    return page;
}

}  // namespace queen::client
