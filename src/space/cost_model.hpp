// A coarse analytic estimate of a candidate's time, used to rank candidates: the order in which a
// sweep measures them, what --max-candidates keeps, and what --strategy model measures. It is a
// ranking model, calibrated so that measuring its top 16 (on the fitted data even its top 12) finds the
// exhaustive winner or one within 3%; its absolute values are not predictions (on the fitted data they
// run about 3x high: 2.9x on the median of the 59 winners, 1.3x to 4.4x). Not a substitute for measuring.
// tools/cost_model/cost_model.py mirrors estimate_us and rank_candidates' order for tools/cost_model/fit_cost_model.py;
// change both together.
#pragma once

#include <vector>

#include "problem/kernel_config.hpp"
#include "space/search_space.hpp"

namespace dgt {

/// Constants of the estimate, refitted on 2026-12-01 with the pipeline-depth term (load_latency_us) by
/// tools/cost_model/fit_cost_model.py (coordinate descent, 4 seeded restarts from the previous constants plus
/// load_latency_us = 4; objective: shapes failing + sum of gaps of the top 16; values to 4 digits) on the verified
/// cold-l2-v1 trials of two committed DBs (H200; results/fits/README.md): results/fits/large-shapes-pp-2026-11-30.db.gz
/// (the 2026-11-29 exhaustive sweeps of the 19 shapes of configs/shapes/deepseek-v3.txt and square.txt with
/// M >= 2048 in both accumulation modes, kernel hashes b3105e86aeda15bd / 3b627f8651936ca6, plus 168 trials of the
/// final binary of 2026-11-30 with pp configs, the model's top 24 of the 7 fast shapes with K <= 2048) and
/// results/fits/small-m-2026-11-30.db.gz (the exhaustive sweep of 2026-11-30 of the 24 shapes of
/// deepseek-v3-small-m.txt, i.e. deepseek-v3.txt's 21 with M <= 128 and the three tails). With them the model's
/// top 16 held the exhaustive winner or one within 3% for all 59 problems (40 promote, 19 fast); since cluster_1g
/// (below) 58: 4096x32768x512 fast misses by 4.2%, where 1g cluster configs, which those sweeps did not measure, took
/// top-16 places; held out (fit on
/// half of the shapes, leave one shape out): 3 and 1 misses, results/h200/model-check-v2.md, section
/// "2026-12-01". The constants before (fitted on the 2026-11-29 data without the small-M kernel of 2026-11-30
/// and without pp) missed 5 of the 59. The values are what ranks best, not hardware figures (dram_tbps is not
/// the HBM's bandwidth, nor sm_flops an SM's peak, nor load_latency_us a measured latency: estimates run ~2.5x
/// high on the median measured candidate); launch_us (no influence on a ranking) and the resident cluster counts
/// (the hardware's) were not fitted.
struct CostConstants {
  double sm_flops = 8.311e12;    ///< effective FP8 FLOP/s of one SM at efficiency 1
  double n_half = 6.044;         ///< WGMMA efficiency BLOCK_N / (BLOCK_N + n_half)
  double one_wg_m64 = 0.2435;    ///< efficiency with one consumer WG holding a single m64 slice (BLOCK_M 64)
  double promote = 0.6434;       ///< efficiency with FP32 promotion every k-block, one WGMMA group in flight (1g)
  double promote_2g = 0.9797;    ///< the same with two groups in flight (2g): promotion overlaps the next WGMMAs
  double cluster = 0.5841;       ///< efficiency of a 2g, 2o or pp CTA in a 2- or 4-CTA cluster (1g: cluster_1g
                                 ///< below). Not fitted for ranking: set so
                                 ///< that the model's 1x1/cluster time ratio equals the measured one on the median
                                 ///< of the 278 measured (cluster, same config 1x1) pairs: the cluster ran ~4%
                                 ///< slower on the median pair (faster in 53). Low because it scales only the WGMMA
                                 ///< time, and many units are bound by the L2 or the pipeline-depth term instead
  double bk256 = 0.9563;         ///< efficiency with BLOCK_K 256 (fewer barrier round trips)
  double swizzle64 = 0.4497;     ///< efficiency with 64-byte swizzle (more TMA boxes, bank conflicts)
  double swizzle32 = 0.4188;     ///< efficiency with 32-byte swizzle
  double k_block_us = 0.08404;   ///< fixed cost per k-block (barrier wait, fence, commit/wait)
  double unit_us = 0.9126;       ///< fixed cost per work unit (fill, epilogue, scheduling)
  double tma_store = 0.7726;     ///< unit time factor with the TMA-store epilogue (store overlaps the next unit)
  double l2_tbps = 4.941;        ///< L2 -> SM bandwidth of the whole GPU
  double dram_tbps = 3.401;      ///< HBM bandwidth
  double reduce_tbps = 0.548;    ///< split-K partial traffic, whole GPU
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
  double load_latency_us = 4.88;  ///< pipeline depth: latency of a k-block's operand loads (TMA issue to full
                                  ///< barrier); with num_stages of them in flight a unit streams at most one
                                  ///< k-block per load_latency_us / num_stages (Little's law); 0 = no such bound
  // Block scale modes (is_block_scaled): the promotion also multiplies by the A and B scales of the k-block, and the
  // ring carries the scale loads. Fitted on 2026-12-04 alone (fit_cost_model.py --fields, the constants above kept)
  // on the exhaustive cold-l2-v1 sweep of the 35 shapes of deepseek-v3-block.txt (7578 trials, H200,
  // results/h200/block-defaults-2026-12-04.md): without them the model's top 8 missed the winner by 4-26% on 12 of
  // its 14 M >= 4096 shapes (it ranked 1g BLOCK_N 136-160 tiles first, measured 10-25% slower than 128x128 2g); with
  // them the top 8 holds one within 3% on 33 of 35, as the top 16 did before (misses: 1x and 128x7168x16384).
  // Not fitted on block1d1d trials (none measured): that mode takes the same factors.
  double block_promote = 0.7343;      ///< factor on `promote` (1g) in a block scale mode
  double block_promote_2g = 0.9763;   ///< factor on `promote_2g` in a block scale mode
  double block_load_latency = 0.969;  ///< factor on load_latency_us in a block scale mode
  // One-group (1g) mainloop on a 2- or 4-CTA cluster. `cluster` above, calibrated on 2g/2o/pp pairs, made a 1g
  // cluster config estimate about 50% slower than its 1x1 twin on the median pair (the model's top 16 held none on
  // the 19 large promote shapes; with cluster_1g, 24 on 11 of them), where it measured 2% slower: 1g is WGMMA-bound
  // (its promotion factor already lowers the rate), so the factor that stands in for 2g's L2/pipeline-bound clusters
  // overcounts. Set by calibrate_cluster's rule (fit_cost_model.py: the median pair's model ratio equals the measured
  // one) on 1g pairs alone, computed by the report's scripts/calib.py from `dgtune compare --config` JSON (cold-l2-v2,
  // 10 rounds; 128x128 s6 / 128x160 s4 / 128x176 s4 on 1x1, 2x1 and 1x2; 24 large promote shapes; 144 pairs per
  // machine start): 0.9000, 0.8992 and 0.9005 on three starts of an H100
  // (results/h200/one-group-cluster-cost-2026-12-06.md). Not yet measured on an H200.
  double cluster_1g = 0.9;            ///< efficiency of a 1g CTA in a 2- or 4-CTA cluster
};

/// Estimated microseconds for `spec` on `p` with `sm_count` SMs:
///   units = cluster tiles x K splits, run in waves of the resident CTAs (or clusters, or `sms`);
///   per unit: max(WGMMA time at sm_flops x efficiency(BLOCK_N, consumer WGs, promotion, BLOCK_K,
///   swizzle), operand bytes over the unit's share of L2 bandwidth, multicast operands counted once per
///   cluster, k-blocks x load_latency_us / num_stages) + k-blocks x k_block_us + unit_us, scaled by
///   tma_store for the TMA-store epilogue, plus split-K partial traffic; DRAM floor: operand panels read
///   once per rasterization band, D written once, split-K partials written and read; total = max(waves x
///   unit, DRAM floor) + launch.
double estimate_us(const KernelSpec& spec, const Problem& p, int sm_count, const CostConstants& k = {});

/// The kept candidates of `space` for `p` (enumerate()), most promising first: ascending estimate_us. Candidates
/// that differ only in promote_every (P) and estimate exactly the same rank together, at the first one's place, by
/// their WGMMA time: largest P first. P enters only the WGMMA term, which a unit bound by its L2 or pipeline-depth
/// term (or a launch bound by DRAM) hides; measured on the H200, 4096x7168x16384 fast ran 655 us with P = 16 and
/// 700 us with the P = 2..8 that the canonical order put first. Every other tie keeps the enumeration's canonical
/// order (a stable sort, so the order is reproducible). `limit` > 0 keeps only the first `limit`. What a sweep
/// measures first, what `--strategy model` measures and what `dgtune gate --search K` screens.
/// tools/cost_model/cost_model.py's rank_order mirrors this order.
std::vector<KernelConfig> rank_by_estimate(const SearchSpace& space, const Problem& p, int sm_count, size_t limit = 0);
/// rank_by_estimate() with the candidates themselves: each keeps the resource report enumerate() computed
/// (the sweep passes it along instead of evaluating the spec again).
std::vector<Candidate> rank_candidates(const SearchSpace& space, const Problem& p, int sm_count, size_t limit = 0);

/// The documented default config for shapes the tuning DB does not know (used by the loader):
/// BLOCK_M = 64 (one consumer warpgroup) when M <= 64, else 128 (two consumer warpgroups);
/// BLOCK_N = 128, or N rounded up to 16 when N < 128; BLOCK_K = 128; 128-byte swizzle; the deepest
/// pipeline (<= 8 stages) that fits shared memory with its epilogue; raster along M, group 8; the TMA-store
/// epilogue where D's rows are 16-byte multiples (rule P3: ldd x bytes of D's type % 16 == 0), else the direct one; no split;
/// two WGMMA groups in flight, which promote every k-block in both accumulation modes (rule R20). Where
/// that is illegal for the problem's scale mode (block1d1d's column scales, R10), BLOCK_N shrinks by 16
/// until it is legal.
KernelConfig default_config(const Problem& p);

}  // namespace dgt
