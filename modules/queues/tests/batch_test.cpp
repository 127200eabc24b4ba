// queues/tests/batch_test.cpp — a multi-item Push or Ack leaves LMDB and the memory index
// exactly as its items applied one by one do (the batch paths share lookups and write each
// cursor once), and the record encoders that skip copies produce the documented bytes.
#include <algorithm>
#include <map>
#include <tuple>

#include "apply.hpp"
#include "harness.hpp"
#include "messages.hpp"
#include "queen/core/field_codec.hpp"
#include "queen/core/rng.hpp"
#include "records.hpp"
#include "state.hpp"

namespace queen::queues {
namespace {

using testing::Harness;
using testing::text;
using testing::Transaction;
using testing::TransactionOp;
using testing::TransactionResult;

std::string hex(ByteSpan bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (const Byte b : bytes) {
        out += digits[b >> 4];
        out += digits[b & 0xf];
    }
    return out;
}

/// The messages of one q.blocks entry, one line each: a batch stores one block per partition
/// where pushes one by one store one entry each, so the messages are compared, not the blocks
/// (nor their positions and links, nor the index of blocks).
Result<std::string> dump_messages(const store::Entry& entry) {
    QUEEN_TRY(const auto header, detail::parse_block_header(entry.value));
    const std::uint64_t pid = header.partition.value();
    Sequence seq = header.first;
    QUEEN_TRY(auto block, detail::BlockReader::parse(entry.value));
    std::string out;
    ByteSpan record;
    for (;;) {
        QUEEN_TRY(const bool more, block.next(record));
        if (!more) {
            return out;
        }
        if (!record.empty()) {
            out +=
                hex(detail::message_key(PartitionId{pid}, seq).span()) + "=" + hex(record) + "\n";
        }
        seq = seq.next();
    }
}

/// Every entry of every queue table (q.messages per message), then the memory index.
std::string dump(Harness& h) {
    std::string tables = h.read([](const Tables& t, const store::Txn& txn) -> Result<std::string> {
        std::string out;
        for (const store::Table table :
             {t.meta, t.queues, t.queue_names, t.partitions, t.partition_names, t.messages,
              t.transaction_ids, t.groups, t.group_names, t.cursors, t.group_queues,
              t.subscriptions, t.dlq, t.buffer, t.traces}) {
            QUEEN_TRY(auto cursor, txn.cursor(table));
            QUEEN_TRY(auto entry, cursor.first());
            std::string messages;  // in (partition, sequence) order, not in block order
            while (entry) {
                if (table == t.messages) {
                    QUEEN_TRY(auto some, dump_messages(*entry));
                    messages += some;
                } else if (table == t.meta &&
                           std::string_view(reinterpret_cast<const char*>(entry->key.data()),
                                            entry->key.size()) == detail::meta_leaf_fill_key) {
                    // how full the blocks' last leaf is: how the blocks were laid out
                } else if (table == t.meta && entry->value[0] == detail::layout_version) {
                    QUEEN_TRY(auto meta, detail::decode_meta(entry->value));
                    meta.next_position = 0;  // how many blocks were written
                    out += hex(entry->key) + "=" + hex(detail::encode(meta)) + "\n";
                } else if (table == t.partitions) {
                    QUEEN_TRY(auto partition, detail::decode_partition(entry->value));
                    partition.tail = 0;  // a position
                    out += hex(entry->key) + "=" + hex(detail::encode(partition)) + "\n";
                } else {
                    out += hex(entry->key) + "=" + hex(entry->value) + "\n";
                }
                QUEEN_TRY(entry, cursor.next());
            }
            std::vector<std::string> lines;
            for (std::size_t at = 0; at < messages.size();) {
                const std::size_t end = messages.find('\n', at);
                lines.push_back(messages.substr(at, end - at + 1));
                at = end + 1;
            }
            std::sort(lines.begin(), lines.end());
            for (const auto& line : lines) {
                out += line;
            }
            out += "--\n";
        }
        return out;
    });
    return tables + h.state->debug_dump_index();
}

/// Runs `command` on `a` and the same command on `b`; both must answer alike.
template <class Command>
auto run_both(Harness& a, Harness& b, const Command& command) {
    auto result = a.run(command);
    auto other = b.run(command);
    if constexpr (std::is_same_v<Command, Pop>) {
        REQUIRE(result.messages.size() == other.messages.size());
        REQUIRE(result.lease == other.lease);
    }
    return result;
}

ConfigureQueue configure(std::string queue, const QueueOptions& options) {
    ConfigureQueue command;
    command.queue = std::move(queue);
    command.options = options;
    return command;
}

void require_same(const AckItemResult& x, const AckItemResult& y) {
    CHECK(x.transaction_id == y.transaction_id);
    CHECK(x.success == y.success);
    CHECK(x.error == y.error);
    CHECK(x.queue == y.queue);
    CHECK(x.partition == y.partition);
    CHECK(x.lease_released == y.lease_released);
    CHECK(x.dlq == y.dlq);
}

/// A push of `count` messages to queue "q", each to partition "p<rng.below(partitions)>", with
/// transaction ids t<next_txid>, t<next_txid + 1>, ... (their own text as payload).
Push random_push(Rng& rng, int count, std::uint64_t partitions, int& next_txid) {
    Push push;
    for (int i = 0; i < count; ++i) {
        PushItem item;
        item.queue = "q";
        item.partition = "p" + std::to_string(rng.below(partitions));
        item.transaction_id = "t" + std::to_string(next_txid++);
        item.payload = text(item.transaction_id);
        push.items.push_back(std::move(item));
    }
    return push;
}

TEST_CASE("queues: a batch ack equals its items acked one by one in (partition, group, seq) order",
          "[queues][ack][batch]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    Harness batched;
    Harness single;
    QueueOptions options;
    options.lease_time_s = 30;
    options.retry_limit = 1;
    run_both(batched, single, configure("q", options));
    const std::vector<std::string> groups{std::string(queue_mode_group), "g2"};
    int next_txid = 0;
    for (int round = 0; round < 8; ++round) {
        INFO("round " << round);
        run_both(batched, single, random_push(rng, 40, 3, next_txid));
        // Pops leave several leased batches per group (some partitions unclaimed).
        std::vector<std::pair<PoppedMessage, AckItem>> popped;
        for (const auto& group : groups) {
            for (int k = 0; k < 2; ++k) {
                Pop pop;
                pop.queue = "q";
                pop.group = group;
                pop.batch = static_cast<std::uint32_t>(1 + rng.below(12));
                pop.partitions = static_cast<std::uint32_t>(1 + rng.below(2));
                const auto result = run_both(batched, single, pop);
                for (const auto& message : result.messages) {
                    AckItem item;
                    item.partition = message.id.partition;
                    item.transaction_id = message.transaction_id;
                    item.lease = result.lease;
                    item.group = group;
                    popped.emplace_back(message, item);
                }
            }
        }
        // Acks of most delivered messages with every status, some twice, some with a wrong
        // lease, some of unknown messages, in random order.
        std::vector<AckItem> items;
        std::vector<std::uint64_t> sequences;
        for (auto& [message, item] : popped) {
            const auto dice = rng.below(100);
            if (dice < 10) {
                continue;  // left unacked: the lease stays
            }
            item.status = dice < 60   ? AckStatus::completed
                          : dice < 75 ? AckStatus::failed
                          : dice < 85 ? AckStatus::dlq
                          : dice < 92 ? AckStatus::retry
                                      : AckStatus::completed;
            if (dice >= 92 && dice < 95) {
                item.lease = LeaseId{item.lease.value() + 1000};
            }
            item.has_error = rng.below(2) == 0;
            item.error = item.has_error ? "boom" : "";
            items.push_back(item);
            sequences.push_back(message.id.sequence.value());
            if (rng.below(20) == 0) {
                items.push_back(item);
                sequences.push_back(message.id.sequence.value());
            }
        }
        if (!popped.empty()) {
            AckItem ghost = popped.front().second;
            ghost.transaction_id = "missing";
            items.push_back(ghost);
            sequences.push_back(UINT64_MAX);
        }
        std::vector<std::size_t> shuffled(items.size());
        for (std::size_t i = 0; i < shuffled.size(); ++i) {
            shuffled[i] = i;
        }
        for (std::size_t i = shuffled.size(); i > 1; --i) {
            std::swap(shuffled[i - 1], shuffled[rng.below(i)]);
        }
        Ack ack;
        std::vector<std::uint64_t> shuffled_sequences;
        for (const std::size_t i : shuffled) {
            ack.items.push_back(items[i]);
            shuffled_sequences.push_back(sequences[i]);
        }
        const auto batch_result = batched.run(ack);
        REQUIRE(batch_result.items.size() == ack.items.size());
        // The same acks one per command, in the order the batch applies them.
        std::vector<std::size_t> order(ack.items.size());
        for (std::size_t i = 0; i < order.size(); ++i) {
            order[i] = i;
        }
        std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
            const auto& p = ack.items[x];
            const auto& q = ack.items[y];
            return std::tie(p.partition, p.group, shuffled_sequences[x]) <
                   std::tie(q.partition, q.group, shuffled_sequences[y]);
        });
        for (const std::size_t i : order) {
            INFO("ack item " << i << " " << ack.items[i].transaction_id);
            const auto one = single.run(Ack{{ack.items[i]}});
            REQUIRE(one.items.size() == 1);
            require_same(batch_result.items[i], one.items[0]);
        }
        REQUIRE(dump(batched) == dump(single));
        batched.advance_s(7);
        single.advance_s(7);
    }
}

TEST_CASE("queues: a batch push equals its items pushed one by one", "[queues][push][batch]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    Harness batched;
    Harness single;
    QueueOptions small;
    small.max_size = 25;
    run_both(batched, single, configure("small", small));
    for (int round = 0; round < 6; ++round) {
        INFO("round " << round);
        Push push;
        for (int i = 0; i < 30; ++i) {
            PushItem item;
            item.queue = rng.below(3) == 0 ? "small" : "big.task.x";
            // Runs of one partition broken by switches; later rounds use more partitions than
            // the push memo holds (16 pairs).
            const std::uint64_t index =
                round < 3 ? (rng.below(4) == 0 ? rng.below(3) : 0) : rng.below(40);
            item.partition = "p" + std::to_string(index);
            item.transaction_id = "t" + std::to_string(rng.below(60));  // duplicates too
            item.trace_id = rng.below(2) == 0 ? "trace" : "";
            item.producer_sub = rng.below(2) == 0 ? "sub" : "";
            item.is_encrypted = rng.below(5) == 0;
            item.payload = text(std::string(rng.below(300), 'x'));
            push.items.push_back(std::move(item));
        }
        const auto result = batched.run(push);
        REQUIRE(result.items.size() == push.items.size());
        for (std::size_t i = 0; i < push.items.size(); ++i) {
            INFO("item " << i);
            const auto one = single.run(Push{{push.items[i]}});
            REQUIRE(one.items.size() == 1);
            CHECK(result.items[i].status == one.items[0].status);
            CHECK(result.items[i].message_id == one.items[0].message_id);
            CHECK(result.items[i].error == one.items[0].error);
            CHECK(result.items[i].queue == one.items[0].queue);
            CHECK(result.items[i].partition == one.items[0].partition);
            CHECK(result.items[i].transaction_id == one.items[0].transaction_id);
        }
        REQUIRE(dump(batched) == dump(single));
        // Drain some of "small" so that later rounds are not all full.
        Pop pop;
        pop.queue = "small";
        pop.batch = 10;
        pop.auto_ack = true;
        run_both(batched, single, pop);
        batched.advance_s(1);
        single.advance_s(1);
    }
    // Each outcome happened at least once (the comparison above covered it).
    REQUIRE(batched.read([](const Tables& t, const store::Txn& txn) -> Result<std::uint64_t> {
        QUEEN_TRY(auto stats, txn.stats(t.messages));
        return stats.entries;
    }) > 0);
}

TEST_CASE("queues: append_message_blob writes a compact record of the pushed item",
          "[queues][records]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    Bytes reused;
    for (int i = 0; i < 200; ++i) {
        PushItem item;
        item.queue = "q";
        if (rng.below(2) == 0) {
            char uuid[40];
            std::snprintf(uuid, sizeof uuid, "%08x-%04x-7%03x-%04x-%012llx",
                          static_cast<unsigned>(rng.below(UINT32_MAX)),
                          static_cast<unsigned>(rng.below(0x10000)),
                          static_cast<unsigned>(rng.below(0x1000)),
                          static_cast<unsigned>(rng.below(0x10000)),
                          static_cast<unsigned long long>(rng.below(1ULL << 48)));
            item.transaction_id = uuid;  // stored in 16 bytes
        } else {
            item.transaction_id = std::string(rng.below(200), 't');
        }
        item.trace_id = std::string(rng.below(3) * 60, 'r');
        item.producer_sub = std::string(rng.below(2) * 130, 's');
        item.is_encrypted = rng.below(2) == 0;
        item.payload = Bytes(rng.below(2) == 0 ? rng.below(100) : rng.below(70'000),
                             static_cast<Byte>(rng.below(256)));
        const std::int64_t now_ms = rng.below(2) == 0
                                        ? static_cast<std::int64_t>(rng.below(UINT64_MAX >> 1))
                                        : -static_cast<std::int64_t>(rng.below(1'000'000));
        const std::size_t size = detail::message_record_size(TimestampMs{now_ms}, item);
        // Appended as a blob after other bytes: a varint length, then the record.
        Bytes blob{0xaa};
        const std::size_t at = detail::append_message_blob(blob, TimestampMs{now_ms}, item);
        REQUIRE(at == 1 + codec::varint_size(size));
        REQUIRE(blob.size() == at + size);
        ByteReader length(ByteSpan(blob).subspan(1));
        REQUIRE(length.varint() == size);
        reused.assign(blob.begin() + static_cast<std::ptrdiff_t>(at), blob.end());
        CHECK(reused[0] == detail::message_record_format);
        auto decoded = detail::decode_message(reused);
        REQUIRE(decoded.has_value());
        CHECK(decoded->created_at.value() == now_ms);
        CHECK(decoded->transaction_id == item.transaction_id);
        CHECK(decoded->trace_id == item.trace_id);
        CHECK(decoded->producer_sub == item.producer_sub);
        CHECK(decoded->is_encrypted == item.is_encrypted);
        CHECK(decoded->payload == item.payload);
        // The format 1 record of the same message (DLQ records, layout 2 blocks) decodes alike.
        const detail::MessageRecord record{TimestampMs{now_ms}, item.transaction_id, item.trace_id,
                                           item.producer_sub,   item.is_encrypted,   item.payload};
        const Bytes encoded = detail::encode(record);
        REQUIRE(encoded.capacity() == encoded.size());
        auto old = detail::decode_message(encoded);
        REQUIRE(old.has_value());
        CHECK(old->transaction_id == decoded->transaction_id);
        CHECK(old->payload == decoded->payload);
        // Truncated: refused, never read past the end.
        if (reused.size() > 2) {
            const ByteSpan cut = ByteSpan(reused).first(2);
            CHECK_FALSE(detail::decode_message(cut).has_value());
        }

        detail::CursorRecord cursor;
        cursor.consumed = Sequence{rng.next()};
        cursor.lease_expires_ms = -static_cast<std::int64_t>(rng.below(1000));
        cursor.batch_size = static_cast<std::uint32_t>(rng.below(UINT32_MAX));
        detail::encode_into(reused, cursor);
        REQUIRE(reused == detail::encode(cursor));
        REQUIRE(detail::encode(cursor).capacity() == reused.size());
        detail::PartitionRecord partition;
        partition.queue = QueueId{static_cast<std::uint32_t>(rng.below(UINT32_MAX))};
        partition.name = std::string(rng.below(300), 'p');
        partition.created_at = TimestampMs{now_ms};
        partition.first_sequence = Sequence{rng.below(1u << 20)};
        partition.last_sequence = Sequence{rng.below(1u << 20)};
        partition.last_created_at = TimestampMs{-now_ms};
        partition.message_count = rng.next();
        partition.tail = rng.next();
        detail::encode_into(reused, partition);
        REQUIRE(reused == detail::encode(partition));
        Bytes direct;
        detail::encode_partition_into(direct, partition.queue, partition.name, partition.created_at,
                                      partition.first_sequence, partition.last_sequence,
                                      partition.last_created_at, partition.message_count,
                                      partition.tail);
        REQUIRE(direct == reused);
        detail::MetaRecord meta;
        meta.next_lease_id = LeaseId{rng.next()};
        meta.pop_maintenance = rng.below(2) == 0;
        meta.next_position = rng.next();
        detail::encode_into(reused, meta);
        REQUIRE(reused == detail::encode(meta));
        REQUIRE(detail::decode_meta(reused).value() == meta);
        REQUIRE(detail::decode_partition(direct).value().tail == partition.tail);
    }
}

/// The same commands on a state that keeps its caches (`warm`) and on one reopened before every
/// command (`cold`: its partition cache always starts empty) answer alike.
struct WarmAndCold {
    Harness warm;
    Harness cold;

    template <class Command>
    auto run(const Command& command) {
        cold.reopen();
        auto result = warm.run(command);
        auto other = cold.run(command);
        if constexpr (std::is_same_v<Command, Push>) {
            REQUIRE(result.items.size() == other.items.size());
            for (std::size_t i = 0; i < result.items.size(); ++i) {
                CHECK(result.items[i].status == other.items[i].status);
                CHECK(result.items[i].message_id == other.items[i].message_id);
                CHECK(result.items[i].partition == other.items[i].partition);
            }
        } else if constexpr (std::is_same_v<Command, Pop>) {
            REQUIRE(result.messages.size() == other.messages.size());
            REQUIRE(result.lease == other.lease);
            for (std::size_t i = 0; i < result.messages.size(); ++i) {
                CHECK(result.messages[i].id == other.messages[i].id);
                CHECK(result.messages[i].partition == other.messages[i].partition);
                CHECK(result.messages[i].transaction_id == other.messages[i].transaction_id);
            }
        } else if constexpr (std::is_same_v<Command, Transaction>) {
            CHECK(result.success == other.success);
            CHECK(result.error == other.error);
            REQUIRE(result.results.size() == other.results.size());
            for (std::size_t i = 0; i < result.results.size(); ++i) {
                CHECK(result.results[i].message_id == other.results[i].message_id);
                CHECK(result.results[i].success == other.results[i].success);
            }
        } else if constexpr (std::is_same_v<Command, Ack>) {
            REQUIRE(result.items.size() == other.items.size());
            for (std::size_t i = 0; i < result.items.size(); ++i) {
                require_same(result.items[i], other.items[i]);
            }
        }
        return result;
    }
    void advance_s(std::int64_t seconds) {
        warm.advance_s(seconds);
        cold.advance_s(seconds);
    }
};

TEST_CASE("queues: the partition cache changes no answer and no byte of state", "[queues][cache]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    WarmAndCold h;
    // More partitions than the cache holds, so it also refills after clearing itself.
    constexpr std::size_t wide = detail::PartitionCache::entries_max + 300;
    {
        Push push;
        for (std::size_t i = 0; i < wide; ++i) {
            PushItem item;
            item.queue = "wide";
            item.partition = "w" + std::to_string(i);
            item.transaction_id = "seed" + std::to_string(i);
            item.payload = text("s");
            push.items.push_back(std::move(item));
        }
        h.run(push);
    }
    int next_txid = 0;
    auto push_item = [&](std::string queue, std::string partition) {
        PushItem item;
        item.queue = std::move(queue);
        item.partition = std::move(partition);
        item.transaction_id = "t" + std::to_string(next_txid++);
        item.payload = text(item.transaction_id);
        return item;
    };
    for (int round = 0; round < 20; ++round) {
        INFO("round " << round);
        const std::string queue = rng.below(2) == 0 ? "a" : "b.x";
        Push push;
        for (int i = 0; i < 12; ++i) {
            push.items.push_back(push_item(rng.below(4) == 0 ? "wide" : queue,
                                           rng.below(4) == 0 ? "w" + std::to_string(rng.below(wide))
                                                             : "p" + std::to_string(rng.below(5))));
        }
        h.run(push);
        // Pops of named partitions and of the queue, then transactions on what they gave:
        // ack + push (sometimes to a new partition), some of which fail and roll back (a
        // partition they created frees its id, which the next new name gets, and its name may
        // come back later with another id).
        for (int k = 0; k < 3; ++k) {
            Pop pop;
            pop.queue = rng.below(3) == 0 ? "wide" : queue;
            if (rng.below(2) == 0) {
                pop.has_partition = true;
                pop.partition = pop.queue == "wide" ? "w" + std::to_string(rng.below(wide))
                                                    : "p" + std::to_string(rng.below(5));
            }
            pop.batch = static_cast<std::uint32_t>(1 + rng.below(3));
            const auto popped = h.run(pop);
            Transaction transaction;
            for (const auto& message : popped.messages) {
                TransactionOp ack;
                ack.kind = TransactionOp::Kind::ack;
                ack.ack.partition = message.id.partition;
                ack.ack.transaction_id = message.transaction_id;
                ack.ack.lease = popped.lease;
                transaction.ops.push_back(std::move(ack));
            }
            TransactionOp push_op;
            push_op.kind = TransactionOp::Kind::push;
            push_op.push = push_item(queue, rng.below(3) == 0 ? "n" + std::to_string(rng.below(8))
                                                              : "p" + std::to_string(rng.below(5)));
            transaction.ops.push_back(std::move(push_op));
            if (rng.below(4) == 0) {
                TransactionOp bad;
                bad.kind = TransactionOp::Kind::ack;
                bad.ack.partition = PartitionId{1};
                bad.ack.transaction_id = "missing";
                transaction.ops.push_back(std::move(bad));
            }
            if (rng.below(5) != 0) {
                h.run(transaction);
            } else if (!popped.messages.empty()) {
                Ack ack;
                for (const auto& op : transaction.ops) {
                    if (op.kind == TransactionOp::Kind::ack && op.ack.transaction_id != "missing") {
                        ack.items.push_back(op.ack);
                    }
                }
                h.run(ack);
            }
        }
        if (rng.below(8) == 0) {
            // A deleted queue's partition names come back with new ids.
            h.run(DeleteQueue{"b.x"});
        }
        REQUIRE(dump(h.warm) == dump(h.cold));
        h.advance_s(static_cast<std::int64_t>(rng.below(40)));
    }
}

TEST_CASE("queues: cursors kept in memory across commits change no answer and no byte of state",
          "[queues][cache]") {
    // The warm state keeps the cursors its pops and acks read or wrote from one commit to the
    // next (Harness::run commits after every command); the cold one reopens before each.
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    WarmAndCold h;
    const std::vector<std::string> groups{std::string(queue_mode_group), "g1", "g2"};
    int next_txid = 0;
    for (int round = 0; round < 30; ++round) {
        INFO("round " << round);
        h.run(random_push(rng, 20, 6, next_txid));
        for (const auto& group : groups) {
            Pop pop;
            pop.queue = "q";
            pop.group = group;
            pop.batch = static_cast<std::uint32_t>(1 + rng.below(10));
            pop.partitions = static_cast<std::uint32_t>(1 + rng.below(3));
            const auto popped = h.run(pop);
            Ack ack;
            for (const auto& message : popped.messages) {
                const auto dice = rng.below(10);
                if (dice == 0) {
                    continue;  // left leased: it expires below, or a later ack releases it
                }
                AckItem item;
                item.partition = message.id.partition;
                item.transaction_id = message.transaction_id;
                item.lease = popped.lease;
                item.group = group;
                item.status = dice < 7   ? AckStatus::completed
                              : dice < 9 ? AckStatus::retry
                                         : AckStatus::failed;
                ack.items.push_back(item);
            }
            if (!ack.items.empty()) {
                h.run(ack);
            }
        }
        REQUIRE(dump(h.warm) == dump(h.cold));
        h.advance_s(static_cast<std::int64_t>(rng.below(200)));  // leases of 300 s may expire
    }
}

TEST_CASE("queues: a batch's blocks fill LMDB's leaves, heads split off to fill one",
          "[queues][push][blocks]") {
    // 16 partitions and pushes of 100 messages of ~280 bytes: blocks of 6 and 7 messages, two
    // of which leave a third of a leaf empty when written in the order they started.
    Harness h;
    constexpr int partitions = 16;
    constexpr int pushes = 150;
    std::uint64_t record_bytes = 0;
    int next_txid = 0;
    for (int round = 0; round < pushes; ++round) {
        Push push;
        for (int i = 0; i < 100; ++i) {
            PushItem item;
            item.queue = "q";
            item.partition = "p" + std::to_string(next_txid % partitions);
            item.transaction_id = "t" + std::to_string(next_txid++);
            item.payload = text(std::string(250, 'x'));
            record_bytes += detail::message_record_size(TimestampMs{h.now_ms}, item) + 2;
            push.items.push_back(std::move(item));
        }
        h.run(push);
    }
    const auto stats = h.env->stats().value();
    std::uint64_t leaves = 0;
    for (const auto& table : stats.tables) {
        if (table.name == "q.blocks") {
            leaves = table.leaf_pages;
        }
    }
    REQUIRE(leaves > 0);
    const double fill =
        static_cast<double>(record_bytes) / static_cast<double>(leaves * detail::block_leaf_bytes);
    INFO("leaves " << leaves << " for " << record_bytes << " record bytes: fill " << fill);
    CHECK(fill > 0.93);  // in the order the blocks started: 0.84
    // Every message reads back once, in order, split blocks included.
    std::map<std::uint64_t, std::uint64_t> next;  // partition id -> the sequence due
    std::uint64_t delivered = 0;
    for (;;) {
        const auto popped = h.pop("q", 1000, "g", partitions);
        if (popped.messages.empty()) {
            break;
        }
        Ack ack;
        for (const auto& message : popped.messages) {
            auto [due, is_new] = next.try_emplace(message.id.partition.value(), 1);
            REQUIRE(message.id.sequence.value() == due->second);
            ++due->second;
            ++delivered;
            AckItem item;
            item.partition = message.id.partition;
            item.transaction_id = message.transaction_id;
            item.lease = popped.lease;
            item.group = "g";
            ack.items.push_back(item);
        }
        for (const auto& item : h.run(ack).items) {
            REQUIRE(item.success);
        }
    }
    CHECK(delivered == static_cast<std::uint64_t>(pushes) * 100);
}

TEST_CASE("queues: a committed transaction drops the leases it released from the index",
          "[queues][transaction][cache]") {
    Harness h;
    for (int i = 0; i < 3; ++i) {
        h.push("q", "p" + std::to_string(i), "m" + std::to_string(i));
    }
    std::vector<PopResult> popped;
    for (int i = 0; i < 3; ++i) {
        popped.push_back(h.pop_partition("q", "p" + std::to_string(i)));
        REQUIRE(popped.back().messages.size() == 1);
    }
    REQUIRE(h.state->index_stats().active_leases == 3);
    auto ack_op = [](const PopResult& result) {
        TransactionOp op;
        op.kind = TransactionOp::Kind::ack;
        op.ack.partition = result.messages[0].id.partition;
        op.ack.transaction_id = result.messages[0].transaction_id;
        op.ack.lease = result.lease;
        return op;
    };
    // Rolled back: the lease is still held and still in the index.
    Transaction failing;
    failing.ops.push_back(ack_op(popped[0]));
    TransactionOp bad = ack_op(popped[1]);
    bad.ack.transaction_id = "missing";
    failing.ops.push_back(bad);
    REQUIRE_FALSE(h.run(failing).success);
    REQUIRE(h.state->index_stats().active_leases == 3);
    // Committed: both released leases leave the index; the third stays.
    Transaction good;
    good.ops.push_back(ack_op(popped[0]));
    good.ops.push_back(ack_op(popped[1]));
    REQUIRE(h.run(good).success);
    REQUIRE(h.state->index_stats().active_leases == 1);
    REQUIRE(h.ack(popped[2].messages[0], popped[2].lease).success);
    REQUIRE(h.state->index_stats().active_leases == 0);
    const std::string before = h.state->debug_dump_index();
    h.reopen();
    REQUIRE(h.state->debug_dump_index() == before);
    REQUIRE(h.state->index_stats().active_leases == 0);
}

}  // namespace
}  // namespace queen::queues
