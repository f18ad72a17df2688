// A loaded FP8 GEMM kernel instance and its launch.
#pragma once

#include <cuda_runtime_api.h>

#include "jit/module.hpp"
#include "problem/kernel_config.hpp"

namespace dgt::jit {

/// Device pointers of one GEMM call. A: M x K (lda), B: N x K (ldb), D: M x N BF16 (ldd); scales are
/// single FP32 values in device memory.
struct GemmOperands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
};

/// One compiled and loaded instance of kernels/gemm/fp8_gemm.cuh.
class GemmKernel {
 public:
  GemmKernel(KernelSpec spec, LoadedKernel kernel, int sm_count);

  const KernelSpec& spec() const { return spec_; }
  const LoadedKernel& kernel() const { return kernel_; }

  /// Persistent grid for a problem: min(tiles, SMs) CTAs.
  int grid_size(const Problem& p) const;

  /// Encodes the two tensor maps (host only) and launches on `stream`. No device allocation, no
  /// synchronisation: safe inside CUDA-graph capture. Throws Error(kInvalid) if `p` does not match
  /// the spec (dtypes, accumulation) or breaks a TMA rule (naming the operand), Error(kDriver) if
  /// the launch is refused.
  void launch(const Problem& p, const GemmOperands& ops, cudaStream_t stream) const;

 private:
  KernelSpec spec_;
  LoadedKernel kernel_;
  int sm_count_;
};

}  // namespace dgt::jit
