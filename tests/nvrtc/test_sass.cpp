// SASS of NVRTC output (CPU only, needs cuobjdump; tests/nvrtc/sass_check.sh provides it): the
// consumer mainloop of representative kernels of the family runs on QGMMA, uses no local memory, and
// has no R2UR between a full-barrier wait and the last QGMMA of a k-block (the descriptors are warp-
// uniform, built once per CTA). The negative case, the same kernel compiled with the test-only macro
// DGT_TEST_NONUNIFORM_DESC (warpgroup index and descriptors from threadIdx.x, per k-block), must trip
// the R2UR check, so the check is known to see what it is looking for.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "jit/codegen.hpp"
#include "jit/compiler.hpp"
#include "sass_check.hpp"

namespace dgt::test {
namespace {

struct Sass {
  std::string cuobjdump = find_cuobjdump();
};

Sass& tools() {
  static Sass s;
  return s;
}

std::string compile_sass(const KernelSpec& spec, const std::string& prelude = "") {
  jit::GeneratedKernel g = jit::generate_gemm(spec);
  jit::CompiledKernel k = jit::compile(prelude + g.source, g.program_name, g.name_expression);
  const std::string sass = disassemble(tools().cuobjdump, k.cubin);
  EXPECT_EQ(sass.rfind("cuobjdump failed", 0), std::string::npos) << spec.key() << ": " << sass;
  if (const char* dir = std::getenv("DGT_SASS_DUMP_DIR"))
    std::ofstream(std::string(dir) + "/" + spec.key() + ".sass") << sass;
  return sass;
}

SassReport compile_and_analyze(const KernelSpec& spec, const std::string& prelude = "") {
  return analyze_sass(compile_sass(spec, prelude));
}

KernelSpec spec_of(const char* key, Accum accum = Accum::kPromote, ScaleMode scale = ScaleMode::kPerTensor) {
  KernelSpec s;
  s.config = KernelConfig::parse_key(key);
  s.accum = accum;
  s.scale = scale;
  return s;
}

#define REQUIRE_CUOBJDUMP()                                                                                          \
  if (tools().cuobjdump.empty())                                                                                     \
  GTEST_SKIP() << "no cuobjdump (set DGT_CUOBJDUMP or run tests/nvrtc/sass_check.sh, which installs the PyPI wheel " \
                  "nvidia-cuda-cuobjdump)"

TEST(Sass, MainloopHasQgmmaNoLocalMemoryNoR2urInTheWindow) {
  REQUIRE_CUOBJDUMP();
  const std::pair<const char*, Accum> kernels[] = {
      {"128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", Accum::kPromote},     // the notes' winner shape
      {"128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", Accum::kPromote},     // 2g at the register limit
      {"128x128x128_s6_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1", Accum::kPromote},  // the one-group schedule
      {"128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16", Accum::kFast},       // fast, promotion every 16
      {"128x176x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p8", Accum::kFast},        // fast 1g, 16-col bands
      {"128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", Accum::kFast},        // fast 2g (P = 1, rule R20)
      {"64x96x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", Accum::kPromote},       // one consumer WG
      {"256x64x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1", Accum::kPromote},   // two m64 slices per WG
      {"128x128x64_s8_wg2_sw64_c1x1_rm8_direct_sk2_sm0_2g_p1", Accum::kPromote},    // BLOCK_K 64, split-K
      {"128x128x128_s5_wg2_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1", Accum::kPromote},     // cluster, multicast
      {"128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1", Accum::kPromote},     // 2o: epilogue overlap
      {"128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1", Accum::kPromote},     // 2o at the register limit
      {"128x128x64_s8_wg2_sw64_c1x1_rm8_tma_sk2_sm0_2o_p1", Accum::kPromote},       // 2o with split-K
      {"128x176x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16", Accum::kFast},       // ping-pong, band-ring staging
      {"64x256x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16", Accum::kFast},        // ping-pong, 64-row tiles
      {"128x128x256_s2_wg2_sw128_c1x1_rm8_direct_sk1_sm0_pp_p8", Accum::kFast},     // ping-pong, direct epilogue
      {"128x160x128_s4_wg2_sw128_c2x1_rm8_tma_sk1_sm0_pp_p16", Accum::kFast},       // ping-pong, B multicast
      {"128x128x128_s5_wg2_sw128_c1x2_rm8_tma_sk1_sm0_pp_p16", Accum::kFast},       // ping-pong, A multicast
  };
  // The one allowance: in 64x256 pp, ptxas carries the stage index across the epilogue in a vector register
  // and moves it to a uniform one (two R2UR) in the first window of each tile; its k-block loop has none
  // (read in the SASS, 2026-11-29). Once per tile, not per k-block, which is what this check guards.
  // The same once per promotion group in 1g with P > 1 (allowed_window_r2ur, sass_check.hpp).
  const std::string per_tile_r2ur = "64x256x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16";
  const auto r2ur_allowed = [&](const std::string& key) {
    return key == per_tile_r2ur ? 2 : allowed_window_r2ur(KernelConfig::parse_key(key));
  };
  for (const auto& [key, accum] : kernels) {
    const SassReport r = compile_and_analyze(spec_of(key, accum));
    EXPECT_GT(r.qgmma, 0) << key;
    EXPECT_EQ(r.slow_mma, 0) << key;
    EXPECT_EQ(r.local_memory, 0) << key;
    EXPECT_GT(r.windows, 0) << key << ": no full-barrier wait followed by QGMMAs found";
    EXPECT_LE(r.r2ur_in_windows, r2ur_allowed(key))
        << key << ": R2UR between the full-barrier wait and the last QGMMA, e.g. '" << r.first_offender << "'";
  }
}

TEST(Sass, ClusterKernelsKeepTheirDescriptorsUniform) {
  REQUIRE_CUOBJDUMP();
  // Kernels launched in a cluster: the cluster splits that win a third of the decode shapes (results/h200/small-m.md),
  // multicast kernels with one or two consumer warpgroups, pp in a cluster, block scales in a cluster. Until
  // 2026-12-01 ptxas kept their loop state in vector registers: in the cluster splits' consumers (the shared base
  // read with S2R SR_CgaCtaId, the ring stage and every WGMMA descriptor: 4 R2URs before each QGMMA, 128 per
  // k-block pair at 64x48x256 sk2c), and in every cluster kernel's producer (R2URs before each TMA issue, 90-150
  // per kernel), because no aligned barrier followed the cluster split's free-barrier wait and because the
  // lane-0 TMA loop was followed by the final cluster barrier (kernels/gemm/split_k.cuh, producer.cuh). A kernel
  // without a cluster has 2-8 R2URs in all (the per-tile moves of the scheduler's indices, the epilogue's).
  const std::pair<const char*, ScaleMode> kernels[] = {
      {"64x48x256_s7_wg1_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1", ScaleMode::kPerTensor},   // cold winner 1x2112x7168
      {"64x32x256_s8_wg1_sw128_c1x1_rm8_tma_sk4c_sm0_2g_p1", ScaleMode::kPerTensor},   // cold winner 1x576x7168
      {"64x32x256_s8_wg1_sw128_c1x1_rm8_tma_sk3c_sm0_2g_p1", ScaleMode::kPerTensor},   // cold winner 128x576x7168
      {"64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1", ScaleMode::kPerTensor},   // cold winner 128x2112x7168
      {"128x64x128_s6_wg2_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1", ScaleMode::kPerTensor},  // two consumer WGs
      {"64x96x128_s8_wg1_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1", ScaleMode::kPerTensor},    // multicast, one consumer WG
      {"64x96x128_s8_wg1_sw128_c1x2_rm8_tma_sk1_sm0_2g_p1", ScaleMode::kPerTensor},    // A multicast, one consumer WG
      {"128x128x128_s5_wg2_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1", ScaleMode::kPerTensor},  // multicast, two consumer WGs
      {"128x128x128_s5_wg2_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1", ScaleMode::kBlock},      // block scales in a cluster
      {"128x128x128_s5_wg2_sw128_c2x2_rm8_tma_sk1_sm0_2g_p1", ScaleMode::kPerTensor},  // 4-CTA cluster
  };
  // Block scales in a multicast cluster had about 150 R2URs in the producer while a second producer thread copied the
  // scales (two lane-0 loops with vector-register state, NVRTC 13.0); the TMA thread copies them now, with 4.
  for (const auto& [key, scale] : kernels) {
    const KernelSpec spec = spec_of(key, Accum::kPromote, scale);
    const SassReport r = compile_and_analyze(spec);
    EXPECT_GT(r.qgmma, 0) << key;
    EXPECT_EQ(r.local_memory, 0) << key;
    EXPECT_GT(r.windows, 0) << key;
    EXPECT_EQ(r.r2ur_in_windows, 0) << key << ": R2UR between the full-barrier wait and the last QGMMA, e.g. '"
                                    << r.first_offender << "'";
    EXPECT_LE(r.r2ur, 8)
        << key << ": R2URs outside the mainloop windows (the producer's TMA loop?)";
  }
  // pp (fast accumulation) in a cluster, the fast winner of 4096x32768x512 (results/h200/kernel-v2.md).
  const SassReport pp =
      compile_and_analyze(spec_of("128x160x128_s4_wg2_sw128_c2x1_rm8_tma_sk1_sm0_pp_p16", Accum::kFast));
  EXPECT_EQ(pp.r2ur_in_windows, 0) << pp.first_offender;
  EXPECT_LE(pp.r2ur, 8);
}

TEST(Sass, NonUniformDescriptorsTripTheCheck) {
  REQUIRE_CUOBJDUMP();
  const KernelSpec spec = spec_of("128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1");
  const SassReport good = compile_and_analyze(spec);
  const SassReport bad = compile_and_analyze(spec, "#define DGT_TEST_NONUNIFORM_DESC 1\n");
  EXPECT_EQ(good.r2ur_in_windows, 0) << good.first_offender;
  EXPECT_GT(bad.qgmma, 0);
  EXPECT_GT(bad.r2ur_in_windows, 0) << "the non-uniform variant should put R2UR moves before its QGMMAs";
}

TEST(Sass, AnalyzerOnAHandWrittenListing) {
  // No tool needed: the parser and the window rule on a synthetic listing.
  const std::string sass =
      "        /*0100*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x1000], R3 ;\n"
      "        /*0110*/                   R2UR UR8, R2 ;\n"
      "        /*0120*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24 ;\n"
      "        /*0130*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR12], R24, gsb0 ;\n"
      "        /*0140*/                   R2UR UR9, R4 ;\n"
      "        /*0150*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x2000], R3 ;\n"
      "        /*0160*/                   STL [R1], R5 ;\n"
      "        /*0170*/                   UTMALDG.2D [UR20], [UR14] ;\n"
      "        /*0180*/               @P1 LDG.E R6, desc[UR6][R2.64] ;\n"
      // a fenced shared-memory read, then an unfenced one (the scale-slot race: LDS, WGMMA wait, release)
      "        /*0190*/               @P0 LDS R7, [R8+0x30000] ;\n"
      "        /*01a0*/                   WARPGROUP.ARRIVE ;\n"
      "        /*01b0*/              @!P0 SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR9], RZ ;\n"
      "        /*01c0*/               @P0 LDS R9, [R8+0x30200] ;\n"
      "        /*01d0*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;\n"
      "        /*01e0*/              @!P0 SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR9], RZ ;\n"
      // a guarded EXIT does not end the path (the LDS at 0x200 counts); an unguarded one does (0x230 does not)
      "        /*01f0*/                   LDS.U16 R9, [R4] ;\n"
      "        /*0200*/               @P0 EXIT ;\n"
      "        /*0210*/                   SYNCS.ARRIVE.TRANS64.RED.A0TR RZ, [UR17], R0 ;\n"
      "        /*0220*/                   LDS.U16 R9, [R4+0x2] ;\n"
      "        /*0230*/                   EXIT ;\n"
      "        /*0240*/                   SYNCS.ARRIVE.TRANS64.RED.A0TR RZ, [UR17], R0 ;\n";
  const SassReport r = analyze_sass(sass);
  EXPECT_EQ(r.instructions, 21);
  EXPECT_EQ(r.global_loads, 1);  // the predicated LDG, not the TMA load
  EXPECT_EQ(r.unfenced_shared_reads, 2);  // 0x1c0 (a WGMMA wait is not a fence) and 0x1f0 (a guarded EXIT)
  EXPECT_EQ(r.qgmma, 2);
  EXPECT_EQ(r.windows, 1);
  EXPECT_EQ(r.r2ur_in_windows, 1);  // the R2UR after the last QGMMA is outside the window
  EXPECT_EQ(r.r2ur, 2);
  EXPECT_EQ(r.local_memory, 1);
}

TEST(Sass, BlockScalesComeThroughSharedMemory) {
  REQUIRE_CUOBJDUMP();
  // Block scale modes: the producer's TMA thread copies each stage's scales with the stage (UBLKCP), so the
  // consumers read them from shared memory. Before that, four global loads per thread per k-block sat in
  // front of every promotion (LDG in the mainloop; 10-25% slower than per-tensor, results/h200/scale-modes.md).
  // These kernels have no bias, split-K or per-tensor scale: no global load at all.
  const std::pair<const char*, ScaleMode> kernels[] = {
      {"128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", ScaleMode::kBlock},      // 2g, one 128-block per tile
      {"128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1", ScaleMode::kBlock},      // tiles straddle 128-blocks
      {"128x128x256_s2_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1", ScaleMode::kBlock},      // two granules per stage
      {"128x128x128_s5_wg2_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1", ScaleMode::kBlock},      // cluster, multicast
      {"128x64x128_s8_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", ScaleMode::kBlock1d1d},   // per-column B scales
  };
  for (const auto& [key, scale] : kernels) {
    const KernelSpec spec = spec_of(key, Accum::kPromote, scale);
    const SassReport r = compile_and_analyze(spec);
    EXPECT_GT(r.qgmma, 0) << spec.key();
    EXPECT_EQ(r.local_memory, 0) << spec.key();
    EXPECT_EQ(r.global_loads, 0) << spec.key() << ": the scales should arrive through shared memory";
    EXPECT_GT(r.windows, 0) << spec.key();
    EXPECT_EQ(r.r2ur_in_windows, 0) << spec.key() << ": '" << r.first_offender << "'";
    // Every scale read is ordered before the next stage release by a WGMMA or proxy fence: the write-after-read
    // race of the tail k-block (LDS, WGMMA wait, release) that failed on the H200 would count here.
    EXPECT_EQ(r.unfenced_shared_reads, 0) << spec.key();
  }
}

TEST(Sass, LoopMixOnAHandWrittenListing) {
  // No tool needed: a full-barrier retry loop without a QGMMA (not the mainloop), the k-block loop (the shortest loop
  // holding a QGMMA) and a tile loop around both (longer).
  const std::string sass =
      "        /*0000*/                   MOV R1, c[0x0][0x28] ;\n"
      "        /*0010*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R3 ;\n"
      "        /*0020*/              @!P0 BRA 0x10 ;\n"
      "        /*0030*/                   UIADD3 UR5, UR5, 0x1, URZ ;\n"
      "        /*0040*/                   UMOV UR7, 0x40000040 ;\n"
      "        /*0050*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR4], R24, gsb0 ;\n"
      "        /*0060*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;\n"
      "        /*0070*/                   FFMA R88, R24, R2.reuse, R88 ;\n"
      "        /*0080*/                   FADD R89, R25, R89 ;\n"
      "        /*0090*/                   VOTEU.ALL UP1, P0 ;\n"
      "        /*00a0*/              @!P1 BRA 0x30 ;\n"
      "                                                                                 /* 0x000fe4000fffe01c */\n"
      "        /*00b0*/                   STG.E desc[UR6][R4.64], R88 ;\n"
      "        /*00c0*/               @P2 BRA 0x10 ;\n"
      "        /*00d0*/                   BRA 0xe0 ;\n"
      "        /*00e0*/                   EXIT ;\n";
  const LoopMix m = steady_loop_mix(sass);
  ASSERT_TRUE(m.found);
  EXPECT_EQ(m.first, 0x30);
  EXPECT_EQ(m.last, 0xa0);
  EXPECT_EQ(m.instructions, 8);  // 0x30..0xa0; the encoding-only line is not an instruction
  EXPECT_EQ(m.qgmma, 1);
  EXPECT_EQ(m.ffma, 1);
  EXPECT_EQ(m.fadd, 1);
  EXPECT_EQ(m.uniform, 3);  // UIADD3, UMOV, VOTEU
  EXPECT_EQ(m.other(), 2);  // WARPGROUP.DEPBAR, BRA
  EXPECT_EQ(to_string(m), "8 (QGMMA 1, FFMA 1, FADD 1, uniform 3, other 2)");
  EXPECT_FALSE(steady_loop_mix("        /*0000*/                   EXIT ;\n").found);
}

TEST(Sass, PromotionCostsOneInstructionPerAccumulatorPerKBlock) {
  REQUIRE_CUOBJDUMP();
  // The steady-state loop of the 128x128 tiles: per k-block 4 k32 QGMMAs and one promotion instruction per
  // accumulator (BLOCK_N / 2 = 64 per thread: a FADD per-tensor, an FFMA with the block scales, gemm/scales.cuh);
  // 2g runs two k-blocks per iteration (gemm/mainloop_2g.cuh). Block-scaled consumers are the bottleneck of their
  // kernels (results/h200/block-profile-2026-12-04.md), so their loop may not grow: the ceiling is its length with
  // CUDA 13.0's ptxas; lower it when an edit makes the loop shorter.
  struct Case {
    const char* key;
    ScaleMode scale;
    int k_blocks, fadd, ffma, ceiling;
  };
  const Case cases[] = {
      {"128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", ScaleMode::kPerTensor, 2, 128, 0, 230},
      {"128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", ScaleMode::kBlock, 2, 0, 128, 239},
      {"128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1", ScaleMode::kPerTensor, 1, 64, 0, 122},
      {"128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1", ScaleMode::kBlock, 1, 0, 64, 132},
  };
  for (const auto& c : cases) {
    const KernelSpec spec = spec_of(c.key, Accum::kPromote, c.scale);
    const LoopMix m = steady_loop_mix(compile_sass(spec));
    ASSERT_TRUE(m.found) << spec.key();
    EXPECT_EQ(m.qgmma, 4 * c.k_blocks) << spec.key() << ": " << to_string(m);
    EXPECT_EQ(m.fadd, c.fadd) << spec.key() << ": " << to_string(m);
    EXPECT_EQ(m.ffma, c.ffma) << spec.key() << ": " << to_string(m);
    EXPECT_LE(m.instructions, c.ceiling) << spec.key() << ": " << to_string(m);
  }
}

}  // namespace
}  // namespace dgt::test
