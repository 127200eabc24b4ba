// tools/json_read_bench/simd_readers.cpp — the simdjson on-demand readers of simd_readers.hpp:
// the same output and the same decline rules as api/src/parse_fast.cpp and
// client::read_pop_answer, read through simdjson::ondemand instead of the hand-written scanners.
#include "simd_readers.hpp"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "json.hpp"
#include "queen/core/json_scan.hpp"

namespace queen::json_eval {
namespace {

namespace od = simdjson::ondemand;
using api::ApiOptions;
using api::RandomSource;
using simdjson::error_code;

constexpr std::size_t padding = simdjson::SIMDJSON_PADDING;

bool is_space(char c) noexcept {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/// raw_json_token() and raw_json() end where the next token starts: drop the whitespace.
std::string_view trim_right(std::string_view text) noexcept {
    while (!text.empty() && is_space(text.back())) {
        text.remove_suffix(1);
    }
    return text;
}

/// One read: the check mode, the limits and the first failure.
struct Walk {
    Check check = Check::walk;
    int depth_max = 64;
    const char* end = nullptr;  // the body's end
    error_code error = simdjson::SUCCESS;
    const char* reason = nullptr;  // a decline that is not a simdjson error

    bool ok(error_code code) noexcept {
        if (code != simdjson::SUCCESS) {
            if (error == simdjson::SUCCESS && reason == nullptr) {
                error = code;
            }
            return false;
        }
        return true;
    }
    bool decline(const char* why) noexcept {
        if (error == simdjson::SUCCESS && reason == nullptr) {
            reason = why;
        }
        return false;
    }
};

/// The first '"' or '\\' at or after `at` (before `end`, else `end`), eight bytes per step:
/// the body has SIMDJSON_PADDING readable bytes after `end`, so a word may cross it.
const char* find_quote_or_backslash(const char* at, const char* end) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101ULL;
    constexpr std::uint64_t highs = 0x8080808080808080ULL;
    for (; at < end; at += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, at, sizeof word);
        const std::uint64_t quote = word ^ (ones * '"');
        const std::uint64_t slash = word ^ (ones * '\\');
        // The lowest flagged byte is exact (borrows only run upwards from a flagged byte).
        const std::uint64_t flags =
            ((quote - ones) & ~quote & highs) | ((slash - ones) & ~slash & highs);
        if (flags != 0) {
            const char* found = at + __builtin_ctzll(flags) / 8;
            return found < end ? found : end;
        }
    }
    return end;
}

/// The key of `field` as its text (a view into the body): keys with an escape decline, as in
/// the api fast path (stage 1 guarantees the closing quote exists).
bool key_of(Walk& w, od::field& field, std::string_view& key) {
    const char* start = field.key().raw();
    const char* at = find_quote_or_backslash(start, w.end);
    if (at >= w.end || *at != '"') {
        return w.decline("a key with an escape");
    }
    key = std::string_view(start, static_cast<std::size_t>(at - start));
    return true;
}

bool walk_value(Walk& w, od::value value, int depth);

/// A number on-demand parses; an integer it refuses (beyond 64 bits) is judged by json::scan
/// (nlohmann and the scanner accept it; 1e999 stays refused by both).
bool walk_number(Walk& w, od::value& value) {
    const std::string_view token = trim_right(value.raw_json_token());
    od::number number;
    const error_code code = value.get_number().get(number);
    if (code == simdjson::SUCCESS) {
        return true;
    }
    if (code != simdjson::NUMBER_ERROR) {
        return w.ok(code);
    }
    std::size_t pos = 0;
    if (json::scan::skip_value(token, pos, 1) && pos == token.size()) {
        return true;  // left unconsumed: the parent's iteration skips it
    }
    return w.ok(code);
}

/// Validates a key whose raw text has an escape (unescaping checks it).
bool check_key(Walk& w, od::field& field) {
    const char* at = find_quote_or_backslash(field.key().raw(), w.end);
    if (at < w.end && *at == '"') {
        return true;
    }
    std::string_view unescaped;
    return w.ok(field.unescaped_key().get(unescaped));
}

/// Consumes `value` (nesting depth `depth`, the body's top value is 1) and validates it fully.
bool walk_value(Walk& w, od::value value, int depth) {
    if (depth > w.depth_max) {
        return w.decline("nested deeper than json_depth_max");
    }
    od::json_type type;
    if (!w.ok(value.type().get(type))) {
        return false;
    }
    switch (type) {
        case od::json_type::object: {
            od::object object;
            if (!w.ok(value.get_object().get(object))) {
                return false;
            }
            for (auto member : object) {
                od::field field;
                if (!w.ok(std::move(member).get(field)) || !check_key(w, field) ||
                    !walk_value(w, field.value(), depth + 1)) {
                    return false;
                }
            }
            return true;
        }
        case od::json_type::array: {
            od::array array;
            if (!w.ok(value.get_array().get(array))) {
                return false;
            }
            for (auto element : array) {
                od::value item;
                if (!w.ok(std::move(element).get(item)) || !walk_value(w, item, depth + 1)) {
                    return false;
                }
            }
            return true;
        }
        case od::json_type::string: {
            // Without a backslash stage 1 has checked everything a string needs (closed, UTF-8,
            // no control byte); with one, unescaping checks the escapes and surrogates.
            if (value.raw_json_token().find('\\') == std::string_view::npos) {
                od::raw_json_string raw;
                return w.ok(value.get_raw_json_string().get(raw));
            }
            std::string_view text;
            return w.ok(value.get_string().get(text));
        }
        case od::json_type::number: return walk_number(w, value);
        case od::json_type::boolean: {
            bool flag = false;
            return w.ok(value.get_bool().get(flag));
        }
        case od::json_type::null: {
            bool is_null = false;
            if (!w.ok(value.is_null().get(is_null))) {
                return false;
            }
            return is_null || w.ok(simdjson::INCORRECT_TYPE);
        }
    }
    return w.ok(simdjson::TAPE_ERROR);
}

/// The raw span of `value` without checking it (object/array raw_json() consumes it; a string
/// is consumed, another scalar is left to the parent's iteration, which skips it).
bool skip_raw(Walk& w, od::value& value, std::string_view& raw) {
    od::json_type type;
    if (!w.ok(value.type().get(type))) {
        return false;
    }
    if (type == od::json_type::object) {
        od::object object;
        if (!w.ok(value.get_object().get(object)) || !w.ok(object.raw_json().get(raw))) {
            return false;
        }
    } else if (type == od::json_type::array) {
        od::array array;
        if (!w.ok(value.get_array().get(array)) || !w.ok(array.raw_json().get(raw))) {
            return false;
        }
    } else {
        raw = value.raw_json_token();
        if (type == od::json_type::string) {
            // Consumed: skipping an unconsumed string that a ':' follows takes it for a key
            // and eats the ':' (json_iterator::skip_child), so {"a":"x":"y"} would pass.
            od::raw_json_string ignored;
            if (!w.ok(value.get_raw_json_string().get(ignored))) {
                return false;
            }
        }
    }
    raw = trim_right(raw);
    return true;
}

/// Consumes a value the reader does not interpret (a payload, an unknown member) and gives its
/// raw span, checked as w.check says.
bool take_raw(Walk& w, od::value& value, int depth, std::string_view& raw) {
    if (w.check != Check::walk) {
        if (!skip_raw(w, value, raw)) {
            return false;
        }
        if (w.check == Check::skip) {
            return true;
        }
        std::size_t pos = 0;
        return (json::scan::skip_value(raw, pos, depth, w.depth_max) && pos == raw.size()) ||
               w.decline("invalid JSON (json::scan)");
    }
    const std::string_view token = value.raw_json_token();
    od::json_type type;
    if (!w.ok(value.type().get(type))) {
        return false;
    }
    if (!walk_value(w, value, depth)) {
        return false;
    }
    if (type != od::json_type::object && type != od::json_type::array) {
        raw = trim_right(token);
        return true;
    }
    // A container ends before the token the walk stopped at.
    const char* end = nullptr;
    const error_code code = value.current_location().get(end);
    if (code == simdjson::OUT_OF_BOUNDS) {
        end = w.end;
    } else if (!w.ok(code)) {
        return false;
    }
    raw = trim_right(std::string_view(token.data(), static_cast<std::size_t>(end - token.data())));
    return true;
}

/// The text of the string `value` (its type checked by the caller), consumed: unescaped into
/// the parser's buffer (valid until the next document), which validates the escapes. (Taking
/// a view into the body when the token has no backslash measured 2-7 % more instructions.)
bool string_text(Walk& w, od::value& value, std::string_view& text) {
    return w.ok(value.get_string().get(text));
}

/// null -> `has` false; a string -> `has` true and its unescaped text; anything else declines.
bool optional_text(Walk& w, od::value& value, bool& has, std::string_view& text) {
    od::json_type type;
    if (!w.ok(value.type().get(type))) {
        return false;
    }
    if (type == od::json_type::null) {
        bool is_null = false;
        has = false;
        return w.ok(value.is_null().get(is_null)) && (is_null || w.ok(simdjson::INCORRECT_TYPE));
    }
    if (type != od::json_type::string) {
        return w.decline("a string field of another type");
    }
    has = true;
    return string_text(w, value, text);
}

bool first_time(Walk& w, bool& seen) {
    if (seen) {
        return w.decline("a repeated key");
    }
    seen = true;
    return true;
}

/// True when `raw` has no byte <= 0x20 (then valid JSON text is already compact); eight bytes
/// per step as in parse_fast.cpp.
bool has_no_space(std::string_view raw) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101ULL;
    constexpr std::uint64_t highs = 0x8080808080808080ULL;
    const char* const data = raw.data();
    std::size_t i = 0;
    for (; i + 8 <= raw.size(); i += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, data + i, sizeof word);
        if (((word - ones * 0x21) & ~word & highs) != 0) {
            return false;
        }
    }
    for (; i < raw.size(); ++i) {
        if (static_cast<unsigned char>(data[i]) <= 0x20) {
            return false;
        }
    }
    return true;
}

/// As in parse_fast.cpp: where an item sits and how its payload defaults.
struct ItemShape {
    int depth = 3;
    std::string_view default_payload = "null";
    bool has_data_key = false;
};

/// The members of one push item as they come.
struct PushFields {
    bool seen_queue = false, seen_partition = false, seen_transaction = false, seen_trace = false,
         seen_payload = false, seen_data = false;
    bool has_queue = false, has_partition = false, has_transaction = false, has_trace = false;
    std::string_view queue, partition, transaction_id, trace_id, payload, data;

    bool member(Walk& w, std::string_view key, od::value& value, const ItemShape& shape) {
        const int depth = shape.depth + 1;
        if (key == "payload") {
            return first_time(w, seen_payload) && take_raw(w, value, depth, payload);
        }
        if (key == "data" && shape.has_data_key) {
            return first_time(w, seen_data) && take_raw(w, value, depth, data);
        }
        if (key == "queue") {
            return first_time(w, seen_queue) && optional_text(w, value, has_queue, queue);
        }
        if (key == "partition") {
            return first_time(w, seen_partition) &&
                   optional_text(w, value, has_partition, partition);
        }
        if (key == "transactionId") {
            return first_time(w, seen_transaction) &&
                   optional_text(w, value, has_transaction, transaction_id);
        }
        if (key == "traceId") {
            return first_time(w, seen_trace) && optional_text(w, value, has_trace, trace_id);
        }
        std::string_view ignored;
        return take_raw(w, value, depth, ignored);
    }

    /// The post-processing of push_item_fast, with simdjson::minify for spaced payloads.
    bool finish(Walk& w, const ApiOptions& options, RandomSource& random, std::int64_t now_ms,
                const ItemShape& shape, queues::PushItem& out, bool& has_client_id) const {
        if (!has_queue || queue.size() > options.name_bytes_max) {
            return w.decline("Queue must be a string");
        }
        std::string_view text = seen_payload ? payload : shape.default_payload;
        if (!seen_payload && seen_data) {
            text = data;
        }
        out.queue.assign(queue);
        if (has_partition) {
            if (partition.size() > options.name_bytes_max) {
                return w.decline("a name over the limit");
            }
            out.partition.assign(partition);
        }
        has_client_id = has_transaction && !transaction_id.empty();
        if (has_client_id) {
            if (transaction_id.size() > options.name_bytes_max) {
                return w.decline("a name over the limit");
            }
            out.transaction_id.assign(transaction_id.data(), transaction_id.size());
        } else {
            out.transaction_id = api::detail::time_uuid(random, now_ms);
        }
        if (has_trace && !trace_id.empty()) {
            if (!api::detail::is_uuid_text(trace_id)) {
                return w.decline("TraceId must be a UUID");
            }
            out.trace_id.assign(trace_id);
        }
        if (has_no_space(text)) {
            if (text.size() > options.payload_bytes_max) {
                return w.decline("payload over the limit");
            }
            const auto* bytes = reinterpret_cast<const std::uint8_t*>(text.data());
            out.payload.assign(bytes, bytes + text.size());
            return true;
        }
        out.payload.resize(text.size());
        std::size_t compact = 0;
        if (!w.ok(simdjson::minify(text.data(), text.size(),
                                   reinterpret_cast<char*>(out.payload.data()), compact))) {
            return false;
        }
        if (compact > options.payload_bytes_max) {
            return w.decline("payload over the limit");
        }
        out.payload.resize(compact);
        return true;
    }
};

// ---- ids: a copy of parse_fast.cpp's one-pass UUID reading (private there) ----

constexpr std::array<std::uint8_t, 256> hex_values = [] {
    std::array<std::uint8_t, 256> values{};
    values.fill(0xff);
    for (std::uint8_t i = 0; i < 10; ++i) {
        values['0' + i] = i;
    }
    for (std::uint8_t i = 0; i < 6; ++i) {
        values['a' + i] = static_cast<std::uint8_t>(10 + i);
        values['A' + i] = static_cast<std::uint8_t>(10 + i);
    }
    return values;
}();

struct UuidParts {
    std::uint64_t high = 0;
    std::uint64_t tag = 0;
    std::uint64_t low = 0;
};

bool split_uuid(std::string_view text, UuidParts& out) noexcept {
    if (text.size() != 36 || text[8] != '-' || text[13] != '-' || text[18] != '-' ||
        text[23] != '-') {
        return false;
    }
    std::uint8_t invalid = 0;
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

constexpr std::uint64_t uuid_tag(queues::UuidKind kind) noexcept {
    return 0x8000 | (static_cast<std::uint64_t>(kind) << 8);
}

queues::PartitionId partition_of(const UuidParts& parts) noexcept {
    return parts.tag == uuid_tag(queues::UuidKind::partition) && parts.high == 0
               ? queues::PartitionId{parts.low}
               : queues::PartitionId{0};
}

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

struct IdMemo {
    std::string_view partition_text;
    queues::PartitionId partition{0};
    std::string_view lease_text;
    queues::LeaseId lease{0};
};

/// The members of one acknowledgment as they come.
struct AckFields {
    bool seen_transaction = false, seen_partition = false, seen_status = false, seen_error = false,
         seen_lease = false, seen_group = false;
    bool has_transaction = false, has_partition = false, has_status = false, has_error = false,
         has_lease = false, has_group = false;
    std::string_view transaction_id, partition_id, status, error, lease, group;

    bool member(Walk& w, std::string_view key, od::value& value, int depth) {
        if (key == "transactionId") {
            return first_time(w, seen_transaction) &&
                   optional_text(w, value, has_transaction, transaction_id);
        }
        if (key == "partitionId") {
            return first_time(w, seen_partition) &&
                   optional_text(w, value, has_partition, partition_id);
        }
        if (key == "status") {
            return first_time(w, seen_status) && optional_text(w, value, has_status, status);
        }
        if (key == "error") {
            return first_time(w, seen_error) && optional_text(w, value, has_error, error);
        }
        if (key == "leaseId") {
            return first_time(w, seen_lease) && optional_text(w, value, has_lease, lease);
        }
        if (key == "consumerGroup") {
            return first_time(w, seen_group) && optional_text(w, value, has_group, group);
        }
        std::string_view ignored;
        return take_raw(w, value, depth, ignored);
    }

    /// The post-processing of ack_item_fast.
    bool finish(Walk& w, const ApiOptions& options, IdMemo& memo, queues::AckItem& out) const {
        if (!has_transaction || transaction_id.empty() ||
            transaction_id.size() > options.name_bytes_max || !has_partition) {
            return w.decline("transactionId and partitionId are required");
        }
        if (!memo.partition_text.empty() && partition_id == memo.partition_text) {
            out.partition = memo.partition;
        } else {
            UuidParts parts;
            if (!split_uuid(partition_id, parts)) {
                return w.decline("partitionId must be a UUID");
            }
            out.partition = partition_of(parts);
            memo.partition_text = partition_id;
            memo.partition = out.partition;
        }
        out.transaction_id.assign(transaction_id.data(), transaction_id.size());
        out.status =
            has_status ? api::detail::parse_ack_status(status) : queues::AckStatus::completed;
        if (has_error) {
            if (error.size() > options.payload_bytes_max) {
                return w.decline("error over the limit");
            }
            out.has_error = true;
            out.error.assign(error);
        }
        if (!has_lease) {
            out.lease = queues::LeaseId{0};
        } else if (!memo.lease_text.empty() && lease == memo.lease_text) {
            out.lease = memo.lease;
        } else {
            out.lease = lease_of(lease);
            memo.lease_text = lease;
            memo.lease = out.lease;
        }
        if (has_group && !group.empty()) {
            if (group.size() > options.name_bytes_max) {
                return w.decline("a name over the limit");
            }
            out.group.assign(group);
        }
        return true;
    }
};

/// Calls member(key, value) for each member of the object `value`; false on failure.
template <class Member>
bool for_members(Walk& w, od::value& value, Member&& member) {
    od::object object;
    if (!w.ok(value.get_object().get(object))) {
        return false;
    }
    for (auto entry : object) {
        od::field field;
        std::string_view key;
        if (!w.ok(std::move(entry).get(field)) || !key_of(w, field, key) ||
            !member(key, field.value())) {
            return false;
        }
    }
    return true;
}

/// Calls element(value) for each element of the array `value`; false on failure.
template <class Element>
bool for_elements(Walk& w, od::value& value, Element&& element) {
    od::array array;
    if (!w.ok(value.get_array().get(array))) {
        return false;
    }
    for (auto entry : array) {
        od::value item;
        if (!w.ok(std::move(entry).get(item)) || !element(item)) {
            return false;
        }
    }
    return true;
}

// ---- the client's lenient readers (json::raw_to_text / raw_to_integer rules) ----

void assign_bytes(std::string& out, std::string_view text) {
    out.clear();
    out.append(text.data(), text.size());
}

/// A string decoded, null as "", anything else as its raw text.
bool assign_text(Walk& w, od::value& value, int depth, std::string& out) {
    od::json_type type;
    if (!w.ok(value.type().get(type))) {
        return false;
    }
    if (type == od::json_type::string) {
        std::string_view text;
        if (!string_text(w, value, text)) {
            return false;
        }
        assign_bytes(out, text);
        return true;
    }
    if (type == od::json_type::null) {
        bool is_null = false;
        out.clear();
        return w.ok(value.is_null().get(is_null)) && (is_null || w.ok(simdjson::INCORRECT_TYPE));
    }
    std::string_view raw;
    if (!take_raw(w, value, depth, raw)) {
        return false;
    }
    assign_bytes(out, raw);
    return true;
}

bool read_integer(Walk& w, od::value& value, int depth, std::int64_t& out) {
    od::json_type type;
    if (!w.ok(value.type().get(type))) {
        return false;
    }
    if (type == od::json_type::number && value.get_int64().get(out) == simdjson::SUCCESS) {
        return true;
    }
    std::string_view raw;
    if (!take_raw(w, value, depth, raw)) {
        return false;
    }
    out = json::raw_to_integer(raw);
    return true;
}

/// The members of a popped message the client keeps.
enum class MessageMember {
    id,
    transaction_id,
    trace_id,
    data,
    producer_sub,
    created_at,
    partition_id,
    partition,
    lease_id,
    consumer_group,
    retry_count,
    other
};

/// Which member `key` is: its length picks one or two candidates to compare.
MessageMember message_member_of(std::string_view key) noexcept {
    switch (key.size()) {
        case 2: return key == "id" ? MessageMember::id : MessageMember::other;
        case 4: return key == "data" ? MessageMember::data : MessageMember::other;
        case 7:
            return key == "traceId"   ? MessageMember::trace_id
                   : key == "leaseId" ? MessageMember::lease_id
                                      : MessageMember::other;
        case 9:
            return key == "createdAt"   ? MessageMember::created_at
                   : key == "partition" ? MessageMember::partition
                                        : MessageMember::other;
        case 10: return key == "retryCount" ? MessageMember::retry_count : MessageMember::other;
        case 11:
            return key == "producerSub"   ? MessageMember::producer_sub
                   : key == "partitionId" ? MessageMember::partition_id
                                          : MessageMember::other;
        case 13:
            return key == "transactionId"   ? MessageMember::transaction_id
                   : key == "consumerGroup" ? MessageMember::consumer_group
                                            : MessageMember::other;
        default: return MessageMember::other;
    }
}

void reset_message(client::Message& message) {
    for (std::string* field :
         {&message.id, &message.transaction_id, &message.trace_id, &message.data_json,
          &message.producer_sub, &message.created_at, &message.partition_id, &message.partition,
          &message.lease_id, &message.consumer_group, &message.queue}) {
        field->clear();
    }
    message.retry_count = 0;
}

}  // namespace

struct SimdReaders::Impl {
    od::parser parser;
    od::document document;
    bool is_started = false;  // `document` is the current body's

    /// Starts a document over `body` (padded by the caller).
    bool start(Walk& w, std::string_view body) {
        w.end = body.data() + body.size();
        is_started = w.ok(parser
                              .iterate(simdjson::padded_string_view(body.data(), body.size(),
                                                                    body.size() + padding))
                              .get(document));
        return is_started;
    }
    /// True when the document has nothing after its value.
    bool at_end(Walk& w) {
        const char* where = nullptr;
        const error_code code = document.current_location().get(where);
        return code == simdjson::OUT_OF_BOUNDS || w.ok(simdjson::TRAILING_CONTENT);
    }
    /// The top value as an ondemand::value (document members are read through it).
    bool top(Walk& w, od::value& value) { return w.ok(document.get_value().get(value)); }
};

SimdReaders::SimdReaders() : impl_(std::make_unique<Impl>()) {}
SimdReaders::~SimdReaders() = default;

namespace {

void record(ReadError& out, const Walk& w, SimdReaders::Impl& impl, std::string_view body) {
    od::document& document = impl.document;
    if (w.reason != nullptr) {
        out.what = w.reason;
    } else {
        out.what = simdjson::error_message(w.error);
    }
    out.offset = -1;
    const char* where = nullptr;
    if (w.error != simdjson::SUCCESS && impl.is_started &&
        document.current_location().get(where) == simdjson::SUCCESS && where >= body.data() &&
        where <= body.data() + body.size()) {
        out.offset = where - body.data();
    }
}

}  // namespace

std::string_view check_name(Check check) noexcept {
    switch (check) {
        case Check::skip: return "skip";
        case Check::walk: return "walk";
        case Check::scan: return "scan";
    }
    return "?";
}

std::optional<api::detail::ParsedPush> SimdReaders::push(std::string_view body,
                                                         const ApiOptions& options,
                                                         RandomSource& random, std::int64_t now_ms,
                                                         Check check) {
    Walk w{check, static_cast<int>(options.json_depth_max)};
    api::detail::ParsedPush out;
    const std::size_t expected_items =
        std::min<std::size_t>({options.push_items_max, body.size() / 256 + 1, 1024});
    out.push.items.reserve(expected_items);
    out.has_client_transaction_id.reserve(expected_items);
    bool seen_items = false;
    od::value top;
    const bool read =
        impl_->start(w, body) && impl_->top(w, top) &&
        for_members(w, top, [&](std::string_view key, od::value& value) {
            if (key != "items") {
                std::string_view ignored;
                return take_raw(w, value, 2, ignored);
            }
            if (!first_time(w, seen_items) || w.depth_max < 3) {
                return false;
            }
            od::json_type type;
            if (!w.ok(value.type().get(type))) {
                return false;
            }
            if (type != od::json_type::array) {
                return w.decline("items must be an array");
            }
            return for_elements(w, value, [&](od::value& element) {
                if (out.push.items.size() >= options.push_items_max) {
                    return w.decline("too many items");
                }
                PushFields fields;
                const ItemShape shape;
                queues::PushItem& item = out.push.items.emplace_back();
                bool has_client_id = false;
                if (!for_members(w, element,
                                 [&](std::string_view k, od::value& v) {
                                     return fields.member(w, k, v, shape);
                                 }) ||
                    !fields.finish(w, options, random, now_ms, shape, item, has_client_id)) {
                    return false;
                }
                out.has_client_transaction_id.push_back(has_client_id);
                return true;
            });
        });
    if (!read || !impl_->at_end(w) || (!seen_items && !w.decline("no items"))) {
        record(error_, w, *impl_, body);
        return std::nullopt;
    }
    return out;
}

std::optional<queues::Ack> SimdReaders::ack(std::string_view body, bool is_batch,
                                            const ApiOptions& options, Check check) {
    Walk w{check, static_cast<int>(options.json_depth_max)};
    queues::Ack out;
    IdMemo memo;
    od::value top;
    bool read = impl_->start(w, body) && impl_->top(w, top);
    if (read && !is_batch) {
        AckFields fields;
        read = for_members(w, top,
                           [&](std::string_view key, od::value& value) {
                               return fields.member(w, key, value, 2);
                           }) &&
               fields.finish(w, options, memo, out.items.emplace_back());
    } else if (read) {
        out.items.reserve(
            std::min<std::size_t>({options.ack_items_max, body.size() / 160 + 1, 1024}));
        bool seen_list = false, seen_group = false, has_group = false;
        std::string_view top_group;
        read = for_members(w, top, [&](std::string_view key, od::value& value) {
            if (key == "consumerGroup") {
                return first_time(w, seen_group) && optional_text(w, value, has_group, top_group);
            }
            if (key != "acknowledgments") {
                std::string_view ignored;
                return take_raw(w, value, 2, ignored);
            }
            if (!first_time(w, seen_list) || w.depth_max < 3) {
                return false;
            }
            return for_elements(w, value, [&](od::value& element) {
                if (out.items.size() >= options.ack_items_max) {
                    return w.decline("too many acknowledgments");
                }
                AckFields fields;
                return for_members(w, element,
                                   [&](std::string_view k, od::value& v) {
                                       return fields.member(w, k, v, 4);
                                   }) &&
                       fields.finish(w, options, memo, out.items.emplace_back());
            });
        });
        read = read && (seen_list || w.decline("no acknowledgments"));
        if (read && has_group && !top_group.empty()) {
            if (top_group.size() > options.name_bytes_max) {
                read = w.decline("a name over the limit");
            } else {
                for (auto& item : out.items) {
                    item.group.assign(top_group);
                }
            }
        }
    }
    if (!read || !impl_->at_end(w)) {
        record(error_, w, *impl_, body);
        return std::nullopt;
    }
    return out;
}

std::optional<engine::Transaction> SimdReaders::transaction(std::string_view body,
                                                            const ApiOptions& options,
                                                            RandomSource& random,
                                                            std::int64_t now_ms, Check check) {
    Walk w{check, static_cast<int>(options.json_depth_max)};
    engine::Transaction out;
    out.ops.reserve(
        std::min<std::size_t>({options.transaction_operations_max, body.size() / 250 + 1, 256}));
    IdMemo memo;
    bool seen_operations = false;
    const auto add = [&](engine::TransactionOp::Kind kind) -> engine::TransactionOp* {
        if (out.ops.size() >= options.transaction_operations_max) {
            w.decline("too many operations");
            return nullptr;
        }
        engine::TransactionOp& op = out.ops.emplace_back();
        op.kind = kind;
        return &op;
    };
    // One operation in one pass: its first member must be "type" (what the clients write;
    // another order declines here, where parse_transaction_fast reads the object twice).
    const auto operation = [&](od::value& element) {
        enum class Kind { unknown, ack, push } kind = Kind::unknown;
        bool is_first = true;
        AckFields ack;
        PushFields flat;
        const ItemShape flat_shape{3, "{}", true};
        const ItemShape item_shape{5, "{}", false};
        bool seen_items = false, has_items = false;
        const bool read = for_members(w, element, [&](std::string_view key, od::value& value) {
            if (is_first) {
                is_first = false;
                bool has_type = false;
                std::string_view type;
                if (key != "type" || !optional_text(w, value, has_type, type) || !has_type) {
                    return w.decline("an operation whose first member is not its type");
                }
                kind = type == "ack" ? Kind::ack : type == "push" ? Kind::push : Kind::unknown;
                return kind != Kind::unknown || w.decline("an operation of another type");
            }
            if (key == "type") {
                return w.decline("a repeated key");
            }
            if (kind == Kind::ack) {
                return ack.member(w, key, value, 4);
            }
            if (key != "items") {
                return flat.member(w, key, value, flat_shape);
            }
            if (!first_time(w, seen_items)) {
                return false;
            }
            od::json_type type;
            if (!w.ok(value.type().get(type))) {
                return false;
            }
            if (type == od::json_type::null) {
                bool is_null = false;
                return w.ok(value.is_null().get(is_null)) && is_null;
            }
            has_items = true;
            return for_elements(w, value, [&](od::value& item) {
                PushFields fields;
                bool has_client_id = false;
                engine::TransactionOp* op = add(engine::TransactionOp::Kind::push);
                return op != nullptr &&
                       for_members(w, item,
                                   [&](std::string_view k, od::value& v) {
                                       return fields.member(w, k, v, item_shape);
                                   }) &&
                       fields.finish(w, options, random, now_ms, item_shape, op->push,
                                     has_client_id);
            });
        });
        if (!read) {
            return false;
        }
        if (kind == Kind::ack) {
            engine::TransactionOp* op = add(engine::TransactionOp::Kind::ack);
            return op != nullptr && ack.finish(w, options, memo, op->ack);
        }
        if (kind == Kind::push && !has_items) {
            bool has_client_id = false;
            engine::TransactionOp* op = add(engine::TransactionOp::Kind::push);
            return op != nullptr &&
                   flat.finish(w, options, random, now_ms, flat_shape, op->push, has_client_id);
        }
        return kind == Kind::push || w.decline("an empty operation");
    };
    od::value top;
    const bool read = impl_->start(w, body) && impl_->top(w, top) &&
                      for_members(w, top, [&](std::string_view key, od::value& value) {
                          if (key != "operations") {
                              std::string_view ignored;
                              return take_raw(w, value, 2, ignored);
                          }
                          if (!first_time(w, seen_operations) || w.depth_max < 3) {
                              return false;
                          }
                          return for_elements(w, value, operation);
                      });
    if (!read || !impl_->at_end(w) || !seen_operations || out.ops.empty()) {
        if (read) {
            w.decline("no operations");
        }
        record(error_, w, *impl_, body);
        return std::nullopt;
    }
    return out;
}

bool SimdReaders::pop_answer(std::string_view body, const client::PopRequest& request,
                             client::PopResult& result, Check check) {
    Walk w{check, json::json_depth_max};
    std::size_t message_count = 0;
    const auto finish = [&result, &message_count] {
        for (std::size_t i = message_count; i < result.messages.size(); ++i) {
            result.spare_messages.push_back(std::move(result.messages[i]));
        }
        result.messages.resize(message_count);
    };
    result.queue = request.queue;
    for (std::string* field : {&result.partition, &result.partition_id, &result.lease_id,
                               &result.consumer_group, &result.lease_expires_at}) {
        field->clear();
    }
    result.partitions_claimed = 0;
    constexpr std::uint8_t has_lease_flag = 1;
    constexpr std::uint8_t has_group_flag = 2;
    std::vector<std::uint8_t> message_flags;
    bool has_messages = false;
    bool has_partitions_claimed = false;
    od::value top;
    const bool read =
        impl_->start(w, body) && impl_->top(w, top) &&
        for_members(w, top, [&](std::string_view key, od::value& value) {
            od::json_type type;
            if (!w.ok(value.type().get(type))) {
                return false;
            }
            if (key != "messages" || type != od::json_type::array) {
                if (key == "queue") {
                    return assign_text(w, value, 2, result.queue);
                }
                if (key == "partition") {
                    return assign_text(w, value, 2, result.partition);
                }
                if (key == "partitionId") {
                    return assign_text(w, value, 2, result.partition_id);
                }
                if (key == "leaseId") {
                    return assign_text(w, value, 2, result.lease_id);
                }
                if (key == "consumerGroup") {
                    return assign_text(w, value, 2, result.consumer_group);
                }
                if (key == "leaseExpiresAt") {
                    return assign_text(w, value, 2, result.lease_expires_at);
                }
                if (key == "partitionsClaimed") {
                    has_partitions_claimed = true;
                    return read_integer(w, value, 2, result.partitions_claimed);
                }
                std::string_view ignored;
                return take_raw(w, value, 2, ignored);
            }
            has_messages = true;
            return for_elements(w, value, [&](od::value& element) {
                if (message_count == result.messages.size()) {
                    if (result.spare_messages.empty()) {
                        result.messages.emplace_back();
                    } else {
                        result.messages.push_back(std::move(result.spare_messages.back()));
                        result.spare_messages.pop_back();
                    }
                }
                client::Message& message = result.messages[message_count++];
                reset_message(message);
                message.data_json = "null";
                std::uint8_t flags = 0;
                const bool is_read = for_members(w, element, [&](std::string_view k, od::value& v) {
                    switch (message_member_of(k)) {
                        case MessageMember::id: return assign_text(w, v, 4, message.id);
                        case MessageMember::transaction_id:
                            return assign_text(w, v, 4, message.transaction_id);
                        case MessageMember::trace_id: return assign_text(w, v, 4, message.trace_id);
                        case MessageMember::data: {
                            std::string_view raw;
                            if (!take_raw(w, v, 4, raw)) {
                                return false;
                            }
                            assign_bytes(message.data_json, raw);  // the payload, byte for byte
                            return true;
                        }
                        case MessageMember::producer_sub:
                            return assign_text(w, v, 4, message.producer_sub);
                        case MessageMember::created_at:
                            return assign_text(w, v, 4, message.created_at);
                        case MessageMember::partition_id:
                            return assign_text(w, v, 4, message.partition_id);
                        case MessageMember::partition:
                            return assign_text(w, v, 4, message.partition);
                        case MessageMember::lease_id:
                            flags |= has_lease_flag;
                            return assign_text(w, v, 4, message.lease_id);
                        case MessageMember::consumer_group:
                            flags |= has_group_flag;
                            return assign_text(w, v, 4, message.consumer_group);
                        case MessageMember::retry_count:
                            return read_integer(w, v, 4, message.retry_count);
                        case MessageMember::other: break;
                    }
                    std::string_view ignored;
                    return take_raw(w, v, 4, ignored);
                });
                message_flags.push_back(flags);
                return is_read;
            });
        });
    finish();
    if (!read || !impl_->at_end(w) || (!has_messages && !w.decline("no messages array"))) {
        record(error_, w, *impl_, body);
        return false;
    }
    for (std::size_t i = 0; i < result.messages.size(); ++i) {
        client::Message& message = result.messages[i];
        message.queue = result.queue;
        if ((message_flags[i] & has_lease_flag) == 0) {
            message.lease_id = result.lease_id;
        }
        if ((message_flags[i] & has_group_flag) == 0) {
            message.consumer_group = result.consumer_group;
        }
        if (message.partition_id.empty()) {
            message.partition_id = result.partition_id;
        }
        if (message.partition.empty()) {
            message.partition = result.partition;
        }
        if (message.transaction_id.empty() || message.partition_id.empty()) {
            error_.what = "a message without transactionId or partitionId";
            error_.offset = -1;
            return false;
        }
    }
    if (!has_partitions_claimed) {
        result.partitions_claimed = result.messages.empty() ? 0 : 1;
    }
    return true;
}

std::string SimdReaders::active_implementation() {
    return simdjson::get_active_implementation()->name();
}

#define QUEEN_JSON_EVAL_TEXT(x) #x
#define QUEEN_JSON_EVAL_NAME(x) QUEEN_JSON_EVAL_TEXT(x)

std::string SimdReaders::builtin_implementation() {
    // The macro of this file (simdjson::builtin_implementation() answers for the library's).
    return QUEEN_JSON_EVAL_NAME(SIMDJSON_BUILTIN_IMPLEMENTATION);
}

bool SimdReaders::force_implementation(const std::string& name) {
    const simdjson::implementation* chosen = simdjson::get_available_implementations()[name];
    if (chosen == nullptr || !chosen->supported_by_runtime_system()) {
        return false;
    }
    simdjson::get_active_implementation() = chosen;
    return true;
}

std::size_t SimdReaders::minify(std::string_view text, char* out) {
    std::size_t size = 0;
    if (simdjson::minify(text.data(), text.size(), out, size) != simdjson::SUCCESS) {
        return 0;
    }
    return size;
}

}  // namespace queen::json_eval
