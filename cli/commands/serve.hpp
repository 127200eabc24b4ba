// cli/commands/serve.hpp — `queen serve`: run a node with the embedded defaults, a TOML file and
// flags.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace queen::cli {

struct ServeOptions {
    std::filesystem::path config_file;     // --config FILE (optional)
    std::optional<std::string> data_dir;   // --data-dir DIR
    std::optional<std::string> address;    // --address IP (HTTP)
    std::optional<int> port;               // --port N (HTTP)
    std::optional<std::string> log_level;  // --log-level LEVEL
    std::vector<std::string> overrides;    // --set key=value (repeatable)
    bool print_config = false;             // print the effective config and exit
};

/// Adds `serve`; its exit code lands in `exit_code`.
void register_serve(CLI::App& app, int& exit_code);
int run_serve(const ServeOptions& options);

}  // namespace queen::cli
