// dgtune: tune an FP8 GEMM kernel family on Hopper and store the winners in a SQLite database.
// Exit codes: 0 ok, 1 error, 2 usage (bad arguments or input files), 3 gate regression.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  // Progress and diagnostics on stderr; tables (the product) on stdout.
  spdlog::set_default_logger(spdlog::stderr_color_mt("dgtune"));
  spdlog::set_pattern("[%H:%M:%S] %^%l%$ %v");

  CLI::App app{"dgtune: FP8 GEMM tuner for Hopper (sm_90a), verified against a reference and timed against cuBLASLt"};
  app.require_subcommand(1);
  app.fallthrough();  // options of the app (--log-level, --version) are accepted after the subcommand too
  dgt::cli::LogLevelOption log_level;
  log_level.add(app);
  dgt::cli::add_version_flag(app);
  dgt::cli::Action action;
  dgt::cli::add_sweep(app, action);
  dgt::cli::add_info(app, action);
  dgt::cli::add_space(app, action);
  dgt::cli::add_run(app, action);
  dgt::cli::add_compare(app, action);
  dgt::cli::add_export(app, action);
  dgt::cli::add_gate(app, action);
  dgt::cli::add_history(app, action);
  dgt::cli::add_db(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // prints the message (help and --version go to stdout, exit 0)
  }
  log_level.apply();
  try {
    return action();
  } catch (const dgt::Error& e) {
    // Users get the message; the source location and failed call are for --log-level debug.
    spdlog::error("{}", spdlog::should_log(spdlog::level::debug) ? e.what() : e.message());
    return e.kind() == dgt::ErrorKind::kUsage || e.kind() == dgt::ErrorKind::kInvalid ? 2 : 1;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}
