// kv/src/state.cpp — KvState: Options::validate, open, the writes (Set, Delete), Check, expire
// and next_expiry.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "queen/core/error.hpp"
#include "queen/kv/kv.hpp"
#include "queen/store/keys.hpp"
#include "records.hpp"

namespace queen::kv {
namespace {

using detail::EntryHeader;

/// LMDB's limit on one value is 4 GiB; a record adds a few header bytes to the value.
constexpr std::size_t value_bytes_max_limit = std::size_t{1} << 31;

WriteResult invalid(std::string message) {
    WriteResult result;
    result.status = Status::invalid;
    result.message = std::move(message);
    return result;
}

WriteResult mismatch(std::uint64_t expected, std::uint64_t current) {
    WriteResult result;
    result.status = Status::version_mismatch;
    result.version = current;
    result.message = "expected version " + std::to_string(expected) + ", found " +
                     (current == 0 ? std::string("no key") : std::to_string(current));
    return result;
}

/// Why a bucket or key name is refused, std::nullopt when it is fine.
std::optional<std::string> check_name(const char* what, std::string_view name,
                                      std::size_t bytes_max) {
    if (name.empty() || name.size() > bytes_max) {
        return std::string(what) + ": " + std::to_string(name.size()) + " bytes (1.." +
               std::to_string(bytes_max) + ")";
    }
    if (name.find('\0') != std::string_view::npos) {
        return std::string(what) + ": contains a NUL byte";
    }
    return std::nullopt;
}

std::optional<std::string> check_names(const Options& options, std::string_view bucket,
                                       std::string_view key) {
    if (auto why = check_name("bucket", bucket, options.bucket_bytes_max)) {
        return why;
    }
    return check_name("key", key, options.key_bytes_max);
}

/// What (bucket, key) holds before a write: the record's header, and whether it is live.
struct Current {
    bool is_present = false;  ///< a record is stored (live or expired, not yet deleted)
    bool is_live = false;
    EntryHeader header;
    [[nodiscard]] std::uint64_t live_version() const noexcept {
        return is_live ? header.version : 0;
    }
};

Result<Current> read_current(const store::Txn& txn, const Tables& tables, ByteSpan entries_key,
                             TimestampMs now) {
    Current current;
    QUEEN_TRY(auto record, txn.get(tables.entries, entries_key));
    if (!record.has_value()) {
        return current;
    }
    QUEEN_TRY(auto view, detail::decode_entry(*record));
    current.is_present = true;
    current.header = view.header;
    current.is_live = detail::is_live(view.header.expires_at, now);
    return current;
}

Error missing_expiry_key(std::string_view bucket, std::string_view key, TimestampMs expires_at) {
    return Error{queen::Errc::corruption, "kv: no kv.expiry key for bucket '" +
                                              std::string(bucket) + "' key of " +
                                              std::to_string(key.size()) + " bytes expiring at " +
                                              std::to_string(expires_at.value())};
}

/// Removes the expiry key of a record that expires at `expires_at` (not 0).
Result<void> delete_expiry_key(store::WriteTxn& txn, store::UndoLog& undo, const Tables& tables,
                               std::string_view bucket, std::string_view key,
                               TimestampMs expires_at) {
    store::KeyBuilder expiry_key;
    detail::expiry_key(expiry_key, expires_at, bucket, key);
    QUEEN_TRY(const bool deleted, undo.del(txn, tables.expiry, expiry_key.span()));
    if (!deleted) {
        return missing_expiry_key(bucket, key, expires_at);
    }
    return {};
}

}  // namespace

Result<void> Options::validate() const {
    const auto fail = [](const std::string& why) {
        return Error{queen::Errc::invalid_argument, "kv options: " + why};
    };
    if (bucket_bytes_max == 0 || key_bytes_max == 0) {
        return fail("bucket_bytes_max and key_bytes_max must be at least 1");
    }
    // The longest key either table stores is the expiry key: i64be(expires_at), the bucket and
    // its terminator, the key. Each term is checked first so the sum cannot wrap.
    constexpr std::size_t size_max = store::KeyBuilder::size_max;
    if (bucket_bytes_max > size_max || key_bytes_max > size_max ||
        detail::expiry_prefix_bytes + bucket_bytes_max + detail::bucket_framing_bytes +
                key_bytes_max >
            size_max) {
        return fail("bucket_bytes_max (" + std::to_string(bucket_bytes_max) +
                    ") + key_bytes_max (" + std::to_string(key_bytes_max) + ") + " +
                    std::to_string(detail::expiry_prefix_bytes + detail::bucket_framing_bytes) +
                    " bytes of framing exceed the " + std::to_string(size_max) + "-byte LMDB key");
    }
    if (value_bytes_max > value_bytes_max_limit) {
        return fail("value_bytes_max (" + std::to_string(value_bytes_max) + ") above " +
                    std::to_string(value_bytes_max_limit));
    }
    if (ttl_ms_max < 1) {
        return fail("ttl_ms_max must be at least 1");
    }
    if (list_limit_max < 1) {
        return fail("list_limit_max must be at least 1");
    }
    return {};
}

Result<KvState> KvState::open(store::Env& env, const Options& options) {
    QUEEN_TRY(options.validate());
    Tables tables;
    QUEEN_TRY(tables.entries, env.open_table("kv.entries"));
    QUEEN_TRY(tables.expiry, env.open_table("kv.expiry"));
    return KvState(tables, options);
}

Result<WriteResult> KvState::apply(store::WriteTxn& txn, store::UndoLog& undo, const Set& command,
                                   LogIndex index, TimestampMs now) {
    QUEEN_ASSERT(index.value() > 0, "kv: versions are log indexes, which start at 1");
    if (auto why = check_names(options_, command.bucket, command.key)) {
        return invalid(std::move(*why));
    }
    if (command.value.size() > options_.value_bytes_max) {
        return invalid("value: " + std::to_string(command.value.size()) + " bytes (max " +
                       std::to_string(options_.value_bytes_max) + ")");
    }
    if (command.ttl_ms < 0 || command.ttl_ms > options_.ttl_ms_max) {
        return invalid("ttl_ms: " + std::to_string(command.ttl_ms) + " (0 or 1.." +
                       std::to_string(options_.ttl_ms_max) + ")");
    }
    TimestampMs expires_at{0};
    if (command.ttl_ms > 0) {
        // expires_at 0 means "never", so an expiry must land after the epoch (entry times do).
        if (now.value() > std::numeric_limits<std::int64_t>::max() - command.ttl_ms ||
            now.value() + command.ttl_ms <= 0) {
            return invalid("ttl_ms: " + std::to_string(command.ttl_ms) + " from time " +
                           std::to_string(now.value()) + " is out of range");
        }
        expires_at = TimestampMs{now.value() + command.ttl_ms};
    }

    store::KeyBuilder entries_key;
    detail::entries_key(entries_key, command.bucket, command.key);
    QUEEN_TRY(const Current current, read_current(txn, tables_, entries_key.span(), now));
    if (command.expected_version.has_value() &&
        *command.expected_version != current.live_version()) {
        return mismatch(*command.expected_version, current.live_version());
    }
    if (current.is_present) {
        QUEEN_ASSERT(index.value() >= current.header.version,
                     "kv: a key's version never goes back (index ", index.value(), ", stored ",
                     current.header.version, ")");
    }

    // An expired record is overwritten like a live one: the Set is a create, and the old
    // record's expiry key goes with it.
    const TimestampMs old_expires_at =
        current.is_present ? current.header.expires_at : TimestampMs{0};
    if (old_expires_at != expires_at) {
        if (old_expires_at.value() != 0) {
            QUEEN_TRY(
                delete_expiry_key(txn, undo, tables_, command.bucket, command.key, old_expires_at));
        }
        if (expires_at.value() != 0) {
            store::KeyBuilder expiry_key;
            detail::expiry_key(expiry_key, expires_at, command.bucket, command.key);
            QUEEN_TRY(undo.put(txn, tables_.expiry, expiry_key.span(), ByteSpan{}));
        }
    }
    Bytes record;
    detail::encode_entry_into(record, EntryHeader{index.value(), now, expires_at}, command.value);
    QUEEN_TRY(undo.put(txn, tables_.entries, entries_key.span(), record));

    WriteResult result;
    result.version = index.value();
    return result;
}

Result<WriteResult> KvState::apply(store::WriteTxn& txn, store::UndoLog& undo,
                                   const Delete& command, LogIndex index, TimestampMs now) {
    QUEEN_ASSERT(index.value() > 0, "kv: versions are log indexes, which start at 1");
    if (auto why = check_names(options_, command.bucket, command.key)) {
        return invalid(std::move(*why));
    }
    store::KeyBuilder entries_key;
    detail::entries_key(entries_key, command.bucket, command.key);
    QUEEN_TRY(const Current current, read_current(txn, tables_, entries_key.span(), now));
    if (command.expected_version.has_value() &&
        *command.expected_version != current.live_version()) {
        return mismatch(*command.expected_version, current.live_version());
    }
    WriteResult result;
    if (!current.is_live) {
        // Absent, or expired and waiting for expire(): nothing to delete, nothing written.
        return result;
    }
    if (current.header.expires_at.value() != 0) {
        QUEEN_TRY(delete_expiry_key(txn, undo, tables_, command.bucket, command.key,
                                    current.header.expires_at));
    }
    QUEEN_TRY(const bool deleted, undo.del(txn, tables_.entries, entries_key.span()));
    QUEEN_ASSERT(deleted, "kv: the record read a moment ago is gone");
    result.existed = true;
    return result;
}

Result<WriteResult> KvState::apply(store::WriteTxn& txn, const Check& command,
                                   TimestampMs now) const {
    if (auto why = check_names(options_, command.bucket, command.key)) {
        return invalid(std::move(*why));
    }
    store::KeyBuilder entries_key;
    detail::entries_key(entries_key, command.bucket, command.key);
    QUEEN_TRY(const Current current, read_current(txn, tables_, entries_key.span(), now));
    if (command.expected_version != current.live_version()) {
        return mismatch(command.expected_version, current.live_version());
    }
    WriteResult result;
    result.version = command.expected_version;
    return result;
}

Result<ExpireResult> KvState::expire(store::WriteTxn& txn, TimestampMs now, std::size_t limit) {
    ExpireResult result;
    QUEEN_TRY(auto cursor, txn.cursor(tables_.expiry));
    QUEEN_TRY(auto at, cursor.first());
    store::KeyBuilder entries_key;
    while (at.has_value()) {
        // Copies the key's parts: the span dies with the first delete below.
        QUEEN_TRY(const auto due, detail::decode_expiry_key(at->key));
        if (due.expires_at > now) {
            break;
        }
        if (result.deleted == limit) {
            result.is_complete = false;
            break;
        }
        detail::entries_key(entries_key, due.bucket, due.key);
        QUEEN_TRY(const auto record, txn.get(tables_.entries, entries_key.span()));
        if (!record.has_value()) {
            return Error{queen::Errc::corruption,
                         "kv: kv.expiry names a key kv.entries lacks (bucket '" + due.bucket +
                             "', expiring at " + std::to_string(due.expires_at.value()) + ")"};
        }
        QUEEN_TRY(const auto view, detail::decode_entry(*record));
        if (view.header.expires_at != due.expires_at) {
            return Error{queen::Errc::corruption,
                         "kv: kv.expiry says bucket '" + due.bucket + "' key expires at " +
                             std::to_string(due.expires_at.value()) + ", its record says " +
                             std::to_string(view.header.expires_at.value())};
        }
        QUEEN_TRY(const bool deleted, txn.del(tables_.entries, entries_key.span()));
        QUEEN_ASSERT(deleted, "kv: the record read a moment ago is gone");
        QUEEN_TRY(cursor.del());
        ++result.deleted;
        QUEEN_TRY(at, cursor.next());
    }
    return result;
}

Result<std::optional<TimestampMs>> KvState::next_expiry(const store::Txn& txn) const {
    QUEEN_TRY(auto cursor, txn.cursor(tables_.expiry));
    QUEEN_TRY(const auto first, cursor.first());
    if (!first.has_value()) {
        return std::optional<TimestampMs>{};
    }
    QUEEN_TRY(const auto due, detail::decode_expiry_key(first->key));
    return std::optional<TimestampMs>{due.expires_at};
}

}  // namespace queen::kv
