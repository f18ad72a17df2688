// Direct epilogue: scale the FP32 accumulators, apply the fused epilogue (bias, activation; e4m3: scale_d
// and amax), convert to the output type (bf16, f32, e4m3) and store from registers with predicates for
// the M and N tails (no shared memory, any ldd >= N).
#pragma once
#include "common.cuh"
#include "gemm/epilogue_ops.cuh"

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

/// Every row is stored (below M): the dense kernels' row check.
struct AllRows {
  __device__ __forceinline__ constexpr bool operator()(u32) const { return true; }
};

/// Stores one warpgroup's accumulators. `m0` is the warpgroup's first row, `n0` the tile's first
/// column. Thread t holds, for m64 slice j, acc[j][4*i + 2*h + c] = D[m0 + 64*j + 16*(t/32) +
/// (t%32)/4 + 8*h][n0 + 8*i + 2*(t%4) + c] (the WGMMA m64nNk32 fragment layout). Each element goes through
/// `op` (bias, activation, e4m3 scale_d and amax; gemm/epilogue_ops.cuh) and is converted to kOutType.
/// Pairs of columns are written as one store (4 bytes bf16, 8 bytes f32, 2 bytes e4m3) when D's rows and
/// base allow it (`pairs_aligned`: ldd even and d aligned to two elements). `rows(row)` (a functor) can refuse
/// rows below M as well: the contiguous grouped kernels' padding rows (gemm/grouped_scheduler.cuh ContiguousRows).
template <u32 kMmaPerWG, u32 kAccPerMma, u32 kOutType, u32 kBiasBatch, class Op, class Rows = AllRows>
__device__ __forceinline__ void store_tile_direct(const float (&acc)[kMmaPerWG][kAccPerMma], void* __restrict__ d_raw,
                                                  u32 M, u32 N, u64 ldd, u32 m0, u32 n0, float scale, bool pairs_aligned,
                                                  Op& op, const Rows& rows = Rows{}) {
  const u32 t = threadIdx.x % 128;
  const u32 row_in_slice = (t / 32) * 16 + (t % 32) / 4;
  const u32 col_in_group = (t % 4) * 2;
  // Bias of this thread's two columns of every column group, loaded before the first store (TileBias).
  constexpr u32 kGroups = kAccPerMma / 4;
  TileBias<kGroups, kBiasBatch, Op> bias(op, n0, col_in_group, N);
#pragma unroll
  for (u32 i = 0; i < kGroups; ++i) {
    const u32 col = n0 + 8 * i + col_in_group;
    const u32 w = bias.next(i);
    const float b0 = bias_lo(w), b1 = bias_hi(w);
#pragma unroll
    for (u32 j = 0; j < kMmaPerWG; ++j) {
#pragma unroll
      for (u32 h = 0; h < 2; ++h) {
        const u32 row = m0 + 64 * j + row_in_slice + 8 * h;
        const bool row_ok = row < M && rows(row);
        const float v0 = op.apply(acc[j][4 * i + 2 * h], scale, b0, row_ok && col < N);
        const float v1 = op.apply(acc[j][4 * i + 2 * h + 1], scale, b1, row_ok && col + 1 < N);
        if (!row_ok) continue;
        const u64 at = static_cast<u64>(row) * ldd + col;
        if constexpr (kOutType == kOutF32) {
          float* drow = static_cast<float*>(d_raw) + at;
          if (pairs_aligned && col + 1 < N) {
            *reinterpret_cast<float2*>(drow) = make_float2(v0, v1);
          } else {
            if (col < N) drow[0] = v0;
            if (col + 1 < N) drow[1] = v1;
          }
        } else if constexpr (kOutType == kOutE4M3) {
          u8* drow = static_cast<u8*>(d_raw) + at;
          const u16 packed = pack_e4m3x2(v0, v1);
          if (pairs_aligned && col + 1 < N) {
            *reinterpret_cast<u16*>(drow) = packed;
          } else {
            if (col < N) drow[0] = u8(packed & 0xff);
            if (col + 1 < N) drow[1] = u8(packed >> 8);
          }
        } else {
          u16* drow = static_cast<u16*>(d_raw) + at;
          if (pairs_aligned && col + 1 < N) {
            *reinterpret_cast<u32*>(drow) = pack_bf16x2(v0, v1);
          } else {
            if (col < N) drow[0] = to_bf16(v0);
            if (col + 1 < N) drow[1] = to_bf16(v1);
          }
        }
      }
    }
  }
}

}  // namespace dgt::gemm
