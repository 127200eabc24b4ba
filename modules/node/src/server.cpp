// modules/node/src/server.cpp — node start-up and shut-down: data directory, tenants, HTTP API.
#include "queen/node/server.hpp"

#include <cstdlib>
#include <map>
#include <optional>

#include "backend.hpp"
#include "data_dir.hpp"
#include "encryption_key.hpp"
#include "key_exchange.hpp"
#include "queen/api/api.hpp"
#include "queen/auth/auth.hpp"
#include "queen/core/rng.hpp"
#include "queen/http/address.hpp"
#include "queen/http/router.hpp"
#include "queen/http/server.hpp"
#include "request_forward.hpp"
#include "tenant_manager.hpp"
#include "tenant_routing.hpp"
#include "waiters.hpp"

namespace queen::node {

namespace {
/// One line saying which key the node runs with and its fingerprint, so operators can check that
/// every node holds the same key without showing it.
void log_encryption_key(Logger& logger, const detail::EncryptionKey& key, bool is_new_data_dir) {
    if (key.hex.empty()) {
        QUEEN_LOG(logger, Level::warn, "node.encryption_disabled",
                  "setting=security.payload_encryption queues_with_encryption=refuse_pushes");
        return;
    }
    const auto fingerprint = api::encryption_key_fingerprint(key.hex);
    const bool is_received = key.received_from.value() != 0;
    QUEEN_LOG(logger, Level::info, "node.encryption_key",
              "source=" << key.source << (key.path.empty() ? "" : " path=") << key.path.string()
                        << " fingerprint=" << (fingerprint ? *fingerprint : "?")
                        << " created=" << (key.is_created ? "true" : "false")
                        << (is_received ? " received_from=" : "")
                        << (is_received ? std::to_string(key.received_from.value()) : ""));
    // A key a peer handed over is the cluster's: what this data directory holds was sealed with
    // it too.
    if (key.is_created && !is_received && !is_new_data_dir) {
        // A data directory from an earlier start holds no messages encrypted under the new key;
        // any it holds under an earlier key (its key file lost) can no longer be read.
        QUEEN_LOG(logger, Level::warn, "node.encryption_key_created_for_existing_data",
                  "path=" << key.path.string()
                          << " note=\"messages encrypted under an earlier key cannot be read\"");
    }
}
}  // namespace

struct Server::Impl {
    NodeConfig config;
    Logger* logger = nullptr;
    const Clock* clock = &SystemClock::instance();
    std::optional<detail::DataDirLock> lock;
    detail::NodeIdentity identity;
    std::unique_ptr<detail::Waiters> waiters;
    std::unique_ptr<detail::Cluster> cluster;  // null: a one-node cluster
    // Answers the peers' key requests (its frame handlers on `cluster` share its ownership).
    std::shared_ptr<detail::KeyExchange> key_exchange;
    // Runs API requests for tenants hosted elsewhere on a replica, and peers' requests here.
    std::shared_ptr<detail::RequestForwarder> forwarder;
    std::unique_ptr<detail::TenantManager> tenants;
    std::unique_ptr<detail::NodeBackend> backend;
    std::unique_ptr<http::Server> http;
    std::shared_ptr<auth::ReloadableAuthenticator> authenticator;  // null: auth off
    bool stopped = false;
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() {
    (void)stop();
}

Result<std::unique_ptr<Server>> Server::start(const NodeConfig& config, Logger& logger,
                                              const std::function<bool()>& is_cancelled) {
    QUEEN_TRY(config.validate());
    auto impl = std::make_unique<Impl>();
    impl->config = config;
    impl->logger = &logger;
    const auto& data_dir = config.node.data_dir;
    QUEEN_TRY(detail::create_directories_durably(data_dir));
    QUEEN_TRY(auto lock, detail::DataDirLock::acquire(data_dir));
    impl->lock.emplace(std::move(lock));
    const bool is_new_data_dir = !std::filesystem::exists(data_dir / "node.toml");
    QUEEN_TRY(impl->identity,
              detail::load_or_create_identity(data_dir, config.node.id, random_seed()));
    QUEEN_LOG(logger, Level::info, "node.data_dir",
              "path=" << data_dir.string() << " node=" << impl->identity.node_id
                      << " cluster=" << impl->identity.cluster_id);
    // The key before the tenants: a bad key file stops the start before any log replay. A
    // cluster node never creates its data directory key file alone: the cluster has one key
    // (key_exchange.hpp).
    const bool is_cluster = !config.cluster.peers.empty();
    const char* env_key = std::getenv("QUEEN_ENCRYPTION_KEY");
    QUEEN_TRY(auto key,
              detail::resolve_encryption_key(
                  config, env_key == nullptr ? "" : env_key, api::system_random(),
                  is_cluster ? detail::MissingKeyFile::leave : detail::MissingKeyFile::create));
    if (!key.is_pending) {
        log_encryption_key(logger, key, is_new_data_dir);
    }

    impl->waiters = std::make_unique<detail::Waiters>(*impl->clock);
    if (is_cluster) {
        QUEEN_TRY(impl->cluster, detail::Cluster::start(config, *impl->clock, logger));
        // Before anything else is asked: peers waiting for the key are answered from now on.
        detail::KeyExchange::Options key_options;
        key_options.may_create = !config.cluster.join;
        impl->key_exchange = detail::KeyExchange::start(
            *impl->cluster, config.cluster.secret, config.is_payload_encryption_enabled,
            *impl->clock, logger, api::system_random(), key_options);
        if (key.is_pending) {
            // Blocks until a peer hands over the cluster's key (or this node creates it).
            QUEEN_TRY(auto obtained, impl->key_exchange->obtain(key.path, is_cancelled));
            key.hex = std::move(obtained.key_hex);
            key.received_from = obtained.from;
            key.is_created = true;
            key.is_pending = false;
            log_encryption_key(logger, key, is_new_data_dir);
        } else if (!key.hex.empty()) {
            impl->key_exchange->serve(key.hex);
        }
    }
    // The default tenant, then every tenant the catalogue it holds places on this node.
    impl->tenants = std::make_unique<detail::TenantManager>(impl->config, logger, *impl->clock,
                                                            *impl->waiters, impl->cluster.get());
    QUEEN_TRY(impl->tenants->start());

    if (impl->cluster) {
        // Commands a follower forwarded: submitted here as if a client sent them, never
        // forwarded again (a node that lost the leadership meanwhile answers not_leader).
        impl->cluster->set_forward_handler(
            [tenants = impl->tenants.get()](const std::string& tenant, Bytes payload,
                                            api::Backend::Completion reply) {
                auto found = tenants->find(tenant);
                if (!found) {
                    reply(Error{Errc::not_found, "tenant " + tenant + " is not hosted here"});
                    return;
                }
                found->submit_payload(std::move(payload), std::move(reply), false);
            });
    }
    impl->backend = std::make_unique<detail::NodeBackend>(impl->identity.node_id, *impl->clock,
                                                          *impl->waiters, *impl->tenants);
    api::ApiOptions api_options = config.api;
    api_options.encryption_key_hex = std::move(key.hex);
    api_options.default_tenant = std::string(detail::default_tenant_name);
    if (auto valid = api_options.validate(); !valid) {
        return Error{Errc::invalid_argument, valid.error().message()};
    }
    http::Router router;
    api::register_routes(router, *impl->backend, api_options, logger);
    http::Handler handler = std::move(router).into_handler();
    std::shared_ptr<auth::ReloadableAuthenticator> authenticator;
    const auto now_s = [wall = impl->clock] { return wall->wall_ms() / 1000; };
    if (config.auth.is_enabled) {
        auth::Options auth_options = config.auth;
        auth_options.default_tenant = api_options.default_tenant;
        auto loaded = auth::ReloadableAuthenticator::load(auth_options);
        if (!loaded) {
            Error error = std::move(loaded).error();
            error.context = "auth: " + error.context;
            return error;
        }
        authenticator = std::move(*loaded);
        impl->authenticator = authenticator;
        handler =
            api::with_authentication(std::move(handler), authenticator, api_options, logger, now_s);
        QUEEN_LOG(logger, Level::info, "auth.enabled",
                  "static_tokens=" << authenticator->current()->static_token_count()
                                   << " hs256=" << !config.auth.jwt_hs256_secret.empty()
                                   << " rsa_keys=" << authenticator->current()->rsa_key_count());
    } else if (!http::is_loopback_address(config.http.bind_address)) {
        QUEEN_LOG(logger, Level::warn, "auth.disabled",
                  "http.address=" << config.http.bind_address
                                  << " accepts other machines and auth is off: whoever reaches "
                                     "the port can read, push and delete everything (set "
                                     "auth.enabled; docs/security.md)");
    }
    if (impl->cluster) {
        // Requests of peers run the router; requests for a tenant only other nodes host go to
        // one of them (tenant_routing.hpp).
        impl->forwarder = detail::RequestForwarder::start(*impl->cluster, *impl->clock, logger, {});
        impl->forwarder->set_local_handler(handler);
        detail::TenantRoutingOptions routing;
        routing.tenant_header = api_options.tenant_header;
        routing.default_tenant = api_options.default_tenant;
        routing.forward_timeout_ms = config.cluster.forward_timeout_ms;
        routing.pop_timeout_ms_default = api_options.pop_timeout_ms_default;
        routing.pop_timeout_ms_max = api_options.pop_timeout_ms_max;
        handler = detail::route_by_tenant(std::move(handler), *impl->tenants, *impl->cluster,
                                          impl->forwarder, std::move(routing));
        if (authenticator) {
            // Checked where it enters too: a request for another node's tenant is refused here,
            // not after a hop (the replica checks it again).
            handler = api::with_authentication(std::move(handler), authenticator, api_options,
                                               logger, now_s);
        }
    }
    QUEEN_TRY(impl->http, http::Server::start(config.http, std::move(handler), logger));
    impl->backend->set_http_server(impl->http.get());
    impl->backend->set_forwarder(impl->forwarder.get());
    impl->backend->set_cluster(impl->cluster.get());
    QUEEN_LOG(logger, Level::info, "node.listening",
              "http=" << impl->http->address() << ":" << impl->http->port()
                      << " tenants=" << impl->tenants->all().size());
    return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Status Server::reload() {
    // Each part is tried whatever the other did; the first failure is returned.
    Status result;
    if (impl_->http) {
        result = impl_->http->reload_tls();
    }
    if (impl_->authenticator) {
        if (auto reloaded = impl_->authenticator->reload(); !reloaded) {
            Error error = std::move(reloaded).error();
            error.context = "auth: " + error.context;
            QUEEN_LOG(*impl_->logger, Level::error, "auth.reload_failed",
                      "error=\"" << error.message() << "\" kept=previous");
            if (result) {
                result = std::move(error);
            }
        } else {
            const auto current = impl_->authenticator->current();
            QUEEN_LOG(*impl_->logger, Level::info, "auth.reloaded",
                      "static_tokens=" << current->static_token_count()
                                       << " rsa_keys=" << current->rsa_key_count());
        }
    }
    return result;
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
    // Forwards still waiting fail; peers' requests parked here are released.
    if (impl_->forwarder) {
        impl_->forwarder->stop();
    }
    if (impl_->waiters) {
        impl_->waiters->stop();
    }
    // No more peer messages or ticks; each tenant then finishes its own appends.
    if (impl_->cluster) {
        impl_->cluster->stop();
    }
    Status result;
    if (impl_->tenants) {
        result = impl_->tenants->stop();
    }
    impl_->lock.reset();
    return result;
}

}  // namespace queen::node
