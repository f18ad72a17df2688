// The resource model runs once per candidate on the sweep's path: the enumeration evaluates a spec and its
// report (EvaluatedSpec) travels through the sweep loop, the compile queue, code generation and the trial record.
// Counted with the resource model's test hook (space/resource_model.hpp test_hooks). No GPU needed: the cubin
// cache compiles with a stand-in, and the measurer is the parent side of the worker sweep (compile, then the
// trial decided before a launch).
#include <gtest/gtest.h>

#include "temp_dir_test.hpp"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "db/tuning_db.hpp"
#include "jit/codegen.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/kernel_cache.hpp"
#include "space/cost_model.hpp"
#include "space/resource_model.hpp"
#include "space/search_space.hpp"
#include "tune/compile_queue.hpp"
#include "tune/measurer.hpp"
#include "tune/sweep_loop.hpp"

namespace dgt {
namespace {

/// evaluate_resources() calls per KernelSpec::key() while alive (the hook is process-wide: one at a time).
class EvaluationCounter {
 public:
  EvaluationCounter() {
    std::lock_guard lock(mu());
    counts().clear();
    test_hooks::set_evaluate_resources_hook(&count);
  }
  ~EvaluationCounter() { test_hooks::set_evaluate_resources_hook(nullptr); }
  std::map<std::string, int> snapshot() const {
    std::lock_guard lock(mu());
    return counts();
  }
  int total() const {
    int n = 0;
    for (const auto& [key, c] : snapshot()) n += c;
    return n;
  }

 private:
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }
  static std::map<std::string, int>& counts() {
    static std::map<std::string, int> c;
    return c;
  }
  static void count(const KernelSpec& spec) {
    std::lock_guard lock(mu());
    ++counts()[spec.key()];
  }
};

/// The sweep's Measurer as the worker sweep runs it in the parent (worker/worker_measurer.cpp): compile ahead
/// on the queue, then the trial decided before a launch; a candidate that would launch is stored as a timed ok
/// trial here instead of going to a worker.
class CompileQueueMeasurer final : public Measurer {
 public:
  explicit CompileQueueMeasurer(CompileQueue& q) : q_(q) {}
  int sm_count() const override { return 132; }
  std::string describe() const override { return "compile queue, no device"; }
  bool prepare(const EvaluatedSpec& spec) override { return q_.prepare(spec); }
  void begin_shape(const Problem& p) override { p_ = p; }
  std::pair<BaselineRecord, BaselineRecord> baselines() override {
    ADD_FAILURE() << "no baselines in this test";
    return {};
  }
  TrialRecord measure(const EvaluatedSpec& spec) override {
    TrialRecord t = trial_before_launch(spec, p_, q_.get(spec), protocol_json());
    if (t.status != TrialStatus::kOk) return t;
    t.set_timing(Timing{10.0, 10.0, 10.0, 10, 0.001, 1800, false});
    t.verification = Verification{true, 0, 0, 0, 0};
    return t;
  }

 private:
  CompileQueue& q_;
  Problem p_;
};

class ResourceEvaluations : public test::TempDirTest {};

// Every candidate of a shape swept with the default space (its "max" stage searches included) through the sweep
// loop, the compile queue (prepare, compile, get) and the trial record: each spec is evaluated exactly once, in
// the enumeration. Before EvaluatedSpec, a candidate was evaluated there, by CompileQueue::prepare, by the
// generated source (once per compiled key), by CompileQueue::get and by trial_before_launch (and the "max"
// search evaluated the spec it found a second time).
TEST_F(ResourceEvaluations, SweepingAShapeEvaluatesEachSpecOnce) {
  const Problem p = Problem::dense(4096, 4096, 4096);
  SweepOptions opts;
  opts.baselines = false;
  const std::vector<Candidate> want = rank_candidates(opts.space, p, 132);
  ASSERT_GT(want.size(), 100u);
  std::vector<ShapeEntry> shapes(1);
  shapes[0].problem = p;
  shapes[0].file = "test";
  shapes[0].line = 1;

  int compiles = 0;
  std::mutex compiles_mu;
  const jit::CubinCache cubins(path("cubins"), [&](const std::string&, const std::string&, const std::string&) {
    std::lock_guard lock(compiles_mu);
    ++compiles;
    return jit::CompiledKernel{"cubin", "kernel", "", 128, 0, 0, 1.0};
  });
  TuningDb db(path("t.db"));
  DeviceFingerprint fp;
  fp.name = "test GPU";
  fp.sm_count = 132;
  const DeviceScope scope = db.upsert_device(fp);

  std::map<std::string, int> counts;
  std::vector<ShapeOutcome> out;
  {
    CompileQueue queue(cubins, 2);
    CompileQueueMeasurer measurer(queue);
    EvaluationCounter counter;
    out = run_sweep(db, scope, measurer, shapes, opts);
    counts = counter.snapshot();
  }
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].measured_now, static_cast<int>(want.size()));
  EXPECT_TRUE(out[0].complete);
  EXPECT_GT(compiles, 0);
  for (const Candidate& c : want) {
    const std::string key = KernelSpec::of(c.config, p).key();
    EXPECT_EQ(counts[key], 1) << key;
  }
  // No spec at all, candidate or not (the illegal depths the "max" search tried), is evaluated twice.
  for (const auto& [key, n] : counts) EXPECT_EQ(n, 1) << key;
}

// The pieces one by one, for a spec that comes with its report: none of them evaluates it.
TEST_F(ResourceEvaluations, ThePathTakesTheReportItIsGiven) {
  const Problem p = Problem::dense(256, 4096, 7168);
  const std::vector<Candidate> kept = enumerate(SearchSpace::builtin_default(), p).kept;
  ASSERT_FALSE(kept.empty());
  const EvaluatedSpec legal{KernelSpec::of(kept[0].config, p), kept[0].resources};
  KernelConfig wide = kept[0].config;
  wide.num_stages = 32;  // R9: far more shared memory than a block has
  const EvaluatedSpec illegal = EvaluatedSpec::evaluate(KernelSpec::of(wide, p));
  ASSERT_FALSE(illegal.resources.ok());

  const jit::CubinCache cubins(path("cubins"), [](const std::string&, const std::string&, const std::string&) {
    return jit::CompiledKernel{"cubin", "kernel", "", 128, 0, 0, 1.0};
  });
  EvaluationCounter counter;
  // The generated source embeds the given report's shared memory, byte for byte what evaluating gives.
  const jit::GeneratedKernel g = jit::generate_gemm(legal.spec, legal.resources);
  EXPECT_NE(g.source.find("#define DGT_HOST_SMEM_BYTES " + std::to_string(legal.resources.smem.total) + "u\n"),
            std::string::npos);
  {
    CompileQueue queue(cubins, 1);
    EXPECT_TRUE(queue.prepare(legal));
    EXPECT_FALSE(queue.prepare(illegal));  // rejected by its report: nothing to compile
    const CompileResult r = queue.get(legal);
    ASSERT_TRUE(r.kernel.has_value()) << r.error;
    EXPECT_EQ(trial_before_launch(legal, p, r, "").smem_bytes, legal.resources.smem.total);
    EXPECT_FALSE(pre_device_trial(legal, p, r, "").has_value());
    const std::optional<TrialRecord> bad = pre_device_trial(illegal, p, queue.get(illegal), "");
    ASSERT_TRUE(bad.has_value());
    EXPECT_EQ(bad->status, TrialStatus::kInvalid);
    EXPECT_EQ(bad->error, illegal.resources.rejection);
  }
  // The kernel cache refuses an illegal spec by its report, before NVRTC or CUDA (no GPU needed for that).
  KernelCache kernels(cubins, 132);
  try {
    kernels.get(illegal);
    ADD_FAILURE() << "expected Error(kInvalid)";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
    EXPECT_NE(e.message().find(illegal.resources.rejection), std::string::npos) << e.message();
  }
  EXPECT_EQ(counter.total(), 0);
  // Without a report the old entry points evaluate once each.
  EXPECT_EQ(jit::generate_gemm(legal.spec).source, g.source);
  EXPECT_EQ(counter.total(), 1);
}

}  // namespace
}  // namespace dgt
