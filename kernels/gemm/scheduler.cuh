// Persistent work scheduler. A work unit is (cluster tile, K split); cluster c of the grid handles
// units c, c + num_clusters, ... Inside a cluster, CTA rank r takes the block (r % kClusterM,
// r / kClusterM) of the cluster tile, so the CTAs of a cluster always share an m-block row or an
// n-block column (what TMA multicast needs).
#pragma once
#include "common.cuh"

namespace dgt::gemm {

/// The scheduler's run-time divisors, computed once per launch on the host (dgt::TileGrid::divisors, same
/// layout): the split count, the cluster tiles of one band (kGroup x the major count), and the width of the last
/// band (every other band is kGroup wide, a compile-time divisor).
struct SchedDivisors {
  FastDiv splits, band, last_band;
};

struct WorkUnit {
  u32 m_block, n_block;   ///< CTA tile (may lie outside the matrix for the spare CTAs of an edge cluster)
  u32 split;              ///< K slice index
  u32 k_begin, k_end;     ///< k-block range [begin, end)
};

/// Rasterization ("tile order"): kRasterAlongM puts cluster tiles in bands of kGroup cluster columns
/// (n); inside a band the column moves fastest, then the row (m), so the tiles in flight share a few
/// B panels and sweep A. !kRasterAlongM swaps the roles of M and N. Splits of one tile are adjacent
/// units, so they run at the same time and the last one reduces soon after the others.
template <u32 BLOCK_M, u32 BLOCK_N, u32 BLOCK_K, u32 kClusterM, u32 kClusterN, bool kRasterAlongM, u32 kGroup>
struct TileScheduler {
  static constexpr bool kGrouped = false;  // gemm/grouped_scheduler.cuh is the grouped one
  u32 num_m_blocks, num_n_blocks;    // CTA tiles
  u32 num_cm, num_cn;                // cluster tiles
  u32 num_splits, k_per_split, num_k_blocks;
  u32 num_units;
  SchedDivisors div;

  /// num_splits must make every split non-empty: the host passes ceil(kb / ceil(kb / S)), and `divisors` for
  /// this problem and split count (TileGrid::divisors).
  __device__ __forceinline__ TileScheduler(u32 M, u32 N, u32 K, u32 splits, const SchedDivisors& divisors)
      : num_m_blocks(ceil_div(M, BLOCK_M)),
        num_n_blocks(ceil_div(N, BLOCK_N)),
        num_cm(ceil_div(num_m_blocks, kClusterM)),
        num_cn(ceil_div(num_n_blocks, kClusterN)),
        num_splits(splits),
        k_per_split(divisors.splits.div(ceil_div(K, BLOCK_K) + splits - 1)),
        num_k_blocks(ceil_div(K, BLOCK_K)),
        num_units(num_cm * num_cn * splits),
        div(divisors) {}
  /// The grouped kernels' constructor signature (gemm/grouped_scheduler.cuh): the dense scheduler ignores the
  /// group argument, so fp8_gemm_kernel constructs either scheduler with one expression.
  template <class GroupArgsT>
  __device__ __forceinline__ TileScheduler(u32 M, u32 N, u32 K, u32 splits, const SchedDivisors& divisors,
                                           const GroupArgsT&)
      : TileScheduler(M, N, K, splits, divisors) {}

  __device__ __forceinline__ WorkUnit work(u32 unit, u32 rank_m, u32 rank_n) const {
    WorkUnit w;
    const u32 tile = div.splits.div(unit);
    w.split = unit - tile * num_splits;
    const u32 num_major = kRasterAlongM ? num_cm : num_cn;  // walked inside a band
    const u32 num_minor = kRasterAlongM ? num_cn : num_cm;  // split into bands
    const u32 band = div.band.div(tile);
    const u32 first = band * kGroup;
    const u32 width = min_of(kGroup, num_minor - first);
    const u32 in_band = tile - band * kGroup * num_major;
    const u32 major = width == kGroup ? in_band / kGroup : div.last_band.div(in_band);
    const u32 minor = first + (in_band - major * width);
    const u32 cm = kRasterAlongM ? major : minor;
    const u32 cn = kRasterAlongM ? minor : major;
    w.m_block = cm * kClusterM + rank_m;
    w.n_block = cn * kClusterN + rank_n;
    w.k_begin = w.split * k_per_split;
    w.k_end = min_of(num_k_blocks, w.k_begin + k_per_split);
    return w;
  }

  __device__ __forceinline__ bool valid(const WorkUnit& w) const {
    return w.m_block < num_m_blocks && w.n_block < num_n_blocks;
  }
};

}  // namespace dgt::gemm
