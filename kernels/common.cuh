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

/// High 32 bits of the 64-bit product a * b (one IMAD.WIDE.U32 / UIMAD.WIDE.U32; host-compilable for the tests).
__device__ __forceinline__ constexpr u32 mulhi_u32(u32 a, u32 b) { return static_cast<u32>((static_cast<u64>(a) * b) >> 32); }

/// Division by a run-time divisor `d` >= 1 that is the same for the whole launch, as a multiply-high and a shift:
/// n / d == mulhi(n, mul) >> shr for every n < 2^31, with shr = ceil(log2 d) - 1 and mul = ceil(2^(32 + shr) / d)
/// (the round-up method of Granlund and Montgomery, "Division by invariant integers using multiplication", PLDI
/// 1994). The host computes mul and shr (dgt::make_fast_div, src/space/tile_grid.hpp; d = 1 passes n through). A
/// run-time `/` is an I2F / MUFU.RCP / F2I sequence of about 150 cycles, and the scheduler's chain of them sat on
/// the critical path to every CTA's first TMA load (`dgtune trace`, results/h200/small-m.md).
struct FastDiv {
  u32 mul, shr, d;
  __device__ __forceinline__ constexpr u32 div(u32 n) const { return d == 1 ? n : mulhi_u32(n, mul) >> shr; }
};

/// 32-bit shared-state-space address of a generic pointer into shared memory.
__device__ __forceinline__ u32 smem_u32(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

}  // namespace dgt
