// Thread-block cluster helpers (PTX ISA, "barrier.cluster", special registers %cluster_ctarank).
#pragma once
#include "common.cuh"

namespace dgt::ptx {

__device__ __forceinline__ u32 cluster_cta_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

/// All threads of all CTAs of the cluster: arrive (release) then wait (acquire).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/// All threads of all CTAs of the cluster, right after the mbarrier inits: a relaxed arrive, then wait (acquire).
/// Only for the setup, where thread 0's fence.mbarrier_init.release.cluster already orders the inits before its
/// arrive and nothing else written before needs publishing (PTX ISA, barrier.cluster and fence.mbarrier_init).
__device__ __forceinline__ void cluster_sync_after_init() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/// The address of the same shared-memory location in CTA `cta_rank` of this cluster (mapa).
__device__ __forceinline__ u32 map_shared_cluster(u32 smem_addr, u32 cta_rank) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr), "r"(cta_rank));
  return remote;
}

/// 16 bytes into another CTA's shared memory (`remote` and `remote_bar` from map_shared_cluster); the write
/// completes 16 bytes of transaction count on that CTA's mbarrier `remote_bar`, so a thread that sees the
/// barrier's phase complete also sees the data, with no fence (PTX ISA, st.async; sm_90).
__device__ __forceinline__ void st_async_v4(u32 remote, float4 v, u32 remote_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(remote),
               "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(remote_bar)
               : "memory");
}

}  // namespace dgt::ptx
