// The FP8 GEMM kernel family for sm_90a: persistent, warp-specialized, TMA + WGMMA.
//
//   D[M,N] = (scale_a * scale_b) * A[M,K] * B[N,K]^T
//   A, B: e4m3 or e5m2, K-major (row-major M x K and N x K), read through TMA descriptors
//   D: BF16 row-major with leading dimension ldd; FP32 accumulation.
//
// Roles: warpgroups 0..kNumMathWG-1 are consumers (WGMMA + epilogue), warpgroup kNumMathWG is the
// producer, in which one thread issues the TMA loads into a kNumStages ring of shared-memory stages.
// Each stage has a full barrier (arrive_expect_tx by the local producer, complete_tx by TMA, including
// the slices multicast by the other CTAs of the cluster) and an empty barrier (one arrival per consumer
// warp of every CTA of the cluster, because the peers write into this CTA's stage).
#pragma once
#include "common.cuh"
#include "gemm/epilogue_direct.cuh"
#include "gemm/epilogue_tma.cuh"
#include "gemm/fp8_gemm_traits.cuh"
#include "gemm/scheduler.cuh"
#include "gemm/split_k.cuh"
#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

namespace dgt::gemm {

/// Kernel arguments after the three tensor maps: D's pointer (direct epilogue), the per-tensor scales,
/// the shape, D's leading dimension, the K split count (1 = no split; else every split non-empty) and
/// the split-K workspace (tiles * splits * BLOCK_M * BLOCK_N floats) and per-tile counters (zeroed once).
template <u32 BLOCK_M, u32 BLOCK_N, u32 BLOCK_K, u32 kNumStages, u32 kNumMathWG, u32 kSwizzle, u32 kClusterM,
          u32 kClusterN, bool kRasterAlongM, u32 kGroup, bool kFastAccum, u32 kTypeA, u32 kTypeB, bool kTmaEpilogue,
          bool kSplitK>
__global__ void __launch_bounds__(128 * (kNumMathWG + 1), 1)
    fp8_gemm_kernel(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b,
                    const __grid_constant__ TmaDesc tma_d, u16* __restrict__ d, const float* __restrict__ scale_a,
                    const float* __restrict__ scale_b, u32 M, u32 N, u32 K, u64 ldd, u32 num_splits,
                    float* __restrict__ workspace, u32* __restrict__ tile_counters) {
  using T = Fp8GemmTraits<BLOCK_M, BLOCK_N, BLOCK_K, kNumStages, kNumMathWG, kSwizzle, kClusterM, kClusterN, kRasterAlongM,
                          kGroup, kFastAccum, kTypeA, kTypeB, kTmaEpilogue, kSplitK>;
  using Mma = ptx::WgmmaFp8<BLOCK_N>;

  // Shared memory, aligned up to 1024 bytes (T::kAlignPad of slack is part of the launch size).
  extern __shared__ __align__(16) u8 smem_raw[];
  const u32 raw_addr = smem_u32(smem_raw);
  u8* smem = smem_raw + (((raw_addr + 1023u) & ~1023u) - raw_addr);
  u8* smem_a = smem;
  u8* smem_b = smem + T::kOffB;
  u8* staging = smem + T::kOffStaging;
  u64* full_bar = reinterpret_cast<u64*>(smem + T::kOffBarriers);
  u64* empty_bar = full_bar + kNumStages;
  u32* split_flag = reinterpret_cast<u32*>(empty_bar + kNumStages);

  const u32 warp = threadIdx.x / 32;
  const u32 lane = threadIdx.x % 32;
  const u32 wg = threadIdx.x / 128;
  const u32 rank = T::kClusterSize > 1 ? ptx::cluster_cta_rank() : 0;
  const u32 rank_m = rank % kClusterM, rank_n = rank / kClusterM;

  if (threadIdx.x == 0) {
#pragma unroll
    for (u32 s = 0; s < kNumStages; ++s) {
      ptx::mbar_init(&full_bar[s], 1);
      ptx::mbar_init(&empty_bar[s], kNumMathWG * 4 * T::kClusterSize);
    }
    ptx::fence_barrier_init();
  }
  if (warp == kNumMathWG * 4 && lane == 0) {
    ptx::tma_prefetch_desc(&tma_a);
    ptx::tma_prefetch_desc(&tma_b);
    if constexpr (kTmaEpilogue) ptx::tma_prefetch_desc(&tma_d);
  }
  // Peers multicast into this CTA's barriers: all of them must be initialised cluster-wide first.
  if constexpr (T::kClusterSize > 1) {
    ptx::cluster_sync();
  } else {
    __syncthreads();
  }

  const TileScheduler<BLOCK_M, BLOCK_N, BLOCK_K, kClusterM, kClusterN, kRasterAlongM, kGroup> sched(M, N, K, num_splits);
  const u32 cluster_id = blockIdx.x / T::kClusterSize;
  const u32 num_clusters = gridDim.x / T::kClusterSize;

  if (wg == kNumMathWG) {
    // ---------------- producer warpgroup ----------------
    ptx::setmaxnreg_dec<T::kProducerRegs>();
    if (warp == kNumMathWG * 4 && lane == 0) {
      // CTAs sharing B (same n-block) are ranks rank_n * kClusterM + i; sharing A: rank_m + j * kClusterM.
      u16 mask_b = 0, mask_a = 0;
#pragma unroll
      for (u32 i = 0; i < kClusterM; ++i) mask_b |= u16(1u << (rank_n * kClusterM + i));
#pragma unroll
      for (u32 j = 0; j < kClusterN; ++j) mask_a |= u16(1u << (rank_m + j * kClusterM));
      u32 stage = 0, phase = 0;
      for (u32 unit = cluster_id; unit < sched.num_units; unit += num_clusters) {
        const WorkUnit w = sched.work(unit, rank_m, rank_n);
        const int a_row = int(w.m_block * BLOCK_M + rank_n * T::kSliceRowsA);
        const int b_row = int(w.n_block * BLOCK_N + rank_m * T::kSliceRowsB);
        for (u32 kb = w.k_begin; kb < w.k_end; ++kb) {
          ptx::mbar_wait(&empty_bar[stage], phase ^ 1);
          ptx::mbar_arrive_expect_tx(&full_bar[stage], T::kSmemAStage + T::kSmemBStage);
#pragma unroll
          for (u32 a = 0; a < T::kAtomsK; ++a) {
            const int k_idx = int(kb * BLOCK_K + a * kSwizzle);
            u8* dst_a = smem_a + stage * T::kSmemAStage + a * BLOCK_M * kSwizzle + rank_n * T::kSliceRowsA * kSwizzle;
            u8* dst_b = smem_b + stage * T::kSmemBStage + a * BLOCK_N * kSwizzle + rank_m * T::kSliceRowsB * kSwizzle;
            if constexpr (kClusterN > 1) {
              ptx::tma_load_2d_multicast(&tma_a, &full_bar[stage], dst_a, k_idx, a_row, mask_a);
            } else {
              ptx::tma_load_2d(&tma_a, &full_bar[stage], dst_a, k_idx, a_row);
            }
            if constexpr (kClusterM > 1) {
              ptx::tma_load_2d_multicast(&tma_b, &full_bar[stage], dst_b, k_idx, b_row, mask_b);
            } else {
              ptx::tma_load_2d(&tma_b, &full_bar[stage], dst_b, k_idx, b_row);
            }
          }
          if (++stage == kNumStages) stage = 0, phase ^= 1;
        }
      }
    }
  } else {
    // ---------------- consumer warpgroups ----------------
    ptx::setmaxnreg_inc<T::kMathRegs>();
    const float scale = __ldg(scale_a) * __ldg(scale_b);
    const bool pairs_aligned = (ldd % 2 == 0) && (reinterpret_cast<u64>(d) % 4 == 0);
    const u32 row0_in_tile = wg * T::kRowsPerWG;

    float acc[T::kMmaPerWG][T::kAccPerMma];
    // Promotion: each k-block accumulates into `part` on the tensor core, then is added into the
    // FP32 `acc` on CUDA cores. With kFastAccum `part` is unused (size 1 keeps the code uniform).
    float part[kFastAccum ? 1 : T::kMmaPerWG][kFastAccum ? 1 : T::kAccPerMma];

    u32 stage = 0, phase = 0;
    for (u32 unit = cluster_id; unit < sched.num_units; unit += num_clusters) {
      const WorkUnit w = sched.work(unit, rank_m, rank_n);
      if constexpr (!kFastAccum) {
#pragma unroll
        for (u32 j = 0; j < T::kMmaPerWG; ++j)
#pragma unroll
          for (u32 i = 0; i < T::kAccPerMma; ++i) acc[j][i] = 0.f;
      }

      for (u32 kb = w.k_begin; kb < w.k_end; ++kb) {
        ptx::mbar_wait(&full_bar[stage], phase);
        const u32 a_base = smem_u32(smem_a + stage * T::kSmemAStage);
        const u32 b_base = smem_u32(smem_b + stage * T::kSmemBStage);
        ptx::wgmma_fence();
#pragma unroll
        for (u32 s = 0; s < T::kStepsK; ++s) {
          // k-step s covers bytes [32*s, 32*s + 32) of the k-block: span (32*s)/kSwizzle, offset (32*s)%kSwizzle.
          const u32 atom = (32 * s) / kSwizzle, offset = (32 * s) % kSwizzle;
          const u64 desc_b = ptx::make_kmajor_desc<kSwizzle>(b_base + atom * BLOCK_N * kSwizzle + offset);
#pragma unroll
          for (u32 j = 0; j < T::kMmaPerWG; ++j) {
            const u32 row = row0_in_tile + 64 * j;
            const u64 desc_a = ptx::make_kmajor_desc<kSwizzle>(a_base + atom * BLOCK_M * kSwizzle + row * kSwizzle + offset);
            if constexpr (kFastAccum) {
              Mma::template mma<T::kTypes>(acc[j], desc_a, desc_b, (kb != w.k_begin || s != 0) ? 1u : 0u);
            } else {
              Mma::template mma<T::kTypes>(part[j], desc_a, desc_b, s != 0 ? 1u : 0u);
            }
          }
        }
        ptx::wgmma_commit();
        ptx::wgmma_wait<0>();
        // The stage has been read by the tensor cores: release it to every producer that writes it
        // (lane i arrives on CTA i's barrier).
        if constexpr (T::kClusterSize == 1) {
          if (lane == 0) ptx::mbar_arrive(&empty_bar[stage]);
        } else {
          if (lane < T::kClusterSize) ptx::mbar_arrive_cluster(&empty_bar[stage], lane);
        }
        if (++stage == kNumStages) stage = 0, phase ^= 1;

#pragma unroll
        for (u32 j = 0; j < T::kMmaPerWG; ++j)
#pragma unroll
          for (u32 i = 0; i < T::kAccPerMma; ++i) {
            if constexpr (kFastAccum) {
              ptx::fence_operand(acc[j][i]);
            } else {
              ptx::fence_operand(part[j][i]);
              acc[j][i] += part[j][i];
            }
          }
      }

      // The spare CTAs of an edge cluster computed zeros for a tile outside D: nothing to store.
      if (!sched.valid(w)) continue;
      if constexpr (kSplitK) {
        if (num_splits > 1) {
          const u32 tile = w.m_block * sched.num_n_blocks + w.n_block;
          if (!split_k_reduce<T::kMmaPerWG, T::kAccPerMma, T::kMathThreads>(acc, workspace, tile_counters, split_flag, tile,
                                                                           w.split, num_splits))
            continue;
        }
      }
      const u32 m0 = w.m_block * BLOCK_M + row0_in_tile, n0 = w.n_block * BLOCK_N;
      if constexpr (kTmaEpilogue) {
        store_tile_tma<T::kMmaPerWG, T::kAccPerMma, T::kRowsPerWG>(acc, staging + wg * T::kRowsPerWG * BLOCK_N * 2, &tma_d,
                                                                    m0, n0, scale, wg);
      } else {
        store_tile_direct<T::kMmaPerWG, T::kAccPerMma>(acc, d, M, N, ldd, m0, n0, scale, pairs_aligned);
      }
    }
    if constexpr (kTmaEpilogue) finish_tma_stores();
  }

  // No CTA may leave while a peer can still arrive on its barriers or multicast into its memory.
  if constexpr (T::kClusterSize > 1) {
    __syncwarp();
    ptx::cluster_sync();
  }
}

}  // namespace dgt::gemm
