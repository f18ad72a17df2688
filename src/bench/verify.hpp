// Verification of a GEMM output against the device reference.
#pragma once

#include <cuda_runtime_api.h>

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
///    k-block of 128. Issue 7 compares the fast winner's error with cuBLASLt FAST_ACCUM's on the same inputs.
struct VerifyThresholds {
  double max_rel_err;
  double max_diff;
  static VerifyThresholds for_accum(Accum a) {
    return a == Accum::kPromote ? VerifyThresholds{1.0 / 128, 2e-5} : VerifyThresholds{1.0 / 32, 5e-4};
  }
};

/// Compares D (BF16, rows_alloc x ldd, rows >= M are guard rows) with Dref (FP32, M x N) on the
/// device and synchronises the stream. ok = no NaN/Inf in M x N, nothing written outside it (the
/// poison pattern survives in the padding and guard rows), and both metrics within `t`.
/// `stats_buf` is a device buffer of sizeof(CompareStatsHost) bytes.
Verification verify_output(const UtilKernels& util, const Problem& p, const void* d, const float* dref,
                           int64_t rows_alloc, CompareStatsHost* stats_buf, const VerifyThresholds& t, cudaStream_t s);

/// Same verdict from already-reduced statistics (host only; unit-tested).
Verification judge(const CompareStatsHost& st, const VerifyThresholds& t);

}  // namespace dgt
