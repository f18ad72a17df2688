#include <gtest/gtest.h>

#include <limits>

#include <fstream>
#include <regex>
#include <sstream>

#include "space/resource_model.hpp"
#include "space/tile_grid.hpp"

namespace dgt {
namespace {

KernelSpec spec(int bm, int bn, int stages, int wg, Accum accum = Accum::kPromote) {
  KernelSpec s;
  s.config.block_m = bm;
  s.config.block_n = bn;
  s.config.num_stages = stages;
  s.config.num_math_wg = wg;
  s.accum = accum;
  return s;
}

TEST(ResourceModel, SharedMemoryBudgetByHand) {
  // 128x128x128, 4 stages: A 4*128*128, B 4*128*128, barriers 2*4*8, align 1024.
  ResourceReport r = evaluate_resources(spec(128, 128, 4, 2));
  EXPECT_TRUE(r.ok()) << r.rejection;
  EXPECT_EQ(r.smem.a_stages, 65536);
  EXPECT_EQ(r.smem.b_stages, 65536);
  EXPECT_EQ(r.smem.barriers, 64);
  EXPECT_EQ(r.smem.align_pad, 1024);
  EXPECT_EQ(r.smem.total, 132160);
  EXPECT_EQ(r.threads, 384);
  // 64x112x128, 7 stages, one consumer warpgroup: 7*8192 + 7*14336 + 112 + 1024 = 200704 + 1136.
  r = evaluate_resources(spec(64, 112, 7, 1));
  EXPECT_TRUE(r.ok()) << r.rejection;
  EXPECT_EQ(r.smem.total, 7 * 64 * 128 + 7 * 112 * 128 + 112 + 1024);
  EXPECT_EQ(r.threads, 256);
}

TEST(ResourceModel, DeepestPipelineThatFits) {
  // 128x256x128 uses 48 KiB per stage: 4 stages = 196608 + 64 + 1024 fits 232448, 5 stages do not.
  // (BLOCK_N 256 fails R10 anyway with two consumer WGs, which R9 reports first.)
  ResourceReport r = evaluate_resources(spec(128, 256, 5, 2, Accum::kFast));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.rejection.substr(0, 3), "R9:");
  EXPECT_NE(r.rejection.find("246864"), std::string::npos) << r.rejection;  // 5*49152 + 80 + 1024
  EXPECT_EQ(evaluate_resources(spec(128, 256, 4, 2, Accum::kFast)).rejection.substr(0, 4), "R10:");
}

KernelSpec with_mainloop(KernelSpec s, Mainloop m, int promote_every = 1) {
  s.config.mainloop = m;
  s.config.promote_every = promote_every;
  return s;
}

TEST(ResourceModel, RegisterBudget) {
  // One group in flight: acc + one partial buffer = 2 x BLOCK_N / 2 per m64 slice, overhead 24, in both
  // accumulation modes (fast mode promotes too, every P k-blocks).
  // One consumer WG, BLOCK_M 128 = two m64 slices, BLOCK_N 96: 2*48*2 = 192 + 24 <= 240.
  ResourceReport r = evaluate_resources(spec(128, 96, 4, 1));
  EXPECT_TRUE(r.ok()) << r.rejection;
  EXPECT_EQ(r.regs.accumulators, 192);
  EXPECT_EQ(r.regs.overhead, 24);
  EXPECT_EQ(r.regs.limit, 240);
  // BLOCK_N 112: 224 + 24 > 240, in both modes.
  EXPECT_EQ(evaluate_resources(spec(128, 112, 4, 1)).rejection.substr(0, 4), "R10:");
  EXPECT_EQ(evaluate_resources(spec(128, 112, 4, 1, Accum::kFast)).rejection.substr(0, 4), "R10:");
  // Two consumer WGs: limit 232, BLOCK_N 208 = 208 + 24 = 232 fits, 216 does not.
  EXPECT_TRUE(evaluate_resources(spec(128, 208, 4, 2)).ok());
  EXPECT_TRUE(evaluate_resources(spec(128, 208, 4, 2, Accum::kFast)).ok());
  EXPECT_EQ(evaluate_resources(spec(128, 216, 4, 2)).rejection.substr(0, 4), "R10:");
  // Two groups in flight: 3 x BLOCK_N / 2 per slice + 16 (measured: 0 spills at BLOCK_N 144, 160 spills).
  r = evaluate_resources(with_mainloop(spec(128, 144, 4, 2), Mainloop::k2g));
  EXPECT_TRUE(r.ok()) << r.rejection;
  EXPECT_EQ(r.regs.accumulators, 216);
  EXPECT_EQ(r.regs.overhead, 16);
  r = evaluate_resources(with_mainloop(spec(128, 152, 4, 2), Mainloop::k2g));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.rejection.substr(0, 4), "R10:");
  EXPECT_NE(r.rejection.find("228 accumulator registers + 16"), std::string::npos) << r.rejection;
  // One consumer WG with one m64 slice (BLOCK_M 64): 3 x 72 + 16 = 232 <= 240; 3 x 80 + 16 > 240.
  EXPECT_TRUE(evaluate_resources(with_mainloop(spec(64, 144, 4, 1), Mainloop::k2g)).ok());
  EXPECT_EQ(evaluate_resources(with_mainloop(spec(64, 160, 4, 1), Mainloop::k2g)).rejection.substr(0, 4), "R10:");
  // BLOCK_M 256 with two WGs: two slices each, 3 x 2 x 32 + 16 = 208 (BLOCK_N 64) fits, 80 does not.
  EXPECT_TRUE(evaluate_resources(with_mainloop(spec(256, 64, 4, 2), Mainloop::k2g)).ok());
  EXPECT_EQ(evaluate_resources(with_mainloop(spec(256, 80, 4, 2), Mainloop::k2g)).rejection.substr(0, 4), "R10:");
  // 2o (2g + the next tile's first k-block during the epilogue) keeps the same three buffers: 2g's rule
  // (the NVRTC test compiles 2o at BLOCK_N 144 with 0 spills and no serialization).
  r = evaluate_resources(with_mainloop(spec(128, 144, 4, 2), Mainloop::k2o));
  EXPECT_TRUE(r.ok()) << r.rejection;
  EXPECT_EQ(r.regs.accumulators, 216);
  EXPECT_EQ(r.regs.overhead, 16);
  EXPECT_EQ(evaluate_resources(with_mainloop(spec(128, 152, 4, 2), Mainloop::k2o)).rejection.substr(0, 4), "R10:");
  EXPECT_TRUE(evaluate_resources(with_mainloop(spec(64, 144, 4, 1), Mainloop::k2o)).ok());
  EXPECT_EQ(evaluate_resources(with_mainloop(spec(64, 160, 4, 1), Mainloop::k2o)).rejection.substr(0, 4), "R10:");
}

TEST(ResourceModel, PromotionIntervalRules) {
  // Fast: 1 <= P and P x BLOCK_K <= 2048 (R18); promote: P = 1 (R19); two groups in flight: P = 1 (R20).
  EXPECT_TRUE(evaluate_resources(with_mainloop(spec(128, 128, 4, 2, Accum::kFast), Mainloop::k1g, 16)).ok());
  EXPECT_EQ(
      evaluate_resources(with_mainloop(spec(128, 128, 4, 2, Accum::kFast), Mainloop::k1g, 17)).rejection.substr(0, 4),
      "R18:");
  EXPECT_EQ(
      evaluate_resources(with_mainloop(spec(128, 128, 4, 2, Accum::kFast), Mainloop::k1g, 0)).rejection.substr(0, 4),
      "R18:");
  KernelSpec bk64 = with_mainloop(spec(128, 128, 2, 2, Accum::kFast), Mainloop::k1g, 32);
  bk64.config.block_k = 64;
  bk64.config.swizzle = 64;
  EXPECT_TRUE(evaluate_resources(bk64).ok()) << evaluate_resources(bk64).rejection;  // 32 x 64 = 2048
  bk64.config.block_k = 256;
  EXPECT_EQ(evaluate_resources(bk64).rejection.substr(0, 4), "R18:");  // 32 x 256
  EXPECT_TRUE(evaluate_resources(with_mainloop(spec(128, 128, 4, 2), Mainloop::k2g, 1)).ok());
  EXPECT_TRUE(evaluate_resources(with_mainloop(spec(128, 128, 4, 2, Accum::kFast), Mainloop::k2g, 1)).ok());
  EXPECT_EQ(evaluate_resources(with_mainloop(spec(128, 128, 4, 2), Mainloop::k1g, 2)).rejection.substr(0, 4), "R19:");
  EXPECT_EQ(
      evaluate_resources(with_mainloop(spec(128, 128, 4, 2, Accum::kFast), Mainloop::k2g, 2)).rejection.substr(0, 4),
      "R20:");
  EXPECT_TRUE(evaluate_resources(with_mainloop(spec(128, 128, 4, 2, Accum::kFast), Mainloop::k2o, 1)).ok());
  EXPECT_EQ(
      evaluate_resources(with_mainloop(spec(128, 128, 4, 2, Accum::kFast), Mainloop::k2o, 2)).rejection.substr(0, 4),
      "R20:");
}

TEST(ResourceModel, FirstFailingRuleIsReported) {
  EXPECT_EQ(evaluate_resources(spec(96, 128, 4, 2)).rejection.substr(0, 3), "R1:");
  EXPECT_EQ(evaluate_resources(spec(128, 100, 4, 2)).rejection.substr(0, 3), "R2:");
  EXPECT_EQ(evaluate_resources(spec(64, 128, 4, 2)).rejection.substr(0, 3), "R7:");
  EXPECT_EQ(evaluate_resources(spec(128, 128, 1, 2)).rejection.substr(0, 3), "R8:");
  KernelSpec s = spec(128, 128, 4, 2);
  s.config.swizzle = 64;
  s.config.block_k = 96;
  EXPECT_EQ(evaluate_resources(s).rejection.substr(0, 3), "R4:");
  s.config.block_k = 128;
  s.config.cluster_m = 2;
  EXPECT_TRUE(evaluate_resources(s).ok()) << evaluate_resources(s).rejection;
  s.config.cluster_m = 3;
  EXPECT_EQ(evaluate_resources(s).rejection.substr(0, 4), "R11:");
  s.config.cluster_m = 1;
  s.config.cluster_n = 2;
  s.config.block_m = 64;  // 64 / 2 = 32 rows per A slice: fine
  s.config.num_math_wg = 1;
  EXPECT_TRUE(evaluate_resources(s).ok()) << evaluate_resources(s).rejection;
  s.config.cluster_n = 1;
  s.config.cluster_m = 2;
  s.config.block_n = 8;  // 8 / 2 = 4 rows per B slice: below the 8-row swizzle atom
  EXPECT_EQ(evaluate_resources(s).rejection.substr(0, 4), "R13:");
  s.config.cluster_m = 1;
  s.config.epilogue = Epilogue::kTma;
  s.config.block_n = 88;  // any multiple of 8 takes the TMA-store epilogue now (R14 is implied by R2)
  EXPECT_TRUE(evaluate_resources(s).ok()) << evaluate_resources(s).rejection;
  s.config.epilogue = Epilogue::kDirect;
  s.config.split_k = 17;
  EXPECT_EQ(evaluate_resources(s).rejection.substr(0, 4), "R15:");
}

TEST(ResourceModel, StagingAndSplitFlagAreBudgeted) {
  KernelSpec s = spec(128, 128, 6, 2);
  s.config.epilogue = Epilogue::kTma;
  ResourceReport r = evaluate_resources(s);
  EXPECT_EQ(r.smem.staging, 128 * 128 * 2);
  EXPECT_EQ(r.smem.total, 6 * 16384 + 6 * 16384 + 32768 + 96 + 1024);
  s.config.split_k = 4;
  r = evaluate_resources(s);
  EXPECT_EQ(r.smem.barriers, 2 * 6 * 8 + 8);
  // B stages round up to 1024: 3 stages of 8 x 64 = 1536 bytes -> 2048.
  KernelSpec small = spec(64, 8, 3, 1);
  small.config.block_k = 64;
  small.config.swizzle = 64;
  EXPECT_EQ(evaluate_resources(small).smem.b_stages, 2048);
}

TEST(ResourceModel, ClusterSplitBudgetRulesAndProblemFit) {
  // 64x32x256 with 8 stages, one consumer warpgroup, TMA store, split 4 through distributed shared memory:
  // A 8 x 16384, B 8 x 8192, staging 64 x 32 x 2, barriers 2 x 8 x 8 + 16, then 3 partial tiles of 64 x 32 FP32
  // after the barriers rounded up to 16 bytes (kOffReduce), and the 1024-byte alignment slack.
  KernelSpec s = spec(64, 32, 8, 1);
  s.config.block_k = 256;
  s.config.epilogue = Epilogue::kTma;
  s.config.mainloop = Mainloop::k2g;
  s.config.split_k = 4;
  s.config.split_cluster = true;
  ResourceReport r = evaluate_resources(s);
  ASSERT_TRUE(r.ok()) << r.rejection;
  EXPECT_EQ(r.smem.barriers, 2 * 8 * 8 + 16);
  EXPECT_EQ(r.smem.reduce, 3 * 64 * 32 * 4);
  EXPECT_EQ(r.smem.total, 1024 + 8 * 16384 + 8 * 8192 + 4096 + 144 + 3 * 8192);
  s.config.split_cluster = false;  // the workspace split: the flag word, no partials in shared memory
  EXPECT_EQ(evaluate_resources(s).smem.total, 1024 + 8 * 16384 + 8 * 8192 + 4096 + 136);
  EXPECT_EQ(evaluate_resources(s).smem.reduce, 0);
  // R25: at most 8 splits (one portable cluster), no multicast cluster, 1g or 2g.
  s.config.split_cluster = true;
  s.config.num_stages = 2;  // so that 8 partial tiles fit (R9 comes first)
  s.config.split_k = 9;
  EXPECT_EQ(evaluate_resources(s).rejection.substr(0, 4), "R25:") << evaluate_resources(s).rejection;
  s.config.split_k = 8;
  EXPECT_TRUE(evaluate_resources(s).ok()) << evaluate_resources(s).rejection;
  s.config.split_k = 2;
  s.config.cluster_n = 2;
  EXPECT_EQ(evaluate_resources(s).rejection.substr(0, 4), "R25:");
  s.config.cluster_n = 1;
  s.config.mainloop = Mainloop::k2o;
  EXPECT_EQ(evaluate_resources(s).rejection.substr(0, 4), "R25:");
  s.config.mainloop = Mainloop::k2g;
  EXPECT_TRUE(evaluate_resources(s).ok());
  // The partials count against the 227 KB: 8 splits of 64 x 128 need 7 x 32 KB of them, which no pipeline fits.
  KernelSpec big = spec(64, 128, 2, 1);
  big.config.split_k = 8;
  big.config.split_cluster = true;
  EXPECT_EQ(evaluate_resources(big).rejection.substr(0, 3), "R9:");
  // P9: every CTA of the cluster is a split, so none may be empty: K = 2048 is 16 k-blocks of 128, which split 6
  // ways runs as 6 (3, 3, 3, 3, 3, 1) but split 5 ways as 4 (4 x 4).
  KernelConfig c = s.config;
  c.block_k = 128;
  c.split_k = 6;
  EXPECT_EQ(problem_fit(c, Problem::dense(64, 2112, 2048)), "");
  c.split_k = 5;
  const std::string why = problem_fit(c, Problem::dense(64, 2112, 2048));
  EXPECT_EQ(why.substr(0, 3), "P9:") << why;
  EXPECT_NE(why.find("which split into 4"), std::string::npos) << why;
  c.split_cluster = false;  // the workspace split simply runs 4 splits
  EXPECT_EQ(problem_fit(c, Problem::dense(64, 2112, 2048)), "");
}

TEST(ResourceModel, BlockScalesTravelWithEachStage) {
  // Block scale modes: each stage carries A's scales of its BLOCK_M rows per 128-wide granule and B's: block, a
  // 16-byte slot per 128-column block the tile can touch; block1d1d, BLOCK_N floats per granule.
  KernelSpec s = spec(128, 128, 5, 2);
  s.config.epilogue = Epilogue::kTma;
  EXPECT_EQ(evaluate_resources(s).smem.scales, 0);
  s.scale = ScaleMode::kBlock;
  ResourceReport r = evaluate_resources(s);
  EXPECT_EQ(r.smem.scales, 5 * (128 * 4 + 16));  // BLOCK_N 128: one 128-block per tile
  EXPECT_EQ(r.smem.total, 5 * 16384 * 2 + 32768 + 5 * 528 + 80 + 1024);
  s.config.block_n = 144;  // the bound for any multiple-of-8 start: ceil((120 + 144) / 128) = 3 slots (starts at
                           // multiples of 144 touch 2; the kernel reserves the bound)
  s.config.num_stages = 4;
  EXPECT_EQ(evaluate_resources(s).smem.scales, 4 * (128 * 4 + 3 * 16));
  s.config.block_n = 64;
  s.config.block_k = 256;  // two granules per stage
  s.config.num_stages = 2;
  s.config.mainloop = Mainloop::k1g;
  EXPECT_EQ(evaluate_resources(s).smem.scales, 2 * (2 * 128 * 4 + 16));
  s.scale = ScaleMode::kBlock1d1d;
  EXPECT_EQ(evaluate_resources(s).smem.scales, 2 * (2 * 128 * 4 + 2 * 64 * 4));
  // The scales cost the 6-stage 128 x 128 TMA-epilogue config its legality in block mode: 230496 bytes
  // per-tensor + 6 x 528 > 232448.
  KernelSpec six = spec(128, 128, 6, 2);
  six.config.epilogue = Epilogue::kTma;
  EXPECT_TRUE(evaluate_resources(six).ok());
  six.scale = ScaleMode::kBlock;
  EXPECT_EQ(evaluate_resources(six).rejection.substr(0, 3), "R9:") << evaluate_resources(six).rejection;
  EXPECT_NE(evaluate_resources(six).rejection.find("scales 3168"), std::string::npos);
}

TEST(ResourceModel, BlockScalesOnAClusterLeaveTheConsumers224Registers) {
  // With block scales on a multicast cluster the producer's TMA thread also copies the scales and keeps 56 registers
  // (Fp8GemmTraits::kWideProducer), so two consumer warpgroups get 224 instead of 232 (128*56 + 256*224 = 64512).
  KernelSpec s = spec(128, 128, 5, 2);
  s.config.mainloop = Mainloop::k2g;
  s.config.cluster_m = 2;
  EXPECT_EQ(evaluate_resources(s).regs.limit, 232);  // per-tensor on a cluster
  s.scale = ScaleMode::kBlock;
  ResourceReport r = evaluate_resources(s);
  EXPECT_TRUE(r.ok()) << r.rejection;
  EXPECT_EQ(r.regs.limit, 224);
  s.config.cluster_m = 1;
  EXPECT_EQ(evaluate_resources(s).regs.limit, 232);  // block scales without a cluster
  s.config.cluster_n = 2;
  EXPECT_EQ(evaluate_resources(s).regs.limit, 224);
  s.config.num_math_wg = 1;
  s.config.block_m = 64;
  EXPECT_EQ(evaluate_resources(s).regs.limit, 240);  // one consumer warpgroup: room for both
}

TEST(ResourceModel, OneGroupBlockTilesOnAClusterKeepTheLargerOverhead) {
  // One group in flight: overhead 24, except with block scales on a multicast cluster, where 128x184 1g c1x2 spilled
  // 16 B at 24 (184 + 24 + kScaleRegs 15 = 223 of 224; NVRTC spill test): 32 there, which rejects it.
  KernelSpec s = spec(128, 184, 4, 2);
  s.scale = ScaleMode::kBlock;
  ResourceReport r = evaluate_resources(s);
  EXPECT_TRUE(r.ok()) << r.rejection;
  EXPECT_EQ(r.regs.overhead, 24 + 15);  // kScaleRegs: 10 + 2 x 1 m64 slice + 3 column blocks
  s.config.cluster_n = 2;
  r = evaluate_resources(s);
  EXPECT_EQ(r.regs.overhead, 32 + 15);
  EXPECT_EQ(r.rejection.substr(0, 4), "R10:") << r.rejection;
  s.config.block_n = 176;  // 176 + 32 + 15 = 223: kept (and compiles without spills)
  EXPECT_TRUE(evaluate_resources(s).ok()) << evaluate_resources(s).rejection;
  // Block 128x192 without a cluster: 192 + 24 + 15 = 231 of 232 (no spills).
  s.config.cluster_n = 1;
  s.config.block_n = 192;
  EXPECT_TRUE(evaluate_resources(s).ok()) << evaluate_resources(s).rejection;
  s.config.block_n = 200;
  EXPECT_EQ(evaluate_resources(s).rejection.substr(0, 4), "R10:");
}

TEST(ResourceModel, ProblemFitIsTheHardTmaStoreRule) {
  KernelConfig c;
  Problem p = Problem::dense(4096, 4096, 4096);
  p.ldd = 4100;  // 8200-byte rows: not 16-byte multiples
  EXPECT_EQ(problem_fit(c, p), "") << "the direct epilogue takes any ldd";
  c.epilogue = Epilogue::kTma;
  EXPECT_EQ(problem_fit(c, p).substr(0, 3), "P3:");
  p.ldd = 4104;
  EXPECT_EQ(problem_fit(c, p), "");
  // D's tensor map takes strides below 2^40 bytes, like A's and B's: --ldd 2^39 (bf16) kept every TMA-store config.
  p.ldd = int64_t(1) << 39;
  EXPECT_EQ(problem_fit(c, p),
            "P3: TMA-store epilogue needs D's row stride below 2^40 bytes (TMA rule: global strides must be < 2^40 "
            "bytes); ldd = 549755813888 bf16 elements = 1099511627776 bytes");
  p.ldd = (int64_t(1) << 39) - 8;  // 2^40 - 16 bytes: the largest 16-byte multiple below the limit
  EXPECT_EQ(problem_fit(c, p), "");
  p.d = DType::kF32;
  p.ldd = int64_t(1) << 38;
  EXPECT_EQ(problem_fit(c, p).substr(0, 3), "P3:");
  p.d = DType::kE4M3;
  p.ldd = int64_t(1) << 40;
  EXPECT_EQ(problem_fit(c, p).substr(0, 3), "P3:");
  p.ldd = std::numeric_limits<int64_t>::max() - 7;  // no overflow in the rule or its message
  EXPECT_NE(problem_fit(c, p).find("P3: TMA-store epilogue needs D's row stride"), std::string::npos);
  c.epilogue = Epilogue::kDirect;
  p.ldd = int64_t(1) << 40;
  EXPECT_EQ(problem_fit(c, p), "") << "the direct epilogue stores D without a tensor map";
}

TEST(ResourceModel, PingpongRulesAndBudget) {
  // pp: each consumer warpgroup owns whole tiles, one buffer (the tensor-core sum) of BLOCK_M / 64 x BLOCK_N / 2
  // registers, a staging tile per warpgroup; fast accumulation, two warpgroups, no split-K (R24).
  KernelSpec s = with_mainloop(spec(128, 176, 3, 2, Accum::kFast), Mainloop::kPp, 16);
  s.config.epilogue = Epilogue::kTma;
  ResourceReport r = evaluate_resources(s);
  EXPECT_TRUE(r.ok()) << r.rejection;
  EXPECT_EQ(s.config.rows_per_wg(), 128);
  EXPECT_EQ(r.regs.accumulators, 2 * 88);
  EXPECT_EQ(r.regs.overhead, 24);
  // 176 BF16 columns = 352-byte rows: 32-byte swizzle, 11 bands, so each warpgroup stages through a ring of 2
  // bands of 128 rows x 32 bytes (kEpiRingBands) instead of its whole 128 x 176 tile.
  EXPECT_EQ(r.smem.staging, 2 * 2 * 128 * 32);
  EXPECT_EQ(r.smem.total, 3 * 16384 + 3 * 22528 + 2 * 2 * 128 * 32 + 48 + 1024);
  // That leaves room for 5 stages, as cuBLASLt's 176-wide ping-pong kernel runs (5 x 38912 + 16384 + 80 + 1024).
  KernelSpec deep = with_mainloop(spec(128, 176, 5, 2, Accum::kFast), Mainloop::kPp, 16);
  deep.config.epilogue = Epilogue::kTma;
  EXPECT_TRUE(evaluate_resources(deep).ok()) << evaluate_resources(deep).rejection;
  EXPECT_EQ(evaluate_resources(deep).smem.total, 5 * 16384 + 5 * 22528 + 16384 + 80 + 1024);
  // 128 BF16 columns are 2 bands of 128 bytes: the whole tile is staged, as before.
  KernelSpec two_bands = with_mainloop(spec(128, 128, 4, 2, Accum::kFast), Mainloop::kPp, 16);
  two_bands.config.epilogue = Epilogue::kTma;
  EXPECT_EQ(evaluate_resources(two_bands).smem.staging, 2 * 128 * 128 * 2);
  // 128 x 216: 216 + 24 registers exceed 232.
  KernelSpec wide = with_mainloop(spec(128, 216, 2, 2, Accum::kFast), Mainloop::kPp, 16);
  EXPECT_EQ(evaluate_resources(wide).rejection.substr(0, 4), "R10:");
  // With f32 output the pp accumulator lives through an epilogue of twice the bytes: 128x192 spilled 40-144 B at 24
  // (NVRTC test PingpongWithFusedEpiloguesCompilesWithoutSpills), so the overhead is 48 there: 192 is refused, 176 not.
  KernelSpec f32 = with_mainloop(spec(128, 192, 4, 2, Accum::kFast), Mainloop::kPp, 16);
  EXPECT_TRUE(evaluate_resources(f32).ok()) << evaluate_resources(f32).rejection;
  f32.d = DType::kF32;
  EXPECT_EQ(evaluate_resources(f32).regs.overhead, 48);
  EXPECT_EQ(evaluate_resources(f32).rejection.substr(0, 4), "R10:");
  f32.config.block_n = 176;
  EXPECT_TRUE(evaluate_resources(f32).ok()) << evaluate_resources(f32).rejection;
  // BLOCK_M 64 is legal with two warpgroups (each takes 64-row tiles), unlike 2g (R7).
  KernelSpec m64 = with_mainloop(spec(64, 256, 4, 2, Accum::kFast), Mainloop::kPp, 16);
  EXPECT_TRUE(evaluate_resources(m64).ok()) << evaluate_resources(m64).rejection;
  EXPECT_EQ(evaluate_resources(with_mainloop(spec(64, 256, 4, 2, Accum::kFast), Mainloop::k2g, 1)).rejection.substr(0, 3),
            "R7:");
  EXPECT_EQ(evaluate_resources(with_mainloop(spec(128, 128, 4, 2), Mainloop::kPp, 1)).rejection.substr(0, 4), "R24:");
  EXPECT_EQ(evaluate_resources(with_mainloop(spec(128, 128, 4, 1, Accum::kFast), Mainloop::kPp, 16)).rejection.substr(0, 4),
            "R24:");
  KernelSpec split = with_mainloop(spec(128, 128, 4, 2, Accum::kFast), Mainloop::kPp, 16);
  split.config.split_k = 2;
  EXPECT_EQ(evaluate_resources(split).rejection.substr(0, 4), "R24:");
  // Multicast clusters are legal for pp (each CTA's stage is read by one warpgroup); split-K is not, through a
  // cluster either (the split is what R24 rejects here).
  KernelSpec cl = with_mainloop(spec(128, 128, 4, 2, Accum::kFast), Mainloop::kPp, 16);
  cl.config.cluster_m = 2;
  EXPECT_TRUE(evaluate_resources(cl).ok()) << evaluate_resources(cl).rejection;
  cl.config.cluster_m = 1;
  cl.config.cluster_n = 2;
  EXPECT_TRUE(evaluate_resources(cl).ok()) << evaluate_resources(cl).rejection;
  cl.config.cluster_n = 1;
  cl.config.split_k = 2;
  cl.config.split_cluster = true;
  EXPECT_EQ(evaluate_resources(cl).rejection.substr(0, 4), "R24:");
  KernelSpec ch = with_mainloop(spec(128, 128, 4, 2, Accum::kFast), Mainloop::kPp, 16);
  ch.scale = ScaleMode::kChannel;  // its registers on top of pp's live accumulator spilled (NVRTC)
  EXPECT_EQ(evaluate_resources(ch).rejection.substr(0, 4), "R24:");
  // P8: one tensor-core sum per tile, so K <= P x BLOCK_K (16 x 128 = 2048 here).
  Problem p = Problem::dense(4096, 4096, 2048);
  p.accum = Accum::kFast;
  EXPECT_EQ(problem_fit(s.config, p), "");
  p.k = 2049;
  EXPECT_EQ(problem_fit(s.config, p).substr(0, 3), "P8:");
  s.config.promote_every = 8;
  p.k = 1025;
  EXPECT_EQ(problem_fit(s.config, p).substr(0, 3), "P8:");
  // The key round-trips ("pp" is a mainloop token, not a promotion interval).
  const KernelConfig back = KernelConfig::parse_key(s.config.key());
  EXPECT_EQ(back, s.config);
  EXPECT_EQ(s.config.key(), "128x176x128_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p8");
}

TEST(ResourceModel, SwapAbRulesAndProblemFit) {
  // R26: swap AB has only its TMA-store epilogue for bf16 output, no bias, per-tensor or channel scales, not pp.
  KernelSpec s = spec(128, 144, 5, 2);
  s.config.epilogue = Epilogue::kTma;
  s.config.mainloop = Mainloop::k2g;
  s.config.swap_ab = true;
  ASSERT_TRUE(evaluate_resources(s).ok()) << evaluate_resources(s).rejection;
  // The transposed store uses the plain epilogue's staging: 2 warpgroups x 64 rows x 144 columns x 2 bytes.
  EXPECT_EQ(evaluate_resources(s).smem.staging, 2 * 64 * 144 * 2);
  auto rejected_by_r26 = [](KernelSpec t) { return evaluate_resources(t).rejection.substr(0, 4) == "R26:"; };
  KernelSpec t = s;
  t.config.epilogue = Epilogue::kDirect;
  EXPECT_TRUE(rejected_by_r26(t)) << evaluate_resources(t).rejection;
  t = s, t.d = DType::kE4M3;
  EXPECT_TRUE(rejected_by_r26(t)) << evaluate_resources(t).rejection;
  // f32 output and block scales on a tile small enough for the budgets (R9, R10 come first).
  KernelSpec small = spec(128, 64, 3, 2);
  small.config.epilogue = Epilogue::kTma;
  small.config.mainloop = Mainloop::k1g;
  small.config.swap_ab = true;
  ASSERT_TRUE(evaluate_resources(small).ok()) << evaluate_resources(small).rejection;
  t = small, t.d = DType::kF32;
  EXPECT_TRUE(rejected_by_r26(t)) << evaluate_resources(t).rejection;
  t = s, t.bias = Bias::kBF16;
  EXPECT_TRUE(rejected_by_r26(t)) << evaluate_resources(t).rejection;
  t = small, t.scale = ScaleMode::kBlock;
  EXPECT_TRUE(rejected_by_r26(t)) << evaluate_resources(t).rejection;
  t = s, t.scale = ScaleMode::kChannel;
  EXPECT_TRUE(evaluate_resources(t).ok()) << evaluate_resources(t).rejection;
  t = s, t.act = Act::kGeluTanh;
  EXPECT_TRUE(evaluate_resources(t).ok()) << evaluate_resources(t).rejection;
  t = s, t.accum = Accum::kFast, t.config.mainloop = Mainloop::kPp, t.config.promote_every = 16;
  EXPECT_TRUE(rejected_by_r26(t)) << evaluate_resources(t).rejection;
  // P10: D's rows are stored by TMA only, so N x 2 bytes must be a multiple of 16; M (the kernel's N) may be anything.
  Problem p = Problem::dense(17, 1000, 4096);
  EXPECT_EQ(problem_fit(s.config, p), "");
  p = Problem::dense(17, 1001, 4096);
  p.ldd = 1008;
  EXPECT_EQ(problem_fit(s.config, p).substr(0, 4), "P10:") << problem_fit(s.config, p);
  EXPECT_EQ(config_rule_violation(s.config, p).substr(0, 4), "P10:");
  KernelConfig plain = s.config;
  plain.swap_ab = false;
  EXPECT_EQ(problem_fit(plain, p), "");
}

TEST(KernelConfigSplits, SwapAbGridIsTheTransposedProblems) {
  // The kernel of a swap-AB config computes D^T: its tiles run BLOCK_M along D's N and BLOCK_N along D's M.
  KernelConfig c = KernelConfig::parse_key("128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1_swapab");
  ASSERT_TRUE(c.swap_ab);
  Problem p = Problem::dense(554, 8192, 3584);
  p.a = DType::kE5M2;
  p.lda = 3600;
  const Problem kp = kernel_problem(c, p);
  EXPECT_EQ(kp.m, 8192);
  EXPECT_EQ(kp.n, 554);
  EXPECT_EQ(kp.k, 3584);
  EXPECT_EQ(kp.b, DType::kE5M2);
  EXPECT_EQ(kp.a, DType::kE4M3);
  EXPECT_EQ(kp.ldb, 3600);
  EXPECT_EQ(kp.lda, 3584);
  EXPECT_EQ(kp.ldd, p.ldd);  // D stays D
  const TileGrid g = TileGrid::of(c, p);
  EXPECT_EQ(g.m_blocks, 64);  // 8192 / 128
  EXPECT_EQ(g.n_blocks, 4);   // ceil(554 / 144)
  c.swap_ab = false;
  EXPECT_EQ(TileGrid::of(c, p).m_blocks, 5);  // ceil(554 / 128)
  EXPECT_EQ(kernel_problem(c, p), p);
}

TEST(ResourceModel, DeepestStages) {
  KernelSpec s = spec(128, 128, 2, 2);
  EXPECT_EQ(deepest_stages(s, 12), 7);  // 7 * 32 KiB + 112 + 1024 fits, 8 do not
  EXPECT_EQ(deepest_stages(s, 5), 5);
  s.config.block_n = 256;
  s.accum = Accum::kPromote;  // 256 promoted accumulators never fit (R10), at any depth
  EXPECT_EQ(deepest_stages(s, 12), 0);
}

TEST(KernelConfigSplits, EffectiveSplitsLeaveNoSplitEmpty) {
  KernelConfig c;  // BLOCK_K 128
  auto splits = [&](int s, int64_t k) {
    c.split_k = s;
    return effective_splits(c, k);
  };
  EXPECT_EQ(splits(1, 7168), 1);
  EXPECT_EQ(splits(8, 7168), 8);  // 56 k-blocks, 7 per split
  EXPECT_EQ(splits(4, 1280), 4);  // 10 k-blocks: 3,3,3,1
  EXPECT_EQ(splits(6, 1280), 5);  // 10 k-blocks, 2 per split: a sixth split would be empty
  EXPECT_EQ(splits(8, 512), 4);   // 4 k-blocks
  EXPECT_EQ(splits(3, 1), 1);
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> rule_ids(const std::string& text) {
  std::vector<std::string> ids;
  std::regex re(R"("(R\d+):)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    ids.push_back((*it)[1]);
  return ids;
}

TEST(ResourceModel, HostRulesMirrorKernelStaticAssertsInOrder) {
  // The kernel's static_asserts and the host model list the same rules in the same order.
  // R1-R25 are the traits' static_asserts; R26 (swap AB, a kernel template argument the traits do not take) is the
  // kernel's, after them.
  auto kernel = rule_ids(read(std::string(DGT_SOURCE_DIR) + "/kernels/gemm/fp8_gemm_traits.cuh"));
  for (const auto& id : rule_ids(read(std::string(DGT_SOURCE_DIR) + "/kernels/gemm/fp8_gemm.cuh"))) kernel.push_back(id);
  auto host = rule_ids(read(std::string(DGT_SOURCE_DIR) + "/src/space/resource_model.cpp"));
  // R15 (split-K range) and R16 (sms >= 0) are host-only run-time arguments; the kernel file names
  // them in a comment without a quote.
  ASSERT_EQ(host.size(), 26u);
  for (size_t i = 0; i < host.size(); ++i) EXPECT_EQ(host[i], "R" + std::to_string(i + 1));
  host.erase(host.begin() + 14, host.begin() + 16);
  ASSERT_EQ(kernel.size(), 24u);
  EXPECT_EQ(kernel, host);
}

TEST(ResourceModel, RegisterOverheadMirrorsTheKernel) {
  // R10's numbers appear verbatim on both sides: 24 / 32 / 16 overhead, 3 vs 2 buffers (2g, 2o and block scales with
  // BLOCK_K 256: three, the same condition on both sides).
  const std::string kernel = read(std::string(DGT_SOURCE_DIR) + "/kernels/gemm/fp8_gemm_traits.cuh");
  const std::string host = read(std::string(DGT_SOURCE_DIR) + "/src/space/resource_model.cpp");
  EXPECT_NE(kernel.find("kRegOverhead = kTwoPartials ? 16 : kWideProducer ? 32 : kPingpong && kOutType == 1 ? 48 : 24"),
            std::string::npos);
  // pp (ping-pong) keeps one buffer: the tensor-core sum over all of K, no FP32 accumulator (rule P8).
  EXPECT_NE(kernel.find("(kPingpong ? 1 : kTwoPartials ? 3 : 2)"), std::string::npos);
  EXPECT_NE(kernel.find("kTwoPartials = kMainloop == 2 || kMainloop == 3 || (kBlockScaled && BLOCK_K == 256)"),
            std::string::npos);
  EXPECT_NE(kernel.find("kPingpong = kMainloop == 4"), std::string::npos);
  EXPECT_NE(host.find("two_partials = two_groups || (is_block_scaled(spec.scale) && c.block_k == 256)"), std::string::npos);
  EXPECT_NE(kernel.find("kMainloop >= 1 && kMainloop <= 4"), std::string::npos);  // R17: 1g, 2g, 2o, pp
  EXPECT_NE(host.find("c.mainloop == Mainloop::k2g || c.mainloop == Mainloop::k2o"), std::string::npos);
  EXPECT_NE(host.find("pingpong = c.mainloop == Mainloop::kPp"), std::string::npos);
  EXPECT_NE(host.find("kRegOverhead1g = 24"), std::string::npos);
  EXPECT_NE(host.find("kRegOverhead1gWideProducer = 32"), std::string::npos);
  EXPECT_NE(host.find("kRegOverhead2g = 16"), std::string::npos);
  EXPECT_NE(host.find("(pingpong ? 1 : two_partials ? 3 : 2)"), std::string::npos);
  EXPECT_NE(host.find("kRegOverheadPpF32 = 48"), std::string::npos);
  EXPECT_NE(host.find("pingpong && spec.d == DType::kF32 ? kRegOverheadPpF32"), std::string::npos);
  EXPECT_NE(kernel.find("kPromoteEvery * BLOCK_K <= 2048"), std::string::npos);
  EXPECT_NE(host.find("kMaxPromoteSpanK = 2048"), std::string::npos);
}

}  // namespace
}  // namespace dgt
