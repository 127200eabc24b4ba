// engine/tests/bench_test.cpp — apply throughput of push, pop and ack (hidden: [.bench]). Not a
// timed assertion: it prints numbers for the report. LMDB runs with no_sync here, as in the
// node, where the log's fdatasync is the durability point.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "queen/core/rng.hpp"
#include "queen/engine/engine.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace queen::engine {
namespace {

using namespace queen::queues;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// CPU time of the calling thread (the applier's cost, whatever else runs on the machine).
double thread_cpu_s() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

/// A UUIDv7-shaped transaction id, as the API generates them (time-ordered, random tail).
std::string time_uuid(std::int64_t now_ms, Rng& rng) {
    char text[64];
    const auto high = static_cast<unsigned long long>(now_ms);
    const auto low = static_cast<unsigned long long>(rng.next());
    std::snprintf(text, sizeof text, "%08llx-%04llx-7%03llx-%04llx-%012llx", high >> 16,
                  high & 0xffffu, (low >> 52) & 0xfffu, (low >> 36) & 0xffffu,
                  low & 0xffffffffffffu);
    return text;
}

/// Applies commands as the node does: encoded log entries, several per write txn, results handed
/// over typed before the commit.
class Applier {
public:
    explicit Applier(Engine& engine) : engine_(engine) {}
    std::vector<CommandResult> apply(std::span<const Command> commands, TimestampMs now) {
        encoded_.clear();
        for (const Command& command : commands) {
            encoded_.push_back(encode_command(command));
        }
        std::vector<Entry> entries;
        LogIndex index = std::max(engine_.applied_index(), last_index_);
        for (const Bytes& bytes : encoded_) {
            index = index.next();
            entries.push_back(Entry{index, now, bytes});
        }
        last_index_ = index;
        std::vector<CommandResult> results;
        const Engine::BeforeCommit hand = [&](std::size_t, std::span<CommandResult> typed) {
            for (auto& result : typed) {
                results.push_back(std::move(result));
            }
        };
        const double start = thread_cpu_s();
        if (batches_per_commit_ <= 1) {
            REQUIRE(engine_.apply(entries, hand).has_value());
        } else {
            REQUIRE(engine_.apply_uncommitted(entries, hand).has_value());
            if (++uncommitted_batches_ >= batches_per_commit_) {
                REQUIRE(engine_.commit().has_value());
                uncommitted_batches_ = 0;
            }
        }
        apply_cpu_s += thread_cpu_s() - start;
        return results;
    }
    double apply_cpu_s = 0;  ///< CPU of Engine::apply only (not of encoding the entries)

private:
    Engine& engine_;
    std::vector<Bytes> encoded_;
    /// QUEEN_BENCH_BATCHES_PER_COMMIT: apply calls per LMDB commit (the node keeps its txn open
    /// across apply batches and commits every few milliseconds); 1 commits every call.
    std::int64_t batches_per_commit_ = queen::testing::env_int("QUEEN_BENCH_BATCHES_PER_COMMIT", 1);
    std::int64_t uncommitted_batches_ = 0;
    LogIndex last_index_{0};  ///< the last entry applied (committed or not)
};

/// The batch ack (completed, queue mode) of everything `popped` delivered.
Ack completed_ack(const PopResult& popped) {
    Ack ack;
    for (const auto& m : popped.messages) {
        ack.items.push_back(AckItem{m.id.partition,
                                    m.transaction_id,
                                    AckStatus::completed,
                                    false,
                                    {},
                                    popped.lease,
                                    std::string(queue_mode_group)});
    }
    return ack;
}

Options bench_options() {
    Options options;
    options.store.sync_mode = store::SyncMode::no_sync;
    options.store.map_size_bytes = std::uint64_t{1} << 30;
    return options;
}

// The applier's CPU per loop of the transaction profile of `queen bench` (64 workers, each on its
// own partition: pop 1, then ack it and push the next message in one transaction; the node
// applies ~2 entries per txn) and per message of push-100 (16 producers, 100 x 256 B spread
// over 16 partitions, ~7 pushes per txn). QUEEN_BENCH_LOOPS, QUEEN_BENCH_PUSHES size the runs;
// QUEEN_BENCH_LOOPS_PER_TXN and QUEEN_BENCH_PUSHES_PER_TXN set how many loops (pushes) share a txn;
// QUEEN_BENCH_WORKLOAD = transaction | push runs one; QUEEN_BENCH_SPLIT=1 applies pops and
// transactions in separate txns (to count LMDB operations per command).
TEST_CASE("engine: applier CPU per transaction loop and per pushed message", "[.bench]") {
    const std::string workload = [] {
        const char* value = std::getenv("QUEEN_BENCH_WORKLOAD");
        return std::string(value == nullptr ? "" : value);
    }();
    const std::uint64_t seed = queen::testing::seed_from_env();
    std::cout << "QUEEN_SEED=" << seed << '\n';
    Rng rng(seed);
    const std::string payload = "{\"seq\":1,\"ts\":1,\"pad\":\"" + std::string(220, 'x') + "\"}";
    if (workload.empty() || workload == "transaction") {
        queen::testing::TempDir dir;
        auto engine = Engine::open(dir.path(), bench_options()).value();
        Applier applier(engine);
        constexpr int workers = 64;
        const auto loops = queen::testing::env_int("QUEEN_BENCH_LOOPS", 20'000);
        const bool is_split = queen::testing::env_int("QUEEN_BENCH_SPLIT", 0) != 0;
        std::int64_t now = 1'700'000'000'000;
        auto push_item = [&](int worker) {
            PushItem item;
            item.queue = "tx";
            item.partition = "t" + std::to_string(worker);
            item.transaction_id = time_uuid(now, rng);
            item.payload = Bytes(payload.begin(), payload.end());
            return item;
        };
        std::vector<Command> seeded;
        for (int w = 0; w < workers; ++w) {
            Push push;
            push.items.push_back(push_item(w));
            seeded.push_back(Command{0, 0, std::move(push)});
        }
        applier.apply(seeded, TimestampMs{now});
        auto pop_of = [](int worker) {
            Pop pop;
            pop.queue = "tx";
            pop.has_partition = true;
            pop.partition = "t" + std::to_string(worker);
            return Command{0, 0, pop};
        };
        // Batch k = {pops of workers kK .. kK + K - 1, the transactions of batch k - 1's workers
        // on what their pops returned}; K = QUEEN_BENCH_LOOPS_PER_TXN (default 1).
        const auto per_txn =
            std::max<std::int64_t>(1, queen::testing::env_int("QUEEN_BENCH_LOOPS_PER_TXN", 1));
        std::vector<std::pair<int, PopResult>> previous;
        std::int64_t transactions = 0;
        applier.apply_cpu_s = 0;
        const auto start = std::chrono::steady_clock::now();
        for (std::int64_t k = 0; k * per_txn < loops; ++k) {
            std::vector<Command> batch;
            std::vector<int> workers_popped;
            for (std::int64_t j = 0; j < per_txn; ++j) {
                const int worker = static_cast<int>((k * per_txn + j) % workers);
                batch.push_back(pop_of(worker));
                workers_popped.push_back(worker);
            }
            for (const auto& [previous_worker, popped] : previous) {
                Transaction transaction;
                for (const auto& message : popped.messages) {
                    TransactionOp ack;
                    ack.kind = TransactionOp::Kind::ack;
                    ack.ack = AckItem{message.id.partition,
                                      message.transaction_id,
                                      AckStatus::completed,
                                      false,
                                      {},
                                      popped.lease,
                                      std::string(queue_mode_group)};
                    transaction.ops.push_back(std::move(ack));
                }
                TransactionOp push;
                push.kind = TransactionOp::Kind::push;
                push.push = push_item(previous_worker);
                transaction.ops.push_back(std::move(push));
                batch.push_back(Command{0, 0, std::move(transaction)});
            }
            now += 1;
            std::vector<CommandResult> results;
            if (is_split) {
                for (auto& command : batch) {
                    auto one =
                        applier.apply(std::span<const Command>(&command, 1), TimestampMs{now});
                    results.push_back(std::move(one.front()));
                }
            } else {
                results = applier.apply(batch, TimestampMs{now});
            }
            REQUIRE(results.size() == batch.size());
            const std::size_t pops = workers_popped.size();
            for (std::size_t i = pops; i < results.size(); ++i) {
                REQUIRE(std::get<TransactionResult>(results[i]).success);
                ++transactions;
            }
            previous.clear();
            for (std::size_t i = 0; i < pops; ++i) {
                auto& popped = std::get<PopResult>(results[i]);
                REQUIRE(popped.messages.size() == 1);
                previous.emplace_back(workers_popped[i], std::move(popped));
            }
        }
        const double wall_s = seconds_since(start);
        std::cout << "transaction: loops=" << transactions << " apply_cpu_us_per_loop="
                  << applier.apply_cpu_s / static_cast<double>(transactions) * 1e6
                  << " wall_us_per_loop=" << wall_s / static_cast<double>(transactions) * 1e6
                  << '\n';
    }
    if (workload.empty() || workload == "push") {
        queen::testing::TempDir dir;
        auto engine = Engine::open(dir.path(), bench_options()).value();
        Applier applier(engine);
        constexpr int partitions = 16;
        constexpr int items_per_push = 100;
        const auto pushes_per_txn = queen::testing::env_int("QUEEN_BENCH_PUSHES_PER_TXN", 7);
        const auto pushes = queen::testing::env_int("QUEEN_BENCH_PUSHES", 7'000);
        std::int64_t now = 1'700'000'000'000;
        std::int64_t sequence = 0;
        applier.apply_cpu_s = 0;
        const auto start = std::chrono::steady_clock::now();
        for (std::int64_t done = 0; done < pushes; done += pushes_per_txn) {
            std::vector<Command> batch;
            for (int p = 0; p < pushes_per_txn; ++p) {
                Push push;
                for (int i = 0; i < items_per_push; ++i, ++sequence) {
                    PushItem item;
                    item.queue = "push";
                    item.partition = "p" + std::to_string(sequence % partitions);
                    item.transaction_id = time_uuid(now, rng);
                    item.payload = Bytes(payload.begin(), payload.end());
                    push.items.push_back(std::move(item));
                }
                batch.push_back(Command{0, 0, std::move(push)});
            }
            now += 1;
            const auto results = applier.apply(batch, TimestampMs{now});
            for (const auto& result : results) {
                for (const auto& item : std::get<PushResult>(result).items) {
                    REQUIRE(item.status == PushStatus::queued);
                }
            }
        }
        const double wall_s = seconds_since(start);
        std::cout << "push-100: messages=" << sequence << " apply_cpu_us_per_msg="
                  << applier.apply_cpu_s / static_cast<double>(sequence) * 1e6
                  << " wall_us_per_msg=" << wall_s / static_cast<double>(sequence) * 1e6 << '\n';
    }
}

// The applier's CPU per message over many partitions (issue 26), split by what it spends it on:
// P pushes of 100 messages, each to random partitions of N (UUIDv7 ids), then pops claiming up to
// K partitions (batch 100, queue mode) until they took what was pushed, then one batch ack per
// pop; every command is its own log entry and the txn commits once its entries reach
// QUEEN_BENCH_COMMIT_BYTES (default 1 MiB, the node's tenant.state_commit_bytes). Thread CPU
// time, so other load on the machine barely moves it. QUEEN_BENCH_PARTITIONS (10000),
// QUEEN_BENCH_MESSAGES (300000), QUEEN_BENCH_POP_PARTITIONS (16), QUEEN_BENCH_PUSHES_PER_ROUND (4).
TEST_CASE("engine: applier CPU per message over many partitions", "[.bench]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    std::cout << "QUEEN_SEED=" << seed << '\n';
    Rng rng(seed);
    queen::testing::TempDir dir;
    Options options = bench_options();
    options.store.map_size_bytes = std::uint64_t{8} << 30;
    auto engine = Engine::open(dir.path(), options).value();
    const auto partitions = queen::testing::env_int("QUEEN_BENCH_PARTITIONS", 10'000);
    const auto messages = queen::testing::env_int("QUEEN_BENCH_MESSAGES", 300'000);
    const auto pop_partitions =
        static_cast<std::uint32_t>(queen::testing::env_int("QUEEN_BENCH_POP_PARTITIONS", 16));
    const auto pushes_per_round = queen::testing::env_int("QUEEN_BENCH_PUSHES_PER_ROUND", 4);
    const auto commit_bytes =
        static_cast<std::size_t>(queen::testing::env_int("QUEEN_BENCH_COMMIT_BYTES", 1 << 20));
    const std::string payload = "{\"seq\":1,\"ts\":1,\"pad\":\"" + std::string(220, 'x') + "\"}";
    std::int64_t now = 1'700'000'000'000;
    LogIndex index = engine.applied_index();
    double cpu_push = 0;
    double cpu_pop = 0;
    double cpu_ack = 0;
    double cpu_commit = 0;
    std::int64_t pushed = 0;
    std::int64_t popped = 0;
    std::int64_t pops = 0;
    std::int64_t commits = 0;
    // Applies one command as one entry in the open txn; returns its result and adds its CPU.
    auto apply = [&](const Command& command, double& cpu) {
        const Bytes bytes = encode_command(command);
        index = index.next();
        const Entry entry{index, TimestampMs{now}, bytes};
        CommandResult out;
        const Engine::BeforeCommit hand = [&](std::size_t, std::span<CommandResult> typed) {
            out = std::move(typed.front());
        };
        double start = thread_cpu_s();
        REQUIRE(engine.apply_uncommitted(std::span<const Entry>(&entry, 1), hand).has_value());
        cpu += thread_cpu_s() - start;
        if (engine.uncommitted().bytes >= commit_bytes) {
            start = thread_cpu_s();
            REQUIRE(engine.commit().has_value());
            cpu_commit += thread_cpu_s() - start;
            ++commits;
        }
        return out;
    };
    const auto wall_start = std::chrono::steady_clock::now();
    while (pushed < messages) {
        std::int64_t round_pushed = 0;
        for (std::int64_t p = 0; p < pushes_per_round; ++p) {
            Push push;
            for (int i = 0; i < 100; ++i) {
                PushItem item;
                item.queue = "lanes";
                item.partition =
                    "l" + std::to_string(rng.next() % static_cast<std::uint64_t>(partitions));
                item.transaction_id = time_uuid(now, rng);
                item.payload = Bytes(payload.begin(), payload.end());
                push.items.push_back(std::move(item));
            }
            const auto result = apply(Command{0, 0, std::move(push)}, cpu_push);
            for (const auto& item : std::get<PushResult>(result).items) {
                REQUIRE(item.status == PushStatus::queued);
            }
            round_pushed += 100;
        }
        pushed += round_pushed;
        now += 1;
        std::int64_t round_popped = 0;
        while (round_popped < round_pushed) {
            Pop pop;
            pop.queue = "lanes";
            pop.batch = 100;
            pop.partitions = pop_partitions;
            auto result = apply(Command{0, 0, pop}, cpu_pop);
            const auto& got = std::get<PopResult>(result);
            ++pops;
            if (got.messages.empty()) {
                break;
            }
            round_popped += static_cast<std::int64_t>(got.messages.size());
            const auto acked = apply(Command{0, 0, completed_ack(got)}, cpu_ack);
            for (const auto& item : std::get<AckResult>(acked).items) {
                REQUIRE(item.error.empty());
            }
        }
        popped += round_popped;
    }
    const double start = thread_cpu_s();
    REQUIRE(engine.commit().has_value());
    cpu_commit += thread_cpu_s() - start;
    const double wall_s = seconds_since(wall_start);
    const auto per_msg = [&](double cpu) { return cpu / static_cast<double>(pushed) * 1e6; };
    std::cout << "lanes: partitions=" << partitions << " messages=" << pushed
              << " popped=" << popped << " pops=" << pops
              << " msgs_per_pop=" << static_cast<double>(popped) / static_cast<double>(pops)
              << " commits=" << commits << " cpu_us_per_msg push=" << per_msg(cpu_push)
              << " pop=" << per_msg(cpu_pop) << " ack=" << per_msg(cpu_ack)
              << " commit=" << per_msg(cpu_commit)
              << " total=" << per_msg(cpu_push + cpu_pop + cpu_ack + cpu_commit)
              << " wall_us_per_msg=" << wall_s / static_cast<double>(pushed) * 1e6 << '\n';
}

TEST_CASE("engine: apply throughput of push, pop and ack", "[.bench]") {
    queen::testing::TempDir dir;
    Options options;
    options.store.sync_mode = store::SyncMode::no_sync;
    options.store.map_size_bytes = std::uint64_t{1} << 30;
    auto engine = Engine::open(dir.path(), options).value();
    const int partitions = static_cast<int>(queen::testing::env_int("QUEEN_BENCH_PARTITIONS", 100));
    const int messages = static_cast<int>(queen::testing::env_int("QUEEN_BENCH_MESSAGES", 200'000));
    const std::string payload(256, 'x');
    for (const int items_per_push : {1, 10, 100}) {
        const std::string queue = "bench" + std::to_string(items_per_push);
        std::vector<Command> batch;
        int pushed = 0;
        std::int64_t now = 1'000'000;
        const auto start = std::chrono::steady_clock::now();
        while (pushed < messages) {
            Push push;
            for (int i = 0; i < items_per_push; ++i, ++pushed) {
                PushItem item;
                item.queue = queue;
                item.partition = "p" + std::to_string(pushed % partitions);
                item.transaction_id = "t" + std::to_string(pushed);
                item.payload = Bytes(payload.begin(), payload.end());
                push.items.push_back(std::move(item));
            }
            batch.push_back(Command{0, 0, std::move(push)});
            if (batch.size() == 256 || pushed >= messages) {
                REQUIRE(engine.apply_commands(batch, TimestampMs{++now}).has_value());
                batch.clear();
            }
        }
        const double push_s = seconds_since(start);
        // Pop (batch 100) + ack (batch ack of the popped messages), 64 consumers' worth of
        // entries per apply.
        const auto pop_start = std::chrono::steady_clock::now();
        int consumed = 0;
        for (;;) {
            std::vector<Command> pops;
            for (int i = 0; i < 64; ++i) {
                Pop pop;
                pop.queue = queue;
                pop.batch = 100;
                pops.push_back(Command{0, 0, pop});
            }
            auto popped = engine.apply_commands(pops, TimestampMs{++now}).value();
            std::vector<Command> acks;
            for (const auto& result : popped) {
                const auto& pop = std::get<PopResult>(result);
                Ack ack = completed_ack(pop);
                consumed += static_cast<int>(pop.messages.size());
                if (!ack.items.empty()) {
                    acks.push_back(Command{0, 0, std::move(ack)});
                }
            }
            if (acks.empty()) {
                break;
            }
            REQUIRE(engine.apply_commands(acks, TimestampMs{++now}).has_value());
        }
        const double pop_s = seconds_since(pop_start);
        REQUIRE(consumed == messages);
        std::cout << "items_per_push=" << items_per_push << " partitions=" << partitions
                  << " messages=" << messages << " push_msgs_per_s=" << messages / push_s
                  << " pop_ack_msgs_per_s=" << messages / pop_s << '\n';
    }
}

}  // namespace
}  // namespace queen::engine
