// cli/commands/bench.hpp — `queen bench`: load generators that print comparable results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "commands/tls_flags.hpp"

namespace CLI {
class App;
}

namespace queen::cli {

struct BenchLogOptions {
    std::filesystem::path dir;
    int appenders = 1;
    std::size_t record_size = 256;
    double duration_s = 5;
    std::uint64_t records = 0;  // 0: run for duration_s
    bool json = false;
    bool allow_tmpfs = false;
};

/// Flags of the broker workloads (produce, consume, e2e, lanes, transaction, partitions, stream)
/// and of `queen bench --profile NAME`. `given` lists the flags set on the command line: they
/// override the profile's values.
struct BenchOptions {
    std::string workload;  // empty: take it from the profile
    std::string profile;
    std::filesystem::path profiles_file = "conf/bench.toml";
    std::string url = "http://127.0.0.1:6632";
    std::string token;  ///< bearer token for a broker with auth.enabled (empty: none)
    TlsFlags tls;       ///< for an https:// url
    std::string queue = "bench";
    std::int64_t producers = 1;
    std::int64_t consumers = 1;
    std::int64_t driver_threads = 1;
    std::int64_t batch = 100;
    std::int64_t size_bytes = 256;
    std::int64_t partitions = 1;
    std::int64_t pop_partitions = 1;
    bool pipeline = false;
    std::string steps = "ack-push";
    std::string consumer_group;
    double duration_s = 10;
    std::uint64_t messages = 0;
    double rate_msgs_per_s = 0;      // 0: unpaced
    std::int64_t window_ms = 1'000;  // stream
    bool verify = false;             // stream
    std::uint64_t seed = 0;          // lanes; drawn when --seed is not given
    bool json = false;
    int server_pid = 0;  // > 0: read the server's RSS from /proc instead of /metrics/prometheus
    std::string durability = "log fdatasync before every ack";
    std::vector<std::string> given;
};

/// Adds `bench` and its workloads; the chosen workload's exit code lands in `exit_code`.
void register_bench(CLI::App& app, int& exit_code);
int run_bench_log(const BenchLogOptions& options);  // bench_log.cpp
/// Runs a broker workload over HTTP and prints its report; exit 0, 1 (failed run) or 2 (usage).
int run_bench_workload(const BenchOptions& options);  // bench_workload.cpp

}  // namespace queen::cli
