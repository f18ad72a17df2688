// Device buffers of one problem: seeded inputs, poisoned output, reference result.
#pragma once

#include <cuda_runtime_api.h>

#include "bench/verify.hpp"
#include "device/buffer.hpp"
#include "launch/gemm_kernel.hpp"
#include "launch/util_kernels.hpp"

namespace dgt {

/// A, B (seeded random FP8, NaN row padding), scales (seeded, in [0.5, 2), never exactly 1; the arrays
/// of the problem's scale mode as Problem::scales() lays them out, row padding 0), D (BF16, M +
/// kGuardRows rows of ldd, poisoned before each verification launch) and Dref (FP32 reference,
/// computed once).
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

  /// Device pointer of A's (i = 0) or B's (i = 1) scales.
  float* scale_ptr(int i) const;

 private:
  Problem p_;
  const UtilKernels& util_;
  int64_t rows_alloc_;
  DeviceBuffer a_, b_, d_, dref_, scales_, stats_;
  size_t scale_b_offset_ = kScaleSlot;  ///< bytes from scales_ to B's scales (a multiple of 256)
};

}  // namespace dgt
