// streams/src/state.cpp — StreamsState: Options::validate, open, the commands (Register, Upsert,
// Delete, ClearState, Remove), collect and has_garbage.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "queen/core/error.hpp"
#include "queen/store/keys.hpp"
#include "queen/streams/streams.hpp"
#include "records.hpp"

namespace queen::streams {
namespace {

using detail::QueryRecord;

/// LMDB's limit on one value is 4 GiB; a row record adds a few header bytes to the value.
constexpr std::size_t value_bytes_max_limit = std::size_t{1} << 31;

/// Why a field's length is refused, std::nullopt when it is fine.
std::optional<std::string> check_length(const char* what, std::string_view field,
                                        std::size_t bytes_min, std::size_t bytes_max) {
    if (field.size() < bytes_min || field.size() > bytes_max) {
        return std::string(what) + ": " + std::to_string(field.size()) + " bytes (" +
               std::to_string(bytes_min) + ".." + std::to_string(bytes_max) + ")";
    }
    return std::nullopt;
}

WriteResult refused(Status status, std::string message) {
    WriteResult result;
    result.status = status;
    result.message = std::move(message);
    return result;
}

/// The key of row (query_id, partition, key) in the query's current epoch, into `out`; false
/// when no query has that id.
Result<bool> current_row_key(const store::Txn& txn, const Tables& tables, std::string_view query_id,
                             std::uint64_t partition, std::string_view key,
                             store::KeyBuilder& out) {
    QUEEN_TRY(const auto query, detail::read_query_by_id(txn, tables, query_id));
    if (!query.has_value()) {
        return false;
    }
    detail::row_key(out, query->record.number, query->record.epoch, partition, key);
    return true;
}

RegisterResult register_invalid(std::string message) {
    RegisterResult result;
    result.status = Status::invalid;
    result.message = std::move(message);
    return result;
}

Result<void> put_query(store::WriteTxn& txn, store::UndoLog& undo, const Tables& tables,
                       std::string_view name, const QueryRecord& record) {
    Bytes bytes;
    detail::encode_query_into(bytes, record);
    return undo.put(txn, tables.queries, as_bytes(name), bytes);
}

/// Whether (number, epoch) holds any row: one seek.
Result<bool> epoch_has_rows(const store::Txn& txn, const Tables& tables, std::uint64_t number,
                            std::uint64_t epoch) {
    store::KeyBuilder prefix;
    detail::epoch_key(prefix, number, epoch);
    QUEEN_TRY(auto cursor, txn.cursor(tables.rows));
    QUEEN_TRY(const auto at, cursor.seek(prefix.span()));
    return at.has_value() && at->key.size() >= prefix.size() &&
           std::equal(prefix.span().begin(), prefix.span().end(), at->key.begin());
}

/// Ends the current epoch of a query: its rows become garbage for collect(). Only an epoch
/// that holds rows is recorded, so every garbage key names rows to delete and has_garbage()
/// is one cursor step. Returns whether the epoch held rows.
Result<bool> retire_epoch(store::WriteTxn& txn, store::UndoLog& undo, const Tables& tables,
                          const QueryRecord& record) {
    QUEEN_TRY(const bool has_rows, epoch_has_rows(txn, tables, record.number, record.epoch));
    if (has_rows) {
        store::KeyBuilder garbage;
        detail::epoch_key(garbage, record.number, record.epoch);
        QUEEN_TRY(undo.put(txn, tables.garbage, garbage.span(), ByteSpan{}));
    }
    return has_rows;
}

/// The next query number (1 on a fresh tenant); stores the one after it through `undo`.
Result<std::uint64_t> take_number(store::WriteTxn& txn, store::UndoLog& undo,
                                  const Tables& tables) {
    const ByteSpan key = as_bytes(detail::next_number_key);
    QUEEN_TRY(const auto stored, txn.get(tables.meta, key));
    std::uint64_t number = 1;
    if (stored.has_value()) {
        QUEEN_TRY(number, detail::decode_next_number(*stored));
    }
    const auto next = store::u64be_key(number + 1);
    QUEEN_TRY(undo.put(txn, tables.meta, key, next));
    return number;
}

}  // namespace

Result<void> Options::validate() const {
    const auto fail = [](const std::string& why) {
        return Error{queen::Errc::invalid_argument, "streams options: " + why};
    };
    constexpr std::size_t size_max = store::KeyBuilder::size_max;
    if (name_bytes_max == 0 || query_id_bytes_max == 0 || queue_bytes_max == 0 ||
        config_hash_bytes_max == 0 || key_bytes_max == 0) {
        return fail("every *_bytes_max but value_bytes_max must be at least 1");
    }
    // Names and ids are whole LMDB keys; a row key is 24 bytes of numbers and the key.
    if (name_bytes_max > size_max || query_id_bytes_max > size_max) {
        return fail("name_bytes_max and query_id_bytes_max must fit the " +
                    std::to_string(size_max) + "-byte LMDB key");
    }
    if (key_bytes_max > size_max - detail::row_prefix_bytes) {
        return fail("key_bytes_max (" + std::to_string(key_bytes_max) + ") + " +
                    std::to_string(detail::row_prefix_bytes) + " bytes of framing exceed the " +
                    std::to_string(size_max) + "-byte LMDB key");
    }
    if (value_bytes_max > value_bytes_max_limit) {
        return fail("value_bytes_max (" + std::to_string(value_bytes_max) + ") above " +
                    std::to_string(value_bytes_max_limit));
    }
    if (list_limit_max < 1) {
        return fail("list_limit_max must be at least 1");
    }
    return {};
}

Result<StreamsState> StreamsState::open(store::Env& env, const Options& options) {
    QUEEN_TRY(options.validate());
    Tables tables;
    QUEEN_TRY(tables.queries, env.open_table("streams.queries"));
    QUEEN_TRY(tables.query_ids, env.open_table("streams.query_ids"));
    QUEEN_TRY(tables.rows, env.open_table("streams.rows"));
    QUEEN_TRY(tables.garbage, env.open_table("streams.garbage"));
    QUEEN_TRY(tables.meta, env.open_table("streams.meta"));
    return StreamsState(tables, options);
}

Result<RegisterResult> StreamsState::apply(store::WriteTxn& txn, store::UndoLog& undo,
                                           const Register& command, LogIndex index,
                                           TimestampMs now) {
    QUEEN_ASSERT(index.value() > 0, "streams: log indexes start at 1");
    for (auto why :
         {check_length("name", command.name, 1, options_.name_bytes_max),
          check_length("source_queue", command.source_queue, 1, options_.queue_bytes_max),
          check_length("sink_queue", command.sink_queue, 0, options_.queue_bytes_max),
          check_length("config_hash", command.config_hash, 1, options_.config_hash_bytes_max),
          check_length("query_id", command.new_query_id, 1, options_.query_id_bytes_max)}) {
        if (why.has_value()) {
            return register_invalid(std::move(*why));
        }
    }

    QUEEN_TRY(auto stored, detail::read_query(txn, tables_, command.name));
    RegisterResult result;
    if (!stored.has_value()) {
        QUEEN_TRY(const auto owner, txn.get(tables_.query_ids, as_bytes(command.new_query_id)));
        if (owner.has_value()) {
            return register_invalid("query_id: '" + command.new_query_id +
                                    "' already names query '" + std::string(as_chars(*owner)) +
                                    "'");
        }
        QueryRecord record;
        QUEEN_TRY(record.number, take_number(txn, undo, tables_));
        record.epoch = 1;
        record.created_at = now;
        record.updated_at = now;
        record.query_id = command.new_query_id;
        record.source_queue = command.source_queue;
        record.sink_queue = command.sink_queue;
        record.config_hash = command.config_hash;
        QUEEN_TRY(put_query(txn, undo, tables_, command.name, record));
        QUEEN_TRY(
            undo.put(txn, tables_.query_ids, as_bytes(record.query_id), as_bytes(command.name)));
        result.status = Status::fresh;
        result.query_id = std::move(record.query_id);
        result.config_hash = std::move(record.config_hash);
        result.epoch = record.epoch;
        return result;
    }

    QueryRecord& record = *stored;
    if (record.config_hash != command.config_hash && !command.reset) {
        result.status = Status::conflict;
        result.message = "config_hash mismatch: operator chain changed for queryId '" +
                         command.name +
                         "'. Pass reset:true to wipe existing state, or use a new queryId.";
        result.query_id = std::move(record.query_id);
        result.config_hash = std::move(record.config_hash);
        result.epoch = record.epoch;
        return result;
    }
    if (record.config_hash != command.config_hash) {
        // The new operator chain cannot read the old state: a new epoch hides every old row at
        // once; collect() deletes them later.
        QUEEN_TRY(retire_epoch(txn, undo, tables_, record));
        ++record.epoch;
        record.config_hash = command.config_hash;
        result.status = Status::reset;
    } else {
        result.status = Status::reused;
    }
    record.source_queue = command.source_queue;
    record.sink_queue = command.sink_queue;
    record.updated_at = now;
    QUEEN_TRY(put_query(txn, undo, tables_, command.name, record));
    result.query_id = std::move(record.query_id);
    result.config_hash = std::move(record.config_hash);
    result.epoch = record.epoch;
    return result;
}

Result<WriteResult> StreamsState::apply(store::WriteTxn& txn, store::UndoLog& undo,
                                        const Upsert& command, LogIndex index, TimestampMs now) {
    QUEEN_ASSERT(index.value() > 0, "streams: log indexes start at 1");
    for (auto why : {check_length("query_id", command.query_id, 1, options_.query_id_bytes_max),
                     check_length("key", command.key, 1, options_.key_bytes_max),
                     check_length("value", as_chars(command.value), 0, options_.value_bytes_max)}) {
        if (why.has_value()) {
            return refused(Status::invalid, std::move(*why));
        }
    }
    store::KeyBuilder key;
    QUEEN_TRY(const bool is_known,
              current_row_key(txn, tables_, command.query_id, command.partition, command.key, key));
    if (!is_known) {
        return refused(Status::unknown_query, "no query has query_id '" + command.query_id + "'");
    }
    Bytes record;
    detail::encode_row_into(record, now, command.value);
    // One lookup tells both the undo log and the caller what was there.
    QUEEN_TRY(const auto old, txn.get(tables_.rows, key.span()));
    WriteResult result;
    result.existed = old.has_value();
    undo.record(tables_.rows, key.span(), old);
    QUEEN_TRY(txn.put(tables_.rows, key.span(), record));
    return result;
}

Result<WriteResult> StreamsState::apply(store::WriteTxn& txn, store::UndoLog& undo,
                                        const Delete& command, LogIndex index,
                                        TimestampMs /*now*/) {
    QUEEN_ASSERT(index.value() > 0, "streams: log indexes start at 1");
    for (auto why : {check_length("query_id", command.query_id, 1, options_.query_id_bytes_max),
                     check_length("key", command.key, 1, options_.key_bytes_max)}) {
        if (why.has_value()) {
            return refused(Status::invalid, std::move(*why));
        }
    }
    store::KeyBuilder key;
    QUEEN_TRY(const bool is_known,
              current_row_key(txn, tables_, command.query_id, command.partition, command.key, key));
    if (!is_known) {
        return refused(Status::unknown_query, "no query has query_id '" + command.query_id + "'");
    }
    WriteResult result;
    QUEEN_TRY(result.existed, undo.del(txn, tables_.rows, key.span()));
    return result;
}

Result<WriteResult> StreamsState::apply(store::WriteTxn& txn, store::UndoLog& undo,
                                        const ClearState& command, LogIndex index,
                                        TimestampMs now) {
    QUEEN_ASSERT(index.value() > 0, "streams: log indexes start at 1");
    if (auto why = check_length("name", command.name, 1, options_.name_bytes_max)) {
        return refused(Status::invalid, std::move(*why));
    }
    QUEEN_TRY(auto stored, detail::read_query(txn, tables_, command.name));
    if (!stored.has_value()) {
        return refused(Status::unknown_query, "no query named '" + command.name + "'");
    }
    WriteResult result;
    QUEEN_TRY(result.existed, retire_epoch(txn, undo, tables_, *stored));
    ++stored->epoch;
    stored->updated_at = now;
    QUEEN_TRY(put_query(txn, undo, tables_, command.name, *stored));
    return result;
}

Result<WriteResult> StreamsState::apply(store::WriteTxn& txn, store::UndoLog& undo,
                                        const Remove& command, LogIndex index,
                                        TimestampMs /*now*/) {
    QUEEN_ASSERT(index.value() > 0, "streams: log indexes start at 1");
    if (auto why = check_length("name", command.name, 1, options_.name_bytes_max)) {
        return refused(Status::invalid, std::move(*why));
    }
    QUEEN_TRY(const auto stored, detail::read_query(txn, tables_, command.name));
    if (!stored.has_value()) {
        return refused(Status::unknown_query, "no query named '" + command.name + "'");
    }
    WriteResult result;
    // The query's number is never given again, so its rows stay unreachable until collect().
    QUEEN_TRY(result.existed, retire_epoch(txn, undo, tables_, *stored));
    QUEEN_TRY(const bool had_id, undo.del(txn, tables_.query_ids, as_bytes(stored->query_id)));
    if (!had_id) {
        return Error{queen::Errc::corruption, "streams: query '" + command.name + "' has id '" +
                                                  stored->query_id +
                                                  "', which streams.query_ids lacks"};
    }
    QUEEN_TRY(const bool had_query, undo.del(txn, tables_.queries, as_bytes(command.name)));
    QUEEN_ASSERT(had_query, "streams: the query read a moment ago is gone");
    return result;
}

Result<CollectResult> StreamsState::collect(store::WriteTxn& txn, std::size_t limit) {
    CollectResult result;
    QUEEN_TRY(auto garbage, txn.cursor(tables_.garbage));
    QUEEN_TRY(auto rows, txn.cursor(tables_.rows));
    QUEEN_TRY(auto dead, garbage.first());
    store::KeyBuilder prefix;
    while (dead.has_value()) {
        QUEEN_TRY(const auto epoch, detail::decode_epoch_key(dead->key));
        detail::epoch_key(prefix, epoch.number, epoch.epoch);
        QUEEN_TRY(auto row, rows.seek(prefix.span()));
        while (row.has_value() && row->key.size() > prefix.size() &&
               std::equal(prefix.span().begin(), prefix.span().end(), row->key.begin())) {
            if (result.deleted == limit) {
                result.is_complete = false;
                return result;
            }
            QUEEN_TRY(rows.del());
            ++result.deleted;
            QUEEN_TRY(row, rows.next());
        }
        // The epoch is empty: its garbage key goes, and the next one (if any) still has rows.
        QUEEN_TRY(garbage.del());
        QUEEN_TRY(dead, garbage.next());
    }
    return result;
}

Result<bool> StreamsState::has_garbage(const store::Txn& txn) const {
    QUEEN_TRY(auto cursor, txn.cursor(tables_.garbage));
    QUEEN_TRY(const auto first, cursor.first());
    return first.has_value();
}

}  // namespace queen::streams
