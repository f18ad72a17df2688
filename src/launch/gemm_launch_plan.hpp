// One loaded kernel prepared for one problem: the launch path of dgt::Gemm (host cost per call).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "launch/gemm_kernel.hpp"
#include "launch/group_args.hpp"
#include "problem/problem.hpp"
#include "space/tile_grid.hpp"

namespace dgt::jit {

/// Everything of a launch that does not depend on the call's pointers, computed once: the checks that the problem
/// matches the kernel and that the workspace is big enough, the TMA box sizes, the tile grid, the scheduler's
/// divisors, the grid size and the launch configuration. A launch then only encodes the tensor maps (or takes them
/// from this thread's cache, launch/tensor_map_cache.hpp, when `cache_maps`), checks the epilogue operands and calls
/// cuLaunchKernelEx. Immutable after construction; launch() may run concurrently from any thread on any stream.
class GemmLaunchPlan {
 public:
  /// The kernel's arguments for one call, in the order of the kernel's parameters (kernels/gemm/fp8_gemm.cuh).
  struct Args {
    CUtensorMap tma_a, tma_b, tma_a_tail, tma_b_tail, tma_d;
    void* d = nullptr;
    const float* scale_a = nullptr;
    const float* scale_b = nullptr;
    unsigned ld_sa = 0, ld_sb = 0, m = 0, n = 0, k = 0;
    unsigned long long ldd = 0;
    unsigned splits = 1;
    void* partials = nullptr;
    void* counters = nullptr;
    const void* bias = nullptr;
    const float* scale_d = nullptr;
    float* amax = nullptr;
    void* amax_state = nullptr;
    SchedulerDivisors divisors{};
    GroupKernelArgs group{};  ///< zeros: a dense kernel never reads it
  };

  /// Throws Error(kInvalid) when `p` does not match the kernel's spec (operand types, accumulation, scale mode,
  /// output, epilogue), when a cluster split cannot give every split work (rule P9), or when the kernel splits K or
  /// writes an amax and `ws` is smaller than GemmKernel::workspace_bytes / counter_bytes of p (a workspace is
  /// only read when needed; an empty one is fine for a kernel that needs none). `kernel` must outlive the plan.
  GemmLaunchPlan(const GemmKernel& kernel, const Problem& p, const GemmWorkspace& ws, bool cache_maps);

  const Problem& problem() const { return p_; }
  const GemmKernel& kernel() const { return *kernel_; }

  /// Fills `out` for `ops`: tensor maps (errors name the operand and the TMA rule: dgt::make_kmajor_tma) and the
  /// epilogue operands (jit::check_operands: null scales, a bias or amax the problem does not take, alignments).
  void args(const GemmOperands& ops, Args& out) const;
  /// cuLaunchKernelEx of prepared arguments: the bare launch (the host-cost benchmark's floor). Throws
  /// Error(kDriver) when the launch is refused.
  void launch(const Args& a, cudaStream_t stream) const;
  /// args() then launch(): GemmKernel::launch's behaviour with the per-problem work done once.
  void launch(const GemmOperands& ops, cudaStream_t stream) const {
    Args a;
    args(ops, a);
    launch(a, stream);
  }

 private:
  const GemmKernel* kernel_;
  Problem p_;
  Problem kp_;  ///< the problem the kernel computes: p_, or its transpose with swap AB (kernel_problem)
  uint64_t owner_ = 0;  ///< tensor-map cache owner id; 0: encode every call
  int a_rows_, a_tail_rows_, b_rows_, b_tail_rows_;
  EpilogueStoreMap d_map_;  ///< TMA-store epilogue: the D map's columns, box and swizzle
  int out_bytes_;
  bool tma_d_;
  GemmWorkspace ws_;
  bool needs_ws_ = false;
  TileGrid grid_;
  SchedulerDivisors divisors_;
  unsigned ld_sa_, ld_sb_;
  CUlaunchConfig cfg_{};
  CUlaunchAttribute attr_[1]{};
};

}  // namespace dgt::jit
