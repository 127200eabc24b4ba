// queen/engine/command.hpp — the binary codec of log entry commands and of their results
// (format version 3, documented byte by byte in docs/engine.md; versions 1 and 2 still decode).
// No JSON here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"
#include "queen/engine/stream.hpp"
#include "queen/engine/transaction.hpp"
#include "queen/queues/types.hpp"

namespace queen::engine {

/// First byte of every encoded command and result. Bump on any layout change; decoders reject
/// versions they do not know (a newer leader must not feed an older follower silently).
/// Version 2 added Pop's namespace_name and task, the created_at of push and transaction push
/// results and SeekPartitionResult::cursor_created_at. PutSystem (type 16) came later within
/// version 2: a binary from before it reads such an entry as an unknown type (docs/engine.md).
/// Version 3 added the transaction operations after push and ack (KV, timers, lock release),
/// the delay of a push, operation guards, the fields of their results, and the command types lock,
/// due and configure_ephemeral. Version 4 added a transaction's `next` pop and its result.
/// Version 5 added the streams commands (stream_register, stream_cycle).
inline constexpr std::uint8_t command_format_version = 5;
inline constexpr std::uint8_t result_format_version = 5;
/// The oldest version the decoders still read (commands in logs written before version 2, and
/// results in client dedupe records); they read versions 2 and 3 too. What a later version added is
/// left at its default (empty, 0).
inline constexpr std::uint8_t legacy_format_version = 1;

/// Wire tag of each command (byte 1 after the version and client header). Never reuse a value.
enum class CommandType : std::uint8_t {
    configure_queue = 1,
    push = 2,
    pop = 3,
    ack = 4,
    extend_lease = 5,
    transaction = 6,
    delete_queue = 7,
    delete_group = 8,
    update_subscription = 9,
    seek_group = 10,
    seek_partition = 11,
    set_maintenance = 12,
    sweep = 13,
    delete_message = 14,
    add_trace = 15,
    put_system = 16,
    lock = 17,
    due = 18,
    configure_ephemeral = 19,
    stream_register = 20,
    stream_cycle = 21,
};

/// PutSystem's limits. apply() checks them (the decoder does not): a command over one yields
/// ErrorResult{invalid} and changes nothing.
inline constexpr std::size_t system_key_bytes_min = 1;
inline constexpr std::size_t system_key_bytes_max = 64;
inline constexpr std::size_t system_value_bytes_max = std::size_t{1} << 20;

/// Stores an opaque record of the node layer (cluster membership, a cluster catalogue) in the
/// tenant's state, under `key`, replacing what the key held; an empty `value` deletes the key.
/// The engine never interprets either. As any command it is applied in its entry's write txn
/// (so it replays identically and an LMDB copy carries it) and dedupes by client_id.
/// Read back with Engine::system_record. Limits: system_key_bytes_min..system_key_bytes_max
/// bytes of key (any bytes), at most system_value_bytes_max bytes of value.
struct PutSystem {
    std::string key;
    Bytes value;
};

/// PutSystem's answer.
struct PutSystemResult {
    bool replaced = false;  ///< the key held a record before (also for a delete)
};

/// The operation of one log entry. The variant index + 1 is the CommandType.
using CommandBody = std::variant<queues::ConfigureQueue, queues::Push, queues::Pop, queues::Ack,
                                 queues::ExtendLease, Transaction, queues::DeleteQueue,
                                 queues::DeleteGroup, queues::UpdateSubscription, queues::SeekGroup,
                                 queues::SeekPartition, queues::SetMaintenance, queues::Sweep,
                                 queues::DeleteMessage, queues::AddTrace, PutSystem, LockCommand,
                                 Due, ConfigureEphemeral, StreamRegister, StreamCycle, StreamAdmin>;

/// One log entry's command. `client_id` != 0 turns on exactly-once apply: an entry whose
/// client_seq is <= the last applied seq of that client is not applied again (the cached result
/// of the last one is returned; an older one gets ErrorResult{stale_request}).
struct Command {
    std::uint64_t client_id = 0;
    std::uint64_t client_seq = 0;
    CommandBody body;
};

/// Why an entry produced no state change at all (not a transaction's logical failure, which is a
/// TransactionResult with success = false).
struct ErrorResult {
    enum class Code : std::uint8_t {
        malformed = 1,      ///< the command bytes did not decode (version, truncation, limits)
        stale_request = 2,  ///< client_seq below the client's last applied seq
        invalid = 3,        ///< decoded but violates a limit (batch too large, empty names, ...)
    } code = Code::malformed;
    std::string message;
};

/// The result of one entry. Index 0 is an ErrorResult; index i > 0 answers CommandBody index i-1.
using CommandResult = std::variant<
    ErrorResult, queues::ConfigureResult, queues::PushResult, queues::PopResult, queues::AckResult,
    queues::ExtendLeaseResult, TransactionResult, queues::DeleteQueueResult,
    queues::DeleteGroupResult, queues::UpdateSubscriptionResult, queues::SeekGroupResult,
    queues::SeekPartitionResult, queues::MaintenanceResult, queues::SweepResult,
    queues::DeleteMessageResult, queues::AddTraceResult, PutSystemResult, LockResult, DueResult,
    EphemeralResult, StreamRegisterResult, StreamCycleResult, StreamAdminResult>;

/// Limits the decoder enforces before allocating (a fuzzed entry cannot make it allocate more
/// than the input size times a small constant).
inline constexpr std::size_t command_bytes_max = std::size_t{64} << 20;

/// The CommandType of `body`.
[[nodiscard]] CommandType command_type(const CommandBody& body) noexcept;
/// "push", "pop", ... for logging and metrics.
[[nodiscard]] std::string_view command_name(CommandType type) noexcept;

/// Encodes `command` (format version command_format_version). Never fails.
[[nodiscard]] Bytes encode_command(const Command& command);
/// Appends the encoding of `command` to `out` (the same bytes encode_command returns), growing
/// it once: a caller that frames the command writes its header first and copies nothing.
void encode_command_into(const Command& command, Bytes& out);
/// Decodes bytes made by encode_command, of either version. Errors: Errc::invalid_argument
/// (unknown version or type, truncated input, trailing bytes, an enum or bool out of range,
/// input over command_bytes_max), with the byte offset in the context.
[[nodiscard]] Result<Command> decode_command(ByteSpan bytes);
/// Decodes like decode_command into `out`. When `out` already holds a Push, Pop, Ack or
/// Transaction and `bytes` is one too, the strings and vectors of `out` are overwritten in place
/// and keep their storage, so an applier decoding every entry of a type into one scratch command
/// stops allocating once the scratch has grown (every field of those types is encoded, or, for
/// the member of a TransactionOp its kind does not select, reset: nothing of the previous
/// command survives). On error `out` holds some valid command.
/// Errors: as decode_command.
[[nodiscard]] Result<void> decode_command_into(ByteSpan bytes, Command& out);
/// The CommandBody alternative index of an encoded command, from its header only (no decode);
/// std::nullopt when the header is malformed (decode_command then says why).
[[nodiscard]] std::optional<std::size_t> command_index(ByteSpan bytes);

/// Encodes a result (format version result_format_version). Never fails.
[[nodiscard]] Bytes encode_result(const CommandResult& result);
/// Decodes bytes made by encode_result, of either version (a version 1 result has the
/// created_at fields version 2 added at 0). Errors: Errc::invalid_argument as for
/// decode_command.
[[nodiscard]] Result<CommandResult> decode_result(ByteSpan bytes);

/// The payload of a timer the engine sets (a timer_set operation, a delayed push): the message
/// the timer delivers. Format: a version byte (command_format_version) then the PushItem's
/// fields as in a push command.
[[nodiscard]] Bytes encode_timer_message(const queues::PushItem& item);
/// Errors: Errc::invalid_argument (unknown version, truncated or trailing bytes).
[[nodiscard]] Result<queues::PushItem> decode_timer_message(ByteSpan bytes);

}  // namespace queen::engine
