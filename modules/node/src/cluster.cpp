// modules/node/src/cluster.cpp — the peer transport and raft's clock for every tenant group.
#include "cluster.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

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
        cluster->configured_nodes_.push_back(NodeId{peer.id});
        cluster->addresses_[NodeId{peer.id}] = peer;
        if (peer.id == config.node.id) {
            transport_options.address = peer.host;
            transport_options.port = peer.port;
        }
    }
    std::sort(cluster->configured_nodes_.begin(), cluster->configured_nodes_.end());
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
              "node=" << cluster->self_ << " peers=" << peers->size() << " listen="
                      << transport_options.address << ":" << cluster->transport_->port());
    return cluster;
}

void Cluster::attach(const std::string& tenant, Replicator& replicator,
                     std::function<void()> on_tick, TenantFrameHandler on_frame) {
    std::lock_guard lock(mutex_);
    replicators_[tenant] = Attached{&replicator, std::move(on_tick), std::move(on_frame)};
}

void Cluster::detach(const std::string& tenant) {
    std::lock_guard lock(mutex_);
    replicators_.erase(tenant);
    woken_.erase(tenant);
}

void Cluster::send(const std::string& tenant, const raft::Message& message) {
    std::lock_guard lock(send_mutex_);
    scratch_.clear();
    write_tenant(scratch_, tenant);
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

void Cluster::on_peer_event(const net::PeerEvent& event) {
    std::lock_guard lock(peers_mutex_);
    if (event.kind == net::PeerEvent::Kind::connected) {
        connected_.insert(event.peer);
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

bool Cluster::is_connected(NodeId peer) const {
    std::lock_guard lock(peers_mutex_);
    return connected_.count(peer) != 0;
}

void Cluster::on_frame(NodeId from, std::uint8_t type, ByteSpan payload) {
    switch (type) {
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
                woken.push_back(found->second.replicator);
            }
        }
        woken_.clear();
        const std::int64_t now = clock_.monotonic_ns();
        std::vector<Attached> all;
        if (now >= next_tick) {
            // One tick per interval; after a stall, resume from now rather than catch up.
            next_tick = std::max(next_tick + interval_ns, now);
            for (const auto& [name, attached] : replicators_) {
                all.push_back(attached);
            }
        }
        lock.unlock();
        for (Replicator* replicator : woken) {
            replicator->run_pending();
        }
        for (const Attached& attached : all) {
            attached.replicator->tick();
            if (attached.on_tick) {
                attached.on_tick();
            }
        }
        if (!all.empty()) {
            expire_forwards();
        }
        lock.lock();
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
