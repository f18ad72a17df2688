// Compile-time layout and legality of the FP8 GEMM kernel family.
// The static_asserts below are the kernel side of the legality rules; src/space/resource_model.cpp
// checks the same rules, in the same order and with the same numbers, on the host, so a reviewer can
// diff the two lists. Change one, change the other (tests/unit/test_resource_model.cpp pins both).
#pragma once
#include "common.cuh"

namespace dgt::gemm {

/// Shared-memory layout of one CTA (bytes, from the 1024-aligned base):
///   [A stages: kNumStages * BLOCK_M * BLOCK_K][B stages: kNumStages * BLOCK_N * BLOCK_K]
///   [D staging: BLOCK_M * BLOCK_N * bytes of D (bf16 2, f32 4, e4m3 1), TMA-store epilogue only; pp: 2 x BLOCK_M x BLOCK_N x bytes, or with kEpiRingBands 2 x 2 x BLOCK_M x kEpiSwizzle]
///   [block scale modes: kNumStages * kSmemScaleStage bytes of scales]
///   [full barriers: kNumStages * 8][empty barriers: kNumStages * 8][split-K flag: 8, split-K only]
/// plus kAlignPad bytes of slack because the dynamic shared-memory base is only guaranteed 16-byte
/// aligned and swizzled tiles must start at a multiple of the swizzle repeat (8 rows * span <= 1024).
/// Each stage of an operand is BLOCK_K / span sub-tiles of [rows][span bytes], one TMA box per span
/// and per multicast slice. Every region size is a multiple of 1024 except the scales and the barriers (last).
template <u32 BLOCK_M_, u32 BLOCK_N_, u32 BLOCK_K_, u32 kNumStages_, u32 kNumMathWG_, u32 kSwizzle_, u32 kClusterM_,
          u32 kClusterN_, bool kRasterAlongM_, u32 kGroup_, bool kFastAccum_, u32 kTypeA_, u32 kTypeB_, bool kTmaEpilogue_,
          u32 kSplitMode_, u32 kMainloop_, u32 kPromoteEvery_, u32 kScaleMode_, u32 kOutType_ = 0, bool kBias_ = false,
          u32 kAct_ = 0>
struct Fp8GemmTraits {
  static constexpr u32 BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_;
  static constexpr u32 kNumStages = kNumStages_, kNumMathWG = kNumMathWG_, kSwizzle = kSwizzle_;
  static constexpr u32 kClusterM = kClusterM_, kClusterN = kClusterN_, kGroup = kGroup_;
  static constexpr bool kRasterAlongM = kRasterAlongM_, kFastAccum = kFastAccum_;
  static constexpr bool kTmaEpilogue = kTmaEpilogue_;
  /// Split-K (kSplitMode): 0 none; 1 the splits reduce through a global workspace (gemm/split_k.cuh,
  /// split_k_reduce; the split count is a run-time argument); S >= 2 the S splits of a tile are the S CTAs of
  /// one cluster and reduce through distributed shared memory (split_k_reduce_cluster; S is compile-time).
  static constexpr u32 kSplitMode = kSplitMode_;
  static constexpr bool kSplitK = kSplitMode == 1;                      // global-workspace split-K
  static constexpr u32 kSplitCluster = kSplitMode >= 2 ? kSplitMode : 1;  // CTAs (splits) per cluster split
  /// Consumer mainloop (1 = 1g, 2 = 2g: WGMMA groups in flight; 3 = 2o: 2g with the next tile's first
  /// k-block overlapping the epilogue; 4 = pp: ping-pong, each consumer warpgroup owns whole tiles; see
  /// mainloop_1g.cuh .. mainloop_pp.cuh) and the promotion
  /// interval P in k-blocks (1 in promote mode; fast mode: tensor-core partial sums of P k-blocks).
  static constexpr u32 kMainloop = kMainloop_, kPromoteEvery = kPromoteEvery_;
  static constexpr u32 kTypes = 2 * kTypeA_ + kTypeB_;
  /// Scale mode (gemm/scales.cuh): 0 per-tensor, 1 channel, 2 block (1D2D), 3 block1d1d.
  static constexpr u32 kScaleMode = kScaleMode_;
  static constexpr bool kBlockScaled = kScaleMode == 2 || kScaleMode == 3;
  /// Output type (gemm/epilogue_ops.cuh): 0 bf16, 1 f32, 2 e4m3; bias (BF16 vector of N) and activation
  /// (0 none, 1 relu, 2 gelu_tanh) of the fused epilogue.
  static constexpr u32 kOutType = kOutType_, kAct = kAct_;
  static constexpr bool kBias = kBias_;
  static constexpr u32 kOutBytes = kOutType == 1 ? 4 : kOutType == 2 ? 1 : 2;

  static constexpr u32 kThreads = 128 * (kNumMathWG + 1);
  static constexpr u32 kMathThreads = 128 * kNumMathWG;
  /// pp (ping-pong): the two consumer warpgroups take alternate tiles of the CTA, each a whole BLOCK_M x
  /// BLOCK_N tile summed by the tensor core over all of K (no promotion), so one warpgroup's epilogue runs
  /// while the other's WGMMAs keep the tensor cores busy. Every stage is read by one warpgroup.
  static constexpr bool kPingpong = kMainloop == 4;
  static constexpr u32 kConsumersPerStage = kPingpong ? 1 : kNumMathWG;
  static constexpr u32 kRowsPerWG = kPingpong ? BLOCK_M : BLOCK_M / kNumMathWG;
  static constexpr u32 kMmaPerWG = kRowsPerWG / 64;     // m64 WGMMAs per warpgroup per k-step
  static constexpr u32 kAccPerMma = BLOCK_N / 2;        // FP32 accumulators per thread per m64nN
  static constexpr u32 kAtomsK = BLOCK_K / kSwizzle;    // swizzle spans per k-block
  static constexpr u32 kStepsK = BLOCK_K / 32;          // WGMMA k32 steps per k-block

  // Clusters: 1-D cluster of kClusterM * kClusterN CTAs; rank r -> (r % kClusterM, r / kClusterM).
  // CTAs of a cluster with the same n-block share B: each loads BLOCK_N / kClusterM rows of it and
  // multicasts them to the others; likewise A across kClusterN.
  // A cluster split (kSplitCluster > 1) needs kClusterM = kClusterN = 1 (R25): its ranks are the splits.
  static constexpr u32 kMcastSize = kClusterM * kClusterN;        // CTAs that multicast operands to each other
  static constexpr u32 kClusterSize = kMcastSize * kSplitCluster;  // CTAs per launched cluster
  static constexpr u32 kSliceRowsA = BLOCK_M / kClusterN;
  static constexpr u32 kSliceRowsB = BLOCK_N / kClusterM;

  static constexpr u32 kSmemAStage = BLOCK_M * BLOCK_K;
  /// Rows of A one TMA box of the main A map loads: a cluster slice (BLOCK_M / kClusterN); without a cluster along N
  /// and with the whole of M inside one m-block (M < BLOCK_M, decode shapes), only round_up(M, 8) rows (that m-block
  /// is also the last one, a_tail_rows). Mirrored by dgt::a_box_rows (src/problem/kernel_config.hpp), which encodes
  /// the tensor map.
  static __device__ __forceinline__ u32 a_box_rows(u32 M) {
    if (kClusterN == 1 && M < BLOCK_M) return (M + 7u) & ~7u;
    return kSliceRowsA;
  }
  /// M tails: rows of A one box of the tail map loads for the last m-block (and the spare m-blocks of an edge
  /// cluster): round_up(M % BLOCK_M, 8) without a cluster along N when BLOCK_M does not divide M, else a whole slice.
  /// A box that is mostly out of bounds runs TMA's slow zero-fill path (H200, 64x16x128 at N = 2112, K = 7168:
  /// 19.8 us at M = 1 vs 11.8 us at M = 64, results/h200/small-m.md; and a 128-row tile at M = 271, where the third
  /// m-block holds 15 rows, took 1.6x its time at M = 384, results/h200/every-m-2026-12-02.md). Rows past the box
  /// keep stale shared-memory data: each row of D depends only on its row of A, rows >= M are never stored and the
  /// epilogue's amax counts only rows < M, so that is harmless. Multicast slices (kClusterN > 1) keep their size:
  /// every CTA of the cluster row expects the same bytes. Mirrored by dgt::a_tail_box_rows.
  static __device__ __forceinline__ u32 a_tail_rows(u32 M) {
    if (kClusterN == 1 && M % BLOCK_M != 0) return (M % BLOCK_M + 7u) & ~7u;
    return kSliceRowsA;
  }
  /// N tails, the same for B: round_up(N % BLOCK_N, 8) rows for the last n-block without a cluster along M (columns
  /// >= N of D are never stored nor counted in amax). Mirrored by dgt::b_tail_box_rows.
  static __device__ __forceinline__ u32 b_tail_rows(u32 N) {
    if (kClusterM == 1 && N % BLOCK_N != 0) return (N % BLOCK_N + 7u) & ~7u;
    return kSliceRowsB;
  }
  static constexpr u32 kSmemBStage = BLOCK_N * BLOCK_K;
  static constexpr u32 kSmemARegion = kNumStages * kSmemAStage;                         // multiple of 1024
  static constexpr u32 kSmemBRegion = (kNumStages * kSmemBStage + 1023) / 1024 * 1024;  // rounded up to 1024
  // TMA-store epilogue: output swizzle = the largest of 128/64/32 bytes dividing a staging row
  // (BLOCK_N * kOutBytes bytes), else none; see epilogue_tma.cuh. src/problem/kernel_config.cpp mirrors it.
  static constexpr u32 kStagingRowBytes = BLOCK_N * kOutBytes;
  static constexpr u32 kEpiSwizzle = kStagingRowBytes % 128 == 0 ? 128 : kStagingRowBytes % 64 == 0 ? 64 : kStagingRowBytes % 32 == 0 ? 32 : 0;
  /// pp stages its tile through a ring of kEpiRingBands swizzle-wide column bands per warpgroup instead of a whole
  /// tile (epilogue_tma.cuh): pp keeps two tiles' staging, and a whole 128 x 176 BF16 tile each left room for only
  /// 3 k-block stages where cuBLASLt's ping-pong kernel runs 5 (its staging is ~16 KB). Only where the tile has more
  /// than 2 bands; src/space/resource_model.cpp mirrors it. H200: pp 128x160 with the same 4 stages +5.4%; the
  /// cooperative kernels were 1-3% slower with it (both warpgroups' epilogues are exposed there), so pp only.
  static constexpr u32 kEpiRingBands =
      kPingpong && kTmaEpilogue && kEpiSwizzle != 0 && kStagingRowBytes / kEpiSwizzle > 2 ? 2 : 0;
  /// Staging bytes of one consumer warpgroup (its rows of the tile; pp: a whole tile, or its band ring).
  static constexpr u32 kStagingPerWG = kEpiRingBands ? kEpiRingBands * kRowsPerWG * kEpiSwizzle : kRowsPerWG * BLOCK_N * kOutBytes;
  static constexpr u32 kSmemStaging = kTmaEpilogue ? kNumMathWG * kStagingPerWG : 0;
  /// Block scale modes: each stage carries the scales of its k granules, copied by the producer with the
  /// stage (1-D bulk copies completing on the stage's full barrier), so the consumers read them from shared
  /// memory instead of waiting on global loads at every promotion. Per stage: A's scales of the tile's
  /// BLOCK_M rows for each granule; block: one 16-byte slot (4 granules) per 128-column block of B the tile
  /// touches; block1d1d: B's scales of the tile's BLOCK_N columns for each granule. gemm/scales.cuh.
  static constexpr u32 kGranulesPerStage = BLOCK_K == 256 ? 2 : 1;
  /// A tile's columns lie in known 128-blocks when BLOCK_N divides 128 or 128 divides BLOCK_N (n0 is a
  /// multiple of BLOCK_N); otherwise the bound assumes a start at any multiple of 8: ceil((120 + BLOCK_N) / 128).
  /// (Starts are multiples of gcd(BLOCK_N, 128), so 144, 160 and 192 touch at most 2, not 3: a 16-byte slot and a
  /// register to spare, left as is.)
  static constexpr bool kScaleNAligned = BLOCK_N % 128 == 0 || 128 % BLOCK_N == 0;
  static constexpr u32 kScaleNBlocks = kScaleNAligned ? (BLOCK_N + 127) / 128 : (BLOCK_N + 247) / 128;
  static constexpr u32 kSmemScaleAStage = kBlockScaled ? kGranulesPerStage * BLOCK_M * 4 : 0;
  static constexpr u32 kSmemScaleBStage = kScaleMode == 2 ? kScaleNBlocks * 16 : kScaleMode == 3 ? kGranulesPerStage * BLOCK_N * 4 : 0;
  static constexpr u32 kSmemScaleStage = kSmemScaleAStage + kSmemScaleBStage;  // a multiple of 16 bytes
  static constexpr u32 kSmemScales = kNumStages * kSmemScaleStage;
  // Barriers: full + empty per stage; the global split-K flag word (8) or the cluster split's `full` and `free`
  // barriers (16).
  static constexpr u32 kSmemBarriers = 2 * kNumStages * 8 + (kSplitK ? 8 : 0) + (kSplitCluster > 1 ? 16 : 0);
  /// Cluster split: rank 0 receives the other splits' FP32 partial tiles, [split - 1][q][consumer thread] float4.
  static constexpr u32 kSmemReduce = (kSplitCluster - 1) * BLOCK_M * BLOCK_N * 4;
  static constexpr u32 kAlignPad = 1024;
  static constexpr u32 kOffB = kSmemARegion;
  static constexpr u32 kOffStaging = kOffB + kSmemBRegion;
  static constexpr u32 kOffScales = kOffStaging + kSmemStaging;  // 16-byte aligned; barriers follow (8-byte)
  static constexpr u32 kOffBarriers = kOffScales + kSmemScales;
  static constexpr u32 kOffReduce = (kOffBarriers + kSmemBarriers + 15) / 16 * 16;  // float4 aligned
  static constexpr u32 kSmemBytes = kAlignPad + (kSplitCluster > 1 ? kOffReduce + kSmemReduce : kOffBarriers + kSmemBarriers);
  static constexpr u32 kMaxSmemBytes = 232448;  // sm_90 opt-in maximum per block (227 KB)

  // Registers (per thread, after setmaxnreg). 2 consumer WGs: 128*40 + 256*232 = 64512, the launch's 168 x 384.
  // Block scales on a multicast cluster: the TMA thread's loop also copies the scales and builds the multicast
  // boxes, which spilled at 40 registers when the scale copies were added (NVRTC spill test), so the producer gets
  // 56 and two consumer warpgroups 224 (128*56 + 256*224 = 64512). (A second producer thread for the scales, the way around it before, cost the
  // kernel 8% more cycles in full-barrier waits, results/h200/scale-modes.md.)
  static constexpr bool kWideProducer = kBlockScaled && kMcastSize > 1;
  static constexpr u32 kProducerRegs = kWideProducer ? 56 : 40;
  static constexpr u32 kMathRegs = kNumMathWG == 1 ? 240 : kWideProducer ? 224 : 232;
  // Both accumulation modes keep the FP32 accumulator plus one tensor-core partial buffer per WGMMA
  // group in flight: 2 x BLOCK_N / 2 per m64 slice with one group, 3 x with two.
  // 2o keeps the same three buffers live in the mainloop; during its epilogue only acc and the one
  // in-flight partial are live (the other buffer was just promoted), so 2g's rule covers it too.
  // Block scale modes keep the scales of one granule read from the stage's slot (2 rows per m64 slice;
  // block: one per 128-column block the tile touches, kScaleNBlocks; block1d1d: the tile's column scales)
  // and their products next to the accumulators: kScaleRegs more. Calibrated with the NVRTC spill test
  // (tests/nvrtc ScaleModesCompileWithoutSpills). Block, since the scales come through shared memory: 128x136
  // 2g spilled 60 B with 4 + 2 * kMmaPerWG + kScaleNBlocks = 8 reserved, every kept kernel compiles with 10 +
  // ... (128x168 1g at 231 of 232 included); it was 20 + 2 * kMmaPerWG with global scale loads (64x136
  // with one WG spilled 148 B with 10). block1d1d spilled from BLOCK_N 112 (one WG) with BLOCK_N / 4.
  static constexpr u32 kScaleRegs = kScaleMode == 2 ? 10 + 2 * kMmaPerWG + kScaleNBlocks : kScaleMode == 3 ? 20 + 2 * kMmaPerWG + BLOCK_N / 2 : 0;
  // Block scales with BLOCK_K 256 keep a second partial buffer too (one per 128-wide granule of a k-block).
  static constexpr bool kTwoPartials = kMainloop == 2 || kMainloop == 3 || (kBlockScaled && BLOCK_K == 256);
  // pp keeps only the tensor-core sum (one buffer): rule P8 (host) limits it to K <= P x BLOCK_K.
  static constexpr u32 kAccRegs = kMmaPerWG * kAccPerMma * (kPingpong ? 1 : kTwoPartials ? 3 : 2);
  // Addresses, loop state, epilogue temporaries (calibrated with ptxas; the two-group schedule keeps
  // descriptors and loop state in uniform registers: 0 spills at 3 x 72 + 16 = 232 for BLOCK_N 144). One group
  // (1g, pp): 24, with which every kernel of the default space and the scale-mode and epilogue samples compiles
  // without spills (128x192 and 128x208 1g included), except block scales on a multicast cluster: 128x184 1g c1x2
  // spilled 16 B at 24 (223 of 224 registers), so there 32; and pp with f32 output, whose accumulator stays live
  // through an epilogue of twice the bytes: 128x192 spilled 40-144 B at 24 (128x176 did not), so there 48.
  static constexpr u32 kRegOverhead = kTwoPartials ? 16 : kWideProducer ? 32 : kPingpong && kOutType == 1 ? 48 : 24;  // block scales with BLOCK_K 256 run like 2g: 16
  // Output and epilogue: with per-tensor and channel scales nothing (measured: the kernels at the
  // R10 limit, e.g. 128x144 2g and 64x... with one WG, compile with e4m3 + bias + GELU without spills: the
  // epilogue's values live after the mainloop's partial buffers die). Block scale modes keep their scale
  // state live across the tile loop: there the bias pointer (2), e4m3's scale_d / amax pointer and running
  // max (4) and GELU's temporaries (4) count (256x32 wg1 2g in block mode with e4m3 + bias + GELU spilled
  // 112 B without them while the block scales were global loads; it no longer does, and the rule is kept as a
  // margin, tests/unit/test_epilogue_host.cpp). Mirrors dgt::epilogue_regs (resource_model.cpp); calibrated with the NVRTC test
  // EpilogueCompiles.SampleOfEveryOutputAndEpilogueCompilesWithoutSpills (ctest nvrtc_epilogue_compiles).
  static constexpr u32 kEpiRegs = !kBlockScaled ? 0 : (kBias ? 2 : 0) + (kOutType == 2 ? 4 : 0) + (kAct == 2 ? 4 : 0);

  // Bias words (one per 8-column group) the epilogue loads ahead of its stores (EpilogueOp::load_bias): all of
  // the tile's, except with pp and more than 20 groups, where the accumulator stays live through the epilogue
  // and a whole tile's words spilled (ptxas 13.0, per-tensor scales: 128x176 and 64x256 with bias, 8-372 bytes;
  // 128x160 with 20 did not): batches of 8 there (EpilogueOp::load_bias_batch; none of those spill).
  static constexpr u32 kBiasGroups = BLOCK_N / 8;
  static constexpr u32 kBiasBatch = kPingpong && kBiasGroups > 20 ? 8 : kBiasGroups;

  // ---- Legality rules, same order as src/space/resource_model.cpp ----
  static_assert(BLOCK_M == 64 || BLOCK_M == 128 || BLOCK_M == 256, "R1: BLOCK_M must be 64, 128 or 256");
  static_assert(BLOCK_N % 8 == 0 && BLOCK_N >= 8 && BLOCK_N <= 256, "R2: BLOCK_N must be a multiple of 8 in 8..256 (WGMMA N)");
  static_assert(kSwizzle == 32 || kSwizzle == 64 || kSwizzle == 128, "R3: swizzle must be 32, 64 or 128 bytes");
  static_assert(BLOCK_K == 64 || BLOCK_K == 128 || BLOCK_K == 256, "R4: BLOCK_K must be 64, 128 or 256");
  static_assert(BLOCK_K % kSwizzle == 0, "R5: BLOCK_K must be a multiple of the swizzle span (one TMA box per span)");
  static_assert(kNumMathWG == 1 || kNumMathWG == 2, "R6: 1 or 2 consumer warpgroups");
  static_assert(BLOCK_M % (64 * kConsumersPerStage) == 0, "R7: BLOCK_M must give each consumer warpgroup a multiple of 64 rows");
  static_assert(kNumStages >= 2 && kNumStages <= 32, "R8: kNumStages must be in 2..32");
  static_assert(kSmemBytes <= kMaxSmemBytes, "R9: shared memory exceeds 232448 bytes");
  static_assert(kAccRegs + kRegOverhead + kScaleRegs + kEpiRegs <= kMathRegs, "R10: accumulators do not fit the consumer register budget");
  static_assert(kMcastSize == 1 || kMcastSize == 2 || kMcastSize == 4, "R11: cluster must have 1, 2 or 4 CTAs");
  static_assert(kGroup >= 1 && kGroup <= 64, "R12: rasterization group must be in 1..64");
  static_assert(kSliceRowsB % 8 == 0 && kSliceRowsA % 8 == 0,
                "R13: multicast slices (BLOCK_N / cluster M, BLOCK_M / cluster N) must be multiples of 8 rows");
  static_assert(!kTmaEpilogue || BLOCK_N % 8 == 0, "R14: the TMA-store epilogue needs BLOCK_N to be a multiple of 8 (16-byte staging rows)");
  // R15 (split-K in 1..16) and R16 (sms >= 0) are checked on the host only: both are run-time arguments.
  static_assert(kMainloop >= 1 && kMainloop <= 4, "R17: mainloop must be one of 1g, 2g, 2o, pp");
  static_assert(kPromoteEvery >= 1 && kPromoteEvery * BLOCK_K <= 2048,
                "R18: promote_every P must be >= 1 with P x BLOCK_K <= 2048 (tensor-core partial sums of at most 2048 products)");
  static_assert(kFastAccum || kPromoteEvery == 1, "R19: promote accumulation promotes every k-block (promote_every must be 1)");
  static_assert(kMainloop == 1 || kMainloop == 4 || kPromoteEvery == 1,
                "R20: the two-group mainloop (2g, 2o) promotes every k-block (promote_every must be 1; P > 1 runs with 1g)");
  static_assert(kScaleMode <= 3, "scale mode must be 0..3");
  static_assert(!kBlockScaled || (!kFastAccum && (BLOCK_K == 128 || (BLOCK_K == 256 && kMainloop == 1))),
                "R21: block scale modes need promote accumulation and BLOCK_K = 128 (one promotion per 128-wide k granule) or BLOCK_K = 256 with the 1g mainloop (two)");
  static_assert(!kBlockScaled || kMainloop <= 2, "R22: block scale modes run with the 1g or 2g mainloop (not 2o)");
  static_assert(kOutType <= 2 && kAct <= 2, "output type must be 0..2 (bf16, f32, e4m3), activation 0..2 (none, relu, gelu_tanh)");
  static_assert(!kTmaEpilogue || kOutType != 2 || BLOCK_N % 16 == 0,
                "R23: the TMA-store epilogue with e4m3 output needs BLOCK_N to be a multiple of 16 (16-byte staging rows)");
  // pp may multicast (a cluster of 2 or 4 CTAs, R11): each stage is read by one warpgroup per CTA, and the empty
  // barrier's count (kConsumersPerStage x 4 warps x kMcastSize) already says so. kSplitCluster == 1 restates R25.
  static_assert(!kPingpong || (kFastAccum && kNumMathWG == 2 && !kSplitK && kSplitCluster == 1 && kScaleMode == 0),
                "R24: the ping-pong mainloop (pp) needs fast accumulation, per-tensor scales, two consumer warpgroups and no split-K");
  static_assert(kSplitCluster == 1 || (kSplitCluster <= 8 && kMcastSize == 1 && kMainloop <= 2),
                "R25: a cluster split (split-K through distributed shared memory) has 2..8 splits, no multicast cluster and "
                "the 1g or 2g mainloop");
};

}  // namespace dgt::gemm
