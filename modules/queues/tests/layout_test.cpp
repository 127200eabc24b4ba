// queues/tests/layout_test.cpp — the on-disk layout: transaction id keys (canonical UUIDs in 16
// bytes, id first), and the migration of layout 1 data (partition-first "q.txids") on open.
#include <array>
#include <string>
#include <vector>

#include "harness.hpp"
#include "layout.hpp"
#include "messages.hpp"
#include "records.hpp"

namespace queen::queues {
namespace {

using testing::Harness;

TEST_CASE("queues: canonical UUID transaction ids go to 16 bytes and back, others stay text",
          "[queues][layout]") {
    const std::string id = "0190f5a2-7c3b-7d4e-8f60-123456789abc";
    std::array<Byte, 16> bytes{};
    REQUIRE(detail::parse_canonical_uuid(id, bytes));
    CHECK(bytes[0] == 0x01);
    CHECK(bytes[15] == 0xbc);
    std::string back;
    detail::append_canonical_uuid(back, bytes);
    CHECK(back == id);
    for (const std::string other :
         {"0190F5A2-7C3B-7D4E-8F60-123456789ABC",  // uppercase: text
          "0190f5a2-7c3b-7d4e-8f60-123456789ab",   // 35 chars
          "0190f5a2-7c3b-7d4e-8f60-123456789abcd", "0190f5a27c3b7d4e8f60123456789abc",
          "0190f5a2+7c3b-7d4e-8f60-123456789abc", "0190f5a2-7c3b-7d4e-8f60-123456789abg", "",
          "order-1"}) {
        CAPTURE(other);
        CHECK_FALSE(detail::parse_canonical_uuid(other, bytes));
    }
    // Key forms: the UUID id first (25 bytes), any other id after its partition.
    const auto uuid_key = detail::txid_key(PartitionId{7}, id);
    REQUIRE(uuid_key.span().size() == 25);
    CHECK(uuid_key.span()[0] == detail::txid_key_uuid);
    CHECK(uuid_key.span()[1] == 0x01);
    CHECK(uuid_key.span()[24] == 7);
    const auto text_key = detail::txid_key(PartitionId{7}, "order-1");
    REQUIRE(text_key.span().size() == 1 + 8 + 7);
    CHECK(text_key.span()[0] == detail::txid_key_text);
    CHECK(text_key.span()[8] == 7);
    // Same id, other partition: another key; uppercase twin: another key.
    CHECK_FALSE(std::ranges::equal(uuid_key.span(), detail::txid_key(PartitionId{8}, id).span()));
    CHECK_FALSE(std::ranges::equal(
        uuid_key.span(),
        detail::txid_key(PartitionId{7}, "0190F5A2-7C3B-7D4E-8F60-123456789ABC").span()));
    // Values: varint sequences.
    for (const std::uint64_t seq : {std::uint64_t{1}, std::uint64_t{127}, std::uint64_t{128},
                                    std::uint64_t{1} << 40, UINT64_MAX}) {
        const detail::VarintValue value(seq);
        auto decoded = detail::decode_txid_value(value.span());
        REQUIRE(decoded.has_value());
        CHECK(decoded->value() == seq);
    }
    const Byte dangling[] = {0x80};
    CHECK_FALSE(detail::decode_txid_value(dangling).has_value());
}

/// A record's bytes in format 1: without the field its current format added (encoded with it
/// 0, so its last byte) and with format byte 1.
Bytes as_format1(Bytes current) {
    REQUIRE(current.back() == 0);
    current.pop_back();
    current[0] = 1;
    return current;
}

/// Rewrites the harness's data as layout 1 wrote it: every "q.ids" entry moved to "q.txids"
/// under its layout 1 key (partition + id bytes -> u64 LE sequence), every block of "q.blocks"
/// to "q.messages" (partition + first sequence -> u8 2, u32 LE count, records), the partition
/// records and the meta record in format 1. With `leave` > 0, the first `leave` ids stay in
/// "q.ids" and the meta record and the marker are those of a migration to the current layout a
/// crash interrupted after moving them.
void downgrade_to_layout1(Harness& h, std::size_t leave = 0) {
    const Tables tables = h.state->tables();
    h.state.reset();
    auto old_ids = h.env->open_table(detail::layout1_ids_table);
    auto old_messages = h.env->open_table(detail::layout2_messages_table);
    REQUIRE(old_ids.has_value());
    REQUIRE(old_messages.has_value());
    auto txn = h.env->begin_write();
    REQUIRE(txn.has_value());
    const auto entries_of = [&](store::Table table) {
        std::vector<std::pair<Bytes, Bytes>> entries;
        auto cursor = txn->cursor(table).value();
        for (auto entry = cursor.first().value(); entry; entry = cursor.next().value()) {
            entries.emplace_back(Bytes(entry->key.begin(), entry->key.end()),
                                 Bytes(entry->value.begin(), entry->value.end()));
        }
        return entries;
    };
    const auto ids = entries_of(tables.transaction_ids);
    REQUIRE(ids.size() > leave);
    for (std::size_t i = leave; i < ids.size(); ++i) {
        const auto& [key, value] = ids[i];
        PartitionId pid;
        std::string id;
        if (key[0] == detail::txid_key_uuid) {
            std::array<Byte, 16> uuid{};
            std::copy(key.begin() + 1, key.begin() + 17, uuid.begin());
            detail::append_canonical_uuid(id, uuid);
            pid = PartitionId{store::load_be<std::uint64_t>(key.data() + 17)};
        } else {
            pid = PartitionId{store::load_be<std::uint64_t>(key.data() + 1)};
            id.assign(key.begin() + 9, key.end());
        }
        const Sequence seq = detail::decode_txid_value(value).value();
        REQUIRE(
            txn->put(*old_ids, detail::txid_key_v1(pid, id).span(), detail::encode_u64(seq.value()))
                .has_value());
        REQUIRE(txn->del(tables.transaction_ids, key).value());
    }
    for (const auto& [key, value] : entries_of(tables.messages)) {
        const auto header = detail::parse_block_header(value).value();
        Bytes old(5);
        old[0] = 2;
        store_le<std::uint32_t>(old.data() + 1, header.count);
        old.insert(old.end(), value.begin() + static_cast<std::ptrdiff_t>(header.records_at),
                   value.end());
        REQUIRE(
            txn->put(*old_messages, detail::message_key(header.partition, header.first).span(), old)
                .has_value());
        REQUIRE(txn->del(tables.messages, key).value());
    }
    REQUIRE(txn->clear(tables.message_index).has_value());
    for (const auto& [key, value] : entries_of(tables.partitions)) {
        auto record = detail::decode_partition(value).value();
        record.tail = 0;
        REQUIRE(txn->put(tables.partitions, key, as_format1(detail::encode(record))).has_value());
    }
    const auto state_key = as_bytes(std::string_view("state"));
    auto meta = detail::decode_meta(txn->get(tables.meta, state_key).value().value()).value();
    if (leave == 0) {
        meta.next_position = 0;
        REQUIRE(txn->put(tables.meta, state_key, as_format1(detail::encode(meta))).has_value());
    } else {
        meta.next_position = 1;
        REQUIRE(txn->put(tables.meta, state_key, detail::encode(meta)).has_value());
        REQUIRE(txn->put(tables.meta, as_bytes(detail::layout_migrating_key), as_bytes("1"))
                    .has_value());
    }
    REQUIRE(txn->commit().has_value());
    h.env.reset();
}

std::uint64_t count_entries(Harness& h, std::string_view table) {
    auto opened = h.env->open_table(table);
    REQUIRE(opened.has_value());
    auto txn = h.env->begin_read().value();
    auto cursor = txn.cursor(*opened).value();
    std::uint64_t n = 0;
    for (auto entry = cursor.first().value(); entry; entry = cursor.next().value()) {
        ++n;
    }
    return n;
}

/// Pushes ids of both kinds to two partitions; returns the ids.
std::vector<std::pair<std::string, std::string>> fill(Harness& h) {
    std::vector<std::pair<std::string, std::string>> ids;  // (partition, id)
    for (int i = 0; i < 40; ++i) {
        const std::string partition = i % 2 == 0 ? "p0" : "p1";
        char uuid[40];
        std::snprintf(uuid, sizeof uuid, "0190f5a2-7c3b-7d4e-8f60-%012x", i);
        const std::string id = i % 4 == 3 ? "text-" + std::to_string(i) : std::string(uuid);
        REQUIRE(h.push("orders", partition, id).items[0].status == PushStatus::queued);
        ids.emplace_back(partition, id);
    }
    return ids;
}

/// Checks the data is in the current layout with every id of `ids` found; `is_unconsumed`: the
/// messages were never popped (they are popped and acked here).
void check_migrated(Harness& h, const std::vector<std::pair<std::string, std::string>>& ids,
                    bool is_unconsumed = true) {
    CHECK(count_entries(h, detail::layout1_ids_table) == 0);
    CHECK(count_entries(h, detail::layout2_messages_table) == 0);
    CHECK(count_entries(h, "q.ids") == ids.size());
    {
        auto txn = h.env->begin_read().value();
        auto meta = txn.get(h.state->tables().meta, as_bytes(std::string_view("state"))).value();
        REQUIRE(meta.has_value());
        CHECK((*meta)[0] == detail::layout_version);
        CHECK_FALSE(txn.get(h.state->tables().meta, as_bytes(detail::layout_migrating_key))
                        .value()
                        .has_value());
    }
    // Every id still dedupes, and the messages are still found by id (acks).
    for (const auto& [partition, id] : ids) {
        CAPTURE(partition, id);
        CHECK(h.push("orders", partition, id).items[0].status == PushStatus::duplicate);
    }
    auto popped = h.pop("orders", 100, std::string(queue_mode_group), 2);
    REQUIRE(popped.messages.size() == (is_unconsumed ? ids.size() : 0));
    for (const auto& message : popped.messages) {
        CHECK(h.ack(message, popped.lease).error.empty());
    }
}

TEST_CASE("queues: layout 1 transaction ids are migrated on open", "[queues][layout]") {
    Harness h;
    const auto ids = fill(h);
    downgrade_to_layout1(h);
    h.open();
    const auto migrated = h.state->migration();
    REQUIRE(migrated.has_value());
    CHECK(migrated->from == 1);
    CHECK(migrated->to == detail::layout_version);
    CHECK(migrated->ids_moved == ids.size());
    CHECK(migrated->blocks_moved > 0);
    check_migrated(h, ids);
    // Opening again finds nothing to do.
    h.reopen();
    CHECK_FALSE(h.state->migration().has_value());
    check_migrated(h, ids, false);
}

TEST_CASE("queues: a migration a crash interrupted resumes on the next open", "[queues][layout]") {
    Harness h;
    const auto ids = fill(h);
    downgrade_to_layout1(h, 15);  // 15 ids already moved, the marker still there
    h.open();
    check_migrated(h, ids);
}

TEST_CASE("queues: data of a newer layout is refused with the versions named", "[queues][layout]") {
    Harness h;
    fill(h);
    const Tables tables = h.state->tables();
    h.state.reset();
    {
        auto txn = h.env->begin_write().value();
        Bytes meta = [&] {
            auto raw = txn.get(tables.meta, as_bytes(std::string_view("state"))).value();
            return Bytes(raw->begin(), raw->end());
        }();
        meta[0] = detail::layout_version + 1;
        REQUIRE(txn.put(tables.meta, as_bytes(std::string_view("state")), meta).has_value());
        REQUIRE(txn.commit().has_value());
    }
    auto opened = QueueState::open(*h.env, Options{});
    REQUIRE_FALSE(opened.has_value());
    CHECK(opened.error().is(queen::Errc::corruption));
    CHECK_THAT(
        opened.error().message(),
        Catch::Matchers::Contains("newer Queen") &&
            Catch::Matchers::Contains("layout " + std::to_string(detail::layout_version + 1)));
}

}  // namespace
}  // namespace queen::queues

namespace queen::queues {
namespace {

TEST_CASE("queues: deleting a queue removes its transaction ids of both key forms",
          "[queues][layout]") {
    Harness h;
    const auto ids = fill(h);
    REQUIRE(h.push("kept", "p0", "0190f5a2-7c3b-7d4e-8f60-ffffffffffff").items[0].status ==
            PushStatus::queued);
    REQUIRE(count_entries(h, "q.ids") == ids.size() + 1);
    REQUIRE(h.run(DeleteQueue{"orders"}).existed);
    CHECK(count_entries(h, "q.ids") == 1);
    // The ids are free again in a queue of the same name.
    for (const auto& [partition, id] : ids) {
        CHECK(h.push("orders", partition, id).items[0].status == PushStatus::queued);
    }
}

}  // namespace
}  // namespace queen::queues
