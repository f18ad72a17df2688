// Swap-AB TMA-store epilogue. A swap-AB kernel computes the transposed problem D^T = B A^T (the host exchanges M and
// N, A and B: dgt::kernel_problem), so a warpgroup's accumulators hold a tile of D^T: its rows (the kernel's M, 64
// per m64 slice) are columns of D, and its columns (the kernel's N, BLOCK_N of them) are rows of D. This epilogue
// writes the tile back transposed: stmatrix .trans turns each 8x8 block of the fragment around on its way into a
// staging tile laid out as D's rows, and TMA stores it into D.
//
// Staging, per m64 slice j of the warpgroup: BLOCK_N rows (rows of D) x 64 BF16 columns (columns of D) = 128 bytes,
// 128-byte swizzled (16-byte unit u of row r at unit u ^ (r % 8), CU_TENSOR_MAP_SWIZZLE_128B), at j x BLOCK_N x 128
// bytes into the warpgroup's staging (Fp8GemmTraits::kStagingPerWG = kMmaPerWG x 64 x BLOCK_N x 2 bytes, the same
// size as the plain epilogue's). D's tensor map has box {64, BLOCK_N} and that swizzle (src/launch/
// gemm_launch_plan.cpp); TMA clips the rows past M and the columns past N of D (rule P10 keeps N a multiple of 8,
// so no store reaches D's padding). stmatrix blocks are 8 rows x 16 bytes, one per bank group after the
// swizzle: no bank conflicts.
#pragma once
#include "common.cuh"
#include "gemm/epilogue_direct.cuh"
#include "gemm/epilogue_ops.cuh"
#include "ptx/tma.cuh"

namespace dgt::gemm {

/// Stores this warpgroup's tile of D^T (kernel rows m0.. = D columns, kernel columns n0.. = D rows) transposed into
/// D through `staging` and `tma_d`. Each element goes through `op` (activation; R26 allows no bias and BF16 output
/// only). Named barrier 2 + wg orders the warpgroup's threads, as in store_tile_tma.
template <u32 kMmaPerWG, u32 kAccPerMma, class Op>
__device__ __forceinline__ void store_tile_tma_swap(const float (&acc)[kMmaPerWG][kAccPerMma], u8* staging,
                                                    const TmaDesc* tma_d, u32 m0, u32 n0, float scale, u32 wg, Op& op) {
  constexpr u32 kCols = kAccPerMma * 2;  // the kernel's BLOCK_N: rows of D in the tile
  constexpr u32 kGroups = kCols / 8;     // 8-column groups of the fragment
  constexpr u32 kSliceBytes = kCols * 128;
  static_assert(kCols % 8 == 0, "BLOCK_N must be a multiple of 8");
  const u32 t = threadIdx.x % 128;
  const u32 warp = t / 32, lane = t % 32;
  // stmatrix: lanes 8q..8q+7 address matrix q = (group i + q / 2, fragment rows 16 warp + 8 (q % 2) ..); with .trans
  // lane 8q + r addresses that matrix's column r, which is row 8 (i + q / 2) + r of D's tile, and its 8 values are
  // D columns 16 warp + 8 (q % 2) .. + 7 of the slice: 16-byte unit 2 warp + q % 2.
  const u32 q = lane / 8, r = lane % 8;
  const u32 unit = (2 * warp + q % 2) ^ r;  // swizzled: the staging row is 8 (i + q / 2) + r, so row % 8 = r
  const u32 base = smem_u32(staging) + (8 * (q / 2) + r) * 128 + unit * 16;
  // The previous tile's bulk store must have finished reading the staging tile.
  if (t == 0) ptx::bulk_wait_group_read<0>();
  ptx::named_barrier_sync(2 + wg, 128);
  auto value = [&](u32 j, u32 i, u32 h, u32 c) { return op.apply(acc[j][4 * i + 2 * h + c], scale, 0.f, true); };
#pragma unroll
  for (u32 j = 0; j < kMmaPerWG; ++j) {
#pragma unroll
    for (u32 i = 0; i < kGroups; i += 2) {
      const u32 addr = base + j * kSliceBytes + i * 8 * 128;
      const u32 r0 = pack_bf16x2(value(j, i, 0, 0), value(j, i, 0, 1));
      const u32 r1 = pack_bf16x2(value(j, i, 1, 0), value(j, i, 1, 1));
      if (i + 1 < kGroups) {
        const u32 r2 = pack_bf16x2(value(j, i + 1, 0, 0), value(j, i + 1, 0, 1));
        const u32 r3 = pack_bf16x2(value(j, i + 1, 1, 0), value(j, i + 1, 1, 1));
        ptx::stmatrix_x4_trans(addr, r0, r1, r2, r3);
      } else {
        ptx::stmatrix_x2_trans(addr, r0, r1);  // lanes 0-15 address matrices 0 and 1 (q / 2 = 0)
      }
    }
  }
  ptx::fence_proxy_async_smem();
  ptx::named_barrier_sync(2 + wg, 128);
  if (t == 0) {
#pragma unroll
    for (u32 j = 0; j < kMmaPerWG; ++j) ptx::tma_store_2d(tma_d, staging + j * kSliceBytes, int(m0 + 64 * j), int(n0));
    ptx::bulk_commit_group();
  }
}

}  // namespace dgt::gemm
