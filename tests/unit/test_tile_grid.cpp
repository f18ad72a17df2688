// TileGrid (space/tile_grid.hpp) and its agreement with the device scheduler: kernels/gemm/
// scheduler.cuh is compiled here, on the host, with shims for the CUDA qualifiers, and both are asked
// for every work unit of a grid of shapes, tiles, cluster shapes, rasterizations, bands and splits.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "space/tile_grid.hpp"

// ---- host shims for the device headers (kernels/common.cuh), defined before including them ----
#ifndef __device__
#define __device__
#endif
#ifndef __forceinline__
#define __forceinline__ inline
#endif
inline unsigned long long __cvta_generic_to_shared(const void* p) { return reinterpret_cast<unsigned long long>(p); }
#include "gemm/scheduler.cuh"  // kernels/ is on this file's include path (tests/CMakeLists.txt)

namespace dgt {
namespace {

// ---- TileGrid on its own ----

KernelConfig config(int bm, int bn, int bk, int cm, int cn, Raster r, int group, int split_k, int sms = 0) {
  KernelConfig c;
  c.block_m = bm, c.block_n = bn, c.block_k = bk, c.cluster_m = cm, c.cluster_n = cn, c.raster = r, c.group = group;
  c.split_k = split_k, c.sms = sms;
  return c;
}

TEST(TileGrid, CountsByHand) {
  // 4096 x 4096 x 4096 with 128 x 128 x 128 tiles, 2x1 clusters, 3 splits: 32 x 32 tiles, 16 x 32
  // cluster tiles, 32 k-blocks in splits of 11, 11, 10.
  const TileGrid g = TileGrid::of(config(128, 128, 128, 2, 1, Raster::kAlongM, 8, 3), 4096, 4096, 4096);
  EXPECT_EQ(g.m_blocks, 32);
  EXPECT_EQ(g.n_blocks, 32);
  EXPECT_EQ(g.k_blocks, 32);
  EXPECT_EQ(g.tiles(), 1024);
  EXPECT_EQ(g.cluster_rows, 16);
  EXPECT_EQ(g.cluster_cols, 32);
  EXPECT_EQ(g.splits, 3);
  EXPECT_EQ(g.k_blocks_per_split, 11);
  EXPECT_EQ(g.units(), 16 * 32 * 3);
  EXPECT_EQ(g.cluster_size(), 2);
  // 66 resident 2-CTA clusters: 1536 units = 23 full waves + 18 units.
  EXPECT_EQ(g.waves(66), 24);
  EXPECT_DOUBLE_EQ(g.last_wave_fill(66), 18.0 / 66.0);
  EXPECT_EQ(g.grid_clusters(66), 66);
  // Odd and tiny: 7 x 48 x 80 with 64 x 16 x 64 tiles: 1 x 3 tiles, 2 k-blocks, split 4 runs as 2.
  const TileGrid t = TileGrid::of(config(64, 16, 64, 1, 1, Raster::kAlongN, 1, 4), 7, 48, 80);
  EXPECT_EQ(t.tiles(), 3);
  EXPECT_EQ(t.splits, 2);
  EXPECT_EQ(t.k_blocks_per_split, 1);
  EXPECT_EQ(t.units(), 6);
  EXPECT_EQ(t.grid_clusters(132), 6);
  EXPECT_EQ(t.waves(132), 1);
  EXPECT_DOUBLE_EQ(t.last_wave_fill(132), 6.0 / 132.0);
  EXPECT_DOUBLE_EQ(t.last_wave_fill(3), 1.0);
  // A 2x2 cluster over a 3 x 3 tile grid: 2 x 2 cluster tiles, spare CTAs on the edges.
  const TileGrid e = TileGrid::of(config(128, 128, 128, 2, 2, Raster::kAlongM, 8, 1), 300, 300, 128);
  EXPECT_EQ(e.cluster_tiles(), 4);
  EXPECT_FALSE(e.valid(e.unit(3, 1, 1)));  // block (3, 3)
  EXPECT_TRUE(e.valid(e.unit(0, 1, 1)));
}

TEST(TileGrid, ClusterSplitLaunchesTheSplitsOfATileAsOneCluster) {
  // 1 x 2112 x 7168 with 64 x 32 x 256 tiles, split 2 through distributed shared memory: 66 tiles, 28 k-blocks
  // in 2 splits of 14; one launched cluster is the 2 CTAs of a tile, so 66 cluster units of 2 CTAs.
  KernelConfig c = config(64, 32, 256, 1, 1, Raster::kAlongM, 8, 2);
  c.split_cluster = true;
  const TileGrid g = TileGrid::of(c, 1, 2112, 7168);
  EXPECT_EQ(g.tiles(), 66);
  EXPECT_EQ(g.splits, 2);
  EXPECT_EQ(g.split_cluster, 2);
  EXPECT_EQ(g.cluster_size(), 2);
  EXPECT_EQ(g.units(), 132);         // the device scheduler's (tile, split) units
  EXPECT_EQ(g.cluster_units(), 66);  // what one cluster takes at a time
  EXPECT_EQ(g.grid_clusters(66), 66);
  EXPECT_EQ(g.waves(60), 2);
  // Unit cluster * 2 + rank is split `rank` of the cluster's tile.
  EXPECT_EQ(g.unit(2 * 5 + 1).split, 1);
  EXPECT_EQ(g.unit(2 * 5 + 1).n_block, g.unit(2 * 5).n_block);
  // The workspace split of the same config: units are scheduled one CTA at a time.
  c.split_cluster = false;
  const TileGrid w = TileGrid::of(c, 1, 2112, 7168);
  EXPECT_EQ(w.split_cluster, 1);
  EXPECT_EQ(w.cluster_size(), 1);
  EXPECT_EQ(w.cluster_units(), 132);
  EXPECT_EQ(w.grid_clusters(132), 132);
}

TEST(TileGrid, EffectiveSplitsLeaveNoSplitEmpty) {
  for (int bk : {64, 128, 256})
    for (int64_t k : {1, 7, 64, 80, 127, 128, 129, 1280, 4095, 7168, 16384})
      for (int s = 1; s <= 16; ++s) {
        const TileGrid g = TileGrid::of(config(128, 128, bk, 1, 1, Raster::kAlongM, 1, s), 128, 128, k);
        ASSERT_GE(g.splits, 1);
        ASSERT_LE(g.splits, s);
        ASSERT_EQ(g.splits, effective_splits(g.splits == s ? config(128, 128, bk, 1, 1, Raster::kAlongM, 1, s)
                                                           : config(128, 128, bk, 1, 1, Raster::kAlongM, 1, g.splits),
                                             k));  // a fixed point
        for (int sp = 0; sp < g.splits; ++sp) {
          const TileUnit u = g.unit(sp);
          ASSERT_LT(u.k_begin, u.k_end) << "split " << sp << " of " << g.splits << " is empty (K " << k << ", BK " << bk
                                        << ")";
        }
        ASSERT_EQ(g.unit(g.splits - 1).k_end, g.k_blocks);
      }
}

TEST(TileGrid, EveryTileAndSplitIsCoveredOnce) {
  for (auto [m, n, k] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {97, 211, 1021}, {1000, 333, 7168}, {4096, 576, 512}})
    for (auto [cm, cn] : {std::pair{1, 1}, {2, 1}, {1, 2}, {2, 2}})
      for (Raster r : {Raster::kAlongM, Raster::kAlongN})
        for (int group : {1, 3, 8, 64})
          for (int split : {1, 3, 16}) {
            const TileGrid g = TileGrid::of(config(64, 48, 128, cm, cn, r, group, split), m, n, k);
            std::map<std::tuple<int64_t, int64_t, int>, int> seen;
            for (int64_t i = 0; i < g.units(); ++i)
              for (int rm = 0; rm < cm; ++rm)
                for (int rn = 0; rn < cn; ++rn) {
                  const TileUnit u = g.unit(i, rm, rn);
                  ASSERT_LT(u.k_begin, u.k_end);
                  if (g.valid(u)) ++seen[{u.m_block, u.n_block, u.split}];
                }
            ASSERT_EQ(static_cast<int64_t>(seen.size()), g.tiles() * g.splits);
            for (const auto& [key, count] : seen) ASSERT_EQ(count, 1);
          }
}

// ---- the scheduler's fast division (kernels/common.cuh FastDiv, make_fast_div) ----

TEST(FastDiv, MultiplyHighMatchesDivisionForEveryDividendBelow2To31) {
  // Divisors 1..4096 (splits, bands, band widths), powers of two and their neighbours up to 2^30, and large odd
  // ones; dividends 0..4095, near every multiple of the divisor up to 64 d, and near 2^31.
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; d <= 4096; ++d) divisors.push_back(d);
  for (uint32_t l = 12; l <= 30; ++l)
    for (int64_t e : {-1, 0, 1}) divisors.push_back(static_cast<uint32_t>((int64_t{1} << l) + e));
  for (uint32_t d : {65521u, 1000003u, 2147483647u, 2147483646u}) divisors.push_back(d);
  int64_t checked = 0;
  for (uint32_t d : divisors) {
    const FastDivParams f = make_fast_div(d);
    // The same arithmetic as the device: the host emulation and the device struct (kernels/common.cuh).
    const FastDiv dev{f.mul, f.shr, f.d};
    auto check = [&](uint64_t n) {
      if (n >= (uint64_t{1} << 31)) return;
      const uint32_t q = static_cast<uint32_t>(n / d);
      ASSERT_EQ(f.div(static_cast<uint32_t>(n)), q) << n << " / " << d << " (mul " << f.mul << ", shr " << f.shr << ")";
      ASSERT_EQ(dev.div(static_cast<uint32_t>(n)), q) << n << " / " << d;
      ++checked;
    };
    for (uint64_t n = 0; n < 4096; ++n) check(n);
    for (uint64_t j = 1; j <= 64; ++j)
      for (int64_t e : {-1, 0, 1}) check(static_cast<uint64_t>(int64_t(j * d) + e));
    for (uint64_t n = (uint64_t{1} << 31) - 4096; n < (uint64_t{1} << 31); ++n) check(n);
  }
  EXPECT_GT(checked, 34'000'000);  // 34.8 million pairs
  EXPECT_THROW(make_fast_div(0), Error);
  EXPECT_THROW(make_fast_div(2147483648u), Error);
}

// The kernel argument is the host struct's bytes (GemmKernel::launch passes &SchedulerDivisors for the device's
// SchedDivisors): same size, and the same values field by field after a byte copy.
static_assert(sizeof(gemm::SchedDivisors) == sizeof(SchedulerDivisors), "kernel argument layout");
TEST(FastDiv, HostDivisorsAreTheKernelArgumentByteForByte) {
  const KernelConfig c = KernelConfig::parse_key("64x48x256_s7_wg1_sw128_c1x1_rm4_tma_sk3_sm0_2g_p1");
  const SchedulerDivisors h = TileGrid::of(c, 1, 2112, 7168).divisors();
  gemm::SchedDivisors d{};
  std::memcpy(&d, &h, sizeof(h));
  EXPECT_EQ(d.splits.d, 3u);
  EXPECT_EQ(d.splits.mul, h.splits.mul);
  EXPECT_EQ(d.splits.shr, h.splits.shr);
  // Raster along M: the major count is the cluster rows (1 m-block), bands of 4 n-blocks; 2112 / 48 = 44 n-blocks,
  // so the last band is 44 % 4 = 4 wide (a full band).
  EXPECT_EQ(d.band.d, 4u * 1u);
  EXPECT_EQ(d.last_band.d, 4u);
  EXPECT_EQ(d.last_band.mul, h.last_band.mul);
  for (uint32_t n : {0u, 1u, 43u, 131u, 2147483647u}) EXPECT_EQ(d.band.div(n), n / 4u);
}

// ---- host TileGrid vs device TileScheduler ----

struct Shape {
  uint32_t m, n, k;
};
// Tiny, odd, prime, exact multiples, K tails, and large (DeepSeek-V3 and square sizes).
const Shape kShapes[] = {{1, 1, 1},       {7, 48, 80},        {16, 16, 7},        {64, 64, 64},       {97, 211, 1021},
                         {127, 129, 255}, {128, 8, 128},      {131, 4093, 257},   {257, 1, 8191},     {1000, 333, 7168},
                         {64, 576, 7168}, {4096, 4096, 4096}, {7168, 2112, 7168}, {8191, 131, 16384}, {2, 7168, 1536}};
const int kSplits[] = {1, 2, 3, 4, 5, 7, 8, 16};

/// Units checked per (config, shape, split): all when few, else a deterministic spread.
std::vector<int64_t> units_to_check(int64_t units) {
  std::vector<int64_t> out;
  if (units <= 3000) {
    for (int64_t i = 0; i < units; ++i) out.push_back(i);
    return out;
  }
  for (int64_t i = 0; i < 1000; ++i) out.push_back(i);
  for (int64_t i = units - 1000; i < units; ++i) out.push_back(i);
  for (int64_t i = 1000, step = units / 1000 | 1; i < units - 1000; i += step) out.push_back(i);
  return out;
}

int64_t g_checked = 0;

template <uint32_t BM, uint32_t BN, uint32_t BK, uint32_t CM, uint32_t CN, bool kAlongM, uint32_t kGroup>
void check_agreement() {
  if (::testing::Test::HasFatalFailure()) return;  // report the first disagreement only
  using Sched = gemm::TileScheduler<BM, BN, BK, CM, CN, kAlongM, kGroup>;
  const Raster raster = kAlongM ? Raster::kAlongM : Raster::kAlongN;
  for (const Shape& s : kShapes)
    for (int split_k : kSplits) {
      const KernelConfig c = config(int(BM), int(BN), int(BK), int(CM), int(CN), raster, int(kGroup), split_k);
      const TileGrid g = TileGrid::of(c, s.m, s.n, s.k);
      // The launcher passes the effective split count (GemmKernel::effective_splits).
      const SchedulerDivisors hd = g.divisors();  // what GemmKernel::launch passes
      const gemm::SchedDivisors dd{{hd.splits.mul, hd.splits.shr, hd.splits.d},
                                   {hd.band.mul, hd.band.shr, hd.band.d},
                                   {hd.last_band.mul, hd.last_band.shr, hd.last_band.d}};
      const Sched d(s.m, s.n, s.k, static_cast<uint32_t>(g.splits), dd);
      const std::string where =
          c.key() + " on " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
      ASSERT_EQ(int64_t(d.num_m_blocks), g.m_blocks) << where;
      ASSERT_EQ(int64_t(d.num_n_blocks), g.n_blocks) << where;
      ASSERT_EQ(int64_t(d.num_k_blocks), g.k_blocks) << where;
      ASSERT_EQ(int64_t(d.num_cm), g.cluster_rows) << where;
      ASSERT_EQ(int64_t(d.num_cn), g.cluster_cols) << where;
      ASSERT_EQ(int64_t(d.num_splits), g.splits) << where;
      ASSERT_EQ(int64_t(d.k_per_split), g.k_blocks_per_split) << where;
      ASSERT_EQ(int64_t(d.num_units), g.units()) << where;
      for (int64_t i : units_to_check(g.units()))
        for (uint32_t rm = 0; rm < CM; ++rm)
          for (uint32_t rn = 0; rn < CN; ++rn) {
            const gemm::WorkUnit w = d.work(static_cast<uint32_t>(i), rm, rn);
            const TileUnit h = g.unit(i, int(rm), int(rn));
            const TileUnit dev{int64_t(w.m_block), int64_t(w.n_block), int(w.split), int64_t(w.k_begin),
                               int64_t(w.k_end)};
            ASSERT_EQ(dev, h) << where << " unit " << i << " rank " << rm << "," << rn << ": device (" << dev.m_block
                              << ", " << dev.n_block << ", split " << dev.split << ", k " << dev.k_begin << ".."
                              << dev.k_end << ") host (" << h.m_block << ", " << h.n_block << ", split " << h.split
                              << ", k " << h.k_begin << ".." << h.k_end << ")";
            ASSERT_EQ(d.valid(w), g.valid(h)) << where << " unit " << i;
            ++g_checked;
          }
    }
}

template <uint32_t BM, uint32_t BN, uint32_t BK, uint32_t CM, uint32_t CN, bool kAlongM, uint32_t... kGroups>
void check_groups(std::integer_sequence<uint32_t, kGroups...>) {
  (check_agreement<BM, BN, BK, CM, CN, kAlongM, kGroups>(), ...);
}

template <uint32_t BM, uint32_t BN, uint32_t BK, class Groups>
void check_tile(Groups groups) {
  check_groups<BM, BN, BK, 1, 1, true>(groups);
  check_groups<BM, BN, BK, 1, 1, false>(groups);
  check_groups<BM, BN, BK, 2, 1, true>(groups);
  check_groups<BM, BN, BK, 2, 1, false>(groups);
  check_groups<BM, BN, BK, 1, 2, true>(groups);
  check_groups<BM, BN, BK, 1, 2, false>(groups);
  check_groups<BM, BN, BK, 2, 2, true>(groups);
  check_groups<BM, BN, BK, 2, 2, false>(groups);
}

template <uint32_t... I>
constexpr auto plus_one(std::integer_sequence<uint32_t, I...>) {
  return std::integer_sequence<uint32_t, (I + 1)...>{};
}

TEST(TileGridVsDeviceScheduler, EveryGroupRasterAndClusterOnTheDefaultTile) {
  g_checked = 0;
  // Every rasterization band 1..64 (R12), both rasterizations, every cluster shape (R11).
  check_tile<128, 128, 128>(plus_one(std::make_integer_sequence<uint32_t, 64>{}));
  EXPECT_GT(g_checked, 1000000);
}

TEST(TileGridVsDeviceScheduler, OtherTileSizes) {
  g_checked = 0;
  using Groups = std::integer_sequence<uint32_t, 1, 2, 5, 8, 64>;
  check_tile<64, 16, 128>(Groups{});
  check_tile<256, 112, 64>(Groups{});
  check_tile<64, 256, 256>(Groups{});
  check_tile<128, 8, 64>(Groups{});
  check_tile<256, 184, 128>(Groups{});
  EXPECT_GT(g_checked, 100000);
}

TEST(TileGridVsDeviceScheduler, CeilDivAgrees) {
  for (uint32_t b : {1u, 2u, 7u, 8u, 64u, 112u, 128u, 256u})
    for (uint32_t a : {0u, 1u, 7u, 63u, 64u, 65u, 127u, 4095u, 4096u, 4097u, 65535u, 1u << 30})
      ASSERT_EQ(int64_t(dgt::ceil_div(a, b)),
                TileGrid::of(config(int(b), 8, 64, 1, 1, Raster::kAlongM, 1, 1), a, 8, 64).m_blocks)
          << a << " / " << b;
}

}  // namespace
}  // namespace dgt
