// How a subcommand is declared. A command file has three parts: an Args struct (the option groups of
// options.hpp it uses, plus its own flags), a run function that makes one call into library code and
// renders the result, and add_<name>() that declares the flags. Parsing only records which command was
// chosen; main() runs it after the whole command line is parsed (so global options such as
// --log-level take effect first, wherever they appear) and maps exceptions to exit codes.
//
// A new command with DB + device + timing + format options is this much:
//
//   namespace {
//   struct Args {
//     DbOption db;
//     DeviceOption device;
//     CacheDirOption cache;
//     TimingOptions timing;
//     FormatOption format;
//     std::string against;                     // the command's own flags
//   };
//   int run(const Args& a) {
//     TuningSession session(session_options(a.db, a.device, a.cache, a.timing));
//     a.format.render(some_table(session.db()...));
//     return 0;
//   }
//   }  // namespace
//   void add_compare(CLI::App& app, Action& action) {
//     auto [cmd, a] = add_command<Args>(app, action, "compare", "one line for --help", run);
//     cmd.add_option("--against", a.against, "...")->required();
//     add_groups(cmd, a.db, a.device, a.cache, a.timing, a.format);
//   }
//
// plus one line in commands.hpp and one in main.cpp.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace dgt::cli {

/// The chosen command, bound to its parsed arguments; returns the exit code. Empty until parsed.
using Action = std::function<int()>;

template <class Args>
struct Command {
  CLI::App& cmd;  ///< add the command's flags here
  Args& args;     ///< lives as long as the app
};

/// Adds subcommand `name`; when the command line selects it, `action` becomes run(args).
template <class Args>
Command<Args> add_command(CLI::App& app, Action& action, const std::string& name, const std::string& description,
                          int (*run)(const Args&)) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(name, description);
  cmd->callback([&action, args, run] { action = [args, run] { return run(*args); }; });
  return {*cmd, *args};
}

}  // namespace dgt::cli
