// The host's view of the persistent tile scheduler (kernels/gemm/scheduler.cuh): CTA tiles along M
// and N, cluster tiles, K splits, work units, waves and the last-wave fill. The launcher (grid size,
// split-K workspace), the search-space pruning (P4-P7) and the cost model all take their tile
// arithmetic from here. The device scheduler keeps its own 32-bit arithmetic; tests/unit/
// test_tile_grid.cpp compiles it on the host and checks that both give the same work units.
#pragma once

#include <cstdint>

#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"

namespace dgt {

/// Split count the kernel really runs for K: ceil(kb / ceil(kb / split_k)) with kb = ceil(K / BLOCK_K),
/// so that no split is empty (kernels/gemm/scheduler.cuh makes the same k-block ranges). Used by the
/// launch, the pruning rule P5 and the cost model alike. split_k < 1 counts as 1.
int effective_splits(const KernelConfig& c, int64_t k);

/// Division by a launch-invariant divisor as the device does it (kernels/common.cuh FastDiv, same layout):
/// n / d == (mulhi(n, mul) >> shr) for every n < 2^31, d = 1 passes n through. make_fast_div computes it.
struct FastDivParams {
  uint32_t mul = 0, shr = 0, d = 1;
  /// The device formula, for tests.
  uint32_t div(uint32_t n) const {
    return d == 1 ? n : static_cast<uint32_t>((static_cast<uint64_t>(n) * mul) >> 32) >> shr;
  }
};
/// mul = ceil(2^(32 + shr) / d), shr = ceil(log2 d) - 1 (the round-up method of Granlund and Montgomery,
/// PLDI 1994). Throws Error(kInternal) for d = 0 or d >= 2^31.
FastDivParams make_fast_div(uint32_t d);

/// The device scheduler's run-time divisors (kernels/gemm/scheduler.cuh SchedDivisors, same layout): the split
/// count, the cluster tiles of one band (group x the major count), the width of the last band.
struct SchedulerDivisors {
  FastDivParams splits, band, last_band;
};
static_assert(sizeof(SchedulerDivisors) == 36, "must match dgt::gemm::SchedDivisors (kernels/gemm/scheduler.cuh)");

/// One work unit as the device scheduler hands it out (TileScheduler::work), in 64 bits.
struct TileUnit {
  int64_t m_block = 0, n_block = 0;  ///< CTA tile (outside the matrix for the spare CTAs of an edge cluster)
  int split = 0;                     ///< K slice index
  int64_t k_begin = 0, k_end = 0;    ///< k-block range [begin, end)
  bool operator==(const TileUnit&) const = default;
};

/// Tile geometry of one config on one problem. Block sizes and cluster dimensions must be positive
/// (the resource model's R1, R2, R4 and R13 guarantee it for legal configs).
struct TileGrid {
  int64_t m_blocks = 0, n_blocks = 0;          ///< CTA tiles along M and N: ceil(M / BLOCK_M), ceil(N / BLOCK_N)
  int64_t k_blocks = 0;                        ///< ceil(K / BLOCK_K)
  int cluster_m = 1, cluster_n = 1;            ///< CTAs per cluster along M and N (multicast)
  int split_cluster = 1;                       ///< cluster split (sk<S>c): the S splits of a tile are one cluster
  int64_t cluster_rows = 0, cluster_cols = 0;  ///< cluster tiles along M and N
  int splits = 1;                              ///< effective_splits(): no split is empty
  int64_t k_blocks_per_split = 0;              ///< ceil(k_blocks / splits); the last split may get fewer
  Raster raster = Raster::kAlongM;
  int group = 1;  ///< rasterization band width in cluster tiles

  static TileGrid of(const KernelConfig& c, int64_t m, int64_t n, int64_t k);
  /// The grid of the problem the kernel computes (kernel_problem: with swap_ab, M and N exchanged).
  static TileGrid of(const KernelConfig& c, const Problem& p) {
    const Problem kp = kernel_problem(c, p);
    return of(c, kp.m, kp.n, kp.k);
  }

  /// CTAs per launched cluster: the multicast CTAs, times the splits of a cluster split.
  int cluster_size() const { return cluster_m * cluster_n * split_cluster; }
  /// CTA output tiles (what split-K partials and counters are sized by).
  int64_t tiles() const { return m_blocks * n_blocks; }
  int64_t cluster_tiles() const { return cluster_rows * cluster_cols; }
  /// Work units: cluster tiles x K splits; cluster c of the persistent grid runs units c, c + clusters, ...
  int64_t units() const { return cluster_tiles() * splits; }
  /// What one launched cluster takes at a time: a work unit, or with a cluster split all splits of a tile.
  int64_t cluster_units() const { return units() / split_cluster; }

  /// Clusters the persistent grid launches when `slots` clusters can be resident (or the grid is capped
  /// there): min(cluster_units, slots). The launched grid is that many clusters of cluster_size() CTAs.
  int64_t grid_clusters(int64_t slots) const;
  /// Waves of work on `slots` resident clusters: ceil(cluster_units / slots).
  int64_t waves(int64_t slots) const;
  /// Share of the `slots` clusters that the last wave keeps busy, in (0, 1] (1 = the waves are full).
  double last_wave_fill(int64_t slots) const;

  /// Work unit `index` for the CTA of cluster rank (rank_m, rank_n): the same mapping as
  /// TileScheduler::work (split fastest, then bands of `group` cluster tiles along the minor dimension).
  TileUnit unit(int64_t index, int rank_m = 0, int rank_n = 0) const;
  /// The divisors the kernel's scheduler takes as its last argument (GemmKernel::launch passes them).
  SchedulerDivisors divisors() const;
  /// False for the spare CTAs of an edge cluster (their tile lies outside the matrix).
  bool valid(const TileUnit& u) const { return u.m_block < m_blocks && u.n_block < n_blocks; }
};

/// The grouped scheduler's run-time divisors (kernels/gemm/grouped_scheduler.cuh): contiguous, the dense TileGrid
/// divisors of total_rows() x N with one split (the dense rasterization over the whole tile grid); masked, `band`
/// divides by the cluster columns of one group, ceil(ceil(N / BLOCK_N) / cluster_n) (splits and last_band 1).
SchedulerDivisors grouped_divisors(const KernelConfig& c, const GroupedProblem& g);

}  // namespace dgt
