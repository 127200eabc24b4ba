// engine/src/command.cpp — the field-by-field codec of commands and results (format version 4;
// versions 1 to 3 still decode). One `fields()` function per struct is shared by the writer and
// the reader, so the encoder and the decoder cannot drift apart; a field added by version N is
// visited only when format_of<visitor> says the bytes have it.
#include "queen/engine/command.hpp"

#include <type_traits>
#include <utility>

#include "queen/core/field_codec.hpp"

namespace queen::engine {
namespace {

using namespace queen::queues;

// Version 1 bytes decode through codec::Reader<FieldsV1>, version 2 through Reader<FieldsV2>,
// version 3 through Reader<FieldsV3>, version 4 through Reader<FieldsV4>.
static_assert(command_format_version == 5 && result_format_version == 5,
              "a new format version needs its own reader and format_of value");

struct FieldsV1;
struct FieldsV2;
struct FieldsV3;
struct FieldsV4;
/// The format version a visitor writes or reads: the legacy readers read versions 1 to 3,
/// every other visitor the current version.
template <class A>
constexpr std::uint8_t format_of = command_format_version;
template <>
constexpr std::uint8_t format_of<codec::Reader<FieldsV1>> = legacy_format_version;
template <>
constexpr std::uint8_t format_of<codec::Reader<FieldsV2>> = 2;
template <>
constexpr std::uint8_t format_of<codec::Reader<FieldsV3>> = 3;
template <>
constexpr std::uint8_t format_of<codec::Reader<FieldsV4>> = 4;

template <class A>
void fields(A& a, QueueOptions& v) {
    // Table order: the on-disk field order (the table only ever appends).
    for_each_queue_option([&](const auto& option) { a(v.*option.member); });
}
template <class A>
void fields(A& a, MessageId& v) {
    a(v.partition);
    a(v.sequence);
}
template <class A>
void fields(A& a, ConfigureQueue& v) {
    a(v.queue);
    a(v.namespace_name);
    a(v.task);
    a(v.options);
}
template <class A>
void fields(A& a, PushItem& v) {
    a(v.queue);
    a(v.partition);
    a(v.transaction_id);
    a(v.trace_id);
    a(v.producer_sub);
    a(v.payload);
    a(v.is_encrypted);
}
template <class A>
void fields(A& a, Push& v) {
    a(v.items);
}
template <class A>
void fields(A& a, Pop& v) {
    a(v.queue);
    a(v.has_partition);
    a(v.partition);
    a(v.group);
    a(v.batch);
    a(v.partitions);
    a(v.auto_ack);
    a.enumeration(v.subscription_mode, SubscriptionMode::new_only);
    a.enumeration(v.subscription_from, SubscriptionFrom::timestamp);
    a(v.subscription_from_ms);
    if constexpr (format_of<A> >= 2) {
        a(v.namespace_name);
        a(v.task);
    }
}
template <class A>
void fields(A& a, AckItem& v) {
    a(v.partition);
    a(v.transaction_id);
    a.enumeration(v.status, AckStatus::unknown);
    a(v.has_error);
    a(v.error);
    a(v.lease);
    a(v.group);
}
template <class A>
void fields(A& a, Ack& v) {
    a(v.items);
}
template <class A>
void fields(A& a, ExtendLease& v) {
    a(v.lease);
    a(v.seconds);
}
template <class A>
void fields(A& a, engine::KvOp& v) {
    a(v.bucket);
    a(v.key);
    a(v.value);
    a(v.expected_version);
    a(v.ttl_ms);
}
template <class A>
void fields(A& a, locks::Guard& v) {
    a(v.name);
    a(v.token);
}
template <class A>
void fields(A& a, TransactionOp& v) {
    // Version 3 added the kinds after ack, the delay of a push and the guard.
    a.enumeration(v.kind, format_of<A> >= 3 ? transaction_op_kind_max : TransactionOp::Kind::ack);
    switch (v.kind) {
        case TransactionOp::Kind::push:
            a(v.push);
            if constexpr (format_of<A> >= 3) {
                a(v.timer.at);
                a(v.timer.delay_ms);
            }
            break;
        case TransactionOp::Kind::ack: a(v.ack); break;
        case TransactionOp::Kind::kv_set:
        case TransactionOp::Kind::kv_delete:
        case TransactionOp::Kind::kv_check: a(v.kv); break;
        case TransactionOp::Kind::timer_set:
            a(v.timer.id);
            a(v.timer.at);
            a(v.timer.delay_ms);
            a(v.timer.interval_ms);
            a(v.timer.end_at);
            a(v.timer.replace);
            a(v.push);
            break;
        case TransactionOp::Kind::timer_cancel: a(v.timer.id); break;
        case TransactionOp::Kind::lock_release: a(v.lock); break;
    }
    if constexpr (format_of<A> >= 3) {
        a(v.guard);
    }
}
template <class A>
void fields(A& a, Transaction& v) {
    a(v.ops);
    if constexpr (format_of<A> >= 4) {
        a(v.next);
    }
}
template <class A>
void fields(A& a, LockCommand& v) {
    a.enumeration(v.op, LockCommand::Op::renew);
    a(v.name);
    a(v.owner);
    a(v.token);
    a(v.ttl_ms);
}
template <class A>
void fields(A& a, Due& v) {
    a(v.limit);
}
template <class A>
void fields(A& a, ConfigureEphemeral& v) {
    a(v.configure);
    a(v.idle_ttl_ms);
}
template <class A>
void fields(A& a, StreamRegister& v) {
    a(v.query.name);
    a(v.query.source_queue);
    a(v.query.sink_queue);
    a(v.query.config_hash);
    a(v.query.reset);
    a(v.query.new_query_id);
}
template <class A>
void fields(A& a, StreamRegisterResult& v) {
    a.enumeration(v.result.status, streams::Status::unknown_query);
    a(v.result.query_id);
    a(v.result.config_hash);
    a(v.result.epoch);
    a(v.result.message);
}
template <class A>
void fields(A& a, StreamStateOp& v) {
    a.enumeration(v.kind, StreamStateOp::Kind::check_absent);
    a(v.key);
    a(v.value);
}
template <class A>
void fields(A& a, StreamCycle& v) {
    a(v.query_id);
    a(v.epoch);
    a(v.partition);
    a(v.state_ops);
    a(v.push_items);
    a(v.ack);
    a(v.release_lease);
}
template <class A>
void fields(A& a, StreamCycleResult& v) {
    a(v.success);
    a(v.error);
    a(v.source_queue);
    a(v.state_ops_applied);
    a(v.push_results);
    a(v.has_ack);
    a(v.lease_released);
    a(v.dlq);
}
template <class A>
void fields(A& a, StreamAdmin& v) {
    a.enumeration(v.op, StreamAdmin::Op::remove);
    a(v.name);
}
template <class A>
void fields(A& a, StreamAdminResult& v) {
    a.enumeration(v.result.status, streams::Status::unknown_query);
    a(v.result.existed);
    a(v.result.message);
    a(v.query_id);
    a(v.epoch);
}
template <class A>
void fields(A& a, DeleteQueue& v) {
    a(v.queue);
}
template <class A>
void fields(A& a, DeleteGroup& v) {
    a(v.group);
    a(v.queue);
    a(v.delete_metadata);
}
template <class A>
void fields(A& a, UpdateSubscription& v) {
    a(v.group);
    a(v.timestamp);
}
template <class A>
void fields(A& a, SeekGroup& v) {
    a(v.group);
    a(v.queue);
    a(v.to_end);
    a(v.timestamp);
}
template <class A>
void fields(A& a, SeekPartition& v) {
    a(v.group);
    a(v.queue);
    a(v.partition);
}
template <class A>
void fields(A& a, SetMaintenance& v) {
    a.enumeration(v.mode, SetMaintenance::Mode::pop);
    a(v.enabled);
}
template <class A>
void fields(A& a, Sweep& v) {
    a(v.messages_max);
}
template <class A>
void fields(A& a, DeleteMessage& v) {
    a(v.partition);
    a(v.transaction_id);
}
template <class A>
void fields(A& a, AddTrace& v) {
    a(v.partition);
    a(v.transaction_id);
    a(v.group);
    a(v.event_type);
    a(v.names);
    a(v.data);
}
template <class A>
void fields(A& a, PutSystem& v) {
    // Any sizes decode; apply() checks the limits (ErrorResult{invalid}).
    a(v.key);
    a(v.value);
}

// Results.
template <class A>
void fields(A& a, ErrorResult& v) {
    a.enumeration(v.code, ErrorResult::Code::invalid);
    a(v.message);
}
template <class A>
void fields(A& a, ConfigureResult& v) {
    a(v.queue_id);
    a(v.default_partition);
    a(v.queue);
    a(v.namespace_name);
    a(v.task);
    a(v.options);
}
template <class A>
void fields(A& a, PushItemResult& v) {
    a.enumeration(v.status, PushStatus::failed);
    a(v.transaction_id);
    a(v.message_id);
    if constexpr (format_of<A> >= 2) {
        a(v.created_at);
    }
    a(v.queue);
    a(v.partition);
    a(v.trace_id);
    a(v.error);
}
template <class A>
void fields(A& a, PushResult& v) {
    a(v.items);
}
template <class A>
void fields(A& a, PoppedMessage& v) {
    a(v.id);
    a(v.transaction_id);
    a(v.trace_id);
    a(v.producer_sub);
    a(v.payload);
    a(v.is_encrypted);
    a(v.created_at);
    a(v.partition);
    a(v.retry_count);
}
template <class A>
void fields(A& a, PopResult& v) {
    a.enumeration(v.outcome, PopResult::Outcome::paused);
    a(v.queue);
    a(v.group);
    a(v.lease);
    a(v.lease_expires_at);
    a(v.partitions_claimed);
    a(v.messages);
}
template <class A>
void fields(A& a, AckItemResult& v) {
    a(v.transaction_id);
    a(v.success);
    a(v.error);
    a(v.queue);
    a(v.partition);
    a.enumeration(v.lease_released, LeaseReleased::yes);
    a(v.dlq);
}
template <class A>
void fields(A& a, AckResult& v) {
    a(v.items);
}
template <class A>
void fields(A& a, ExtendLeaseResult& v) {
    a(v.lease);
    a(v.success);
    a(v.error);
    a(v.expires_at);
}
template <class A>
void fields(A& a, TransactionOpResult& v) {
    a.enumeration(v.kind, format_of<A> >= 3 ? transaction_op_kind_max : TransactionOp::Kind::ack);
    a(v.success);
    a(v.transaction_id);
    a(v.message_id);
    if constexpr (format_of<A> >= 2) {
        a(v.created_at);
    }
    a(v.queue);
    a(v.dlq);
    a(v.error);
    if constexpr (format_of<A> >= 3) {
        a(v.version);
        a(v.existed);
        a(v.timer_id);
        a(v.due_at);
    }
}
template <class A>
void fields(A& a, TransactionResult& v) {
    a(v.success);
    a(v.error);
    a(v.results);
    if constexpr (format_of<A> >= 3) {
        a.enumeration(v.failure, TransactionFailure::invalid);
        a(v.failed_op);
    }
    if constexpr (format_of<A> >= 4) {
        a(v.next);
    }
}
template <class A>
void fields(A& a, locks::Grant& v) {
    a(v.name);
    a(v.owner);
    a(v.token);
    a(v.acquired_at);
    a(v.expires_at);
}
template <class A>
void fields(A& a, locks::LockResult& v) {
    a.enumeration(v.status, locks::Status::invalid);
    a(v.grant);
    a(v.message);
}
template <class A>
void fields(A& a, EphemeralResult& v) {
    a(v.configure);
    a(v.expires_at);
}
template <class A>
void fields(A& a, DueResult& v) {
    a(v.timers_fired);
    a(v.messages_pushed);
    a(v.kv_expired);
    a(v.locks_expired);
    a(v.queues_expired);
    if constexpr (format_of<A> >= 5) {
        a(v.stream_rows_collected);
    }
    a(v.is_complete);
}
template <class A>
void fields(A& a, DeleteQueueResult& v) {
    a(v.existed);
}
template <class A>
void fields(A& a, DeleteGroupResult& v) {
    a(v.deleted_partitions);
    a(v.metadata_deleted);
}
template <class A>
void fields(A& a, UpdateSubscriptionResult& v) {
    a(v.rows_updated);
}
template <class A>
void fields(A& a, SeekGroupResult& v) {
    a(v.partitions_updated);
}
template <class A>
void fields(A& a, SeekPartitionResult& v) {
    a(v.found);
    a(v.updated);
    a(v.cursor);
    if constexpr (format_of<A> >= 2) {
        a(v.cursor_created_at);
    }
}
template <class A>
void fields(A& a, MaintenanceResult& v) {
    a(v.push_enabled);
    a(v.pop_enabled);
    a(v.buffered_messages);
    a(v.drained_messages);
}
template <class A>
void fields(A& a, SweepResult& v) {
    a(v.retention_deleted);
    a(v.completed_deleted);
    a(v.ttl_deleted);
    a(v.evicted);
    a(v.is_complete);
}
template <class A>
void fields(A& a, DeleteMessageResult& v) {
    a(v.found);
}
template <class A>
void fields(A& a, AddTraceResult& v) {
    a(v.found);
    a(v.trace_id);
}
template <class A>
void fields(A& a, PutSystemResult& v) {
    a(v.replaced);
}

/// Runs this file's fields() for a struct; after the last overload so lookup sees them all.
struct Fields {
    template <class A, class T>
    static void visit(A& a, T& value) {
        fields(a, value);
    }
};
/// The same fields() as Fields; a visitor over it reads format version 1 (see format_of).
struct FieldsV1 {
    template <class A, class T>
    static void visit(A& a, T& value) {
        fields(a, value);
    }
};
/// The same again, for format version 2.
struct FieldsV2 {
    template <class A, class T>
    static void visit(A& a, T& value) {
        fields(a, value);
    }
};
/// And for format version 3.
struct FieldsV3 {
    template <class A, class T>
    static void visit(A& a, T& value) {
        fields(a, value);
    }
};
/// And for format version 4.
struct FieldsV4 {
    template <class A, class T>
    static void visit(A& a, T& value) {
        fields(a, value);
    }
};
using Writer = codec::Writer<Fields>;
using Sizer = codec::Sizer<Fields>;
using Reader = codec::Reader<Fields>;
using ReaderV1 = codec::Reader<FieldsV1>;
using ReaderV2 = codec::Reader<FieldsV2>;
using ReaderV3 = codec::Reader<FieldsV3>;
using ReaderV4 = codec::Reader<FieldsV4>;
static_assert(format_of<Reader> == command_format_version && format_of<ReaderV1> == 1 &&
              format_of<ReaderV2> == 2 && format_of<ReaderV3> == 3 && format_of<ReaderV4> == 4);

/// Whether `version` (a command's or a result's first byte) is one this file decodes.
bool is_known_version(std::uint8_t version) {
    return version >= legacy_format_version && version <= command_format_version;
}

/// Command types (and result indexes) are 1..types_of(version): bytes of an older version
/// never held a type added after it, so they do not decode as one. Version 2 added PutSystem
/// (16) after its first release; version 3 the lock, due and configure_ephemeral commands
/// (19); version 5 the streams commands.
constexpr std::size_t v1_command_types = 15;
constexpr std::size_t v2_command_types = 16;
constexpr std::size_t v4_command_types = 19;
static_assert(std::variant_size_v<CommandBody> > v4_command_types);
constexpr std::size_t types_of(std::uint8_t version) {
    if (version == legacy_format_version) {
        return v1_command_types;
    }
    if (version == 2) {
        return v2_command_types;
    }
    return version <= 4 ? v4_command_types : std::variant_size_v<CommandBody>;
}

/// The first byte of `bytes` (0, an unknown version, when empty).
std::uint8_t version_of(ByteSpan bytes) {
    return bytes.empty() ? 0 : static_cast<std::uint8_t>(bytes[0]);
}

/// Builds variant alternative `index` default-constructed (the decoder then fills it).
template <class Variant, std::size_t... I>
Variant make_alternative(std::size_t index, std::index_sequence<I...> /*unused*/) {
    Variant out;
    ((index == I ? (out.template emplace<I>(), 0) : 0), ...);
    return out;
}

Error decode_error(const char* what, std::size_t offset) {
    return Error{queen::Errc::invalid_argument,
                 std::string(what) + ": malformed at byte " + std::to_string(offset)};
}

}  // namespace

CommandType command_type(const CommandBody& body) noexcept {
    return static_cast<CommandType>(body.index() + 1);
}

std::string_view command_name(CommandType type) noexcept {
    switch (type) {
        case CommandType::configure_queue: return "configure_queue";
        case CommandType::push: return "push";
        case CommandType::pop: return "pop";
        case CommandType::ack: return "ack";
        case CommandType::extend_lease: return "extend_lease";
        case CommandType::transaction: return "transaction";
        case CommandType::delete_queue: return "delete_queue";
        case CommandType::delete_group: return "delete_group";
        case CommandType::update_subscription: return "update_subscription";
        case CommandType::seek_group: return "seek_group";
        case CommandType::seek_partition: return "seek_partition";
        case CommandType::set_maintenance: return "set_maintenance";
        case CommandType::sweep: return "sweep";
        case CommandType::delete_message: return "delete_message";
        case CommandType::add_trace: return "add_trace";
        case CommandType::put_system: return "put_system";
        case CommandType::lock: return "lock";
        case CommandType::due: return "due";
        case CommandType::configure_ephemeral: return "configure_ephemeral";
        case CommandType::stream_register: return "stream_register";
        case CommandType::stream_cycle: return "stream_cycle";
    }
    return "unknown";
}

void encode_command_into(const Command& command, Bytes& out) {
    Sizer sizer;
    std::visit([&](const auto& body) { sizer(const_cast<std::decay_t<decltype(body)>&>(body)); },
               command.body);
    out.reserve(out.size() + 1 + codec::varint_size(command.client_id) +
                codec::varint_size(command.client_seq) + 1 + sizer.size());
    ByteWriter header(out);
    header.u8(command_format_version);
    header.varint(command.client_id);
    header.varint(command.client_seq);
    header.u8(static_cast<std::uint8_t>(command_type(command.body)));
    Writer writer(out);
    // The writer visits through non-const references (one fields() for both directions); it
    // only reads them.
    std::visit([&](const auto& body) { writer(const_cast<std::decay_t<decltype(body)>&>(body)); },
               command.body);
}

Bytes encode_command(const Command& command) {
    Bytes out;
    encode_command_into(command, out);
    return out;
}

/// Command types decode_command_into overwrites in place: fields() covers every member (a
/// TransactionOp encodes only the member its kind selects: the decoder resets the other one).
template <class T>
constexpr bool decodes_in_place = std::is_same_v<T, Push> || std::is_same_v<T, Pop> ||
                                  std::is_same_v<T, Ack> || std::is_same_v<T, Transaction>;

Result<Command> decode_command(ByteSpan bytes) {
    Command command;
    QUEEN_TRY(decode_command_into(bytes, command));
    return command;
}

std::optional<std::size_t> command_index(ByteSpan bytes) {
    Reader reader(bytes);
    ByteReader& in = reader.bytes();
    const std::uint8_t version = in.u8();
    (void)reader.varint();
    (void)reader.varint();
    const std::uint8_t type = in.u8();
    if (!in.ok() || !is_known_version(version) || type == 0 || type > types_of(version)) {
        return std::nullopt;
    }
    return type - 1u;
}

namespace {

/// Resets the members of `op` its kind does not select (and, for bytes of an older version,
/// the ones that version did not have).
void reset_unselected(TransactionOp& op, std::uint8_t version) {
    using Kind = TransactionOp::Kind;
    const Kind kind = op.kind;
    if (kind != Kind::push && kind != Kind::timer_set) {
        op.push = PushItem{};
    }
    if (kind != Kind::ack) {
        op.ack = AckItem{};
    }
    if (kind != Kind::kv_set && kind != Kind::kv_delete && kind != Kind::kv_check) {
        op.kv = engine::KvOp{};
    }
    if (kind == Kind::push && version < 3) {
        op.timer = engine::TimerOp{};
    } else if (kind == Kind::push) {
        op.timer.id.clear();
        op.timer.interval_ms = 0;
        op.timer.end_at = TimestampMs{0};
        op.timer.replace = false;
    } else if (kind == Kind::timer_cancel) {
        std::string id = std::move(op.timer.id);
        op.timer = engine::TimerOp{};
        op.timer.id = std::move(id);
    } else if (kind != Kind::timer_set) {
        op.timer = engine::TimerOp{};
    }
    if (kind != Kind::lock_release) {
        op.lock = locks::Guard{};
    }
    if (version < 3) {
        op.guard.reset();
    }
}

/// decode_command_into with the reader of the bytes' format version (the caller checked it).
template <class R>
Result<void> decode_command_with(ByteSpan bytes, Command& out) {
    R reader(bytes);
    ByteReader& in = reader.bytes();
    (void)in.u8();  // the version
    Command& command = out;
    command.client_id = reader.varint();
    command.client_seq = reader.varint();
    const std::uint8_t type = in.u8();
    constexpr std::size_t alternatives = std::variant_size_v<CommandBody>;
    if (!in.ok() || type == 0 || type > types_of(format_of<R>)) {
        return Error{queen::Errc::invalid_argument,
                     "command: unknown command type " + std::to_string(type)};
    }
    const bool is_in_place =
        command.body.index() == type - 1u && std::visit(
                                                 [](const auto& body) {
                                                     using T = std::decay_t<decltype(body)>;
                                                     return decodes_in_place<T>;
                                                 },
                                                 command.body);
    if (!is_in_place) {
        command.body =
            make_alternative<CommandBody>(type - 1u, std::make_index_sequence<alternatives>{});
    }
    std::visit([&](auto& body) { reader(body); }, command.body);
    if (auto* transaction = std::get_if<Transaction>(&command.body)) {
        // The members an op's kind does not select are not encoded: nothing of an op decoded
        // there before may survive in them.
        for (TransactionOp& op : transaction->ops) {
            reset_unselected(op, format_of<R>);
        }
        if constexpr (format_of<R> < 4) {
            transaction->next.reset();  // not in these bytes: nothing decoded before may stay
        }
    }
    if (!in.ok() || !in.at_end()) {
        return decode_error("command", in.position());
    }
    return {};
}

}  // namespace

Result<void> decode_command_into(ByteSpan bytes, Command& out) {
    if (bytes.size() > command_bytes_max) {
        return Error{queen::Errc::invalid_argument,
                     "command: " + std::to_string(bytes.size()) + " bytes is over the limit"};
    }
    const std::uint8_t version = version_of(bytes);
    if (!is_known_version(version)) {
        return Error{queen::Errc::invalid_argument,
                     "command: unknown format version " + std::to_string(version)};
    }
    switch (version) {
        case legacy_format_version: return decode_command_with<ReaderV1>(bytes, out);
        case 2: return decode_command_with<ReaderV2>(bytes, out);
        case 3: return decode_command_with<ReaderV3>(bytes, out);
        case 4: return decode_command_with<ReaderV4>(bytes, out);
        default: return decode_command_with<Reader>(bytes, out);
    }
}

Bytes encode_result(const CommandResult& result) {
    Sizer sizer;
    std::visit([&](const auto& body) { sizer(const_cast<std::decay_t<decltype(body)>&>(body)); },
               result);
    Bytes out;
    out.reserve(2 + sizer.size());
    ByteWriter header(out);
    header.u8(result_format_version);
    header.u8(static_cast<std::uint8_t>(result.index()));
    Writer writer(out);
    std::visit([&](const auto& body) { writer(const_cast<std::decay_t<decltype(body)>&>(body)); },
               result);
    return out;
}

namespace {

/// decode_result with the reader of the bytes' format version (the caller checked it).
template <class R>
Result<CommandResult> decode_result_with(ByteSpan bytes) {
    R reader(bytes);
    ByteReader& in = reader.bytes();
    (void)in.u8();  // the version
    const std::uint8_t type = in.u8();
    constexpr std::size_t alternatives = std::variant_size_v<CommandResult>;
    if (!in.ok() || type > types_of(format_of<R>)) {
        return Error{queen::Errc::invalid_argument,
                     "result: unknown result type " + std::to_string(type)};
    }
    auto result = make_alternative<CommandResult>(type, std::make_index_sequence<alternatives>{});
    std::visit([&](auto& body) { reader(body); }, result);
    if (!in.ok() || !in.at_end()) {
        return decode_error("result", in.position());
    }
    return result;
}

}  // namespace

Result<CommandResult> decode_result(ByteSpan bytes) {
    const std::uint8_t version = version_of(bytes);
    if (!is_known_version(version)) {
        return Error{queen::Errc::invalid_argument,
                     "result: unknown format version " + std::to_string(version)};
    }
    switch (version) {
        case legacy_format_version: return decode_result_with<ReaderV1>(bytes);
        case 2: return decode_result_with<ReaderV2>(bytes);
        case 3: return decode_result_with<ReaderV3>(bytes);
        case 4: return decode_result_with<ReaderV4>(bytes);
        default: return decode_result_with<Reader>(bytes);
    }
}

Bytes encode_timer_message(const queues::PushItem& item) {
    Sizer sizer;
    auto& mutable_item = const_cast<queues::PushItem&>(item);  // visited, only read
    sizer(mutable_item);
    Bytes out;
    out.reserve(1 + sizer.size());
    ByteWriter header(out);
    header.u8(command_format_version);
    Writer writer(out);
    writer(mutable_item);
    return out;
}

Result<queues::PushItem> decode_timer_message(ByteSpan bytes) {
    // Timers came with version 3; a PushItem's fields are the same in every version since.
    if (version_of(bytes) < 3 || version_of(bytes) > command_format_version) {
        return Error{queen::Errc::invalid_argument,
                     "timer message: unknown format version " + std::to_string(version_of(bytes))};
    }
    Reader reader(bytes);
    ByteReader& in = reader.bytes();
    (void)in.u8();
    queues::PushItem item;
    reader(item);
    if (!in.ok() || !in.at_end()) {
        return decode_error("timer message", in.position());
    }
    return item;
}

}  // namespace queen::engine
