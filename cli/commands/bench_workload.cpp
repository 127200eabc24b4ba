// cli/commands/bench_workload.cpp — `queen bench produce|consume|e2e|lanes|transaction|partitions|
// stream` and `--profile`: resolve flags and profile, run the workload, print progress and the
// summary.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <initializer_list>
#include <iostream>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "commands/bench.hpp"
#include "exit_codes.hpp"
#include "queen/bench/profile.hpp"
#include "queen/bench/report.hpp"
#include "queen/bench/system.hpp"
#include "queen/bench/workload.hpp"
#include "queen/client/client.hpp"
#include "queen/client/errc.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/rng.hpp"

namespace queen::cli {
namespace {

std::atomic<bool> is_interrupted{false};

extern "C" void on_interrupt(int) {
    is_interrupted.store(true);
    std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

bool is_given(const BenchOptions& options, std::string_view flag) {
    return std::find(options.given.begin(), options.given.end(), flag) != options.given.end();
}

/// The workload options: the profile's values first, then the flags given on the command line.
queen::Result<bench::WorkloadOptions> resolve(const BenchOptions& options, std::string& profile,
                                              bench::Goal& goal) {
    bench::WorkloadOptions w;
    std::string workload = options.workload;
    bool pop_partitions_from_profile = false;
    if (!options.profile.empty()) {
        QUEEN_TRY(auto profiles, bench::load_profiles(options.profiles_file));
        QUEEN_TRY(auto p, bench::find_profile(profiles, options.profile));
        if (!workload.empty() && workload != bench::to_string(p.workload)) {
            return queen::Error{queen::Errc::invalid_argument,
                                "profile " + p.name + " is a " +
                                    std::string(bench::to_string(p.workload)) + " workload, not " +
                                    workload};
        }
        workload = std::string(bench::to_string(p.workload));
        profile = p.name;
        goal = p.goal;
        w.producers = p.producers.value_or(w.producers);
        w.consumers = p.consumers.value_or(w.consumers);
        w.batch = p.batch.value_or(w.batch);
        w.size_bytes = p.size_bytes.value_or(w.size_bytes);
        w.partitions = p.partitions.value_or(w.partitions);
        w.pop_partitions = p.pop_partitions.value_or(w.pop_partitions);
        pop_partitions_from_profile = p.pop_partitions.has_value();
        w.messages = static_cast<std::uint64_t>(std::max<std::int64_t>(p.messages.value_or(0), 0));
        w.duration_s = p.duration_s.value_or(w.duration_s);
        w.rate_msgs_per_s = p.rate_msgs_per_s.value_or(w.rate_msgs_per_s);
        w.consumer_group = p.consumer_group.value_or(w.consumer_group);
        w.is_pipelined = p.is_pipelined.value_or(w.is_pipelined);
    }
    QUEEN_TRY(w.workload, bench::parse_workload(workload));
    w.queue = options.queue;
    const auto take = [&options](std::string_view flag, auto& target, const auto& value) {
        if (is_given(options, flag)) {
            target = value;
        }
    };
    take("--producers", w.producers, options.producers);
    take("--consumers", w.consumers, options.consumers);
    take("--driver-threads", w.driver_threads, options.driver_threads);
    take("--batch", w.batch, options.batch);
    take("--size", w.size_bytes, options.size_bytes);
    take("--partitions", w.partitions, options.partitions);
    take("--pop-partitions", w.pop_partitions, options.pop_partitions);
    take("--consumer-group", w.consumer_group, options.consumer_group);
    take("--pipeline", w.is_pipelined, options.pipeline);
    if (is_given(options, "--steps")) {
        QUEEN_TRY(w.steps, bench::parse_steps(options.steps));
    }
    take("--messages", w.messages, options.messages);
    take("--duration", w.duration_s, options.duration_s);
    take("--rate", w.rate_msgs_per_s, options.rate_msgs_per_s);
    take("--window-ms", w.window_ms, options.window_ms);
    take("--verify", w.is_verified, options.verify);
    if (is_given(options, "--window-ms") && w.workload != bench::Workload::stream) {
        return queen::Error{queen::Errc::invalid_argument,
                            "--window-ms applies to the stream workload only"};
    }
    if (is_given(options, "--seed") && w.workload != bench::Workload::lanes) {
        return queen::Error{queen::Errc::invalid_argument,
                            "--seed applies to the lanes workload only"};
    }
    // The library draws no randomness: a lanes run without --seed gets one here, and its
    // report's conditions print it.
    if (w.workload == bench::Workload::lanes) {
        w.seed = is_given(options, "--seed") ? options.seed : queen::random_seed();
    }
    // A stream runner claims up to 4 partitions per pop by default (StreamRunnerOptions).
    if (w.workload == bench::Workload::stream && !is_given(options, "--pop-partitions") &&
        !pop_partitions_from_profile) {
        w.pop_partitions = 4;
    }
    // A count without a duration is bounded by a generous time per phase, not by 10 s.
    if (w.messages != 0 && !is_given(options, "--duration") && options.profile.empty()) {
        w.duration_s = 600;
    }
    QUEEN_TRY(w.validate());
    return w;
}

std::string with_commas(std::uint64_t value) {
    std::string digits = std::to_string(value);
    for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) {
        digits.insert(static_cast<std::size_t>(i), ",");
    }
    return digits;
}

/// Prints one progress line per second to stderr until `is_done`: rewritten in place on a
/// terminal, plain lines otherwise.
void show_progress(const bench::Progress& progress, const std::atomic<bool>& is_done,
                   bench::Progress& control) {
    const bool is_tty = isatty(STDERR_FILENO) != 0;
    const auto& clock = queen::SystemClock::instance();
    const std::int64_t start_ns = clock.monotonic_ns();
    std::int64_t last_ns = start_ns;
    std::uint64_t last_produced = 0;
    std::uint64_t last_consumed = 0;
    std::int64_t next_print_ns = start_ns + 1'000'000'000;
    while (!is_done.load()) {
        queen::sleep_ms(50);
        if (is_interrupted.load()) {
            control.is_stop_requested.store(true);
        }
        const std::int64_t now_ns = clock.monotonic_ns();
        if (now_ns < next_print_ns) {
            continue;
        }
        next_print_ns += 1'000'000'000;
        const std::uint64_t produced = progress.produced.load();
        const std::uint64_t consumed = progress.consumed.load();
        const double interval_s = static_cast<double>(now_ns - last_ns) / 1e9;
        // The largest latency of this second only (a stall shows where it happened).
        const std::int64_t latency_max_ns = control.latency_max_ns.exchange(0);
        char line[256];
        std::snprintf(line, sizeof line,
                      "[%6.1fs] %-5s produced %s (%.0f/s)  consumed %s (%.0f/s)  errors %llu  "
                      "max latency %.1f ms",
                      static_cast<double>(now_ns - start_ns) / 1e9, progress.phase.load(),
                      with_commas(produced).c_str(),
                      static_cast<double>(produced - last_produced) / interval_s,
                      with_commas(consumed).c_str(),
                      static_cast<double>(consumed - last_consumed) / interval_s,
                      static_cast<unsigned long long>(progress.errors.load()),
                      static_cast<double>(latency_max_ns) / 1e6);
        if (is_tty) {
            std::cerr << "\r" << line << "\x1b[K" << std::flush;
        } else {
            std::cerr << line << "\n" << std::flush;
        }
        last_ns = now_ns;
        last_produced = produced;
        last_consumed = consumed;
    }
    if (is_tty) {
        std::cerr << "\n";
    }
}

/// Sleeps until CLOCK_MONOTONIC (SystemClock::monotonic_ns()) reaches `due_ns`.
void wait_until_monotonic_ns(std::int64_t due_ns) {
    timespec due{};
    due.tv_sec = static_cast<time_t>(due_ns / 1'000'000'000);
    due.tv_nsec = static_cast<long>(due_ns % 1'000'000'000);
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, nullptr) == EINTR) {
    }
}

/// A fact about the server, < 0 when unknown: read from /proc/<pid> by `read_proc` when the
/// server runs here (--server-pid), else the sum of the Prometheus samples `names`.
template <class ReadProc>
double server_fact(client::Client& client, int server_pid, ReadProc read_proc,
                   std::initializer_list<std::string_view> names) {
    if (server_pid > 0) {
        auto value = read_proc(server_pid);
        return value ? static_cast<double>(*value) : -1;
    }
    auto text = client.get_json("/metrics/prometheus");
    if (!text) {
        return -1;
    }
    double sum = 0;
    for (const std::string_view name : names) {
        const auto sample = bench::find_prometheus_sample(*text, name);
        if (!sample) {
            return -1;
        }
        sum += *sample;
    }
    return sum;
}

std::int64_t server_rss_bytes(client::Client& client, int server_pid) {
    return static_cast<std::int64_t>(server_fact(client, server_pid, bench::read_process_rss_bytes,
                                                 {"queen_process_resident_memory_bytes"}));
}

/// The server's CPU time so far in microseconds (user + system); < 0 unknown.
double server_cpu_us(client::Client& client, int server_pid) {
    return server_fact(
        client, server_pid, bench::read_process_cpu_us,
        {"queen_cpu_user_microseconds_total", "queen_cpu_system_microseconds_total"});
}

}  // namespace

namespace {

/// One workload run with its report printed; the report, or the exit code of a failure.
std::variant<bench::Report, int> run_one(const BenchOptions& options) {
    std::string profile;
    bench::Goal goal;
    auto resolved = resolve(options, profile, goal);
    if (!resolved) {
        std::cerr << "queen bench: " << resolved.error().message() << "\n";
        return exit_usage;
    }
    bench::WorkloadOptions workload = std::move(*resolved);
    auto endpoint = client::parse_url(options.url);
    if (!endpoint) {
        std::cerr << "queen bench: " << endpoint.error().message() << "\n";
        return exit_usage;
    }
    auto tls = tls_options_of(options.tls, *endpoint, "queen bench");
    if (!tls) {
        std::cerr << "queen bench: " << tls.error().message() << "\n";
        return exit_usage;
    }
    client::ClientOptions client_options;
    client_options.endpoint = *endpoint;
    client_options.bearer_token = options.token;  // every connection of the run sends it
    // And the TLS options: the workload's multiplexers, the server facts and the stream runners'
    // clients all take the client's connection options.
    client_options.connection.tls = std::move(*tls);
    // Setup only (queue reset, seed pushes): the workload's connections are the driver's own.
    client_options.connections_max = 2;
    client_options.is_payload_validated = false;  // the bench builds valid JSON itself
    // Skip the per-request liveness poll() on connections that answered within the last second
    // (the server keeps idle connections for a minute): one syscall less per request.
    client_options.connection.idle_check_after_ms = 1'000;
    client_options.id_seed = static_cast<std::uint64_t>(getpid());
    client::Client client{client_options};

    auto health = client.health();
    if (!health) {
        std::cerr << "queen bench: cannot reach " << options.url << ": " << health.error().message()
                  << "\n";
        // A certificate that does not verify stays so: not worth a retry.
        return health.error().is(client::Errc::tls_failed) ? exit_failed : exit_retryable;
    }
    const auto facts = bench::parse_health(health->json);
    workload.wait_until_ns = wait_until_monotonic_ns;
    workload.server_rss_bytes = [&client, &options] {
        return server_rss_bytes(client, options.server_pid);
    };
    workload.server_cpu_us = [&client, &options] {
        return server_cpu_us(client, options.server_pid);
    };

    bench::Progress progress;
    std::atomic<bool> is_done{false};
    is_interrupted.store(false);
    std::signal(SIGINT, on_interrupt);
    std::thread reporter([&] { show_progress(progress, is_done, progress); });
    auto report = bench::run_workload(client, workload, queen::SystemClock::instance(), progress);
    is_done.store(true);
    reporter.join();
    std::signal(SIGINT, SIG_DFL);
    if (!report) {
        std::cerr << "queen bench: " << report.error().message() << "\n";
        return exit_failed;
    }
    report->profile = profile;
    report->goal = goal;
    bench::Conditions& c = report->conditions;
    c.url = options.url;
    c.server_version = facts ? facts->version : std::string();
    c.durability = options.durability;
    c.cores = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
    c.load_average_1m = bench::read_load_average_1m().value_or(-1);
    c.server_rss_bytes = server_rss_bytes(client, options.server_pid);
    if (options.json) {
        std::cout << bench::format_json(*report) << "\n";
    } else {
        std::cout << bench::format_table(*report);
    }
    return std::move(*report);
}

}  // namespace

namespace {

/// A run without errors whose check (if it has one) passed.
bool is_clean(const bench::Report& report) {
    return report.errors == 0 && report.check_passed.value_or(true);
}

}  // namespace

int run_bench_workload(const BenchOptions& options) {
    // `--steps a,b`: the transaction workload once per steps, back to back against the same
    // broker, then how the first compares with each other (the one call against four requests,
    // measured in one run).
    std::vector<std::string> steps;
    for (std::size_t from = 0; from <= options.steps.size();) {
        const std::size_t comma = std::min(options.steps.find(',', from), options.steps.size());
        steps.push_back(options.steps.substr(from, comma - from));
        from = comma + 1;
    }
    if (steps.size() == 1) {
        const auto ran = run_one(options);
        if (const int* code = std::get_if<int>(&ran)) {
            return *code;
        }
        return is_clean(std::get<bench::Report>(ran)) ? exit_ok : exit_failed;
    }
    if (options.workload != "transaction") {
        std::cerr << "queen bench: several --steps apply to the transaction workload only\n";
        return exit_usage;
    }
    for (const std::string& each : steps) {
        if (auto parsed = bench::parse_steps(each); !parsed) {
            std::cerr << "queen bench: " << parsed.error().message() << "\n";
            return exit_usage;
        }
    }
    std::vector<bench::Report> reports;
    reports.reserve(steps.size());
    for (const std::string& each : steps) {
        BenchOptions one = options;
        one.steps = each;
        auto ran = run_one(one);
        if (const int* code = std::get_if<int>(&ran)) {
            return *code;
        }
        reports.push_back(std::move(std::get<bench::Report>(ran)));
    }
    std::vector<bench::NamedReport> runs;
    for (std::size_t i = 0; i < steps.size(); ++i) {
        runs.push_back({steps[i], &reports[i]});
    }
    std::cout << bench::format_comparison(runs, options.json);
    return std::all_of(reports.begin(), reports.end(), is_clean) ? exit_ok : exit_failed;
}

}  // namespace queen::cli
