// queues/tests/messages_test.cpp — q.messages blocks: a push stores one entry per partition,
// and reads, pops, single deletes and retention see each message of a block as if it were
// stored alone.
#include <deque>
#include <map>

#include "harness.hpp"
#include "messages.hpp"
#include "queen/core/rng.hpp"
#include "records.hpp"

namespace queen::queues {
namespace {

using testing::Harness;
using testing::text;

PushItem item_of(const std::string& queue, const std::string& partition, const std::string& txid) {
    PushItem item;
    item.queue = queue;
    item.partition = partition;
    item.transaction_id = txid;
    item.payload = text("payload-" + txid);
    return item;
}

std::uint64_t message_entries(Harness& h) {
    return h.read([](const Tables& t, const store::Txn& txn) -> Result<std::uint64_t> {
        QUEEN_TRY(auto stats, txn.stats(t.messages));
        return stats.entries;
    });
}

std::optional<MessageDetail> find(Harness& h, PartitionId partition, const std::string& txid) {
    return h.read([&](const Tables& t, const store::Txn& txn) {
        return get_message(t, txn, partition, txid, TimestampMs{h.now_ms});
    });
}

std::vector<std::string> txids(const PopResult& popped) {
    std::vector<std::string> out;
    for (const auto& m : popped.messages) {
        out.push_back(m.transaction_id.str());
    }
    return out;
}

TEST_CASE("message blocks: one entry per partition a push touches, each message readable",
          "[queues][messages]") {
    Harness h;
    Push push;
    for (int i = 0; i < 12; ++i) {
        push.items.push_back(item_of("q", i % 2 == 0 ? "a" : "b", "t" + std::to_string(i)));
    }
    const auto pushed = h.run(push);
    const PartitionId a = pushed.items[0].message_id.partition;
    const PartitionId b = pushed.items[1].message_id.partition;
    REQUIRE(message_entries(h) == 2);         // one block for "a", one for "b"
    h.run(Push{{item_of("q", "a", "t12")}});  // a push of one stores the bare record
    REQUIRE(message_entries(h) == 3);
    for (int i = 0; i < 13; ++i) {
        const std::string txid = "t" + std::to_string(i);
        INFO(txid);
        const auto found = find(h, i % 2 == 0 ? a : b, txid);
        REQUIRE(found.has_value());
        CHECK(text(found->payload) == "payload-" + txid);
    }
    // Deleting inside a block rewrites it; the other messages stay.
    REQUIRE(h.run(DeleteMessage{a, "t2"}).found);
    REQUIRE(h.run(DeleteMessage{a, "t0"}).found);
    REQUIRE_FALSE(h.run(DeleteMessage{a, "t0"}).found);
    CHECK_FALSE(find(h, a, "t0").has_value());
    CHECK_FALSE(find(h, a, "t2").has_value());
    CHECK(find(h, a, "t4").has_value());
    REQUIRE(message_entries(h) == 3);
    // Pops start inside the block and cross into the next entry.
    auto first = h.pop_partition("q", "a", 2);
    REQUIRE(txids(first) == std::vector<std::string>{"t4", "t6"});
    for (const auto& m : first.messages) {
        REQUIRE(h.ack(m, first.lease).success);
    }
    auto rest = h.pop_partition("q", "a", 10);
    REQUIRE(txids(rest) == std::vector<std::string>{"t8", "t10", "t12"});
    // Newest first, across the block and the single entry.
    const auto listed = h.read([](const Tables& t, const store::Txn& txn) {
        return list_messages(t, txn, "q", "a", 10, 0);
    });
    std::vector<std::string> order;
    for (const auto& m : listed) {
        order.push_back(m.transaction_id);
    }
    CHECK(order == std::vector<std::string>{"t12", "t10", "t8", "t6", "t4"});
    // A block whose every message is deleted is removed.
    for (int i = 1; i < 12; i += 2) {
        REQUIRE(h.run(DeleteMessage{b, "t" + std::to_string(i)}).found);
    }
    REQUIRE(message_entries(h) == 2);
    REQUIRE(h.pop_partition("q", "b", 10).messages.empty());
}

/// Rewrites every q.blocks value through `change` (damage on disk, or an older format).
template <class Change>
void rewrite_blocks(Harness& h, Change&& change) {
    auto txn = h.env->begin_write();
    REQUIRE(txn.has_value());
    std::vector<std::pair<Bytes, Bytes>> values;
    {
        auto cursor = txn->cursor(h.state->tables().messages);
        REQUIRE(cursor.has_value());
        for (auto entry = cursor->first(); entry && *entry; entry = cursor->next()) {
            values.emplace_back(Bytes((*entry)->key.begin(), (*entry)->key.end()),
                                Bytes((*entry)->value.begin(), (*entry)->value.end()));
        }
    }
    REQUIRE_FALSE(values.empty());
    for (auto& [key, value] : values) {
        change(value);
        REQUIRE(txn->put(h.state->tables().messages, key, value).has_value());
    }
    REQUIRE(txn->commit().has_value());
}

TEST_CASE("message blocks: a flipped byte is refused on read, never served", "[queues][messages]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    Harness h;
    Push push;
    for (int i = 0; i < 8; ++i) {
        push.items.push_back(item_of("q", "a", "t" + std::to_string(i)));
    }
    const PartitionId a = h.run(push).items[0].message_id.partition;
    REQUIRE(find(h, a, "t3").has_value());
    std::size_t flipped_at = 0;
    rewrite_blocks(h, [&](Bytes& value) {
        flipped_at = rng.below(value.size());  // the format byte, the checksum, header or records
        value[flipped_at] ^= static_cast<Byte>(1u << rng.below(8));
    });
    INFO("flipped a bit of byte " << flipped_at);
    auto txn = h.env->begin_read();
    REQUIRE(txn.has_value());
    const auto read = get_message(h.state->tables(), *txn, a, "t3", TimestampMs{h.now_ms});
    REQUIRE_FALSE(read.has_value());
    CHECK(read.error().code == Errc::corruption);
    if (flipped_at != 0) {  // a damaged format byte is an unknown format, not a checksum
        CHECK_THAT(read.error().message(),
                   Catch::Contains("fails its checksum") || Catch::Contains("bytes, format"));
    }
}

TEST_CASE("message blocks: blocks written before checksums (format 3) still read",
          "[queues][messages]") {
    Harness h;
    Push push;
    for (int i = 0; i < 5; ++i) {
        push.items.push_back(item_of("q", "a", "t" + std::to_string(i)));
    }
    const PartitionId a = h.run(push).items[0].message_id.partition;
    // Drop the checksum: format 3 is the format byte followed directly by the varints.
    rewrite_blocks(h, [](Bytes& value) {
        REQUIRE(value[0] == detail::message_block_format);
        value.erase(value.begin() + 1, value.begin() + 1 + detail::block_checksum_bytes);
        value[0] = detail::message_block_format_unchecked;
    });
    for (int i = 0; i < 5; ++i) {
        const auto found = find(h, a, "t" + std::to_string(i));
        REQUIRE(found.has_value());
        CHECK(text(found->payload) == "payload-t" + std::to_string(i));
    }
    const auto popped = h.pop_partition("q", "a", 10);
    CHECK(txids(popped) == std::vector<std::string>{"t0", "t1", "t2", "t3", "t4"});
}

TEST_CASE("message blocks: a push larger than a block's bytes splits into several",
          "[queues][messages]") {
    Harness h;
    Push push;
    for (int i = 0; i < 100; ++i) {
        PushItem item = item_of("q", "p", "t" + std::to_string(i));
        item.payload = text(std::string(i % 2 == 0 ? 2000 : 100, 'x'));
        push.items.push_back(std::move(item));
    }
    h.run(push);
    // Blocks stay within LMDB's inline limit (PushMemo::block_bytes_max): a 2,000-byte message
    // is a block alone, and the 100-byte one after it starts the next.
    const std::uint64_t entries = message_entries(h);
    CHECK(entries == 100);
    const std::string small(100, 'x');
    Push smalls;
    for (int i = 0; i < 100; ++i) {
        PushItem item = item_of("q", "s", "s" + std::to_string(i));
        item.payload = text(small);
        smalls.items.push_back(std::move(item));
    }
    h.run(smalls);
    // ~130-byte records: about 15 to a block.
    CHECK(message_entries(h) >= 100 + 6);
    CHECK(message_entries(h) <= 100 + 8);
    auto popped = h.pop_partition("q", "p", 100);
    REQUIRE(popped.messages.size() == 100);
    for (int i = 0; i < 100; ++i) {
        REQUIRE(popped.messages[i].transaction_id == "t" + std::to_string(i));
        REQUIRE(popped.messages[i].id.sequence.value() == static_cast<std::uint64_t>(i + 1));
    }
}

TEST_CASE("message blocks: random batches, deletes, ttl sweeps and pops match a model",
          "[queues][messages][property]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    Harness h;
    QueueOptions options;
    options.ttl_s = 2;
    options.retry_limit = 100;
    h.configure("q", options);
    struct Stored {
        std::string txid;
        std::int64_t created_ms;
    };
    const std::vector<std::string> names{"a", "b", "c"};
    std::map<std::string, std::deque<Stored>> live;  // unconsumed and not deleted, in order
    std::map<std::string, PartitionId> ids;
    int next_txid = 0;
    const int steps = static_cast<int>(queen::testing::env_int("QUEEN_PROPERTY_STEPS", 1500));
    for (int step = 0; step < steps; ++step) {
        INFO("step " << step);
        h.advance_ms(static_cast<std::int64_t>(rng.below(300)));
        const auto dice = rng.below(100);
        if (dice < 35) {
            Push push;
            const auto count = 1 + rng.below(20);
            const auto spread = 1 + rng.below(names.size());
            for (std::uint64_t i = 0; i < count; ++i) {
                push.items.push_back(
                    item_of("q", names[rng.below(spread)], "t" + std::to_string(next_txid++)));
            }
            const auto result = h.run(push);
            for (std::size_t i = 0; i < push.items.size(); ++i) {
                REQUIRE(result.items[i].status == PushStatus::queued);
                live[push.items[i].partition].push_back(
                    {push.items[i].transaction_id.str(), h.now_ms});
                ids[push.items[i].partition] = result.items[i].message_id.partition;
            }
        } else if (dice < 50) {
            const std::string& name = names[rng.below(names.size())];
            auto& messages = live[name];
            if (messages.empty()) {
                continue;
            }
            const auto at = rng.below(messages.size());
            REQUIRE(h.run(DeleteMessage{ids[name], messages[at].txid}).found);
            messages.erase(messages.begin() + static_cast<std::ptrdiff_t>(at));
        } else if (dice < 60) {
            Sweep sweep;
            sweep.messages_max = static_cast<std::uint32_t>(1 + rng.below(8));
            h.run(sweep);
            // Expired messages go oldest first: what is gone from a partition is a prefix of
            // its expired ones.
            for (auto& [name, messages] : live) {
                bool is_gone_run = true;
                for (auto it = messages.begin(); it != messages.end();) {
                    const bool is_found = find(h, ids[name], it->txid).has_value();
                    if (!is_found) {
                        INFO(name << " " << it->txid);
                        REQUIRE(is_gone_run);
                        REQUIRE(it->created_ms + 2000 <= h.now_ms);
                        it = messages.erase(it);
                    } else {
                        is_gone_run = false;
                        ++it;
                    }
                }
            }
        } else {
            const std::string& name = names[rng.below(names.size())];
            const auto batch = static_cast<std::uint32_t>(1 + rng.below(12));
            auto popped = h.pop_partition("q", name, batch);
            auto& messages = live[name];
            const auto expected = std::min<std::size_t>(batch, messages.size());
            REQUIRE(popped.messages.size() == expected);
            for (std::size_t i = 0; i < expected; ++i) {
                REQUIRE(popped.messages[i].transaction_id == messages[i].txid);
                REQUIRE(text(popped.messages[i].payload) == "payload-" + messages[i].txid);
            }
            for (const auto& m : popped.messages) {
                REQUIRE(h.ack(m, popped.lease).success);
            }
            messages.erase(messages.begin(),
                           messages.begin() + static_cast<std::ptrdiff_t>(expected));
        }
    }
    const std::string before = h.state->debug_dump_index();
    h.reopen();
    REQUIRE(h.state->debug_dump_index() == before);
    for (const auto& name : names) {
        auto popped = h.pop_partition("q", name, 10'000);
        std::vector<std::string> expected;
        for (const auto& m : live[name]) {
            expected.push_back(m.txid);
        }
        REQUIRE(txids(popped) == expected);
    }
}

}  // namespace
}  // namespace queen::queues
