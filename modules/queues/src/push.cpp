// queues/src/push.cpp — Push: item checks, dedupe, the per-apply memo, pending message blocks.
#include <string>

#include "apply.hpp"
#include "queen/core/assert.hpp"

namespace queen::queues {

using detail::PartitionMem;
using detail::PushMemo;
using detail::QueueMem;
using detail::State;

namespace {

std::string derive_namespace(std::string_view queue) {
    return std::string(queue.substr(0, queue.find('.')));
}
std::string derive_task(std::string_view queue) {
    const auto first = queue.find('.');
    if (first == std::string_view::npos) {
        return {};
    }
    const auto rest = queue.substr(first + 1);
    return std::string(rest.substr(0, rest.find('.')));
}

/// Writes the first `written` messages of a block of the pushes (all of them: the whole block) as
/// one block at the end of q.blocks, linked to its partition's tail, and makes it the tail (indexed
/// when it holds a multiple of index_every). The block restarts empty after a whole write and
/// holds the rest after a head's. Returns the last leaf's fill after the append.
Result<std::uint32_t> write_block(State& s, store::WriteTxn& txn, detail::BlockBuilder& block,
                                  std::uint32_t written) {
    if (written == 0) {
        return s.blocks_leaf_fill;
    }
    const PartitionId pid = block.partition();
    PartitionMem& mem = touch_partition(s, pid);
    const std::uint64_t position = s.meta.next_position++;
    s.is_meta_dirty = true;  // written once per batch
    const auto key = detail::block_key(position);
    const ByteSpan value = written == block.count()
                               ? block.value(mem.tail)
                               : block.prefix_value(written, mem.tail, s.block_scratch);
    // Positions only grow: an append at the end of the table, which inside a transaction also
    // spares the journal a read of the old value.
    QUEEN_TRY(append_new(s, txn, s.tables.messages, key.span(), value));
    s.blocks_leaf_fill =
        detail::block_leaf_fill_after(s.blocks_leaf_fill, detail::block_node_bytes(value.size()));
    const Sequence last{block.first().value() + written - 1};
    if (detail::is_indexed_block(block.first(), last)) {
        const detail::VarintValue at(position);
        QUEEN_TRY(put_over(s, txn, s.tables.message_index,
                           detail::block_index_key(pid, last).span(), at.span(), std::nullopt));
    }
    mem.tail = position;
    if (written == block.count()) {
        block.start(pid, block.next());
    } else {
        block.drop_front(written);
    }
    return s.blocks_leaf_fill;
}

/// The createdAt of message `seq` of `pid` (a push found its transaction id already stored).
/// The partition's newest message is in memory; an older one is read, after the pending blocks
/// are written (it may be in one of them).
Result<TimestampMs> stored_created_at(State& s, store::WriteTxn& txn, PushMemo& memo,
                                      PartitionId pid, Sequence seq) {
    const PartitionMem& mem = s.partition(pid);
    if (seq == mem.last_sequence) {
        return TimestampMs{mem.last_created_ms};
    }
    QUEEN_TRY(flush_blocks(s, txn));
    memo.forget_blocks();
    QUEEN_TRY(auto message, detail::read_message(txn, s.tables, pid, s.partition(pid).tail, seq));
    if (!message) {
        // A transaction id outlives its message nowhere (deletes remove both): say so.
        return Error{queen::Errc::corruption,
                     "queues: transaction id of partition " + std::to_string(pid.value()) +
                         " names message " + std::to_string(seq.value()) + ", which is not stored"};
    }
    return message->created_at;
}

/// Pushes one item; its answer goes into `result` (every field is assigned, so a reused
/// result keeps its strings' storage).
Result<void> push_item_into(State& s, store::WriteTxn& txn, const PushItem& item, TimestampMs now,
                            bool is_transaction, PushMemo& memo, PushItemResult& result) {
    result.message_id = MessageId{};
    result.created_at = TimestampMs{0};
    result.error.clear();
    result.transaction_id = item.transaction_id;
    result.queue = item.queue;
    result.partition = item.partition;
    result.trace_id = item.trace_id;
    result.status = PushStatus::failed;
    if (item.queue.size() > s.options.queue_name_bytes_max) {
        result.error = "queue name is longer than " +
                       std::to_string(s.options.queue_name_bytes_max) + " bytes";
        return {};
    }
    if (item.partition.size() > s.options.partition_name_bytes_max) {
        result.error = "partition name is longer than " +
                       std::to_string(s.options.partition_name_bytes_max) + " bytes";
        return {};
    }
    if (item.transaction_id.empty() ||
        item.transaction_id.size() > s.options.transaction_id_bytes_max) {
        result.error = "transactionId must be 1 to " +
                       std::to_string(s.options.transaction_id_bytes_max) + " bytes";
        return {};
    }
    if (s.meta.push_maintenance && !is_transaction) {
        const BufferedPushId id = s.meta.next_buffer_id;
        s.meta.next_buffer_id = id.next();
        QUEEN_TRY(save_meta(s, txn));
        QUEEN_TRY(put(s, txn, s.tables.buffer, detail::sequence_key(id.value()).span(),
                      detail::encode(item)));
        result.status = PushStatus::buffered;
        return {};
    }
    PushMemo::Pair* pair = memo.find(item);
    if (pair == nullptr) {
        QueueId found_qid;
        if (auto found = find_queue(s, item.queue)) {
            found_qid = *found;
        } else {
            QUEEN_TRY(found_qid, create_queue(s, txn, item.queue, derive_namespace(item.queue),
                                              derive_task(item.queue), QueueOptions{}, now));
        }
        PartitionId found_pid;
        QUEEN_TRY(found_pid, get_or_create_partition(s, txn, found_qid, item.partition, now));
        pair = &memo.add(item, found_qid, found_pid);
    }
    const QueueId qid = pair->qid;
    const PartitionId pid = pair->pid;
    const auto txid = detail::txid_key(pid, item.transaction_id);
    QueueMem& q = s.queues.at(qid);
    const bool is_full =
        q.options.max_size > 0 && q.message_count >= static_cast<std::uint64_t>(q.options.max_size);
    const Sequence seq = s.partition(pid).last_sequence.next();
    // The dedupe check: a duplicate is reported before a full queue is.
    std::optional<ByteSpan> existing;
    if (is_full) {
        QUEEN_TRY(existing, txn.get(s.tables.transaction_ids, txid.span()));
    } else {
        // One descent checks and claims the transaction id; the message follows below.
        const detail::VarintValue seq_value(seq.value());
        QUEEN_TRY(existing, put_transaction_id(s, txn, txid.span(), seq_value.span()));
    }
    if (existing) {
        QUEEN_TRY(auto existing_seq, detail::decode_txid_value(*existing));
        result.status = PushStatus::duplicate;
        result.message_id = MessageId{pid, existing_seq};
        QUEEN_TRY(result.created_at, stored_created_at(s, txn, memo, pid, existing_seq));
        return {};
    }
    if (is_full) {
        result.error = "queue '" + item.queue + "' is full: maxSize is " +
                       std::to_string(q.options.max_size) + " messages";
        return {};
    }
    PartitionMem& mem = touch_partition(s, pid);
    QUEEN_TRY(memo.append(s, txn, *pair, seq, now, item));
    if (mem.message_count == 0) {
        mem.first_sequence = seq;
    }
    mem.last_sequence = seq;
    mem.last_created_ms = now.value();
    mem.message_count++;
    touch_queue_count(s, qid);
    q.message_count++;
    if (!pair->is_marked_ready) {
        mark_ready(s, qid, GroupId{0}, pid);
        pair->is_marked_ready = true;
    }
    add_wakeup(s, item.queue);
    result.status = PushStatus::queued;
    result.message_id = MessageId{pid, seq};
    result.created_at = now;
    return {};
}

}  // namespace

Result<void> detail::PushMemo::append(State& s, store::WriteTxn& txn, Pair& pair, Sequence seq,
                                      TimestampMs now, const PushItem& item) {
    if (pair.block == detail::PendingBlocks::none) {
        pair.block = s.pending_blocks.find(pair.pid);
        if (pair.block == detail::PendingBlocks::none) {
            pair.block = s.pending_blocks.start(pair.pid, seq);
        }
    }
    detail::BlockBuilder& block = s.pending_blocks.at(pair.block);
    QUEEN_ASSERT(block.next() == seq, "a block's sequences are consecutive");
    if (block.count() > 0 &&
        block.bytes() + detail::message_record_size(now, item) > block_bytes_max) {
        QUEEN_TRY(write_block(s, txn, block, block.count()));
    }
    block.add_message(now, item);
    return {};
}

/// Writes the pushes' pending message blocks (one q.blocks insert each, or two for a block
/// whose head fills a leaf); a transaction's push op calls it before its next op.
Result<void> detail::flush_blocks(State& s, store::WriteTxn& txn) {
    if (s.pending_blocks.empty()) {
        return {};
    }
    const auto tail_of = [&](const detail::BlockBuilder& block) {
        return s.partition(block.partition()).tail;
    };
    return s.pending_blocks.flush(
        s.blocks_leaf_fill,
        [&](detail::BlockBuilder& block) {
            return detail::block_node_bytes(block.value(tail_of(block)).size());
        },
        [&](const detail::BlockBuilder& block, std::uint32_t room) {
            return block.prefix_fitting(detail::block_value_bytes_fitting(room), tail_of(block));
        },
        [&](detail::BlockBuilder& block, std::uint32_t count) {
            return write_block(s, txn, block, count);
        });
}

Result<void> detail::flush_pushes(State& s, store::WriteTxn& txn) {
    QUEEN_TRY(flush_blocks(s, txn));
    return flush_partitions(s, txn);
}

Result<void> detail::flush_pending(State& s, store::WriteTxn& txn) {
    QUEEN_TRY(flush_pushes(s, txn));
    s.is_caching_cursors = false;
    return flush_cursors(s, txn);
}

Result<void> detail::flush_pushes_caching_cursors(State& s, store::WriteTxn& txn) {
    // Pops, acks and extensions read the partitions' memory entries, never their records: those
    // stay dirty until the commit (or another command), written once per txn, not per batch.
    QUEEN_TRY(flush_blocks(s, txn));
    s.is_caching_cursors = true;
    return {};
}

Result<PushItemResult> detail::push_item(State& s, store::WriteTxn& txn, const PushItem& item,
                                         TimestampMs now, bool is_transaction, PushMemo& memo) {
    PushItemResult result;
    QUEEN_TRY(push_item_into(s, txn, item, now, is_transaction, memo, result));
    // Alone: what follows may read the message (an ack in the same transaction).
    QUEEN_TRY(flush_blocks(s, txn));
    memo.forget_blocks();
    return result;
}

Result<PushResult> QueueState::apply(store::WriteTxn& txn, const Push& command, TimestampMs now) {
    State& s = *state_;
    PushResult result;
    result.items.reserve(command.items.size());
    PushMemo memo;
    for (const auto& item : command.items) {
        QUEEN_TRY(push_item_into(s, txn, item, now, false, memo, result.items.emplace_back()));
    }
    // The messages stay in the pending blocks, which the next pushes of the batch may extend,
    // and the changed partitions' records wait for the batch's end too (flush_pending).
    return result;
}

}  // namespace queen::queues
