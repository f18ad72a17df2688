// Host wrappers of the utility module (kernels/util, kernels/reference): seeded fills, poison,
// L2 flush, SM clock probe, reference GEMM and output comparison. Compiled once by NVRTC through
// the cubin cache; every launch is asynchronous on the given stream unless stated.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "jit/cubin_cache.hpp"
#include "jit/module.hpp"
#include "launch/copy_limit.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// Mirrors dgt::util::CompareStats in kernels/util/compare.cuh (checked by a static_assert on size).
struct CompareStatsHost {
  double sum_xy;
  double sum_sq;
  uint32_t max_abs_err_bits;
  uint32_t max_abs_ref_bits;
  uint64_t nan_count;
  uint64_t pad_touched;
  uint64_t ulp_over;  ///< e4m3 output: elements more than 1 e4m3 ulp from the identically rounded reference
};

class UtilKernels {
 public:
  /// Compiles (or reads from `cache`) and loads the module on the current device.
  UtilKernels(const jit::CubinCache& cache, int sm_count);

  /// rows x ld bytes of seeded random FP8 (type e4m3/e5m2); padding columns cols..ld-1 are NaN.
  void fill_fp8(void* p, int64_t rows, int64_t cols, int64_t ld, uint64_t seed, DType type, cudaStream_t s) const;
  /// count 16-bit words set to value (0xFFFF = the BF16 poison).
  void fill_u16(void* p, int64_t count, uint16_t value, cudaStream_t s) const;
  /// Writes then reads `bytes` (a multiple of 16) so that L2 ends up holding clean, unrelated lines.
  void flush_l2(void* buf, int64_t bytes, void* sink, uint32_t salt, cudaStream_t s) const;
  /// Dref (FP32, ld = N) = the scaled A * B^T on CUDA cores; scale_a / scale_b laid out as p.scales() says.
  void reference_gemm(const Problem& p, const void* a, const void* b, const float* scale_a, const float* scale_b,
                      float* dref, cudaStream_t s) const;
  /// The same with the block scales' leading dimensions given (floats between two granules of A's scales, two
  /// 128-row blocks of B's): a group of a grouped problem, whose scales sit inside a larger array.
  void reference_gemm(const Problem& p, const void* a, const void* b, const float* scale_a, const float* scale_b,
                      int64_t ld_sa, int64_t ld_sb, float* dref, cudaStream_t s) const;
  /// Reference epilogue in place on Dref (M x N FP32): with `apply`, r = act(ref + bias) for the problem's
  /// bias (N BF16 values at `bias`) and activation (GELU as r sigmoid(2u) with the accurate expf); either way
  /// *amax_bits = max of the bits of |r| (atomicMax; zero it first). kernels/util/compare.cuh.
  void reference_epilogue(const Problem& p, float* dref, const void* bias, bool apply, uint32_t* amax_bits,
                          cudaStream_t s) const;
  /// Accumulates the comparison of D (rows_alloc x ldd elements of p.d) with Dref into *stats (zero it
  /// first); e4m3 output compares with scale_d x Dref, and counts an element more than one e4m3 ulp off only
  /// when it is also more than `ulp_slack` (absolute, in scaled units) away (kernels/util/compare.cuh says how).
  void compare(const Problem& p, const void* d, const float* dref, int64_t rows_alloc, CompareStatsHost* stats,
               float scale_d, float ulp_slack, cudaStream_t s) const;
  /// The copy limit of a problem (kernels/util/copy_limit.cuh): one launch of `plan` (plan_copy_limit)
  /// reading A (M x lda bytes) and B (N x ldb bytes) once and writing D's M x N BF16 once (what
  /// copy_limit_reference computes); `sink` is 4 bytes of device memory that no one reads. One kernel,
  /// no allocation or synchronisation: capturable in a CUDA graph.
  void copy_limit(const CopyLimitPlan& plan, const void* a, const void* b, void* d, uint32_t* sink,
                  cudaStream_t s) const;
  /// Launches the clock probe: out[0] = ns, out[1] = SM cycles over ~spin_ns (clock_probe_mhz reads them).
  void clock_probe(uint64_t* out, uint64_t spin_ns, cudaStream_t s) const;
  /// How many clusters of `cluster_size` CTAs (1..8, along x) can be resident at once when each CTA takes
  /// `smem_bytes` of dynamic shared memory (cuOccupancyMaxActiveClusters on a utility kernel; with the
  /// opt-in maximum that is one CTA per SM, as for every GEMM kernel of the space). A cluster must sit in one
  /// GPC, so this can be less than SMs / cluster_size. Throws Error(kDriver) if the driver refuses.
  int max_active_clusters(int cluster_size, int smem_bytes) const;

 private:
  void launch(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned block_x, unsigned block_y, void** params,
              cudaStream_t s) const;

  jit::LoadedKernel fill_fp8_, fill_u16_, flush_write_, flush_read_, ref_gemm_, compare_, ref_epilogue_, clock_probe_,
      copy_limit_;
  int sm_count_;
};

/// The SM clock in MHz from one clock probe's {ns, cycles} (UtilKernels::clock_probe); 0 when it measured no time.
inline double clock_probe_mhz(const uint64_t* ns_cycles) {
  return ns_cycles[0] > 0 ? double(ns_cycles[1]) / double(ns_cycles[0]) * 1000.0 : 0.0;
}

}  // namespace dgt
