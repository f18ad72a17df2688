#include "space/tile_grid.hpp"

#include "core/error.hpp"

#include <algorithm>

#include "core/int_math.hpp"

namespace dgt {

int effective_splits(const KernelConfig& c, int64_t k) {
  const int64_t kb = ceil_div(k, c.block_k);
  const int64_t per = ceil_div(kb, std::max(1, c.split_k));
  return static_cast<int>(ceil_div(kb, per));
}

TileGrid TileGrid::of(const KernelConfig& c, int64_t m, int64_t n, int64_t k) {
  TileGrid g;
  g.m_blocks = ceil_div(m, c.block_m);
  g.n_blocks = ceil_div(n, c.block_n);
  g.k_blocks = ceil_div(k, c.block_k);
  g.cluster_m = c.cluster_m;
  g.cluster_n = c.cluster_n;
  g.cluster_rows = ceil_div(g.m_blocks, c.cluster_m);
  g.cluster_cols = ceil_div(g.n_blocks, c.cluster_n);
  g.splits = effective_splits(c, k);
  // A cluster split launches its split_k CTAs as one cluster (P9 keeps effective splits == split_k there).
  g.split_cluster = c.splits_per_cluster();
  g.k_blocks_per_split = ceil_div(g.k_blocks, g.splits);
  g.raster = c.raster;
  g.group = c.group;
  return g;
}

int64_t TileGrid::grid_clusters(int64_t slots) const { return std::min(cluster_units(), slots); }

int64_t TileGrid::waves(int64_t slots) const { return ceil_div(cluster_units(), std::max<int64_t>(1, slots)); }

double TileGrid::last_wave_fill(int64_t slots) const {
  slots = std::max<int64_t>(1, slots);
  const int64_t u = cluster_units();
  if (u == 0) return 1.0;
  const int64_t last = u - (waves(slots) - 1) * slots;
  return static_cast<double>(last) / static_cast<double>(slots);
}

FastDivParams make_fast_div(uint32_t d) {
  if (d == 0 || d >= (uint32_t{1} << 31))
    DGT_THROW(ErrorKind::kInternal, "make_fast_div: divisor {} outside 1..2^31-1", d);
  FastDivParams f;
  f.d = d;
  if (d == 1) return f;
  uint32_t l = 0;  // ceil(log2 d)
  while ((uint64_t{1} << l) < d) ++l;
  f.shr = l - 1;
  // 2^(32 + shr) <= 2^62 fits int64_t; the quotient is < 2^32 because d > 2^(l-1).
  f.mul = static_cast<uint32_t>(ceil_div(int64_t{1} << (32 + f.shr), int64_t{d}));
  return f;
}

SchedulerDivisors TileGrid::divisors() const {
  const bool along_m = raster == Raster::kAlongM;
  const int64_t num_major = along_m ? cluster_rows : cluster_cols;
  const int64_t num_minor = along_m ? cluster_cols : cluster_rows;
  const int64_t last = num_minor % group == 0 ? group : num_minor % group;
  SchedulerDivisors d;
  d.splits = make_fast_div(static_cast<uint32_t>(splits));
  d.band = make_fast_div(static_cast<uint32_t>(group * num_major));
  d.last_band = make_fast_div(static_cast<uint32_t>(last));
  return d;
}

TileUnit TileGrid::unit(int64_t index, int rank_m, int rank_n) const {
  TileUnit w;
  w.split = static_cast<int>(index % splits);
  const int64_t tile = index / splits;
  const bool along_m = raster == Raster::kAlongM;
  const int64_t num_major = along_m ? cluster_rows : cluster_cols;  // walked inside a band
  const int64_t num_minor = along_m ? cluster_cols : cluster_rows;  // cut into bands of `group`
  const int64_t band = tile / (group * num_major);
  const int64_t first = band * group;
  const int64_t width = std::min<int64_t>(group, num_minor - first);
  const int64_t in_band = tile - band * group * num_major;
  const int64_t minor = first + in_band % width;
  const int64_t major = in_band / width;
  const int64_t cm = along_m ? major : minor;
  const int64_t cn = along_m ? minor : major;
  w.m_block = cm * cluster_m + rank_m;
  w.n_block = cn * cluster_n + rank_n;
  w.k_begin = w.split * k_blocks_per_split;
  w.k_end = std::min(k_blocks, w.k_begin + k_blocks_per_split);
  return w;
}

SchedulerDivisors grouped_divisors(const KernelConfig& c, const GroupedProblem& g) {
  if (g.kind == GroupKind::kContiguous) {
    KernelConfig one_split = c;
    one_split.split_k = 1;
    return TileGrid::of(one_split, g.total_rows(), g.n, g.k).divisors();
  }
  SchedulerDivisors div{};
  div.splits = make_fast_div(1);
  div.band = make_fast_div(static_cast<uint32_t>(ceil_div(ceil_div(g.n, c.block_n), c.cluster_n)));
  div.last_band = make_fast_div(1);
  return div;
}

}  // namespace dgt
