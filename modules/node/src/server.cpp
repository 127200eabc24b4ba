// modules/node/src/server.cpp — node start-up and shut-down: data directory, tenants, HTTP API.
#include "queen/node/server.hpp"

#include <cstdlib>
#include <map>
#include <optional>

#include "backend.hpp"
#include "data_dir.hpp"
#include "queen/api/api.hpp"
#include "queen/core/rng.hpp"
#include "queen/http/router.hpp"
#include "queen/http/server.hpp"
#include "tenant.hpp"
#include "waiters.hpp"

namespace queen::node {

/// The tenant every request without X-Queen-Tenant goes to; it always exists.
constexpr std::string_view default_tenant = "default";

struct Server::Impl {
    NodeConfig config;
    Logger* logger = nullptr;
    const Clock* clock = &SystemClock::instance();
    std::optional<detail::DataDirLock> lock;
    detail::NodeIdentity identity;
    std::unique_ptr<detail::Waiters> waiters;
    std::map<std::string, std::unique_ptr<detail::Tenant>, std::less<>> tenants;
    std::unique_ptr<detail::NodeBackend> backend;
    std::unique_ptr<http::Server> http;
    bool stopped = false;
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() {
    (void)stop();
}

Result<std::unique_ptr<Server>> Server::start(const NodeConfig& config, Logger& logger) {
    QUEEN_TRY(config.validate());
    auto impl = std::make_unique<Impl>();
    impl->config = config;
    impl->logger = &logger;
    const auto& data_dir = config.node.data_dir;
    QUEEN_TRY(detail::create_directories_durably(data_dir));
    QUEEN_TRY(auto lock, detail::DataDirLock::acquire(data_dir));
    impl->lock.emplace(std::move(lock));
    QUEEN_TRY(impl->identity,
              detail::load_or_create_identity(data_dir, config.node.id, random_seed()));
    QUEEN_LOG(logger, Level::info, "node.data_dir",
              "path=" << data_dir.string() << " node=" << impl->identity.node_id
                      << " cluster=" << impl->identity.cluster_id);

    impl->waiters = std::make_unique<detail::Waiters>(*impl->clock);
    // The default tenant always exists; others are the directories earlier runs created.
    std::vector<std::string> names{std::string(default_tenant)};
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(data_dir / "tenants", ec)) {
        if (entry.is_directory() && entry.path().filename() != default_tenant) {
            names.push_back(entry.path().filename().string());
        }
    }
    for (const auto& name : names) {
        const auto dir = data_dir / "tenants" / name;
        QUEEN_TRY(detail::create_directories_durably(dir));
        QUEEN_TRY(auto tenant, detail::Tenant::open(name, dir, impl->config, logger, *impl->clock,
                                                    *impl->waiters));
        impl->tenants.emplace(name, std::move(tenant));
    }

    impl->backend = std::make_unique<detail::NodeBackend>(impl->identity.node_id, *impl->clock,
                                                          *impl->waiters, impl->tenants);
    api::ApiOptions api_options;
    std::string key_hex = config.encryption_key_hex;
    if (const char* env_key = std::getenv("QUEEN_ENCRYPTION_KEY");
        env_key != nullptr && *env_key != '\0') {
        key_hex = env_key;
    }
    api_options.encryption_key_hex = key_hex;
    api_options.default_tenant = std::string(default_tenant);
    if (auto valid = api_options.validate(); !valid) {
        return Error{Errc::invalid_argument,
                     "QUEEN_ENCRYPTION_KEY / security.encryption_key: " + valid.error().message()};
    }
    http::Router router;
    api::register_routes(router, *impl->backend, api_options, logger);
    QUEEN_TRY(impl->http,
              http::Server::start(config.http, std::move(router).into_handler(), logger));
    impl->backend->set_http_server(impl->http.get());
    QUEEN_LOG(logger, Level::info, "node.listening",
              "http=" << impl->http->address() << ":" << impl->http->port()
                      << " tenants=" << impl->tenants.size());
    return std::unique_ptr<Server>(new Server(std::move(impl)));
}

std::uint16_t Server::http_port() const noexcept {
    return impl_->http ? impl_->http->port() : 0;
}

Status Server::stop() {
    if (!impl_ || impl_->stopped) {
        return {};
    }
    impl_->stopped = true;
    // Listeners first (parked requests are cancelled), then waits, then tenants drain and close.
    if (impl_->http) {
        impl_->http->stop();
    }
    if (impl_->waiters) {
        impl_->waiters->stop();
    }
    Status result;
    for (auto& [name, tenant] : impl_->tenants) {
        if (auto stopped = tenant->stop(); !stopped && result) {
            result = stopped;
        }
    }
    impl_->lock.reset();
    return result;
}

}  // namespace queen::node
