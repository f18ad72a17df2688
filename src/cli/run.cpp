// dgtune run: compile, verify and time one candidate (and optionally cuBLASLt) on one problem.
#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/tables.hpp"

namespace dgt::cli {

namespace {
struct Args {
  ProblemOptions problem;
  std::string config;
  DbOption db;
  DeviceOption device;
  CacheDirOption cache;
  TimingOptions timing;
  BaselineSwitch baseline{false};
  FormatOption format{report::kRunDocument};
};

int run(const Args& a) {
  // Every input check (the problem's rules, then every rule of the config against it) before the GPU or
  // the DB is opened: an illegal config is bad input (exit 2), never a stored "rejected" trial.
  const Problem p = a.problem.problem();
  const KernelConfig c = checked_config("--config", a.config, {{"", p}});
  TuningSession session(session_options(a.db, a.device, a.cache, a.timing));
  std::optional<std::pair<BaselineRecord, BaselineRecord>> baselines;
  const TrialRecord t = session.run_one(p, c, a.baseline.on, &baselines);
  a.format.render(run_tables(t, baselines, session.device().name));
  return t.status == TrialStatus::kOk ? 0 : 1;
}
}  // namespace

void add_run(CLI::App& app, Action& action) {
  auto [cmd, a] = add_command<Args>(app, action, "run",
                                    "compile, verify and time one config on one problem (stored in the DB)", run);
  add_groups(cmd, a.problem);
  cmd.add_option("--config", a.config, "config key, e.g. 128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0")->required();
  add_groups(cmd, a.db, a.device, a.cache, a.timing, a.baseline, a.format);
}

}  // namespace dgt::cli
