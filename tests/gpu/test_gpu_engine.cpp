// The measurement engine on the GPU: our kernel, cuBLASLt default and tuned as sides of interleaved
// rounds under both protocols, with the output checked after replay.
#include "harness.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "bench/cublaslt_baseline.hpp"
#include "bench/device_sides.hpp"
#include "stats/stats.hpp"

namespace dgt::test {
namespace {

struct Case {
  Problem problem;
  const char* config;
};

void run_case(const Case& c, const MeasureProtocol& protocol) {
  Gpu& gpu = Gpu::get();
  const Problem& p = c.problem;
  ProblemData data(p, *gpu.util, 7, gpu.stream);
  ASSERT_TRUE(gpu.run(data, KernelConfig::parse_key(c.config)).ok) << c.config;
  auto kernel = gpu.kernel(KernelSpec::of(KernelConfig::parse_key(c.config), p));
  const jit::GemmWorkspace ws =
      gpu.kernels->dedicated_workspace(*kernel, p);  // allocated before any capture, never reallocated
  const jit::GemmOperands ops = data.operands();

  CublasLtBaseline lt;
  CublasLtPlan plan(lt, data);
  ASSERT_TRUE(plan.supported()) << plan.error();
  EXPECT_GE(plan.returned(), 1);
  EXPECT_LE(plan.returned(), CublasLtBaseline::kHeuristicRequest);
  CublasLtChoice choice = select_algorithms(plan, screen_timer(*gpu.util, gpu.device, protocol, gpu.stream, 3),
                                            protocol.to_json(), gpu.stream);
  ASSERT_EQ(choice.default_algo, 0) << choice.def.error;
  ASSERT_GE(choice.tuned_algo, 0);
  EXPECT_EQ(choice.screened.size(), static_cast<size_t>(plan.returned()));
  EXPECT_NE(choice.tuned.algo.find("requested=32"), std::string::npos) << choice.tuned.algo;

  std::vector<Side> sides = {{"dgtune", [&](cudaStream_t s) { kernel->launch(p, ops, s, &ws); }},
                             {kProviderCublasDefault, plan.launcher(choice.default_algo)},
                             {kProviderCublasTuned, plan.launcher(choice.tuned_algo)},
                             {"cublaslt-default-again", plan.launcher(choice.default_algo)}};
  OutputCheck check{[&](cudaStream_t s) { data.poison_output(s); }, [&](cudaStream_t s) { return data.verify(s); }};
  RoundsResult r = measure_sides(*gpu.util, gpu.device, protocol, gpu.stream, sides, &check);

  EXPECT_EQ(r.rounds, protocol.rounds);
  ASSERT_EQ(r.sides.size(), 4u);
  for (const SideSummary& s : r.sides) {
    EXPECT_EQ(s.samples, protocol.rounds) << s.label;
    ASSERT_TRUE(s.check.has_value()) << s.label;
    EXPECT_TRUE(s.check->ok) << s.label << " after replay: " << describe(*s.check);
    EXPECT_GT(s.all.median, 0) << s.label;
    EXPECT_GT(s.median_clock_mhz, 0.3 * gpu.device.max_sm_clock_mhz) << s.label;
    EXPECT_LT(s.median_clock_mhz, 1.2 * gpu.device.max_sm_clock_mhz) << s.label;
    spdlog::info("{} {} {}: median {:.2f} us p10 {:.2f} p90 {:.2f}, clock {:.0f} MHz, {} flagged", protocol.name(),
                 p.label(), s.label, s.all.median, s.all.p10, s.all.p90, s.median_clock_mhz, s.flagged);
  }
  // The same algorithm twice: its paired ratio stays near 1. Not the verdict, and not tight: for the 12 us case under
  // cold-l2 (20 rounds) two H200 runs of 2026-12-03 gave 0.972 (a 95% interval excluding 1) and 1.059, on either
  // side of 1, so it is noise of a short kernel after an L2 flush, not a bias of the pairing. A broken pairing or a
  // side timing another launch (this test's dgtune side is 1.5x cuBLASLt's) is far outside 10%.
  PairedTimes same = r.paired(r.find(kProviderCublasDefault), r.find("cublaslt-default-again"));
  stats::PairedComparison cmp = stats::compare_paired(same.x_us, same.y_us);
  EXPECT_NEAR(cmp.speedup_x_over_y(), 1.0, 0.10) << p.label();
}

const Case kCases[] = {
    {Problem::dense(2048, 2048, 2048), "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1"},
    {Problem::dense(128, 2112, 7168), "64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk4"},  // split-K: workspace in the graph
};

TEST(Engine, ColdL2Rounds) {
  for (const Case& c : kCases) run_case(c, MeasureProtocol::cold_l2());
}

// cold-l2-v3: the same rounds with the queue tail (32 one-SM kernels after each round); the result names it.
TEST(Engine, ColdL2V3Rounds) {
  Gpu& gpu = Gpu::get();
  for (const Case& c : kCases) run_case(c, MeasureProtocol::cold_l2_v3());
  const Problem p = Problem::dense(256, 256, 256);
  ProblemData data(p, *gpu.util, 5, gpu.stream);
  auto kernel = gpu.kernel(KernelSpec::of(KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1"), p));
  const jit::GemmOperands ops = data.operands();
  MeasureProtocol v3 = MeasureProtocol::cold_l2_v3();
  v3.rounds = 4;
  RoundsResult r = measure_sides(*gpu.util, gpu.device, v3, gpu.stream,
                                 {{"a", [&](cudaStream_t s) { kernel->launch(p, ops, s); }},
                                  {"b", [&](cudaStream_t s) { kernel->launch(p, ops, s); }}});
  const auto j = nlohmann::json::parse(r.protocol);
  EXPECT_EQ(j.at("name"), "cold-l2-v3");
  EXPECT_EQ(j.at("tail_kernels"), 32);
  EXPECT_EQ(r.sides[0].samples, 4);
  EXPECT_EQ(r.sides[1].samples, 4);
}

TEST(Engine, HotGraphRounds) {
  for (const Case& c : kCases) run_case(c, MeasureProtocol::hot_graph());
}

TEST(Engine, FailedCaptureLeavesTheStreamUsable) {
  Gpu& gpu = Gpu::get();
  const Problem p = Problem::dense(256, 256, 256);
  ProblemData data(p, *gpu.util, 3, gpu.stream);
  auto kernel = gpu.kernel(KernelSpec::of(KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1"), p));
  const jit::GemmOperands ops = data.operands();
  MeasureProtocol hot = MeasureProtocol::hot_graph();
  int calls = 0;
  std::vector<Side> bad = {{"bad", [&](cudaStream_t s) {
                              if (++calls > hot.warmup + 2)
                                DGT_THROW(ErrorKind::kInvalid, "refused inside the capture");
                              kernel->launch(p, ops, s);
                            }}};
  EXPECT_THROW(measure_sides(*gpu.util, gpu.device, hot, gpu.stream, bad), Error);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  ASSERT_EQ(cudaStreamIsCapturing(gpu.stream, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  hot.rounds = 3;
  RoundsResult r = measure_sides(*gpu.util, gpu.device, hot, gpu.stream,
                                 {{"good", [&](cudaStream_t s) { kernel->launch(p, ops, s); }}});
  EXPECT_EQ(r.sides[0].samples, 3);
}

}  // namespace
}  // namespace dgt::test
