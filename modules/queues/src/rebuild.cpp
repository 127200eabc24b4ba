// queues/src/rebuild.cpp — QueueState::open and rebuild: the memory index recreated from LMDB.
#include "apply.hpp"
#include "layout.hpp"

namespace queen::queues {

using detail::GroupCandidates;
using detail::meta_state_key;
using detail::PartitionMem;
using detail::QueueMem;
using detail::State;

Result<QueueState> QueueState::open(store::Env& env, const Options& options) {
    QUEEN_TRY(options.validate());
    auto state = std::make_unique<detail::State>();
    state->options = options;
    Tables& t = state->tables;
    const std::pair<store::Table*, const char*> names[] = {
        {&t.meta, "q.meta"},
        {&t.queues, "q.queues"},
        {&t.queue_names, "q.queue_names"},
        {&t.partitions, "q.partitions"},
        {&t.partition_names, "q.partition_names"},
        {&t.messages, blocks_table_name.data()},  // a literal: NUL-terminated
        {&t.message_index, "q.block_index"},
        {&t.transaction_ids, "q.ids"},
        {&t.groups, "q.groups"},
        {&t.group_names, "q.group_names"},
        {&t.cursors, "q.cursors"},
        {&t.group_queues, "q.group_queues"},
        {&t.subscriptions, "q.subscriptions"},
        {&t.dlq, "q.dlq"},
        {&t.buffer, "q.buffer"},
        {&t.traces, "q.traces"},
    };
    for (const auto& [table, name] : names) {
        // open_table may report map_full after growing the map: try again once grown.
        for (int attempt = 0;; ++attempt) {
            // Message blocks carry their own CRC-32C (block format 4): the store adds none.
            auto opened =
                env.open_table(name, table == &t.messages ? store::TableFlags::self_checked
                                                          : store::TableFlags::none);
            if (opened) {
                *table = *opened;
                break;
            }
            if (!opened.error().is(store::Errc::map_full) || attempt > 8) {
                return std::move(opened).error();
            }
        }
    }
    QUEEN_TRY(const detail::LayoutReport report, detail::migrate_layout(env, t));
    if (report.is_migrated) {
        state->migration = LayoutMigration{report.from, detail::layout_version, report.ids_moved,
                                           report.blocks_moved};
    }
    QueueState queues(std::move(state));
    QUEEN_TRY(auto txn, env.begin_read());
    QUEEN_TRY(queues.rebuild(txn));
    return queues;
}

std::optional<QueueState::LayoutMigration> QueueState::migration() const noexcept {
    return state_->migration;
}

Result<void> QueueState::rebuild(const store::Txn& txn) {
    State& s = *state_;
    const Tables tables = s.tables;
    const Options options = s.options;
    const bool has_matching_pops = s.has_matching_pops;
    auto migration = s.migration;
    s = State{};
    s.tables = tables;
    s.options = options;
    s.has_matching_pops = has_matching_pops;
    s.migration = migration;
    QUEEN_TRY(auto meta, detail::get_record(txn, s.tables.meta, as_bytes(meta_state_key),
                                            detail::decode_meta));
    s.meta = meta.value_or(detail::MetaRecord{});
    QUEEN_TRY(auto fill, txn.get(s.tables.meta, as_bytes(detail::meta_leaf_fill_key)));
    if (fill) {
        QUEEN_TRY(const std::uint64_t value,
                  detail::decode_varint_value(*fill, "blocks.leaf_fill"));
        s.blocks_leaf_fill =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(value, detail::block_leaf_bytes));
    }
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.queues));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            store::KeyReader key(entry->key);
            const QueueId qid{key.u32be()};
            QUEEN_TRY(auto record, detail::decode_queue(entry->value));
            QueueMem mem;
            mem.name = record.name;
            mem.namespace_name = record.namespace_name;
            mem.task = record.task;
            mem.options = record.options;
            s.queue_ids.emplace(record.name, qid);
            s.queues.emplace(qid, std::move(mem));
            QUEEN_TRY(entry, cursor.next());
        }
    }
    s.partitions.assign(s.meta.next_partition_id.value(), PartitionMem{});
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.partitions));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            store::KeyReader key(entry->key);
            const PartitionId pid{key.u64be()};
            QUEEN_TRY(auto record, detail::decode_partition(entry->value));
            if (pid.value() >= s.partitions.size() || !s.queues.contains(record.queue)) {
                return Error{queen::Errc::corruption,
                             "queues: partition " + std::to_string(pid.value()) + " out of place"};
            }
            s.partition(pid) = PartitionMem{record.queue,
                                            0,
                                            record.first_sequence,
                                            record.last_sequence,
                                            record.last_created_at.value(),
                                            record.message_count,
                                            record.tail};
            QueueMem& q = s.queues.at(record.queue);
            q.partition_count++;
            q.message_count += record.message_count;
            QUEEN_TRY(entry, cursor.next());
        }
    }
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.groups));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            QUEEN_TRY(auto gid, detail::decode_id<GroupId>(entry->value));
            s.group_ids.emplace(std::string(detail::name_from_key(entry->key)), gid);
            QUEEN_TRY(entry, cursor.next());
        }
    }
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.subscriptions));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            store::KeyReader key(entry->key);
            const GroupId gid{key.u32be()};
            const QueueId qid{key.u32be()};
            const PartitionId pid{key.u64be()};
            QUEEN_TRY(auto record, detail::decode_subscription(entry->value));
            s.subscriptions.emplace(std::make_tuple(gid, qid, pid), record);
            QUEEN_TRY(entry, cursor.next());
        }
    }
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.group_queues));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            store::KeyReader key(entry->key);
            const QueueId qid{key.u32be()};
            const GroupId gid{key.u32be()};
            QUEEN_TRY(auto record, detail::decode_group_queue(entry->value));
            auto q = s.queues.find(qid);
            if (q != s.queues.end()) {
                GroupCandidates& gc = q->second.groups[gid];
                s.index_candidates(gc, qid, gid);
                gc.round_robin_position = record.round_robin_position;
            }
            QUEEN_TRY(entry, cursor.next());
        }
    }
    // Seed candidates: every partition with messages for every group of its queue; the cursor
    // pass below then drops consumed ones and defers leased ones.
    for (std::uint64_t index = 1; index < s.partitions.size(); ++index) {  // index = id
        const PartitionMem& mem = s.partitions[index];
        if (mem.queue.value() == 0 || mem.message_count == 0) {
            continue;
        }
        for (auto& [gid, gc] : s.queues.at(mem.queue).groups) {
            gc.ready.insert(PartitionId{index});
        }
    }
    {
        QUEEN_TRY(auto cursor, txn.cursor(s.tables.cursors));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            store::KeyReader key(entry->key);
            const PartitionId pid{key.u64be()};
            const GroupId gid{key.u32be()};
            QUEEN_TRY(auto record, detail::decode_cursor(entry->value));
            if (s.has_partition(pid)) {
                const PartitionMem& mem = s.partition(pid);
                if (record.lease_id.value() != 0) {
                    s.leases[record.lease_id].emplace_back(pid, gid);
                }
                auto& groups = s.queues.at(mem.queue).groups;
                if (auto g = groups.find(gid); g != groups.end()) {
                    if (record.lease_id.value() != 0) {
                        defer(g->second, pid, record.lease_expires_ms);
                    } else if (record.not_before_ms > 0 && record.consumed < mem.last_sequence) {
                        defer(g->second, pid, record.not_before_ms);
                    } else if (record.consumed >= mem.last_sequence) {
                        make_idle(g->second, pid);
                    }
                }
            }
            QUEEN_TRY(entry, cursor.next());
        }
    }
    return {};
}

}  // namespace queen::queues
