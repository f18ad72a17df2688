// TMA-store epilogue, for every BLOCK_N that is a multiple of 8: each consumer warpgroup writes its
// scaled BF16 rows with stmatrix into a swizzled staging tile in shared memory, then one thread stores
// it with cp.async.bulk.tensor, one bulk store per swizzle-wide column band (out-of-bounds rows and
// columns of a box are clipped by TMA, so M/N tails need no predicates). The direct epilogue stays the
// fallback for a D whose rows are not 16-byte multiples (pruning rule P3).
#pragma once
#include "common.cuh"
#include "gemm/epilogue_direct.cuh"
#include "ptx/tma.cuh"

namespace dgt::gemm {

/// Staging layout of one warpgroup (kRows rows x BLOCK_N columns of BF16, BLOCK_N = 2 * kAccPerMma):
///  - kSwizzle = 128, 64 or 32 (the largest dividing BLOCK_N * 2; Fp8GemmTraits::kEpiSwizzle): BLOCK_N * 2
///    / kSwizzle column bands, band b = columns [b * kSwizzle / 2, ...) as [kRows][kSwizzle bytes] with
///    16-byte unit u of row r stored at unit u ^ ((r * kSwizzle / 128) % (kSwizzle / 16)), the
///    CU_TENSOR_MAP_SWIZZLE_<kSwizzle>B pattern (address bits [4, 4 + log2(kSwizzle / 16)) XOR bits [7, ...)).
///    The D tensor map has box {kSwizzle / 2, kRows} and that swizzle (src/jit/gemm_kernel.cpp).
///  - kSwizzle = 0 (BLOCK_N an odd multiple of 8): one band, [kRows][BLOCK_N * 2 bytes] unswizzled, box
///    {BLOCK_N, kRows}. The row pitch is an odd multiple of 16 bytes, so 8 consecutive rows hit 8
///    distinct 16-byte bank groups.
/// Either way each 8x8 stmatrix block (8 rows x 16 bytes) covers all 32 banks once: no conflicts.
/// Every band starts at a multiple of 1024 bytes (kRows >= 64), as the swizzle pattern requires.
/// Named barrier id 2 + wg orders the warpgroup's threads.
template <u32 kMmaPerWG, u32 kAccPerMma, u32 kRows, u32 kSwizzle>
__device__ __forceinline__ void store_tile_tma(const float (&acc)[kMmaPerWG][kAccPerMma], u8* staging, const TmaDesc* tma_d,
                                               u32 m0, u32 n0, float scale, u32 wg) {
  constexpr u32 kCols = kAccPerMma * 2;                     // BLOCK_N
  constexpr u32 kGroups = kCols / 8;                        // 8-column groups (one 8x8 matrix per row block)
  constexpr u32 kRowBytes = kSwizzle ? kSwizzle : kCols * 2;
  constexpr u32 kBandCols = kRowBytes / 2;
  constexpr u32 kBands = kCols / kBandCols;
  constexpr u32 kBandBytes = kRows * kRowBytes;
  static_assert(kCols % 8 == 0 && kCols % kBandCols == 0, "staging bands must tile BLOCK_N");
  const u32 t = threadIdx.x % 128;
  const u32 warp = t / 32, lane = t % 32;
  const u32 base = smem_u32(staging);
  // The previous tile's bulk store must have finished reading the staging tile.
  if (t == 0) ptx::bulk_wait_group_read<0>();
  ptx::named_barrier_sync(2 + wg, 128);

  // Lane L addresses row L % 8 of matrix q = L / 8: h = q % 2 picks the fragment's upper 8 rows, q / 2
  // the second 8-column group of an x4 store.
  const u32 q = lane / 8;
  auto address = [&](u32 row, u32 group) -> u32 {
    const u32 byte = group * 16;  // byte offset of the 16-byte unit inside the full staging row
    const u32 band = byte / kRowBytes, unit = (byte % kRowBytes) / 16;
    const u32 swz = kSwizzle ? ((row * kSwizzle / 128) % (kSwizzle ? kSwizzle / 16 : 1u)) : 0u;
    return base + band * kBandBytes + row * kRowBytes + ((unit ^ swz) * 16);
  };
#pragma unroll
  for (u32 j = 0; j < kMmaPerWG; ++j) {
    const u32 row = 64 * j + 16 * warp + 8 * (q % 2) + lane % 8;
#pragma unroll
    for (u32 i = 0; i + 1 < kGroups; i += 2) {
      ptx::stmatrix_x4(address(row, i + q / 2), pack_bf16x2(acc[j][4 * i] * scale, acc[j][4 * i + 1] * scale),
                       pack_bf16x2(acc[j][4 * i + 2] * scale, acc[j][4 * i + 3] * scale),
                       pack_bf16x2(acc[j][4 * i + 4] * scale, acc[j][4 * i + 5] * scale),
                       pack_bf16x2(acc[j][4 * i + 6] * scale, acc[j][4 * i + 7] * scale));
    }
    if constexpr (kGroups % 2 == 1) {
      constexpr u32 i = kGroups - 1;
      ptx::stmatrix_x2(address(row, i), pack_bf16x2(acc[j][4 * i] * scale, acc[j][4 * i + 1] * scale),
                       pack_bf16x2(acc[j][4 * i + 2] * scale, acc[j][4 * i + 3] * scale));
    }
  }
  ptx::fence_proxy_async_smem();
  ptx::named_barrier_sync(2 + wg, 128);
  if (t == 0) {
#pragma unroll
    for (u32 b = 0; b < kBands; ++b) ptx::tma_store_2d(tma_d, staging + b * kBandBytes, int(n0 + b * kBandCols), int(m0));
    ptx::bulk_commit_group();
  }
}

/// Before the CTA exits, the issuing thread waits until its stores have read shared memory.
__device__ __forceinline__ void finish_tma_stores() {
  if (threadIdx.x % 128 == 0) ptx::bulk_wait_group_read<0>();
}

}  // namespace dgt::gemm
