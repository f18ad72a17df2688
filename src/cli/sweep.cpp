// dgtune sweep: tune every shape of a shapes file; winners table on stdout, progress on stderr.
#include <spdlog/spdlog.h>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/sweep_run.hpp"
#include "cli/tables.hpp"
#include "core/paths.hpp"
#include "db/writer_check.hpp"
#include "device/device_info.hpp"
#include "tune/interrupt.hpp"
#include "worker/worker_sweep.hpp"

namespace dgt::cli {

namespace {
struct Args {
  ShapesOption shapes;
  ShardOption shard;
  SpaceOption space;
  std::string strategy = "exhaustive";
  std::string protocol = "cold-l2";
  int top_k = 16, max_candidates = 0, jobs = 0;
  int rounds = 0;  ///< 0: not given (hot-graph: SessionOptions' default)
  double budget_s = 0;
  DbOption db;
  DeviceOption device;
  CacheDirOption cache;
  TimingOptions timing;
  BaselineSwitch baseline{true};
  FormatOption format{report::kSweepDocument};
  std::string devices;      ///< --devices: "all" or "0,1,..."; empty = --device
  bool in_process = false;  ///< --in-process: measure in this process (debuggers, sanitizers)
};

int run(const Args& a) {
  // The whole file is checked before the GPU or the DB is opened; --shard keeps this machine's share.
  const auto shapes = a.shard.select(a.shapes.load(/*with_grouped=*/true), a.shapes.path);
  if (shapes.empty()) return 0;  // an empty shard (logged by select): no GPU, no DB file
  SweepOptions sweep;
  sweep.space = a.space.load();
  sweep.strategy = a.strategy == "model" ? Strategy::kModel : Strategy::kExhaustive;
  sweep.top_k = a.top_k;
  sweep.max_candidates = a.max_candidates;
  sweep.budget_s = a.budget_s;
  sweep.baselines = a.baseline.on;
  SessionOptions so = session_options(a.db, a.device, a.cache, a.timing);
  // The DB the sweep writes is never one of its inputs, and must open for writing; both checked (read-only) before
  // the GPU, so a sweep that cannot run leaves every file as it was.
  check_not_an_input(so.db_path, a.db.flag(), {{"--shapes", a.shapes.path}, {"--space", a.space.path}});
  check_db_writable(so.db_path, a.db.flag());
  so.compile_threads = a.jobs;
  so.kind = parse_protocol_kind(a.protocol);
  if (a.rounds > 0 && so.kind != ProtocolKind::kHotGraph)
    DGT_THROW(ErrorKind::kUsage,
              "--rounds = {} applies to --protocol hot-graph only (--protocol {} times each candidate with the "
              "adaptive timer: see --min-samples, --max-samples, --target-rse)",
              a.rounds, a.protocol);
  if (a.rounds > 0) so.hot_graph_rounds = a.rounds;
  if (a.in_process && !a.devices.empty())
    DGT_THROW(ErrorKind::kUsage, "--in-process measures on one device (--device N); --devices needs worker processes");
  // The devices last: a missing GPU is exit 1 whether it was named by --device or --devices.
  std::vector<int> devices{so.device};
  if (!a.devices.empty())
    devices = parse_devices(a.devices, cuda_device_count());
  else
    require_device(so.device);
  const auto [outcomes, device_name] =
      a.in_process ? sweep_in_process(so, shapes, sweep) : sweep_in_workers(so, devices, shapes, sweep);
  const std::string protocol = so.kind == ProtocolKind::kHotGraph
                                   ? fmt::format("{}, {} rounds", so.protocol_name(), so.hot_graph_rounds)
                                   : so.protocol_name();
  a.format.render(winners_table(outcomes, "dgtune sweep " + a.shapes.path + " on " + device_name +
                                              " tuned for protocol " + protocol + " (db " + so.db_path +
                                              ", speedup = cuBLASLt us / dgtune us under the same protocol; each "
                                              "side uses the shape's accumulation mode)"));
  if (stop_requested()) {
    int stored = 0, left = 0;
    for (const auto& o : outcomes) {
      stored += o.measured_now;
      left += o.complete ? 0 : 1;
    }
    spdlog::warn(
        "sweep stopped by signal {}: {} trials stored by this run, {} shapes incomplete; the DB is consistent. Run "
        "the same command again to resume (stored trials are not measured again).",
        stop_signal(), stored, left);
    return stop_signal() > 0 ? 128 + stop_signal() : kInterruptedExitCode;  // 130 for SIGINT, 143 for SIGTERM
  }
  return 0;
}
}  // namespace

void add_sweep(CLI::App& app, Action& action) {
  auto [cmd, a] = add_command<Args>(app, action, "sweep",
                                    "compile, verify and time every candidate for every shape; store all trials", run);
  add_groups(cmd, a.shapes, a.shard, a.space);
  cmd.add_option("--strategy", a.strategy,
                 "exhaustive: every kept candidate; model: only the --top-k best by the analytic estimate")
      ->check(CLI::IsMember({"exhaustive", "model"}))
      ->capture_default_str();
  cmd.add_option("--top-k", a.top_k, "with --strategy model: candidates to measure per shape (a dense line also measures the loader's "
                 "default config when the K best leave it out)")
      ->transform(count(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  cmd.add_option("--max-candidates", a.max_candidates,
                 "exhaustive strategy: measure at most N candidates per shape, the best N by the analytic estimate "
                 "(0 = all)")
      ->transform(count(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  cmd.add_option("--budget-s", a.budget_s,
                 "per shape: stop measuring after S seconds; the shape is marked incomplete and a later run continues "
                 "(0 = no limit)")
      ->transform(real(0))
      ->capture_default_str();
  cmd.add_option("--protocol", a.protocol,
                 "what to tune for: cold-l2 (the adaptive cold-L2 timer, stored as cold-l2-v1) or hot-graph (warm L2, "
                 "CUDA graph of back-to-back launches, stored as hot-graph-v1); trials, baselines and winners are kept "
                 "per protocol")
      ->check(CLI::IsMember({"cold-l2", "hot-graph"}))
      ->capture_default_str();
  cmd.add_option("--rounds", a.rounds,
                 fmt::format("with --protocol hot-graph: samples (graph replays) per candidate and per cuBLASLt "
                             "algorithm (default {})",
                             SessionOptions{}.hot_graph_rounds))
      ->transform(count(1, 100000));
  cmd.add_option("--jobs", a.jobs, "compile threads (0 = all cores)")
      ->transform(count(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  add_groups(cmd, a.db, a.device, a.cache, a.timing, a.baseline, a.format);
  cmd.add_option("--devices", a.devices,
                 "measure on several GPUs: 'all' or a list of ordinals (0,1,3); one worker process per GPU, each shape "
                 "measured entirely on one of them (default: the --device GPU)")
      ->excludes(cmd.get_option("--device"))
      ->group("Device");
  cmd.add_flag("--in-process", a.in_process,
               "measure in this process instead of a worker process (for cuda-gdb or compute-sanitizer); the first "
               "candidate that crashes or hangs then ends the run")
      ->group("Device");
}

}  // namespace dgt::cli
