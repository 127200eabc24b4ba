// api/src/parse_fast.cpp — the hot request bodies (push, ack) read straight
// from the raw text with the validating scanner of queen/core/json_scan.hpp: no
// DOM, payloads kept as their JSON text. Anything unusual is declined (nullopt)
// and the caller takes the nlohmann path, which gives the exact client-facing
// error, so both paths answer a request the same way.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "json.hpp"
#include "parse.hpp"
#include "queen/core/hex.hpp"
#include "queen/core/json_scan.hpp"

namespace queen::api::detail {
namespace {

using json::scan::skip_value;
using json::scan::skip_whitespace;
using json::scan::walk_array;

/// Skips the string at text[pos] (a '"') when it is plain: only bytes 0x20-0x7f, no '\\'
/// (the usual key or id; then it is valid JSON as it stands). False, with `pos` unchanged,
/// for any other string: the caller then lets skip_value judge it. Eight bytes per step.
inline bool skip_plain_string(std::string_view text, std::size_t& pos) noexcept {
    static_assert(std::endian::native == std::endian::little, "the lowest byte comes first");
    constexpr std::uint64_t ones = 0x0101010101010101ULL;
    constexpr std::uint64_t highs = 0x8080808080808080ULL;
    const char* const data = text.data();
    const std::size_t size = text.size();
    std::size_t at = pos + 1;
    for (; at + 8 <= size; at += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, data + at, sizeof word);
        const std::uint64_t quote = word ^ (ones * '"');
        const std::uint64_t slash = word ^ (ones * '\\');
        // A byte below 0x20, a quote, a backslash or a byte >= 0x80 (the lowest flagged
        // byte is exact: borrows only run upwards from a flagged byte).
        const std::uint64_t flags = ((word - ones * 0x20) & ~word & highs) |
                                    ((quote - ones) & ~quote & highs) |
                                    ((slash - ones) & ~slash & highs) | (word & highs);
        if (flags != 0) {
            at += static_cast<std::size_t>(__builtin_ctzll(flags)) / 8;
            if (data[at] != '"') {
                return false;
            }
            pos = at + 1;
            return true;
        }
    }
    for (; at < size; ++at) {
        const auto c = static_cast<unsigned char>(data[at]);
        if (c == '"') {
            pos = at + 1;
            return true;
        }
        if (c < 0x20 || c >= 0x80 || c == '\\') {
            return false;
        }
    }
    return false;
}

/// Walks the object at text[pos] as json::scan::walk_object does (same acceptance):
/// visit(key, pos) reads the value at `pos` and moves past it. `key` is the key's text; a key
/// with escapes declines (no key this API reads has one).
template <class Visit>
bool for_members(std::string_view text, std::size_t& pos, Visit&& visit) {
    if (pos >= text.size() || text[pos] != '{') {
        return false;
    }
    ++pos;
    skip_whitespace(text, pos);
    if (pos < text.size() && text[pos] == '}') {
        ++pos;
        return true;
    }
    for (;;) {
        const std::size_t key_start = pos;
        if (pos >= text.size() || text[pos] != '"') {
            return false;
        }
        if (!skip_plain_string(text, pos)) {
            if (!skip_value(text, pos, 1)) {
                return false;
            }
            if (text.substr(key_start, pos - key_start).find('\\') != std::string_view::npos) {
                return false;
            }
        }
        const std::string_view key = text.substr(key_start + 1, pos - key_start - 2);
        skip_whitespace(text, pos);
        if (pos >= text.size() || text[pos] != ':') {
            return false;
        }
        ++pos;
        skip_whitespace(text, pos);
        if (!visit(key, pos)) {
            return false;
        }
        skip_whitespace(text, pos);
        if (pos >= text.size()) {
            return false;
        }
        if (text[pos] == '}') {
            ++pos;
            return true;
        }
        if (text[pos] != ',') {
            return false;
        }
        ++pos;
        skip_whitespace(text, pos);
    }
}

/// Reads the value at `pos` (nesting depth `depth`) as a raw span; `is_plain` tells whether it
/// is a string without escapes (skip_plain_string took it).
bool raw_value(std::string_view text, std::size_t& pos, int depth, int depth_max,
               std::string_view& raw, bool& is_plain) noexcept {
    const std::size_t start = pos;
    if (depth > depth_max) {
        return false;
    }
    is_plain = pos < text.size() && text[pos] == '"' && skip_plain_string(text, pos);
    if (is_plain) {
        // done
    } else if (text.substr(pos, 4) == "null") {
        pos += 4;  // (as skip_value reads a literal: what follows is the walker's business)
    } else if (!skip_value(text, pos, depth, depth_max)) {
        return false;
    }
    raw = text.substr(start, pos - start);
    return true;
}

/// raw_value without the plain-string answer.
bool raw_value(std::string_view text, std::size_t& pos, int depth, int depth_max,
               std::string_view& raw) noexcept {
    bool is_plain = false;
    return raw_value(text, pos, depth, depth_max, raw, is_plain);
}

/// A string field as string_field() reads it: null -> absent, a string -> its
/// decoded text, anything else declines.
bool optional_string(std::string_view raw, std::optional<std::string>& out) {
    if (raw == "null") {
        out.reset();
        return true;
    }
    if (raw.size() < 2 || raw.front() != '"') {
        return false;
    }
    const std::string_view inner = raw.substr(1, raw.size() - 2);
    if (inner.find('\\') == std::string_view::npos) {
        out.emplace(inner);
        return true;
    }
    out.emplace();
    return json::decode_json_string(raw, *out);
}

/// A string value as string_field() reads it, without a copy when it has no escape: null ->
/// `has` false; a string -> `has` true and its text (a view into `raw`, or decoded into
/// `storage`); anything else declines. `is_plain`: raw_value's answer for `raw`.
bool optional_text(std::string_view raw, bool is_plain, bool& has, std::string_view& text,
                   std::string& storage) {
    if (is_plain) {
        has = true;
        text = raw.substr(1, raw.size() - 2);
        return true;
    }
    if (raw == "null") {
        has = false;
        return true;
    }
    if (raw.size() < 2 || raw.front() != '"') {
        return false;
    }
    has = true;
    storage.clear();
    if (!json::decode_json_string(raw, storage)) {
        return false;
    }
    text = storage;
    return true;
}

/// `seen` marks keys already read: a repeated key declines (nlohmann keeps the
/// last one; the slow path handles that rare case).
bool first_time(bool& seen) noexcept {
    if (seen) {
        return false;
    }
    seen = true;
    return true;
}

/// Where a push item sits and how its payload defaults: /push items are at
/// depth 3 with a null default; transaction push items have {} and, when flat,
/// may name it `data` instead.
struct ItemShape {
    int depth = 3;
    std::string_view default_payload = "null";
    bool has_data_key = false;
};

/// True when `raw` has no byte <= 0x20. Valid JSON without such a byte has no
/// whitespace between its tokens, so it is already compact (a space inside a
/// string also says no: that payload goes through copy_compact, which keeps
/// it).
bool has_no_space(std::string_view raw) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101ULL;
    constexpr std::uint64_t highs = 0x8080808080808080ULL;
    const char* const data = raw.data();
    std::size_t i = 0;
    for (; i + 8 <= raw.size(); i += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, data + i, sizeof word);
        if (((word - ones * 0x21) & ~word & highs) != 0) {  // some byte < 0x21
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

/// Reads one push item into `out` (a fresh item, filled in place); false
/// declines.
bool push_item_fast(std::string_view text, std::size_t& pos, int depth_max,
                    const ApiOptions& options, RandomSource& random, std::int64_t now_ms,
                    const ItemShape& shape, queues::PushItem& out, bool& has_client_id) {
    bool seen_queue = false, seen_partition = false, seen_transaction = false, seen_trace = false,
         seen_payload = false, seen_data = false;
    bool has_queue = false, has_partition = false, has_transaction = false, has_trace = false;
    std::string_view queue, partition, transaction_id, trace_id;
    std::string queue_storage, partition_storage, transaction_storage, trace_storage;
    std::string_view payload = shape.default_payload;
    std::string_view data;
    const bool walked = for_members(text, pos, [&](std::string_view key, std::size_t& at) {
        std::string_view raw;
        bool is_plain = false;
        if (!raw_value(text, at, shape.depth + 1, depth_max, raw, is_plain)) {
            return false;
        }
        if (key == "payload") {
            payload = raw;
            return first_time(seen_payload);
        }
        if (key == "data" && shape.has_data_key) {
            data = raw;
            return first_time(seen_data);
        }
        if (key == "queue") {
            return first_time(seen_queue) &&
                   optional_text(raw, is_plain, has_queue, queue, queue_storage);
        }
        if (key == "partition") {
            return first_time(seen_partition) &&
                   optional_text(raw, is_plain, has_partition, partition, partition_storage);
        }
        if (key == "transactionId") {
            return first_time(seen_transaction) &&
                   optional_text(raw, is_plain, has_transaction, transaction_id,
                                 transaction_storage);
        }
        if (key == "traceId") {
            return first_time(seen_trace) &&
                   optional_text(raw, is_plain, has_trace, trace_id, trace_storage);
        }
        return true;
    });
    if (!walked || !has_queue || queue.size() > options.name_bytes_max) {
        return false;
    }
    if (!seen_payload && seen_data) {
        payload = data;
    }
    out.queue.assign(queue);
    if (has_partition) {
        if (partition.size() > options.name_bytes_max) {
            return false;
        }
        out.partition.assign(partition);
    }
    has_client_id = has_transaction && !transaction_id.empty();
    if (has_client_id) {
        if (transaction_id.size() > options.name_bytes_max) {
            return false;
        }
        out.transaction_id.assign(transaction_id);
    } else {
        out.transaction_id = time_uuid(random, now_ms);
    }
    if (has_trace && !trace_id.empty()) {
        if (!is_uuid_text(trace_id)) {
            return false;
        }
        out.trace_id.assign(trace_id);
    }
    if (has_no_space(payload)) {
        // The usual payload (what clients serialize compactly): one copy, nothing
        // to squeeze.
        if (payload.size() > options.payload_bytes_max) {
            return false;
        }
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(payload.data());
        out.payload.assign(bytes, bytes + payload.size());
        return true;
    }
    out.payload.resize(payload.size());
    const std::size_t compact =
        json::scan::copy_compact(payload, reinterpret_cast<char*>(out.payload.data()));
    if (compact > options.payload_bytes_max) {
        return false;
    }
    out.payload.resize(compact);
    return true;
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

/// One acknowledgment as parse_ack_item reads it, into `out` (a fresh item, filled in place);
/// every deviation declines (false). Only the strings the item keeps are copied. With
/// `seen_type`, a "type" key is one more member that may appear only once (a transaction's
/// ack operation read in one pass).
bool ack_item_fast(std::string_view text, std::size_t& pos, int depth, int depth_max,
                   const ApiOptions& options, IdMemo& memo, queues::AckItem& out,
                   bool* seen_type = nullptr) {
    bool seen_transaction = false, seen_partition = false, seen_status = false, seen_error = false,
         seen_lease = false, seen_group = false;
    bool has_transaction = false, has_partition = false, has_status = false, has_lease = false,
         has_group = false;
    bool is_plain_partition = false, is_plain_lease = false;
    std::string_view transaction_id, partition_id, status, lease, group;
    std::string transaction_storage, partition_storage, status_storage, lease_storage,
        group_storage;
    std::string_view error_raw = "null";
    const bool walked = for_members(text, pos, [&](std::string_view key, std::size_t& at) {
        std::string_view raw;
        bool is_plain = false;
        if (!raw_value(text, at, depth + 1, depth_max, raw, is_plain)) {
            return false;
        }
        if (key == "transactionId") {
            return first_time(seen_transaction) &&
                   optional_text(raw, is_plain, has_transaction, transaction_id,
                                 transaction_storage);
        }
        if (key == "partitionId") {
            is_plain_partition = is_plain;
            return first_time(seen_partition) &&
                   optional_text(raw, is_plain, has_partition, partition_id, partition_storage);
        }
        if (key == "status") {
            return first_time(seen_status) &&
                   optional_text(raw, is_plain, has_status, status, status_storage);
        }
        if (key == "error") {
            error_raw = raw;
            return first_time(seen_error);
        }
        if (key == "leaseId") {
            is_plain_lease = is_plain;
            return first_time(seen_lease) &&
                   optional_text(raw, is_plain, has_lease, lease, lease_storage);
        }
        if (key == "consumerGroup") {
            return first_time(seen_group) &&
                   optional_text(raw, is_plain, has_group, group, group_storage);
        }
        if (seen_type != nullptr && key == "type") {
            return first_time(*seen_type);
        }
        return true;
    });
    if (!walked || !has_transaction || transaction_id.empty() ||
        transaction_id.size() > options.name_bytes_max || !has_partition) {
        return false;
    }
    if (!memo.partition_text.empty() && partition_id == memo.partition_text) {
        out.partition = memo.partition;
    } else {
        UuidParts parts;
        if (!split_uuid(partition_id, parts)) {
            return false;
        }
        out.partition = partition_of(parts);
        if (is_plain_partition) {
            memo.partition_text = partition_id;
            memo.partition = out.partition;
        }
    }
    out.transaction_id.assign(transaction_id);
    out.status = has_status ? parse_ack_status(status) : queues::AckStatus::completed;
    if (error_raw != "null") {
        std::optional<std::string> error;
        if (!optional_string(error_raw, error) || !error ||
            error->size() > options.payload_bytes_max) {
            return false;
        }
        out.has_error = true;
        out.error = std::move(*error);
    }
    if (!has_lease) {
        out.lease = queues::LeaseId{0};
    } else if (!memo.lease_text.empty() && lease == memo.lease_text) {
        out.lease = memo.lease;
    } else {
        out.lease = lease_of(lease);
        if (is_plain_lease) {
            memo.lease_text = lease;
            memo.lease = out.lease;
        }
    }
    if (has_group && !group.empty()) {
        if (group.size() > options.name_bytes_max) {
            return false;
        }
        out.group.assign(group);
    }
    return true;
}

}  // namespace

std::optional<ParsedPush> parse_push_fast(std::string_view body, const ApiOptions& options,
                                          RandomSource& random, std::int64_t now_ms) {
    const int depth_max = static_cast<int>(options.json_depth_max);
    ParsedPush out;
    // An item of a 256-byte payload takes ~350 bytes of body: room for the usual
    // count up front instead of the growth steps (each moves every item), capped
    // for huge bodies.
    const std::size_t expected_items =
        std::min<std::size_t>({options.push_items_max, body.size() / 256 + 1, 1024});
    out.push.items.reserve(expected_items);
    out.has_client_transaction_id.reserve(expected_items);
    bool seen_items = false;
    std::size_t pos = 0;
    skip_whitespace(body, pos);
    const bool walked = for_members(body, pos, [&](std::string_view key, std::size_t& at) {
        if (key != "items") {
            return skip_value(body, at, 2, depth_max);
        }
        if (!first_time(seen_items) || depth_max < 3) {
            return false;
        }
        return walk_array(body, at, [&](std::size_t& element) {
            if (out.push.items.size() >= options.push_items_max) {
                return false;
            }
            bool has_client_id = false;
            // Filled in place; a decline drops the whole parse, so no need to
            // take it back.
            queues::PushItem& item = out.push.items.emplace_back();
            if (!push_item_fast(body, element, depth_max, options, random, now_ms, ItemShape{},
                                item, has_client_id)) {
                return false;
            }
            out.has_client_transaction_id.push_back(has_client_id);
            return true;
        });
    });
    if (!walked || !seen_items) {
        return std::nullopt;
    }
    skip_whitespace(body, pos);
    if (pos != body.size()) {
        return std::nullopt;
    }
    return out;
}

std::optional<queues::Ack> parse_ack_fast(std::string_view body, bool is_batch,
                                          const ApiOptions& options) {
    const int depth_max = static_cast<int>(options.json_depth_max);
    queues::Ack out;
    IdMemo memo;
    std::size_t pos = 0;
    skip_whitespace(body, pos);
    if (!is_batch) {
        if (!ack_item_fast(body, pos, 1, depth_max, options, memo, out.items.emplace_back())) {
            return std::nullopt;
        }
    } else {
        // An item the bench's clients write takes ~190 bytes: room for the usual count up
        // front (each growth step would move every item), capped for huge bodies.
        out.items.reserve(
            std::min<std::size_t>({options.ack_items_max, body.size() / 160 + 1, 1024}));
        bool seen_list = false, seen_group = false;
        std::optional<std::string> top_group;
        const bool walked = for_members(body, pos, [&](std::string_view key, std::size_t& at) {
            if (key == "consumerGroup") {
                std::string_view raw;
                return first_time(seen_group) && raw_value(body, at, 2, depth_max, raw) &&
                       optional_string(raw, top_group);
            }
            if (key != "acknowledgments") {
                return skip_value(body, at, 2, depth_max);
            }
            if (!first_time(seen_list) || depth_max < 3) {
                return false;
            }
            return walk_array(body, at, [&](std::size_t& element) {
                if (out.items.size() >= options.ack_items_max) {
                    return false;
                }
                // Filled in place; a decline drops the whole parse.
                return ack_item_fast(body, element, 3, depth_max, options, memo,
                                     out.items.emplace_back());
            });
        });
        if (!walked || !seen_list) {
            return std::nullopt;
        }
        // The top-level group wins over per-item groups (spec 4.5).
        if (top_group && !top_group->empty()) {
            if (top_group->size() > options.name_bytes_max) {
                return std::nullopt;
            }
            for (auto& item : out.items) {
                item.group = *top_group;
            }
        }
    }
    skip_whitespace(body, pos);
    if (pos != body.size()) {
        return std::nullopt;
    }
    return out;
}

std::optional<queues::Transaction> parse_transaction_fast(std::string_view body,
                                                          const ApiOptions& options,
                                                          RandomSource& random,
                                                          std::int64_t now_ms) {
    const int depth_max = static_cast<int>(options.json_depth_max);
    queues::Transaction out;
    // An operation takes ~250 bytes of body: room for the usual count up front.
    out.ops.reserve(
        std::min<std::size_t>({options.transaction_operations_max, body.size() / 250 + 1, 256}));
    IdMemo memo;
    bool seen_operations = false;
    std::size_t pos = 0;
    skip_whitespace(body, pos);
    // A new operation filled in place, or nullptr over the limit.
    const auto add = [&](queues::TransactionOp::Kind kind) -> queues::TransactionOp* {
        if (out.ops.size() >= options.transaction_operations_max) {
            return nullptr;
        }
        queues::TransactionOp& op = out.ops.emplace_back();
        op.kind = kind;
        return &op;
    };
    const bool walked = for_members(body, pos, [&](std::string_view key, std::size_t& at) {
        if (key != "operations") {
            return skip_value(body, at, 2, depth_max);
        }
        if (!first_time(seen_operations) || depth_max < 3) {
            return false;
        }
        return walk_array(body, at, [&](std::size_t& element) {
            // The usual operations name their type first (the clients write them so): read in
            // one pass. A second "type" or "items" declines (nlohmann keeps the last one).
            const std::string_view rest = body.substr(element);
            if (rest.starts_with(R"({"type":"ack",)")) {
                bool seen_type = false;
                queues::TransactionOp* op = add(queues::TransactionOp::Kind::ack);
                return op != nullptr && ack_item_fast(body, element, 3, depth_max, options, memo,
                                                      op->ack, &seen_type);
            }
            if (rest.starts_with(R"({"type":"push","items":[)")) {
                bool seen_type = false, seen_items = false;
                return for_members(body, element, [&](std::string_view k, std::size_t& v) {
                    if (k == "items") {
                        bool has_client_id = false;
                        return first_time(seen_items) && depth_max >= 4 &&
                               walk_array(body, v, [&](std::size_t& item_at) {
                                   queues::TransactionOp* op =
                                       add(queues::TransactionOp::Kind::push);
                                   return op != nullptr &&
                                          push_item_fast(body, item_at, depth_max, options, random,
                                                         now_ms, ItemShape{5, "{}", false},
                                                         op->push, has_client_id);
                               });
                    }
                    std::string_view raw;
                    return raw_value(body, v, 4, depth_max, raw) &&
                           (k != "type" || first_time(seen_type));
                });
            }
            // Otherwise first find the type and the items (they may come after the other
            // fields), then read the operation again as the kind it is.
            const std::size_t start = element;
            bool seen_type = false, seen_items = false;
            std::optional<std::string> type;
            std::string_view items = "null";
            const bool scanned =
                for_members(body, element, [&](std::string_view k, std::size_t& v) {
                    std::string_view raw;
                    if (!raw_value(body, v, 4, depth_max, raw)) {
                        return false;
                    }
                    if (k == "type") {
                        return first_time(seen_type) && optional_string(raw, type);
                    }
                    if (k == "items") {
                        items = raw;
                        return first_time(seen_items);
                    }
                    return true;
                });
            if (!scanned || !type) {
                return false;
            }
            std::size_t again = start;
            if (*type == "ack") {
                queues::TransactionOp* op = add(queues::TransactionOp::Kind::ack);
                return op != nullptr &&
                       ack_item_fast(body, again, 3, depth_max, options, memo, op->ack);
            }
            if (*type != "push") {
                return false;
            }
            bool has_client_id = false;
            if (items == "null") {
                // A flat push: {type, queue, partition, payload|data,
                // transactionId, traceId}.
                queues::TransactionOp* op = add(queues::TransactionOp::Kind::push);
                return op != nullptr &&
                       push_item_fast(body, again, depth_max, options, random, now_ms,
                                      ItemShape{3, "{}", true}, op->push, has_client_id);
            }
            std::size_t in_items = static_cast<std::size_t>(items.data() - body.data());
            return walk_array(body, in_items, [&](std::size_t& item_at) {
                queues::TransactionOp* op = add(queues::TransactionOp::Kind::push);
                return op != nullptr &&
                       push_item_fast(body, item_at, depth_max, options, random, now_ms,
                                      ItemShape{5, "{}", false}, op->push, has_client_id);
            });
        });
    });
    if (!walked || !seen_operations || out.ops.empty()) {
        return std::nullopt;
    }
    skip_whitespace(body, pos);
    if (pos != body.size()) {
        return std::nullopt;
    }
    return out;
}

}  // namespace queen::api::detail
