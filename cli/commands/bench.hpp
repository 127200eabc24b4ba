// cli/commands/bench.hpp — `queen bench`: load generators that print comparable results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

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

/// Adds `bench` and its workloads; the chosen workload's exit code lands in `exit_code`.
void register_bench(CLI::App& app, int& exit_code);
int run_bench_log(const BenchLogOptions& options);  // bench_log.cpp

}  // namespace queen::cli
