// streams/src/queries.cpp — the read queries (find_query, find_query_by_id, list_queries,
// get_rows, list_rows, count_rows, count_rows_per_partition, list_partitions): a Txn and the
// table handles, no StreamsState, so any thread can run them.
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "queen/store/keys.hpp"
#include "queen/streams/streams.hpp"
#include "records.hpp"

namespace queen::streams {
namespace {

bool starts_with(ByteSpan bytes, ByteSpan prefix) noexcept {
    return bytes.size() >= prefix.size() &&
           (prefix.empty() || std::memcmp(bytes.data(), prefix.data(), prefix.size()) == 0);
}

Row to_row(std::string_view key, const detail::RowView& view) {
    Row row;
    row.key.assign(key);
    row.value.assign(view.value.begin(), view.value.end());
    row.updated_at = view.updated_at;
    return row;
}

/// Where the current rows of a query live: its number and epoch; std::nullopt for an unknown
/// query.
struct Shard {
    std::uint64_t number = 0;
    std::uint64_t epoch = 0;
};
Result<std::optional<Shard>> find_shard(const Tables& tables, const store::Txn& txn,
                                        std::string_view query_id) {
    QUEEN_TRY(const auto query, detail::read_query_by_id(txn, tables, query_id));
    if (!query.has_value()) {
        return std::optional<Shard>{};
    }
    return std::optional<Shard>{Shard{query->record.number, query->record.epoch}};
}

}  // namespace

Result<std::optional<Query>> find_query(const Tables& tables, const store::Txn& txn,
                                        std::string_view name) {
    QUEEN_TRY(auto record, detail::read_query(txn, tables, name));
    if (!record.has_value()) {
        return std::optional<Query>{};
    }
    return std::optional<Query>{detail::to_query(name, std::move(*record))};
}

Result<std::optional<Query>> find_query_by_id(const Tables& tables, const store::Txn& txn,
                                              std::string_view query_id) {
    QUEEN_TRY(auto found, detail::read_query_by_id(txn, tables, query_id));
    if (!found.has_value()) {
        return std::optional<Query>{};
    }
    return std::optional<Query>{detail::to_query(found->name, std::move(found->record))};
}

Result<QueryPage> list_queries(const Tables& tables, const store::Txn& txn, std::string_view after,
                               std::uint32_t limit) {
    QUEEN_ASSERT(limit >= 1, "streams::list_queries: the caller clamps limit to 1..list_limit_max");
    QueryPage page;
    QUEEN_TRY(auto cursor, txn.cursor(tables.queries));
    // An `after` too long for a key is cut at the limit, which only moves the seek back; the
    // comparison below skips what it lands on.
    const std::string_view seek_key =
        after.substr(0, std::min(after.size(), store::KeyBuilder::size_max));
    QUEEN_TRY(auto at, seek_key.empty() ? cursor.first() : cursor.seek(as_bytes(seek_key)));
    while (at.has_value()) {
        const std::string_view name = as_chars(at->key);
        if (name > after) {
            if (page.queries.size() == limit) {
                page.next_after = page.queries.back().name;
                break;
            }
            QUEEN_TRY(auto record, detail::decode_query(at->value));
            page.queries.push_back(detail::to_query(name, std::move(record)));
        }
        QUEEN_TRY(at, cursor.next());
    }
    return page;
}

Result<std::vector<Row>> get_rows(const Tables& tables, const store::Txn& txn,
                                  std::string_view query_id, std::uint64_t partition,
                                  std::span<const std::string> keys) {
    std::vector<Row> rows;
    QUEEN_TRY(const auto shard, find_shard(tables, txn, query_id));
    if (!shard.has_value()) {
        return rows;
    }
    std::vector<std::string_view> sorted(keys.begin(), keys.end());
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    store::KeyBuilder key;
    for (const std::string_view wanted : sorted) {
        detail::row_key(key, shard->number, shard->epoch, partition, wanted);
        // An empty key or one too long for any stored row matches nothing.
        if (wanted.empty() || key.is_overflowed()) {
            continue;
        }
        QUEEN_TRY(const auto stored, txn.get(tables.rows, key.span()));
        if (stored.has_value()) {
            QUEEN_TRY(const auto view, detail::decode_row(*stored));
            rows.push_back(to_row(wanted, view));
        }
    }
    return rows;
}

Result<RowPage> list_rows(const Tables& tables, const store::Txn& txn, std::string_view query_id,
                          std::uint64_t partition, std::string_view prefix, std::string_view after,
                          std::uint32_t limit) {
    QUEEN_ASSERT(limit >= 1, "streams::list_rows: the caller clamps limit to 1..list_limit_max");
    RowPage page;
    QUEEN_TRY(const auto shard, find_shard(tables, txn, query_id));
    if (!shard.has_value()) {
        return page;
    }
    store::KeyBuilder start;
    detail::row_key(start, shard->number, shard->epoch, partition, {});
    const Bytes shard_field(start.span().begin(), start.span().end());
    // The first candidate is at max(prefix, after): keys before the prefix cannot match and
    // keys up to `after` were on earlier pages. A seek key too long for LMDB is cut at the
    // limit, which only moves the lower bound back; the filters below do the rest.
    start.raw(as_bytes(std::max(prefix, after)));
    const ByteSpan seek_key(start.span().data(), start.size());

    QUEEN_TRY(auto cursor, txn.cursor(tables.rows));
    QUEEN_TRY(auto at, cursor.seek(seek_key));
    while (at.has_value() && starts_with(at->key, shard_field)) {
        const std::string_view key = as_chars(at->key.subspan(shard_field.size()));
        if (!key.starts_with(prefix)) {
            break;  // the keys with the prefix are contiguous, and behind us
        }
        if (key > after) {
            if (page.rows.size() == limit) {
                page.next_after = page.rows.back().key;
                break;
            }
            QUEEN_TRY(const auto view, detail::decode_row(at->value));
            page.rows.push_back(to_row(key, view));
        }
        QUEEN_TRY(at, cursor.next());
    }
    return page;
}

Result<std::vector<PartitionRows>> count_rows_per_partition(const Tables& tables,
                                                            const store::Txn& txn,
                                                            std::string_view query_id) {
    std::vector<PartitionRows> out;
    QUEEN_TRY(const auto shard, find_shard(tables, txn, query_id));
    if (!shard.has_value()) {
        return out;
    }
    store::KeyBuilder prefix;
    detail::epoch_key(prefix, shard->number, shard->epoch);
    QUEEN_TRY(auto cursor, txn.cursor(tables.rows));
    QUEEN_TRY(auto at, cursor.seek(prefix.span()));
    while (at.has_value() && starts_with(at->key, prefix.span())) {
        QUEEN_TRY(const auto row, detail::decode_row_key(at->key));
        if (out.empty() || out.back().partition != row.partition) {
            out.push_back(PartitionRows{row.partition, 0});  // keys sort by partition
        }
        ++out.back().rows;
        QUEEN_TRY(at, cursor.next());
    }
    return out;
}

Result<std::vector<std::uint64_t>> list_partitions(const Tables& tables, const store::Txn& txn,
                                                   std::string_view query_id) {
    std::vector<std::uint64_t> partitions;
    QUEEN_TRY(const auto shard, find_shard(tables, txn, query_id));
    if (!shard.has_value()) {
        return partitions;
    }
    store::KeyBuilder prefix;
    detail::epoch_key(prefix, shard->number, shard->epoch);
    store::KeyBuilder next;
    QUEEN_TRY(auto cursor, txn.cursor(tables.rows));
    QUEEN_TRY(auto at, cursor.seek(prefix.span()));
    while (at.has_value() && starts_with(at->key, prefix.span())) {
        QUEEN_TRY(const auto row, detail::decode_row_key(at->key));
        partitions.push_back(row.partition);
        if (row.partition == std::numeric_limits<std::uint64_t>::max()) {
            break;
        }
        // Jump over the partition's rows: the first key of the next partition up.
        next.clear();
        next.u64be(shard->number).u64be(shard->epoch).u64be(row.partition + 1);
        QUEEN_TRY(at, cursor.seek(next.span()));
    }
    return partitions;
}

Result<std::uint64_t> count_rows(const Tables& tables, const store::Txn& txn,
                                 std::string_view query_id) {
    QUEEN_TRY(const auto partitions, count_rows_per_partition(tables, txn, query_id));
    std::uint64_t count = 0;
    for (const PartitionRows& partition : partitions) {
        count += partition.rows;
    }
    return count;
}

}  // namespace queen::streams
