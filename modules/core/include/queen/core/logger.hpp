// queen/core/logger.hpp — the logging sink interface; library code logs through a Logger& it is
// given.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>

namespace queen {

enum class Level : std::uint8_t { trace = 0, debug, info, warn, error, off };

[[nodiscard]] std::string_view level_name(Level level) noexcept;
/// Parses "trace|debug|info|warn|error|off"; false on anything else.
[[nodiscard]] bool parse_level(std::string_view text, Level& out) noexcept;

/// A destination for diagnostics. Events are a stable dotted name plus key=value fields.
/// Thread-safety: implementations must accept calls from any thread.
class Logger {
public:
    virtual ~Logger() = default;
    [[nodiscard]] bool enabled(Level level) const noexcept {
        return level >= level_.load(std::memory_order_relaxed);
    }
    void set_level(Level level) noexcept { level_.store(level, std::memory_order_relaxed); }
    [[nodiscard]] Level level() const noexcept { return level_.load(std::memory_order_relaxed); }
    virtual void write(Level level, std::string_view event, std::string_view fields,
                       const char* file, int line) = 0;

private:
    std::atomic<Level> level_{Level::info};
};

/// Discards everything (the default for modules under test).
class NullLogger final : public Logger {
public:
    NullLogger() { set_level(Level::off); }
    void write(Level, std::string_view, std::string_view, const char*, int) override {}
    static NullLogger& instance();
};

/// Writes `L event fields (file:line)` lines to stderr, one write per line (cli only).
class StderrLogger final : public Logger {
public:
    void write(Level level, std::string_view event, std::string_view fields, const char* file,
               int line) override;

private:
    std::mutex mutex_;
};

}  // namespace queen

/// QUEEN_LOG(logger, Level::info, "raft.became_leader", "term=" << t << " node=" << id);
/// Formats only when the level is enabled.
#define QUEEN_LOG(logger, lvl, event, fields)                                             \
    do {                                                                                  \
        ::queen::Logger& queen_logger_ = (logger);                                        \
        if (queen_logger_.enabled(lvl)) {                                                 \
            std::ostringstream queen_log_fields_;                                         \
            queen_log_fields_ << fields;                                                  \
            queen_logger_.write(lvl, event, queen_log_fields_.str(), __FILE__, __LINE__); \
        }                                                                                 \
    } while (false)
