// Shared GPU test harness: compile (through the cubin cache), launch once and verify.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "bench/problem_data.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "core/paths.hpp"
#include "device/device_info.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/gemm_kernel.hpp"
#include "launch/kernel_cache.hpp"
#include "launch/util_kernels.hpp"

namespace dgt::test {

/// Process-wide GPU state for tests (device 0, default cubin cache).
struct Gpu {
  DeviceInfo device;
  std::unique_ptr<jit::CubinCache> cache;
  std::unique_ptr<UtilKernels> util;
  cudaStream_t stream = nullptr;
  std::unique_ptr<KernelCache> kernels;

  static Gpu& get() {
    static Gpu g;
    return g;
  }

  /// Compiled (through the cubin cache) and loaded once per spec. Throws Error(kInvalid), a
  /// std::runtime_error, "<key> is illegal: R..." for an illegal spec.
  std::shared_ptr<jit::GemmKernel> kernel(const KernelSpec& spec) { return kernels->get(spec); }

  /// Compiles every spec on all cores first (compile_ahead into the cubin cache); kernel() is then cheap.
  /// A compile error is rethrown here.
  void precompile(const std::vector<KernelSpec>& specs) {
    ThreadPool pool(0);
    for (auto& f : compile_ahead(*cache, specs, pool)) f.get();
  }

  /// Poisons D, launches `config` once on `data`'s problem, synchronises and verifies.
  Verification run(const ProblemData& data, const KernelConfig& config) {
    auto k = kernel(KernelSpec::of(config, data.problem()));
    data.poison_output(stream);
    const jit::GemmWorkspace ws = kernels->workspace(*k, data.problem());
    k->launch(data.problem(), data.operands(), stream, &ws);
    DGT_CHECK_CUDA(cudaGetLastError());
    DGT_CHECK_CUDA(cudaStreamSynchronize(stream));
    return data.verify(stream);
  }

 private:
  Gpu() {
    device = open_device(0);
    cache = std::make_unique<jit::CubinCache>(default_cache_dir());
    util = std::make_unique<UtilKernels>(*cache, device.sm_count);
    kernels = std::make_unique<KernelCache>(*cache, device.sm_count);
    DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
};

inline std::string describe(const Verification& v) {
  return "max_rel_err " + std::to_string(v.max_rel_err) + " diff " + std::to_string(v.diff) + " nan " +
         std::to_string(v.nan_count) + " outside " + std::to_string(v.pad_touched);
}

}  // namespace dgt::test
