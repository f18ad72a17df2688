// The ring of kNumStages shared-memory stages between the producer and the consumers, and its mbarriers.
//
// Each stage has a full barrier (arrive_expect_tx by the local TMA thread; block scale modes: expect_tx, the
// scale copies, then arrive, by the same thread; complete_tx by TMA and the bulk copies,
// including the slices multicast by the other CTAs of the cluster) and an empty barrier (one arrival per
// consumer warp of every CTA of the cluster, because the peers write into this CTA's stage).
// Producer and consumers walk the stages in the same order, each with its own (stage, phase; the phase flips
// when the stage index wraps): the producer waits for a stage's empty barrier with the parity of the previous
// round (phase ^ 1; fresh barriers count as having completed it), the consumers for its full barrier with the
// current one. The walks are in gemm/producer.cuh and gemm/mainloop_steps.cuh (issue, release).
#pragma once
#include "common.cuh"
#include "ptx/mbarrier.cuh"

namespace dgt::gemm {

/// Thread 0: the stages' barriers. One arrival per full barrier (the TMA thread); `consumer_warps` warps of each
/// of the `mcast_ctas` CTAs that read a stage arrive on its empty barrier.
template <u32 kNumStages>
__device__ __forceinline__ void init_stage_ring(u64* full_bar, u64* empty_bar, u32 consumer_warps, u32 mcast_ctas) {
#pragma unroll
  for (u32 s = 0; s < kNumStages; ++s) {
    ptx::mbar_init(&full_bar[s], 1);
    ptx::mbar_init(&empty_bar[s], consumer_warps * mcast_ctas);
  }
}

}  // namespace dgt::gemm
