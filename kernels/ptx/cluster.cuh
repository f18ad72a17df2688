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

}  // namespace dgt::ptx
