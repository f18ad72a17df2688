// One traced launch of one config (`dgtune trace`): the kernel is compiled with DGT_TRACE (kernels/gemm/trace.cuh)
// and each CTA stamps the points of its first work unit with %globaltimer (ns, one clock for all SMs) and
// %clock64 (its SM's cycles). Warm-up launches first (the first one verified), then one traced launch after an L2
// flush (cold, the cold-l2 protocols' state) or right after the warm-up (warm). GPU only.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "problem/kernel_config.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// The trace points in kernels/gemm/trace.cuh's TracePoint order (two words per point and CTA).
inline constexpr int kTracePoints = 12;
/// CTAs the trace buffer holds (kTraceMaxCtas in kernels/gemm/trace.cuh); later CTAs are not traced.
inline constexpr int kTraceMaxCtas = 1024;
inline constexpr std::array<const char*, kTracePoints> kTracePointNames = {
    "start", "setup", "first TMA issued", "first stage full", "mainloop done", "split-K reduced", "stores issued", "end",
    "producer registers released", "producer first unit computed", "producer first empty slot",
    "consumer registers granted"};

struct KernelTraceOptions {
  int device = 0;
  std::string cache_dir;  ///< empty: default_cache_dir()
  bool cold_l2 = true;    ///< flush L2 (the cold-l2 protocol's flush) before the traced launch
  int warmup = 3;         ///< launches before the traced one, the first verified (>= 1)
  uint64_t seed = 1;      ///< input seed
};

/// What one traced launch recorded.
struct KernelTrace {
  Problem problem;
  std::string config_key;
  std::string device_name;
  bool cold_l2 = true;
  int grid = 0;           ///< CTAs launched
  int traced_ctas = 0;    ///< min(grid, kTraceMaxCtas)
  bool verified = false;  ///< the first warm-up launch's output passed verification
  /// stamps[(cta * kTracePoints + point) * 2] = %globaltimer ns, [... + 1] = %clock64; 0 = not reached.
  std::vector<unsigned long long> stamps;

  unsigned long long ns(int cta, int point) const { return stamps[(size_t(cta) * kTracePoints + point) * 2]; }
  unsigned long long cycles(int cta, int point) const { return stamps[(size_t(cta) * kTracePoints + point) * 2 + 1]; }
};

/// Compiles the traced build of `config` (a cubin of its own: every other build is unchanged), runs the warm-up
/// and the traced launch on device `options.device` and reads the stamps back. Throws Error: kInvalid when the
/// config cannot run the problem (checked before the GPU is opened by the caller), kNoDevice without an sm_90
/// GPU, kCuda/kDriver/kNvrtc when a step fails, kInternal when the traced launch recorded no CTA.
KernelTrace trace_kernel(const Problem& p, const KernelConfig& config, const KernelTraceOptions& options);

}  // namespace dgt
