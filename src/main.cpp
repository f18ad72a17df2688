// dgtune: tune an FP8 GEMM kernel family on Hopper and store the winners in a SQLite database.
// Exit codes: 0 ok, 1 error, 2 usage (bad arguments or input files), 3 gate regression.
#include <iostream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  // Progress and diagnostics on stderr; tables (the product) on stdout.
  spdlog::set_default_logger(spdlog::stderr_color_mt("dgtune"));
  spdlog::set_pattern("[%H:%M:%S] %^%l%$ %v");

  CLI::App app{"dgtune: FP8 GEMM tuner for Hopper (sm_90a), verified against a reference and timed against cuBLASLt"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace | debug | info | warn | error")->capture_default_str();
  app.parse_complete_callback([&] { spdlog::set_level(spdlog::level::from_str(log_level)); });
  int rc = 0;
  dgt::cli::add_sweep(app, rc);
  dgt::cli::add_info(app, rc);
  dgt::cli::add_space(app, rc);
  dgt::cli::add_run(app, rc);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const dgt::Error& e) {
    spdlog::error("{}", e.what());
    return e.kind() == dgt::ErrorKind::kUsage || e.kind() == dgt::ErrorKind::kInvalid ? 2 : 1;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return rc;
}
