// cuBLASLt as a loader backend (docs/loader.md "cuBLASLt as a backend"): untuned problems run cuBLASLt's heuristic,
// a stored cuBLASLt winner is replayed bit for bit, launches are graph-capturable, and the untuned problems are
// recorded as a shapes file. Every output is checked against the reference.
#include "harness.hpp"

#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>

#include "bench/cublaslt_baseline.hpp"
#include "db/tuning_db.hpp"
#include "dgtune/gemm.hpp"
#include "problem/shapes_file.hpp"
#include "tune/session.hpp"

namespace dgt::test {
namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/dgtune-ltbackend-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

GemmRunOptions run_options(const Problem& p, const jit::GemmOperands& ops) {
  GemmRunOptions ro;
  ro.scale = static_cast<Fp8Scaling>(static_cast<int>(p.scale));
  ro.fast_accum = p.accum == Accum::kFast;
  ro.output = p.d == DType::kF32 ? OutputType::kF32 : p.d == DType::kE4M3 ? OutputType::kE4M3 : OutputType::kBF16;
  ro.bias = p.bias == Bias::kBF16 ? ops.bias : nullptr;
  ro.act = p.act == Act::kRelu ? Activation::kRelu : p.act == Act::kGeluTanh ? Activation::kGeluTanh : Activation::kNone;
  ro.a_format = p.a == DType::kE5M2 ? Fp8Format::kE5M2 : Fp8Format::kE4M3;
  ro.b_format = p.b == DType::kE5M2 ? Fp8Format::kE5M2 : Fp8Format::kE4M3;
  if (p.d == DType::kE4M3) {
    ro.scale_d = ops.scale_d;
    ro.amax = ops.amax;
  }
  return ro;
}

std::vector<uint8_t> output_bytes(const ProblemData& data, cudaStream_t s) {
  std::vector<uint8_t> out(data.output_bytes());
  DGT_CHECK_CUDA(cudaMemcpyAsync(out.data(), data.output(), out.size(), cudaMemcpyDeviceToHost, s));
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
  return out;
}

Problem with(Problem p, ScaleMode s, DType d = DType::kBF16, Bias b = Bias::kNone, Act a = Act::kNone) {
  p.scale = s;
  p.d = d;
  p.ldd = p.n;
  p.bias = b;
  p.act = a;
  return p;
}

// No DB: every problem cuBLASLt can run takes its heuristic top-1, in every scale mode and epilogue, and matches the
// reference; e4m3 output and e5m2 x e5m2 run dgtune's kernel; GemmOptions::cublaslt = false keeps dgtune's kernel.
TEST(CublasLtBackend, UntunedProblemsRunTheHeuristicAndMatchTheReference) {
  Gpu& gpu = Gpu::get();
  GemmOptions o;
  o.db_path = "/nonexistent/dgtune-ltbackend.db";
  Gemm gemm(o);
  const Problem base = Problem::dense(200, 2048, 1024);
  std::vector<Problem> lt_problems = {with(base, ScaleMode::kPerTensor),
                                      with(base, ScaleMode::kChannel),
                                      with(base, ScaleMode::kBlock),
                                      with(base, ScaleMode::kBlock1d1d),
                                      with(base, ScaleMode::kPerTensor, DType::kF32),
                                      with(base, ScaleMode::kPerTensor, DType::kBF16, Bias::kBF16, Act::kGeluTanh),
                                      with(Problem::dense(4096, 4096, 4096), ScaleMode::kPerTensor)};
  Problem fast = base;
  fast.accum = Accum::kFast;
  lt_problems.push_back(fast);
  Problem e4m3_out = with(base, ScaleMode::kPerTensor, DType::kE4M3);
  Problem e5m2 = base;
  e5m2.a = e5m2.b = DType::kE5M2;
  // Chooses (checked by `expect`), runs with poisoned D and verifies against the reference.
  auto run_checked = [&](const Problem& p, uint64_t seed, const std::function<void(const GemmChoice&)>& expect) {
    ProblemData data(p, *gpu.util, seed, gpu.stream);
    const auto ops = data.operands();
    const GemmRunOptions ro = run_options(p, ops);
    const GemmChoice c = gemm.choose(p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ro);
    expect(c);
    data.poison_output(gpu.stream);
    gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, gpu.stream, ro);
    const Verification v = data.verify(gpu.stream);
    EXPECT_TRUE(v.ok) << p.label() << " " << c.backend << " " << c.cublaslt_algo << ": " << describe(v);
  };
  int seed = 0;
  for (const Problem& p : lt_problems)
    run_checked(p, 700 + seed++, [&](const GemmChoice& c) {
      EXPECT_EQ(c.source, "default") << p.label();
      EXPECT_EQ(c.backend, "cublaslt") << p.label();
      EXPECT_EQ(c.cublaslt_algo.rfind("heuristic algo=", 0), 0u) << p.label() << ": " << c.cublaslt_algo;
      EXPECT_FALSE(c.config_key.empty());  // the kernel's own choice stays visible
    });
  // M = 1 with block scales: cuBLASLt 13.0's heuristic returned no algorithm on the H200, so dgtune's kernel runs;
  // either way the output must be right and the choice consistent.
  run_checked(with(Problem::dense(1, 7168, 2048), ScaleMode::kBlock), 790, [](const GemmChoice& c) {
    EXPECT_EQ(c.backend == "cublaslt", !c.cublaslt_algo.empty()) << c.backend << " " << c.cublaslt_algo;
  });
  for (const Problem& p : {e4m3_out, e5m2})
    run_checked(p, 800 + seed++, [&](const GemmChoice& c) {
      EXPECT_EQ(c.backend, "dgtune") << p.label() << ": " << c.cublaslt_algo;
      EXPECT_TRUE(c.cublaslt_algo.empty());
    });
  o.cublaslt = false;
  Gemm kernel_only(o);
  const GemmChoice k = kernel_only.choose(base.m, base.n, base.k, base.lda, base.ldb, base.ldd);
  EXPECT_EQ(k.backend, "dgtune");
  EXPECT_EQ(k.source, "default");
}

// A cuBLASLt-tuned baseline stored with its algorithm beats a slow dgtune winner: the loader replays exactly that
// algorithm ("stored"), and its output is bitwise the output of cuBLASLt called directly with the algorithm the
// sweep timed. A winner faster than the stored algorithm keeps dgtune's kernel.
TEST(CublasLtBackend, StoredWinnerIsReplayedBitwise) {
  Gpu& gpu = Gpu::get();
  TempDir dir;
  const std::string db_path = dir.path + "/tuning.db";
  const Problem slow_p = Problem::dense(512, 4096, 4096), fast_p = Problem::dense(1, 2112, 7168);
  std::optional<std::pair<BaselineRecord, BaselineRecord>> slow_baselines, fast_baselines;
  {
    SessionOptions so;
    so.db_path = db_path;
    so.protocol.max_seconds = 0.2;
    TuningSession session(so);
    // A narrow tile with a shallow pipeline on a large problem: far slower than cuBLASLt's best.
    TrialRecord t = session.run_one(
        slow_p, KernelConfig::parse_key("64x32x128_s4_wg1_sw128_c1x1_rm8_direct_sk1_sm0"), true, &slow_baselines);
    ASSERT_EQ(t.status, TrialStatus::kOk) << t.error;
    ASSERT_TRUE(slow_baselines);
    ASSERT_EQ(slow_baselines->second.status, TrialStatus::kOk) << slow_baselines->second.error;
    ASSERT_LT(slow_baselines->second.timing->median_us, t.timing->median_us);
    // M = 1 with split-K: dgtune's decode winner (results/h200/small-m.md) is not slower than cuBLASLt there.
    TrialRecord t2 = session.run_one(
        fast_p, KernelConfig::parse_key("64x64x128_s12_wg1_sw128_c1x1_rm8_direct_sk4_sm0"), true, &fast_baselines);
    ASSERT_EQ(t2.status, TrialStatus::kOk) << t2.error;
  }
  // The algorithm bytes are stored (schema 10) and read back unchanged.
  std::vector<uint8_t> stored_bytes;
  {
    TuningDbReader db(db_path);
    const auto device_id = db.find_hardware(gpu.device.hardware());
    ASSERT_TRUE(device_id);
    const auto algos = db.cublaslt_winners(*device_id, slow_p);
    ASSERT_EQ(algos.size(), 1u);
    EXPECT_EQ(algos[0].algo_data.size(), 64u);
    EXPECT_EQ(algos[0].algo_data, slow_baselines->second.algo_data);
    EXPECT_EQ(algos[0].algo, slow_baselines->second.algo);
    stored_bytes = algos[0].algo_data;
  }

  GemmOptions o;
  o.db_path = db_path;
  Gemm gemm(o);
  const GemmChoice c = gemm.choose(slow_p.m, slow_p.n, slow_p.k, slow_p.lda, slow_p.ldb, slow_p.ldd);
  EXPECT_EQ(c.source, "db");
  EXPECT_EQ(c.backend, "cublaslt");
  // The stored text is "<describe> rank=R returned=N requested=32": the replayed algorithm describes the same way.
  EXPECT_EQ(c.cublaslt_algo.rfind("stored ", 0), 0u) << c.cublaslt_algo;
  const std::string described = c.cublaslt_algo.substr(7);
  EXPECT_EQ(slow_baselines->second.algo.rfind(described + " rank=", 0), 0u)
      << described << " vs " << slow_baselines->second.algo;

  ProblemData data(slow_p, *gpu.util, 1234, gpu.stream);
  const auto ops = data.operands();
  data.poison_output(gpu.stream);
  gemm.run(ops.a, ops.b, ops.d, slow_p.m, slow_p.n, slow_p.k, slow_p.lda, slow_p.ldb, slow_p.ldd, ops.scale_a,
           ops.scale_b, gpu.stream);
  EXPECT_TRUE(data.verify(gpu.stream).ok);
  const std::vector<uint8_t> through_loader = output_bytes(data, gpu.stream);
  // cuBLASLt directly, with the heuristic's algorithm whose bytes are the stored ones.
  CublasLtBaseline lt;
  CublasLtPlan plan(lt, data);
  int index = -1;
  for (int i = 0; i < plan.returned(); ++i) {
    const CublasLtAlgoBytes b = plan.algo(i);
    if (std::vector<uint8_t>(b.begin(), b.end()) == stored_bytes) index = i;
  }
  ASSERT_GE(index, 0) << "the heuristic no longer returns the stored algorithm";
  data.poison_output(gpu.stream);
  ASSERT_EQ(plan.launch(index, gpu.stream), 0);
  EXPECT_TRUE(data.verify(gpu.stream).ok);
  const std::vector<uint8_t> direct = output_bytes(data, gpu.stream);
  EXPECT_TRUE(through_loader == direct) << "the loader's cuBLASLt output differs from cuBLASLt called directly";

  // M = 1: dgtune's winner stays unless the stored cuBLASLt algorithm was faster in the same sweep.
  const GemmChoice f = gemm.choose(fast_p.m, fast_p.n, fast_p.k, fast_p.lda, fast_p.ldb, fast_p.ldd);
  const bool lt_faster = fast_baselines->second.status == TrialStatus::kOk &&
                         fast_baselines->second.timing->median_us < f.tuned_us;
  EXPECT_EQ(f.backend, lt_faster ? "cublaslt" : "dgtune") << f.tuned_us;

  // GemmOptions::cublaslt = false: the stored dgtune winner runs whatever cuBLASLt did.
  o.cublaslt = false;
  Gemm kernel_only(o);
  const GemmChoice k = kernel_only.choose(slow_p.m, slow_p.n, slow_p.k, slow_p.lda, slow_p.ldb, slow_p.ldd);
  EXPECT_EQ(k.backend, "dgtune");
  EXPECT_EQ(k.config_key, c.config_key);
}

// cuBLASLt launches of a resolved problem are captured in a CUDA graph and replayed with the right output.
TEST(CublasLtBackend, LaunchesAreGraphCapturable) {
  Gpu& gpu = Gpu::get();
  GemmOptions o;
  o.db_path = "/nonexistent/dgtune-ltbackend.db";
  Gemm gemm(o);
  const Problem p = Problem::dense(96, 4096, 7168);
  ProblemData data(p, *gpu.util, 4321, gpu.stream);
  const auto ops = data.operands();
  ASSERT_EQ(gemm.choose(p.m, p.n, p.k, p.lda, p.ldb, p.ldd).backend, "cublaslt");
  data.poison_output(gpu.stream);
  DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
  cudaGraph_t graph = nullptr;
  DGT_CHECK_CUDA(cudaStreamBeginCapture(gpu.stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 3; ++i)
    gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, gpu.stream);
  DGT_CHECK_CUDA(cudaStreamEndCapture(gpu.stream, &graph));
  cudaGraphExec_t exec = nullptr;
  DGT_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  DGT_CHECK_CUDA(cudaGraphLaunch(exec, gpu.stream));
  DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
  EXPECT_TRUE(data.verify(gpu.stream).ok);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// GemmOptions::record_untuned: the problems run without a tuned entry, with their call counts, as a shapes file
// written when the Gemm goes away; the file parses back to the same problems.
TEST(CublasLtBackend, UntunedProblemsAreRecordedAsAShapesFile) {
  Gpu& gpu = Gpu::get();
  TempDir dir;
  const std::string out = dir.path + "/untuned.txt";
  Problem block = with(Problem::dense(3, 7168, 2048), ScaleMode::kBlock);
  const Problem plain = Problem::dense(200, 2048, 1024);
  {
    GemmOptions o;
    o.db_path = "/nonexistent/dgtune-ltbackend.db";
    o.record_untuned = out;
    Gemm gemm(o);
    for (int i = 0; i < 3; ++i)
      for (const Problem& p : {plain, block}) {
        if (p.scale == ScaleMode::kBlock && i == 2) continue;
        ProblemData data(p, *gpu.util, 55, gpu.stream);
        const auto ops = data.operands();
        gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, gpu.stream,
                 run_options(p, ops));
      }
    const auto u = gemm.untuned();
    ASSERT_EQ(u.size(), 2u);
    EXPECT_EQ(u[0].line, "200 2048 1024");
    EXPECT_EQ(u[0].calls, 3u);
    EXPECT_EQ(u[1].line, "3 7168 2048 scale=block");
    EXPECT_EQ(u[1].calls, 2u);
  }
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("# calls: 3\n200 2048 1024\n"), std::string::npos) << text.str();
  const auto entries = parse_shapes(text.str(), out);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].problem, plain);
  EXPECT_EQ(entries[1].problem, block);
}

}  // namespace
}  // namespace dgt::test
