// WGMMA support: fences, commit/wait, shared-memory matrix descriptors (PTX ISA, "Asynchronous
// Warpgroup Level Matrix Multiply-Accumulate"). The mma wrappers themselves are generated into
// wgmma_fp8.cuh.
#pragma once
#include "common.cuh"
#include "ptx/wgmma_fp8.cuh"

namespace dgt::ptx {

/// Orders this warpgroup's prior register/shared accesses before the following wgmma.mma_async.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
/// Waits until at most N committed wgmma groups are pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

/// Makes the compiler compute `v` before the next volatile asm statement (e.g. a barrier wait).
__device__ __forceinline__ void materialize(u32 v) { asm volatile("" ::"r"(v)); }

/// Keeps the compiler from moving accumulator reads/writes across wgmma fences and waits.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

/// Swizzle-mode field of the matrix descriptor (bits 62-63): 1 = 128 B, 2 = 64 B, 3 = 32 B.
template <u32 kSwizzleBytes>
__device__ __forceinline__ constexpr u64 desc_swizzle_bits() {
  static_assert(kSwizzleBytes == 128 || kSwizzleBytes == 64 || kSwizzleBytes == 32, "swizzle must be 128, 64 or 32 bytes");
  return kSwizzleBytes == 128 ? 1ull : (kSwizzleBytes == 64 ? 2ull : 3ull);
}

/// Descriptor of a K-major operand tile whose rows are kSwizzleBytes long and swizzled with the same
/// span (the layout TMA writes with CU_TENSOR_MAP_SWIZZLE_<span>B and box inner size = span).
/// Fields ("Matrix Descriptor Format"): bits 0-13 start address >> 4; 16-29 leading-dimension byte
/// offset >> 4 (unused for swizzled K-major layouts whose K extent fits in one span; set to 1);
/// 32-45 stride byte offset >> 4 = distance between 8-row groups = 8 * span; 49-51 base offset = 0
/// because every tile starts at a multiple of the swizzle pattern's repeat (8 * span bytes);
/// 62-63 swizzle mode. Moving along K inside a span adds (bytes >> 4) to the start address.
template <u32 kSwizzleBytes>
__device__ __forceinline__ u64 make_kmajor_desc(u32 smem_addr) {
  u64 desc = 0;
  desc |= static_cast<u64>((smem_addr & 0x3FFFF) >> 4);
  desc |= static_cast<u64>(1) << 16;
  desc |= static_cast<u64>((8 * kSwizzleBytes) >> 4) << 32;
  desc |= desc_swizzle_bits<kSwizzleBytes>() << 62;
  return desc;
}

/// The two 32-bit words of make_kmajor_desc, for building descriptors once per CTA: the high word is a
/// compile-time constant, and moving the start address by `bytes` (a multiple of 16 inside shared
/// memory, so the 14-bit field never carries) adds bytes >> 4 to the low word.
template <u32 kSwizzleBytes>
__device__ __forceinline__ constexpr u32 kmajor_desc_hi() {
  return ((8 * kSwizzleBytes) >> 4) | (static_cast<u32>(desc_swizzle_bits<kSwizzleBytes>()) << 30);
}
__device__ __forceinline__ u32 kmajor_desc_lo(u32 smem_addr) { return ((smem_addr & 0x3FFFF) >> 4) | (1u << 16); }
template <u32 kSwizzleBytes>
__device__ __forceinline__ u64 kmajor_desc(u32 lo) {
  return (static_cast<u64>(kmajor_desc_hi<kSwizzleBytes>()) << 32) | lo;
}

}  // namespace dgt::ptx
