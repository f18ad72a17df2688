// The device operands of one grouped problem (seeded inputs, NaN padding rows, a sentinel in D) and the check of a
// grouped kernel's output against the reference GEMM run per group.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device/buffer.hpp"
#include "launch/grouped_kernel.hpp"
#include "launch/util_kernels.hpp"
#include "problem/grouped_problem.hpp"
#include "records/records.hpp"

namespace dgt {

/// Operands of `g` on the current device (layouts: GroupedProblem):
///  - A (total_rows x K) and B (G*N x K): seeded random e4m3; every row of A that holds no real row (contiguous
///    padding, masked rows >= masked_m[g]) is NaN (0xFF), so a padding row that reached a stored row would show.
///  - scales: seeded in [0.5, 2), never 1 (per-tensor: one each; block: DeepGEMM's layouts, 16-byte aligned).
///  - D (total_rows x N bf16): the poison 0xFFFF (NaN), the sentinel that unwritten rows must keep (reset()).
///  - layout: m_indices / masked_m (GroupedProblem::layout), int32 on the device; set_counts() rewrites masked_m.
class GroupedData {
 public:
  /// Allocates and fills; synchronises the stream.
  GroupedData(const UtilKernels& util, const GroupedProblem& g, uint64_t seed, cudaStream_t s);

  const GroupedProblem& problem() const { return g_; }
  jit::GroupedOperands operands() const;
  void* d() const { return d_.get(); }

  /// D back to the sentinel (asynchronous).
  void reset_d(cudaStream_t s) const;
  /// Masked only: new per-group counts (each <= M_max) into the device masked_m (a CUDA graph replays with them)
  /// and into problem(); the NaN rows of A are refilled so rows >= the new counts hold NaN again, and those below
  /// hold seeded data. Synchronises the stream.
  void set_counts(const UtilKernels& util, const std::vector<int64_t>& rows, cudaStream_t s);

  /// Verifies D: for each group with rows, the reference GEMM of its rows (util.reference_gemm on the group's A, B
  /// and scales) against its rows of D, and the sentinel in every row that holds no real row (the comparison's
  /// guard rows: a group's segment past its count). All groups feed one verdict (judge() of the summed statistics,
  /// VerifyThresholds::for_accum). Synchronises the stream.
  Verification verify(const UtilKernels& util, cudaStream_t s) const;

 private:
  void fill_a(const UtilKernels& util, cudaStream_t s) const;
  GroupedProblem g_;
  uint64_t seed_;
  DeviceBuffer a_, b_, d_, sa_, sb_, layout_, dref_, stats_;
  int64_t ld_sa_ = 0, ld_sb_ = 0;  ///< block scales: floats between A's granules, between B's 128-row blocks
};

}  // namespace dgt
