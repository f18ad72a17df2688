// TMA (bulk tensor copy) wrappers (PTX ISA, "cp.async.bulk.tensor"). Loads complete on an mbarrier
// with the box's full byte count; out-of-bounds elements of the box are written as zeros, which is
// how M/N/K tails work without branches.
#pragma once
#include "common.cuh"

namespace dgt::ptx {

__device__ __forceinline__ void tma_prefetch_desc(const TmaDesc* desc) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<u64>(desc)) : "memory");
}

/// 2-D tile load into this CTA's shared memory. c0 is the inner (contiguous, K) coordinate.
__device__ __forceinline__ void tma_load_2d(const TmaDesc* desc, u64* bar, void* smem_dst, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
          smem_u32(smem_dst)),
      "l"(reinterpret_cast<u64>(desc)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}

/// 2-D tile load delivered to the same shared-memory offset of every CTA in `cta_mask` (bit i =
/// cluster rank i); each receiving CTA's barrier at `bar`'s offset gets the complete_tx.
__device__ __forceinline__ void tma_load_2d_multicast(const TmaDesc* desc, u64* bar, void* smem_dst, int c0, int c1,
                                                      u16 cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, "
      "%5}], [%2], %3;" ::"r"(smem_u32(smem_dst)),
      "l"(reinterpret_cast<u64>(desc)), "r"(smem_u32(bar)), "h"(cta_mask), "r"(c0), "r"(c1)
      : "memory");
}

}  // namespace dgt::ptx
