// queen/client/transaction.hpp — TransactionBuilder: the one call (acks, pushes, KV writes and
// checks, timers, lock releases and guards, all or nothing) written as a chain that fills a
// TransactionRequest; commit() sends it with Client::transaction(). No I/O of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "queen/client/types.hpp"
#include "queen/core/result.hpp"

namespace queen::client {

class Client;

/// Builds a TransactionRequest one operation at a time, in the order the broker runs them:
///
///     auto done = client.transaction()
///                     .ack(message)
///                     .kv_set("orders", id, R"({"state":"shipped"})")
///                     .queue("shipping")
///                     .push(message.data_json)
///                     .timer("remind-" + id, std::chrono::minutes(5), "reminders", "{}")
///                     .guard(lock)
///                     .next("orders", partition, 10)  // and pop the next batch, same entry
///                     .commit();  // Result<TransactionResult>: one result per operation, and
///                                 // the popped messages in ->next->messages
///
/// A call that cannot make its operation (a push before any queue()) is remembered and
/// commit() returns it as Errc::invalid_argument, sending nothing; everything else (names,
/// limits, JSON validity) is checked when the request is built or by the broker.
/// Not thread-safe; a builder may be committed more than once (each commit sends it again).
class TransactionBuilder {
public:
    /// An unbound builder: fill it, then send request() with Client::transaction() or
    /// Client::transaction_then_pop() (commit() says invalid_argument).
    TransactionBuilder() = default;
    /// A builder whose commit() sends through `client` (which must outlive it).
    explicit TransactionBuilder(Client& client) : client_(&client) {}

    /// Acks a popped message (its transaction id, partition, lease and group).
    TransactionBuilder& ack(const Message& message, AckStatus status = AckStatus::completed,
                            std::string error = {});
    TransactionBuilder& ack(Ack ack);

    /// Sets the queue (and partition) the following push() calls go to.
    TransactionBuilder& queue(std::string_view queue,
                              std::string_view partition = default_partition);
    /// Sets the partition the following push() calls go to (the queue stays).
    TransactionBuilder& partition(std::string_view partition);
    /// Pushes `payload_json` to the current queue and partition (transactionId generated).
    TransactionBuilder& push(std::string payload_json);
    /// A delayed push: the message becomes visible `delay` after the commit.
    TransactionBuilder& push(std::string payload_json, std::chrono::milliseconds delay);
    /// Pushes `item` as it is; an item without a queue goes to the current queue and partition.
    TransactionBuilder& push(PushItem item);

    /// kv.set: the new version comes back in the operation's result.
    TransactionBuilder& kv_set(std::string bucket, std::string key, std::string value_json,
                               std::optional<std::uint64_t> expected_version = std::nullopt,
                               std::chrono::milliseconds ttl = std::chrono::milliseconds{0});
    TransactionBuilder& kv_set(KvSet set);
    /// kv.delete (with an expected version: only if it matches).
    TransactionBuilder& kv_delete(std::string bucket, std::string key,
                                  std::optional<std::uint64_t> expected_version = std::nullopt);
    /// kv.check: the transaction commits only if (bucket, key) has `version` (0: is absent).
    TransactionBuilder& kv_check(std::string bucket, std::string key, std::uint64_t version);

    /// timer.set: pushes `payload_json` to `queue` once, `delay` after the commit.
    TransactionBuilder& timer(std::string id, std::chrono::milliseconds delay, std::string queue,
                              std::string payload_json);
    /// timer.set at a wall-clock time.
    TransactionBuilder& timer_at(std::string id, std::chrono::system_clock::time_point at,
                                 std::string queue, std::string payload_json);
    /// timer.set with every field (interval, end, partition, replace).
    TransactionBuilder& timer(TimerSet timer);
    /// timer.cancel.
    TransactionBuilder& timer_cancel(std::string id);

    /// lock.release of a grant (from Client::lock_acquire()).
    TransactionBuilder& lock_release(const LockGrant& grant);
    TransactionBuilder& lock_release(LockGuard lock);
    /// The transaction commits only while `grant` is the lock's current grant (see
    /// TransactionRequest::guards: the first guard is checked before the first operation).
    TransactionBuilder& guard(const LockGrant& grant);
    TransactionBuilder& guard(LockGuard lock);

    /// Once every operation committed, the same log entry pops up to `batch` messages of
    /// `queue` (only of `partition` when not empty) in queue mode: the worker's next batch comes
    /// back with the commit, in TransactionResult::next (its messages empty when nothing was
    /// there: the pop never waits). A transaction has one next pop: a later call replaces it.
    /// A refused transaction pops nothing.
    TransactionBuilder& next(std::string_view queue, std::string_view partition = {},
                             std::int64_t batch = 1);
    /// The same with every field (a consumer group).
    TransactionBuilder& next(NextPop next);

    /// Client::transaction(request()). Errors: Errc::invalid_argument (an unbound builder, or
    /// the first mistake recorded above, or those of Client::transaction); otherwise those of
    /// Client::transaction() (Errc::rejected, Errc::conflict, HTTP 400, transport).
    [[nodiscard]] queen::Result<TransactionResult> commit() const;

    /// What commit() sends.
    [[nodiscard]] const TransactionRequest& request() const noexcept { return request_; }
    /// The first mistake recorded, or empty.
    [[nodiscard]] const std::string& problem() const noexcept { return problem_; }

private:
    void note(std::string problem);

    Client* client_ = nullptr;
    TransactionRequest request_;
    std::string queue_;
    std::string partition_{default_partition};
    std::string problem_;
};

}  // namespace queen::client
