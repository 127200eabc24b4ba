// queues/tests/queues_test.cpp — apply semantics of every queue command (docs/http-api.md, data
// plane).
#include "harness.hpp"
#include "queen/core/rng.hpp"

namespace queen::queues {
namespace {

using testing::Harness;
using testing::text;
using testing::Transaction;
using testing::TransactionOp;
using testing::TransactionResult;

std::string payloads(const PopResult& result) {
    std::string out;
    for (const auto& m : result.messages) {
        out += text(m.payload) + ",";
    }
    return out;
}

TEST_CASE("queues: push then pop is FIFO per partition and ack releases the lease",
          "[queues][push][pop][ack]") {
    Harness h;
    auto pushed = h.push("q", "Default", "t1", "a");
    REQUIRE(pushed.items[0].status == PushStatus::queued);
    h.push("q", "Default", "t2", "b");
    h.push("q", "Default", "t3", "c");
    auto first = h.pop("q", 2);
    REQUIRE(first.outcome == PopResult::Outcome::delivered);
    REQUIRE(payloads(first) == "a,b,");
    REQUIRE(first.lease.value() != 0);
    REQUIRE(first.partitions_claimed == 1);
    // Partition-level lease: nothing else for the same group while it is held.
    REQUIRE(h.pop("q").outcome == PopResult::Outcome::empty);
    auto ack1 = h.ack(first.messages[0], first.lease);
    REQUIRE(ack1.success);
    REQUIRE(ack1.lease_released == LeaseReleased::no);
    auto ack2 = h.ack(first.messages[1], first.lease);
    REQUIRE(ack2.success);
    REQUIRE(ack2.lease_released == LeaseReleased::yes);
    auto second = h.pop("q", 5);
    REQUIRE(payloads(second) == "c,");
    REQUIRE(second.lease != first.lease);
}

TEST_CASE("queues: push is idempotent per (partition, transactionId), also within a batch",
          "[queues][push]") {
    Harness h;
    Push push;
    for (const char* txid : {"x", "y", "x"}) {
        PushItem item;
        item.queue = "q";
        item.transaction_id = txid;
        item.payload = text(txid);
        push.items.push_back(item);
    }
    auto result = h.run(push);
    REQUIRE(result.items.size() == 3);
    REQUIRE(result.items[0].status == PushStatus::queued);
    REQUIRE(result.items[1].status == PushStatus::queued);
    REQUIRE(result.items[2].status == PushStatus::duplicate);
    REQUIRE(result.items[2].message_id == result.items[0].message_id);
    auto again = h.push("q", "Default", "y");
    REQUIRE(again.items[0].status == PushStatus::duplicate);
    REQUIRE(again.items[0].message_id == result.items[1].message_id);
    // The same id on another partition is another message.
    REQUIRE(h.push("q", "other", "x").items[0].status == PushStatus::queued);
    REQUIRE(h.pop("q", 10).messages.size() + h.pop("q", 10).messages.size() == 3);
}

TEST_CASE("queues: an expired lease redelivers the unacked messages without a retry count",
          "[queues][lease]") {
    Harness h;
    QueueOptions options;
    options.lease_time_s = 1;
    h.configure("q", options);
    h.push("q", "Default", "t1", "a");
    auto first = h.pop("q");
    REQUIRE(payloads(first) == "a,");
    REQUIRE(h.state->next_due().has_value());
    REQUIRE(h.state->next_due()->value() == h.now_ms + 1000);
    // A second lease, of another queue, half a second later: next_due(after) skips the first.
    const std::int64_t leased_at = h.now_ms;
    h.configure("r", options);
    h.push("r", "Default", "t1", "b");
    h.advance_ms(500);
    REQUIRE(payloads(h.pop("r")) == "b,");
    REQUIRE(h.state->next_due()->value() == leased_at + 1000);
    REQUIRE(h.state->next_due(TimestampMs{leased_at + 999})->value() == leased_at + 1000);
    REQUIRE(h.state->next_due(TimestampMs{leased_at + 1000})->value() == leased_at + 1500);
    REQUIRE_FALSE(h.state->next_due(TimestampMs{leased_at + 1500}).has_value());
    h.advance_ms(499);
    REQUIRE(h.state->queues_due(TimestampMs{h.now_ms}).empty());
    REQUIRE(h.pop("q").outcome == PopResult::Outcome::empty);
    h.advance_ms(1);
    REQUIRE(h.state->queues_due(TimestampMs{h.now_ms}) == std::vector<std::string>{"q"});
    auto again = h.pop("q");
    REQUIRE(payloads(again) == "a,");
    REQUIRE(again.messages[0].retry_count == 0);
    // The old lease is now invalid.
    auto stale = h.ack(first.messages[0], first.lease);
    REQUIRE_FALSE(stale.success);
    REQUIRE(stale.error == "Invalid or expired lease");
    REQUIRE(h.ack(again.messages[0], again.lease).success);
}

TEST_CASE("queues: lease extend moves the expiry of every partition under the lease",
          "[queues][lease]") {
    Harness h;
    QueueOptions options;
    options.lease_time_s = 10;
    h.configure("q", options);
    h.push("q", "p1", "a");
    h.push("q", "p2", "b");
    auto popped = h.pop("q", 10, std::string(queue_mode_group), 2);
    REQUIRE(popped.partitions_claimed == 2);
    h.advance_s(5);
    auto extended = h.run(ExtendLease{popped.lease, 60});
    REQUIRE(extended.success);
    REQUIRE(extended.expires_at.value() == h.now_ms + 60'000);
    h.advance_s(30);
    REQUIRE(h.pop("q", 10, std::string(queue_mode_group), 2).outcome == PopResult::Outcome::empty);
    h.advance_s(31);
    auto late = h.run(ExtendLease{popped.lease, 60});
    REQUIRE_FALSE(late.success);
    REQUIRE(late.error == "Lease already expired");
    REQUIRE(h.run(ExtendLease{LeaseId{424242}, 60}).error == "Lease not found");
    REQUIRE(h.pop("q", 10, std::string(queue_mode_group), 2).messages.size() == 2);
}

TEST_CASE("queues: consumer groups fan out, each group is exclusive inside", "[queues][groups]") {
    Harness h;
    for (int i = 0; i < 4; ++i) {
        h.push("q", "Default", "t" + std::to_string(i), std::to_string(i));
    }
    auto a = h.pop("q", 10, "A");
    auto b = h.pop("q", 10, "B");
    REQUIRE(payloads(a) == "0,1,2,3,");
    REQUIRE(payloads(b) == "0,1,2,3,");
    REQUIRE(h.pop("q", 10, "A").outcome == PopResult::Outcome::empty);
    auto plain = h.pop("q", 10);
    REQUIRE(plain.messages.size() == 4);
}

TEST_CASE("queues: partitions=N claims N partitions under one lease, batch caps the total",
          "[queues][pop]") {
    Harness h;
    for (int p = 0; p < 5; ++p) {
        for (int i = 0; i < 5; ++i) {
            h.push("q", "p" + std::to_string(p), "t" + std::to_string(i));
        }
    }
    auto one = h.pop("q", 100);
    REQUIRE(one.partitions_claimed == 1);
    REQUIRE(one.messages.size() == 5);
    auto capped = h.pop("q", 10, std::string(queue_mode_group), 5);
    REQUIRE(capped.messages.size() == 10);
    REQUIRE(capped.partitions_claimed == 2);
    auto three = h.pop("q", 100, std::string(queue_mode_group), 3);
    REQUIRE(three.partitions_claimed == 2);  // only two unleased partitions are left
    REQUIRE(three.messages.size() == 10);
    for (const auto& m : three.messages) {
        REQUIRE(m.id.partition != one.messages[0].id.partition);
    }
}

TEST_CASE("queues: pop selection is round-robin across partitions", "[queues][pop]") {
    Harness h;
    for (int i = 0; i < 3; ++i) {
        for (int p = 0; p < 3; ++p) {
            h.push("q", "p" + std::to_string(p), "t" + std::to_string(i), "p" + std::to_string(p));
        }
    }
    QueueOptions options;
    h.configure("q", options);
    std::string order;
    for (int i = 0; i < 6; ++i) {
        auto popped = h.pop("q", 1, std::string(queue_mode_group), 1);
        REQUIRE(popped.messages.size() == 1);
        order += text(popped.messages[0].payload) + " ";
        REQUIRE(h.ack(popped.messages[0], popped.lease).lease_released == LeaseReleased::yes);
    }
    REQUIRE(order == "p0 p1 p2 p0 p1 p2 ");
}

TEST_CASE("queues: failed acks retry the batch retryLimit times, then dead-letter",
          "[queues][retry][dlq]") {
    Harness h;
    QueueOptions options;
    options.retry_limit = 1;
    options.retry_delay_ms = 500;
    h.configure("q", options);
    h.push("q", "Default", "t1", "a");
    h.push("q", "Default", "t2", "b");
    auto first = h.pop("q");
    auto failed = h.ack(first.messages[0], first.lease, AckStatus::failed,
                        std::string(queue_mode_group), "boom");
    REQUIRE(failed.success);
    REQUIRE(failed.lease_released == LeaseReleased::yes);
    REQUIRE_FALSE(failed.dlq);
    // retryDelay holds the batch back.
    REQUIRE(h.pop("q").outcome == PopResult::Outcome::empty);
    h.advance_ms(500);
    auto second = h.pop("q");
    REQUIRE(payloads(second) == "a,");
    REQUIRE(second.messages[0].retry_count == 1);
    auto dead = h.ack(second.messages[0], second.lease, AckStatus::failed,
                      std::string(queue_mode_group), "boom again");
    REQUIRE(dead.dlq);
    auto dlq = h.read(
        [](const Tables& t, const store::Txn& txn) { return list_dlq(t, txn, "q", "", 100, 0); });
    REQUIRE(dlq.size() == 1);
    REQUIRE(dlq[0].error == "boom again");
    REQUIRE(text(dlq[0].payload) == "a");
    REQUIRE(dlq[0].retry_count == 1);
    REQUIRE(dlq[0].transaction_id == "t1");
    auto third = h.pop("q");
    REQUIRE(payloads(third) == "b,");
}

TEST_CASE("queues: retryLimit 3 delivers a failing batch exactly until it succeeds",
          "[queues][retry]") {
    Harness h;
    QueueOptions options;
    options.retry_limit = 3;
    options.retry_delay_ms = 0;
    h.configure("q", options);
    h.push("q", "Default", "t1", "a");
    int attempts = 0;
    for (;;) {
        auto popped = h.pop("q");
        if (popped.messages.empty()) {
            break;
        }
        ++attempts;
        const auto status = attempts < 3 ? AckStatus::failed : AckStatus::completed;
        REQUIRE(h.ack(popped.messages[0], popped.lease, status).success);
    }
    REQUIRE(attempts == 3);
}

TEST_CASE("queues: dlq and retry statuses, unknown status and unknown message", "[queues][ack]") {
    Harness h;
    h.push("q", "Default", "t1", "a");
    h.push("q", "Default", "t2", "b");
    auto popped = h.pop("q", 2);
    auto retried = h.ack(popped.messages[0], popped.lease, AckStatus::retry);
    REQUIRE(retried.lease_released == LeaseReleased::yes);
    auto again = h.pop("q", 2);
    REQUIRE(payloads(again) == "a,b,");
    REQUIRE(again.messages[0].retry_count == 0);
    REQUIRE(h.ack(again.messages[0], again.lease, AckStatus::dlq).dlq);
    auto unknown = h.ack(again.messages[1], again.lease, AckStatus::unknown);
    REQUIRE_FALSE(unknown.success);
    REQUIRE(unknown.error.empty());
    PoppedMessage ghost = again.messages[1];
    ghost.transaction_id = "nope";
    REQUIRE(h.ack(ghost, LeaseId{0}).error == "Message not found");
    REQUIRE(h.ack(again.messages[1], again.lease).lease_released == LeaseReleased::yes);
    REQUIRE(h.pop("q").outcome == PopResult::Outcome::empty);
}

TEST_CASE("queues: autoAck consumes on delivery without a lease", "[queues][pop]") {
    Harness h;
    h.push("q", "Default", "t1", "a");
    h.push("q", "Default", "t2", "b");
    Pop pop;
    pop.queue = "q";
    pop.auto_ack = true;
    auto first = h.run(pop);
    REQUIRE(first.lease.value() == 0);
    REQUIRE(payloads(first) == "a,");
    auto second = h.run(pop);
    REQUIRE(payloads(second) == "b,");
    REQUIRE(h.run(pop).outcome == PopResult::Outcome::empty);
}

TEST_CASE("queues: next_due follows leases across queues, acks and deleted queues",
          "[queues][lease]") {
    Harness h;
    QueueOptions options;
    options.lease_time_s = 1;
    const std::int64_t start = h.now_ms;
    for (const char* name : {"a", "b", "c"}) {
        h.configure(name, options);
        h.push(name, "Default", "t1", name);
        REQUIRE(h.pop(name).messages.size() == 1);  // leased until now + 1000
        h.advance_ms(100);
    }
    REQUIRE(h.state->next_due()->value() == start + 1000);
    REQUIRE(h.state->queues_due(TimestampMs{start + 1100}) == std::vector<std::string>{"a", "b"});
    // A deleted queue's lease is no longer due; a later one of another queue is.
    REQUIRE(h.run(DeleteQueue{"a"}).existed);
    REQUIRE(h.state->next_due()->value() == start + 1100);
    REQUIRE(h.state->queues_due(TimestampMs{start + 1100}) == std::vector<std::string>{"b"});
    REQUIRE(h.state->next_due(TimestampMs{start + 1100})->value() == start + 1200);
    // An expired lease popped again moves its queue's due time to the new lease.
    h.advance_ms(1000);  // start + 1300: b's and c's leases are over
    REQUIRE(h.pop("b").messages.size() == 1);
    REQUIRE(h.state->next_due()->value() == start + 1200);  // c: still deferred until popped
    REQUIRE(h.pop("c").messages.size() == 1);
    REQUIRE(h.state->next_due()->value() == start + 2300);
    REQUIRE(h.state->queues_due(TimestampMs{start + 2300}) == std::vector<std::string>{"b", "c"});
}

TEST_CASE("queues: delayedProcessing and windowBuffer hold messages back", "[queues][options]") {
    Harness h;
    QueueOptions delayed;
    delayed.delayed_processing_s = 2;
    h.configure("d", delayed);
    h.push("d", "Default", "t1", "a");
    REQUIRE(h.pop("d").outcome == PopResult::Outcome::empty);
    REQUIRE(h.state->next_due()->value() == h.now_ms + 2000);
    h.advance_ms(1999);
    REQUIRE(h.pop("d").outcome == PopResult::Outcome::empty);
    h.advance_ms(1);
    REQUIRE(payloads(h.pop("d")) == "a,");

    QueueOptions window;
    window.window_buffer_s = 3;
    h.configure("w", window);
    h.push("w", "Default", "t1", "a");
    h.advance_s(2);
    h.push("w", "Default", "t2", "b");
    h.advance_s(2);
    REQUIRE(h.pop("w", 10).outcome == PopResult::Outcome::empty);  // newest is 2 s old
    h.advance_s(1);
    REQUIRE(payloads(h.pop("w", 10)) == "a,b,");
}

TEST_CASE("queues: maxSize rejects pushes beyond it with a clear error", "[queues][options]") {
    Harness h;
    QueueOptions options;
    options.max_size = 2;
    h.configure("q", options);
    REQUIRE(h.push("q", "Default", "1").items[0].status == PushStatus::queued);
    REQUIRE(h.push("q", "Default", "2").items[0].status == PushStatus::queued);
    auto full = h.push("q", "Default", "3");
    REQUIRE(full.items[0].status == PushStatus::failed);
    REQUIRE(full.items[0].error.find("maxSize") != std::string::npos);
    // A duplicate is still recognised when full.
    REQUIRE(h.push("q", "Default", "2").items[0].status == PushStatus::duplicate);
}

TEST_CASE("queues: subscription mode new skips history for a brand-new group",
          "[queues][groups][subscription]") {
    Harness h;
    for (int i = 0; i < 5; ++i) {
        h.push("q", "Default", "old" + std::to_string(i));
    }
    h.advance_s(1);
    Pop pop;
    pop.queue = "q";
    pop.group = "fresh";
    pop.batch = 10;
    pop.subscription_mode = SubscriptionMode::new_only;
    REQUIRE(h.run(pop).outcome == PopResult::Outcome::empty);
    h.advance_s(1);
    for (int i = 0; i < 3; ++i) {
        h.push("q", "Default", "new" + std::to_string(i), "n" + std::to_string(i));
    }
    auto got = h.run(pop);
    REQUIRE(payloads(got) == "n0,n1,n2,");
    // A group without a subscription starts from the beginning.
    REQUIRE(h.pop("q", 100, "everything").messages.size() == 8);
}

TEST_CASE("queues: subscription mode new skips history pushed in the same millisecond",
          "[queues][groups][subscription]") {
    Harness h;
    h.push("q", "p1", "old1", "old");
    h.push("q", "p2", "old2", "old");
    Pop pop;
    pop.queue = "q";
    pop.group = "fresh";
    pop.batch = 10;
    pop.partitions = 10;
    pop.subscription_mode = SubscriptionMode::new_only;
    REQUIRE(h.run(pop).outcome == PopResult::Outcome::empty);  // same now as the pushes
    h.push("q", "p1", "new1", "n1");
    h.push("q", "p3", "new3", "n3");
    auto got = h.run(pop);
    REQUIRE(payloads(got) == "n1,n3,");
}

TEST_CASE("queues: subscriptionFrom a timestamp starts there, also on later partitions",
          "[queues][groups][subscription]") {
    Harness h;
    h.push("q", "p1", "a", "a");
    h.advance_s(10);
    const std::int64_t cutoff = h.now_ms;
    h.push("q", "p1", "b", "b");
    Pop pop;
    pop.queue = "q";
    pop.group = "g";
    pop.batch = 10;
    pop.subscription_from = SubscriptionFrom::timestamp;
    pop.subscription_from_ms = TimestampMs{cutoff};
    auto got = h.run(pop);
    REQUIRE(payloads(got) == "b,");
    h.advance_s(1);
    h.push("q", "p2", "c", "c");
    auto later = h.run(pop);
    REQUIRE(payloads(later) == "c,");
}

TEST_CASE("queues: seek to end, to a timestamp and one partition to end", "[queues][seek]") {
    Harness h;
    for (int p = 0; p < 3; ++p) {
        h.push("q", "p" + std::to_string(p), "t", "p" + std::to_string(p));
    }
    const std::int64_t before = h.now_ms - 1;
    for (int i = 0; i < 3; ++i) {
        auto popped = h.pop("q", 10, "g");
        REQUIRE(popped.messages.size() == 1);
        REQUIRE(h.ack(popped.messages[0], popped.lease, AckStatus::completed, "g").success);
    }
    REQUIRE(h.pop("q", 10, "g").outcome == PopResult::Outcome::empty);
    SeekGroup back{"g", "q", false, TimestampMs{before}};
    REQUIRE(h.run(back).partitions_updated == 3);
    int again = 0;
    for (int i = 0; i < 3; ++i) {
        auto popped = h.pop("q", 10, "g");
        again += static_cast<int>(popped.messages.size());
        REQUIRE(h.ack(popped.messages[0], popped.lease, AckStatus::completed, "g").success);
    }
    REQUIRE(again == 3);
    h.advance_s(1);
    h.push("q", "p0", "t2");
    SeekGroup to_end{"g", "q", true, TimestampMs{0}};
    REQUIRE(h.run(to_end).partitions_updated == 3);
    REQUIRE(h.pop("q", 10, "g").outcome == PopResult::Outcome::empty);
    h.push("q", "p1", "t2");
    auto skipped = h.run(SeekPartition{"g", "q", "p1"});
    REQUIRE(skipped.found);
    REQUIRE(skipped.cursor.sequence.value() == 2);
    REQUIRE(h.pop("q", 10, "g").outcome == PopResult::Outcome::empty);
    REQUIRE_FALSE(h.run(SeekPartition{"g", "q", "nope"}).found);
}

TEST_CASE("queues: deleting a group restarts it, deleting a queue removes everything",
          "[queues][groups][delete]") {
    Harness h;
    h.push("q", "Default", "t1", "a");
    auto popped = h.pop("q", 1, "g");
    REQUIRE(h.ack(popped.messages[0], popped.lease, AckStatus::completed, "g").success);
    REQUIRE(h.pop("q", 1, "g").outcome == PopResult::Outcome::empty);
    auto deleted = h.run(DeleteGroup{"g", "q", true});
    REQUIRE(deleted.deleted_partitions == 1);
    REQUIRE(payloads(h.pop("q", 1, "g")) == "a,");
    REQUIRE(h.run(DeleteQueue{"q"}).existed);
    REQUIRE_FALSE(h.run(DeleteQueue{"q"}).existed);
    REQUIRE(h.pop("q").outcome == PopResult::Outcome::empty);
    // Re-created from scratch: the old transaction id is free again.
    REQUIRE(h.push("q", "Default", "t1").items[0].status == PushStatus::queued);
    auto queues = h.read([&](const Tables& t, const store::Txn& txn) {
        return list_queues(t, txn, TimestampMs{h.now_ms});
    });
    REQUIRE(queues.size() == 1);
    REQUIRE(queues[0].messages == 1);
}

TEST_CASE("queues: a group's first pop finds every partition with messages, big queue or small",
          "[queues][pop][groups]") {
    // The candidates of a new group come from the memory mirror when the queue holds a good
    // share of all partitions, else from its name index: both must give the same partitions.
    Harness h;
    std::vector<std::string> big_expected;
    for (int i = 0; i < 40; ++i) {
        const std::string name = "b" + std::to_string(100 + i);  // name order = creation order
        const auto pushed = h.push("big", name, "t" + name);
        if (i % 3 == 0) {
            big_expected.push_back(name);
        } else {
            // A partition without messages is no candidate for any group.
            REQUIRE(h.run(DeleteMessage{pushed.items[0].message_id.partition, "t" + name}).found);
        }
    }
    h.push("small", "s1", "x1");
    h.push("small", "s2", "x2");
    for (const auto& [queue, expected] :
         {std::pair{std::string("big"), big_expected},
          std::pair{std::string("small"), std::vector<std::string>{"s1", "s2"}}}) {
        INFO("queue " << queue);
        std::vector<std::string> delivered;
        for (std::size_t i = 0; i <= expected.size(); ++i) {
            auto popped = h.pop(queue, 1, "fresh-group");  // leases hold each partition taken
            if (popped.messages.empty()) {
                break;
            }
            delivered.push_back(popped.messages[0].partition);
        }
        CHECK(delivered == expected);
    }
}

TEST_CASE("queues: an ack that empties a partition leaves no stale candidate behind",
          "[queues][pop][ack]") {
    // Each acked partition used to go back to the ready set whether or not anything was left;
    // after draining many partitions a pop that wrapped around walked them all in one apply.
    Harness h;
    for (int i = 0; i < 300; ++i) {
        h.push("q", "p" + std::to_string(i), "t" + std::to_string(i));
    }
    h.push("q", "p0", "second");  // p0 keeps a message after its first ack
    std::uint64_t delivered = 0;
    while (true) {
        auto popped = h.pop("q", 10, std::string(queue_mode_group), 10);
        if (popped.messages.empty()) {
            break;
        }
        for (const PoppedMessage& message : popped.messages) {
            REQUIRE(h.ack(message, popped.lease).success);
        }
        delivered += popped.messages.size();
        // Only partitions that still hold something are candidates: at most one per message
        // left (p0 holds two).
        CHECK(h.state->index_stats().ready_entries <= 301 - delivered);
    }
    CHECK(delivered == 301);
    CHECK(h.state->index_stats().ready_entries == 0);
    CHECK(h.state->index_stats().deferred_entries == 0);
    // A push makes an emptied partition a candidate again.
    h.push("q", "p7", "later");
    auto again = h.pop("q", 10);
    REQUIRE(again.messages.size() == 1);
    CHECK(again.messages[0].partition == "p7");
}

TEST_CASE("queues: list_queues totals equal each queue's per-partition detail",
          "[queues][queries]") {
    // list_queues counts in one pass over partitions and cursors; get_queue per partition. Any
    // state a random mix of pushes, pops (queue mode and a group), acks, failures (to the DLQ),
    // lease expiries and queues without partitions reaches must give both the same totals.
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    Harness h;
    QueueOptions options;
    options.lease_time_s = 5;
    options.retry_limit = 1;
    const std::vector<std::string> queues = {"qa", "qb", "qc"};
    for (const auto& queue : queues) {
        h.configure(queue, options);
    }
    h.configure("empty", options);
    int txid = 0;
    std::vector<std::pair<PopResult, std::string>> held;  // popped, not acked: (result, group)
    for (int step = 0; step < 600; ++step) {
        const std::string& queue = queues[rng.below(queues.size())];
        const auto action = rng.below(10);
        if (action < 5) {
            h.push(queue, "p" + std::to_string(rng.below(12)), "t" + std::to_string(txid++));
        } else if (action < 8) {
            const std::string group = rng.chance(0.7) ? std::string(queue_mode_group) : "g";
            auto popped = h.pop(queue, static_cast<std::uint32_t>(rng.between(1, 4)), group,
                                static_cast<std::uint32_t>(rng.between(1, 3)));
            if (!popped.messages.empty()) {
                held.emplace_back(std::move(popped), group);
            }
        } else if (!held.empty()) {
            const std::size_t at = rng.below(held.size());
            const auto& [popped, group] = held[at];
            const AckStatus status = rng.chance(0.3) ? AckStatus::failed : AckStatus::completed;
            for (const PoppedMessage& message : popped.messages) {
                (void)h.ack(message, popped.lease, status, group, "failed by the test");
            }
            held.erase(held.begin() + static_cast<std::ptrdiff_t>(at));
        }
        if (rng.chance(0.05)) {
            h.advance_s(static_cast<std::int64_t>(rng.between(1, 6)));  // some leases expire
        }
    }
    // One message failed until it is dead-lettered, whatever the mix did (retries wait for a
    // delay, so time moves on between the attempts).
    h.push("qb", "dead", "t-dead");
    bool is_dead = false;
    for (int attempt = 0; attempt < 10 && !is_dead; ++attempt) {
        h.advance_s(10);
        auto popped = h.pop_partition("qb", "dead");
        REQUIRE(popped.messages.size() == 1);
        is_dead = h.ack(popped.messages[0], popped.lease, AckStatus::failed,
                        std::string(queue_mode_group), "failed by the test")
                      .dlq;
    }
    REQUIRE(is_dead);
    // And one lease held at the end.
    h.push("qc", "held", "t-held");
    REQUIRE(h.pop_partition("qc", "held").messages.size() == 1);
    const auto listed = h.read([&](const Tables& t, const store::Txn& txn) {
        return list_queues(t, txn, TimestampMs{h.now_ms});
    });
    REQUIRE(listed.size() == queues.size() + 1);
    std::uint64_t processing = 0;
    std::uint64_t dead_letter = 0;
    for (const QueueSummary& summary : listed) {
        INFO("queue " << summary.name);
        const auto detail = h.read([&](const Tables& t, const store::Txn& txn) {
            return get_queue(t, txn, summary.name, TimestampMs{h.now_ms});
        });
        REQUIRE(detail.has_value());
        const QueueSummary& q = detail->queue;
        CHECK(summary.id == q.id);
        CHECK(summary.partitions == q.partitions);
        CHECK(summary.messages == q.messages);
        CHECK(summary.pending == q.pending);
        CHECK(summary.processing == q.processing);
        CHECK(summary.dead_letter == q.dead_letter);
        CHECK(summary.partitions == detail->partitions.size());
        processing += summary.processing;
        dead_letter += summary.dead_letter;
        if (summary.name == "empty") {
            CHECK(summary.messages == 0);  // configured only (its Default partition, if any)
        } else {
            CHECK(summary.partitions > 0);
            CHECK(summary.pending <= summary.messages);
        }
    }
    // The mix reached the states compared above (not only empty ones).
    CHECK(processing > 0);
    CHECK(dead_letter > 0);
}

TEST_CASE("queues: push maintenance buffers pushes and delivers them after, none lost or doubled",
          "[queues][maintenance]") {
    Harness h;
    h.push("q", "Default", "before", "0");
    h.run(SetMaintenance{SetMaintenance::Mode::push, true});
    REQUIRE(h.push("q", "Default", "m1", "1").items[0].status == PushStatus::buffered);
    REQUIRE(h.push("q", "Default", "m2", "2").items[0].status == PushStatus::buffered);
    REQUIRE(h.push("q", "Default", "m1", "1").items[0].status == PushStatus::buffered);
    auto during = h.pop("q", 10);
    REQUIRE(payloads(during) == "0,");
    REQUIRE(h.ack(during.messages[0], during.lease).success);
    auto off = h.run(SetMaintenance{SetMaintenance::Mode::push, false});
    REQUIRE(off.drained_messages == 3);
    REQUIRE(off.buffered_messages == 0);
    REQUIRE(payloads(h.pop("q", 10)) == "1,2,");
    h.run(SetMaintenance{SetMaintenance::Mode::pop, true});
    h.push("q", "Default", "x");
    REQUIRE(h.pop("q").outcome == PopResult::Outcome::paused);
}

TEST_CASE("queues: retention, completed retention, ttl and maxWaitTimeSeconds sweeps",
          "[queues][sweep]") {
    Harness h;
    QueueOptions retention;
    retention.is_retention_enabled = true;
    retention.retention_s = 10;
    retention.ttl_s = 0;
    h.configure("r", retention);
    QueueOptions wait;
    wait.max_wait_time_s = 10;
    wait.ttl_s = 0;
    h.configure("w", wait);
    QueueOptions completed;
    completed.is_retention_enabled = true;
    completed.completed_retention_s = 5;
    completed.ttl_s = 0;
    h.configure("c", completed);
    QueueOptions ttl;
    ttl.ttl_s = 60;
    h.configure("t", ttl);
    h.push("t", "Default", "1");
    h.push("r", "Default", "1");
    h.push("w", "Default", "1");
    h.push("c", "Default", "1");
    h.push("c", "Default", "2");
    auto got = h.pop("c");
    REQUIRE(h.ack(got.messages[0], got.lease).success);
    h.advance_s(6);
    auto first = h.run(Sweep{});
    REQUIRE(first.completed_deleted == 1);
    REQUIRE(first.retention_deleted == 0);
    h.advance_s(5);
    auto second = h.run(Sweep{});
    REQUIRE(second.retention_deleted == 1);
    REQUIRE(second.evicted == 1);
    REQUIRE(h.pop("r").outcome == PopResult::Outcome::empty);
    REQUIRE(h.pop("w").outcome == PopResult::Outcome::empty);
    REQUIRE(h.pop("c").messages.size() == 1);
    h.advance_s(60);  // 66 s after the push: past the 60 s ttl of queue t
    REQUIRE(h.run(Sweep{}).ttl_deleted == 1);
    REQUIRE(h.pop("t").outcome == PopResult::Outcome::empty);
    // ttl is off by default: an auto-created queue keeps its messages.
    h.push("keep", "Default", "1");
    h.advance_s(100'000);
    REQUIRE(h.run(Sweep{}).ttl_deleted == 0);
    REQUIRE(h.pop("keep").messages.size() == 1);
}

TEST_CASE("queues: has_swept_queue is true exactly while a queue has options a sweep acts on",
          "[queues][sweep]") {
    Harness h;
    const auto swept = [&] {
        return h.read(
            [](const Tables& t, const store::Txn& txn) { return has_swept_queue(t, txn); });
    };
    CHECK_FALSE(swept());  // no queue
    h.push("plain", "Default", "1");
    h.configure("defaults", QueueOptions{});
    CHECK_FALSE(swept());  // default options: a sweep changes nothing
    QueueOptions retention_off;
    retention_off.retention_s = 10;  // retention_s without is_retention_enabled does nothing
    h.configure("off", retention_off);
    CHECK_FALSE(swept());
    for (int kind = 0; kind < 4; ++kind) {
        QueueOptions o;
        switch (kind) {
            case 0: o.is_retention_enabled = true, o.retention_s = 10; break;
            case 1: o.is_retention_enabled = true, o.completed_retention_s = 10; break;
            case 2: o.ttl_s = 10; break;
            default: o.max_wait_time_s = 10; break;
        }
        INFO("kind " << kind);
        CHECK(is_swept(o));
        h.configure("swept", o);
        CHECK(swept());
        REQUIRE(h.run(DeleteQueue{"swept"}).existed);
        CHECK_FALSE(swept());
    }
}

TEST_CASE("queues: a failed transaction changes nothing, a good one applies every op",
          "[queues][transaction]") {
    Harness h;
    h.push("q", "Default", "m1", "a");
    auto popped = h.pop("q");
    Transaction tx;
    TransactionOp push;
    push.kind = TransactionOp::Kind::push;
    push.push.queue = "out";
    push.push.transaction_id = "o1";
    push.push.payload = text("x");
    tx.ops.push_back(push);
    TransactionOp ack;
    ack.kind = TransactionOp::Kind::ack;
    ack.ack.partition = popped.messages[0].id.partition;
    ack.ack.transaction_id = "m1";
    tx.ops.push_back(ack);
    TransactionOp bad = ack;
    bad.ack.transaction_id = "missing";
    tx.ops.push_back(bad);
    const std::string before = h.state->debug_dump_index();
    auto failed = h.run(tx);
    REQUIRE_FALSE(failed.success);
    REQUIRE(failed.error.find("Message not found") != std::string::npos);
    REQUIRE(h.state->debug_dump_index() == before);
    REQUIRE(h.pop("out").outcome == PopResult::Outcome::empty);
    auto queues = h.read([&](const Tables& t, const store::Txn& txn) {
        return list_queues(t, txn, TimestampMs{h.now_ms});
    });
    REQUIRE(queues.size() == 1);
    // The acked message was not consumed: redelivered after the lease.
    h.advance_s(301);
    REQUIRE(payloads(h.pop("q")) == "a,");
    tx.ops.pop_back();
    auto ok = h.run(tx);
    REQUIRE(ok.success);
    REQUIRE(ok.results.size() == 2);
    REQUIRE(payloads(h.pop("out")) == "x,");
    h.advance_s(301);
    REQUIRE(h.pop("q").outcome == PopResult::Outcome::empty);
    // A transaction push of an existing id fails the whole transaction.
    Transaction dup;
    dup.ops.push_back(push);
    REQUIRE_FALSE(h.run(dup).success);
}

TEST_CASE(
    "queues: a pop's lease counter reaches LMDB at the batch's end, also past a rolled-back "
    "transaction that wrote the meta record",
    "[queues][restart]") {
    Harness h;
    h.push("q", "Default", "m1", "a");
    h.push("q", "Other", "m2", "b");
    // One batch (one txn, end_batch once): a pop moves the lease counter in memory only; a
    // transaction then creates a queue (its meta write carries the counter), fails, and its
    // undo puts LMDB's older meta record back.
    auto txn = h.env->begin_write();
    REQUIRE(txn.has_value());
    const TimestampMs now{h.now_ms};
    Pop pop;
    pop.queue = "q";
    pop.has_partition = true;
    pop.partition = "Default";
    auto popped = h.state->apply(*txn, pop, now);
    REQUIRE(popped.has_value());
    REQUIRE(popped->messages.size() == 1);
    Transaction tx;
    TransactionOp push;
    push.kind = TransactionOp::Kind::push;
    push.push.queue = "fresh";
    push.push.transaction_id = "o1";
    push.push.payload = text("x");
    tx.ops.push_back(push);
    TransactionOp bad;
    bad.kind = TransactionOp::Kind::ack;
    bad.ack.partition = popped->messages[0].id.partition;
    bad.ack.transaction_id = "missing";
    tx.ops.push_back(bad);
    auto failed = testing::apply_transaction(*h.state, *txn, tx, now);
    REQUIRE(failed.has_value());
    REQUIRE_FALSE(failed->success);
    REQUIRE(h.state->before_commit(*txn).has_value());
    REQUIRE(txn->commit().has_value());
    const std::string before = h.state->debug_dump_index();
    h.reopen();
    REQUIRE(h.state->debug_dump_index() == before);  // "meta ..." holds next_lease_id
    // So the next lease is a new one, not the one still held on "Default".
    pop.partition = "Other";
    auto next = h.run(pop);
    REQUIRE(next.messages.size() == 1);
    REQUIRE(next.lease != popped->lease);
}

TEST_CASE("queues: state and index are identical after a reopen", "[queues][restart]") {
    Harness h;
    QueueOptions options;
    options.lease_time_s = 5;
    h.configure("q", options);
    for (int p = 0; p < 4; ++p) {
        for (int i = 0; i < 3; ++i) {
            h.push("q", "p" + std::to_string(p), "t" + std::to_string(i),
                   std::to_string(p) + std::to_string(i));
        }
    }
    auto held = h.pop("q", 2, "g");
    auto other = h.pop("q", 1);
    REQUIRE(h.ack(other.messages[0], other.lease).success);
    const std::string before = h.state->debug_dump_index();
    h.reopen();
    REQUIRE(h.state->debug_dump_index() == before);
    // The lease survived: still exclusive, then redelivered after expiry.
    auto next = h.pop("q", 10, "g", 10);
    for (const auto& m : next.messages) {
        REQUIRE(m.id.partition != held.messages[0].id.partition);
    }
    h.advance_s(5);
    auto redelivered = h.pop_partition("q", "p0", 10, "g");
    REQUIRE(redelivered.messages.size() == 3);
    REQUIRE(redelivered.messages[0].transaction_id == "t0");
}

TEST_CASE("queues: an atomic ack releases the lease by count, at once or never, as asked",
          "[queues][lease]") {
    Harness h;
    QueueOptions options;
    options.lease_time_s = 10;
    h.configure("s", options);
    const auto run_ack = [&](const PoppedMessage& message, LeaseId lease, AckStatus status,
                             LeaseRelease release) {
        auto txn = h.env->begin_write();
        REQUIRE(txn.has_value());
        REQUIRE(h.state->begin_atomic(*txn).has_value());
        AckItem item;
        item.partition = message.id.partition;
        item.transaction_id = message.transaction_id;
        item.status = status;
        item.lease = lease;
        item.group = std::string(queue_mode_group);
        auto acked = h.state->ack_atomic(*txn, item, TimestampMs{h.now_ms}, release);
        REQUIRE(acked.has_value());
        REQUIRE(acked->failure.empty());
        REQUIRE(h.state->commit_atomic(*txn).has_value());
        REQUIRE(h.state->before_commit(*txn).has_value());
        REQUIRE(txn->commit().has_value());
        return acked->item;
    };
    for (const char* id : {"m1", "m2", "m3", "m4", "m5", "m6"}) {
        h.push("s", "Default", id, std::string("\"") + id + "\"");
    }
    // By count (every ack's rule): the first of three keeps the lease.
    auto batch = h.pop("s", 3);
    REQUIRE(batch.messages.size() == 3);
    auto first =
        run_ack(batch.messages[0], batch.lease, AckStatus::completed, LeaseRelease::by_count);
    CHECK(first.lease_released == LeaseReleased::no);
    CHECK(h.pop("s", 3).outcome == PopResult::Outcome::empty);  // still leased
    // At once: the cursor stays at the acked message and the rest come again, in order.
    auto second =
        run_ack(batch.messages[1], batch.lease, AckStatus::completed, LeaseRelease::always);
    CHECK(second.lease_released == LeaseReleased::yes);
    auto again = h.pop("s", 3);
    REQUIRE(again.messages.size() == 3);
    CHECK(payloads(again) == "\"m3\",\"m4\",\"m5\",");
    // Never: the lease outlives the batch; a dead-lettered message still releases it.
    auto kept = run_ack(again.messages[2], again.lease, AckStatus::completed, LeaseRelease::never);
    CHECK(kept.lease_released == LeaseReleased::no);
    CHECK(h.pop("s", 3).outcome == PopResult::Outcome::empty);
    h.advance_s(11);  // the lease ran out: the rest after the cursor comes again
    auto after = h.pop("s", 3);
    REQUIRE(after.messages.size() == 1);
    CHECK(payloads(after) == "\"m6\",");
    auto failed = run_ack(after.messages[0], after.lease, AckStatus::failed, LeaseRelease::never);
    CHECK(failed.dlq);
    CHECK(failed.lease_released == LeaseReleased::yes);
    CHECK(h.pop("s", 3).outcome == PopResult::Outcome::empty);  // consumed: nothing left
}

}  // namespace
}  // namespace queen::queues

namespace queen::queues {
namespace {

TEST_CASE("queues: traces attach to messages and are listed by message and by name",
          "[queues][traces]") {
    testing::Harness h;
    auto pushed = h.push("q", "Default", "t1", "payload");
    const PartitionId pid = pushed.items[0].message_id.partition;
    AddTrace trace;
    trace.partition = pid;
    trace.transaction_id = "t1";
    trace.names = {"order-flow", "billing"};
    trace.data = testing::text(R"({"step":1})");
    REQUIRE(h.run(trace).found);
    trace.names = {"order-flow"};
    REQUIRE(h.run(trace).found);
    trace.transaction_id = "missing";
    REQUIRE_FALSE(h.run(trace).found);
    auto events = h.read(
        [&](const Tables& t, const store::Txn& txn) { return list_traces(t, txn, pid, "t1"); });
    REQUIRE(events.size() == 2);
    REQUIRE(events[0].names.size() == 2);
    std::uint64_t total = 0;
    auto hits = h.read([&](const Tables& t, const store::Txn& txn) {
        return list_traces_by_name(t, txn, "order-flow", 1, 0, total);
    });
    REQUIRE(total == 2);
    REQUIRE(hits.size() == 1);
    REQUIRE(hits[0].queue == "q");
    REQUIRE(testing::text(hits[0].payload) == "payload");
    auto names = h.read([&](const Tables& t, const store::Txn& txn) {
        return list_trace_names(t, txn, 10, 0, total);
    });
    REQUIRE(total == 2);
    REQUIRE(names.size() == 2);
    // DELETE /messages removes the message and its traces.
    REQUIRE(h.run(DeleteMessage{pid, "t1"}).found);
    REQUIRE(h.read([&](const Tables& t, const store::Txn& txn) {
                 return list_traces(t, txn, pid, "t1");
             }).empty());
    REQUIRE(h.pop("q").outcome == PopResult::Outcome::empty);
}

TEST_CASE("queues: resource queries report counts, DLQ pages and group lag", "[queues][queries]") {
    testing::Harness h;
    QueueOptions options;
    options.retry_limit = 0;
    h.configure("q", options);
    for (int i = 0; i < 5; ++i) {
        h.push("q", "p" + std::to_string(i % 2), "t" + std::to_string(i), std::to_string(i));
    }
    for (int i = 0; i < 3; ++i) {
        auto popped = h.pop("q", 1);
        REQUIRE(h.ack(popped.messages[0], popped.lease, AckStatus::failed,
                      std::string(queue_mode_group), "e" + std::to_string(i))
                    .dlq);
    }
    auto detail = h.read([&](const Tables& t, const store::Txn& txn) {
        return get_queue(t, txn, "q", TimestampMs{h.now_ms});
    });
    REQUIRE(detail.has_value());
    REQUIRE(detail->queue.messages == 5);
    REQUIRE(detail->queue.pending == 2);
    REQUIRE(detail->queue.dead_letter == 3);
    REQUIRE(detail->partitions.size() == 3);  // Default, p0, p1
    auto page1 = h.read(
        [](const Tables& t, const store::Txn& txn) { return list_dlq(t, txn, "q", "", 2, 0); });
    auto page2 = h.read(
        [](const Tables& t, const store::Txn& txn) { return list_dlq(t, txn, "q", "", 2, 2); });
    REQUIRE(page1.size() == 2);
    REQUIRE(page2.size() == 1);
    REQUIRE(page1[0].error == "e2");  // newest failure first
    REQUIRE(page2[0].error == "e0");
    REQUIRE(h.read([](const Tables& t, const store::Txn& txn) {
                 return list_dlq(t, txn, "q", "other-group", 10, 0);
             }).empty());
    auto cursors = h.read([&](const Tables& t, const store::Txn& txn) {
        return list_group_cursors(t, txn, "", TimestampMs{h.now_ms});
    });
    std::uint64_t lag = 0;
    for (const auto& c : cursors) {
        lag += c.offset_lag;
    }
    REQUIRE(lag == 2);
    auto message = h.read([&](const Tables& t, const store::Txn& txn) {
        return get_message(t, txn, page2[0].id.partition, "t0", TimestampMs{h.now_ms});
    });
    REQUIRE(message.has_value());
    REQUIRE(message->is_dead_letter);
    auto listed = h.read([](const Tables& t, const store::Txn& txn) {
        return list_messages(t, txn, "q", "", 3, 1);
    });
    REQUIRE(listed.size() == 3);
    auto state =
        h.read([](const Tables& t, const store::Txn& txn) { return get_maintenance(t, txn); });
    REQUIRE_FALSE(state.push_enabled);
}

}  // namespace
}  // namespace queen::queues

namespace queen::queues {
namespace {

TEST_CASE("queues: deleting a queue removes its rows across many pages and keeps others",
          "[queues][delete]") {
    testing::Harness h;
    const std::string big(700, 'x');
    for (int i = 0; i < 300; ++i) {
        const std::string queue = i % 2 == 0 ? "a" : "b";
        h.push(queue, "p" + std::to_string(i % 7), "t" + std::to_string(i), big);
    }
    for (int round = 0; round < 200; ++round) {
        bool any = false;
        for (const std::string queue : {"a", "b"}) {
            auto popped = h.pop(queue, 10, std::string(queue_mode_group), 7);
            for (const auto& m : popped.messages) {
                any = true;
                REQUIRE(h.ack(m, popped.lease, AckStatus::dlq).dlq);
            }
        }
        if (!any) {
            break;
        }
    }
    auto count = [&](const std::string& queue) {
        return h
            .read([&](const Tables& t, const store::Txn& txn) {
                return list_dlq(t, txn, queue, "", 1'000'000, 0);
            })
            .size();
    };
    REQUIRE(count("a") == 150);
    REQUIRE(count("b") == 150);
    REQUIRE(h.run(DeleteQueue{"a"}).existed);
    REQUIRE(count("") == 150);
    REQUIRE(count("b") == 150);
    auto queues = h.read([&](const Tables& t, const store::Txn& txn) {
        return list_queues(t, txn, TimestampMs{h.now_ms});
    });
    REQUIRE(queues.size() == 1);
    REQUIRE(queues[0].name == "b");
    REQUIRE(queues[0].messages == 150);
    auto stats =
        h.read([&](const Tables& t, const store::Txn& txn) { return txn.stats(t.messages); });
    REQUIRE(stats.entries == 150);
    auto txids = h.read(
        [&](const Tables& t, const store::Txn& txn) { return txn.stats(t.transaction_ids); });
    REQUIRE(txids.entries == 150);
}

TEST_CASE("queues: group_lag counts what one group has not consumed on one queue",
          "[queues][groups][queries]") {
    Harness h;
    const auto lag = [&](const std::string& queue, const std::string& group) {
        return h.read([&](const Tables& t, const store::Txn& txn) {
            return group_lag(t, txn, queue, group);
        });
    };
    REQUIRE(lag("q", "g") == 0);  // no such queue
    for (int i = 0; i < 3; ++i) {
        h.push("q", "p1", "a" + std::to_string(i));
        h.push("q", "p2", "b" + std::to_string(i));
    }
    h.push("other", "Default", "x");
    // Without a cursor the group has every stored message ahead of it.
    REQUIRE(lag("q", "g") == 6);
    auto popped = h.pop_partition("q", "p1", 2, "g");
    REQUIRE(popped.messages.size() == 2);
    REQUIRE(lag("q", "g") == 6);  // leased, not consumed
    for (const auto& message : popped.messages) {
        REQUIRE(h.ack(message, popped.lease, AckStatus::completed, "g").success);
    }
    REQUIRE(lag("q", "g") == 4);
    // Other groups and queues are not counted, and plain consumers do not move it.
    REQUIRE(h.pop("q", 10).messages.size() == 3);
    REQUIRE(lag("q", "g") == 4);
    REQUIRE(lag("q", "h") == 6);
    REQUIRE(lag("other", "g") == 1);
    h.push("q", "p3", "c0");
    REQUIRE(lag("q", "g") == 5);
}

}  // namespace
}  // namespace queen::queues
