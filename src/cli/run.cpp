// dgtune run: compile, verify and time one candidate (and optionally cuBLASLt) on one problem.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/paths.hpp"

namespace dgt::cli {

void add_run(CLI::App& app, int& rc) {
  struct Args {
    ProblemOptions problem;
    std::string config, db, format = "table", cache_dir;
    int device = 0;
    bool cublas = false;
    ProtocolOptions protocol;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("run", "compile, verify and time one config on one problem (stored in the DB)");
  args->problem.add(*cmd);
  cmd->add_option("--config", args->config, "config key, e.g. 128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0")->required();
  cmd->add_option("--db", args->db, "tuning database (default $DGTUNE_DB or results/tuning.db)");
  cmd->add_option("--device", args->device, "CUDA device ordinal")->capture_default_str();
  cmd->add_option("--cache-dir", args->cache_dir, "cubin cache directory");
  cmd->add_flag("--cublas", args->cublas, "also measure cuBLASLt default and tuned on the same buffers");
  add_format_option(*cmd, args->format);
  cmd->callback([args, &rc] {
    const Problem p = args->problem.problem();
    const KernelConfig c = KernelConfig::parse_key(args->config);
    SessionOptions so;
    so.db_path = resolve_db_path(args->db);
    so.cache_dir = args->cache_dir;
    so.device = args->device;
    so.protocol = args->protocol;
    TuningSession session(so);
    std::optional<std::pair<BaselineRecord, BaselineRecord>> baselines;
    TrialRecord t = session.run_one(p, c, args->cublas, &baselines);
    std::vector<report::Table> tables{trial_table({t}, "dgtune run on " + session.device().name)};
    if (baselines) tables.push_back(baseline_table({baselines->first, baselines->second}, "cuBLASLt (same buffers, same timer)"));
    report::render_all(tables, report::parse_format(args->format), std::cout);
    rc = t.status == TrialStatus::kOk ? 0 : 1;
  });
}

}  // namespace dgt::cli
