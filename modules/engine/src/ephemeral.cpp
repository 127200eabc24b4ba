// engine/src/ephemeral.cpp — ephemeral queues: a queue that deletes itself (and its messages)
// once nothing pushed to it or popped it for its idle TTL; and the opening of every state
// machine of a tenant.
#include <string>

#include "machines.hpp"
#include "queen/core/bytes.hpp"
#include "queen/store/keys.hpp"

namespace queen::engine::detail {
namespace {

constexpr std::uint8_t ephemeral_format_version = 1;

/// "e.ephemeral"/name: format(1) | idle_ttl_ms svarint | last_used_ms svarint.
struct EphemeralRecord {
    std::int64_t idle_ttl_ms = 0;
    TimestampMs last_used{0};
    [[nodiscard]] TimestampMs expires_at() const {
        return TimestampMs{last_used.value() + idle_ttl_ms};
    }
};

Bytes encode(const EphemeralRecord& record) {
    Bytes out;
    ByteWriter writer(out);
    writer.u8(ephemeral_format_version);
    writer.svarint(record.idle_ttl_ms);
    writer.svarint(record.last_used.value());
    return out;
}

Result<EphemeralRecord> decode(ByteSpan bytes) {
    ByteReader reader(bytes);
    const std::uint8_t version = reader.u8();
    EphemeralRecord record;
    record.idle_ttl_ms = reader.svarint();
    record.last_used = TimestampMs{reader.svarint()};
    if (version != ephemeral_format_version || !reader.ok() || !reader.at_end()) {
        return Error{queen::Errc::corruption, "engine: undecodable ephemeral queue record"};
    }
    return record;
}

/// "e.ephemeral_due" key: expires_at (signed, order-preserving) then the queue's name.
store::KeyBuilder due_key(TimestampMs expires_at, std::string_view queue) {
    store::KeyBuilder key;
    key.i64be(expires_at.value()).raw(as_bytes(queue));
    return key;
}

/// Stores `record` for `queue`, replacing `old` (and its due key) when there was one.
Result<void> store_record(Machines& m, store::WriteTxn& txn, std::string_view queue,
                          const std::optional<EphemeralRecord>& old,
                          const EphemeralRecord& record) {
    if (old) {
        QUEEN_TRY(txn.del(m.ephemeral_due, due_key(old->expires_at(), queue).span()));
    }
    QUEEN_TRY(txn.put(m.ephemeral_table, as_bytes(queue), encode(record)));
    QUEEN_TRY(txn.put(m.ephemeral_due, due_key(record.expires_at(), queue).span(), ByteSpan{}));
    m.is_due_dirty = true;
    return {};
}

Result<std::optional<EphemeralRecord>> find_record(Machines& m, const store::Txn& txn,
                                                   std::string_view queue) {
    QUEEN_TRY(auto raw, txn.get(m.ephemeral_table, as_bytes(queue)));
    if (!raw) {
        return std::optional<EphemeralRecord>{};
    }
    QUEEN_TRY(auto record, decode(*raw));
    return std::optional<EphemeralRecord>{record};
}

Result<store::Table> open_table(store::Env& env, std::string_view name) {
    for (int attempt = 0;; ++attempt) {
        auto opened = env.open_table(name);
        if (opened || !opened.error().is(store::Errc::map_full) || attempt > 8) {
            return opened;
        }
    }
}

}  // namespace

Result<Machines> open_machines(store::Env& env, const kv::Options& kv_options,
                               const locks::Options& lock_options,
                               const timers::Options& timer_options,
                               const queues::Options& queue_options) {
    QUEEN_TRY(auto queues, queues::QueueState::open(env, queue_options));
    QUEEN_TRY(auto kv, kv::KvState::open(env, kv_options));
    QUEEN_TRY(auto locks, locks::LockState::open(env, lock_options));
    QUEEN_TRY(auto timers, timers::TimerState::open(env, timer_options));
    QUEEN_TRY(auto streams, streams::StreamsState::open(env, {}));
    Machines m{std::move(queues),
               std::move(kv),
               std::move(locks),
               std::move(timers),
               std::move(streams),
               {},
               {},
               true,
               {},
               {},
               {}};
    QUEEN_TRY(m.ephemeral_table, open_table(env, "e.ephemeral"));
    QUEEN_TRY(m.ephemeral_due, open_table(env, "e.ephemeral_due"));
    QUEEN_TRY(auto txn, env.begin_read());
    QUEEN_TRY(load_ephemeral(m, txn));
    return m;
}

Result<void> load_ephemeral(Machines& m, const store::Txn& txn) {
    m.ephemeral.clear();
    QUEEN_TRY(auto cursor, txn.cursor(m.ephemeral_table));
    QUEEN_TRY(auto entry, cursor.first());
    while (entry) {
        QUEEN_TRY(auto record, decode(entry->value));
        m.ephemeral.emplace(std::string(as_chars(entry->key)), record.idle_ttl_ms);
        QUEEN_TRY(entry, cursor.next());
    }
    return {};
}

Result<EphemeralResult> apply_ephemeral(Machines& m, store::WriteTxn& txn,
                                        const ConfigureEphemeral& command, TimestampMs now) {
    if (command.idle_ttl_ms < 0 || command.idle_ttl_ms > ephemeral_idle_ttl_ms_max) {
        return Error{queen::Errc::invalid_argument, "idleTtlMs must be between 0 and " +
                                                        std::to_string(ephemeral_idle_ttl_ms_max)};
    }
    EphemeralResult result;
    QUEEN_TRY(result.configure, m.queues.apply(txn, command.configure, now));
    const std::string& queue = result.configure.queue;
    QUEEN_TRY(auto old, find_record(m, txn, queue));
    if (command.idle_ttl_ms == 0) {
        if (old) {
            QUEEN_TRY(txn.del(m.ephemeral_due, due_key(old->expires_at(), queue).span()));
            QUEEN_TRY(txn.del(m.ephemeral_table, as_bytes(queue)));
            m.ephemeral.erase(queue);
            m.is_due_dirty = true;
        }
        return result;
    }
    const EphemeralRecord record{command.idle_ttl_ms, now};
    QUEEN_TRY(store_record(m, txn, queue, old, record));
    m.ephemeral[queue] = command.idle_ttl_ms;
    result.expires_at = record.expires_at();
    return result;
}

Result<void> touch_ephemeral(Machines& m, store::WriteTxn& txn, std::string_view queue,
                             TimestampMs now) {
    const auto it = m.ephemeral.find(queue);
    if (it == m.ephemeral.end()) {
        return {};
    }
    QUEEN_TRY(auto old, find_record(m, txn, queue));
    if (!old || old->last_used == now) {
        return {};
    }
    return store_record(m, txn, queue, old, EphemeralRecord{old->idle_ttl_ms, now});
}

Result<std::uint64_t> expire_ephemeral(Machines& m, store::WriteTxn& txn, TimestampMs now,
                                       std::size_t limit, bool& is_complete) {
    // The due keys first, then the deletions: nothing is written while the cursor walks.
    std::vector<std::pair<Bytes, std::string>> due;
    {
        QUEEN_TRY(auto cursor, txn.cursor(m.ephemeral_due));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            store::KeyReader key(entry->key);
            const std::int64_t expires = key.i64be();
            if (!key.ok() || expires > now.value()) {
                break;
            }
            if (due.size() == limit) {
                is_complete = false;
                break;
            }
            due.emplace_back(Bytes(entry->key.begin(), entry->key.end()),
                             std::string(as_chars(key.rest())));
            QUEEN_TRY(entry, cursor.next());
        }
    }
    for (const auto& [key, queue] : due) {
        QUEEN_TRY(txn.del(m.ephemeral_due, key));
        QUEEN_TRY(txn.del(m.ephemeral_table, as_bytes(queue)));
        m.ephemeral.erase(queue);
        QUEEN_TRY(m.queues.apply(txn, queues::DeleteQueue{queue}, now));
    }
    if (!due.empty()) {
        m.is_due_dirty = true;
    }
    return due.size();
}

Result<std::optional<TimestampMs>> next_ephemeral_expiry(const Machines& m, const store::Txn& txn) {
    QUEEN_TRY(auto cursor, txn.cursor(m.ephemeral_due));
    QUEEN_TRY(auto entry, cursor.first());
    if (!entry) {
        return std::optional<TimestampMs>{};
    }
    store::KeyReader key(entry->key);
    const std::int64_t expires = key.i64be();
    if (!key.ok()) {
        return Error{queen::Errc::corruption, "engine: undecodable ephemeral due key"};
    }
    return std::optional<TimestampMs>{TimestampMs{expires}};
}

}  // namespace queen::engine::detail
