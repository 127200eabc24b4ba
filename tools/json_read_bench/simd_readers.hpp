// tools/json_read_bench/simd_readers.hpp — simdjson on-demand twins of the api fast paths
// (push, ack, transaction) and of the client's pop-answer reader, for the issue-22 evaluation.
// Only simd_readers.cpp includes simdjson.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "parse.hpp"
#include "queen/client/types.hpp"

namespace queen::json_eval {

/// How much of the values the readers do not interpret (payloads, unknown members) is checked.
enum class Check {
    /// What on-demand gives for free: stage 1 validates UTF-8, unescaped control bytes and
    /// string closure over the whole body; skipped values are otherwise taken as they are.
    skip,
    /// Every skipped value is walked with on-demand (strings unescaped when they have a
    /// backslash, numbers parsed, literals matched, commas and colons checked, depth bounded);
    /// a number on-demand refuses (an integer beyond 64 bits) is judged by json::scan.
    walk,
    /// The value's raw span goes through queen::json::scan::skip_value (today's validator).
    scan,
};

[[nodiscard]] std::string_view check_name(Check check) noexcept;

/// The last failure of a reader: simdjson's error name and the byte offset it points at.
struct ReadError {
    std::string what;
    std::int64_t offset = -1;  ///< -1: not known
};

/// The readers over one reused ondemand::parser. Every `body` must be followed by at least
/// simdjson::SIMDJSON_PADDING (64) readable bytes (e.g. a std::string with that much spare
/// capacity). Same contract as the api fast paths: the slow path's result or nullopt (decline).
class SimdReaders {
public:
    SimdReaders();
    ~SimdReaders();
    SimdReaders(const SimdReaders&) = delete;
    SimdReaders& operator=(const SimdReaders&) = delete;

    std::optional<api::detail::ParsedPush> push(std::string_view body,
                                                const api::ApiOptions& options,
                                                api::RandomSource& random, std::int64_t now_ms,
                                                Check check);
    std::optional<queues::Ack> ack(std::string_view body, bool is_batch,
                                   const api::ApiOptions& options, Check check);
    std::optional<engine::Transaction> transaction(std::string_view body,
                                                   const api::ApiOptions& options,
                                                   api::RandomSource& random, std::int64_t now_ms,
                                                   Check check);
    /// The 200 answer of a pop into `result` as client::read_pop_answer fills it (storage
    /// reused across calls). False when the answer is not read.
    bool pop_answer(std::string_view body, const client::PopRequest& request,
                    client::PopResult& result, Check check);

    [[nodiscard]] const ReadError& last_error() const noexcept { return error_; }
    /// The simdjson kernel stage 1 runs on ("icelake", "haswell", ...) and the one compiled
    /// into this file for the on-demand walk (the builtin one, fixed by the compiler flags).
    [[nodiscard]] static std::string active_implementation();
    [[nodiscard]] static std::string builtin_implementation();
    /// Makes `name` the active kernel; false when this CPU cannot run it.
    static bool force_implementation(const std::string& name);
    /// simdjson::minify of `text` (for the compile-cost and cost-per-byte notes).
    static std::size_t minify(std::string_view text, char* out);

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
    ReadError error_;
};

}  // namespace queen::json_eval
