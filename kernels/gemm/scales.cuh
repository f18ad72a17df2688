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
#include "ptx/tma.cuh"
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

/// Block modes, producer side: the 1-D bulk copies that bring one stage's scales into its shared-memory slot
/// (layout in Fp8GemmTraits: A's scales of the tile's BLOCK_M rows per granule, then B's: block, one 16-byte
/// slot of 4 granules per 128-column block the tile touches; block1d1d, the tile's BLOCK_N columns per
/// granule). They complete on the stage's full barrier with the A/B boxes, so a consumer that waited for the
/// stage reads its scales from shared memory. Every copy is clamped to the scale buffer (ScaleLayout pads each
/// row to a multiple of 16 bytes, the bulk copy's rule); rows and columns past the clamp keep stale values and
/// are never stored. Granules >= G (BLOCK_K 256 past K) are not copied: the consumer uses scale 0 there.
template <u32 kMode, u32 BLOCK_M, u32 BLOCK_N, u32 kGranules, u32 kNBlocks>
struct StageScales {
  // Stateless: everything is derived per k-block from the tile's m0 / n0 and the kernel parameters (scale
  // pointers, ld_sa = round_up(M, 4), ld_sb = block round_up(G, 4) / block1d1d round_up(N, 4), N, K), which
  // stay in the constant bank. The producer runs with 40 registers (setmaxnreg); per-unit copies of these
  // made ptxas spill in cluster kernels (NVRTC spill test).
  static __device__ __forceinline__ u32 a_bytes(u32 m0, u32 ld_sa) { return m0 < ld_sa ? min(BLOCK_M, ld_sa - m0) * 4 : 0; }
  /// block: 128-column blocks of B the tile touches inside N; block1d1d: bytes of its column scales.
  static __device__ __forceinline__ u32 b_count(u32 n0, u32 ld_sb, u32 N) {
    if constexpr (kMode == kScaleBlock) {
      const u32 n_blocks = (N + kScaleGranule - 1) / kScaleGranule, nb0 = n0 / kScaleGranule;
      return nb0 < n_blocks ? min(kNBlocks, n_blocks - nb0) : 0;
    } else {
      return n0 < ld_sb ? min(BLOCK_N, ld_sb - n0) * 4 : 0;
    }
  }
  /// Granules of k-block kb that lie inside K.
  static __device__ __forceinline__ u32 granules(u32 kb, u32 K) {
    return min(kGranules, (K + kScaleGranule - 1) / kScaleGranule - kb * kGranules);
  }
  /// Bytes the copies of k-block kb deliver (the stage's expect_tx share).
  static __device__ __forceinline__ u32 bytes(u32 kb, u32 m0, u32 n0, u32 ld_sa, u32 ld_sb, u32 N, u32 K) {
    const u32 gv = granules(kb, K), a = a_bytes(m0, ld_sa), b = b_count(n0, ld_sb, N);
    if constexpr (kMode == kScaleBlock) return gv * a + b * 16;
    return gv * (a + b);
  }
  static __device__ __forceinline__ void issue(u8* slot, u64* bar, u32 kb, u32 m0, u32 n0, const float* sa,
                                               const float* sb, u32 ld_sa, u32 ld_sb, u32 N, u32 K) {
    const u32 g0 = kb * kGranules, gv = granules(kb, K), a = a_bytes(m0, ld_sa), b = b_count(n0, ld_sb, N);
    for (u32 i = 0; i < gv; ++i)
      if (a) ptx::bulk_load(slot + i * BLOCK_M * 4, sa + u64(g0 + i) * ld_sa + m0, a, bar);
    u8* slot_b = slot + kGranules * BLOCK_M * 4;
    if constexpr (kMode == kScaleBlock) {
      // The aligned group of 4 granules holding g0 (and g0 + 1 when kGranules = 2: g0 is even then).
      for (u32 x = 0; x < b; ++x)
        ptx::bulk_load(slot_b + 16 * x, sb + u64(n0 / kScaleGranule + x) * ld_sb + (g0 & ~3u), 16, bar);
    } else {
      for (u32 i = 0; i < gv; ++i)
        if (b) ptx::bulk_load(slot_b + i * BLOCK_N * 4, sb + u64(g0 + i) * ld_sb + n0, b, bar);
    }
  }
};

/// Block modes, consumer side: the promotion acc += partial * sa[g][row] * sb(g, col). fetch() copies granule
/// g's scales of this thread's rows (and columns) from the stage's shared-memory slot into registers; call it
/// after the stage's full-barrier wait, and order it before the stage's release with a WGMMA fence or a proxy
/// fence in between (mainloop_steps.cuh, the comment at `fetch`, says why). promote() then folds a retired
/// partial buffer into acc: the products sa x sb are formed once per granule per row (block: per 128-column
/// block), so each element costs one FFMA, as a per-tensor promotion costs one FADD. One object per consumer
/// thread; begin_tile() per work unit.
template <u32 kMode, u32 kMmaPerWG, u32 kAccPerMma, u32 BLOCK_M, u32 BLOCK_N, u32 kGranules, u32 kNBlocks, bool kNAligned,
          bool kByteOffsetReads, bool kAlwaysInK>
struct BlockScaler {
  static constexpr u32 kGroups = kAccPerMma / 4;  // 8-column groups of the tile (BLOCK_N / 8)
  // Block mode, tiles not aligned to 128 columns: a tile starts at a multiple of BLOCK_N, so n0 % 128 is a multiple
  // of gcd(BLOCK_N, 128) and takes kPhases values (BLOCK_N 192: 0 or 64; 160: 0, 32, 64, 96). With at most 4, the
  // promotion is compiled once per phase with every group's 128-column block known (one uniform branch per
  // promotion, no per-element select: the select chain cost 48 SELs and 24 compares per k-block in 128x192 1g; the
  // phased form runs 128x192 1g 9.3% faster, 128x160 1g 5.9%, 128x96 2g 3.4%, bitwise equal:
  // results/h200/wide-tiles-2026-12-07.md).
  static constexpr u32 kPhaseStride = (BLOCK_N & (0u - BLOCK_N)) < 128 ? (BLOCK_N & (0u - BLOCK_N)) : 128;  // gcd(BLOCK_N, 128)
  static constexpr u32 kPhases = 128 / kPhaseStride;
  static constexpr bool kPhased = kMode == kScaleBlock && !kNAligned && kPhases <= 4;
  u32 G;                  // 128-wide granules of K: granules >= G (BLOCK_K 256 past K) get scale 0
  u32 row0;               // this thread's first row inside the tile (its warpgroup's rows + fragment row)
  u32 b1;                 // block mode, tiles not aligned to 128 columns: groups before the next 128-block
  u32 n_phase;            // ... with kPhased: (n0 % 128) / kPhaseStride
  float ra[kMmaPerWG][2];
  float rb[kMode == kScaleBlock ? kNBlocks : 1];      // block: sb of the tile's 128-column blocks
  float rc[kMode == kScaleBlock1d1d ? kGroups : 1][2];  // block1d1d: the column scales of this thread's columns

  __device__ __forceinline__ BlockScaler(u32 row0_in_tile, u32 k)
      : G((k + kScaleGranule - 1) / kScaleGranule), row0(row0_in_tile + fragment_row(threadIdx.x % 128)) {}

  __device__ __forceinline__ void begin_tile(u32 n0) {
    if constexpr (kPhased) n_phase = (n0 % kScaleGranule) / kPhaseStride;
    else if constexpr (!kNAligned) b1 = (kScaleGranule - n0 % kScaleGranule) / 8;  // n0 is a multiple of 8
  }

  /// kPhased: the promotion of a tile whose first column lies kPhase x kPhaseStride columns into a 128-column block;
  /// group q's block is then (kPhase x kPhaseStride + 8 q) / 128, a compile-time index into s.
  template <u32 kPhase>
  __device__ __forceinline__ void promote_phase(float (&acc)[kMmaPerWG][kAccPerMma], float (&buf)[kMmaPerWG][kAccPerMma],
                                                const float (&s)[kMmaPerWG][2][kNBlocks]) {
#pragma unroll
    for (u32 q = 0; q < kGroups; ++q)
#pragma unroll
      for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
        for (u32 h = 0; h < 2; ++h) {
          const float f = s[j][h][(kPhase * kPhaseStride + 8 * q) / kScaleGranule];
#pragma unroll
          for (u32 c = 0; c < 2; ++c) {
            float& v = buf[j][4 * q + 2 * h + c];
            ptx::fence_operand(v);
            acc[j][4 * q + 2 * h + c] = fmaf(v, f, acc[j][4 * q + 2 * h + c]);
          }
        }
  }

  /// Granule g's scales, from slot `i` (0, or 1 for the second granule of a BLOCK_K 256 stage).
  __device__ __forceinline__ void fetch(const u8* slot, u32 i, u32 g) {
    // kAlwaysInK (the kernel sets it with one granule per stage, BLOCK_K 128, where every k-block a mainloop fetches
    // is inside K): no select, 5 fewer instructions per k-block in 128x128 2g.
    const bool in_k = kAlwaysInK || g < G;
    // A's scales of the thread's rows. Indexed as s_a[row0 + 64 j + 8 h] with conditional reads (the form before),
    // ptxas rebuilt both row offsets from the thread index and branched around each read in the contiguous grouped
    // kernels' mainloop (+11 instructions per k-block, 128x128 2g). Two forms avoid that (the kernel picks one with
    // kByteOffsetReads, gemm/fp8_gemm.cuh says which where): one byte offset and unconditional reads with a select
    // for granules past K (the slot is always shared memory), and the row folded into the pointer with conditional
    // reads. On 128x128 2g the first is 1.6% faster on dense K 7168/16384 shapes, the second 1.2-1.6% faster on
    // grouped gate_up (results/h200/grouped-scales-2026-12-03.md, call 6); the first spilled 36 B in 64x176x128 s7 1g
    // and put an R2UR in the mainloop of 128x128 c2x1 (NVRTC spill and SASS tests).
    if constexpr (kByteOffsetReads) {
      const u8* s_a = slot + i * BLOCK_M * 4 + row0 * 4;
#pragma unroll
      for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
        for (u32 h = 0; h < 2; ++h) {
          const float v = *reinterpret_cast<const float*>(s_a + 4 * (64 * j + 8 * h));
          ra[j][h] = in_k ? v : 0.f;
        }
    } else {
      const float* s_a = reinterpret_cast<const float*>(slot) + i * BLOCK_M + row0;
#pragma unroll
      for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
        for (u32 h = 0; h < 2; ++h) ra[j][h] = in_k ? s_a[64 * j + 8 * h] : 0.f;
    }
    const float* s_b = reinterpret_cast<const float*>(slot + kGranules * BLOCK_M * 4);
    if constexpr (kMode == kScaleBlock) {
#pragma unroll
      for (u32 x = 0; x < kNBlocks; ++x) {
        const float v = s_b[4 * x + (g & 3u)];
        rb[x] = in_k ? v : 0.f;
      }
    } else {
      const u32 col = fragment_col(threadIdx.x % 128);
#pragma unroll
      for (u32 q = 0; q < kGroups; ++q)
#pragma unroll
        for (u32 c = 0; c < 2; ++c) rc[q][c] = in_k ? s_b[i * BLOCK_N + 8 * q + col + c] : 0.f;
    }
  }

  /// acc += buf * scales (one FFMA per element); buf must be retired (after its wgmma wait).
  __device__ __forceinline__ void promote(float (&acc)[kMmaPerWG][kAccPerMma], float (&buf)[kMmaPerWG][kAccPerMma]) {
    if constexpr (kMode == kScaleBlock) {
      float s[kMmaPerWG][2][kNBlocks];  // sa x sb per row and 128-column block
#pragma unroll
      for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
        for (u32 h = 0; h < 2; ++h)
#pragma unroll
          for (u32 x = 0; x < kNBlocks; ++x) s[j][h][x] = ra[j][h] * rb[x];
      if constexpr (kPhased) {
        if (n_phase == 0) promote_phase<0>(acc, buf, s);
        else if (kPhases == 2 || n_phase == 1) promote_phase<1 % kPhases>(acc, buf, s);
        else if (n_phase == 2) promote_phase<2 % kPhases>(acc, buf, s);
        else promote_phase<3 % kPhases>(acc, buf, s);
        return;
      }
#pragma unroll
      for (u32 q = 0; q < kGroups; ++q) {
#pragma unroll
        for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
          for (u32 h = 0; h < 2; ++h) {
            float f;
            if constexpr (kNAligned) {
              f = s[j][h][(8 * q) / kScaleGranule];  // compile-time block of group q
            } else {
              // Group q lies in block nb0 + (q >= b1) + (q >= b1 + 16) (+ ... for wider tiles).
              f = s[j][h][0];
#pragma unroll
              for (u32 x = 1; x < kNBlocks; ++x) f = q >= b1 + 16 * (x - 1) ? s[j][h][x] : f;
            }
#pragma unroll
            for (u32 c = 0; c < 2; ++c) {
              float& v = buf[j][4 * q + 2 * h + c];
              ptx::fence_operand(v);
              acc[j][4 * q + 2 * h + c] = fmaf(v, f, acc[j][4 * q + 2 * h + c]);
            }
          }
      }
    } else {
#pragma unroll
      for (u32 q = 0; q < kGroups; ++q)
#pragma unroll
        for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
          for (u32 h = 0; h < 2; ++h)
#pragma unroll
            for (u32 c = 0; c < 2; ++c) {
              float& v = buf[j][4 * q + 2 * h + c];
              ptx::fence_operand(v);
              acc[j][4 * q + 2 * h + c] = fmaf(v, ra[j][h] * rc[q][c], acc[j][4 * q + 2 * h + c]);
            }
    }
  }
};

}  // namespace dgt::gemm
