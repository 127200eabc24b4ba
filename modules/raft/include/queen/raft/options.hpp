// queen/raft/options.hpp — knobs of one raft group member, with defaults and validate().
#pragma once

#include <cstdint>

#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"

namespace queen::raft {

/// Time is counted in ticks: the caller calls RawNode::tick() at a fixed interval
/// (e.g. every 10 ms); raft never reads a clock.
struct Options {
    NodeId id;                                  ///< this node; never 0
    std::uint32_t election_ticks = 10;          ///< follower timeout is [n, 2n) ticks
    std::uint32_t heartbeat_ticks = 1;          ///< leader heartbeat period; < election_ticks
    bool pre_vote = true;                       ///< campaign only if a quorum would vote
    bool check_quorum = true;                   ///< leader steps down without an active quorum
    bool read_lease_based = false;              ///< lease reads; requires check_quorum
    std::uint32_t inflight_appends_max = 64;    ///< per follower, in replicate state
    std::uint32_t append_entries_max = 256;     ///< entries per append message
    std::uint64_t append_bytes_max = 1u << 20;  ///< data bytes per append message (>= 1 entry)
    std::uint64_t uncommitted_bytes_max = 64u << 20;  ///< leader refuses proposals beyond this
    std::uint64_t apply_bytes_max = 16u << 20;  ///< committed entry bytes per Ready (>= 1 entry)
    std::uint64_t snapshot_chunk_bytes_max = 1u << 20;  ///< InstallSnapshot chunk size
    std::uint64_t snapshot_bytes_max = 1ull << 32;      ///< largest snapshot a follower accepts
    std::uint32_t pending_reads_max = 4096;  ///< ReadIndex requests waiting on the leader

    /// Checks the ranges above. Errors: queen::Errc::invalid_argument, naming the field.
    [[nodiscard]] queen::Status validate() const;
};

}  // namespace queen::raft
