// cli/commands/bench.cpp — registers `queen bench` workloads; each workload lives in bench_*.cpp.
#include "commands/bench.hpp"

#include <CLI/CLI.hpp>
#include <memory>

namespace queen::cli {
namespace {

/// The flags every broker workload takes; `options->given` is filled after parsing.
void add_workload_flags(CLI::App* command, const std::shared_ptr<BenchOptions>& options) {
    command->add_option("--url", options->url, "Broker address (only this address is loaded)")
        ->capture_default_str();
    command->add_option("--token", options->token,
                        "Bearer token (a static API token or a JWT) for a broker with auth on: "
                        "admin, as the bench deletes and configures its queue");
    add_tls_flags(command, options->tls);
    command->add_option("--queue", options->queue, "Queue to use (deleted and created again)")
        ->capture_default_str();
    command
        ->add_option("--producers", options->producers,
                     "Producer connections, one request in flight each")
        ->check(CLI::Range(1, 4096));
    command
        ->add_option("--consumers", options->consumers,
                     "Consumer or transaction worker connections, one request in flight each")
        ->check(CLI::Range(1, 4096));
    command
        ->add_option("--driver-threads", options->driver_threads,
                     "Event-loop threads driving the connections (1 spends the least CPU)")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    command->add_option("--batch", options->batch, "Messages per push, pop and transaction")
        ->check(CLI::Range(1, 10'000));
    command->add_option("--size", options->size_bytes, "Payload size in bytes")
        ->check(CLI::Range(1, 16 << 20));
    command
        ->add_option("--partitions", options->partitions,
                     "Partitions written round-robin (partitions workload: partitions filled)")
        ->check(CLI::Range(1, 10'000'000));
    command
        ->add_option("--pop-partitions", options->pop_partitions,
                     "Partitions one pop may claim under one lease")
        ->check(CLI::Range(1, 10'000));
    command->add_flag("--pipeline", options->pipeline,
                      "Transaction workers send each pop right behind the previous transaction "
                      "on the same connection (HTTP/1.1 pipelining)");
    command->add_option("--steps", options->steps,
                        "transaction: what a worker does per popped batch: ack-push (ack it and "
                        "push the next batch in one transaction), one-call (also a KV write and a "
                        "reminder timer, in the same transaction), four-requests (the four effects "
                        "of one-call as four requests), one-call-next (one-call whose transaction "
                        "also pops the worker's next batch: one request a loop; an empty next pop "
                        "falls back to a waiting pop), stream-cycle (one POST /streams/v1/cycle: "
                        "ack, a state upsert, the push), ack-kv-push (the same three effects as "
                        "one transaction); several, comma-separated, run one after the other and "
                        "compare their rates (one-call-next,four-requests or "
                        "stream-cycle,ack-kv-push)");
    command->add_option("--consumer-group", options->consumer_group,
                        "Consume as this consumer group (default: queue mode)");
    command
        ->add_option("--duration", options->duration_s,
                     "Seconds to run; with --messages, the bound of each phase")
        ->check(CLI::Range(0.1, 86'400.0));
    command->add_option("--messages", options->messages,
                        "Messages to produce (transaction: transactions); 0 runs for --duration");
    command
        ->add_option("--rate", options->rate_msgs_per_s,
                     "Total target msgs/s of all producers, paced open-loop; payloads carry the "
                     "due time (produce, e2e, stream; 0: unpaced)")
        ->check(CLI::Range(0.0, 1e9));
    command
        ->add_option("--window-ms", options->window_ms,
                     "stream: the tumbling window of the runners' aggregation, in ms")
        ->check(CLI::Range(1, 86'400'000))
        ->capture_default_str();
    command->add_option("--seed", options->seed,
                        "lanes: seed of the producers' lane choices (default: drawn; the report's "
                        "conditions print it, so a run can be replayed)");
    command->add_flag("--verify", options->verify,
                      "stream: count events per window (Aggregation::count) and check that the "
                      "emitted and open windows' counts add up to the events pushed");
    command->add_flag("--json", options->json, "Print the summary as JSON");
    command->add_option("--profile", options->profile,
                        "Run the named profile of the profiles file (flags given override it)");
    command->add_option("--profiles-file", options->profiles_file, "Profiles file")
        ->capture_default_str();
    command->add_option(
        "--server-pid", options->server_pid,
        "Read the server's RSS and CPU time from /proc/<pid> (default: /metrics/prometheus)");
    command
        ->add_option("--durability", options->durability,
                     "How the server was configured to persist, for the report's conditions")
        ->capture_default_str();
}

void collect_given(CLI::App* command, BenchOptions& options) {
    options.given.clear();
    for (const CLI::Option* option : command->get_options()) {
        if (option->count() > 0 && !option->get_lnames().empty()) {
            options.given.push_back("--" + option->get_lnames().front());
        }
    }
}

}  // namespace

void register_bench(CLI::App& app, int& exit_code) {
    auto* bench = app.add_subcommand(
        "bench", "Drive load and print results people can compare (progress goes to stderr)");
    bench->require_subcommand(0, 1);

    auto profile_options = std::make_shared<BenchOptions>();
    add_workload_flags(bench, profile_options);
    bench->callback([bench, profile_options, &exit_code] {
        if (!bench->get_subcommands().empty()) {
            return;  // a workload or `log` ran
        }
        if (profile_options->profile.empty()) {
            throw CLI::RequiredError(
                "a workload (produce, consume, e2e, lanes, transaction, partitions, stream, "
                "log) or --profile");
        }
        collect_given(bench, *profile_options);
        exit_code = run_bench_workload(*profile_options);
    });

    struct Entry {
        const char* name;
        const char* help;
    };
    for (const Entry& entry : {
             Entry{"produce", "Producers push batches for a duration or a message count"},
             Entry{"consume", "Fill the queue, then consumers pop and ack it"},
             Entry{"e2e", "Produce and consume together; latency from the payload timestamp"},
             Entry{"lanes",
                   "e2e with one writer per lane (partition); consumers check each lane's "
                   "order (issue 26)"},
             Entry{"transaction", "Pop, then ack and push the next message in one transaction"},
             Entry{"partitions", "Fill N partitions with one message each, then drain them"},
             Entry{"stream",
                   "Push user events while StreamRunners sum them in tumbling windows (issue 25)"},
         }) {
        auto options = std::make_shared<BenchOptions>();
        options->workload = entry.name;
        auto* command = bench->add_subcommand(entry.name, entry.help);
        add_workload_flags(command, options);
        command->callback([command, options, &exit_code] {
            collect_given(command, *options);
            exit_code = run_bench_workload(*options);
        });
    }

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
