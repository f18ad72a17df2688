// Output check: compares D (bf16, f32 or e4m3; M x ldd, plus guard rows) with the FP32 reference.
#pragma once
#include "common.cuh"
#include "util/fill.cuh"

namespace dgt::util {
/// Accumulated by dgt_compare; read back by the host (src/bench/verify.cpp mirrors this layout).
struct CompareStats {
  double sum_xy;        // sum d * ref
  double sum_sq;        // sum d*d + ref*ref
  u32 max_abs_err;      // float bits (non-negative floats order like their bit patterns)
  u32 max_abs_ref;      // float bits
  u64 nan_count;        // NaN/Inf in the M x N window
  u64 pad_touched;      // elements outside the window that lost the poison pattern
  u64 ulp_over;         // e4m3: elements more than 1 e4m3 ulp from the reference rounded the same way
};

/// Position of an e4m3 code on the number line (sign-magnitude to a signed ordinal; +0 and -0 are both
/// 0): adjacent representable values differ by 1, so |ord(x) - ord(y)| is the distance in e4m3 ulps.
__device__ __forceinline__ int e4m3_ordinal(u8 code) { return (code & 0x80) ? -int(code & 0x7f) : int(code & 0x7f); }

/// float -> e4m3 code, round to nearest even, saturating to +-448 (NaN -> NaN): as the kernel converts.
__device__ __forceinline__ u8 e4m3_satfinite(float x) {
  u16 r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.f), "f"(x));
  return u8(r & 0xff);
}

__device__ __forceinline__ float bf16_to_float(u16 v) { return __int_as_float(u32(v) << 16); }
}  // namespace dgt::util

/// Grid-stride over (rows_alloc x ldd). Elements with r < M and c < N are compared; the rest must
/// still hold the poison (every byte 0xFF: BF16 0xFFFF, FP32 0xFFFFFFFF, e4m3 0xFF, all NaN).
/// out_type: 0 bf16, 1 f32, 2 e4m3. For e4m3 the reference is scaled by scale_d first: the metrics
/// compare D with clamp(scale_d x ref, +-448) (saturation is the contract, not an error), and ulp_over
/// counts elements whose code is more than one e4m3 ulp from e4m3_satfinite(scale_d x ref) and whose value is
/// more than `ulp_slack` from clamp(scale_d x ref) (the FP32 tolerance: the GEMM's FP32 result may differ from the
/// reference's by up to the accumulation mode's max_rel_err x max |ref|, and a small element rounded from such a
/// value may be several of its small ulps away; verify_output passes that bound from a first pass).
extern "C" __global__ void dgt_compare(const void* __restrict__ d_raw, const float* __restrict__ dref, dgt::u32 M,
                                       dgt::u32 N, dgt::u64 ldd, dgt::u64 rows_alloc, dgt::util::CompareStats* stats,
                                       dgt::u32 out_type, float scale_d, float ulp_slack) {
  using namespace dgt;
  double xy = 0, sq = 0;
  float max_err = 0, max_ref = 0;
  u64 nans = 0, touched = 0, ulps = 0;
  const u64 total = rows_alloc * ldd;
  for (u64 i = blockIdx.x * u64(blockDim.x) + threadIdx.x; i < total; i += u64(gridDim.x) * blockDim.x) {
    const u64 r = i / ldd, c = i % ldd;
    float x;
    bool poisoned;
    u8 code = 0;
    if (out_type == 1) {
      const u32 raw = static_cast<const u32*>(d_raw)[i];
      x = __uint_as_float(raw), poisoned = raw == 0xFFFFFFFFu;
    } else if (out_type == 2) {
      code = static_cast<const u8*>(d_raw)[i];
      x = util::fp8_to_float(code, kE4M3), poisoned = code == 0xFF;
    } else {
      const u16 raw = static_cast<const u16*>(d_raw)[i];
      x = util::bf16_to_float(raw), poisoned = raw == util::kBf16Poison;
    }
    if (r < M && c < N) {
      float y = dref[r * N + c];
      if (out_type == 2) {
        const float ys = scale_d * y;
        y = fminf(fmaxf(ys, -448.f), 448.f);
        if (isfinite(x) && abs(util::e4m3_ordinal(code) - util::e4m3_ordinal(util::e4m3_satfinite(ys))) > 1 &&
            !(fabsf(x - y) <= ulp_slack))
          ++ulps;
      }
      if (!isfinite(x)) {
        ++nans;
        continue;
      }
      xy += double(x) * y;
      sq += double(x) * x + double(y) * y;
      max_err = fmaxf(max_err, fabsf(x - y));
      max_ref = fmaxf(max_ref, fabsf(y));
    } else if (!poisoned) {
      ++touched;
    }
  }
  // Warp reduction, then one atomic per warp.
  for (int o = 16; o > 0; o /= 2) {
    xy += __shfl_xor_sync(0xffffffffu, xy, o);
    sq += __shfl_xor_sync(0xffffffffu, sq, o);
    max_err = fmaxf(max_err, __shfl_xor_sync(0xffffffffu, max_err, o));
    max_ref = fmaxf(max_ref, __shfl_xor_sync(0xffffffffu, max_ref, o));
    nans += __shfl_xor_sync(0xffffffffu, nans, o);
    touched += __shfl_xor_sync(0xffffffffu, touched, o);
    ulps += __shfl_xor_sync(0xffffffffu, ulps, o);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&stats->sum_xy, xy);
    atomicAdd(&stats->sum_sq, sq);
    atomicMax(&stats->max_abs_err, __float_as_uint(max_err));
    atomicMax(&stats->max_abs_ref, __float_as_uint(max_ref));
    atomicAdd(&stats->nan_count, nans);
    atomicAdd(&stats->pad_touched, touched);
    atomicAdd(&stats->ulp_over, ulps);
  }
}

/// Reference epilogue, in place on Dref (FP32, M x N, ld = N) after dgt_ref_gemm: r = act(ref + bias[n])
/// with has_bias (BF16 bias of N), act 0 none, 1 relu (NaN kept), 2 gelu_tanh as r sigmoid(2u) with the accurate
/// expf, free of cancellation for either sign (the kernel uses tanh.approx.f32; src/bench/verify.hpp bounds the
/// difference); then *amax_bits =
/// max over the window of the bits of |r| (atomicMax on non-negative float bits; zero it first). With
/// has_bias = 0 and act = 0 it only computes the amax.
extern "C" __global__ void dgt_ref_epilogue(float* __restrict__ dref, dgt::u32 M, dgt::u32 N, const dgt::u16* bias,
                                            dgt::u32 has_bias, dgt::u32 act, dgt::u32* amax_bits) {
  using namespace dgt;
  u32 m = 0;
  const u64 total = u64(M) * N;
  for (u64 i = blockIdx.x * u64(blockDim.x) + threadIdx.x; i < total; i += u64(gridDim.x) * blockDim.x) {
    float r = dref[i];
    if (has_bias) r += util::bf16_to_float(bias[i % N]);
    if (act == 1) r = r < 0.f ? 0.f : r;
    if (act == 2) {
      // 0.5 r (1 + tanh u) as r sigmoid(2u), written without cancellation for either sign of u (accurate expf).
      const float u = 0.7978845608028654f * (r + 0.044715f * r * r * r);
      const float e = expf(-2.f * fabsf(u));
      r = u >= 0.f ? r / (1.f + e) : r * e / (1.f + e);
    }
    dref[i] = r;
    m = max(m, __float_as_uint(r) & 0x7fffffffu);
  }
  for (int o = 16; o > 0; o /= 2) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x % 32 == 0) atomicMax(amax_bits, m);
}
