// The FP8 GEMM kernel family for sm_90a: persistent, warp-specialized, TMA + WGMMA.
//
//   D[M,N] = (scale_a * scale_b) * A[M,K] * B[N,K]^T with per-tensor scales; per-channel and per-block
//   scales (kScaleMode, gemm/scales.cuh) apply them per row/column or per 128-wide k granule
//   A, B: e4m3 or e5m2, K-major (row-major M x K and N x K), read through TMA descriptors
//   D: BF16, FP32 or e4m3 (kOutType) row-major with leading dimension ldd; FP32 accumulation; an optional
//   fused epilogue (BF16 bias of N, ReLU / GELU-tanh; e4m3: scale_d and amax), gemm/epilogue_ops.cuh.
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
// Mainloop schedules (kMainloop): 1 = one WGMMA group in flight (issue a k-block, wait_group 0, release
// the stage, promote); 2 = two groups in flight with two partial buffers (issue group g+1's first
// k-block into the other buffer, wait_group 1, release, promote group g meanwhile). Both add the same
// partials in the same order: their output is bitwise identical. 3 ("2o") = 2 plus epilogue overlap:
// once a tile's last k-block is retired and promoted, the next tile's first k-block is issued into
// part0 before the epilogue (and retired at the next tile's start), so the tensor cores work while the
// CUDA cores store the tile. Same partials, same order of additions into acc: also bitwise identical.
//
// 4 ("pp", ping-pong; fast accumulation with K <= P x BLOCK_K, rule P8): the two consumer warpgroups take
// alternate work units of the CTA (local unit i goes to warpgroup i % 2), each summing a whole BLOCK_M x
// BLOCK_N tile on the tensor cores over all of K, with one WGMMA group kept in flight (wait_group 1) and
// no promotion: the sum is the result (the same as 1g's acc = 0 + part with one promotion group). While
// one warpgroup runs its epilogue, the other's WGMMAs keep the tensor cores busy: the epilogue overlaps
// the mainloop whatever its length. The producer loads the units in order as for every schedule; each
// stage is read by one warpgroup, which skips the stages of the other's units.
//
// Roles: warpgroups 0..kNumMathWG-1 are consumers (WGMMA + epilogue), warpgroup kNumMathWG is the
// producer, in which one thread issues the TMA loads into a kNumStages ring of shared-memory stages
// (block scale modes: that thread also copies each stage's scales, gemm/scales.cuh StageScales; with a
// cluster a second thread does).
// Each stage has a full barrier (arrive_expect_tx by the local producer thread; block modes: expect_tx, the
// scale copies, then arrive, by the TMA or the scale thread; complete_tx by TMA and the bulk copies,
// including the slices multicast by the other CTAs of the cluster) and an empty barrier (one arrival per consumer
// warp of every CTA of the cluster, because the peers write into this CTA's stage).
#pragma once
#include "common.cuh"
#include "gemm/epilogue_direct.cuh"
#include "gemm/epilogue_tma.cuh"
#include "gemm/fp8_gemm_traits.cuh"
#include "gemm/scales.cuh"
#include "gemm/scheduler.cuh"
#include "gemm/split_k.cuh"
#include "gemm/trace.cuh"
#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

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
/// it zero; gemm/epilogue_ops.cuh finish_amax); last, the scheduler's divisors (gemm/scheduler.cuh SchedDivisors).
template <u32 BLOCK_M, u32 BLOCK_N, u32 BLOCK_K, u32 kNumStages, u32 kNumMathWG, u32 kSwizzle, u32 kClusterM,
          u32 kClusterN, bool kRasterAlongM, u32 kGroup, bool kFastAccum, u32 kTypeA, u32 kTypeB, bool kTmaEpilogue,
          u32 kSplitMode, u32 kMainloop, u32 kPromoteEvery, u32 kScaleMode, u32 kOutType, bool kBias, u32 kAct>
__global__ void __launch_bounds__(128 * (kNumMathWG + 1), 1)
    fp8_gemm_kernel(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b,
                    const __grid_constant__ TmaDesc tma_a_tail, const __grid_constant__ TmaDesc tma_b_tail,
                    const __grid_constant__ TmaDesc tma_d, void* __restrict__ d, const float* __restrict__ scale_a,
                    const float* __restrict__ scale_b, u32 ld_sa, u32 ld_sb, u32 M, u32 N, u32 K, u64 ldd,
                    u32 num_splits, float* __restrict__ workspace, u32* __restrict__ tile_counters,
                    const u16* __restrict__ bias, const float* __restrict__ scale_d, float* __restrict__ amax,
                    u32* __restrict__ amax_state, const __grid_constant__ SchedDivisors sched_div) {
  using T = Fp8GemmTraits<BLOCK_M, BLOCK_N, BLOCK_K, kNumStages, kNumMathWG, kSwizzle, kClusterM, kClusterN, kRasterAlongM,
                          kGroup, kFastAccum, kTypeA, kTypeB, kTmaEpilogue, kSplitMode, kMainloop, kPromoteEvery, kScaleMode,
                          kOutType, kBias, kAct>;
  using Mma = ptx::WgmmaFp8<BLOCK_N>;

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
#pragma unroll
    for (u32 s = 0; s < kNumStages; ++s) {
      ptx::mbar_init(&full_bar[s], T::kProducersPerStage);
      ptx::mbar_init(&empty_bar[s], T::kConsumersPerStage * 4 * T::kMcastSize);
    }
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

  const TileScheduler<BLOCK_M, BLOCK_N, BLOCK_K, kClusterM, kClusterN, kRasterAlongM, kGroup> sched(M, N, K, num_splits, sched_div);
  const u32 cluster_id = blockIdx.x / T::kClusterSize;
  const u32 num_clusters = gridDim.x / T::kClusterSize;
  // Work units are (tile, split) with the split fastest. A cluster split runs units cluster * S + rank, so
  // its S CTAs take the S splits of one tile at a time; otherwise S = 1 and this is the plain persistent walk.
  const u32 cta_unit_first = cluster_id * T::kSplitCluster + split_rank;
  const u32 cta_unit_step = num_clusters * T::kSplitCluster;

  if (wg == kNumMathWG) {
    // ---------------- producer warpgroup ----------------
    // Block scale modes: k-block kb's scales into the stage's slot, with `extra_tx` more bytes the same arrival
    // expects. Expect, copy, then arrive: the arrive (a release) follows the copies in program order.
    auto copy_scales = [&](u32 stage, u32 kb, u32 m0, u32 n0, u32 extra_tx) {
      using Scales = StageScales<kScaleMode, BLOCK_M, BLOCK_N, T::kGranulesPerStage, T::kScaleNBlocks>;
      ptx::mbar_expect_tx(&full_bar[stage], extra_tx + Scales::bytes(kb, m0, n0, ld_sa, ld_sb, N, K));
      Scales::issue(smem_scales + stage * T::kSmemScaleStage, &full_bar[stage], kb, m0, n0, scale_a, scale_b, ld_sa, ld_sb,
                    N, K);
      ptx::mbar_arrive(&full_bar[stage]);
    };
    // CTAs sharing B (same n-block) are ranks rank_n * kClusterM + i; sharing A: rank_m + j * kClusterM.
    u16 mask_b = 0, mask_a = 0;
#pragma unroll
    for (u32 i = 0; i < kClusterM; ++i) mask_b |= u16(1u << (rank_n * kClusterM + i));
#pragma unroll
    for (u32 j = 0; j < kClusterN; ++j) mask_a |= u16(1u << (rank_m + j * kClusterM));
    // The last m-block (and an edge cluster's spare ones) loads A through the tail map, whose box holds only the
    // rows below M (Fp8GemmTraits::a_tail_rows); likewise the last n-block's B. The host passes the main map in
    // the tail slot when there is no tail, and the byte counts are then equal.
    const u32 last_m_block = (M - 1) / BLOCK_M, last_n_block = (N - 1) / BLOCK_N;
    // One k-block of unit w into `stage` (its empty slot already free): expect the bytes, then the TMA loads.
    auto issue_stage = [&](u32 stage, u32 kb, const WorkUnit& w) {
      const int a_row = int(w.m_block * BLOCK_M + rank_n * T::kSliceRowsA);
      const int b_row = int(w.n_block * BLOCK_N + rank_m * T::kSliceRowsB);
      const bool a_tail = w.m_block >= last_m_block, b_tail = w.n_block >= last_n_block;
      const TmaDesc* map_a = a_tail ? &tma_a_tail : &tma_a;
      const TmaDesc* map_b = b_tail ? &tma_b_tail : &tma_b;
      // Bytes one stage receives: the A boxes of every CTA of the cluster row, and B's (multicast slices keep
      // their size, so only kClusterN == 1 / kClusterM == 1 tails are shorter).
      const u32 stage_tx = (a_tail ? T::a_tail_rows(M) : T::a_box_rows(M)) * kClusterN * BLOCK_K +
                           (b_tail ? T::b_tail_rows(N) * kClusterM * BLOCK_K : T::kSmemBStage);
      if constexpr (T::kBlockScaled && T::kProducersPerStage == 1) {
        copy_scales(stage, kb, w.m_block * BLOCK_M, w.n_block * BLOCK_N, stage_tx);  // without a cluster this thread copies the scales (see below)
      } else {
        ptx::mbar_arrive_expect_tx(&full_bar[stage], stage_tx);
      }
#pragma unroll
      for (u32 a = 0; a < T::kAtomsK; ++a) {
        const int k_idx = int(kb * BLOCK_K + a * kSwizzle);
        u8* dst_a = smem_a + stage * T::kSmemAStage + a * BLOCK_M * kSwizzle + rank_n * T::kSliceRowsA * kSwizzle;
        u8* dst_b = smem_b + stage * T::kSmemBStage + a * BLOCK_N * kSwizzle + rank_m * T::kSliceRowsB * kSwizzle;
        if constexpr (kClusterN > 1) {
          ptx::tma_load_2d_multicast(map_a, &full_bar[stage], dst_a, k_idx, a_row, mask_a);
        } else {
          ptx::tma_load_2d(map_a, &full_bar[stage], dst_a, k_idx, a_row);
        }
        if constexpr (kClusterM > 1) {
          ptx::tma_load_2d_multicast(map_b, &full_bar[stage], dst_b, k_idx, b_row, mask_b);
        } else {
          ptx::tma_load_2d(map_b, &full_bar[stage], dst_b, k_idx, b_row);
        }
      }
    };
    // Early issue: the first unit's first kPreIssue k-blocks go out before setmaxnreg.dec. The register
    // hand-over and the first work-unit arithmetic took ~500 cycles between setup and the first TMA on the
    // H200 (`dgtune trace`, 1x2112x7168), all of it in front of a ~0.9 us cold load; now they overlap it.
    // The empty slots are fresh (phase 0 not yet completed), so no wait is needed. Few k-blocks, because the
    // consumers' setmaxnreg.inc waits for this warpgroup's dec. Not with 8 swizzle atoms per stage (swizzle 32,
    // BLOCK_K 256): there the loop below no longer fit the producer's 40 registers (12-44 B of spills, NVRTC
    // spill test), and such configs have not won a shape. Nor with block scales in a multicast cluster (a second
    // producer thread copies the scales): there the consumers' next-unit index left the uniform registers (an
    // R2UR inside the k-block's QGMMA window, tests/nvrtc Sass.BlockScalesComeThroughSharedMemory).
    constexpr u32 kPreIssue = T::kAtomsK > 4 || T::kProducersPerStage == 2 ? 0 : kNumStages < 4 ? kNumStages : 4;
    const bool tma_thread = warp == kNumMathWG * 4 && lane == 0;
    // The first unit and `pre` are computed by every producer thread, outside the TMA thread's branch: a value
    // merged from that branch is divergent to the compiler, and the stage index derived from it moved the
    // whole TMA loop out of uniform registers (waterfall loops around every UTMALDG; the loop ran 9% slower
    // per k-block on the H200, `dgtune trace` of 64x4096x7168).
    const WorkUnit w_first = sched.work(cta_unit_first, rank_m, rank_n);
    const u32 pre = cta_unit_first < sched.num_units ? min_of(kPreIssue, w_first.k_end - w_first.k_begin) : 0u;
    if (tma_thread) {
      // dgtune trace: with early k-blocks their issue is the first; without (pre == 0) the loop below marks.
      if constexpr (kTrace) {
        if (pre > 0) trace_mark(kTraceFirstUnit), trace_mark(kTraceFirstEmpty);
      }
#pragma unroll 1
      for (u32 i = 0; i < pre; ++i) issue_stage(i, w_first.k_begin + i, w_first);
      if constexpr (kTrace) {
        if (pre > 0) trace_mark(kTraceFirstIssue);
      }
    }
    __syncwarp();
    ptx::setmaxnreg_dec<T::kProducerRegs>();
    if constexpr (kTrace) {
      if (tma_thread) trace_mark(kTraceProducerRegs);
    }
    if (tma_thread) {
      u32 stage = pre == kNumStages ? 0 : pre, phase = pre == kNumStages ? 1 : 0;
      for (u32 unit = cta_unit_first; unit < sched.num_units; unit += cta_unit_step) {
        const WorkUnit w = sched.work(unit, rank_m, rank_n);
        // kb == w.k_begin of the first unit only happens without early k-blocks (pre == 0).
        const bool trace_first = kTrace && unit == cta_unit_first;
        if constexpr (kTrace) {
          if (trace_first && pre == 0) trace_mark(kTraceFirstUnit);
        }
        for (u32 kb = w.k_begin + (unit == cta_unit_first ? pre : 0u); kb < w.k_end; ++kb) {  // the first unit resumes
          ptx::mbar_wait(&empty_bar[stage], phase ^ 1);
          if constexpr (kTrace) {
            if (trace_first && kb == w.k_begin) trace_mark(kTraceFirstEmpty);
          }
          issue_stage(stage, kb, w);
          if constexpr (kTrace) {
            if (trace_first && kb == w.k_begin) trace_mark(kTraceFirstIssue);
          }
          if (++stage == kNumStages) stage = 0, phase ^= 1;
        }
      }
    }
    if constexpr (T::kBlockScaled && T::kProducersPerStage == 2) {
      // Block scale modes with a cluster: a second producer thread (lane 0 of the next warp) copies each stage's
      // scales (this CTA's own, not multicast) and is the full barrier's second arrival, because the producer
      // runs with 40 registers and the scale arithmetic in the TMA thread's loop spilled in cluster kernels
      // (NVRTC spill test). Without a cluster the TMA thread copies them itself: the second thread cost 8% more
      // cycles there (H200, 4096x7168x16384 block, 128x128x128 s5 2g: 1256k vs 1156k cycles under ncu,
      // results/h200/scale-modes.md), most of it in full-barrier waits (long-scoreboard stalls 13.9k vs 8.9k).
      if (warp == kNumMathWG * 4 + 1 && lane == 0) {
        u32 stage = 0, phase = 0;
        for (u32 unit = cta_unit_first; unit < sched.num_units; unit += cta_unit_step) {
          const WorkUnit w = sched.work(unit, rank_m, rank_n);
          const u32 m0 = w.m_block * BLOCK_M, n0 = w.n_block * BLOCK_N;
          for (u32 kb = w.k_begin; kb < w.k_end; ++kb) {
            ptx::mbar_wait(&empty_bar[stage], phase ^ 1);
            copy_scales(stage, kb, m0, n0, 0);
            if (++stage == kNumStages) stage = 0, phase ^= 1;
          }
        }
      }
    }
    // Cluster kernels: the producer warps leave here rather than at the final cluster barrier below. A thread that
    // has exited counts as arrived at barrier.cluster (PTX ISA, "exit"), and the consumers, which wait for every
    // stage this CTA's and its peers' producers load into it, keep the CTA and its shared memory alive until the
    // peers are done, so the barrier guards the same. What it changes is ptxas's view of the producer: with the
    // lane-0 TMA loop followed by that aligned barrier, it kept the loop's ring state and addresses in vector
    // registers, with R2URs before every TMA issue (about 90 per kernel in 2-CTA clusters; tests/nvrtc
    // Sass.ClusterKernelsKeepTheirDescriptorsUniform). Kernels without a cluster end here anyway.
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
    BlockScaler<kScaleMode, T::kMmaPerWG, T::kAccPerMma, BLOCK_M, BLOCK_N, T::kGranulesPerStage, T::kScaleNBlocks,
                T::kScaleNAligned>
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

    u32 stage = 0, phase = 0;
    // One k32 step s of the current stage into `buf` (zero: overwrite, i.e. the first step of a partial sum).
    auto mma_step = [&](Buf& buf, u32 s, bool zero) {
      // k-step s covers bytes [32*s, 32*s + 32) of the k-block: span (32*s)/kSwizzle, offset (32*s)%kSwizzle.
      const u32 atom = (32 * s) / kSwizzle, offset = (32 * s) % kSwizzle;
#ifdef DGT_TEST_NONUNIFORM_DESC
      // Test-only negative case (tests/nvrtc): descriptors rebuilt per k-block from the thread index.
      const u64 desc_b = ptx::make_kmajor_desc<kSwizzle>(smem_u32(smem_b + stage * T::kSmemBStage) + atom * BLOCK_N * kSwizzle + offset);
#else
      const u64 desc_b = ptx::kmajor_desc<kSwizzle>(b_desc_lo + ((stage * T::kSmemBStage + atom * BLOCK_N * kSwizzle + offset) >> 4));
#endif
#pragma unroll
      for (u32 j = 0; j < T::kMmaPerWG; ++j) {
#ifdef DGT_TEST_NONUNIFORM_DESC
        const u64 desc_a = ptx::make_kmajor_desc<kSwizzle>(smem_u32(smem_a + stage * T::kSmemAStage) + atom * BLOCK_M * kSwizzle +
                                                           ((T::kPingpong ? 0u : threadIdx.x / 128) * T::kRowsPerWG + 64 * j) * kSwizzle + offset);
#else
        const u64 desc_a = ptx::kmajor_desc<kSwizzle>(
            a_desc_lo + ((stage * T::kSmemAStage + atom * BLOCK_M * kSwizzle + 64 * j * kSwizzle + offset) >> 4));
#endif
        Mma::template mma<T::kTypes>(buf[j], desc_a, desc_b, zero ? 0u : 1u);
      }
    };
    // Waits for the next full stage and issues its k-steps into `buf`; the first k-step overwrites
    // `buf` when `first` (the first k-block of a promotion group). Returns the stage it read.
    // Block modes, with `fetch_kb` set: k-block fetch_kb's scales are read between the full-barrier wait and
    // the WGMMA fence (see fetch below).
    bool trace_first_full = kTrace;  // dgtune trace: mark the CTA's first full-barrier wait
    auto issue_fetch = [&](Buf& buf, bool first, bool fetch_kb, u32 kb) -> u32 {
      ptx::mbar_wait(&full_bar[stage], phase);
      if constexpr (kTrace) {
        if (trace_first_full && threadIdx.x == 0) trace_mark(kTraceFirstFull);
        trace_first_full = false;
      }
      if constexpr (T::kBlockScaled) {
        if (fetch_kb) scaler.fetch(smem_scales + stage * T::kSmemScaleStage, 0, kb * T::kGranulesPerStage);
      }
      ptx::wgmma_fence();
#pragma unroll
      for (u32 s = 0; s < T::kStepsK; ++s) mma_step(buf, s, first && s == 0);
      ptx::wgmma_commit();
      const u32 read = stage;
      if (++stage == kNumStages) stage = 0, phase ^= 1;
      return read;
    };
    auto issue = [&](Buf& buf, bool first) -> u32 { return issue_fetch(buf, first, false, 0); };
    // Block scale modes with BLOCK_K = 256 (1g only, rule R21): the k-block holds two 128-wide granules,
    // each summed into its own partial buffer (k-steps 0-3 into b0, 4-7 into b1) so each is promoted with
    // its own scales. One commit group.
    auto issue_granules = [&](Buf& b0, Buf& b1) -> u32 {
      ptx::mbar_wait(&full_bar[stage], phase);
      if constexpr (kTrace) {
        if (trace_first_full && threadIdx.x == 0) trace_mark(kTraceFirstFull);
        trace_first_full = false;
      }
      ptx::wgmma_fence();
#pragma unroll
      for (u32 s = 0; s < T::kStepsK / 2; ++s) mma_step(b0, s, s == 0);
#pragma unroll
      for (u32 s = T::kStepsK / 2; s < T::kStepsK; ++s) mma_step(b1, s, s == T::kStepsK / 2);
      ptx::wgmma_commit();
      const u32 read = stage;
      if (++stage == kNumStages) stage = 0, phase ^= 1;
      return read;
    };
    // The stage has been read by the tensor cores: release it to every producer that writes it
    // (lane i arrives on CTA i's barrier).
    auto release = [&](u32 s) {
      if constexpr (T::kMcastSize == 1) {
        if (lane == 0) ptx::mbar_arrive(&empty_bar[s]);
      } else {
        if (lane < T::kMcastSize) ptx::mbar_arrive_cluster(&empty_bar[s], lane);
      }
    };
    // Promotion: acc += buf (after the wait that retired buf's WGMMAs); block modes multiply buf by the
    // scales of its granule, which fetch() read earlier from the stage's scale slot (after the stage's
    // full-barrier wait, before its release, so the shared-memory reads overlap the WGMMA wait).
    auto promote = [&](Buf& buf) {
      if constexpr (T::kBlockScaled) {
        scaler.promote(acc, buf);
      } else {
#pragma unroll
        for (u32 j = 0; j < T::kMmaPerWG; ++j)
#pragma unroll
          for (u32 i = 0; i < T::kAccPerMma; ++i) {
            ptx::fence_operand(buf[j][i]);
            acc[j][i] += buf[j][i];
          }
      }
    };
    // Block modes: the scales of k-block kb, read in `st` (its stage, waited for and not yet released).
    // With BLOCK_K = 128 k-block kb is granule kb (BLOCK_K = 256: granules 2 kb and 2 kb + 1, slots 0 and 1).
    // The reads (LDS, generic proxy) must be performed before the stage is released, or the producer's next
    // copy into the slot (async proxy) can land first: a write-after-read race, seen on the H200 (4096x4096x16
    // block, 128x64 2g with the direct epilogue, 352 wrong elements in one of three runs) when the release
    // followed the reads with only a WGMMA wait between; ptxas also moves the release above the FFMAs that
    // consume the values, so source order after promote() does not help. Where a WGMMA follows, the reads
    // go before its fence (issue_fetch; the order DeepGEMM relies on); where none does (a tile's last
    // k-block in 2g, the second granule of a BLOCK_K 256 stage), fence.proxy.async orders them before the
    // release (PTX ISA, memory consistency model: accesses through different proxies need a proxy fence).
    auto fetch = [&](u32 st, u32 kb, u32 slot = 0) {
      if constexpr (T::kBlockScaled) scaler.fetch(smem_scales + st * T::kSmemScaleStage, slot, kb * T::kGranulesPerStage + slot);
    };
    // Retires the last issued k-block of a tile (stage st, partial buf), releases its stage and folds it in;
    // block modes first order their scale reads before the release (see fetch).
    auto finish = [&](Buf& buf, u32 st) {
      ptx::wgmma_wait<0>();
      if constexpr (T::kBlockScaled) ptx::fence_proxy_async_smem();
      release(st);
      promote(buf);
    };
    constexpr bool kFirstOfGroup = true, kMore = false;
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
    for (u32 unit = unit_first; unit < sched.num_units; unit += unit_step) {
      const WorkUnit w = sched.work(unit, rank_m, rank_n);
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
      if constexpr (T::kPingpong) {
        // Turn order. The full barriers are waited on by phase parity, which only tells the phase in
        // progress from the one before it: a warpgroup that skipped the other's unit and waited for its own
        // next phase of a stage while the other's phase of that stage was still in progress would see the
        // older phase with the same parity as complete and read a stage not yet loaded (measured: wrong
        // results, launch failures and hangs). So the units' mainloops run strictly in turn: a warpgroup
        // starts waiting for its unit's stages only after the other has waited for all of the previous
        // unit's (named barrier 4 + w: warpgroup w waits there, the other arrives), as CUTLASS's ping-pong
        // kernel orders its math warpgroups. Epilogues are not ordered: they overlap the other's mainloop.
        if (unit != cluster_id) ptx::named_barrier_sync(4 + wg, 256);
        // The whole of K into acc (P8: num_kb <= P), one group in flight: issue k-block i, retire i - 1,
        // release its stage.
        u32 prev = issue(acc, kFirstOfGroup);
        for (u32 i = 1; i < pp_kb; ++i) {
          const u32 s = issue(acc, kMore);
          ptx::wgmma_wait<1>();
          release(prev);
          prev = s;
        }
        // Every stage of this unit has been waited for: the other warpgroup's next unit may start.
        if (unit + num_clusters < sched.num_units) ptx::named_barrier_arrive(4 + (1 - wg), 256);
        ptx::wgmma_wait<0>();
        release(prev);
        pp_skip();  // the other warpgroup's next unit
#pragma unroll
        for (u32 j = 0; j < T::kMmaPerWG; ++j)
#pragma unroll
          for (u32 i = 0; i < T::kAccPerMma; ++i) ptx::fence_operand(acc[j][i]);
      } else if constexpr (kMainloop == 1) {
        // One WGMMA group in flight: issue a k-block, wait for it, release its stage; after the last
        // k-block of a group, add the partial sum into acc.
        if constexpr (T::kBlockScaled && BLOCK_K == 256) {
          // Two granules per k-block: granule 2 kb in part0, 2 kb + 1 in part1 (past K: zero partial, zero scale).
          for (u32 g = 0; g < num_groups; ++g) {
            const u32 kb = w.k_begin + g;
            const u32 s = issue_granules(part0, part1);
            fetch(s, kb, 0);
            ptx::wgmma_wait<0>();
            promote(part0);
            fetch(s, kb, 1);
            ptx::fence_proxy_async_smem();  // the second granule's scale reads before the release (see fetch)
            release(s);
            promote(part1);
          }
        } else
        for (u32 g = 0; g < num_groups; ++g) {
          // P = 1 in block modes: group g is k-block k_begin + g; its scales are read before the WGMMA fence.
          const u32 first = issue_fetch(part0, kFirstOfGroup, true, w.k_begin + g);
          ptx::wgmma_wait<0>();
          release(first);
          if constexpr (P > 1) {
            const u32 n = g + 1 == num_groups ? last_group_kb : P;
            for (u32 i = 1; i < n; ++i) {
              const u32 s = issue(part0, kMore);
              ptx::wgmma_wait<0>();
              release(s);
            }
          }
          promote(part0);
        }
      } else if constexpr (kMainloop == 2) {
        // Two WGMMA groups in flight: k-block g accumulates into part[g % 2] (P = 1, rule R20). After
        // issuing k-block g, wait_group 1 retires everything before it, so the stage of k-block g-1 is
        // released and its buffer is added into acc while the tensor cores work on k-block g. The loop
        // is unrolled by two so the buffers are compile-time; its body has no branch around a WGMMA
        // (a branch there made ptxas serialize them, warning C7514). With P > 1 in the same shape
        // (inner runtime-length loops over a group) ptxas serialized (C7515) or spilled, hence R20.
        u32 pending = issue(part0, kFirstOfGroup);  // stage of the newest issued k-block, released one step later
        u32 kb_prev = w.k_begin;                     // k-block whose partial the next promote() adds
        auto next_group = [&](Buf& buf, Buf& prev) {
          fetch(pending, kb_prev);  // kb_prev's stage is `pending`: waited for, read before issue()'s WGMMA fence
          const u32 s = issue(buf, kFirstOfGroup);
          ptx::wgmma_wait<1>();
          release(pending);
          pending = s;
          promote(prev);
          ++kb_prev;
        };
        u32 g = 1;
        for (; g + 1 < num_groups; g += 2) {
          next_group(part1, part0);
          next_group(part0, part1);
        }
        if (g < num_groups) {
          next_group(part1, part0);
          fetch(pending, kb_prev);
          finish(part1, pending);
        } else {
          fetch(pending, kb_prev);
          finish(part0, pending);
        }
      } else {
        // 2o. This tile's first k-block (kb0) is already in flight in part0: issued before the previous
        // tile's epilogue (or before the tile loop for the CTA's first tile), so it ran on the tensor
        // cores during that epilogue. Retire and promote it first (wait_group 0: by now it is normally
        // done), then run the remaining k-blocks with the 2g schedule and its tail, and finally issue
        // the next tile's kb0 into part0, right before this tile's epilogue.
        // Why kb0 is retired with wait_group 0 here instead of being the first group of the 2g loop
        // (wait_group 1 after issuing kb1): with a group in flight across the tile loop's back edge,
        // ptxas could not prove that wait_group 1 retired it and serialized every WGMMA (C7514), for
        // every placement of the early issue that was tried. Retiring it first gives the loop head one
        // known in-flight group and the rest of the tile the exact 2g code shape.
        // Numerics: acc = 0 + kb0 + kb1 + ... in k order, the same FADDs as 1g/2g (bitwise identical).
        static_assert(kPromoteEvery == 1, "R20: 2o promotes every k-block");
        auto next_group = [&](Buf& buf, Buf& prev) {
          const u32 s = issue(buf, kFirstOfGroup);
          ptx::wgmma_wait<1>();
          release(pending_o);
          pending_o = s;
          promote(prev);
        };
        ptx::wgmma_wait<0>();
        release(pending_o);
        promote(part0);
        const u32 rest = num_groups - 1;
        if (rest > 0) {
          pending_o = issue(part0, kFirstOfGroup);
          u32 g = 1;
          for (; g + 1 < rest; g += 2) {
            next_group(part1, part0);
            next_group(part0, part1);
          }
          if (g < rest) {
            next_group(part1, part0);
            ptx::wgmma_wait<0>();
            release(pending_o);
            promote(part1);
          } else {
            ptx::wgmma_wait<0>();
            release(pending_o);
            promote(part0);
          }
        }
        // Nothing is in flight here. The next tile of this CTA, if any, starts now: its stage is the next
        // in the ring, which the producer (already ahead) filled or is filling; stage/phase continue as
        // for any other k-block. Only part0 is written, so acc is intact for the epilogue below, and
        // the epilogue's TMA staging buffer is not touched by WGMMAs (they read only A/B stages).
        if constexpr (kTrace) {  // dgtune trace: this tile's mainloop ends here, before the next tile's early issue
          if (unit == unit_first && threadIdx.x == 0) trace_mark(kTraceMainloopEnd);
        }
        if (unit + num_clusters < sched.num_units) pending_o = issue(part0, kFirstOfGroup);
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
      if constexpr (kTmaEpilogue) {
        store_tile_tma<T::kMmaPerWG, T::kAccPerMma, T::kRowsPerWG, T::kEpiSwizzle, kOutType, T::kBiasBatch,
                       decltype(epi), T::kEpiRingBands>(acc, staging + wg * T::kStagingPerWG, &tma_d, d, ldd, M, N,
                                                        m0, n0, scale, wg, epi);
      } else {
        store_tile_direct<T::kMmaPerWG, T::kAccPerMma, kOutType, T::kBiasBatch>(acc, d, M, N, ldd, m0, n0, scale, pairs_aligned, epi);
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
