// Basic types shared by every kernel. Device code only; compiled by NVRTC (no host headers).
#pragma once

namespace dgt {

using u8 = unsigned char;
using u16 = unsigned short;
using u32 = unsigned int;
using u64 = unsigned long long;
using i64 = long long;

/// Opaque 128-byte TMA descriptor (CUtensorMap), encoded on the host by cuTensorMapEncodeTiled and
/// passed by value as a `const __grid_constant__` kernel parameter (CUDA driver API, "Tensor Map
/// Object Management"; the address must stay in param space for cp.async.bulk.tensor).
struct alignas(64) TmaDesc {
  u64 opaque[16];
};

/// Operand type codes shared with the host (src/jit/codegen.cpp).
enum Fp8Type : u32 { kE4M3 = 0, kE5M2 = 1 };

__device__ __forceinline__ constexpr u32 ceil_div(u32 a, u32 b) { return (a + b - 1) / b; }
template <class T>
__device__ __forceinline__ constexpr T min_of(T a, T b) { return a < b ? a : b; }

/// 32-bit shared-state-space address of a generic pointer into shared memory.
__device__ __forceinline__ u32 smem_u32(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

}  // namespace dgt
