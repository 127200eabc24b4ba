// queues/src/state.hpp — the private state of QueueState: table handles, the memory index and
// the undo journal of an atomic (transaction) entry.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "queen/queues/queues.hpp"
#include "records.hpp"

namespace queen::queues::detail {

/// One partition in memory: 40 bytes, indexed by partition id in a dense vector. Everything
/// else about a partition (name, creation time) stays in LMDB.
struct PartitionMem {
    QueueId queue;  ///< 0 = no such partition (never assigned or deleted)
    std::uint32_t unused = 0;
    std::uint64_t first_sequence = 1;
    std::uint64_t last_sequence = 0;
    std::int64_t last_created_ms = 0;
    std::uint64_t message_count = 0;
};
static_assert(sizeof(PartitionMem) == 40, "PartitionMem grew: update docs/engine.md");

/// Candidate partitions of one (queue, group). Invariant: every partition that is deliverable
/// to the group at time t is in `ready` or in `deferred` with a due time <= t. Entries may be
/// stale (not deliverable): pop checks against LMDB and moves them. Pop order is a function of
/// LMDB state only (smallest deliverable id after round_robin_position, wrapping), so replicas
/// and restarts choose the same partitions whatever the cache holds.
struct GroupCandidates {
    std::uint64_t round_robin_position = 0;
    std::set<std::uint64_t> ready;
    std::set<std::pair<std::int64_t, std::uint64_t>> deferred;     ///< (due ms, partition)
    std::unordered_map<std::uint64_t, std::int64_t> deferred_due;  ///< lookup only
};

struct QueueMem {
    std::string name;
    QueueOptions options;
    std::uint64_t message_count = 0;
    std::uint64_t partition_count = 0;
    std::map<std::uint32_t, GroupCandidates> groups;  ///< by group id
};

/// Undo records of the entry being applied atomically.
struct Journal {
    struct StoreUndo {
        store::Table table;
        Bytes key;
        std::optional<Bytes> old_value;
    };
    bool is_active = false;
    MetaRecord meta;
    std::size_t partitions_size = 0;
    std::size_t wakeups_size = 0;
    std::vector<std::pair<std::uint64_t, PartitionMem>> partitions;  ///< first old value each
    std::set<std::uint64_t> partitions_saved;
    std::vector<std::uint32_t> created_queues;
    std::vector<std::string> created_groups;
    std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> queue_counts;  ///< old
    std::vector<StoreUndo> store;
};

/// Transparent string hash: the name maps are searched with string_views (no temporary
/// std::string per lookup).
struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const noexcept {
        return std::hash<std::string_view>{}(name);
    }
};
using NameIds = std::unordered_map<std::string, std::uint32_t, NameHash, std::equal_to<>>;

struct State {
    Options options;
    Tables tables;
    MetaRecord meta;
    std::vector<PartitionMem> partitions{1};  ///< index 0 unused
    std::map<std::uint32_t, QueueMem> queues;
    NameIds queue_ids;  ///< lookup only
    NameIds group_ids;  ///< lookup only
    /// lease id -> (partition, group) it was granted on; may hold stale pairs (checked against
    /// the cursor record before use). Lookup only.
    std::unordered_map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint32_t>>> leases;
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>, SubscriptionRecord>
        subscriptions;
    std::set<std::uint64_t> dirty_partitions;
    std::vector<Wakeup> wakeups;
    Journal journal;
    /// Reused encode buffer of the record being written (its capacity survives across puts;
    /// the bytes are dead once the put returned).
    Bytes scratch;
};

}  // namespace queen::queues::detail
