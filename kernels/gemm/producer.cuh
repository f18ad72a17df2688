// The producer warpgroup of the FP8 GEMM kernel (gemm/fp8_gemm.cuh): one thread issues the TMA loads of A and B
// into the ring of kNumStages shared-memory stages (gemm/stage_ring.cuh), unit after unit in the consumers'
// order. With a cluster, each CTA loads its slice of the shared operand and multicasts it to the CTAs of its
// cluster row / column (A with kClusterN > 1, B with kClusterM > 1). The last m-block (n-block) loads A (B)
// through a tail tensor map whose box holds only the rows below M (N). Block scale modes: the TMA thread copies the
// stage's scales with it (gemm/scales.cuh StageScales; in a multicast cluster each CTA its own, not multicast).
#pragma once
#include "common.cuh"
#include "gemm/grouped_scheduler.cuh"
#include "gemm/scales.cuh"
#include "gemm/scheduler.cuh"
#include "gemm/trace.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tma.cuh"

namespace dgt::gemm {

/// Grouped kernels (gemm/grouped_scheduler.cuh): run_producer's copy_scales for unit `w` of a group: the same copies
/// from the group's scales (the pointers move by w.sa_off / w.sb_off floats) with the block's first row in the A
/// scales (w.scale_m0). A function, not a lambda: it names GroupedWorkUnit's fields, and only grouped kernels
/// instantiate it.
template <class T, class Unit>
__device__ __forceinline__ void copy_group_scales(u8* smem_scales, u64* full_bar, u32 stage, u32 kb, const Unit& w,
                                                  u32 extra_tx, const float* scale_a, const float* scale_b, u32 ld_sa,
                                                  u32 ld_sb, u32 N, u32 K) {
  using Scales = StageScales<T::kScaleMode, T::BLOCK_M, T::BLOCK_N, T::kGranulesPerStage, T::kScaleNBlocks>;
  const u32 n0 = w.n_block * T::BLOCK_N;
  const float* sa = scale_a + w.sa_off;
  const float* sb = scale_b + w.sb_off;
  ptx::mbar_expect_tx(&full_bar[stage], extra_tx + Scales::bytes(kb, w.scale_m0, n0, ld_sa, ld_sb, N, K));
  Scales::issue(smem_scales + stage * T::kSmemScaleStage, &full_bar[stage], kb, w.scale_m0, n0, sa, sb, ld_sa, ld_sb, N,
                K);
  ptx::mbar_arrive(&full_bar[stage]);
}

/// The producer warpgroup's work, from its first TMA issue to the end of its loops. T: Fp8GemmTraits; `sched`
/// gives the CTA's work units, cta_unit_first + i * cta_unit_step below num_units (sched.num_units, passed as a
/// value: read through the reference, the unit comparisons came out with swapped operands and other SASS);
/// rank_m / rank_n: this CTA's place in the multicast cluster. In cluster kernels the caller returns right after
/// (see the end).
template <class T, class Sched>
__device__ __forceinline__ void run_producer(const TmaDesc& tma_a, const TmaDesc& tma_b, const TmaDesc& tma_a_tail,
                                             const TmaDesc& tma_b_tail, u8* smem_a, u8* smem_b, u8* smem_scales,
                                             u64* full_bar, u64* empty_bar, const float* scale_a, const float* scale_b,
                                             u32 ld_sa, u32 ld_sb, u32 M, u32 N, u32 K, const Sched& sched, u32 num_units,
                                             u32 rank_m, u32 rank_n, u32 warp, u32 lane, u32 cta_unit_first,
                                             u32 cta_unit_step) {
  constexpr u32 BLOCK_M = T::BLOCK_M, BLOCK_N = T::BLOCK_N, BLOCK_K = T::BLOCK_K, kNumStages = T::kNumStages;
  constexpr u32 kNumMathWG = T::kNumMathWG, kSwizzle = T::kSwizzle, kClusterM = T::kClusterM, kClusterN = T::kClusterN;
  constexpr u32 kScaleMode = T::kScaleMode;
  using Unit = decltype(sched.work(0u, 0u, 0u));  // WorkUnit, or GroupedWorkUnit (gemm/grouped_scheduler.cuh)
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
  auto issue_stage = [&](u32 stage, u32 kb, const Unit& w) {
    const int a_row = int(w.m_block * BLOCK_M + rank_n * T::kSliceRowsA);
    int b_row = int(w.n_block * BLOCK_N + rank_m * T::kSliceRowsB);
    if constexpr (Sched::kGrouped) b_row += int(w.b_row0);  // B is [G*N, K]: the group's rows start at g * N
    const bool a_tail = w.m_block >= last_m_block, b_tail = w.n_block >= last_n_block;
    const TmaDesc* map_a = a_tail ? &tma_a_tail : &tma_a;
    const TmaDesc* map_b = b_tail ? &tma_b_tail : &tma_b;
    // Bytes one stage receives: the A boxes of every CTA of the cluster row, and B's (multicast slices keep
    // their size, so only kClusterN == 1 / kClusterM == 1 tails are shorter).
    const u32 stage_tx = (a_tail ? T::a_tail_rows(M) : T::a_box_rows(M)) * kClusterN * BLOCK_K +
                         (b_tail ? T::b_tail_rows(N) * kClusterM * BLOCK_K : T::kSmemBStage);
    if constexpr (T::kBlockScaled && Sched::kGrouped) {
      copy_group_scales<T>(smem_scales, full_bar, stage, kb, w, stage_tx, scale_a, scale_b, ld_sa, ld_sb, N, K);
    } else if constexpr (T::kBlockScaled) {
      copy_scales(stage, kb, w.m_block * BLOCK_M, w.n_block * BLOCK_N, stage_tx);  // this CTA's own scales
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
  // spill test), and such configs have not won a shape. Nor with block scales in a multicast cluster: there, while a
  // second producer thread copied the scales, the consumers' next-unit index left the uniform registers (an R2UR
  // inside the k-block's QGMMA window, tests/nvrtc Sass.BlockScalesComeThroughSharedMemory); early issue has not been
  // tried there with the single thread, so it stays off.
  constexpr u32 kPreIssue = T::kAtomsK > 4 || T::kWideProducer ? 0 : kNumStages < 4 ? kNumStages : 4;
  const bool tma_thread = warp == kNumMathWG * 4 && lane == 0;
  // The first unit and `pre` are computed by every producer thread, outside the TMA thread's branch: a value
  // merged from that branch is divergent to the compiler, and the stage index derived from it moved the
  // whole TMA loop out of uniform registers (waterfall loops around every UTMALDG; the loop ran 9% slower
  // per k-block on the H200, `dgtune trace` of 64x4096x7168).
  const auto w_first = sched.work(cta_unit_first, rank_m, rank_n);
  const u32 pre = cta_unit_first < num_units ? min_of(kPreIssue, w_first.k_end - w_first.k_begin) : 0u;
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
  if constexpr (is_contiguous<Sched>()) {
    // Contiguous grouped kernels: each unit's m_indices entry (its group) is loaded one unit ahead, as the consumers
    // load theirs (GroupedScheduler::lookup), so that the load's latency is not spent between a unit's last TMA issue
    // and the next unit's first, where it shortened the lead the ring gives the loads (+0.7-1.4% on the H200,
    // results/h200/grouped-scales-2026-12-03.md). A loop of its own: the dense loop below is kept verbatim, because
    // choosing the unit's source inside it changed the dense split-K kernels' SASS. Grouped kernels have no trace.
    if (tma_thread) {
      u32 stage = pre == kNumStages ? 0 : pre, phase = pre == kNumStages ? 1 : 0;
      int next_group = sched.lookup(cta_unit_first, rank_n);
      for (u32 unit = cta_unit_first; unit < num_units; unit += cta_unit_step) {
        const auto w = sched.work_from(unit, rank_n, next_group);
        next_group = sched.lookup(unit + cta_unit_step, rank_n);
        for (u32 kb = w.k_begin + (unit == cta_unit_first ? pre : 0u); kb < w.k_end; ++kb) {  // the first unit resumes
          ptx::mbar_wait(&empty_bar[stage], phase ^ 1);
          issue_stage(stage, kb, w);
          if (++stage == kNumStages) stage = 0, phase ^= 1;
        }
      }
    }
  } else if (tma_thread) {
    u32 stage = pre == kNumStages ? 0 : pre, phase = pre == kNumStages ? 1 : 0;
    for (u32 unit = cta_unit_first; unit < num_units; unit += cta_unit_step) {
      const auto w = sched.work(unit, rank_m, rank_n);
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
  // Cluster kernels: the producer warps leave after this (the caller returns) rather than at the kernel's final
  // cluster barrier. A thread that has exited counts as arrived at barrier.cluster (PTX ISA, "exit"), and the
  // consumers, which wait for every stage this CTA's and its peers' producers load into it, keep the CTA and its
  // shared memory alive until the peers are done, so the barrier guards the same. What it changes is ptxas's
  // view of the producer: with the lane-0 TMA loop followed by that aligned barrier, it kept the loop's ring
  // state and addresses in vector registers, with R2URs before every TMA issue (about 90 per kernel in 2-CTA
  // clusters; tests/nvrtc Sass.ClusterKernelsKeepTheirDescriptorsUniform). Kernels without a cluster end here
  // anyway.
}

}  // namespace dgt::gemm
