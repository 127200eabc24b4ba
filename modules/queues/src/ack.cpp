// queues/src/ack.cpp — Ack: completion, retry, dead-lettering, lease release, the ack memo.
#include <algorithm>

#include "apply.hpp"
#include "queen/core/assert.hpp"

namespace queen::queues {

using detail::AckContext;
using detail::CursorRecord;
using detail::MessageRecord;
using detail::QueueMem;
using detail::State;

namespace {

/// What the items of one Ack apply share (they come sorted by partition, group, sequence):
/// the last partition's name, and its cursor record, written back once per (partition, group)
/// instead of once per item. Not used inside an atomic entry (its writes must be journaled in
/// order).
class AckMemo {
public:
    /// The name of partition `pid` (read from LMDB on a change of partition).
    Result<std::string_view> partition_name(State& s, const store::Txn& txn, PartitionId pid);
    /// The cursor of (pid, gid), from memory when it is the memoized pair; writes the previous
    /// pair's record first when it changed.
    Result<std::optional<CursorRecord>> read_cursor(State& s, store::WriteTxn& txn, PartitionId pid,
                                                    GroupId gid);
    /// Records the new cursor of the memoized pair (read_cursor was called for it).
    void write_cursor(PartitionId pid, GroupId gid, const CursorRecord& record);
    /// Writes the memoized cursor if it changed. Call before the apply returns.
    Result<void> flush(State& s, store::WriteTxn& txn);

private:
    PartitionId name_pid_;
    std::string name_;
    PartitionId cursor_pid_;  ///< 0 = no cursor memoized
    GroupId cursor_gid_;
    std::optional<CursorRecord> cursor_;
    bool is_dirty_ = false;
};

Result<std::optional<MessageRecord>> read_message(const State& s, const store::Txn& txn,
                                                  PartitionId pid, Sequence seq) {
    return detail::read_message(txn, s.tables, pid, s.partition(pid).tail, seq);
}

Result<void> add_to_dlq(State& s, store::WriteTxn& txn, QueueId qid, PartitionId pid, Sequence seq,
                        GroupId gid, std::string error, std::uint32_t retry_count,
                        MessageRecord message, TimestampMs now) {
    detail::DlqRecord record{
        qid, pid, seq, gid, std::move(error), retry_count, now, std::move(message)};
    const DlqEntryId id = s.meta.next_dlq_id;
    s.meta.next_dlq_id = id.next();
    QUEEN_TRY(save_meta(s, txn));
    return put(s, txn, s.tables.dlq, detail::sequence_key(id.value()).span(),
               detail::encode(record));
}

Result<std::string_view> AckMemo::partition_name(State& s, const store::Txn& txn, PartitionId pid) {
    if (name_pid_ != pid) {
        QUEEN_TRY(name_, detail::partition_name(s, txn, pid));
        name_pid_ = pid;
    }
    return std::string_view(name_);
}

Result<std::optional<CursorRecord>> AckMemo::read_cursor(State& s, store::WriteTxn& txn,
                                                         PartitionId pid, GroupId gid) {
    if (cursor_pid_ != pid || cursor_gid_ != gid) {
        QUEEN_TRY(flush(s, txn));
        QUEEN_TRY(cursor_, detail::read_cursor(s, txn, pid, gid));
        cursor_pid_ = pid;
        cursor_gid_ = gid;
    }
    return cursor_;
}

void AckMemo::write_cursor(PartitionId pid, GroupId gid, const CursorRecord& record) {
    QUEEN_ASSERT(pid == cursor_pid_ && gid == cursor_gid_, "AckMemo: write of an unread cursor");
    cursor_ = record;
    is_dirty_ = true;
}

Result<void> AckMemo::flush(State& s, store::WriteTxn& txn) {
    if (is_dirty_) {
        QUEEN_TRY(detail::write_cursor(s, txn, cursor_pid_, cursor_gid_, *cursor_));
        is_dirty_ = false;
    }
    return {};
}

/// Acks one item. `found_seq` is the item's sequence looked up by transaction id (0: no such
/// message; sequences start at 1). `memo` (may be null, and is inside an atomic entry) carries
/// lookups across the items of one Ack apply.
Result<AckItemResult> ack_item(State& s, store::WriteTxn& txn, const AckItem& item,
                               Sequence found_seq, TimestampMs now, AckContext& context,
                               AckMemo* memo) {
    const std::int64_t now_ms = now.value();
    AckItemResult result;
    result.transaction_id = item.transaction_id;
    const PartitionId pid = item.partition;
    if (!s.has_partition(pid)) {
        result.error = "Message not found";
        context.failure = "Message not found: " + item.transaction_id;
        return result;
    }
    const QueueId qid = s.partition(pid).queue;
    if (found_seq.value() == 0) {
        result.error = "Message not found";
        context.failure = "Message not found: " + item.transaction_id;
        return result;
    }
    const Sequence seq = found_seq;
    QueueMem& q = s.queues.at(qid);
    result.queue = q.name;
    if (memo != nullptr) {
        QUEEN_TRY(auto name, memo->partition_name(s, txn, pid));
        result.partition.assign(name);
    } else {
        QUEEN_TRY(result.partition, partition_name(s, txn, pid));
    }
    if (item.status == AckStatus::unknown) {
        context.failure = "Unknown ack status";
        return result;  // success false, error null (docs/http-api.md, ack failures)
    }
    if (item.group.size() > s.options.group_name_bytes_max) {
        result.error = "consumerGroup is too long";
        context.failure = result.error;
        return result;
    }
    GroupId gid;
    QUEEN_TRY(gid, get_or_create_group(s, txn, item.group));
    std::optional<CursorRecord> cursor;
    const auto cursor_key = detail::cursor_key(pid, gid);
    std::optional<Bytes> cursor_old;  // the journal's old value (atomic entries only)
    if (memo != nullptr) {
        QUEEN_TRY(cursor, memo->read_cursor(s, txn, pid, gid));
    } else {
        QUEEN_TRY(auto raw, txn.get(s.tables.cursors, cursor_key.span()));
        if (raw) {
            if (s.journal.is_active) {
                cursor_old.emplace(raw->begin(), raw->end());
            }
            QUEEN_TRY(cursor, detail::decode_cursor(*raw));
        }
    }
    CursorRecord record = cursor.value_or(CursorRecord{});
    const bool is_leased = record.is_leased(now_ms);
    if (item.lease.value() != 0) {
        const bool is_same_failed_batch = item.status == AckStatus::failed &&
                                          record.last_failed_lease == item.lease &&
                                          !context.is_transaction;
        if (is_same_failed_batch) {
            result.success =
                true;  // the batch's failure was already counted (docs/http-api.md, ack failures)
            result.lease_released = LeaseReleased::yes;
            return result;
        }
        if (!is_leased || record.lease_id != item.lease) {
            result.error = "Invalid or expired lease";
            context.failure = "Invalid or expired lease";
            return result;
        }
    }
    bool released = false;
    auto release = [&] {
        release_lease_index(s, record.lease_id, pid, gid);
        record.lease_id = LeaseId{0};
        record.lease_expires_ms = 0;
        released = true;
    };
    auto consume = [&] {
        if (seq > record.consumed) {
            record.consumed = seq;
        }
        record.total_consumed++;
        record.last_consumed_ms = now_ms;
        if (is_leased) {
            record.acked_count++;
            const bool is_batch_done = record.acked_count >= record.batch_size;
            if (context.release == LeaseRelease::always ||
                (context.release == LeaseRelease::by_count && is_batch_done)) {
                release();
            }
        }
    };
    const QueueOptions& options = q.options;
    bool to_dlq = false;
    std::string dlq_error;
    switch (item.status) {
        case AckStatus::completed:
            consume();
            if (released) {
                record.batch_retry_count = 0;
            }
            break;
        case AckStatus::failed:
            if (context.is_transaction) {
                to_dlq = true;
                dlq_error = item.has_error ? item.error : "Unknown error";
                break;
            }
            if (record.batch_retry_count < options.retry_limit) {
                record.batch_retry_count++;
                if (is_leased) {
                    record.last_failed_lease = record.lease_id;
                    release();
                }
                record.not_before_ms = now_ms + std::max<std::int64_t>(options.retry_delay_ms, 0);
            } else {
                to_dlq = true;
                dlq_error = item.has_error ? item.error : "Retries exhausted";
            }
            break;
        case AckStatus::dlq:
            to_dlq = true;
            dlq_error = item.has_error
                            ? item.error
                            : (context.is_transaction ? "Unknown error" : "Moved to DLQ");
            break;
        case AckStatus::retry:
            if (context.is_transaction) {
                context.failure = "Unsupported ack status in a transaction: retry";
                return result;
            }
            if (is_leased) {
                release();
            }
            break;
        case AckStatus::unknown: QUEEN_UNREACHABLE();
    }
    if (to_dlq) {
        QUEEN_TRY(auto message, read_message(s, txn, pid, seq));
        if (message) {
            QUEEN_TRY(add_to_dlq(s, txn, qid, pid, seq, gid, dlq_error,
                                 context.is_transaction ? 0 : record.batch_retry_count,
                                 std::move(*message), now));
        }
        result.dlq = true;
        consume();
        if (context.is_transaction && !released && is_leased) {
            release();
        }
    }
    if (memo != nullptr) {
        memo->write_cursor(pid, gid, record);
    } else {
        detail::encode_into(s.scratch, record);
        QUEEN_TRY(put_over(s, txn, s.tables.cursors, cursor_key.span(), s.scratch,
                           cursor_old ? std::optional<ByteSpan>(*cursor_old) : std::nullopt));
    }
    if (released) {
        // Released with nothing after the cursor: no candidate until a push marks it again.
        // Keeping it would leave one stale entry per ack, and once a drain of millions of
        // single-message partitions wrapped around, one pop walked them all in one apply
        // (seconds). Inside an atomic entry a rollback may restore the lease, so there it stays
        // a candidate (stale is safe: pop checks).
        if (!s.journal.is_active && record.consumed >= s.partition(pid).last_sequence) {
            mark_idle(s, qid, gid, pid);
        } else {
            mark_ready(s, qid, gid, pid);
        }
        add_wakeup(s, q.name);
    }
    result.success = true;
    result.lease_released = released ? LeaseReleased::yes : LeaseReleased::no;
    return result;
}

}  // namespace

Result<AckItemResult> detail::ack_item_by_id(State& s, store::WriteTxn& txn, const AckItem& item,
                                             TimestampMs now, AckContext& context) {
    QUEEN_TRY(const auto seq, detail::find_txid(txn, s.tables.transaction_ids, item.partition,
                                                item.transaction_id));
    return ack_item(s, txn, item, seq.value_or(Sequence{0}), now, context, nullptr);
}

Result<AckResult> QueueState::apply(store::WriteTxn& txn, const Ack& command, TimestampMs now) {
    QUEEN_TRY(flush_pushes_caching_cursors(*state_, txn));
    State& s = *state_;
    AckResult result;
    // Acks of one request apply in message order per partition (docs/http-api.md, ack batch); the
    // results keep the request's order.
    std::vector<std::size_t> order(command.items.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        order[i] = i;
    }
    // The sequences, looked up through one cursor: the ids of one popped batch sit side by side
    // in q.ids, so most lookups stay in the leaf of the one before instead of descending from
    // the root (LMDB checks the cursor's leaf first).
    std::vector<Sequence> sequences(command.items.size(), Sequence{UINT64_MAX});
    {
        QUEEN_TRY(auto ids, txn.cursor(s.tables.transaction_ids));
        for (std::size_t i = 0; i < command.items.size(); ++i) {
            const auto& item = command.items[i];
            QUEEN_TRY(auto found,
                      ids.find(detail::txid_key(item.partition, item.transaction_id).span()));
            if (found) {
                QUEEN_TRY(sequences[i], detail::decode_txid_value(found->value));
            }
        }
    }
    const auto before = [&](std::size_t a, std::size_t b) {
        const auto& x = command.items[a];
        const auto& y = command.items[b];
        return std::tie(x.partition, x.group, sequences[a]) <
               std::tie(y.partition, y.group, sequences[b]);
    };
    // Acks of one popped batch usually come in its order already.
    if (!std::is_sorted(order.begin(), order.end(), before)) {
        std::stable_sort(order.begin(), order.end(), before);
    }
    result.items.resize(command.items.size());
    AckMemo memo;
    for (const std::size_t i : order) {
        AckContext context;
        const Sequence seq = sequences[i] == Sequence{UINT64_MAX} ? Sequence{0} : sequences[i];
        QUEEN_TRY(result.items[i], ack_item(s, txn, command.items[i], seq, now, context, &memo));
    }
    QUEEN_TRY(memo.flush(s, txn));
    QUEEN_TRY(flush_partitions(s, txn));
    return result;
}

}  // namespace queen::queues
