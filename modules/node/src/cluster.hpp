// modules/node/src/cluster.hpp — this node's part of a cluster: the peer transport carrying
// every tenant group's raft messages, and raft's clock.
//
// One connection per node pair (net::Transport) carries the messages of every tenant's group,
// each in one application frame: tenant name length (u8), tenant name, raft message
// (raft/codec.hpp). One ticker thread ticks every attached replicator every cluster.tick_ms and
// runs the Readies the log writer's thread must not take (a follower's, which may truncate the
// log).
//
// Idle groups go quiet (replicator.hpp, docs/raft.md section 8): the ticker lets a leader
// quiesce an idle group, ticks quiet groups only once per election timeout (for the tenant's
// on_tick housekeeping; raft ignores the tick) and keeps one liveness signal per peer node
// instead of raft's heartbeats per group: every heartbeat interval it sends each connected peer
// a node_heartbeat frame carrying this start's incarnation. A peer is believed gone when its
// connection is closed or nothing came from it for an election timeout; gone or restarted (a
// new incarnation), the ticker wakes every quiet group it is a member of, and while it is gone
// leaders of its groups do not quiesce.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "queen/api/backend.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"
#include "queen/net/transport.hpp"
#include "queen/node/config.hpp"
#include "queen/raft/types.hpp"

namespace queen::node::detail {

class Replicator;

/// Frame types between two nodes (net::frame_type_application and up):
///  raft:             u8 tenant length, tenant, raft message (raft/codec.hpp)
///  forward_request:  u64 id (LE), u8 tenant length, tenant, entry envelope (entry.hpp)
///  forward_response: u64 id (LE), u8 status (0 ok, else a queen::Errc value), then the
///                    engine's encoded result (ok) or the error's text
///  node_heartbeat:   u64 incarnation (LE): the sender's start (random, fixed for its run)
inline constexpr std::uint8_t frame_type_raft = 16;
inline constexpr std::uint8_t frame_type_forward_request = 17;
inline constexpr std::uint8_t frame_type_forward_response = 18;
inline constexpr std::uint8_t frame_type_node_heartbeat = 26;
/// Frame types whose handlers live outside the cluster:
///  key_request / key_response: the payload key handed to a node that has none
///    (set_frame_handler)
///  snapshot_request / snapshot_chunk: a follower pulls a tenant's state (snapshot.hpp); like
///    raft frames they start with the tenant (u8 length, name) and go to the tenant's
///    attach() handler
inline constexpr std::uint8_t frame_type_key_request = 19;
inline constexpr std::uint8_t frame_type_key_response = 20;
inline constexpr std::uint8_t frame_type_snapshot_request = 21;
inline constexpr std::uint8_t frame_type_snapshot_chunk = 22;

/// Counters and gauges of the cluster layer (metrics).
struct ClusterStats {
    net::TransportStats transport;
    std::uint64_t raft_messages_sent_total = 0;
    std::uint64_t raft_messages_received_total = 0;
    std::uint64_t node_heartbeats_sent_total = 0;
    std::uint64_t node_heartbeats_received_total = 0;
    /// Quiet groups woken because a member's node was believed gone or restarted.
    std::uint64_t groups_woken_total = 0;
    /// Peers believed gone (closed connection, or silent for an election timeout) or
    /// restarted (new incarnation), events.
    std::uint64_t peers_gone_total = 0;
    std::uint64_t peers_restarted_total = 0;
    /// As of the ticker's last tick.
    std::uint64_t groups = 0;
    std::uint64_t quiet_groups = 0;
    std::uint64_t peers_gone = 0;
};

class Cluster {
public:
    /// Starts the transport (listening on this node's entry of cluster.peers) and the ticker.
    /// Errors: config errors (Errc::invalid_argument), the transport's (Errc::io: the peer
    /// address cannot be bound).
    [[nodiscard]] static Result<std::unique_ptr<Cluster>> start(const NodeConfig& config,
                                                                const Clock& clock, Logger& logger);
    ~Cluster();
    Cluster(const Cluster&) = delete;
    Cluster& operator=(const Cluster&) = delete;

    /// The nodes cluster.peers names (sorted ids, this node included): the founding members,
    /// or, on a node joining a running cluster, the members it reaches first.
    [[nodiscard]] const std::vector<NodeId>& configured_nodes() const noexcept {
        return configured_nodes_;
    }
    /// The members as the cluster catalogue lists them: new peers are added to the transport
    /// (the lower id of a pair dials). A member the catalogue no longer lists stays a peer until
    /// this node restarts: groups that still include it (a tenant moving off it) need the link
    /// until their leader removed it. Any thread.
    void set_members(const std::vector<PeerAddress>& members);
    /// The peer address (IP) of `node` as this node knows it; empty when unknown. Any thread.
    [[nodiscard]] std::string peer_host(NodeId node) const;
    [[nodiscard]] const ClusterOptions& options() const noexcept { return options_; }

    /// Routes `tenant`'s messages to `replicator` and ticks it (then calls `on_tick`, which may
    /// be empty, on the ticker thread under no lock), until detach().
    /// `on_frame` (may be empty) gets the tenant's snapshot frames (after the tenant name) on
    /// the transport thread; it must not block.
    using TenantFrameHandler = std::function<void(NodeId from, std::uint8_t type, ByteSpan body)>;
    void attach(const std::string& tenant, Replicator& replicator,
                std::function<void()> on_tick = {}, TenantFrameHandler on_frame = {});
    /// Stops routing to and ticking `tenant`'s replicator; returns once the ticker no longer
    /// uses it (the replicator may then be destroyed).
    void detach(const std::string& tenant);
    /// Sends one raft message of `tenant`'s group (never blocks; a dropped message is resent by
    /// raft).
    void send(const std::string& tenant, const raft::Message& message);
    /// Sends a command (in its entry envelope) to `leader` for `tenant` and calls `done` with
    /// the leader's answer, or with Errc::timeout after cluster.forward_timeout_ms (the command
    /// may or may not have been applied: retry with a client id to be applied once).
    void forward(NodeId leader, const std::string& tenant, ByteSpan payload,
                 api::Backend::Completion done);
    /// Runs a command a peer forwarded (the server submits it to the tenant); `reply` must be
    /// called once. Set before peers can reach this node.
    using ForwardHandler = std::function<void(const std::string& tenant, Bytes payload,
                                              api::Backend::Completion reply)>;
    void set_forward_handler(ForwardHandler handler);
    /// `tenant`'s leader is no longer `leader`: its unanswered forwards fail now with
    /// Errc::timeout (outcome unknown) instead of at their deadline.
    void abandon_forwards(const std::string& tenant, NodeId leader);

    /// Handles frames of `type` (one of the types above handled outside the cluster) on the
    /// transport thread: the handler must not block. Set before peers can send them.
    using FrameHandler = std::function<void(NodeId from, ByteSpan payload)>;
    void set_frame_handler(std::uint8_t type, FrameHandler handler);
    /// Sends one frame to `to` (never blocks). False when it was dropped (unknown peer, the
    /// peer's queue full, stopped): the sender retries.
    bool send_frame(NodeId to, std::uint8_t type, ByteSpan payload);
    /// send_frame() of a tenant-routed type: the tenant's name, then `body`.
    bool send_tenant_frame(NodeId to, std::uint8_t type, const std::string& tenant, ByteSpan body);
    /// This node's id and every node of the cluster (sorted, this node included).
    [[nodiscard]] NodeId self() const noexcept { return self_; }
    /// True while an authenticated connection to `peer` is open (the transport's last
    /// connected/disconnected event). Any thread.
    [[nodiscard]] bool is_connected(NodeId peer) const;

    /// Asks the ticker thread to run `tenant`'s pending Readies (see Replicator).
    void wake(const std::string& tenant);
    /// This start's incarnation (sent in node heartbeats).
    [[nodiscard]] std::uint64_t incarnation() const noexcept { return incarnation_; }
    [[nodiscard]] ClusterStats stats() const;
    /// Stops the ticker and the transport. Idempotent.
    void stop();

private:
    Cluster(const NodeConfig& config, const Clock& clock, Logger& logger);
    void on_frame(NodeId from, std::uint8_t type, ByteSpan payload);
    void on_peer_event(const net::PeerEvent& event);
    void on_raft(NodeId from, ByteSpan payload);
    void on_tenant_frame(NodeId from, std::uint8_t type, ByteSpan payload);
    void on_forward_request(NodeId from, ByteSpan payload);
    void on_forward_response(NodeId from, ByteSpan payload);
    /// Fails the forwarded commands whose time is up (ticker).
    void expire_forwards();
    struct Forwarded;
    /// Completes every forwarded command `matches` selects with `error` (outside the lock).
    void fail_forwards(const std::function<bool(const Forwarded&)>& matches, const Error& error);
    void run_ticker();
    void on_node_heartbeat(NodeId from, ByteSpan payload);
    /// Ticker: returns the peers believed gone (sorted); `newly_gone` gets the peers that went
    /// gone or restarted since the last call, `beat_to` the connected ones (when is_beat_due).
    std::vector<NodeId> check_peers(std::vector<NodeId>& newly_gone, std::vector<NodeId>& beat_to,
                                    bool is_beat_due);

    ClusterOptions options_;
    const Clock& clock_;
    Logger& logger_;
    NodeId self_;
    std::vector<NodeId> configured_nodes_;
    std::unique_ptr<net::Transport> transport_;
    mutable std::mutex peers_mutex_;
    std::set<NodeId> connected_;               // guarded by peers_mutex_
    std::map<NodeId, PeerAddress> addresses_;  // every known member; guarded by peers_mutex_
    // Node-level liveness, by peer (guarded by peers_mutex_).
    struct Liveness {
        std::int64_t last_heard_ns = 0;  // any frame
        std::uint64_t incarnation = 0;   // 0: no node heartbeat yet
        bool is_restarted = false;       // a new incarnation the ticker has not handled
        bool is_gone = true;             // as the ticker last decided
    };
    std::map<NodeId, Liveness> liveness_;
    std::uint64_t incarnation_ = 0;
    std::atomic<std::uint64_t> raft_sent_{0};
    std::atomic<std::uint64_t> raft_received_{0};
    std::atomic<std::uint64_t> heartbeats_sent_{0};
    std::atomic<std::uint64_t> heartbeats_received_{0};
    std::atomic<std::uint64_t> groups_woken_{0};
    std::atomic<std::uint64_t> peers_gone_total_{0};
    std::atomic<std::uint64_t> peers_restarted_total_{0};
    std::atomic<std::uint64_t> groups_{0};
    std::atomic<std::uint64_t> quiet_groups_{0};
    std::atomic<std::uint64_t> peers_gone_{0};

    std::mutex mutex_;
    std::condition_variable wakeup_;
    struct Attached {
        Replicator* replicator = nullptr;
        std::function<void()> on_tick;
        TenantFrameHandler on_frame;
    };
    std::map<std::string, Attached, std::less<>> replicators_;
    std::set<std::string> woken_;
    bool is_stopping_ = false;
    bool is_ticking_ = false;  // the ticker uses attached replicators outside mutex_
    std::uint64_t round_ = 0;  // rounds the ticker started (detach() waits for one)
    std::condition_variable ticked_;
    std::thread ticker_;
    Bytes scratch_;  // guarded by send_mutex_
    std::mutex send_mutex_;

    struct Forwarded {
        std::string tenant;
        NodeId leader;
        std::int64_t deadline_ns = 0;
        api::Backend::Completion done;
    };
    std::mutex forward_mutex_;
    std::map<std::uint64_t, Forwarded> forwarded_;  // by request id
    std::uint64_t next_forward_id_ = 1;
    ForwardHandler forward_handler_;
    std::map<std::uint8_t, FrameHandler> frame_handlers_;  // guarded by forward_mutex_
};

}  // namespace queen::node::detail
