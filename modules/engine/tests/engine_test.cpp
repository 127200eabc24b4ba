// engine/tests/engine_test.cpp — batch apply, applied_index, client dedupe, restart replay.
#include "queen/engine/engine.hpp"

#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/result.hpp"
#include "queen/testing/support.hpp"

namespace queen::engine {
namespace {

using namespace queen::queues;

Command push_command(const std::string& queue, const std::string& partition,
                     const std::string& txid, std::uint64_t client_id = 0,
                     std::uint64_t client_seq = 0) {
    PushItem item;
    item.queue = queue;
    item.partition = partition;
    item.transaction_id = txid;
    item.payload = Bytes(txid.begin(), txid.end());
    return Command{client_id, client_seq, Push{{item}}};
}

Command pop_command(const std::string& queue, std::uint32_t batch = 1,
                    const std::string& group = std::string(queue_mode_group)) {
    Pop pop;
    pop.queue = queue;
    pop.batch = batch;
    pop.group = group;
    pop.partitions = 4;
    return Command{0, 0, pop};
}

template <class T>
T apply_one(Engine& engine, const Command& command, std::int64_t now_ms) {
    auto results =
        engine.apply_commands(std::span<const Command>(&command, 1), TimestampMs{now_ms});
    REQUIRE(results.has_value());
    REQUIRE(results->size() == 1);
    REQUIRE(std::holds_alternative<T>(results->front()));
    return std::get<T>(results->front());
}

TEST_CASE("engine: an entry with an empty command is a no-op that only moves applied_index",
          "[engine]") {
    queen::testing::TempDir dir;
    auto engine = Engine::open(dir.path(), Options{}).value();
    const Bytes push = encode_command(push_command("q", "p", "t1"));
    const Bytes pop = encode_command(pop_command("q", 5));
    // A raft leader's no-op between a push and a pop, with a stamp far in the future: the pop
    // still sees the push (nothing changed), and the no-op's stamp is not "now" for the pop.
    std::vector<Entry> entries{Entry{LogIndex{1}, TimestampMs{1000}, push},
                               Entry{LogIndex{2}, TimestampMs{0}, {}},
                               Entry{LogIndex{3}, TimestampMs{1001}, pop}};
    auto outcome = engine.apply(entries).value();
    REQUIRE(engine.applied_index() == LogIndex{3});
    REQUIRE(outcome.results.size() == 3);
    auto noop = decode_result(outcome.results[1]).value();
    REQUIRE(std::holds_alternative<ErrorResult>(noop));
    auto popped = decode_result(outcome.results[2]).value();
    REQUIRE(std::holds_alternative<PopResult>(popped));
    CHECK(std::get<PopResult>(popped).messages.size() == 1);
}

TEST_CASE("engine: applied_index persists and the log replays from applied_index + 1",
          "[engine][restart]") {
    queen::testing::TempDir dir;
    std::vector<Bytes> log;
    for (int i = 0; i < 10; ++i) {
        log.push_back(encode_command(
            push_command("q", "p" + std::to_string(i % 3), "t" + std::to_string(i))));
    }
    log.push_back(encode_command(pop_command("q", 5)));
    auto entries = [&](std::size_t from, std::size_t to) {
        std::vector<Entry> out;
        for (std::size_t i = from; i < to; ++i) {
            out.push_back(
                Entry{LogIndex{i + 1}, TimestampMs{1000 + static_cast<std::int64_t>(i)}, log[i]});
        }
        return out;
    };
    std::vector<Bytes> straight;
    {
        queen::testing::TempDir other;
        auto engine = Engine::open(other.path(), Options{}).value();
        auto all = entries(0, log.size());
        straight = engine.apply(all).value().results;
    }
    {
        auto engine = Engine::open(dir.path(), Options{}).value();
        REQUIRE(engine.applied_index() == LogIndex{0});
        auto first = entries(0, 6);
        auto outcome = engine.apply(first).value();
        REQUIRE(outcome.wakeups.size() == 1);  // one per queue, however many partitions
        CHECK(outcome.wakeups[0].queue == "q");
        REQUIRE(engine.applied_index() == LogIndex{6});
    }
    auto engine = Engine::open(dir.path(), Options{}).value();
    REQUIRE(engine.applied_index() == LogIndex{6});
    REQUIRE(engine.sync().value() == LogIndex{6});
    auto rest = entries(6, log.size());
    auto outcome = engine.apply(rest).value();
    REQUIRE(engine.applied_index() == LogIndex{log.size()});
    // The restarted engine produced byte-identical results for the replayed suffix.
    for (std::size_t i = 0; i < outcome.results.size(); ++i) {
        REQUIRE(outcome.results[i] == straight[6 + i]);
    }
    REQUIRE(outcome.next_due.has_value());
}

TEST_CASE("engine: an applied record in the old place (e.meta) is read, then moved to q.meta",
          "[engine][restart]") {
    queen::testing::TempDir dir;
    const Bytes applied_key{'a', 'p', 'p', 'l', 'i', 'e', 'd'};
    Options options;
    {
        auto engine = Engine::open(dir.path(), options).value();
        for (int i = 0; i < 4; ++i) {
            (void)apply_one<PushResult>(engine, push_command("q", "p", "t" + std::to_string(i)),
                                        1000 + i);
        }
        REQUIRE(engine.applied_index() == LogIndex{4});
    }
    // Rewrite the data as the layout before the move kept it.
    auto tables = [&](store::Env& env) {
        return std::pair{env.open_table("e.meta").value(), env.open_table("q.meta").value()};
    };
    // (what the old place holds: nothing, the record, or the one-byte moved marker; whether
    // the new place holds the record)
    auto where = [&]() {
        auto env = store::Env::open(dir.path(), options.store).value();
        auto [old_place, new_place] = tables(env);
        auto txn = env.begin_read().value();
        const auto old_value = txn.get(old_place, applied_key).value();
        const std::string old_state = !old_value               ? "none"
                                      : old_value->size() == 1 ? "marker"
                                                               : "record";
        return std::pair{old_state, txn.get(new_place, applied_key).value().has_value()};
    };
    // Fresh data: the first commit already left the marker, so a binary from before the move
    // refuses the data instead of replaying its whole log over it.
    REQUIRE(where() == std::pair{std::string("marker"), true});
    {
        auto env = store::Env::open(dir.path(), options.store).value();
        auto [old_place, new_place] = tables(env);
        auto txn = env.begin_write().value();
        const auto raw = txn.get(new_place, applied_key).value();
        REQUIRE(raw.has_value());
        const Bytes value(raw->begin(), raw->end());
        REQUIRE(txn.put(old_place, applied_key, value).has_value());
        REQUIRE(txn.del(new_place, applied_key).value());
        REQUIRE(txn.commit().has_value());
    }
    REQUIRE(where() == std::pair{std::string("record"), false});
    {
        auto engine = Engine::open(dir.path(), options).value();
        REQUIRE(engine.applied_index() == LogIndex{4});
        (void)apply_one<PushResult>(engine, push_command("q", "p", "t4"), 1004);
        REQUIRE(engine.applied_index() == LogIndex{5});
    }
    REQUIRE(where() == std::pair{std::string("marker"), true});
    {
        auto engine = Engine::open(dir.path(), options).value();
        REQUIRE(engine.applied_index() == LogIndex{5});
    }
    // The marker without the record in the new place is damage, not a fresh start.
    {
        auto env = store::Env::open(dir.path(), options.store).value();
        auto [old_place, new_place] = tables(env);
        auto txn = env.begin_write().value();
        REQUIRE(txn.del(new_place, applied_key).value());
        REQUIRE(txn.commit().has_value());
    }
    auto reopened = Engine::open(dir.path(), options);
    REQUIRE_FALSE(reopened.has_value());
    CHECK(reopened.error().is(queen::Errc::corruption));
}

TEST_CASE("engine: a retried client request is applied once and gets the cached result",
          "[engine][dedupe]") {
    queen::testing::TempDir dir;
    auto engine = Engine::open(dir.path(), Options{}).value();
    auto first = apply_one<PushResult>(engine, push_command("q", "Default", "a", 7, 1), 1000);
    REQUIRE(first.items[0].status == PushStatus::queued);
    // Same client and seq, even with another body: the cached result, no second apply.
    auto again = apply_one<PushResult>(engine, push_command("q", "Default", "b", 7, 1), 2000);
    REQUIRE(again.items[0].transaction_id == "a");
    auto next = apply_one<PushResult>(engine, push_command("q", "Default", "c", 7, 2), 3000);
    REQUIRE(next.items[0].status == PushStatus::queued);
    auto stale = apply_one<ErrorResult>(engine, push_command("q", "Default", "d", 7, 1), 4000);
    REQUIRE(stale.code == ErrorResult::Code::stale_request);
    auto popped = apply_one<PopResult>(engine, pop_command("q", 10), 5000);
    REQUIRE(popped.messages.size() == 2);
    // The dedupe record survives a restart.
    auto env_path = dir.path();
    engine = Engine::open(env_path, Options{}).value();
    REQUIRE(engine.applied_index() == LogIndex{5});
    auto cached = apply_one<PushResult>(engine, push_command("q", "Default", "z", 7, 2), 6000);
    REQUIRE(cached.items[0].transaction_id == "c");
    // A sweep after the session TTL forgets the client: the same seq applies again.
    const std::int64_t later = 6000 + Options{}.client_session_ttl_ms;
    apply_one<SweepResult>(engine, Command{0, 0, Sweep{}}, later);
    auto fresh = apply_one<PushResult>(engine, push_command("q", "Default", "z", 7, 2), later);
    REQUIRE(fresh.items[0].transaction_id == "z");
}

TEST_CASE("engine: a malformed entry yields an error result and only moves applied_index",
          "[engine][codec]") {
    queen::testing::TempDir dir;
    auto engine = Engine::open(dir.path(), Options{}).value();
    const Bytes garbage{1, 2, 3};
    const Bytes good = encode_command(push_command("q", "Default", "a"));
    const Entry entries[] = {{LogIndex{1}, TimestampMs{10}, garbage},
                             {LogIndex{2}, TimestampMs{11}, good}};
    auto outcome = engine.apply(entries).value();
    REQUIRE(outcome.results.size() == 2);
    auto first = decode_result(outcome.results[0]).value();
    REQUIRE(std::get<ErrorResult>(first).code == ErrorResult::Code::malformed);
    auto second = decode_result(outcome.results[1]).value();
    REQUIRE(std::get<PushResult>(second).items[0].status == PushStatus::queued);
    REQUIRE(engine.applied_index() == LogIndex{2});
    // An invalid command (empty group) is an ErrorResult too, with nothing written.
    Pop pop;
    pop.queue = "q";
    pop.group = "";
    auto invalid = apply_one<ErrorResult>(engine, Command{0, 0, pop}, 20);
    REQUIRE(invalid.code == ErrorResult::Code::invalid);
    // Over-long names are rejected before they reach an LMDB key; empty names are fine.
    pop.group = "g";
    pop.has_partition = true;
    pop.partition = std::string(600, 'p');
    auto long_partition = apply_one<ErrorResult>(engine, Command{0, 0, pop}, 21);
    REQUIRE(long_partition.message.find("partition name") != std::string::npos);
    Ack ack;
    ack.items.push_back(AckItem{
        PartitionId{1}, std::string(600, 't'), AckStatus::completed, false, {}, LeaseId{0}, "g"});
    REQUIRE(apply_one<ErrorResult>(engine, Command{0, 0, ack}, 22).code ==
            ErrorResult::Code::invalid);
    auto empty_queue = apply_one<PushResult>(engine, push_command("", "", "e"), 23);
    REQUIRE(empty_queue.items[0].status == PushStatus::queued);
    ack.items[0] = AckItem{empty_queue.items[0].message_id.partition,
                           "e",
                           AckStatus::completed,
                           false,
                           {},
                           LeaseId{0},
                           ""};
    REQUIRE(apply_one<AckResult>(engine, Command{0, 0, ack}, 24).items[0].success);
    engine = Engine::open(dir.path(), Options{}).value();  // names with the empty key reload
    REQUIRE(apply_one<PushResult>(engine, push_command("", "", "e"), 25).items[0].status ==
            PushStatus::duplicate);
}

TEST_CASE("engine: time never goes backwards inside the state machine", "[engine][time]") {
    queen::testing::TempDir dir;
    auto engine = Engine::open(dir.path(), Options{}).value();
    ConfigureQueue configure;
    configure.queue = "q";
    configure.options.lease_time_s = 10;
    apply_one<ConfigureResult>(engine, Command{0, 0, configure}, 100'000);
    apply_one<PushResult>(engine, push_command("q", "Default", "a"), 100'000);
    auto popped = apply_one<PopResult>(engine, pop_command("q"), 100'000);
    REQUIRE(popped.lease_expires_at.value() == 110'000);
    // An entry stamped earlier (a new leader with a slow clock) still sees t = 100 s.
    auto early = apply_one<PopResult>(engine, pop_command("q"), 50'000);
    REQUIRE(early.outcome == PopResult::Outcome::empty);
    REQUIRE(engine.next_due()->value() == 110'000);
}

TEST_CASE("engine: map growth reruns the batch and applies every entry once", "[engine][store]") {
    queen::testing::TempDir dir;
    Options options;
    options.store.map_size_bytes = 256 << 10;  // tiny: forces several doublings
    auto engine = Engine::open(dir.path(), options).value();
    std::vector<Command> commands;
    const std::string payload(2000, 'x');
    for (int i = 0; i < 600; ++i) {
        auto command = push_command("q", "p" + std::to_string(i % 7), "t" + std::to_string(i));
        std::get<Push>(command.body).items[0].payload = Bytes(payload.begin(), payload.end());
        commands.push_back(command);
    }
    auto results = engine.apply_commands(commands, TimestampMs{1}).value();
    REQUIRE(results.size() == 600);
    for (const auto& result : results) {
        REQUIRE(std::get<PushResult>(result).items[0].status == PushStatus::queued);
    }
    REQUIRE(engine.env().map_size_bytes() > (256u << 10));
    auto queues = engine.read(
        [](const Tables& t, const store::Txn& txn) { return list_queues(t, txn, TimestampMs{1}); });
    REQUIRE(queues.has_value());
    REQUIRE(queues->at(0).messages == 600);
    REQUIRE(engine.queue_state().index_stats().partitions == 7);
}

}  // namespace
}  // namespace queen::engine

namespace queen::engine {
namespace {

std::uint64_t message_entries(const Engine& engine) {
    return engine
        .read([](const Tables& t, const store::Txn& txn) -> Result<std::uint64_t> {
            QUEEN_TRY(auto stats, txn.stats(t.messages));
            return stats.entries;
        })
        .value();
}

std::vector<std::string> popped_ids(const PopResult& popped) {
    std::vector<std::string> out;
    for (const auto& m : popped.messages) {
        out.push_back(m.transaction_id.str());
    }
    return out;
}

Command pop_partition_command(const std::string& queue, const std::string& partition,
                              const std::string& group) {
    Pop pop;
    pop.queue = queue;
    pop.has_partition = true;
    pop.partition = partition;
    pop.batch = 100;
    pop.group = group;
    return Command{0, 0, pop};
}

TEST_CASE(
    "engine: the pushes of one batch share a message block per partition, and the rest "
    "of the batch sees their messages",
    "[engine][messages]") {
    queen::testing::TempDir dir;
    auto engine = Engine::open(dir.path(), Options{}).value();
    // One batch of pushes: partition a gets one block of three messages, b a lone record.
    const std::vector<Command> pushes{push_command("q", "a", "t1"), push_command("q", "a", "t2"),
                                      push_command("q", "b", "t3"), push_command("q", "a", "t4")};
    auto results = engine.apply_commands(pushes, TimestampMs{1000}).value();
    REQUIRE(std::get<PushResult>(results[3]).items[0].message_id.sequence.value() == 3);
    REQUIRE(message_entries(engine) == 2);
    // The partitions' records, also written once at the batch's end, hold every push.
    const auto listed = engine
                            .read([](const Tables& t, const store::Txn& txn) {
                                return list_queues(t, txn, TimestampMs{1000});
                            })
                            .value();
    REQUIRE(listed.size() == 1);
    REQUIRE(listed[0].messages == 4);
    // A pop in the middle of a batch sees the pushes before it; the push after it starts anew.
    const std::vector<Command> mixed{push_command("q", "a", "t5"),
                                     pop_partition_command("q", "a", "g1"),
                                     push_command("q", "a", "t6")};
    results = engine.apply_commands(mixed, TimestampMs{1001}).value();
    REQUIRE(popped_ids(std::get<PopResult>(results[1])) ==
            std::vector<std::string>{"t1", "t2", "t4", "t5"});
    REQUIRE(message_entries(engine) == 4);  // a: [t1 t2 t4], [t5], [t6]; b: [t3]
    // A queue deleted in the batch that pushed to it leaves no message behind.
    const std::vector<Command> doomed{push_command("x", "p", "u1"), push_command("x", "p", "u2"),
                                      Command{0, 0, DeleteQueue{"x"}}};
    results = engine.apply_commands(doomed, TimestampMs{1002}).value();
    REQUIRE(std::get<DeleteQueueResult>(results[2]).existed);
    REQUIRE(message_entries(engine) == 4);
    // After a restart every message reads back in order.
    engine = Engine::open(dir.path(), Options{}).value();
    auto all = apply_one<PopResult>(engine, pop_partition_command("q", "a", "g2"), 1003);
    REQUIRE(popped_ids(all) == std::vector<std::string>{"t1", "t2", "t4", "t5", "t6"});
}

TEST_CASE("engine: a failing transaction rolls back only its own entry in a batch",
          "[engine][transaction]") {
    queen::testing::TempDir dir;
    auto engine = Engine::open(dir.path(), Options{}).value();
    Transaction tx;
    TransactionOp push;
    push.kind = TransactionOp::Kind::push;
    push.push.queue = "fresh";  // a queue and partition the rollback must also undo
    push.push.partition = "new-partition";
    push.push.transaction_id = "x1";
    tx.ops.push_back(push);
    TransactionOp ack;
    ack.kind = TransactionOp::Kind::ack;
    ack.ack.partition = PartitionId{999};
    ack.ack.transaction_id = "nope";
    tx.ops.push_back(ack);
    const std::vector<Command> commands{push_command("q", "Default", "a"), Command{0, 0, tx},
                                        push_command("q", "Default", "b")};
    auto results = engine.apply_commands(commands, TimestampMs{1000}).value();
    REQUIRE(std::get<PushResult>(results[0]).items[0].status == PushStatus::queued);
    const auto& failed = std::get<TransactionResult>(results[1]);
    REQUIRE_FALSE(failed.success);
    REQUIRE(failed.failed_op == 1);
    REQUIRE(failed.results.size() == 2);  // the push ran before the failing ack, then the ack
    REQUIRE_FALSE(failed.results[1].success);
    REQUIRE(std::get<PushResult>(results[2]).items[0].status == PushStatus::queued);
    REQUIRE(engine.applied_index() == LogIndex{3});
    auto queues = engine
                      .read([](const Tables& t, const store::Txn& txn) {
                          return list_queues(t, txn, TimestampMs{1000});
                      })
                      .value();
    REQUIRE(queues.size() == 1);
    REQUIRE(queues[0].name == "q");
    REQUIRE(queues[0].messages == 2);
    // The partition id the rolled-back push took is handed out again, consistently.
    auto next = apply_one<PushResult>(engine, push_command("other", "Default", "c"), 1001);
    REQUIRE(next.items[0].message_id.partition.value() == 2);
    auto popped = apply_one<PopResult>(engine, pop_command("other"), 1002);
    REQUIRE(popped.messages.size() == 1);
    // After a restart the same state comes back.
    const std::string before = engine.queue_state().debug_dump_index();
    engine = Engine::open(dir.path(), Options{}).value();
    REQUIRE(engine.queue_state().debug_dump_index() == before);
}

}  // namespace
}  // namespace queen::engine

namespace queen::engine {
namespace {

TEST_CASE("engine: replaying a random log with restarts gives byte-identical results",
          "[engine][restart][property]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    queen::testing::TempDir dir_a;
    queen::testing::TempDir dir_b;
    Options options;
    options.store.sync_mode = store::SyncMode::no_sync;
    auto a = Engine::open(dir_a.path(), options).value();
    // Build the log against engine A, choosing acks from A's pop results.
    std::vector<Bytes> log;
    std::vector<std::int64_t> times;
    std::vector<Bytes> results_a;
    std::vector<PoppedMessage> inflight;
    std::vector<LeaseId> inflight_leases;
    std::int64_t now = 1'000'000;
    ConfigureQueue configure;
    configure.queue = "q";
    configure.options.lease_time_s = 3;
    configure.options.retry_limit = 1;
    configure.options.retry_delay_ms = 500;
    configure.options.ttl_s = 0;
    const std::vector<std::string> groups{std::string(queue_mode_group), "g1", "g2"};
    for (int step = 0; step < 1500; ++step) {
        now += static_cast<std::int64_t>(rng.below(400));
        Command command;
        const auto dice = rng.below(100);
        if (step == 0) {
            command.body = configure;
        } else if (dice < 35) {
            command = push_command("q", "p" + std::to_string(rng.below(8)),
                                   "t" + std::to_string(rng.below(3000)));
        } else if (dice < 65) {
            Pop pop;
            pop.queue = "q";
            pop.group = groups[rng.below(groups.size())];
            pop.batch = static_cast<std::uint32_t>(1 + rng.below(5));
            pop.partitions = static_cast<std::uint32_t>(1 + rng.below(4));
            pop.auto_ack = rng.below(10) == 0;
            pop.subscription_mode =
                rng.below(5) == 0 ? SubscriptionMode::new_only : SubscriptionMode::all;
            command.body = pop;
        } else if (dice < 92 && !inflight.empty()) {
            const std::size_t i = static_cast<std::size_t>(rng.below(inflight.size()));
            Ack ack;
            ack.items.push_back(AckItem{inflight[i].id.partition,
                                        inflight[i].transaction_id,
                                        static_cast<AckStatus>(rng.below(4)),
                                        false,
                                        {},
                                        inflight_leases[i],
                                        groups[rng.below(groups.size())]});
            command.body = ack;
        } else if (dice < 96 && !inflight_leases.empty()) {
            command.body = ExtendLease{inflight_leases[rng.below(inflight_leases.size())], 5};
        } else {
            SeekGroup seek;
            seek.group = groups[rng.below(groups.size())];
            seek.queue = "q";
            seek.to_end = rng.below(2) == 0;
            seek.timestamp = TimestampMs{now - static_cast<std::int64_t>(rng.below(20'000))};
            command.body = seek;
        }
        log.push_back(encode_command(command));
        times.push_back(now);
        const Entry entry{LogIndex{log.size()}, TimestampMs{now}, log.back()};
        auto outcome = a.apply(std::span<const Entry>(&entry, 1)).value();
        results_a.push_back(outcome.results[0]);
        auto decoded = decode_result(outcome.results[0]).value();
        if (const auto* pop = std::get_if<PopResult>(&decoded)) {
            for (const auto& m : pop->messages) {
                inflight.push_back(m);
                inflight_leases.push_back(pop->lease);
            }
        }
    }
    // Engine B applies the same log in random chunks, reopening between chunks.
    std::size_t done = 0;
    int reopens = 0;
    while (done < log.size()) {
        auto b = Engine::open(dir_b.path(), options).value();
        ++reopens;
        REQUIRE(b.applied_index() == LogIndex{done});
        const std::size_t chunk = std::min<std::size_t>(log.size() - done, 1 + rng.below(200));
        std::vector<Entry> entries;
        for (std::size_t i = done; i < done + chunk; ++i) {
            entries.push_back(Entry{LogIndex{i + 1}, TimestampMs{times[i]}, log[i]});
        }
        auto outcome = b.apply(entries).value();
        for (std::size_t i = 0; i < chunk; ++i) {
            INFO("entry " << done + i + 1);
            REQUIRE(outcome.results[i] == results_a[done + i]);
        }
        done += chunk;
    }
    REQUIRE(reopens > 3);
}

}  // namespace
}  // namespace queen::engine

namespace queen::engine {
namespace {

std::vector<Entry> entries_of(const std::vector<Bytes>& encoded, LogIndex after) {
    std::vector<Entry> entries;
    for (const Bytes& bytes : encoded) {
        after = after.next();
        entries.push_back(Entry{after, TimestampMs{5}, bytes});
    }
    return entries;
}

std::uint64_t queued_messages(Engine& engine) {
    auto queues = engine.read(
        [](const Tables& t, const store::Txn& txn) { return list_queues(t, txn, TimestampMs{5}); });
    REQUIRE(queues.has_value());
    return queues->empty() ? 0 : queues->at(0).messages;
}

TEST_CASE("engine: before_commit gets every result once, before the commit, as apply() gives",
          "[engine][store]") {
    queen::testing::TempDir plain_dir;
    queen::testing::TempDir hooked_dir;
    Options options;
    options.store.map_size_bytes = 256 << 10;  // tiny: map growth reruns txns
    options.entries_per_txn_max = 64;          // and apply() splits the batch into txns
    auto plain = Engine::open(plain_dir.path(), options).value();
    auto hooked = Engine::open(hooked_dir.path(), options).value();
    std::vector<Bytes> encoded;
    const std::string payload(2000, 'x');
    for (int i = 0; i < 300; ++i) {
        // Every tenth command is a client session's, each seq sent twice: the retry gets the
        // cached result through the hook too.
        const bool is_session = i % 10 == 0;
        auto command = push_command("q", "p" + std::to_string(i % 5), "t" + std::to_string(i % 250),
                                    is_session ? 7 : 0,
                                    is_session ? static_cast<std::uint64_t>(1 + i / 20) : 0);
        std::get<Push>(command.body).items[0].payload = Bytes(payload.begin(), payload.end());
        encoded.push_back(encode_command(command));
    }
    const auto entries = entries_of(encoded, LogIndex{0});
    auto expected = plain.apply(entries).value();
    REQUIRE(expected.results.size() == entries.size());

    std::vector<CommandResult> handed(entries.size());
    std::vector<int> calls(entries.size(), 0);
    std::vector<std::uint64_t> visible_at_hand_over;
    auto outcome = hooked.apply(entries, [&](std::size_t first, std::span<CommandResult> results) {
        // Not committed yet: a reader still sees the state before this txn.
        visible_at_hand_over.push_back(queued_messages(hooked));
        for (std::size_t i = 0; i < results.size(); ++i) {
            handed[first + i] = std::move(results[i]);
            ++calls[first + i];
        }
    });
    REQUIRE(outcome.has_value());
    CHECK(outcome->results.empty());
    REQUIRE(hooked.env().map_size_bytes() > (256u << 10));
    for (std::size_t i = 0; i < entries.size(); ++i) {
        INFO("entry " << i);
        CHECK(calls[i] == 1);
        CHECK(encode_result(handed[i]) == expected.results[i]);
    }
    // One hand-over per entry, right after it ran and before its txn's commit: the first
    // txn's (entries 0-63) saw an empty state, the second's saw the first's messages, the last
    // not yet the messages of its own txn.
    REQUIRE(visible_at_hand_over.size() == entries.size());
    CHECK(visible_at_hand_over[0] == 0);
    CHECK(visible_at_hand_over[63] == 0);
    CHECK(visible_at_hand_over[64] > 0);
    CHECK(visible_at_hand_over.back() < queued_messages(plain));
    CHECK(queued_messages(hooked) == queued_messages(plain));
    CHECK(hooked.applied_index() == LogIndex{entries.size()});
}

}  // namespace
}  // namespace queen::engine

namespace queen::engine {
namespace {

std::vector<Bytes> big_pushes(int count, int partitions) {
    std::vector<Bytes> encoded;
    const std::string payload(2000, 'x');
    for (int i = 0; i < count; ++i) {
        auto command =
            push_command("q", "p" + std::to_string(i % partitions), "t" + std::to_string(i));
        std::get<Push>(command.body).items[0].payload = Bytes(payload.begin(), payload.end());
        encoded.push_back(encode_command(command));
        if (i % 5 == 4) {
            encoded.push_back(encode_command(pop_command("q", 3)));
        }
    }
    return encoded;
}

TEST_CASE("engine: apply_uncommitted spans calls until commit, across map growth, as apply() gives",
          "[engine][store]") {
    queen::testing::TempDir plain_dir;
    queen::testing::TempDir open_dir;
    Options options;
    options.store.map_size_bytes = 256 << 10;  // tiny: map growth reruns the open txn's entries
    auto plain = Engine::open(plain_dir.path(), options).value();
    auto spanned = Engine::open(open_dir.path(), options).value();
    const auto encoded = big_pushes(400, 7);
    const auto entries = entries_of(encoded, LogIndex{0});
    auto expected = plain.apply(entries).value();

    std::vector<CommandResult> handed(entries.size());
    std::vector<int> calls(entries.size(), 0);
    std::size_t done = 0;
    std::size_t applied_uncommitted = 0;
    for (const std::size_t size : {1u, 7u, 30u, 100u, 3u, 200u, 500u}) {
        const std::size_t count = std::min(size, entries.size() - done);
        if (count == 0) {
            break;
        }
        const auto part = std::span<const Entry>(entries).subspan(done, count);
        auto outcome =
            spanned.apply_uncommitted(part, [&](std::size_t first, std::span<CommandResult> r) {
                for (std::size_t i = 0; i < r.size(); ++i) {
                    handed[done + first + i] = std::move(r[i]);
                    ++calls[done + first + i];
                }
            });
        REQUIRE(outcome.has_value());
        done += count;
        applied_uncommitted += count;
        // Nothing is committed yet: other readers and applied_index see the state before.
        CHECK(spanned.applied_index() == LogIndex{0});
        CHECK(queued_messages(spanned) == 0);
        CHECK(spanned.uncommitted().entries == applied_uncommitted);
        CHECK(spanned.uncommitted().bytes > 0);
    }
    REQUIRE(done == entries.size());
    REQUIRE(spanned.env().map_size_bytes() > (256u << 10));  // grown while the txn was open
    REQUIRE(spanned.commit().has_value());
    CHECK(spanned.uncommitted().entries == 0);
    CHECK(spanned.applied_index() == LogIndex{entries.size()});
    for (std::size_t i = 0; i < entries.size(); ++i) {
        INFO("entry " << i);
        CHECK(calls[i] == 1);
        CHECK(encode_result(handed[i]) == expected.results[i]);
    }
    CHECK(queued_messages(spanned) == queued_messages(plain));
    CHECK(spanned.queue_state().index_stats().partitions ==
          plain.queue_state().index_stats().partitions);
    REQUIRE(spanned.commit().has_value());  // nothing open: nothing to do
    CHECK(spanned.applied_index() == LogIndex{entries.size()});
}

TEST_CASE("engine: an open txn holds at most entries_per_txn_max entries", "[engine][store]") {
    queen::testing::TempDir dir;
    Options options;
    options.entries_per_txn_max = 32;
    auto engine = Engine::open(dir.path(), options).value();
    const auto encoded = big_pushes(100, 3);
    const auto entries = entries_of(encoded, LogIndex{0});
    const Engine::BeforeCommit ignore = [](std::size_t, std::span<CommandResult>) {};
    for (std::size_t first = 0; first < entries.size(); first += 10) {
        const auto part = std::span<const Entry>(entries).subspan(
            first, std::min<std::size_t>(10, entries.size() - first));
        REQUIRE(engine.apply_uncommitted(part, ignore).has_value());
        CHECK(engine.uncommitted().entries < 32);
        // Whatever committed is a prefix of what was applied.
        CHECK(engine.applied_index().value() + engine.uncommitted().entries == first + part.size());
    }
    CHECK(engine.applied_index().value() > 0);
}

TEST_CASE("engine: entries never committed are replayed after a reopen, with the same results",
          "[engine][restart]") {
    queen::testing::TempDir dir;
    queen::testing::TempDir other;
    const auto encoded = big_pushes(60, 4);
    const auto entries = entries_of(encoded, LogIndex{0});
    auto straight = Engine::open(other.path(), Options{}).value().apply(entries).value();
    const auto half = entries.size() / 2;
    const Engine::BeforeCommit ignore = [](std::size_t, std::span<CommandResult>) {};
    {
        auto engine = Engine::open(dir.path(), Options{}).value();
        REQUIRE(engine.apply_uncommitted(std::span(entries).first(half), ignore).has_value());
        REQUIRE(engine.commit().has_value());
        // The rest is applied but never committed: closing the engine abandons it.
        REQUIRE(engine.apply_uncommitted(std::span(entries).subspan(half), ignore).has_value());
        CHECK(engine.uncommitted().entries == entries.size() - half);
    }
    auto engine = Engine::open(dir.path(), Options{}).value();
    REQUIRE(engine.applied_index() == LogIndex{half});
    auto replayed = engine.apply(std::span(entries).subspan(half)).value();
    REQUIRE(replayed.results.size() == entries.size() - half);
    for (std::size_t i = 0; i < replayed.results.size(); ++i) {
        INFO("entry " << half + i);
        CHECK(replayed.results[i] == straight.results[half + i]);
    }
    CHECK(engine.applied_index() == LogIndex{entries.size()});
}

// System records (PutSystem): the node layer's opaque blobs in "e.meta".

Command put_system(std::string key, std::string_view value, std::uint64_t client_id = 0,
                   std::uint64_t client_seq = 0) {
    return Command{client_id, client_seq,
                   PutSystem{std::move(key), Bytes(value.begin(), value.end())}};
}

std::optional<std::string> record_of(const Engine& engine, std::string_view key) {
    auto record = queen::testing::must(engine.system_record(key));
    if (!record) {
        return std::nullopt;
    }
    return std::string(as_chars(*record));
}

TEST_CASE("engine: a system record is put, overwritten, deleted by an empty value, and reopened",
          "[engine][system]") {
    queen::testing::TempDir dir;
    {
        auto engine = Engine::open(dir.path(), Options{}).value();
        CHECK(record_of(engine, "members") == std::nullopt);
        CHECK_FALSE(apply_one<PutSystemResult>(engine, put_system("members", "v1"), 10).replaced);
        CHECK(record_of(engine, "members") == "v1");
        CHECK(apply_one<PutSystemResult>(engine, put_system("members", "v2"), 11).replaced);
        CHECK(record_of(engine, "members") == "v2");
        // Keys are any bytes; the engine never looks inside a value.
        const std::string binary_key("a\0b", 3);
        const std::string binary_value("\0\xff\x01", 3);
        CHECK_FALSE(
            apply_one<PutSystemResult>(engine, put_system(binary_key, binary_value), 12).replaced);
        CHECK(record_of(engine, binary_key) == binary_value);
        CHECK(record_of(engine, "a") == std::nullopt);
        // An empty value deletes; deleting what is absent is no error.
        CHECK(apply_one<PutSystemResult>(engine, put_system("members", ""), 13).replaced);
        CHECK(record_of(engine, "members") == std::nullopt);
        CHECK_FALSE(apply_one<PutSystemResult>(engine, put_system("members", ""), 14).replaced);
        CHECK_FALSE(apply_one<PutSystemResult>(engine, put_system("catalogue", "c"), 15).replaced);
        // The key "applied" does not touch the engine's applied record of the same name.
        CHECK_FALSE(apply_one<PutSystemResult>(engine, put_system("applied", "x"), 16).replaced);
        REQUIRE(engine.applied_index() == LogIndex{7});
    }
    auto engine = Engine::open(dir.path(), Options{}).value();
    REQUIRE(engine.applied_index() == LogIndex{7});
    CHECK(record_of(engine, "members") == std::nullopt);
    CHECK(record_of(engine, "catalogue") == "c");
    CHECK(record_of(engine, "applied") == "x");
    CHECK(record_of(engine, std::string("a\0b", 3)) == std::string("\0\xff\x01", 3));
    // A key that cannot be stored cannot be read either.
    CHECK(queen::testing::must_fail(engine.system_record("")).is(queen::Errc::invalid_argument));
    CHECK(queen::testing::must_fail(engine.system_record(std::string(65, 'k')))
              .is(queen::Errc::invalid_argument));
}

TEST_CASE("engine: a system record over the limits is invalid and changes nothing",
          "[engine][system]") {
    queen::testing::TempDir dir;
    auto engine = Engine::open(dir.path(), Options{}).value();
    const std::string longest_key(system_key_bytes_max, 'k');
    const std::string largest_value(system_value_bytes_max, 'v');
    CHECK_FALSE(
        apply_one<PutSystemResult>(engine, put_system(longest_key, largest_value), 10).replaced);
    CHECK_FALSE(apply_one<PutSystemResult>(engine, put_system("k", "old"), 11).replaced);
    const std::vector<Command> invalid{
        put_system("", "x"), put_system(std::string(system_key_bytes_max + 1, 'k'), "x"),
        put_system("k", std::string(system_value_bytes_max + 1, 'v')),
        put_system("", ""),  // not even a delete
    };
    std::int64_t now = 12;
    for (const Command& command : invalid) {
        INFO(std::get<PutSystem>(command.body).key.size()
             << " byte key, " << std::get<PutSystem>(command.body).value.size() << " byte value");
        const auto error = apply_one<ErrorResult>(engine, command, now++);
        CHECK(error.code == ErrorResult::Code::invalid);
        CHECK(error.message.find("system record") != std::string::npos);
    }
    CHECK(engine.applied_index() == LogIndex{6});  // the invalid entries moved it, nothing else
    CHECK(record_of(engine, "k") == "old");
    CHECK(record_of(engine, longest_key) == largest_value);
}

TEST_CASE("engine: a retried system record put is applied once", "[engine][system][dedupe]") {
    queen::testing::TempDir dir;
    auto engine = Engine::open(dir.path(), Options{}).value();
    CHECK_FALSE(apply_one<PutSystemResult>(engine, put_system("m", "a", 9, 1), 10).replaced);
    // Same client and seq with another value: the cached result, the value unchanged.
    CHECK_FALSE(apply_one<PutSystemResult>(engine, put_system("m", "b", 9, 1), 11).replaced);
    CHECK(record_of(engine, "m") == "a");
    CHECK(apply_one<PutSystemResult>(engine, put_system("m", "c", 9, 2), 12).replaced);
    CHECK(record_of(engine, "m") == "c");
    const auto stale = apply_one<ErrorResult>(engine, put_system("m", "d", 9, 1), 13);
    CHECK(stale.code == ErrorResult::Code::stale_request);
    CHECK(record_of(engine, "m") == "c");
    // An invalid put's result is cached like any: a retry gets it, even with a valid body.
    CHECK(apply_one<ErrorResult>(engine, put_system("", "x", 9, 3), 14).code ==
          ErrorResult::Code::invalid);
    CHECK(apply_one<ErrorResult>(engine, put_system("m", "e", 9, 3), 15).code ==
          ErrorResult::Code::invalid);
    CHECK(record_of(engine, "m") == "c");
}

TEST_CASE("engine: system_record sees committed state only", "[engine][system]") {
    queen::testing::TempDir dir;
    auto engine = Engine::open(dir.path(), Options{}).value();
    const Bytes put = encode_command(put_system("m", "v"));
    const Bytes push = encode_command(push_command("q", "p", "t"));
    const Entry entries[] = {{LogIndex{1}, TimestampMs{10}, put},
                             {LogIndex{2}, TimestampMs{11}, push}};
    std::vector<CommandResult> handed;
    REQUIRE(engine
                .apply_uncommitted(entries,
                                   [&](std::size_t, std::span<CommandResult> results) {
                                       for (auto& result : results) {
                                           handed.push_back(std::move(result));
                                       }
                                   })
                .has_value());
    REQUIRE(handed.size() == 2);
    CHECK(std::holds_alternative<PutSystemResult>(handed[0]));
    CHECK(record_of(engine, "m") == std::nullopt);  // applied, not committed
    REQUIRE(engine.commit().has_value());
    CHECK(record_of(engine, "m") == "v");
}

TEST_CASE("engine: system records replay identically across restarts",
          "[engine][restart][system]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    std::vector<Bytes> log;
    for (int i = 0; i < 300; ++i) {
        const std::string key = "k" + std::to_string(rng.below(6));
        if (rng.below(4) == 0) {
            log.push_back(encode_command(push_command("q", key, "t" + std::to_string(i))));
        } else {
            // One in four puts deletes (an empty value).
            const std::string value = rng.below(4) == 0 ? "" : std::string(rng.below(300) + 1, 'a');
            log.push_back(encode_command(put_system(key, value, 5, static_cast<std::uint64_t>(i))));
        }
    }
    std::vector<Entry> entries;
    for (std::size_t i = 0; i < log.size(); ++i) {
        entries.push_back(
            Entry{LogIndex{i + 1}, TimestampMs{100 + static_cast<std::int64_t>(i)}, log[i]});
    }
    queen::testing::TempDir straight_dir;
    auto straight = Engine::open(straight_dir.path(), Options{}).value();
    const auto expected = straight.apply(entries).value();
    queen::testing::TempDir dir;
    std::size_t done = 0;
    while (done < entries.size()) {
        auto engine = Engine::open(dir.path(), Options{}).value();
        REQUIRE(engine.applied_index() == LogIndex{done});
        const std::size_t chunk = std::min<std::size_t>(entries.size() - done, 1 + rng.below(60));
        auto outcome = engine.apply(std::span(entries).subspan(done, chunk)).value();
        for (std::size_t i = 0; i < chunk; ++i) {
            INFO("entry " << done + i + 1);
            REQUIRE(outcome.results[i] == expected.results[done + i]);
        }
        done += chunk;
    }
    auto engine = Engine::open(dir.path(), Options{}).value();
    for (int k = 0; k < 6; ++k) {
        const std::string key = "k" + std::to_string(k);
        INFO(key);
        CHECK(record_of(engine, key) == record_of(straight, key));
    }
}

}  // namespace
}  // namespace queen::engine
