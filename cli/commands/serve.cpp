// cli/commands/serve.cpp — `queen serve`: builds the effective config, prints a short banner, then
// runs the node until a signal.
#include "commands/serve.hpp"

#include <arpa/inet.h>
#include <sys/statvfs.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exit_codes.hpp"
#include "queen/config/schema.hpp"
#include "queen/core/logger.hpp"
#include "queen/http/address.hpp"
#include "queen/node/config.hpp"
#include "queen/node/server.hpp"

namespace queen::cli {

void register_serve(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<ServeOptions>();
    auto* serve = app.add_subcommand(
        "serve", "Run a single node (data in ./data, HTTP API on 127.0.0.1:6632)");
    serve->add_option("--config", options->config_file, "TOML settings file (see conf/queen.toml)")
        ->check(CLI::ExistingFile);
    serve->add_option("--data-dir", options->data_dir, "Data directory (node.data_dir)");
    serve->add_option("--address", options->address,
                      "IP address the HTTP API listens on (http.address; default 127.0.0.1, "
                      "this machine only; 0.0.0.0 for every interface)");
    serve->add_option("--port", options->port, "HTTP port (http.port)")
        ->check(CLI::Range(0, 65535));
    serve->add_option("--log-level", options->log_level,
                      "trace|debug|info|warn|error|off (logging.level)");
    serve->add_option("--set", options->overrides,
                      "Override any setting: --set section.key=value (repeatable)");
    serve->add_flag("--print-config", options->print_config,
                    "Print the effective config as TOML and exit (debug logging also prints it "
                    "at start)");
    serve->callback([options, &exit_code] { exit_code = run_serve(*options); });
}

namespace {

/// What `serve` runs with, and where it came from (for the banner).
struct Effective {
    node::NodeConfig config;
    std::string rendered;                // the whole config as TOML
    std::vector<std::string> overrides;  // the flags that changed settings, as given
};

/// Embedded defaults, then the file, then flags (flags win).
Result<Effective> effective_config(const ServeOptions& options) {
    Effective out;
    node::NodeConfig& config = out.config;
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
        const std::string key = assignment.substr(0, equals);
        QUEEN_TRY(schema.set(key, assignment.substr(equals + 1)));
        // The banner shows the flags; a secret's value stays out of it (and out of logs).
        const config::Entry* entry = schema.find(key);
        out.overrides.push_back(entry != nullptr && entry->is_secret ? "--set " + key + "=<hidden>"
                                                                     : "--set " + assignment);
    }
    if (options.data_dir) {
        QUEEN_TRY(schema.set("node.data_dir", *options.data_dir));
        out.overrides.push_back("--data-dir " + *options.data_dir);
    }
    if (options.address) {
        QUEEN_TRY(schema.set("http.address", *options.address));
        out.overrides.push_back("--address " + *options.address);
    }
    if (options.port) {
        QUEEN_TRY(schema.set("http.port", std::to_string(*options.port)));
        out.overrides.push_back("--port " + std::to_string(*options.port));
    }
    if (options.log_level) {
        QUEEN_TRY(schema.set("logging.level", *options.log_level));
        out.overrides.push_back("--log-level " + *options.log_level);
    }
    QUEEN_TRY(config.validate());
    out.rendered = schema.render();
    return out;
}

bool is_ipv6(const std::string& address) {
    return address.find(':') != std::string::npos;
}

/// The URL a client on this machine uses (a wildcard address is reached through loopback);
/// `port` 0 means the system picks one at start.
std::string local_url(const std::string& address, std::uint16_t port, bool is_tls) {
    std::string host = address == "0.0.0.0" ? "127.0.0.1" : address == "::" ? "::1" : address;
    if (is_ipv6(host)) {
        host = "[" + host + "]";
    }
    return (is_tls ? "https://" : "http://") + host + ":" +
           (port == 0 ? "<port chosen at start>" : std::to_string(port));
}

/// Who else can reach a listener on `address`.
std::string reach_note(const std::string& address) {
    if (address == "0.0.0.0" || address == "::") {
        return "listening on every interface (" + address +
               "): other machines use this host's address";
    }
    return http::is_loopback_address(address)
               ? "this machine only; --address or http.address to listen elsewhere"
               : "listening on " + address + " only";
}

/// Bytes free to this process on the file system of `dir` (nullopt when statvfs fails).
std::optional<std::uint64_t> free_bytes_of(const std::filesystem::path& dir) {
    struct statvfs info {};
    if (::statvfs(dir.c_str(), &info) != 0) {
        return std::nullopt;
    }
    return static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize;
}

/// When the data directory's file system has less free than the node keeps back
/// (node.disk_reserve_bytes), says so and how much to free: after a failed start (`has_started`
/// false: start again once freed, nothing was lost) or at a start that worked (writes that add
/// data answer 507 until then, and resume by themselves).
void print_disk_advice(const node::NodeConfig& config, bool has_started) {
    const auto free = free_bytes_of(config.node.data_dir);
    const std::uint64_t wanted =
        std::max<std::uint64_t>(config.node.disk_reserve_bytes, std::uint64_t{1} << 20);
    if (!free || *free >= wanted) {
        return;
    }
    const auto mib = [](std::uint64_t bytes) {
        return static_cast<unsigned long long>((bytes + (1 << 20) - 1) >> 20);
    };
    std::fprintf(stderr,
                 "queen: disk full: %llu MiB free on the file system of %s, under "
                 "node.disk_reserve_bytes; free %llu MiB more there %s\n",
                 static_cast<unsigned long long>(*free >> 20), config.node.data_dir.c_str(),
                 mib(wanted - *free),
                 has_started ? "(until then writes that add data answer 507; they resume by "
                               "themselves)"
                             : "and start again: nothing acknowledged is lost");
}

/// The few lines `serve` starts with: what runs, where to reach it, where its data and
/// settings come from.
void print_banner(const ServeOptions& options, const Effective& effective) {
    const node::NodeConfig& config = effective.config;
    std::string source = options.config_file.empty()
                             ? std::string("built-in defaults")
                             : options.config_file.string() + " (over the built-in defaults)";
    if (!effective.overrides.empty()) {
        source += "; overridden by";
        for (const std::string& flag : effective.overrides) {
            source += " " + flag;
        }
    }
    const bool is_tls = config.http.tls.is_enabled();
    const std::string url = local_url(config.http.bind_address, config.http.port, is_tls) + " (" +
                            reach_note(config.http.bind_address) + ")";
    const std::string role = config.cluster.peers.empty()
                                 ? std::string("single node")
                                 : "node " + std::to_string(config.node.id) + " of a " +
                                       std::to_string(config.cluster.peers.size()) +
                                       "-node cluster";
    const std::string auth =
        config.auth.is_enabled ? std::string(
                                     "on: every route but /health, /ready, /metrics needs "
                                     "a bearer token")
        : http::is_loopback_address(config.http.bind_address)
            ? std::string("off (this machine only; auth.enabled to require tokens)")
            : std::string(
                  "OFF: whoever reaches the port can read, push and delete everything "
                  "(set auth.enabled)");
    const std::string tls =
        is_tls
            ? "on: " + config.http.tls.certificate_file.string() +
                  (config.http.tls.client_ca_file.empty()
                       ? std::string()
                       : ", client certificates from " + config.http.tls.client_ca_file.string()) +
                  " (SIGHUP reloads)"
            : std::string("off (http.tls_certificate_file and http.tls_key_file for HTTPS)");
    std::fprintf(stderr,
                 "queen %s, %s\n"
                 "  url       %s\n"
                 "  tls       %s\n"
                 "  auth      %s\n"
                 "  data dir  %s\n"
                 "  config    %s\n"
                 "  (every setting: queen serve --print-config, or --log-level debug)\n",
                 QUEEN_VERSION, role.c_str(), url.c_str(), tls.c_str(), auth.c_str(),
                 std::filesystem::absolute(config.node.data_dir).lexically_normal().c_str(),
                 source.c_str());
}

}  // namespace

int run_serve(const ServeOptions& options) {
    auto effective = effective_config(options);
    if (!effective) {
        std::fprintf(stderr, "queen serve: config: %s\n", effective.error().message().c_str());
        return exit_usage;
    }
    const node::NodeConfig& config = effective->config;
    if (options.print_config) {
        std::fputs(effective->rendered.c_str(), stdout);
        return exit_ok;
    }
    StderrLogger logger;
    logger.set_level(config.logging.level);

    // Block the shutdown signals and SIGHUP (reload) in every thread; the main thread waits
    // for them below. A SIGHUP during the start stays pending until then.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigset_t handled = signals;
    sigaddset(&handled, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &handled, nullptr);

    print_banner(options, *effective);
    if (logger.enabled(Level::debug)) {
        std::fprintf(stderr, "# queen %s effective config\n%s\n", QUEEN_VERSION,
                     effective->rendered.c_str());
    }
    // A cluster node may wait in start() for a peer to hand over the payload key: a shutdown
    // signal (still pending, as every thread blocks it) abandons that wait.
    int signal_number = 0;
    const auto is_stop_requested = [&] {
        if (signal_number == 0) {
            const timespec no_wait{0, 0};
            const int received = sigtimedwait(&signals, nullptr, &no_wait);
            if (received > 0) {
                signal_number = received;
            }
        }
        return signal_number != 0;
    };
    auto server = node::Server::start(config, logger, is_stop_requested);
    if (!server && signal_number != 0 && server.error().is(Errc::cancelled)) {
        QUEEN_LOG(logger, Level::info, "node.stopping",
                  "signal=" << signal_number << " while=starting");
        QUEEN_LOG(logger, Level::info, "node.stopped", "");
        return exit_ok;
    }
    if (!server) {
        QUEEN_LOG(logger, Level::error, "node.start_failed",
                  "error=\"" << server.error().message() << "\"");
        print_disk_advice(config, false);
        return server.error().is(Errc::busy) ? exit_retryable : exit_failed;
    }
    std::fprintf(
        stderr, "queen: ready on %s\n",
        local_url(config.http.bind_address, (*server)->http_port(), config.http.tls.is_enabled())
            .c_str());
    print_disk_advice(config, true);
    while (signal_number == 0) {
        int received = 0;
        sigwait(&handled, &received);
        if (received != SIGHUP) {
            signal_number = received;
            break;
        }
        // SIGHUP: the files an operator replaces while the node runs (TLS certificate, tokens).
        if (auto reloaded = (*server)->reload(); !reloaded) {
            QUEEN_LOG(logger, Level::error, "node.reload_failed",
                      "error=\"" << reloaded.error().message() << "\" kept=previous");
        } else {
            QUEEN_LOG(logger, Level::info, "node.reloaded", "signal=SIGHUP");
        }
    }
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
