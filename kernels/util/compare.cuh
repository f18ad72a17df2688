// Output check: compares BF16 D (M x ldd, plus guard rows) with the FP32 reference.
#pragma once
#include "common.cuh"
#include "util/fill.cuh"

namespace dgt::util {
/// Accumulated by dgt_compare; read back by the host (src/bench/verify.cpp mirrors this layout).
struct CompareStats {
  double sum_xy;        // sum d * ref
  double sum_sq;        // sum d*d + ref*ref
  u32 max_abs_err;      // float bits (non-negative floats order like their bit patterns)
  u32 max_abs_ref;      // float bits
  u64 nan_count;        // NaN/Inf in the M x N window
  u64 pad_touched;      // elements outside the window that lost the poison pattern
};

__device__ __forceinline__ float bf16_to_float(u16 v) { return __int_as_float(u32(v) << 16); }
}  // namespace dgt::util

/// Grid-stride over (rows_alloc x ldd). Elements with r < M and c < N are compared; the rest must
/// still hold kBf16Poison.
extern "C" __global__ void dgt_compare(const dgt::u16* __restrict__ d, const float* __restrict__ dref, dgt::u32 M,
                                       dgt::u32 N, dgt::u64 ldd, dgt::u64 rows_alloc, dgt::util::CompareStats* stats) {
  using namespace dgt;
  double xy = 0, sq = 0;
  float max_err = 0, max_ref = 0;
  u64 nans = 0, touched = 0;
  const u64 total = rows_alloc * ldd;
  for (u64 i = blockIdx.x * u64(blockDim.x) + threadIdx.x; i < total; i += u64(gridDim.x) * blockDim.x) {
    const u64 r = i / ldd, c = i % ldd;
    const u16 raw = d[i];
    if (r < M && c < N) {
      const float x = util::bf16_to_float(raw), y = dref[r * N + c];
      if (!isfinite(x)) {
        ++nans;
        continue;
      }
      xy += double(x) * y;
      sq += double(x) * x + double(y) * y;
      max_err = fmaxf(max_err, fabsf(x - y));
      max_ref = fmaxf(max_ref, fabsf(y));
    } else if (raw != util::kBf16Poison) {
      ++touched;
    }
  }
  // Warp reduction, then one atomic per warp.
  for (int o = 16; o > 0; o /= 2) {
    xy += __shfl_xor_sync(0xffffffffu, xy, o);
    sq += __shfl_xor_sync(0xffffffffu, sq, o);
    max_err = fmaxf(max_err, __shfl_xor_sync(0xffffffffu, max_err, o));
    max_ref = fmaxf(max_ref, __shfl_xor_sync(0xffffffffu, max_ref, o));
    nans += __shfl_xor_sync(0xffffffffu, nans, o);
    touched += __shfl_xor_sync(0xffffffffu, touched, o);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&stats->sum_xy, xy);
    atomicAdd(&stats->sum_sq, sq);
    atomicMax(&stats->max_abs_err, __float_as_uint(max_err));
    atomicMax(&stats->max_abs_ref, __float_as_uint(max_ref));
    atomicAdd(&stats->nan_count, nans);
    atomicAdd(&stats->pad_touched, touched);
  }
}
