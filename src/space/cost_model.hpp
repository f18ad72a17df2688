// A coarse analytic estimate of a candidate's time, used to rank candidates: the order in which a
// sweep measures them, what --max-candidates keeps, and what --strategy model measures. It is a
// ranking model, calibrated so that measuring its top 16 (on the fitted data even its top 12) finds the
// exhaustive winner or one within 3%; its absolute values are not predictions (on the fitted data they
// run about 3x high: 2.9x on the median of the 59 winners, 1.3x to 4.4x). Not a substitute for measuring.
// scripts/cost_model.py mirrors estimate_us for scripts/fit_cost_model.py; change both together.
#pragma once

#include <vector>

#include "problem/kernel_config.hpp"
#include "space/search_space.hpp"

namespace dgt {

/// Constants of the estimate. Refitted for kernel v2 (issue 7) by scripts/fit_cost_model.py (coordinate
/// descent, 8 seeded restarts, objective: shapes failing + sum of gaps of the top 16; values to 4 digits)
/// on the 18038 verified cold-l2-v1 trials of results/tuning.db (H200, 2026-11-29): every kept candidate of
/// the default space for configs/shapes/deepseek-v3.txt and square.txt in promote mode (40 shapes, kernel
/// hash b3105e86aeda15bd; the five 2o candidates per shape with M >= 128 were not measured) and for their
/// 19 shapes with M >= 2048 in fast mode (kernel hash 3b627f8651936ca6). With them the model's top 16
/// holds the exhaustive winner or one within 3% for all 59 problems (for all of them within its top 12);
/// held-out checks (fit on half of the shapes, leave one shape out): results/h200/model-check-v2.md. The
/// previous constants, fitted on 9726 trials of kernel v1 (results/h200/issue3-sweeps.md), missed 2 of them.
/// The values are what ranks best, not hardware figures (dram_tbps is not the HBM's bandwidth, nor
/// sm_flops an SM's peak); launch_us (no influence on a ranking) and the resident cluster counts (the
/// hardware's) were not fitted.
struct CostConstants {
  double sm_flops = 3.7e12;      ///< effective FP8 FLOP/s of one SM at efficiency 1
  double n_half = 43.07;         ///< WGMMA efficiency BLOCK_N / (BLOCK_N + n_half)
  double one_wg_m64 = 0.4514;    ///< efficiency with one consumer WG holding a single m64 slice (BLOCK_M 64)
  double promote = 0.8065;       ///< efficiency with FP32 promotion every k-block, one WGMMA group in flight (1g)
  double promote_2g = 0.8464;    ///< the same with two groups in flight (2g): promotion overlaps the next WGMMAs
  double cluster = 0.9574;       ///< efficiency of a CTA in a 2- or 4-CTA cluster. Not fitted for ranking: set so
                                 ///< that the model's 1x1/cluster time ratio equals the measured one on the median
                                 ///< of the 249 measured (cluster, same config 1x1) pairs: the cluster ran ~4%
                                 ///< slower on the median pair (faster in 38); no 1x1 config ranks behind its cluster
  double bk256 = 1.09;           ///< efficiency with BLOCK_K 256 (fewer barrier round trips)
  double swizzle64 = 0.4196;     ///< efficiency with 64-byte swizzle (more TMA boxes, bank conflicts)
  double swizzle32 = 0.435;      ///< efficiency with 32-byte swizzle
  double k_block_us = 0.06922;   ///< fixed cost per k-block (barrier wait, fence, commit/wait)
  double unit_us = 0.2445;       ///< fixed cost per work unit (fill, epilogue, scheduling)
  double tma_store = 0.7689;     ///< unit time factor with the TMA-store epilogue (store overlaps the next unit)
  double l2_tbps = 12.16;        ///< L2 -> SM bandwidth of the whole GPU
  double dram_tbps = 2.562;      ///< HBM bandwidth
  double reduce_tbps = 1.074;    ///< split-K partial traffic, whole GPU
  // Clusters of 2, 3, 4, 6 and 8 CTAs resident at once with one CTA per SM: cuOccupancyMaxActiveClusters on the
  // H200 (`dgtune info`, max_active_clusters: 2:66 3:39 4:30 6:17 8:15). A cluster sits in one GPC, so 4-CTA
  // clusters fill 120 of the 132 SMs, not 132 (33, assumed before, made 33-tile cluster splits look one wave long;
  // measured: 128x64 split 4 through a cluster 20.2 us, through the workspace 12.9 us, 128x2112x7168).
  int resident_clusters_2 = 66;
  int resident_clusters_3 = 39;
  int resident_clusters_4 = 30;
  int resident_clusters_6 = 17;
  int resident_clusters_8 = 15;
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
