// cli/commands/admin.hpp — `queen admin`: script a running broker over its HTTP API.
#pragma once

namespace CLI {
class App;
}

namespace queen::cli {
/// Adds `admin` and its subcommands; the chosen command's exit code lands in `exit_code`.
void register_admin(CLI::App& app, int& exit_code);
}  // namespace queen::cli
