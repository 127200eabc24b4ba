// modules/node/src/waiters.cpp — parked long polls and their deadline timer.
#include "waiters.hpp"

#include <chrono>
#include <limits>
#include <vector>

#include "queen/core/thread_name.hpp"

namespace queen::node::detail {

class Waiters::Token final : public api::WaitToken {
public:
    Token(Waiters& owner, std::uint64_t id) : owner_(owner), id_(id) {}
    void cancel() override { owner_.cancel(id_); }

private:
    Waiters& owner_;
    std::uint64_t id_;
};

Waiters::Waiters(const Clock& clock) : clock_(clock), timer_([this] { run_timer(); }) {}

Waiters::~Waiters() {
    stop();
}

std::unique_ptr<api::WaitToken> Waiters::add(std::string tenant, std::string queue,
                                             std::int64_t deadline_ms,
                                             std::function<void(bool)> callback) {
    std::unique_lock lock(mutex_);
    if (stopping_) {
        lock.unlock();
        callback(true);
        return std::make_unique<Token>(*this, 0);
    }
    const std::uint64_t id = next_id_++;
    by_queue_[{tenant, queue}].insert(id);
    // Wake the timer thread only when it sleeps past this deadline: most pops register and
    // cancel a wait at once, and a wake-up per pop would cost a context switch each.
    const bool earliest = deadline_ms < timer_sleeps_until_ms_;
    if (earliest) {
        timer_sleeps_until_ms_ = deadline_ms;
    }
    by_deadline_.insert({deadline_ms, id});
    waits_.emplace(id, Wait{std::move(tenant), std::move(queue), deadline_ms, std::move(callback)});
    lock.unlock();
    if (earliest) {
        timer_wakeup_.notify_one();
    }
    return std::make_unique<Token>(*this, id);
}

void Waiters::cancel(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    auto it = waits_.find(id);
    if (it == waits_.end()) {
        return;
    }
    auto queue_it = by_queue_.find({it->second.tenant, it->second.queue});
    if (queue_it != by_queue_.end()) {
        queue_it->second.erase(id);
        if (queue_it->second.empty()) {
            by_queue_.erase(queue_it);
        }
    }
    by_deadline_.erase({it->second.deadline_ms, id});
    waits_.erase(it);
}

void Waiters::wake(const std::string& tenant, const std::string& queue) {
    std::vector<std::function<void(bool)>> fired;
    {
        std::lock_guard lock(mutex_);
        auto queue_it = by_queue_.find({tenant, queue});
        if (queue_it == by_queue_.end()) {
            return;
        }
        for (std::uint64_t id : queue_it->second) {
            auto it = waits_.find(id);
            by_deadline_.erase({it->second.deadline_ms, id});
            fired.push_back(std::move(it->second.callback));
            waits_.erase(it);
        }
        by_queue_.erase(queue_it);
    }
    for (auto& callback : fired) {
        callback(false);
    }
}

void Waiters::wake_tenant(const std::string& tenant) {
    std::vector<std::string> queues;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [key, ids] : by_queue_) {
            if (key.first == tenant) {
                queues.push_back(key.second);
            }
        }
    }
    for (const auto& queue : queues) {
        wake(tenant, queue);
    }
}

void Waiters::stop() {
    std::vector<std::function<void(bool)>> fired;
    {
        std::lock_guard lock(mutex_);
        if (stopping_ && !timer_.joinable()) {
            return;
        }
        stopping_ = true;
        for (auto& [id, wait] : waits_) {
            fired.push_back(std::move(wait.callback));
        }
        waits_.clear();
        by_queue_.clear();
        by_deadline_.clear();
    }
    timer_wakeup_.notify_all();
    if (timer_.joinable()) {
        timer_.join();
    }
    for (auto& callback : fired) {
        callback(true);
    }
}

std::size_t Waiters::parked() const {
    std::lock_guard lock(mutex_);
    return waits_.size();
}

void Waiters::run_timer() {
    set_thread_name("pop-waiters");
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        if (by_deadline_.empty()) {
            timer_sleeps_until_ms_ = std::numeric_limits<std::int64_t>::max();
            timer_wakeup_.wait(lock);
            continue;
        }
        const std::int64_t now = now_ms();
        const auto [deadline, id] = *by_deadline_.begin();
        if (deadline > now) {
            // Cancelled waits leave the set without waking us; we may wake for nothing at their
            // deadline, and then sleep until the earliest one still parked.
            timer_sleeps_until_ms_ = deadline;
            timer_wakeup_.wait_for(lock, std::chrono::milliseconds(deadline - now));
            continue;
        }
        auto it = waits_.find(id);
        by_deadline_.erase(by_deadline_.begin());
        auto callback = std::move(it->second.callback);
        auto queue_it = by_queue_.find({it->second.tenant, it->second.queue});
        queue_it->second.erase(id);
        if (queue_it->second.empty()) {
            by_queue_.erase(queue_it);
        }
        waits_.erase(it);
        lock.unlock();
        callback(true);
        lock.lock();
    }
}

}  // namespace queen::node::detail
