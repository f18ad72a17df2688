// TMA-store epilogue: each consumer warpgroup writes its scaled BF16 rows into a 128-byte-swizzled
// staging tile in shared memory, then one thread stores it with cp.async.bulk.tensor (out-of-bounds
// rows and columns of the box are clipped by TMA, so M/N tails need no predicates).
#pragma once
#include "common.cuh"
#include "gemm/epilogue_direct.cuh"
#include "ptx/tma.cuh"

namespace dgt::gemm {

/// Staging layout of one warpgroup: BLOCK_N / 64 chunks, chunk c = columns [64c, 64c + 64) as
/// [kRows][128 bytes] with 16-byte unit u of row r stored at unit u ^ (r % 8) (CU_TENSOR_MAP_SWIZZLE_128B,
/// which the D tensor map uses with box {64, kRows}). A warp's 4-byte stores for one (j, h, i) hit 8 rows
/// x 4 threads = 32 distinct banks. Named barrier id 2 + wg orders the warpgroup's threads.
template <u32 kMmaPerWG, u32 kAccPerMma, u32 kRows>
__device__ __forceinline__ void store_tile_tma(const float (&acc)[kMmaPerWG][kAccPerMma], u8* staging, const TmaDesc* tma_d,
                                               u32 m0, u32 n0, float scale, u32 wg) {
  constexpr u32 kChunks = kAccPerMma * 2 / 64;
  constexpr u32 kChunkBytes = kRows * 128;
  const u32 t = threadIdx.x % 128;
  // The previous tile's bulk store must have finished reading the staging tile.
  if (t == 0) ptx::bulk_wait_group_read<0>();
  ptx::named_barrier_sync(2 + wg, 128);
  const u32 row_in_slice = (t / 32) * 16 + (t % 32) / 4;
#pragma unroll
  for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
    for (u32 h = 0; h < 2; ++h) {
      const u32 r = 64 * j + row_in_slice + 8 * h;
#pragma unroll
      for (u32 i = 0; i < kAccPerMma / 4; ++i) {
        const u32 col = 8 * i + (t % 4) * 2;  // column inside the tile
        const u32 chunk = col / 64, unit = (col % 64) / 8;
        u8* dst = staging + chunk * kChunkBytes + r * 128 + ((unit ^ (r % 8)) * 16) + (t % 4) * 4;
        *reinterpret_cast<u32*>(dst) = pack_bf16x2(acc[j][4 * i + 2 * h] * scale, acc[j][4 * i + 2 * h + 1] * scale);
      }
    }
  ptx::fence_proxy_async_smem();
  ptx::named_barrier_sync(2 + wg, 128);
  if (t == 0) {
#pragma unroll
    for (u32 c = 0; c < kChunks; ++c) ptx::tma_store_2d(tma_d, staging + c * kChunkBytes, int(n0 + 64 * c), int(m0));
    ptx::bulk_commit_group();
  }
}

/// Before the CTA exits, the issuing thread waits until its stores have read shared memory.
__device__ __forceinline__ void finish_tma_stores() {
  if (threadIdx.x % 128 == 0) ptx::bulk_wait_group_read<0>();
}

}  // namespace dgt::gemm
