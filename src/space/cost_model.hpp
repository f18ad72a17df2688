// A coarse analytic estimate of a candidate's time, used to rank candidates when only some can be
// measured (--max-candidates). Not a substitute for measuring.
#pragma once

#include "problem/kernel_config.hpp"

namespace dgt {

/// Estimated microseconds for `spec` on `p` with `sm_count` SMs:
///   waves = ceil(tiles / SMs); per tile max(MMA time, load time) with
///   MMA time = 2*BLOCK_M*BLOCK_N*K_padded / (per-SM FP8 rate * N-efficiency),
///   load time = (BLOCK_M + BLOCK_N) * K_padded bytes / (per-SM share of ~3.3 TB/s),
///   shallow pipelines (< 4 stages) expose part of the load latency.
/// The constants are H100/H200 datasheet-level (1979 dense FP8 TFLOP/s, 132 SMs).
double estimate_us(const KernelSpec& spec, const Problem& p, int sm_count);

/// The documented default config for shapes the tuning DB does not know (used by the loader):
/// BLOCK_M = 64 (one consumer warpgroup) when M <= 64, else 128 (two consumer warpgroups);
/// BLOCK_N = 128, or N rounded up to 16 when N < 128; BLOCK_K = 128; 128-byte swizzle; the deepest
/// pipeline (<= 8 stages) that fits shared memory; raster along M, group 8.
KernelConfig default_config(const Problem& p);

}  // namespace dgt
