// TMA-store epilogue, for every BLOCK_N that is a multiple of 8 (16 for e4m3 output, R23): each consumer
// warpgroup writes its converted rows (BF16 with stmatrix, f32/e4m3 with plain stores) into a swizzled staging tile in shared memory, then one thread stores
// it with cp.async.bulk.tensor, one bulk store per swizzle-wide column band (out-of-bounds rows of a box
// are clipped by TMA, so M tails need no predicates). Columns are clipped too, but a TMA store writes whole
// 16-byte units of a row: when N * E is not a multiple of 16 it would also write D's padding up to the next
// 16-byte boundary (found on the H200 with e4m3 D, ldd > N). So D's tensor map ends at the last whole 16-byte
// unit (tma_store_cols) and the warpgroup writes the few columns after it from the staging tile with plain
// stores (store_tail_cols). The direct epilogue stays the fallback for a D whose rows are not 16-byte
// multiples (pruning rule P3).
#pragma once
#include "common.cuh"
#include "gemm/epilogue_direct.cuh"
#include "gemm/epilogue_ops.cuh"
#include "ptx/tma.cuh"

namespace dgt::gemm {

/// Columns of D that TMA may store: N rounded down to a whole number of 16-byte units of a row (kElem bytes
/// per element). A TMA store writes whole 16-byte units, so a tensor map wider than this would write past
/// column N into D's padding (ldd > N) or the next row. Mirrors dgt::epilogue_tma_cols (src/problem/
/// kernel_config.hpp), which sizes D's tensor map. 0 when a row of N elements is shorter than 16 bytes.
template <u32 kElem>
__device__ __forceinline__ u32 tma_store_cols(u32 N) {
  return N * kElem / 16 * 16 / kElem;
}

/// Writes the columns [max(n_tma, n0), min(N, n0 + BLOCK_N)) of this warpgroup's rows from the staging tile to
/// D with plain stores: the part of a row that TMA must not store (tma_store_cols). Fewer than 16 / kElem
/// columns, all in one band (a 16-byte unit of D starting at a multiple of 16 bytes lies inside one staging
/// band, whose rows start at 16-byte multiples of the tile). Thread t writes rows t, t + 128, ... .
/// `address_byte(row, byte)` is the staging address of byte `byte` of staging row `row`.
template <u32 kRows, u32 kElem, class Addr>
__device__ __forceinline__ void store_tail_cols(u8* d, u64 ldd, u32 M, u32 N, u32 n_tma, u32 m0, u32 n0, u32 n_end,
                                                Addr address_byte) {
  const u32 c_begin = n_tma > n0 ? n_tma : n0, c_end = N < n_end ? N : n_end;
  for (u32 row = threadIdx.x % 128; row < kRows; row += 128) {
    if (m0 + row >= M) break;
    u8* out = d + (static_cast<u64>(m0 + row) * ldd + c_begin) * kElem;
    for (u32 c = c_begin; c < c_end; ++c, out += kElem) {
      const u32 src = address_byte(row, (c - n0) * kElem);
      if constexpr (kElem == 4) {
        u32 v;
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(src) : "memory");
        *reinterpret_cast<u32*>(out) = v;
      } else if constexpr (kElem == 2) {
        u16 v;
        asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(src) : "memory");
        *reinterpret_cast<u16*>(out) = v;
      } else {
        u16 v;
        asm volatile("ld.shared.u8 %0, [%1];" : "=h"(v) : "r"(src) : "memory");
        *out = static_cast<u8>(v);
      }
    }
  }
}

/// Staging layout of one warpgroup (kRows rows x BLOCK_N columns of the output type, E bytes each: bf16 2,
/// f32 4, e4m3 1; BLOCK_N = 2 * kAccPerMma):
///  - kSwizzle = 128, 64 or 32 (the largest dividing BLOCK_N * E; Fp8GemmTraits::kEpiSwizzle): BLOCK_N * E
///    / kSwizzle column bands, band b = columns [b * kSwizzle / E, ...) as [kRows][kSwizzle bytes] with
///    16-byte unit u of row r stored at unit u ^ ((r * kSwizzle / 128) % (kSwizzle / 16)), the
///    CU_TENSOR_MAP_SWIZZLE_<kSwizzle>B pattern (address bits [4, 4 + log2(kSwizzle / 16)) XOR bits [7, ...)).
///    The D tensor map has box {kSwizzle / E, kRows} and that swizzle (src/launch/gemm_kernel.cpp).
///  - kSwizzle = 0 (BLOCK_N * E an odd multiple of 16 bytes): one band, [kRows][BLOCK_N * E bytes]
///    unswizzled, box {BLOCK_N, kRows}. The row pitch is an odd multiple of 16 bytes, so 8 consecutive
///    rows hit 8 distinct 16-byte bank groups.
/// BF16: each 8x8 stmatrix block (8 rows x 16 bytes) covers all 32 banks once: no conflicts. f32 and e4m3
/// are written with plain st.shared of a thread's two adjacent columns. Each element first goes through
/// `op` (gemm/epilogue_ops.cuh: bias, activation, e4m3 scale_d and amax, which counts only rows < M and
/// columns < N; TMA clips the rest).
/// Every band starts at a multiple of 1024 bytes (kRows >= 64), as the swizzle pattern requires.
/// Bands that start at or past tma_store_cols(N) are not stored by TMA; the columns from there to N
/// (store_tail_cols) are written with plain stores to `d` (leading dimension ldd) once their band is staged.
/// Named barrier id 2 + wg orders the warpgroup's threads.
/// kRingBands > 0 (pp, Fp8GemmTraits::kEpiRingBands): the staging holds only kRingBands bands. Band b goes to
/// slot b % kRingBands and is stored as its own bulk group as soon as it is written; before a slot is written
/// again, its earlier store must have read it (cp.async.bulk.wait_group.read kRingBands - 1: at most that
/// many newer groups pending; the tile's first band waits for all, as slots restart with each tile). Two
/// named-barrier rounds per band instead of per tile, in exchange for shared memory that goes to k-block
/// stages and stores that start while later bands are converted.
template <u32 kMmaPerWG, u32 kAccPerMma, u32 kRows, u32 kSwizzle, u32 kOutType, u32 kBiasBatch, class Op,
          u32 kRingBands = 0>
__device__ __forceinline__ void store_tile_tma(const float (&acc)[kMmaPerWG][kAccPerMma], u8* staging, const TmaDesc* tma_d,
                                               void* d, u64 ldd, u32 M, u32 N, u32 m0, u32 n0, float scale, u32 wg,
                                               Op& op) {
  constexpr u32 kElem = OutBytes<kOutType>::value;
  constexpr u32 kCols = kAccPerMma * 2;                     // BLOCK_N
  constexpr u32 kGroups = kCols / 8;                        // 8-column groups (one 8x8 matrix per row block)
  constexpr u32 kRowBytes = kSwizzle ? kSwizzle : kCols * kElem;
  constexpr u32 kBandCols = kRowBytes / kElem;
  constexpr u32 kBands = kCols / kBandCols;
  constexpr u32 kBandBytes = kRows * kRowBytes;
  static_assert(kCols % 8 == 0 && kCols % kBandCols == 0, "staging bands must tile BLOCK_N");
  static_assert(kRowBytes % 16 == 0, "staging rows must be 16-byte multiples (R14, R23)");
  static_assert(kRingBands == 0 || (kSwizzle != 0 && kBands > kRingBands), "a band ring needs swizzled bands, more than slots");
  // BF16 bands hold kSwizzle / 16 groups (even), so the stmatrix pairs and band_end(i + 1) never straddle two bands.
  static_assert(kRingBands == 0 || kOutType != kOutBF16 || (kBandCols / 8) % 2 == 0, "BF16 ring bands hold pairs of groups");
  constexpr u32 kGroupsPerBand = kBandCols / 8;
  const u32 t = threadIdx.x % 128;
  const u32 warp = t / 32, lane = t % 32;
  const u32 base = smem_u32(staging);
  const u32 frag_row = 16 * warp + lane / 4, frag_col = 2 * (lane % 4);
  // D's columns [n_tma, N) are not TMA's (tma_store_cols): this tile writes them itself when it covers them.
  const u32 n_tma = tma_store_cols<kElem>(N);
  const bool has_tail = n_tma < N && n0 + kCols > n_tma;
  // Bias loads first, so their latency overlaps the wait and the barrier below (TileBias).
  TileBias<kGroups, kBiasBatch, Op> bias(op, n0, frag_col, N);
  if constexpr (kRingBands == 0) {
    // The previous tile's bulk store must have finished reading the staging tile.
    if (t == 0) ptx::bulk_wait_group_read<0>();
    ptx::named_barrier_sync(2 + wg, 128);
  }

  // Shared address of byte `byte` of staging row `row` (swizzled per 16-byte unit); with a ring, band b
  // lives in slot b % kRingBands.
  auto address_byte = [&](u32 row, u32 byte) -> u32 {
    const u32 band = byte / kRowBytes, unit = (byte % kRowBytes) / 16;
    const u32 slot = kRingBands ? band % (kRingBands ? kRingBands : 1u) : band;
    const u32 swz = kSwizzle ? ((row * kSwizzle / 128) % (kSwizzle ? kSwizzle / 16 : 1u)) : 0u;
    return base + slot * kBandBytes + row * kRowBytes + ((unit ^ swz) * 16) + byte % 16;
  };
  // This thread's elements after the epilogue operation (bias, activation, scale_d, amax).
  auto value = [&](u32 j, u32 i, u32 h, u32 c, float b) {
    const bool in = m0 + 64 * j + frag_row + 8 * h < M && n0 + 8 * i + frag_col + c < N;
    return op.apply(acc[j][4 * i + 2 * h + c], scale, b, in);
  };
  // Ring only: before group i starts a band, wait until that band's slot is free; after the band's last
  // group, store it. Slots restart at 0 with every tile, so with an odd band count the previous tile's last
  // band sits in slot 0 too: the first band waits for every earlier store (found on the H200: 3-, 9-band
  // tiles wrote slot 0 under a pending store, wrong results in Pingpong.VerifiesAndMatches1gBitwise).
  auto band_begin = [&](u32 i) {
    if constexpr (kRingBands > 0) {
      if (i % kGroupsPerBand == 0) {
        if (t == 0) {
          if (i == 0) ptx::bulk_wait_group_read<0>();
          else ptx::bulk_wait_group_read<kRingBands - 1>();
        }
        ptx::named_barrier_sync(2 + wg, 128);
      }
    }
  };
  auto band_end = [&](u32 i_last) {
    if constexpr (kRingBands > 0) {
      if ((i_last + 1) % kGroupsPerBand == 0) {
        const u32 b = i_last / kGroupsPerBand;
        ptx::fence_proxy_async_smem();
        ptx::named_barrier_sync(2 + wg, 128);
        const u32 band_n0 = n0 + b * kBandCols;
        if (t == 0) {
          if (band_n0 < n_tma) ptx::tma_store_2d(tma_d, staging + (b % kRingBands) * kBandBytes, int(band_n0), int(m0));
          ptx::bulk_commit_group();
        }
        // The slot is read here, before this thread reaches the barrier that frees it for a later band.
        if (has_tail && n_tma < band_n0 + kBandCols && band_n0 < N)
          store_tail_cols<kRows, kElem>(static_cast<u8*>(d), ldd, M, N, n_tma, m0, n0, band_n0 + kBandCols, address_byte);
      }
    }
  };
  if constexpr (kOutType == kOutBF16) {
    // stmatrix: lane L addresses row L % 8 of matrix q = L / 8: h = q % 2 picks the fragment's upper 8
    // rows, q / 2 the second 8-column group of an x4 store. The values are this thread's fragment.
    const u32 q = lane / 8;
#pragma unroll
    for (u32 i = 0; i < kGroups; i += 2) {
      band_begin(i);
      const bool pair = i + 1 < kGroups;
      const u32 w0 = bias.next(i), w1 = pair ? bias.loaded(i + 1) : 0u;
      const float b00 = bias_lo(w0), b01 = bias_hi(w0);
      const float b10 = bias_lo(w1), b11 = bias_hi(w1);
#pragma unroll
      for (u32 j = 0; j < kMmaPerWG; ++j) {
        const u32 row = 64 * j + 16 * warp + 8 * (q % 2) + lane % 8;
        const u32 r0 = pack_bf16x2(value(j, i, 0, 0, b00), value(j, i, 0, 1, b01));
        const u32 r1 = pack_bf16x2(value(j, i, 1, 0, b00), value(j, i, 1, 1, b01));
        if (pair) {
          const u32 r2 = pack_bf16x2(value(j, i + 1, 0, 0, b10), value(j, i + 1, 0, 1, b11));
          const u32 r3 = pack_bf16x2(value(j, i + 1, 1, 0, b10), value(j, i + 1, 1, 1, b11));
          ptx::stmatrix_x4(address_byte(row, (i + q / 2) * 16), r0, r1, r2, r3);
        } else {
          ptx::stmatrix_x2(address_byte(row, i * 16), r0, r1);
        }
      }
      band_end(i + 1);
    }
  } else {
    // f32 / e4m3: plain shared stores of this thread's two adjacent columns (8 or 2 bytes, inside one
    // 16-byte unit because the pair starts at an even column).
#pragma unroll
    for (u32 i = 0; i < kGroups; ++i) {
      band_begin(i);
      const u32 w = bias.next(i);
      const float b0 = bias_lo(w), b1 = bias_hi(w);
#pragma unroll
      for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
        for (u32 h = 0; h < 2; ++h) {
          const u32 row = 64 * j + frag_row + 8 * h;
          const u32 addr = address_byte(row, (8 * i + frag_col) * kElem);
          const float v0 = value(j, i, h, 0, b0), v1 = value(j, i, h, 1, b1);
          if constexpr (kOutType == kOutF32) {
            asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(v0), "f"(v1) : "memory");
          } else {
            asm volatile("st.shared.u16 [%0], %1;" ::"r"(addr), "h"(pack_e4m3x2(v0, v1)) : "memory");
          }
        }
      band_end(i);
    }
  }
  if constexpr (kRingBands == 0) {
    ptx::fence_proxy_async_smem();
    ptx::named_barrier_sync(2 + wg, 128);
    if (t == 0) {
#pragma unroll
      for (u32 b = 0; b < kBands; ++b)
        if (n0 + b * kBandCols < n_tma) ptx::tma_store_2d(tma_d, staging + b * kBandBytes, int(n0 + b * kBandCols), int(m0));
      ptx::bulk_commit_group();
    }
    // The staging tile is read here, before the next tile's barrier lets it be written again.
    if (has_tail) store_tail_cols<kRows, kElem>(static_cast<u8*>(d), ldd, M, N, n_tma, m0, n0, n0 + kCols, address_byte);
  }
}

/// Before the CTA exits, the issuing thread waits until its stores have read shared memory.
__device__ __forceinline__ void finish_tma_stores() {
  if (threadIdx.x % 128 == 0) ptx::bulk_wait_group_read<0>();
}

}  // namespace dgt::gemm
