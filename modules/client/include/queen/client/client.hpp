// queen/client/client.hpp — the Queen v1 HTTP API as typed calls over a pool of keep-alive
// connections. Behaves like the official JS client: generated transactionIds, retries of network
// errors and 5xx with exponential backoff, never of 4xx.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "queen/client/connection.hpp"
#include "queen/client/errc.hpp"
#include "queen/client/protocol.hpp"
#include "queen/client/transaction.hpp"
#include "queen/client/types.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/result.hpp"
#include "queen/core/rng.hpp"

namespace queen::client {

struct ClientOptions {
    Endpoint endpoint;
    ConnectionOptions connection;  ///< timeouts, size limit, extra headers
    std::string bearer_token;      ///< non-empty: `Authorization: Bearer <token>` on every request
    std::size_t connections_max = 64;
    std::int64_t pool_wait_ms = 30'000;  ///< how long a call waits for a free connection
    /// Further attempts after a retryable failure (network error, timeout, 5xx). Requests that
    /// are not idempotent (transactions, trace events) are never retried.
    std::uint32_t retry_attempts = 3;
    std::int64_t retry_delay_ms = 1'000;  ///< before retry n (0-based): retry_delay_ms * 2^n
    /// A long-polling pop may take timeout_ms; its HTTP deadline is timeout_ms + this margin.
    std::int64_t pop_wait_margin_ms = 5'000;
    /// Check that every payload_json is valid JSON before sending (a bad one is
    /// invalid_argument, not a 400 for the whole batch).
    bool is_payload_validated = true;
    /// Seeds generated transactionIds together with the clock; give processes different seeds.
    std::uint64_t id_seed = 0;
};

/// A client for one broker. Every call returns the typed answer or an Error:
/// - Errc::invalid_argument: the request could not be built (invalid payload JSON, empty queue);
/// - Errc::connect_failed / timeout / connection_closed / cancelled: transport (see Connection);
/// - Errc::tls_failed: TLS files that do not load, a handshake that failed (never retried);
/// - an HTTP status error (http_status_of(e) != 0) carrying the server's {"error"} text;
/// - Errc::bad_response: the answer was not the documented JSON shape;
/// - Errc::rejected: a 2xx answer saying the operation failed (transaction, seek, DB error);
/// - Errc::conflict: a 409 of the KV, lock, timer and transaction calls;
/// - Errc::busy: no pooled connection became free within pool_wait_ms.
/// Thread-safety: every member may be called from many threads at once; each call borrows one
/// pooled connection for its duration.
class Client : private IdSource {
public:
    /// `clock` measures deadlines and stamps generated ids; it must outlive the client.
    explicit Client(ClientOptions options,
                    const queen::Clock& clock = queen::SystemClock::instance());
    ~Client() override;
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    [[nodiscard]] const ClientOptions& options() const noexcept { return options_; }

    // ---- data plane ----

    /// POST /api/v1/configure: creates the queue or overwrites all its options.
    [[nodiscard]] queen::Result<ConfigureResult> configure(const ConfigureRequest& request);

    /// POST /api/v1/push: one result per item, in order (queued, duplicate, buffered, failed).
    /// Items without a transaction_id get a generated UUIDv7 (so a retry is deduplicated).
    /// Errors also: invalid_argument (an item with an invalid payload_json); an empty batch
    /// returns an empty vector without a request.
    [[nodiscard]] queen::Result<std::vector<PushResult>> push(std::span<const PushItem> items);

    /// push(items) into `results` (one per item, in order), reusing the storage of the vector
    /// and of its strings from an earlier call, so a producer loop stops allocating per message.
    /// Errors: as push(); `results` is then unspecified but valid.
    [[nodiscard]] queen::Status push_into(std::span<const PushItem> items,
                                          std::vector<PushResult>& results);

    /// GET /api/v1/pop/queue/:queue[/partition/:partition], or GET /api/v1/pop?namespace=&task=
    /// for a request that names no queue. An empty `messages` means nothing was delivered
    /// (204). A long poll (is_wait) may block up to timeout_ms.
    [[nodiscard]] queen::Result<PopResult> pop(const PopRequest& request);
    /// The same, over a caller-owned connection (from make_connection()), so another thread can
    /// end a parked long poll with Connection::abort() without touching the pool.
    [[nodiscard]] queen::Result<PopResult> pop(const PopRequest& request, Connection& connection);

    /// pop(request) into `result`, reusing the storage of its strings and messages from an
    /// earlier call: a consumer loop that pops into one PopResult stops allocating per message.
    /// Every field is overwritten (a field the answer leaves out gets its default). Errors: as
    /// pop(); `result` is then unspecified but valid.
    [[nodiscard]] queen::Status pop_into(const PopRequest& request, PopResult& result);

    /// POST /api/v1/ack. A logical failure (unknown message, stale lease) is a result with
    /// is_success false, not an error.
    [[nodiscard]] queen::Result<AckResult> ack(const Ack& ack);
    /// POST /api/v1/ack/batch: results in input order. A non-empty `consumer_group` overrides the
    /// group of every ack (as the server does with the top-level field); empty sends null. An
    /// empty batch returns an empty vector without a request.
    [[nodiscard]] queen::Result<std::vector<AckResult>> ack_batch(std::span<const Ack> acks,
                                                                  std::string_view consumer_group);

    /// POST /api/v1/lease/:leaseId/extend. `seconds` 0 lets the server pick (60 s).
    [[nodiscard]] queen::Result<LeaseExtendResult> extend_lease(std::string_view lease_id,
                                                                std::int64_t seconds = 0);

    /// POST /api/v1/transaction: all operations or none. A transaction the server rolled back
    /// is Errc::rejected with the server's reason. Never retried (it is not idempotent).
    /// Errors also: Errc::conflict (409: a KV version, lock guard or release, or timer id did
    /// not hold; the context names the operation), HTTP 400 (an operation outside the limits,
    /// or a next pop's queue or batch). With request.next, the committed transaction's pop comes
    /// back in TransactionResult::next (no second request; see TransactionBuilder::next).
    [[nodiscard]] queen::Result<TransactionResult> transaction(const TransactionRequest& request);
    /// A TransactionBuilder bound to this client: `client.transaction().ack(m).queue("q")
    /// .push(json).kv_set(...).commit()` (see queen/client/transaction.hpp).
    [[nodiscard]] TransactionBuilder transaction() { return TransactionBuilder{*this}; }

    /// transaction_then_pop(): each request's own outcome.
    struct TransactionThenPop {
        queen::Result<TransactionResult> transaction;
        queen::Result<PopResult> pop;
    };
    /// POST /api/v1/transaction and, right behind it on the same connection, the pop (HTTP/1.1
    /// pipelining): a worker's commit and its next message in one round trip. The broker applies
    /// the pop after the transaction, so the pop sees what the transaction pushed and no longer
    /// sees what it acked. Each result stands alone: a transaction rolled back (Errc::rejected)
    /// does not undo the pop, whose messages are then leased to the caller like any pop's.
    /// Errors of both: invalid input (nothing sent), the pool's wait, transport errors (a request
    /// whose answer did not arrive whole). Never retried (the transaction is not idempotent).
    [[nodiscard]] TransactionThenPop transaction_then_pop(const TransactionRequest& transaction,
                                                          const PopRequest& pop);

    /// POST /api/v1/traces: records a trace event; returns the trace id. Never retried.
    [[nodiscard]] queen::Result<std::string> trace(const TraceEvent& event);

    /// POST /api/v1/request {"queue","partition","payload","timeoutMs"}: pushes `payload_json`
    /// as a request and waits up to `timeout` for its reply; returns the reply message's
    /// payload (JSON text, byte for byte). An empty `partition`: the queue's Default. The HTTP
    /// deadline is timeout + pop_wait_margin_ms. Never retried (the push is not idempotent).
    /// Errors also: Errc::timeout (no reply in time: 504), invalid_argument (empty queue,
    /// payload not JSON, negative timeout).
    [[nodiscard]] queen::Result<std::string> request(std::string_view queue,
                                                     std::string_view payload_json,
                                                     std::chrono::milliseconds timeout,
                                                     std::string_view partition = {});

    // ---- KV (docs/http-api.md, KV) ----
    // Retries: reads, and writes without an expected version (their repeat leaves the same
    // value); a write with an expected version is never retried (its repeat would conflict).

    /// PUT /api/v1/kv/:bucket/:key?expectedVersion=&ttlMs= with the value as the body; returns
    /// the new version. Errors also: Errc::conflict (expected_version did not match; the
    /// context gives the current version), HTTP 400 (a name, value or TTL outside the limits),
    /// invalid_argument (empty bucket or key, value not JSON, negative TTL).
    [[nodiscard]] queen::Result<std::uint64_t> kv_put(const KvSet& set);
    /// GET /api/v1/kv/:bucket/:key. Errors also: HTTP 404 (absent or expired).
    [[nodiscard]] queen::Result<KvEntry> kv_get(std::string_view bucket, std::string_view key);
    /// DELETE /api/v1/kv/:bucket/:key?expectedVersion=: whether a live key was deleted.
    /// Errors also: Errc::conflict (expected_version did not match).
    [[nodiscard]] queen::Result<bool> kv_delete(const KvDelete& del);
    /// GET /api/v1/kv/:bucket?prefix=&after=&limit=: one page of keys with their values.
    /// Errors also: HTTP 400 (limit above the server's maximum), invalid_argument (empty
    /// bucket, limit < 1).
    [[nodiscard]] queen::Result<KvPage> kv_list(const KvListQuery& query);
    /// GET /api/v1/kv: the buckets with their key counts.
    [[nodiscard]] queen::Result<std::vector<KvBucket>> kv_buckets();

    // ---- locks (docs/http-api.md, locks) ----

    /// POST /api/v1/locks/:name/acquire {"owner","ttlMs","waitMs"}: the grant, with a fencing
    /// token. While another owner holds the lock the broker waits up to `wait` for it (the HTTP
    /// deadline is wait + pop_wait_margin_ms). Acquiring a lock `owner` holds renews it (same
    /// token), so a lost answer is retried. Errors also: Errc::conflict (still held at the
    /// deadline; the context says by whom and until when), HTTP 400 (limits),
    /// invalid_argument (empty name or owner, ttl < 1 ms, negative wait).
    [[nodiscard]] queen::Result<LockGrant> lock_acquire(
        std::string_view name, std::string_view owner, std::chrono::milliseconds ttl,
        std::chrono::milliseconds wait = std::chrono::milliseconds{0});
    /// POST /api/v1/locks/:name/renew {"token","ttlMs"}: the grant with its new expiry.
    /// Errors also: Errc::conflict (the token is not the current grant: expired, released or
    /// granted again).
    [[nodiscard]] queen::Result<LockGrant> lock_renew(std::string_view name, std::uint64_t token,
                                                      std::chrono::milliseconds ttl);
    /// POST /api/v1/locks/:name/release {"token"}. Never retried. Errors also: Errc::conflict
    /// (a stale token).
    [[nodiscard]] queen::Status lock_release(std::string_view name, std::uint64_t token);
    [[nodiscard]] queen::Status lock_release(const LockGrant& grant) {
        return lock_release(grant.name, grant.token);
    }
    /// GET /api/v1/locks/:name: the current grant. Errors also: HTTP 404 (free).
    [[nodiscard]] queen::Result<LockGrant> lock_get(std::string_view name);
    /// GET /api/v1/locks?after=&limit=: one page of current grants.
    [[nodiscard]] queen::Result<LockPage> lock_list(std::string_view after = {},
                                                    std::int64_t limit = 100);

    // ---- timers (docs/http-api.md, timers) ----

    /// POST /api/v1/timers (the timer.set object). Retried only with is_replace (without it a
    /// repeat finds its own timer: a conflict). Errors also: Errc::conflict (the id exists and
    /// !is_replace), HTTP 400 (limits, a "~delay." id), invalid_argument (empty id or queue,
    /// payload not JSON, negative times).
    [[nodiscard]] queen::Result<TimerSetResult> timer_set(const TimerSet& timer);
    /// DELETE /api/v1/timers/:id: whether the timer existed.
    [[nodiscard]] queen::Result<bool> timer_cancel(std::string_view id);
    /// GET /api/v1/timers/:id. Errors also: HTTP 404 (none).
    [[nodiscard]] queen::Result<TimerInfo> timer_get(std::string_view id);
    /// GET /api/v1/timers?after=&limit=: one page of pending timers (delayed pushes included:
    /// their ids start with "~delay.").
    [[nodiscard]] queen::Result<TimerPage> timer_list(std::string_view after = {},
                                                      std::int64_t limit = 100);

    // ---- resources and admin ----

    /// DELETE /api/v1/resources/queues/:queue.
    [[nodiscard]] queen::Result<DeleteQueueResult> delete_queue(std::string_view queue);
    /// GET /api/v1/resources/queues.
    [[nodiscard]] queen::Result<std::vector<QueueSummary>> list_queues();
    /// GET /api/v1/resources/queues/:queue (with its partitions). Unknown: HTTP 404.
    [[nodiscard]] queen::Result<QueueDetail> get_queue(std::string_view queue);
    /// GET /api/v1/dlq with real paging (limit/offset).
    [[nodiscard]] queen::Result<DlqPage> dlq(const DlqQuery& query);
    /// GET /api/v1/messages (no payloads), newest first.
    [[nodiscard]] queen::Result<std::vector<MessageSummary>> list_messages(
        const MessagesQuery& query);
    /// GET /api/v1/consumer-groups: one entry per (group, queue).
    [[nodiscard]] queen::Result<std::vector<ConsumerGroupSummary>> list_consumer_groups();
    /// DELETE /api/v1/consumer-groups/:group?deleteMetadata=: cursors and leases on every queue.
    [[nodiscard]] queen::Result<DeleteConsumerGroupResult> delete_consumer_group(
        std::string_view group, bool is_metadata_deleted = true);
    /// DELETE /api/v1/consumer-groups/:group/queues/:queue?deleteMetadata=.
    [[nodiscard]] queen::Result<DeleteConsumerGroupResult> delete_consumer_group_for_queue(
        std::string_view group, std::string_view queue, bool is_metadata_deleted = true);
    /// POST /api/v1/consumer-groups/:group/subscription {subscriptionTimestamp}.
    [[nodiscard]] queen::Result<SubscriptionUpdateResult> update_subscription_timestamp(
        std::string_view group, std::string_view timestamp);
    /// POST /api/v1/consumer-groups/:group/queues/:queue/seek. Releases the group's leases.
    [[nodiscard]] queen::Result<SeekResult> seek(std::string_view group, std::string_view queue,
                                                 const SeekTarget& target);
    /// POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek (to end).
    [[nodiscard]] queen::Result<PartitionSeekResult> seek_partition_to_end(
        std::string_view group, std::string_view queue, std::string_view partition);
    /// GET /api/v1/system/maintenance (push and pop flags).
    [[nodiscard]] queen::Result<MaintenanceStatus> maintenance();
    /// POST /api/v1/system/maintenance or /pop {enabled}; returns the new state.
    [[nodiscard]] queen::Result<MaintenanceStatus> set_maintenance(bool is_pop, bool is_enabled);
    /// GET /health. 200 and 503 are both answers (is_healthy says which), not errors; never
    /// retried, so a probe answers at once.
    [[nodiscard]] queen::Result<Health> health();
    /// GET of any JSON endpoint (status, metrics, overview, message detail, traces, ...): the
    /// body of a 2xx answer. `target` is path and query, already percent-encoded.
    [[nodiscard]] queen::Result<std::string> get_json(std::string_view target);
    /// POST of a JSON `body` to any endpoint (e.g. /api/v1/system/cluster/transfer-leader): the
    /// body of a 2xx answer. Never retried: the endpoint may not be idempotent.
    [[nodiscard]] queen::Result<std::string> post_json(std::string_view target,
                                                       std::string_view body);

    // ---- plumbing ----

    /// The options of this client's connections: ClientOptions::connection plus the bearer
    /// token's Authorization header (for a Connection or HttpMultiplexer of one's own).
    [[nodiscard]] ConnectionOptions connection_options() const;
    /// A new connection with this client's endpoint, options and clock (for pop(request, conn)).
    [[nodiscard]] std::unique_ptr<Connection> make_connection() const;
    /// A fresh UUIDv7 string (time from the clock, random bits from the seeded generator).
    [[nodiscard]] std::string generate_uuid_v7();
    /// Aborts every pooled connection and pending retry wait; later calls fail with cancelled.
    void close() noexcept;
    /// TCP connections opened so far by the pool (lets tests and bench see keep-alive reuse).
    [[nodiscard]] std::uint64_t connects_total() const { return pool_.connects_total(); }

private:
    struct Call;
    queen::Result<HttpResponse> perform(const HttpRequest& request, Connection* dedicated,
                                        bool is_retried = true);
    queen::Status perform_into(const HttpRequest& request, Connection* dedicated,
                               HttpResponse& response, bool is_retried = true);
    queen::Status pop_on(const PopRequest& request, Connection* dedicated, PopResult& result);
    /// DELETE `path`?deleteMetadata=...: both consumer-group deletes.
    queen::Result<DeleteConsumerGroupResult> delete_consumer_group_at(std::string path,
                                                                      bool is_metadata_deleted);
    void append_uuid_v7(std::string& out) override;  // generated ids for the builders

    ClientOptions options_;
    const queen::Clock& clock_;
    ConnectionPool pool_;
    std::mutex id_mutex_;
    UuidV7Generator id_generator_;  // guarded by id_mutex_
    std::mutex close_mutex_;
    std::condition_variable close_changed_;
    bool is_closed_ = false;
};

/// Percent-encodes everything but the unreserved characters (A-Z a-z 0-9 - . _ ~).
[[nodiscard]] std::string percent_encode(std::string_view text);

/// Reads a JSON object of queue options (the `options` of a configure answer or of GET
/// /api/v1/resources/queues/:queue) by the option table; a key that is missing or null keeps
/// its default. Errors: Errc::bad_response when `json_object` is not a JSON object.
[[nodiscard]] queen::Result<QueueOptions> parse_queue_options(std::string_view json_object);

}  // namespace queen::client
