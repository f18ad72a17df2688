// A coarse analytic estimate of a candidate's time, used to rank candidates: the order in which a
// sweep measures them, what --max-candidates keeps, and what --strategy model measures. Not a
// substitute for measuring.
#pragma once

#include "problem/kernel_config.hpp"

namespace dgt {

/// Machine constants of the estimate (H100/H200 SXM class; datasheet-level, then calibrated against
/// measured sweeps, see results/h200/).
struct CostConstants {
  double fp8_tflops = 1979;       ///< dense FP8 tensor rate of the whole GPU (TFLOP/s)
  double dram_tbps = 3.6;         ///< achievable HBM bandwidth (TB/s)
  double l2_tbps = 9.0;           ///< achievable L2 -> SM bandwidth of the whole GPU (TB/s)
  double launch_us = 3.0;         ///< launch + prologue + tail latency of one kernel
  double unit_overhead_us = 0.6;  ///< per work unit: pipeline fill, epilogue, scheduling
};

/// Estimated microseconds for `spec` on `p` with `sm_count` SMs:
///   - work units = cluster tiles x K splits, run in waves of min(SMs, sms) CTAs;
///   - per unit: max(WGMMA time at the per-SM FP8 rate scaled by an efficiency for BLOCK_N, consumer
///     warpgroups and promotion, operand time at the per-SM share of L2 bandwidth, with the multicast
///     operand counted once per cluster) plus a fixed overhead, times a penalty for pipelines under
///     4 stages;
///   - a DRAM floor: every operand panel read once per band of the rasterization (the tiles that run
///     together share what they touch), D written once, split-K partials written and read;
///   - total = max(compute waves, DRAM floor) + launch.
double estimate_us(const KernelSpec& spec, const Problem& p, int sm_count, const CostConstants& k = {});

/// The documented default config for shapes the tuning DB does not know (used by the loader):
/// BLOCK_M = 64 (one consumer warpgroup) when M <= 64, else 128 (two consumer warpgroups);
/// BLOCK_N = 128, or N rounded up to 16 when N < 128; BLOCK_K = 128; 128-byte swizzle; the deepest
/// pipeline (<= 8 stages) that fits shared memory; raster along M, group 8; direct epilogue; no split.
KernelConfig default_config(const Problem& p);

}  // namespace dgt
