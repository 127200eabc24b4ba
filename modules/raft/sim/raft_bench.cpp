// modules/raft/sim/raft_bench.cpp — the raft core's own cost: proposals/s through a 3-node
// in-memory cluster (no disk, instant network), with batching. Not a test: prints numbers.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "queen/core/logger.hpp"
#include "queen/core/rng.hpp"
#include "queen/raft/codec.hpp"
#include "queen/raft/raw_node.hpp"

using namespace queen;
using namespace queen::raft;

namespace {

struct Member {
    std::unique_ptr<Rng> rng;
    std::optional<RawNode> raw;
    std::uint64_t applied_entries = 0;
};

}  // namespace

int main(int argc, char** argv) {
    std::uint64_t batch = 256;
    std::uint64_t payload_bytes = 64;
    double seconds = 3.0;
    bool use_codec = true;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--batch" && i + 1 < argc) {
            batch = std::strtoull(argv[++i], nullptr, 10);
        } else if (arg == "--payload-bytes" && i + 1 < argc) {
            payload_bytes = std::strtoull(argv[++i], nullptr, 10);
        } else if (arg == "--seconds" && i + 1 < argc) {
            seconds = std::strtod(argv[++i], nullptr);
        } else if (arg == "--no-codec") {
            use_codec = false;
        } else {
            std::cerr << "usage: raft_bench [--batch N] [--payload-bytes N] [--seconds S] "
                         "[--no-codec]\n";
            return 2;
        }
    }
    const std::vector<NodeId> voters{NodeId{1}, NodeId{2}, NodeId{3}};
    std::vector<Member> members(3);
    for (std::size_t i = 0; i < members.size(); ++i) {
        members[i].rng = std::make_unique<Rng>(i + 1);
        Options options;
        options.id = voters[i];
        options.inflight_appends_max = 256;
        options.append_entries_max = 1024;
        auto opened = RawNode::open(options, bootstrap_state(voters), *members[i].rng,
                                    NullLogger::instance());
        if (!opened) {
            std::cerr << opened.error().message() << "\n";
            return 1;
        }
        members[i].raw.emplace(std::move(opened).value());
    }
    std::deque<Message> network;
    std::uint64_t messages = 0;
    std::uint64_t wire_bytes = 0;
    auto route = [&](Message& m) {
        messages += 1;
        if (use_codec) {
            Bytes wire;
            encode_message(m, wire);
            wire_bytes += wire.size();
            network.push_back(decode_message(wire).value());
        } else {
            network.push_back(std::move(m));
        }
    };
    // One round: every node processes its Ready (persist is a no-op), then messages are delivered.
    auto round = [&] {
        for (Member& member : members) {
            while (member.raw->has_ready()) {
                Ready rd = member.raw->ready();
                for (Message& m : rd.messages) {
                    route(m);
                }
                for (Message& m : rd.messages_after_persist) {
                    route(m);
                }
                member.applied_entries += rd.committed_entries.size();
                member.raw->advance();
                // The application snapshots now and then, which bounds the in-memory log.
                const LogIndex applied = member.raw->status().applied;
                if (applied.value() >= member.raw->snapshot().meta.index.value() + 65536) {
                    (void)member.raw->compact(applied, Bytes{});
                }
            }
        }
        std::deque<Message> in_flight;
        in_flight.swap(network);
        for (const Message& m : in_flight) {
            members[m.to.value() - 1].raw->step(m);
        }
    };
    members[0].raw->campaign();
    for (int i = 0; i < 20; ++i) {
        round();
    }
    if (members[0].raw->status().role != Role::leader) {
        std::cerr << "raft_bench: node 1 did not become leader\n";
        return 1;
    }
    const Bytes payload(payload_bytes, 0x5a);
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const std::clock_t cpu_start = std::clock();
    const std::uint64_t applied_before = members[0].applied_entries;
    std::uint64_t proposed = 0;
    std::uint64_t rounds = 0;
    while (true) {
        for (std::uint64_t k = 0; k < batch; ++k) {
            if (members[0].raw->propose(payload).has_value()) {
                proposed += 1;
            }
        }
        round();
        rounds += 1;
        if ((rounds & 63) == 0 &&
            std::chrono::duration<double>(Clock::now() - start).count() >= seconds) {
            break;
        }
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    // CPU time too: on a shared machine wall time undercounts what one core can do.
    const double cpu_seconds =
        static_cast<double>(std::clock() - cpu_start) / static_cast<double>(CLOCKS_PER_SEC);
    const std::uint64_t committed = members[0].applied_entries - applied_before;
    std::cout << "raft_bench: nodes=3 batch=" << batch << " payload_bytes=" << payload_bytes
              << " codec=" << (use_codec ? "on" : "off") << " seconds=" << elapsed
              << " proposed=" << proposed << " committed=" << committed
              << " cpu_seconds=" << cpu_seconds
              << " proposals_per_s=" << static_cast<std::uint64_t>(committed / elapsed)
              << " proposals_per_cpu_s=" << static_cast<std::uint64_t>(committed / cpu_seconds)
              << " messages_per_s=" << static_cast<std::uint64_t>(messages / elapsed)
              << " wire_mb_per_s=" << wire_bytes / elapsed / 1e6 << std::endl;
    return 0;
}
