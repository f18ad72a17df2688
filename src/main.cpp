// dgtune: tune an FP8 GEMM kernel family on Hopper and store the winners in a SQLite database.
// Exit codes (README, "Exit codes"): 0 ok, 1 runtime or I/O error (CUDA, NVRTC, SQLite, a damaged DB, writing
// output), 2 bad input (arguments, unreadable or malformed input files, a rule a problem or config breaks),
// 3 gate regression.
#include <csignal>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/error.hpp"
#include "core/escape.hpp"

namespace {

/// After a failed parse: "unknown command 'WORD' (expected one of: ...)" when the deepest command that was given
/// still needs a subcommand and a word of the command line matched nothing; else "".
std::string unknown_command(const CLI::App& app) {
  const CLI::App* cur = &app;
  std::string path = "dgtune";
  while (!cur->get_subcommands().empty()) {
    cur = cur->get_subcommands().front();
    path += " " + cur->get_name();
  }
  if (cur->get_require_subcommand_min() == 0) return {};
  for (const std::string& word : app.remaining(true)) {
    if (word.empty() || word[0] == '-') continue;
    std::string known;
    for (const CLI::App* sub : cur->get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
      known += (known.empty() ? "" : ", ") + sub->get_name();
    return fmt::format("unknown command '{}' for {} (expected one of: {})", dgt::escaped(word), path, known);
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  // A reader that closes the pipe early (`dgtune space ... | head`) is a write error, exit 1 by the exit-code table,
  // not death by SIGPIPE (exit 141): the write then fails with EPIPE and the output check reports it.
  std::signal(SIGPIPE, SIG_IGN);
  // Progress and diagnostics on stderr; tables (the product) on stdout.
  spdlog::set_default_logger(spdlog::stderr_color_mt("dgtune"));
  spdlog::set_pattern("[%H:%M:%S] %^%l%$ %v");

  CLI::App app{"dgtune: FP8 GEMM tuner for Hopper (sm_90a), verified against a reference and timed against cuBLASLt"};
  app.require_subcommand(1);
  app.fallthrough();  // options of the app (--log-level, --version) are accepted after the subcommand too
  // CLI11 quotes the offending argument as typed: escape control bytes (a NUL, an ANSI escape) in it, and cut a
  // line that a huge argument made long.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    std::string text = dgt::escaped_keep_lines(e.what()) + "\n";
    if (a->get_help_ptr() != nullptr) text += "Run with " + a->get_help_ptr()->get_name() + " for more information.\n";
    return text;
  });
  dgt::cli::LogLevelOption log_level;
  log_level.add(app);
  dgt::cli::add_version_flag(app);
  dgt::cli::Action action;
  dgt::cli::add_sweep(app, action);
  dgt::cli::add_info(app, action);
  dgt::cli::add_space(app, action);
  dgt::cli::add_run(app, action);
  dgt::cli::add_trace(app, action);
  dgt::cli::add_compare(app, action);
  dgt::cli::add_export(app, action);
  dgt::cli::add_gate(app, action);
  dgt::cli::add_history(app, action);
  dgt::cli::add_db(app, action);
  dgt::cli::add_shapes(app, action);
  dgt::cli::add_tune_model(app, action);
  dgt::cli::add_worker(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 says only "A subcommand is required" for `dgtune bogus` or `dgtune db frob`: name the word it did not
    // know (left over among the unmatched arguments) and the commands it could have been.
    if (const std::string unknown = unknown_command(app); !unknown.empty())
      return app.exit(CLI::ParseError(unknown, CLI::ExitCodes::ExtrasError)) == 0 ? 0 : 2;
    return app.exit(e) == 0 ? 0 : 2;  // prints the message (help and --version go to stdout, exit 0)
  }
  log_level.apply();
  try {
    return action();
  } catch (const dgt::Error& e) {
    // Users get the message; the source location and failed call are for --log-level debug. Quoted input
    // is escaped where it is quoted (core/escape.hpp); escaping the whole message again is the last guard
    // for a value a message forgot (it keeps the message's own line breaks).
    spdlog::error("{}", dgt::escaped_keep_lines(spdlog::should_log(spdlog::level::debug) ? e.what() : e.message()));
    return e.kind() == dgt::ErrorKind::kUsage || e.kind() == dgt::ErrorKind::kInvalid ? 2 : 1;
  } catch (const std::exception& e) {
    spdlog::error("{}", dgt::escaped_keep_lines(e.what()));
    return 1;
  }
}
