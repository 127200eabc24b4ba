// queues/tests/matching_pop_test.cpp — pops that name a namespace and/or a task instead of a
// queue: which queues match, priority order, one queue per answer, subscriptions, wakeups.
#include <algorithm>

#include "harness.hpp"

namespace queen::queues {
namespace {

using testing::Harness;
using testing::text;

Pop matching(const std::string& namespace_name, const std::string& task, std::uint32_t batch = 1,
             const std::string& group = std::string(queue_mode_group)) {
    Pop pop;
    pop.queue = "";
    pop.namespace_name = namespace_name;
    pop.task = task;
    pop.batch = batch;
    pop.group = group;
    pop.partitions = 10;
    return pop;
}

void configure(Harness& h, const std::string& queue, const std::string& namespace_name,
               const std::string& task, std::int64_t priority) {
    ConfigureQueue command;
    command.queue = queue;
    command.namespace_name = namespace_name;
    command.task = task;
    command.options.priority = priority;
    h.run(command);
}

std::string payloads(const PopResult& result) {
    std::string out;
    for (const PoppedMessage& m : result.messages) {
        out += text(m.payload) + ",";
    }
    return out;
}

TEST_CASE("queues: a namespace pop serves the matching queues by priority, then name",
          "[queues][pop][matching]") {
    Harness h;
    configure(h, "low", "ns", "t", 1);
    configure(h, "high-b", "ns", "t", 5);
    configure(h, "high-a", "ns", "t", 5);
    configure(h, "elsewhere", "other", "t", 9);
    for (const char* queue : {"low", "high-b", "high-a", "elsewhere"}) {
        h.push(queue, "Default", std::string(queue) + "-1", std::string("\"") + queue + "1\"");
        h.push(queue, "Default", std::string(queue) + "-2", std::string("\"") + queue + "2\"");
    }
    // The batch comes from one queue: the first by priority (then name) that delivers.
    const PopResult first = h.run(matching("ns", "", 10));
    REQUIRE(first.outcome == PopResult::Outcome::delivered);
    CHECK(first.queue == "high-a");
    CHECK(payloads(first) == "\"high-a1\",\"high-a2\",");
    CHECK(first.lease.value() != 0);
    CHECK(first.partitions_claimed == 1);
    // high-a's partition is leased now: the next pop goes on to high-b, then low.
    const PopResult second = h.run(matching("ns", "", 1));
    CHECK(second.queue == "high-b");
    CHECK(payloads(second) == "\"high-b1\",");
    const PopResult third = h.run(matching("ns", "", 10));
    CHECK(third.queue == "low");
    CHECK(payloads(third) == "\"low1\",\"low2\",");
    CHECK(h.run(matching("ns", "", 10)).outcome == PopResult::Outcome::empty);
    // Acked, high-b's partition delivers its second message to the next pop.
    AckItem done;
    done.partition = second.messages[0].id.partition;
    done.transaction_id = second.messages[0].transaction_id;
    done.lease = second.lease;
    REQUIRE(h.run(Ack{{done}}).items[0].success);
    const PopResult fourth = h.run(matching("ns", "t", 10));
    CHECK(fourth.queue == "high-b");
    CHECK(payloads(fourth) == "\"high-b2\",");
    // The named queue route is unchanged by all this: "elsewhere" was never touched.
    CHECK(payloads(h.pop("elsewhere", 10)) == "\"elsewhere1\",\"elsewhere2\",");
}

TEST_CASE("queues: namespace-only, task-only and both match as the queues were named",
          "[queues][pop][matching]") {
    Harness h;
    // Queues a push creates: the namespace is the name up to the first dot, the task the part
    // after it up to the next one.
    h.push("billing.invoice.eu", "Default", "t1", "1");
    h.push("billing.refund", "Default", "t2", "2");
    h.push("shop.invoice", "Default", "t3", "3");
    h.push("plain", "Default", "t4", "4");
    // Configured queues take the names the configure call gave.
    configure(h, "custom", "billing", "", 0);
    h.push("custom", "Default", "t5", "5");

    const auto served = [&h](const std::string& namespace_name, const std::string& task) {
        std::vector<std::string> queues;
        // Autoack drains each queue: one answer per matching queue with messages.
        Pop pop = matching(namespace_name, task, 10);
        pop.auto_ack = true;
        pop.group = "g-" + namespace_name + "-" + task;
        while (true) {
            const PopResult result = h.run(pop);
            if (result.outcome != PopResult::Outcome::delivered) {
                break;
            }
            REQUIRE(result.lease.value() == 0);
            queues.push_back(result.queue);
        }
        return queues;
    };
    CHECK(served("billing", "") ==
          std::vector<std::string>{"billing.invoice.eu", "billing.refund", "custom"});
    CHECK(served("", "invoice") == std::vector<std::string>{"billing.invoice.eu", "shop.invoice"});
    CHECK(served("billing", "invoice") == std::vector<std::string>{"billing.invoice.eu"});
    CHECK(served("plain", "") == std::vector<std::string>{"plain"});
    CHECK(served("nothing", "") == std::vector<std::string>{});
    CHECK(served("", "nothing") == std::vector<std::string>{});
    CHECK(served("shop", "refund") == std::vector<std::string>{});
    // A configure renames what a queue matches.
    configure(h, "plain", "", "invoice", 0);
    h.push("plain", "Default", "t6", "6");
    CHECK(served("plain", "").empty());
    CHECK(served("", "invoice") == std::vector<std::string>{"plain"});
    // And so does a restart (the names are rebuilt from the queue records).
    h.push("plain", "Default", "t7", "7");
    h.reopen();
    CHECK(served("", "invoice") == std::vector<std::string>{"plain"});
}

TEST_CASE("queues: a matching pop with nothing to match is empty, a partition needs a queue",
          "[queues][pop][matching]") {
    Harness h;
    CHECK(h.run(matching("ns", "")).outcome == PopResult::Outcome::empty);
    h.push("ns.task", "Default", "t1");
    Pop with_partition = matching("ns", "");
    with_partition.has_partition = true;
    with_partition.partition = "Default";
    auto txn = h.env->begin_write().value();
    const auto rejected = h.state->apply(txn, with_partition, TimestampMs{h.now_ms});
    REQUIRE_FALSE(rejected.has_value());
    CHECK(rejected.error().is(queen::Errc::invalid_argument));
}

TEST_CASE("queues: a new group's first matching pop subscribes it to every matching queue",
          "[queues][pop][matching][subscription]") {
    Harness h;
    configure(h, "first", "ns", "", 2);
    configure(h, "second", "ns", "", 1);
    h.push("first", "Default", "old-1", "\"old-1\"");
    h.push("second", "Default", "old-2", "\"old-2\"");
    h.advance_ms(10);
    Pop pop = matching("ns", "", 10, "fresh");
    pop.subscription_mode = SubscriptionMode::new_only;
    CHECK(h.run(pop).outcome == PopResult::Outcome::empty);  // history skipped on both
    h.advance_ms(10);
    h.push("second", "Default", "new-2", "\"new-2\"");
    const PopResult popped = h.run(pop);
    CHECK(popped.queue == "second");
    CHECK(payloads(popped) == "\"new-2\",");
    // The queue mode group reads everything, in priority order.
    const PopResult all = h.run(matching("ns", "", 10));
    CHECK(all.queue == "first");
    CHECK(payloads(all) == "\"old-1\",");
}

TEST_CASE("queues: after a matching pop, wakeups name its wait keys for the matching queues",
          "[queues][pop][matching][wakeup]") {
    Harness h;
    configure(h, "q", "ns", "task", 0);
    (void)h.state->take_wakeups();
    h.push("q", "Default", "t1");
    // No pop of a namespace or task ran yet: only the queue.
    std::vector<Wakeup> wakeups = h.state->take_wakeups();
    REQUIRE(wakeups.size() == 1);
    CHECK(wakeups[0].queue == "q");
    CHECK(h.run(matching("", "task", 10)).outcome == PopResult::Outcome::delivered);
    (void)h.state->take_wakeups();
    h.push("q", "Default", "t2");
    h.push("q", "other", "t3");
    wakeups = h.state->take_wakeups();
    std::vector<std::string> keys;
    for (const Wakeup& w : wakeups) {
        keys.push_back(w.queue);
    }
    std::vector<std::string> expected{matching_wait_key("ns", ""), matching_wait_key("", "task"),
                                      matching_wait_key("ns", "task"), "q"};
    std::sort(expected.begin(), expected.end());
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    CHECK(keys == expected);
    CHECK(matching_wait_key("ns", "") != matching_wait_key("", "ns"));
    CHECK(matching_wait_key("ns", "task").front() == '\0');
}

}  // namespace
}  // namespace queen::queues
