// queen/node/server.hpp — a running node: owns the data directory, its tenants and its listeners.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"
#include "queen/node/config.hpp"

namespace queen::node {

/// A node process's runtime. start() returns once the node serves; stop() shuts it down cleanly.
/// Thread-safety: start/stop from one thread; the node runs its own threads in between.
class Server {
public:
    /// Opens (creating on first start) the data directory, takes its lock, writes or checks
    /// node.toml, loads the payload encryption key (creating keys/payload.key in the data
    /// directory when no key is given; docs/security.md), opens every tenant's log and state,
    /// and starts the listeners.
    /// A cluster node whose key would be that file, and has none yet, gets the cluster's key from
    /// a peer instead (or creates it: the node with the smallest id, once every peer answered
    /// that it has none): start() blocks until then, asking `is_cancelled` (may be empty) at
    /// least every 300 ms (docs/cluster.md).
    /// Errors: Errc::busy (another process holds the data directory), Errc::invalid_argument
    /// (node.toml names another node id; a malformed key, or a key file that is malformed or
    /// readable by group or others), Errc::not_found (security.encryption_key_file does not
    /// exist), Errc::cancelled (`is_cancelled` said so while waiting for the key), Errc::io /
    /// Errc::disk_full, and the module errors of the log and store.
    [[nodiscard]] static Result<std::unique_ptr<Server>> start(
        const NodeConfig& config, Logger& logger, const std::function<bool()>& is_cancelled = {});

    /// Reads again the files an operator may replace while the node runs (what `queen serve`
    /// does on SIGHUP): the TLS certificate and key (http.tls_*) and, with auth on, the tokens
    /// file, the RS256 public key and the JWKS file (auth.*). Whatever fails to load keeps
    /// serving what it had; the other part is reloaded all the same. Thread-safe. Errors: the
    /// first failure, Errc::invalid_argument or Errc::io naming the setting and file.
    [[nodiscard]] Status reload();

    /// The bound HTTP port (useful when http.port is 0).
    [[nodiscard]] std::uint16_t http_port() const noexcept;

    /// Stops the listeners, finishes what is in flight and closes every tenant. Idempotent.
    [[nodiscard]] Status stop();

    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

private:
    struct Impl;
    explicit Server(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace queen::node
