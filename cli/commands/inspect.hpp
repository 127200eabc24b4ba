// cli/commands/inspect.hpp — `queen inspect`: read-only decoding of log segments and LMDB state.
#pragma once

#include <filesystem>

namespace CLI {
class App;
}

namespace queen::cli {

struct InspectLogOptions {
    std::filesystem::path dir;
    bool verify = false;  // recompute every CRC; exit 4 on a mismatch
    bool json = false;
};

struct InspectStateOptions {
    std::filesystem::path dir;
    bool json = false;
};

/// Adds `inspect log` and `inspect state`; the chosen command's exit code lands in `exit_code`.
void register_inspect(CLI::App& app, int& exit_code);
int run_inspect_log(const InspectLogOptions& options);      // inspect_log.cpp
int run_inspect_state(const InspectStateOptions& options);  // inspect_state.cpp

}  // namespace queen::cli
