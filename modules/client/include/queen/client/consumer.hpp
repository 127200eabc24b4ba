// queen/client/consumer.hpp — the consume loop of the JS client: long-poll, hand batches to a
// handler, ack on success / nack on failure, renew leases of long handlers, stop cleanly.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "queen/client/client.hpp"
#include "queen/client/connection.hpp"
#include "queen/client/types.hpp"
#include "queen/core/result.hpp"

namespace queen::client {

struct ConsumerOptions {
    /// What to pop. Long polling (is_wait) is the default, like the JS consume().
    PopRequest pop = [] {
        PopRequest request;
        request.is_wait = true;
        return request;
    }();
    /// false: the handler gets a whole popped batch; true: one message at a time, each acked on
    /// its own (after a failed message that was not dead-lettered the rest of the batch is left
    /// for redelivery, since the server released the lease and will redeliver from the cursor).
    bool is_each = false;
    /// Ack `completed` after a handler success and `failed` (with the handler's error text)
    /// after a failure. false: the handler acks itself (e.g. inside a transaction).
    bool is_client_ack = true;
    /// While a handler runs, extend its lease every interval (0: never).
    std::int64_t renew_lease_interval_ms = 0;
    std::int64_t renew_lease_seconds = 0;  ///< sent with each renewal; 0: server default (60 s)
    /// Stop after handling this many messages (0: only stop() ends the loop).
    std::uint64_t messages_max = 0;
    /// Pause after an empty pop when not long polling, and after the second empty long poll in
    /// a row (a server that answers 204 at once, e.g. in pop maintenance, must not cause a spin).
    std::int64_t idle_backoff_ms = 100;
    /// Pause after a pop or ack that failed with a retryable error (after the Client's retries).
    std::int64_t error_backoff_ms = 1'000;
};

struct ConsumerStats {
    std::uint64_t pops = 0;
    std::uint64_t empty_pops = 0;
    std::uint64_t messages = 0;         ///< handed to the handler
    std::uint64_t messages_failed = 0;  ///< handled with an error
    std::uint64_t acks_rejected = 0;    ///< acks the server answered with success=false
    std::uint64_t lease_renewals = 0;
    std::uint64_t lease_renewals_failed = 0;
    std::uint64_t retryable_errors = 0;  ///< pops/acks that failed and were tried again later
};

/// Returns success to ack the messages as completed, or an Error whose context becomes the
/// failed ack's error text. An exception thrown by the handler counts as a failure.
using ConsumerHandler = std::function<queen::Status(std::span<const Message> messages)>;

/// One consume loop over a Client. run() blocks the calling thread; stop() (from any thread,
/// e.g. a signal-handling one) ends it after the current handler and its ack finish, and ends a
/// parked long poll at once (the poll uses its own connection, aborted by stop()).
/// A Consumer runs once. Thread-safety: run() once from one thread; stop()/stats() from any.
class Consumer {
public:
    /// `client` must outlive the consumer.
    Consumer(Client& client, ConsumerOptions options, ConsumerHandler handler);
    ~Consumer();
    Consumer(const Consumer&) = delete;
    Consumer& operator=(const Consumer&) = delete;

    /// Runs until stop() or messages_max. Returns the final stats.
    /// Errors (the loop ends): a non-retryable pop or ack failure: an HTTP 4xx, bad_response,
    /// invalid_argument (e.g. an empty queue name).
    [[nodiscard]] queen::Result<ConsumerStats> run();
    void stop() noexcept;
    [[nodiscard]] ConsumerStats stats() const;

private:
    queen::Status handle_batch(const PopResult& batch);
    queen::Status acknowledge(std::span<const Message> messages, const queen::Status& outcome,
                              bool& is_rest_abandoned);
    void renew_leases();
    /// Waits up to `ms` or until stop(); returns false when stopping.
    bool pause(std::int64_t ms);

    Client& client_;
    ConsumerOptions options_;
    ConsumerHandler handler_;
    std::unique_ptr<Connection> poll_connection_;
    std::atomic<bool> is_stopping_{false};
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::string active_lease_id_;  // guarded by mutex_: the lease of the batch being handled
    ConsumerStats stats_;          // guarded by mutex_
    bool has_run_ = false;
};

}  // namespace queen::client
