// cli/exit_codes.hpp — the stable exit codes of every `queen` command (scripts rely on them).
#pragma once

namespace queen::cli {
inline constexpr int exit_ok = 0;      ///< success
inline constexpr int exit_failed = 1;  ///< the operation failed (a Result error)
inline constexpr int exit_usage =
    2;  ///< bad flags or arguments, or a command this build cannot run
inline constexpr int exit_retryable = 3;   ///< not leader, timeout, unavailable: try again
inline constexpr int exit_corruption = 4;  ///< inspect --verify found corruption
}  // namespace queen::cli
