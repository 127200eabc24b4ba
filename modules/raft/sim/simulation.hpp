// modules/raft/sim/simulation.hpp — a deterministic, seeded simulation of a raft cluster over a
// faulty network and disk, checking safety invariants after every event (see docs/raft.md).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace queen::raft::sim {

struct SimConfig {
    std::uint64_t seed = 1;
    std::uint32_t nodes = 3;              ///< founding voters: 3 or 5
    std::uint64_t fault_phase_ms = 8000;  ///< simulated time with faults
    std::uint64_t heal_phase_ms = 12000;  ///< simulated time allowed to converge afterwards
    /// Storage damage at some restarts (a synced log suffix lost; the node restarts recovering).
    /// Safety is checked as always; convergence after the heal is reported (SimResult::
    /// is_stalled), not required: a recovering node abstains, and where the others cannot
    /// elect a leader without its vote the group waits (docs/raft.md, protocol-aware recovery).
    bool is_damage = false;
    /// Leaders read entries below their memory from the node's log (raft::EntrySource), which
    /// keeps some past each compaction. Unset: drawn from the seed (half of them).
    std::optional<bool> is_entry_source;
    /// Receives one line per event when set (the replay trace).
    std::function<void(const std::string&)> trace;
};

struct SimResult {
    bool is_ok = true;
    std::string failure;  ///< which invariant failed and where, when !is_ok
    std::uint64_t events = 0;
    std::uint64_t trace_hash = 0;  ///< FNV-style digest of every event: same seed, same hash
    std::uint64_t committed = 0;   ///< ledger length at the end
    std::uint64_t acked_writes = 0;
    std::uint64_t reads = 0;
    // Coverage: how much of the fault space this seed reached.
    std::uint64_t leaders = 0;  ///< distinct (term, leader) pairs
    std::uint64_t crashes = 0;
    std::uint64_t snapshots_installed = 0;  ///< InstallSnapshot completions on followers
    std::uint64_t conf_changes = 0;         ///< membership changes committed (ledger)
    std::uint64_t transfers = 0;            ///< timeout_now messages delivered
    std::uint64_t damages = 0;              ///< restarts with a damaged log (is_damage)
    std::uint64_t quiesces = 0;             ///< leaders that went quiet (seeds with quiescence on)
    std::uint64_t wakes = 0;                ///< wake() calls by the modelled node layer
    std::uint64_t entries_from_source = 0;  ///< entries leaders read from a log's EntrySource
    bool is_stalled = false;  ///< is_damage: no convergence after the heal, safety intact
};

/// Runs one seed to completion. Deterministic: the same config gives the same result.
SimResult run_simulation(const SimConfig& config);

}  // namespace queen::raft::sim
