// queues/src/layout.cpp — the on-disk layout version of the queue tables and the migration of
// data written by an older layout (docs/engine.md, "Layout versions").
#include "layout.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "apply.hpp"

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

/// Moves up to moved_per_txn entries of layout 1's "q.txids" (partition u64be + id bytes ->
/// u64 LE sequence) into "q.ids" (txid_key -> varint sequence); returns how many it moved.
Result<std::size_t> move_ids(store::WriteTxn& txn, store::Table from, store::Table to) {
    std::vector<std::pair<Bytes, Bytes>> batch;
    {
        QUEEN_TRY(auto cursor, txn.cursor(from));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry && batch.size() < moved_per_txn) {
            batch.emplace_back(Bytes(entry->key.begin(), entry->key.end()),
                               Bytes(entry->value.begin(), entry->value.end()));
            QUEEN_TRY(entry, cursor.next());
        }
    }
    for (const auto& [key, value] : batch) {
        if (key.size() < 8) {
            return Error{queen::Errc::corruption, "queues: a layout 1 transaction id key of " +
                                                      std::to_string(key.size()) + " bytes"};
        }
        store::KeyReader reader(key);
        const PartitionId pid{reader.u64be()};
        const std::string_view id = as_chars(ByteSpan(key).subspan(8));
        QUEEN_TRY(const std::uint64_t seq, decode_u64(value));
        const TxidValue moved(Sequence{seq});
        QUEEN_TRY(txn.put(to, txid_key(pid, id).span(), moved.span()));
        QUEEN_TRY(txn.del(from, key));
    }
    return batch.size();
}

}  // namespace

Result<LayoutReport> migrate_layout(store::Env& env, const Tables& tables) {
    LayoutReport report;
    QUEEN_TRY(const auto names, env.table_names());
    const bool has_old_ids =
        std::find(names.begin(), names.end(), layout1_ids_table) != names.end();
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
    if (has_old_ids) {
        QUEEN_TRY(const store::Table old_ids, env.open_table(layout1_ids_table));
        for (;;) {
            QUEEN_TRY(const std::size_t moved, env.write([&](store::WriteTxn& txn) {
                return move_ids(txn, old_ids, tables.transaction_ids);
            }));
            report.ids_moved += moved;
            if (moved < moved_per_txn) {
                break;
            }
        }
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
