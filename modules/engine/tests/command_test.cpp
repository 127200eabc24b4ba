// engine/tests/command_test.cpp — the command and result codec: round trips and bad input.
#include "queen/engine/command.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "queen/core/hex.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace queen::engine {
namespace {

using namespace queen::queues;

std::string random_text(Rng& rng) {
    std::string out(rng.below(12), 'a');
    for (auto& c : out) {
        c = static_cast<char>(rng.below(256));
    }
    return out;
}

PushItem random_item(Rng& rng) {
    PushItem item;
    item.queue = random_text(rng);
    item.partition = random_text(rng);
    item.transaction_id = random_text(rng);
    item.trace_id = random_text(rng);
    item.producer_sub = random_text(rng);
    const std::string payload = random_text(rng);
    item.payload.assign(payload.begin(), payload.end());
    item.is_encrypted = rng.below(2) == 1;
    return item;
}

AckItem random_ack(Rng& rng) {
    AckItem item;
    item.partition = PartitionId{rng.next()};
    item.transaction_id = random_text(rng);
    item.status = static_cast<AckStatus>(rng.below(5));
    item.has_error = rng.below(2) == 1;
    item.error = random_text(rng);
    item.lease = LeaseId{rng.next()};
    item.group = random_text(rng);
    return item;
}

TransactionOp random_op(Rng& rng) {
    using Kind = TransactionOp::Kind;
    TransactionOp op;
    op.kind = static_cast<Kind>(rng.below(static_cast<std::uint64_t>(transaction_op_kind_max) + 1));
    const std::string value = random_text(rng);
    switch (op.kind) {
        case Kind::push:
            op.push = random_item(rng);
            op.timer.at = TimestampMs{static_cast<std::int64_t>(rng.below(3))};
            op.timer.delay_ms = static_cast<std::int64_t>(rng.below(3));
            break;
        case Kind::ack: op.ack = random_ack(rng); break;
        case Kind::kv_set:
        case Kind::kv_delete:
        case Kind::kv_check:
            op.kv =
                KvOp{random_text(rng), random_text(rng), Bytes(value.begin(), value.end()),
                     rng.below(2) == 1 ? std::optional<std::uint64_t>(rng.next()) : std::nullopt,
                     static_cast<std::int64_t>(rng.next())};
            break;
        case Kind::timer_set:
            op.timer = TimerOp{random_text(rng),
                               TimestampMs{static_cast<std::int64_t>(rng.next())},
                               -static_cast<std::int64_t>(rng.below(9)),
                               static_cast<std::int64_t>(rng.below(1000)),
                               TimestampMs{static_cast<std::int64_t>(rng.below(1000))},
                               rng.below(2) == 1};
            op.push = random_item(rng);
            break;
        case Kind::timer_cancel: op.timer.id = random_text(rng); break;
        case Kind::lock_release:
            op.lock = locks::Guard{random_text(rng), FencingToken{rng.next()}};
            break;
    }
    if (rng.below(3) == 0) {
        op.guard = locks::Guard{random_text(rng), FencingToken{rng.next()}};
    }
    return op;
}

CommandBody random_body(Rng& rng) {
    switch (rng.below(21)) {
        case 20: {
            StreamAdmin a;
            a.op = rng.below(2) == 0 ? StreamAdmin::Op::clear : StreamAdmin::Op::remove;
            a.name = random_text(rng);
            return a;
        }
        case 19: {
            StreamCycle c;
            c.query_id = random_text(rng);
            c.epoch = rng.next();
            c.partition = PartitionId{rng.next()};
            c.state_ops.push_back({StreamStateOp::Kind::remove, random_text(rng), {}});
            c.state_ops.push_back({StreamStateOp::Kind::upsert, random_text(rng), {'1'}});
            PushItem item;
            item.queue = random_text(rng);
            c.push_items.push_back(item);
            if (rng.below(2) == 1) {
                AckItem ack;
                ack.transaction_id = random_text(rng);
                c.ack = ack;
            }
            c.release_lease = rng.below(2) == 1;
            return c;
        }
        case 18: {
            StreamRegister r;
            r.query.name = random_text(rng);
            r.query.source_queue = random_text(rng);
            r.query.sink_queue = random_text(rng);
            r.query.config_hash = random_text(rng);
            r.query.reset = rng.below(2) == 1;
            r.query.new_query_id = random_text(rng);
            return r;
        }
        case 15: {
            LockCommand c;
            c.op = rng.below(2) == 0 ? LockCommand::Op::acquire : LockCommand::Op::renew;
            c.name = random_text(rng);
            c.owner = random_text(rng);
            c.token = FencingToken{rng.next()};
            c.ttl_ms = static_cast<std::int64_t>(rng.next());
            return c;
        }
        case 16: return Due{static_cast<std::uint32_t>(rng.next())};
        case 0: {
            ConfigureQueue c{random_text(rng), random_text(rng), random_text(rng), {}};
            c.options.lease_time_s = static_cast<std::int64_t>(rng.next());
            c.options.is_retention_enabled = true;
            c.options.max_wait_time_s = -5;
            return c;
        }
        case 1: {
            Push p;
            for (std::uint64_t i = rng.below(4); i > 0; --i) {
                p.items.push_back(random_item(rng));
            }
            return p;
        }
        case 2: {
            Pop p;
            p.queue = random_text(rng);
            p.has_partition = rng.below(2) == 1;
            p.partition = random_text(rng);
            p.group = random_text(rng);
            p.batch = static_cast<std::uint32_t>(rng.next());
            p.partitions = static_cast<std::uint32_t>(rng.next());
            p.auto_ack = true;
            p.subscription_mode = SubscriptionMode::new_only;
            p.subscription_from = SubscriptionFrom::timestamp;
            p.subscription_from_ms = TimestampMs{-static_cast<std::int64_t>(rng.below(1000))};
            p.namespace_name = random_text(rng);
            p.task = random_text(rng);
            return p;
        }
        case 3: {
            Ack a;
            for (std::uint64_t i = rng.below(4); i > 0; --i) {
                a.items.push_back(random_ack(rng));
            }
            return a;
        }
        case 4: return ExtendLease{LeaseId{rng.next()}, static_cast<std::int64_t>(rng.next())};
        case 5: {
            Transaction t;
            for (std::uint64_t i = rng.below(4); i > 0; --i) {
                t.ops.push_back(random_op(rng));
            }
            if (rng.below(2) == 1) {
                queues::Pop next;
                next.queue = random_text(rng);
                next.has_partition = rng.below(2) == 1;
                next.partition = random_text(rng);
                next.batch = static_cast<std::uint32_t>(rng.below(1000));
                t.next = next;
            }
            return t;
        }
        case 6: return DeleteQueue{random_text(rng)};
        case 7: return DeleteGroup{random_text(rng), random_text(rng), rng.below(2) == 1};
        case 8: return UpdateSubscription{random_text(rng), TimestampMs{123}};
        case 9: return SeekGroup{random_text(rng), random_text(rng), true, TimestampMs{-1}};
        case 10: return SeekPartition{random_text(rng), random_text(rng), random_text(rng)};
        case 11: return SetMaintenance{SetMaintenance::Mode::pop, true};
        case 12: return Sweep{static_cast<std::uint32_t>(rng.next())};
        case 13: return DeleteMessage{PartitionId{rng.next()}, random_text(rng)};
        case 14: {
            // Any sizes decode (apply checks the limits), an empty key or value included.
            const std::string key = random_text(rng);
            const std::string value = random_text(rng);
            return PutSystem{key, Bytes(value.begin(), value.end())};
        }
        default: {
            AddTrace t;
            t.partition = PartitionId{7};
            t.transaction_id = random_text(rng);
            t.names = {random_text(rng), random_text(rng)};
            t.data = {1, 2, 3};
            return t;
        }
    }
}

TEST_CASE("engine: every command round-trips through the codec", "[engine][codec]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    for (int i = 0; i < 2000; ++i) {
        Command command{rng.next(), rng.next(), random_body(rng)};
        const Bytes encoded = encode_command(command);
        REQUIRE(encoded[0] == command_format_version);
        // The encoder sizes its buffer exactly once (libstdc++ reserves exactly what is asked).
        REQUIRE(encoded.capacity() == encoded.size());
        auto decoded = decode_command(encoded);
        REQUIRE(decoded.has_value());
        REQUIRE(decoded->client_id == command.client_id);
        REQUIRE(decoded->client_seq == command.client_seq);
        REQUIRE(decoded->body.index() == command.body.index());
        // Encoding is canonical: re-encoding the decoded command gives the same bytes.
        REQUIRE(encode_command(*decoded) == encoded);
        // encode_command_into appends the same bytes after what `out` holds, growing it once.
        Bytes framed{0xAB, 0xCD, 0xEF};
        encode_command_into(command, framed);
        REQUIRE(framed.size() == 3 + encoded.size());
        REQUIRE(framed.capacity() == framed.size());
        REQUIRE(framed[0] == 0xAB);
        REQUIRE(framed[2] == 0xEF);
        REQUIRE(std::equal(encoded.begin(), encoded.end(), framed.begin() + 3));
        // Every strict prefix fails to decode (no silent truncation).
        const std::size_t cut = static_cast<std::size_t>(rng.below(encoded.size()));
        REQUIRE_FALSE(decode_command(ByteSpan(encoded.data(), cut)).has_value());
    }
}

TEST_CASE("engine: decode_command_into a reused scratch per type equals a fresh decode",
          "[engine][codec]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    std::array<Command, std::variant_size_v<CommandBody>> scratch;
    Command shared;  // one scratch for every type too
    for (int i = 0; i < 3000; ++i) {
        Command command{rng.next(), rng.next(), random_body(rng)};
        const Bytes encoded = encode_command(command);
        const auto type = command_index(encoded);
        REQUIRE(type == command.body.index());
        Command& reused = scratch[*type];
        REQUIRE(decode_command_into(encoded, reused).has_value());
        // Nothing of the command decoded there before survives.
        REQUIRE(encode_command(reused) == encoded);
        if (const auto* transaction = std::get_if<Transaction>(&reused.body)) {
            // Not encoded, so not compared above: the members an op's kind does not select.
            using Kind = TransactionOp::Kind;
            for (const TransactionOp& op : transaction->ops) {
                if (op.kind != Kind::ack) {
                    CHECK(op.ack.transaction_id.empty());
                    CHECK(op.ack.partition == PartitionId{});
                    CHECK(op.ack.error.empty());
                    CHECK(op.ack.group == queue_mode_group);
                }
                if (op.kind != Kind::push && op.kind != Kind::timer_set) {
                    CHECK(op.push.queue.empty());
                    CHECK(op.push.transaction_id.empty());
                    CHECK(op.push.payload.empty());
                    CHECK(op.push.partition == default_partition_name);
                }
                if (op.kind != Kind::kv_set && op.kind != Kind::kv_delete &&
                    op.kind != Kind::kv_check) {
                    CHECK(op.kv.bucket.empty());
                    CHECK(op.kv.value.empty());
                    CHECK_FALSE(op.kv.expected_version.has_value());
                }
                if (op.kind != Kind::timer_set && op.kind != Kind::timer_cancel) {
                    CHECK(op.timer.id.empty());
                    CHECK(op.timer.interval_ms == 0);
                }
                if (op.kind != Kind::lock_release) {
                    CHECK(op.lock.name.empty());
                }
            }
        }
        REQUIRE(decode_command_into(encoded, shared).has_value());
        REQUIRE(encode_command(shared) == encoded);
        // A failed decode leaves a valid command that the next decode overwrites.
        const std::size_t cut = static_cast<std::size_t>(rng.below(encoded.size()));
        REQUIRE_FALSE(decode_command_into(ByteSpan(encoded.data(), cut), reused).has_value());
    }
    REQUIRE_FALSE(command_index(ByteSpan{}).has_value());
    const Bytes bad_type{command_format_version, 0, 0, 0};
    REQUIRE_FALSE(command_index(bad_type).has_value());

    // Same-type decodes keep the storage of the scratch's strings and vectors.
    Push big;
    PushItem item;
    item.queue = "q";
    item.transaction_id = std::string(100, 't');
    item.payload = Bytes(10'000, 'x');
    big.items.assign(3, item);
    Push small;
    item.transaction_id = "t";
    item.payload = Bytes(10, 'y');
    small.items.assign(1, item);
    Command reused;
    REQUIRE(decode_command_into(encode_command(Command{1, 1, big}), reused).has_value());
    const Byte* payload_storage = std::get<Push>(reused.body).items[0].payload.data();
    REQUIRE(decode_command_into(encode_command(Command{1, 2, small}), reused).has_value());
    const Push& decoded = std::get<Push>(reused.body);
    REQUIRE(decoded.items.size() == 1);
    CHECK(decoded.items[0].payload == Bytes(10, 'y'));
    CHECK(decoded.items[0].transaction_id == "t");
    CHECK(decoded.items[0].payload.data() == payload_storage);
    CHECK(decoded.items.capacity() >= 3);
}

TEST_CASE("engine: results round-trip through the codec", "[engine][codec]") {
    PushResult push;
    push.items.push_back({PushStatus::duplicate, "t", MessageId{PartitionId{3}, Sequence{9}},
                          TimestampMs{1'700'000'000'123}, "q", "p", "trace", ""});
    PopResult pop;
    pop.outcome = PopResult::Outcome::delivered;
    pop.lease = LeaseId{5};
    pop.messages.push_back({MessageId{PartitionId{1}, Sequence{2}},
                            "tx",
                            "",
                            "sub",
                            {'{', '}'},
                            true,
                            TimestampMs{77},
                            "Default",
                            2});
    TransactionResult tx;
    tx.error = "Message not found: x";
    tx.results.push_back(
        {TransactionOp::Kind::ack, true, "x", {}, TimestampMs{0}, "", true, "", 0, false, "", {}});
    tx.results.push_back({TransactionOp::Kind::push,
                          true,
                          "y",
                          MessageId{PartitionId{4}, Sequence{1}},
                          TimestampMs{1'700'000'000'456},
                          "q",
                          false,
                          "",
                          0,
                          false,
                          "",
                          {}});
    TransactionOpResult kv_result;
    kv_result.kind = TransactionOp::Kind::kv_set;
    kv_result.version = 42;
    kv_result.timer_id = "t";
    kv_result.due_at = TimestampMs{7};
    tx.results.push_back(kv_result);
    tx.failure = TransactionFailure::conflict;
    tx.failed_op = 3;
    LockResult lock{locks::Status::held,
                    locks::Grant{"L", "owner", FencingToken{9}, TimestampMs{1}, TimestampMs{2}},
                    "held"};
    SeekPartitionResult seek{true, true, MessageId{PartitionId{5}, Sequence{8}}, TimestampMs{99}};
    for (const CommandResult& result :
         {CommandResult{lock}, CommandResult{DueResult{1, 2, 3, 4, 5, 6, false}},
          CommandResult{StreamAdminResult{
              streams::WriteResult{streams::Status::unknown_query, true, "no such query"}, "q-1",
              7}}}) {
        const Bytes encoded = encode_result(result);
        auto decoded = decode_result(encoded);
        REQUIRE(decoded.has_value());
        REQUIRE(decoded->index() == result.index());
        REQUIRE(encode_result(*decoded) == encoded);
    }
    {
        auto decoded = decode_result(encode_result(CommandResult{tx})).value();
        const auto& back = std::get<TransactionResult>(decoded);
        CHECK(back.failure == TransactionFailure::conflict);
        CHECK(back.failed_op == 3);
        CHECK(back.results.at(2).version == 42);
        CHECK(back.results.at(2).due_at == TimestampMs{7});
        CHECK_FALSE(back.next.has_value());
    }
    {
        TransactionResult looped;
        looped.success = true;
        looped.next = PopResult{};
        looped.next->queue = "jobs";
        looped.next->lease = LeaseId{77};
        looped.next->messages.emplace_back().transaction_id = "m1";
        auto decoded = decode_result(encode_result(CommandResult{looped})).value();
        const auto& back = std::get<TransactionResult>(decoded);
        REQUIRE(back.next.has_value());
        CHECK(back.next->lease == LeaseId{77});
        CHECK(back.next->messages.at(0).transaction_id == "m1");
    }
    for (const CommandResult& result :
         {CommandResult{push}, CommandResult{pop}, CommandResult{tx}, CommandResult{seek},
          CommandResult{ErrorResult{ErrorResult::Code::stale_request, "old"}},
          CommandResult{SweepResult{1, 2, 3, 4, false}}, CommandResult{PutSystemResult{true}},
          CommandResult{PutSystemResult{false}}}) {
        const Bytes encoded = encode_result(result);
        REQUIRE(encoded.capacity() == encoded.size());  // sized exactly once
        auto decoded = decode_result(encoded);
        REQUIRE(decoded.has_value());
        REQUIRE(decoded->index() == result.index());
        REQUIRE(encode_result(*decoded) == encoded);
    }
    auto popped = decode_result(encode_result(CommandResult{pop})).value();
    const auto& m = std::get<PopResult>(popped).messages.at(0);
    REQUIRE(m.transaction_id == "tx");
    REQUIRE(m.is_encrypted);
    REQUIRE(m.created_at.value() == 77);
    REQUIRE(m.retry_count == 2);
    auto pushed = decode_result(encode_result(CommandResult{push})).value();
    REQUIRE(std::get<PushResult>(pushed).items.at(0).created_at.value() == 1'700'000'000'123);
    auto committed = decode_result(encode_result(CommandResult{tx})).value();
    REQUIRE(std::get<TransactionResult>(committed).results.at(1).created_at.value() ==
            1'700'000'000'456);
    auto sought = decode_result(encode_result(CommandResult{seek})).value();
    REQUIRE(std::get<SeekPartitionResult>(sought).cursor_created_at.value() == 99);
}

TEST_CASE("engine: PutSystem and its result, byte by byte", "[engine][codec]") {
    CHECK(command_type(PutSystem{}) == CommandType::put_system);
    CHECK(static_cast<int>(CommandType::put_system) == 16);
    CHECK(command_name(CommandType::put_system) == "put_system");
    const Command command{3, 4, PutSystem{"ab", Bytes{0x00, 0xff}}};
    // version, client_id, client_seq, type, key str, value bytes.
    const Bytes expected{command_format_version, 3, 4, 16, 2, 'a', 'b', 2, 0x00, 0xff};
    REQUIRE(encode_command(command) == expected);
    REQUIRE(command_index(expected) == std::optional<std::size_t>{15});
    auto decoded = decode_command(expected);
    REQUIRE(decoded.has_value());
    const auto& put = std::get<PutSystem>(decoded->body);
    CHECK(put.key == "ab");
    CHECK(put.value == Bytes{0x00, 0xff});
    // Sizes outside the limits decode (apply answers ErrorResult{invalid}).
    const Command oversized{0, 0,
                            PutSystem{std::string(system_key_bytes_max + 1, 'k'),
                                      Bytes(system_value_bytes_max + 1, 'v')}};
    auto big = decode_command(encode_command(oversized));
    REQUIRE(big.has_value());
    CHECK(std::get<PutSystem>(big->body).value.size() == system_value_bytes_max + 1);
    const Bytes empty{command_format_version, 0, 0, 16, 0, 0};
    REQUIRE(encode_command(Command{0, 0, PutSystem{}}) == empty);
    REQUIRE(decode_command(empty).has_value());
    // Result: version, index 16, replaced bool.
    const Bytes result{result_format_version, 16, 1};
    REQUIRE(encode_result(CommandResult{PutSystemResult{true}}) == result);
    auto answer = decode_result(result);
    REQUIRE(answer.has_value());
    CHECK(std::get<PutSystemResult>(*answer).replaced);
    // Version 1 had no type 16: such bytes are not a version 1 PutSystem.
    Bytes as_v1 = expected;
    as_v1[0] = legacy_format_version;
    CHECK_FALSE(decode_command(as_v1).has_value());
    CHECK_FALSE(command_index(as_v1).has_value());
    CHECK_FALSE(decode_result(Bytes{legacy_format_version, 16, 1}).has_value());
    // Nothing past the last type decodes.
    CHECK_FALSE(decode_command(Bytes{command_format_version, 0, 0, 17, 0, 0}).has_value());
    CHECK_FALSE(decode_result(Bytes{result_format_version, 17, 1}).has_value());
    // A bool other than 0/1 in the result is rejected.
    CHECK_FALSE(decode_result(Bytes{result_format_version, 16, 2}).has_value());
}

TEST_CASE("engine: format version 1 commands and results still decode", "[engine][codec]") {
    // A version 1 Pop (as the log of an older binary holds it): no namespace or task.
    const Bytes pop_v1{1, 0, 0, 3, 1, 'q', 0, 0, 1, 'g', 10, 1, 0, 0, 0, 0};
    auto pop = decode_command(pop_v1);
    REQUIRE(pop.has_value());
    const Pop& decoded = std::get<Pop>(pop->body);
    CHECK(decoded.queue == "q");
    CHECK(decoded.group == "g");
    CHECK(decoded.batch == 10);
    CHECK(decoded.namespace_name.empty());
    CHECK(decoded.task.empty());
    REQUIRE(command_index(pop_v1) == std::optional<std::size_t>{2});
    // Re-encoded, it is a version 2 command with empty names, and decodes to the same.
    const Bytes again = encode_command(*pop);
    REQUIRE(again[0] == command_format_version);
    REQUIRE(again.size() == pop_v1.size() + 2);
    REQUIRE(encode_command(decode_command(again).value()) == again);
    // The version 2 bytes are not read as version 1 (and the other way round).
    Bytes as_v1 = again;
    as_v1[0] = legacy_format_version;
    REQUIRE_FALSE(decode_command(as_v1).has_value());
    Bytes as_v2 = pop_v1;
    as_v2[0] = command_format_version;
    REQUIRE_FALSE(decode_command(as_v2).has_value());

    // A version 1 PushResult (a client dedupe record of an older binary): no createdAt.
    const Bytes push_v1{1, 2, 1, 1, 1, 't', 3, 9, 1, 'q', 1, 'p', 0, 0};
    auto push = decode_result(push_v1);
    REQUIRE(push.has_value());
    const PushItemResult& item = std::get<PushResult>(*push).items.at(0);
    CHECK(item.status == PushStatus::duplicate);
    CHECK(item.message_id == MessageId{PartitionId{3}, Sequence{9}});
    CHECK(item.created_at.value() == 0);
    CHECK(item.queue == "q");
    CHECK(item.partition == "p");
    Bytes push_as_v2 = push_v1;
    push_as_v2[0] = result_format_version;
    REQUIRE_FALSE(decode_result(push_as_v2).has_value());
}

TEST_CASE("engine: format version 3 transactions decode without a next pop", "[engine][codec]") {
    // Version 4 appended the optional next pop: a version 3 transaction is a version 4 one
    // without its last byte (the absent optional's 0).
    Transaction plain;
    plain.ops.emplace_back().push.queue = "q";
    Bytes v3 = encode_command(Command{1, 2, plain});
    REQUIRE(v3.back() == 0);
    v3.pop_back();
    v3[0] = 3;
    Transaction looped = plain;
    looped.next = Pop{};
    looped.next->queue = "jobs";
    Command scratch;
    REQUIRE(decode_command_into(encode_command(Command{1, 2, looped}), scratch).has_value());
    REQUIRE(std::get<Transaction>(scratch.body).next.has_value());
    // Decoded in place over a transaction that had one, nothing of it stays.
    REQUIRE(decode_command_into(v3, scratch).has_value());
    const Transaction& back = std::get<Transaction>(scratch.body);
    CHECK_FALSE(back.next.has_value());
    REQUIRE(back.ops.size() == 1);
    CHECK(back.ops[0].push.queue == "q");
    // Version 3 bytes with a trailing byte are refused.
    v3.push_back(0);
    CHECK_FALSE(decode_command(v3).has_value());
}

TEST_CASE("engine: malformed commands are rejected with the reason", "[engine][codec]") {
    REQUIRE_FALSE(decode_command({}).has_value());
    const Bytes wrong_version{9, 0, 0, 2, 0};
    auto e = decode_command(wrong_version);
    REQUIRE_FALSE(e.has_value());
    REQUIRE(e.error().context.find("version") != std::string::npos);
    const Bytes unknown_type{command_format_version, 0, 0, 99};
    REQUIRE_FALSE(decode_command(unknown_type).has_value());
    // A bool byte of 2 and an enum past its range.
    Bytes push = encode_command(Command{0, 0, Push{{PushItem{}}}});
    push.back() = 2;
    REQUIRE_FALSE(decode_command(push).has_value());
    Bytes trailing = encode_command(Command{0, 0, Sweep{}});
    trailing.push_back(0);
    REQUIRE_FALSE(decode_command(trailing).has_value());
    // Varints must be in their shortest form (one encoding per command).
    const Bytes padded{command_format_version, 0x80, 0x00, 0, 13, 1};
    REQUIRE_FALSE(decode_command(padded).has_value());
    // A huge element count cannot make the decoder allocate.
    const Bytes huge{command_format_version, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0x0f};
    REQUIRE_FALSE(decode_command(huge).has_value());
}

TEST_CASE("engine: the fuzzer seed corpus decodes", "[engine][codec]") {
    const std::filesystem::path corpus = QUEEN_ENGINE_CORPUS_DIR;
    int decoded = 0;
    int legacy = 0;
    for (const auto& file : std::filesystem::directory_iterator(corpus)) {
        std::ifstream in(file.path(), std::ios::binary);
        const Bytes bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        INFO(file.path().filename().string());
        REQUIRE_FALSE(bytes.empty());
        const bool is_legacy = bytes[0] == legacy_format_version;
        const bool is_current = bytes[0] == command_format_version;
        legacy += is_legacy ? 1 : 0;
        if (file.path().filename().string().rfind("result_", 0) == 0) {
            auto result = decode_result(bytes);
            REQUIRE(result.has_value());
            if (is_current) {
                REQUIRE(encode_result(*result) == bytes);
            }
        } else {
            auto command = decode_command(bytes);
            if (!command) {
                FAIL(command.error().message());
            }
            if (!is_current) {
                // Older seeds re-encode as the current version, which is canonical in turn.
                const Bytes again = encode_command(*command);
                REQUIRE(again[0] == command_format_version);
                REQUIRE(encode_command(decode_command(again).value()) == again);
            } else {
                REQUIRE(encode_command(*command) == bytes);
            }
        }
        ++decoded;
    }
    REQUIRE(decoded >= 18);
    REQUIRE(legacy >= 10);  // the seeds written before version 2
}

// Writes the seeds of format version 4 (a transaction with a next pop) into the corpus; run by
// hand when the format changes: engine_tests "[.write-corpus]". The seeds of earlier versions
// stay as they were written (transaction_v3.bin, lock.bin, due.bin: version 3).
TEST_CASE("engine: write the version 4 corpus seeds", "[.write-corpus]") {
    const std::filesystem::path corpus = QUEEN_ENGINE_CORPUS_DIR;
    const auto write = [&](const std::string& name, const Bytes& bytes) {
        std::ofstream out(corpus / name, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()),
                  static_cast<std::streamsize>(bytes.size()));
    };
    using Kind = TransactionOp::Kind;
    Transaction t;
    TransactionOp ack;
    ack.kind = Kind::ack;
    ack.ack.partition = PartitionId{3};
    ack.ack.transaction_id = "m1";
    ack.ack.lease = LeaseId{12};
    t.ops.push_back(ack);
    TransactionOp set;
    set.kind = Kind::kv_set;
    set.kv = KvOp{"b", "k", {'2'}, 7, 0};
    t.ops.push_back(set);
    t.next = Pop{};
    t.next->queue = "jobs";
    t.next->has_partition = true;
    t.next->partition = "p1";
    t.next->batch = 10;
    write("transaction_next_v4.bin", encode_command(Command{3, 4, t}));
}

TEST_CASE("engine: configure commands and results written before the option table decode",
          "[engine][codec]") {
    // Captured from the codec as it was before the queue options came from one table (commit
    // d16b181); the two results' bools (table order: deadLetterQueue, dlqAfterMaxRetries,
    // retentionEnabled, encryptionEnabled) tell every pair of them apart.
    QueueOptions o;
    o.lease_time_s = 42;
    o.retry_limit = 7;
    o.retry_delay_ms = 250;
    o.max_size = 5000;
    o.ttl_s = 900;
    o.priority = -4;
    o.is_dead_letter_queue = true;
    o.is_dlq_after_max_retries = false;
    o.delayed_processing_s = 2;
    o.window_buffer_s = 3;
    o.is_retention_enabled = true;
    o.retention_s = 600;
    o.completed_retention_s = 60;
    o.is_encryption_enabled = false;
    o.max_wait_time_s = 120;
    const auto bytes_of = [](std::string_view hex) {
        Bytes out(hex.size() / 2);
        REQUIRE(decode_hex(hex, out));
        return out;
    };

    const Bytes command_bytes = bytes_of(
        "0109ac0201066f72646572730473686f700762696c6c696e67540ef403904e880e070100040601b00978"
        "00f001");
    auto command = decode_command(command_bytes);
    REQUIRE(command.has_value());
    CHECK(command->client_id == 9);
    CHECK(command->client_seq == 300);
    const auto* configure = std::get_if<ConfigureQueue>(&command->body);
    REQUIRE(configure != nullptr);
    CHECK(configure->queue == "orders");
    CHECK(configure->namespace_name == "shop");
    CHECK(configure->task == "billing");
    CHECK(configure->options == o);
    // These are format version 1 bytes; encoded again they are the same under version 2 (the
    // version changed no field of configure commands or results).
    const auto as_current = [](Bytes bytes) {
        bytes[0] = command_format_version;
        return bytes;
    };
    CHECK(encode_command(*command) == as_current(command_bytes));

    const Bytes defaults_bytes = bytes_of("0100000101710000d80406d00f000000000000000000000000");
    auto defaults = decode_command(defaults_bytes);
    REQUIRE(defaults.has_value());
    REQUIRE(std::holds_alternative<ConfigureQueue>(defaults->body));
    CHECK(std::get<ConfigureQueue>(defaults->body).options == QueueOptions{});
    CHECK(encode_command(Command{0, 0, ConfigureQueue{"q", "", "", {}}}) ==
          as_current(defaults_bytes));

    const Bytes result_bytes = bytes_of(
        "01010305066f72646572730473686f700762696c6c696e67540ef403904e880e070101040600b0097800"
        "f001");
    auto result = decode_result(result_bytes);
    REQUIRE(result.has_value());
    const auto* configured = std::get_if<ConfigureResult>(&*result);
    REQUIRE(configured != nullptr);
    CHECK(configured->queue_id == QueueId{3});
    CHECK(configured->default_partition == PartitionId{5});
    QueueOptions result_options = o;
    result_options.is_dlq_after_max_retries = true;
    result_options.is_retention_enabled = false;
    CHECK(configured->options == result_options);
    static_assert(result_format_version == command_format_version);
    CHECK(encode_result(*result) == as_current(result_bytes));
}

TEST_CASE("engine: ids print as UUIDs and parse back", "[engine][codec]") {
    REQUIRE(parse_partition_id(format_partition_id(PartitionId{42})) == PartitionId{42});
    REQUIRE(format_partition_id(PartitionId{42}) == "00000000-0000-8200-0000-00000000002a");
    REQUIRE(parse_partition_id(format_lease_id(LeaseId{42})) == PartitionId{0});  // wrong kind
    REQUIRE(parse_lease_id("") == LeaseId{0});
    REQUIRE(parse_lease_id("not-a-lease") == LeaseId{UINT64_MAX});
    REQUIRE(parse_lease_id(format_lease_id(LeaseId{7})) == LeaseId{7});
    // A message id is not a partition id either.
    const std::string message =
        format_message_id(MessageId{PartitionId{42}, Sequence{1}}, TimestampMs{1});
    REQUIRE(parse_partition_id(message) == PartitionId{0});
}

TEST_CASE("engine: message ids are UUIDv7 holding createdAt, partition and sequence",
          "[engine][codec]") {
    // Time 0x0123456789ab ms; partition 0xfedcba9876 (40 bits); sequence 0x3_0000_0001 (34).
    const MessageId id{PartitionId{0xfedcba9876}, Sequence{0x300000001}};
    const TimestampMs at{0x0123456789ab};
    const std::string text = format_message_id(id, at);
    REQUIRE(text.size() == 36);
    // time | 7 | partition bits 39-28 (0xfed) | 10 + partition bits 27-0 (0xcba9876) |
    // sequence bits 33-0.
    // low half: 0b10 << 62 | 0xcba9876 << 34 | 0x300000001
    REQUIRE(text == "01234567-89ab-7fed-b2ea-61db00000001");
    const MessageUuid uuid = message_uuid(id, at);
    CHECK((uuid.high >> 16) == 0x0123456789ab);  // the first 48 bits: createdAt in ms
    CHECK(((uuid.high >> 12) & 0xf) == 7);       // version 7
    CHECK((uuid.low >> 62) == 2);                // variant 0b10
    CHECK(text[14] == '7');
    CHECK((text[19] == '8' || text[19] == '9' || text[19] == 'a' || text[19] == 'b'));
    // Only the low 40 bits of the partition and the low 34 of the sequence are kept.
    const MessageId wrapped{PartitionId{id.partition.value() + (std::uint64_t{1} << 40)},
                            Sequence{id.sequence.value() + (std::uint64_t{1} << 34)}};
    CHECK(format_message_id(wrapped, at) == text);
    // The time is clamped to 48 bits.
    CHECK(format_message_id(id, TimestampMs{-5}).substr(0, 13) == "00000000-0000");
    CHECK(format_message_id(id, TimestampMs{INT64_MAX}).substr(0, 13) == "ffffffff-ffff");

    // Text order is id order: by time, then partition, then sequence.
    const std::vector<std::pair<MessageId, TimestampMs>> sorted = {
        {MessageId{PartitionId{9}, Sequence{5}}, TimestampMs{1'700'000'000'000}},
        {MessageId{PartitionId{1}, Sequence{1}}, TimestampMs{1'700'000'000'001}},
        {MessageId{PartitionId{1}, Sequence{2}}, TimestampMs{1'700'000'000'001}},
        {MessageId{PartitionId{1}, Sequence{(std::uint64_t{1} << 34) - 1}},
         TimestampMs{1'700'000'000'001}},
        {MessageId{PartitionId{2}, Sequence{1}}, TimestampMs{1'700'000'000'001}},
        {MessageId{PartitionId{(std::uint64_t{1} << 40) - 1}, Sequence{0}},
         TimestampMs{1'700'000'000'001}},
        {MessageId{PartitionId{1}, Sequence{1}}, TimestampMs{1'700'000'000'002}},
    };
    for (std::size_t i = 1; i < sorted.size(); ++i) {
        INFO(i);
        CHECK(format_message_id(sorted[i - 1].first, sorted[i - 1].second) <
              format_message_id(sorted[i].first, sorted[i].second));
        CHECK(message_uuid(sorted[i - 1].first, sorted[i - 1].second) <
              message_uuid(sorted[i].first, sorted[i].second));
    }
}

}  // namespace
}  // namespace queen::engine
