// api/src/parse_state.cpp — requests of the KV, lock and timer routes -> engine commands (the
// writes as the transaction operations of parse_ops.cpp).
#include "parse_state.hpp"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <limits>
#include <utility>

#include "json.hpp"
#include "parse.hpp"
#include "queen/engine/engine.hpp"

namespace queen::api::detail {
namespace {

using Kind = engine::TransactionOp::Kind;
using nlohmann::json;

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

Error bad(std::string message) {
    return Error{Errc::invalid_argument, std::move(message)};
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
        text.remove_prefix(1);
    }
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
        text.remove_suffix(1);
    }
    return text;
}

/// A non-negative decimal integer that fits int64 (the whole text), else nullopt.
std::optional<std::int64_t> decimal(std::string_view text) {
    std::int64_t value = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (text.empty() || error != std::errc{} || stop != end || value < 0) {
        return std::nullopt;
    }
    return value;
}

/// The body must be an object whose members are all in `names`.
Status only_fields(const json& body, std::initializer_list<std::string_view> names) {
    if (!body.is_object()) {
        return bad("body must be a JSON object");
    }
    for (const auto& [name, value] : body.items()) {
        if (std::find(names.begin(), names.end(), name) == names.end()) {
            std::string expected;
            for (const std::string_view each : names) {
                expected += (expected.empty() ? "" : ", ") + std::string(each);
            }
            return bad("unknown field '" + name + "' (expected " + expected + ")");
        }
    }
    return {};
}

Result<std::int64_t> lock_ttl(const json& body) {
    return integer_field(body, "ttlMs", engine::LockCommand{}.ttl_ms, lock_limits().ttl_ms_min,
                         lock_limits().ttl_ms_max);
}

Result<engine::Transaction> one_operation(const json& object, Kind kind,
                                          const ApiOptions& options) {
    engine::Transaction transaction;
    transaction.ops.emplace_back();
    QUEEN_TRY(parse_extended_operation(object, kind, options, transaction.ops.back()));
    return transaction;
}

/// The kv.* operation object of a KV route: bucket and key from the path, the version
/// precondition from the query or headers.
Result<json> kv_operation(const http::Request& request) {
    QUEEN_TRY(std::string bucket,
              parse_path_name(request, "bucket", "bucket", kv_limits().bucket_bytes_max));
    QUEEN_TRY(std::string key, parse_path_name(request, "key", "key", kv_limits().key_bytes_max));
    QUEEN_TRY(const auto expected, parse_expected_version(request));
    json op = json::object();
    op["bucket"] = std::move(bucket);
    op["key"] = std::move(key);
    if (expected.has_value()) {
        op["expectedVersion"] = *expected;
    }
    return op;
}

}  // namespace

const kv::Options& kv_limits() noexcept {
    static const engine::Options options;
    return options.kv;
}

const locks::Options& lock_limits() noexcept {
    static const engine::Options options;
    return options.locks;
}

const timers::Options& timer_limits() noexcept {
    static const engine::Options options;
    return options.timers;
}

bool is_utf8(std::string_view text) noexcept {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if (byte < 0x80) {
            ++i;
            continue;
        }
        std::size_t length = 0;
        std::uint32_t code = 0;
        std::uint32_t min = 0;
        if ((byte & 0xe0) == 0xc0) {
            length = 2;
            code = byte & 0x1f;
            min = 0x80;
        } else if ((byte & 0xf0) == 0xe0) {
            length = 3;
            code = byte & 0x0f;
            min = 0x800;
        } else if ((byte & 0xf8) == 0xf0) {
            length = 4;
            code = byte & 0x07;
            min = 0x10000;
        } else {
            return false;
        }
        if (text.size() - i < length) {
            return false;
        }
        for (std::size_t k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            if ((next & 0xc0) != 0x80) {
                return false;
            }
            code = (code << 6) | (next & 0x3f);
        }
        // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
        if (code < min || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) {
            return false;
        }
        i += length;
    }
    return true;
}

Result<std::string> parse_path_name(const http::Request& request, std::string_view param,
                                    std::string_view what, std::size_t bytes_max) {
    const std::string_view value = request.param(param).value_or("");
    if (value.empty()) {
        return bad(std::string(what) + " is required");
    }
    if (value.size() > bytes_max) {
        return bad(std::string(what) + " is longer than " + std::to_string(bytes_max) + " bytes");
    }
    if (value.find('\0') != std::string_view::npos) {
        return bad(std::string(what) + " must not contain NUL characters");
    }
    if (!is_utf8(value)) {
        return bad(std::string(what) + " must be UTF-8");
    }
    return std::string(value);
}

Result<std::optional<std::uint64_t>> parse_expected_version(const http::Request& request) {
    QUEEN_TRY(const std::int64_t query,
              query_integer(request, "expectedVersion", -1, 0, int64_max));
    const auto if_match = request.header("If-Match");
    const auto if_none_match = request.header("If-None-Match");
    const int given =
        (query >= 0 ? 1 : 0) + (if_match.has_value() ? 1 : 0) + (if_none_match.has_value() ? 1 : 0);
    if (given > 1) {
        return bad("give one of expectedVersion, If-Match and If-None-Match, not several");
    }
    if (query >= 0) {
        return std::optional<std::uint64_t>(static_cast<std::uint64_t>(query));
    }
    if (if_match.has_value()) {
        std::string_view text = trim(*if_match);
        if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
            text = text.substr(1, text.size() - 2);
        }
        const auto version = decimal(text);
        if (!version.has_value()) {
            return bad("If-Match must be one version number (\"12\" or 12)");
        }
        return std::optional<std::uint64_t>(static_cast<std::uint64_t>(*version));
    }
    if (if_none_match.has_value()) {
        if (trim(*if_none_match) != "*") {
            return bad("If-None-Match takes only * (the key must not exist)");
        }
        return std::optional<std::uint64_t>(0);
    }
    return std::optional<std::uint64_t>();
}

Result<std::int64_t> parse_kv_ttl(const http::Request& request) {
    const std::int64_t max = kv_limits().ttl_ms_max;
    QUEEN_TRY(const std::int64_t query, query_integer(request, "ttlMs", -1, 0, max));
    const auto header = request.header("X-Queen-TTL-Ms");
    if (!header.has_value()) {
        return query < 0 ? 0 : query;
    }
    if (query >= 0) {
        return bad("give ttlMs or X-Queen-TTL-Ms, not both");
    }
    const auto ttl = decimal(trim(*header));
    if (!ttl.has_value() || *ttl > max) {
        return bad("X-Queen-TTL-Ms must be an integer between 0 and " + std::to_string(max));
    }
    return *ttl;
}

Result<engine::Transaction> parse_kv_put(const http::Request& request, const ApiOptions& options) {
    QUEEN_TRY(json op, kv_operation(request));
    QUEEN_TRY(op["ttlMs"], parse_kv_ttl(request));
    if (request.body.size() > options.json_body_bytes_max) {
        return Error{Errc::out_of_range, "request body is " + std::to_string(request.body.size()) +
                                             " bytes, more than the limit of " +
                                             std::to_string(options.json_body_bytes_max)};
    }
    QUEEN_TRY(op["value"], parse_body(request.body, options.json_depth_max));
    return one_operation(op, Kind::kv_set, options);
}

Result<engine::Transaction> parse_kv_delete(const http::Request& request) {
    QUEEN_TRY(const json op, kv_operation(request));
    return one_operation(op, Kind::kv_delete, ApiOptions{});
}

Result<KvListQuery> parse_kv_list(const http::Request& request) {
    KvListQuery out;
    QUEEN_TRY(out.bucket,
              parse_path_name(request, "bucket", "bucket", kv_limits().bucket_bytes_max));
    out.prefix = std::string(request.query_value("prefix").value_or(""));
    if (out.prefix.size() > kv_limits().key_bytes_max) {
        return bad("prefix is longer than " + std::to_string(kv_limits().key_bytes_max) + " bytes");
    }
    QUEEN_TRY(const ListQuery page,
              parse_list_query(request, kv_limits().key_bytes_max, kv_limits().list_limit_max));
    out.after = page.after;
    out.limit = page.limit;
    return out;
}

Result<ListQuery> parse_list_query(const http::Request& request, std::size_t after_bytes_max,
                                   std::uint32_t limit_max) {
    ListQuery out;
    out.after = std::string(request.query_value("after").value_or(""));
    if (out.after.size() > after_bytes_max) {
        return bad("after is longer than " + std::to_string(after_bytes_max) + " bytes");
    }
    QUEEN_TRY(const std::int64_t limit,
              query_integer(request, "limit", state_listing_limit_default, 1, limit_max));
    out.limit = static_cast<std::uint32_t>(limit);
    return out;
}

Result<LockAcquire> parse_lock_acquire(std::string_view name, const nlohmann::json& body,
                                       const ApiOptions& options) {
    QUEEN_TRY(only_fields(body, {"owner", "ttlMs", "waitMs"}));
    LockAcquire out;
    out.command.op = engine::LockCommand::Op::acquire;
    out.command.name = std::string(name);
    QUEEN_TRY(out.command.owner, required_string(body, "owner", lock_limits().owner_bytes_max));
    QUEEN_TRY(out.command.ttl_ms, lock_ttl(body));
    QUEEN_TRY(out.wait_ms, integer_field(body, "waitMs", 0, 0, options.pop_timeout_ms_max));
    return out;
}

Result<engine::LockCommand> parse_lock_renew(std::string_view name, const nlohmann::json& body) {
    QUEEN_TRY(only_fields(body, {"token", "ttlMs"}));
    engine::LockCommand out;
    out.op = engine::LockCommand::Op::renew;
    out.name = std::string(name);
    QUEEN_TRY(out.token, required_token(body));
    QUEEN_TRY(out.ttl_ms, lock_ttl(body));
    return out;
}

Result<engine::Transaction> parse_lock_release(std::string_view name, const nlohmann::json& body) {
    QUEEN_TRY(only_fields(body, {"token"}));
    engine::Transaction transaction;
    engine::TransactionOp& op = transaction.ops.emplace_back();
    op.kind = Kind::lock_release;
    op.lock.name = std::string(name);
    QUEEN_TRY(op.lock.token, required_token(body));
    return transaction;
}

Result<engine::Transaction> parse_timer_set(const nlohmann::json& body, const ApiOptions& options) {
    QUEEN_TRY(
        only_fields(body, {"type", "id", "queue", "partition", "payload", "transactionId",
                           "traceId", "at", "delayMs", "intervalMs", "endAt", "replace", "lock"}));
    if (const auto type = body.find("type"); type != body.end() && *type != "timer.set") {
        return bad("type must be \"timer.set\" (or absent)");
    }
    return one_operation(body, Kind::timer_set, options);
}

Result<engine::Transaction> parse_timer_cancel(const http::Request& request,
                                               const ApiOptions& options) {
    QUEEN_TRY(std::string id,
              parse_path_name(request, "id", "timer id", timer_limits().id_bytes_max));
    json op = json::object();
    op["id"] = std::move(id);
    return one_operation(op, Kind::timer_cancel, options);
}

}  // namespace queen::api::detail
