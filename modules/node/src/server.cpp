// modules/node/src/server.cpp — node start-up and shut-down: data directory, tenants, listeners.
#include "queen/node/server.hpp"

#include <optional>

#include "data_dir.hpp"
#include "queen/core/rng.hpp"

namespace queen::node {

struct Server::Impl {
    NodeConfig config;
    Logger* logger = nullptr;
    std::optional<detail::DataDirLock> lock;
    detail::NodeIdentity identity;
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
    return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Status Server::stop() {
    if (!impl_ || impl_->stopped) {
        return {};
    }
    impl_->stopped = true;
    impl_->lock.reset();
    return {};
}

}  // namespace queen::node
