// modules/node/src/waiters.hpp — parked long polls: woken by applied changes or by their deadline.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "queen/api/backend.hpp"
#include "queen/core/clock.hpp"

namespace queen::node::detail {

/// Registry of parked waits keyed by (tenant, queue), plus one timer thread for deadlines.
/// A wait fires exactly once: by wake() (timed_out = false) or by its deadline (true), or never
/// after its token was cancelled. Callbacks run outside the registry lock, on the thread that
/// called wake() or on the timer thread; they must not block.
/// Thread-safety: every member may be called from any thread.
class Waiters {
public:
    explicit Waiters(const Clock& clock);
    ~Waiters();
    Waiters(const Waiters&) = delete;
    Waiters& operator=(const Waiters&) = delete;

    /// Parks a wait until wake(tenant, queue) or until monotonic `deadline_ms`.
    std::unique_ptr<api::WaitToken> add(std::string tenant, std::string queue,
                                        std::int64_t deadline_ms,
                                        std::function<void(bool timed_out)> callback);
    /// Fires every wait parked on (tenant, queue).
    void wake(const std::string& tenant, const std::string& queue);
    /// Fires every wait of `tenant` (e.g. after maintenance mode changes).
    void wake_tenant(const std::string& tenant);
    /// Fires every wait as timed out and stops the timer thread. Idempotent.
    void stop();

    [[nodiscard]] std::size_t parked() const;
    [[nodiscard]] std::int64_t now_ms() const { return clock_.monotonic_ns() / 1'000'000; }

private:
    struct Wait {
        std::string tenant;
        std::string queue;
        std::int64_t deadline_ms = 0;
        std::function<void(bool)> callback;
    };
    class Token;
    void cancel(std::uint64_t id);
    void run_timer();

    const Clock& clock_;
    mutable std::mutex mutex_;
    std::condition_variable timer_wakeup_;
    std::map<std::uint64_t, Wait> waits_;  // by id
    std::map<std::pair<std::string, std::string>, std::set<std::uint64_t>> by_queue_;
    std::set<std::pair<std::int64_t, std::uint64_t>> by_deadline_;  // (deadline, id)
    /// When the timer thread wakes up by itself (max: never); add() notifies it only for an
    /// earlier deadline.
    std::int64_t timer_sleeps_until_ms_ = std::numeric_limits<std::int64_t>::max();
    std::uint64_t next_id_ = 1;
    bool stopping_ = false;
    std::thread timer_;
};

}  // namespace queen::node::detail
