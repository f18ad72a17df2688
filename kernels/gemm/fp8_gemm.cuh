// The FP8 GEMM kernel family for sm_90a: persistent, warp-specialized, TMA + WGMMA. This file holds the kernel's
// entry point: shared-memory layout, barrier setup, the work-unit walk and the role dispatch; the roles and the
// mainloop schedules are in their own files:
//   gemm/producer.cuh        the producer warpgroup (TMA loads, multicast, tail boxes, block-scale copies)
//   gemm/stage_ring.cuh      the kNumStages ring of stages and its full / empty mbarriers
//   gemm/mainloop_steps.cuh  the consumers' WGMMA steps: issue a stage, release it, promote a partial sum
//   gemm/mainloop_1g.cuh, mainloop_2g.cuh, mainloop_2o.cuh, mainloop_pp.cuh  the mainloop schedules (kMainloop)
//   (the last five are fragments of the consumer branch, #included inside it: see mainloop_steps.cuh)
//   gemm/epilogue_*.cuh, split_k.cuh, scales.cuh, scheduler.cuh, trace.cuh, fp8_gemm_traits.cuh
//
//   D[M,N] = (scale_a * scale_b) * A[M,K] * B[N,K]^T with per-tensor scales; per-channel and per-block
//   scales (kScaleMode, gemm/scales.cuh) apply them per row/column or per 128-wide k granule
//   A, B: e4m3 or e5m2, K-major (row-major M x K and N x K), read through TMA descriptors
//   D: BF16, FP32 or e4m3 (kOutType) row-major with leading dimension ldd; FP32 accumulation; an optional
//   fused epilogue (BF16 bias of N, ReLU / GELU-tanh; e4m3: scale_d and amax), gemm/epilogue_ops.cuh.
//
//
// Accumulation contract (both modes: the tensor core sums k-blocks into a partial buffer, which is
// promoted, i.e. added into FP32 registers on CUDA cores; the FP32 sums are exact to FP32 rounding):
//  - promote (kFastAccum = false, kPromoteEvery = 1): one promotion per k-block (BLOCK_K <= 256 products
//    per tensor-core partial sum). Error ~ FP32 summation of K / BLOCK_K partials plus the tensor core's
//    rounding inside a k-block; the BF16 output rounding (2^-8 relative) dominates. The default.
//  - fast (kFastAccum = true): one promotion at least every P = kPromoteEvery k-blocks, P x BLOCK_K <= 2048
//    (rule R18). Hopper's FP8 tensor core keeps ~14 bits of its accumulator (DeepSeek-V3 report): a sum
//    of unit products stops growing at 2^14. With at most 2048 products per partial sum it cannot reach
//    2^14 for |a_k b_k| <= 1-scale inputs, so all-ones inputs give exactly K for any K (the GPU test
//    checks K = 65536); in general the relative error of a partial sum is bounded by ~2^-13 times the sum
//    of |products| of its P k-blocks, i.e. it grows with P x BLOCK_K, not with K.
//    (src/bench/verify.hpp states the thresholds the tests apply.)
//
// Mainloop schedules (kMainloop): 1 = 1g, one promotion group in flight (gemm/mainloop_1g.cuh); 2 = 2g, two groups
// in flight with two partial buffers (mainloop_2g.cuh); 3 = 2o, 2g plus epilogue overlap (mainloop_2o.cuh);
// 4 = pp, ping-pong: the two consumer warpgroups take alternate tiles (mainloop_pp.cuh). 1g, 2g and 2o add the
// same partials in the same order: their output is bitwise identical.
//
// Roles: warpgroups 0..kNumMathWG-1 are consumers (WGMMA + epilogue), warpgroup kNumMathWG is the
// producer, in which one thread issues the TMA loads into a kNumStages ring of shared-memory stages
// (block scale modes: that thread also copies each stage's scales, gemm/scales.cuh StageScales; with a
// cluster a second thread does). The ring's barriers: gemm/stage_ring.cuh.
#pragma once
#include "common.cuh"
#include "gemm/epilogue_direct.cuh"
#include "gemm/epilogue_tma.cuh"
#include "gemm/epilogue_tma_swap.cuh"
#include "gemm/fp8_gemm_traits.cuh"
#include "gemm/grouped_scheduler.cuh"
#include "gemm/scales.cuh"
#include "gemm/scheduler.cuh"
#include "gemm/split_k.cuh"
#include "gemm/trace.cuh"
#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
// After the headers above, whose inclusion order fixes the order of the module's globals.
#include "gemm/producer.cuh"
#include "gemm/stage_ring.cuh"

namespace dgt::gemm {

/// This thread's warpgroup, known to the compiler to be warp-uniform: threadIdx.x / 128 is the same in
/// every lane of a warp, but ptxas cannot prove it and would build everything derived from it (the
/// WGMMA descriptors) in vector registers, adding R2UR moves before every QGMMA. Broadcasting lane 0's
/// value makes it uniform. DGT_TEST_NONUNIFORM_DESC (tests only) keeps the plain division.
__device__ __forceinline__ u32 warpgroup_index() {
#ifdef DGT_TEST_NONUNIFORM_DESC
  return threadIdx.x / 128;
#else
  return __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
#endif
}

/// Kernel arguments after the five tensor maps (A and B, their M- and N-tail maps, D): D's pointer (direct epilogue), the scales and their
/// leading dimensions in floats (block modes; gemm/scales.cuh and ScaleLayout give the layouts), the shape, D's leading dimension, the K split count (1 = no split; else every split non-empty) and
/// the split-K workspace (tiles * splits * BLOCK_M * BLOCK_N floats) and per-tile counters (zeroed once);
/// then the epilogue's operands: the BF16 bias (N values; kBias), scale_d (one FP32; e4m3 output) and amax
/// (one FP32, or null for none; e4m3 output) with its two-word state (zero at allocation; the kernel leaves
/// it zero; gemm/epilogue_ops.cuh finish_amax); the scheduler's divisors (gemm/scheduler.cuh SchedDivisors); last,
/// the grouped kernels' GroupArgs (gemm/grouped_scheduler.cuh; ignored by dense kernels, kGroupKind 0).
///
/// Grouped (MoE) kernels, kGroupKind 1 (contiguous) / 2 (masked): the same producer, mainloops and direct epilogue
/// on the units of GroupedScheduler. M is then the rows of A's and D's 2-D maps (M_sum or G * M_max), N and K are
/// one group's, tma_b / tma_b_tail map B as [G*N, K], and the rules G1-G5 hold (static_asserts below; mirrored by
/// src/space/grouped_rules.cpp).
template <u32 BLOCK_M, u32 BLOCK_N, u32 BLOCK_K, u32 kNumStages, u32 kNumMathWG, u32 kSwizzle, u32 kClusterM,
          u32 kClusterN, bool kRasterAlongM, u32 kGroup, bool kFastAccum, u32 kTypeA, u32 kTypeB, bool kTmaEpilogue,
          u32 kSplitMode, u32 kMainloop, u32 kPromoteEvery, u32 kScaleMode, u32 kOutType, bool kBias, u32 kAct,
          u32 kGroupKind = 0, bool kSwapAB = false>
__global__ void __launch_bounds__(128 * (kNumMathWG + 1), 1)
    fp8_gemm_kernel(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b,
                    const __grid_constant__ TmaDesc tma_a_tail, const __grid_constant__ TmaDesc tma_b_tail,
                    const __grid_constant__ TmaDesc tma_d, void* __restrict__ d, const float* __restrict__ scale_a,
                    const float* __restrict__ scale_b, u32 ld_sa, u32 ld_sb, u32 M, u32 N, u32 K, u64 ldd,
                    u32 num_splits, float* __restrict__ workspace, u32* __restrict__ tile_counters,
                    const u16* __restrict__ bias, const float* __restrict__ scale_d, float* __restrict__ amax,
                    u32* __restrict__ amax_state, const __grid_constant__ SchedDivisors sched_div,
                    const __grid_constant__ GroupArgs grp) {
  using T = Fp8GemmTraits<BLOCK_M, BLOCK_N, BLOCK_K, kNumStages, kNumMathWG, kSwizzle, kClusterM, kClusterN, kRasterAlongM,
                          kGroup, kFastAccum, kTypeA, kTypeB, kTmaEpilogue, kSplitMode, kMainloop, kPromoteEvery, kScaleMode,
                          kOutType, kBias, kAct>;
  using Mma = ptx::WgmmaFp8<BLOCK_N>;
  constexpr bool kGrouped = kGroupKind != kGroupNone;
  // The grouped kernels' rules (G1 is GroupedScheduler's); the host refuses the same configs first
  // (src/space/grouped_rules.cpp grouped_rule_violation).
  static_assert(!kGrouped || kClusterM == 1,
                "G2: grouped kernels cluster along N only (B multicast across m-blocks could cross groups)");
  static_assert(!kGrouped || (kSplitMode == 0 && (kMainloop == 1 || kMainloop == 2)),
                "G3: grouped kernels: no split-K, mainloop 1g or 2g (2o and pp issue a unit's k-blocks ahead of the "
                "skip test)");
  static_assert(!kGrouped || (kOutType == 0 && !kBias && kAct == 0 && (kScaleMode == 0 || kScaleMode == 2)),
                "G4: grouped kernels: bf16 output, no bias or activation, per-tensor or block scales");

  // Swap AB (the host runs the transposed problem D^T = B A^T; gemm/epilogue_tma_swap.cuh stores the tile transposed
  // into D): rule R26, mirrored by src/space/resource_model.cpp.
  static_assert(!kSwapAB || (!kGrouped && kTmaEpilogue && kOutType == 0 && !kBias && (kScaleMode == 0 || kScaleMode == 1) &&
                             kMainloop != 4),
                "R26: swap AB needs a dense kernel, the TMA-store epilogue, bf16 output, no bias, per-tensor or channel "
                "scales and a mainloop other than pp");

#if defined(DGT_HOST_SMEM_BYTES)
  // The host launches with the shared-memory size of its resource model (src/space/resource_model.cpp, rule R9),
  // which mirrors this layout by hand; codegen passes that size so that a mismatch is a compile error, not slots
  // or barriers past the end of the allocation.
  static_assert(T::kSmemBytes == DGT_HOST_SMEM_BYTES,
                "the host resource model's shared-memory size differs from Fp8GemmTraits::kSmemBytes");
#endif
#if defined(DGT_TEST_FAULT)
  // Test builds only (src/jit/fault_injection.hpp): a deliberately faulty candidate for the worker-process
  // tests. 1: trap (a sticky "unspecified launch failure"); 2: spin forever (the watchdog's case).
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    if (DGT_TEST_FAULT == 1) asm volatile("trap;");
    for (;;) asm volatile("nanosleep.u32 1000;");
  }
#endif

  if constexpr (kTrace) {
    if (threadIdx.x == 0) trace_mark(kTraceStart);
  }
  // Shared memory, aligned up to 1024 bytes (T::kAlignPad of slack is part of the launch size).
  extern __shared__ __align__(16) u8 smem_raw[];
  const u32 raw_addr = smem_u32(smem_raw);
  u8* smem = smem_raw + (((raw_addr + 1023u) & ~1023u) - raw_addr);
  u8* smem_a = smem;
  u8* smem_b = smem + T::kOffB;
  u8* staging = smem + T::kOffStaging;
  u8* smem_scales = smem + T::kOffScales;  // block scale modes: kSmemScaleStage bytes per stage
  u64* full_bar = reinterpret_cast<u64*>(smem + T::kOffBarriers);
  u64* empty_bar = full_bar + kNumStages;
  u32* split_flag = reinterpret_cast<u32*>(empty_bar + kNumStages);
  // Cluster split: rank 0's `full` barrier (the other splits' partials have landed) and every rank's `free`
  // barrier (rank 0 has read this rank's previous partial); the partials' buffer (T::kSmemReduce bytes).
  u64* red_full_bar = empty_bar + kNumStages;
  u64* red_free_bar = red_full_bar + 1;
  float4* red_buf = reinterpret_cast<float4*>(smem + T::kOffReduce);

  const u32 warp = threadIdx.x / 32;
  const u32 lane = threadIdx.x % 32;
  const u32 wg = warpgroup_index();
  const u32 rank = T::kMcastSize > 1 ? ptx::cluster_cta_rank() : 0;  // the multicast rank (a cluster split uses blockIdx)
  // Multicast ranks (kClusterM x kClusterN) and, in a cluster split, the split this CTA computes.
  const u32 rank_m = rank % kClusterM, rank_n = (rank / kClusterM) % kClusterN;
  // A cluster split's cluster is 1-D along x with S CTAs (kMcastSize = 1), so its rank is blockIdx.x % S (a
  // uniform value; the inline-asm read of %cluster_ctarank is not one to the compiler).
  const u32 split_rank = T::kSplitCluster > 1 ? blockIdx.x % T::kSplitCluster : 0u;  // a compile-time 0 otherwise

  if (threadIdx.x == 0) {
    init_stage_ring<kNumStages>(full_bar, empty_bar, T::kConsumersPerStage * 4, T::kMcastSize);
    if constexpr (T::kSplitCluster > 1) {
      ptx::mbar_init(red_full_bar, 1);  // rank 0's thread 0 arrives (with the expected bytes) once per tile
      ptx::mbar_init(red_free_bar, 1);  // rank 0's thread s - 1 arrives once per tile on rank s's
    }
    ptx::fence_barrier_init();
  }
  if (warp == kNumMathWG * 4 && lane == 0) {
    ptx::tma_prefetch_desc(&tma_a);
    ptx::tma_prefetch_desc(&tma_b);
    if (M % BLOCK_M != 0) ptx::tma_prefetch_desc(&tma_a_tail);
    if (N % BLOCK_N != 0) ptx::tma_prefetch_desc(&tma_b_tail);
    if constexpr (kTmaEpilogue) ptx::tma_prefetch_desc(&tma_d);
  }
  // Peers multicast into this CTA's barriers: all of them must be initialised cluster-wide first.
  if constexpr (T::kSplitCluster > 1) {
    // The inits are published by fence.mbarrier_init.release.cluster, so the arrive can be relaxed: the
    // default (.release) arrive put a MEMBAR.ALL.GPU in front of it, and the setup took 801 cycles instead of
    // 302 (`dgtune trace`, H200, 1x2112x7168 sk2c). Multicast clusters keep the measured release arrive.
    ptx::cluster_sync_after_init();
  } else if constexpr (T::kClusterSize > 1) {
    ptx::cluster_sync();
  } else {
    __syncthreads();
  }
  if constexpr (kTrace) {
    if (threadIdx.x == 0) trace_mark(kTraceSetup);
  }

  using Sched = typename SelectType<kGrouped,
                                    GroupedScheduler<BLOCK_M, BLOCK_N, BLOCK_K, kClusterN, kRasterAlongM, kGroup, kGroupKind>,
                                    TileScheduler<BLOCK_M, BLOCK_N, BLOCK_K, kClusterM, kClusterN, kRasterAlongM, kGroup>>::type;
  const Sched sched(M, N, K, num_splits, sched_div, grp);
  const u32 cluster_id = blockIdx.x / T::kClusterSize;
  const u32 num_clusters = gridDim.x / T::kClusterSize;
  // Work units are (tile, split) with the split fastest. A cluster split runs units cluster * S + rank, so
  // its S CTAs take the S splits of one tile at a time; otherwise S = 1 and this is the plain persistent walk.
  const u32 cta_unit_first = cluster_id * T::kSplitCluster + split_rank;
  const u32 cta_unit_step = num_clusters * T::kSplitCluster;

  if (wg == kNumMathWG) {
    // ---------------- producer warpgroup (gemm/producer.cuh) ----------------
    run_producer<T>(tma_a, tma_b, tma_a_tail, tma_b_tail, smem_a, smem_b, smem_scales, full_bar, empty_bar, scale_a, scale_b,
                    ld_sa, ld_sb, M, N, K, sched, sched.num_units, rank_m, rank_n, warp, lane, cta_unit_first,
                    cta_unit_step);
    // Cluster kernels: the producer warps leave here rather than at the final cluster barrier below (why: the end
    // of run_producer).
    if constexpr (T::kClusterSize > 1) return;
  } else {
    // ---------------- consumer warpgroups ----------------
    ptx::setmaxnreg_inc<T::kMathRegs>();
    if constexpr (kTrace) {
      if (threadIdx.x == 0) trace_mark(kTraceConsumerRegs);
    }
    // Per-tensor: one multiply in the epilogue; the other modes scale acc themselves (channel before the
    // epilogue, block modes at every promotion) and store with scale 1.
    const float scale = kScaleMode == kScalePerTensor ? __ldg(scale_a) * __ldg(scale_b) : 1.f;
    const u32 row0_in_tile = T::kPingpong ? 0u : wg * T::kRowsPerWG;
    // The A-scale read form (gemm/scales.cuh, BlockScaler::fetch): byte offsets with unconditional reads where it was
    // measured faster and compiles clean (dense, no cluster, at most 64 accumulators per slice set), else the row
    // folded into the pointer.
    constexpr bool kByteOffsetReads = !kGrouped && T::kClusterSize == 1 && T::kMmaPerWG * T::kAccPerMma <= 64;
    // The trimmed block-scaled loop: dense block-scaled kernels build their WGMMA descriptors from a per-stage base
    // (mainloop_steps.cuh, desc_lo) and, with one granule per stage (BLOCK_K 128; granules past K exist only with
    // two), fetch scales without the past-K select (BlockScaler's kAlwaysInK). Used where it measured faster: without
    // a cluster (results/h200/block-loop-2026-12-07.md) and on multicast clusters, where it needs the single producer
    // thread (with a second one for the scales, ptxas put an R2UR into the issue window of 128x128 2g c2x1;
    // results/h200/block-cluster-producer-2026-12-07.md). Everything else keeps the old form: grouped kernels ran the
    // contiguous gate_up problems 0.7-2.8% slower with it on an H100 although their loop is as much shorter, per-tensor
    // kernels were no faster, and cluster splits were never timed with it.
    constexpr bool kTrimmedBlockLoop = T::kBlockScaled && !kGrouped && T::kSplitCluster == 1;
    constexpr bool kAlwaysInK = kTrimmedBlockLoop && T::kGranulesPerStage == 1;
    BlockScaler<kScaleMode, T::kMmaPerWG, T::kAccPerMma, BLOCK_M, BLOCK_N, T::kGranulesPerStage, T::kScaleNBlocks,
                T::kScaleNAligned, kByteOffsetReads, kAlwaysInK>
        scaler(row0_in_tile, K);
    const bool pairs_aligned = (ldd % 2 == 0) && (reinterpret_cast<u64>(d) % (2 * T::kOutBytes) == 0);
    EpilogueOp<kOutType, kBias, kAct> epi(bias, scale_d);

    // WGMMA descriptors, built once per CTA: the low words of stage 0 / k-step 0 / m64 slice 0 for this
    // warpgroup's A rows and for B. Every (stage, k-step, slice) adds a byte offset >> 4 to the low word
    // (ptx::kmajor_desc_lo); everything but the stage index is a compile-time constant. `wg` is
    // warp-uniform, so these stay in uniform registers and no R2UR sits between the full-barrier wait
    // and the QGMMAs (tests/nvrtc checks the SASS).
    const u32 a_desc_lo = ptx::kmajor_desc_lo(smem_u32(smem_a + row0_in_tile * kSwizzle));
    const u32 b_desc_lo = ptx::kmajor_desc_lo(smem_u32(smem_b));

    float acc[T::kMmaPerWG][T::kAccPerMma];
    // Tensor-core partial sums, one buffer per WGMMA group in flight; each promotion adds one into the
    // FP32 `acc` on CUDA cores (promote: every k-block; fast: every kPromoteEvery k-blocks).
    float part0[T::kMmaPerWG][T::kAccPerMma];
    float part1[T::kMmaPerWG][T::kAccPerMma];  // 2g/2o, and block scales with BLOCK_K 256 (else unused, hence free)
    using Buf = float[T::kMmaPerWG][T::kAccPerMma];

    // The WGMMA steps on the stage ring: stage, phase, issue, issue_fetch, issue_granules, release, promote,
    // fetch, finish, kFirstOfGroup, kMore.
#include "gemm/mainloop_steps.cuh"
    // 2o only (kMainloop == 3): every tile's first k-block is issued early, into part0: the CTA's first
    // tile's here, the others' before the previous tile's epilogue. `pending_o` = the stage of the
    // newest issued k-block (released after the wait that retires it, as in 2g), carried across tiles.
    // Stage and phase need no fix-up at the tile boundary: the producer loads tiles in the same order,
    // and the consumer still waits for and releases every stage exactly once, in order, only earlier.
    // Edge clusters' spare tiles and split-K tiles run the same mainloop, so they issue and consume
    // the next tile's first stage like any other tile before they skip or reduce.
    u32 pending_o = 0;
    if constexpr (kMainloop == 3) {
      if (cluster_id < sched.num_units) pending_o = issue(part0, kFirstOfGroup);
    }

    // pp: the CTA's units are dealt to the two warpgroups in turn (local unit i to warpgroup i % 2), so
    // each walks every second unit and, after each of its own, skips the stages of the other's next one.
    // pp has no split-K (R24): every unit is a whole tile of all ceil(K / BLOCK_K) k-blocks, a kernel-wide
    // constant, so the skip is a fixed advance of the ring computed once. (Computed from the work unit,
    // whose indices came out of vector-pipe divisions when this was written, it moved the stage index, the
    // barrier addresses and the WGMMA descriptors into vector registers: R2UR before every QGMMA, which
    // tests/nvrtc rejects.)
    const u32 pp_kb = T::kPingpong ? ceil_div(K, BLOCK_K) : 0u;
    const u32 pp_skip_stage = pp_kb % kNumStages, pp_skip_phase = (pp_kb / kNumStages) & 1u;
    auto pp_skip = [&]() {
      stage += pp_skip_stage;
      phase ^= pp_skip_phase;
      if (stage >= kNumStages) stage -= kNumStages, phase ^= 1;
    };
    const u32 unit_first = cta_unit_first + (T::kPingpong ? wg * num_clusters : 0u);
    const u32 unit_step = T::kPingpong ? 2 * num_clusters : cta_unit_step;
    u32 red_tile = 0;  // cluster split: tiles this CTA has reduced (the parity of its reduction barriers)
    if constexpr (T::kPingpong) {
      if (wg == 1) pp_skip();  // the CTA's first unit belongs to warpgroup 0
    }
    // Contiguous grouped kernels load each unit's m_indices entry (its group, or a padding block's -1) one unit ahead,
    // so the load's latency hides behind the mainloop before it (GroupedScheduler::lookup).
    [[maybe_unused]] int next_group = 0;
    if constexpr (kGroupKind == kGroupContiguous) next_group = sched.lookup(unit_first, rank_n);
    for (u32 unit = unit_first; unit < sched.num_units; unit += unit_step) {
      const auto w = [&] {
        if constexpr (kGroupKind == kGroupContiguous) return sched.work_from(unit, rank_n, next_group);
        else return sched.work(unit, rank_m, rank_n);
      }();
      if constexpr (kGroupKind == kGroupContiguous) next_group = sched.lookup(unit + unit_step, rank_n);
      if constexpr (kGrouped) {
        if (w.k_end == w.k_begin) continue;  // a skipped unit: the producer loads nothing for it either
      }
      // Grouped TMA epilogue, contiguous: whether this thread's row of the warpgroup's rows is a real one (m_indices
      // >= 0), loaded here so that the load's latency hides behind the mainloop; the warpgroup ANDs it after.
      [[maybe_unused]] bool row_is_real = true;
      if constexpr (kGroupKind == kGroupContiguous && kTmaEpilogue)
        row_is_real = __ldg(grp.layout + w.m_block * BLOCK_M + row0_in_tile + (threadIdx.x % 128) % T::kRowsPerWG) >= 0;
      if constexpr (!T::kPingpong) {
#pragma unroll
        for (u32 j = 0; j < T::kMmaPerWG; ++j)
#pragma unroll
          for (u32 i = 0; i < T::kAccPerMma; ++i) acc[j][i] = 0.f;
      }

      // Promotion groups of at most kPromoteEvery k-blocks: group g covers k-blocks
      // [k_begin + g * P, min(k_end, k_begin + (g + 1) * P)).
      constexpr u32 P = kPromoteEvery;
      const u32 num_kb = w.k_end - w.k_begin;  // >= 1: the host makes every split non-empty
      const u32 num_groups = ceil_div(num_kb, P);
      const u32 last_group_kb = num_kb - (num_groups - 1) * P;
      // Finish the tile's index arithmetic (the scheduler's multiply-highs, then R2UR) before the
      // first full-barrier wait, where ptxas would otherwise schedule it, delaying the first WGMMA.
      ptx::materialize(w.m_block);
      ptx::materialize(w.n_block);
      ptx::materialize(num_groups);
      ptx::materialize(last_group_kb);
      if constexpr (T::kBlockScaled) scaler.begin_tile(w.n_block * BLOCK_N);
      // The mainloop schedule: this unit's k-blocks into acc (fragments of this loop, see gemm/mainloop_steps.cuh).
      if constexpr (T::kPingpong) {
#include "gemm/mainloop_pp.cuh"
      } else if constexpr (kMainloop == 1) {
#include "gemm/mainloop_1g.cuh"
      } else if constexpr (kMainloop == 2) {
#include "gemm/mainloop_2g.cuh"
      } else {
#include "gemm/mainloop_2o.cuh"
      }

      const bool trace_unit = kTrace && unit == unit_first && threadIdx.x == 0;  // dgtune trace: the CTA's first unit
      if constexpr (kTrace && kMainloop != 3) {
        if (trace_unit) trace_mark(kTraceMainloopEnd);
      }
      // The spare CTAs of an edge cluster computed zeros for a tile outside D: nothing to store.
      if (!sched.valid(w)) continue;
      if constexpr (T::kSplitK) {
        if (num_splits > 1) {
          const u32 tile = w.m_block * sched.num_n_blocks + w.n_block;
          const bool reduces = split_k_reduce<T::kMmaPerWG, T::kAccPerMma, T::kMathThreads>(
              acc, workspace, tile_counters, split_flag, tile, w.split, num_splits);
          if constexpr (kTrace) {
            if (trace_unit) trace_mark(kTraceReduced);
          }
          if (!reduces) continue;
        }
      }
      if constexpr (T::kSplitCluster > 1) {
        const bool reduces = split_k_reduce_cluster<T::kSplitCluster, T::kMmaPerWG, T::kAccPerMma, T::kMathThreads>(
            acc, red_buf, red_full_bar, red_free_bar, split_rank, red_tile++);
        if constexpr (kTrace) {
          if (trace_unit) trace_mark(kTraceReduced);
        }
        if (!reduces) continue;
      }
      const u32 m0 = w.m_block * BLOCK_M + row0_in_tile, n0 = w.n_block * BLOCK_N;
      if constexpr (kScaleMode == kScaleChannel)
        apply_channel_scales<T::kMmaPerWG, T::kAccPerMma>(acc, scale_a, scale_b, M, N, m0, n0);
      if constexpr (kSwapAB) {
        store_tile_tma_swap<T::kMmaPerWG, T::kAccPerMma>(acc, staging + wg * T::kStagingPerWG, &tma_d, m0, n0, scale, wg,
                                                         epi);
      } else if constexpr (kTmaEpilogue && !kGrouped) {
        store_tile_tma<T::kMmaPerWG, T::kAccPerMma, T::kRowsPerWG, T::kEpiSwizzle, kOutType, T::kBiasBatch,
                       decltype(epi), T::kEpiRingBands>(acc, staging + wg * T::kStagingPerWG, &tma_d, d, ldd, M, N,
                                                        m0, n0, scale, wg, epi);
      } else if constexpr (!kGrouped) {
        store_tile_direct<T::kMmaPerWG, T::kAccPerMma, kOutType, T::kBiasBatch>(acc, d, M, N, ldd, m0, n0, scale, pairs_aligned, epi);
      } else {
        // Grouped: a warpgroup's rows go out with TMA (kTmaEpilogue) only when every one is a real row, because a
        // TMA box writes all of its rows below M; otherwise (a group's last block; every block with the direct
        // epilogue) the direct epilogue's row check stores only the real rows. Contiguous: rows whose m_indices
        // entry is -1 (a segment's padding); masked: rows >= masked_m[g] of the group's last block, computed from
        // whatever A holds there.
        bool tma_rows = kTmaEpilogue;
        // The AND is the same in every thread, but ptxas cannot see that through the asm: broadcast lane 0's value
        // (as warpgroup_index does), or the branch below counts as divergent and the stage index and WGMMA
        // descriptors move to vector registers (R2UR before the QGMMAs: tests/nvrtc/test_grouped_compiles.cpp).
        if constexpr (kGroupKind == kGroupContiguous && kTmaEpilogue)
          tma_rows = __shfl_sync(0xffffffffu, u32(ptx::named_barrier_all(2 + wg, 128, row_is_real)), 0) != 0;
        else if constexpr (kGroupKind == kGroupMasked && kTmaEpilogue)
          tma_rows = m0 + T::kRowsPerWG <= w.row_end;
        if (tma_rows) {
          store_tile_tma<T::kMmaPerWG, T::kAccPerMma, T::kRowsPerWG, T::kEpiSwizzle, kOutType, T::kBiasBatch,
                         decltype(epi), T::kEpiRingBands>(acc, staging + wg * T::kStagingPerWG, &tma_d, d, ldd, M, N,
                                                          m0, n0, scale, wg, epi);
        } else if constexpr (kGroupKind == kGroupContiguous) {
          store_tile_direct<T::kMmaPerWG, T::kAccPerMma, kOutType, T::kBiasBatch>(acc, d, M, N, ldd, m0, n0, scale,
                                                                                 pairs_aligned, epi,
                                                                                 ContiguousRows{grp.layout});
        } else {
          store_tile_direct<T::kMmaPerWG, T::kAccPerMma, kOutType, T::kBiasBatch>(acc, d, w.row_end, N, ldd, m0, n0,
                                                                                 scale, pairs_aligned, epi);
        }
      }
      if constexpr (kTrace) {
        if (trace_unit) trace_mark(kTraceStored);
      }
    }
    // e4m3 amax: each thread's running maximum covers all of its tiles; one atomic per warp per CTA.
    epi.flush_amax(amax_state);
    // 2o: nothing is in flight after the last tile (it issues no next k-block), but ptxas cannot tie the
    // loop exit to the last tile's "no next tile" test; an explicit wait closes the WGMMA pipeline.
    if constexpr (kMainloop == 3) ptx::wgmma_wait<0>();
    if constexpr (kTmaEpilogue) finish_tma_stores();
    if constexpr (kOutType == kOutE4M3) {
      if (amax != nullptr) finish_amax<T::kMathThreads>(amax_state, amax);
    }
    if constexpr (kTrace) {
      if (threadIdx.x == 0) trace_mark(kTraceEnd);
    }
  }

  // No CTA may leave while a peer can still arrive on its barriers or multicast into its memory. Only the consumer
  // threads get here in a cluster kernel (the producer warps left after their loops; exited threads count as arrived).
  if constexpr (T::kClusterSize > 1) {
    __syncwarp();
    ptx::cluster_sync();
  }
}

}  // namespace dgt::gemm
