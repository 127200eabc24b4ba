// client/src/consumer.cpp — the consume loop (see consumer.hpp).
#include "queen/client/consumer.hpp"

#include <chrono>
#include <exception>
#include <thread>
#include <vector>

namespace queen::client {

Consumer::Consumer(Client& client, ConsumerOptions options, ConsumerHandler handler)
    : client_(client),
      options_(std::move(options)),
      handler_(std::move(handler)),
      poll_connection_(client.make_connection()) {
    QUEEN_ASSERT(handler_ != nullptr, "a consumer needs a handler");
}

Consumer::~Consumer() = default;

void Consumer::stop() noexcept {
    {
        const std::lock_guard lock{mutex_};
        is_stopping_ = true;
    }
    changed_.notify_all();
    poll_connection_->abort();
}

ConsumerStats Consumer::stats() const {
    const std::lock_guard lock{mutex_};
    return stats_;
}

bool Consumer::pause(std::int64_t ms) {
    std::unique_lock lock{mutex_};
    return !changed_.wait_for(lock, std::chrono::milliseconds{ms},
                              [&] { return is_stopping_.load(); });
}

void Consumer::renew_leases() {
    std::unique_lock lock{mutex_};
    while (!is_stopping_) {
        changed_.wait_for(lock, std::chrono::milliseconds{options_.renew_lease_interval_ms},
                          [&] { return is_stopping_.load(); });
        if (is_stopping_ || active_lease_id_.empty()) {
            continue;
        }
        const std::string lease_id = active_lease_id_;
        lock.unlock();
        auto renewed = client_.extend_lease(lease_id, options_.renew_lease_seconds);
        lock.lock();
        if (renewed && renewed->is_success) {
            ++stats_.lease_renewals;
        } else {
            ++stats_.lease_renewals_failed;
        }
    }
}

queen::Result<ConsumerStats> Consumer::run() {
    QUEEN_ASSERT(!has_run_, "a Consumer runs once");
    has_run_ = true;
    std::thread renewer;
    if (options_.renew_lease_interval_ms > 0) {
        renewer = std::thread([this] { renew_leases(); });
    }
    queen::Status outcome;
    std::uint64_t empty_pops_in_a_row = 0;
    while (!is_stopping_) {
        auto popped = client_.pop(options_.pop, *poll_connection_);
        if (!popped) {
            if (is_stopping_) {
                break;  // stop() aborted the poll
            }
            if (!is_retryable(popped.error())) {
                outcome = std::move(popped).error();
                break;
            }
            {
                const std::lock_guard lock{mutex_};
                ++stats_.retryable_errors;
            }
            // The aborted-by-timeout connection reconnects on the next pop.
            pause(options_.error_backoff_ms);
            continue;
        }
        {
            const std::lock_guard lock{mutex_};
            ++stats_.pops;
            stats_.empty_pops += popped->messages.empty() ? 1 : 0;
        }
        if (popped->messages.empty()) {
            // A long poll that came back empty twice in a row is either an idle queue (a pause
            // costs nothing) or a server answering at once (pop maintenance): do not spin.
            ++empty_pops_in_a_row;
            if (!options_.pop.is_wait || empty_pops_in_a_row >= 2) {
                pause(options_.idle_backoff_ms);
            }
            continue;
        }
        empty_pops_in_a_row = 0;
        if (auto handled = handle_batch(*popped); !handled) {
            outcome = std::move(handled);
            break;
        }
        if (options_.messages_max > 0 && stats().messages >= options_.messages_max) {
            break;
        }
    }
    {
        const std::lock_guard lock{mutex_};
        is_stopping_ = true;
    }
    changed_.notify_all();
    if (renewer.joinable()) {
        renewer.join();
    }
    if (!outcome) {
        return std::move(outcome).error();
    }
    return stats();
}

queen::Status Consumer::handle_batch(const PopResult& batch) {
    {
        const std::lock_guard lock{mutex_};
        active_lease_id_ = batch.lease_id;
    }
    const auto call_handler = [&](std::span<const Message> messages) -> queen::Status {
        try {
            return handler_(messages);
        } catch (const std::exception& error) {
            return queen::Error{queen::Errc::internal, error.what()};
        } catch (...) {
            return queen::Error{queen::Errc::internal, "handler threw a non-exception"};
        }
    };
    queen::Status result;
    const std::span<const Message> all{batch.messages};
    if (options_.is_each) {
        for (std::size_t i = 0; i < all.size(); ++i) {
            const auto one = all.subspan(i, 1);
            const queen::Status outcome = call_handler(one);
            bool is_rest_abandoned = false;
            result = acknowledge(one, outcome, is_rest_abandoned);
            if (!result || is_rest_abandoned || is_stopping_) {
                break;
            }
        }
    } else {
        const queen::Status outcome = call_handler(all);
        bool is_rest_abandoned = false;
        result = acknowledge(all, outcome, is_rest_abandoned);
    }
    const std::lock_guard lock{mutex_};
    active_lease_id_.clear();
    return result;
}

queen::Status Consumer::acknowledge(std::span<const Message> messages, const queen::Status& outcome,
                                    bool& is_rest_abandoned) {
    {
        const std::lock_guard lock{mutex_};
        stats_.messages += messages.size();
        stats_.messages_failed += outcome ? 0 : messages.size();
    }
    const bool is_server_acked = options_.pop.is_auto_ack || messages.front().lease_id.empty();
    if (!options_.is_client_ack || is_server_acked) {
        is_rest_abandoned = !outcome;
        return {};
    }
    std::vector<Ack> acks;
    acks.reserve(messages.size());
    for (const Message& message : messages) {
        acks.push_back(outcome ? Ack::of(message)
                               : Ack::of(message, AckStatus::failed, outcome.error().context));
    }
    queen::Result<std::vector<AckResult>> results = std::vector<AckResult>{};
    if (acks.size() == 1) {
        auto single = client_.ack(acks.front());
        if (single) {
            results = std::vector<AckResult>{std::move(single).value()};
        } else {
            results = std::move(single).error();
        }
    } else {
        results = client_.ack_batch(acks, messages.front().consumer_group);
    }
    if (!results) {
        // Unacked messages come back after the lease expires, so the loop may go on.
        is_rest_abandoned = true;
        if (is_stopping_ && results.error().is(Errc::cancelled)) {
            return {};
        }
        if (!is_retryable(results.error())) {
            return std::move(results).error();
        }
        {
            const std::lock_guard lock{mutex_};
            ++stats_.retryable_errors;
        }
        pause(options_.error_backoff_ms);
        return {};
    }
    bool is_every_failure_dead_lettered = true;
    {
        const std::lock_guard lock{mutex_};
        for (const AckResult& result : *results) {
            stats_.acks_rejected += result.is_success ? 0 : 1;
            is_every_failure_dead_lettered = is_every_failure_dead_lettered && result.is_dlq;
        }
    }
    // A failed ack that was not dead-lettered released the lease: the server redelivers the rest
    // of the batch from the cursor, so handling it now would only duplicate work.
    is_rest_abandoned = !outcome && !is_every_failure_dead_lettered;
    return {};
}

}  // namespace queen::client
