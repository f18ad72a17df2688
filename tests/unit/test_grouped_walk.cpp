// The grouped kernels' unit walk: kernels/gemm/grouped_scheduler.cuh compiled here, on the host (shims for the CUDA
// qualifiers and __ldg), is asked for every unit of a persistent grid and checked against a brute-force enumeration
// of the tiles: each tile of every group exactly once, none of an empty group, padding blocks skipped, rows and
// scale offsets of each unit. Groups of size 0, all rows in one group, counts that are not multiples of BLOCK_M,
// G in {1, 4, 8, 32, 256}, clusters along N and grids smaller and larger than the unit count.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "core/int_math.hpp"
#include "problem/grouped_problem.hpp"
#include "space/tile_grid.hpp"

// ---- host shims for the device headers (kernels/common.cuh), defined before including them ----
#ifndef __device__
#define __device__
#endif
#ifndef __forceinline__
#define __forceinline__ inline
#endif
#ifndef __grid_constant__
#define __grid_constant__
#endif
inline unsigned long long __cvta_generic_to_shared(const void* p) { return reinterpret_cast<unsigned long long>(p); }
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
#include "gemm/grouped_scheduler.cuh"  // kernels/ is on this file's include path (tests/CMakeLists.txt)

namespace dgt {
namespace {

using Tile = std::tuple<uint32_t, uint32_t, uint32_t>;  // group, m_block (rows of A's 2-D view / BLOCK_M), n_block

FastDiv device_div(const FastDivParams& f) { return FastDiv{f.mul, f.shr, f.d}; }

/// Walks every unit as the persistent kernel's CTAs do (raster along M when RM, else along N, bands of GRP) and
/// checks them against the brute-force tile set.
template <uint32_t BM, uint32_t BN, uint32_t CN, uint32_t KIND, bool RM = true, uint32_t GRP = 8>
void check_walk(const GroupedProblem& g, uint32_t grid_clusters) {
  SCOPED_TRACE(g.label() + " BM " + std::to_string(BM) + " BN " + std::to_string(BN) + " CN " + std::to_string(CN) +
               " grid " + std::to_string(grid_clusters) + (RM ? " rm" : " rn") + std::to_string(GRP));
  const std::vector<int32_t> layout = g.layout();
  const uint32_t n_blocks = uint32_t(ceil_div(g.n, int64_t(BN))), num_cn = uint32_t(ceil_div(int64_t(n_blocks), int64_t(CN)));
  const int64_t kg = ceil_div(g.k, 128), nb128 = ceil_div(g.n, 128), ld_sb = round_up(kg, 4);
  gemm::GroupArgs args{layout.data(), uint32_t(g.groups), uint32_t(g.m_max),
                       uint32_t(KIND == gemm::kGroupMasked ? kg * g.m_max : 0), uint32_t(nb128 * ld_sb)};
  KernelConfig c;
  c.block_m = int(BM), c.block_n = int(BN), c.block_k = 128, c.cluster_n = int(CN), c.split_k = 1;
  c.raster = RM ? Raster::kAlongM : Raster::kAlongN;
  c.group = int(GRP);
  const SchedulerDivisors host_div = grouped_divisors(c, g);
  gemm::SchedDivisors div{device_div(host_div.splits), device_div(host_div.band), device_div(host_div.last_band)};
  const uint32_t M = uint32_t(g.total_rows());

  // Brute force: the tiles that must be computed.
  std::multiset<Tile> expected;
  const std::vector<int64_t> starts = g.group_starts();
  for (int grp = 0; grp < g.groups; ++grp)
    for (int64_t m = 0; m < ceil_div(g.rows[size_t(grp)], int64_t(BM)); ++m)
      for (uint32_t n = 0; n < n_blocks; ++n) expected.insert({uint32_t(grp), uint32_t(starts[size_t(grp)] / BM + m), n});

  std::multiset<Tile> seen;
  uint32_t num_units = 0;
  for (uint32_t cluster = 0; cluster < grid_clusters; ++cluster)
    for (uint32_t rank_n = 0; rank_n < CN; ++rank_n) {
      const gemm::GroupedScheduler<BM, BN, 128, CN, RM, GRP, KIND> sched(M, uint32_t(g.n), uint32_t(g.k), 1, div, args);
      num_units = sched.num_units;
      // The producer's first call, then the walk (the same unit twice, as the kernel does).
      (void)sched.work(cluster, 0, rank_n);
      for (uint32_t unit = cluster; unit < sched.num_units; unit += grid_clusters) {
        const gemm::GroupedWorkUnit w = sched.work(unit, 0, rank_n);
        if constexpr (KIND == gemm::kGroupContiguous) {
          // The contiguous order is the dense rasterization of the whole tile grid (the host mirror, TileGrid::unit).
          const TileUnit d = TileGrid::of(c, int64_t(M), g.n, g.k).unit(int64_t(unit), 0, int(rank_n));
          ASSERT_EQ(int64_t(w.m_block), d.m_block) << "unit " << unit;
          ASSERT_EQ(int64_t(w.n_block), d.n_block) << "unit " << unit;
        }
        if (w.k_end == w.k_begin) {
          // Skipped: contiguous padding blocks only.
          ASSERT_EQ(KIND, gemm::kGroupContiguous) << "unit " << unit;
          ASSERT_LT(layout[w.m_block * BM], 0) << "unit " << unit;
          continue;
        }
        ASSERT_EQ(w.k_end, uint32_t(ceil_div(g.k, 128)));
        if (!sched.valid(w)) {
          ASSERT_GE(w.n_block, n_blocks);  // an edge cluster's spare CTA
          continue;
        }
        const int64_t row0 = int64_t(w.m_block) * BM, start = starts[w.group];
        ASSERT_GE(row0, start);
        ASSERT_LT(row0, start + g.rows[w.group]) << "a unit past its group's rows";
        ASSERT_EQ(w.b_row0, w.group * uint32_t(g.n));
        ASSERT_EQ(w.sb_off, w.group * args.sb_group);
        if constexpr (KIND == gemm::kGroupMasked) {
          ASSERT_EQ(w.row_end, uint32_t(start + g.rows[w.group]));
          ASSERT_EQ(w.scale_m0, uint32_t(row0 - start));
          ASSERT_EQ(w.sa_off, w.group * args.sa_group);
        } else {
          ASSERT_EQ(layout[size_t(row0)], int32_t(w.group));
          ASSERT_EQ(w.scale_m0, uint32_t(row0));
          ASSERT_EQ(w.sa_off, 0u);
        }
        seen.insert({w.group, w.m_block, w.n_block});
      }
    }
  EXPECT_EQ(seen, expected);
  if constexpr (KIND == gemm::kGroupMasked) {
    int64_t blocks = 0;
    for (int64_t r : g.rows) blocks += ceil_div(r, int64_t(BM));
    EXPECT_EQ(num_units, uint32_t(blocks * num_cn)) << "masked units are exactly the tiles that hold rows";
  }
}

GroupedProblem problem(GroupKind kind, std::vector<int64_t> rows, int64_t n) {
  GroupedProblem g;
  g.kind = kind;
  g.groups = int(rows.size());
  g.rows = std::move(rows);
  g.n = n;
  g.k = 256;
  if (kind == GroupKind::kMasked) {
    int64_t mx = 1;
    for (int64_t r : g.rows) mx = std::max(mx, r);
    g.m_max = round_up(mx, 128);
    g.expected_m = 1;
  }
  g.rows_text = "list";
  return g;
}

std::vector<std::vector<int64_t>> row_patterns() {
  std::vector<std::vector<int64_t>> out = {
      {300},                  // G 1, not a multiple of BLOCK_M
      {0, 0, 513, 0},         // all rows in one group, the others empty
      {128, 1, 0, 255},       // G 4: exact, tiny, empty, one short of two blocks
      {64, 65, 127, 129, 0, 256, 7, 1000},  // G 8
  };
  std::mt19937 rng(5);
  for (int groups : {32, 256}) {
    std::vector<int64_t> r(static_cast<size_t>(groups));
    for (auto& x : r) x = rng() % 3 == 0 ? 0 : int64_t(rng() % 300);  // a third empty
    out.push_back(r);
  }
  return out;
}

TEST(GroupedWalk, MaskedEveryTileOnceEmptyGroupsOwnNoUnits) {
  for (const auto& rows : row_patterns())
    for (int64_t n : {256, 200, 64})
      for (uint32_t grid : {1u, 7u, 132u, 4000u}) {
        const GroupedProblem g = problem(GroupKind::kMasked, rows, n);
        check_walk<128, 128, 1, gemm::kGroupMasked>(g, grid);
        check_walk<64, 96, 1, gemm::kGroupMasked>(g, grid);
        check_walk<128, 64, 2, gemm::kGroupMasked>(g, grid);
      }
}

TEST(GroupedWalk, ContiguousEveryTileOncePaddingBlocksSkipped) {
  for (const auto& rows : row_patterns()) {
    bool any = false;
    for (int64_t r : rows) any = any || r > 0;
    if (!any) continue;
    for (int64_t n : {256, 200, 64})
      for (uint32_t grid : {1u, 7u, 132u, 4000u}) {
        const GroupedProblem g = problem(GroupKind::kContiguous, rows, n);
        check_walk<128, 128, 1, gemm::kGroupContiguous>(g, grid);
        check_walk<64, 96, 1, gemm::kGroupContiguous>(g, grid);
        check_walk<128, 64, 2, gemm::kGroupContiguous>(g, grid);
        // Rasterization over the whole tile grid: bands of 2 or 3 cluster columns (a partial last band), along N,
        // and a band wider than the grid (the first version's m-block-major order).
        check_walk<128, 64, 1, gemm::kGroupContiguous, true, 3>(g, grid);
        check_walk<64, 64, 2, gemm::kGroupContiguous, true, 2>(g, grid);
        check_walk<128, 128, 1, gemm::kGroupContiguous, false, 4>(g, grid);
        check_walk<128, 64, 1, gemm::kGroupContiguous, true, 64>(g, grid);
      }
  }
}

TEST(GroupedWalk, MaskedCountsAboveMmaxAreClamped) {
  // A device count beyond M_max (the host refuses it; the kernel must still stay inside the group) or negative.
  GroupedProblem g = problem(GroupKind::kMasked, {100, 0, 50}, 128);
  g.m_max = 128;
  std::vector<int32_t> layout = {1000, -5, 50};
  gemm::GroupArgs args{layout.data(), 3, 128, 0, 0};
  gemm::SchedDivisors div{};
  div.splits = device_div(make_fast_div(1));
  div.band = device_div(make_fast_div(1));
  div.last_band = device_div(make_fast_div(1));
  const gemm::GroupedScheduler<128, 128, 128, 1, true, 8, gemm::kGroupMasked> sched(384, 128, 256, 1, div, args);
  EXPECT_EQ(sched.num_units, 2u);
  const auto w0 = sched.work(0, 0, 0), w1 = sched.work(1, 0, 0);
  EXPECT_EQ(w0.group, 0u);
  EXPECT_EQ(w0.row_end, 128u);
  EXPECT_EQ(w1.group, 2u);
  EXPECT_EQ(w1.row_end, 256u + 50u);
  EXPECT_EQ(sched.work(2, 0, 0).k_end, 0u);  // past the last unit: nothing to do
}

}  // namespace
}  // namespace dgt
