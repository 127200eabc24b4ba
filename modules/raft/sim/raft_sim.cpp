// modules/raft/sim/raft_sim.cpp — the simulator's command line: run seeds for a time budget (CI,
// soak), replay one seed with a full trace, or require a failure (mutation builds).
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <optional>
#include <string>

#include "queen/core/rng.hpp"
#include "simulation.hpp"

namespace {

struct Args {
    std::uint64_t budget_ms = 10000;
    std::optional<std::uint64_t> seed;
    std::optional<std::uint64_t> seeds_from;  // unset: a random range (soak runs)
    std::uint64_t seeds_max = UINT64_MAX;
    std::uint32_t nodes = 0;  // 0: alternate 3 and 5 by seed
    bool trace = false;
    bool expect_failure = false;
    bool damage = false;
};

int usage(const char* why) {
    std::cerr << "raft_sim: " << why << "\n"
              << "usage: raft_sim [--budget-ms N] [--seed S | --seeds-from S|random] [--seeds N]\n"
              << "                [--nodes 3|5] [--trace] [--expect-failure] [--damage]\n"
              << "  QUEEN_SIM_BUDGET_MS overrides --budget-ms; QUEEN_SEED sets --seed.\n";
    return 2;
}

std::string mutation_name() {
#if defined(QUEEN_RAFT_MUTATION_SKIP_VOTE_FSYNC)
    return "skip_vote_fsync";
#elif defined(QUEEN_RAFT_MUTATION_ACK_BEFORE_MAJORITY)
    return "ack_before_majority";
#elif defined(QUEEN_RAFT_MUTATION_FORGET_VOTE)
    return "forget_vote";
#elif defined(QUEEN_RAFT_MUTATION_IGNORE_RECOVERY)
    return "ignore_recovery";
#else
    return "none";
#endif
}

}  // namespace

int main(int argc, char** argv) {
    Args args;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::uint64_t {
            if (i + 1 >= argc) {
                std::exit(usage(("missing value for " + arg).c_str()));
            }
            return std::strtoull(argv[++i], nullptr, 10);
        };
        if (arg == "--budget-ms") {
            args.budget_ms = value();
        } else if (arg == "--seed") {
            args.seed = value();
        } else if (arg == "--seeds-from") {
            if (i + 1 < argc && std::string(argv[i + 1]) == "random") {
                args.seeds_from.reset();
                i += 1;
            } else {
                args.seeds_from = value();
            }
        } else if (arg == "--seeds") {
            args.seeds_max = value();
        } else if (arg == "--nodes") {
            args.nodes = static_cast<std::uint32_t>(value());
            if (args.nodes != 3 && args.nodes != 5) {
                return usage("--nodes must be 3 or 5");
            }
        } else if (arg == "--trace") {
            args.trace = true;
        } else if (arg == "--expect-failure") {
            args.expect_failure = true;
        } else if (arg == "--damage") {
            args.damage = true;
        } else {
            return usage(("unknown argument " + arg).c_str());
        }
    }
    if (const char* env = std::getenv("QUEEN_SIM_BUDGET_MS")) {
        args.budget_ms = std::strtoull(env, nullptr, 10);
    }
    if (const char* env = std::getenv("QUEEN_SEED"); env != nullptr && !args.seed) {
        args.seed = std::strtoull(env, nullptr, 10);
    }

    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    const std::clock_t cpu_started = std::clock();
    auto elapsed_ms = [&] {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
    };
    std::uint64_t seeds = 0;
    std::uint64_t events = 0;
    std::uint64_t committed = 0;
    std::uint64_t acked = 0;
    std::uint64_t reads = 0;
    std::uint64_t leaders = 0;
    std::uint64_t crashes = 0;
    std::uint64_t snapshots = 0;
    std::uint64_t conf_changes = 0;
    std::uint64_t transfers = 0;
    std::uint64_t damages = 0;
    std::uint64_t quiesces = 0;
    std::uint64_t wakes = 0;
    std::uint64_t from_source = 0;
    std::uint64_t stalled = 0;
    // A random range starts above 2^32, disjoint from the fixed ranges CI starts at 1.
    const std::uint64_t first =
        args.seed.value_or(args.seeds_from.value_or((queen::random_seed() >> 20) | (1ULL << 32)));
    const std::uint64_t count = args.seed ? 1 : args.seeds_max;
    std::cout << "raft_sim: mutation=" << mutation_name() << " seeds from " << first
              << " budget_ms=" << args.budget_ms << std::endl;
    for (std::uint64_t k = 0; k < count; ++k) {
        if (!args.seed && elapsed_ms() >= args.budget_ms) {
            break;
        }
        queen::raft::sim::SimConfig config;
        config.seed = first + k;
        config.nodes = args.nodes != 0 ? args.nodes : (config.seed % 2 == 0 ? 5 : 3);
        config.is_damage = args.damage;
        if (args.trace) {
            config.trace = [](const std::string& line) { std::cout << line << "\n"; };
        }
        const auto result = queen::raft::sim::run_simulation(config);
        seeds += 1;
        events += result.events;
        committed += result.committed;
        acked += result.acked_writes;
        reads += result.reads;
        leaders += result.leaders;
        crashes += result.crashes;
        snapshots += result.snapshots_installed;
        conf_changes += result.conf_changes;
        transfers += result.transfers;
        damages += result.damages;
        quiesces += result.quiesces;
        wakes += result.wakes;
        from_source += result.entries_from_source;
        stalled += result.is_stalled ? 1 : 0;
        if (args.seed) {
            std::cout << "seed=" << config.seed << " nodes=" << config.nodes
                      << " events=" << result.events << " committed=" << result.committed
                      << " acked=" << result.acked_writes << " reads=" << result.reads
                      << " leaders=" << result.leaders << " crashes=" << result.crashes
                      << " snapshots=" << result.snapshots_installed
                      << " conf_changes=" << result.conf_changes
                      << " transfers=" << result.transfers << " quiesces=" << result.quiesces
                      << " wakes=" << result.wakes
                      << " entries_from_source=" << result.entries_from_source
                      << " trace_hash=" << std::hex << result.trace_hash << std::dec << "\n";
        }
        if (!result.is_ok) {
            std::cout << "FAIL seed=" << config.seed << " nodes=" << config.nodes << ": "
                      << result.failure << "\n"
                      << "replay: " << argv[0] << " --seed " << config.seed << " --nodes "
                      << config.nodes << " --trace" << std::endl;
            if (args.expect_failure) {
                std::cout << "raft_sim: mutation " << mutation_name() << " caught after " << seeds
                          << " seeds, " << elapsed_ms() << " ms" << std::endl;
                return 0;
            }
            return 1;
        }
    }
    const std::uint64_t ms = std::max<std::uint64_t>(elapsed_ms(), 1);
    std::cout << "raft_sim: seeds=" << seeds << " events=" << events << " committed=" << committed
              << " acked_writes=" << acked << " reads=" << reads << " leaders=" << leaders
              << " crashes=" << crashes << " snapshots=" << snapshots
              << " conf_changes=" << conf_changes << " timeout_now=" << transfers
              << " damages=" << damages << " quiesces=" << quiesces << " wakes=" << wakes
              << " entries_from_source=" << from_source << " stalled=" << stalled
              << " elapsed_ms=" << ms << " events_per_s=" << events * 1000 / ms
              << " seeds_per_min=" << seeds * 60000 / ms;
    // CPU time too: on a shared machine wall time undercounts what one core can do.
    const auto cpu_ms = std::max<std::uint64_t>(
        static_cast<std::uint64_t>(1000.0 * static_cast<double>(std::clock() - cpu_started) /
                                   static_cast<double>(CLOCKS_PER_SEC)),
        1);
    std::cout << " cpu_ms=" << cpu_ms << " events_per_cpu_s=" << events * 1000 / cpu_ms
              << " seeds_per_cpu_min=" << seeds * 60000 / cpu_ms << std::endl;
    if (args.expect_failure) {
        std::cout << "raft_sim: mutation " << mutation_name() << " NOT caught within budget"
                  << std::endl;
        return 1;
    }
    return 0;
}
