// dgtune_fake_sweep: the sweep loop (tune/sweep_loop.hpp) with a deterministic fake Measurer instead of a
// GPU, for CPU tests of resume, SIGINT, SIGKILL, concurrent sweeps and a full disk
// (tests/unit/test_sweep_robustness.cpp) and of shards (tests/unit/test_shard.cpp, tests/cli/slurm_sweep.sh).
// Same DB code, same loop, same interrupt handling and exit codes as `dgtune sweep`: 0 done, 1 error (message
// on stderr), 2 bad input, 130 stopped by SIGINT. Two forms:
//
//   dgtune_fake_sweep DB LOG CANDIDATES DELAY_MS
//     Sweeps two fixed shapes, the best CANDIDATES configs of each.
//   dgtune_fake_sweep sweep --shapes FILE [--shard i/n] [--db PATH] [--max-candidates N] [--log LOG] [--delay-ms MS]
//                           [--workers N]
//     `dgtune sweep`'s command line for what the fake does: --shapes, --shard and --db are the real option groups
//     (cli/options.hpp, compiled in), so the file is checked, split and logged exactly as `dgtune sweep` does;
//     scripts/slurm_sweep.sh runs this form through DGTUNE_SWEEP_BIN. --max-candidates defaults to 4. --workers N
//     measures in N dgtune_fake_worker processes (tests/fake/fake_worker.cpp), one lane each, as `dgtune sweep
//     --devices` does; they log "measured <pci> <problem> <config>" lines and "worker <pid>" when they start.
//
// Every measurement sleeps DELAY_MS and appends "measured <pid> <problem> <config>" to LOG (O_APPEND: lines of
// concurrent processes do not mix), or "REMEASURED ..." when that trial was already stored (the resume
// guarantee broken). The fake "time" of a candidate is a hash of its config key.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "cli/options.hpp"
#include "core/error.hpp"
#include "db/tuning_db.hpp"
#include "fake_common.hpp"
#include "tune/interrupt.hpp"
#include "tune/measurer.hpp"
#include "tune/sweep_loop.hpp"
#include "worker/worker_measurer.hpp"

namespace {

using namespace dgt;

/// The fake measurement (fake_common.hpp) in this process; logs "REMEASURED" for a trial already stored.
class FakeMeasurer final : public Measurer {
 public:
  FakeMeasurer(const TuningDb& db, DeviceScope scope, std::string log, int delay_ms)
      : db_(db), scope_(scope), log_(std::move(log)), delay_ms_(delay_ms) {}
  int sm_count() const override { return 132; }
  std::string describe() const override { return "fake measurer"; }
  bool prepare(const EvaluatedSpec&) override { return false; }
  void begin_shape(const Problem& p) override { problem_ = p; }
  std::pair<BaselineRecord, BaselineRecord> baselines() override { return fake::baselines(problem_); }
  std::string protocol_name() const override { return "fake"; }
  std::string protocol_json() const override { return fake::kProtocol; }
  TrialRecord measure(const EvaluatedSpec& candidate) override {
    const KernelSpec& spec = candidate.spec;
    const bool stored = db_.has_trial(scope_, problem_, spec.config, "fake");  // claimed rows do not count
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    fake::append_line(log_, fmt::format("{} {} {} {}\n", stored ? "REMEASURED" : "measured", ::getpid(),
                                        problem_.key(), spec.config.key()));
    return fake::trial(problem_, spec);
  }

 private:
  const TuningDb& db_;
  DeviceScope scope_;
  std::string log_;
  int delay_ms_;
  Problem problem_;
};

/// Runs the sweep loop over `shapes` into the DB at `db_path`; the exit code `dgtune sweep` would give. With
/// `workers` > 0 the measuring happens in that many dgtune_fake_worker processes, one lane each (as `dgtune
/// sweep --devices`), which log to `log` themselves.
int sweep(const std::string& db_path, const std::string& log, int candidates, int delay_ms,
          const std::vector<ShapeEntry>& shapes, int workers = 0) {
  SweepOptions opts;
  opts.max_candidates = candidates;
  install_interrupt_handler();
  std::vector<ShapeOutcome> outcomes;
  if (workers == 0) {
    TuningDb db(db_path);
    const DeviceScope scope = db.upsert_device(fake::device());
    FakeMeasurer measurer(db, scope, log, delay_ms);
    outcomes = run_sweep(db, scope, measurer, shapes, opts);
  } else {
    setenv("FAKE_WORKER_DELAY_MS", std::to_string(delay_ms).c_str(), 1);  // the workers inherit these
    if (!log.empty()) setenv("FAKE_WORKER_LOG", log.c_str(), 1);
    std::vector<std::unique_ptr<WorkerMeasurer>> measurers;
    std::vector<std::unique_ptr<TuningDb>> dbs;
    std::vector<SweepLane> lanes;
    for (int w = 0; w < workers; ++w) {
      const std::string pci = fmt::format("0000:{:02x}:00.0", w + 1);
      measurers.push_back(std::make_unique<WorkerMeasurer>(WorkerCommand{{DGT_FAKE_WORKER_BIN, pci}, "fake " + pci},
                                                           WorkerLimits{}, nullptr, "fake",
                                                           fake::kProtocol));
      dbs.push_back(std::make_unique<TuningDb>(db_path));
      lanes.push_back({dbs.back().get(), dbs.back()->upsert_device(measurers.back()->fingerprint()),
                       measurers.back().get()});
    }
    outcomes = run_sweep(lanes, shapes, opts);
  }
  if (stop_requested()) {
    spdlog::warn("sweep stopped by signal {}: run the same command again to resume", stop_signal());
    return kInterruptedExitCode;
  }
  for (const auto& o : outcomes)
    if (!o.complete) {
      spdlog::error("{} incomplete", o.entry.problem.label());
      return 1;
    }
  return 0;
}

/// The `sweep` form: the real option groups parse the command line, main.cpp's exit-code rule applies.
int sweep_command(int argc, char** argv) {
  CLI::App app{"dgtune_fake_sweep sweep: `dgtune sweep --shapes --shard --db` with a fake measurer (no GPU)"};
  dgt::cli::ShapesOption shapes;
  dgt::cli::ShardOption shard;
  dgt::cli::DbOption db;
  int candidates = 4, delay_ms = 0, workers = 0;
  std::string log;
  dgt::cli::add_groups(app, shapes, shard, db);
  app.add_option("--max-candidates", candidates, "candidates per shape (the best by the analytic estimate)")
      ->transform(dgt::cli::count(1, 100000));
  app.add_option("--delay-ms", delay_ms, "sleep per measurement")->transform(dgt::cli::count(0, 600000));
  app.add_option("--log", log, "append one line per measurement to this file");
  app.add_option("--workers", workers, "measure in N dgtune_fake_worker processes, one sweep lane each (0: in process)")
      ->transform(dgt::cli::count(0, 64));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    const auto mine = shard.select(shapes.load(), shapes.path);  // as src/cli/sweep.cpp
    if (mine.empty()) return 0;
    return sweep(db.resolved(), log, candidates, delay_ms, mine, workers);
  } catch (const Error& e) {
    spdlog::error("{}", e.message());
    return e.kind() == ErrorKind::kUsage || e.kind() == ErrorKind::kInvalid ? 2 : 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("fake"));
  try {
    if (argc >= 2 && std::string(argv[1]) == "sweep") return sweep_command(argc - 1, argv + 1);
    if (argc != 5) {
      std::fprintf(stderr, "usage: %s DB LOG CANDIDATES DELAY_MS\n       %s sweep --shapes FILE [--shard i/n] ...\n",
                   argv[0], argv[0]);
      return 2;
    }
    std::vector<ShapeEntry> shapes(2);
    shapes[0].problem = Problem::dense(4096, 4096, 4096);
    shapes[1].problem = Problem::dense(128, 2112, 7168);
    return sweep(argv[1], argv[2], std::stoi(argv[3]), std::stoi(argv[4]), shapes);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}
