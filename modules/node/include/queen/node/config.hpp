// queen/node/config.hpp — the settings of a node: one TOML file mapped onto the module Options
// structs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "queen/config/schema.hpp"
#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"

namespace queen::node {

/// Identity and placement of this node.
struct NodeOptions {
    std::uint64_t id = 1;                     ///< unique within a cluster, > 0
    std::filesystem::path data_dir = "data";  ///< holds node.toml and tenants/<tenant>/
    /// Validate: id > 0, data_dir not empty.
    [[nodiscard]] Status validate() const;
};

/// Where clients connect.
struct ListenOptions {
    std::string http_address = "127.0.0.1";
    std::uint16_t http_port = 6632;
    [[nodiscard]] Status validate() const;
};

/// Diagnostics written by the process (not the commit log).
struct LoggingOptions {
    Level level = Level::info;
};

/// Everything `queen serve` reads. Defaults are the embedded single-node config.
struct NodeConfig {
    NodeOptions node;
    ListenOptions listen;
    LoggingOptions logging;

    /// Checks every section; the error names the key path.
    [[nodiscard]] Status validate() const;
};

/// Declares every key of NodeConfig (with its comment) on `schema`, bound to `config`'s fields.
void bind_config(config::Schema& schema, NodeConfig& config);

}  // namespace queen::node
