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

/// 1-D bulk copy (PTX ISA, "cp.async.bulk", non-tensor form) of `bytes` from global memory into this
/// CTA's shared memory, completing on `bar` with complete_tx of `bytes`. Both addresses must be 16-byte
/// aligned and `bytes` a multiple of 16 (the PTX ISA's rule for cp.async.bulk); no bounds handling, so
/// the caller clamps `bytes` to the source buffer.
__device__ __forceinline__ void bulk_load(void* smem_dst, const void* gmem_src, u32 bytes, u64* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_u32(smem_dst)),
               "l"(reinterpret_cast<u64>(gmem_src)), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
}

}  // namespace dgt::ptx

namespace dgt::ptx {

/// 2-D tile store from this CTA's shared memory (out-of-bounds parts of the box are not written).
__device__ __forceinline__ void tma_store_2d(const TmaDesc* desc, const void* smem_src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(reinterpret_cast<u64>(desc)),
               "r"(smem_u32(smem_src)), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
/// Waits until at most N bulk groups are still reading shared memory (the buffer may be reused).
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

/// Orders this thread's generic-proxy shared-memory writes before later async-proxy (TMA) reads.
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

/// Named barrier among `count` threads (bar.sync id, count); id 0 is __syncthreads'.
__device__ __forceinline__ void named_barrier_sync(u32 id, u32 count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
/// Named barrier among `count` threads that also ANDs a predicate over them (bar.red.and.pred id, count; PTX ISA,
/// "bar.red"): every participating thread gets true exactly when every one passed true.
__device__ __forceinline__ bool named_barrier_all(u32 id, u32 count, bool pred) {
  u32 all;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.u32 q, %1, 0;\n bar.red.and.pred p, %2, %3, q;\n selp.u32 %0, 1, 0, p;\n}"
      : "=r"(all)
      : "r"(u32(pred)), "r"(id), "r"(count)
      : "memory");
  return all != 0;
}
/// Arrive on a named barrier without waiting (bar.arrive id, count): with the other `count` / 2 threads in
/// bar.sync on the same id, a one-way signal from these threads to those (PTX ISA, "bar.arrive").
__device__ __forceinline__ void named_barrier_arrive(u32 id, u32 count) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

}  // namespace dgt::ptx

namespace dgt::ptx {

/// stmatrix (PTX ISA, "stmatrix"): the warp stores four (x4) or two (x2) 8x8 matrices of 16-bit
/// elements. Register q of every lane holds row lane/4, columns 2*(lane%4) and +1 of matrix q (the
/// WGMMA accumulator fragment layout); lanes 8q..8q+7 give the shared addresses of matrix q's rows
/// (16 bytes each). For x2 only lanes 0..15 supply addresses.
__device__ __forceinline__ void stmatrix_x4(u32 smem_addr, u32 r0, u32 r1, u32 r2, u32 r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem_addr), "r"(r0), "r"(r1), "r"(r2),
               "r"(r3)
               : "memory");
}
__device__ __forceinline__ void stmatrix_x2(u32 smem_addr, u32 r0, u32 r1) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" ::"r"(smem_addr), "r"(r0), "r"(r1) : "memory");
}
/// The same with .trans: each matrix is stored transposed, so the address of lanes 8q + c receives column c of
/// matrix q (its 8 rows, 16 bytes). The swap-AB epilogue (gemm/epilogue_tma_swap.cuh) writes D^T tiles this way.
__device__ __forceinline__ void stmatrix_x4_trans(u32 smem_addr, u32 r0, u32 r1, u32 r2, u32 r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem_addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}
__device__ __forceinline__ void stmatrix_x2_trans(u32 smem_addr, u32 r0, u32 r1) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" ::"r"(smem_addr), "r"(r0), "r"(r1) : "memory");
}

}  // namespace dgt::ptx
