// A loaded FP8 GEMM kernel instance and its launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "jit/module.hpp"
#include "problem/kernel_config.hpp"

namespace dgt {
struct TileGrid;
}

namespace dgt::jit {

/// Device pointers of one GEMM call. A: M x K (lda), B: N x K (ldb), D: M x N of the problem's output
/// type (ldd; bf16, f32 or e4m3 bytes); scales are FP32 arrays in device memory laid out as
/// Problem::scales() says for the problem's scale mode (one value each for per-tensor; 16-byte aligned
/// for cuBLASLt's sake; the kernel needs 4, 8 for block1d1d). Epilogue operands:
///  - bias: N BF16 values (2-byte aligned), required when the problem has Bias::kBF16, else ignored;
///  - scale_d: one FP32, required for e4m3 output (D = e4m3(scale_d x r)), else ignored;
///  - amax: one FP32, optional, e4m3 output only: every launch sets *amax = max |r| over M x N (r before
///    scale_d), written, not accumulated. The CTAs combine their maxima with atomicMax on the float bits
///    (order-independent: deterministic) in two words of the workspace's counters, and the last CTA to
///    finish writes *amax and resets them (kernels/gemm/epilogue_ops.cuh), so no memset per launch.
struct GemmOperands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  const void* bias = nullptr;
  const float* scale_d = nullptr;
  float* amax = nullptr;
};

/// Split-K scratch: `partials` of at least GemmKernel::workspace_bytes() and `counters` of at least
/// GemmKernel::counter_bytes() (split-K tile counters, then e4m3's two amax words), the counters zeroed
/// once after allocation (the kernel leaves them zero after every complete launch). Launches sharing one
/// workspace must be stream-ordered.
struct GemmWorkspace {
  void* partials = nullptr;
  size_t partial_bytes = 0;
  void* counters = nullptr;
  size_t counter_bytes = 0;
};

/// Checks the operands `p` needs beyond A, B and D: the scales (non-null; block scale modes: 16-byte aligned,
/// because the kernel copies their rows with cp.async.bulk, PTX ISA) and the epilogue's (bias for Bias::kBF16,
/// scale_d for e4m3 output, amax only with e4m3, alignments). Throws Error(kInvalid) naming the operand and
/// the rule. Host only, no CUDA call.
void check_operands(const Problem& p, const GemmOperands& ops);

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
  /// Split-K scratch sizes for `p` (partials: 0 when the kernel does not split K; counters: the tile
  /// counters when it does, plus 8 bytes of amax state for e4m3 output).
  size_t workspace_bytes(const Problem& p) const;
  size_t counter_bytes(const Problem& p) const;
  /// Byte offset of the amax state (two u32) in the counters: after the tile counters.
  size_t amax_state_offset(const Problem& p) const;

  /// Encodes the tensor maps (host only) and launches on `stream` (e4m3 with amax: a 4-byte memset of
  /// *amax, then the kernel). No device allocation, no synchronisation: safe inside CUDA-graph capture.
  /// Throws Error(kInvalid) if `p` does not match the spec (dtypes, accumulation, output, epilogue),
  /// lacks an epilogue operand it needs (bias, scale_d) or passes amax without e4m3 output (naming it),
  /// breaks a TMA rule (naming the operand), or needs a split-K workspace that `ws` does not provide;
  /// Error(kDriver) if the launch is refused.
  void launch(const Problem& p, const GemmOperands& ops, cudaStream_t stream, const GemmWorkspace* ws = nullptr) const;

 private:
  /// grid_size() for an already computed tile grid of the problem (launch computes it once).
  int grid_size(const TileGrid& g) const;
  KernelSpec spec_;
  LoadedKernel kernel_;
  int sm_count_;
  int max_active_clusters_ = 0;  ///< 0 when not a cluster kernel
};

}  // namespace dgt::jit
