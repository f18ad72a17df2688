// Split-K: the S CTAs of one output tile each accumulate a K slice, write the FP32 partial tile to a
// workspace and count themselves on a per-tile counter; the last to arrive sums the S partials in
// split order 0..S-1 (the same bits whatever the arrival order) and runs the epilogue. The last CTA
// also resets the counter to 0, so the counters need zeroing only once, at allocation.
#pragma once
#include "common.cuh"
#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
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

/// Cluster split (kSplits CTAs of one cluster, rank r computing split r of the same output tile): ranks
/// 1..S-1 write their FP32 partial into rank 0's shared memory with st.async, which completes bytes on rank 0's
/// `full` barrier; rank 0 waits for them and adds them to its own partial in split order 0..S-1, the order of
/// split_k_reduce, so both give the same bits. Rank 0 then frees the buffer for the next tile: consumer thread
/// s - 1 arrives on rank s's `free` barrier, which rank s waits for before it writes its next partial (and the
/// kernel's final cluster barrier keeps every rank alive until then). `buf`: S - 1 partials, layout
/// [split - 1][q][consumer thread] float4 (q as in split_k_reduce); `tile_iter`: this CTA's tile count, the
/// barriers' phase parity. No global memory, no fence, no atomics: `dgtune trace` on the H200 measured the
/// workspace reduction at 1.6 us of a 7.5 us decode GEMM (1x2112x7168, split 2). Returns true in rank 0, where
/// `acc` then holds the full sum.
template <u32 kSplits, u32 kMmaPerWG, u32 kAccPerMma, u32 kMathThreads>
__device__ __forceinline__ bool split_k_reduce_cluster(float (&acc)[kMmaPerWG][kAccPerMma], float4* buf, u64* full,
                                                       u64* free_bar, u32 rank, u32 tile_iter) {
  constexpr u32 kQuads = kMmaPerWG * kAccPerMma / 4;
  constexpr u32 kPartialBytes = kQuads * kMathThreads * 16;
  const u32 tid = threadIdx.x;  // consumer threads are 0 .. kMathThreads-1
  if (rank != 0) {
    if (tile_iter > 0) ptx::mbar_wait(free_bar, (tile_iter - 1) & 1u);
    const u32 dst = ptx::map_shared_cluster(smem_u32(buf + (rank - 1) * kQuads * kMathThreads + tid), 0);
    const u32 bar = ptx::map_shared_cluster(smem_u32(full), 0);
#pragma unroll
    for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
      for (u32 i = 0; i < kAccPerMma / 4; ++i) {
        const u32 q = j * (kAccPerMma / 4) + i;
        ptx::st_async_v4(dst + q * kMathThreads * 16,
                         make_float4(acc[j][4 * i], acc[j][4 * i + 1], acc[j][4 * i + 2], acc[j][4 * i + 3]), bar);
      }
    // A convergence point for ptxas, not for the data (the stores complete on rank 0's barrier). Without an aligned
    // barrier between the free-barrier wait loop above and the next tile's wgmma.fence, ptxas could not prove the
    // warps converged there: it put a WARPSYNC before every WGMMA window, read SR_CgaCtaId with S2R and kept the
    // shared base, the ring stage and every WGMMA descriptor in vector registers, with R2URs in front of each QGMMA
    // (128 per k-block pair at 64x48x256 sk2c; tests/nvrtc Sass.ClusterKernelsKeepTheirDescriptorsUniform). A
    // __syncwarp() there did not restore it; bar.sync of the consumer threads (all of them take this path) does.
    ptx::named_barrier_sync(1, kMathThreads);
    return false;
  }
  if (tid == 0) ptx::mbar_arrive_expect_tx(full, (kSplits - 1) * kPartialBytes);
  ptx::mbar_wait(full, tile_iter & 1u);
#pragma unroll
  for (u32 s = 1; s < kSplits; ++s)
#pragma unroll
    for (u32 j = 0; j < kMmaPerWG; ++j)
#pragma unroll
      for (u32 i = 0; i < kAccPerMma / 4; ++i) {
        const float4 v = buf[((s - 1) * kQuads + j * (kAccPerMma / 4) + i) * kMathThreads + tid];
        acc[j][4 * i] += v.x, acc[j][4 * i + 1] += v.y, acc[j][4 * i + 2] += v.z, acc[j][4 * i + 3] += v.w;
      }
  // Every consumer thread has read the partials: their loads fed the adds above, which in-order issue runs only once
  // the values are back, so no load is outstanding when the buffer is freed. The arrive and the senders' wait keep
  // the default CTA-scope semantics, as the per-k-block cluster arrives do (a `.release.cluster` arrive costs a
  // MEMBAR.ALL.GPU, ptx/mbarrier.cuh); the PTX memory model alone would want release/acquire at cluster scope here. Not
  // measured on the GPU with the stronger forms (review of 2026-11-30).
  ptx::named_barrier_sync(1, kMathThreads);
  if (tid + 1 < kSplits) ptx::mbar_arrive_cluster(free_bar, tid + 1);
  return true;
}

}  // namespace dgt::gemm
