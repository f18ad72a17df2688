// A loaded grouped (MoE) FP8 GEMM kernel (kernels/gemm/grouped_scheduler.cuh) and its launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "jit/module.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"

namespace dgt::jit {

/// Device pointers of one grouped call (layouts: GroupedProblem). A: total_rows() x K e4m3, B: G*N x K e4m3,
/// D: total_rows() x N bf16 (rows never written keep their contents), scales as GroupedProblem documents (16-byte
/// aligned for block scales: the kernel copies them with cp.async.bulk), layout: contiguous m_indices
/// (total_rows() int32) or masked masked_m (G int32), read by the kernel at every launch (a CUDA graph may change
/// the counts between replays).
struct GroupedOperands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  const int32_t* layout = nullptr;
};

/// One compiled and loaded grouped instance of kernels/gemm/fp8_gemm.cuh (kGroupKind 1 or 2).
class GroupedGemmKernel {
 public:
  /// `kernel`: the loaded grouped instance of `spec` and `kind` (KernelCache::get_grouped loads and keeps it).
  /// Throws Error(kDriver) when no cluster of the kernel fits the device.
  GroupedGemmKernel(KernelSpec spec, GroupKind kind, LoadedKernel kernel, int sm_count);

  const KernelSpec& spec() const { return spec_; }
  GroupKind kind() const { return kind_; }

  /// Persistent grid (CTAs) for `g`: min(resident CTAs (clusters x cluster size), the units the host expects:
  /// contiguous, the m-blocks holding rows x the cluster columns; masked, G x ceil(expected_m / BLOCK_M) x the
  /// cluster columns), at least one cluster. The kernel walks the real units whatever the grid is.
  int grid_size(const GroupedProblem& g) const;

  /// Encodes the tensor maps (A [total_rows, K], B [G*N, K] and its N-tail map; with the TMA epilogue D
  /// [total_rows, N] for stores of whole real-row boxes) and launches on `stream`. No
  /// allocation, no synchronisation: capturable in a CUDA graph. Throws Error(kInvalid) when `g` does not match
  /// the spec (kind, scale mode, accumulation), an operand is null or misaligned (check_grouped_operands, launch/grouped_operands.hpp), and
  /// Error(kDriver) when the launch is refused.
  /// `map_owner` (next_tensor_map_owner_id(), launch/tensor_map_cache.hpp): a caller that always launches the same
  /// problem takes the tensor maps from this thread's cache by operand address; 0 encodes them on every call.
  void launch(const GroupedProblem& g, const GroupedOperands& ops, cudaStream_t stream, uint64_t map_owner = 0) const;

 private:
  KernelSpec spec_;
  GroupKind kind_;
  LoadedKernel kernel_;
  int sm_count_;
  int max_active_clusters_ = 0;  ///< 0 when not a cluster kernel
};

}  // namespace dgt::jit
