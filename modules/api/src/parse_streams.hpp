// api/src/parse_streams.hpp — the bodies of the Queen v1 streams endpoints (docs/http-api.md,
// streams) -> engine commands and read requests. Pure functions: every check happens here, so
// a bad body never reaches the log.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "queen/api/api.hpp"
#include "queen/core/result.hpp"
#include "queen/engine/stream.hpp"
#include "queen/queues/types.hpp"

namespace queen::api::detail {

// Every parse_* returns Errc::invalid_argument whose context is the client-facing message,
// naming the field ("state_ops[2].key must be a string").

/// POST /streams/v1/queries: name, source_queue, config_hash (required: missing, null or ""
/// -> "<field> is required"), sink_queue, reset; the queues under check_name (parse.hpp).
/// `new_query_id` is the fresh UUID a created query gets (made by the caller from the API's
/// RandomSource).
[[nodiscard]] Result<engine::StreamRegister> parse_stream_register(const nlohmann::json& body,
                                                                   const ApiOptions& options,
                                                                   std::string new_query_id);

/// A parsed POST /streams/v1/cycle: the command and what the answer echoes.
struct ParsedCycle {
    engine::StreamCycle cycle;
    /// Per push item, whether the client named its transactionId (format_push).
    std::vector<bool> has_client_transaction_id;
    /// The ack's `count`: how many messages the client says the ack closes. Only counted in
    /// the metrics and echoed; the ack itself names one message.
    std::int64_t ack_count = 0;
};

/// POST /streams/v1/cycle: query_id, partition_id, consumer_group, state_ops, push_items (read
/// by parse_push_array: the push route's rules), ack, release_lease and epoch (our fence).
[[nodiscard]] Result<ParsedCycle> parse_stream_cycle(const nlohmann::json& body,
                                                     const ApiOptions& options,
                                                     RandomSource& random, std::int64_t now_ms);

/// A parsed POST /streams/v1/state/get.
struct StateGet {
    std::string query_id;
    queues::PartitionId partition{0};
    std::vector<std::string> keys;  ///< empty: every key
    std::string key_prefix;         ///< empty: no prefix filter
    /// Keeps only rows whose value is an object with a numeric windowEnd <= this.
    std::optional<double> ripe_at_or_before;
};

/// POST /streams/v1/state/get: query_id, partition_id, keys, key_prefix, ripe_at_or_before.
[[nodiscard]] Result<StateGet> parse_state_get(const nlohmann::json& body);

/// The rule of ripe_at_or_before: `value` (a row's JSON text) is an object whose member
/// windowEnd is a number <= `at_or_before`.
[[nodiscard]] bool is_ripe(std::string_view value, double at_or_before);

}  // namespace queen::api::detail
