// modules/node/src/tenant_manager.cpp — opening and closing tenants as the catalogue says.
#include "tenant_manager.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "data_dir.hpp"
#include "queen/core/thread_name.hpp"

namespace queen::node::detail {
namespace {

constexpr const char* incarnation_file = "incarnation";
/// Deleted tenants' directories are moved here first (one rename), then removed: a crash in
/// between leaves nothing under tenants/ that looks alive.
constexpr const char* deleted_dir = "tenants.deleted";
/// How long a create_tenant answer waits for the tenant to open on this node.
constexpr std::int64_t open_wait_ms = 10'000;

std::optional<std::uint64_t> read_incarnation(const std::filesystem::path& dir) {
    std::ifstream in(dir / incarnation_file);
    std::uint64_t value = 0;
    if (in >> value) {
        return value;
    }
    return std::nullopt;
}

/// The members as the founding catalogue has them: cluster.peers, or this node alone.
std::vector<Member> founding_members(const NodeConfig& config) {
    std::vector<Member> members;
    if (auto peers = config.cluster.peer_addresses(); peers && !peers->empty()) {
        for (const PeerAddress& peer : *peers) {
            members.push_back(Member{NodeId{peer.id}, peer.host, peer.port});
        }
    } else {
        members.push_back(Member{NodeId{config.node.id}, {}, 0});
    }
    return members;
}

}  // namespace

TenantManager::TenantManager(const NodeConfig& config, Logger& logger, const Clock& clock,
                             Waiters& waiters, Cluster* cluster)
    : config_(config),
      logger_(logger),
      clock_(clock),
      waiters_(waiters),
      cluster_(cluster),
      self_(NodeId{config.node.id}) {}

TenantManager::~TenantManager() {
    (void)stop();
}

Status TenantManager::start() {
    const auto tenants_dir = config_.node.data_dir / "tenants";
    // Deletions a crash interrupted.
    QUEEN_TRY(remove_tree_durably(config_.node.data_dir / deleted_dir));
    QUEEN_TRY(create_directories_durably(tenants_dir / default_tenant_name));
    TenantGroup group;
    group.holds_catalogue = true;
    group.founding_members = founding_members(config_);
    if (!config_.cluster.join) {
        for (const Member& member : group.founding_members) {
            group.founders.push_back(member.id);
        }
    }
    group.on_catalogue = [this](const Catalogue& catalogue) { on_catalogue(catalogue); };
    QUEEN_TRY(auto tenant,
              Tenant::open(std::string(default_tenant_name), tenants_dir / default_tenant_name,
                           config_, logger_, clock_, waiters_, cluster_, std::move(group)));
    {
        std::unique_lock lock(tenants_mutex_);
        tenants_.emplace(std::string(default_tenant_name), std::move(tenant));
    }
    // The catalogue the default tenant holds after its replay (its open published it).
    std::optional<Catalogue> catalogue;
    {
        std::lock_guard lock(mutex_);
        catalogue = latest_;
        is_catalogue_new_ = false;
    }
    QUEEN_ASSERT(catalogue.has_value(), "the default tenant publishes the catalogue at open");
    // Tenants placed here open before the node serves; one that fails stops the start.
    for (const TenantPlacement& placement : catalogue->tenants) {
        if (placement.name != default_tenant_name &&
            std::find(placement.replicas.begin(), placement.replicas.end(), self_) !=
                placement.replicas.end()) {
            QUEEN_TRY(open_tenant(placement));
        }
    }
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(tenants_dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (!entry.is_directory() || find(name) != nullptr) {
            continue;
        }
        if (read_incarnation(entry.path())) {
            drop_tenant(name);  // deleted (or moved away) while this node was down
        } else {
            QUEEN_LOG(logger_, Level::warn, "tenant.directory_not_in_catalogue",
                      "path=" << entry.path().string()
                              << " note=\"not opened, not removed: create the tenant through the "
                                 "API to use it\"");
        }
    }
    reconcile(*catalogue);
    join_warned_ns_ = clock_.monotonic_ns();  // the first warning after open_wait_ms
    thread_ = std::thread([this] { run(); });
    return {};
}

Status TenantManager::stop() {
    {
        std::lock_guard lock(mutex_);
        if (is_stopped_) {
            return {};
        }
        is_stopped_ = true;
        is_stopping_ = true;
    }
    wakeup_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
    }
    finish_waits({}, Error{Errc::cancelled, "the node is shutting down"});
    std::map<std::string, std::shared_ptr<Tenant>, std::less<>> tenants;
    {
        std::unique_lock lock(tenants_mutex_);
        tenants.swap(tenants_);
    }
    Status result;
    for (auto& [name, tenant] : tenants) {
        if (auto stopped = tenant->stop(); !stopped && result) {
            result = stopped;
        }
    }
    return result;
}

std::shared_ptr<Tenant> TenantManager::find(std::string_view name) const {
    std::shared_lock lock(tenants_mutex_);
    auto found = tenants_.find(name);
    return found == tenants_.end() ? nullptr : found->second;
}

std::vector<std::shared_ptr<Tenant>> TenantManager::all() const {
    std::shared_lock lock(tenants_mutex_);
    std::vector<std::shared_ptr<Tenant>> out;
    out.reserve(tenants_.size());
    for (const auto& [name, tenant] : tenants_) {
        out.push_back(tenant);
    }
    return out;
}

Catalogue TenantManager::catalogue() const {
    std::lock_guard lock(mutex_);
    return latest_ ? *latest_ : Catalogue{};
}

std::optional<TenantPlacement> TenantManager::placement(std::string_view name) const {
    std::lock_guard lock(mutex_);
    if (!latest_) {
        return std::nullopt;
    }
    const TenantPlacement* found = latest_->find(name);
    return found == nullptr ? std::nullopt : std::optional<TenantPlacement>(*found);
}

void TenantManager::submit(const CatalogueOp& op, std::function<void(Status)> done) {
    auto default_tenant = find(default_tenant_name);
    if (!default_tenant) {
        done(Error{Errc::cancelled, "the node is shutting down"});
        return;
    }
    default_tenant->submit_catalogue_op(op, [this, op, default_tenant, done = std::move(done)](
                                                Result<engine::CommandResult> result) mutable {
        if (!result) {
            done(std::move(result).error());
            return;
        }
        // Applied by the leader: answered once this node applied it too (a follower forwarded
        // it), so the answer and what this node lists next show the change.
        default_tenant->when_readable([this, op, done = std::move(done)](Status readable) mutable {
            if (!readable) {
                done(std::move(readable).error());
                return;
            }
            finish_submit(op, std::move(done));
        });
    });
}

void TenantManager::finish_submit(const CatalogueOp& op, std::function<void(Status)> done) {
    if (op.type != CatalogueOpType::create_tenant) {
        done({});
        return;
    }
    // Answered once the tenant is open here, when this node is one of its replicas.
    std::unique_lock lock(mutex_);
    const bool is_elsewhere =
        latest_ && latest_->find(op.tenant) != nullptr && !latest_->is_replica(op.tenant, self_);
    if (is_elsewhere || find(op.tenant) != nullptr || is_stopping_) {
        lock.unlock();
        done({});
        return;
    }
    open_waits_.emplace(
        op.tenant, OpenWait{clock_.monotonic_ns() + open_wait_ms * 1'000'000, std::move(done)});
    wakeup_.notify_all();
}

std::vector<api::TenantInfo> TenantManager::tenant_infos() const {
    const Catalogue catalogue = this->catalogue();
    std::vector<api::TenantInfo> infos;
    for (const TenantPlacement& placement : catalogue.tenants) {
        api::TenantInfo info;
        info.name = placement.name;
        info.replication = placement.replication;
        for (const NodeId replica : placement.replicas) {
            info.replicas.push_back(replica.value());
        }
        info.created_ms = placement.created_ms;
        if (auto tenant = find(placement.name)) {
            info.is_hosted = true;
            info.leader_id = tenant->health().leader_id;
        }
        infos.push_back(std::move(info));
    }
    return infos;
}

std::vector<api::MemberInfo> TenantManager::member_infos() const {
    const Catalogue catalogue = this->catalogue();
    std::vector<api::MemberInfo> infos;
    for (const Member& member : catalogue.members) {
        api::MemberInfo info;
        info.id = member.id.value();
        info.peer_host = member.peer_host;
        info.peer_port = member.peer_port;
        info.is_self = member.id == self_;
        info.is_connected =
            info.is_self || (cluster_ != nullptr && cluster_->is_connected(member.id));
        for (const TenantPlacement& tenant : catalogue.tenants) {
            info.tenants += static_cast<std::uint32_t>(
                std::count(tenant.replicas.begin(), tenant.replicas.end(), member.id));
        }
        infos.push_back(std::move(info));
    }
    return infos;
}

bool TenantManager::is_removed() const {
    std::lock_guard lock(mutex_);
    return latest_ && latest_->version > 0 && latest_->member(self_) == nullptr;
}

void TenantManager::on_catalogue(const Catalogue& catalogue) {
    {
        std::lock_guard lock(mutex_);
        latest_ = catalogue;
        is_catalogue_new_ = true;
    }
    wakeup_.notify_all();
}

void TenantManager::warn_if_not_joined() {
    auto default_tenant = find(default_tenant_name);
    if (!default_tenant) {
        return;
    }
    const api::TenantHealth health = default_tenant->health();
    if (!health.voters.empty() || !health.learners.empty()) {
        return;  // a group's leader reached this node
    }
    std::string address = "<ip>:<port>";
    if (auto peers = config_.cluster.peer_addresses()) {
        for (const PeerAddress& peer : *peers) {
            if (NodeId{peer.id} == self_) {
                address = peer.host + ":" + std::to_string(peer.port);
            }
        }
    }
    QUEEN_LOG(logger_, Level::warn, "cluster.join_waiting",
              "node=" << self_.value()
                      << " note=\"no leader has added this node yet: is it a member? (queen admin "
                         "cluster add "
                      << self_.value() << " " << address << " on a running member)\"");
}

void TenantManager::run() {
    set_thread_name("tenants");
    std::unique_lock lock(mutex_);
    while (!is_stopping_) {
        if (is_catalogue_new_ && latest_) {
            is_catalogue_new_ = false;
            const Catalogue catalogue = *latest_;
            lock.unlock();
            reconcile(catalogue);
            lock.lock();
            continue;
        }
        std::int64_t wait_ns = open_wait_ms * 1'000'000;
        const std::int64_t now = clock_.monotonic_ns();
        if (config_.cluster.join && now - join_warned_ns_ >= wait_ns) {
            join_warned_ns_ = now;
            lock.unlock();
            warn_if_not_joined();
            lock.lock();
            continue;
        }
        for (const auto& [name, wait] : open_waits_) {
            wait_ns = std::min(wait_ns, wait.deadline_ns - now);
        }
        if (wait_ns > 0) {
            wakeup_.wait_for(lock, std::chrono::nanoseconds(wait_ns));
            continue;
        }
        // Tenants that did not open in time: the create is done all the same (the tenant
        // exists; its first requests may find it still opening: 503, retry).
        std::vector<std::function<void(Status)>> expired;
        for (auto it = open_waits_.begin(); it != open_waits_.end();) {
            if (it->second.deadline_ns <= now) {
                expired.push_back(std::move(it->second.done));
                it = open_waits_.erase(it);
            } else {
                ++it;
            }
        }
        lock.unlock();
        for (auto& done : expired) {
            done({});
        }
        lock.lock();
    }
}

void TenantManager::reconcile(const Catalogue& catalogue) {
    if (cluster_ != nullptr) {
        std::vector<PeerAddress> members;
        for (const Member& member : catalogue.members) {
            members.push_back(PeerAddress{member.id.value(), member.peer_host, member.peer_port});
        }
        cluster_->set_members(members);
    }
    // Removed: the groups drop this node. Its open tenants still learn their placement (a
    // leader here hands its leadership over), but nothing is opened or deleted any more: the
    // operator stops the node and removes its data.
    const bool is_removed = catalogue.version > 0 && catalogue.member(self_) == nullptr;
    if (is_removed) {
        QUEEN_LOG(logger_, Level::warn, "cluster.node_removed",
                  "node=" << self_.value()
                          << " note=\"the cluster removed this node: stop it and remove its data "
                             "directory\"");
    }
    for (const TenantPlacement& placement : catalogue.tenants) {
        const bool is_replica = std::find(placement.replicas.begin(), placement.replicas.end(),
                                          self_) != placement.replicas.end();
        auto tenant = find(placement.name);
        if (!tenant && is_replica && !is_removed) {
            if (auto opened = open_tenant(placement); !opened) {
                QUEEN_LOG(
                    logger_, Level::error, "tenant.open_failed",
                    "tenant=" << placement.name << " error=\"" << opened.error().message() << "\"");
                finish_waits(placement.name, opened.error());
                continue;
            }
            tenant = find(placement.name);
        }
        if (tenant) {
            tenant->set_placement(placement.replicas,
                                  placement.is_leader_placed && !placement.replicas.empty()
                                      ? placement.replicas.front()
                                      : raft::no_node);
            finish_waits(placement.name, {});
        }
    }
    if (is_removed) {
        return;
    }
    std::vector<std::string> dropped;
    {
        std::shared_lock lock(tenants_mutex_);
        for (const auto& [name, tenant] : tenants_) {
            if (name != default_tenant_name && catalogue.find(name) == nullptr) {
                dropped.push_back(name);
            }
        }
    }
    for (const std::string& name : dropped) {
        drop_tenant(name);
    }
}

Status TenantManager::open_tenant(const TenantPlacement& placement) {
    const auto dir = config_.node.data_dir / "tenants" / placement.name;
    if (const auto incarnation = read_incarnation(dir);
        incarnation && *incarnation != placement.incarnation) {
        QUEEN_LOG(logger_, Level::warn, "tenant.old_incarnation_removed",
                  "tenant=" << placement.name << " found=" << *incarnation
                            << " current=" << placement.incarnation);
        drop_tenant(placement.name);
    }
    QUEEN_TRY(create_directories_durably(dir));
    if (!read_incarnation(dir)) {
        QUEEN_TRY(write_file_durably(dir / incarnation_file,
                                     std::to_string(placement.incarnation) + "\n"));
    }
    TenantGroup group;
    // A replica the group was not founded with (it replaced a removed node) joins it: the
    // leader adds it and sends it a snapshot.
    if (std::find(placement.founders.begin(), placement.founders.end(), self_) !=
        placement.founders.end()) {
        group.founders = placement.founders;
    }
    QUEEN_TRY(auto tenant, Tenant::open(placement.name, dir, config_, logger_, clock_, waiters_,
                                        cluster_, std::move(group)));
    {
        std::unique_lock lock(tenants_mutex_);
        tenants_.emplace(placement.name, std::move(tenant));
    }
    QUEEN_LOG(logger_, Level::info, "tenant.hosted",
              "tenant=" << placement.name << " replication=" << placement.replication
                        << " incarnation=" << placement.incarnation);
    return {};
}

void TenantManager::drop_tenant(const std::string& name) {
    std::shared_ptr<Tenant> tenant;
    {
        std::unique_lock lock(tenants_mutex_);
        if (auto found = tenants_.find(name); found != tenants_.end()) {
            tenant = std::move(found->second);
            tenants_.erase(found);
        }
    }
    if (tenant) {
        (void)tenant->stop();  // in-flight requests fail with Errc::cancelled
        tenant.reset();
    }
    waiters_.wake_tenant(name);  // parked pops see the tenant gone
    const auto dir = config_.node.data_dir / "tenants" / name;
    const auto graveyard = config_.node.data_dir / deleted_dir;
    Status removed = create_directories_durably(graveyard);
    if (removed && std::filesystem::exists(dir)) {
        removed = rename_durably(dir, graveyard / name);
    }
    if (removed) {
        removed = remove_tree_durably(graveyard);
    }
    if (!removed) {
        QUEEN_LOG(logger_, Level::error, "tenant.remove_failed",
                  "tenant=" << name << " error=\"" << removed.error().message() << "\"");
        return;
    }
    QUEEN_LOG(logger_, Level::info, "tenant.removed", "tenant=" << name);
}

void TenantManager::finish_waits(const std::string& name, const Status& status) {
    std::vector<std::function<void(Status)>> waits;
    {
        std::lock_guard lock(mutex_);
        if (name.empty()) {
            for (auto& [tenant, wait] : open_waits_) {
                waits.push_back(std::move(wait.done));
            }
            open_waits_.clear();
        } else {
            auto [first, last] = open_waits_.equal_range(name);
            for (auto it = first; it != last; ++it) {
                waits.push_back(std::move(it->second.done));
            }
            open_waits_.erase(first, last);
        }
    }
    for (auto& done : waits) {
        done(status);
    }
}

}  // namespace queen::node::detail
