// modules/raft/src/progress.hpp — progress tracking: the leader's view of one peer (match, next,
// probe/replicate/snapshot flow control with an inflight window; etcd tracker.Progress).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>

#include "queen/core/ids.hpp"

namespace queen::raft::detail {

enum class ProgressState : std::uint8_t { probe, replicate, snapshot };

// The leader's view of one peer (etcd tracker.Progress, simplified).
struct Progress {
    LogIndex match;
    LogIndex next;
    ProgressState state = ProgressState::probe;
    bool is_probe_sent = false;  // probe/snapshot: one message in flight, wait for an answer
    bool is_learner = false;
    bool is_recent_active = false;
    std::deque<LogIndex> inflights;  // replicate: last index of each unacknowledged append
    LogIndex pending_snapshot;       // snapshot: index of the snapshot being sent
    LogIndex recovery_index;         // the node said it is recovering: our last index then
    LogIndex commit;                 // the highest commit the node reported (quiescence)
    std::uint64_t snapshot_offset = 0;

    void become_probe() {
        // After a snapshot, continue after it; otherwise retry right after the match.
        if (state == ProgressState::snapshot) {
            next = LogIndex{std::max(match.value(), pending_snapshot.value()) + 1};
        } else {
            next = match.next();
        }
        state = ProgressState::probe;
        is_probe_sent = false;
        inflights.clear();
        pending_snapshot = LogIndex{0};
        snapshot_offset = 0;
    }
    void become_replicate() {
        state = ProgressState::replicate;
        next = match.next();
        is_probe_sent = false;
        inflights.clear();
    }
    void become_snapshot(LogIndex snapshot_index) {
        state = ProgressState::snapshot;
        is_probe_sent = false;
        inflights.clear();
        pending_snapshot = snapshot_index;
        snapshot_offset = 0;
    }
    // The node lost part of its durable log (it says it is recovering): what we knew it holds
    // is void. Probe again after our last index; its rejection's hint finds where it ends.
    void forget_match(LogIndex last) {
        match = LogIndex{0};
        commit = LogIndex{0};
        next = last.next();
        state = ProgressState::probe;
        is_probe_sent = false;
        inflights.clear();
        pending_snapshot = LogIndex{0};
        snapshot_offset = 0;
    }
    // A successful append response up to `index`. Returns true if match moved.
    bool maybe_update(LogIndex index) {
        bool updated = false;
        if (match < index) {
            match = index;
            updated = true;
            is_probe_sent = false;
        }
        if (next < index.next()) {
            next = index.next();
        }
        while (!inflights.empty() && inflights.front() <= index) {
            inflights.pop_front();
        }
        return updated;
    }
    // A rejection of the append after `rejected`; `hint` is where the follower may match.
    bool maybe_decrease(LogIndex rejected, LogIndex hint) {
        if (state == ProgressState::replicate) {
            if (rejected <= match) {
                return false;  // stale
            }
            next = match.next();
            return true;
        }
        if (next.prev() != rejected) {
            return false;  // stale: not the probe we are waiting for
        }
        next = LogIndex{std::max(std::min(rejected.value(), hint.value() + 1), match.value() + 1)};
        is_probe_sent = false;
        return true;
    }
    [[nodiscard]] bool is_paused(std::uint32_t inflight_max) const {
        switch (state) {
            case ProgressState::probe: return is_probe_sent;
            case ProgressState::replicate: return inflights.size() >= inflight_max;
            case ProgressState::snapshot: return true;
        }
        return true;
    }
};

inline const char* state_name(ProgressState state) {
    switch (state) {
        case ProgressState::probe: return "probe";
        case ProgressState::replicate: return "replicate";
        case ProgressState::snapshot: return "snapshot";
    }
    return "?";
}

}  // namespace queen::raft::detail
