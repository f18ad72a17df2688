// Reference GEMM on CUDA cores for verification: Dref[M,N] (FP32, ld = N) = the scaled product of the
// same FP8 bytes and scales as the kernel under test (scale modes as in gemm/scales.cuh: per-tensor,
// channel, block 1D2D, block1d1d), decoding with util::fp8_to_float and accumulating in FP32 with fmaf
// (a different order and unit from the tensor cores, so agreement is evidence, not tautology). Block
// modes sum each 128-wide k granule separately and add it times its scales, as the definition says.
#pragma once
#include "common.cuh"
#include "util/fp8.cuh"

namespace dgt::ref {
constexpr u32 kTile = 64;   // outputs per block side
constexpr u32 kTileK = 32;  // K per shared-memory step
}  // namespace dgt::ref

/// Block (16,16), grid (ceil(N/64), ceil(M/64)); each thread computes a 4x4 patch.
extern "C" __global__ void __launch_bounds__(256) dgt_ref_gemm(const dgt::u8* __restrict__ a, const dgt::u8* __restrict__ b,
                                                               float* __restrict__ dref, dgt::u32 M, dgt::u32 N, dgt::u32 K,
                                                               dgt::u64 lda, dgt::u64 ldb, const float* scale_a,
                                                               const float* scale_b, dgt::u32 type_a, dgt::u32 type_b,
                                                               dgt::u32 scale_mode, dgt::u32 ld_sa, dgt::u32 ld_sb) {
  using namespace dgt;
  __shared__ float lut_a[256], lut_b[256];
  __shared__ float sa[ref::kTileK][ref::kTile + 1], sb[ref::kTileK][ref::kTile + 1];
  const u32 tid = threadIdx.y * 16 + threadIdx.x;
  lut_a[tid] = util::fp8_to_float(u8(tid), type_a);
  lut_b[tid] = util::fp8_to_float(u8(tid), type_b);
  const u32 m_base = blockIdx.y * ref::kTile, n_base = blockIdx.x * ref::kTile;
  float acc[4][4] = {}, part[4][4] = {};
  const bool block = scale_mode == 2 || scale_mode == 3;
  __syncthreads();
  for (u32 k0 = 0; k0 < K; k0 += ref::kTileK) {
    // 64 rows x 32 k of each operand: 2048 elements, 8 per thread; out of range -> 0.
    for (u32 e = tid; e < ref::kTile * ref::kTileK; e += 256) {
      const u32 r = e / ref::kTileK, k = e % ref::kTileK;
      const u32 m = m_base + r, n = n_base + r, kk = k0 + k;
      sa[k][r] = (m < M && kk < K) ? lut_a[a[u64(m) * lda + kk]] : 0.f;
      sb[k][r] = (n < N && kk < K) ? lut_b[b[u64(n) * ldb + kk]] : 0.f;
    }
    __syncthreads();
#pragma unroll 8
    for (u32 k = 0; k < ref::kTileK; ++k) {
      float av[4], bv[4];
#pragma unroll
      for (u32 i = 0; i < 4; ++i) av[i] = sa[k][threadIdx.y + 16 * i], bv[i] = sb[k][threadIdx.x + 16 * i];
#pragma unroll
      for (u32 i = 0; i < 4; ++i)
#pragma unroll
        for (u32 j = 0; j < 4; ++j) part[i][j] = fmaf(av[i], bv[j], part[i][j]);
    }
    __syncthreads();
    // End of a 128-wide granule (or of K): fold the granule's sum into acc, times its block scales.
    const u32 k_next = k0 + ref::kTileK;
    if (k_next % 128 == 0 || k_next >= K) {
      const u32 g = k0 / 128;
#pragma unroll
      for (u32 i = 0; i < 4; ++i)
#pragma unroll
        for (u32 j = 0; j < 4; ++j) {
          const u32 m = m_base + threadIdx.y + 16 * i, n = n_base + threadIdx.x + 16 * j;
          float f = 1.f;
          if (block && m < M && n < N)
            f = scale_a[u64(g) * ld_sa + m] * (scale_mode == 2 ? scale_b[u64(n / 128) * ld_sb + g] : scale_b[u64(g) * ld_sb + n]);
          acc[i][j] = fmaf(part[i][j], f, acc[i][j]);
          part[i][j] = 0.f;
        }
    }
  }
#pragma unroll
  for (u32 i = 0; i < 4; ++i)
#pragma unroll
    for (u32 j = 0; j < 4; ++j) {
      const u32 m = m_base + threadIdx.y + 16 * i, n = n_base + threadIdx.x + 16 * j;
      if (m >= M || n >= N) continue;
      const float scale = scale_mode == 0 ? *scale_a * *scale_b : scale_mode == 1 ? scale_a[m] * scale_b[n] : 1.f;
      dref[u64(m) * N + n] = acc[i][j] * scale;
    }
}
