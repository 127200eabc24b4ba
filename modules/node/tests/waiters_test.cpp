// modules/node/tests/waiters_test.cpp — parked long polls fire once: by wake, by deadline, or
// never.
#include "waiters.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "queen/testing/catch.hpp"

namespace {
/// Counts fired callbacks and lets a test wait for the next one (no sleeps).
struct Fired {
    std::mutex mutex;
    std::condition_variable changed;
    int woken = 0;
    int timed_out = 0;
    std::function<void(bool)> callback() {
        return [this](bool is_timeout) {
            std::lock_guard lock(mutex);
            (is_timeout ? timed_out : woken) += 1;
            changed.notify_all();
        };
    }
    void wait_total(int total) {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return woken + timed_out >= total; });
    }
};
}  // namespace

TEST_CASE("node: a wake fires the waits of that queue only, once", "[node][waiters]") {
    queen::node::detail::Waiters waiters(queen::SystemClock::instance());
    Fired fired;
    const auto far = waiters.now_ms() + 600'000;
    auto a = waiters.add("default", "q1", far, fired.callback());
    auto b = waiters.add("default", "q1", far, fired.callback());
    auto c = waiters.add("default", "q2", far, fired.callback());
    auto d = waiters.add("other", "q1", far, fired.callback());
    CHECK(waiters.parked() == 4);
    waiters.wake("default", "q1");
    CHECK(fired.woken == 2);
    CHECK(waiters.parked() == 2);
    waiters.wake("default", "q1");  // nothing left there
    CHECK(fired.woken == 2);
    waiters.wake_tenant("default");
    CHECK(fired.woken == 3);
    waiters.stop();  // the last one is answered as timed out
    CHECK(fired.timed_out == 1);
}

TEST_CASE("node: a wait times out at its deadline, and a cancelled one never fires",
          "[node][waiters]") {
    queen::node::detail::Waiters waiters(queen::SystemClock::instance());
    Fired fired;
    auto cancelled = waiters.add("t", "q", waiters.now_ms() + 20, fired.callback());
    cancelled->cancel();
    auto expiring = waiters.add("t", "q", waiters.now_ms() + 30, fired.callback());
    fired.wait_total(1);
    CHECK(fired.timed_out == 1);
    CHECK(fired.woken == 0);
    CHECK(waiters.parked() == 0);
    waiters.wake("t", "q");
    CHECK(fired.woken == 0);
}

TEST_CASE("node: the timer thread is woken for an earlier deadline only, and misses none",
          "[node][waiters]") {
    queen::node::detail::Waiters waiters(queen::SystemClock::instance());
    Fired fired;
    auto far = waiters.add("t", "far", waiters.now_ms() + 600'000, fired.callback());
    // The timer sleeps towards `far`: a nearer deadline must wake it.
    auto near = waiters.add("t", "near", waiters.now_ms() + 20, fired.callback());
    fired.wait_total(1);
    CHECK(fired.timed_out == 1);
    CHECK(waiters.parked() == 1);
    // A cancelled wait leaves the timer sleeping towards its deadline without a wake-up; a
    // later deadline added meanwhile (no wake-up either) still fires on time after it.
    auto cancelled = waiters.add("t", "gone", waiters.now_ms() + 10, fired.callback());
    cancelled->cancel();
    auto later = waiters.add("t", "later", waiters.now_ms() + 40, fired.callback());
    fired.wait_total(2);
    CHECK(fired.timed_out == 2);
    CHECK(waiters.parked() == 1);
    waiters.stop();  // `far` is answered as timed out
    CHECK(fired.timed_out == 3);
    CHECK(fired.woken == 0);
}
