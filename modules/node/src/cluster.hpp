// modules/node/src/cluster.hpp — this node's part of a cluster: the peer transport carrying
// every tenant group's raft messages, and raft's clock.
//
// One connection per node pair (net::Transport) carries the messages of every tenant's group,
// each in one application frame: tenant name length (u8), tenant name, raft message
// (raft/codec.hpp). One ticker thread ticks every attached replicator every cluster.tick_ms and
// runs the Readies the log writer's thread must not take (a follower's, which may truncate the
// log).
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "queen/core/clock.hpp"
#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"
#include "queen/net/transport.hpp"
#include "queen/node/config.hpp"
#include "queen/raft/types.hpp"

namespace queen::node::detail {

class Replicator;

/// Frame type of a raft message between two nodes.
inline constexpr std::uint8_t frame_type_raft = 16;  // net::frame_type_application

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

    /// The voters of every tenant's group (sorted node ids, this node included).
    [[nodiscard]] const std::vector<NodeId>& voters() const noexcept { return voters_; }
    [[nodiscard]] NodeId self() const noexcept { return self_; }
    [[nodiscard]] const ClusterOptions& options() const noexcept { return options_; }

    /// Routes `tenant`'s messages to `replicator` and ticks it, until detach().
    void attach(const std::string& tenant, Replicator& replicator);
    void detach(const std::string& tenant);
    /// Sends one raft message of `tenant`'s group (never blocks; a dropped message is resent by
    /// raft).
    void send(const std::string& tenant, const raft::Message& message);
    /// Asks the ticker thread to run `tenant`'s pending Readies (see Replicator).
    void wake(const std::string& tenant);
    [[nodiscard]] net::TransportStats transport_stats() const;
    /// Stops the ticker and the transport. Idempotent.
    void stop();

private:
    Cluster(const NodeConfig& config, const Clock& clock, Logger& logger);
    void on_frame(NodeId from, std::uint8_t type, ByteSpan payload);
    void run_ticker();

    ClusterOptions options_;
    const Clock& clock_;
    Logger& logger_;
    NodeId self_;
    std::vector<NodeId> voters_;
    std::unique_ptr<net::Transport> transport_;

    std::mutex mutex_;
    std::condition_variable wakeup_;
    std::map<std::string, Replicator*, std::less<>> replicators_;
    std::set<std::string> woken_;
    bool is_stopping_ = false;
    std::thread ticker_;
    Bytes scratch_;  // guarded by send_mutex_
    std::mutex send_mutex_;
};

}  // namespace queen::node::detail
