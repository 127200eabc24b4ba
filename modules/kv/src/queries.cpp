// kv/src/queries.cpp — the read queries (get, list, list_buckets): a Txn and the table handles,
// no KvState, so any thread can run them.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "queen/kv/kv.hpp"
#include "queen/store/keys.hpp"
#include "records.hpp"

namespace queen::kv {
namespace {

bool starts_with(ByteSpan bytes, ByteSpan prefix) noexcept {
    return bytes.size() >= prefix.size() &&
           (prefix.empty() || std::memcmp(bytes.data(), prefix.data(), prefix.size()) == 0);
}

Entry to_entry(std::string_view key, const detail::EntryView& view) {
    Entry entry;
    entry.key.assign(key);
    entry.value.assign(view.value.begin(), view.value.end());
    entry.version = view.header.version;
    entry.updated_at = view.header.updated_at;
    entry.expires_at = view.header.expires_at;
    return entry;
}

}  // namespace

Result<std::optional<Entry>> get(const Tables& tables, const store::Txn& txn,
                                 std::string_view bucket, std::string_view key, TimestampMs now) {
    store::KeyBuilder entries_key;
    detail::entries_key(entries_key, bucket, key);
    // A name too long for any stored key cannot be stored; an empty key never is.
    if (entries_key.is_overflowed() || key.empty()) {
        return std::optional<Entry>{};
    }
    QUEEN_TRY(const auto record, txn.get(tables.entries, entries_key.span()));
    if (!record.has_value()) {
        return std::optional<Entry>{};
    }
    QUEEN_TRY(const auto view, detail::decode_entry(*record));
    if (!detail::is_live(view.header.expires_at, now)) {
        return std::optional<Entry>{};
    }
    return std::optional<Entry>{to_entry(key, view)};
}

Result<ListPage> list(const Tables& tables, const store::Txn& txn, std::string_view bucket,
                      std::string_view prefix, std::string_view after, std::uint32_t limit,
                      TimestampMs now) {
    QUEEN_ASSERT(limit >= 1, "kv::list: the caller clamps limit to 1..list_limit_max");
    ListPage page;
    store::KeyBuilder start;
    start.str(bucket);
    if (start.is_overflowed()) {
        return page;  // no stored bucket is that long
    }
    Bytes bucket_field(start.span().begin(), start.span().end());
    // The first candidate is at (bucket, max(prefix, after)): keys before the prefix cannot
    // match and keys up to `after` were on earlier pages. A seek key too long for LMDB is cut
    // at the limit, which only moves the lower bound back; the filters below do the rest.
    start.raw(as_bytes(std::max(prefix, after)));
    const ByteSpan seek_key(start.span().data(), start.size());

    QUEEN_TRY(auto cursor, txn.cursor(tables.entries));
    QUEEN_TRY(auto at, cursor.seek(seek_key));
    while (at.has_value()) {
        if (!starts_with(at->key, bucket_field)) {
            break;  // past the bucket
        }
        const std::string_view key = as_chars(at->key.subspan(bucket_field.size()));
        if (!key.starts_with(prefix)) {
            break;  // the keys with the prefix are contiguous, and behind us
        }
        // Keys up to `after` are skipped: `after` itself, or keys a cut seek key landed on.
        if (key > after) {
            QUEEN_TRY(const auto view, detail::decode_entry(at->value));
            // An expired record waits for expire(): skipped.
            if (detail::is_live(view.header.expires_at, now)) {
                if (page.entries.size() == limit) {
                    // A live key follows the full page: the caller asks for the next one.
                    page.next_after = page.entries.back().key;
                    break;
                }
                page.entries.push_back(to_entry(key, view));
            }
        }
        QUEEN_TRY(at, cursor.next());
    }
    return page;
}

Result<std::vector<BucketInfo>> list_buckets(const Tables& tables, const store::Txn& txn) {
    std::vector<BucketInfo> buckets;
    Bytes bucket_field;  // the current bucket's encoded field, which starts all its keys
    QUEEN_TRY(auto cursor, txn.cursor(tables.entries));
    QUEEN_TRY(auto at, cursor.first());
    while (at.has_value()) {
        if (buckets.empty() || !starts_with(at->key, bucket_field)) {
            QUEEN_TRY(auto decoded, detail::decode_entries_key_bucket(at->key));
            bucket_field.assign(at->key.begin(), at->key.begin() + static_cast<std::ptrdiff_t>(
                                                                       decoded.bucket_field_bytes));
            buckets.push_back(BucketInfo{std::move(decoded.bucket), 0});
        }
        ++buckets.back().keys;
        QUEEN_TRY(at, cursor.next());
    }
    return buckets;
}

}  // namespace queen::kv
