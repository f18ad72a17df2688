// One registration function per subcommand (one file each). Each stores its exit code in `rc`.
#pragma once

#include <CLI/CLI.hpp>

namespace dgt::cli {

void add_sweep(CLI::App& app, int& rc);
void add_info(CLI::App& app, int& rc);
void add_space(CLI::App& app, int& rc);
void add_run(CLI::App& app, int& rc);

}  // namespace dgt::cli
