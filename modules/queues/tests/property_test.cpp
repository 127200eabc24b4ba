// queues/tests/property_test.cpp — random push/pop/ack/fail/extend/expire/restart sequences
// checked against a simple model: FIFO per partition per group, one holder per partition and
// group, nothing lost, retry limit -> DLQ, and pops never miss a deliverable partition.
#include <map>

#include "harness.hpp"
#include "queen/core/rng.hpp"

namespace queen::queues {
namespace {

using testing::Harness;

constexpr std::int64_t lease_ms = 5000;
constexpr std::int64_t retry_delay_ms = 1000;
constexpr std::uint32_t retry_limit = 2;

struct ModelCursor {
    std::uint64_t consumed = 0;
    std::uint64_t lease = 0;
    std::int64_t expires = 0;
    std::vector<std::uint64_t> batch;
    std::size_t acked = 0;
    std::uint32_t retries = 0;
    std::uint64_t last_failed = 0;
    std::int64_t not_before = 0;
    [[nodiscard]] bool is_leased(std::int64_t now) const { return lease != 0 && expires > now; }
};

struct Outstanding {
    std::string group;
    std::string partition;
    std::uint64_t seq;
    std::uint64_t lease;
};

struct Model {
    std::vector<std::string> partitions{"p0", "p1", "p2", "p3"};
    std::vector<std::string> groups{std::string(queue_mode_group), "g1"};
    std::map<std::string, std::vector<std::string>> messages;  // partition -> txids
    std::map<std::string, PartitionId> ids;
    std::map<std::pair<std::string, std::string>, ModelCursor> cursors;  // (group, partition)
    std::vector<Outstanding> outstanding;
    std::uint64_t dead = 0;

    bool deliverable(const std::string& group, const std::string& partition, std::int64_t now) {
        const auto& c = cursors[{group, partition}];
        return !c.is_leased(now) && c.not_before <= now && c.consumed < messages[partition].size();
    }
    void drop_outstanding(const std::string& group, const std::string& partition) {
        std::erase_if(outstanding, [&](const Outstanding& o) {
            return o.group == group && o.partition == partition;
        });
    }
};

void check_pop(Harness& h, Model& model, Rng& rng) {
    const std::string group = model.groups[rng.below(model.groups.size())];
    const bool one_partition = rng.below(4) == 0;
    const std::string only = model.partitions[rng.below(model.partitions.size())];
    const auto batch = static_cast<std::uint32_t>(1 + rng.below(4));
    const auto partitions = static_cast<std::uint32_t>(1 + rng.below(3));
    INFO("pop group=" << group << " batch=" << batch << " partitions=" << partitions
                      << (one_partition ? " partition=" + only : std::string()));
    const PopResult result = one_partition ? h.pop_partition("q", only, batch, group)
                                           : h.pop("q", batch, group, partitions);
    REQUIRE(result.messages.size() <= batch);
    std::map<std::string, std::vector<std::uint64_t>> taken;
    std::vector<std::string> order;
    for (const auto& m : result.messages) {
        if (!taken.contains(m.partition)) {
            order.push_back(m.partition);
        }
        taken[m.partition].push_back(m.id.sequence.value());
        REQUIRE(model.messages[m.partition][m.id.sequence.value() - 1] == m.transaction_id);
    }
    REQUIRE(taken.size() <= (one_partition ? 1 : partitions));
    for (const auto& [partition, seqs] : taken) {
        INFO("partition " << partition);
        // One holder per (partition, group): it was free, and FIFO from the cursor.
        REQUIRE(model.deliverable(group, partition, h.now_ms));
        ModelCursor& c = model.cursors[{group, partition}];
        for (std::size_t i = 0; i < seqs.size(); ++i) {
            REQUIRE(seqs[i] == c.consumed + 1 + i);
        }
        model.drop_outstanding(group, partition);
        c.lease = result.lease.value();
        c.expires = h.now_ms + lease_ms;
        c.batch = seqs;
        c.acked = 0;
        for (const auto seq : seqs) {
            model.outstanding.push_back({group, partition, seq, result.lease.value()});
        }
    }
    // Completeness: when budget and partition slots remain, nothing deliverable was skipped.
    const bool has_room =
        result.messages.size() < batch && taken.size() < (one_partition ? 1u : partitions);
    if (has_room) {
        for (const auto& partition : model.partitions) {
            if ((one_partition && partition != only) || taken.contains(partition)) {
                continue;
            }
            INFO("skipped deliverable partition " << partition);
            REQUIRE_FALSE(model.deliverable(group, partition, h.now_ms));
        }
    }
}

void check_ack(Harness& h, Model& model, Rng& rng) {
    if (model.outstanding.empty()) {
        return;
    }
    // Ack the oldest outstanding message of a random (group, partition) batch: acks go in
    // order inside a batch, as consumers do.
    const Outstanding pick = model.outstanding[rng.below(model.outstanding.size())];
    Outstanding item = pick;
    for (const auto& o : model.outstanding) {
        if (o.group == pick.group && o.partition == pick.partition && o.seq < item.seq) {
            item = o;
        }
    }
    const bool fail = rng.below(10) < 3;
    ModelCursor& c = model.cursors[{item.group, item.partition}];
    PoppedMessage message;
    message.id = MessageId{model.ids[item.partition], Sequence{item.seq}};
    message.transaction_id = model.messages[item.partition][item.seq - 1];
    INFO("ack " << item.group << "/" << item.partition << "/" << item.seq << " lease " << item.lease
                << (fail ? " failed" : " completed"));
    const auto result = h.ack(message, LeaseId{item.lease},
                              fail ? AckStatus::failed : AckStatus::completed, item.group, "x");
    std::erase_if(model.outstanding, [&](const Outstanding& o) {
        return o.group == item.group && o.partition == item.partition && o.seq == item.seq;
    });
    if (fail && c.last_failed == item.lease) {
        REQUIRE(result.success);
        return;
    }
    if (!c.is_leased(h.now_ms) || c.lease != item.lease) {
        REQUIRE_FALSE(result.success);
        REQUIRE(result.error == "Invalid or expired lease");
        return;
    }
    REQUIRE(result.success);
    bool released = false;
    bool dlq = false;
    auto consume = [&] {
        c.consumed = std::max(c.consumed, item.seq);
        if (++c.acked >= c.batch.size()) {
            released = true;
        }
    };
    if (!fail) {
        consume();
        if (released) {
            c.retries = 0;
        }
    } else if (c.retries < retry_limit) {
        c.retries++;
        c.last_failed = c.lease;
        c.not_before = h.now_ms + retry_delay_ms;
        released = true;
    } else {
        dlq = true;
        model.dead++;
        consume();
    }
    REQUIRE(result.dlq == dlq);
    REQUIRE(result.lease_released == (released ? LeaseReleased::yes : LeaseReleased::no));
    if (released) {
        c.lease = 0;
        c.expires = 0;
        model.drop_outstanding(item.group, item.partition);
    }
}

void check_extend(Harness& h, Model& model, Rng& rng) {
    if (model.outstanding.empty()) {
        return;
    }
    const std::uint64_t lease = model.outstanding[rng.below(model.outstanding.size())].lease;
    bool any = false;
    for (auto& [key, c] : model.cursors) {
        if (c.lease == lease && c.is_leased(h.now_ms)) {
            c.expires = std::max(c.expires, h.now_ms + 10'000);
            any = true;
        }
    }
    const auto result = h.run(ExtendLease{LeaseId{lease}, 10});
    REQUIRE(result.success == any);
}

TEST_CASE("queues: random operations keep FIFO, exclusivity, retries and completeness",
          "[queues][property]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    Harness h;
    QueueOptions options;
    options.lease_time_s = lease_ms / 1000;
    options.retry_limit = retry_limit;
    options.retry_delay_ms = retry_delay_ms;
    options.ttl_s = 0;
    h.configure("q", options);
    Model model;
    int pushed = 0;
    const int steps = static_cast<int>(queen::testing::env_int("QUEEN_PROPERTY_STEPS", 3000));
    for (int step = 0; step < steps; ++step) {
        INFO("step " << step << " now " << h.now_ms);
        const auto dice = rng.below(100);
        if (dice < 25) {
            const std::string partition = model.partitions[rng.below(model.partitions.size())];
            const std::string txid = "t" + std::to_string(pushed++);
            const auto result = h.push("q", partition, txid);
            REQUIRE(result.items[0].status == PushStatus::queued);
            model.messages[partition].push_back(txid);
            model.ids[partition] = result.items[0].message_id.partition;
            REQUIRE(result.items[0].message_id.sequence.value() ==
                    model.messages[partition].size());
        } else if (dice < 55) {
            check_pop(h, model, rng);
        } else if (dice < 85) {
            check_ack(h, model, rng);
        } else if (dice < 90) {
            check_extend(h, model, rng);
        } else if (dice < 99) {
            h.advance_ms(static_cast<std::int64_t>(rng.below(3000)));
        } else {
            const std::string before = h.state->debug_dump_index();
            h.reopen();
            REQUIRE(h.state->debug_dump_index() == before);
        }
    }
    // Drain: every message ends consumed (completed or dead-lettered) by every group.
    for (int round = 0; round < 200; ++round) {
        h.advance_ms(lease_ms + retry_delay_ms);
        bool any = false;
        for (const auto& group : model.groups) {
            auto popped = h.pop("q", 100, group, 10);
            for (const auto& m : popped.messages) {
                any = true;
                REQUIRE(h.ack(m, popped.lease, AckStatus::completed, group).success);
            }
        }
        if (!any) {
            break;
        }
    }
    for (const auto& group : model.groups) {
        for (const auto& partition : model.partitions) {
            auto cursors = h.read([&](const Tables& t, const store::Txn& txn) {
                return list_group_cursors(t, txn, group, TimestampMs{h.now_ms});
            });
            for (const auto& c : cursors) {
                if (c.partition == partition) {
                    INFO(group << "/" << partition);
                    REQUIRE(c.consumed.value() == model.messages[partition].size());
                    REQUIRE(c.offset_lag == 0);
                }
            }
        }
    }
    auto dlq = h.read([](const Tables& t, const store::Txn& txn) {
        return list_dlq(t, txn, "q", "", 1'000'000, 0);
    });
    REQUIRE(dlq.size() == model.dead);
}

}  // namespace
}  // namespace queen::queues

namespace queen::queues {
namespace {

TEST_CASE("queues: autoAck pops interleaved with pushes deliver everything exactly once",
          "[queues][property]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    Harness h;
    std::map<std::string, int> delivered;
    int pushed = 0;
    std::map<std::string, int> pending;  // partition -> undelivered
    for (int step = 0; step < 2000; ++step) {
        if (rng.below(2) == 0) {
            Push push;
            const auto count = 1 + rng.below(3);
            for (std::uint64_t i = 0; i < count; ++i) {
                PushItem item;
                item.queue = "work";
                item.partition = "p" + std::to_string(rng.below(4));
                item.transaction_id = "t" + std::to_string(pushed++);
                item.payload = testing::text(item.transaction_id);
                pending[item.partition]++;
                push.items.push_back(item);
            }
            h.run(push);
        } else {
            Pop pop;
            pop.queue = "work";
            pop.batch = 3;
            pop.auto_ack = true;
            auto result = h.run(pop);
            for (const auto& m : result.messages) {
                REQUIRE(++delivered[m.transaction_id.str()] == 1);
                pending[m.partition]--;
            }
            if (result.messages.empty()) {
                for (const auto& [partition, count] : pending) {
                    INFO("step " << step << " partition " << partition);
                    REQUIRE(count == 0);
                }
            }
        }
        h.advance_ms(static_cast<std::int64_t>(rng.below(3)));
    }
}

}  // namespace
}  // namespace queen::queues
