// Device buffers of one problem: seeded inputs, poisoned output, reference result.
#pragma once

#include <cuda_runtime_api.h>

#include "bench/verify.hpp"
#include "device/buffer.hpp"
#include "launch/gemm_kernel.hpp"
#include "launch/util_kernels.hpp"

namespace dgt {

/// A, B (seeded random FP8, NaN row padding), scales (seeded, never 1), D (BF16, M + kGuardRows rows
/// of ldd, poisoned before each verification launch) and Dref (FP32 reference, computed once).
class ProblemData {
 public:
  static constexpr int64_t kGuardRows = 8;   ///< rows after M that must stay poisoned
  static constexpr size_t kScaleSlot = 256;  ///< bytes between the two scales (alignment for cuBLASLt)

  /// Allocates, fills A and B from `seed` and computes the reference. Synchronises the stream.
  ProblemData(const Problem& p, const UtilKernels& util, uint64_t seed, cudaStream_t s);

  const Problem& problem() const { return p_; }
  jit::GemmOperands operands() const;

  /// Sets every element of D (including padding and guard rows) to the BF16 NaN poison.
  void poison_output(cudaStream_t s) const;
  /// Verifies the current D against the reference (synchronises).
  Verification verify(cudaStream_t s) const;

 private:
  float* scale_ptr(int i) const;

  Problem p_;
  const UtilKernels& util_;
  int64_t rows_alloc_;
  float scale_a_, scale_b_;
  DeviceBuffer a_, b_, d_, dref_, scales_, stats_;
};

}  // namespace dgt
