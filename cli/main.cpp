// cli/main.cpp — `queen`: composes the serve, inspect, repair, bench and admin commands. The only
// main().
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "commands/admin.hpp"
#include "commands/bench.hpp"
#include "commands/inspect.hpp"
#include "commands/repair.hpp"
#include "commands/serve.hpp"
#include "exit_codes.hpp"

int main(int argc, char** argv) {
    // A closed pipe (e.g. `queen inspect log | head`) must not kill the process mid-write.
    std::signal(SIGPIPE, SIG_IGN);
    CLI::App app{
        "Queen: a message broker with partitions, leases and transactions. A node runs alone "
        "today: the Raft module is built and tested but not yet wired into the node, so there "
        "is no replication."};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("queen ") + QUEEN_VERSION);
    int exit_code = queen::cli::exit_ok;
    queen::cli::register_serve(app, exit_code);
    queen::cli::register_inspect(app, exit_code);
    queen::cli::register_repair(app, exit_code);
    queen::cli::register_bench(app, exit_code);
    queen::cli::register_admin(app, exit_code);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& help) {
        return app.exit(help);
    } catch (const CLI::CallForAllHelp& help) {
        return app.exit(help);
    } catch (const CLI::CallForVersion& version) {
        return app.exit(version);
    } catch (const CLI::ParseError& error) {
        // CLI11 uses codes of 100 and above; ours are stable: every usage problem is 2.
        app.exit(error);
        return queen::cli::exit_usage;
    }
    std::fflush(stdout);
    return exit_code;
}
