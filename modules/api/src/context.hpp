// api/src/context.hpp — what every handler shares: the backend, options, cipher, metrics; and
// the glue between handlers and the backend (tenant, submit, reads, error mapping, encryption).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "crypto.hpp"
#include "json.hpp"
#include "queen/api/api.hpp"
#include "queen/api/backend.hpp"
#include "queen/engine/engine.hpp"
#include "queen/http/request.hpp"
#include "queen/http/responder.hpp"
#include "queen/http/response.hpp"

namespace queen::api::detail {

/// Events per second over the last minute (60 one-second buckets). Thread-safe and lock-free
/// (every request adds to one: a mutex here was shared by all I/O threads).
class RateMeter {
public:
    /// Counts `count` events at `now_ms`. Counts of one second past 2^40 wrap.
    void add(std::int64_t now_ms, std::uint64_t count);
    /// Average per second over the last `seconds` (1..60) complete and current seconds. A bucket
    /// last written exactly a multiple of 2^24 s (194 days) ago would count as recent.
    [[nodiscard]] double per_second(std::int64_t now_ms, std::int64_t seconds = 60) const;

private:
    // A bucket holds the low 24 bits of its second above a 40-bit count.
    static constexpr unsigned count_bits = 40;
    static constexpr std::uint64_t count_mask = (std::uint64_t{1} << count_bits) - 1;
    static constexpr std::uint64_t second_mask = (std::uint64_t{1} << 24) - 1;
    std::array<std::atomic<std::uint64_t>, 60> buckets_{};
};

/// Counters of this API instance (since start). Relaxed atomics: they are statistics.
struct Metrics {
    std::atomic<std::uint64_t> requests{0};
    std::atomic<std::uint64_t> responses_4xx{0};
    std::atomic<std::uint64_t> responses_5xx{0};
    std::atomic<std::uint64_t> damaged_reads{0};  ///< reads refused: stored data failed a check
    std::atomic<std::uint64_t> push_requests{0};
    std::atomic<std::uint64_t> push_messages{0};  ///< items answered queued
    std::atomic<std::uint64_t> push_duplicates{0};
    std::atomic<std::uint64_t> push_buffered{0};
    std::atomic<std::uint64_t> push_failed{0};
    std::atomic<std::uint64_t> pop_requests{0};
    std::atomic<std::uint64_t> pop_messages{0};
    std::atomic<std::uint64_t> pop_empty{0};  ///< pops answered 204
    std::atomic<std::uint64_t> ack_requests{0};
    std::atomic<std::uint64_t> ack_messages{0};  ///< successful acks of any status
    std::atomic<std::uint64_t> ack_completed{0};
    std::atomic<std::uint64_t> ack_failed{0};
    std::atomic<std::uint64_t> ack_rejected{0};  ///< success:false
    std::atomic<std::uint64_t> dlq_messages{0};  ///< acks that dead-lettered a message
    std::atomic<std::uint64_t> transactions{0};
    std::atomic<std::uint64_t> transactions_failed{0};
    std::atomic<std::uint64_t> lease_extends{0};
    std::atomic<std::uint64_t> long_polls_waiting{0};  ///< gauge
    /// Long-poll tries submitted again after a pause for a leader (LongPoll).
    std::atomic<std::uint64_t> long_poll_retries{0};
    std::atomic<std::uint64_t> encrypted_payloads{0};
    std::atomic<std::uint64_t> stream_cycles{0};         ///< cycles answered (either outcome)
    std::atomic<std::uint64_t> stream_cycles_failed{0};  ///< answered success:false
    std::atomic<std::uint64_t> stream_registrations{0};  ///< queries answered 200 or 409
    RateMeter ingested;                                  ///< messages queued per second
    RateMeter processed;  ///< messages acked (completed or dead-lettered) per second
    RateMeter request_rate;
};

/// Remembers which queues have encryptionEnabled, so a push does not read the queue record
/// every time. Entries live options.queue_flags_cache_ms; at most `entries_max`, then the
/// cache starts over. Thread-safe.
class QueueFlagCache {
public:
    [[nodiscard]] std::optional<bool> get(std::string_view tenant, std::string_view queue,
                                          std::int64_t now_ms, std::int64_t ttl_ms) const;
    void put(std::string_view tenant, std::string_view queue, bool is_encrypted,
             std::int64_t now_ms);
    void invalidate(std::string_view tenant, std::string_view queue);

private:
    static constexpr std::size_t entries_max = 100'000;
    struct Entry {
        bool is_encrypted = false;
        std::int64_t stored_ms = 0;
    };
    static std::string key(std::string_view tenant, std::string_view queue);
    mutable std::mutex mutex_;
    std::map<std::string, Entry, std::less<>> entries_;
};

/// Everything the handlers share; one per register_routes() call, kept alive by the handlers.
struct Context {
    Context(Backend& backend_ref, const ApiOptions& api_options, Logger& logger_ref,
            RandomSource& random_ref);
    Backend& backend;
    const ApiOptions options;
    Logger& logger;
    RandomSource& random;
    std::optional<PayloadCipher> cipher;
    Metrics metrics;
    QueueFlagCache queue_flags;

    [[nodiscard]] const PayloadCipher* cipher_or_null() const noexcept {
        return cipher.has_value() ? &*cipher : nullptr;
    }
};
using ContextPtr = std::shared_ptr<Context>;

/// The tenant a request addresses (options.tenant_header, else options.default_tenant).
/// Errors: Errc::invalid_argument when the header holds an invalid name.
[[nodiscard]] Result<std::string> tenant_of(const Context& context, const http::Request& request);

/// A response for `error`: invalid_argument 400, not_found 404 (unknown tenant when it came
/// from the backend), out_of_range 413, disk_full 507 (with Retry-After: writes resume when
/// space returns), corruption 500 "damaged data" (counted, logged at error),
/// busy/not_leader/poisoned/cancelled/timeout 503 with a
/// sentence saying why and what to do, everything else 500. Counts 4xx/5xx in the metrics.
[[nodiscard]] http::Response error_response(Context& context, const Error& error,
                                            std::string_view tenant);
/// `status` with {"error": message}, counted in the metrics.
[[nodiscard]] http::Response error_response(Context& context, int status, std::string_view message);
/// `response` (a 503 the client should retry) with Retry-After: 1, for clients that honour it.
[[nodiscard]] http::Response retry_soon(http::Response response);

/// Parses the body of a POST (size limit -> 413; empty/invalid JSON -> 400).
[[nodiscard]] Result<nlohmann::json> request_json(const Context& context,
                                                  const http::Request& request);
/// The size limit of a JSON body: Errc::out_of_range (413) over json_body_bytes_max.
[[nodiscard]] Status check_body_size(const Context& context, const http::Request& request);

/// Runs `fn(const engine::Engine&) -> Result<T>` on the tenant's engine, now (never waits):
/// the KV, lock and timer queries open their read txn through it. It sees what earlier answers
/// reported only when it runs after when_readable(); read_handler() routes do. Errors: the
/// backend's (unknown tenant, ...), fn's.
template <class Fn>
auto read_state(Context& context, std::string_view tenant, Fn&& fn)
    -> decltype(fn(std::declval<const engine::Engine&>())) {
    using R = decltype(fn(std::declval<const engine::Engine&>()));
    std::optional<R> out;
    const Status status = context.backend.read(
        tenant, [&](const engine::Engine& engine) { out.emplace(fn(engine)); });
    if (!status) {
        return status.error();
    }
    if (!out.has_value()) {
        return Error{Errc::internal, "Backend::read did not run the query"};
    }
    return std::move(*out);
}

/// Runs `fn(const queues::Tables&, const store::Txn&) -> Result<T>` in a read txn of the
/// tenant's engine, as read_state (the queue queries of queen/queues/queries.hpp).
template <class Fn>
auto query(Context& context, std::string_view tenant, Fn&& fn)
    -> decltype(fn(std::declval<const queues::Tables&>(), std::declval<const store::Txn&>())) {
    return read_state(context, tenant,
                      [&](const engine::Engine& engine) { return engine.read(fn); });
}

/// Submits `body` as one command of `tenant`; when the entry is applied calls
/// `on_result(R&)` to build the response if the result is an R, and otherwise answers an
/// error (backend errors as error_response; ErrorResult invalid/malformed -> 400,
/// stale_request -> 409; another result type -> 500). Completes `responder` exactly once.
template <class R, class Body>
void submit_and_reply(const ContextPtr& context, const std::string& tenant, Body body,
                      http::Responder responder, std::function<http::Response(R&)> on_result);

/// Continues a request once the state of `tenant` holds every entry answered so far
/// (Backend::when_readable): `then` runs on the request's I/O thread, at once when nothing has
/// to wait, and may read with query(). No thread waits meanwhile. A backend error (unknown
/// tenant, poisoned, busy, ...) completes `responder` with error_response() instead.
void when_readable(const ContextPtr& context, const std::string& tenant,
                   const http::Responder& responder, std::function<void()> then);

/// The encryptionEnabled flag of each queue, by name.
using QueueFlags = std::map<std::string, bool, std::less<>>;

/// Counts the outcome of applied push items in the metrics (queued in push_messages and the
/// ingested rate, the others by status), as the push route and a stream cycle's sink pushes do.
void count_pushed(Context& context, const std::vector<queues::PushItemResult>& items);

/// The push items of a command (pointers into it, valid while it is neither changed nor
/// destroyed).
[[nodiscard]] std::vector<queues::PushItem*> push_items(queues::Push& push);
[[nodiscard]] std::vector<queues::PushItem*> push_items(engine::Transaction& transaction);
[[nodiscard]] std::vector<queues::PushItem*> push_items(engine::StreamCycle& cycle);

/// Fills `flags` with the cached flag of each queue of `items`; the queues not cached go to
/// `missing` (each once, in name order).
void cached_queue_flags(Context& context, std::string_view tenant,
                        const std::vector<queues::PushItem*>& items, QueueFlags& flags,
                        std::vector<std::string>& missing);
/// Reads the flags of `missing` from the tenant's state into `flags` and the cache (the queue
/// records only: O(queues), not O(partitions)). Never waits: call it after when_readable().
/// Errors: the backend's and the store's.
[[nodiscard]] Status read_queue_flags(Context& context, std::string_view tenant,
                                      const std::vector<std::string>& missing, QueueFlags& flags);
/// Replaces the payload of every item whose queue has encryptionEnabled by its AES-256-GCM form
/// (is_encrypted = true). Errors: Errc::unsupported naming the queue when no key is set.
[[nodiscard]] Status encrypt_items(Context& context, const std::vector<queues::PushItem*>& items,
                                   const QueueFlags& flags);

/// Encrypts the payloads of `command` (a queues::Push or engine::Transaction) that go to queues
/// with encryptionEnabled, then calls `then(std::move(command))`. When every queue's flag is
/// cached (the usual push) this all happens now, on this thread; otherwise the flags are read
/// once the state holds what was answered (a configure answered before this push counts), and
/// `then` runs later on the request's I/O thread. Errors complete `responder` instead of
/// calling `then`: Errc::unsupported (no key), the backend's and the store's.
template <class Command, class Then>
void encrypt_then(const ContextPtr& context, const std::string& tenant,
                  const http::Responder& responder, Command command, Then then) {
    QueueFlags flags;
    std::vector<std::string> missing;
    const std::vector<queues::PushItem*> items = push_items(command);
    cached_queue_flags(*context, tenant, items, flags, missing);
    if (missing.empty()) {
        if (const Status encrypted = encrypt_items(*context, items, flags); !encrypted) {
            responder.complete(error_response(*context, encrypted.error(), tenant));
            return;
        }
        then(std::move(command));
        return;
    }
    struct Held {
        Command command;
        Then then;
        QueueFlags flags;
        std::vector<std::string> missing;
    };
    auto held = std::make_shared<Held>(
        Held{std::move(command), std::move(then), std::move(flags), std::move(missing)});
    when_readable(context, tenant, responder, [context, tenant, responder, held] {
        Status done = read_queue_flags(*context, tenant, held->missing, held->flags);
        if (done) {
            done = encrypt_items(*context, push_items(held->command), held->flags);
        }
        if (!done) {
            responder.complete(error_response(*context, done.error(), tenant));
            return;
        }
        held->then(std::move(held->command));
    });
}

/// Forgets the cached flags of `queue` (after a configure or delete through this API).
void invalidate_queue_cache(Context& context, std::string_view tenant, std::string_view queue);

/// Renders a result error (ErrorResult) as a response.
[[nodiscard]] http::Response error_result_response(Context& context,
                                                   const engine::ErrorResult& error);

template <class R, class Body>
void submit_and_reply(const ContextPtr& context, const std::string& tenant, Body body,
                      http::Responder responder, std::function<http::Response(R&)> on_result) {
    engine::Command command;
    command.body = std::move(body);
    context->backend.submit(
        tenant, std::move(command),
        [context, tenant, responder = std::move(responder),
         on_result = std::move(on_result)](Result<engine::CommandResult> result) mutable {
            if (!result) {
                responder.complete(error_response(*context, result.error(), tenant));
                return;
            }
            engine::CommandResult& value = *result;
            if (std::holds_alternative<R>(value)) {
                // Formatting the answer is the I/O thread's job, not the applier's.
                responder.complete_with(
                    [context, on_result = std::move(on_result),
                     typed = std::get<R>(std::move(value))]() mutable { return on_result(typed); });
                return;
            }
            if (const auto* failed = std::get_if<engine::ErrorResult>(&value)) {
                responder.complete(error_result_response(*context, *failed));
                return;
            }
            responder.complete(error_response(*context, 500, "unexpected result type from apply"));
        });
}

}  // namespace queen::api::detail
