// engine/tests/ids_test.cpp — message ids come from the log alone (the same on a replay and on
// another replica), and dedupe records of format version 1 answer with complete ids.
#include <string>
#include <vector>

#include "queen/engine/engine.hpp"
#include "queen/store/keys.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace queen::engine {
namespace {

using namespace queen::queues;

Command push(const std::string& partition, const std::vector<std::string>& txids,
             std::uint64_t client_id = 0, std::uint64_t client_seq = 0) {
    Push body;
    for (const std::string& txid : txids) {
        PushItem item;
        item.queue = "q";
        item.partition = partition;
        item.transaction_id = txid;
        item.payload = Bytes{'1'};
        body.items.push_back(item);
    }
    return Command{client_id, client_seq, body};
}

Command pop_all() {
    Pop pop;
    pop.queue = "q";
    pop.batch = 100;
    pop.partitions = 10;
    return Command{0, 0, pop};
}

/// The message ids (as printed) of every push item and popped message in `results`.
std::vector<std::string> ids_of(const std::vector<Bytes>& results) {
    std::vector<std::string> out;
    for (const Bytes& bytes : results) {
        const CommandResult result = decode_result(bytes).value();
        if (const auto* pushed = std::get_if<PushResult>(&result)) {
            for (const PushItemResult& item : pushed->items) {
                out.push_back(format_message_id(item.message_id, item.created_at));
            }
        } else if (const auto* popped = std::get_if<PopResult>(&result)) {
            for (const PoppedMessage& message : popped->messages) {
                out.push_back(format_message_id(message.id, message.created_at));
            }
        }
    }
    return out;
}

TEST_CASE("engine: message ids are the same on a replay and on another replica", "[engine][ids]") {
    std::vector<Bytes> log;
    log.push_back(encode_command(push("a", {"t1", "t2"})));
    log.push_back(encode_command(push("b", {"t3"})));
    log.push_back(encode_command(push("a", {"t1", "t4"})));  // t1: a duplicate
    log.push_back(encode_command(pop_all()));
    log.push_back(encode_command(push("b", {"t5"})));
    log.push_back(encode_command(pop_all()));
    std::vector<Entry> entries;
    for (std::size_t i = 0; i < log.size(); ++i) {
        // Leader stamps: some entries share a millisecond.
        entries.push_back(Entry{LogIndex{i + 1},
                                TimestampMs{1'700'000'000'000 + static_cast<std::int64_t>(i / 2)},
                                log[i]});
    }
    // Replica one applies everything in one batch.
    queen::testing::TempDir one_dir;
    auto one = Engine::open(one_dir.path(), Options{}).value();
    const std::vector<std::string> straight = ids_of(one.apply(entries).value().results);
    // 5 push items, 4 popped messages, 1 push item; the last pop finds every partition leased.
    REQUIRE(straight.size() == 10);
    // Replica two applies entry by entry and restarts in the middle (replaying from its
    // applied index), under other wall clocks: only the entries' stamps count.
    queen::testing::TempDir two_dir;
    std::vector<std::string> stepped;
    {
        auto two = Engine::open(two_dir.path(), Options{}).value();
        for (std::size_t i = 0; i < 3; ++i) {
            const auto more = ids_of(two.apply(std::span(&entries[i], 1)).value().results);
            stepped.insert(stepped.end(), more.begin(), more.end());
        }
    }
    auto two = Engine::open(two_dir.path(), Options{}).value();
    REQUIRE(two.applied_index() == LogIndex{3});
    const auto rest = ids_of(two.apply(std::span(entries).subspan(3)).value().results);
    stepped.insert(stepped.end(), rest.begin(), rest.end());
    REQUIRE(stepped == straight);
    // The duplicate names the first message; the pop prints the pushes' ids.
    CHECK(straight[3] == straight[0]);
    CHECK(straight[5] == straight[0]);  // t1
    CHECK(straight[6] == straight[1]);  // t2
    CHECK(straight[7] == straight[4]);  // t4
    CHECK(straight[8] == straight[2]);  // t3 (partition b after a)
}

TEST_CASE("engine: a dedupe record of format version 1 answers with the messages' createdAt",
          "[engine][ids][dedupe]") {
    queen::testing::TempDir dir;
    auto engine = Engine::open(dir.path(), Options{}).value();
    // Stored by an earlier entry: the message the old record's duplicate names.
    const auto stored =
        engine.apply_commands(std::vector{push("p", {"old"})}, TimestampMs{1'700'000'000'000});
    const PushItemResult old_item = std::get<PushResult>(stored.value().at(0)).items.at(0);
    // Then a client's last entry at t = ...500 pushed "new" and found "old" a duplicate. A
    // binary before format version 2 cached its result without createdAt; write that record.
    constexpr std::uint64_t client_id = 42;
    constexpr std::int64_t entry_ms = 1'700'000'000'500;
    const auto fresh =
        engine.apply_commands(std::vector{push("p", {"new"})}, TimestampMs{entry_ms});
    const PushItemResult new_item = std::get<PushResult>(fresh.value().at(0)).items.at(0);
    Bytes legacy_result{legacy_format_version, 2, 2};  // version 1, PushResult, 2 items
    const auto add_item = [&](std::uint8_t status, std::string_view txid, const MessageId& id) {
        legacy_result.push_back(status);
        legacy_result.push_back(static_cast<Byte>(txid.size()));
        legacy_result.insert(legacy_result.end(), txid.begin(), txid.end());
        ByteWriter writer(legacy_result);
        writer.varint(id.partition.value());
        writer.varint(id.sequence.value());
        for (std::string_view field : {"q", "p", "", ""}) {  // queue, partition, trace, error
            writer.str(field);
        }
    };
    add_item(0, "new", new_item.message_id);
    add_item(1, "old", old_item.message_id);
    {
        Bytes session;
        ByteWriter writer(session);
        writer.u8(1);
        writer.varint(7);  // last seq
        writer.svarint(entry_ms);
        writer.blob(legacy_result);
        auto sessions = engine.env().open_table("e.sessions").value();
        auto txn = engine.env().begin_write().value();
        REQUIRE(txn.put(sessions, store::u64be_key(client_id), session).has_value());
        REQUIRE(txn.commit().has_value());
    }
    // The client retries its entry (same id and seq): the cached answer, completed.
    auto retried = engine.apply_commands(std::vector{push("p", {"new", "old"}, client_id, 7)},
                                         TimestampMs{1'700'000'009'000});
    const PushResult& cached = std::get<PushResult>(retried.value().at(0));
    REQUIRE(cached.items.size() == 2);
    CHECK(cached.items[0].status == PushStatus::queued);
    CHECK(cached.items[0].created_at.value() == entry_ms);
    CHECK(cached.items[1].status == PushStatus::duplicate);
    CHECK(cached.items[1].created_at == old_item.created_at);
    CHECK(format_message_id(cached.items[0].message_id, cached.items[0].created_at) ==
          format_message_id(new_item.message_id, new_item.created_at));
    CHECK(format_message_id(cached.items[1].message_id, cached.items[1].created_at) ==
          format_message_id(old_item.message_id, old_item.created_at));
}

}  // namespace
}  // namespace queen::engine
