// client/tests/e2e_test.cpp — hidden end-to-end checks against a running broker:
//   QUEEN_E2E_URL=http://127.0.0.1:6632 client_tests "[.e2e]"
// They create queues named after the seed and delete them at the end.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "queen/client/client.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "test_helpers.hpp"

namespace {

using namespace queen::client;

using queen::client::testing::connect_or_skip;

std::vector<PushItem> items_for(const std::string& queue, const std::string& partition, int count,
                                int first = 0) {
    std::vector<PushItem> items(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        items[static_cast<std::size_t>(i)].queue = queue;
        items[static_cast<std::size_t>(i)].partition = partition;
        items[static_cast<std::size_t>(i)].payload_json =
            "{\"n\":" + std::to_string(first + i) + "}";
    }
    return items;
}

}  // namespace

TEST_CASE("client e2e: push, dedupe, long-poll pop, FIFO, ack, retries into the DLQ",
          "[.e2e][client]") {
    auto client = connect_or_skip();
    if (!client) {
        WARN("QUEEN_E2E_URL is not set: skipped");
        return;
    }
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed);
    const std::string queue = "e2e-" + std::to_string(seed % 1'000'000'000);

    ConfigureRequest configure;
    configure.queue = queue;
    configure.options.lease_time_s = 30;
    configure.options.retry_limit = 1;
    configure.options.priority = 3;
    configure.options.retry_delay_ms = 0;  // Queen honours retryDelay: redeliver at once here
    auto configured = client->configure(configure);
    REQUIRE(configured);
    CHECK(configured->is_configured);
    CHECK(configured->options == configure.options);

    auto items = items_for(queue, "p1", 5);
    items[0].transaction_id = "fixed-" + queue;
    auto pushed = client->push(items);
    REQUIRE(pushed);
    for (const auto& result : *pushed) {
        CHECK(result.status == PushStatus::queued);
        CHECK_FALSE(result.message_id.empty());
    }
    auto again = client->push(std::span<const PushItem>{items.data(), 1});
    REQUIRE(again);
    CHECK((*again)[0].status == PushStatus::duplicate);
    CHECK((*again)[0].message_id == (*pushed)[0].message_id);

    PopRequest pop;
    pop.queue = queue;
    pop.batch = 10;
    pop.is_wait = true;
    pop.timeout_ms = 2000;
    auto batch = client->pop(pop);
    REQUIRE(batch);
    REQUIRE(batch->messages.size() == 5);
    for (int i = 0; i < 5; ++i) {
        CHECK(batch->messages[static_cast<std::size_t>(i)].data_json ==
              "{\"n\":" + std::to_string(i) + "}");
    }
    CHECK_FALSE(batch->lease_id.empty());
    auto extended = client->extend_lease(batch->lease_id, 60);
    REQUIRE(extended);
    CHECK(extended->is_success);
    std::vector<Ack> acks;
    for (const auto& message : batch->messages) {
        acks.push_back(Ack::of(message));
    }
    auto acked = client->ack_batch(acks, batch->consumer_group);
    REQUIRE(acked);
    for (const auto& result : *acked) {
        CHECK(result.is_success);
    }
    pop.is_wait = false;
    auto empty = client->pop(pop);
    REQUIRE(empty);
    CHECK(empty->messages.empty());

    // retryLimit 1: the second failure dead-letters the message.
    REQUIRE(client->push(items_for(queue, "p2", 1, 100)));
    pop.is_wait = true;
    pop.timeout_ms = 5000;
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto failing = client->pop(pop);
        REQUIRE(failing);
        REQUIRE(failing->messages.size() == 1);
        auto nacked = client->ack(Ack::of(failing->messages[0], AckStatus::failed, "boom"));
        REQUIRE(nacked);
        CHECK(nacked->is_success);
        CHECK(nacked->is_dlq == (attempt == 1));
    }
    DlqQuery query;
    query.queue = queue;
    auto dead = client->dlq(query);
    REQUIRE(dead);
    REQUIRE(dead->messages.size() == 1);
    CHECK(dead->messages[0].error_message.find("boom") != std::string::npos);
    CHECK(dead->messages[0].data_json == "{\"n\":100}");

    auto deleted = client->delete_queue(queue);
    REQUIRE(deleted);
    CHECK(deleted->is_deleted);
}

TEST_CASE("client e2e: transactions commit atomically or roll back", "[.e2e][client]") {
    auto client = connect_or_skip();
    if (!client) {
        WARN("QUEEN_E2E_URL is not set: skipped");
        return;
    }
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed);
    const std::string source = "e2e-tx-in-" + std::to_string(seed % 1'000'000'000);
    const std::string target = "e2e-tx-out-" + std::to_string(seed % 1'000'000'000);
    REQUIRE(client->push(items_for(source, "Default", 1)));
    PopRequest pop;
    pop.queue = source;
    auto input = client->pop(pop);
    REQUIRE(input);
    REQUIRE(input->messages.size() == 1);

    TransactionRequest bad;
    bad.operations.emplace_back(TransactionPush{items_for(target, "Default", 1)});
    Ack missing = Ack::of(input->messages[0]);
    missing.transaction_id = "no-such-message";
    bad.operations.emplace_back(missing);
    auto rolled_back = client->transaction(bad);
    REQUIRE_FALSE(rolled_back);
    CHECK(rolled_back.error().is(Errc::rejected));
    PopRequest pop_target;
    pop_target.queue = target;
    auto nothing = client->pop(pop_target);
    REQUIRE(nothing);
    CHECK(nothing->messages.empty());

    TransactionRequest good;
    good.operations.emplace_back(TransactionPush{items_for(target, "Default", 1, 7)});
    good.operations.emplace_back(Ack::of(input->messages[0]));
    auto committed = client->transaction(good);
    REQUIRE(committed);
    REQUIRE(committed->results.size() == 2);
    auto output = client->pop(pop_target);
    REQUIRE(output);
    REQUIRE(output->messages.size() == 1);
    CHECK(output->messages[0].data_json == "{\"n\":7}");
    REQUIRE(client->delete_queue(source));
    REQUIRE(client->delete_queue(target));
}

TEST_CASE("client e2e: transaction_then_pop commits and pops the next message in one round trip",
          "[.e2e][client]") {
    auto client = connect_or_skip();
    if (!client) {
        WARN("QUEEN_E2E_URL is not set: skipped");
        return;
    }
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed);
    const std::string queue = "e2e-txpop-" + std::to_string(seed % 1'000'000'000);
    REQUIRE(client->push(items_for(queue, "p", 1)));
    PopRequest pop;
    pop.queue = queue;
    pop.partition = "p";
    pop.is_wait = false;
    auto input = client->pop(pop);
    REQUIRE(input);
    REQUIRE(input->messages.size() == 1);

    // The pop runs after the transaction: it finds the message the transaction pushed.
    TransactionRequest next;
    next.operations.emplace_back(Ack::of(input->messages[0]));
    next.operations.emplace_back(TransactionPush{items_for(queue, "p", 1, 1)});
    auto moved = client->transaction_then_pop(next, pop);
    REQUIRE(moved.transaction);
    CHECK(moved.transaction->results.size() == 2);
    REQUIRE(moved.pop);
    REQUIRE(moved.pop->messages.size() == 1);
    CHECK(moved.pop->messages[0].data_json == "{\"n\":1}");

    // A transaction rolled back pushes nothing; the pop behind it still runs (and finds nothing:
    // the message in hand stays leased).
    TransactionRequest bad;
    Ack missing = Ack::of(moved.pop->messages[0]);
    missing.transaction_id = "no-such-message";
    bad.operations.emplace_back(missing);
    bad.operations.emplace_back(TransactionPush{items_for(queue, "p", 1, 2)});
    auto refused = client->transaction_then_pop(bad, pop);
    REQUIRE_FALSE(refused.transaction);
    CHECK(refused.transaction.error().is(Errc::rejected));
    REQUIRE(refused.pop);
    CHECK(refused.pop->messages.empty());
    // Invalid input: nothing is sent, both say why.
    auto invalid = client->transaction_then_pop(TransactionRequest{}, pop);
    REQUIRE_FALSE(invalid.transaction);
    REQUIRE_FALSE(invalid.pop);
    REQUIRE(client->delete_queue(queue));
}

TEST_CASE("client e2e: the builder's next pop takes the worker's next batch in the same call",
          "[.e2e][client]") {
    auto client = connect_or_skip();
    if (!client) {
        WARN("QUEEN_E2E_URL is not set: skipped");
        return;
    }
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed);
    const std::string queue = "e2e-next-" + std::to_string(seed % 1'000'000'000);
    REQUIRE(client->push(items_for(queue, "p", 3)));
    REQUIRE(client->push(items_for(queue, "other", 1, 100)));
    PopRequest pop;
    pop.queue = queue;
    pop.partition = "p";
    auto input = client->pop(pop);
    REQUIRE(input);
    REQUIRE(input->messages.size() == 1);
    CHECK(input->messages[0].data_json == "{\"n\":0}");

    // Ack it, push n=3 and take the next two in FIFO order: one request.
    auto done = client->transaction()
                    .ack(input->messages[0])
                    .queue(queue, "p")
                    .push("{\"n\":3}")
                    .next(queue, "p", 2)
                    .commit();
    REQUIRE(done);
    CHECK(done->results.size() == 2);
    REQUIRE(done->next.has_value());
    REQUIRE(done->next->messages.size() == 2);
    CHECK(done->next->messages[0].data_json == "{\"n\":1}");
    CHECK(done->next->messages[1].data_json == "{\"n\":2}");
    CHECK_FALSE(done->next->messages[0].lease_id.empty());

    // A refused transaction pops nothing: the message of "other" is still there afterwards.
    Ack missing = Ack::of(done->next->messages[0]);
    missing.transaction_id = "no-such-message";
    auto refused = client->transaction().ack(missing).next(queue, "other").commit();
    REQUIRE_FALSE(refused);
    CHECK(refused.error().is(Errc::rejected));
    PopRequest other = pop;
    other.partition = "other";
    auto left = client->pop(other);
    REQUIRE(left);
    REQUIRE(left->messages.size() == 1);
    CHECK(left->messages[0].data_json == "{\"n\":100}");

    // The batch's acks end the partition's lease, so next takes what the first call pushed;
    // then nothing is left: an empty next, at once.
    auto tx = client->transaction();
    for (const Message& message : done->next->messages) {
        tx.ack(message);
    }
    auto last = tx.next(queue, "p", 10).commit();
    REQUIRE(last);
    REQUIRE(last->next.has_value());
    REQUIRE(last->next->messages.size() == 1);
    CHECK(last->next->messages[0].data_json == "{\"n\":3}");
    auto empty = client->transaction().ack(last->next->messages[0]).next(queue, "p").commit();
    REQUIRE(empty);
    REQUIRE(empty->next.has_value());
    CHECK(empty->next->messages.empty());

    // A batch over the broker's limit is its 400, and the ack with it was not applied.
    auto too_many =
        client->transaction().ack(left->messages[0]).next(queue, "other", 1'000'000).commit();
    REQUIRE_FALSE(too_many);
    CHECK(http_status_of(too_many.error()) == 400);
    auto acked = client->ack(Ack::of(left->messages[0]));
    REQUIRE(acked);
    CHECK(acked->is_success);
    REQUIRE(client->delete_queue(queue));
}

TEST_CASE("client e2e: consumer groups fan out and seek", "[.e2e][client]") {
    auto client = connect_or_skip();
    if (!client) {
        WARN("QUEEN_E2E_URL is not set: skipped");
        return;
    }
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed);
    const std::string queue = "e2e-groups-" + std::to_string(seed % 1'000'000'000);
    REQUIRE(client->push(items_for(queue, "Default", 3)));
    for (const std::string group : {"a", "b"}) {
        PopRequest pop;
        pop.queue = queue;
        pop.consumer_group = group;
        pop.batch = 10;
        auto batch = client->pop(pop);
        REQUIRE(batch);
        CHECK(batch->messages.size() == 3);  // every group sees every message
        CHECK(batch->consumer_group == group);
        std::vector<Ack> acks;
        for (const auto& message : batch->messages) {
            acks.push_back(Ack::of(message));
        }
        REQUIRE(client->ack_batch(acks, group));
    }
    auto groups = client->list_consumer_groups();
    REQUIRE(groups);
    int seen = 0;
    for (const auto& group : *groups) {
        seen += group.queue_name == queue && (group.name == "a" || group.name == "b") ? 1 : 0;
    }
    CHECK(seen == 2);
    auto seek = client->seek("a", queue, SeekTarget{false, "2000-01-01T00:00:00.000Z"});
    REQUIRE(seek);
    PopRequest replay;
    replay.queue = queue;
    replay.consumer_group = "a";
    replay.batch = 10;
    auto replayed = client->pop(replay);
    REQUIRE(replayed);
    CHECK(replayed->messages.size() == 3);  // seeking back re-delivers
    REQUIRE(client->delete_consumer_group("a"));
    REQUIRE(client->delete_consumer_group("b"));
    REQUIRE(client->delete_queue(queue));
}

TEST_CASE("client e2e: the builder's one call acks, writes KV, pushes and sets timers that fire",
          "[.e2e][client]") {
    using namespace std::chrono_literals;
    auto client = connect_or_skip();
    if (!client) {
        WARN("QUEEN_E2E_URL is not set: skipped");
        return;
    }
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed);
    const std::string tag = std::to_string(seed % 1'000'000'000);
    const std::string source = "e2e-one-in-" + tag;
    const std::string target = "e2e-one-out-" + tag;
    const std::string bucket = "e2e-one-" + tag;
    REQUIRE(client->push(items_for(source, "Default", 1)));
    PopRequest pop;
    pop.queue = source;
    auto input = client->pop(pop);
    REQUIRE(input);
    REQUIRE(input->messages.size() == 1);

    auto done = client->transaction()
                    .ack(input->messages[0])
                    .kv_set(bucket, "state", R"({"step":1})", 0)
                    .queue(target)
                    .push(R"({"now":true})")
                    .push(R"({"later":true})", 300ms)
                    .timer("e2e-one-" + tag, 0ms, target, R"({"timer":true})")
                    .commit();
    REQUIRE(done);
    REQUIRE(done->results.size() == 5);
    const std::uint64_t version = done->results[1].version;
    CHECK(version > 0);
    CHECK_FALSE(done->results[2].message_id.empty());
    CHECK(done->results[3].timer_id.rfind("~delay.", 0) == 0);
    CHECK(done->results[4].timer_id == "e2e-one-" + tag);

    // The pushed message now; the timer's and the delayed push's once they are due.
    PopRequest wait;
    wait.queue = target;
    wait.is_wait = true;
    wait.timeout_ms = 10'000;
    wait.is_auto_ack = true;
    std::vector<std::string> payloads;
    while (payloads.size() < 3) {
        auto popped = client->pop(wait);
        REQUIRE(popped);
        REQUIRE_FALSE(popped->messages.empty());
        for (const auto& message : popped->messages) {
            payloads.push_back(message.data_json);
        }
    }
    std::sort(payloads.begin(), payloads.end());
    CHECK(payloads ==
          std::vector<std::string>{R"({"later":true})", R"({"now":true})", R"({"timer":true})"});

    // A version that moved on is a conflict, and nothing of the transaction is applied.
    auto stale = client->transaction()
                     .queue(target)
                     .push("1")
                     .kv_check(bucket, "state", version + 1)
                     .commit();
    REQUIRE_FALSE(stale);
    CHECK(stale.error().is(Errc::conflict));
    PopRequest once = wait;
    once.is_wait = false;
    auto nothing = client->pop(once);
    REQUIRE(nothing);
    CHECK(nothing->messages.empty());
    auto held = client->transaction().kv_check(bucket, "state", version).commit();
    CHECK(held);
    REQUIRE(client->delete_queue(source));
    REQUIRE(client->delete_queue(target));
}

TEST_CASE("client e2e: KV, locks and timers through their routes", "[.e2e][client]") {
    using namespace std::chrono_literals;
    auto client = connect_or_skip();
    if (!client) {
        WARN("QUEEN_E2E_URL is not set: skipped");
        return;
    }
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed);
    const std::string tag = std::to_string(seed % 1'000'000'000);
    const std::string bucket = "e2e-kv-" + tag;

    // KV: create-only, compare-and-set, byte-exact values, pages, delete.
    KvSet set{bucket, "a/1", R"({"n": 1.50})", std::uint64_t{0}, 0};
    auto v1 = client->kv_put(set);
    REQUIRE(v1);
    CHECK(client->kv_put(set).error().is(Errc::conflict));  // exists now
    auto entry = client->kv_get(bucket, "a/1");
    REQUIRE(entry);
    CHECK(nlohmann::json::parse(entry->value_json) == nlohmann::json{{"n", 1.5}});
    CHECK(entry->version == *v1);
    set.expected_version = *v1;
    set.value_json = "2";
    auto v2 = client->kv_put(set);
    REQUIRE(v2);
    CHECK(*v2 > *v1);
    CHECK(client->kv_put(set).error().is(Errc::conflict));  // v1 is stale
    REQUIRE(client->kv_put(KvSet{bucket, "a/2", "3", std::nullopt, 0}));
    REQUIRE(client->kv_put(KvSet{bucket, "b/1", "4", std::nullopt, 0}));
    auto page = client->kv_list(KvListQuery{bucket, "a/", "", 1});
    REQUIRE(page);
    REQUIRE(page->entries.size() == 1);
    CHECK(page->entries[0].key == "a/1");
    CHECK(page->entries[0].value_json == "2");
    CHECK(page->next_after == "a/1");
    page = client->kv_list(KvListQuery{bucket, "a/", page->next_after, 10});
    REQUIRE(page);
    REQUIRE(page->entries.size() == 1);
    CHECK(page->entries[0].key == "a/2");
    CHECK(page->next_after.empty());
    auto buckets = client->kv_buckets();
    REQUIRE(buckets);
    CHECK(std::any_of(buckets->begin(), buckets->end(),
                      [&](const KvBucket& b) { return b.bucket == bucket && b.keys == 3; }));
    CHECK(client->kv_delete(KvDelete{bucket, "a/1", *v1}).error().is(Errc::conflict));
    CHECK(client->kv_delete(KvDelete{bucket, "a/1", *v2}).value());
    CHECK_FALSE(client->kv_delete(KvDelete{bucket, "a/1", std::nullopt}).value());
    CHECK(http_status_of(client->kv_get(bucket, "a/1").error()) == 404);

    // Locks: a grant, a conflict for another owner, a waiting acquire woken by the release.
    const std::string lock = "e2e-lock-" + tag;
    auto grant = client->lock_acquire(lock, "a", 30s);
    REQUIRE(grant);
    CHECK(grant->token > 0);
    auto other = client->lock_acquire(lock, "b", 30s);
    REQUIRE_FALSE(other);
    CHECK(other.error().is(Errc::conflict));
    CHECK(other.error().context.find("held by a") != std::string::npos);
    auto renewed = client->lock_renew(lock, grant->token, 60s);
    REQUIRE(renewed);
    CHECK(renewed->token == grant->token);
    auto listed = client->lock_list();
    REQUIRE(listed);
    CHECK(std::any_of(listed->locks.begin(), listed->locks.end(),
                      [&](const LockGrant& g) { return g.name == lock && g.owner == "a"; }));
    // Under the guard: committed; a guard with another token: a conflict.
    CHECK(client->transaction().kv_set(bucket, "guarded", "1").guard(*grant).commit());
    CHECK(client->transaction()
              .kv_set(bucket, "guarded", "2")
              .guard(LockGuard{lock, grant->token + 1})
              .commit()
              .error()
              .is(Errc::conflict));
    std::optional<queen::Result<LockGrant>> waited;
    std::thread waiter([&] { waited = client->lock_acquire(lock, "b", 30s, 5s); });
    std::this_thread::sleep_for(200ms);
    REQUIRE(client->transaction().lock_release(*grant).commit());
    waiter.join();
    REQUIRE(waited.has_value());
    REQUIRE(*waited);
    CHECK((*waited)->owner == "b");
    CHECK((*waited)->token > grant->token);
    CHECK(client->lock_release(*grant).error().is(Errc::conflict));  // stale token
    REQUIRE(client->lock_release(**waited));
    CHECK(http_status_of(client->lock_get(lock).error()) == 404);

    // Timers: set, exists, replace, read back, list, cancel.
    TimerSet timer;
    timer.id = "e2e-timer-" + tag;
    timer.queue = "e2e-timer-q-" + tag;
    timer.payload_json = R"({"t":1})";
    timer.delay_ms = 3'600'000;
    timer.interval_ms = 60'000;
    auto made = client->timer_set(timer);
    REQUIRE(made);
    CHECK_FALSE(made->is_replaced);
    CHECK(client->timer_set(timer).error().is(Errc::conflict));
    timer.is_replace = true;
    auto replaced = client->timer_set(timer);
    REQUIRE(replaced);
    CHECK(replaced->is_replaced);
    auto info = client->timer_get(timer.id);
    REQUIRE(info);
    CHECK(info->queue == timer.queue);
    CHECK(info->payload_json == timer.payload_json);
    CHECK(info->interval_ms == 60'000);
    CHECK(info->due_at == replaced->due_at);
    auto timers = client->timer_list();
    REQUIRE(timers);
    CHECK(std::any_of(timers->timers.begin(), timers->timers.end(),
                      [&](const TimerInfo& t) { return t.id == timer.id; }));
    CHECK(client->timer_cancel(timer.id).value());
    CHECK_FALSE(client->timer_cancel(timer.id).value());
    CHECK(http_status_of(client->timer_get(timer.id).error()) == 404);
    REQUIRE(client->delete_queue(timer.queue));
}
