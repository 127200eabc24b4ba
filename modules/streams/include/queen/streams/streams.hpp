// queen/streams/streams.hpp — StreamsState: the registered stream queries of a tenant and their
// per-partition state rows, as a deterministic state machine over LMDB tables (L2; no clock, no
// JSON parsing). The server side of the Queen v1 streams endpoints (/streams/v1/queries,
// /streams/v1/cycle, /streams/v1/state/get) rests on it.
//
// The model. A tenant holds any number of queries. A query has a name (the SDK's queryId), a
// query_id (a UUID the HTTP edge generates, so every replica stores the same one), a source
// queue, an optional sink queue and the hash of its operator chain. Each query holds state rows
// per (partition, key): the partition is the source partition the row belongs to (the state
// shard; a queues::PartitionId value, taken here as a plain std::uint64_t), the key any bytes,
// the value opaque bytes (the HTTP layer checks that they are JSON text).
//
// Reset without stalling. A query may hold millions of rows; a reset (or a removal) must not
// delete them inside the entry that asks for it. Every query has an epoch, and the epoch is
// part of every row key: a reset bumps the epoch, so the old rows vanish for every read and
// write at once, on every replica. The old epoch is recorded as garbage and collect() deletes
// its rows later, a bounded number per call, outside any UndoLog (like kv::expire).
//
// Time. Writes take `now` (the entry's timestamp) for created_at / updated_at; nothing reads a
// clock.
//
// Atomicity. Every write of apply() goes through the caller's store::UndoLog: the engine takes
// back a streams cycle whose later operation failed with UndoLog::rollback(). Logical outcomes
// (a conflict, a limit, an unknown query) are results, never errors; errors are storage errors.
//
//     auto streams = StreamsState::open(env, {}).value();
//     auto txn = env.begin_write().value();
//     store::UndoLog undo;
//     auto reg = streams.apply(txn, undo, Register{"q", "src", "", "h1", false, uuid}, index, now);
//     // reg->status == Status::fresh, reg->query_id == uuid
//     auto up = streams.apply(txn, undo, Upsert{uuid, 3, "user-1", bytes}, index, now);
//     auto rows = list_rows(streams.tables(), txn, uuid, 3, "", "", 100);  // any Txn
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"
#include "queen/store/env.hpp"
#include "queen/store/undo.hpp"

namespace queen::streams {

/// Limits apply() checks (a command over one is refused with Status::invalid and changes
/// nothing). The HTTP layer checks the same ones first and answers 400.
struct Options {
    std::size_t name_bytes_max = 256;         ///< query name: 1..this bytes
    std::size_t query_id_bytes_max = 64;      ///< query_id: 1..this bytes (a UUID is 36)
    std::size_t queue_bytes_max = 256;        ///< source 1..this, sink 0..this (0 = none)
    std::size_t config_hash_bytes_max = 256;  ///< config_hash: 1..this bytes
    std::size_t key_bytes_max = 256;          ///< state row key: 1..this bytes (any bytes)
    std::size_t value_bytes_max = 1u << 20;   ///< state row value: 0..this bytes
    std::uint32_t list_limit_max = 1000;      ///< rows or queries per page
    /// Validates the limits (names and row keys fit an LMDB key). Errors:
    /// Errc::invalid_argument.
    [[nodiscard]] Result<void> validate() const;
};

/// How a command ended. Register answers fresh, reused, reset, conflict or invalid; the other
/// commands answer ok, invalid or unknown_query.
enum class Status : std::uint8_t {
    ok = 0,
    /// Register: the name was unknown; the query was created with the command's new_query_id.
    fresh = 1,
    /// Register: same config_hash; source and sink queues updated, state kept.
    reused = 2,
    /// Register: another config_hash with reset: the state is gone (epoch bumped), the new
    /// hash stored.
    reset = 3,
    /// Register: another config_hash without reset; nothing written (`message` is the text
    /// of the HTTP 409).
    conflict = 4,
    /// A field outside Options (`message` names it).
    invalid = 5,
    /// Upsert / Delete: no query has this query_id; ClearState / Remove: none has this name.
    unknown_query = 6,
};

/// POST /streams/v1/queries. Creates the query `name`, or finds it and compares config_hash:
/// the same hash reuses it, `reset` or not (source and sink queues replaced, state kept);
/// another hash with
/// `reset` wipes its state (a new epoch) and stores the hash; another hash without `reset` is
/// a conflict. `new_query_id` is the id a created query gets (required even when the name
/// exists, so the command does not depend on the state; ignored then). A query_id that
/// already names another query is refused (invalid): UUIDs do not collide, a bug might.
struct Register {
    std::string name;
    std::string source_queue;
    std::string sink_queue;  ///< empty: no sink
    std::string config_hash;
    bool reset = false;
    std::string new_query_id;
};

/// Stores `value` under (query_id, partition, key), replacing a row that is there.
struct Upsert {
    std::string query_id;
    std::uint64_t partition = 0;
    std::string key;
    Bytes value;
};

/// Deletes the row (query_id, partition, key); a missing row is ok with existed = false.
struct Delete {
    std::string query_id;
    std::uint64_t partition = 0;
    std::string key;
};

/// Drops every state row of the query `name` (a new epoch), keeping the query, its id and its
/// hash (`queen admin streams reset`).
struct ClearState {
    std::string name;
};

/// Deletes the query `name`, its id and (later, through collect()) all its rows. A query
/// registered again under the name is a new one: a new query_id, no rows.
struct Remove {
    std::string name;
};

/// The outcome of a Register.
struct RegisterResult {
    Status status = Status::fresh;
    /// The query's id: the stored one when the name existed (also on conflict), the command's
    /// new_query_id when fresh; empty when invalid.
    std::string query_id;
    /// The stored config_hash after the command (on conflict: the old one, unchanged).
    std::string config_hash;
    std::uint64_t epoch = 0;  ///< the query's epoch after the command (0 when invalid)
    std::string message;      ///< why, for conflict and invalid
};

/// The outcome of an Upsert, Delete, ClearState or Remove.
struct WriteResult {
    Status status = Status::ok;
    /// Upsert / Delete: a row was there before. ClearState / Remove: the query held rows.
    bool existed = false;
    std::string message;  ///< why, when status != ok
};

/// One registered query as reads see it.
struct Query {
    std::string name;
    std::string query_id;
    std::string source_queue;
    std::string sink_queue;  ///< empty: none
    std::string config_hash;
    /// The compact number the query's row keys start with: given at creation from a counter,
    /// never reused (not even after Remove), the same across resets.
    std::uint64_t number = 0;
    std::uint64_t epoch = 0;  ///< 1 at creation, +1 per reset / ClearState
    TimestampMs created_at{0};
    TimestampMs updated_at{0};  ///< the last Register or ClearState that wrote the query
    friend bool operator==(const Query&, const Query&) = default;
};

/// One state row as reads see it.
struct Row {
    std::string key;
    Bytes value;
    TimestampMs updated_at{0};
    friend bool operator==(const Row&, const Row&) = default;
};

/// A page of rows in key byte order.
struct RowPage {
    std::vector<Row> rows;
    /// The key to pass as `after` for the next page; empty when this page is the last (set only
    /// when a matching row follows the full page).
    std::string next_after;
};

/// A page of queries in name byte order.
struct QueryPage {
    std::vector<Query> queries;
    std::string next_after;  ///< as RowPage::next_after, for names
};

/// What one collect() call removed.
struct CollectResult {
    std::uint64_t deleted = 0;  ///< rows of dead epochs deleted
    bool is_complete = true;    ///< false: garbage is left (the limit stopped it)
};

/// The table handles (names start with "streams."), for the read queries below.
struct Tables {
    store::Table queries;    ///< name -> query record
    store::Table query_ids;  ///< query_id -> name
    store::Table rows;       ///< number, epoch, partition, key -> row record
    store::Table garbage;    ///< number, epoch -> empty: an epoch whose rows collect() deletes
    store::Table meta;       ///< "next_number" -> the next query number
};

/// The streams state of one tenant. Keeps nothing per query or row in memory.
/// Thread-safety: apply() and collect() from one thread (the applier); the read queries need
/// only a Txn and may run on any thread.
class StreamsState {
public:
    /// Opens (creating) the tables in `env`. Errors: Errc::invalid_argument (bad Options);
    /// store errors of open_table.
    [[nodiscard]] static Result<StreamsState> open(store::Env& env, const Options& options);

    /// Writes go through `undo`; `index` is the entry's log index (asserted >= 1; not stored),
    /// `now` its time. A refused command (invalid, conflict, unknown_query) writes nothing.
    /// Errors: storage errors only (then abort the txn), counting queen::Errc::corruption (a
    /// stored record that does not decode, or the tables disagreeing).
    [[nodiscard]] Result<RegisterResult> apply(store::WriteTxn& txn, store::UndoLog& undo,
                                               const Register& command, LogIndex index,
                                               TimestampMs now);
    [[nodiscard]] Result<WriteResult> apply(store::WriteTxn& txn, store::UndoLog& undo,
                                            const Upsert& command, LogIndex index, TimestampMs now);
    [[nodiscard]] Result<WriteResult> apply(store::WriteTxn& txn, store::UndoLog& undo,
                                            const Delete& command, LogIndex index, TimestampMs now);
    [[nodiscard]] Result<WriteResult> apply(store::WriteTxn& txn, store::UndoLog& undo,
                                            const ClearState& command, LogIndex index,
                                            TimestampMs now);
    [[nodiscard]] Result<WriteResult> apply(store::WriteTxn& txn, store::UndoLog& undo,
                                            const Remove& command, LogIndex index, TimestampMs now);

    /// Deletes up to `limit` rows of dead epochs (reset, cleared or removed queries), oldest
    /// query number and epoch first, not through an UndoLog (the engine runs it outside
    /// cycles, like kv::expire). Depends only on the tables, so every replica that runs it at
    /// the same log position deletes the same rows. Errors: storage errors.
    [[nodiscard]] Result<CollectResult> collect(store::WriteTxn& txn, std::size_t limit);
    /// True while some dead epoch still has rows: collect() has work. One cursor step.
    [[nodiscard]] Result<bool> has_garbage(const store::Txn& txn) const;

    [[nodiscard]] const Tables& tables() const noexcept { return tables_; }
    [[nodiscard]] const Options& options() const noexcept { return options_; }

private:
    StreamsState(Tables tables, Options options) noexcept : tables_(tables), options_(options) {}
    Tables tables_;
    Options options_;
};

/// The query named `name`, std::nullopt when there is none (or the name cannot be stored).
/// Errors: storage errors, queen::Errc::corruption.
[[nodiscard]] Result<std::optional<Query>> find_query(const Tables& tables, const store::Txn& txn,
                                                      std::string_view name);
/// The query whose id is `query_id`, std::nullopt when there is none. Two lookups (the id
/// index, then the query). Errors: storage errors, queen::Errc::corruption (the index names
/// a query that is not there).
[[nodiscard]] Result<std::optional<Query>> find_query_by_id(const Tables& tables,
                                                            const store::Txn& txn,
                                                            std::string_view query_id);
/// Queries whose names sort after `after`, at most `limit` (the caller clamps it to
/// 1..Options::list_limit_max; 0 asserts), in name byte order.
[[nodiscard]] Result<QueryPage> list_queries(const Tables& tables, const store::Txn& txn,
                                             std::string_view after, std::uint32_t limit);

/// The rows of (query_id, partition) whose keys are in `keys`, in key byte order, each once
/// (a key asked twice or missing is not an error; missing keys are left out). An unknown
/// query has no rows (tell the two apart with find_query_by_id in the same txn).
/// Errors: storage errors, queen::Errc::corruption.
[[nodiscard]] Result<std::vector<Row>> get_rows(const Tables& tables, const store::Txn& txn,
                                                std::string_view query_id, std::uint64_t partition,
                                                std::span<const std::string> keys);
/// The rows of (query_id, partition) whose keys start with `prefix` (empty: all) and sort
/// after `after`, at most `limit` (clamped to 1..Options::list_limit_max by the caller; 0
/// asserts), in key byte order. Prefixes and `after`s longer than any stored key are fine.
/// Errors: storage errors, queen::Errc::corruption.
[[nodiscard]] Result<RowPage> list_rows(const Tables& tables, const store::Txn& txn,
                                        std::string_view query_id, std::uint64_t partition,
                                        std::string_view prefix, std::string_view after,
                                        std::uint32_t limit);
/// The number of rows the query holds now (its current epoch, every partition; 0 for an
/// unknown query). Walks every row: O(rows), for `queen admin` and `queen inspect`, not for
/// request paths. Errors: storage errors, queen::Errc::corruption.
[[nodiscard]] Result<std::uint64_t> count_rows(const Tables& tables, const store::Txn& txn,
                                               std::string_view query_id);
/// The rows of one partition of a query.
struct PartitionRows {
    std::uint64_t partition = 0;
    std::uint64_t rows = 0;
    friend bool operator==(const PartitionRows&, const PartitionRows&) = default;
};
/// The partitions that hold at least one row of the query now, ascending, each with its number
/// of rows (their sum is count_rows; empty for an unknown query). Walks every row once, values
/// not copied: O(rows), for `queen admin streams show`, not for request paths.
/// Errors: storage errors, queen::Errc::corruption.
[[nodiscard]] Result<std::vector<PartitionRows>> count_rows_per_partition(
    const Tables& tables, const store::Txn& txn, std::string_view query_id);
/// The partitions that hold at least one row of the query now, ascending. One seek per
/// partition (not per row). Errors: storage errors, queen::Errc::corruption.
[[nodiscard]] Result<std::vector<std::uint64_t>> list_partitions(const Tables& tables,
                                                                 const store::Txn& txn,
                                                                 std::string_view query_id);

}  // namespace queen::streams
