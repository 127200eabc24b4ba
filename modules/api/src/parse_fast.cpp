// api/src/parse_fast.cpp — the hot request bodies (push, ack, ack batch, transaction) read in one
// pass by the core reader (queen/core/json_cursor.hpp) straight from the raw text: no DOM, payloads
// kept as their JSON text minus the whitespace between tokens. Every client-facing error of these
// routes is made here, with the checks in the order and the words of docs/http-api.md, data plane
// (a repeated key counts with its last value, as in a DOM); a body that is not JSON gets
// parse_body's words.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>

#include "json.hpp"
#include "object_view.hpp"
#include "parse.hpp"
#include "queen/core/hex.hpp"
#include "queen/core/json_cursor.hpp"
#include "queen/core/json_scan.hpp"

namespace queen::api::detail {
namespace {

using json::Cursor;

Error bad(std::string message) {
    return Error{Errc::invalid_argument, std::move(message)};
}

/// The members these bodies read; any other key is validated and skipped.
enum class Member : std::uint8_t {
    queue,  // push items
    partition,
    payload,
    data,
    transaction_id,
    trace_id,
    partition_id,  // acknowledgments (and transaction_id)
    status,
    error,
    lease_id,
    consumer_group,
    type,  // transaction operations
    items,
    lock,      // an operation's guard
    delay_ms,  // a delayed push
    visible_at,
    other
};

Member member_of(std::string_view key) noexcept {
    switch (key.size()) {
        case 4:
            return key == "data"   ? Member::data
                   : key == "type" ? Member::type
                   : key == "lock" ? Member::lock
                                   : Member::other;
        case 5:
            return key == "queue"   ? Member::queue
                   : key == "items" ? Member::items
                   : key == "error" ? Member::error
                                    : Member::other;
        case 6: return key == "status" ? Member::status : Member::other;
        case 7:
            return key == "payload"   ? Member::payload
                   : key == "traceId" ? Member::trace_id
                   : key == "leaseId" ? Member::lease_id
                   : key == "delayMs" ? Member::delay_ms
                                      : Member::other;
        case 9:
            return key == "partition"   ? Member::partition
                   : key == "visibleAt" ? Member::visible_at
                                        : Member::other;
        case 11: return key == "partitionId" ? Member::partition_id : Member::other;
        case 13:
            return key == "transactionId"   ? Member::transaction_id
                   : key == "consumerGroup" ? Member::consumer_group
                                            : Member::other;
        default: return Member::other;
    }
}

/// A member's value as read: its raw JSON text (empty when the member is absent); `is_plain`:
/// a string of printable ASCII without escapes, whose text is `raw` without the quotes.
struct Field {
    std::string_view raw;
    bool is_plain = false;
    [[nodiscard]] bool is_absent_or_null() const noexcept { return raw.empty() || raw == "null"; }
    [[nodiscard]] bool is_string() const noexcept { return !raw.empty() && raw.front() == '"'; }
};

/// The members of one object: a repeated key keeps its last value, as in a DOM.
struct Members {
    std::array<Field, static_cast<std::size_t>(Member::other)> fields{};
    Field& operator[](Member member) noexcept { return fields[static_cast<std::size_t>(member)]; }
    const Field& operator[](Member member) const noexcept {
        return fields[static_cast<std::size_t>(member)];
    }
};

/// A member as clients usually write it (`"key":`, see Cursor::next_member_is) and what it is.
struct Expected {
    std::string_view text;
    Member member;
};
/// The orders the clients write their objects in (client/src/protocol*.cpp), tried first.
constexpr Expected push_item_order[] = {{R"("queue":)", Member::queue},
                                        {R"("partition":)", Member::partition},
                                        {R"("payload":)", Member::payload},
                                        {R"("transactionId":)", Member::transaction_id},
                                        {R"("traceId":)", Member::trace_id}};
constexpr Expected ack_order[] = {{R"("transactionId":)", Member::transaction_id},
                                  {R"("partitionId":)", Member::partition_id},
                                  {R"("status":)", Member::status},
                                  {R"("error":)", Member::error},
                                  {R"("consumerGroup":)", Member::consumer_group},
                                  {R"("leaseId":)", Member::lease_id}};
constexpr Expected operation_order[] = {{R"("type":)", Member::type}};
constexpr Expected push_operation_order[] = {{R"("items":)", Member::items}};

/// Inside an object: true with the next member whose value the cursor then sits on (`order[
/// expected]` tried first, as it is written); false at the object's end or on failure.
bool next_member(Cursor& cursor, std::span<const Expected> order, std::size_t& expected,
                 bool& is_first, Member& member) {
    if (expected < order.size() && cursor.next_member_is(order[expected].text, is_first)) {
        member = order[expected++].member;
        return true;
    }
    std::string_view key;
    if (!cursor.next_member(key, is_first)) {
        return false;
    }
    member = member_of(key);
    return true;
}

/// Reads the members of the object the cursor has entered into `members`.
void read_members(Cursor& cursor, std::span<const Expected> order, Members& members) {
    bool is_first = true;
    std::size_t expected = 0;
    Member member = Member::other;
    while (next_member(cursor, order, expected, is_first, member)) {
        if (member == Member::other) {
            cursor.skip_value();
            continue;
        }
        Field& field = members[member];
        if (!cursor.read_raw(field.raw, field.is_plain)) {
            return;
        }
    }
}

/// A string member as parse.cpp's string_field read it: absent or null -> `has` false; a
/// string -> `has` true and its text (a view into the body, or decoded into `storage`); another
/// type -> false.
bool string_of(const Field& field, bool& has, std::string_view& text, std::string& storage) {
    if (field.is_absent_or_null()) {
        has = false;
        return true;
    }
    if (!field.is_string()) {
        return false;
    }
    has = true;
    if (field.is_plain) {
        text = field.raw.substr(1, field.raw.size() - 2);
        return true;
    }
    if (!json::decode_json_string(field.raw, storage)) {
        return false;  // not reached: the cursor validated the string
    }
    text = storage;
    return true;
}

Error payload_too_large(std::size_t size, const ApiOptions& options) {
    return bad("payload is " + std::to_string(size) + " bytes, more than the limit of " +
               std::to_string(options.payload_bytes_max));
}

/// The payload as stored: its text without the whitespace between tokens, bounded.
Status set_payload(std::string_view payload, const ApiOptions& options, Bytes& out) {
    if (json::scan::has_no_space(payload)) {
        // The usual payload (what clients serialize compactly): one copy, nothing to squeeze.
        if (payload.size() > options.payload_bytes_max) {
            return payload_too_large(payload.size(), options);
        }
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(payload.data());
        out.assign(bytes, bytes + payload.size());
        return {};
    }
    out.resize(payload.size());
    const std::size_t compact =
        json::scan::copy_compact(payload, reinterpret_cast<char*>(out.data()));
    if (compact > options.payload_bytes_max) {
        return payload_too_large(compact, options);
    }
    out.resize(compact);
    return {};
}

/// One push item (/push, a transaction's push items, a flat transaction push) into `out`, a
/// fresh item: the checks of docs/http-api.md, push in their order. The payload is the member
/// `payload_member`, or `default_payload` without it. A missing or empty transactionId stays empty
/// here: the caller gives one once the whole body is accepted.
Status push_item(const Members& members, const ApiOptions& options, Member payload_member,
                 std::string_view default_payload, queues::PushItem& out, bool& has_client_id,
                 std::string& storage) {
    const Field& queue = members[Member::queue];
    if (!queue.is_string()) {
        return bad("Queue must be a string");
    }
    bool has = false;
    std::string_view text;
    string_of(queue, has, text, storage);
    QUEEN_TRY(check_name(text, "Queue name", options));
    out.queue.assign(text);
    if (!string_of(members[Member::partition], has, text, storage)) {
        return bad("Partition must be a string");
    }
    if (has) {
        QUEEN_TRY(check_name(text, "Partition name", options));
        out.partition.assign(text);
    }
    if (!string_of(members[Member::transaction_id], has, text, storage)) {
        return bad("TransactionId must be a string");
    }
    has_client_id = has && !text.empty();
    if (has_client_id) {
        QUEEN_TRY(check_id_length(text, "TransactionId", options));
        out.transaction_id.assign(text);
    }
    if (!string_of(members[Member::trace_id], has, text, storage)) {
        return bad("TraceId must be a string");
    }
    if (has && !text.empty()) {
        if (!is_uuid_text(text)) {
            return bad("TraceId must be a UUID");
        }
        out.trace_id.assign(text);
    }
    const Field& payload = members[payload_member];
    return set_payload(payload.raw.empty() ? default_payload : payload.raw, options, out.payload);
}

/// A UUID-shaped text cut where queues::format_uuid puts its fields: digits 1-12 (`high`),
/// 13-16 (`tag`: '8', the kind digit and "00" in our ids) and 17-32 (`low`).
struct UuidParts {
    std::uint64_t high = 0;
    std::uint64_t tag = 0;
    std::uint64_t low = 0;
};

/// Reads `text` in one pass; false when it is not 8-4-4-4-12 hex digits (is_uuid_text).
bool split_uuid(std::string_view text, UuidParts& out) noexcept {
    if (text.size() != 36 || text[8] != '-' || text[13] != '-' || text[18] != '-' ||
        text[23] != '-') {
        return false;
    }
    std::uint8_t invalid = 0;  // gets a high bit from any byte that is not a hex digit
    const auto digits = [&](std::size_t from, std::size_t count) {
        std::uint64_t value = 0;
        for (std::size_t i = from; i < from + count; ++i) {
            const std::uint8_t digit = hex_values[static_cast<unsigned char>(text[i])];
            invalid |= digit;
            value = (value << 4) | (digit & 0xfu);
        }
        return value;
    };
    out.high = (digits(0, 8) << 16) | digits(9, 4);
    out.tag = digits(14, 4);
    out.low = (digits(19, 4) << 48) | digits(24, 12);
    return (invalid & 0xf0) == 0;
}

/// The tag of our ids of `kind`: '8', the kind digit, "00".
constexpr std::uint64_t uuid_tag(queues::UuidKind kind) noexcept {
    return 0x8000 | (static_cast<std::uint64_t>(kind) << 8);
}

/// queues::parse_partition_id of a text that split_uuid read.
queues::PartitionId partition_of(const UuidParts& parts) noexcept {
    return parts.tag == uuid_tag(queues::UuidKind::partition) && parts.high == 0
               ? queues::PartitionId{parts.low}
               : queues::PartitionId{0};
}

/// queues::parse_lease_id in one pass.
queues::LeaseId lease_of(std::string_view text) noexcept {
    if (text.empty()) {
        return queues::LeaseId{0};
    }
    UuidParts parts;
    if (!split_uuid(text, parts) || parts.tag != uuid_tag(queues::UuidKind::lease) ||
        parts.high != 0 || parts.low == 0) {
        return queues::LeaseId{UINT64_MAX};
    }
    return queues::LeaseId{parts.low};
}

/// The last partition and lease id texts of one body (views into it) with what they read as:
/// the items of an ack batch usually share both, and a compare is cheaper than a decode.
struct IdMemo {
    std::string_view partition_text;  // UUID-shaped when not empty
    queues::PartitionId partition{0};
    std::string_view lease_text;
    queues::LeaseId lease{0};
};

/// One acknowledgment (/ack, an item of /ack/batch, a transaction's ack) into `out`, a fresh
/// item: the checks of docs/http-api.md, ack in their order; `missing_*` are the route's words for
/// a missing id.
Status ack_item(const Members& members, const ApiOptions& options,
                std::string_view missing_transaction, std::string_view missing_partition,
                IdMemo& memo, queues::AckItem& out, std::string& storage) {
    bool has = false;
    std::string_view text;
    const Field& transaction_id = members[Member::transaction_id];
    if (!transaction_id.is_string()) {
        return bad(std::string(missing_transaction));
    }
    string_of(transaction_id, has, text, storage);
    if (text.empty()) {
        return bad(std::string(missing_transaction));
    }
    QUEEN_TRY(check_id_length(text, "transactionId", options));
    out.transaction_id.assign(text);

    const Field& partition_id = members[Member::partition_id];
    if (!partition_id.is_string()) {
        return bad(std::string(missing_partition));
    }
    string_of(partition_id, has, text, storage);
    if (text.empty()) {
        return bad(std::string(missing_partition));
    }
    if (!memo.partition_text.empty() && text == memo.partition_text) {
        out.partition = memo.partition;
    } else {
        UuidParts parts;
        if (!split_uuid(text, parts)) {
            return bad("partitionId must be a UUID");
        }
        out.partition = partition_of(parts);
        if (partition_id.is_plain) {
            memo.partition_text = text;
            memo.partition = out.partition;
        }
    }

    if (!string_of(members[Member::status], has, text, storage)) {
        return bad("status must be a string");
    }
    out.status = has ? parse_ack_status(text) : queues::AckStatus::completed;

    const Field& error = members[Member::error];
    if (!error.is_absent_or_null()) {
        if (!error.is_string()) {
            return bad("error must be a string or null");
        }
        string_of(error, has, text, storage);
        if (text.size() > options.payload_bytes_max) {
            return bad("error is longer than " + std::to_string(options.payload_bytes_max) +
                       " bytes");
        }
        out.has_error = true;
        out.error.assign(text);
    }

    const Field& lease = members[Member::lease_id];
    if (!string_of(lease, has, text, storage)) {
        return bad("leaseId must be a string");
    }
    // A lease id that is not one of ours never matches: the ack answers "Invalid or expired
    // lease" as the old server did for a foreign lease.
    if (!has) {
        out.lease = queues::LeaseId{0};
    } else if (!memo.lease_text.empty() && text == memo.lease_text) {
        out.lease = memo.lease;
    } else {
        out.lease = lease_of(text);
        if (lease.is_plain) {
            memo.lease_text = text;
            memo.lease = out.lease;
        }
    }

    if (!string_of(members[Member::consumer_group], has, text, storage)) {
        return bad("consumerGroup must be a string");
    }
    if (has && !text.empty()) {  // null, absent and "" keep __QUEUE_MODE__
        QUEEN_TRY(check_name(text, "consumerGroup", options));
        out.group.assign(text);
    }
    return {};
}

/// The elements of a list of item objects as read so far: their count and the first error.
struct ItemList {
    std::size_t count = 0;
    std::optional<Error> error;

    /// Reads the element at the cursor: past `items_max` or after the first error it is only
    /// validated; one that is not an object is the error `not_an_object`; item(members) takes
    /// an item's members (read in `order`) and returns its Status.
    template <class Item>
    void read(Cursor& cursor, std::span<const Expected> order, std::size_t items_max,
              const char* not_an_object, Item&& item) {
        if (++count > items_max || error) {
            cursor.skip_value();
            return;
        }
        if (cursor.peek() != '{') {
            cursor.skip_value();
            error = bad(not_an_object);
            return;
        }
        cursor.enter_object();
        Members members;
        read_members(cursor, order, members);
        if (!cursor.is_ok()) {
            return;
        }
        if (Status read = item(members); !read) {
            error = std::move(read).error();
        }
    }
};

/// The operations of a transaction, read one at a time: the first error (the transaction rules'
/// checks, in operation order) stops the reading, not the walk, which still validates the rest.
class OperationReader {
public:
    OperationReader(const ApiOptions& options, engine::Transaction& out)
        : options_(options), out_(out) {}

    /// The first error of the operations read since the last reset().
    std::optional<Error> error;

    void reset() {
        out_.ops.clear();
        error.reset();
    }

    /// Reads the operation at the cursor.
    void read(Cursor& cursor) {
        if (error) {
            cursor.skip_value();
            return;
        }
        if (cursor.peek() != '{') {
            cursor.skip_value();
            error = bad("Each operation must be an object");
            return;
        }
        const std::size_t object_start = cursor.offset();
        cursor.enter_object();
        const std::size_t first_op = out_.ops.size();
        Members members;
        // The usual {"type":"push","items":[...]} has its items read where they are; a later
        // type or items (the last one counts) takes that back and they are read again below.
        bool is_items_read = false;
        std::optional<Error> items_error;
        std::span<const Expected> order = operation_order;
        std::size_t expected = 0;
        bool is_first = true;
        Member member = Member::other;
        while (next_member(cursor, order, expected, is_first, member)) {
            if (member == Member::other) {
                cursor.skip_value();
                continue;
            }
            Field& field = members[member];
            if ((member == Member::type || member == Member::items) && is_items_read) {
                out_.ops.resize(first_op);
                is_items_read = false;
                items_error.reset();
            }
            if (member == Member::items && members[Member::type].raw == R"("push")" &&
                cursor.peek() == '[') {
                const std::size_t start = cursor.offset();
                is_items_read = true;
                read_push_items(cursor, items_error);
                field.raw = cursor.text().substr(start, cursor.offset() - start);
                field.is_plain = false;
                continue;
            }
            if (!cursor.read_raw(field.raw, field.is_plain)) {
                return;
            }
            if (member == Member::type) {
                // The members that usually follow.
                order = field.raw == R"("ack")"    ? std::span<const Expected>(ack_order)
                        : field.raw == R"("push")" ? std::span<const Expected>(push_operation_order)
                                                   : std::span<const Expected>();
                expected = 0;
            }
        }
        if (!cursor.is_ok()) {
            return;
        }
        // A type that is not a string is no type.
        std::string_view type;
        bool has_type = false;
        if (members[Member::type].is_string()) {
            string_of(members[Member::type], has_type, type, type_storage_);
        }
        if (type == "push") {
            const Field& items = members[Member::items];
            if (!items.is_absent_or_null()) {
                if (!is_items_read) {
                    if (items.raw.front() != '[') {
                        error = bad("push operation items must be an array");
                        return;
                    }
                    // Validated by the walk above; three levels open around it.
                    Cursor again(items.raw, static_cast<int>(options_.json_depth_max), 3);
                    read_push_items(again, items_error);
                }
                error = std::move(items_error);
                if (!error) {
                    guard(members[Member::lock], first_op);
                }
                return;
            }
            // A flat push: {type, queue, partition, payload|data, transactionId, traceId}.
            bool has_client_id = false;
            const Member payload =
                members[Member::payload].raw.empty() ? Member::data : Member::payload;
            engine::TransactionOp& op = add(engine::TransactionOp::Kind::push);
            if (Status pushed =
                    push_item(members, options_, payload, "{}", op.push, has_client_id, storage_);
                !pushed) {
                error = std::move(pushed).error();
                return;
            }
            if (Status delayed = read_delay(members, op.timer); !delayed) {
                error = std::move(delayed).error();
                return;
            }
        } else if (type == "ack") {
            if (Status acked = ack_item(members, options_, "ack operation needs a transactionId",
                                        "ack operation needs a partitionId", memo_,
                                        add(engine::TransactionOp::Kind::ack).ack, storage_);
                !acked) {
                error = std::move(acked).error();
                return;
            }
        } else if (const auto kind = extended_operation_kind(type)) {
            // The operation's members read again from its text (validated above), by the rules
            // the routes' DOM bodies go through (parse_ops.cpp).
            object_.read(cursor.text().substr(object_start, cursor.offset() - object_start),
                         options_.json_depth_max);
            if (Status read = parse_extended_operation(object_, *kind, options_, add(*kind));
                !read) {
                error = std::move(read).error();
                return;
            }
        } else {
            error = bad("Unknown operation type: " + std::string(type));
            return;
        }
        if (type == "push" || type == "ack") {
            guard(members[Member::lock], first_op);
            if (error) {
                return;
            }
        }
        if (out_.ops.size() > options_.transaction_operations_max) {
            error = too_many();
        }
    }

private:
    Error too_many() const {
        return bad("transaction has more than " +
                   std::to_string(options_.transaction_operations_max) + " operations");
    }

    engine::TransactionOp& add(engine::TransactionOp::Kind kind) {
        engine::TransactionOp& op = out_.ops.emplace_back();
        op.kind = kind;
        return op;
    }

    /// The delay of a pushed message ("delayMs" / "visibleAt"), when it has one.
    Status read_delay(const Members& members, engine::TimerOp& out) {
        const Field& delay = members[Member::delay_ms];
        const Field& at = members[Member::visible_at];
        if (delay.is_absent_or_null() && at.is_absent_or_null()) {
            return {};
        }
        object_.start(options_.json_depth_max);
        for (const auto& [field, name] : {std::pair{&delay, "delayMs"}, {&at, "visibleAt"}}) {
            if (!field->raw.empty()) {
                object_.add(name, field->raw, field->is_plain);
            }
        }
        return parse_push_delay(object_, out);
    }

    /// Gives the "lock" guard of a push or ack operation, when it has one, to each operation it
    /// became; a bad one is the error.
    void guard(const Field& lock, std::size_t first_op) {
        if (lock.is_absent_or_null()) {
            return;
        }
        if (Status guarded = read_guard(lock, first_op); !guarded) {
            error = std::move(guarded).error();
        }
    }

    Status read_guard(const Field& lock, std::size_t first_op) {
        object_.read(lock.raw, options_.json_depth_max);
        QUEEN_TRY(auto guard, parse_lock_grant(object_));
        for (std::size_t i = first_op; i < out_.ops.size(); ++i) {
            out_.ops[i].guard = guard;
        }
        return {};
    }

    /// The items of a push operation (the array at the cursor), one operation each; the first
    /// error goes to `items_error` and the rest is only validated.
    void read_push_items(Cursor& cursor, std::optional<Error>& items_error) {
        ItemList items;
        items.error = std::move(items_error);
        cursor.enter_array();
        bool is_first = true;
        while (cursor.next_element(is_first)) {
            if (!items.error && out_.ops.size() == options_.transaction_operations_max) {
                items.error = too_many();  // the limit counts operations, not these items
            }
            items.read(cursor, push_item_order, SIZE_MAX, "Each item must be an object",
                       [&](const Members& members) -> Status {
                           bool has_client_id = false;
                           engine::TransactionOp& op = add(engine::TransactionOp::Kind::push);
                           QUEEN_TRY(push_item(members, options_, Member::payload, "{}", op.push,
                                               has_client_id, storage_));
                           return read_delay(members, op.timer);
                       });
        }
        items_error = std::move(items.error);
    }

    const ApiOptions& options_;
    engine::Transaction& out_;
    IdMemo memo_;
    std::string storage_;
    std::string type_storage_;
    /// An extended operation's members, a delay's or a guard's (reused: keeps its storage).
    RawObject object_;
};

/// Reads the body at the cursor as an object whose member `list_key` is an array: element()
/// reads each element at the cursor. A repeated list replaces the earlier one (reset() drops
/// what it gave), as in the DOM. other(key) reads another member and returns true, or returns
/// false to have it skipped. Returns whether there was a list (a body of another type has none).
template <class Reset, class Element, class Other>
bool read_list(Cursor& cursor, std::string_view list_key, Reset&& reset, Element&& element,
               Other&& other) {
    if (cursor.peek() != '{') {
        cursor.skip_value();
        return false;
    }
    bool has_list = false;
    cursor.enter_object();
    bool is_first = true;
    std::string_view key;
    while (cursor.next_member(key, is_first)) {
        if (key != list_key) {
            if (!other(key)) {
                cursor.skip_value();
            }
            continue;
        }
        reset();
        has_list = cursor.peek() == '[';
        if (!has_list) {
            cursor.skip_value();
            continue;
        }
        cursor.enter_array();
        bool is_first_element = true;
        while (cursor.next_element(is_first_element)) {
            element();
        }
    }
    return has_list;
}

/// `body` without a leading UTF-8 byte order mark, which the DOM parser (parse_body) skips too.
std::string_view without_bom(std::string_view body) noexcept {
    return body.starts_with("\xEF\xBB\xBF") ? body.substr(3) : body;
}

/// True when the walk read the whole body: after the value only whitespace is left, or
/// whitespace and a NUL byte, where the DOM parser stops reading ("{...}\0..." is "{...}";
/// parse_body still counts the nesting of what follows).
bool is_whole_body(Cursor& cursor, std::string_view body, const ApiOptions& options) noexcept {
    if (!cursor.is_ok() || cursor.peek() != '\0') {
        return false;
    }
    return cursor.offset() >= cursor.text().size() || json_depth(body) <= options.json_depth_max;
}

/// The first error of a body whose member `name` is an item list, in the order clients see
/// them: the body is not one whole JSON value, the list is missing, it holds more than
/// `items_max` items. (The items' own errors, in `list.error`, come after the caller's checks.)
std::optional<Error> list_body_error(Cursor& cursor, std::string_view body,
                                     const ApiOptions& options, bool has_list, const ItemList& list,
                                     std::string_view name, std::size_t items_max) {
    if (!is_whole_body(cursor, body, options)) {
        return body_error(body, options.json_depth_max);
    }
    if (!has_list) {
        return bad(std::string(name) + " array is required");
    }
    if (list.count > items_max) {
        return bad(std::string(name) + " has " + std::to_string(list.count) +
                   " entries, more than the limit of " + std::to_string(items_max));
    }
    return std::nullopt;
}

/// The room to reserve for the items of a body of `body_bytes`: the usual count up front
/// instead of the growth steps (each moves every item), capped for huge bodies.
std::size_t expected_count(std::size_t body_bytes, std::size_t bytes_per_item, std::size_t max,
                           std::size_t cap) {
    return std::min<std::size_t>({max, body_bytes / bytes_per_item + 1, cap});
}

/// Reads the push item at the cursor (an element of a push list) into `out`.
void read_push_element(Cursor& cursor, const ApiOptions& options, ItemList& items, ParsedPush& out,
                       std::string& storage) {
    items.read(cursor, push_item_order, options.push_items_max, "Each item must be an object",
               [&](const Members& members) -> Status {
                   bool has_client_id = false;
                   QUEEN_TRY(push_item(members, options, Member::payload, "null",
                                       out.push.items.emplace_back(), has_client_id, storage));
                   out.has_client_transaction_id.push_back(has_client_id);
                   return {};
               });
}

/// Gives every item without a client transactionId a fresh one. Generated here, at the edge,
/// so the log entry (and every replica) has the same id; in item order, once the body is
/// accepted.
void give_transaction_ids(ParsedPush& out, RandomSource& random, std::int64_t now_ms) {
    for (std::size_t i = 0; i < out.push.items.size(); ++i) {
        if (!out.has_client_transaction_id[i]) {
            out.push.items[i].transaction_id = time_uuid(random, now_ms);
        }
    }
}

}  // namespace

Result<ParsedPush> parse_push(std::string_view body, const ApiOptions& options,
                              RandomSource& random, std::int64_t now_ms) {
    Cursor cursor(without_bom(body), static_cast<int>(options.json_depth_max));
    ParsedPush out;
    // An item of a 256-byte payload takes ~350 bytes of body.
    const std::size_t expected_items =
        expected_count(body.size(), 256, options.push_items_max, 1024);
    out.push.items.reserve(expected_items);
    out.has_client_transaction_id.reserve(expected_items);
    std::string storage;
    ItemList items;
    const bool has_items = read_list(
        cursor, "items",
        [&] {
            out.push.items.clear();
            out.has_client_transaction_id.clear();
            items = ItemList{};
        },
        [&] { read_push_element(cursor, options, items, out, storage); },
        [](std::string_view) { return false; });
    if (auto error = list_body_error(cursor, body, options, has_items, items, "items",
                                     options.push_items_max)) {
        return std::move(*error);
    }
    if (items.error) {
        return std::move(*items.error);
    }
    give_transaction_ids(out, random, now_ms);
    return out;
}

Result<ParsedPush> parse_push_array(std::string_view array, std::string_view name,
                                    const ApiOptions& options, RandomSource& random,
                                    std::int64_t now_ms) {
    // One level (the body around the array) is open.
    Cursor cursor(array, static_cast<int>(options.json_depth_max), 1);
    ParsedPush out;
    if (cursor.peek() != '[') {
        return bad(std::string(name) + " must be an array");
    }
    std::string storage;
    ItemList items;
    cursor.enter_array();
    bool is_first = true;
    while (cursor.next_element(is_first)) {
        read_push_element(cursor, options, items, out, storage);
    }
    if (!cursor.is_ok()) {
        return body_error(array, options.json_depth_max);
    }
    if (items.count > options.push_items_max) {
        return bad(std::string(name) + " has " + std::to_string(items.count) +
                   " entries, more than the limit of " + std::to_string(options.push_items_max));
    }
    if (items.error) {
        return std::move(*items.error);
    }
    give_transaction_ids(out, random, now_ms);
    return out;
}

Result<queues::Ack> parse_ack(std::string_view body, const ApiOptions& options) {
    Cursor cursor(without_bom(body), static_cast<int>(options.json_depth_max));
    Members members;
    const bool is_object = cursor.peek() == '{';
    if (is_object) {
        cursor.enter_object();
        read_members(cursor, ack_order, members);
    } else {
        cursor.skip_value();
    }
    if (!is_whole_body(cursor, body, options)) {
        return body_error(body, options.json_depth_max);
    }
    if (!is_object) {
        return bad("transactionId is required");
    }
    queues::Ack out;
    IdMemo memo;
    std::string storage;
    QUEEN_TRY(ack_item(members, options, "transactionId is required",
                       "partitionId is required to ensure message uniqueness", memo,
                       out.items.emplace_back(), storage));
    return out;
}

Result<queues::Ack> parse_ack_batch(std::string_view body, const ApiOptions& options) {
    Cursor cursor(without_bom(body), static_cast<int>(options.json_depth_max));
    queues::Ack out;
    // An item the bench's clients write takes ~190 bytes.
    out.items.reserve(expected_count(body.size(), 160, options.ack_items_max, 1024));
    IdMemo memo;
    std::string storage;
    Field top_group;
    ItemList list;
    const bool has_list = read_list(
        cursor, "acknowledgments",
        [&] {
            out.items.clear();
            list = ItemList{};
        },
        [&] {
            list.read(cursor, ack_order, options.ack_items_max,
                      "Each acknowledgment must be an object", [&](const Members& members) {
                          return ack_item(
                              members, options,
                              "Each acknowledgment must have a valid transactionId string",
                              "Each acknowledgment must have a valid partitionId string to "
                              "ensure message uniqueness",
                              memo, out.items.emplace_back(), storage);
                      });
        },
        [&](std::string_view key) {
            if (key != "consumerGroup") {
                return false;
            }
            cursor.read_raw(top_group.raw, top_group.is_plain);
            return true;
        });
    if (auto error = list_body_error(cursor, body, options, has_list, list, "acknowledgments",
                                     options.ack_items_max)) {
        return std::move(*error);
    }
    // The top-level group wins over per-item groups (docs/http-api.md, ack batch); without one,
    // per-item groups.
    bool has_top_group = false;
    std::string_view group;
    if (!string_of(top_group, has_top_group, group, storage)) {
        return bad("consumerGroup must be a string");
    }
    has_top_group = has_top_group && !group.empty();
    if (has_top_group) {
        QUEEN_TRY(check_name(group, "consumerGroup", options));
    }
    if (list.error) {
        return std::move(*list.error);
    }
    if (has_top_group) {
        for (queues::AckItem& item : out.items) {
            item.group.assign(group);
        }
    }
    return out;
}

Result<engine::Transaction> parse_transaction(std::string_view body, const ApiOptions& options,
                                              RandomSource& random, std::int64_t now_ms) {
    Cursor cursor(without_bom(body), static_cast<int>(options.json_depth_max));
    engine::Transaction out;
    // An operation takes ~250 bytes of body.
    out.ops.reserve(expected_count(body.size(), 250, options.transaction_operations_max, 256));
    OperationReader reader(options, out);
    std::size_t count = 0;
    Field next;
    const bool has_operations = read_list(
        cursor, "operations",
        [&] {
            reader.reset();
            count = 0;
        },
        [&] {
            ++count;
            reader.read(cursor);
        },
        [&](std::string_view key) {
            if (key != "next") {
                return false;
            }
            cursor.read_raw(next.raw, next.is_plain);
            return true;
        });
    if (!is_whole_body(cursor, body, options)) {
        return body_error(body, options.json_depth_max);
    }
    if (!has_operations) {
        return bad("operations array required");
    }
    if (count == 0) {
        return bad("operations array cannot be empty");
    }
    if (reader.error) {
        return std::move(*reader.error);
    }
    if (!next.is_absent_or_null()) {
        RawObject object;
        object.read(next.raw, options.json_depth_max);
        QUEEN_TRY(out.next, parse_next_pop(object, options));
    }
    for (engine::TransactionOp& op : out.ops) {
        if (op.kind == engine::TransactionOp::Kind::push && op.push.transaction_id.empty()) {
            op.push.transaction_id = time_uuid(random, now_ms);
        }
    }
    return out;
}

}  // namespace queen::api::detail
