// Verification of a GEMM output against the device reference.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "launch/util_kernels.hpp"
#include "records/records.hpp"

namespace dgt {

/// Acceptance thresholds, per accumulation mode. Justification (BF16 output has 8 significant bits,
/// unit roundoff u = 2^-8):
///  - promote: every element's error is BF16 rounding (|err| <= u |ref|) plus FP32-order noise, so
///    max |d - ref| / max |ref| <= u; we allow 2u = 2^-7. diff from rounding alone is ~1e-6..3e-6;
///    we allow 2e-5. One missing k-block of K = 1040 gives diff ~ 1.5e-2, a wrong element ~1.
///  - fast: tensor-core partial sums of at most P k-blocks (P x BLOCK_K <= 2048 products, rule R18),
///    promoted into FP32 at least every P k-blocks (kernels/gemm/fp8_gemm.cuh states the contract). The
///    tensor core keeps ~14 accumulator bits (DeepSeek-V3 report), so each partial sum carries a relative
///    error of roughly 2^-13 of its magnitude that grows with P x BLOCK_K, not with K; all-ones inputs
///    sum exactly (tests/gpu: K = 65536 gives 65536). Allowed 2^-5 and 5e-4 (unchanged from the
///    never-promoted kernel, which bounded the error over all of K), still 30x below a single missing
///    k-block of 128. The kernel-v2 report compares the fast winner's error with cuBLASLt FAST_ACCUM's on the same inputs.
///
/// Output types and epilogues, VerifyThresholds::for_problem:
///  - bf16 and f32 output: the thresholds above (f32 drops the BF16 rounding, so the kernel's error is
///    far inside them; they stay as loose as BF16's so one rule covers both). Bias and activation are
///    applied to the reference in FP32 (kernels/util/compare.cuh, dgt_ref_epilogue) and add no error of
///    their own except GELU's: the kernel's tanh.approx.f32 differs from the exact tanh by <= 2^-11 relative,
///    i.e. <= 2^-12 |x| on the output, below BF16's 2^-9 half-ulp relative to max |ref| (for x << 0 the tanh
///    form's output loses its relative accuracy, not its absolute one: results/h200/gelu-forms-2026-12-03.md).
///  - e4m3 output: D is compared with clamp(scale_d x ref, +-448) after the same rounding: every element
///    must be within 1 e4m3 ulp of e4m3_satfinite(scale_d x ref) (ulp_over == 0; one ulp because an
///    FP32 result within the FP32 tolerance of the reference can round to the neighbouring code) unless it
///    is within the FP32 tolerance itself, max_rel_err(accum) x max |clamp(scale_d x ref)| (a small element
///    rounded from an FP32 value that far off may be several of its ulps away; H200, first run: 1 to 71 such
///    elements per 4096-wide e4m3 output, max_rel_err 0.045, all within that bound), and the
///    metrics allow e4m3's rounding: max_rel_err <= 1/8 (one ulp at the top binade, 32 / 256, relative to
///    a max near 448 is <= 1/8) and diff <= 5e-3 (round-to-nearest with 3 mantissa bits gives
///    relative errors <= 2^-4, diff ~ 1e-3 at most for normal values).
///  - amax (e4m3 with an amax pointer): |amax - max |ref|| <= max_rel_err(FP32 accumulation thresholds)
///    x max |ref| (the same FP32 tolerance as the results it is the maximum of).
struct VerifyThresholds {
  double max_rel_err;
  double max_diff;
  static VerifyThresholds for_accum(Accum a) {
    return a == Accum::kPromote ? VerifyThresholds{1.0 / 128, 2e-5} : VerifyThresholds{1.0 / 32, 5e-4};
  }
  /// for_accum for bf16/f32 output; e4m3 output: {1/8, 5e-3} plus the one-ulp rule (judge()).
  static VerifyThresholds for_problem(const Problem& p) {
    return p.d == DType::kE4M3 ? VerifyThresholds{1.0 / 8, 5e-3} : for_accum(p.accum);
  }
};

/// Compares D (p.d elements, rows_alloc x ldd, rows >= M are guard rows) with Dref (FP32, M x N, after
/// the reference epilogue) on the device and synchronises the stream. ok = no NaN/Inf in M x N, nothing
/// written outside it (the poison pattern survives in the padding and guard rows), both metrics within
/// `t`, and for e4m3 (compared with scale_d x Dref) no element more than 1 ulp off.
/// `stats_buf` is a device buffer of sizeof(CompareStatsHost) bytes.
Verification verify_output(const UtilKernels& util, const Problem& p, const void* d, const float* dref,
                           int64_t rows_alloc, CompareStatsHost* stats_buf, const VerifyThresholds& t, float scale_d,
                           cudaStream_t s);

/// Same verdict from already-reduced statistics (host only; unit-tested).
Verification judge(const CompareStatsHost& st, const VerifyThresholds& t);

/// The e4m3 parts of a verdict as text for error messages: ", N elements > 1 e4m3 ulp off" and/or
/// ", amax rel err X" when they apply (empty for bf16/f32 output).
std::string epilogue_failure_text(const Verification& v);

/// Relative amax error |amax - ref| / |ref| (|amax - ref| when ref is 0; NaN/Inf amax gives +inf).
double amax_relative_error(float amax, float ref);

}  // namespace dgt
