// modules/node/src/cluster.cpp — the peer transport and raft's clock for every tenant group.
#include "cluster.hpp"

#include <algorithm>
#include <chrono>

#include "queen/core/thread_name.hpp"
#include "queen/raft/codec.hpp"
#include "replicator.hpp"

namespace queen::node::detail {

Cluster::Cluster(const NodeConfig& config, const Clock& clock, Logger& logger)
    : options_(config.cluster), clock_(clock), logger_(logger), self_(NodeId{config.node.id}) {}

Cluster::~Cluster() {
    stop();
}

Result<std::unique_ptr<Cluster>> Cluster::start(const NodeConfig& config, const Clock& clock,
                                                Logger& logger) {
    QUEEN_TRY(config.cluster.validate(config.node.id));
    auto peers = config.cluster.peer_addresses();
    if (!peers) {
        return Error{Errc::invalid_argument, peers.error().message()};
    }
    std::unique_ptr<Cluster> cluster(new Cluster(config, clock, logger));
    net::TransportOptions transport_options;
    for (const PeerAddress& peer : *peers) {
        cluster->voters_.push_back(NodeId{peer.id});
        if (peer.id == config.node.id) {
            transport_options.address = peer.host;
            transport_options.port = peer.port;
        }
    }
    std::sort(cluster->voters_.begin(), cluster->voters_.end());
    auto identity =
        net::PeerIdentity::make(config.cluster.name, cluster->self_, config.cluster.secret);
    if (!identity) {
        return Error{Errc::invalid_argument, "cluster: " + identity.error().message()};
    }
    Cluster* self = cluster.get();
    QUEEN_TRY(cluster->transport_,
              net::Transport::start(
                  std::move(*identity), transport_options,
                  [self](NodeId from, std::uint8_t type, ByteSpan payload) {
                      self->on_frame(from, type, payload);
                  },
                  [self](const net::PeerEvent& event) {
                      const char* kind = event.kind == net::PeerEvent::Kind::connected ? "connected"
                                         : event.kind == net::PeerEvent::Kind::disconnected
                                             ? "disconnected"
                                             : "refused";
                      QUEEN_LOG(
                          self->logger_,
                          event.kind == net::PeerEvent::Kind::refused ? Level::warn : Level::info,
                          "cluster.peer",
                          "event=" << kind << " peer=" << event.peer << " reason=\"" << event.reason
                                   << "\"");
                  },
                  logger));
    for (const PeerAddress& peer : *peers) {
        if (peer.id != config.node.id) {
            cluster->transport_->add_peer(NodeId{peer.id}, peer.host, peer.port);
        }
    }
    cluster->ticker_ = std::thread([self] { self->run_ticker(); });
    QUEEN_LOG(logger, Level::info, "cluster.started",
              "node=" << cluster->self_ << " peers=" << peers->size() << " listen="
                      << transport_options.address << ":" << cluster->transport_->port());
    return cluster;
}

void Cluster::attach(const std::string& tenant, Replicator& replicator) {
    std::lock_guard lock(mutex_);
    replicators_[tenant] = &replicator;
}

void Cluster::detach(const std::string& tenant) {
    std::lock_guard lock(mutex_);
    replicators_.erase(tenant);
    woken_.erase(tenant);
}

void Cluster::send(const std::string& tenant, const raft::Message& message) {
    std::lock_guard lock(send_mutex_);
    scratch_.clear();
    scratch_.push_back(static_cast<std::uint8_t>(tenant.size()));
    scratch_.insert(scratch_.end(), tenant.begin(), tenant.end());
    raft::encode_message(message, scratch_);
    (void)transport_->send(message.to, frame_type_raft, scratch_);
}

void Cluster::wake(const std::string& tenant) {
    {
        std::lock_guard lock(mutex_);
        woken_.insert(tenant);
    }
    wakeup_.notify_one();
}

void Cluster::on_frame(NodeId from, std::uint8_t type, ByteSpan payload) {
    if (type != frame_type_raft || payload.empty() || payload.size() < 1u + payload[0]) {
        QUEEN_LOG(logger_, Level::warn, "cluster.bad_frame",
                  "peer=" << from << " type=" << int(type) << " bytes=" << payload.size());
        return;
    }
    const std::string tenant(reinterpret_cast<const char*>(payload.data() + 1), payload[0]);
    auto message = raft::decode_message(payload.subspan(1u + payload[0]));
    if (!message || message->from != from) {
        QUEEN_LOG(logger_, Level::warn, "cluster.bad_message",
                  "peer=" << from << " tenant=" << tenant << " error=\""
                          << (message ? std::string("sender mismatch") : message.error().message())
                          << "\"");
        return;
    }
    Replicator* replicator = nullptr;
    {
        std::lock_guard lock(mutex_);
        auto found = replicators_.find(tenant);
        if (found != replicators_.end()) {
            replicator = found->second;
        }
    }
    if (replicator != nullptr) {
        replicator->step(*message);
    }
}

void Cluster::run_ticker() {
    set_thread_name("raft-ticker");
    const std::int64_t interval_ns = std::int64_t{options_.tick_ms} * 1'000'000;
    std::int64_t next_tick = clock_.monotonic_ns() + interval_ns;
    std::unique_lock lock(mutex_);
    while (!is_stopping_) {
        const std::int64_t wait_ns = std::max<std::int64_t>(0, next_tick - clock_.monotonic_ns());
        wakeup_.wait_for(lock, std::chrono::nanoseconds(wait_ns),
                         [&] { return is_stopping_ || !woken_.empty(); });
        if (is_stopping_) {
            break;
        }
        std::vector<Replicator*> woken;
        for (const std::string& tenant : woken_) {
            if (auto found = replicators_.find(tenant); found != replicators_.end()) {
                woken.push_back(found->second);
            }
        }
        woken_.clear();
        const std::int64_t now = clock_.monotonic_ns();
        std::vector<Replicator*> all;
        if (now >= next_tick) {
            // One tick per interval; after a stall, resume from now rather than catch up.
            next_tick = std::max(next_tick + interval_ns, now);
            for (const auto& [name, replicator] : replicators_) {
                all.push_back(replicator);
            }
        }
        lock.unlock();
        for (Replicator* replicator : woken) {
            replicator->run_pending();
        }
        for (Replicator* replicator : all) {
            replicator->tick();
        }
        lock.lock();
    }
}

net::TransportStats Cluster::transport_stats() const {
    return transport_->stats();
}

void Cluster::stop() {
    {
        std::lock_guard lock(mutex_);
        if (is_stopping_ && !ticker_.joinable()) {
            return;
        }
        is_stopping_ = true;
    }
    wakeup_.notify_all();
    if (ticker_.joinable()) {
        ticker_.join();
    }
    if (transport_) {
        transport_->stop();
    }
}

}  // namespace queen::node::detail
