// cli/commands/bench.cpp — registers `queen bench` workloads; each workload lives in bench_*.cpp.
#include "commands/bench.hpp"

#include <CLI/CLI.hpp>
#include <memory>

namespace queen::cli {

void register_bench(CLI::App& app, int& exit_code) {
    auto* bench = app.add_subcommand("bench", "Drive load and print results people can compare");
    bench->require_subcommand(1);

    auto log_options = std::make_shared<BenchLogOptions>();
    auto* log =
        bench->add_subcommand("log", "Append throughput of the log with group commit (fdatasync)");
    log->add_option("--dir", log_options->dir,
                    "Directory for the benchmark log (created; must be on disk)")
        ->required();
    log->add_option("--appenders", log_options->appenders, "Concurrent appending threads")
        ->check(CLI::Range(1, 4096));
    log->add_option("--size", log_options->record_size, "Record payload size in bytes")
        ->check(CLI::Range(1, 16 << 20));
    log->add_option("--duration", log_options->duration_s, "Seconds to run (when --records is 0)")
        ->check(CLI::Range(0.1, 3600.0));
    log->add_option("--records", log_options->records,
                    "Total records to append (0: use --duration)");
    log->add_flag("--json", log_options->json, "Print JSON");
    log->add_flag("--allow-tmpfs", log_options->allow_tmpfs,
                  "Run even on tmpfs (fdatasync is a no-op there)");
    log->callback([log_options, &exit_code] { exit_code = run_bench_log(*log_options); });
}

}  // namespace queen::cli
