// The FP8 GEMM kernel family for sm_90a: persistent, warp-specialized, TMA + WGMMA.
//
//   D[M,N] = (scale_a * scale_b) * A[M,K] * B[N,K]^T
//   A, B: e4m3 or e5m2, K-major (row-major M x K and N x K), read through TMA descriptors
//   D: BF16 row-major with leading dimension ldd; FP32 accumulation.
//
// Roles: warpgroups 0..kNumMathWG-1 are consumers (WGMMA + epilogue), warpgroup kNumMathWG is the
// producer, in which one thread issues the TMA loads into a kNumStages ring of shared-memory stages.
// Each stage has a full barrier (arrive_expect_tx by the producer, complete_tx by TMA) and an empty
// barrier (one arrival per consumer warp once its WGMMAs have read the stage).
#pragma once
#include "common.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "gemm/epilogue_direct.cuh"
#include "gemm/fp8_gemm_traits.cuh"
#include "gemm/scheduler.cuh"

namespace dgt::gemm {

template <u32 BLOCK_M, u32 BLOCK_N, u32 BLOCK_K, u32 kNumStages, u32 kNumMathWG, u32 kSwizzle, u32 kClusterM,
          u32 kClusterN, bool kRasterAlongM, u32 kGroup, bool kFastAccum, u32 kTypeA, u32 kTypeB>
__global__ void __launch_bounds__(128 * (kNumMathWG + 1), 1)
    fp8_gemm_kernel(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b, u16* __restrict__ d,
                    const float* __restrict__ scale_a, const float* __restrict__ scale_b, u32 M, u32 N, u32 K, u64 ldd) {
  using T = Fp8GemmTraits<BLOCK_M, BLOCK_N, BLOCK_K, kNumStages, kNumMathWG, kSwizzle, kClusterM, kClusterN, kRasterAlongM,
                          kGroup, kFastAccum, kTypeA, kTypeB>;
  using Mma = ptx::WgmmaFp8<BLOCK_N>;

  // Shared memory, aligned up to 1024 bytes (T::kAlignPad of slack is part of the launch size).
  extern __shared__ __align__(16) u8 smem_raw[];
  const u32 raw_addr = smem_u32(smem_raw);
  u8* smem = smem_raw + (((raw_addr + 1023u) & ~1023u) - raw_addr);
  u8* smem_a = smem;
  u8* smem_b = smem_a + kNumStages * T::kSmemAStage;
  u64* full_bar = reinterpret_cast<u64*>(smem_b + kNumStages * T::kSmemBStage);
  u64* empty_bar = full_bar + kNumStages;

  const u32 warp = threadIdx.x / 32;
  const u32 lane = threadIdx.x % 32;
  const u32 wg = threadIdx.x / 128;

  if (threadIdx.x == 0) {
#pragma unroll
    for (u32 s = 0; s < kNumStages; ++s) {
      ptx::mbar_init(&full_bar[s], 1);
      ptx::mbar_init(&empty_bar[s], kNumMathWG * 4);
    }
    ptx::fence_barrier_init();
  }
  if (warp == kNumMathWG * 4 && lane == 0) {
    ptx::tma_prefetch_desc(&tma_a);
    ptx::tma_prefetch_desc(&tma_b);
  }
  __syncthreads();

  const TileScheduler<BLOCK_M, BLOCK_N, kRasterAlongM, kGroup> sched(M, N);
  const u32 num_k_blocks = ceil_div(K, BLOCK_K);

  if (wg == kNumMathWG) {
    // ---------------- producer warpgroup ----------------
    ptx::setmaxnreg_dec<T::kProducerRegs>();
    if (warp == kNumMathWG * 4 && lane == 0) {
      u32 stage = 0, phase = 0;
      for (u32 tile = blockIdx.x; tile < sched.num_tiles; tile += gridDim.x) {
        u32 m_block, n_block;
        sched.tile_coords(tile, m_block, n_block);
        const int m_idx = static_cast<int>(m_block * BLOCK_M);
        const int n_idx = static_cast<int>(n_block * BLOCK_N);
        for (u32 kb = 0; kb < num_k_blocks; ++kb) {
          ptx::mbar_wait(&empty_bar[stage], phase ^ 1);
          ptx::mbar_arrive_expect_tx(&full_bar[stage], T::kSmemAStage + T::kSmemBStage);
          const int k_idx = static_cast<int>(kb * BLOCK_K);
#pragma unroll
          for (u32 a = 0; a < T::kAtomsK; ++a) {
            ptx::tma_load_2d(&tma_a, &full_bar[stage], smem_a + stage * T::kSmemAStage + a * BLOCK_M * kSwizzle,
                             k_idx + static_cast<int>(a * kSwizzle), m_idx);
            ptx::tma_load_2d(&tma_b, &full_bar[stage], smem_b + stage * T::kSmemBStage + a * BLOCK_N * kSwizzle,
                             k_idx + static_cast<int>(a * kSwizzle), n_idx);
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
    for (u32 tile = blockIdx.x; tile < sched.num_tiles; tile += gridDim.x) {
      u32 m_block, n_block;
      sched.tile_coords(tile, m_block, n_block);
      if constexpr (!kFastAccum) {
#pragma unroll
        for (u32 j = 0; j < T::kMmaPerWG; ++j)
#pragma unroll
          for (u32 i = 0; i < T::kAccPerMma; ++i) acc[j][i] = 0.f;
      }

      for (u32 kb = 0; kb < num_k_blocks; ++kb) {
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
              Mma::template mma<T::kTypes>(acc[j], desc_a, desc_b, (kb | s) != 0 ? 1u : 0u);
            } else {
              Mma::template mma<T::kTypes>(part[j], desc_a, desc_b, s != 0 ? 1u : 0u);
            }
          }
        }
        ptx::wgmma_commit();
        ptx::wgmma_wait<0>();
        // The stage's bytes have been consumed by the tensor cores: hand it back to the producer.
        if (lane == 0) ptx::mbar_arrive(&empty_bar[stage]);
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

      store_tile_direct<T::kMmaPerWG, T::kAccPerMma>(acc, d, M, N, ldd, m_block * BLOCK_M + row0_in_tile,
                                                       n_block * BLOCK_N, scale, pairs_aligned);
    }
  }
}

}  // namespace dgt::gemm
