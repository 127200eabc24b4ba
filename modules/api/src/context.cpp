// api/src/context.cpp — tenant resolution, error mapping, body parsing, payload encryption.
#include "context.hpp"

#include <algorithm>
#include <map>

#include "format.hpp"

namespace queen::api::detail {

void RateMeter::add(std::int64_t now_ms, std::uint64_t count) {
    const std::int64_t second = now_ms / 1000;
    const auto slot = static_cast<std::size_t>(((second % 60) + 60) % 60);
    const std::uint64_t tag = (static_cast<std::uint64_t>(second) & second_mask) << count_bits;
    std::atomic<std::uint64_t>& bucket = buckets_[slot];
    std::uint64_t seen = bucket.load(std::memory_order_relaxed);
    for (;;) {
        // Another second in this bucket (a minute ago, or never): it starts over.
        const std::uint64_t base = (seen & ~count_mask) == tag ? seen & count_mask : 0;
        const std::uint64_t next = tag | ((base + count) & count_mask);
        if (bucket.compare_exchange_weak(seen, next, std::memory_order_relaxed)) {
            return;
        }
    }
}

double RateMeter::per_second(std::int64_t now_ms, std::int64_t seconds) const {
    seconds = seconds < 1 ? 1 : (seconds > 60 ? 60 : seconds);
    const auto current = static_cast<std::uint64_t>(now_ms / 1000);
    std::uint64_t total = 0;
    for (const std::atomic<std::uint64_t>& bucket : buckets_) {
        const std::uint64_t value = bucket.load(std::memory_order_relaxed);
        // How many seconds ago the bucket's second was (mod 2^24; a later second is far off).
        const std::uint64_t age = (current - (value >> count_bits)) & second_mask;
        if (age < static_cast<std::uint64_t>(seconds)) {
            total += value & count_mask;
        }
    }
    return static_cast<double>(total) / static_cast<double>(seconds);
}

Context::Context(Backend& backend_ref, const ApiOptions& api_options, Logger& logger_ref,
                 RandomSource& random_ref)
    : backend(backend_ref), options(api_options), logger(logger_ref), random(random_ref) {
    if (!options.encryption_key_hex.empty()) {
        auto parsed = PayloadCipher::from_hex(options.encryption_key_hex);
        QUEEN_ASSERT(parsed.has_value(), "ApiOptions::validate() accepts only valid keys");
        cipher.emplace(*parsed);
    }
}

std::string QueueFlagCache::key(std::string_view tenant, std::string_view queue) {
    std::string out;
    out.reserve(tenant.size() + 1 + queue.size());
    out.append(tenant);
    out.push_back('\0');
    out.append(queue);
    return out;
}

std::optional<bool> QueueFlagCache::get(std::string_view tenant, std::string_view queue,
                                        std::int64_t now_ms, std::int64_t ttl_ms) const {
    if (ttl_ms <= 0) {
        return std::nullopt;
    }
    std::lock_guard lock(mutex_);
    const auto found = entries_.find(key(tenant, queue));
    if (found == entries_.end() || now_ms - found->second.stored_ms >= ttl_ms ||
        now_ms < found->second.stored_ms) {
        return std::nullopt;
    }
    return found->second.is_encrypted;
}

void QueueFlagCache::put(std::string_view tenant, std::string_view queue, bool is_encrypted,
                         std::int64_t now_ms) {
    std::lock_guard lock(mutex_);
    if (entries_.size() >= entries_max) {
        entries_.clear();
    }
    entries_[key(tenant, queue)] = Entry{is_encrypted, now_ms};
}

void QueueFlagCache::invalidate(std::string_view tenant, std::string_view queue) {
    std::lock_guard lock(mutex_);
    entries_.erase(key(tenant, queue));
}

void invalidate_queue_cache(Context& context, std::string_view tenant, std::string_view queue) {
    context.queue_flags.invalidate(tenant, queue);
}

Result<std::string> tenant_of(const Context& context, const http::Request& request) {
    const auto header = request.header(context.options.tenant_header);
    if (!header.has_value()) {
        return context.options.default_tenant;
    }
    if (!is_tenant_name(*header)) {
        return Error{Errc::invalid_argument,
                     context.options.tenant_header + " must be 1-64 characters of [A-Za-z0-9._-]"};
    }
    return std::string(*header);
}

http::Response error_response(Context& context, int status, std::string_view message) {
    if (status >= 500) {
        context.metrics.responses_5xx.fetch_add(1, std::memory_order_relaxed);
    } else if (status >= 400) {
        context.metrics.responses_4xx.fetch_add(1, std::memory_order_relaxed);
    }
    return http::Response::error(status, message);
}

http::Response retry_soon(http::Response response) {
    response.headers.push_back(http::Header{"Retry-After", "1"});
    return response;
}

http::Response error_response(Context& context, const Error& error, std::string_view tenant) {
    const std::string tenant_text = "tenant '" + std::string(tenant) + "'";
    if (error.is(Errc::invalid_argument)) {
        return error_response(context, 400, error.context);
    }
    if (error.is(Errc::out_of_range)) {
        return error_response(context, 413, error.context);
    }
    if (error.is(Errc::not_found)) {
        return error_response(
            context, 404,
            "unknown " + tenant_text + (error.context.empty() ? "" : ": " + error.context));
    }
    if (error.is(Errc::busy)) {
        return retry_soon(error_response(
            context, 503,
            "the broker is busy (" + tenant_text + "): " + error.context + "; retry with backoff"));
    }
    if (error.is(Errc::not_leader)) {
        return retry_soon(error_response(context, 503,
                                         "this node cannot commit entries for " + tenant_text +
                                             " right now (not the leader): " + error.context +
                                             "; retry"));
    }
    if (error.is(Errc::disk_full)) {
        // A pause, not a failure: the write resumes once space is freed (node.disk_reserve_bytes).
        return retry_soon(error_response(context, 507, tenant_text + ": " + error.context));
    }
    if (error.is(Errc::poisoned)) {
        return error_response(context, 503,
                              tenant_text +
                                  " stopped accepting writes after a storage "
                                  "failure: " +
                                  error.context);
    }
    if (error.is(Errc::cancelled)) {
        return retry_soon(
            error_response(context, 503, "the server is shutting down; retry on another node"));
    }
    if (error.is(Errc::timeout)) {
        return retry_soon(error_response(context, 503, "timed out: " + error.context + "; retry"));
    }
    if (error.is(Errc::unsupported)) {
        return error_response(context, 500, error.context);
    }
    if (error.is(Errc::corruption)) {
        // Stored data failed its check: the request fails, the damaged bytes are never sent.
        context.metrics.damaged_reads.fetch_add(1, std::memory_order_relaxed);
        QUEEN_LOG(context.logger, Level::error, "api.damaged_data",
                  "tenant=" << tenant << " error=\"" << error.message() << "\"");
        return error_response(context, 500,
                              "damaged data: " + error.context +
                                  " (queen inspect state --verify lists every damaged block)");
    }
    QUEEN_LOG(context.logger, Level::warn, "api.internal_error",
              "tenant=" << tenant << " error=\"" << error.message() << "\"");
    return error_response(context, 500, error.message());
}

http::Response error_result_response(Context& context, const engine::ErrorResult& error) {
    switch (error.code) {
        case engine::ErrorResult::Code::stale_request:
            return error_response(context, 409, "stale request: " + error.message);
        case engine::ErrorResult::Code::invalid: return error_response(context, 400, error.message);
        case engine::ErrorResult::Code::malformed: break;
    }
    return error_response(context, 500, "the command did not decode: " + error.message);
}

Status check_body_size(const Context& context, const http::Request& request) {
    if (request.body.size() > context.options.json_body_bytes_max) {
        return Error{Errc::out_of_range, "request body is " + std::to_string(request.body.size()) +
                                             " bytes, more than the limit of " +
                                             std::to_string(context.options.json_body_bytes_max)};
    }
    return {};
}

Result<nlohmann::json> request_json(const Context& context, const http::Request& request) {
    QUEEN_TRY(check_body_size(context, request));
    return parse_body(request.body, context.options.json_depth_max);
}

void when_readable(const ContextPtr& context, const std::string& tenant,
                   const http::Responder& responder, std::function<void()> then) {
    context->backend.when_readable(
        tenant, [context, tenant, responder, then = std::move(then)](Status ready) mutable {
            if (!ready) {
                responder.complete(error_response(*context, ready.error(), tenant));
                return;
            }
            responder.dispatch(std::move(then));
        });
}

void count_pushed(Context& context, const std::vector<queues::PushItemResult>& items) {
    std::uint64_t queued = 0;
    for (const queues::PushItemResult& item : items) {
        switch (item.status) {
            case queues::PushStatus::queued: ++queued; break;
            case queues::PushStatus::duplicate:
                context.metrics.push_duplicates.fetch_add(1, std::memory_order_relaxed);
                break;
            case queues::PushStatus::buffered:
                context.metrics.push_buffered.fetch_add(1, std::memory_order_relaxed);
                break;
            case queues::PushStatus::failed:
                context.metrics.push_failed.fetch_add(1, std::memory_order_relaxed);
                break;
        }
    }
    context.metrics.push_messages.fetch_add(queued, std::memory_order_relaxed);
    context.metrics.ingested.add(context.backend.wall_ms(), queued);
}

namespace {
std::vector<queues::PushItem*> pointers_to(std::vector<queues::PushItem>& pushed) {
    std::vector<queues::PushItem*> items;
    items.reserve(pushed.size());
    for (queues::PushItem& item : pushed) {
        items.push_back(&item);
    }
    return items;
}
}  // namespace

std::vector<queues::PushItem*> push_items(queues::Push& push) {
    return pointers_to(push.items);
}

std::vector<queues::PushItem*> push_items(engine::StreamCycle& cycle) {
    return pointers_to(cycle.push_items);  // a cycle's sink messages are sealed as pushes are
}

std::vector<queues::PushItem*> push_items(engine::Transaction& transaction) {
    std::vector<queues::PushItem*> items;
    for (engine::TransactionOp& op : transaction.ops) {
        // A timer's message is stored as it will be delivered: encrypted like a push.
        if (op.kind == engine::TransactionOp::Kind::push ||
            op.kind == engine::TransactionOp::Kind::timer_set) {
            items.push_back(&op.push);
        }
    }
    return items;
}

void cached_queue_flags(Context& context, std::string_view tenant,
                        const std::vector<queues::PushItem*>& items, QueueFlags& flags,
                        std::vector<std::string>& missing) {
    const std::int64_t now_ms = context.backend.now_ms();
    for (const queues::PushItem* item : items) {
        if (flags.find(item->queue) != flags.end()) {
            continue;
        }
        const auto cached = context.queue_flags.get(tenant, item->queue, now_ms,
                                                    context.options.queue_flags_cache_ms);
        flags.emplace(item->queue, cached.value_or(false));
        if (!cached.has_value()) {
            missing.push_back(item->queue);
        }
    }
    std::sort(missing.begin(), missing.end());
}

Status read_queue_flags(Context& context, std::string_view tenant,
                        const std::vector<std::string>& missing, QueueFlags& flags) {
    if (missing.empty()) {
        return {};
    }
    // Only the queue record: a push must not cost O(partitions of the queue).
    QUEEN_TRY(
        query(context, tenant, [&](const queues::Tables& tables, const store::Txn& txn) -> Status {
            for (const std::string& name : missing) {
                QUEEN_TRY(auto options, queues::get_queue_options(tables, txn, name));
                flags[name] = options.has_value() && options->is_encryption_enabled;
            }
            return {};
        }));
    const std::int64_t now_ms = context.backend.now_ms();
    for (const std::string& name : missing) {
        context.queue_flags.put(tenant, name, flags[name], now_ms);
    }
    return {};
}

Status encrypt_items(Context& context, const std::vector<queues::PushItem*>& items,
                     const QueueFlags& flags) {
    for (queues::PushItem* item : items) {
        const auto flag = flags.find(item->queue);
        if (flag == flags.end() || !flag->second) {
            continue;
        }
        if (!context.cipher.has_value()) {
            return Error{Errc::unsupported,
                         missing_key_message("queue '" + item->queue + "' (encryptionEnabled)")};
        }
        QUEEN_TRY(item->payload, context.cipher->encrypt(item->payload, context.random));
        item->is_encrypted = true;
        context.metrics.encrypted_payloads.fetch_add(1, std::memory_order_relaxed);
    }
    return {};
}

}  // namespace queen::api::detail
