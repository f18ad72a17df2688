// A coarse analytic estimate of a candidate's time, used to rank candidates: the order in which a
// sweep measures them, what --max-candidates keeps, and what --strategy model measures. It is a
// ranking model, calibrated so that measuring its top 16 (on the fitted data even its top 8) finds the
// exhaustive winner; its absolute
// values are not predictions (they run about 2x high). Not a substitute for measuring.
#pragma once

#include <vector>

#include "problem/kernel_config.hpp"
#include "space/search_space.hpp"

namespace dgt {

/// Constants of the estimate. Fitted by coordinate descent on 9726 verified trials of the default
/// space over configs/shapes/deepseek-v3.txt and square.txt on the H200 (results/h200/issue3-sweeps.md):
/// with them the model's top 8 contains the exhaustive winner (within 3%) for all 40 shapes; fitting on
/// a random half of the shapes also passes the other half.
struct CostConstants {
  double sm_flops = 6.0e12;      ///< effective FP8 FLOP/s of one SM at efficiency 1
  double n_half = 75;            ///< WGMMA efficiency BLOCK_N / (BLOCK_N + n_half)
  double one_wg_m64 = 0.625;     ///< efficiency with one consumer WG holding a single m64 slice (BLOCK_M 64)
  double promote = 0.93;         ///< efficiency with FP32 promotion every k-block, one WGMMA group in flight (1g)
  double promote_2g = 0.99;      ///< the same with two groups in flight (2g): promotion overlaps the next WGMMAs
  double cluster = 0.95;         ///< efficiency of a CTA in a 2- or 4-CTA cluster: multicast measured 1.5-6% slower
                                 ///< than 1x1 on the H200 even with 2g (kernel-perf-notes.md), a prior until refit
  double bk256 = 1.19;           ///< efficiency with BLOCK_K 256 (fewer barrier round trips)
  double swizzle64 = 0.6;        ///< efficiency with 64-byte swizzle (more TMA boxes, bank conflicts)
  double swizzle32 = 0.35;       ///< efficiency with 32-byte swizzle
  double k_block_us = 0.167;     ///< fixed cost per k-block (barrier wait, fence, commit/wait)
  double unit_us = 0.6;          ///< fixed cost per work unit (fill, epilogue, scheduling)
  double tma_store = 0.6;        ///< unit time factor with the TMA-store epilogue (store overlaps the next unit)
  double l2_tbps = 9.0;          ///< L2 -> SM bandwidth of the whole GPU
  double dram_tbps = 3.6;        ///< HBM bandwidth
  double reduce_tbps = 0.5;      ///< split-K partial traffic, whole GPU
  int resident_clusters_2 = 66;  ///< resident 2-CTA clusters (one CTA per SM)
  int resident_clusters_4 = 33;  ///< resident 4-CTA clusters
  double launch_us = 3.0;
};

/// Estimated microseconds for `spec` on `p` with `sm_count` SMs:
///   units = cluster tiles x K splits, run in waves of the resident CTAs (or clusters, or `sms`);
///   per unit: max(WGMMA time at sm_flops x efficiency(BLOCK_N, consumer WGs, promotion, BLOCK_K,
///   swizzle), operand bytes over the unit's share of L2 bandwidth, multicast operands counted once per
///   cluster) + k-blocks x k_block_us + unit_us, scaled by tma_store for the TMA-store epilogue, plus
///   split-K partial traffic; DRAM floor: operand panels read once per rasterization band, D written
///   once, split-K partials written and read; total = max(waves x unit, DRAM floor) + launch.
double estimate_us(const KernelSpec& spec, const Problem& p, int sm_count, const CostConstants& k = {});

/// The kept candidates of `space` for `p` (enumerate()), most promising first: ascending
/// estimate_us, ties in the enumeration's canonical order (a stable sort, so the order is reproducible).
/// `limit` > 0 keeps only the first `limit`. What a sweep measures first, what `--strategy model`
/// measures and what `dgtune gate --search K` screens.
std::vector<KernelConfig> rank_by_estimate(const SearchSpace& space, const Problem& p, int sm_count, size_t limit = 0);

/// The documented default config for shapes the tuning DB does not know (used by the loader):
/// BLOCK_M = 64 (one consumer warpgroup) when M <= 64, else 128 (two consumer warpgroups);
/// BLOCK_N = 128, or N rounded up to 16 when N < 128; BLOCK_K = 128; 128-byte swizzle; the deepest
/// pipeline (<= 8 stages) that fits shared memory; raster along M, group 8; direct epilogue; no split;
/// two WGMMA groups in flight, which promote every k-block in both accumulation modes (rule R20). Where
/// that is illegal for the problem's scale mode (block1d1d's column scales, R10), BLOCK_N shrinks by 16
/// until it is legal.
KernelConfig default_config(const Problem& p);

}  // namespace dgt
