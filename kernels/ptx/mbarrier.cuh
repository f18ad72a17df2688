// mbarrier wrappers (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier").
// Each pipeline stage has a "full" barrier (TMA bytes landed) and an "empty" barrier (consumers
// released the stage). Waiters track (stage, phase) and wait on the phase parity.
#pragma once
#include "common.cuh"

namespace dgt::ptx {

__device__ __forceinline__ void mbar_init(u64* bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

/// Makes barrier initialisation visible to the async proxy (TMA) and to the other CTAs of the cluster.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/// Arrive once and add `bytes` to the transaction count the current phase waits for.
__device__ __forceinline__ void mbar_arrive_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}

/// Add `bytes` to the transaction count of the current phase without arriving (PTX ISA 8.0, sm_90). With
/// mbar_arrive after the copies it lets a thread issue its copies between the two, so the arrive (a release)
/// follows the copies that fill the stage in program order.
__device__ __forceinline__ void mbar_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}

/// Arrive on the barrier at the same shared-memory offset in CTA `cta_rank` of this cluster (mapa
/// translates the address). Default semantics (.release at .cta scope): the consumer only says "my
/// WGMMAs finished reading this stage", which wgmma.wait_group already guarantees. Spelling
/// `.release.cluster` here made ptxas emit MEMBAR.ALL.GPU before every arrive, i.e. one GPU-wide
/// fence per k-block per warp: measured 2-2.7x slower cluster kernels on the H200 (results/h200/).
__device__ __forceinline__ void mbar_arrive_cluster(u64* bar, u32 cta_rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" ::"r"(smem_u32(bar)),
      "r"(cta_rank)
      : "memory");
}

/// Blocks until the phase with parity `parity` has completed. A fresh barrier is in phase 0, so
/// waiting on parity 1 returns at once (that is how producers pass the first round of empty waits).
__device__ __forceinline__ void mbar_wait(u64* bar, u32 parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

}  // namespace dgt::ptx
