// modules/node/src/tenant_manager.hpp — the tenants this node hosts, kept in line with the
// cluster catalogue.
//
// The default tenant is opened first: it holds the catalogue (catalogue.hpp), and each time its
// applier changes it the manager's thread ("tenants") opens the tenants whose replicas now
// include this node, closes and deletes those the catalogue dropped, and tells every open
// tenant its preferred leader. A tenant's directory (<data_dir>/tenants/<name>/) holds an
// `incarnation` file with the catalogue's incarnation of the tenant: a directory of an earlier
// incarnation (the tenant was deleted and created again while this node was down) is removed
// before the new one opens; a directory without the file that the catalogue does not list is left
// alone with a warning (data from another cluster or a manual copy is never deleted silently).
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "catalogue.hpp"
#include "cluster.hpp"
#include "queen/api/backend.hpp"
#include "tenant.hpp"
#include "waiters.hpp"

namespace queen::node::detail {

class TenantManager {
public:
    /// `cluster` may be null (a one-node cluster); it must outlive the manager.
    TenantManager(const NodeConfig& config, Logger& logger, const Clock& clock, Waiters& waiters,
                  Cluster* cluster);
    ~TenantManager();
    TenantManager(const TenantManager&) = delete;
    TenantManager& operator=(const TenantManager&) = delete;

    /// Opens the default tenant, then every tenant the catalogue places on this node, and starts
    /// the thread that follows the catalogue. Errors: the tenants' open errors, data directory
    /// errors.
    [[nodiscard]] Status start();
    /// Stops following the catalogue, then stops every tenant. Idempotent; the first error.
    [[nodiscard]] Status stop();

    /// The open tenant `name`, or null. Any thread.
    [[nodiscard]] std::shared_ptr<Tenant> find(std::string_view name) const;
    /// Every open tenant, by name. Any thread.
    [[nodiscard]] std::vector<std::shared_ptr<Tenant>> all() const;
    /// The catalogue as the default tenant last applied it. Any thread.
    [[nodiscard]] Catalogue catalogue() const;
    /// The catalogue's placement of `name` (nullopt: no such tenant). Any thread; copies one
    /// placement, not the whole catalogue.
    [[nodiscard]] std::optional<TenantPlacement> placement(std::string_view name) const;

    /// Proposes `op` to the catalogue (through the default tenant); `done` gets the operation's
    /// outcome once applied. For create_tenant, when this node is one of the new tenant's
    /// replicas, `done` runs only once the tenant is open here (or could not be opened).
    void submit(const CatalogueOp& op, std::function<void(Status)> done);

    /// The catalogue's view of the tenants, with this node's leaders (list_tenants()).
    [[nodiscard]] std::vector<api::TenantInfo> tenant_infos() const;
    /// The catalogue's members, with this node's connections to them (list_members()).
    [[nodiscard]] std::vector<api::MemberInfo> member_infos() const;
    /// True in a cluster (not a node alone).
    [[nodiscard]] bool is_clustered() const noexcept { return cluster_ != nullptr; }
    /// The catalogue no longer lists this node (`queen admin cluster remove`): it serves
    /// nothing new; its data stays for the operator to remove. Any thread.
    [[nodiscard]] bool is_removed() const;

private:
    /// `op` applied here too: answers `done`, for create_tenant once the tenant is open here
    /// when this node is one of its replicas.
    void finish_submit(const CatalogueOp& op, std::function<void(Status)> done);
    /// The default tenant's applier: a new catalogue (stored; the thread reconciles).
    void on_catalogue(const Catalogue& catalogue);
    void run();
    /// cluster.join: logs cluster.join_waiting while no group's leader has reached this node.
    void warn_if_not_joined();
    /// Opens, closes and points the tenants at their preferred leaders after `catalogue`.
    void reconcile(const Catalogue& catalogue);
    /// Opens `placement` here. Errors: data directory and Tenant::open errors.
    [[nodiscard]] Status open_tenant(const TenantPlacement& placement);
    /// Stops `name` and removes its directory (the catalogue no longer lists it).
    void drop_tenant(const std::string& name);
    /// Completes the waits for `name` (create_tenant) with `status`.
    void finish_waits(const std::string& name, const Status& status);

    const NodeConfig& config_;
    Logger& logger_;
    const Clock& clock_;
    Waiters& waiters_;
    Cluster* cluster_;
    NodeId self_;

    mutable std::shared_mutex tenants_mutex_;
    std::map<std::string, std::shared_ptr<Tenant>, std::less<>> tenants_;

    mutable std::mutex mutex_;
    std::condition_variable wakeup_;
    std::optional<Catalogue> latest_;  // the last catalogue applied
    bool is_catalogue_new_ = false;    // latest_ not reconciled yet
    bool is_stopping_ = false;
    // create_tenant answers waiting for the tenant to open here, by tenant name.
    struct OpenWait {
        std::int64_t deadline_ns = 0;
        std::function<void(Status)> done;
    };
    std::multimap<std::string, OpenWait> open_waits_;
    std::thread thread_;
    bool is_stopped_ = false;
    std::int64_t join_warned_ns_ = 0;  // run(): the last cluster.join_waiting check
};

}  // namespace queen::node::detail
