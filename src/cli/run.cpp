// dgtune run: compile, verify and time one candidate (and optionally cuBLASLt) on one problem.
#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/tables.hpp"

#include <iostream>

#include "bench/grouped_run.hpp"
#include "core/error.hpp"
#include "problem/grouped_problem.hpp"
#include "report/table.hpp"
#include "space/grouped_rules.hpp"

namespace dgt::cli {

namespace {
struct Args {
  ProblemOptions problem;
  std::string grouped;  ///< --grouped SPEC: a grouped (MoE) problem instead of --m/--n/--k
  std::string config;
  DbOption db;
  DeviceOption device;
  CacheDirOption cache;
  TimingOptions timing;
  BaselineSwitch baseline{false};
  FormatOption format{report::kRunDocument};
};

/// `run --grouped`: one grouped problem, verified per group and timed; nothing is stored (`dgtune sweep` stores
/// grouped problems). The table's tflops count real rows only: 2 x sum(m_g) x N x K / median.
int run_grouped_problem(const Args& a) {
  if (a.problem.m || a.problem.n || a.problem.k)
    DGT_THROW(ErrorKind::kUsage, "--grouped takes N and K from its SPEC: drop --m, --n and --k");
  if (a.baseline.on)
    DGT_THROW(ErrorKind::kUsage, "--grouped has no cuBLASLt baseline yet (drop --baseline)");
  const GroupedProblem g = parse_grouped_problem(a.grouped, "--grouped");
  const KernelConfig c = KernelConfig::parse_key(a.config);
  // Every rule of the config against the problem before the GPU is opened: a bad config is bad input (exit 2).
  if (const std::string v = grouped_config_violation(c, g); !v.empty())
    DGT_THROW(ErrorKind::kUsage, "--config {} cannot run {}: {}", c.key(), g.label(), v);
  GroupedRunOptions o;
  o.device = a.device.ordinal;
  o.cache_dir = a.cache.dir;
  o.protocol = a.timing.checked();
  o.seed = a.timing.seed;
  const GroupedRunResult r = run_grouped(g, c, o);
  report::Table t;
  t.title = "grouped " + g.label() + " on " + r.device_name;
  t.columns = {{"kernel", "kernel", false}, {"kind", "kind", false}, {"groups", "G"},     {"real_rows", "rows"},
               {"n", "N"},                  {"k", "K"},                {"grid", "grid"},    {"ok", "ok"},
               {"max_rel_err", "max rel err"}, {"diff", "diff"},       {"nan", "nan"},      {"pad_touched", "unwritten rows touched"},
               {"us", "us"},                {"tflops", "TFLOPS"},     {"protocol", "protocol", false}};
  const bool timed = r.timing.samples > 0;
  t.rows.push_back({r.kernel, std::string(to_string(g.kind)), int64_t(g.groups), g.real_rows(), g.n, g.k,
                    int64_t(r.grid), r.verification.ok, report::Number{r.verification.max_rel_err, 6},
                    report::Number{r.verification.diff, 9}, r.verification.nan_count, r.verification.pad_touched,
                    timed ? report::Cell(report::Number{r.timing.median_us, 2}) : report::Cell(),
                    timed ? report::Cell(report::Number{r.tflops, 1}) : report::Cell(),
                    timed ? report::Cell(std::string("cold-l2-v1")) : report::Cell()});
  report::render(t, report::parse_format(a.format.name), std::cout);
  return r.verification.ok ? 0 : 1;
}

int run(const Args& a) {
  if (!a.grouped.empty()) return run_grouped_problem(a);
  if (a.problem.m == 0 || a.problem.n == 0 || a.problem.k == 0)
    DGT_THROW(ErrorKind::kUsage, "--m, --n and --k are required (or --grouped SPEC)");
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
  // --m/--n/--k are required unless --grouped gives the problem (checked in run()).
  for (const char* dim : {"--m", "--n", "--k"}) cmd.get_option(dim)->required(false);
  cmd.add_option("--grouped", a.grouped,
                  "a grouped (MoE) problem instead of --m/--n/--k: 'kind=contiguous groups=G m_per_group=ROWS N K' or "
                  "'kind=masked groups=G masked_m=ROWS [m_max=M] [expected_m=E] N K', [scale=tensor|block] "
                  "[accum=promote|fast]; ROWS a list, one count, skew:SEED:TOTAL or route:SEED:TOKENS:TOPK "
                  "(docs/cli.md)")
      ->group("Problem");
  cmd.add_option("--config", a.config, "config key, e.g. 128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0")->required();
  add_groups(cmd, a.db, a.device, a.cache, a.timing, a.baseline, a.format);
}

}  // namespace dgt::cli
