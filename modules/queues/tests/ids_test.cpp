// queues/tests/ids_test.cpp — message ids: every result that names a message carries its
// createdAt, so the UUIDv7 printed from it is the same wherever the message shows up.
#include <algorithm>
#include <vector>

#include "harness.hpp"

namespace queen::queues {
namespace {

using testing::Harness;
using testing::text;
using testing::Transaction;
using testing::TransactionOp;
using testing::TransactionResult;

PushItem item(const std::string& partition, const std::string& txid) {
    PushItem out;
    out.queue = "q";
    out.partition = partition;
    out.transaction_id = txid;
    out.payload = text("{}");
    return out;
}

TEST_CASE("queues: push results carry createdAt, a duplicate the stored message's",
          "[queues][push][ids]") {
    Harness h;
    const std::int64_t first_ms = h.now_ms;
    const PushResult first = h.run(Push{{item("p", "t1")}});
    REQUIRE(first.items[0].status == PushStatus::queued);
    CHECK(first.items[0].created_at.value() == first_ms);
    h.advance_ms(5);
    // t2 and t3 are new; t1 was stored by the entry before (not the partition's newest message
    // any more); the second t2 is a duplicate of a message of this very batch.
    const PushResult second =
        h.run(Push{{item("p", "t2"), item("p", "t1"), item("p", "t3"), item("p", "t2")}});
    REQUIRE(second.items.size() == 4);
    CHECK(second.items[0].status == PushStatus::queued);
    CHECK(second.items[0].created_at.value() == first_ms + 5);
    CHECK(second.items[1].status == PushStatus::duplicate);
    CHECK(second.items[1].message_id == first.items[0].message_id);
    CHECK(second.items[1].created_at.value() == first_ms);
    CHECK(second.items[2].created_at.value() == first_ms + 5);
    CHECK(second.items[3].status == PushStatus::duplicate);
    CHECK(second.items[3].message_id == second.items[0].message_id);
    CHECK(second.items[3].created_at.value() == first_ms + 5);
    // The newest message of a partition (from memory) and a full queue's duplicate check.
    h.advance_ms(5);
    const PushResult third = h.run(Push{{item("p", "t3")}});
    CHECK(third.items[0].status == PushStatus::duplicate);
    CHECK(third.items[0].created_at.value() == first_ms + 5);

    // A pop prints the same ids as the push did.
    const PopResult popped = h.pop("q", 10);
    REQUIRE(popped.messages.size() == 3);
    const PushItemResult* pushed[] = {&first.items[0], &second.items[0], &second.items[2]};
    for (std::size_t i = 0; i < 3; ++i) {
        INFO(i);
        CHECK(format_message_id(popped.messages[i].id, popped.messages[i].created_at) ==
              format_message_id(pushed[i]->message_id, pushed[i]->created_at));
    }
}

TEST_CASE("queues: message ids sort in push order, across entries and inside a batch",
          "[queues][push][ids]") {
    Harness h;
    std::vector<std::string> ids;
    const auto add = [&ids](const PushResult& result) {
        for (const PushItemResult& one : result.items) {
            REQUIRE(one.status == PushStatus::queued);
            ids.push_back(format_message_id(one.message_id, one.created_at));
        }
    };
    // One batch of one partition (one ms), then later entries, some in the same ms.
    add(h.run(Push{{item("p", "a1"), item("p", "a2"), item("p", "a3"), item("p", "a4")}}));
    add(h.run(Push{{item("p", "b1")}}));  // same ms, later sequence
    h.advance_ms(1);
    add(h.run(Push{{item("other", "c1")}}));  // a later ms sorts after, whatever the partition
    h.advance_ms(1);
    add(h.run(Push{{item("p", "c2"), item("p", "c3")}}));
    h.advance_s(3600);
    add(h.run(Push{{item("p", "d1")}}));
    REQUIRE(ids.size() == 9);
    CHECK(std::is_sorted(ids.begin(), ids.end()));
    CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());  // all distinct
    // Inside one ms, ids sort by partition id, then sequence (not by push order).
    const PushResult later = h.run(Push{{item("other", "e1")}});
    const PushResult earlier = h.run(Push{{item("p", "e2")}});
    CHECK(format_message_id(earlier.items[0].message_id, earlier.items[0].created_at) <
          format_message_id(later.items[0].message_id, later.items[0].created_at));
    // Each id starts with its createdAt in ms: 12 hex digits.
    char expected[16];
    std::snprintf(expected, sizeof expected, "%012llx", static_cast<unsigned long long>(h.now_ms));
    CHECK(ids.back().substr(0, 8) + ids.back().substr(9, 4) == expected);
    CHECK(ids.back()[14] == '7');
}

TEST_CASE("queues: transaction pushes and partition seeks name messages with their createdAt",
          "[queues][transaction][ids]") {
    Harness h;
    const std::int64_t pushed_ms = h.now_ms;
    h.push("q", "p", "old");
    h.advance_ms(7);
    Transaction transaction;
    TransactionOp op;
    op.kind = TransactionOp::Kind::push;
    op.push = item("p", "new");
    transaction.ops.push_back(op);
    const TransactionResult committed = h.run(transaction);
    REQUIRE(committed.success);
    REQUIRE(committed.results.size() == 1);
    CHECK(committed.results[0].created_at.value() == pushed_ms + 7);
    CHECK(committed.results[0].message_id.sequence.value() == 2);

    h.advance_ms(7);
    const SeekPartitionResult sought = h.run(SeekPartition{"g", "q", "p"});
    REQUIRE(sought.updated);
    CHECK(sought.cursor.sequence.value() == 2);
    CHECK(sought.cursor_created_at.value() == pushed_ms + 7);
    const auto stored = h.read([&](const Tables& tables, const store::Txn& txn) {
        return message_created_at(tables, txn, sought.cursor);
    });
    CHECK(stored == std::optional<TimestampMs>{TimestampMs{pushed_ms + 7}});
    const auto unknown = h.read([&](const Tables& tables, const store::Txn& txn) {
        return message_created_at(tables, txn, MessageId{sought.cursor.partition, Sequence{3}});
    });
    CHECK_FALSE(unknown.has_value());
}

}  // namespace
}  // namespace queen::queues
