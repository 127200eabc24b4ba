// api/src/parse_fast.cpp — the hot request bodies (push, ack) read straight
// from the raw text with the validating scanner of queen/core/json_scan.hpp: no
// DOM, payloads kept as their JSON text. Anything unusual is declined (nullopt)
// and the caller takes the nlohmann path, which gives the exact client-facing
// error, so both paths answer a request the same way.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "json.hpp"
#include "parse.hpp"
#include "queen/core/json_scan.hpp"

namespace queen::api::detail {
namespace {

using json::scan::skip_value;
using json::scan::skip_whitespace;

/// Walks the object at text[pos]: visit(key, pos) reads the value at `pos` and
/// moves past it. `key` is the key's text; a key with escapes declines (no key
/// this API reads has one).
template <class Visit>
bool for_members(std::string_view text, std::size_t& pos, Visit&& visit) {
    return json::scan::walk_object(text, pos, [&](std::string_view literal, std::size_t& at) {
        const std::string_view key = literal.substr(1, literal.size() - 2);
        return key.find('\\') == std::string_view::npos && visit(key, at);
    });
}

/// Walks the array at text[pos]: visit(pos) reads the element at `pos` and
/// moves past it.
template <class Visit>
bool for_elements(std::string_view text, std::size_t& pos, Visit&& visit) {
    return json::scan::walk_array(text, pos, visit);
}

/// Reads the value at `pos` (nesting depth `depth`) as a raw span.
bool raw_value(std::string_view text, std::size_t& pos, int depth, int depth_max,
               std::string_view& raw) noexcept {
    const std::size_t start = pos;
    if (!skip_value(text, pos, depth, depth_max)) {
        return false;
    }
    raw = text.substr(start, pos - start);
    return true;
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
    std::optional<std::string> queue, partition, transaction_id, trace_id;
    std::string_view payload = shape.default_payload;
    std::string_view data;
    const bool walked = for_members(text, pos, [&](std::string_view key, std::size_t& at) {
        std::string_view raw;
        if (!raw_value(text, at, shape.depth + 1, depth_max, raw)) {
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
            return first_time(seen_queue) && optional_string(raw, queue);
        }
        if (key == "partition") {
            return first_time(seen_partition) && optional_string(raw, partition);
        }
        if (key == "transactionId") {
            return first_time(seen_transaction) && optional_string(raw, transaction_id);
        }
        if (key == "traceId") {
            return first_time(seen_trace) && optional_string(raw, trace_id);
        }
        return true;
    });
    if (!walked || !queue || queue->size() > options.name_bytes_max) {
        return false;
    }
    if (!seen_payload && seen_data) {
        payload = data;
    }
    out.queue = std::move(*queue);
    if (partition) {
        if (partition->size() > options.name_bytes_max) {
            return false;
        }
        out.partition = std::move(*partition);
    }
    has_client_id = transaction_id && !transaction_id->empty();
    if (has_client_id) {
        if (transaction_id->size() > options.name_bytes_max) {
            return false;
        }
        out.transaction_id = std::move(*transaction_id);
    } else {
        out.transaction_id = time_uuid(random, now_ms);
    }
    if (trace_id && !trace_id->empty()) {
        if (!is_uuid_text(*trace_id)) {
            return false;
        }
        out.trace_id = std::move(*trace_id);
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

/// One acknowledgment as parse_ack_item reads it; every deviation declines.
std::optional<queues::AckItem> ack_item_fast(std::string_view text, std::size_t& pos, int depth,
                                             int depth_max, const ApiOptions& options) {
    bool seen_transaction = false, seen_partition = false, seen_status = false, seen_error = false,
         seen_lease = false, seen_group = false;
    std::optional<std::string> transaction_id, partition_id, status, lease, group;
    std::string_view error_raw = "null";
    const bool walked = for_members(text, pos, [&](std::string_view key, std::size_t& at) {
        std::string_view raw;
        if (!raw_value(text, at, depth + 1, depth_max, raw)) {
            return false;
        }
        if (key == "transactionId") {
            return first_time(seen_transaction) && optional_string(raw, transaction_id);
        }
        if (key == "partitionId") {
            return first_time(seen_partition) && optional_string(raw, partition_id);
        }
        if (key == "status") {
            return first_time(seen_status) && optional_string(raw, status);
        }
        if (key == "error") {
            error_raw = raw;
            return first_time(seen_error);
        }
        if (key == "leaseId") {
            return first_time(seen_lease) && optional_string(raw, lease);
        }
        if (key == "consumerGroup") {
            return first_time(seen_group) && optional_string(raw, group);
        }
        return true;
    });
    if (!walked || !transaction_id || transaction_id->empty() ||
        transaction_id->size() > options.name_bytes_max || !partition_id ||
        !is_uuid_text(*partition_id)) {
        return std::nullopt;
    }
    queues::AckItem out;
    out.transaction_id = std::move(*transaction_id);
    out.partition = queues::parse_partition_id(*partition_id);
    out.status = status ? parse_ack_status(*status) : queues::AckStatus::completed;
    if (error_raw != "null") {
        std::optional<std::string> error;
        if (!optional_string(error_raw, error) || !error ||
            error->size() > options.payload_bytes_max) {
            return std::nullopt;
        }
        out.has_error = true;
        out.error = std::move(*error);
    }
    out.lease = lease ? queues::parse_lease_id(*lease) : queues::LeaseId{0};
    if (group && !group->empty()) {
        if (group->size() > options.name_bytes_max) {
            return std::nullopt;
        }
        out.group = std::move(*group);
    }
    return out;
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
        return for_elements(body, at, [&](std::size_t& element) {
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
    std::size_t pos = 0;
    skip_whitespace(body, pos);
    if (!is_batch) {
        auto item = ack_item_fast(body, pos, 1, depth_max, options);
        if (!item) {
            return std::nullopt;
        }
        out.items.push_back(std::move(*item));
    } else {
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
            return for_elements(body, at, [&](std::size_t& element) {
                if (out.items.size() >= options.ack_items_max) {
                    return false;
                }
                auto item = ack_item_fast(body, element, 3, depth_max, options);
                if (!item) {
                    return false;
                }
                out.items.push_back(std::move(*item));
                return true;
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
        return for_elements(body, at, [&](std::size_t& element) {
            // First find the type and the items (they may come after the other
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
                auto ack = ack_item_fast(body, again, 3, depth_max, options);
                queues::TransactionOp* op = ack ? add(queues::TransactionOp::Kind::ack) : nullptr;
                if (op == nullptr) {
                    return false;
                }
                op->ack = std::move(*ack);
                return true;
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
            return for_elements(body, in_items, [&](std::size_t& item_at) {
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
