// One GPU as a measuring instrument: input data of one shape, the cold-L2 Timer or the hot-graph engine,
// cuBLASLt baselines on the same buffers, and the verify-then-time sequence of one candidate. No DB: the
// in-process sweep (TuningSession) and the worker process (src/worker/) store what it returns.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <utility>

#include "bench/cublaslt_baseline.hpp"
#include "bench/problem_data.hpp"
#include "bench/protocol.hpp"
#include "device/device_info.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/kernel_cache.hpp"
#include "launch/util_kernels.hpp"
#include "problem/kernel_config.hpp"
#include "records/records.hpp"
#include "tune/compile_queue.hpp"
#include "tune/session_options.hpp"

namespace dgt {

/// Seconds the first (verification) launch of a candidate may run before it counts as hung: 20x the
/// cost model's estimate (space/cost_model.hpp) and at least 2 s (README, "Crashing and hanging
/// candidates"). Later launches, timed under the protocol, keep the protocol's watchdog.
double candidate_timeout_s(const KernelSpec& spec, const Problem& p, int sm_count);

class DeviceBench {
 public:
  /// Opens device `options.device` (must be sm_90: Error(kUsage) otherwise), a non-blocking stream, the
  /// utility module, the Timer and cuBLASLt. `cache` must outlive the bench.
  DeviceBench(const SessionOptions& options, const jit::CubinCache& cache);
  ~DeviceBench();
  DeviceBench(const DeviceBench&) = delete;
  DeviceBench& operator=(const DeviceBench&) = delete;

  const DeviceInfo& device() const { return device_; }

  /// Allocates and fills the inputs of `p` (seed: options.seed ^ hash(p.key())) and computes its reference;
  /// the previous shape's buffers are freed first.
  void begin_shape(const Problem& p);
  /// cuBLASLt default and tuned for the current shape under the session's protocol.
  std::pair<BaselineRecord, BaselineRecord> baselines();
  /// Verifies, then times one candidate of the current shape. Every outcome is a record: pre_device_trial's
  /// (invalid, compile error), kLaunchError, kVerifyFailed, kOk; kCrashed (a sticky CUDA error) or kTimeout
  /// (a launch still running after candidate_timeout_s, or later after the protocol's watchdog) also set
  /// context_lost(): the CUDA context is unusable and this process must end before measuring anything else.
  TrialRecord measure(const EvaluatedSpec& candidate, const CompileResult& compiled);
  /// True after a candidate crashed or hung (see measure()).
  bool context_lost() const { return lost_; }

 private:
  uint64_t seed_for(const Problem& p) const;

  SessionOptions options_;
  DeviceInfo device_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<UtilKernels> util_;
  std::unique_ptr<Timer> timer_;
  std::unique_ptr<CublasLtBaseline> cublas_;
  std::unique_ptr<KernelCache> kernels_;  ///< loaded modules and kernels, split-K scratch
  std::unique_ptr<ProblemData> data_;
  bool lost_ = false;
};

}  // namespace dgt
