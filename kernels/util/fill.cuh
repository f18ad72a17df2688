// Seeded device fills and poison patterns.
#pragma once
#include "common.cuh"
#include "util/fp8.cuh"

namespace dgt::util {

/// NaN in both FP8 formats (e4m3 S.1111.111, e5m2 S.11111.11): written into row padding (columns
/// cols..ld-1) so that a kernel reading past K poisons its own output.
constexpr u8 kFp8PadNaN = 0x7F;
/// BF16 NaN pattern used to poison D before a verification launch.
constexpr u16 kBf16Poison = 0xFFFF;

}  // namespace dgt::util

/// rows x ld bytes: element (r, c < cols) = random_fp8(mix64(seed ^ (r * ld + c))), padding NaN.
extern "C" __global__ void dgt_fill_fp8(dgt::u8* p, dgt::u64 rows, dgt::u64 cols, dgt::u64 ld, dgt::u64 seed,
                                        dgt::u32 type) {
  const dgt::u64 total = rows * ld;
  for (dgt::u64 i = blockIdx.x * dgt::u64(blockDim.x) + threadIdx.x; i < total; i += dgt::u64(gridDim.x) * blockDim.x) {
    const dgt::u64 c = i % ld;
    p[i] = c < cols ? dgt::util::random_fp8(dgt::util::mix64(seed ^ (i * 0xD1B54A32D192ED03ull)), type)
                    : dgt::util::kFp8PadNaN;
  }
}

/// count 16-bit words set to `value`.
extern "C" __global__ void dgt_fill_u16(dgt::u16* p, dgt::u64 count, dgt::u16 value) {
  for (dgt::u64 i = blockIdx.x * dgt::u64(blockDim.x) + threadIdx.x; i < count; i += dgt::u64(gridDim.x) * blockDim.x)
    p[i] = value;
}
