// modules/node/src/cluster.cpp — the peer transport and raft's clock for every tenant group.
#include "cluster.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

#include "queen/core/rng.hpp"
#include "queen/core/thread_name.hpp"
#include "queen/engine/command.hpp"
#include "queen/raft/codec.hpp"
#include "replicator.hpp"

namespace queen::node::detail {

namespace {

/// Appends "u8 length, name" (tenant names are directory names: at most 255 bytes).
void write_tenant(Bytes& out, const std::string& tenant) {
    QUEEN_ASSERT(tenant.size() <= 255, "tenant name over 255 bytes: ", tenant);
    out.push_back(static_cast<std::uint8_t>(tenant.size()));
    out.insert(out.end(), tenant.begin(), tenant.end());
}

/// Reads "u8 length, name" at the front of `bytes`; nullopt when short.
std::optional<std::string> read_tenant(ByteReader& reader) {
    const std::uint8_t length = reader.u8();
    const ByteSpan name = reader.raw(length);
    if (!reader.ok()) {
        return std::nullopt;
    }
    return std::string(as_chars(name));
}

ByteSpan rest_of(ByteReader& reader) {
    return reader.raw(reader.remaining());
}

}  // namespace

Cluster::Cluster(const NodeConfig& config, const Clock& clock, Logger& logger)
    : options_(config.cluster), clock_(clock), logger_(logger), self_(NodeId{config.node.id}) {
    // Different for every start of this node (a peer that sees it change knows it restarted).
    incarnation_ = (random_seed() ^ static_cast<std::uint64_t>(clock.wall_ms())) |
                   1;  // never 0 (0: none heard yet)
}

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
        cluster->configured_nodes_.push_back(NodeId{peer.id});
        cluster->addresses_[NodeId{peer.id}] = peer;
        if (peer.id == config.node.id) {
            transport_options.address = peer.host;
            transport_options.port = peer.port;
        }
    }
    std::sort(cluster->configured_nodes_.begin(), cluster->configured_nodes_.end());
    for (const NodeId node : cluster->configured_nodes_) {
        if (node != cluster->self_) {
            cluster->liveness_[node] = Liveness{};
        }
    }
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
                      self->on_peer_event(event);
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
              "node=" << cluster->self_ << " peers=" << peers->size()
                      << " listen=" << transport_options.address << ":"
                      << cluster->transport_->port() << " incarnation=" << cluster->incarnation_);
    return cluster;
}

void Cluster::attach(const std::string& tenant, Replicator& replicator,
                     std::function<void()> on_tick, TenantFrameHandler on_frame) {
    std::lock_guard lock(mutex_);
    replicators_[tenant] = Attached{&replicator, std::move(on_tick), std::move(on_frame)};
}

void Cluster::detach(const std::string& tenant) {
    std::unique_lock lock(mutex_);
    replicators_.erase(tenant);
    woken_.erase(tenant);
    if (ticker_.joinable() && std::this_thread::get_id() != ticker_.get_id()) {
        // A round the ticker runs now may still use the replicator; the next one will not.
        const std::uint64_t round = round_;
        ticked_.wait(lock, [&] { return !is_ticking_ || round_ != round; });
    }
}

void Cluster::send(const std::string& tenant, const raft::Message& message) {
    std::lock_guard lock(send_mutex_);
    scratch_.clear();
    write_tenant(scratch_, tenant);
    raft::encode_message(message, scratch_);
    (void)transport_->send(message.to, frame_type_raft, scratch_);
    raft_sent_.fetch_add(1, std::memory_order_relaxed);
}

void Cluster::wake(const std::string& tenant) {
    {
        std::lock_guard lock(mutex_);
        woken_.insert(tenant);
    }
    wakeup_.notify_one();
}

void Cluster::on_peer_event(const net::PeerEvent& event) {
    std::lock_guard lock(peers_mutex_);
    if (event.kind == net::PeerEvent::Kind::connected) {
        connected_.insert(event.peer);
        if (auto found = liveness_.find(event.peer); found != liveness_.end()) {
            found->second.last_heard_ns = clock_.monotonic_ns();
        }
    } else if (event.kind == net::PeerEvent::Kind::disconnected) {
        connected_.erase(event.peer);
    }
}

void Cluster::set_members(const std::vector<PeerAddress>& members) {
    std::vector<PeerAddress> added;
    {
        std::lock_guard lock(peers_mutex_);
        for (const PeerAddress& member : members) {
            const NodeId id{member.id};
            const auto known = addresses_.find(id);
            if (id != self_ && (known == addresses_.end() || known->second.host != member.host ||
                                known->second.port != member.port)) {
                added.push_back(member);
            }
            addresses_[id] = member;
            if (id != self_) {
                liveness_.try_emplace(id);  // gone until connected
            }
        }
    }
    for (const PeerAddress& peer : added) {
        QUEEN_LOG(logger_, Level::info, "cluster.peer_added",
                  "peer=" << peer.id << " address=" << peer.host << ":" << peer.port);
        transport_->add_peer(NodeId{peer.id}, peer.host, peer.port);
    }
}

std::string Cluster::peer_host(NodeId node) const {
    std::lock_guard lock(peers_mutex_);
    const auto found = addresses_.find(node);
    return found == addresses_.end() ? std::string() : found->second.host;
}

void Cluster::on_node_heartbeat(NodeId from, ByteSpan payload) {
    ByteReader reader(payload);
    const auto incarnation = reader.fixed<std::uint64_t>();
    if (!reader.ok() || incarnation == 0) {
        QUEEN_LOG(logger_, Level::warn, "cluster.bad_frame",
                  "peer=" << from << " type=" << int(frame_type_node_heartbeat)
                          << " bytes=" << payload.size());
        return;
    }
    heartbeats_received_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(peers_mutex_);
    auto found = liveness_.find(from);
    if (found == liveness_.end()) {
        return;
    }
    Liveness& peer = found->second;
    if (peer.incarnation != 0 && peer.incarnation != incarnation) {
        peer.is_restarted = true;
    }
    peer.incarnation = incarnation;
}

std::vector<NodeId> Cluster::check_peers(std::vector<NodeId>& newly_gone,
                                         std::vector<NodeId>& beat_to, bool is_beat_due) {
    const std::int64_t now = clock_.monotonic_ns();
    const std::int64_t silence_ns =
        std::int64_t{options_.election_ticks} * options_.tick_ms * 1'000'000;
    std::vector<NodeId> gone;
    std::lock_guard lock(peers_mutex_);
    for (auto& [peer, liveness] : liveness_) {
        const bool is_connected = connected_.count(peer) != 0;
        const bool is_gone = !is_connected || now - liveness.last_heard_ns > silence_ns;
        if (is_gone != liveness.is_gone || liveness.is_restarted) {
            const char* what = liveness.is_restarted ? "restarted" : is_gone ? "gone" : "alive";
            QUEEN_LOG(logger_, Level::info, "cluster.peer_liveness",
                      "peer=" << peer << " state=" << what << " connected=" << is_connected
                              << " silent_ms=" << (now - liveness.last_heard_ns) / 1'000'000);
            if (liveness.is_restarted || is_gone) {
                newly_gone.push_back(peer);
                (liveness.is_restarted ? peers_restarted_total_ : peers_gone_total_)
                    .fetch_add(1, std::memory_order_relaxed);
            }
        }
        liveness.is_restarted = false;
        liveness.is_gone = is_gone;
        if (is_gone) {
            gone.push_back(peer);
        }
        if (is_connected && is_beat_due) {
            beat_to.push_back(peer);
        }
    }
    peers_gone_.store(gone.size(), std::memory_order_relaxed);
    return gone;
}

ClusterStats Cluster::stats() const {
    ClusterStats stats;
    if (transport_) {
        stats.transport = transport_->stats();
    }
    stats.raft_messages_sent_total = raft_sent_.load(std::memory_order_relaxed);
    stats.raft_messages_received_total = raft_received_.load(std::memory_order_relaxed);
    stats.node_heartbeats_sent_total = heartbeats_sent_.load(std::memory_order_relaxed);
    stats.node_heartbeats_received_total = heartbeats_received_.load(std::memory_order_relaxed);
    stats.groups_woken_total = groups_woken_.load(std::memory_order_relaxed);
    stats.peers_gone_total = peers_gone_total_.load(std::memory_order_relaxed);
    stats.peers_restarted_total = peers_restarted_total_.load(std::memory_order_relaxed);
    stats.groups = groups_.load(std::memory_order_relaxed);
    stats.quiet_groups = quiet_groups_.load(std::memory_order_relaxed);
    stats.peers_gone = peers_gone_.load(std::memory_order_relaxed);
    return stats;
}

bool Cluster::is_connected(NodeId peer) const {
    std::lock_guard lock(peers_mutex_);
    return connected_.count(peer) != 0;
}

void Cluster::on_frame(NodeId from, std::uint8_t type, ByteSpan payload) {
    {
        // Any frame shows the peer alive (a node heartbeat may queue behind large frames).
        std::lock_guard lock(peers_mutex_);
        if (auto found = liveness_.find(from); found != liveness_.end()) {
            found->second.last_heard_ns = clock_.monotonic_ns();
        }
    }
    switch (type) {
        case frame_type_node_heartbeat: on_node_heartbeat(from, payload); return;
        case frame_type_raft: on_raft(from, payload); return;
        case frame_type_forward_request: on_forward_request(from, payload); return;
        case frame_type_forward_response: on_forward_response(from, payload); return;
        case frame_type_snapshot_request:
        case frame_type_snapshot_chunk: on_tenant_frame(from, type, payload); return;
        default: break;
    }
    FrameHandler handler;
    {
        std::lock_guard lock(forward_mutex_);
        if (auto found = frame_handlers_.find(type); found != frame_handlers_.end()) {
            handler = found->second;
        }
    }
    if (handler) {
        handler(from, payload);
        return;
    }
    QUEEN_LOG(logger_, Level::warn, "cluster.bad_frame",
              "peer=" << from << " type=" << int(type) << " bytes=" << payload.size());
}

void Cluster::set_frame_handler(std::uint8_t type, FrameHandler handler) {
    std::lock_guard lock(forward_mutex_);
    frame_handlers_[type] = std::move(handler);
}

bool Cluster::send_tenant_frame(NodeId to, std::uint8_t type, const std::string& tenant,
                                ByteSpan body) {
    Bytes frame;
    frame.reserve(1 + tenant.size() + body.size());
    write_tenant(frame, tenant);
    frame.insert(frame.end(), body.begin(), body.end());
    return transport_->send(to, type, frame);
}

void Cluster::on_tenant_frame(NodeId from, std::uint8_t type, ByteSpan payload) {
    ByteReader reader(payload);
    const auto tenant = read_tenant(reader);
    if (!tenant) {
        QUEEN_LOG(logger_, Level::warn, "cluster.bad_frame",
                  "peer=" << from << " type=" << int(type) << " error=\"short frame\"");
        return;
    }
    TenantFrameHandler handler;
    {
        std::lock_guard lock(mutex_);
        if (auto found = replicators_.find(*tenant); found != replicators_.end()) {
            handler = found->second.on_frame;
        }
    }
    if (handler) {
        handler(from, type, rest_of(reader));
    }
}

bool Cluster::send_frame(NodeId to, std::uint8_t type, ByteSpan payload) {
    return transport_->send(to, type, payload);
}

void Cluster::on_raft(NodeId from, ByteSpan payload) {
    ByteReader reader(payload);
    const auto tenant = read_tenant(reader);
    auto message = tenant ? raft::decode_message(rest_of(reader))
                          : Result<raft::Message>(Error{Errc::corruption, "short frame"});
    if (!message || message->from != from) {
        QUEEN_LOG(logger_, Level::warn, "cluster.bad_message",
                  "peer=" << from << " error=\""
                          << (message ? std::string("sender mismatch") : message.error().message())
                          << "\"");
        return;
    }
    Replicator* replicator = nullptr;
    {
        std::lock_guard lock(mutex_);
        auto found = replicators_.find(*tenant);
        if (found != replicators_.end()) {
            replicator = found->second.replicator;
        }
    }
    raft_received_.fetch_add(1, std::memory_order_relaxed);
    if (replicator != nullptr) {
        replicator->step(*message);
    }
}

void Cluster::forward(NodeId leader, const std::string& tenant, ByteSpan payload,
                      api::Backend::Completion done) {
    std::uint64_t id = 0;
    {
        std::lock_guard lock(forward_mutex_);
        id = next_forward_id_++;
        forwarded_.emplace(id, Forwarded{tenant, leader,
                                         clock_.monotonic_ns() +
                                             std::int64_t{options_.forward_timeout_ms} * 1'000'000,
                                         std::move(done)});
    }
    Bytes frame;
    frame.reserve(8 + 1 + tenant.size() + payload.size());
    ByteWriter(frame).fixed<std::uint64_t>(id);
    write_tenant(frame, tenant);
    frame.insert(frame.end(), payload.begin(), payload.end());
    // A dropped frame (peer unreachable) fails at its deadline like a lost answer.
    (void)transport_->send(leader, frame_type_forward_request, frame);
}

void Cluster::set_forward_handler(ForwardHandler handler) {
    std::lock_guard lock(forward_mutex_);
    forward_handler_ = std::move(handler);
}

void Cluster::on_forward_request(NodeId from, ByteSpan payload) {
    ByteReader reader(payload);
    const auto id = reader.fixed<std::uint64_t>();
    const auto tenant = read_tenant(reader);
    if (!tenant) {
        QUEEN_LOG(logger_, Level::warn, "cluster.bad_forward", "peer=" << from);
        return;
    }
    const ByteSpan rest = rest_of(reader);
    ForwardHandler handler;
    {
        std::lock_guard lock(forward_mutex_);
        handler = forward_handler_;
    }
    auto reply = [this, from, request = id](Result<engine::CommandResult> result) {
        Bytes frame;
        ByteWriter writer(frame);
        writer.fixed<std::uint64_t>(request);
        if (result) {
            writer.u8(0);
            const Bytes encoded = engine::encode_result(*result);
            frame.insert(frame.end(), encoded.begin(), encoded.end());
        } else {
            const Error& error = result.error();
            const bool is_core = error.code.category() == queen::error_category();
            writer.u8(static_cast<std::uint8_t>(is_core ? error.code.value()
                                                        : static_cast<int>(Errc::internal)));
            const std::string text = error.context.empty() ? error.message() : error.context;
            frame.insert(frame.end(), text.begin(), text.end());
        }
        (void)transport_->send(from, frame_type_forward_response, frame);
    };
    if (!handler) {
        reply(Error{Errc::unsupported, "this node serves no forwarded commands"});
        return;
    }
    handler(*tenant, Bytes(rest.begin(), rest.end()), std::move(reply));
}

void Cluster::on_forward_response(NodeId from, ByteSpan payload) {
    ByteReader reader(payload);
    const auto id = reader.fixed<std::uint64_t>();
    const std::uint8_t status = reader.u8();
    if (!reader.ok()) {
        QUEEN_LOG(logger_, Level::warn, "cluster.bad_forward_response", "peer=" << from);
        return;
    }
    api::Backend::Completion done;
    {
        std::lock_guard lock(forward_mutex_);
        auto found = forwarded_.find(id);
        if (found == forwarded_.end() || found->second.leader != from) {
            return;  // timed out already
        }
        done = std::move(found->second.done);
        forwarded_.erase(found);
    }
    const ByteSpan rest = rest_of(reader);
    if (status == 0) {
        auto result = engine::decode_result(rest);
        if (!result) {
            done(Error{Errc::internal, "forwarded answer: " + result.error().message()});
            return;
        }
        done(std::move(*result));
        return;
    }
    const bool is_known = status <= static_cast<int>(Errc::internal);
    done(Error{is_known ? static_cast<Errc>(status) : Errc::internal, std::string(as_chars(rest))});
}

void Cluster::abandon_forwards(const std::string& tenant, NodeId leader) {
    fail_forwards(
        [&](const Forwarded& forwarded) {
            return forwarded.leader == leader && forwarded.tenant == tenant;
        },
        Error{Errc::timeout,
              "the leader changed before it answered a forwarded command; it may or may not be "
              "applied"});
}

void Cluster::expire_forwards() {
    const std::int64_t now = clock_.monotonic_ns();
    fail_forwards([&](const Forwarded& forwarded) { return forwarded.deadline_ns <= now; },
                  Error{Errc::timeout,
                        "the leader did not answer a forwarded command within "
                        "cluster.forward_timeout_ms; it may or may not be applied"});
}

void Cluster::fail_forwards(const std::function<bool(const Forwarded&)>& matches,
                            const Error& error) {
    std::vector<api::Backend::Completion> failed;
    {
        std::lock_guard lock(forward_mutex_);
        for (auto it = forwarded_.begin(); it != forwarded_.end();) {
            if (matches(it->second)) {
                failed.push_back(std::move(it->second.done));
                it = forwarded_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& done : failed) {
        done(error);
    }
}

void Cluster::run_ticker() {
    set_thread_name("raft-ticker");
    const std::int64_t interval_ns = std::int64_t{options_.tick_ms} * 1'000'000;
    std::int64_t next_tick = clock_.monotonic_ns() + interval_ns;
    std::uint64_t tick = 0;
    Bytes heartbeat;
    ByteWriter(heartbeat).fixed<std::uint64_t>(incarnation_);
    std::vector<Attached> ticked;
    std::vector<Replicator*> woken;
    std::vector<Replicator*> members;  // every attached replicator, when a peer went gone
    std::unique_lock lock(mutex_);
    while (!is_stopping_) {
        const std::int64_t wait_ns = std::max<std::int64_t>(0, next_tick - clock_.monotonic_ns());
        wakeup_.wait_for(lock, std::chrono::nanoseconds(wait_ns),
                         [&] { return is_stopping_ || !woken_.empty(); });
        if (is_stopping_) {
            break;
        }
        woken.clear();
        for (const std::string& tenant : woken_) {
            if (auto found = replicators_.find(tenant); found != replicators_.end()) {
                woken.push_back(found->second.replicator);
            }
        }
        woken_.clear();
        const std::int64_t now = clock_.monotonic_ns();
        ticked.clear();
        members.clear();
        std::vector<NodeId> gone;
        std::vector<NodeId> newly_gone;
        std::vector<NodeId> beat_to;
        const bool is_tick = now >= next_tick;
        if (is_tick) {
            // One tick per interval; after a stall, resume from now rather than catch up.
            next_tick = std::max(next_tick + interval_ns, now);
            ++tick;
            gone = check_peers(newly_gone, beat_to, tick % options_.heartbeat_ticks == 0);
            // A quiet group costs one atomic load per tick: raft ignores its ticks, and the
            // tenant's on_tick housekeeping runs once per election timeout (staggered).
            std::uint64_t quiet = 0;
            std::uint64_t k = 0;
            for (const auto& [name, attached] : replicators_) {
                const bool is_quiet = attached.replicator->is_quiet();
                quiet += is_quiet ? 1 : 0;
                if (!is_quiet || (tick + k) % options_.election_ticks == 0) {
                    ticked.push_back(attached);
                }
                if (!newly_gone.empty()) {
                    members.push_back(attached.replicator);
                }
                ++k;
            }
            groups_.store(replicators_.size(), std::memory_order_relaxed);
            quiet_groups_.store(quiet, std::memory_order_relaxed);
        }
        is_ticking_ = true;
        ++round_;
        lock.unlock();
        for (const NodeId peer : beat_to) {
            if (transport_->send(peer, frame_type_node_heartbeat, heartbeat)) {
                heartbeats_sent_.fetch_add(1, std::memory_order_relaxed);
            }
        }
        for (Replicator* replicator : woken) {
            replicator->run_pending();
        }
        // A peer gone or restarted: its quiet groups wake (followers forget its leadership and
        // campaign after an election timeout; leaders heartbeat and check the quorum again).
        for (const NodeId peer : newly_gone) {
            for (Replicator* replicator : members) {
                if (replicator->wake_for(peer)) {
                    groups_woken_.fetch_add(1, std::memory_order_relaxed);
                }
            }
        }
        for (const Attached& attached : ticked) {
            attached.replicator->tick(gone);
            if (attached.on_tick) {
                attached.on_tick();
            }
        }
        if (is_tick) {
            expire_forwards();
        }
        lock.lock();
        is_ticking_ = false;
        ticked_.notify_all();
    }
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
    // What still waits for a leader's answer will not get one.
    fail_forwards([](const Forwarded&) { return true; },
                  Error{Errc::cancelled, "the node is shutting down"});
}

}  // namespace queen::node::detail
