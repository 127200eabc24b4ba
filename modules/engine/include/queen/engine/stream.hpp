// queen/engine/stream.hpp — the engine's commands of the streams endpoints (docs/engine.md and
// docs/streams.md): a query's registration, the cycle (state ops + sink pushes + the ack of the
// source batch, one entry) and the admin commands (clear a query's state, remove a query). The
// state lives in modules/streams; the rows of cleared epochs are deleted by Due entries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/queues/types.hpp"
#include "queen/streams/streams.hpp"

namespace queen::engine {

/// POST /streams/v1/queries: registers (or finds, or resets) a stream query
/// (streams::Register; `new_query_id` is generated at the HTTP edge so every replica stores the
/// same). Its answer: StreamRegisterResult.
struct StreamRegister {
    streams::Register query;
};
struct StreamRegisterResult {
    streams::RegisterResult result;
};

/// One state operation of a cycle, scoped to the cycle's (query_id, partition). check and
/// check_absent write nothing: the cycle fails ("state check failed ...") unless the row holds
/// exactly `value` (check) or is absent (check_absent). A runner that keeps a partition's
/// state in memory checks a row it rewrites every cycle, so a cycle computed from state
/// another runner has changed since is refused (an extension of the v1 contract).
struct StreamStateOp {
    enum class Kind : std::uint8_t { upsert = 0, remove = 1, check = 2, check_absent = 3 };
    Kind kind = Kind::upsert;
    std::string key;
    Bytes value;  ///< upsert: the row's JSON text; check: the text the row must hold
};

/// POST /streams/v1/cycle, one entry applied all or nothing: the state ops, the sink pushes
/// (a duplicate transaction id is not a failure: normal push semantics) and the ack of the
/// source batch. The ack names a message of `partition` (its item's partition and group are
/// the cycle's); completed moves the cursor to it and, with release_lease, releases the lease
/// at once (queues::LeaseRelease::always; without: never); failed and dlq dead-letter it (the
/// error by default "Streaming cycle reported failure"), move the cursor and release the lease.
struct StreamCycle {
    std::string query_id;
    /// When not 0, the cycle is refused ("epoch mismatch ...") unless the query is at this
    /// epoch (the one its registration answered): a runner cannot write state computed before
    /// a reset or a `queen admin streams reset` into the query's new, empty state (an
    /// extension of the v1 contract; the official clients do not send it).
    std::uint64_t epoch = 0;
    queues::PartitionId partition{0};
    std::vector<StreamStateOp> state_ops;
    std::vector<queues::PushItem> push_items;
    std::optional<queues::AckItem> ack;
    bool release_lease = true;
};
struct StreamCycleResult {
    bool success = false;
    std::string error;         ///< why, when !success (nothing was applied)
    std::string source_queue;  ///< the query's source queue
    std::uint64_t state_ops_applied = 0;
    std::vector<queues::PushItemResult> push_results;
    bool has_ack = false;
    bool lease_released = false;
    bool dlq = false;
};

/// `queen admin streams reset|delete`: clear drops every state row of the query `name` (a new
/// epoch; its id and hash stay, runners carry on from empty state); remove deletes the query
/// (its rows go with the next Due entries). Its answer: StreamAdminResult (ok, or
/// unknown_query).
struct StreamAdmin {
    enum class Op : std::uint8_t { clear = 0, remove = 1 } op = Op::clear;
    std::string name;
};
struct StreamAdminResult {
    streams::WriteResult result;
    /// clear, when ok: the query's id and its epoch after the command (the new one), read in
    /// the entry's txn, so the answer needs no read of its own.
    std::string query_id;
    std::uint64_t epoch = 0;
};

}  // namespace queen::engine
