// client/src/transaction.cpp — TransactionBuilder: each call appends one operation (or a guard) to
// the TransactionRequest that commit() sends.
#include "queen/client/transaction.hpp"

#include <utility>

#include "queen/client/client.hpp"
#include "queen/client/errc.hpp"

namespace queen::client {

void TransactionBuilder::note(std::string problem) {
    if (problem_.empty()) {
        problem_ = std::move(problem);
    }
}

TransactionBuilder& TransactionBuilder::ack(const Message& message, AckStatus status,
                                            std::string error) {
    return ack(Ack::of(message, status, std::move(error)));
}

TransactionBuilder& TransactionBuilder::ack(Ack ack) {
    request_.operations.emplace_back(std::move(ack));
    return *this;
}

TransactionBuilder& TransactionBuilder::queue(std::string_view queue, std::string_view partition) {
    queue_ = queue;
    partition_ = partition;
    return *this;
}

TransactionBuilder& TransactionBuilder::partition(std::string_view partition) {
    partition_ = partition;
    return *this;
}

TransactionBuilder& TransactionBuilder::push(std::string payload_json) {
    PushItem item;
    item.payload_json = std::move(payload_json);
    return push(std::move(item));
}

TransactionBuilder& TransactionBuilder::push(std::string payload_json,
                                             std::chrono::milliseconds delay) {
    PushItem item;
    item.payload_json = std::move(payload_json);
    item.delay_ms = delay.count();
    if (item.delay_ms < 0) {
        note("push: a negative delay");
    }
    return push(std::move(item));
}

TransactionBuilder& TransactionBuilder::push(PushItem item) {
    if (item.queue.empty()) {
        if (queue_.empty()) {
            note("push before any queue(): name the queue first");
        }
        item.queue = queue_;
        item.partition = partition_;
    }
    TransactionPush push;
    push.items.push_back(std::move(item));
    request_.operations.emplace_back(std::move(push));
    return *this;
}

TransactionBuilder& TransactionBuilder::kv_set(std::string bucket, std::string key,
                                               std::string value_json,
                                               std::optional<std::uint64_t> expected_version,
                                               std::chrono::milliseconds ttl) {
    if (ttl.count() < 0) {
        note("kv_set: a negative ttl");
    }
    return kv_set(KvSet{std::move(bucket), std::move(key), std::move(value_json), expected_version,
                        ttl.count()});
}

TransactionBuilder& TransactionBuilder::kv_set(KvSet set) {
    request_.operations.emplace_back(std::move(set));
    return *this;
}

TransactionBuilder& TransactionBuilder::kv_delete(std::string bucket, std::string key,
                                                  std::optional<std::uint64_t> expected_version) {
    request_.operations.emplace_back(KvDelete{std::move(bucket), std::move(key), expected_version});
    return *this;
}

TransactionBuilder& TransactionBuilder::kv_check(std::string bucket, std::string key,
                                                 std::uint64_t version) {
    request_.operations.emplace_back(KvCheck{std::move(bucket), std::move(key), version});
    return *this;
}

TransactionBuilder& TransactionBuilder::timer(std::string id, std::chrono::milliseconds delay,
                                              std::string queue, std::string payload_json) {
    TimerSet timer;
    timer.id = std::move(id);
    timer.queue = std::move(queue);
    timer.payload_json = std::move(payload_json);
    timer.delay_ms = delay.count();
    return this->timer(std::move(timer));
}

TransactionBuilder& TransactionBuilder::timer_at(std::string id,
                                                 std::chrono::system_clock::time_point at,
                                                 std::string queue, std::string payload_json) {
    TimerSet timer;
    timer.id = std::move(id);
    timer.queue = std::move(queue);
    timer.payload_json = std::move(payload_json);
    timer.at_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
    if (timer.at_ms <= 0) {
        note("timer_at: a time before 1970");
    }
    return this->timer(std::move(timer));
}

TransactionBuilder& TransactionBuilder::timer(TimerSet timer) {
    request_.operations.emplace_back(std::move(timer));
    return *this;
}

TransactionBuilder& TransactionBuilder::timer_cancel(std::string id) {
    request_.operations.emplace_back(TimerCancel{std::move(id)});
    return *this;
}

TransactionBuilder& TransactionBuilder::lock_release(const LockGrant& grant) {
    return lock_release(grant.guard());
}

TransactionBuilder& TransactionBuilder::lock_release(LockGuard lock) {
    request_.operations.emplace_back(LockRelease{std::move(lock.name), lock.token});
    return *this;
}

TransactionBuilder& TransactionBuilder::guard(const LockGrant& grant) {
    return guard(grant.guard());
}

TransactionBuilder& TransactionBuilder::guard(LockGuard lock) {
    request_.guards.push_back(std::move(lock));
    return *this;
}

TransactionBuilder& TransactionBuilder::next(std::string_view queue, std::string_view partition,
                                             std::int64_t batch) {
    NextPop next;
    next.queue = queue;
    next.partition = partition;
    next.batch = batch;
    return this->next(std::move(next));
}

TransactionBuilder& TransactionBuilder::next(NextPop next) {
    // An empty queue or a batch < 1 is refused when the request is built (build_transaction),
    // for hand-built requests too.
    request_.next = std::move(next);
    return *this;
}

queen::Result<TransactionResult> TransactionBuilder::commit() const {
    if (!problem_.empty()) {
        return queen::Error{Errc::invalid_argument, "transaction: " + problem_};
    }
    if (client_ == nullptr) {
        return queen::Error{Errc::invalid_argument,
                            "transaction: the builder has no client (send request() yourself)"};
    }
    return client_->transaction(request_);
}

}  // namespace queen::client
