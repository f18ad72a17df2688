// Correctness of the kernel family on edge shapes, fresh seeded inputs each shape.
#include "harness.hpp"

#include "core/int_math.hpp"
#include "problem/shapes_file.hpp"
#include "space/resource_model.hpp"

namespace dgt::test {
namespace {

// Epilogue overlap (2o): the next tile's first k-block is issued before the current tile's epilogue.
// Traps covered: tiles of one k-block (K <= BLOCK_K) and odd/even k-block counts (the first buffer of a
// tile alternates), the last tile of a CTA (no next tile), a 2-stage ring (the stage and phase wrap at
// the tile boundary), many tiles per CTA (sm7), edge clusters' spare tiles (skipped after the overlap
// issue), split-K (reduction during the overlap), both epilogues and one or two consumer WGs.
std::vector<KernelConfig> overlap_configs() {
  const char* keys[] = {
      "128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1",   // the 2g winner shape with overlap
      "128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1",   // at the register limit (3 x 72 + 16 = 232)
      "128x88x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm7_2o_p1",    // unswizzled staging, 7 CTAs: many tile boundaries
      "64x96x128_s8_wg1_sw128_c1x1_rn4_tma_sk1_sm0_2o_p1",     // one consumer WG
      "256x64x128_s4_wg2_sw128_c1x1_rm8_tma_sk3_sm0_2o_p1",    // two m64 slices per WG, split-K 3 into the TMA store
      "128x40x64_s8_wg2_sw64_c1x1_rm2_direct_sk2_sm0_2o_p1",   // BLOCK_K 64, direct epilogue, split-K 2
      "128x128x128_s5_wg2_sw128_c2x1_rm4_tma_sk1_sm0_2o_p1",   // cluster 2x1: spare CTAs at odd M
      "128x64x128_s6_wg2_sw128_c1x2_rn8_tma_sk1_sm0_2o_p1",    // cluster 1x2: A multicast
      "64x16x128_s2_wg1_sw128_c1x1_rm1_direct_sk1_sm0_2o_p1",  // 2-stage ring: wraps at every tile boundary
  };
  std::vector<KernelConfig> out;
  for (const char* k : keys) out.push_back(KernelConfig::parse_key(k));
  return out;
}

std::vector<KernelConfig> edge_configs() {
  const char* keys[] = {
      "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1",       // the default family member
      "64x48x128_s6_wg1_sw128_c1x1_rm8_direct_sk1",         // one consumer WG, small non-power-of-two N
      "256x64x128_s3_wg2_sw128_c1x1_rm8_direct_sk1",        // two m64 slices per consumer WG
      "128x176x128_s4_wg2_sw128_c1x1_rm8_direct_sk1",       // 11 n8 groups, near the register limit
      "128x96x128_s5_wg2_sw128_c1x1_rn3_direct_sk1",        // raster along N, odd group
      "64x16x128_s8_wg1_sw128_c1x1_rm1_direct_sk1",         // smallest tile, deep ring (wraps often)
      "128x128x128_s5_wg2_sw128_c2x1_rm4_direct_sk1",       // cluster 2x1: B multicast, spare CTAs at odd M
      "128x64x128_s6_wg2_sw128_c1x2_rn8_tma_sk1",           // cluster 1x2: A multicast, TMA-store epilogue
      "128x128x128_s4_wg2_sw128_c2x2_rm8_tma_sk1",          // cluster 2x2: both multicast
      "64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk4",         // split-K 4 (runs as fewer splits for small K)
      "128x40x64_s8_wg2_sw64_c1x1_rm2_direct_sk3",          // BLOCK_K 64 with a 64-byte swizzle, split-K 3
      "64x64x256_s3_wg1_sw32_c1x1_rm16_tma_sk2",            // BLOCK_K 256 in 8 spans of 32 bytes, TMA store, split 2
      "128x128x128_s6_wg2_sw128_c1x1_rm8_direct_sk1_sm60",  // persistent grid of 60 CTAs
      // Kernel v2: two WGMMA groups in flight, stmatrix TMA-store epilogue for any BLOCK_N % 8.
      "128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",   // the measured winner shape, 128-byte output swizzle
      "128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",   // 2g at its register limit, 32-byte swizzle (9 bands)
      "128x88x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",    // odd multiple of 8: unswizzled full-width box, stmatrix
                                                               // x2
      "64x96x128_s8_wg1_sw128_c1x1_rn4_tma_sk1_sm0_2g_p1",     // one consumer WG, 64-byte swizzle
      "256x64x128_s4_wg2_sw128_c1x1_rm8_tma_sk3_sm0_2g_p1",    // two m64 slices per WG, split-K 3 into the TMA store
      "128x176x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1",   // one group, 11 column groups (x4 + x2), 32-byte swizzle
      "128x40x64_s8_wg2_sw64_c1x1_rm2_tma_sk1_sm0_2g_p1",      // BLOCK_K 64, 80-byte rows: no swizzle
      "128x128x128_s5_wg2_sw128_c2x1_rm4_tma_sk1_sm0_2g_p1",   // 2g with B multicast
      "64x16x128_s8_wg1_sw128_c1x1_rm1_direct_sk1_sm0_2g_p1",  // 2g, deep ring, direct epilogue
  };
  std::vector<KernelConfig> out;
  for (const char* k : keys) out.push_back(KernelConfig::parse_key(k));
  for (const auto& c : overlap_configs()) out.push_back(c);
  return out;
}

int64_t pad16(int64_t k) { return round_up(k, 16); }

void check_all(const Problem& p, const std::vector<KernelConfig>& configs, uint64_t seed) {
  Gpu& gpu = Gpu::get();
  ProblemData data(p, *gpu.util, seed, gpu.stream);
  for (const auto& c : configs) {
    if (c.epilogue == Epilogue::kTma && p.ldd % 8 != 0) {
      // TMA stores need 16-byte rows: refused up front, naming operand D (pruning rule P3).
      try {
        gpu.run(data, c);
        ADD_FAILURE() << p.label() << " with " << c.key() << ": expected a refusal for ldd = " << p.ldd;
      } catch (const Error& e) {
        EXPECT_NE(e.message().find("operand D"), std::string::npos) << e.message();
      }
      continue;
    }
    Verification v = gpu.run(data, c);
    EXPECT_TRUE(v.ok) << p.label() << " with " << c.key() << ": " << describe(v);
  }
}

TEST(EdgeShapes, ShippedEdgeFile) {
  auto shapes = load_shapes_file(std::string(DGT_SOURCE_DIR) + "/configs/shapes/edge.txt");
  ASSERT_GE(shapes.size(), 20u);
  uint64_t seed = 1;
  for (const auto& s : shapes) check_all(s.problem, edge_configs(), seed++);
}

TEST(EdgeShapes, GridOfOddSizesAndKTails) {
  const int64_t sizes[] = {1, 7, 63, 65, 127, 129, 1021, 1023, 4096};
  uint64_t seed = 100;
  int i = 0;
  for (int64_t m : sizes)
    for (int64_t n : sizes) {
      const int64_t k = sizes[i++ % 9];
      Problem p = Problem::dense(m, n, k);
      p.lda = p.ldb = pad16(k);  // K not a multiple of 16 needs padded rows (TMA stride rule)
      check_all(p, edge_configs(), seed++);
    }
}

TEST(EdgeShapes, FastAccumulationAndE5M2) {
  const char* key = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1";
  // Fast-mode promotion intervals (P k-blocks per tensor-core partial sum, P x BLOCK_K <= 2048) and the
  // two-group schedule; P does not divide every K here, so last groups are partial.
  const std::vector<KernelConfig> fast_keys = {
      KernelConfig::parse_key("128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16"),
      KernelConfig::parse_key("128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p3"),
      KernelConfig::parse_key("64x64x64_s8_wg1_sw64_c1x1_rm8_direct_sk2_sm0_1g_p32"),
      KernelConfig::parse_key("128x128x256_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p8"),
      KernelConfig::parse_key("128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1")};
  uint64_t seed = 500;
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 4096, 4096},
                         {129, 1023, 1040},
                         {1021, 65, 7168},
                         {4096, 4096, 4096},
                         {64, 256, 65536}}) {
    for (int variant = 0; variant < 3; ++variant) {
      Problem p = Problem::dense(m, n, k);
      if (variant == 0) p.accum = Accum::kFast;
      if (variant == 1) p.a = DType::kE5M2;
      if (variant == 2) p.b = DType::kE5M2, p.accum = Accum::kFast;
      check_all(p, {KernelConfig::parse_key(key)}, seed++);
      if (p.accum == Accum::kFast) check_all(p, fast_keys, seed++);
    }
  }
}

TEST(EdgeShapes, PaddedLeadingDimensionsAreRespected) {
  // Row padding of A and B holds NaN and D's padding holds the poison: reading or writing it fails.
  Problem p = Problem::dense(129, 200, 1040);
  p.lda = 1088;
  p.ldb = 1056;
  p.ldd = 263;  // odd ldd: 4-byte pair stores are not aligned, the kernel must fall back to 2-byte stores
  std::vector<KernelConfig> direct;
  for (const auto& c : edge_configs())
    if (c.epilogue == Epilogue::kDirect) direct.push_back(c);  // TMA stores need 16-byte rows (P3)
  check_all(p, direct, 900);
  p.ldd = 264;  // 16-byte rows with padding: the TMA-store epilogue must clip to N
  check_all(p, edge_configs(), 901);
}

TEST(SplitK, ReductionIsDeterministic) {
  // Same inputs, several launches: the bits of D must not depend on which split finishes last.
  Gpu& gpu = Gpu::get();
  Problem p = Problem::dense(200, 1000, 8192);
  ProblemData data(p, *gpu.util, 321, gpu.stream);
  // The last split reads the partials 4 splits per round (kernels/gemm/split_k.cuh): 8 is two whole rounds, 3 one
  // partial round, 6 and 13 (K = 8192: 64 k-blocks, 13 splits of 5) end on a partial round (2 and 1 splits).
  for (const char* key : {"64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk8", "128x128x128_s4_wg2_sw128_c1x2_rm8_tma_sk3",
                          "64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk6", "64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk13"}) {
    std::vector<uint16_t> first, again(size_t(p.m * p.ldd));
    for (int run = 0; run < 5; ++run) {
      Verification v = gpu.run(data, KernelConfig::parse_key(key));
      ASSERT_TRUE(v.ok) << key << ": " << describe(v);
      DGT_CHECK_CUDA(cudaMemcpy(again.data(), data.operands().d, again.size() * 2, cudaMemcpyDeviceToHost));
      if (run == 0)
        first = again;
      else
        EXPECT_TRUE(first == again) << key << ": run " << run << " differs from run 0";
    }
  }
}

TEST(Overlap, OutputIsBitwiseIdenticalTo2g) {
  // 2o adds the same partials in the same order as 2g: D must match bit for bit, in both modes, with
  // tiles of one k-block, odd and even k-block counts, tails, split-K and many tiles per CTA.
  Gpu& gpu = Gpu::get();
  const char* pairs[][2] = {
      {"128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", "128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1"},
      {"128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", "128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1"},
      {"128x88x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm7_2g_p1", "128x88x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm7_2o_p1"},
      {"256x64x128_s4_wg2_sw128_c1x1_rm8_tma_sk3_sm0_2g_p1", "256x64x128_s4_wg2_sw128_c1x1_rm8_tma_sk3_sm0_2o_p1"},
      {"64x16x128_s2_wg1_sw128_c1x1_rm1_direct_sk1_sm0_2g_p1", "64x16x128_s2_wg1_sw128_c1x1_rm1_direct_sk1_sm0_2o_p1"},
  };
  uint64_t seed = 1200;
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1021, 1023, 1040},
                         {2048, 2048, 512},
                         {777, 4096, 384},
                         {300, 5000, 128},
                         {4096, 4096, 4096}}) {
    for (Accum accum : {Accum::kPromote, Accum::kFast}) {
      Problem p = Problem::dense(m, n, k);
      p.accum = accum;
      ProblemData data(p, *gpu.util, seed++, gpu.stream);
      for (const auto& pair : pairs) {
        // P3: the TMA-store epilogue needs 16-byte rows of D (the H200 run refused ldd = 1023 with the rule named).
        if (KernelConfig::parse_key(pair[0]).epilogue == Epilogue::kTma && p.ldd % 8 != 0) continue;
        std::vector<uint16_t> d2g(size_t(p.m * p.ldd)), d2o(d2g.size());
        Verification v = gpu.run(data, KernelConfig::parse_key(pair[0]));
        ASSERT_TRUE(v.ok) << p.label() << " " << pair[0] << ": " << describe(v);
        DGT_CHECK_CUDA(cudaMemcpy(d2g.data(), data.operands().d, d2g.size() * 2, cudaMemcpyDeviceToHost));
        v = gpu.run(data, KernelConfig::parse_key(pair[1]));
        ASSERT_TRUE(v.ok) << p.label() << " " << pair[1] << ": " << describe(v);
        DGT_CHECK_CUDA(cudaMemcpy(d2o.data(), data.operands().d, d2o.size() * 2, cudaMemcpyDeviceToHost));
        EXPECT_TRUE(d2g == d2o) << p.label() << ": " << pair[1] << " differs from " << pair[0];
      }
    }
  }
}

TEST(ClusterSplit, VerifiesAndMatchesTheWorkspaceSplitBitwise) {
  // sk<S>c: the S splits of a tile are one cluster and rank 0 adds the others' partials from its shared memory
  // in split order, the order of the workspace reduction, so D must match the workspace split bit for bit,
  // launch after launch. Traps: M = 1 (decode), N and K tails, several tiles per cluster (the `free` barrier's
  // phases: 200 x 1000 has 128 tiles of 64 x 32 for 33 clusters of 4), two consumer warpgroups, 1g, the direct
  // epilogue, S = 2, 3, 4 and 8, a persistent grid capped by sms (more tiles per cluster).
  Gpu& gpu = Gpu::get();
  const char* keys[] = {
      "64x32x256_s8_wg1_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1",   "64x48x128_s12_wg1_sw128_c1x1_rm8_tma_sk3c_sm0_2g_p1",
      "64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk4c_sm0_2g_p1",  "64x32x128_s8_wg1_sw128_c1x1_rm8_direct_sk8c_sm0_1g_p1",
      "128x64x128_s6_wg2_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1",  "64x64x256_s4_wg1_sw128_c1x1_rn2_tma_sk4c_sm16_2g_p1",
  };
  uint64_t seed = 1500;
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 2112, 7168},
                         {200, 1000, 8192},
                         {64, 576, 7168},
                         {77, 1000, 4096},
                         {128, 4096, 2048}}) {
    Problem p = Problem::dense(m, n, k);
    ProblemData data(p, *gpu.util, seed++, gpu.stream);
    for (const char* key : keys) {
      const KernelConfig cluster = KernelConfig::parse_key(key);
      if (!problem_fit(cluster, p).empty()) continue;  // P9 (K too short for S splits) or P3
      KernelConfig workspace = cluster;
      workspace.split_cluster = false;
      std::vector<uint16_t> dw(size_t(p.m * p.ldd)), dc(dw.size());
      Verification v = gpu.run(data, workspace);
      ASSERT_TRUE(v.ok) << p.label() << " " << workspace.key() << ": " << describe(v);
      DGT_CHECK_CUDA(cudaMemcpy(dw.data(), data.operands().d, dw.size() * 2, cudaMemcpyDeviceToHost));
      for (int run = 0; run < 3; ++run) {
        v = gpu.run(data, cluster);
        ASSERT_TRUE(v.ok) << p.label() << " " << key << ": " << describe(v);
        DGT_CHECK_CUDA(cudaMemcpy(dc.data(), data.operands().d, dc.size() * 2, cudaMemcpyDeviceToHost));
        EXPECT_TRUE(dw == dc) << p.label() << ": " << key << " (run " << run << ") differs from " << workspace.key();
      }
    }
  }
}

TEST(Pingpong, VerifiesAndMatches1gBitwise) {
  // pp (fast accumulation, K <= P x BLOCK_K): the two consumer warpgroups take alternate whole tiles and sum
  // all of K on the tensor cores without promotion; 1g with the same BLOCK_N, BLOCK_K and P sums the same
  // k-steps into its partial buffer and adds it to a zero accumulator, so D must match bit for bit. Traps:
  // one k-block per tile (K <= BLOCK_K), an odd number of units per CTA (warpgroup 1 has one fewer: sm7,
  // sm5), a 2-stage ring (the skip wraps the ring every unit), K tails, the direct epilogue, 64-row tiles.
  Gpu& gpu = Gpu::get();
  const char* pairs[][2] = {
      {"128x176x128_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16", "128x176x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16"},
      {"128x128x256_s2_wg2_sw128_c1x1_rm8_direct_sk1_sm0_pp_p8", "128x128x256_s3_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p8"},
      {"128x88x128_s4_wg2_sw128_c1x1_rn2_tma_sk1_sm7_pp_p16", "128x88x128_s6_wg2_sw128_c1x1_rn2_tma_sk1_sm7_1g_p16"},
      {"64x96x128_s2_wg2_sw128_c1x1_rm1_tma_sk1_sm5_pp_p16", "64x96x128_s2_wg1_sw128_c1x1_rm1_tma_sk1_sm5_1g_p16"},
      {"64x256x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16", ""},  // no 1g twin fits the registers: verified only
      // Multicast clusters (B across a 2x1 pair, A across a 1x2 pair): both CTAs release every stage to each
      // other; odd tile counts leave an edge cluster with a spare CTA (777 rows: 7 m-blocks; 4096 / 144: 29
      // n-blocks), and sm7 caps the grid at 3 clusters (odd units per warpgroup).
      {"128x160x128_s4_wg2_sw128_c2x1_rm8_tma_sk1_sm0_pp_p16", "128x160x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16"},
      {"128x144x128_s4_wg2_sw128_c1x2_rm8_tma_sk1_sm0_pp_p16", "128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16"},
      {"128x128x128_s5_wg2_sw128_c1x2_rn2_tma_sk1_sm7_pp_p16", "128x128x128_s6_wg2_sw128_c1x1_rn2_tma_sk1_sm7_1g_p16"},
      {"128x128x128_s4_wg2_sw128_c2x2_rm8_tma_sk1_sm0_pp_p16", "128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16"},
      // Staging through a ring of 2 column bands (kEpiRingBands): 11 bands of 16 columns per tile at 128x176
      // (above, 3 stages), 5 of 32 at 128x160 (above), here the 5-stage ring the band ring makes room for.
      {"128x176x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16", "128x176x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16"},
  };
  uint64_t seed = 1400;
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1021, 1024, 1040},
                         {2048, 2048, 512},
                         {777, 4096, 384},
                         {300, 5000, 128},
                         {1, 4096, 2048},
                         {4096, 4096, 2048}}) {
    Problem p = Problem::dense(m, n, k);
    p.accum = Accum::kFast;
    ProblemData data(p, *gpu.util, seed++, gpu.stream);
    for (const auto& pair : pairs) {
      std::vector<uint16_t> dpp(size_t(p.m * p.ldd)), d1g(dpp.size());
      Verification v = gpu.run(data, KernelConfig::parse_key(pair[0]));
      ASSERT_TRUE(v.ok) << p.label() << " " << pair[0] << ": " << describe(v);
      if (pair[1][0] == '\0') continue;
      DGT_CHECK_CUDA(cudaMemcpy(dpp.data(), data.operands().d, dpp.size() * 2, cudaMemcpyDeviceToHost));
      v = gpu.run(data, KernelConfig::parse_key(pair[1]));
      ASSERT_TRUE(v.ok) << p.label() << " " << pair[1] << ": " << describe(v);
      DGT_CHECK_CUDA(cudaMemcpy(d1g.data(), data.operands().d, d1g.size() * 2, cudaMemcpyDeviceToHost));
      EXPECT_TRUE(dpp == d1g) << p.label() << ": " << pair[0] << " differs from " << pair[1];
    }
  }
  // The fused epilogues ride on pp too: e4m3 output with amax, bias + GELU (each verified, amax included).
  for (auto [d, bias, act] : {std::tuple<DType, Bias, Act>{DType::kE4M3, Bias::kNone, Act::kNone},
                              {DType::kBF16, Bias::kBF16, Act::kGeluTanh},
                              {DType::kF32, Bias::kBF16, Act::kRelu}}) {
    Problem p = Problem::dense(1021, 1024, 1040);
    p.accum = Accum::kFast;
    p.d = d, p.bias = bias, p.act = act;
    ProblemData data(p, *gpu.util, seed++, gpu.stream);
    int ran = 0;
    for (const char* key : {"128x176x128_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16",
                            "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16",
                            "64x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16",
                            "128x128x256_s2_wg2_sw128_c1x1_rm8_direct_sk1_sm0_pp_p8",
                            // the band ring with e4m3 (160-byte rows: 5 bands of 32) and f32 (640: 5 of 128)
                            "128x160x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16"}) {
      // f32 output doubles a staging row; with the band ring (more than 2 bands) every key here still fits (R9),
      // and the rule check stays for the others.
      if (!config_rule_violation(KernelConfig::parse_key(key), p).empty()) continue;
      Verification v = gpu.run(data, KernelConfig::parse_key(key));
      EXPECT_TRUE(v.ok) << p.label() << " " << key << ": " << describe(v);
      ++ran;
    }
    EXPECT_GE(ran, 4) << p.label();
  }
}

TEST(SwapAB, VerifiesOnEdgeShapes) {
  // Swap AB: the kernel computes D^T = B A^T on the transposed problem and stmatrix .trans stores each tile back into
  // D (epilogue_tma_swap.cuh). Traps: M = 1 and M tails (the kernel's N: the B-side tail box), N tails of the kernel's
  // M (D's columns), odd 8-column group counts (the x2 stmatrix), two m64 slices per warpgroup, split-K through the
  // workspace and through a cluster, multicast, 2o, a capped persistent grid, K tails, fast accumulation, channel
  // scales (the launch passes B's scales as the kernel's A scales) and an activation. gpu.run verifies every output
  // against the reference and checks that nothing outside D was written (guard rows and padding hold NaN).
  Gpu& gpu = Gpu::get();
  const char* keys[] = {
      "128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1_swapab", "128x136x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1_swapab",
      "64x16x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1_swapab",  "64x8x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1_swapab",
      "256x80x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1_swapab",  "128x96x128_s6_wg2_sw128_c1x1_rm8_tma_sk3_sm0_2g_p1_swapab",
      "64x32x256_s8_wg1_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1_swapab",  "128x112x128_s5_wg2_sw128_c2x1_rm4_tma_sk1_sm0_2g_p1_swapab",
      "128x104x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1_swapab", "128x120x128_s6_wg2_sw128_c1x1_rn2_tma_sk1_sm7_2g_p1_swapab",
  };
  struct Case {
    int64_t m, n, k;
    Accum accum;
    ScaleMode scale;
    Act act;
  };
  const Case cases[] = {
      {1, 2112, 7168, Accum::kPromote, ScaleMode::kPerTensor, Act::kNone},
      {7, 1024, 1040, Accum::kFast, ScaleMode::kPerTensor, Act::kNone},
      {17, 4096, 1000, Accum::kPromote, ScaleMode::kChannel, Act::kNone},
      {133, 1000, 4096, Accum::kPromote, ScaleMode::kPerTensor, Act::kGeluTanh},
      {554, 8192, 3584, Accum::kPromote, ScaleMode::kPerTensor, Act::kNone},
      {1021, 3000, 520, Accum::kFast, ScaleMode::kChannel, Act::kNone},
      {4096, 64, 256, Accum::kPromote, ScaleMode::kPerTensor, Act::kNone},
      {300, 1000, 2048, Accum::kPromote, ScaleMode::kPerTensor, Act::kNone},  // D padded below (ldd > N)
  };
  uint64_t seed = 1700;
  int ran = 0;
  for (const Case& c : cases) {
    Problem p = Problem::dense(c.m, c.n, c.k);
    p.lda = p.ldb = pad16(c.k);  // K tails need padded rows (TMA stride rule)
    p.accum = c.accum, p.scale = c.scale, p.act = c.act;
    // D's rows padded past N: TMA must clip the transposed store at column N (P10 keeps N a multiple of 8), and the
    // padding keeps its poison (gpu.run checks it).
    if (c.m == 300) p.ldd = c.n + 24;
    ProblemData data(p, *gpu.util, seed++, gpu.stream);
    for (const char* key : keys) {
      const KernelConfig config = KernelConfig::parse_key(key);
      if (!config_rule_violation(config, p).empty()) continue;  // P9: K too short for a cluster split's splits
      Verification v = gpu.run(data, config);
      EXPECT_TRUE(v.ok) << p.label() << " " << key << ": " << describe(v);
      ++ran;
    }
  }
  EXPECT_GE(ran, 60);
}

TEST(Refusals, UnalignedLeadingDimensionNamesOperandAndRule) {
  Gpu& gpu = Gpu::get();
  Problem p = Problem::dense(16, 16, 7);
  auto k = gpu.kernel(KernelSpec::of(KernelConfig::parse_key("64x16x128_s8_wg1_sw128_c1x1_rm1_direct_sk1"), p));
  try {
    k->launch(p,
              jit::GemmOperands{reinterpret_cast<void*>(256), reinterpret_cast<void*>(256), nullptr, nullptr, nullptr},
              gpu.stream);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
    EXPECT_NE(e.message().find("operand A"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("multiple of 16"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace dgt::test
