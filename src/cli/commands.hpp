// One registration function per subcommand (one file each; see command.hpp for the pattern). When the
// command line selects the subcommand, `action` is bound to it; main() runs it after parsing.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.hpp"

namespace dgt::cli {

void add_sweep(CLI::App& app, Action& action);
void add_info(CLI::App& app, Action& action);
void add_space(CLI::App& app, Action& action);
void add_run(CLI::App& app, Action& action);
void add_trace(CLI::App& app, Action& action);
void add_compare(CLI::App& app, Action& action);
void add_export(CLI::App& app, Action& action);
void add_gate(CLI::App& app, Action& action);
void add_history(CLI::App& app, Action& action);
void add_db(CLI::App& app, Action& action);
void add_shapes(CLI::App& app, Action& action);
void add_tune_model(CLI::App& app, Action& action);
void add_worker(CLI::App& app, Action& action);

}  // namespace dgt::cli
