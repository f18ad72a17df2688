// Split-K: the S CTAs of one output tile each accumulate a K slice, write the FP32 partial tile to a
// workspace and count themselves on a per-tile counter; the last to arrive sums the S partials in
// split order 0..S-1 (the same bits whatever the arrival order) and runs the epilogue. The last CTA
// also resets the counter to 0, so the counters need zeroing only once, at allocation.
#pragma once
#include "common.cuh"
#include "ptx/tma.cuh"

namespace dgt::gemm {

/// Workspace layout: [tile][split][q][consumer thread] float4, where q indexes the thread's
/// accumulators in fours (flat index j * kAccPerMma + i): consecutive threads write consecutive
/// 16-byte words. Returns true in the CTA that must finish the tile; then `acc` holds the full sum.
/// `flag` is a shared-memory word; named barrier id 1 spans all consumer threads.
template <u32 kMmaPerWG, u32 kAccPerMma, u32 kMathThreads>
__device__ __forceinline__ bool split_k_reduce(float (&acc)[kMmaPerWG][kAccPerMma], float* __restrict__ workspace,
                                               u32* __restrict__ counters, u32* flag, u32 tile, u32 split, u32 num_splits) {
  constexpr u32 kQuads = kMmaPerWG * kAccPerMma / 4;
  const u32 tid = threadIdx.x;  // consumer threads are 0 .. kMathThreads-1
  float4* base = reinterpret_cast<float4*>(workspace) + u64(tile) * num_splits * kQuads * kMathThreads;
  float4* mine = base + u64(split) * kQuads * kMathThreads;
#pragma unroll
  for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
    for (u32 i = 0; i < kAccPerMma / 4; ++i) {
      const u32 q = j * (kAccPerMma / 4) + i;
      __stcg(mine + q * kMathThreads + tid, make_float4(acc[j][4 * i], acc[j][4 * i + 1], acc[j][4 * i + 2], acc[j][4 * i + 3]));
    }
  __threadfence();
  ptx::named_barrier_sync(1, kMathThreads);
  if (tid == 0) {
    const u32 arrived = atomicAdd(counters + tile, 1u);
    const u32 last = arrived == num_splits - 1;
    if (last) counters[tile] = 0;
    *flag = last;
  }
  ptx::named_barrier_sync(1, kMathThreads);
  const bool last = *reinterpret_cast<volatile u32*>(flag) != 0;
  if (!last) return false;
  __threadfence();
  for (u32 s = 0; s < num_splits; ++s) {
    const float4* src = base + u64(s) * kQuads * kMathThreads;
#pragma unroll
    for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
      for (u32 i = 0; i < kAccPerMma / 4; ++i) {
        const float4 v = __ldcg(src + (j * (kAccPerMma / 4) + i) * kMathThreads + tid);
        if (s == 0) {
          acc[j][4 * i] = v.x, acc[j][4 * i + 1] = v.y, acc[j][4 * i + 2] = v.z, acc[j][4 * i + 3] = v.w;
        } else {
          acc[j][4 * i] += v.x, acc[j][4 * i + 1] += v.y, acc[j][4 * i + 2] += v.z, acc[j][4 * i + 3] += v.w;
        }
      }
  }
  return true;
}

}  // namespace dgt::gemm
