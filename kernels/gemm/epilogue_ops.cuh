// Output types and fused epilogue operations, shared by the direct and TMA-store epilogues.
// Per element, on the FP32 accumulator (src/problem/problem.hpp, Problem, states the contract):
//   r = act(scale x acc + bias[col]);  D = bf16(r) | r | e4m3_satfinite(scale_d x r);  amax = max |r|.
// The split-K reduction runs before the epilogue, so bias, activation, scale_d and amax are applied once,
// by the CTA that finishes the tile, to the full sum.
#pragma once
#include "common.cuh"
#include "ptx/tma.cuh"

namespace dgt::gemm {

enum : u32 { kOutBF16 = 0, kOutF32 = 1, kOutE4M3 = 2 };
enum : u32 { kActNone = 0, kActRelu = 1, kActGeluTanh = 2 };

/// Bytes of one output element.
template <u32 kOutType>
struct OutBytes {
  static constexpr u32 value = kOutType == kOutF32 ? 4 : kOutType == kOutE4M3 ? 1 : 2;
};

__device__ __forceinline__ float bf16_bits_to_float(u16 v) { return __int_as_float(u32(v) << 16); }
/// The two BF16 values of a packed word (EpilogueOp::bias_word) as floats.
__device__ __forceinline__ float bias_lo(u32 w) { return __int_as_float(w << 16); }
__device__ __forceinline__ float bias_hi(u32 w) { return __int_as_float(w & 0xffff0000u); }

/// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (cuBLASLt's CUBLASLT_EPILOGUE_GELU).
/// tanh.approx.f32 (one MUFU op; PTX ISA: max relative error 2^-10.987) keeps the epilogue cheap; the
/// reference computes the exact function, and the difference (<= 2^-11 |x|) is below BF16 rounding and inside the
/// FP32 verification thresholds (src/bench/verify.hpp). tanh.approx saturates to +-1 for large |x|, so the
/// result is x or 0 there, and NaN stays NaN. For x << 0 the result keeps that absolute bound but not a relative one
/// (1 + t cancels: true GELU at x = -4 is -7.03e-5). Two forms without the cancellation (x / (1 + e^(-2u)) with ex2 +
/// rcp, and ex2 + a Newton reciprocal) were within 0.5 BF16 ulp over [-10, 10] but made the epilogue-bound shapes
/// (M >= 4096, K <= 2048) up to 16% slower on the H200 (results/h200/gelu-forms-2026-12-03.md), so this form stays.
/// Written as u = x (k + k 0.044715 x^2), k = sqrt(2/pi), and 0.5x + 0.5x t: five FP32 operations and one
/// MUFU per element (the MUFU pipe, 16 per SM per clock, and issue bound the epilogue at small K).
__device__ __forceinline__ float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = kSqrt2OverPi * 0.044715f;
  const float u = x * fmaf(kCubic, x * x, kSqrt2OverPi);
  float t;
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
  const float hx = 0.5f * x;
  return fmaf(hx, t, hx);
}

/// ReLU that keeps NaN (fmaxf(NaN, 0) would return 0 and hide a bad result).
__device__ __forceinline__ float relu(float x) { return x < 0.f ? 0.f : x; }

/// Two floats to two e4m3 bytes (`lo` in the lower byte): round to nearest even, saturating to the
/// largest finite value +-448 (Inf included), NaN -> NaN (0x7F / 0xFF). PTX ISA, "cvt": .satfinite
/// with .e4m3x2 (sm_89+); the same result as __nv_cvt_float2_to_fp8x2(x, __NV_SATFINITE, __NV_E4M3).
__device__ __forceinline__ u16 pack_e4m3x2(float lo, float hi) {
  u16 r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}

/// The per-element part of the epilogue for one tile: scale, bias, activation; for e4m3 also scale_d and
/// the running |r| maximum of this thread. One object per consumer thread, built once per CTA.
template <u32 kOutType, bool kBias, u32 kAct>
struct EpilogueOp {
  const u16* __restrict__ bias;  // N BF16 values (kBias)
  float scale_d;                 // e4m3 output: multiplier before the conversion (read once per launch)
  u32 amax_bits;                 // e4m3: max |r| so far as float bits (non-negative floats order as unsigned)

  bool bias_pairs;               // bias is 4-byte aligned: an even column and the next load as one 32-bit word

  __device__ __forceinline__ EpilogueOp(const u16* b, const float* sd)
      : bias(b),
        scale_d(kOutType == kOutE4M3 ? __ldg(sd) : 1.f),
        amax_bits(0),
        bias_pairs(kBias && (reinterpret_cast<u64>(b) & 3u) == 0) {}

  /// BF16 bias of columns `col` (even) and `col` + 1 as one word (col in the low half; +0 past N: those
  /// elements are never stored), one 32-bit load when both are inside N and the vector is 4-byte aligned.
  __device__ __forceinline__ u32 bias_word(u32 col, u32 N) const {
    if constexpr (kBias) {
      if (bias_pairs && col + 1 < N) return __ldg(reinterpret_cast<const unsigned int*>(bias + col));
      const u32 lo = col < N ? __ldg(bias + col) : 0u, hi = col + 1 < N ? __ldg(bias + col + 1) : 0u;
      return lo | (hi << 16);
    } else {
      return 0u;
    }
  }

  /// The bias of this thread's columns of a tile, loaded into registers before any of the tile is stored:
  /// out[i] = bias_word of columns n0 + 8 i + col_in_group and the next (col_in_group = 2 (t % 4), the
  /// WGMMA fragment's); kept packed (one register per pair), unpacked by bias_lo / bias_hi. Why all up
  /// front: the epilogue's shared-memory stores are asm with a "memory" clobber, so a load written between
  /// two of them cannot be hoisted and each column group would wait for its own L2 round trip (8 serial
  /// round trips per 128-wide tile); issued together they cost one.
  template <u32 kGroups>
  __device__ __forceinline__ void load_bias(u32 (&out)[kGroups], u32 n0, u32 col_in_group, u32 N) const {
#pragma unroll
    for (u32 i = 0; i < kGroups; ++i) out[i] = bias_word(n0 + 8 * i + col_in_group, N);
  }
  /// load_bias in batches (Fp8GemmTraits::kBiasBatch): kBatch groups starting at group `first` of the tile's
  /// kGroups (none past the last): out[k] = group first + k. The epilogue loads the next batch at its first
  /// group (one round trip per batch) instead of keeping all kGroups words live: pp keeps its whole
  /// accumulator live through the epilogue (no dead partial buffer), and 22 or 32 bias words spilled there.
  template <u32 kGroups, u32 kBatch>
  __device__ __forceinline__ void load_bias_batch(u32 (&out)[kBatch], u32 first, u32 n0, u32 col_in_group, u32 N) const {
#pragma unroll
    for (u32 k = 0; k < kBatch; ++k)
      if (first + k < kGroups) out[k] = bias_word(n0 + 8 * (first + k) + col_in_group, N);
  }

  /// r = act(a x scale + b) (a: the FP32 accumulator; with a bias one FMA). For e4m3 also folds |r| into
  /// amax when `in_bounds` and returns scale_d x r, the value to convert.
  __device__ __forceinline__ float apply(float a, float scale, float b, bool in_bounds) {
    float r = kBias ? fmaf(a, scale, b) : a * scale;
    if constexpr (kAct == kActRelu) r = relu(r);
    if constexpr (kAct == kActGeluTanh) r = gelu_tanh(r);
    if constexpr (kOutType == kOutE4M3) {
      // |r| as bits; NaN (exponent all ones, mantissa != 0) compares above every finite value and Inf,
      // so a NaN result makes amax NaN, as it should, whatever the order.
      const u32 bits = __float_as_uint(r) & 0x7fffffffu;
      if (in_bounds) amax_bits = max(amax_bits, bits);
      r *= scale_d;
    }
    return r;
  }

  /// After the CTA's last tile: reduce this warp's maxima (of all its tiles) and fold them into state[0]
  /// with one atomicMax per warp. atomicMax on the bits of non-negative floats is order-independent, so the
  /// result does not depend on the CTA schedule (deterministic). All 32 lanes must call it; `state` null =
  /// no amax requested. Once per CTA, not per tile: the fence after the atomic stalls the warp for a
  /// global-memory round trip, which per tile delayed the next tile's WGMMAs.
  __device__ __forceinline__ void flush_amax(u32* state) {
    if constexpr (kOutType == kOutE4M3) {
      if (state == nullptr) return;
      const u32 m = __reduce_max_sync(0xffffffffu, amax_bits);
      if (threadIdx.x % 32 == 0 && m != 0) {
        atomicMax(state, m);
        __threadfence();  // ordered before this CTA's arrival in finish_amax
      }
      amax_bits = 0;
    }
  }
};

/// This thread's bias words of one tile (kGroups column groups; EpilogueOp::bias_word), as both epilogues
/// read them: all groups loaded at construction, before the tile's first store (EpilogueOp::load_bias), or
/// with kBatch < kGroups a batch at a time, the next batch at its first group (EpilogueOp::load_bias_batch;
/// Fp8GemmTraits::kBiasBatch). kBatch is even, so the two groups of a BF16 stmatrix pair share a batch.
template <u32 kGroups, u32 kBatch, class Op>
struct TileBias {
  static_assert(kBatch >= kGroups || (kBatch >= 2 && kBatch % 2 == 0), "bias batch: all groups, or an even number");
  static constexpr bool kBatched = kBatch < kGroups;
  const Op& op;
  u32 n0, col_in_group, N;
  u32 w[kBatch];

  __device__ __forceinline__ TileBias(const Op& o, u32 tile_n0, u32 col, u32 n) : op(o), n0(tile_n0), col_in_group(col), N(n) {
    if constexpr (kBatched) {
      op.template load_bias_batch<kGroups>(w, 0, n0, col_in_group, N);
    } else {
      op.load_bias(w, n0, col_in_group, N);
    }
  }
  /// Group i's word; loads i's batch first when i starts one (call in increasing i).
  __device__ __forceinline__ u32 next(u32 i) {
    if constexpr (kBatched) {
      if (i % kBatch == 0 && i > 0) op.template load_bias_batch<kGroups>(w, i, n0, col_in_group, N);
    }
    return loaded(i);
  }
  /// Group i's word from the batch already loaded (the one next() last loaded).
  __device__ __forceinline__ u32 loaded(u32 i) const { return w[i % kBatch]; }
};

/// End of the kernel (all consumer threads of every CTA, after their last tile): the CTAs count
/// themselves on state[1]; the last one to arrive moves the maximum state[0] into *amax and resets both
/// words to 0, so *amax is written (not accumulated) by every launch and the state needs zeroing only
/// once, at allocation (like the split-K tile counters). Named barrier 1 spans the consumer threads.
template <u32 kMathThreads>
__device__ __forceinline__ void finish_amax(u32* state, float* amax) {
  ptx::named_barrier_sync(1, kMathThreads);
  if (threadIdx.x == 0) {
    __threadfence();
    const u32 arrived = atomicAdd(state + 1, 1u);
    if (arrived == gridDim.x - 1) {
      __threadfence();
      const u32 bits = atomicExch(state, 0u);
      atomicExch(state + 1, 0u);
      *reinterpret_cast<volatile u32*>(amax) = bits;
    }
  }
}

}  // namespace dgt::gemm
