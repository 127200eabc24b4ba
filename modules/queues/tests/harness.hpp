// queues/tests/harness.hpp — a QueueState over a temporary LMDB env, one write txn per command.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "queen/queues/queries.hpp"
#include "queen/queues/queues.hpp"
#include "queen/store/env.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace queen::queues::testing {

inline Bytes text(std::string_view s) {
    return Bytes(s.begin(), s.end());
}
inline std::string text(const Bytes& b) {
    return std::string(b.begin(), b.end());
}

/// A transaction of pushes and acks as the engine runs one (its own type lives in engine): the
/// queues' tests drive QueueState's atomic calls with it.
struct TransactionOp {
    enum class Kind : std::uint8_t { push = 0, ack = 1 } kind = Kind::push;
    PushItem push;
    AckItem ack;
};
struct Transaction {
    std::vector<TransactionOp> ops;
};
struct TransactionOpResult {
    TransactionOp::Kind kind = TransactionOp::Kind::push;
    bool success = false;
    MessageId message_id;
    TimestampMs created_at{0};
    std::string error;
};
struct TransactionResult {
    bool success = false;
    std::string error;
    std::vector<TransactionOpResult> results;
};

/// Runs `transaction` with begin_atomic / push_atomic / ack_atomic and commits it, or rolls it
/// back at the first push that is not queued or ack that fails.
inline Result<TransactionResult> apply_transaction(QueueState& state, store::WriteTxn& txn,
                                                   const Transaction& transaction,
                                                   TimestampMs now) {
    QUEEN_TRY(state.begin_atomic(txn));
    TransactionResult result;
    for (const TransactionOp& op : transaction.ops) {
        TransactionOpResult one;
        one.kind = op.kind;
        if (op.kind == TransactionOp::Kind::push) {
            QUEEN_TRY(auto pushed, state.push_atomic(txn, op.push, now));
            one.success = pushed.status == PushStatus::queued;
            one.message_id = pushed.message_id;
            one.created_at = pushed.created_at;
            one.error = pushed.status == PushStatus::duplicate ? "duplicate" : pushed.error;
        } else {
            QUEEN_TRY(auto acked, state.ack_atomic(txn, op.ack, now));
            one.success = acked.failure.empty();
            one.error = acked.failure;
        }
        if (!one.success) {
            QUEEN_TRY(state.rollback_atomic(txn));
            result.error = one.error;
            return result;
        }
        result.results.push_back(std::move(one));
    }
    QUEEN_TRY(state.commit_atomic(txn));
    result.success = true;
    return result;
}

struct Harness {
    queen::testing::TempDir dir;
    std::optional<store::Env> env;
    std::optional<QueueState> state;
    std::int64_t now_ms = 1'700'000'000'000;

    Harness() { open(); }
    void open() {
        store::Options options;
        options.sync_mode = store::SyncMode::no_sync;  // semantics tests; a reopen keeps pages
        // The harness does not rerun txns on map growth (Engine does): start with a big map.
        options.map_size_bytes = std::uint64_t{4} << 30;
        env.emplace(store::Env::open(dir.path(), options).value());
        state.emplace(QueueState::open(*env, Options{}).value());
    }
    void reopen() {
        state.reset();
        env.reset();
        open();
    }
    void advance_s(std::int64_t seconds) { now_ms += seconds * 1000; }
    void advance_ms(std::int64_t ms) { now_ms += ms; }

    template <class Command>
    auto run(const Command& command) {
        auto txn = env->begin_write();
        REQUIRE(txn.has_value());
        auto result = [&] {
            if constexpr (std::is_same_v<Command, Transaction>) {
                return apply_transaction(*state, *txn, command, TimestampMs{now_ms});
            } else {
                return state->apply(*txn, command, TimestampMs{now_ms});
            }
        }();
        if (!result) {
            FAIL("apply failed: " << result.error().message());
        }
        REQUIRE(state->before_commit(*txn).has_value());
        auto committed = txn->commit();
        REQUIRE(committed.has_value());
        return std::move(result).value();
    }

    PushResult push(const std::string& queue, const std::string& partition, const std::string& txid,
                    const std::string& payload = "{}") {
        PushItem item;
        item.queue = queue;
        item.partition = partition;
        item.transaction_id = txid;
        item.payload = text(payload);
        return run(Push{{item}});
    }

    PopResult pop(const std::string& queue, std::uint32_t batch = 1,
                  const std::string& group = std::string(queue_mode_group),
                  std::uint32_t partitions = 1) {
        Pop command;
        command.queue = queue;
        command.batch = batch;
        command.group = group;
        command.partitions = partitions;
        return run(command);
    }

    PopResult pop_partition(const std::string& queue, const std::string& partition,
                            std::uint32_t batch = 1,
                            const std::string& group = std::string(queue_mode_group)) {
        Pop command;
        command.queue = queue;
        command.has_partition = true;
        command.partition = partition;
        command.batch = batch;
        command.group = group;
        return run(command);
    }

    AckItemResult ack(const PoppedMessage& message, LeaseId lease,
                      AckStatus status = AckStatus::completed,
                      const std::string& group = std::string(queue_mode_group),
                      const std::string& error = {}) {
        AckItem item;
        item.partition = message.id.partition;
        item.transaction_id = message.transaction_id;
        item.status = status;
        item.lease = lease;
        item.group = group;
        item.has_error = !error.empty();
        item.error = error;
        auto result = run(Ack{{item}});
        REQUIRE(result.items.size() == 1);
        return result.items[0];
    }

    ConfigureResult configure(const std::string& queue, QueueOptions options) {
        ConfigureQueue command;
        command.queue = queue;
        command.options = options;
        return run(command);
    }

    template <class Fn>
    auto read(Fn fn) {
        auto txn = env->begin_read();
        REQUIRE(txn.has_value());
        auto result = fn(state->tables(), *txn);
        REQUIRE(result.has_value());
        return std::move(result).value();
    }
};

}  // namespace queen::queues::testing
