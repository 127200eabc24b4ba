// queues/src/queries.cpp — read-only queries over the queue tables (docs/http-api.md, admin). They
// read LMDB through the caller's txn only, so they run on any thread next to the applier.
#include "queen/queues/queries.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "messages.hpp"
#include "records.hpp"

namespace queen::queues {
namespace {

using detail::CursorRecord;

constexpr std::string_view meta_state_key = "state";
const std::string queue_mode_name{queue_mode_group};

/// The id a name index (q.queue_names or q.groups) gives `name`; std::nullopt when none.
template <class Id>
Result<std::optional<Id>> find_id(const store::Txn& txn, store::Table names,
                                  std::string_view name) {
    QUEEN_TRY(auto raw, txn.get(names, detail::name_key(name).span()));
    if (!raw) {
        return std::optional<Id>{};
    }
    QUEEN_TRY(auto id, detail::decode_id<Id>(*raw));
    return std::optional<Id>{id};
}

Result<std::optional<QueueId>> find_queue_id(const Tables& t, const store::Txn& txn,
                                             std::string_view name) {
    return find_id<QueueId>(txn, t.queue_names, name);
}

Result<std::optional<GroupId>> find_group_id(const Tables& t, const store::Txn& txn,
                                             std::string_view name) {
    return find_id<GroupId>(txn, t.groups, name);
}

Result<std::string> group_name(const Tables& t, const store::Txn& txn, GroupId gid) {
    QUEEN_TRY(auto raw, txn.get(t.group_names, detail::group_name_key(gid).span()));
    return raw ? std::string(as_chars(*raw)) : std::string();
}

/// Calls fn(key, value) for every entry with `prefix`, in key order, until fn returns false.
template <class Fn>
Result<void> scan_prefix(const store::Txn& txn, store::Table table, ByteSpan prefix, Fn fn) {
    QUEEN_TRY(auto cursor, txn.cursor(table));
    QUEEN_TRY(auto entry, prefix.empty() ? cursor.first() : cursor.seek(prefix));
    while (entry && detail::has_prefix(entry->key, prefix)) {
        QUEEN_TRY(const bool more, fn(entry->key, entry->value));
        if (!more) {
            break;
        }
        QUEEN_TRY(entry, cursor.next());
    }
    return {};
}

/// Creation time of the first stored message at or after `from` (0 when none); `tail` is the
/// partition record's.
Result<std::int64_t> created_at_from(const Tables& t, const store::Txn& txn, PartitionId pid,
                                     std::uint64_t tail, Sequence from) {
    QUEEN_TRY(auto scan, detail::MessageScan::open(txn, t, pid, tail, from));
    QUEEN_TRY(auto stored, scan.next());
    if (!stored) {
        return std::int64_t{0};
    }
    QUEEN_TRY(auto message, detail::decode_message(stored->record));
    return message.created_at.value();
}

/// Stored messages with a sequence > `after` (exact when the partition has no holes after it).
std::uint64_t messages_after(const detail::PartitionRecord& p, Sequence after) {
    if (p.message_count == 0 || after >= p.last_sequence) {
        return 0;
    }
    const std::uint64_t span =
        p.last_sequence.value() - std::max(after, p.first_sequence.prev()).value();
    return std::min(span, p.message_count);
}

/// What one partition adds to its queue's totals, given its __QUEUE_MODE__ cursor (a default
/// cursor when it has none).
struct PartitionCounts {
    std::uint64_t messages = 0;
    std::uint64_t pending = 0;
    std::uint64_t processing = 0;
};

PartitionCounts count_partition(const detail::PartitionRecord& p, const CursorRecord& cursor,
                                std::int64_t now_ms) {
    PartitionCounts out;
    out.messages = p.message_count;
    out.pending = messages_after(p, cursor.consumed);
    if (cursor.is_leased(now_ms)) {
        out.processing = std::min<std::uint64_t>(
            cursor.batch_size - std::min(cursor.acked_count, cursor.batch_size), out.pending);
    }
    return out;
}

Result<PartitionSummary> summarize_partition(const Tables& t, const store::Txn& txn,
                                             PartitionId pid, const detail::PartitionRecord& p,
                                             std::optional<GroupId> queue_mode_gid,
                                             std::int64_t now_ms) {
    PartitionSummary out;
    out.id = pid;
    out.name = p.name;
    out.created_at = p.created_at;
    out.messages = p.message_count;
    out.last_sequence = p.last_sequence;
    if (p.message_count > 0) {
        QUEEN_TRY(const auto oldest, created_at_from(t, txn, pid, p.tail, p.first_sequence));
        out.oldest_at = TimestampMs{oldest};
        out.newest_at = p.last_created_at;
    }
    CursorRecord cursor;
    if (queue_mode_gid) {
        QUEEN_TRY(auto found, detail::get_record(txn, t.cursors,
                                                 detail::cursor_key(pid, *queue_mode_gid).span(),
                                                 detail::decode_cursor));
        cursor = found.value_or(CursorRecord{});
    }
    const PartitionCounts counts = count_partition(p, cursor, now_ms);
    out.pending = counts.pending;
    out.completed = out.messages - out.pending;
    out.processing = counts.processing;
    if (cursor.is_leased(now_ms)) {
        out.lease_expires_at = TimestampMs{cursor.lease_expires_ms};
    }
    return out;
}

Result<std::uint64_t> count_dlq(const Tables& t, const store::Txn& txn, QueueId qid) {
    std::uint64_t count = 0;
    QUEEN_TRY(scan_prefix(txn, t.dlq, {}, [&](ByteSpan, ByteSpan value) -> Result<bool> {
        QUEEN_TRY(auto record, detail::decode_dlq(value));
        count += record.queue == qid ? 1 : 0;
        return true;
    }));
    return count;
}

/// The partition, message, pending, processing and dead-letter totals of every queue, from one
/// pass over q.partitions merged with the __QUEUE_MODE__ cursors of q.cursors (both in partition
/// id order: no seek per partition, no message read) and one over q.dlq. A metrics scrape of a
/// tenant with millions of partitions costs one sequential read of these tables.
Result<std::map<QueueId, QueueSummary>> total_queues(const Tables& t, const store::Txn& txn,
                                                     std::int64_t now_ms) {
    std::map<QueueId, QueueSummary> totals;
    QUEEN_TRY(auto queue_mode_gid, find_group_id(t, txn, queue_mode_name));
    QUEEN_TRY(auto cursors, txn.cursor(t.cursors));
    std::optional<store::Entry> at_cursor;  // the first q.cursors entry not yet passed
    if (queue_mode_gid) {
        QUEEN_TRY(at_cursor, cursors.first());
    }
    const auto cursor_of = [&](PartitionId pid) -> Result<CursorRecord> {
        // Entries sort by (partition, group): pass the ones before (pid, queue mode).
        while (at_cursor) {
            store::KeyReader reader(at_cursor->key);
            const PartitionId key_pid{reader.u64be()};
            const GroupId key_gid{reader.u32be()};
            if (key_pid > pid || (key_pid == pid && key_gid > *queue_mode_gid)) {
                break;
            }
            if (key_pid == pid && key_gid == *queue_mode_gid) {
                return detail::decode_cursor(at_cursor->value);
            }
            QUEEN_TRY(at_cursor, cursors.next());
        }
        return CursorRecord{};
    };
    QUEEN_TRY(scan_prefix(txn, t.partitions, {}, [&](ByteSpan key, ByteSpan value) -> Result<bool> {
        store::KeyReader reader(key);
        const PartitionId pid{reader.u64be()};
        QUEEN_TRY(auto p, detail::decode_partition(value));
        QUEEN_TRY(auto cursor, cursor_of(pid));
        const PartitionCounts counts = count_partition(p, cursor, now_ms);
        QueueSummary& q = totals[p.queue];
        q.partitions++;
        q.messages += counts.messages;
        q.pending += counts.pending;
        q.processing += counts.processing;
        return true;
    }));
    QUEEN_TRY(scan_prefix(txn, t.dlq, {}, [&](ByteSpan, ByteSpan value) -> Result<bool> {
        QUEEN_TRY(auto record, detail::decode_dlq(value));
        totals[record.queue].dead_letter++;
        return true;
    }));
    return totals;
}

Result<QueueDetail> describe_queue(const Tables& t, const store::Txn& txn, QueueId qid,
                                   const detail::QueueRecord& record, std::int64_t now_ms) {
    QueueDetail detail;
    QueueSummary& q = detail.queue;
    q.id = qid;
    q.name = record.name;
    q.namespace_name = record.namespace_name;
    q.task = record.task;
    q.created_at = record.created_at;
    q.options = record.options;
    QUEEN_TRY(auto queue_mode_gid, find_group_id(t, txn, queue_mode_name));
    std::vector<PartitionId> pids;
    QUEEN_TRY(scan_prefix(txn, t.partition_names, detail::queue_key(qid).span(),
                          [&](ByteSpan, ByteSpan value) -> Result<bool> {
                              QUEEN_TRY(auto pid, detail::decode_id<PartitionId>(value));
                              pids.push_back(pid);
                              return true;
                          }));
    for (const PartitionId pid : pids) {
        QUEEN_TRY(auto p, detail::get_record(txn, t.partitions, detail::partition_key(pid).span(),
                                             detail::decode_partition));
        if (!p) {
            continue;
        }
        QUEEN_TRY(auto summary, summarize_partition(t, txn, pid, *p, queue_mode_gid, now_ms));
        q.partitions++;
        q.messages += summary.messages;
        q.pending += summary.pending;
        q.processing += summary.processing;
        detail.partitions.push_back(std::move(summary));
    }
    QUEEN_TRY(q.dead_letter, count_dlq(t, txn, qid));
    return detail;
}

Result<std::vector<GroupCursorInfo>> cursors_of_partition(const Tables& t, const store::Txn& txn,
                                                          PartitionId pid,
                                                          const detail::PartitionRecord& p,
                                                          const std::string& queue,
                                                          std::int64_t now_ms) {
    std::vector<GroupCursorInfo> out;
    QUEEN_TRY(scan_prefix(txn, t.cursors, detail::partition_key(pid).span(),
                          [&](ByteSpan key, ByteSpan value) -> Result<bool> {
                              store::KeyReader reader(key);
                              (void)reader.u64be();
                              const GroupId gid{reader.u32be()};
                              QUEEN_TRY(auto cursor, detail::decode_cursor(value));
                              GroupCursorInfo info;
                              QUEEN_TRY(info.group, group_name(t, txn, gid));
                              info.queue = queue;
                              info.partition = p.name;
                              info.partition_id = pid;
                              info.consumed = cursor.consumed;
                              info.total_consumed = cursor.total_consumed;
                              info.last_consumed_at = TimestampMs{cursor.last_consumed_ms};
                              info.is_lease_active = cursor.is_leased(now_ms);
                              if (info.is_lease_active) {
                                  info.lease = cursor.lease_id;
                                  info.lease_expires_at = TimestampMs{cursor.lease_expires_ms};
                              }
                              info.offset_lag = messages_after(p, cursor.consumed);
                              if (info.offset_lag > 0) {
                                  QUEEN_TRY(
                                      const auto oldest,
                                      created_at_from(t, txn, pid, p.tail, cursor.consumed.next()));
                                  info.oldest_unconsumed_at = TimestampMs{oldest};
                              }
                              out.push_back(std::move(info));
                              return true;
                          }));
    return out;
}

}  // namespace

Result<bool> has_swept_queue(const Tables& tables, const store::Txn& txn) {
    bool found = false;
    QUEEN_TRY(scan_prefix(txn, tables.queues, {}, [&](ByteSpan, ByteSpan value) -> Result<bool> {
        QUEEN_TRY(auto record, detail::decode_queue(value));
        found = is_swept(record.options);
        return !found;  // stop at the first
    }));
    return found;
}

Result<std::vector<QueueSummary>> list_queues(const Tables& tables, const store::Txn& txn,
                                              TimestampMs now) {
    std::vector<QueueSummary> out;
    std::vector<std::pair<QueueId, detail::QueueRecord>> records;
    QUEEN_TRY(
        scan_prefix(txn, tables.queues, {}, [&](ByteSpan key, ByteSpan value) -> Result<bool> {
            store::KeyReader reader(key);
            const QueueId qid{reader.u32be()};
            QUEEN_TRY(auto record, detail::decode_queue(value));
            records.emplace_back(qid, std::move(record));
            return true;
        }));
    QUEEN_TRY(auto totals, total_queues(tables, txn, now.value()));
    for (auto& [qid, record] : records) {
        QueueSummary q;
        if (const auto it = totals.find(qid); it != totals.end()) {
            q = it->second;
        }
        q.id = qid;
        q.name = std::move(record.name);
        q.namespace_name = std::move(record.namespace_name);
        q.task = std::move(record.task);
        q.created_at = record.created_at;
        q.options = std::move(record.options);
        out.push_back(std::move(q));
    }
    // Newest first (docs/http-api.md, resources); ids break ties deterministically.
    std::sort(out.begin(), out.end(), [](const QueueSummary& a, const QueueSummary& b) {
        return std::tie(b.created_at, b.id) < std::tie(a.created_at, a.id);
    });
    return out;
}

Result<std::optional<QueueDetail>> get_queue(const Tables& tables, const store::Txn& txn,
                                             std::string_view queue, TimestampMs now) {
    QUEEN_TRY(auto qid, find_queue_id(tables, txn, queue));
    if (!qid) {
        return std::optional<QueueDetail>{};
    }
    QUEEN_TRY(auto record, detail::get_record(txn, tables.queues, detail::queue_key(*qid).span(),
                                              detail::decode_queue));
    if (!record) {
        return std::optional<QueueDetail>{};
    }
    QUEEN_TRY(auto detail, describe_queue(tables, txn, *qid, *record, now.value()));
    return std::optional<QueueDetail>{std::move(detail)};
}

Result<std::optional<QueueOptions>> get_queue_options(const Tables& tables, const store::Txn& txn,
                                                      std::string_view queue) {
    QUEEN_TRY(auto qid, find_queue_id(tables, txn, queue));
    if (!qid) {
        return std::optional<QueueOptions>{};
    }
    QUEEN_TRY(auto record, detail::get_record(txn, tables.queues, detail::queue_key(*qid).span(),
                                              detail::decode_queue));
    if (!record) {
        return std::optional<QueueOptions>{};
    }
    return std::optional<QueueOptions>{record->options};
}

Result<std::vector<DlqEntry>> list_dlq(const Tables& tables, const store::Txn& txn,
                                       std::string_view queue, std::string_view group,
                                       std::uint64_t limit, std::uint64_t offset,
                                       std::uint64_t& total) {
    std::vector<DlqEntry> out;
    total = 0;
    std::optional<QueueId> qid;
    std::optional<GroupId> gid;
    if (!queue.empty()) {
        QUEEN_TRY(qid, find_queue_id(tables, txn, queue));
        if (!qid) {
            return out;
        }
    }
    if (!group.empty()) {
        QUEEN_TRY(gid, find_group_id(tables, txn, group));
        if (!gid) {
            return out;
        }
    }
    const bool is_filtered = qid.has_value() || gid.has_value();
    if (!is_filtered) {
        // Every entry matches: the table's count is the total, and the scan stops at the page.
        QUEEN_TRY(auto stats, txn.stats(tables.dlq));
        total = stats.entries;
    }
    std::map<QueueId, std::string> queue_names;
    std::uint64_t matched = 0;
    QUEEN_TRY(auto cursor, txn.cursor(tables.dlq));
    QUEEN_TRY(auto entry, cursor.last());  // newest failure first
    while (entry && (is_filtered || out.size() < limit)) {
        // The filters read the record's head only; the page's entries are decoded in full.
        QUEEN_TRY(auto head, detail::decode_dlq_head(entry->value));
        const bool matches = (!qid || head.queue == *qid) && (!gid || head.group == *gid);
        if (matches && ++matched > offset && out.size() < limit) {
            QUEEN_TRY(auto record, detail::decode_dlq(entry->value));
            DlqEntry e;
            e.id = MessageId{record.partition, record.sequence};
            e.transaction_id = record.message.transaction_id;
            auto name = queue_names.find(record.queue);
            if (name == queue_names.end()) {
                QUEEN_TRY(auto q, detail::get_record(txn, tables.queues,
                                                     detail::queue_key(record.queue).span(),
                                                     detail::decode_queue));
                name = queue_names.emplace(record.queue, q ? q->name : std::string()).first;
            }
            e.queue = name->second;
            QUEEN_TRY(auto p, detail::get_record(txn, tables.partitions,
                                                 detail::partition_key(record.partition).span(),
                                                 detail::decode_partition));
            e.partition = p ? p->name : std::string();
            QUEEN_TRY(e.group, group_name(tables, txn, record.group));
            e.error = record.error;
            e.retry_count = record.retry_count;
            e.payload = record.message.payload;
            e.is_encrypted = record.message.is_encrypted;
            e.trace_id = record.message.trace_id;
            e.producer_sub = record.message.producer_sub;
            e.created_at = record.message.created_at;
            e.failed_at = record.failed_at;
            out.push_back(std::move(e));
        }
        QUEEN_TRY(entry, cursor.prev());
    }
    if (is_filtered) {
        total = matched;
    }
    return out;
}

Result<std::optional<TimestampMs>> message_created_at(const Tables& tables, const store::Txn& txn,
                                                      MessageId id) {
    QUEEN_TRY(auto message, detail::read_stored_message(txn, tables, id.partition, id.sequence));
    if (!message) {
        return std::optional<TimestampMs>{};
    }
    return std::optional<TimestampMs>{message->created_at};
}

Result<std::optional<MessageDetail>> get_message(const Tables& tables, const store::Txn& txn,
                                                 PartitionId partition,
                                                 std::string_view transaction_id, TimestampMs now) {
    QUEEN_TRY(const auto found,
              detail::find_txid(txn, tables.transaction_ids, partition, transaction_id));
    if (!found) {
        return std::optional<MessageDetail>{};
    }
    const Sequence seq = *found;
    QUEEN_TRY(auto message, detail::read_stored_message(txn, tables, partition, seq));
    QUEEN_TRY(auto p,
              detail::get_record(txn, tables.partitions, detail::partition_key(partition).span(),
                                 detail::decode_partition));
    if (!message || !p) {
        return std::optional<MessageDetail>{};
    }
    QUEEN_TRY(auto q, detail::get_record(txn, tables.queues, detail::queue_key(p->queue).span(),
                                         detail::decode_queue));
    MessageDetail out;
    out.id = MessageId{partition, seq};
    out.transaction_id = message->transaction_id;
    out.partition = p->name;
    if (q) {
        out.queue = q->name;
        out.namespace_name = q->namespace_name;
        out.task = q->task;
        out.options = q->options;
    }
    out.trace_id = message->trace_id;
    out.producer_sub = message->producer_sub;
    out.payload = message->payload;
    out.is_encrypted = message->is_encrypted;
    out.created_at = message->created_at;
    QUEEN_TRY(scan_prefix(txn, tables.dlq, {}, [&](ByteSpan, ByteSpan value) -> Result<bool> {
        QUEEN_TRY(auto record, detail::decode_dlq(value));
        if (record.partition == partition && record.sequence == seq) {
            out.is_dead_letter = true;
            out.error = record.error;
            out.retry_count = record.retry_count;
        }
        return true;
    }));
    QUEEN_TRY(out.groups, cursors_of_partition(tables, txn, partition, *p, out.queue, now.value()));
    return std::optional<MessageDetail>{std::move(out)};
}

Result<std::vector<MessageDetail>> list_messages(const Tables& tables, const store::Txn& txn,
                                                 std::string_view queue, std::string_view partition,
                                                 std::uint64_t limit, std::uint64_t offset) {
    std::vector<MessageDetail> out;
    QUEEN_TRY(auto qid, find_queue_id(tables, txn, queue));
    if (!qid || limit == 0) {
        return out;
    }
    QUEEN_TRY(auto q, detail::get_record(txn, tables.queues, detail::queue_key(*qid).span(),
                                         detail::decode_queue));
    std::vector<std::pair<PartitionId, std::string>> pids;
    QUEEN_TRY(scan_prefix(txn, tables.partition_names, detail::queue_key(*qid).span(),
                          [&](ByteSpan key, ByteSpan value) -> Result<bool> {
                              QUEEN_TRY(auto pid, detail::decode_id<PartitionId>(value));
                              std::string name(as_chars(key.subspan(4)));
                              if (partition.empty() || name == partition) {
                                  pids.emplace_back(pid, std::move(name));
                              }
                              return true;
                          }));
    // Newest first across partitions: merge by (created_at, partition, sequence) descending.
    struct Item {
        std::int64_t created_ms;
        PartitionId pid;
        Sequence seq;
        std::size_t name_index;
    };
    std::vector<Item> items;
    const std::uint64_t wanted = offset + limit;
    for (std::size_t i = 0; i < pids.size(); ++i) {
        const PartitionId pid = pids[i].first;
        // Newest first: blocks from the partition's tail back, each block's messages reversed.
        QUEEN_TRY(auto record,
                  detail::get_record(txn, tables.partitions, detail::partition_key(pid).span(),
                                     detail::decode_partition));
        if (!record) {
            continue;
        }
        std::uint64_t taken = 0;
        std::vector<Item> block_items;
        Result<void> walked = detail::walk_back(
            txn, tables, pid, record->tail,
            [&](const detail::MessageScan::Loaded& loaded) -> Result<bool> {
                detail::BlockReader block = detail::BlockReader::of(loaded.value, loaded.header);
                block_items.clear();
                Sequence seq = loaded.header.first;
                ByteSpan bytes;
                for (;;) {
                    QUEEN_TRY(const bool more, block.next(bytes));
                    if (!more) {
                        break;
                    }
                    if (!bytes.empty()) {
                        QUEEN_TRY(auto message, detail::decode_message(bytes));
                        block_items.push_back({message.created_at.value(), pid, seq, i});
                    }
                    seq = seq.next();
                }
                for (auto it = block_items.rbegin(); it != block_items.rend() && taken < wanted;
                     ++it) {
                    items.push_back(*it);
                    ++taken;
                }
                return taken < wanted;
            });
        QUEEN_TRY(std::move(walked));
    }
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        return std::tie(b.created_ms, b.pid, b.seq) < std::tie(a.created_ms, a.pid, a.seq);
    });
    for (std::size_t i = static_cast<std::size_t>(std::min<std::uint64_t>(offset, items.size()));
         i < items.size() && out.size() < limit; ++i) {
        const Item& item = items[i];
        QUEEN_TRY(auto message, detail::read_stored_message(txn, tables, item.pid, item.seq));
        if (!message) {
            continue;
        }
        MessageDetail d;
        d.id = MessageId{item.pid, item.seq};
        d.transaction_id = message->transaction_id;
        d.queue = std::string(queue);
        d.partition = pids[item.name_index].second;
        if (q) {
            d.namespace_name = q->namespace_name;
            d.task = q->task;
            d.options = q->options;
        }
        d.trace_id = message->trace_id;
        d.producer_sub = message->producer_sub;
        d.is_encrypted = message->is_encrypted;
        d.created_at = message->created_at;
        out.push_back(std::move(d));
    }
    return out;
}

Result<std::vector<GroupCursorInfo>> list_group_cursors(const Tables& tables, const store::Txn& txn,
                                                        std::string_view group, TimestampMs now) {
    std::vector<GroupCursorInfo> out;
    QUEEN_TRY(
        scan_prefix(txn, tables.partitions, {}, [&](ByteSpan key, ByteSpan value) -> Result<bool> {
            store::KeyReader reader(key);
            const PartitionId pid{reader.u64be()};
            QUEEN_TRY(auto p, detail::decode_partition(value));
            QUEEN_TRY(auto q,
                      detail::get_record(txn, tables.queues, detail::queue_key(p.queue).span(),
                                         detail::decode_queue));
            QUEEN_TRY(auto cursors, cursors_of_partition(tables, txn, pid, p,
                                                         q ? q->name : std::string(), now.value()));
            for (auto& c : cursors) {
                if (group.empty() || c.group == group) {
                    out.push_back(std::move(c));
                }
            }
            return true;
        }));
    std::sort(out.begin(), out.end(), [](const GroupCursorInfo& a, const GroupCursorInfo& b) {
        return std::tie(a.queue, a.group, a.partition) < std::tie(b.queue, b.group, b.partition);
    });
    return out;
}

Result<std::uint64_t> group_lag(const Tables& tables, const store::Txn& txn, std::string_view queue,
                                std::string_view group) {
    QUEEN_TRY(auto qid, find_queue_id(tables, txn, queue));
    if (!qid) {
        return std::uint64_t{0};
    }
    QUEEN_TRY(auto gid, find_group_id(tables, txn, group));
    std::vector<PartitionId> pids;
    QUEEN_TRY(scan_prefix(txn, tables.partition_names, detail::queue_key(*qid).span(),
                          [&](ByteSpan, ByteSpan value) -> Result<bool> {
                              QUEEN_TRY(auto pid, detail::decode_id<PartitionId>(value));
                              pids.push_back(pid);
                              return true;
                          }));
    std::uint64_t lag = 0;
    for (const PartitionId pid : pids) {
        QUEEN_TRY(auto p,
                  detail::get_record(txn, tables.partitions, detail::partition_key(pid).span(),
                                     detail::decode_partition));
        if (!p) {
            continue;
        }
        CursorRecord cursor;  // none: consumed nothing
        if (gid) {
            QUEEN_TRY(auto found,
                      detail::get_record(txn, tables.cursors, detail::cursor_key(pid, *gid).span(),
                                         detail::decode_cursor));
            cursor = found.value_or(CursorRecord{});
        }
        lag += messages_after(*p, cursor.consumed);
    }
    return lag;
}

Result<std::vector<std::pair<std::string, std::string>>> list_group_queues(const Tables& tables,
                                                                           const store::Txn& txn) {
    std::vector<std::pair<std::string, std::string>> out;
    QUEEN_TRY(
        scan_prefix(txn, tables.group_queues, {}, [&](ByteSpan key, ByteSpan) -> Result<bool> {
            store::KeyReader reader(key);
            const QueueId qid{reader.u32be()};
            const GroupId gid{reader.u32be()};
            QUEEN_TRY(auto q, detail::get_record(txn, tables.queues, detail::queue_key(qid).span(),
                                                 detail::decode_queue));
            QUEEN_TRY(auto name, group_name(tables, txn, gid));
            if (q) {
                out.emplace_back(std::move(name), q->name);
            }
            return true;
        }));
    std::sort(out.begin(), out.end());
    return out;
}

Result<std::vector<SubscriptionInfo>> list_subscriptions(const Tables& tables,
                                                         const store::Txn& txn) {
    std::vector<SubscriptionInfo> out;
    QUEEN_TRY(scan_prefix(
        txn, tables.subscriptions, {}, [&](ByteSpan key, ByteSpan value) -> Result<bool> {
            store::KeyReader reader(key);
            const GroupId gid{reader.u32be()};
            const QueueId qid{reader.u32be()};
            const PartitionId pid{reader.u64be()};
            QUEEN_TRY(auto record, detail::decode_subscription(value));
            SubscriptionInfo info;
            QUEEN_TRY(info.group, group_name(tables, txn, gid));
            QUEEN_TRY(auto q, detail::get_record(txn, tables.queues, detail::queue_key(qid).span(),
                                                 detail::decode_queue));
            info.queue = q ? q->name : std::string();
            info.partition = pid;
            info.mode = record.mode;
            info.timestamp = record.timestamp;
            info.created_at = record.created_at;
            out.push_back(std::move(info));
            return true;
        }));
    return out;
}

Result<std::vector<TraceEvent>> list_traces(const Tables& tables, const store::Txn& txn,
                                            PartitionId partition,
                                            std::string_view transaction_id) {
    std::vector<TraceEvent> out;
    QUEEN_TRY(const auto found,
              detail::find_txid(txn, tables.transaction_ids, partition, transaction_id));
    if (!found) {
        return out;
    }
    const Sequence seq = *found;
    QUEEN_TRY(scan_prefix(txn, tables.traces, detail::message_key(partition, seq).span(),
                          [&](ByteSpan key, ByteSpan value) -> Result<bool> {
                              store::KeyReader reader(key);
                              (void)reader.u64be();
                              (void)reader.u64be();
                              QUEEN_TRY(auto record, detail::decode_trace(value));
                              TraceEvent e;
                              e.id = reader.u64be();
                              QUEEN_TRY(e.group, group_name(tables, txn, record.group));
                              e.event_type = record.event_type;
                              e.names = record.names;
                              e.data = record.data;
                              e.created_at = record.created_at;
                              out.push_back(std::move(e));
                              return true;
                          }));
    return out;
}

Result<std::vector<TraceHit>> list_traces_by_name(const Tables& tables, const store::Txn& txn,
                                                  std::string_view name, std::uint64_t limit,
                                                  std::uint64_t offset, std::uint64_t& total) {
    struct Found {
        std::uint64_t id;
        PartitionId pid;
        Sequence seq;
        detail::TraceRecord record;
    };
    std::vector<Found> found;
    QUEEN_TRY(
        scan_prefix(txn, tables.traces, {}, [&](ByteSpan key, ByteSpan value) -> Result<bool> {
            QUEEN_TRY(auto record, detail::decode_trace(value));
            if (std::find(record.names.begin(), record.names.end(), name) != record.names.end()) {
                store::KeyReader reader(key);
                const PartitionId pid{reader.u64be()};
                const Sequence seq{reader.u64be()};
                found.push_back({reader.u64be(), pid, seq, std::move(record)});
            }
            return true;
        }));
    total = found.size();
    std::sort(found.begin(), found.end(),
              [](const Found& a, const Found& b) { return a.id > b.id; });
    std::vector<TraceHit> out;
    for (std::size_t i = static_cast<std::size_t>(std::min<std::uint64_t>(offset, found.size()));
         i < found.size() && out.size() < limit; ++i) {
        Found& f = found[i];
        TraceHit hit;
        hit.event.id = f.id;
        QUEEN_TRY(hit.event.group, group_name(tables, txn, f.record.group));
        hit.event.event_type = std::move(f.record.event_type);
        hit.event.names = std::move(f.record.names);
        hit.event.data = std::move(f.record.data);
        hit.event.created_at = f.record.created_at;
        hit.message = MessageId{f.pid, f.seq};
        QUEEN_TRY(auto message, detail::read_stored_message(txn, tables, f.pid, f.seq));
        if (message) {
            hit.transaction_id = message->transaction_id;
            hit.payload = std::move(message->payload);
            hit.is_encrypted = message->is_encrypted;
        }
        QUEEN_TRY(auto p,
                  detail::get_record(txn, tables.partitions, detail::partition_key(f.pid).span(),
                                     detail::decode_partition));
        if (p) {
            hit.partition = p->name;
            QUEEN_TRY(auto q,
                      detail::get_record(txn, tables.queues, detail::queue_key(p->queue).span(),
                                         detail::decode_queue));
            hit.queue = q ? q->name : std::string();
        }
        out.push_back(std::move(hit));
    }
    return out;
}

Result<std::vector<TraceNameInfo>> list_trace_names(const Tables& tables, const store::Txn& txn,
                                                    std::uint64_t limit, std::uint64_t offset,
                                                    std::uint64_t& total) {
    struct Acc {
        TraceNameInfo info;
        std::set<std::pair<PartitionId, Sequence>> messages;
    };
    std::map<std::string, Acc> names;
    QUEEN_TRY(
        scan_prefix(txn, tables.traces, {}, [&](ByteSpan key, ByteSpan value) -> Result<bool> {
            QUEEN_TRY(auto record, detail::decode_trace(value));
            store::KeyReader reader(key);
            const PartitionId pid{reader.u64be()};
            const Sequence seq{reader.u64be()};
            for (const auto& trace_name : record.names) {
                Acc& acc = names[trace_name];
                acc.info.name = trace_name;
                acc.info.trace_count++;
                acc.messages.emplace(pid, seq);
                acc.info.last_seen = std::max(acc.info.last_seen, record.created_at);
            }
            return true;
        }));
    std::vector<TraceNameInfo> all;
    for (auto& [trace_name, acc] : names) {
        acc.info.message_count = acc.messages.size();
        all.push_back(std::move(acc.info));
    }
    std::stable_sort(all.begin(), all.end(), [](const TraceNameInfo& a, const TraceNameInfo& b) {
        return a.last_seen > b.last_seen;
    });
    total = all.size();
    std::vector<TraceNameInfo> out;
    for (std::size_t i = static_cast<std::size_t>(std::min<std::uint64_t>(offset, all.size()));
         i < all.size() && out.size() < limit; ++i) {
        out.push_back(std::move(all[i]));
    }
    return out;
}

Result<MaintenanceState> get_maintenance(const Tables& tables, const store::Txn& txn) {
    MaintenanceState out;
    QUEEN_TRY(auto meta,
              detail::get_record(txn, tables.meta, as_bytes(meta_state_key), detail::decode_meta));
    if (meta) {
        out.push_enabled = meta->push_maintenance;
        out.pop_enabled = meta->pop_maintenance;
    }
    QUEEN_TRY(auto stats, txn.stats(tables.buffer));
    out.buffered_messages = stats.entries;
    return out;
}

}  // namespace queen::queues
