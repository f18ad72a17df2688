// Device buffers of one problem: seeded inputs, poisoned output, reference result.
#pragma once

#include <cuda_runtime_api.h>

#include "bench/verify.hpp"
#include "device/buffer.hpp"
#include "launch/gemm_kernel.hpp"
#include "launch/util_kernels.hpp"

namespace dgt {

/// A, B (seeded random FP8, NaN row padding), scales (seeded, in [0.5, 2), never exactly 1; the arrays
/// of the problem's scale mode as Problem::scales() lays them out, row padding 0), D (the problem's
/// output type, M + kGuardRows rows of ldd, poisoned before each verification launch) and Dref (FP32
/// reference after the reference epilogue, computed once). Epilogue operands:
///  - bias (Bias::kBF16): N seeded BF16 values of either sign, uniform in +-max|raw ref| / 4 (so they move
///    results by amounts the check sees, and ReLU/GELU see both signs);
///  - scale_d (e4m3 output): 0.8 x 448 / max |ref|, so the results spread over e4m3's binades up to 358
///    and none saturates (saturation has exact-value GPU tests); amax (e4m3): one float, poisoned (NaN
///    bits) before each verification launch, checked against max |ref| by verify().
class ProblemData {
 public:
  static constexpr int64_t kGuardRows = 8;   ///< rows after M that must stay poisoned
  static constexpr size_t kScaleSlot = 256;  ///< bytes between the two scales (alignment for cuBLASLt)

  /// Allocates, fills A and B from `seed` and computes the reference. Synchronises the stream.
  ProblemData(const Problem& p, const UtilKernels& util, uint64_t seed, cudaStream_t s);

  const Problem& problem() const { return p_; }
  jit::GemmOperands operands() const;

  /// Sets every byte of D (including padding and guard rows) to 0xFF (NaN in bf16, f32 and e4m3) and,
  /// with e4m3 output, amax to NaN bits (so a launch that does not write it fails verify()).
  void poison_output(cudaStream_t s) const;
  /// Verifies the current D against the reference (synchronises); for e4m3 output also the amax.
  Verification verify(cudaStream_t s) const;
  /// Sets every scale float that is not one of the problem's scales to NaN: the row padding of 2-D scale arrays
  /// (rows past M or N, granules past ceil(K / 128)) and the slack after each array up to the end of its
  /// 256-byte slot. A kernel that lets any of them reach D fails verify(). Synchronises the stream.
  void poison_scale_padding(cudaStream_t s) const;

  /// The reference's max |r| (after bias and activation, before scale_d; host value).
  float reference_amax() const { return ref_amax_; }
  /// scale_d given to the kernel (1 unless the output is e4m3).
  float scale_d() const { return scale_d_; }
  /// Reads the amax the last launch wrote (synchronises). e4m3 output only.
  float read_amax(cudaStream_t s) const;
  /// Device pointer of the reference (FP32, M x N, ld = N).
  const float* reference() const { return dref_.as<float>(); }
  /// Device pointer of D.
  void* output() const { return d_.get(); }
  /// Bytes of D's allocation (M + kGuardRows rows of ldd elements, at least 2 bytes each: see the constructor).
  size_t output_bytes() const { return d_.bytes(); }

  /// Device pointer of A's (i = 0) or B's (i = 1) scales.
  float* scale_ptr(int i) const;
  /// Device pointers of scale_d and of the amax the kernel writes (meaningful for e4m3 output).
  float* scale_d_ptr() const;
  float* amax_ptr() const;

 private:
  Problem p_;
  const UtilKernels& util_;
  int64_t rows_alloc_;
  DeviceBuffer a_, b_, d_, dref_, scales_, stats_;
  DeviceBuffer epi_;  ///< [bias: N BF16, padded to 256 B][scale_d: float][amax: float][ref amax bits: u32]
  size_t epi_scalars_ = 0;  ///< byte offset of scale_d in epi_
  float scale_d_ = 1.f, ref_amax_ = 0.f;
  size_t scale_b_offset_ = kScaleSlot;  ///< bytes from scales_ to B's scales (a multiple of 256)
};

}  // namespace dgt
