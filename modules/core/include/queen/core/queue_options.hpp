// queen/core/queue_options.hpp — the 15 queue options of docs/http-api.md, configure as one table:
// member, JSON key, type, default, valid range and a one-line description. The broker (api parser
// and answers, engine command codec, LMDB queue records), the client and the CLI all read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace queen {

/// The upper bound of the options counted in seconds.
inline constexpr std::int64_t queue_option_seconds_max = 10LL * 366 * 86'400;

// One row per option: X(type, member, JSON key, default, min, max, description). The row order
// is the field order of the binary encodings (engine commands and results, the LMDB queue
// record): append new options at the end and never reorder. Units are in the member names.
//
// ttl's default is 0 (off): the old server's default was 3600 but it never enforced it, and
// enforcing it by default would silently delete the messages of every unconfigured queue.
// deadLetterQueue and dlqAfterMaxRetries are stored and echoed: dead-lettering after the retry
// limit always happens (docs/http-api.md, conventions).
// clang-format off
#define QUEEN_QUEUE_OPTIONS(X)                                                                     \
    X(std::int64_t, lease_time_s, "leaseTime", 300, 0, queue_option_seconds_max,                   \
      "Lease length in seconds (0: 60 s)")                                                         \
    X(std::int64_t, retry_limit, "retryLimit", 3, 0, 1'000'000,                                    \
      "Failed deliveries of a batch before its messages go to the DLQ")                            \
    X(std::int64_t, retry_delay_ms, "retryDelay", 1000, 0, queue_option_seconds_max * 1000,        \
      "Hold-back of a failed batch in milliseconds")                                               \
    X(std::int64_t, max_size, "maxSize", 0, 0, 1'000'000'000'000'000LL,                            \
      "Reject pushes beyond this many stored messages (0: unlimited)")                             \
    X(std::int64_t, ttl_s, "ttl", 0, 0, queue_option_seconds_max,                                  \
      "Remove unconsumed messages older than this many seconds (0: off)")                          \
    X(std::int64_t, priority, "priority", 0, -1'000'000'000, 1'000'000'000,                        \
      "Pop of a namespace or task serves higher priorities first")                           \
    X(bool, is_dead_letter_queue, "deadLetterQueue", false, false, true,                           \
      "Keep failed messages in the DLQ (stored and echoed)")                                       \
    X(bool, is_dlq_after_max_retries, "dlqAfterMaxRetries", false, false, true,                    \
      "Dead-letter a message after retryLimit failures (stored and echoed)")                       \
    X(std::int64_t, delayed_processing_s, "delayedProcessing", 0, 0, queue_option_seconds_max,     \
      "Deliver a message only this many seconds after its push")                                   \
    X(std::int64_t, window_buffer_s, "windowBuffer", 0, 0, queue_option_seconds_max,               \
      "Deliver a partition only once its newest message is this many seconds old")                 \
    X(bool, is_retention_enabled, "retentionEnabled", false, false, true,                          \
      "Run the two retention sweeps below")                                                        \
    X(std::int64_t, retention_s, "retentionSeconds", 0, 0, queue_option_seconds_max,               \
      "Delete messages older than this many seconds (0: off)")                                     \
    X(std::int64_t, completed_retention_s, "completedRetentionSeconds", 0, 0,                      \
      queue_option_seconds_max,                                                                    \
      "Delete messages every group consumed once older than this many seconds (0: off)")           \
    X(bool, is_encryption_enabled, "encryptionEnabled", false, false, true,                        \
      "Store payloads AES-256-GCM encrypted (the HTTP layer encrypts)")                            \
    X(std::int64_t, max_wait_time_s, "maxWaitTimeSeconds", 0, 0, queue_option_seconds_max,         \
      "Evict (no DLQ) messages that waited longer than this many seconds (0: off)")
// clang-format on

/// The 15 options of one queue, each at its default. Configure overwrites all of them.
struct QueueOptions {
#define QUEEN_QUEUE_OPTION_MEMBER(type, member, key, default_value, min, max, description) \
    type member = default_value;
    QUEEN_QUEUE_OPTIONS(QUEEN_QUEUE_OPTION_MEMBER)
#undef QUEEN_QUEUE_OPTION_MEMBER
    friend bool operator==(const QueueOptions&, const QueueOptions&) = default;
};

/// One row of the table. `T` is std::int64_t or bool; a bool's range is [false, true].
template <class T>
struct QueueOption {
    T QueueOptions::*member;
    std::string_view key;  ///< the JSON key of the HTTP API (a string literal: null-terminated)
    T default_value;
    T min;
    T max;
    std::string_view description;  ///< one line, for help texts
};

/// Calls `visit(option)` with the QueueOption<T> of every option, in table order.
template <class F>
constexpr void for_each_queue_option(F&& visit) {
#define QUEEN_QUEUE_OPTION_VISIT(type, member, key, default_value, min, max, description) \
    visit(QueueOption<type>{&QueueOptions::member, key, default_value, min, max, description});
    QUEEN_QUEUE_OPTIONS(QUEEN_QUEUE_OPTION_VISIT)
#undef QUEEN_QUEUE_OPTION_VISIT
}

/// How many options the table has.
inline constexpr std::size_t queue_option_count = [] {
    std::size_t count = 0;
    for_each_queue_option([&count](const auto& /*option*/) { ++count; });
    return count;
}();

/// The JSON key of `member` (a member of QueueOptions).
template <class T>
[[nodiscard]] constexpr std::string_view queue_option_key(T QueueOptions::*member) noexcept {
    std::string_view key;
    for_each_queue_option([&](const auto& option) {
        if constexpr (std::is_same_v<decltype(option.member), T QueueOptions::*>) {
            if (option.member == member) {
                key = option.key;
            }
        }
    });
    return key;
}

}  // namespace queen
