// cuBLASLt baseline: the same problem, buffers, verification and timer as our kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "bench/problem_data.hpp"
#include "bench/protocol.hpp"
#include "records/records.hpp"

struct cublasLtContext;

namespace dgt {

/// Runs cuBLASLt FP8 GEMMs. Our row-major D[M,N] = A[M,K] B[N,K]^T is cuBLASLt's column-major
/// D'[N,M] = op(B') op(A') with transa = T on our B (K x N column-major, ld = ldb) and transb = N on
/// our A (K x M, ld = lda): the "TN" layout cuBLASLt requires for FP8. Scales by device pointer
/// (A_SCALE = scale of our B, B_SCALE = scale of our A), FP32 compute, BF16 C/D, beta = 0.
/// Accumulation matches the problem: CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1 for Accum::kFast, 0 (periodic
/// promotion, cuBLASLt's default) for kPromote.
class CublasLtBaseline {
 public:
  explicit CublasLtBaseline(int max_algos = 8);
  ~CublasLtBaseline();
  CublasLtBaseline(const CublasLtBaseline&) = delete;
  CublasLtBaseline& operator=(const CublasLtBaseline&) = delete;

  /// Asks the heuristic for up to max_algos algorithms, verifies and times each with `timer`, and
  /// returns {default, tuned}. A refusal (heuristic or launch NOT_SUPPORTED, e.g. dimensions not
  /// multiples of 16) is returned as status "unsupported" with cuBLASLt's status, never thrown.
  std::pair<BaselineRecord, BaselineRecord> measure(const ProblemData& data, Timer& timer, cudaStream_t s);

 private:
  size_t workspace_bytes_ = 32u << 20;
  DeviceBuffer workspace_;   // before handle_: allocated first, freed last
  cublasLtContext* handle_ = nullptr;
  int max_algos_;
};

}  // namespace dgt
