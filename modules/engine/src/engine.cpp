// engine/src/engine.cpp — Engine: batch apply in one write txn, applied_index, client dedupe.
#include "queen/engine/engine.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <type_traits>

#include "machines.hpp"
#include "queen/core/assert.hpp"
#include "queen/store/keys.hpp"

namespace queen::engine {
namespace {

constexpr std::string_view applied_key = "applied";
constexpr std::uint8_t meta_format_version = 1;
constexpr std::uint8_t applied_moved_marker = 2;  ///< "e.meta"/"applied" since the move

/// "q.meta"/"applied": format(1) | applied_index u64 LE | last_now_ms i64 LE. It shares the
/// table of the queues' counters record ("q.meta"/"state"), so a txn whose entries change a
/// counter (every pop takes a lease id) dirties one page for both instead of one per table.
/// Data written before lived in "e.meta"/"applied": open() reads it there when "q.meta" has
/// none, and the first commit moves it, leaving the one-byte `applied_moved_marker` there.
/// A binary built before the move reads that as an undecodable record and refuses to open,
/// instead of finding no applied index and replaying the whole log over the state.
Bytes encode_applied(LogIndex index, TimestampMs last_now) {
    Bytes out;
    ByteWriter writer(out);
    writer.u8(meta_format_version);
    writer.fixed<std::uint64_t>(index.value());
    writer.fixed<std::int64_t>(last_now.value());
    return out;
}

/// "e.meta" keys of the node layer's records (PutSystem): system_key_prefix + the record's key.
/// The table's only other key, applied_key, does not start with it.
constexpr std::string_view system_key_prefix = "sys.";
static_assert(!applied_key.starts_with(system_key_prefix));

/// The "e.meta" key of system record `key` (a key within the limits fits: 68 bytes at most).
store::KeyBuilder system_meta_key(std::string_view key) noexcept {
    store::KeyBuilder out;
    out.raw(as_bytes(system_key_prefix)).raw(as_bytes(key));
    return out;
}

/// "e.sessions"/u64be client id: format(1) | last_seq varint | last_used_ms svarint | result
/// blob (varint length).
Bytes encode_session(std::uint64_t seq, TimestampMs last_used, const Bytes& result) {
    Bytes out;
    ByteWriter writer(out);
    writer.u8(meta_format_version);
    writer.varint(seq);
    writer.svarint(last_used.value());
    writer.blob(result);
    return out;
}

struct Session {
    std::uint64_t last_seq = 0;
    TimestampMs last_used{0};
    Bytes result;
};

Result<Session> decode_session(ByteSpan bytes) {
    ByteReader reader(bytes);
    const std::uint8_t version = reader.u8();
    Session session;
    session.last_seq = reader.varint();
    session.last_used = TimestampMs{reader.svarint()};
    const ByteSpan result = reader.blob();
    if (version != meta_format_version || !reader.ok() || !reader.at_end()) {
        return Error{queen::Errc::corruption, "engine: undecodable client session record"};
    }
    session.result.assign(result.begin(), result.end());
    return session;
}

/// Names that become LMDB key parts must fit their limits; a violation rejects the whole
/// command before anything is written (ErrorResult{invalid}, a 400 at the edge).
class CommandLimits {
public:
    explicit CommandLimits(const queues::Options& options) : options_(options) {}

    std::string check(const queues::ConfigureQueue& c) const { return queue(c.queue); }
    std::string check(const queues::Push&) const { return {}; }  // per-item failures
    std::string check(const queues::Pop& c) const {
        return first(queue(c.queue), partition(c.partition), group(c.group),
                     limit("namespace", c.namespace_name, options_.queue_name_bytes_max),
                     limit("task", c.task, options_.queue_name_bytes_max));
    }
    std::string check(const queues::Ack& c) const {
        for (const auto& item : c.items) {
            if (auto why = ack(item); !why.empty()) {
                return why;
            }
        }
        return {};
    }
    std::string check(const queues::ExtendLease&) const { return {}; }
    std::string check(const Transaction& c) const {
        for (const auto& op : c.ops) {
            if (op.kind == TransactionOp::Kind::ack) {
                if (auto why = ack(op.ack); !why.empty()) {
                    return why;
                }
            }
        }
        if (c.next.has_value()) {
            if (c.next->queue.empty()) {
                return "next: a queue is required";
            }
            if (c.next->group.empty()) {
                return "next: consumerGroup must not be empty";
            }
            return check(*c.next);
        }
        return {};
    }
    std::string check(const queues::DeleteQueue& c) const { return queue(c.queue); }
    std::string check(const queues::DeleteGroup& c) const {
        return first(group(c.group), queue(c.queue));
    }
    std::string check(const queues::UpdateSubscription& c) const { return group(c.group); }
    std::string check(const queues::SeekGroup& c) const {
        return first(group(c.group), queue(c.queue));
    }
    std::string check(const queues::SeekPartition& c) const {
        return first(group(c.group), queue(c.queue), partition(c.partition));
    }
    std::string check(const queues::SetMaintenance&) const { return {}; }
    std::string check(const queues::Sweep&) const { return {}; }
    std::string check(const queues::DeleteMessage& c) const {
        return transaction_id(c.transaction_id);
    }
    std::string check(const queues::AddTrace& c) const {
        return first(transaction_id(c.transaction_id), group(c.group));
    }
    std::string check(const LockCommand&) const { return {}; }  // LockState checks its limits
    std::string check(const Due&) const { return {}; }
    std::string check(const ConfigureEphemeral& c) const { return queue(c.configure.queue); }
    // StreamsState checks its limits (Status::invalid with the field's name).
    std::string check(const StreamRegister&) const { return {}; }
    std::string check(const StreamAdmin&) const { return {}; }
    std::string check(const StreamCycle& c) const {
        for (const queues::PushItem& item : c.push_items) {
            if (auto why = queue(item.queue); !why.empty()) {
                return why;
            }
        }
        return {};
    }
    std::string check(const PutSystem& c) const {
        if (c.key.size() < system_key_bytes_min) {
            return "system record key is empty";
        }
        return first(limit("system record key", c.key, system_key_bytes_max),
                     limit("system record value", as_chars(c.value), system_value_bytes_max));
    }

private:
    static std::string limit(std::string_view what, std::string_view value, std::size_t max) {
        if (value.size() > max) {
            return std::string(what) + " is longer than " + std::to_string(max) + " bytes";
        }
        return {};
    }
    std::string queue(std::string_view v) const {
        return limit("queue name", v, options_.queue_name_bytes_max);
    }
    std::string partition(std::string_view v) const {
        return limit("partition name", v, options_.partition_name_bytes_max);
    }
    std::string group(std::string_view v) const {
        return limit("consumerGroup", v, options_.group_name_bytes_max);
    }
    std::string transaction_id(std::string_view v) const {
        return limit("transactionId", v, options_.transaction_id_bytes_max);
    }
    std::string ack(const queues::AckItem& item) const {
        return first(transaction_id(item.transaction_id), group(item.group));
    }
    template <class... Reasons>
    static std::string first(std::string a, Reasons... rest) {
        if (!a.empty()) {
            return a;
        }
        if constexpr (sizeof...(rest) > 0) {
            return first(std::move(rest)...);
        } else {
            return {};
        }
    }
    const queues::Options& options_;
};

CommandResult error_result(ErrorResult::Code code, std::string message) {
    return CommandResult{std::in_place_index<0>, ErrorResult{code, std::move(message)}};
}

}  // namespace

struct Engine::Impl {
    store::Env env;
    store::Table meta;
    store::Table sessions;
    detail::Machines machines;
    queues::QueueState& queues = machines.queues;
    Options options;
    /// The last entry applied, in the open txn when there is one. Applier thread only.
    LogIndex applied_index;
    /// "e.meta" does not hold applied_moved_marker yet (fresh data, or the applied record of
    /// the layout before it moved to "q.meta"): the next commit writes it. Applier thread only.
    bool needs_moved_marker = true;
    /// applied_index as of the last commit, for other threads (applied_index(), sync()).
    std::atomic<std::uint64_t> committed_index{0};
    TimestampMs last_now{0};       ///< the open txn's "now" (applier thread)
    TimestampMs committed_now{0};  ///< last_now as of the last commit (applier thread)
    bool is_poisoned = false;
    /// The write txn the applied entries since the last commit live in (applier thread). It
    /// spans apply calls until commit(); destroyed before `env` (declared after it): aborted.
    std::optional<store::WriteTxn> open_txn;
    /// Copies of the entries applied in `open_txn`, rerun in a fresh txn when a map growth
    /// aborts it: their commands back to back in `uncommitted_bytes`.
    struct Uncommitted {
        LogIndex index;
        TimestampMs timestamp{0};
        std::size_t offset = 0;
        std::size_t size = 0;
    };
    std::vector<Uncommitted> uncommitted;
    Bytes uncommitted_bytes;
    static constexpr std::size_t uncommitted_keep_bytes = std::size_t{16} << 20;
    /// Decode scratch, one command per CommandBody alternative (decode_command_into): pushes,
    /// pops, acks and transactions decode without allocating once these have grown. Entries over
    /// scratch_bytes_max decode into a temporary instead, so one huge command does not pin its
    /// memory. Applier thread only.
    std::array<Command, std::variant_size_v<CommandBody>> scratch;
    static constexpr std::size_t scratch_bytes_max = std::size_t{256} << 10;

    Impl(store::Env e, store::Table m, store::Table s, detail::Machines machines_, Options o)
        : env(std::move(e)),
          meta(m),
          sessions(s),
          machines(std::move(machines_)),
          options(std::move(o)) {}

    /// Runs the decoded command. A Result error is a storage failure (or an invalid command,
    /// which apply functions detect before writing anything).
    Result<CommandResult> dispatch(store::WriteTxn& txn, const CommandBody& body, LogIndex index,
                                   TimestampMs now) {
        return std::visit(
            [&](const auto& command) -> Result<CommandResult> {
                if (auto why = CommandLimits(options.queues).check(command); !why.empty()) {
                    return error_result(ErrorResult::Code::invalid, std::move(why));
                }
                auto result = [&] {
                    // The node layer's records and the commands spanning the state machines
                    // are the engine's; every other command the queues'.
                    using C = std::decay_t<decltype(command)>;
                    if constexpr (std::is_same_v<C, PutSystem>) {
                        return put_system(txn, command);
                    } else if constexpr (std::is_same_v<C, Transaction>) {
                        return detail::apply_transaction(machines, txn, command, index, now);
                    } else if constexpr (std::is_same_v<C, LockCommand>) {
                        return detail::apply_lock(machines, txn, command, index, now);
                    } else if constexpr (std::is_same_v<C, Due>) {
                        return detail::apply_due(machines, txn, command, now);
                    } else if constexpr (std::is_same_v<C, ConfigureEphemeral>) {
                        return detail::apply_ephemeral(machines, txn, command, now);
                    } else if constexpr (std::is_same_v<C, StreamRegister>) {
                        return apply_stream_register(txn, command, index, now);
                    } else if constexpr (std::is_same_v<C, StreamCycle>) {
                        return detail::apply_stream_cycle(machines, txn, command, index, now);
                    } else if constexpr (std::is_same_v<C, StreamAdmin>) {
                        return apply_stream_admin(txn, command, index, now);
                    } else {
                        return queues.apply(txn, command, now);
                    }
                }();
                if (!result) {
                    if (result.error().is(queen::Errc::invalid_argument)) {
                        return error_result(ErrorResult::Code::invalid, result.error().context);
                    }
                    return std::move(result).error();
                }
                QUEEN_TRY(touch_used_queues(txn, command, now));
                using R = std::decay_t<decltype(*result)>;
                return CommandResult{std::in_place_type<R>, std::move(*result)};
            },
            body);
    }

    /// A push to an ephemeral queue, or a pop of one, starts its idle TTL again (the
    /// transaction's pushes do it in apply_transaction). Nothing while no queue is ephemeral.
    template <class C>
    Result<void> touch_used_queues(store::WriteTxn& txn, const C& command, TimestampMs now) {
        if (machines.ephemeral.empty()) {
            return {};
        }
        if constexpr (std::is_same_v<C, queues::Push>) {
            for (const queues::PushItem& item : command.items) {
                QUEEN_TRY(detail::touch_ephemeral(machines, txn, item.queue, now));
            }
        } else if constexpr (std::is_same_v<C, queues::Pop>) {
            QUEEN_TRY(detail::touch_ephemeral(machines, txn, command.queue, now));
        }
        return {};
    }

    /// Registers a stream query. One command of its own: its writes are the entry's, so the
    /// undo records are dropped (a storage error aborts the whole txn anyway).
    Result<StreamRegisterResult> apply_stream_register(store::WriteTxn& txn,
                                                       const StreamRegister& command,
                                                       LogIndex index, TimestampMs now) {
        auto registered = machines.streams.apply(txn, machines.undo, command.query, index, now);
        machines.undo.clear();
        QUEEN_TRY(auto result, std::move(registered));
        if (result.status == streams::Status::reset) {
            machines.is_due_dirty = true;  // dead rows for Due to collect
        }
        return StreamRegisterResult{std::move(result)};
    }

    /// Clears or removes a stream query (one command of its own, like a registration).
    Result<StreamAdminResult> apply_stream_admin(store::WriteTxn& txn, const StreamAdmin& command,
                                                 LogIndex index, TimestampMs now) {
        auto done = command.op == StreamAdmin::Op::clear
                        ? machines.streams.apply(txn, machines.undo,
                                                 streams::ClearState{command.name}, index, now)
                        : machines.streams.apply(txn, machines.undo, streams::Remove{command.name},
                                                 index, now);
        machines.undo.clear();
        QUEEN_TRY(auto result, std::move(done));
        StreamAdminResult answer{std::move(result), {}, 0};
        if (answer.result.status != streams::Status::ok) {
            return answer;
        }
        machines.is_due_dirty = true;  // dead rows for Due to collect
        if (command.op == StreamAdmin::Op::clear) {
            QUEEN_TRY(const auto query,
                      streams::find_query(machines.streams.tables(), txn, command.name));
            if (query) {
                answer.query_id = query->query_id;
                answer.epoch = query->epoch;
            }
        }
        return answer;
    }

    /// Stores (or, for an empty value, deletes) a system record in `txn`; the caller checked
    /// the limits.
    Result<PutSystemResult> put_system(store::WriteTxn& txn, const PutSystem& command) {
        const store::KeyBuilder key = system_meta_key(command.key);
        PutSystemResult result;
        if (command.value.empty()) {
            QUEEN_TRY(result.replaced, txn.del(meta, key.span()));
            return result;
        }
        QUEEN_TRY(auto old, txn.get(meta, key.span()));
        result.replaced = old.has_value();
        QUEEN_TRY(txn.put(meta, key.span(), command.value));
        return result;
    }

    /// Fills in what a result cached in a dedupe record of format version 1 lacks: the
    /// createdAt of the messages it names (their ids' time). Messages that entry pushed were
    /// created at its time, `at` (the record's last_used, which a cached answer does not
    /// change); older ones (a duplicate, a seek cursor) are read, and get `at` when no longer
    /// stored.
    Result<void> complete_legacy(const store::Txn& txn, TimestampMs at, CommandResult& result) {
        const auto stored_or_at = [&](queues::MessageId id) -> Result<TimestampMs> {
            QUEEN_TRY(auto created, queues::message_created_at(queues.tables(), txn, id));
            return created.value_or(at);
        };
        if (auto* push = std::get_if<queues::PushResult>(&result)) {
            for (queues::PushItemResult& item : push->items) {
                if (item.status == queues::PushStatus::queued) {
                    item.created_at = at;
                } else if (item.status == queues::PushStatus::duplicate) {
                    QUEEN_TRY(item.created_at, stored_or_at(item.message_id));
                }
            }
        } else if (auto* transaction = std::get_if<TransactionResult>(&result)) {
            for (TransactionOpResult& op : transaction->results) {
                if (op.kind == TransactionOp::Kind::push && op.success) {
                    op.created_at = at;
                }
            }
        } else if (auto* seek = std::get_if<queues::SeekPartitionResult>(&result)) {
            if (seek->cursor.sequence.value() != 0) {
                QUEEN_TRY(seek->cursor_created_at, stored_or_at(seek->cursor));
            }
        }
        return {};
    }

    /// Applies one batch in one write txn. On failure nothing of it is applied.
    /// `before_commit` (may be null) gets each entry's result as soon as the entry ran, typed
    /// (never encoded unless a client session caches them): an answer does not wait for the
    /// rest of its batch. `handed` counts the entries of this batch whose results went out,
    /// so a rerun of the same batch after a map growth hands over only the others (the rerun
    /// computes the same results: apply is deterministic).
    Result<ApplyOutcome> apply_batch(std::span<const Entry> entries, std::size_t first,
                                     const Engine::BeforeCommit* before_commit,
                                     std::size_t& handed) {
        if (!open_txn) {
            QUEEN_TRY(auto fresh, env.begin_write());
            open_txn.emplace(std::move(fresh));
        }
        store::WriteTxn& txn = *open_txn;
        ApplyOutcome outcome;
        if (before_commit == nullptr) {
            outcome.results.reserve(entries.size());
        }
        std::size_t produced = 0;  // entries of the batch with a result so far
        auto hand = [&](CommandResult&& result) {
            if (produced >= handed) {
                (*before_commit)(first + produced, std::span<CommandResult>(&result, 1));
                handed = produced + 1;
            }
            ++produced;
        };
        auto emit = [&](CommandResult&& result) {
            if (before_commit != nullptr) {
                hand(std::move(result));
            } else {
                outcome.results.push_back(encode_result(result));
            }
        };
        LogIndex index = applied_index;
        TimestampMs now = last_now;
        for (const Entry& entry : entries) {
            QUEEN_ASSERT(entry.index == index.next(), "entries must follow applied_index: got ",
                         entry.index, " after ", index);
            index = entry.index;
            // Time never goes backwards inside the state machine, even if a new leader's clock
            // is behind the old one's: leases and delays stay monotonic.
            now = std::max(now, entry.timestamp);
            if (entry.command.empty()) {
                // A raft no-op or membership entry: only applied_index moves.
                emit(error_result(ErrorResult::Code::invalid, "no-op entry"));
                continue;
            }
            Command fresh;
            Command* command = &fresh;
            if (const auto type = command_index(entry.command);
                type && entry.command.size() <= scratch_bytes_max) {
                command = &scratch[*type];
            }
            if (auto decoded = decode_command_into(entry.command, *command); !decoded) {
                emit(error_result(ErrorResult::Code::malformed, decoded.error().context));
                continue;
            }
            const auto session_key = store::u64be_key(command->client_id);
            if (command->client_id != 0) {
                QUEEN_TRY(auto raw, txn.get(sessions, session_key));
                if (raw) {
                    QUEEN_TRY(auto session, decode_session(*raw));
                    if (command->client_seq == session.last_seq) {
                        const bool is_legacy =
                            !session.result.empty() && session.result[0] == legacy_format_version;
                        if (before_commit != nullptr || is_legacy) {
                            auto cached = decode_result(session.result);
                            QUEEN_ASSERT(cached.has_value(), "the engine decodes its own results");
                            if (is_legacy) {
                                QUEEN_TRY(complete_legacy(txn, session.last_used, *cached));
                            }
                            emit(std::move(*cached));
                        } else {
                            outcome.results.push_back(std::move(session.result));
                        }
                        continue;
                    }
                    if (command->client_seq < session.last_seq) {
                        emit(error_result(ErrorResult::Code::stale_request,
                                          "client " + std::to_string(command->client_id) + " seq " +
                                              std::to_string(command->client_seq) +
                                              " is older than " +
                                              std::to_string(session.last_seq)));
                        continue;
                    }
                }
            }
            QUEEN_TRY(auto result, dispatch(txn, command->body, index, now));
            if (std::holds_alternative<queues::Sweep>(command->body)) {
                QUEEN_TRY(expire_sessions(txn, now));
            }
            if (command->client_id != 0) {
                QUEEN_TRY(txn.put(sessions, session_key,
                                  encode_session(command->client_seq, now, encode_result(result))));
            }
            emit(std::move(result));
        }
        // The pushes' pending message blocks and partition records go into the txn before it
        // can commit.
        QUEEN_TRY(queues.end_batch(txn));
        applied_index = index;
        last_now = now;
        return outcome;
    }

    /// Keeps a copy of `entries` (just applied in the open txn) for a rerun.
    void remember(std::span<const Entry> entries) {
        for (const Entry& entry : entries) {
            uncommitted.push_back(Uncommitted{entry.index, entry.timestamp,
                                              uncommitted_bytes.size(), entry.command.size()});
            uncommitted_bytes.insert(uncommitted_bytes.end(), entry.command.begin(),
                                     entry.command.end());
        }
    }

    void forget_uncommitted() {
        uncommitted.clear();
        if (uncommitted_bytes.capacity() > uncommitted_keep_bytes) {
            Bytes{}.swap(uncommitted_bytes);  // one burst does not pin its memory
        } else {
            uncommitted_bytes.clear();
        }
    }

    /// Stores applied_index in the open txn and commits it (nothing to do without one).
    Result<void> commit_open() {
        if (!open_txn) {
            return {};
        }
        store::WriteTxn& txn = *open_txn;
        QUEEN_TRY(queues.before_commit(txn));
        QUEEN_TRY(txn.put(queues.tables().meta, as_bytes(applied_key),
                          encode_applied(applied_index, last_now)));
        if (needs_moved_marker) {
            const std::array<Byte, 1> marker{applied_moved_marker};
            QUEEN_TRY(txn.put(meta, as_bytes(applied_key), ByteSpan{marker}));
        }
        auto committed = txn.commit();
        open_txn.reset();
        QUEEN_TRY(committed);
        needs_moved_marker = false;
        committed_now = last_now;
        committed_index.store(applied_index.value(), std::memory_order_release);
        forget_uncommitted();
        return {};
    }

    /// Drops the open txn (aborting it) and makes memory match LMDB's last commit again.
    Result<void> roll_back() {
        open_txn.reset();
        applied_index = LogIndex{committed_index.load(std::memory_order_relaxed)};
        last_now = committed_now;
        return resync();
    }

    /// After a map_full (the store grew the map and aborted the txn): reruns the uncommitted
    /// entries in a fresh txn. Their results were handed over already and are dropped. Each
    /// map_full doubled the map and the store bounds the doublings, so the loop ends.
    Result<void> rerun_uncommitted() {
        while (true) {
            QUEEN_TRY(roll_back());
            if (uncommitted.empty()) {
                return {};
            }
            std::vector<Entry> entries;
            entries.reserve(uncommitted.size());
            for (const Uncommitted& entry : uncommitted) {
                entries.push_back(
                    Entry{entry.index, entry.timestamp,
                          ByteSpan{uncommitted_bytes}.subspan(entry.offset, entry.size)});
            }
            std::size_t handed = entries.size();  // no before_commit: nothing is handed
            auto rerun = apply_batch(entries, 0, nullptr, handed);
            if (rerun) {
                return {};
            }
            if (!rerun.error().is(store::Errc::map_full)) {
                return std::move(rerun).error();
            }
        }
    }

    /// After a failure other than map_full: abandons the open txn; poisons the engine when
    /// memory cannot be made to match LMDB or the Env is poisoned.
    void fail() {
        auto rolled_back = roll_back();
        forget_uncommitted();
        if (!rolled_back || env.is_poisoned()) {
            is_poisoned = true;
        }
        (void)machines.take_wakeups();
        machines.is_due_dirty = true;
    }

    /// Drops dedupe records unused for client_session_ttl_ms (keeps the table bounded by the
    /// clients seen in that window).
    Result<void> expire_sessions(store::WriteTxn& txn, TimestampMs now) {
        if (options.client_session_ttl_ms <= 0) {
            return {};
        }
        QUEEN_TRY(auto cursor, txn.cursor(sessions));
        QUEEN_TRY(auto entry, cursor.first());
        while (entry) {
            QUEEN_TRY(auto session, decode_session(entry->value));
            if (session.last_used.value() + options.client_session_ttl_ms <= now.value()) {
                QUEEN_TRY(cursor.del());
                QUEEN_TRY(entry, cursor.next());  // after del(): the entry that followed it
                continue;
            }
            QUEEN_TRY(entry, cursor.next());
        }
        return {};
    }

    /// After an aborted txn: LMDB holds the state of the last commit; make memory match.
    Result<void> resync() {
        QUEEN_TRY(auto txn, env.begin_read());
        QUEEN_TRY(queues.rebuild(txn));
        return detail::load_ephemeral(machines, txn);
    }
};

Engine::Engine(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;
Engine::~Engine() = default;

Result<Engine> Engine::open(const std::filesystem::path& dir, const Options& options) {
    QUEEN_TRY(auto env, store::Env::open(dir, options.store));
    store::Table meta;
    store::Table sessions;
    for (auto [table, name] : {std::pair{&meta, "e.meta"}, std::pair{&sessions, "e.sessions"}}) {
        for (int attempt = 0;; ++attempt) {
            auto opened = env.open_table(name);
            if (opened) {
                *table = *opened;
                break;
            }
            if (!opened.error().is(store::Errc::map_full) || attempt > 8) {
                return std::move(opened).error();
            }
        }
    }
    QUEEN_TRY(auto machines, detail::open_machines(env, options.kv, options.locks, options.timers,
                                                   options.queues));
    auto impl =
        std::make_unique<Impl>(std::move(env), meta, sessions, std::move(machines), options);
    {
        QUEEN_TRY(auto txn, impl->env.begin_read());
        QUEEN_TRY(auto raw, txn.get(impl->queues.tables().meta, as_bytes(applied_key)));
        QUEEN_TRY(auto legacy, txn.get(meta, as_bytes(applied_key)));
        const bool is_moved = legacy && legacy->size() == 1 && (*legacy)[0] == applied_moved_marker;
        impl->needs_moved_marker = !is_moved;
        if (!raw && is_moved) {
            return Error{queen::Errc::corruption,
                         "engine: the applied_index record moved to q.meta but is not there"};
        }
        if (!raw) {
            raw = legacy;
        }
        if (raw) {
            ByteReader reader(*raw);
            const std::uint8_t version = reader.u8();
            const auto index = reader.fixed<std::uint64_t>();
            const auto last_now = reader.fixed<std::int64_t>();
            if (version != meta_format_version || !reader.ok() || !reader.at_end()) {
                return Error{queen::Errc::corruption, "engine: undecodable applied_index record"};
            }
            impl->applied_index = LogIndex{index};
            impl->committed_index.store(index, std::memory_order_release);
            impl->last_now = TimestampMs{last_now};
            impl->committed_now = impl->last_now;
        }
    }
    return Engine(std::move(impl));
}

LogIndex Engine::applied_index() const noexcept {
    return LogIndex{impl_->committed_index.load(std::memory_order_acquire)};
}

Result<ApplyOutcome> Engine::apply(std::span<const Entry> entries) {
    return apply_entries(entries, nullptr, false);
}

Result<ApplyOutcome> Engine::apply(std::span<const Entry> entries,
                                   const BeforeCommit& before_commit) {
    return apply_entries(entries, &before_commit, false);
}

Result<ApplyOutcome> Engine::apply_uncommitted(std::span<const Entry> entries,
                                               const BeforeCommit& before_commit) {
    return apply_entries(entries, &before_commit, true);
}

Result<ApplyOutcome> Engine::apply_entries(std::span<const Entry> entries,
                                           const BeforeCommit* before_commit, bool keep_open) {
    Impl& impl = *impl_;
    if (impl.is_poisoned) {
        return Error{queen::Errc::poisoned, "engine: an earlier storage failure; reopen"};
    }
    ApplyOutcome total;
    std::size_t done = 0;
    while (done < entries.size()) {
        const std::size_t count = std::min(
            entries.size() - done, std::max<std::size_t>(impl.options.entries_per_txn_max, 1));
        const auto batch = entries.subspan(done, count);
        std::size_t handed = 0;
        Result<ApplyOutcome> outcome = impl.apply_batch(batch, done, before_commit, handed);
        // Each map_full doubled the map; the store bounds the doublings, so this loop ends.
        while (!outcome && outcome.error().is(store::Errc::map_full)) {
            if (auto rerun = impl.rerun_uncommitted(); !rerun) {
                impl.fail();
                return std::move(rerun).error();
            }
            outcome = impl.apply_batch(batch, done, before_commit, handed);
        }
        if (!outcome) {
            impl.fail();
            return std::move(outcome).error();
        }
        impl.remember(batch);
        for (auto& result : outcome->results) {
            total.results.push_back(std::move(result));
        }
        done += count;
        // A txn holds at most entries_per_txn_max entries, kept open or not.
        if ((!keep_open && done == entries.size()) ||
            impl.uncommitted.size() >= impl.options.entries_per_txn_max) {
            QUEEN_TRY(commit());
        }
    }
    total.wakeups = impl.machines.take_wakeups();
    total.next_due = impl.queues.next_due();
    if (impl.machines.is_due_dirty) {
        // Read from the open txn when there is one: it holds what the entries wrote.
        Result<std::optional<TimestampMs>> due = std::optional<TimestampMs>{};
        if (impl.open_txn) {
            due = impl.machines.due_at(*impl.open_txn);
        } else {
            auto txn = impl.env.begin_read();
            due =
                txn ? impl.machines.due_at(*txn) : Result<std::optional<TimestampMs>>(txn.error());
        }
        QUEEN_TRY(total.due_at, std::move(due));
        total.is_due_changed = true;
        impl.machines.is_due_dirty = false;
    }
    return total;
}

Result<void> Engine::commit() {
    Impl& impl = *impl_;
    if (impl.is_poisoned) {
        return Error{queen::Errc::poisoned, "engine: an earlier storage failure; reopen"};
    }
    while (true) {
        auto committed = impl.commit_open();
        if (committed) {
            return {};
        }
        if (!committed.error().is(store::Errc::map_full)) {
            impl.fail();
            return committed;
        }
        if (auto rerun = impl.rerun_uncommitted(); !rerun) {
            impl.fail();
            return std::move(rerun).error();
        }
    }
}

UncommittedStats Engine::uncommitted() const noexcept {
    return UncommittedStats{impl_->uncommitted.size(), impl_->uncommitted_bytes.size()};
}

Result<std::vector<CommandResult>> Engine::apply_commands(std::span<const Command> commands,
                                                          TimestampMs now) {
    std::vector<Bytes> encoded;
    encoded.reserve(commands.size());
    std::vector<Entry> entries;
    entries.reserve(commands.size());
    LogIndex index = impl_->applied_index;  // uncommitted entries included
    for (const Command& command : commands) {
        encoded.push_back(encode_command(command));
    }
    for (const Bytes& bytes : encoded) {
        index = index.next();
        entries.push_back(Entry{index, now, bytes});
    }
    QUEEN_TRY(auto outcome, apply(entries));
    std::vector<CommandResult> results;
    results.reserve(outcome.results.size());
    for (const Bytes& bytes : outcome.results) {
        QUEEN_TRY(auto result, decode_result(bytes));
        results.push_back(std::move(result));
    }
    return results;
}

Result<LogIndex> Engine::sync() {
    // Read before the flush: everything committed up to here is durable once it returns.
    const LogIndex index{impl_->committed_index.load(std::memory_order_acquire)};
    QUEEN_TRY(impl_->env.sync(true));
    return index;
}

Result<void> Engine::start_writeback() {
    return impl_->env.start_writeback();
}

Result<std::optional<Bytes>> Engine::system_record(std::string_view key) const {
    if (key.size() < system_key_bytes_min || key.size() > system_key_bytes_max) {
        return Error{queen::Errc::invalid_argument,
                     "system record key of " + std::to_string(key.size()) + " bytes; keys are " +
                         std::to_string(system_key_bytes_min) + ".." +
                         std::to_string(system_key_bytes_max) + " bytes"};
    }
    QUEEN_TRY(auto txn, impl_->env.begin_read());
    QUEEN_TRY(auto raw, txn.get(impl_->meta, system_meta_key(key).span()));
    if (!raw) {
        return std::optional<Bytes>{};
    }
    return std::optional<Bytes>{Bytes(raw->begin(), raw->end())};
}

std::vector<std::string> Engine::queues_due(TimestampMs now) const {
    return impl_->queues.queues_due(now);
}

std::optional<TimestampMs> Engine::next_due(std::optional<TimestampMs> after) const {
    return impl_->queues.next_due(after);
}
const queues::Tables& Engine::queue_tables() const noexcept {
    return impl_->queues.tables();
}
const kv::Tables& Engine::kv_tables() const noexcept {
    return impl_->machines.kv.tables();
}
const locks::Tables& Engine::lock_tables() const noexcept {
    return impl_->machines.locks.tables();
}
const timers::Tables& Engine::timer_tables() const noexcept {
    return impl_->machines.timers.tables();
}
const streams::Tables& Engine::stream_tables() const noexcept {
    return impl_->machines.streams.tables();
}

Result<std::optional<TimestampMs>> Engine::due_at() const {
    QUEEN_TRY(auto txn, impl_->env.begin_read());
    return impl_->machines.due_at(txn);
}
const store::Env& Engine::env() const noexcept {
    return impl_->env;
}
store::Env& Engine::env() noexcept {
    return impl_->env;
}
const queues::QueueState& Engine::queue_state() const noexcept {
    return impl_->queues;
}
bool Engine::is_poisoned() const noexcept {
    return impl_->is_poisoned;
}

}  // namespace queen::engine
