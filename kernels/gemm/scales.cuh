// Scale modes of the FP8 GEMM (src/problem/problem.hpp, ScaleMode, documents the layouts):
//   0 per-tensor: D = sa[0] * sb[0] * acc, one multiply in the epilogue.
//   1 channel:    D[m,n] = sa[m] * sb[n] * acc[m,n], applied to the FP32 accumulators before the epilogue.
//   2 block:      (DeepGEMM 1D2D) each 128-wide k granule's tensor-core partial sum is multiplied by
//                 sa[g][m] * sb[n / 128][g] as it is promoted into the FP32 accumulators.
//   3 block1d1d:  the same with sb[g][n] per output column.
// Fragment layout (WGMMA m64nNk32, as in epilogue_direct.cuh): thread t of a warpgroup holds, for m64
// slice j, acc[j][4*i + 2*h + c] = D[m0 + 64*j + 16*(t/32) + (t%32)/4 + 8*h][n0 + 8*i + 2*(t%4) + c].
#pragma once
#include "common.cuh"
#include "ptx/wgmma.cuh"

namespace dgt::gemm {

enum : u32 { kScalePerTensor = 0, kScaleChannel = 1, kScaleBlock = 2, kScaleBlock1d1d = 3 };
constexpr u32 kScaleGranule = 128;

__device__ __forceinline__ u32 fragment_row(u32 t) { return (t / 32) * 16 + (t % 32) / 4; }
__device__ __forceinline__ u32 fragment_col(u32 t) { return (t % 4) * 2; }

/// Channel mode: acc[m,n] *= sa[m] * sb[n] for this thread's fragment (rows >= M and columns >= N
/// get 0; the epilogue does not store them). `m0`: the warpgroup's first row, `n0`: the tile's first column.
template <u32 kMmaPerWG, u32 kAccPerMma>
__device__ __forceinline__ void apply_channel_scales(float (&acc)[kMmaPerWG][kAccPerMma], const float* __restrict__ sa,
                                                     const float* __restrict__ sb, u32 M, u32 N, u32 m0, u32 n0) {
  const u32 t = threadIdx.x % 128;
  float ra[kMmaPerWG][2];
#pragma unroll
  for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
    for (u32 h = 0; h < 2; ++h) {
      const u32 row = m0 + 64 * j + fragment_row(t) + 8 * h;
      ra[j][h] = row < M ? __ldg(sa + row) : 0.f;
    }
#pragma unroll
  for (u32 i = 0; i < kAccPerMma / 4; ++i)
#pragma unroll
    for (u32 c = 0; c < 2; ++c) {
      const u32 col = n0 + 8 * i + fragment_col(t) + c;
      const float rb = col < N ? __ldg(sb + col) : 0.f;
#pragma unroll
      for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
        for (u32 h = 0; h < 2; ++h) acc[j][4 * i + 2 * h + c] *= ra[j][h] * rb;
    }
}

/// Block modes: the promotion acc += partial * sa[g][row] * sb(g, col). fetch(g) loads the scales of
/// granule g into registers (issue it before the WGMMA wait, so the loads overlap it); promote() then
/// folds a retired partial buffer into acc with them. One object per consumer thread; begin_tile() per
/// work unit. Rows >= M and columns >= N use scale 0 (never stored).
template <u32 kMode, u32 kMmaPerWG, u32 kAccPerMma>
struct BlockScaler {
  static constexpr u32 kGroups = kAccPerMma / 4;  // 8-column groups of the tile (BLOCK_N / 8)
  // 128-column blocks of B a tile can touch: a tile of BLOCK_N columns starting anywhere.
  static constexpr u32 kMaxNBlocks = (kGroups * 8 + kScaleGranule - 2) / kScaleGranule + 1;
  const float* __restrict__ sa;
  const float* __restrict__ sb;
  u32 ld_sa, ld_sb, M, N;
  u32 G;                  // 128-wide granules of K: granules >= G (BLOCK_K 256 past K) get scale 0
  u32 row[kMmaPerWG][2];  // this thread's rows (absolute)
  u32 n0, nb0, b1;        // tile's first column, its 128-block, groups before the next block
  float ra[kMmaPerWG][2];
  float rb[kMaxNBlocks];  // block mode: sb of the tile's 128-column blocks
  u32 g_cur;              // block1d1d: granule of the fetched scales

  __device__ __forceinline__ BlockScaler(const float* a, const float* b, u32 lda_s, u32 ldb_s, u32 m, u32 n, u32 k)
      : sa(a), sb(b), ld_sa(lda_s), ld_sb(ldb_s), M(m), N(n), G((k + kScaleGranule - 1) / kScaleGranule) {}

  __device__ __forceinline__ void begin_tile(u32 m0, u32 tile_n0) {
    const u32 t = threadIdx.x % 128;
#pragma unroll
    for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
      for (u32 h = 0; h < 2; ++h) row[j][h] = m0 + 64 * j + fragment_row(t) + 8 * h;
    n0 = tile_n0;
    nb0 = n0 / kScaleGranule;
    b1 = (kScaleGranule - n0 % kScaleGranule) / 8;  // n0 is a multiple of 8
  }

  __device__ __forceinline__ void fetch(u32 g) {
#pragma unroll
    for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
      for (u32 h = 0; h < 2; ++h) ra[j][h] = row[j][h] < M && g < G ? __ldg(sa + u64(g) * ld_sa + row[j][h]) : 0.f;
    if constexpr (kMode == kScaleBlock) {
      const u32 n_blocks = (N + kScaleGranule - 1) / kScaleGranule;
#pragma unroll
      for (u32 b = 0; b < kMaxNBlocks; ++b)
        rb[b] = nb0 + b < n_blocks && g < G ? __ldg(sb + u64(nb0 + b) * ld_sb + g) : 0.f;
    } else {
      g_cur = g;
    }
  }

  /// acc += buf * scales (FMA per element); buf must be retired (after its wgmma wait).
  __device__ __forceinline__ void promote(float (&acc)[kMmaPerWG][kAccPerMma], float (&buf)[kMmaPerWG][kAccPerMma]) {
    const u32 t = threadIdx.x % 128;
#pragma unroll
    for (u32 i = 0; i < kGroups; ++i) {
      float b[2];
      if constexpr (kMode == kScaleBlock) {
        // Group i lies in 128-block nb0 + (i >= b1) + (i >= b1 + 16) (+ ... for wider tiles).
        float s = rb[0];
#pragma unroll
        for (u32 x = 1; x < kMaxNBlocks; ++x) s = i >= b1 + 16 * (x - 1) ? rb[x] : s;
        b[0] = b[1] = s;
      } else {
        const u32 col = n0 + 8 * i + fragment_col(t);
        const float* p = sb + u64(g_cur) * ld_sb + col;
        b[0] = col < N && g_cur < G ? __ldg(p) : 0.f;
        b[1] = col + 1 < N && g_cur < G ? __ldg(p + 1) : 0.f;
      }
#pragma unroll
      for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
        for (u32 h = 0; h < 2; ++h)
#pragma unroll
          for (u32 c = 0; c < 2; ++c) {
            float& x = buf[j][4 * i + 2 * h + c];
            ptx::fence_operand(x);
            acc[j][4 * i + 2 * h + c] = fmaf(x, ra[j][h] * b[c], acc[j][4 * i + 2 * h + c]);
          }
    }
  }
};

}  // namespace dgt::gemm
