// The serving path (docs/loader.md "Serving"): after Gemm::warmup, any M of a warmed family, on the warm-up's list or
// not, is served inside CUDA-graph capture with no NVRTC compile, no device allocation and no DB read (counted), and
// every output matches the reference; a family that was not warmed follows GemmOptions::capture_miss; launches that
// rotate over operand buffers (the per-thread tensor-map cache) write the right buffers.
#include "harness.hpp"
#include "tuned_family.hpp"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>
#include <set>

#include "dgtune/gemm.hpp"
#include "tune/session.hpp"

namespace dgt::test {
namespace {

constexpr int64_t kN = kFamilyN, kK = kFamilyK;

/// Options of a Gemm without tuning data (a DB path that does not exist) and with its own cubin cache under `dir`.
GemmOptions untuned_options(const TempDir& dir) {
  GemmOptions o;
  o.db_path = dir.path + "/none.db";
  o.cache_dir = dir.path + "/cache";
  return o;
}

size_t free_device_bytes() {
  size_t free_b = 0, total = 0;
  DGT_CHECK_CUDA(cudaMemGetInfo(&free_b, &total));
  return free_b;
}

/// True under compute-sanitizer, whose own device allocations show in cudaMemGetInfo (2 MiB during a capture on the
/// H200). compute-sanitizer of CUDA 13 leaves no trace in LD_PRELOAD or CUDA_INJECTION64_PATH, so whoever runs the
/// tests under it sets DGTUNE_UNDER_SANITIZER=1 (tests/gpu/sanitize.sh does).
bool under_sanitizer() {
  if (const char* v = std::getenv("DGTUNE_UNDER_SANITIZER"); v && std::string(v) == "1") return true;
  for (const char* var : {"LD_PRELOAD", "CUDA_INJECTION64_PATH"})
    if (const char* v = std::getenv(var); v && std::string(v).find("sanitizer") != std::string::npos) return true;
  return false;
}

// 100 different M, each captured in its own graph, half on the warm-up's list and half between its values, after a warm-up:
// nothing compiled, allocated or read from the DB during capture, and every output right after the replay. Once with
// cuBLASLt as a backend and once with dgtune's kernel only (the ladder's kernels and the family's split-K scratch).
void capture_any_m(bool cublaslt) {
  Gpu& gpu = Gpu::get();
  TempDir dir("dgtune-serving");
  GemmOptions o;
  o.db_path = tuned_family_db(dir.path);
  o.cache_dir = dir.path + "/cache";
  o.cublaslt = cublaslt;
  Gemm gemm(o);
  std::vector<int64_t> listed, off;
  for (int i = 0; i < 50; ++i) listed.push_back(1 + 40 * i);  // 1, 41, ..., 1961
  for (int i = 0; i < 50; ++i) off.push_back(20 + 40 * i);    // between them, never on the list
  WarmupProblem w;
  w.n = kN, w.k = kK, w.lda = kK, w.ldb = kK, w.ldd = kN;
  w.m = listed;
  const WarmupReport r = gemm.warmup({w});
  EXPECT_EQ(r.families, 1u);
  EXPECT_EQ(r.shapes, 52u);  // the 50 listed M and the tuned 256 and 1024 (1 is listed)
  EXPECT_GE(r.kernels, 3u);

  std::vector<std::unique_ptr<ProblemData>> data;
  std::vector<int64_t> ms = listed;
  ms.insert(ms.end(), off.begin(), off.end());
  for (size_t i = 0; i < ms.size(); ++i) {
    data.push_back(std::make_unique<ProblemData>(Problem::dense(ms[i], kN, kK), *gpu.util, 9000 + i, gpu.stream));
    data.back()->poison_output(gpu.stream);
  }
  DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
  const GemmStats before = gemm.stats();
  // One graph per call, as a serving stack captures one per batch size; free device memory is read around each
  // capture (never inside one), so a call that allocates (a kernel module loaded at its first launch) is named.
  std::vector<cudaGraph_t> graphs;
  std::vector<std::pair<int64_t, long long>> allocating;  // M, bytes of device memory its capture took
  for (const auto& d : data) {
    const Problem& p = d->problem();
    const auto ops = d->operands();
    const size_t free_before = free_device_bytes();
    cudaGraph_t graph = nullptr;
    DGT_CHECK_CUDA(cudaStreamBeginCapture(gpu.stream, cudaStreamCaptureModeThreadLocal));
    gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, gpu.stream);
    DGT_CHECK_CUDA(cudaStreamEndCapture(gpu.stream, &graph));
    graphs.push_back(graph);
    const size_t free_after = free_device_bytes();
    if (free_after != free_before)
      allocating.emplace_back(p.m, static_cast<long long>(free_before) - static_cast<long long>(free_after));
  }
  const GemmStats after = gemm.stats();
  EXPECT_EQ(after.nvrtc_compiles, before.nvrtc_compiles);
  EXPECT_EQ(after.cache_loads, before.cache_loads);
  EXPECT_EQ(after.db_reads, before.db_reads);
  EXPECT_EQ(after.device_allocs, before.device_allocs);
  EXPECT_EQ(after.capture_fallbacks, 0u);
  EXPECT_EQ(after.resolved, before.resolved + 50) << "the 50 off-list M are resolved (from memory) during capture";
  if (!under_sanitizer())
    for (const auto& [m, bytes] : allocating) {  // named after the stats were read: choose() may resolve again
      const GemmChoice c = gemm.choose(m, kN, kK, kK, kK, kN);
      ADD_FAILURE() << "device memory changed by " << bytes << " bytes during the capture of M = " << m << " ("
                    << c.source << " / " << c.backend << " " << c.config_key << " " << c.cublaslt_algo << ")";
    }
  for (cudaGraph_t graph : graphs) {
    cudaGraphExec_t exec = nullptr;
    DGT_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    DGT_CHECK_CUDA(cudaGraphLaunch(exec, gpu.stream));
    DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  std::set<std::string> sources;
  for (const auto& d : data) {
    const Problem& p = d->problem();
    const Verification v = d->verify(gpu.stream);
    const GemmChoice c = gemm.choose(p.m, p.n, p.k, p.lda, p.ldb, p.ldd);
    EXPECT_TRUE(v.ok) << p.label() << " " << c.config_key << " " << c.backend << ": " << v.max_rel_err;
    sources.insert(c.source + "/" + c.backend);
    if (!cublaslt) EXPECT_EQ(c.backend, "dgtune") << p.label();
  }
  for (const std::string& s : sources) std::cout << "  served as " << s << "\n";
  if (cublaslt) {
    // Off the list, cuBLASLt still runs where its pick is an algorithm the warm-up launched (its kernel is loaded).
    int off_lt = 0;
    for (int64_t m : off) off_lt += gemm.choose(m, kN, kK, kK, kK, kN).backend == "cublaslt";
    std::cout << "  off-list M run by cuBLASLt: " << off_lt << " of " << off.size() << "\n";
    EXPECT_GT(off_lt, 0) << "no off-list M ran cuBLASLt inside capture";
  }
  EXPECT_GE(sources.size(), 2u);
  if (!cublaslt) EXPECT_TRUE(sources.count("ladder/dgtune")) << "no M ran a ladder neighbour's kernel";
}

TEST(Serving, WarmedFamilyIsCapturedAtAnyMWithoutCompilingAllocatingOrReading) { capture_any_m(true); }
TEST(Serving, WarmedFamilyRunsTheLadderKernelsInsideCapture) { capture_any_m(false); }

// A family nobody warmed, called inside capture: kCublasLt runs cuBLASLt's heuristic without a workspace (counted,
// output right), and a later call outside capture resolves the problem properly; kError throws before the stream is
// touched (the capture ends with an empty graph); e4m3 output, which cuBLASLt does not run here, throws either way.
TEST(Serving, CaptureMissFollowsTheOption) {
  Gpu& gpu = Gpu::get();
  TempDir dir("dgtune-serving");
  for (CaptureMiss policy : {CaptureMiss::kCublasLt, CaptureMiss::kError}) {
    GemmOptions o = untuned_options(dir);
    o.capture_miss = policy;
    Gemm gemm(o);
    const Problem p = Problem::dense(77, kN, kK);
    ProblemData data(p, *gpu.util, 31, gpu.stream);
    const auto ops = data.operands();
    data.poison_output(gpu.stream);
    DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
    cudaGraph_t graph = nullptr;
    DGT_CHECK_CUDA(cudaStreamBeginCapture(gpu.stream, cudaStreamCaptureModeThreadLocal));
    bool threw = false;
    try {
      gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, gpu.stream);
    } catch (const Error& e) {
      threw = true;
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(std::string(e.what()).find("warmup"), std::string::npos) << e.what();
    }
    ASSERT_EQ(cudaStreamEndCapture(gpu.stream, &graph), cudaSuccess);
    size_t nodes = 0;
    DGT_CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
    const GemmStats s = gemm.stats();
    EXPECT_EQ(s.nvrtc_compiles + s.cache_loads, 0u);
    EXPECT_EQ(s.device_allocs, 0u);
    if (policy == CaptureMiss::kError) {
      EXPECT_TRUE(threw);
      EXPECT_EQ(nodes, 0u);
      EXPECT_EQ(s.capture_fallbacks, 0u);
    } else {
      EXPECT_FALSE(threw);
      EXPECT_GE(nodes, 1u);
      EXPECT_EQ(s.capture_fallbacks, 1u);
      cudaGraphExec_t exec = nullptr;
      DGT_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
      DGT_CHECK_CUDA(cudaGraphLaunch(exec, gpu.stream));
      DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
      EXPECT_TRUE(data.verify(gpu.stream).ok);
      cudaGraphExecDestroy(exec);
    }
    cudaGraphDestroy(graph);
    // Outside capture the problem resolves as a first call does (no DB: cuBLASLt's heuristic, kernel loaded beside).
    const GemmChoice c = gemm.choose(p.m, p.n, p.k, p.lda, p.ldb, p.ldd);
    EXPECT_EQ(c.source, "default");
    // e4m3 output inside capture: cuBLASLt cannot run it, so both policies throw.
    Problem e4 = Problem::dense(79, kN, kK);
    e4.d = DType::kE4M3;
    ProblemData d4(e4, *gpu.util, 32, gpu.stream);
    const auto o4 = d4.operands();
    GemmRunOptions ro;
    ro.output = OutputType::kE4M3;
    ro.scale_d = o4.scale_d;
    DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
    DGT_CHECK_CUDA(cudaStreamBeginCapture(gpu.stream, cudaStreamCaptureModeThreadLocal));
    EXPECT_THROW(gemm.run(o4.a, o4.b, o4.d, e4.m, e4.n, e4.k, e4.lda, e4.ldb, e4.ldd, o4.scale_a, o4.scale_b,
                          gpu.stream, ro),
                 Error);
    ASSERT_EQ(cudaStreamEndCapture(gpu.stream, &graph), cudaSuccess);
    cudaGraphDestroy(graph);
  }
}

// The launch path caches tensor maps per (shape, operand, address): calls that rotate over 8 operand sets of one shape,
// twice round, each write their own D with their own A and B.
TEST(Serving, RotatingBuffersEachGetTheirOwnTensorMaps) {
  Gpu& gpu = Gpu::get();
  TempDir dir("dgtune-serving");
  GemmOptions o = untuned_options(dir);
  o.cublaslt = false;  // the dgtune kernel's launch path (the one with tensor maps)
  Gemm gemm(o);
  for (int64_t m : {int64_t(1), int64_t(200)}) {
    const Problem p = Problem::dense(m, kN, kK);
    std::vector<std::unique_ptr<ProblemData>> sets;
    for (int i = 0; i < 8; ++i) sets.push_back(std::make_unique<ProblemData>(p, *gpu.util, 500 + i, gpu.stream));
    for (int round = 0; round < 2; ++round)
      for (const auto& d : sets) {
        d->poison_output(gpu.stream);
        const auto ops = d->operands();
        gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, gpu.stream);
        EXPECT_TRUE(d->verify(gpu.stream).ok) << p.label() << " round " << round;
      }
  }
}

}  // namespace
}  // namespace dgt::test
