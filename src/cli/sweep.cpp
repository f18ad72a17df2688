// dgtune sweep: tune every shape of a shapes file; winners table on stdout, progress on stderr.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/paths.hpp"
#include "problem/shapes_file.hpp"

namespace dgt::cli {

namespace {
struct SweepArgs {
  std::string shapes, db, space, format = "table", cache_dir;
  int device = 0, max_candidates = 0, jobs = 0, top_k = 16;
  double budget_s = 0;
  std::string strategy = "exhaustive";
  uint64_t seed = 20261129;
  bool no_baseline = false;
  ProtocolOptions protocol;
};

/// Every line's rule violations, each as "file:line: message", so the user fixes the file once.
void validate_all(const std::vector<ShapeEntry>& shapes) {
  std::string errors;
  int bad = 0;
  for (const auto& s : shapes) {
    try {
      validate_problem(s.problem);
    } catch (const Error& e) {
      errors += "\n  " + s.where() + ": " + e.message();
      ++bad;
    }
  }
  if (bad) DGT_THROW(ErrorKind::kUsage, "{} of {} shapes break a rule; nothing was measured:{}", bad, shapes.size(), errors);
}
}  // namespace

void add_sweep(CLI::App& app, int& rc) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand("sweep", "compile, verify and time every candidate for every shape; store all trials");
  cmd->add_option("--shapes", args->shapes, "shapes file (one 'M N K [key=value ...]' per line)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--db", args->db, "tuning database (default $DGTUNE_DB or results/tuning.db)");
  cmd->add_option("--device", args->device, "CUDA device ordinal")->capture_default_str();
  cmd->add_option("--max-candidates", args->max_candidates,
                  "exhaustive strategy: measure at most N candidates per shape, the best N by the analytic estimate "
                  "(0 = all)")
      ->capture_default_str();
  cmd->add_option("--strategy", args->strategy,
                  "exhaustive: every kept candidate; model: only the --top-k best by the analytic estimate")
      ->check(CLI::IsMember({"exhaustive", "model"}))
      ->capture_default_str();
  cmd->add_option("--top-k", args->top_k, "with --strategy model: candidates to measure per shape")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--budget-s", args->budget_s,
                  "per shape: stop measuring after S seconds; the shape is marked incomplete and a later run continues")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--space", args->space, "search space JSON (default: configs/spaces/sm90-default.json, built in)");
  cmd->add_option("--seed", args->seed, "input fill seed")->capture_default_str();
  cmd->add_option("--jobs", args->jobs, "compile threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--cache-dir", args->cache_dir, "cubin cache directory (default $DGTUNE_CACHE_DIR or ~/.cache/dgtune)");
  cmd->add_flag("--no-baseline", args->no_baseline, "skip the cuBLASLt baselines");
  cmd->add_option("--min-samples", args->protocol.min_samples, "timing: minimum samples")->capture_default_str();
  cmd->add_option("--max-samples", args->protocol.max_samples, "timing: maximum samples")->capture_default_str();
  cmd->add_option("--target-rse", args->protocol.target_rse, "timing: stop at this relative standard error of the median")
      ->capture_default_str();
  add_format_option(*cmd, args->format);
  cmd->callback([args, &rc] {
    if (args->protocol.max_samples < 1 || args->protocol.max_samples < args->protocol.min_samples)
      DGT_THROW(ErrorKind::kUsage, "--max-samples = {} must be >= 1 and >= --min-samples = {}", args->protocol.max_samples,
                args->protocol.min_samples);
    auto shapes = load_shapes_file(args->shapes);
    if (shapes.empty()) DGT_THROW(ErrorKind::kUsage, "{}: no shapes (every line is blank or a comment)", args->shapes);
    validate_all(shapes);
    SweepOptions sweep;
    if (!args->space.empty()) sweep.space = SearchSpace::load(args->space);
    sweep.max_candidates = args->max_candidates;
    sweep.strategy = args->strategy == "model" ? Strategy::kModel : Strategy::kExhaustive;
    sweep.top_k = args->top_k;
    sweep.budget_s = args->budget_s;
    sweep.baselines = !args->no_baseline;
    SessionOptions so;
    so.db_path = resolve_db_path(args->db);
    so.cache_dir = args->cache_dir;
    so.device = args->device;
    so.protocol = args->protocol;
    so.seed = args->seed;
    so.compile_threads = args->jobs;
    TuningSession session(so);
    auto outcomes = session.sweep(shapes, sweep);
    const std::string title = "dgtune sweep " + args->shapes + " on " + session.device().name + " (db " + so.db_path +
                              ", speedup = cuBLASLt us / dgtune us; each side uses the shape's accumulation mode)";
    report::render(winners_table(outcomes, title), report::parse_format(args->format), std::cout);
    rc = 0;
  });
}

}  // namespace dgt::cli
