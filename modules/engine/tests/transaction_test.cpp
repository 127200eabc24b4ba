// engine/tests/transaction_test.cpp — the one call: transactions of pushes, acks, KV, timers
// and lock releases are applied all or nothing; Due entries fire timers and expire keys and
// locks; lock commands.
#include <map>
#include <string>

#include "queen/engine/engine.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/result.hpp"
#include "queen/testing/support.hpp"

namespace queen::engine {
namespace {

using queues::PushItem;
using Kind = TransactionOp::Kind;

constexpr std::int64_t t0 = 1'700'000'000'000;

/// Every record of every table, except the applied-index record (which every entry moves).
std::map<std::string, std::string> dump_state(Engine& engine) {
    std::map<std::string, std::string> out;
    const auto names = engine.env().table_names().value();
    std::vector<std::pair<std::string, store::Table>> tables;
    for (const auto& name : names) {
        tables.emplace_back(name, engine.env().open_table(name).value());
    }
    auto txn = engine.env().begin_read().value();
    for (const auto& [name, table] : tables) {
        auto cursor = txn.cursor(table).value();
        for (auto entry = cursor.first().value(); entry; entry = cursor.next().value()) {
            std::string key(as_chars(entry->key));
            if (name == "q.meta" && key == "applied") {
                continue;
            }
            out[name + "/" + key] = std::string(as_chars(entry->value));
        }
    }
    return out;
}

PushItem item(const std::string& queue, const std::string& txid, const std::string& payload) {
    PushItem out;
    out.queue = queue;
    out.transaction_id = txid;
    out.payload = Bytes(payload.begin(), payload.end());
    return out;
}

TransactionOp push_op(const std::string& queue, const std::string& txid,
                      const std::string& payload = "{}") {
    TransactionOp op;
    op.kind = Kind::push;
    op.push = item(queue, txid, payload);
    return op;
}

TransactionOp kv_op(Kind kind, const std::string& bucket, const std::string& key,
                    const std::string& value = "1",
                    std::optional<std::uint64_t> expected = std::nullopt) {
    TransactionOp op;
    op.kind = kind;
    op.kv.bucket = bucket;
    op.kv.key = key;
    op.kv.value = Bytes(value.begin(), value.end());
    op.kv.expected_version = expected;
    return op;
}

TransactionOp timer_op(const std::string& id, std::int64_t delay_ms, const std::string& queue,
                       std::int64_t interval_ms = 0) {
    TransactionOp op;
    op.kind = Kind::timer_set;
    op.timer.id = id;
    op.timer.delay_ms = delay_ms;
    op.timer.interval_ms = interval_ms;
    op.push = item(queue, "", "\"tick\"");
    return op;
}

TransactionOp release_op(const std::string& name, FencingToken token) {
    TransactionOp op;
    op.kind = Kind::lock_release;
    op.lock = locks::Guard{name, token};
    return op;
}

/// An op that fails: a kv.check of a key that does not exist, expecting version 7.
TransactionOp failing_op() {
    return kv_op(Kind::kv_check, "b", "never", "", 7);
}

struct Fixture {
    queen::testing::TempDir dir;
    Engine engine = Engine::open(dir.path(), Options{}).value();

    template <class R>
    R run(CommandBody body, std::int64_t now_ms) {
        const Command command{0, 0, std::move(body)};
        auto results =
            engine.apply_commands(std::span<const Command>(&command, 1), TimestampMs{now_ms});
        REQUIRE(results.has_value());
        REQUIRE(results->size() == 1);
        if (!std::holds_alternative<R>(results->front())) {
            const auto* error = std::get_if<ErrorResult>(&results->front());
            FAIL("unexpected result: " << (error != nullptr ? error->message : "another type"));
        }
        return std::get<R>(results->front());
    }
    TransactionResult transact(std::vector<TransactionOp> ops, std::int64_t now_ms = t0) {
        return run<TransactionResult>(Transaction{std::move(ops), std::nullopt}, now_ms);
    }
    LockResult acquire(const std::string& name, const std::string& owner, std::int64_t ttl_ms,
                       std::int64_t now_ms = t0) {
        LockCommand command;
        command.name = name;
        command.owner = owner;
        command.ttl_ms = ttl_ms;
        return run<LockResult>(command, now_ms);
    }
    DueResult due(std::int64_t now_ms) { return run<DueResult>(Due{}, now_ms); }
    std::optional<kv::Entry> get(const std::string& bucket, const std::string& key,
                                 std::int64_t now_ms = t0) {
        auto txn = engine.env().begin_read().value();
        return kv::get(engine.kv_tables(), txn, bucket, key, TimestampMs{now_ms}).value();
    }
    /// The payloads of every message a pop of `queue` can take now.
    std::vector<std::string> drain(const std::string& queue, std::int64_t now_ms) {
        queues::Pop pop;
        pop.queue = queue;
        pop.batch = 100;
        pop.partitions = 10;
        pop.auto_ack = true;
        auto popped = run<queues::PopResult>(pop, now_ms);
        std::vector<std::string> out;
        for (const auto& message : popped.messages) {
            out.emplace_back(as_chars(message.payload));
        }
        return out;
    }
};

TEST_CASE("engine transaction: for every operation kind, a later failure leaves no trace",
          "[engine][transaction][one-call]") {
    Fixture f;
    // State the operations below act on: a message to ack, a key, a timer, a lock.
    REQUIRE(f.transact({push_op("work", "m1", "\"job\"")}).success);
    queues::Pop pop;
    pop.queue = "work";
    const auto popped = f.run<queues::PopResult>(pop, t0);
    REQUIRE(popped.messages.size() == 1);
    const auto set_k = f.transact({kv_op(Kind::kv_set, "b", "k", "\"v1\"")});
    REQUIRE(set_k.success);
    const std::uint64_t k_version = set_k.results.at(0).version;
    REQUIRE(f.transact({timer_op("old", 60'000, "reminders")}).success);
    const auto grant = f.acquire("L", "me", 60'000);
    REQUIRE(grant.status == locks::Status::ok);

    TransactionOp ack;
    ack.kind = Kind::ack;
    ack.ack.partition = popped.messages[0].id.partition;
    ack.ack.transaction_id = "m1";
    ack.ack.lease = popped.lease;
    TransactionOp cancel;
    cancel.kind = Kind::timer_cancel;
    cancel.timer.id = "old";
    TransactionOp delayed = push_op("later", "d1");
    delayed.timer.delay_ms = 5'000;
    TransactionOp guarded = kv_op(Kind::kv_set, "b", "guarded", "1");
    guarded.guard = locks::Guard{"L", grant.grant.token};
    const std::vector<std::pair<std::string, TransactionOp>> ops{
        {"push", push_op("next", "n1")},
        {"delayed push", delayed},
        {"ack", ack},
        {"kv.set", kv_op(Kind::kv_set, "b", "k", "\"v2\"")},
        {"kv.set new", kv_op(Kind::kv_set, "b", "fresh", "2", 0)},
        {"kv.delete", kv_op(Kind::kv_delete, "b", "k")},
        {"kv.check", kv_op(Kind::kv_check, "b", "k", "", k_version)},
        {"timer.set", timer_op("new", 1'000, "reminders")},
        {"timer.cancel", cancel},
        {"guarded kv.set", guarded},
        {"lock.release", release_op("L", grant.grant.token)},
    };
    for (const auto& [name, op] : ops) {
        INFO("operation " << name);
        const auto before = dump_state(f.engine);
        auto failed = f.transact({op, failing_op()});
        REQUIRE_FALSE(failed.success);
        CHECK(failed.failed_op == 1);
        CHECK(failed.failure == TransactionFailure::conflict);
        CHECK(dump_state(f.engine) == before);
    }
    // And together, in one call, they all apply.
    std::vector<TransactionOp> all;
    for (const auto& [name, op] : ops) {
        if (name != "kv.check" && name != "kv.delete") {
            all.push_back(op);
        }
    }
    auto committed = f.transact(all);
    REQUIRE(committed.success);
    REQUIRE(committed.results.size() == all.size());
    CHECK(f.get("b", "k")->value == Bytes{'"', 'v', '2', '"'});
    CHECK(f.get("b", "fresh").has_value());
    CHECK(f.get("b", "guarded").has_value());
    CHECK(f.drain("next", t0) == std::vector<std::string>{"{}"});
    CHECK(f.drain("later", t0).empty());  // delayed
}

TEST_CASE("engine transaction: the four-step worker is one entry, the reminder fires once",
          "[engine][transaction][one-call]") {
    Fixture f;
    REQUIRE(f.transact({push_op("orders", "o1", "{\"id\":1}")}).success);
    queues::Pop pop;
    pop.queue = "orders";
    const auto popped = f.run<queues::PopResult>(pop, t0);
    REQUIRE(popped.messages.size() == 1);
    TransactionOp ack;
    ack.kind = Kind::ack;
    ack.ack.partition = popped.messages[0].id.partition;
    ack.ack.transaction_id = popped.messages[0].transaction_id;
    ack.ack.lease = popped.lease;
    auto done = f.transact(
        {ack, kv_op(Kind::kv_set, "orders", "1", "{\"state\":\"paid\"}"),
         push_op("shipping", "s1", "{\"order\":1}"), timer_op("remind-1", 60'000, "reminders")},
        t0 + 10);
    REQUIRE(done.success);
    CHECK(done.results[1].version > 0);
    CHECK(done.results[3].due_at == TimestampMs{t0 + 10 + 60'000});
    CHECK(f.get("orders", "1")->version == done.results[1].version);
    CHECK(f.drain("shipping", t0 + 20) == std::vector<std::string>{"{\"order\":1}"});
    CHECK(f.drain("orders", t0 + 20).empty());  // acked
    // Never early: one ms before the due time nothing fires; at it, once.
    CHECK(f.due(t0 + 10 + 59'999).timers_fired == 0);
    CHECK(f.drain("reminders", t0 + 10 + 59'999).empty());
    const auto fired = f.due(t0 + 10 + 60'000);
    CHECK(fired.timers_fired == 1);
    CHECK(fired.messages_pushed == 1);
    CHECK(f.drain("reminders", t0 + 10 + 60'000) == std::vector<std::string>{"\"tick\""});
    CHECK(f.due(t0 + 10 + 120'000).timers_fired == 0);
}

TEST_CASE("engine transaction: next pops in the same entry once the operations committed",
          "[engine][transaction][one-call]") {
    Fixture f;
    REQUIRE(f.transact({push_op("jobs", "j1", "1"), push_op("jobs", "j2", "2")}).success);
    queues::Pop pop;
    pop.queue = "jobs";
    const auto first = f.run<queues::PopResult>(pop, t0);
    REQUIRE(first.messages.size() == 1);
    const auto ack_of = [](const queues::PopResult& popped) {
        TransactionOp ack;
        ack.kind = Kind::ack;
        ack.ack.partition = popped.messages[0].id.partition;
        ack.ack.transaction_id = popped.messages[0].transaction_id;
        ack.ack.lease = popped.lease;
        return ack;
    };

    SECTION("committed: the ack frees the partition and next takes the following message") {
        Transaction loop{{ack_of(first), kv_op(Kind::kv_set, "progress", "jobs", "1")}, pop};
        const auto done = f.run<TransactionResult>(loop, t0 + 10);
        REQUIRE(done.success);
        REQUIRE(done.next.has_value());
        REQUIRE(done.next->messages.size() == 1);
        CHECK(as_chars(done.next->messages[0].payload) == "2");
        CHECK(done.next->lease != queues::LeaseId{0});
        // The popped message is leased: a plain pop finds nothing; acking it with that lease
        // (and popping next, on an empty queue) works, and next is then empty, not absent.
        CHECK(f.run<queues::PopResult>(pop, t0 + 20).messages.empty());
        const auto last = f.run<TransactionResult>(Transaction{{ack_of(*done.next)}, pop}, t0 + 30);
        REQUIRE(last.success);
        REQUIRE(last.next.has_value());
        CHECK(last.next->messages.empty());
    }
    SECTION("refused: nothing is applied and nothing is popped") {
        const auto before = dump_state(f.engine);
        Transaction loop{{ack_of(first), failing_op()}, pop};
        const auto refused = f.run<TransactionResult>(loop, t0 + 10);
        REQUIRE_FALSE(refused.success);
        CHECK_FALSE(refused.next.has_value());
        auto after = dump_state(f.engine);
        CHECK(after == before);
    }
    SECTION("next may pop what the operations pushed") {
        Transaction loop{{ack_of(first), push_op("followups", "f1", "\"f\"")}, std::nullopt};
        queues::Pop followups;
        followups.queue = "followups";
        loop.next = followups;
        const auto done = f.run<TransactionResult>(loop, t0 + 10);
        REQUIRE(done.success);
        REQUIRE(done.next->messages.size() == 1);
        CHECK(as_chars(done.next->messages[0].payload) == "\"f\"");
    }
    SECTION("a next with names over the limits refuses the whole command") {
        queues::Pop bad = pop;
        bad.group = std::string(1000, 'g');
        const Command command{0, 0, Transaction{{ack_of(first)}, bad}};
        auto results =
            f.engine.apply_commands(std::span<const Command>(&command, 1), TimestampMs{t0 + 10});
        REQUIRE(results.has_value());
        REQUIRE(std::holds_alternative<ErrorResult>(results->front()));
        CHECK(f.run<queues::PopResult>(pop, t0 + 20).messages.empty());  // still leased: not acked
    }
}

TEST_CASE("engine transaction: a delayed push is invisible until due, Due reports its time",
          "[engine][transaction][timers]") {
    Fixture f;
    TransactionOp delayed = push_op("q", "d1", "\"later\"");
    delayed.timer.delay_ms = 1'000;
    Transaction transaction{{delayed, push_op("q", "now1", "\"now\"")}, std::nullopt};
    const Command command{0, 0, transaction};
    const Bytes bytes = encode_command(command);
    const Entry entry{f.engine.applied_index().next(), TimestampMs{t0}, bytes};
    auto outcome = f.engine.apply(std::span<const Entry>(&entry, 1)).value();
    REQUIRE(outcome.is_due_changed);
    REQUIRE(outcome.due_at == TimestampMs{t0 + 1'000});
    auto result = std::get<TransactionResult>(decode_result(outcome.results[0]).value());
    REQUIRE(result.success);
    CHECK(result.results[0].timer_id == delayed_push_timer_id(entry.index, 0));
    CHECK(f.drain("q", t0 + 999) == std::vector<std::string>{"\"now\""});
    CHECK(f.due(t0 + 999).timers_fired == 0);
    CHECK(f.due(t0 + 1'000).messages_pushed == 1);
    CHECK(f.drain("q", t0 + 1'000) == std::vector<std::string>{"\"later\""});
    CHECK_FALSE(f.engine.due_at().value().has_value());
}

TEST_CASE("engine transaction: repeating timers push one message per firing with its own id",
          "[engine][transaction][timers]") {
    Fixture f;
    REQUIRE(f.transact({timer_op("every", 100, "ticks", 100)}).success);
    CHECK(f.due(t0 + 100).messages_pushed == 1);
    CHECK(f.due(t0 + 200).messages_pushed == 1);
    // Missed slots coalesce: one firing, then the cadence goes on from the next slot.
    CHECK(f.due(t0 + 550).messages_pushed == 1);
    CHECK(f.engine.due_at().value() == TimestampMs{t0 + 600});
    CHECK(f.drain("ticks", t0 + 550).size() == 3);
    // A second set of the same id is refused (409) unless it replaces.
    auto again = f.transact({timer_op("every", 100, "ticks", 100)});
    REQUIRE_FALSE(again.success);
    CHECK(again.failure == TransactionFailure::conflict);
    TransactionOp replace = timer_op("every", 1'000, "ticks");
    replace.timer.replace = true;
    REQUIRE(f.transact({replace}, t0 + 560).success);
    CHECK(f.engine.due_at().value() == TimestampMs{t0 + 1'560});
}

TEST_CASE("engine transaction: lock guards and releases check the fencing token",
          "[engine][transaction][locks]") {
    Fixture f;
    const auto first = f.acquire("L", "a", 1'000);
    REQUIRE(first.status == locks::Status::ok);
    CHECK(f.acquire("L", "b", 1'000, t0 + 1).status == locks::Status::held);
    // The grant expires; b gets it with a larger token; a's guard and release are refused.
    const auto second = f.acquire("L", "b", 1'000, t0 + 1'000);
    REQUIRE(second.status == locks::Status::ok);
    REQUIRE(second.grant.token > first.grant.token);
    TransactionOp stale = kv_op(Kind::kv_set, "b", "k");
    stale.guard = locks::Guard{"L", first.grant.token};
    auto refused = f.transact({stale}, t0 + 1'001);
    REQUIRE_FALSE(refused.success);
    CHECK(refused.failure == TransactionFailure::conflict);
    CHECK_FALSE(f.get("b", "k").has_value());
    CHECK_FALSE(f.transact({release_op("L", first.grant.token)}, t0 + 1'001).success);
    TransactionOp fresh = kv_op(Kind::kv_set, "b", "k");
    fresh.guard = locks::Guard{"L", second.grant.token};
    REQUIRE(f.transact({fresh, release_op("L", second.grant.token)}, t0 + 1'002).success);
    CHECK(f.get("b", "k").has_value());
    CHECK(f.acquire("L", "c", 1'000, t0 + 1'003).status == locks::Status::ok);
}

TEST_CASE("engine transaction: Due expires KV keys and lock grants and wakes their waiters",
          "[engine][transaction][kv][locks]") {
    Fixture f;
    TransactionOp short_lived = kv_op(Kind::kv_set, "b", "k");
    short_lived.kv.ttl_ms = 500;
    REQUIRE(f.transact({short_lived}).success);
    REQUIRE(f.acquire("L", "a", 800).status == locks::Status::ok);
    CHECK(f.engine.due_at().value() == TimestampMs{t0 + 500});
    CHECK(f.get("b", "k", t0 + 499).has_value());
    CHECK_FALSE(f.get("b", "k", t0 + 500).has_value());  // expired for reads at once
    const Command command{0, 0, Due{}};
    const Bytes bytes = encode_command(command);
    const Entry entry{f.engine.applied_index().next(), TimestampMs{t0 + 800}, bytes};
    auto outcome = f.engine.apply(std::span<const Entry>(&entry, 1)).value();
    auto due = std::get<DueResult>(decode_result(outcome.results[0]).value());
    CHECK(due.kv_expired == 1);
    CHECK(due.locks_expired == 1);
    REQUIRE(outcome.wakeups.size() == 1);
    CHECK(outcome.wakeups[0].queue == lock_wait_key("L"));
    CHECK(outcome.is_due_changed);
    CHECK_FALSE(outcome.due_at.has_value());
}

TEST_CASE("engine transaction: state after a restart is the same, tokens keep growing",
          "[engine][transaction][restart]") {
    Fixture f;
    REQUIRE(f.transact({kv_op(Kind::kv_set, "b", "k", "1"), timer_op("t", 5'000, "q")}).success);
    const auto grant = f.acquire("L", "a", 1'000);
    const auto before = dump_state(f.engine);
    f.engine = Engine::open(f.dir.path(), Options{}).value();
    CHECK(dump_state(f.engine) == before);
    const auto next = f.acquire("L", "b", 1'000, t0 + 2'000);
    REQUIRE(next.status == locks::Status::ok);
    CHECK(next.grant.token > grant.grant.token);
    CHECK(f.engine.due_at().value() == TimestampMs{t0 + 3'000});  // b's grant expires first
}

TEST_CASE("engine: a stream query registers fresh, is reused, conflicts and resets, and stays",
          "[engine][streams]") {
    Fixture f;
    const auto reg = [&](const std::string& hash, bool reset, const std::string& id) {
        StreamRegister command;
        command.query = streams::Register{"totals", "events", "sums", hash, reset, id};
        return f.run<StreamRegisterResult>(command, t0).result;
    };
    const auto fresh = reg("h1", false, "id-1");
    CHECK(fresh.status == streams::Status::fresh);
    CHECK(fresh.query_id == "id-1");
    const auto reused = reg("h1", false, "id-2");  // the stored id, not the new one
    CHECK(reused.status == streams::Status::reused);
    CHECK(reused.query_id == "id-1");
    const auto conflict = reg("h2", false, "id-3");
    CHECK(conflict.status == streams::Status::conflict);
    CHECK_THAT(conflict.message, Catch::Contains("config_hash mismatch"));
    const auto reset = reg("h2", true, "id-4");
    CHECK(reset.status == streams::Status::reset);
    CHECK(reset.epoch == fresh.epoch + 1);
    // A bad name is refused by the module and writes nothing.
    StreamRegister bad;
    bad.query = streams::Register{"", "events", "", "h", false, "id-5"};
    CHECK(f.run<StreamRegisterResult>(bad, t0).result.status == streams::Status::invalid);
    // After a restart the query is there with its hash and id.
    f.engine = Engine::open(f.dir.path(), Options{}).value();
    auto txn = f.engine.env().begin_read().value();
    const auto found = streams::find_query(f.engine.stream_tables(), txn, "totals").value();
    REQUIRE(found.has_value());
    CHECK(found->query_id == "id-1");
    CHECK(found->config_hash == "h2");
    CHECK(found->sink_queue == "sums");
    CHECK_FALSE(streams::find_query(f.engine.stream_tables(), txn, "").value().has_value());
}

TEST_CASE("engine: a streams cycle applies state, sink pushes and the ack together, or nothing",
          "[engine][streams]") {
    Fixture f;
    StreamRegister reg;
    reg.query = streams::Register{"totals", "events", "sums", "h1", false, "q-1"};
    REQUIRE(f.run<StreamRegisterResult>(reg, t0).result.status == streams::Status::fresh);
    REQUIRE(f.transact({push_op("events", "e1", "1"), push_op("events", "e2", "2"),
                        push_op("events", "e3", "3")})
                .success);
    queues::Pop pop;
    pop.queue = "events";
    pop.batch = 3;
    pop.group = "streams.totals";
    const auto batch = f.run<queues::PopResult>(pop, t0 + 1);
    REQUIRE(batch.messages.size() == 3);
    const auto cycle = [&](queues::LeaseId lease, const std::string& key) {
        StreamCycle c;
        c.query_id = "q-1";
        c.partition = batch.messages[0].id.partition;
        c.state_ops.push_back({StreamStateOp::Kind::upsert, key, Bytes{'7'}});
        c.push_items.push_back(item("sums", "s-" + key, "7"));
        queues::AckItem ack;
        ack.transaction_id = batch.messages[0].transaction_id;
        ack.lease = lease;
        ack.group = "streams.totals";
        c.ack = ack;
        return f.run<StreamCycleResult>(c, t0 + 2);
    };
    // A stale lease: nothing of the cycle is applied.
    const auto refused = cycle(queues::LeaseId{batch.lease.value() + 1}, "k-bad");
    CHECK_FALSE(refused.success);
    CHECK(refused.error == "Invalid or expired lease");
    CHECK(refused.source_queue == "events");
    {
        auto txn = f.engine.env().begin_read().value();
        CHECK(streams::count_rows(f.engine.stream_tables(), txn, "q-1").value() == 0);
    }
    CHECK(f.drain("sums", t0 + 3).empty());
    // The good one: the row, the sink message and the ack, with the lease released at once.
    const auto done = cycle(batch.lease, "k");
    REQUIRE(done.success);
    CHECK(done.state_ops_applied == 1);
    REQUIRE(done.push_results.size() == 1);
    CHECK(done.push_results[0].status == queues::PushStatus::queued);
    CHECK(done.lease_released);
    CHECK_FALSE(done.dlq);
    {
        auto txn = f.engine.env().begin_read().value();
        CHECK(streams::count_rows(f.engine.stream_tables(), txn, "q-1").value() == 1);
    }
    CHECK(f.drain("sums", t0 + 3) == std::vector<std::string>{"7"});
    // The rest of the batch comes again, in order, for the group.
    const auto again = f.run<queues::PopResult>(pop, t0 + 4);
    REQUIRE(again.messages.size() == 2);
    CHECK(as_chars(again.messages[0].payload) == "2");
    // An unknown query is refused.
    StreamCycle unknown;
    unknown.query_id = "nope";
    CHECK_FALSE(f.run<StreamCycleResult>(unknown, t0 + 5).success);
}

TEST_CASE(
    "engine: clearing a stream query's state leaves Due entries to delete the rows, a "
    "cycle of an older epoch is refused, removal forgets the query",
    "[engine][streams]") {
    Fixture f;
    StreamRegister reg;
    reg.query = streams::Register{"totals", "events", "", "h1", false, "q-1"};
    REQUIRE(f.run<StreamRegisterResult>(reg, t0).result.status == streams::Status::fresh);
    StreamCycle c;
    c.query_id = "q-1";
    c.partition = queues::PartitionId{7};
    c.epoch = 1;
    for (int i = 0; i < 25; ++i) {
        c.state_ops.push_back({StreamStateOp::Kind::upsert, "k" + std::to_string(i), Bytes{'1'}});
    }
    REQUIRE(f.run<StreamCycleResult>(c, t0 + 1).success);
    CHECK_FALSE(f.engine.due_at().value().has_value());
    const auto rows = [&] {
        auto txn = f.engine.env().begin_read().value();
        return streams::count_rows(f.engine.stream_tables(), txn, "q-1").value();
    };
    REQUIRE(rows() == 25);
    // A cycle that names another hash writes nothing.
    StreamCycle stale = c;
    stale.epoch = 2;
    stale.state_ops.resize(1);
    stale.state_ops[0].key = "stale";
    const auto refused = f.run<StreamCycleResult>(stale, t0 + 2);
    CHECK_FALSE(refused.success);
    CHECK_THAT(refused.error, Catch::Contains("epoch mismatch"));
    CHECK(rows() == 25);
    // A check that fails takes back the writes before it; one that holds writes nothing.
    StreamCycle checked = c;
    checked.state_ops = {{StreamStateOp::Kind::upsert, "new", Bytes{'2'}},
                         {StreamStateOp::Kind::check, "k0", Bytes{'2'}}};
    auto check_failed = f.run<StreamCycleResult>(checked, t0 + 2);
    CHECK_FALSE(check_failed.success);
    CHECK(check_failed.error == "state check failed on 'k0': the row holds another value");
    checked.state_ops[1] = {StreamStateOp::Kind::check_absent, "k0", {}};
    CHECK(f.run<StreamCycleResult>(checked, t0 + 2).error ==
          "state check failed on 'k0': the row holds another value");
    checked.state_ops[1] = {StreamStateOp::Kind::check, "absent", Bytes{'1'}};
    CHECK(f.run<StreamCycleResult>(checked, t0 + 2).error ==
          "state check failed on 'absent': the row is absent");
    CHECK(rows() == 25);
    checked.state_ops = {{StreamStateOp::Kind::check, "k0", Bytes{'1'}},
                         {StreamStateOp::Kind::check_absent, "absent", {}}};
    const auto held = f.run<StreamCycleResult>(checked, t0 + 2);
    CHECK(held.success);
    CHECK(held.state_ops_applied == 0);

    StreamAdmin clear;
    clear.name = "totals";
    CHECK(f.run<StreamAdminResult>(clear, t0 + 3).result.status == streams::Status::ok);
    CHECK(rows() == 0);  // gone for reads at once
    // The dead rows make Due due at once; Due entries of 10 rows each delete them.
    REQUIRE(f.engine.due_at().value().has_value());
    std::uint64_t collected = 0;
    int entries = 0;
    while (f.engine.due_at().value().has_value()) {
        Due due;
        due.limit = 10;
        const auto done = f.run<DueResult>(due, t0 + 4);
        CHECK(done.stream_rows_collected <= 10);
        collected += done.stream_rows_collected;
        REQUIRE(++entries < 10);
    }
    CHECK(collected == 25);
    CHECK(entries == 3);
    // The query and its hash stay; a cycle of the old epoch is refused, the new one's go on
    // from empty state.
    c.state_ops.resize(1);
    CHECK_THAT(f.run<StreamCycleResult>(c, t0 + 5).error, Catch::Contains("epoch mismatch"));
    CHECK(rows() == 0);
    c.epoch = 2;
    REQUIRE(f.run<StreamCycleResult>(c, t0 + 5).success);
    CHECK(rows() == 1);

    StreamAdmin remove;
    remove.op = StreamAdmin::Op::remove;
    remove.name = "totals";
    CHECK(f.run<StreamAdminResult>(remove, t0 + 6).result.status == streams::Status::ok);
    CHECK(f.run<StreamAdminResult>(remove, t0 + 6).result.status == streams::Status::unknown_query);
    CHECK_FALSE(f.run<StreamCycleResult>(c, t0 + 7).success);
    CHECK(f.due(t0 + 8).stream_rows_collected == 1);
    CHECK_FALSE(f.engine.due_at().value().has_value());
}

TEST_CASE("engine: an ephemeral queue is deleted once idle for its TTL, use restarts it",
          "[engine][ephemeral]") {
    Fixture f;
    ConfigureEphemeral make;
    make.configure.queue = "reply.1";
    make.idle_ttl_ms = 1'000;
    const auto made = f.run<EphemeralResult>(make, t0);
    CHECK(made.expires_at == TimestampMs{t0 + 1'000});
    CHECK(f.engine.due_at().value() == TimestampMs{t0 + 1'000});
    // A push at +500 (here in a transaction) and a pop at +700 start the TTL again.
    REQUIRE(f.transact({push_op("reply.1", "r1", "\"answer\"")}, t0 + 500).success);
    CHECK(f.engine.due_at().value() == TimestampMs{t0 + 1'500});
    CHECK(f.drain("reply.1", t0 + 700) == std::vector<std::string>{"\"answer\""});
    CHECK(f.engine.due_at().value() == TimestampMs{t0 + 1'700});
    // A restart keeps it ephemeral.
    f.engine = Engine::open(f.dir.path(), Options{}).value();
    CHECK(f.due(t0 + 1'699).queues_expired == 0);
    const auto due = f.due(t0 + 1'700);
    CHECK(due.queues_expired == 1);
    auto queues = f.engine
                      .read([](const queues::Tables& t, const store::Txn& txn) {
                          return queues::list_queues(t, txn, TimestampMs{t0 + 1'700});
                      })
                      .value();
    CHECK(queues.empty());
    CHECK_FALSE(f.engine.due_at().value().has_value());
    // An out-of-range TTL is refused and changes nothing.
    make.idle_ttl_ms = -1;
    const Command bad{0, 0, make};
    auto results =
        f.engine.apply_commands(std::span<const Command>(&bad, 1), TimestampMs{t0 + 2'000});
    REQUIRE(std::holds_alternative<ErrorResult>(results.value().at(0)));
}

}  // namespace
}  // namespace queen::engine
