// engine/src/stream.cpp — the streams cycle: state ops, sink pushes and the ack of the source
// batch in one entry, all or nothing (queen/engine/stream.hpp).
#include "machines.hpp"

namespace queen::engine::detail {

Result<StreamCycleResult> apply_stream_cycle(Machines& m, store::WriteTxn& txn,
                                             const StreamCycle& command, LogIndex index,
                                             TimestampMs now) {
    StreamCycleResult result;
    QUEEN_TRY(auto query, streams::find_query_by_id(m.streams.tables(), txn, command.query_id));
    if (!query) {
        result.error = "Unknown query_id " + command.query_id;
        return result;
    }
    result.source_queue = query->source_queue;
    if (command.epoch != 0 && command.epoch != query->epoch) {
        result.error = "epoch mismatch: query '" + query->name + "' is at epoch " +
                       std::to_string(query->epoch) + ", the cycle's state was read at epoch " +
                       std::to_string(command.epoch) +
                       " (the query was reset or cleared since): register it again";
        return result;
    }
    QUEEN_TRY(m.queues.begin_atomic(txn));
    m.undo.clear();
    const auto fail = [&](std::string why) -> Result<StreamCycleResult> {
        QUEEN_TRY(m.queues.rollback_atomic(txn));
        QUEEN_TRY(m.undo.rollback(txn));
        StreamCycleResult failed;
        failed.source_queue = result.source_queue;
        failed.error = std::move(why);
        return failed;
    };
    const auto give_up = [&](Error error) -> Result<StreamCycleResult> {
        (void)m.queues.rollback_atomic(txn);
        (void)m.undo.rollback(txn);
        return error;
    };
    const std::uint64_t partition = command.partition.value();
    for (const StreamStateOp& op : command.state_ops) {
        if (op.kind == StreamStateOp::Kind::check || op.kind == StreamStateOp::Kind::check_absent) {
            const std::string key = op.key;
            auto rows = streams::get_rows(m.streams.tables(), txn, command.query_id, partition,
                                          std::span<const std::string>(&key, 1));
            if (!rows) {
                return give_up(std::move(rows).error());
            }
            const bool holds = op.kind == StreamStateOp::Kind::check
                                   ? rows->size() == 1 && rows->front().value == op.value
                                   : rows->empty();
            if (!holds) {
                return fail("state check failed on '" + op.key + "': " +
                            (rows->empty() ? std::string("the row is absent")
                                           : std::string("the row holds another value")));
            }
            continue;
        }
        Result<streams::WriteResult> wrote =
            op.kind == StreamStateOp::Kind::upsert
                ? m.streams.apply(txn, m.undo,
                                  streams::Upsert{command.query_id, partition, op.key, op.value},
                                  index, now)
                : m.streams.apply(txn, m.undo, streams::Delete{command.query_id, partition, op.key},
                                  index, now);
        if (!wrote) {
            return give_up(std::move(wrote).error());
        }
        if (wrote->status != streams::Status::ok) {
            return fail("state op on '" + op.key + "': " + wrote->message);
        }
        ++result.state_ops_applied;  // writes only (a check writes nothing)
    }
    for (const queues::PushItem& item : command.push_items) {
        auto pushed = m.queues.push_atomic(txn, item, now);
        if (!pushed) {
            return give_up(std::move(pushed).error());
        }
        if (pushed->status == queues::PushStatus::failed) {
            return fail("push to " + item.queue + " failed: " + pushed->error);
        }
        result.push_results.push_back(std::move(*pushed));
    }
    if (command.ack) {
        queues::AckItem ack = *command.ack;
        ack.partition = command.partition;
        if (ack.status != queues::AckStatus::completed && !ack.has_error) {
            ack.has_error = true;
            ack.error = "Streaming cycle reported failure";
        }
        const auto rule =
            command.release_lease ? queues::LeaseRelease::always : queues::LeaseRelease::never;
        auto acked = m.queues.ack_atomic(txn, ack, now, rule);
        if (!acked) {
            return give_up(std::move(acked).error());
        }
        if (!acked->failure.empty()) {
            return fail(acked->failure);
        }
        result.has_ack = true;
        result.lease_released = acked->item.lease_released == queues::LeaseReleased::yes;
        result.dlq = acked->item.dlq;
    }
    QUEEN_TRY(m.queues.commit_atomic(txn));
    m.undo.clear();
    result.success = true;
    return result;
}

}  // namespace queen::engine::detail
