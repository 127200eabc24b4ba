// queues/tests/fairness_test.cpp — wildcard pops over many partitions: the round-robin bound on
// how many pops a deliverable partition waits, and per-partition order, exclusivity and
// exactly-once acks under many interleaved consumers with failed acks and expired leases.
// Time is simulated (apply takes `now`); every bound is a count of pops, never a duration.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "harness.hpp"
#include "queen/core/rng.hpp"
#include "state.hpp"

namespace queen::queues {
namespace {

using testing::Harness;

/// The pop index's set of ready partitions against std::set: the same members, sizes and
/// next-after answers under random inserts and erases, ids dense and sparse, across words.
TEST_CASE("queues: the ready partition set answers as an ordered set", "[fairness]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    for (const std::uint64_t span :
         {std::uint64_t{200}, std::uint64_t{5000}, std::uint64_t{1} << 40}) {
        detail::PartitionSet set;
        std::set<PartitionId> model;
        for (int step = 0; step < 20000; ++step) {
            const PartitionId pid{1 + rng.below(span)};
            const auto action = rng.below(3);
            if (action == 0) {
                REQUIRE(set.insert(pid) == model.insert(pid).second);
            } else if (action == 1) {
                REQUIRE(set.erase(pid) == (model.erase(pid) == 1));
            } else {
                REQUIRE(set.contains(pid) == model.contains(pid));
                auto it = model.upper_bound(pid);
                const auto next = set.next_after(pid);
                REQUIRE(next.has_value() == (it != model.end()));
                if (next) {
                    REQUIRE(*next == *it);
                }
            }
            REQUIRE(set.size() == model.size());
        }
        // Walking by next_after from 0 visits the model in order.
        std::vector<PartitionId> walked;
        for (auto at = set.next_after(PartitionId{0}); at; at = set.next_after(*at)) {
            walked.push_back(*at);
        }
        REQUIRE(walked == std::vector<PartitionId>(model.begin(), model.end()));
    }
}

std::string partition_name(std::size_t index) {
    char name[16];
    std::snprintf(name, sizeof name, "p%05zu", index);
    return name;
}

/// The transaction id of message `sequence` of partition `index`: a pop can check that it got
/// exactly the message it expected, not only its sequence.
std::string txid_of(std::size_t index, std::uint64_t sequence) {
    return partition_name(index) + "-" + std::to_string(sequence);
}

// ---------------------------------------------------------------------------------------------
// 1. Fairness: the round-robin bound.
//
// Pops of one group keep a round-robin position per (queue, group): a pop walks the ready
// partitions in id order from just after the position, wrapping once, claims each deliverable
// one (up to P = `partitions` of them while its `batch` budget lasts) and moves the position to
// the last partition it claimed. Consider partition p, deliverable (messages after the cursor,
// not leased) from some moment on. A pop that reaches p with budget and claims left claims it,
// so every pop before the one that serves p stops before p: the position moves towards p
// without passing it, and
//   (exact) the pops in between claim every other partition at most once;
// their claims therefore add up to at most R - 1, R being the partitions that hold messages.
// Each of them claims at least one partition (p is there to claim). Call a pop "full" when it
// claims P partitions and "short" otherwise: its batch ran out first, so one of the partitions
// it claimed gave more than batch/P messages. With F full and S short pops in between,
// F*P + S <= R - 1, so
//   (bound) p is served at the latest by the (ceil(R/P) + 1 + S)-th pop of the group after it
//   became deliverable; until then it is passed over by at most ceil(R/P) + S pops.
// S is the slack, and it is bounded too: as each partition is claimed at most once in between,
// S is at most the number of partitions a pop took more than batch/P messages from (those
// "behind"); with up to batch/P messages in every partition S is 0. The test checks (exact) and
// (bound) for every claim, and (bound) at the end for every partition still waiting, so a
// partition that is never served fails it too.

struct FairPartition {
    PartitionId id;
    std::uint64_t pushed = 0;         ///< last sequence pushed
    std::uint64_t consumed = 0;       ///< the group's cursor
    int holder = -1;                  ///< consumer holding its lease, -1 = none
    std::int64_t waiting_since = -1;  ///< pops applied when it became deliverable; -1 = not
    std::uint64_t serves = 0;
    bool is_behind = false;
    bool is_heavy = false;  ///< a pop took more than batch/P of its messages at once
};

struct FairConsumer {
    LeaseId lease;
    std::vector<PoppedMessage> held;  ///< the messages of its last pop, acked before its next
};

struct FairnessRun {
    std::size_t partitions_total = 10'000;
    std::size_t behind_every = 100;         ///< every Nth partition is behind
    std::uint64_t behind_messages = 1'000;  ///< messages each behind partition starts with
    std::uint32_t partitions_per_pop = 16;  ///< P
    std::uint32_t batch = 100;
    std::size_t consumers = 8;
    /// The producer pushes 0..32 messages a turn, 16 on average: about what a turn's pop of 16
    /// single-message partitions takes, so thousands of partitions stay ready round after round.
    std::uint64_t pushes_per_turn_max = 32;

    Harness h;
    Rng rng;
    std::vector<FairPartition> parts;
    std::unordered_map<std::uint64_t, std::size_t> index_of;  ///< partition id -> index
    std::vector<FairConsumer> fleet;
    std::int64_t pops = 0;
    std::vector<std::int64_t> last_claimed;      ///< per partition: the pop that last claimed it
    std::multiset<std::int64_t> waiting;         ///< waiting_since of the partitions waiting
    std::vector<std::uint64_t> short_prefix{0};  ///< short pops among 1..k
    std::int64_t wait_max = 0;                   ///< the longest wait in pops, with its slack
    std::int64_t wait_max_slack = 0;
    /// Partitions that gave a pop more than batch/P messages: only they can cut a pop short
    /// while another partition waits, so S never exceeds their number.
    std::int64_t heavy_partitions = 0;

    explicit FairnessRun(std::uint64_t seed) : rng(seed) {}

    /// ceil(R / P), R being every partition of the test: the most that can hold messages.
    [[nodiscard]] std::int64_t rounds() const {
        return static_cast<std::int64_t>((partitions_total + partitions_per_pop - 1) /
                                         partitions_per_pop);
    }

    void mark_if_deliverable(std::size_t index) {
        FairPartition& p = parts[index];
        if (p.holder < 0 && p.waiting_since < 0 && p.consumed < p.pushed) {
            p.waiting_since = pops;
            waiting.insert(pops);
        }
    }

    void push(const std::vector<std::size_t>& indices) {
        Push command;
        std::vector<std::uint64_t> sequences;
        for (const std::size_t index : indices) {
            PushItem item;
            item.queue = "q";
            item.partition = partition_name(index);
            const std::uint64_t sequence = ++parts[index].pushed;
            item.transaction_id = txid_of(index, sequence);
            item.payload = testing::text("{}");
            command.items.push_back(std::move(item));
            sequences.push_back(sequence);
        }
        const PushResult result = h.run(command);
        REQUIRE(result.items.size() == indices.size());
        for (std::size_t i = 0; i < indices.size(); ++i) {
            const auto& item = result.items[i];
            if (item.status != PushStatus::queued ||
                item.message_id.sequence.value() != sequences[i]) {
                FAIL("push to " << partition_name(indices[i]) << " got sequence "
                                << item.message_id.sequence.value() << ", expected "
                                << sequences[i]);
            }
            FairPartition& p = parts[indices[i]];
            if (p.id.value() == 0) {
                p.id = item.message_id.partition;
                index_of.emplace(p.id.value(), indices[i]);
            }
            REQUIRE(p.id == item.message_id.partition);
        }
        for (const std::size_t index : indices) {
            mark_if_deliverable(index);
        }
    }

    void ack(std::size_t consumer) {
        FairConsumer& c = fleet[consumer];
        if (c.held.empty()) {
            return;
        }
        Ack command;
        for (const PoppedMessage& m : c.held) {
            AckItem item;
            item.partition = m.id.partition;
            item.transaction_id = m.transaction_id;
            item.status = AckStatus::completed;
            item.lease = c.lease;
            command.items.push_back(std::move(item));
        }
        const AckResult result = h.run(command);
        REQUIRE(result.items.size() == c.held.size());
        for (std::size_t i = 0; i < c.held.size(); ++i) {
            const bool is_last_of_partition =
                i + 1 == c.held.size() || c.held[i + 1].id.partition != c.held[i].id.partition;
            const auto expected = is_last_of_partition ? LeaseReleased::yes : LeaseReleased::no;
            if (!result.items[i].success || result.items[i].lease_released != expected) {
                FAIL("ack of " << c.held[i].transaction_id.str() << " by consumer " << consumer
                               << ": success=" << result.items[i].success
                               << " error=" << result.items[i].error << " lease_released="
                               << static_cast<int>(result.items[i].lease_released));
            }
            if (is_last_of_partition) {
                FairPartition& p = parts[index_of.at(c.held[i].id.partition.value())];
                p.consumed = c.held[i].id.sequence.value();
                p.holder = -1;
                mark_if_deliverable(index_of.at(c.held[i].id.partition.value()));
            }
        }
        c.held.clear();
    }

    /// Checks a claim of partition `index` by pop number `pops` against (bound), and takes it
    /// out of the waiting partitions.
    void check_wait(std::size_t index) {
        FairPartition& p = parts[index];
        const std::int64_t since = p.waiting_since;
        if (since < 0) {
            FAIL("pop " << pops << " claimed " << partition_name(index)
                        << ", which the model says is not deliverable (leased by " << p.holder
                        << ", cursor " << p.consumed << " of " << p.pushed << ")");
        }
        const std::int64_t waited = pops - since;  // including the pop that serves it
        const auto short_between =
            static_cast<std::int64_t>(short_prefix[pops - 1] - short_prefix[since]);
        if (waited > rounds() + 1 + short_between) {
            FAIL(partition_name(index)
                 << " waited " << waited << " pops (deliverable since pop " << since
                 << ", served by pop " << pops << "), more than ceil(R/P) + 1 + S = " << rounds()
                 << " + 1 + " << short_between);
        }
        if (waited > wait_max) {
            wait_max = waited;
            wait_max_slack = short_between;
        }
        waiting.erase(waiting.find(since));
        p.waiting_since = -1;
    }

    /// (exact): partition `index`, claimed again by pop number `pops`, was last claimed by pop
    /// j; no partition deliverable before pop j may still be waiting.
    void check_claimed_once(std::size_t index) {
        const std::int64_t j = last_claimed[index];
        last_claimed[index] = pops;
        if (j == 0 || waiting.empty() || *waiting.begin() >= j) {
            return;
        }
        for (std::size_t other = 0; other < parts.size(); ++other) {
            if (parts[other].waiting_since == *waiting.begin()) {
                FAIL("round robin broken: pops "
                     << j << " and " << pops << " both claimed " << partition_name(index)
                     << " while " << partition_name(other) << " waited, deliverable since pop "
                     << parts[other].waiting_since);
            }
        }
        FAIL("the waiting partitions are out of step with the model");
    }

    void pop(std::size_t consumer) {
        Pop command;
        command.queue = "q";
        command.batch = batch;
        command.partitions = partitions_per_pop;
        const PopResult result = h.run(command);
        ++pops;
        FairConsumer& c = fleet[consumer];
        REQUIRE(c.held.empty());
        REQUIRE(result.messages.size() <= batch);
        // Group the answer by partition, checking FIFO from the cursor and exclusivity.
        std::vector<std::size_t> claimed;
        for (std::size_t i = 0; i < result.messages.size(); ++i) {
            const PoppedMessage& m = result.messages[i];
            const auto found = index_of.find(m.id.partition.value());
            REQUIRE(found != index_of.end());
            const std::size_t index = found->second;
            FairPartition& p = parts[index];
            const bool is_first = i == 0 || result.messages[i - 1].id.partition != m.id.partition;
            if (is_first) {
                if (p.holder >= 0) {
                    FAIL("pop " << pops << " gave " << partition_name(index) << " to consumer "
                                << consumer << " while consumer " << p.holder << " holds it");
                }
                claimed.push_back(index);
            }
            if ((m.id.sequence.value() - p.consumed) * partitions_per_pop > batch && !p.is_heavy) {
                p.is_heavy = true;
                heavy_partitions++;
            }
            const std::uint64_t expected =
                is_first ? p.consumed + 1 : result.messages[i - 1].id.sequence.value() + 1;
            if (m.id.sequence.value() != expected ||
                m.transaction_id.str() != txid_of(index, expected)) {
                FAIL("pop " << pops << " gave " << m.transaction_id.str() << " (sequence "
                            << m.id.sequence.value() << ") of " << partition_name(index)
                            << ", expected sequence " << expected);
            }
        }
        REQUIRE(claimed.size() == result.partitions_claimed);
        REQUIRE(claimed.size() <= partitions_per_pop);
        std::sort(claimed.begin(), claimed.end());
        REQUIRE(std::adjacent_find(claimed.begin(), claimed.end()) == claimed.end());
        const bool is_short = claimed.size() < partitions_per_pop;
        short_prefix.push_back(short_prefix.back() + (is_short ? 1 : 0));
        for (const std::size_t index : claimed) {
            check_wait(index);
            FairPartition& p = parts[index];
            p.holder = static_cast<int>(consumer);
            p.serves++;
        }
        for (const std::size_t index : claimed) {
            check_claimed_once(index);
        }
        if (claimed.empty() && !waiting.empty()) {
            FAIL("pop " << pops << " found nothing while " << waiting.size()
                        << " partitions were deliverable");
        }
        c.lease = result.lease;
        c.held = result.messages;
    }
};

TEST_CASE("queues: a deliverable partition waits at most ceil(R/P) + 1 + S pops of its group",
          "[queues][pop][fairness]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    FairnessRun run(seed);
    run.partitions_total =
        static_cast<std::size_t>(queen::testing::env_int("QUEEN_FAIRNESS_PARTITIONS", 10'000));
    const std::int64_t pops_total =
        queen::testing::env_int("QUEEN_FAIRNESS_ROUNDS", 4) * run.rounds();
    CAPTURE(run.partitions_total, pops_total);
    run.parts.resize(run.partitions_total);
    run.last_claimed.assign(run.partitions_total, 0);
    run.fleet.resize(run.consumers);
    run.h.configure("q", QueueOptions{});  // leaseTime 300 s: the simulated run lasts seconds

    // Every partition gets one message; every `behind_every`-th gets `behind_messages`.
    std::vector<std::size_t> indices;
    auto flush = [&] {
        run.push(indices);
        indices.clear();
    };
    for (std::size_t index = 0; index < run.partitions_total; ++index) {
        run.parts[index].is_behind = index % run.behind_every == run.behind_every / 2;
        const std::uint64_t count = run.parts[index].is_behind ? run.behind_messages : 1;
        for (std::uint64_t i = 0; i < count; ++i) {
            indices.push_back(index);
            if (indices.size() == 1'000) {
                flush();
            }
        }
    }
    if (!indices.empty()) {
        flush();
    }

    // Turns: a random consumer acks what it holds (the others keep theirs), the producer
    // pushes to random partitions, the consumer pops. Halfway, the state reopens: the
    // round-robin position is persisted, so the bound holds across a restart.
    bool has_reopened = false;
    while (run.pops < pops_total) {
        const std::size_t consumer = run.rng.below(run.consumers);
        run.ack(consumer);
        const std::uint64_t pushes = run.rng.below(run.pushes_per_turn_max + 1);
        for (std::uint64_t i = 0; i < pushes; ++i) {
            indices.push_back(run.rng.below(run.partitions_total));
        }
        if (!indices.empty()) {
            flush();
        }
        run.pop(consumer);
        run.h.advance_ms(1);
        if (!has_reopened && run.pops >= pops_total / 2) {
            run.h.reopen();
            has_reopened = true;
        }
    }

    // Nobody starves: every partition still waiting has been passed over at most ceil(R/P) + S
    // pops, and every partition was served (single-message and behind ones alike).
    std::uint64_t behind_serves_min = UINT64_MAX;
    std::uint64_t single_serves_min = UINT64_MAX;
    for (std::size_t index = 0; index < run.parts.size(); ++index) {
        const FairPartition& p = run.parts[index];
        std::uint64_t& serves_min = p.is_behind ? behind_serves_min : single_serves_min;
        serves_min = std::min(serves_min, p.serves);
        if (p.waiting_since < 0) {
            continue;
        }
        const std::int64_t passed = run.pops - p.waiting_since;
        const auto short_between = static_cast<std::int64_t>(run.short_prefix[run.pops] -
                                                             run.short_prefix[p.waiting_since]);
        if (passed > run.rounds() + short_between) {
            FAIL(partition_name(index)
                 << " deliverable since pop " << p.waiting_since << " was passed over by " << passed
                 << " pops, more than " << run.rounds() << " + " << short_between);
        }
    }
    const std::uint64_t short_pops = run.short_prefix.back();
    CAPTURE(run.wait_max, run.wait_max_slack, run.heavy_partitions, short_pops, behind_serves_min,
            single_serves_min);
    if (queen::testing::env_int("QUEEN_FAIRNESS_VERBOSE", 0) != 0) {
        WARN("pops " << run.pops << ", bound ceil(R/P) + 1 = " << run.rounds() + 1
                     << ", longest wait " << run.wait_max << " pops with slack "
                     << run.wait_max_slack << ", heavy partitions " << run.heavy_partitions
                     << ", short pops " << short_pops << ", serves min: behind "
                     << behind_serves_min << ", single " << single_serves_min);
    }
    REQUIRE(run.wait_max <= run.rounds() + 1 + run.heavy_partitions);
    REQUIRE(single_serves_min >= 1);
    REQUIRE(behind_serves_min >= 1);
    // The bound is reached, not vacuous: every partition was deliverable before the first pop
    // and a pop claims at most P, so the last of the first round waited ceil(R/P) pops or more.
    REQUIRE(run.wait_max >= run.rounds());
}

// ---------------------------------------------------------------------------------------------
// 2. Order, exclusivity and exactly-once under many consumers with failures.

constexpr std::int64_t order_lease_ms = 10'000;
constexpr std::int64_t order_retry_delay_ms = 500;

struct OrderPartition {
    PartitionId id;
    std::uint64_t pushed = 0;
    std::uint64_t consumed = 0;  ///< the group's cursor (last completed sequence)
    std::uint64_t lease = 0;     ///< the lease the broker holds for it, 0 = none
    int holder = -1;
    std::int64_t expires_ms = 0;
    std::uint64_t batch_size = 0;
    std::uint64_t acked = 0;
    std::uint32_t retries = 0;        ///< failed batches since the last completed one
    std::uint64_t delivered_max = 0;  ///< the highest sequence delivered so far
    std::int64_t not_before_ms = 0;
    std::vector<std::uint32_t> completed_acks;  ///< successful completed acks per sequence
    [[nodiscard]] bool is_leased(std::int64_t now_ms) const {
        return lease != 0 && expires_ms > now_ms;
    }
    [[nodiscard]] bool is_deliverable(std::int64_t now_ms) const {
        return !is_leased(now_ms) && not_before_ms <= now_ms && consumed < pushed;
    }
};

/// The messages of one partition a consumer got and has not acked yet, in order.
struct HeldRun {
    std::size_t index = 0;
    std::vector<PoppedMessage> messages;
};

struct OrderConsumer {
    LeaseId lease;
    std::vector<HeldRun> runs;
};

struct OrderRun {
    std::size_t partitions_total = 40;
    std::size_t consumers = 12;
    Harness h;
    Rng rng;
    std::vector<OrderPartition> parts;
    std::unordered_map<std::uint64_t, std::size_t> index_of;
    std::vector<OrderConsumer> fleet;
    std::uint64_t expired_acks = 0;  ///< acks refused because the lease had run out
    std::uint64_t redeliveries = 0;  ///< deliveries of a sequence delivered before

    explicit OrderRun(std::uint64_t seed) : rng(seed) {}

    void push(std::size_t count) {
        Push command;
        std::vector<std::size_t> indices;
        for (std::size_t i = 0; i < count; ++i) {
            const std::size_t index = rng.below(partitions_total);
            OrderPartition& p = parts[index];
            PushItem item;
            item.queue = "q";
            item.partition = partition_name(index);
            item.transaction_id = txid_of(index, ++p.pushed);
            item.payload = testing::text("{}");
            p.completed_acks.push_back(0);
            command.items.push_back(std::move(item));
            indices.push_back(index);
        }
        const PushResult result = h.run(command);
        REQUIRE(result.items.size() == count);
        for (std::size_t i = 0; i < count; ++i) {
            REQUIRE(result.items[i].status == PushStatus::queued);
            OrderPartition& p = parts[indices[i]];
            if (p.id.value() == 0) {
                p.id = result.items[i].message_id.partition;
                index_of.emplace(p.id.value(), indices[i]);
            }
        }
    }

    /// Pops for `consumer` and checks the answer: each partition it names was free (no lease
    /// live, retry delay over), its messages run from the cursor in sequence order, and a pop
    /// with room left skipped nothing deliverable.
    void pop(std::size_t consumer, std::uint32_t batch, std::uint32_t partitions) {
        const std::int64_t now = h.now_ms;
        Pop command;
        command.queue = "q";
        command.batch = batch;
        command.partitions = partitions;
        const PopResult result = h.run(command);
        OrderConsumer& c = fleet[consumer];
        REQUIRE(c.runs.empty());
        REQUIRE(result.messages.size() <= batch);
        std::vector<HeldRun> runs;
        for (std::size_t i = 0; i < result.messages.size(); ++i) {
            const PoppedMessage& m = result.messages[i];
            const auto found = index_of.find(m.id.partition.value());
            REQUIRE(found != index_of.end());
            const std::size_t index = found->second;
            const bool is_first = runs.empty() || runs.back().index != index;
            if (is_first) {
                for (const HeldRun& run : runs) {
                    if (run.index == index) {
                        FAIL("one pop gave " << partition_name(index) << " in two pieces");
                    }
                }
                const OrderPartition& p = parts[index];
                if (p.is_leased(now)) {
                    FAIL("pop at " << now << " gave " << partition_name(index) << " to consumer "
                                   << consumer << " while consumer " << p.holder
                                   << " holds its lease until " << p.expires_ms);
                }
                if (p.not_before_ms > now) {
                    FAIL("pop at " << now << " gave " << partition_name(index)
                                   << " before its retry delay ended at " << p.not_before_ms);
                }
                runs.push_back(HeldRun{index, {}});
            }
            const OrderPartition& p = parts[index];
            const std::uint64_t expected =
                is_first ? p.consumed + 1 : runs.back().messages.back().id.sequence.value() + 1;
            if (m.id.sequence.value() != expected ||
                m.transaction_id.str() != txid_of(index, expected)) {
                FAIL("pop at " << now << " gave " << m.transaction_id.str() << " of "
                               << partition_name(index) << ", expected sequence " << expected
                               << " (cursor " << p.consumed << ")");
            }
            if (m.retry_count != p.retries) {
                FAIL(m.transaction_id.str()
                     << " came with retryCount " << m.retry_count << ", expected " << p.retries);
            }
            runs.back().messages.push_back(m);
        }
        REQUIRE(runs.size() == result.partitions_claimed);
        REQUIRE(runs.size() <= partitions);
        if (result.messages.size() < batch && runs.size() < partitions) {
            for (std::size_t index = 0; index < parts.size(); ++index) {
                const bool is_claimed = std::any_of(
                    runs.begin(), runs.end(), [&](const HeldRun& r) { return r.index == index; });
                if (!is_claimed && parts[index].is_deliverable(now)) {
                    FAIL("a pop with room left skipped deliverable " << partition_name(index));
                }
            }
        }
        if (runs.empty()) {
            return;
        }
        REQUIRE(result.lease.value() != 0);
        REQUIRE(result.lease_expires_at.value() == now + order_lease_ms);
        for (const HeldRun& run : runs) {
            OrderPartition& p = parts[run.index];
            if (run.messages.front().id.sequence.value() <= p.delivered_max) {
                redeliveries++;
            }
            p.delivered_max = std::max(p.delivered_max, run.messages.back().id.sequence.value());
            p.lease = result.lease.value();
            p.holder = static_cast<int>(consumer);
            p.expires_ms = now + order_lease_ms;
            p.batch_size = run.messages.size();
            p.acked = 0;
        }
        c.lease = result.lease;
        c.runs = std::move(runs);
    }

    /// Acks the first `count` messages of `consumer`'s run `r` as completed, in one Ack.
    void ack_completed(std::size_t consumer, std::size_t r, std::size_t count) {
        const std::int64_t now = h.now_ms;
        OrderConsumer& c = fleet[consumer];
        HeldRun& run = c.runs[r];
        OrderPartition& p = parts[run.index];
        Ack command;
        for (std::size_t i = 0; i < count; ++i) {
            AckItem item;
            item.partition = run.messages[i].id.partition;
            item.transaction_id = run.messages[i].transaction_id;
            item.lease = c.lease;
            command.items.push_back(std::move(item));
        }
        const AckResult result = h.run(command);
        REQUIRE(result.items.size() == count);
        for (std::size_t i = 0; i < count; ++i) {
            const std::uint64_t sequence = run.messages[i].id.sequence.value();
            const auto& item = result.items[i];
            if (p.lease != c.lease.value() || !p.is_leased(now)) {
                if (item.success || item.error != "Invalid or expired lease") {
                    FAIL("ack of " << run.messages[i].transaction_id.str() << " under lease "
                                   << c.lease.value() << " that is gone: success=" << item.success
                                   << " error=" << item.error);
                }
                expired_acks++;
                continue;
            }
            REQUIRE(item.success);
            REQUIRE(sequence == p.consumed + 1);  // consumers ack in order
            p.consumed = sequence;
            p.completed_acks[sequence - 1]++;
            p.acked++;
            const bool is_released = p.acked >= p.batch_size;
            if (item.lease_released != (is_released ? LeaseReleased::yes : LeaseReleased::no)) {
                FAIL("ack of " << run.messages[i].transaction_id.str()
                               << ": lease_released=" << static_cast<int>(item.lease_released)
                               << ", expected " << is_released);
            }
            if (is_released) {
                p.lease = 0;
                p.holder = -1;
                p.retries = 0;
            }
        }
        const bool was_refused = !result.items.empty() && !result.items.front().success;
        if (was_refused || count == run.messages.size()) {
            c.runs.erase(c.runs.begin() + static_cast<std::ptrdiff_t>(r));  // the rest comes back
        } else {
            run.messages.erase(run.messages.begin(),
                               run.messages.begin() + static_cast<std::ptrdiff_t>(count));
        }
    }

    /// Nacks (status failed) the first unacked message of `consumer`'s run `r`: the lease is
    /// released, the cursor stays, the batch comes back after the retry delay.
    void ack_failed(std::size_t consumer, std::size_t r) {
        const std::int64_t now = h.now_ms;
        OrderConsumer& c = fleet[consumer];
        const HeldRun run = c.runs[r];
        c.runs.erase(c.runs.begin() + static_cast<std::ptrdiff_t>(r));
        OrderPartition& p = parts[run.index];
        AckItem item;
        item.partition = run.messages.front().id.partition;
        item.transaction_id = run.messages.front().transaction_id;
        item.status = AckStatus::failed;
        item.has_error = true;
        item.error = "handler failed";
        item.lease = c.lease;
        const AckResult result = h.run(Ack{{item}});
        REQUIRE(result.items.size() == 1);
        const auto& answer = result.items[0];
        if (p.lease != c.lease.value() || !p.is_leased(now)) {
            REQUIRE_FALSE(answer.success);
            REQUIRE(answer.error == "Invalid or expired lease");
            expired_acks++;
            return;
        }
        REQUIRE(answer.success);
        REQUIRE_FALSE(answer.dlq);
        REQUIRE(answer.lease_released == LeaseReleased::yes);
        p.lease = 0;
        p.holder = -1;
        p.retries++;
        p.not_before_ms = now + order_retry_delay_ms;
    }
};

TEST_CASE(
    "queues: many consumers get each partition in order, one at a time, each message "
    "acked once",
    "[queues][pop][order]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    OrderRun run(seed);
    run.parts.resize(run.partitions_total);
    run.fleet.resize(run.consumers);
    QueueOptions options;
    options.lease_time_s = order_lease_ms / 1000;
    options.retry_delay_ms = order_retry_delay_ms;
    options.retry_limit = 1'000'000;  // failures retry, never dead-letter: every message ends acked
    run.h.configure("q", options);
    const auto steps = queen::testing::env_int("QUEEN_PROPERTY_STEPS", 6'000);
    std::uint64_t reopens = 0;
    for (std::int64_t step = 0; step < steps; ++step) {
        INFO("step " << step << " now " << run.h.now_ms);
        const auto dice = run.rng.below(100);
        const std::size_t consumer = run.rng.below(run.consumers);
        OrderConsumer& c = run.fleet[consumer];
        if (dice < 25) {
            run.push(1 + run.rng.below(4));
        } else if (dice < 80) {
            if (c.runs.empty()) {
                run.pop(consumer, static_cast<std::uint32_t>(1 + run.rng.below(10)),
                        static_cast<std::uint32_t>(1 + run.rng.below(4)));
                continue;
            }
            const std::size_t r = run.rng.below(c.runs.size());
            const auto action = run.rng.below(100);
            if (action < 70) {
                run.ack_completed(consumer, r, 1 + run.rng.below(c.runs[r].messages.size()));
            } else if (action < 90) {
                run.ack_failed(consumer, r);
            } else {
                c.runs.clear();  // the consumer crashed: its leases run out
            }
        } else if (dice < 97) {
            run.h.advance_ms(static_cast<std::int64_t>(run.rng.below(400)));
        } else if (dice < 99) {
            run.h.advance_ms(order_lease_ms + static_cast<std::int64_t>(run.rng.below(1000)));
        } else {
            run.h.reopen();
            reopens++;
        }
    }
    // Drain: every consumer's leases run out, then one consumer takes and acks everything.
    for (OrderConsumer& c : run.fleet) {
        c.runs.clear();
    }
    for (int round = 0; round < 10'000; ++round) {
        run.h.advance_ms(order_lease_ms + order_retry_delay_ms);
        run.pop(0, 100, static_cast<std::uint32_t>(run.partitions_total));
        if (run.fleet[0].runs.empty()) {
            break;
        }
        while (!run.fleet[0].runs.empty()) {
            run.ack_completed(0, 0, run.fleet[0].runs[0].messages.size());
        }
    }
    std::uint64_t messages = 0;
    for (std::size_t index = 0; index < run.parts.size(); ++index) {
        const OrderPartition& p = run.parts[index];
        INFO(partition_name(index));
        REQUIRE(p.consumed == p.pushed);
        for (std::size_t i = 0; i < p.completed_acks.size(); ++i) {
            if (p.completed_acks[i] != 1) {
                FAIL(txid_of(index, i + 1) << " was acked " << p.completed_acks[i] << " times");
            }
        }
        messages += p.pushed;
    }
    CAPTURE(messages, run.expired_acks, run.redeliveries, reopens);
    if (queen::testing::env_int("QUEEN_FAIRNESS_VERBOSE", 0) != 0) {
        WARN("messages " << messages << ", acks refused for an expired lease " << run.expired_acks
                         << ", redeliveries " << run.redeliveries << ", reopens " << reopens);
    }
    // The run exercised what it is about: expired leases and redeliveries happened.
    REQUIRE(messages > 1'000);
    REQUIRE(run.expired_acks > 0);
    REQUIRE(run.redeliveries > 0);
}

// ---------------------------------------------------------------------------------------------
// 3. A retried ack.

/// One completed ack under `lease` (the item is built by copy-construction: GCC 12 at -O2 took
/// Harness::ack's assignment into a fresh SmallString, inlined here, for a read of an
/// uninitialized member).
AckItemResult ack_one(Harness& h, const PoppedMessage& message, LeaseId lease) {
    AckItem item{message.id.partition,
                 message.transaction_id,
                 AckStatus::completed,
                 false,
                 {},
                 lease,
                 std::string(queue_mode_group)};
    const AckResult result = h.run(Ack{{std::move(item)}});
    REQUIRE(result.items.size() == 1);
    return result.items[0];
}

// An HTTP client whose ack answer was lost sends the same ack again. Found by this test
// (session of issue 26): the second ack of a message the cursor has already passed counts
// toward the batch again (acked_count), so the lease is released while the batch's last
// message is still with its consumer, and another consumer of the group is given it at once.
// docs/http-api.md says `completed` releases the lease "once the whole batch is acked".
// [!mayfail] until queues/src/ack.cpp counts a message once per lease.
TEST_CASE("queues: a retried ack of an acked message does not count toward its batch again",
          "[queues][ack][!mayfail]") {
    Harness h;
    for (int i = 1; i <= 3; ++i) {
        h.push("q", "p", "t" + std::to_string(i));
    }
    const PopResult first = h.pop("q", 3);
    REQUIRE(first.messages.size() == 3);
    REQUIRE(ack_one(h, first.messages[0], first.lease).success);
    const AckItemResult retried = ack_one(h, first.messages[0], first.lease);  // the client's retry
    REQUIRE(retried.success);
    REQUIRE(retried.lease_released == LeaseReleased::no);
    const AckItemResult second = ack_one(h, first.messages[1], first.lease);
    REQUIRE(second.success);
    CHECK(second.lease_released == LeaseReleased::no);  // t3 is still out
    const PopResult other = h.pop("q", 3);
    CHECK(other.messages.empty());  // the partition is still leased to the first consumer
    const AckItemResult last = ack_one(h, first.messages[2], first.lease);
    CHECK(last.success);
    CHECK(last.lease_released == LeaseReleased::yes);
}

}  // namespace
}  // namespace queen::queues
