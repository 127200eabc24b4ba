// queen/bench/system.hpp — facts about the machine and the server that go into a report's
// conditions: RSS of a process, load average, Prometheus samples, the server's /health answer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "queen/core/result.hpp"

namespace queen::bench {

/// The resident set size of process `pid` in bytes, from /proc/<pid>/status (VmRSS).
/// Errors: queen::Errc::not_found (no such process or no /proc entry), queen::Errc::io
/// (the file has no VmRSS line, e.g. a zombie).
[[nodiscard]] queen::Result<std::int64_t> read_process_rss_bytes(int pid);

/// User + system CPU time in clock ticks from the text of /proc/<pid>/stat (fields 14 and 15,
/// counted after the command name's closing parenthesis, which may hold spaces). nullopt when
/// malformed.
[[nodiscard]] std::optional<std::int64_t> parse_proc_stat_cpu_ticks(std::string_view stat);

/// User + system CPU time of process `pid` (all its threads) in microseconds, from
/// /proc/<pid>/stat. Errors: queen::Errc::not_found (no such process), queen::Errc::io
/// (unparsable).
[[nodiscard]] queen::Result<double> read_process_cpu_us(int pid);

/// User + system CPU time of this process (all its threads) in microseconds (getrusage).
[[nodiscard]] double own_cpu_us();

/// The 1-minute load average of the machine from /proc/loadavg, or nullopt when unreadable.
[[nodiscard]] std::optional<double> read_load_average_1m();

/// The value of the first sample of metric `name` in Prometheus text format 0.0.4 `text`: a line
/// `name value` or `name{labels} value` (comments and other metrics are skipped; a name that
/// merely starts with `name` does not match). nullopt when absent or not a number.
[[nodiscard]] std::optional<double> find_prometheus_sample(std::string_view text,
                                                           std::string_view name);

/// What /health says about the server.
struct ServerFacts {
    std::string version;
    std::string status;  ///< "healthy" or "unhealthy"
};

/// Parses the body of GET /health. Errors: queen::Errc::invalid_argument (not a JSON object).
[[nodiscard]] queen::Result<ServerFacts> parse_health(std::string_view json);

}  // namespace queen::bench
