// cli/commands/admin.cpp — `queen admin`: until the HTTP client exists it refuses plainly (exit 2).
#include "commands/admin.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "exit_codes.hpp"

namespace queen::cli {

void register_admin(CLI::App& app, int& exit_code) {
    auto* admin = app.add_subcommand(
        "admin", "Script a running broker: queues, groups, DLQ, tenants, members");
    admin->allow_extras();
    admin->callback([&exit_code] {
        std::fprintf(
            stderr,
            "queen admin: this build has no admin client yet (it needs the HTTP API of the "
            "single-node broker); nothing was done\n");
        exit_code = exit_usage;
    });
}

}  // namespace queen::cli
