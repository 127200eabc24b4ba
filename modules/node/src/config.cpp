// modules/node/src/config.cpp — the node's TOML schema and validation.
#include "queen/node/config.hpp"

namespace queen::node {

Status NodeOptions::validate() const {
    if (id == 0) {
        return Error{config::Errc::out_of_range, "node.id must be greater than 0"};
    }
    if (data_dir.empty()) {
        return Error{config::Errc::invalid_value, "node.data_dir must not be empty"};
    }
    return {};
}

Status ListenOptions::validate() const {
    if (http_address.empty()) {
        return Error{config::Errc::invalid_value, "listen.http_address must not be empty"};
    }
    return {};
}

Status NodeConfig::validate() const {
    QUEEN_TRY(node.validate());
    QUEEN_TRY(listen.validate());
    return {};
}

void bind_config(config::Schema& schema, NodeConfig& c) {
    schema.add_section("node", "This node's identity and where it keeps its data.");
    schema.add_integer("node.id", &c.node.id, "Node id, unique in the cluster (> 0).", 1);
    schema.add_path("node.data_dir", &c.node.data_dir,
                    "Data directory: node.toml and tenants/<tenant>/{log,state}.");
    schema.add_section("listen", "Client listeners.");
    schema.add_string("listen.http_address", &c.listen.http_address,
                      "Address of the HTTP API (0.0.0.0 to accept remote clients).");
    schema.add_integer("listen.http_port", &c.listen.http_port, "Port of the HTTP API.", 0, 65535);
    schema.add_section("logging", "Diagnostics on stderr.");
    schema.add_enum("logging.level", &c.logging.level,
                    {{"trace", Level::trace},
                     {"debug", Level::debug},
                     {"info", Level::info},
                     {"warn", Level::warn},
                     {"error", Level::error},
                     {"off", Level::off}},
                    "Lowest level written.");
}

}  // namespace queen::node
