// cli/commands/serve.cpp — `queen serve`: builds the effective config, then runs the node until a
// signal.
#include "commands/serve.hpp"

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <memory>

#include "exit_codes.hpp"
#include "queen/config/schema.hpp"
#include "queen/core/logger.hpp"
#include "queen/node/config.hpp"
#include "queen/node/server.hpp"

namespace queen::cli {

void register_serve(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<ServeOptions>();
    auto* serve =
        app.add_subcommand("serve", "Run a node (single node by default, data in ./data)");
    serve->add_option("--config", options->config_file, "TOML settings file (see conf/queen.toml)")
        ->check(CLI::ExistingFile);
    serve->add_option("--data-dir", options->data_dir, "Data directory (node.data_dir)");
    serve->add_option("--port", options->port, "HTTP port (http.port)")
        ->check(CLI::Range(0, 65535));
    serve->add_option("--log-level", options->log_level,
                      "trace|debug|info|warn|error|off (logging.level)");
    serve->add_option("--set", options->overrides,
                      "Override any setting: --set section.key=value (repeatable)");
    serve->add_flag("--print-config", options->print_config,
                    "Print the effective config as TOML and exit");
    serve->callback([options, &exit_code] { exit_code = run_serve(*options); });
}

namespace {
/// Embedded defaults, then the file, then flags (flags win).
Result<node::NodeConfig> effective_config(const ServeOptions& options, std::string& rendered) {
    node::NodeConfig config;
    config.node.data_dir = "data";
    config::Schema schema;
    node::bind_config(schema, config);
    if (!options.config_file.empty()) {
        QUEEN_TRY(schema.load_file(options.config_file));
    }
    for (const auto& assignment : options.overrides) {
        const auto equals = assignment.find('=');
        if (equals == std::string::npos) {
            return Error{config::Errc::invalid_value,
                         "--set " + assignment + ": expected key=value"};
        }
        QUEEN_TRY(schema.set(assignment.substr(0, equals), assignment.substr(equals + 1)));
    }
    if (options.data_dir) {
        QUEEN_TRY(schema.set("node.data_dir", *options.data_dir));
    }
    if (options.port) {
        QUEEN_TRY(schema.set("http.port", std::to_string(*options.port)));
    }
    if (options.log_level) {
        QUEEN_TRY(schema.set("logging.level", *options.log_level));
    }
    QUEEN_TRY(config.validate());
    rendered = schema.render();
    return config;
}
}  // namespace

int run_serve(const ServeOptions& options) {
    std::string rendered;
    auto config = effective_config(options, rendered);
    if (!config) {
        std::fprintf(stderr, "queen serve: config: %s\n", config.error().message().c_str());
        return exit_usage;
    }
    if (options.print_config) {
        std::fputs(rendered.c_str(), stdout);
        return exit_ok;
    }
    StderrLogger logger;
    logger.set_level(config->logging.level);

    // Block the shutdown signals in every thread; the main thread waits for them below.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    std::fprintf(stderr, "# queen %s effective config\n%s\n", QUEEN_VERSION, rendered.c_str());
    auto server = node::Server::start(*config, logger);
    if (!server) {
        QUEEN_LOG(logger, Level::error, "node.start_failed",
                  "error=\"" << server.error().message() << "\"");
        return server.error().is(Errc::busy) ? exit_retryable : exit_failed;
    }
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    QUEEN_LOG(logger, Level::info, "node.stopping", "signal=" << signal_number);
    auto stopped = (*server)->stop();
    if (!stopped) {
        QUEEN_LOG(logger, Level::error, "node.stop_failed",
                  "error=\"" << stopped.error().message() << "\"");
        return exit_failed;
    }
    QUEEN_LOG(logger, Level::info, "node.stopped", "");
    return exit_ok;
}

}  // namespace queen::cli
