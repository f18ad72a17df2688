// FP8 <-> float on CUDA cores, bit-exact per the OCP 8-bit floating point formats:
// e4m3: bias 7, no infinities, S.1111.111 is NaN; e5m2: bias 15, IEEE-like Inf/NaN.
#pragma once
#include "common.cuh"

namespace dgt::util {

__device__ __forceinline__ float fp8_to_float(u8 v, u32 type) {
  const float sign = (v & 0x80) ? -1.f : 1.f;
  if (type == kE4M3) {
    const u32 e = (v >> 3) & 0xF, m = v & 0x7;
    if (e == 15 && m == 7) return __int_as_float(0x7fc00000);
    return sign * (e == 0 ? ldexpf(float(m), -9) : ldexpf(float(8 + m), int(e) - 10));
  }
  const u32 e = (v >> 2) & 0x1F, m = v & 0x3;
  if (e == 31) return m == 0 ? sign * __int_as_float(0x7f800000) : __int_as_float(0x7fc00000);
  return sign * (e == 0 ? ldexpf(float(m), -16) : ldexpf(float(4 + m), int(e) - 17));
}

/// splitmix64: a cheap, well-mixed hash so every element's value depends only on (seed, index).
__device__ __forceinline__ u64 mix64(u64 x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// A random finite FP8 byte: random sign and mantissa, exponent uniform over 8 binades around 1
/// (e4m3: 2^-3 .. 2^4 * 1.875; e5m2: 2^-3 .. 2^4 * 1.75). Never zero, NaN or Inf, so unwritten or
/// mis-indexed outputs cannot hide behind zeros.
__device__ __forceinline__ u8 random_fp8(u64 h, u32 type) {
  const u32 sign = (h & 1) << 7;
  const u32 band = (h >> 8) & 7;
  if (type == kE4M3) return u8(sign | ((4 + band) << 3) | ((h >> 16) & 7));
  return u8(sign | ((12 + band) << 2) | ((h >> 16) & 3));
}

}  // namespace dgt::util
