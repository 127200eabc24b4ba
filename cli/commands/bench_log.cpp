// cli/commands/bench_log.cpp — `queen bench log`: append throughput of the log with group commit
// (concurrent appenders, one fdatasync per group), fdatasync and acknowledgement latencies.
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "commands/bench.hpp"
#include "exit_codes.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/rng.hpp"
#include "queen/log/log.hpp"

namespace queen::cli {
namespace {

constexpr long tmpfs_magic = 0x01021994;  // TMPFS_MAGIC from linux/magic.h

double ms(std::uint64_t ns) {
    return static_cast<double>(ns) / 1e6;
}

}  // namespace

int run_bench_log(const BenchLogOptions& options) {
    if (options.appenders < 1 || options.record_size < 1) {
        std::cerr << "queen bench log: --appenders and --size must be at least 1\n";
        return exit_usage;
    }
    std::error_code error;
    std::filesystem::create_directories(options.dir, error);
    if (error) {
        std::cerr << "queen bench log: cannot create " << options.dir.string() << ": "
                  << error.message() << "\n";
        return exit_failed;
    }
    struct statfs info {};
    if (::statfs(options.dir.c_str(), &info) != 0) {
        std::cerr << "queen bench log: statfs " << options.dir.string() << " failed\n";
        return exit_failed;
    }
    const bool is_tmpfs = static_cast<long>(info.f_type) == tmpfs_magic;
    if (is_tmpfs && !options.allow_tmpfs) {
        std::cerr << "queen bench log: " << options.dir.string()
                  << " is on tmpfs, where fdatasync does nothing; the numbers would be "
                     "meaningless. Use a directory on disk, or --allow-tmpfs.\n";
        return exit_usage;
    }
    // A fresh log directory per run, removed afterwards.
    const auto run_dir = options.dir / ("bench-log-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(random_seed() % 1'000'000));
    log::Options log_options;
    log_options.record_size_bytes_max = std::max<std::uint32_t>(
        log_options.record_size_bytes_max, static_cast<std::uint32_t>(options.record_size));
    log_options.pending_bytes_max =
        std::max<std::uint64_t>(log_options.pending_bytes_max, 4 * (options.record_size + 64));
    auto opened = log::Log::open(run_dir, log_options);
    if (!opened) {
        std::cerr << "queen bench log: " << opened.error().message() << "\n";
        return exit_failed;
    }
    log::Log& log = **opened;
    const Bytes payload(options.record_size, 0x5a);
    const log::SyncStats stats_before = log.sync_stats();

    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> claimed{0};
    std::atomic<std::uint64_t> completed{0};
    std::mutex failure_mutex;
    std::optional<Error> failure;
    std::mutex latency_mutex;
    log::SyncStats ack_latency;  // reuses the histogram: append call -> durable
    const auto started = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < options.appenders; ++t) {
        threads.emplace_back([&] {
            log::SyncStats local;
            while (!stop.load(std::memory_order_relaxed)) {
                if (options.records != 0 && claimed.fetch_add(1) >= options.records) {
                    break;
                }
                const auto begin = std::chrono::steady_clock::now();
                auto ticket = log.append_next(Term{1}, 0, payload);
                Status status = ticket ? log.wait_durable(*ticket) : Status{ticket.error()};
                if (!status) {
                    std::lock_guard lock(failure_mutex);
                    failure = status.error();
                    stop = true;
                    break;
                }
                const auto ns =
                    static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                   std::chrono::steady_clock::now() - begin)
                                                   .count());
                ++local.latency_buckets[log::SyncStats::bucket_of(ns)];
                local.latency_ns_max = std::max(local.latency_ns_max, ns);
                completed.fetch_add(1, std::memory_order_relaxed);
            }
            std::lock_guard lock(latency_mutex);
            for (std::size_t b = 0; b < log::SyncStats::bucket_count; ++b) {
                ack_latency.latency_buckets[b] += local.latency_buckets[b];
            }
            ack_latency.latency_ns_max = std::max(ack_latency.latency_ns_max, local.latency_ns_max);
        });
    }
    if (options.records == 0) {
        const auto deadline = started + std::chrono::duration<double>(options.duration_s);
        while (!stop.load() && std::chrono::steady_clock::now() < deadline) {
            sleep_ms(10);
        }
        stop = true;
    }
    for (auto& thread : threads) {
        thread.join();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const log::SyncStats stats = log.sync_stats();
    (void)log.close();
    opened->reset();
    std::filesystem::remove_all(run_dir, error);

    if (failure) {
        std::cerr << "queen bench log: " << failure->message() << "\n";
        return exit_failed;
    }
    const std::uint64_t records = completed.load();
    const std::uint64_t syncs = stats.sync_count - stats_before.sync_count;
    const std::uint64_t groups = stats.group_count - stats_before.group_count;
    log::SyncStats sync_window = stats;  // the histogram since open (open does one or two syncs)
    const double records_per_s = static_cast<double>(records) / seconds;
    const double payload_mb_per_s =
        static_cast<double>(records * options.record_size) / seconds / 1e6;
    const double disk_mb_per_s =
        static_cast<double>(stats.bytes_synced - stats_before.bytes_synced) / seconds / 1e6;
    const double records_per_group =
        groups == 0 ? 0.0 : static_cast<double>(records) / static_cast<double>(groups);

    if (options.json) {
        nlohmann::json out{
            {"workload", "log"},
            {"dir", options.dir.string()},
            {"tmpfs", is_tmpfs},
            {"appenders", options.appenders},
            {"record_size_bytes", options.record_size},
            {"seconds", seconds},
            {"records", records},
            {"records_per_s", records_per_s},
            {"payload_mb_per_s", payload_mb_per_s},
            {"disk_mb_per_s", disk_mb_per_s},
            {"fdatasync_count", syncs},
            {"groups", groups},
            {"records_per_group", records_per_group},
            {"fdatasync_ms_p50", ms(sync_window.latency_ns_quantile(0.50))},
            {"fdatasync_ms_p99", ms(sync_window.latency_ns_quantile(0.99))},
            {"fdatasync_ms_max", ms(sync_window.latency_ns_max)},
            {"ack_ms_p50", ms(ack_latency.latency_ns_quantile(0.50))},
            {"ack_ms_p99", ms(ack_latency.latency_ns_quantile(0.99))},
            {"ack_ms_max", ms(ack_latency.latency_ns_max)},
        };
        std::cout << out.dump(2) << "\n";
    } else {
        std::printf(
            "bench log: %d appenders, %zu-byte records, %.2f s%s\n"
            "  records        %llu (%.0f records/s)\n"
            "  throughput     %.2f MB/s payload, %.2f MB/s written with headers\n"
            "  fdatasync      %llu calls, %llu groups, %.1f records per group\n"
            "  fdatasync ms   p50 %.3f  p99 %.3f  max %.3f\n"
            "  append->durable ms  p50 %.3f  p99 %.3f  max %.3f\n",
            options.appenders, options.record_size, seconds, is_tmpfs ? " (tmpfs!)" : "",
            static_cast<unsigned long long>(records), records_per_s, payload_mb_per_s,
            disk_mb_per_s, static_cast<unsigned long long>(syncs),
            static_cast<unsigned long long>(groups), records_per_group,
            ms(sync_window.latency_ns_quantile(0.50)), ms(sync_window.latency_ns_quantile(0.99)),
            ms(sync_window.latency_ns_max), ms(ack_latency.latency_ns_quantile(0.50)),
            ms(ack_latency.latency_ns_quantile(0.99)), ms(ack_latency.latency_ns_max));
    }
    return exit_ok;
}

}  // namespace queen::cli
