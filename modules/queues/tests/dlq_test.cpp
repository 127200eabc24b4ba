// queues/tests/dlq_test.cpp — the DLQ listing's total: every match of its filters, whatever the
// page (limit, offset) shows.
#include "harness.hpp"
#include "records.hpp"

namespace queen::queues {
namespace {

using testing::Harness;

struct Listed {
    std::vector<DlqEntry> entries;
    std::uint64_t total = 0;
};

Listed list(Harness& h, const std::string& queue, const std::string& group, std::uint64_t limit,
            std::uint64_t offset) {
    Listed out;
    out.total = 12345;  // overwritten
    out.entries = h.read([&](const Tables& t, const store::Txn& txn) {
        return list_dlq(t, txn, queue, group, limit, offset, out.total);
    });
    return out;
}

TEST_CASE("queues: the DLQ listing counts every match of its filters, independent of the page",
          "[queues][dlq][queries]") {
    Harness h;
    // Dead-letter 3 messages of a (queue mode), 2 of a for group g, 1 of b.
    const auto dead_letter = [&](const std::string& queue, const std::string& group, int count) {
        for (int i = 0; i < count; ++i) {
            h.push(queue, "Default", queue + group + std::to_string(i));
        }
        for (int i = 0; i < count; ++i) {
            const PopResult popped = h.pop(queue, 1, group);
            REQUIRE(popped.messages.size() == 1);
            REQUIRE(h.ack(popped.messages[0], popped.lease, AckStatus::dlq, group).dlq);
        }
    };
    const std::string qm(queue_mode_group);
    dead_letter("a", qm, 3);
    dead_letter("b", qm, 1);
    dead_letter("a", "g", 2);  // g reads a from its start: a's first two messages

    CHECK(list(h, "", "", 100, 0).total == 6);
    CHECK(list(h, "", "", 100, 0).entries.size() == 6);
    CHECK(list(h, "a", "", 100, 0).total == 5);
    CHECK(list(h, "b", "", 100, 0).total == 1);
    CHECK(list(h, "a", "g", 100, 0).total == 2);
    CHECK(list(h, "", "g", 100, 0).total == 2);
    CHECK(list(h, "", qm, 100, 0).total == 4);
    // The page does not change the total.
    const Listed page = list(h, "a", "", 2, 1);
    CHECK(page.total == 5);
    REQUIRE(page.entries.size() == 2);
    CHECK(page.entries[0].group == "g");  // newest first: g's two, then the queue mode's
    CHECK(page.entries[1].group == qm);
    const Listed tail = list(h, "a", "", 10, 4);
    CHECK(tail.total == 5);
    CHECK(tail.entries.size() == 1);
    const Listed past = list(h, "a", "", 10, 9);
    CHECK(past.total == 5);
    CHECK(past.entries.empty());
    const Listed none = list(h, "", "", 0, 0);
    CHECK(none.total == 6);
    CHECK(none.entries.empty());
    CHECK(list(h, "a", "", 0, 0).total == 5);
    // Unknown queue or group: nothing, and a total of 0.
    CHECK(list(h, "nope", "", 10, 0).total == 0);
    CHECK(list(h, "a", "nope", 10, 0).total == 0);
    // A record's head says what its full decode says.
    h.read([&](const Tables& t, const store::Txn& txn) -> Result<bool> {
        QUEEN_TRY(auto cursor, txn.cursor(t.dlq));
        QUEEN_TRY(auto entry, cursor.first());
        int seen = 0;
        while (entry) {
            QUEEN_TRY(auto head, detail::decode_dlq_head(entry->value));
            QUEEN_TRY(auto record, detail::decode_dlq(entry->value));
            CHECK(head.queue == record.queue);
            CHECK(head.partition == record.partition);
            CHECK(head.sequence == record.sequence);
            CHECK(head.group == record.group);
            ++seen;
            QUEEN_TRY(entry, cursor.next());
        }
        CHECK(seen == 6);
        return true;
    });
}

}  // namespace
}  // namespace queen::queues
