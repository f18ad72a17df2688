// Small shapes for compute-sanitizer runs (memcheck, racecheck): tails in M, N and K, several
// configs. Also part of the normal GPU run.
#include "harness.hpp"

#include <iterator>
#include <tuple>
#include <vector>

#include "space/resource_model.hpp"

namespace dgt::test {
namespace {

TEST(Sanitize, SmallShapes) {
  Gpu& gpu = Gpu::get();
  const char* keys[] = {
      "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1", "64x48x128_s2_wg1_sw128_c1x1_rm8_direct_sk1",
      "256x64x128_s3_wg2_sw128_c1x1_rn2_direct_sk1",
      // clusters with multicast, the TMA-store epilogue and split-K
      "128x128x128_s4_wg2_sw128_c2x1_rm8_direct_sk1", "128x64x128_s4_wg2_sw128_c1x2_rm8_tma_sk1",
      "128x128x128_s3_wg2_sw128_c2x2_rn4_tma_sk1", "64x64x128_s4_wg1_sw128_c1x1_rm8_direct_sk3",
      "64x64x64_s4_wg1_sw64_c1x2_rm8_tma_sk2",
      // kernel v2: two WGMMA groups (2g), TMA store at BLOCK_N % 64 != 0, split-K into the TMA
      // store, and the epilogue overlap (2o) across tile boundaries (sm7: many tiles per CTA)
      "128x88x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", "64x40x128_s4_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1",
      "128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm7_2o_p1", "64x16x128_s2_wg1_sw128_c1x1_rm1_direct_sk1_sm0_2o_p1",
      "128x64x128_s4_wg2_sw128_c2x1_rm8_tma_sk1_sm0_2o_p1", "128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk2_sm0_2o_p1",
      // cluster splits: partials through distributed shared memory (st.async into rank 0), several
      // tiles per cluster (sm8) and a 1g twin with the direct epilogue
      "64x32x128_s4_wg1_sw128_c1x1_rm8_tma_sk2c_sm8_2g_p1", "64x48x64_s4_wg1_sw64_c1x1_rm8_direct_sk3c_sm0_1g_p1"};
  // Fast accumulation with promotion every P k-blocks (P x BLOCK_K <= 2048).
  const char* fast_keys[] = {"128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16",
                             "64x48x64_s4_wg1_sw64_c1x1_rm8_direct_sk1_sm0_1g_p4",
                             "128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm7_2o_p1",
                             // ping-pong (pp, K <= P x BLOCK_K here): two staging tiles, turn-order barriers,
                             // many units per CTA (sm7), a 2-stage ring with the direct epilogue
                             "128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm7_pp_p16",
                             "64x48x128_s2_wg2_sw128_c1x1_rm8_direct_sk1_sm0_pp_p16",
                             // pp staging through a ring of 2 column bands (192-byte rows: 3 bands of 64 bytes)
                             "128x96x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16",
                             // pp in multicast clusters (M = 7: one m-block, so the 2x1 pair has a spare CTA)
                             "128x64x128_s4_wg2_sw128_c2x1_rm8_tma_sk1_sm0_pp_p16",
                             "128x64x128_s4_wg2_sw128_c1x2_rm8_direct_sk1_sm0_pp_p16"};
  uint64_t seed = 77;
  for (auto [m, n, k] :
       {std::tuple<int64_t, int64_t, int64_t>{129, 65, 1040}, {7, 200, 80}, {300, 136, 400}, {129, 264, 2048}}) {
    Problem p = Problem::dense(m, n, k);
    ProblemData data(p, *gpu.util, seed++, gpu.stream);
    for (const char* key : keys) {
      const KernelConfig c = KernelConfig::parse_key(key);
      if (!problem_fit(c, p).empty()) continue;  // P3: TMA stores need 16-byte rows; P9: no empty split in a cluster
      Verification v = gpu.run(data, c);
      EXPECT_TRUE(v.ok) << p.label() << " " << key << ": " << describe(v);
    }
    Problem pf = p;
    pf.accum = Accum::kFast;
    ProblemData fdata(pf, *gpu.util, seed++, gpu.stream);
    for (const char* key : fast_keys) {
      const KernelConfig c = KernelConfig::parse_key(key);
      if (c.epilogue == Epilogue::kTma && pf.ldd % 8 != 0) continue;
      Verification v = gpu.run(fdata, c);
      EXPECT_TRUE(v.ok) << pf.label() << " " << key << ": " << describe(v);
    }
  }
}

// Scale modes under the sanitizer: partial last 128-wide granule (K = 1040, 400) and partial last
// 128-column scale block (N = 65, 136, 200), block scales read per promotion, channel scales per row/column;
// every run verified. The block modes are their own test because racecheck leaves them out
// (tests/gpu/sanitize.sh says why); memcheck runs both.
int run_scale_mode_shapes(std::initializer_list<ScaleMode> modes, uint64_t seed) {
  Gpu& gpu = Gpu::get();
  const char* keys[] = {"128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1",
                        "64x48x128_s2_wg1_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1",
                        "128x64x128_s4_wg2_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1",
                        "64x168x128_s4_wg1_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1"};
  int ran = 0;
  for (ScaleMode mode : modes)
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{129, 65, 1040}, {7, 200, 80}, {300, 136, 400}}) {
      Problem p = Problem::dense(m, n, k);
      p.scale = mode;
      ProblemData data(p, *gpu.util, seed++, gpu.stream);
      for (const char* key : keys) {
        const KernelConfig c = KernelConfig::parse_key(key);
        if (c.epilogue == Epilogue::kTma && p.ldd % 8 != 0) continue;      // P3
        if (!evaluate_resources(KernelSpec::of(c, p)).ok()) continue;  // e.g. R10 for wide block1d1d tiles
        Verification v = gpu.run(data, c);
        EXPECT_TRUE(v.ok) << p.label() << " " << key << ": " << describe(v);
        ++ran;
      }
    }
  return ran;
}

// A D slice of a wider buffer (ldd > N) with N x bytes(D) not a multiple of 16: the TMA store covers the columns up to
// the last whole 16-byte unit and the warpgroup writes the rest with plain stores (kernels/gemm/epilogue_tma.cuh),
// also through the pp band ring; both under the sanitizer.
TEST(Sanitize, PaddedDTailColumns) {
  Gpu& gpu = Gpu::get();
  const char* keys[] = {"128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", "64x48x128_s4_wg1_sw128_c1x1_rm8_tma_sk2_sm0_1g_p1",
                        "128x64x128_s4_wg2_sw128_c2x1_rm8_tma_sk1_sm0_1g_p1"};
  const char* fast_keys[] = {"128x96x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16",
                             "128x64x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm7_pp_p16"};
  uint64_t seed = 2650;
  int ran = 0;
  for (DType d : {DType::kE4M3, DType::kBF16, DType::kF32})
    for (auto [m, n, ldd] : {std::tuple<int64_t, int64_t, int64_t>{129, 72, 80}, {300, 73, 96}, {7, 200, 224}}) {
      for (Accum accum : {Accum::kPromote, Accum::kFast}) {
        Problem p = Problem::dense(m, n, 400);
        p.d = d, p.ldd = ldd, p.accum = accum;
        if (p.ldd * dtype_bytes(d) % 16 != 0) continue;
        ProblemData data(p, *gpu.util, seed++, gpu.stream);
        data.poison_scale_padding(gpu.stream);
        for (const char* key : accum == Accum::kFast ? std::vector<const char*>(std::begin(fast_keys), std::end(fast_keys))
                                                     : std::vector<const char*>(std::begin(keys), std::end(keys))) {
          const KernelConfig c = KernelConfig::parse_key(key);
          if (!evaluate_resources(KernelSpec::of(c, p)).ok() || !problem_fit(c, p).empty()) continue;
          Verification v = gpu.run(data, c);
          EXPECT_TRUE(v.ok) << p.label() << " " << key << ": " << describe(v);
          ++ran;
        }
      }
    }
  EXPECT_GE(ran, 30);
}

TEST(Sanitize, ScaleModesSmallShapes) { EXPECT_GE(run_scale_mode_shapes({ScaleMode::kChannel}, 177), 10); }

TEST(Sanitize, BlockScalesSmallShapes) {
  EXPECT_GE(run_scale_mode_shapes({ScaleMode::kBlock, ScaleMode::kBlock1d1d}, 180), 12);
}

}  // namespace
}  // namespace dgt::test
