// Direct epilogue: scale the FP32 accumulators, round to BF16 and store them from registers with
// predicates for the M and N tails (no shared memory, any ldd >= N).
#pragma once
#include "common.cuh"

namespace dgt::gemm {

/// Two floats to packed BF16 (round to nearest even); `lo` lands in the lower 16 bits.
__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ u16 to_bf16(float x) {
  u16 r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
  return r;
}

/// Stores one warpgroup's accumulators. `m0` is the warpgroup's first row, `n0` the tile's first
/// column. Thread t holds, for m64 slice j, acc[j][4*i + 2*h + c] = D[m0 + 64*j + 16*(t/32) +
/// (t%32)/4 + 8*h][n0 + 8*i + 2*(t%4) + c] (the WGMMA m64nNk32 fragment layout). Pairs of columns are
/// written as one 4-byte store when D's rows are 4-byte aligned (`pairs_aligned`).
template <u32 kMmaPerWG, u32 kAccPerMma>
__device__ __forceinline__ void store_tile_direct(const float (&acc)[kMmaPerWG][kAccPerMma], u16* __restrict__ d, u32 M,
                                                  u32 N, u64 ldd, u32 m0, u32 n0, float scale, bool pairs_aligned) {
  const u32 t = threadIdx.x % 128;
  const u32 row_in_slice = (t / 32) * 16 + (t % 32) / 4;
  const u32 col_in_group = (t % 4) * 2;
#pragma unroll
  for (u32 j = 0; j < kMmaPerWG; ++j) {
#pragma unroll
    for (u32 h = 0; h < 2; ++h) {
      const u32 row = m0 + 64 * j + row_in_slice + 8 * h;
      if (row >= M) continue;
      u16* drow = d + static_cast<u64>(row) * ldd;
#pragma unroll
      for (u32 i = 0; i < kAccPerMma / 4; ++i) {
        const u32 col = n0 + 8 * i + col_in_group;
        const float v0 = acc[j][4 * i + 2 * h] * scale;
        const float v1 = acc[j][4 * i + 2 * h + 1] * scale;
        if (pairs_aligned && col + 1 < N) {
          *reinterpret_cast<u32*>(drow + col) = pack_bf16x2(v0, v1);
        } else {
          if (col < N) drow[col] = to_bf16(v0);
          if (col + 1 < N) drow[col + 1] = to_bf16(v1);
        }
      }
    }
  }
}

}  // namespace dgt::gemm
