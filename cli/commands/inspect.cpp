// cli/commands/inspect.cpp — registers `queen inspect log|state`; the work is in inspect_*.cpp.
#include "commands/inspect.hpp"

#include <CLI/CLI.hpp>
#include <memory>

namespace queen::cli {

void register_inspect(CLI::App& app, int& exit_code) {
    auto* inspect =
        app.add_subcommand("inspect", "Read LMDB state and log segments on disk, read-only");
    inspect->require_subcommand(1);

    auto log_options = std::make_shared<InspectLogOptions>();
    auto* log = inspect->add_subcommand(
        "log", "Decode the log segments of DIR (a tenant's log/ directory)");
    log->add_option("dir", log_options->dir, "Directory holding *.seg files")->required();
    log->add_flag("--verify", log_options->verify,
                  "Check every record's CRC; exit 4 on corruption");
    log->add_flag("--json", log_options->json, "Print JSON");
    log->callback([log_options, &exit_code] { exit_code = run_inspect_log(*log_options); });

    auto state_options = std::make_shared<InspectStateOptions>();
    auto* state =
        inspect->add_subcommand("state", "List the LMDB tables of DIR with entry counts and sizes");
    state
        ->add_option("dir", state_options->dir,
                     "Directory holding data.mdb (a tenant's state/ directory)")
        ->required();
    state->add_flag("--json", state_options->json, "Print JSON");
    state->callback([state_options, &exit_code] { exit_code = run_inspect_state(*state_options); });
}

}  // namespace queen::cli
