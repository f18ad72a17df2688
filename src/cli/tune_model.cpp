// dgtune tune-model: every dense GEMM of a Hugging Face model at every M of a ladder (with --experts also its routed
// experts' grouped GEMMs at the grouped ladder), in one command: the shapes file (`dgtune shapes`), a sweep with the
// model strategy (`dgtune sweep --strategy model`), the export (`dgtune export --format json`) and a summary per
// layer, with progress (shape i of n, elapsed, ETA) on stderr.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/export_text.hpp"
#include "cli/options.hpp"
#include "cli/sweep_run.hpp"
#include "cli/tables.hpp"
#include "core/output_file.hpp"
#include "db/writer_check.hpp"
#include "device/device_info.hpp"
#include "loader/choice.hpp"
#include "problem/model_gemms.hpp"
#include "tune/interrupt.hpp"

namespace dgt::cli {

namespace {
struct Args {
  ModelOption model;
  int top_k = 16, jobs = 0;
  int grouped_top_k = 8;  ///< --grouped-top-k: candidates per grouped (routed-expert) line
  double budget_s = 0;
  std::string protocol = "cold-l2";
  std::string out_dir = ".";
  DbOption db;
  DeviceOption device;
  CacheDirOption cache;
  TimingOptions timing;
  FormatOption format{report::kSweepDocument};
};

namespace fs = std::filesystem;

/// The model's name for file names: the config file's stem, or its folder's name for a file called config.json
/// (how Hugging Face checkouts name it).
std::string model_name(const std::string& config_path) {
  const fs::path p = fs::absolute(config_path);
  std::string name = p.stem().string();
  if (name == "config" && p.has_parent_path() && !p.parent_path().filename().empty())
    name = p.parent_path().filename().string();
  return name;
}

/// A grouped line's role: its name without the model prefix and the ladder point,
/// "<model>.experts.gate_up_proj.ep8.masked.em16" -> "experts.gate_up_proj.ep8.masked".
std::string grouped_role(const std::string& name) {
  std::string role = name;
  if (const size_t dot = role.find('.'); dot != std::string::npos) role = role.substr(dot + 1);
  if (const size_t dot = role.rfind('.'); dot != std::string::npos) role = role.substr(0, dot);
  return role;
}

/// One line per grouped role: how many ladder points, the kernel's geomean and worst x against the per-group cuBLASLt
/// loop (the grouped baseline, stored as cublaslt-default).
void log_grouped_summary(const std::vector<ShapeOutcome>& outcomes) {
  struct Role {
    int shapes = 0, timed = 0;
    double log_sum = 0, worst = INFINITY;
  };
  std::map<std::string, Role> roles;
  for (const ShapeOutcome& o : outcomes) {
    if (!o.entry.grouped) continue;
    Role& r = roles[grouped_role(o.entry.name)];
    ++r.shapes;
    if (!o.winner || !o.winner->trial.timing || !o.winner->cublas_default || !o.winner->cublas_default->timing) continue;
    const double ours = o.winner->trial.timing->median_us, loop = o.winner->cublas_default->timing->median_us;
    if (!(ours > 0) || !(loop > 0)) continue;
    ++r.timed;
    r.log_sum += std::log(loop / ours);
    r.worst = std::min(r.worst, loop / ours);
  }
  if (roles.empty()) return;
  spdlog::info("grouped summary (x = per-group cuBLASLt loop us / dgtune grouped kernel us):");
  for (const auto& [role, r] : roles)
    spdlog::info("  {:<40} {:>3} points  kernel geomean x {:.3f}, worst {:.3f}", role, r.shapes,
                 r.timed ? std::exp(r.log_sum / r.timed) : NAN, r.timed ? r.worst : NAN);
}

/// One line per layer role (the name= of the shapes file without the model prefix): how many M, the kernel's geomean
/// and worst x against cuBLASLt-tuned, and how many M dispatch cuBLASLt (its stored algorithm was faster: the loader
/// runs it, docs/loader.md "cuBLASLt as a backend"). Grouped lines have their own lines (log_grouped_summary).
void log_summary(const std::vector<ShapeOutcome>& outcomes) {
  struct Role {
    int shapes = 0, timed = 0, cublaslt = 0;
    double log_sum = 0, worst = INFINITY;
  };
  std::map<std::string, Role> roles;
  for (const ShapeOutcome& o : outcomes) {
    if (o.entry.grouped) continue;
    std::string role = o.entry.name;
    if (const size_t dot = role.find('.'); dot != std::string::npos) role = role.substr(dot + 1);  // <model>.<role>
    Role& r = roles[role];
    ++r.shapes;
    if (!o.winner || !o.winner->trial.timing || !o.winner->cublas_tuned || !o.winner->cublas_tuned->timing) continue;
    const double ours = o.winner->trial.timing->median_us, lt = o.winner->cublas_tuned->timing->median_us;
    if (!(ours > 0) || !(lt > 0)) continue;
    ++r.timed;
    r.log_sum += std::log(lt / ours);
    r.worst = std::min(r.worst, lt / ours);
    if (stored_algo_beats_kernel(o.entry.problem, ours, lt, o.winner->cublas_tuned->algo_data.size())) ++r.cublaslt;
  }
  spdlog::info("summary (x = cuBLASLt-tuned us / dgtune kernel us; dispatch: what dgt::Gemm runs, the faster of the "
               "two):");
  for (const auto& [role, r] : roles)
    spdlog::info("  {:<32} {:>3} M  kernel geomean x {:.3f}, worst {:.3f}; cuBLASLt dispatched at {} M", role, r.shapes,
                 r.timed ? std::exp(r.log_sum / r.timed) : NAN, r.timed ? r.worst : NAN, r.cublaslt);
}

int run(const Args& a) {
  const auto t0 = std::chrono::steady_clock::now();
  auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  // 1. The shapes (no GPU): every line checked as a shapes file would be.
  const ModelConfig config = load_model_config(a.model.config);  // read once: --hf-config may be a pipe
  const std::string text = a.model.shapes_text(config);
  const std::string model = model_name(a.model.config);
  // With --experts the expert parallelism shapes the grouped lines, so it is part of the file names.
  const std::string stem = a.model.experts ? fmt::format("{}-tp{}-ep{}", model, a.model.split.tp, a.model.split.ep)
                                           : fmt::format("{}-tp{}", model, a.model.split.tp);
  const std::string shapes_path = (fs::path(a.out_dir) / (stem + ".shapes.txt")).string();
  const std::string export_path = (fs::path(a.out_dir) / (stem + ".export.json")).string();
  SessionOptions so = session_options(a.db, a.device, a.cache, a.timing);
  so.compile_threads = a.jobs;
  so.kind = parse_protocol_kind(a.protocol);
  // Every output is checked before the GPU is opened: a run that cannot write its results does not start.
  check_output_paths({{"--out-dir (shapes)", shapes_path}, {"--out-dir (export)", export_path}},
                     {{"--hf-config", a.model.config}, {a.db.flag(), so.db_path, true}});
  check_db_writable(so.db_path, a.db.flag());
  const std::vector<ShapeEntry> shapes =
      a.model.experts ? parse_shapes_with_grouped(text, shapes_path) : parse_shapes(text, shapes_path);
  require_device(so.device);
  write_output_file(shapes_path, text);
  spdlog::info("tune-model {}: {} GEMMs at tensor parallelism {} -> {} shapes ({})", model,
               dense_gemms(config, a.model.split).size(), a.model.split.tp, shapes.size(), shapes_path);
  if (a.model.experts) {
    const auto grouped = std::count_if(shapes.begin(), shapes.end(), [](const ShapeEntry& e) { return e.grouped.has_value(); });
    spdlog::info("tune-model {}: {} of them routed-expert grouped GEMMs at expert parallelism {}, top {} candidates each",
                 model, grouped, a.model.split.ep, a.grouped_top_k);
  }

  // 2. The sweep: the model strategy's top-k candidates of every shape, with the cuBLASLt baselines (and their
  //    algorithms, which the loader may dispatch).
  SweepOptions sweep;
  sweep.space = SpaceOption{}.load();
  sweep.strategy = Strategy::kModel;
  sweep.top_k = a.top_k;
  sweep.grouped_top_k = a.grouped_top_k;
  sweep.budget_s = a.budget_s;
  sweep.baselines = true;
  const auto [outcomes, device_name] = sweep_in_workers(so, {so.device}, shapes, sweep);
  const double sweep_s = since();

  // 3. The export and the summary.
  // The swept device's winners (a DB may hold several devices').
  if (!stop_requested())
    write_output_file(export_path, export_text(so.db_path, open_device(so.device).hardware().key(), "json", ""));
  a.format.render(winners_table(outcomes, fmt::format("dgtune tune-model {} (TP {}) on {} tuned for protocol {} (db {}, "
                                                      "shapes {}, export {}; speedup = cuBLASLt us / dgtune us)",
                                                      model, a.model.split.tp, device_name, so.protocol_name(), so.db_path,
                                                      shapes_path, export_path)));
  log_summary(outcomes);
  log_grouped_summary(outcomes);
  int measured = 0;
  for (const ShapeOutcome& o : outcomes) measured += o.measured_now;
  spdlog::info("tune-model {}: {} shapes, {} trials measured now, {:.0f} s in all ({:.0f} s sweeping); DB {}, export {}",
               model, shapes.size(), measured, since(), sweep_s, so.db_path, export_path);
  if (stop_requested()) {
    spdlog::warn("tune-model stopped by signal {}: run the same command again to resume (stored trials are kept)",
                 stop_signal());
    return stop_signal() > 0 ? 128 + stop_signal() : kInterruptedExitCode;
  }
  return 0;
}
}  // namespace

void add_tune_model(CLI::App& app, Action& action) {
  auto [cmd, a] = add_command<Args>(
      app, action, "tune-model",
      "tune every dense GEMM of a Hugging Face model at every M of a ladder (--experts: and its routed experts' grouped "
      "GEMMs): shapes, sweep (model strategy), export, summary",
      run);
  a.model.add(cmd);
  cmd.add_option("--top-k", a.top_k, "candidates measured per shape (the model strategy's best by the estimate)")
      ->transform(count(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  cmd.add_option("--grouped-top-k", a.grouped_top_k,
                 "with --experts: candidates measured per grouped line (grouped kernels compile several times slower)")
      ->transform(count(1, std::numeric_limits<int>::max()))
      ->capture_default_str()
      ->needs(cmd.get_option("--experts"));
  cmd.add_option("--budget-s", a.budget_s, "per shape: stop measuring after S seconds (0 = no limit)")
      ->transform(real(0))
      ->capture_default_str();
  cmd.add_option("--protocol", a.protocol, "what to tune for: cold-l2 or hot-graph (as `dgtune sweep --protocol`)")
      ->check(CLI::IsMember({"cold-l2", "hot-graph"}))
      ->capture_default_str();
  cmd.add_option("--jobs", a.jobs, "compile threads (0 = all cores)")
      ->transform(count(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  cmd.add_option("--out-dir", a.out_dir, "where MODEL-tpN.shapes.txt and MODEL-tpN.export.json are written "
                                         "(MODEL-tpN-epE.* with --experts)")
      ->check(CLI::ExistingDirectory)
      ->capture_default_str();
  add_groups(cmd, a.db, a.device, a.cache, a.timing, a.format);
}

}  // namespace dgt::cli
