// queues/src/state.cpp — shared core: journaled writes, lookups, lease index, index accessors.
#include <algorithm>
#include <sstream>

#include "apply.hpp"
#include "queen/core/assert.hpp"

namespace queen::queues::detail {
namespace {

/// The immutable part of partition `pid`'s record (from the cache, else read from LMDB and
/// cached); nullptr when there is no such record. The pointer is valid until the cache changes.
Result<const detail::PartitionInfo*> partition_info(State& s, const store::Txn& txn,
                                                    PartitionId pid) {
    if (const detail::PartitionInfo* info = s.partition_cache.find(pid); info != nullptr) {
        return info;
    }
    QUEEN_TRY(auto record,
              detail::get_record(txn, s.tables.partitions, detail::partition_key(pid).span(),
                                 detail::decode_partition));
    if (!record) {
        return nullptr;
    }
    return &s.partition_cache.add_info(
        pid, detail::PartitionInfo{record->queue, std::move(record->name), record->created_at});
}

void encode_partition(Bytes& out, const detail::PartitionInfo& info, const PartitionMem& mem) {
    detail::encode_partition_into(out, info.queue, info.name, info.created_at, mem.first_sequence,
                                  mem.last_sequence, TimestampMs{mem.last_created_ms},
                                  mem.message_count, mem.tail);
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Journaled storage writes. Outside an atomic entry they go straight to the txn.

Result<void> put(State& s, store::WriteTxn& txn, store::Table table, ByteSpan key, ByteSpan value) {
    if (s.journal.is_active) {
        QUEEN_TRY(auto old, txn.get(table, key));
        s.journal.record(table, key, old);
    }
    return txn.put(table, key, value);
}

Result<void> put_over(State& s, store::WriteTxn& txn, store::Table table, ByteSpan key,
                      ByteSpan value, std::optional<ByteSpan> old) {
    if (s.journal.is_active) {
        s.journal.record(table, key, old);
    }
    return txn.put(table, key, value);
}

Result<void> append_new(State& s, store::WriteTxn& txn, store::Table table, ByteSpan key,
                        ByteSpan value) {
    if (s.journal.is_active) {
        s.journal.record(table, key, std::nullopt);
    }
    return txn.put(table, key, value, store::PutFlags::append);
}

Result<std::optional<ByteSpan>> put_if_absent(State& s, store::WriteTxn& txn, store::Table table,
                                              ByteSpan key, ByteSpan value) {
    QUEEN_TRY(auto existing, txn.put_if_absent(table, key, value));
    if (!existing && s.journal.is_active) {
        s.journal.record(table, key, std::nullopt);
    }
    return existing;
}

Result<std::optional<ByteSpan>> put_transaction_id(State& s, store::WriteTxn& txn, ByteSpan key,
                                                   ByteSpan value) {
    const store::Table table = s.tables.transaction_ids;
    if (!s.ids_last) {
        QUEEN_TRY(auto cursor, txn.cursor(table));
        QUEEN_TRY(auto last, cursor.last());
        s.ids_last = last ? Bytes(last->key.begin(), last->key.end()) : Bytes{};
    }
    if (!std::lexicographical_compare(s.ids_last->begin(), s.ids_last->end(), key.begin(),
                                      key.end())) {
        return put_if_absent(s, txn, table, key, value);  // not after the last: a descent
    }
    auto appended = txn.put(table, key, value, store::PutFlags::append);
    if (appended) {
        if (s.journal.is_active) {
            s.journal.record(table, key, std::nullopt);
        }
        s.ids_last->assign(key.begin(), key.end());
        return std::optional<ByteSpan>{};
    }
    if (!appended.error().is(store::Errc::append_out_of_order)) {
        return appended.error();
    }
    return put_if_absent(s, txn, table, key, value);
}

Result<void> save_meta(State& s, store::WriteTxn& txn) {
    detail::encode_into(s.meta_scratch, s.meta);
    QUEEN_TRY(put(s, txn, s.tables.meta, as_bytes(meta_state_key), s.meta_scratch));
    const detail::VarintValue fill(s.blocks_leaf_fill);
    QUEEN_TRY(put(s, txn, s.tables.meta, as_bytes(meta_leaf_fill_key), fill.span()));
    s.is_meta_dirty = false;
    return {};
}

PartitionMem& touch_partition(State& s, PartitionId pid) {
    QUEEN_ASSERT(pid.value() < s.partitions.size(), "partition id out of range: ", pid);
    if (s.journal.is_active && pid.value() < s.journal.partitions_size &&
        s.journal.partitions_saved.insert(pid).second) {
        s.journal.partitions.emplace_back(pid, s.partition(pid));
    }
    s.dirty_partitions.push_back(pid);
    return s.partition(pid);
}

void touch_queue_count(State& s, QueueId qid) {
    if (s.journal.is_active && !s.journal.queue_counts.contains(qid)) {
        const QueueMem& q = s.queues.at(qid);
        s.journal.queue_counts.emplace(qid, std::make_pair(q.message_count, q.partition_count));
    }
}

Result<void> flush_partitions(State& s, store::WriteTxn& txn) {
    std::sort(s.dirty_partitions.begin(), s.dirty_partitions.end());
    s.dirty_partitions.erase(std::unique(s.dirty_partitions.begin(), s.dirty_partitions.end()),
                             s.dirty_partitions.end());
    for (const PartitionId pid : s.dirty_partitions) {
        const PartitionMem& mem = s.partition(pid);
        if (mem.queue.value() == 0) {
            continue;
        }
        const auto key = detail::partition_key(pid);
        QUEEN_TRY(const detail::PartitionInfo* info, partition_info(s, txn, pid));
        QUEEN_ASSERT(info != nullptr, "partition in memory but not in LMDB: ", pid);
        encode_partition(s.scratch, *info, mem);
        if (!s.journal.is_active) {
            QUEEN_TRY(txn.put(s.tables.partitions, key.span(), s.scratch));
            continue;
        }
        const auto& saved = s.journal.partitions;
        const auto old = std::find_if(saved.begin(), saved.end(),
                                      [&](const auto& entry) { return entry.first == pid; });
        if (old == saved.end()) {
            QUEEN_TRY(put(s, txn, s.tables.partitions, key.span(), s.scratch));
            continue;
        }
        encode_partition(s.old_scratch, *info, old->second);
        QUEEN_TRY(put_over(s, txn, s.tables.partitions, key.span(), s.scratch, s.old_scratch));
    }
    s.dirty_partitions.clear();
    return {};
}

Result<std::uint64_t> delete_prefix(State& s, store::WriteTxn& txn, store::Table table,
                                    ByteSpan prefix) {
    QUEEN_ASSERT(!s.journal.is_active, "bulk deletes are not journaled");
    std::uint64_t count = 0;
    QUEEN_TRY(auto cursor, txn.cursor(table));
    QUEEN_TRY(auto entry, cursor.seek(prefix));
    while (entry && detail::has_prefix(entry->key, prefix)) {
        QUEEN_TRY(cursor.del());
        ++count;
        QUEEN_TRY(entry, cursor.next());  // after del(): the entry that followed it
    }
    return count;
}

Result<void> delete_partition_ids(State& s, store::WriteTxn& txn, PartitionId pid) {
    QUEEN_ASSERT(!s.journal.is_active, "bulk deletes are not journaled");
    store::KeyBuilder text_ids;
    text_ids.u8(detail::txid_key_text).u64be(pid.value());
    QUEEN_TRY(delete_prefix(s, txn, s.tables.transaction_ids, text_ids.span()));
    // UUID ids are keyed id first: one delete per stored message, in chunks (a scan's records
    // are not valid across the txn's writes).
    constexpr std::size_t chunk = 1024;
    const PartitionMem& mem = s.partition(pid);
    Sequence from = mem.first_sequence;
    std::vector<std::string> ids;
    while (mem.message_count > 0 && from <= mem.last_sequence) {
        ids.clear();
        {
            QUEEN_TRY(auto scan,
                      detail::MessageScan::open(txn, s.tables, pid, s.partition(pid).tail, from));
            QUEEN_TRY(auto stored, scan.next());
            while (stored && ids.size() < chunk) {
                QUEEN_TRY(auto message, detail::decode_message(stored->record));
                ids.emplace_back(message.transaction_id.view());
                from = stored->sequence.next();
                QUEEN_TRY(stored, scan.next());
            }
            if (!stored) {
                from = mem.last_sequence.next();
            }
        }
        for (const std::string& id : ids) {
            QUEEN_TRY(txn.del(s.tables.transaction_ids, detail::txid_key(pid, id).span()));
        }
    }
    return {};
}

// ------------------------------------------------------------------------------------------
// Lookups, and the lease index.

std::optional<QueueId> find_queue(const State& s, std::string_view name) {
    auto it = s.queue_ids.find(name);
    if (it == s.queue_ids.end()) {
        return std::nullopt;
    }
    return it->second;
}

Result<QueueId> create_queue(State& s, store::WriteTxn& txn, std::string_view name,
                             std::string namespace_name, std::string task,
                             const QueueOptions& options, TimestampMs now) {
    const QueueId qid = s.meta.next_queue_id;
    s.meta.next_queue_id = qid.next();
    QueueMem mem;
    mem.name = std::string(name);
    mem.namespace_name = namespace_name;
    mem.task = task;
    mem.options = options;
    detail::QueueRecord record{std::string(name), std::move(namespace_name), std::move(task), now,
                               options};
    QUEEN_TRY(put(s, txn, s.tables.queues, detail::queue_key(qid).span(), detail::encode(record)));
    QUEEN_TRY(put(s, txn, s.tables.queue_names, detail::name_key(name).span(),
                  detail::encode_u64(qid.value())));
    QUEEN_TRY(save_meta(s, txn));
    s.queues.emplace(qid, std::move(mem));
    s.queue_ids.emplace(std::string(name), qid);
    if (s.journal.is_active) {
        s.journal.created_queues.push_back(qid);
    }
    return qid;
}

Result<std::optional<PartitionId>> find_partition(State& s, const store::Txn& txn, QueueId qid,
                                                  std::string_view name) {
    if (const PartitionId cached = s.partition_cache.find(qid, name); cached.value() != 0) {
        QUEEN_ASSERT(cached.value() < s.partitions.size() && s.partition(cached).queue == qid,
                     "partition cache names a partition of another queue: ", cached);
        return std::optional<PartitionId>{cached};
    }
    QUEEN_TRY(auto raw,
              txn.get(s.tables.partition_names, detail::partition_name_key(qid, name).span()));
    if (!raw) {
        return std::optional<PartitionId>{};
    }
    QUEEN_TRY(auto pid, detail::decode_id<PartitionId>(*raw));
    s.partition_cache.add_name(qid, name, pid);
    return std::optional<PartitionId>{pid};
}

Result<PartitionId> get_or_create_partition(State& s, store::WriteTxn& txn, QueueId qid,
                                            std::string_view name, TimestampMs now) {
    QUEEN_TRY(auto found, find_partition(s, txn, qid, name));
    if (found) {
        return *found;
    }
    const PartitionId pid = s.meta.next_partition_id;
    s.meta.next_partition_id = pid.next();
    QUEEN_ASSERT(pid.value() < (std::uint64_t{1} << 48), "partition ids exhausted");
    detail::PartitionRecord record;
    record.queue = qid;
    record.name = std::string(name);
    record.created_at = now;
    QUEEN_TRY(put(s, txn, s.tables.partitions, detail::partition_key(pid).span(),
                  detail::encode(record)));
    QUEEN_TRY(put(s, txn, s.tables.partition_names, detail::partition_name_key(qid, name).span(),
                  detail::encode_u64(pid.value())));
    QUEEN_TRY(save_meta(s, txn));
    if (s.partitions.size() <= pid.value()) {
        s.partitions.resize(pid.value() + 1);
    }
    s.partition(pid) = PartitionMem{qid, 0, Sequence{1}, Sequence{0}, 0, 0};
    s.partition_cache.add(pid, detail::PartitionInfo{qid, std::string(name), now});
    touch_queue_count(s, qid);
    s.queues.at(qid).partition_count++;
    return pid;
}

Result<GroupId> get_or_create_group(State& s, store::WriteTxn& txn, std::string_view name) {
    if (auto it = s.group_ids.find(name); it != s.group_ids.end()) {
        return it->second;
    }
    const GroupId gid = s.meta.next_group_id;
    s.meta.next_group_id = gid.next();
    QUEEN_TRY(put(s, txn, s.tables.groups, detail::name_key(name).span(),
                  detail::encode_u64(gid.value())));
    QUEEN_TRY(put(s, txn, s.tables.group_names, detail::group_name_key(gid).span(),
                  Bytes(name.begin(), name.end())));
    QUEEN_TRY(save_meta(s, txn));
    s.group_ids.emplace(std::string(name), gid);
    if (s.journal.is_active) {
        s.journal.created_groups.emplace_back(name);
    }
    return gid;
}

Result<std::optional<CursorRecord>> read_cursor(const State& s, const store::Txn& txn,
                                                PartitionId pid, GroupId gid) {
    if (!s.is_caching_cursors || s.journal.is_active) {  // atomic entries: journaled writes
        return detail::get_record(txn, s.tables.cursors, detail::cursor_key(pid, gid).span(),
                                  detail::decode_cursor);
    }
    if (const CursorCache::Entry* cached = s.cursor_cache.find(pid, gid)) {
        return cached->record;
    }
    QUEEN_TRY(auto record,
              detail::get_record(txn, s.tables.cursors, detail::cursor_key(pid, gid).span(),
                                 detail::decode_cursor));
    if (s.cursor_cache.size() < CursorCache::entries_max) {
        s.cursor_cache.put(pid, gid, record, false);
    }
    return record;
}

Result<void> write_cursor(State& s, store::WriteTxn& txn, PartitionId pid, GroupId gid,
                          const CursorRecord& record) {
    if (!s.is_caching_cursors || s.journal.is_active) {
        detail::encode_into(s.scratch, record);
        return put(s, txn, s.tables.cursors, detail::cursor_key(pid, gid).span(), s.scratch);
    }
    if (s.cursor_cache.size() >= CursorCache::entries_max) {
        QUEEN_TRY(flush_cursors(s, txn));
    }
    s.cursor_cache.put(pid, gid, record, true);
    return {};
}

Result<void> flush_cursors(State& s, store::WriteTxn& txn, bool is_kept) {
    QUEEN_ASSERT(!s.journal.is_active, "the cursor cache is flushed before atomic entries");
    return s.cursor_cache.flush(
        [&](PartitionId pid, GroupId gid, const CursorRecord& record) {
            detail::encode_into(s.scratch, record);
            return txn.put(s.tables.cursors, detail::cursor_key(pid, gid).span(), s.scratch);
        },
        is_kept && s.is_caching_cursors);
}

Result<std::string> partition_name(State& s, const store::Txn& txn, PartitionId pid) {
    QUEEN_TRY(const detail::PartitionInfo* info, partition_info(s, txn, pid));
    return info != nullptr ? info->name : std::string();
}

Result<Sequence> first_sequence_from(const State& s, const store::Txn& txn, PartitionId pid,
                                     Sequence from, std::int64_t ts_ms) {
    QUEEN_TRY(auto scan,
              detail::MessageScan::open(txn, s.tables, pid, s.partition(pid).tail, from));
    QUEEN_TRY(auto stored, scan.next());
    while (stored) {
        QUEEN_TRY(auto message, detail::decode_message(stored->record));
        if (message.created_at.value() >= ts_ms) {
            return stored->sequence;
        }
        QUEEN_TRY(stored, scan.next());
    }
    return s.partition(pid).last_sequence.next();
}

Result<std::vector<PartitionId>> queue_partitions(const State& s, const store::Txn& txn,
                                                  QueueId qid) {
    std::vector<PartitionId> out;
    QUEEN_TRY(auto cursor, txn.cursor(s.tables.partition_names));
    const auto prefix = detail::queue_key(qid);
    QUEEN_TRY(auto entry, cursor.seek(prefix.span()));
    while (entry && detail::has_prefix(entry->key, prefix.span())) {
        QUEEN_TRY(auto pid, detail::decode_id<PartitionId>(entry->value));
        out.push_back(pid);
        QUEEN_TRY(entry, cursor.next());
    }
    return out;
}

void release_lease_index(State& s, LeaseId lease_id, PartitionId pid, GroupId gid) {
    if (lease_id.value() == 0) {
        return;
    }
    if (s.journal.is_active) {
        // Dropped when the entry commits (end_atomic); a rollback keeps the pair.
        s.journal.released_leases.emplace_back(lease_id, pid, gid);
        return;
    }
    auto it = s.leases.find(lease_id);
    if (it == s.leases.end()) {
        return;
    }
    auto& pairs = it->second;
    pairs.erase(std::remove(pairs.begin(), pairs.end(), std::make_pair(pid, gid)), pairs.end());
    if (pairs.empty()) {
        s.leases.erase(it);
    }
}

}  // namespace queen::queues::detail

namespace queen::queues {

using detail::PartitionMem;
using detail::State;

Result<void> Options::validate() const {
    const auto check = [](std::size_t value, std::size_t max, const char* name) -> Result<void> {
        if (value == 0 || value > max) {
            return Error{queen::Errc::invalid_argument, std::string("queues options: ") + name +
                                                            " = " + std::to_string(value) +
                                                            " (1.." + std::to_string(max) + ")"};
        }
        return {};
    };
    // Keys are name + 8 or 4 bytes of ids, and LMDB keys hold 511 bytes.
    QUEEN_TRY(check(queue_name_bytes_max, 500, "queue_name_bytes_max"));
    QUEEN_TRY(check(partition_name_bytes_max, 500, "partition_name_bytes_max"));
    QUEEN_TRY(check(transaction_id_bytes_max, 500, "transaction_id_bytes_max"));
    QUEEN_TRY(check(group_name_bytes_max, 500, "group_name_bytes_max"));
    QUEEN_TRY(check(pop_batch_max, 1'000'000, "pop_batch_max"));
    QUEEN_TRY(check(pop_partitions_max, 1'000'000, "pop_partitions_max"));
    return {};
}

QueueState::QueueState(std::unique_ptr<detail::State> state) noexcept : state_(std::move(state)) {}
QueueState::QueueState(QueueState&&) noexcept = default;
QueueState& QueueState::operator=(QueueState&&) noexcept = default;
QueueState::~QueueState() = default;

const Tables& QueueState::tables() const noexcept {
    return state_->tables;
}

Result<void> QueueState::end_batch(store::WriteTxn& txn) {
    QUEEN_TRY(flush_blocks(*state_, txn));
    if (state_->is_meta_dirty) {
        QUEEN_TRY(save_meta(*state_, txn));
    }
    return {};
}

Result<void> QueueState::before_commit(store::WriteTxn& txn) {
    QUEEN_TRY(end_batch(txn));
    QUEEN_TRY(flush_partitions(*state_, txn));
    return flush_cursors(*state_, txn, true);
}

std::vector<Wakeup> QueueState::take_wakeups() {
    const State& s = *state_;
    std::vector<Wakeup> out = std::move(state_->wakeups);
    state_->wakeups.clear();
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    if (s.has_matching_pops && !out.empty()) {
        // The pops parked on a namespace and/or task that a woken queue matches.
        // Indexes, not references: the keys go to the end of `out` as it is walked.
        const std::size_t queues_end = out.size();
        for (std::size_t i = 0; i < queues_end; ++i) {
            if (i > 0 && out[i - 1].queue == out[i].queue) {
                continue;  // sorted: one look-up per queue
            }
            const auto qid = detail::find_queue(s, out[i].queue);
            if (!qid) {
                continue;  // deleted since: nothing of it can be delivered
            }
            const detail::QueueMem& q = s.queues.at(*qid);
            if (!q.namespace_name.empty()) {
                out.push_back({matching_wait_key(q.namespace_name, "")});
            }
            if (!q.task.empty()) {
                out.push_back({matching_wait_key("", q.task)});
            }
            if (!q.namespace_name.empty() && !q.task.empty()) {
                out.push_back({matching_wait_key(q.namespace_name, q.task)});
            }
        }
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
    }
    return out;
}

std::string matching_wait_key(std::string_view namespace_name, std::string_view task) {
    std::string key(1, '\0');
    key.append(namespace_name).push_back('\0');
    key.append(task);
    return key;
}

QueueState::IndexStats QueueState::index_stats() const {
    IndexStats stats;
    const State& s = *state_;
    stats.queues = s.queues.size();
    for (std::size_t index = 0; index < s.partitions.size(); ++index) {
        stats.partitions += s.partitions[index].queue.value() != 0 ? 1 : 0;
    }
    for (const auto& [qid, q] : s.queues) {
        for (const auto& [gid, gc] : q.groups) {
            stats.ready_entries += gc.ready.size();
            stats.deferred_entries += gc.deferred.size();
        }
    }
    stats.active_leases = s.leases.size();
    stats.partition_bytes = s.partitions.capacity() * sizeof(PartitionMem);
    return stats;
}

std::string QueueState::debug_dump_index() const {
    const State& s = *state_;
    std::ostringstream out;
    out << "meta " << s.meta.next_queue_id << ' ' << s.meta.next_partition_id << ' '
        << s.meta.next_group_id << ' ' << s.meta.next_lease_id << ' ' << s.meta.next_dlq_id << ' '
        << s.meta.push_maintenance << s.meta.pop_maintenance << '\n';
    for (const auto& [qid, q] : s.queues) {
        out << "queue " << qid << ' ' << q.name << " messages=" << q.message_count
            << " partitions=" << q.partition_count << '\n';
        for (const auto& [gid, gc] : q.groups) {
            out << "  group " << gid << " rr=" << gc.round_robin_position << '\n';
        }
    }
    for (std::size_t pid = 1; pid < s.partitions.size(); ++pid) {  // the index is the id
        const auto& m = s.partitions[pid];
        if (m.queue.value() != 0) {
            out << "partition " << pid << " q=" << m.queue.value() << " [" << m.first_sequence
                << ',' << m.last_sequence << "] n=" << m.message_count
                << " last=" << m.last_created_ms << '\n';
        }
    }
    for (const auto& [key, sub] : s.subscriptions) {
        out << "sub " << std::get<0>(key) << ' ' << std::get<1>(key) << ' ' << std::get<2>(key)
            << ' ' << static_cast<int>(sub.mode) << ' ' << sub.timestamp.value() << '\n';
    }
    return out.str();
}

}  // namespace queen::queues
