// The grouped (MoE) kernels on the GPU (kernels/gemm/grouped_scheduler.cuh): every output verified per group against
// the reference GEMM, with NaN in every padding row of A and a sentinel in D that unwritten rows must keep
// (bench/grouped_data.hpp). Groups of size 0, one group with all rows, G in {1, 4, 8, 32, 256}, masked counts that are
// not multiples of 128, K tails, per-tensor and block scales, a cluster along N, bitwise equality with the dense
// kernel run on each group alone with the same config, and a CUDA-graph replay with masked_m changed between replays.
// Both epilogues: the TMA epilogue stores whole real-row boxes with TMA and a group's last block with the row check;
// a contiguous layout that marks a row inside a block as padding must keep that row unwritten under both.
// Small N and K keep the suite fast (a few seconds after the ~20 kernels compile).
#include <gtest/gtest.h>

#include <vector>

#include "bench/grouped_data.hpp"
#include "core/int_math.hpp"
#include "harness.hpp"
#include "launch/grouped_kernel.hpp"
#include "space/grouped_rules.hpp"

namespace dgt::test {
namespace {

constexpr const char* k128 = "128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1";
constexpr const char* k128_1g = "128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1";
constexpr const char* k64 = "64x96x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1";
constexpr const char* kClusterN = "128x64x128_s6_wg2_sw128_c1x2_rm8_direct_sk1_sm0_2g_p1";
// The TMA epilogue (D boxes of 64 or 128 rows per warpgroup; BLOCK_N 96 stages 64-byte swizzled bands).
constexpr const char* kTma128 = "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";
constexpr const char* kTma64 = "64x96x128_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";
constexpr const char* kTmaClusterN = "128x64x128_s6_wg2_sw128_c1x2_rm8_tma_sk1_sm0_2g_p1";

/// The grouped kernel of `c` for `g`, loaded once by the harness's KernelCache.
const jit::GroupedGemmKernel& grouped_kernel(const KernelConfig& c, const GroupedProblem& g) {
  return *Gpu::get().kernels->get_grouped(KernelSpec::of(c, g.dense_view()), g.kind);
}

Verification run_once(const GroupedData& data, const KernelConfig& c) {
  Gpu& gpu = Gpu::get();
  const auto& k = grouped_kernel(c, data.problem());
  data.reset_d(gpu.stream);
  k.launch(data.problem(), data.operands(), gpu.stream);
  DGT_CHECK_CUDA(cudaGetLastError());
  DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
  return data.verify(*gpu.util, gpu.stream);
}

void expect_verified(const std::string& spec, const char* config, uint64_t seed = 7) {
  const GroupedProblem g = parse_grouped_problem(spec, "test");
  const KernelConfig c = KernelConfig::parse_key(config);
  ASSERT_EQ(grouped_config_violation(c, g), "") << config;
  const GroupedData data(*Gpu::get().util, g, seed, Gpu::get().stream);
  const Verification v = run_once(data, c);
  EXPECT_TRUE(v.ok) << spec << " with " << config << ": " << describe(v);
  EXPECT_EQ(v.pad_touched, 0) << spec << ": a row that holds no real row was written";
}

TEST(Grouped, MaskedCountsZeroPartialFullAndKTails) {
  for (const char* scale : {"tensor", "block"})
    for (const char* config : {k128, k128_1g, k64, kClusterN, kTma128, kTma64, kTmaClusterN}) {
      // 200 (not a multiple of 128), 0 (empty), 256 (= M_max), 17; K 576 (a half k-block), N 320 (an N tail).
      expect_verified(std::string("kind=masked groups=4 m_max=256 masked_m=200,0,256,17 expected_m=128 320 576 scale=") +
                          scale,
                      config);
    }
}

TEST(Grouped, ContiguousEmptyGroupsAndAllRowsInOne) {
  for (const char* scale : {"tensor", "block"})
    for (const char* config : {k128, k64, kClusterN, kTma128, kTma64, kTmaClusterN}) {
      expect_verified(std::string("kind=contiguous groups=4 m_per_group=0,300,0,0 256 640 scale=") + scale, config);
      expect_verified(std::string("kind=contiguous groups=4 m_per_group=128,1,0,255 320 576 scale=") + scale, config);
    }
}

TEST(Grouped, GroupCounts) {
  for (int groups : {1, 4, 8, 32, 256}) {
    const std::string G = std::to_string(groups);
    // Masked: routing of 64 tokens x min(8, G) experts (many empty groups at G = 256); contiguous: a skewed split.
    const std::string topk = std::to_string(std::min(8, groups));
    expect_verified("kind=masked groups=" + G + " masked_m=route:3:64:" + topk + " 256 256 scale=block", k128);
    expect_verified("kind=contiguous groups=" + G + " m_per_group=skew:5:" + std::to_string(40 * groups) +
                        " 256 384 scale=block",
                    k64);
    expect_verified("kind=contiguous groups=" + G + " m_per_group=skew:9:" + std::to_string(40 * groups) + " 256 256",
                    kClusterN);
    // The TMA epilogue, and the contiguous tile grid rasterized along N in bands of 4 m-blocks (bands span groups).
    expect_verified("kind=masked groups=" + G + " masked_m=route:4:64:" + topk + " 256 256 scale=block", kTma128);
    expect_verified("kind=contiguous groups=" + G + " m_per_group=skew:6:" + std::to_string(40 * groups) +
                        " 256 384 scale=block",
                    "64x96x128_s6_wg1_sw128_c1x1_rn4_tma_sk1_sm0_2g_p1");
  }
}

TEST(Grouped, FastAccumulation) {
  expect_verified("kind=masked groups=3 masked_m=100,0,129 256 1024 accum=fast",
                  "128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p8");
  expect_verified("kind=contiguous groups=3 m_per_group=100,0,129 256 1024 accum=fast",
                  "128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1");
}

/// The grouped kernel and the dense kernel of the same config on each group alone: bitwise equal rows.
void expect_bitwise_equal_to_dense(const std::string& spec, const char* config) {
  Gpu& gpu = Gpu::get();
  cudaStream_t s = gpu.stream;
  const GroupedProblem g = parse_grouped_problem(spec, "test");
  const KernelConfig c = KernelConfig::parse_key(config);
  const GroupedData data(*gpu.util, g, 11, s);
  ASSERT_TRUE(run_once(data, c).ok);
  const jit::GroupedOperands go = data.operands();
  const std::vector<int64_t> starts = g.group_starts();
  const int64_t kg = ceil_div(g.k, kScaleBlock), nb = ceil_div(g.n, kScaleBlock), ld_sb = round_up(kg, 4);
  for (size_t i = 0; i < g.rows.size(); ++i) {
    const int64_t m = g.rows[i];
    if (m == 0) continue;
    Problem p = Problem::dense(m, g.n, g.k);
    p.scale = g.scale;
    p.accum = g.accum;
    auto k = gpu.kernel(KernelSpec::of(c, p));
    DeviceBuffer d(size_t(m * g.n * 2)), sa(256 + size_t(round_up(m, 4) * kg * 4));
    jit::GemmOperands ops;
    ops.a = static_cast<const uint8_t*>(go.a) + starts[i] * g.k;
    ops.b = static_cast<const uint8_t*>(go.b) + int64_t(i) * g.n * g.k;
    ops.d = d.get();
    ops.scale_a = go.scale_a;
    ops.scale_b = go.scale_b;
    if (g.scale == ScaleMode::kBlock) {
      // The dense block layout of this group's A scales: [ceil(K/128)][round_up(m, 4)], from the grouped array.
      const float* src = go.scale_a + (g.kind == GroupKind::kMasked ? int64_t(i) * kg * g.m_max : starts[i]);
      const int64_t ld_src = g.kind == GroupKind::kMasked ? g.m_max : g.total_rows();
      DGT_CHECK_CUDA(cudaMemsetAsync(sa.get(), 0, sa.bytes(), s));
      DGT_CHECK_CUDA(cudaMemcpy2DAsync(sa.get(), size_t(round_up(m, 4) * 4), src, size_t(ld_src * 4), size_t(m * 4),
                                       size_t(kg), cudaMemcpyDeviceToDevice, s));
      ops.scale_a = sa.as<float>();
      ops.scale_b = go.scale_b + int64_t(i) * nb * ld_sb;
    }
    const jit::GemmWorkspace ws = gpu.kernels->workspace(*k, p);
    k->launch(p, ops, s, &ws);
    std::vector<uint16_t> dense(size_t(m * g.n)), grouped(size_t(m * g.n));
    DGT_CHECK_CUDA(cudaMemcpyAsync(dense.data(), d.get(), dense.size() * 2, cudaMemcpyDeviceToHost, s));
    DGT_CHECK_CUDA(cudaMemcpyAsync(grouped.data(), static_cast<const uint16_t*>(data.d()) + starts[i] * g.n,
                                   grouped.size() * 2, cudaMemcpyDeviceToHost, s));
    DGT_CHECK_CUDA(cudaStreamSynchronize(s));
    int64_t differ = 0;
    for (size_t j = 0; j < dense.size(); ++j) differ += dense[j] != grouped[j];
    EXPECT_EQ(differ, 0) << spec << " with " << config << ": group " << i << " (" << m << " rows)";
  }
}

TEST(Grouped, BitwiseEqualToTheDenseKernelPerGroup) {
  for (const char* config : {k128, k64, kClusterN, kTma128, kTmaClusterN}) {
    expect_bitwise_equal_to_dense("kind=masked groups=3 m_max=384 masked_m=300,5,128 320 576 scale=block", config);
    expect_bitwise_equal_to_dense("kind=masked groups=3 m_max=384 masked_m=300,5,128 320 576", config);
    expect_bitwise_equal_to_dense("kind=contiguous groups=3 m_per_group=300,0,129 320 576 scale=block", config);
  }
}

TEST(Grouped, GraphReplayWithMaskedCountsChangedBetweenReplays) {
  Gpu& gpu = Gpu::get();
  cudaStream_t s = gpu.stream;
  const GroupedProblem g =
      parse_grouped_problem("kind=masked groups=8 m_max=256 masked_m=1,0,256,17,128,129,0,64 expected_m=64 256 512 "
                            "scale=block",
                            "test");
  for (const char* config : {k128, kTma128}) {
  SCOPED_TRACE(config);
  const KernelConfig c = KernelConfig::parse_key(config);
  GroupedData data(*gpu.util, g, 3, s);
  const auto& k = grouped_kernel(c, g);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  DGT_CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  k.launch(g, data.operands(), s);
  DGT_CHECK_CUDA(cudaStreamEndCapture(s, &graph));
  DGT_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  const std::vector<std::vector<int64_t>> counts = {
      {1, 0, 256, 17, 128, 129, 0, 64}, {0, 0, 0, 0, 0, 0, 0, 0}, {256, 256, 256, 256, 256, 256, 256, 256},
      {3, 200, 0, 255, 1, 0, 77, 130}};
  for (const auto& rows : counts) {
    data.set_counts(*gpu.util, rows, s);
    data.reset_d(s);
    DGT_CHECK_CUDA(cudaGraphLaunch(exec, s));
    DGT_CHECK_CUDA(cudaStreamSynchronize(s));
    const Verification v = data.verify(*gpu.util, s);
    EXPECT_TRUE(v.ok) << "replay with masked_m " << data.problem().label() << ": " << describe(v);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  }
}

/// A contiguous layout that marks rows inside a block as padding (-1), not only at a segment's end: those rows keep
/// the sentinel and every other row is bitwise what the unmarked layout gives. With the TMA epilogue the block holding
/// them must fall back to the row check (a box store would write them).
TEST(Grouped, ContiguousRowsMarkedInsideABlockAreNeverWritten) {
  Gpu& gpu = Gpu::get();
  cudaStream_t s = gpu.stream;
  const GroupedProblem g = parse_grouped_problem("kind=contiguous groups=2 m_per_group=300,256 256 512 scale=block", "t");
  for (const char* config : {k128, kTma128, kTma64}) {
    SCOPED_TRACE(config);
    const KernelConfig c = KernelConfig::parse_key(config);
    const GroupedData data(*gpu.util, g, 5, s);
    ASSERT_TRUE(run_once(data, c).ok);
    const size_t count = size_t(g.total_rows() * g.n);
    std::vector<uint16_t> full(count), holes(count);
    DGT_CHECK_CUDA(cudaMemcpy(full.data(), data.d(), count * 2, cudaMemcpyDeviceToHost));
    // Rows 5 (group 0's first block) and 384 + 70 (group 1's second block, a full one) become padding.
    const std::vector<int64_t> marked = {5, 384 + 70};
    const int32_t minus_one = -1;
    for (int64_t r : marked)
      DGT_CHECK_CUDA(cudaMemcpy(const_cast<int32_t*>(data.operands().layout) + r, &minus_one, 4, cudaMemcpyHostToDevice));
    data.reset_d(s);
    grouped_kernel(c, g).launch(g, data.operands(), s);
    DGT_CHECK_CUDA(cudaGetLastError());
    DGT_CHECK_CUDA(cudaStreamSynchronize(s));
    DGT_CHECK_CUDA(cudaMemcpy(holes.data(), data.d(), count * 2, cudaMemcpyDeviceToHost));
    int64_t written = 0, differ = 0;
    for (int64_t row = 0; row < g.total_rows(); ++row) {
      const bool is_marked = row == marked[0] || row == marked[1];
      for (int64_t col = 0; col < g.n; ++col) {
        const size_t at = size_t(row * g.n + col);
        if (is_marked) written += holes[at] != 0xFFFF;
        else differ += holes[at] != full[at];
      }
    }
    EXPECT_EQ(written, 0) << "a row marked -1 was written";
    EXPECT_EQ(differ, 0) << "rows not marked differ from the unmarked layout's output";
  }
}

// Small shapes for compute-sanitizer (ctest gpu_sanitize_{memcheck,racecheck}_grouped): padding blocks skipped,
// empty groups, partial blocks, a cluster along N; block scales only under memcheck (racecheck does not model the
// bulk copies' completion on the full barrier: tests/gpu/sanitize.sh).
TEST(GroupedSanitize, PerTensor) {
  for (const char* config : {k128, kClusterN, kTma128}) {
    expect_verified("kind=masked groups=4 m_max=128 masked_m=100,0,128,3 256 256", config);
    expect_verified("kind=contiguous groups=3 m_per_group=0,130,1 256 256", config);
  }
}

TEST(GroupedSanitize, BlockScales) {
  for (const char* config : {k128, kClusterN, kTma128}) {
    expect_verified("kind=masked groups=4 m_max=128 masked_m=100,0,128,3 256 256 scale=block", config);
    expect_verified("kind=contiguous groups=3 m_per_group=0,130,1 256 256 scale=block", config);
  }
}

}  // namespace
}  // namespace dgt::test
