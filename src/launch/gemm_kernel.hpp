// A loaded FP8 GEMM kernel instance and its launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "jit/module.hpp"
#include "problem/kernel_config.hpp"

namespace dgt::jit {

/// Device pointers of one GEMM call. A: M x K (lda), B: N x K (ldb), D: M x N BF16 (ldd); scales are
/// FP32 arrays in device memory laid out as Problem::scales() says for the problem's scale mode (one
/// value each for per-tensor; 16-byte aligned for cuBLASLt's sake; the kernel needs 4, 8 for block1d1d).
struct GemmOperands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
};

/// Split-K scratch: `partials` of at least GemmKernel::workspace_bytes() and `counters` of at least
/// GemmKernel::counter_bytes(), the counters zeroed once after allocation (the kernel leaves them
/// zero after every complete launch). Launches sharing one workspace must be stream-ordered.
struct GemmWorkspace {
  void* partials = nullptr;
  size_t partial_bytes = 0;
  void* counters = nullptr;
  size_t counter_bytes = 0;
};

/// One compiled and loaded instance of kernels/gemm/fp8_gemm.cuh with its run-time config
/// (split count, grid size).
class GemmKernel {
 public:
  /// `sm_count` SMs on the device; for clusters the grid is capped at cuOccupancyMaxActiveClusters.
  GemmKernel(KernelSpec spec, LoadedKernel kernel, int sm_count);

  const KernelSpec& spec() const { return spec_; }
  const LoadedKernel& kernel() const { return kernel_; }

  /// Split count the kernel runs for `p` (dgt::effective_splits in space/tile_grid.hpp):
  /// ceil(kb / ceil(kb / split_k)) with kb = ceil(K / BLOCK_K), so that no split is empty.
  int effective_splits(const Problem& p) const;
  /// Persistent grid for a problem: clusters x cluster size, clusters = TileGrid::grid_clusters of
  /// min(resident clusters (or SMs), sms / cluster size when sms > 0) = min(work units, that).
  int grid_size(const Problem& p) const;
  /// Split-K scratch sizes for `p` (0 when the kernel does not split K).
  size_t workspace_bytes(const Problem& p) const;
  size_t counter_bytes(const Problem& p) const;

  /// Encodes the tensor maps (host only) and launches on `stream`. No device allocation, no
  /// synchronisation: safe inside CUDA-graph capture. Throws Error(kInvalid) if `p` does not match
  /// the spec (dtypes, accumulation), breaks a TMA rule (naming the operand), or needs a split-K
  /// workspace that `ws` does not provide; Error(kDriver) if the launch is refused.
  void launch(const Problem& p, const GemmOperands& ops, cudaStream_t stream, const GemmWorkspace* ws = nullptr) const;

 private:
  KernelSpec spec_;
  LoadedKernel kernel_;
  int sm_count_;
  int max_active_clusters_ = 0;  ///< 0 when not a cluster kernel
};

}  // namespace dgt::jit
