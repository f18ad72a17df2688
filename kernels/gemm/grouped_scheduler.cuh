// Persistent work scheduler of the grouped (MoE) GEMM: one launch walks the tiles of all groups. Selected by the
// kernel's kGroupKind (gemm/fp8_gemm.cuh): 0 is the dense TileScheduler (gemm/scheduler.cuh), 1 contiguous, 2 masked.
// Layouts (DeepGEMM's m_grouped_fp8_gemm_nt_contiguous / _masked; src/problem/grouped_problem.hpp has the host side):
//   contiguous: A [M_sum, K], D [M_sum, N], layout = m_indices int32 [M_sum]: the group of each row, -1 for padding
//               rows. Each group's segment starts at a multiple of 128 rows, so an m-block (BLOCK_M divides 128,
//               rule G1) lies inside one segment: its group is m_indices[first row]; a block whose first row is -1
//               is skipped (an empty k range: no load, no WGMMA, no store). Rows of a kept block whose index is -1
//               are computed but never stored (the epilogue's row check, GroupRows).
//   masked:     A [G, M_max, K], D [G, M_max, N], layout = masked_m int32 [G]: group g's rows are 0..masked_m[g]-1.
//               Only the ceil(masked_m[g] / BLOCK_M) m-blocks that hold rows are units at all; the last one may
//               load rows >= masked_m[g] (a TMA box is fixed) but stores only rows < masked_m[g].
// B [G, N, K] for both, read as one 2-D tensor map of G*N rows: group g's n-block starts at row g*N + n_block*BLOCK_N
// (the producer adds w.b_row0). A and D are 2-D maps of M_sum (contiguous) or G*M_max (masked) rows, and a unit's
// m_block indexes those rows directly, so the producer's A loads and the epilogue's row arithmetic are the dense
// kernel's. Clusters: only along N (kClusterM == 1, rule G2): the CTAs of a cluster share the m-block, so the same
// group, and A's multicast never crosses groups.
// Unit order: contiguous, the dense kernel's rasterization (TileScheduler's bands of kGroup cluster columns or
// m-blocks) over the whole [M_sum / BLOCK_M, cluster columns] grid, so tiles in flight share B panels within a group
// and A panels across them (a band may span two groups: the skip and the group come from m_indices per m-block);
// masked, group by group, inside a group m-block major with the cluster column fastest (a decode group holds a few
// m-blocks, so a band would not change what is in flight). The masked walk keeps a cursor (the group and its first
// unit) that only moves forward, because the units a thread asks for increase (the producer asks for its first
// unit twice: equal is fine).
#pragma once
#include "common.cuh"
#include "gemm/scheduler.cuh"

namespace dgt::gemm {

enum : u32 { kGroupNone = 0, kGroupContiguous = 1, kGroupMasked = 2 };

/// type = kFirst ? A : B (NVRTC has no <type_traits>).
template <bool kFirst, class A, class B>
struct SelectType {
  using type = A;
};
template <class A, class B>
struct SelectType<false, A, B> {
  using type = B;
};

/// The grouped kernel's extra argument (the last kernel parameter; zero for dense kernels). Mirrored by
/// dgt::jit::GroupKernelArgs (src/launch/group_args.hpp), static_assert on the size there.
///  - layout: contiguous, m_indices (M_sum int32); masked, masked_m (G int32); device memory, read by the kernel.
///  - num_groups: G. m_max: masked, rows per group in A and D (a multiple of BLOCK_M, rule G5); contiguous 0.
///  - sa_group: block scales, floats between two groups' A scales (masked: ceil(K/128) * M_max; contiguous 0: the
///    A scales are one [ceil(K/128), M_sum] array). sb_group: floats between two groups' B scales
///    (ceil(N/128) * ld_sb).
struct GroupArgs {
  const int* layout;
  u32 num_groups, m_max, sa_group, sb_group;
};

/// A grouped work unit: the dense fields (m_block indexes A's and D's 2-D rows; k_end == k_begin marks a skipped
/// unit) plus what the producer and epilogue need of its group.
struct GroupedWorkUnit : WorkUnit {
  u32 group;     ///< group index (0 for a skipped unit)
  u32 b_row0;    ///< group * N: B's first row of this group in the [G*N, K] map
  u32 row_end;   ///< masked: g * M_max + masked_m[g], the first row not stored; contiguous: M_sum
  u32 scale_m0;  ///< first row of the block in the A scales (contiguous: m_block * BLOCK_M; masked: inside the group)
  u32 sa_off, sb_off;  ///< floats from the scale pointers to this group's scales
};

template <u32 BLOCK_M, u32 BLOCK_N, u32 BLOCK_K, u32 kClusterN, bool kRasterAlongM, u32 kGroup, u32 kGroupKind>
struct GroupedScheduler {
  static constexpr bool kGrouped = true;
  static constexpr bool kContiguous = kGroupKind == kGroupContiguous;  // units' groups come from m_indices (lookup)
  static_assert(kGroupKind == kGroupContiguous || kGroupKind == kGroupMasked, "grouped scheduler: kind 1 or 2");
  static_assert(128 % BLOCK_M == 0, "G1: a grouped kernel's BLOCK_M must divide 128 (contiguous segments are "
                                    "128-row aligned)");
  u32 M, N;                       // rows of A's and D's 2-D maps; columns of one group
  u32 num_n_blocks, num_cn;       // CTA columns and cluster columns of one group
  u32 num_k_blocks;
  u32 num_units;                  // contiguous: M / BLOCK_M * num_cn; masked: sum over groups of m-blocks * num_cn
  FastDiv cn_div;                 // masked: divisor num_cn (the host passes it in SchedDivisors::band)
  // Contiguous: the dense raster over the [M / BLOCK_M, num_cn] tile grid (divisors: the host's TileGrid of that
  // dense problem, dgt::grouped_divisors).
  TileScheduler<BLOCK_M, BLOCK_N, BLOCK_K, 1, kClusterN, kRasterAlongM, kGroup> tiles;
  GroupArgs g;
  // Masked walk cursor: group `cur` owns units [cur_first, cur_first + cur_units).
  mutable u32 cur, cur_first, cur_units;

  /// M: rows of A / D (contiguous M_sum, a multiple of 128; masked G * M_max); N, K: of one group. `splits` is
  /// ignored (rule G3: no split-K). `divisors` (dgt::grouped_divisors): contiguous, the dense TileGrid divisors of
  /// M x N with one split; masked, `band` divides by ceil(ceil(N / BLOCK_N) / kClusterN).
  __device__ __forceinline__ GroupedScheduler(u32 M_, u32 N_, u32 K, u32 /*splits*/, const SchedDivisors& divisors,
                                              const GroupArgs& args)
      : M(M_),
        N(N_),
        num_n_blocks(ceil_div(N_, BLOCK_N)),
        num_cn(ceil_div(ceil_div(N_, BLOCK_N), kClusterN)),
        num_k_blocks(ceil_div(K, BLOCK_K)),
        num_units(0),
        cn_div(divisors.band),
        tiles(M_, N_, K, 1, divisors),
        g(args),
        cur(0),
        cur_first(0),
        cur_units(0) {
    if constexpr (kGroupKind == kGroupContiguous) {
      num_units = (M_ / BLOCK_M) * num_cn;
    } else {
      u32 blocks = 0;
#ifdef __CUDA_ARCH__
      // Every thread of the CTA constructs the scheduler, converged: each warp sums the counts with its 32 lanes
      // (G independent loads in 32-wide steps, not G dependent ones per thread) and reduces.
      for (u32 i = threadIdx.x % 32; i < g.num_groups; i += 32) blocks += ceil_div(rows_of(i), BLOCK_M);
      blocks = __reduce_add_sync(0xffffffffu, blocks);
#else
      for (u32 i = 0; i < g.num_groups; ++i) blocks += ceil_div(rows_of(i), BLOCK_M);  // host tests
#endif
      num_units = blocks * num_cn;
      cur_units = g.num_groups > 0 ? ceil_div(rows_of(0), BLOCK_M) * num_cn : 0u;
    }
  }

  /// Masked: group i's row count, clamped to 0..M_max (the host checks masked_m <= M_max; a bad count must not
  /// make the kernel read or write another group's rows).
  __device__ __forceinline__ u32 rows_of(u32 i) const {
    const int v = __ldg(g.layout + i);
    return v <= 0 ? 0u : min_of(u32(v), g.m_max);
  }

  /// Contiguous: the m_indices entry of the first row of `unit`'s m-block (its group, or -1 for a padding block), -1
  /// past the last unit. The one global load of a contiguous unit: the consumers issue it a unit ahead (work_from),
  /// so that its latency (an L2 hit, ~0.5 us) hides behind the previous unit's mainloop instead of delaying the skip
  /// test and the first WGMMA of every unit.
  __device__ __forceinline__ int lookup(u32 unit, u32 rank_n) const {
    if (unit >= num_units) return -1;
    const u32 m_block = tiles.work(unit, 0, rank_n).m_block;
    return m_block < M / BLOCK_M ? __ldg(g.layout + m_block * BLOCK_M) : -1;
  }

  /// Contiguous: work(unit) with the unit's m_indices entry already loaded (`grp` = lookup(unit, rank_n)).
  __device__ __forceinline__ GroupedWorkUnit work_from(u32 unit, u32 rank_n, int grp) const {
    static_assert(kGroupKind == kGroupContiguous, "work_from: contiguous kernels only");
    GroupedWorkUnit w;
    w.split = 0;
    w.k_begin = 0;
    w.k_end = grp < 0 ? 0u : num_k_blocks;  // a padding block (or past the end): skipped by producer and consumers
    const WorkUnit t = tiles.work(unit, 0, rank_n);
    w.m_block = t.m_block;
    w.n_block = t.n_block;
    w.group = grp < 0 ? 0u : u32(grp);
    w.row_end = M;
    w.scale_m0 = t.m_block * BLOCK_M;
    w.sa_off = 0;
    w.b_row0 = w.group * N;
    w.sb_off = w.group * g.sb_group;
    return w;
  }

  /// The unit's tile and group (producer, consumers and host tests alike; contiguous kernels' consumers use
  /// lookup + work_from to load the group a unit ahead).
  __device__ __forceinline__ GroupedWorkUnit work(u32 unit, u32 /*rank_m*/, u32 rank_n) const {
    if constexpr (kGroupKind == kGroupContiguous) {
      return work_from(unit, rank_n, lookup(unit, rank_n));
    } else {
      GroupedWorkUnit w;
      w.split = 0;
      w.k_begin = 0;
      w.k_end = num_k_blocks;
      // Advance the cursor to the group that owns `unit` (empty groups own no unit and are stepped over).
      while (cur < g.num_groups && unit >= cur_first + cur_units) {
        cur_first += cur_units;
        ++cur;
        cur_units = cur < g.num_groups ? ceil_div(rows_of(cur), BLOCK_M) * num_cn : 0u;
      }
      const u32 grp = cur < g.num_groups ? cur : 0u;
      if (cur >= g.num_groups) w.k_end = 0;  // past the last unit (the producer's first unit of an idle CTA)
      const u32 t = unit - cur_first;
      const u32 m_in_group = cn_div.div(t);
      const u32 cn = t - m_in_group * num_cn;
      w.m_block = grp * (g.m_max / BLOCK_M) + m_in_group;
      w.group = grp;
      w.row_end = grp * g.m_max + (cur < g.num_groups ? rows_of(grp) : 0u);
      w.scale_m0 = m_in_group * BLOCK_M;
      w.sa_off = grp * g.sa_group;
      w.n_block = cn * kClusterN + rank_n;
      w.b_row0 = w.group * N;
      w.sb_off = w.group * g.sb_group;
      return w;
    }
  }

  /// False for the spare CTAs of an edge cluster (n-block past the group's columns) and skipped units.
  __device__ __forceinline__ bool valid(const GroupedWorkUnit& w) const {
    return w.n_block < num_n_blocks && w.k_end > w.k_begin;
  }
};

/// Whether scheduler S is a contiguous grouped one (S::kContiguous is read only for grouped schedulers: a member of
/// the dense TileScheduler added a byte of global data to every dense kernel).
template <class S>
__device__ constexpr bool is_contiguous() {
  if constexpr (S::kGrouped) return S::kContiguous;
  else return false;
}

/// The epilogue's row check for contiguous kernels: a row is stored only when its m_indices entry is >= 0.
struct ContiguousRows {
  const int* m_indices;
  __device__ __forceinline__ bool operator()(u32 row) const { return __ldg(m_indices + row) >= 0; }
};

}  // namespace dgt::gemm
