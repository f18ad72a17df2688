// dgt::GroupedGemm on the GPU through its C API (dgtune/dgtune.h: dgt_grouped_gemm_*), checked against the reference
// path of the grouped kernel tests (bench/grouped_data.hpp: the reference GEMM per group, NaN in every padding row of
// A, a sentinel in D that rows without a real row must keep). The key carries no counts: one object serves every split
// of M_sum (contiguous) and every masked_m (masked), also from a CUDA graph captured once and replayed with other
// counts. The default rule's configs and an explicit one; per-tensor and block scales; pointer errors at run time.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/grouped_data.hpp"
#include "dgtune/dgtune.h"
#include "harness.hpp"

namespace dgt::test {
namespace {

/// A dgt_grouped_gemm, destroyed at scope exit.
struct Handle {
  dgt_grouped_gemm* g = nullptr;
  ~Handle() { dgt_grouped_gemm_destroy(g); }
};

/// The run-time key of a GroupedProblem: what the host knows without the counts.
dgt_grouped_problem key_of(const GroupedProblem& g) {
  dgt_grouped_problem p{};
  p.layout = g.kind == GroupKind::kMasked ? 1 : 0;
  p.groups = g.groups;
  p.m = g.kind == GroupKind::kMasked ? g.m_max : g.total_rows();
  p.expected_m = g.kind == GroupKind::kMasked ? g.expected_m : 0;
  p.n = g.n;
  p.k = g.k;
  p.scale = g.scale == ScaleMode::kBlock ? 2 : 0;
  return p;
}

void create(Handle& h, const dgt_grouped_problem& p, const char* config = nullptr) {
  dgt_grouped_options o{};
  o.device = 0;
  o.config = config;
  ASSERT_EQ(dgt_grouped_gemm_create(&p, &o, &h.g), DGT_OK) << dgt_last_error();
  ASSERT_NE(h.g, nullptr);
}

std::string config_of(const Handle& h, std::string* source = nullptr) {
  char key[128] = {}, src[32] = {};
  EXPECT_EQ(dgt_grouped_gemm_config(h.g, key, sizeof key, src, sizeof src), DGT_OK) << dgt_last_error();
  if (source) *source = src;
  return key;
}

dgt_status run(const Handle& h, const jit::GroupedOperands& o, cudaStream_t s) {
  return dgt_grouped_gemm_run(h.g, o.a, o.b, o.d, o.scale_a, o.scale_b, o.layout, s);
}

/// D reset to the sentinel, one run, synchronised, verified per group.
Verification run_and_verify(const Handle& h, const GroupedData& data) {
  Gpu& gpu = Gpu::get();
  data.reset_d(gpu.stream);
  EXPECT_EQ(run(h, data.operands(), gpu.stream), DGT_OK) << dgt_last_error();
  DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
  return data.verify(*gpu.util, gpu.stream);
}

void expect_verified(const Handle& h, const std::string& spec, uint64_t seed = 7) {
  Gpu& gpu = Gpu::get();
  const GroupedProblem g = parse_grouped_problem(spec, "test");
  const GroupedData data(*gpu.util, g, seed, gpu.stream);
  const Verification v = run_and_verify(h, data);
  EXPECT_TRUE(v.ok) << spec << " with " << config_of(h) << ": " << describe(v);
  EXPECT_EQ(v.pad_touched, 0) << spec << ": a row that holds no real row was written";
}

TEST(GroupedApi, MaskedDefaultRuleBothTileSizes) {
  for (const char* scale : {"block", "tensor"}) {
    // expected_m 8 takes the 64-row tile, 200 the 128-row one; the counts are what the kernel reads, not the hint.
    for (const char* expected : {"8", "200"}) {
      const std::string spec = std::string("kind=masked groups=4 m_max=256 masked_m=200,0,256,17 expected_m=") +
                               expected + " 320 576 scale=" + scale;
      Handle h;
      create(h, key_of(parse_grouped_problem(spec, "test")));
      std::string source;
      EXPECT_EQ(config_of(h, &source), std::string(expected) == "8"
                                           ? "64x128x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"
                                           : "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1");
      EXPECT_EQ(source, "default");
      expect_verified(h, spec);
    }
  }
}

TEST(GroupedApi, ContiguousOneObjectServesEverySplitOfMSum) {
  // Both splits have M_sum = 640 (segments of round_up(m_g, 128) rows): the key is the same, the counts differ.
  const std::vector<std::string> splits = {"300,0,129,0", "0,640,0,0", "128,1,257,0"};
  for (const char* config : {static_cast<const char*>(nullptr), "64x96x128_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",
                             "128x64x128_s6_wg2_sw128_c1x2_rm8_direct_sk1_sm0_2g_p1"}) {
    for (const char* scale : {"block", "tensor"}) {
      const std::string first = std::string("kind=contiguous groups=4 m_per_group=") + splits[0] + " 320 576 scale=" + scale;
      Handle h;
      create(h, key_of(parse_grouped_problem(first, "test")), config);
      std::string source;
      config_of(h, &source);
      EXPECT_EQ(source, config ? "explicit" : "default");
      for (const std::string& split : splits) {
        const std::string spec = std::string("kind=contiguous groups=4 m_per_group=") + split + " 320 576 scale=" + scale;
        ASSERT_EQ(parse_grouped_problem(spec, "test").total_rows(), 640) << spec;
        expect_verified(h, spec);
      }
    }
  }
}

TEST(GroupedApi, GraphReplayWithMaskedCountsChangedBetweenReplays) {
  Gpu& gpu = Gpu::get();
  cudaStream_t s = gpu.stream;
  for (const char* expected : {"16", "128"}) {  // both default tiles
    SCOPED_TRACE(expected);
    const GroupedProblem g = parse_grouped_problem(
        std::string("kind=masked groups=8 m_max=256 masked_m=1,0,256,17,128,129,0,64 expected_m=") + expected +
            " 256 512 scale=block",
        "test");
    Handle h;
    create(h, key_of(g));
    GroupedData data(*gpu.util, g, 3, s);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    DGT_CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    const dgt_status rc = run(h, data.operands(), s);
    DGT_CHECK_CUDA(cudaStreamEndCapture(s, &graph));
    ASSERT_EQ(rc, DGT_OK) << dgt_last_error();
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
      EXPECT_EQ(v.pad_touched, 0);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
}

TEST(GroupedApi, PointerErrorsEnqueueNothing) {
  Gpu& gpu = Gpu::get();
  const GroupedProblem g = parse_grouped_problem("kind=masked groups=2 masked_m=100,5 256 256 scale=block", "test");
  Handle h;
  create(h, key_of(g));
  const GroupedData data(*gpu.util, g, 5, gpu.stream);
  jit::GroupedOperands bad = data.operands();
  bad.b = static_cast<const char*>(bad.b) + 8;
  data.reset_d(gpu.stream);
  EXPECT_EQ(run(h, bad, gpu.stream), DGT_ERR_INVALID);
  EXPECT_NE(std::string(dgt_last_error()).find("b = "), std::string::npos) << dgt_last_error();
  EXPECT_NE(std::string(dgt_last_error()).find("16-byte aligned"), std::string::npos) << dgt_last_error();
  bad = data.operands();
  bad.layout = nullptr;
  EXPECT_EQ(run(h, bad, gpu.stream), DGT_ERR_INVALID);
  EXPECT_NE(std::string(dgt_last_error()).find("masked_m is null"), std::string::npos) << dgt_last_error();
  // Nothing ran: every row of D still holds the sentinel, so the verification sees no real row written.
  DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
  const Verification v = data.verify(*gpu.util, gpu.stream);
  EXPECT_FALSE(v.ok) << "D was written by a refused call";
  // The same object then runs the good pointers.
  EXPECT_TRUE(run_and_verify(h, data).ok);
}

}  // namespace
}  // namespace dgt::test
