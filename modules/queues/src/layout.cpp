// queues/src/layout.cpp — the on-disk layout version of the queue tables and the migration of
// data written by an older layout (docs/engine.md, "Layout versions").
#include "layout.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "apply.hpp"
#include "messages.hpp"

namespace queen::queues::detail {
namespace {

/// Entries moved per write txn: a bounded txn (LMDB keeps its dirty pages in memory) that a
/// crash leaves either done or not.
constexpr std::size_t moved_per_txn = 50'000;

Result<std::optional<std::uint8_t>> meta_format(const store::Txn& txn, store::Table meta) {
    QUEEN_TRY(auto raw, txn.get(meta, as_bytes(meta_state_key)));
    if (!raw || raw->empty()) {
        return std::optional<std::uint8_t>{};
    }
    return std::optional<std::uint8_t>{(*raw)[0]};
}

/// Copies of the first moved_per_txn entries of `table` (the next to move: moved ones are
/// deleted, so a resumed migration starts where it stopped).
Result<std::vector<std::pair<Bytes, Bytes>>> first_entries(const store::Txn& txn,
                                                           store::Table table) {
    std::vector<std::pair<Bytes, Bytes>> batch;
    QUEEN_TRY(auto cursor, txn.cursor(table));
    QUEEN_TRY(auto entry, cursor.first());
    while (entry && batch.size() < moved_per_txn) {
        batch.emplace_back(Bytes(entry->key.begin(), entry->key.end()),
                           Bytes(entry->value.begin(), entry->value.end()));
        QUEEN_TRY(entry, cursor.next());
    }
    return batch;
}

/// Moves up to moved_per_txn entries of layout 1's "q.txids" (partition u64be + id bytes ->
/// u64 LE sequence) into "q.ids" (txid_key -> varint sequence); returns how many it moved.
Result<std::size_t> move_ids(store::WriteTxn& txn, store::Table from, store::Table to) {
    QUEEN_TRY(const auto batch, first_entries(txn, from));
    for (const auto& [key, value] : batch) {
        if (key.size() < 8) {
            return Error{queen::Errc::corruption, "queues: a layout 1 transaction id key of " +
                                                      std::to_string(key.size()) + " bytes"};
        }
        store::KeyReader reader(key);
        const PartitionId pid{reader.u64be()};
        const std::string_view id = as_chars(ByteSpan(key).subspan(8));
        QUEEN_TRY(const std::uint64_t seq, decode_u64(value));
        const VarintValue moved(seq);
        QUEEN_TRY(txn.put(to, txid_key(pid, id).span(), moved.span()));
        QUEEN_TRY(txn.del(from, key));
    }
    return batch.size();
}

/// Moves up to moved_per_txn entries of layout 2's "q.messages" (partition u64be + first
/// sequence u64be -> a format 1 record or a format 2 block) to the end of "q.blocks", in the
/// old key order, each linked to the block moved before it for its partition (the partition
/// records' tails, written at the end of the txn, carry the links across txns); returns how
/// many it moved.
Result<std::size_t> move_blocks(store::WriteTxn& txn, store::Table from, const Tables& tables) {
    QUEEN_TRY(auto stored_meta,
              get_record(txn, tables.meta, as_bytes(meta_state_key), decode_meta));
    MetaRecord meta = stored_meta.value_or(MetaRecord{});
    QUEEN_TRY(const auto batch, first_entries(txn, from));
    std::map<PartitionId, PartitionRecord> touched;
    Bytes records;
    Bytes value;
    for (const auto& [key, old] : batch) {
        if (key.size() != 16) {
            return Error{queen::Errc::corruption, "queues: a layout 2 message key of " +
                                                      std::to_string(key.size()) + " bytes"};
        }
        store::KeyReader reader(key);
        const PartitionId pid{reader.u64be()};
        const Sequence first{reader.u64be()};
        auto it = touched.find(pid);
        if (it == touched.end()) {
            QUEEN_TRY(auto record, get_record(txn, tables.partitions, partition_key(pid).span(),
                                              decode_partition));
            if (!record) {
                return Error{queen::Errc::corruption, "queues: layout 2 messages of partition " +
                                                          std::to_string(pid.value()) +
                                                          ", which has no record"};
            }
            it = touched.emplace(pid, std::move(*record)).first;
        }
        QUEEN_TRY(auto block, BlockReader::parse_legacy(old));
        records.clear();
        if (block.is_single()) {
            ByteWriter(records).blob(block.records());
        } else {
            records.assign(block.records().begin(), block.records().end());
        }
        encode_block(value, pid, first, block.count(), it->second.tail, records);
        const std::uint64_t position = meta.next_position++;
        QUEEN_TRY(
            txn.put(tables.messages, block_key(position).span(), value, store::PutFlags::append));
        const Sequence last{first.value() + block.count() - 1};
        if (is_indexed_block(first, last)) {
            const VarintValue at(position);
            QUEEN_TRY(txn.put(tables.message_index, block_index_key(pid, last).span(), at.span()));
        }
        it->second.tail = position;
        QUEEN_TRY(txn.del(from, key));
    }
    for (const auto& [pid, record] : touched) {
        QUEEN_TRY(txn.put(tables.partitions, partition_key(pid).span(), encode(record)));
    }
    QUEEN_TRY(txn.put(tables.meta, as_bytes(meta_state_key), encode(meta)));
    return batch.size();
}

/// Runs `step(txn)` -> Result<std::size_t> in txns until it moves fewer than moved_per_txn;
/// returns the total.
template <class Step>
Result<std::uint64_t> run_steps(store::Env& env, Step step) {
    std::uint64_t total = 0;
    for (;;) {
        Result<std::size_t> moved = env.write(step);
        QUEEN_TRY(const std::size_t n, std::move(moved));
        total += n;
        if (n < moved_per_txn) {
            return total;
        }
    }
}

}  // namespace

Result<LayoutReport> migrate_layout(store::Env& env, const Tables& tables) {
    LayoutReport report;
    QUEEN_TRY(const auto names, env.table_names());
    const auto has_table = [&](std::string_view name) {
        return std::find(names.begin(), names.end(), name) != names.end();
    };
    std::optional<std::uint8_t> format;
    bool is_migrating = false;
    {
        QUEEN_TRY(auto txn, env.begin_read());
        QUEEN_TRY(format, meta_format(txn, tables.meta));
        QUEEN_TRY(auto marker, txn.get(tables.meta, as_bytes(layout_migrating_key)));
        is_migrating = marker.has_value();
    }
    if (format && *format > layout_version) {
        return Error{queen::Errc::corruption,
                     "queues: the state was written by a newer Queen (layout " +
                         std::to_string(*format) + ", this binary knows " +
                         std::to_string(layout_version) + "): run that version or newer"};
    }
    report.from = format.value_or(layout_version);
    if (!is_migrating && (!format || *format == layout_version)) {
        return report;  // current (or empty: written in this layout from the start)
    }
    if (!is_migrating) {
        // First step, one txn: the meta record in the new format (a binary of the old layout
        // then refuses the data instead of misreading it) and the marker that a crash resumes.
        Result<void> started = env.write([&](store::WriteTxn& txn) -> Result<void> {
            QUEEN_TRY(auto meta,
                      get_record(txn, tables.meta, as_bytes(meta_state_key), decode_meta));
            QUEEN_TRY(txn.put(tables.meta, as_bytes(meta_state_key),
                              encode(meta.value_or(MetaRecord{}))));
            return txn.put(tables.meta, as_bytes(layout_migrating_key), as_bytes("1"));
        });
        QUEEN_TRY(std::move(started));
    }
    // Each step finds nothing to do when it is done, so a resumed migration runs them all.
    if (has_table(layout1_ids_table)) {
        QUEEN_TRY(const store::Table old_ids, env.open_table(layout1_ids_table));
        QUEEN_TRY(report.ids_moved, run_steps(env, [&](store::WriteTxn& txn) {
                      return move_ids(txn, old_ids, tables.transaction_ids);
                  }));
    }
    if (has_table(layout2_messages_table)) {
        QUEEN_TRY(const store::Table old_messages, env.open_table(layout2_messages_table));
        QUEEN_TRY(report.blocks_moved, run_steps(env, [&](store::WriteTxn& txn) {
                      return move_blocks(txn, old_messages, tables);
                  }));
    }
    Result<void> finished = env.write([&](store::WriteTxn& txn) -> Result<void> {
        QUEEN_TRY(txn.del(tables.meta, as_bytes(layout_migrating_key)));
        return {};
    });
    QUEEN_TRY(std::move(finished));
    report.is_migrated = true;
    return report;
}

}  // namespace queen::queues::detail
